"""A finding: one leak the doctor found, where, since when, how sure, and what to do about it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SYMPTOMS = (
    "accumulating_gradient",  # (first: gradients summed over steps blow up, and kill units, downstream of it)
    "nonfinite",
    "exploding_gradient",
    "vanishing_gradient",
    "dead_relu",
    "saturated_activation",
    "blocked_gradient",
    "wrong_gradient",
    "no_gradient",
    "unapplied_gradient",
    "diverging_loss",
    "stalled_loss",
)
"""Every symptom the doctor can report, by its exact name (the JSON report uses these strings)."""

SEVERITIES = ("error", "warning")


@dataclass
class Finding:
    symptom: str  # one of SYMPTOMS
    where: str  # module path ("encoder.0"), operation ("clamp"), or a recurrent layer with its time steps
    first_step: int  # the training step from which the symptom holds
    severity: str  # "error" or "warning"
    evidence: dict = field(default_factory=dict)  # the measured numbers behind it
    explanation: str = ""  # the chain-rule account, with this run's numbers
    remedies: list[str] = field(default_factory=list)  # specific changes to try, most likely first

    def __post_init__(self):
        if self.symptom not in SYMPTOMS:
            raise ValueError(f"unknown symptom {self.symptom!r}; expected one of {', '.join(SYMPTOMS)}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}; expected 'error' or 'warning'")

    def to_dict(self) -> dict:
        """The JSON form: exactly the fields documented in the README."""
        return {
            "symptom": self.symptom,
            "where": self.where,
            "first_step": self.first_step,
            "severity": self.severity,
            "evidence": self.evidence,
            "explanation": self.explanation,
            "remedies": list(self.remedies),
        }

    def one_line(self) -> str:
        return f"{self.severity:7s} {self.symptom} at {self.where} from step {self.first_step}"


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Most severe first; within a severity, in symptom order (causes before consequences), then earliest, then
    in the order of the layers' names (`model.2` before `model.10`)."""
    return sorted(
        findings,
        key=lambda f: (SEVERITIES.index(f.severity), SYMPTOMS.index(f.symptom), f.first_step, natural_key(f.where)),
    )


def natural_key(name: str) -> list:
    """Sorts names with numbers in them by the numbers' values: 'model.2' < 'model.10'."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name)]
