"""The JSON report: {"version": 1, "steps": N, "findings": [...]}, each finding with exactly the fields
symptom, where, first_step, severity, evidence, explanation, remedies (see the README for the schema)."""

from __future__ import annotations

import json
import math
from pathlib import Path


def _sanitize(value):
    """JSON has no NaN or Infinity: such numbers become null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _sanitize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_sanitize(v) for v in value]
    return value


def dumps(doctor) -> str:
    return json.dumps(_sanitize(doctor.to_dict()), indent=2, allow_nan=False)


def write(doctor, path: Path) -> None:
    Path(path).write_text(dumps(doctor) + "\n", encoding="utf-8")
