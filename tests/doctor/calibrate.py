"""Calibrate the doctor's thresholds: run every labelled script under several seeds and print, for each rule,
the statistic it judges next to its warning threshold.

    python tests/doctor/calibrate.py [--seeds 5] [--every 16] [--only healthy]

Healthy scripts must stay on the safe side of every threshold with room to spare; broken ones must cross the
threshold of their own symptom. The table in docs/doctor.md was produced by this script. (Not a test: it takes
a few minutes; the tests in test_labelled_cases.py check the outcome on seed 0.)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "src"))

import torch  # noqa: E402

from leakygrad.doctor import rules  # noqa: E402
from leakygrad.doctor.runner import run_script  # noqa: E402
from leakygrad.doctor.thresholds import DEFAULT_THRESHOLDS as T  # noqa: E402


def statistics(doctor) -> dict:
    """The value each rule judges, over the recent records (the same reduction the rules use)."""
    history = doctor.history
    recent = history.recent()
    out = {}
    depth = [rules.depth_ratio(r, T) for r in recent]
    depth = [x for x in depth if x is not None]
    out["depth ratio"] = rules.median(depth) if depth else math.nan
    times = []
    for r in recent:
        for layer in r.layers.values():
            result = rules.time_ratio(layer.time_grad_norms, T.time_edge_share) if layer.recurrent else None
            if result is not None:
                times.append(result[0])
    out["time ratio"] = rules.median(times) if times else math.nan
    norms = [r.grad_norm for r in history.healthy_records() if r.grad_norm is not None and math.isfinite(r.grad_norm)]
    if len(norms) >= 2 * T.min_records:
        out["growth"] = rules.median([r.grad_norm for r in recent if r.grad_norm]) / rules.median(
            norms[: T.min_records]
        )
    dead = [
        a.dead_fraction
        for r in recent
        for a in r.activations.values()
        if a.function in rules.RELU_FAMILY and a.dead_fraction is not None and a.window_examples >= T.dead_min_examples
    ]
    out["max dead"] = max(dead) if dead else math.nan
    saturated = [
        a.saturated_fraction
        for r in recent
        for s, a in r.activations.items()
        if a.function in rules.SQUASHING and a.saturated_fraction is not None and not rules.is_output_activation(r, s)
    ]
    out["max saturated"] = max(saturated) if saturated else math.nan
    blocked = [op.blocked_fraction for r in recent for op in r.ops.values()]
    out["max blocked"] = max(blocked) if blocked else math.nan
    ratios = list(rules.update_ratios(history).values())
    out["update ratio"] = rules.median(ratios) if ratios else math.nan
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--every", type=int, default=16)
    parser.add_argument("--only", default="", help="run only scripts whose name contains this")
    args = parser.parse_args()
    torch.set_num_threads(1)
    columns = ["depth ratio", "time ratio", "growth", "max dead", "max saturated", "max blocked", "update ratio"]
    limits = {
        "depth ratio": f"<{T.depth_vanishing_warning:g} | >{T.depth_exploding_warning:g}",
        "time ratio": f"<{T.time_vanishing_warning:g} | >{T.time_exploding_warning:g}",
        "growth": f">{T.growth_warning:g}",
        "max dead": f">{T.dead_warning:g}",
        "max saturated": f">{T.saturated_warning:g}",
        "max blocked": f">{T.blocked_warning:g}",
        "update ratio": f"<{T.update_ratio_low:g} | >{T.update_ratio_high:g}",
    }
    print(f"{'script':28s} seed " + " ".join(f"{c:>13s}" for c in columns) + "  findings")
    print(f"{'(warning thresholds)':28s}      " + " ".join(f"{limits[c]:>13s}" for c in columns))
    for path in sorted(HERE.glob("cases/*.py")):
        if path.name.startswith("_") or args.only not in path.name:
            continue
        for seed in range(args.seeds):
            with contextlib.redirect_stdout(io.StringIO()):
                run = run_script(path, ["--seed", str(seed)], every=args.every)
            stats = statistics(run.doctor)
            cells = " ".join(f"{stats.get(c, math.nan):13.3g}" for c in columns)
            found = ", ".join(f"{f.severity[0].upper()}:{f.symptom}@{f.where}" for f in run.doctor.findings) or "-"
            print(f"{path.stem:28s} {seed:4d} {cells}  {found}", flush=True)


if __name__ == "__main__":
    main()
