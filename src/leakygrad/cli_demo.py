"""Train a small MLP on the bare engine and gradient-check it; then run the doctor on a sick PyTorch script."""

from __future__ import annotations

import argparse
import math
import sys
import textwrap


def _steps(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number of steps, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _learning_rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


EPILOG = (
    "Takes well under a minute on a laptop CPU. Writes one file, the doctor's HTML report (--report; in the "
    "current folder by default), and nothing with --no-doctor. Exit status: 0 when the gradient check passes, "
    "1 when it fails, 2 for a bad option or a report path that cannot be written (checked before anything runs)."
)


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's layout, without breaking a line at a hyphen (so `leakygrad-demo.doctor.html` stays whole)."""

    def _split_lines(self, text, width):
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _fill_text(self, text, width, indent):
        return textwrap.fill(
            " ".join(text.split()), width, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False
        )


def add_arguments(parser) -> None:
    parser.formatter_class = _HelpFormatter
    parser.epilog = EPILOG
    parser.add_argument(
        "--steps", type=_steps, default=600, help="gradient descent steps of the engine MLP (default 600)"
    )
    parser.add_argument("--lr", type=_learning_rate, default=0.5, help="its learning rate (default 0.5)")
    parser.add_argument("--no-doctor", action="store_true", help="skip the doctor half (which needs PyTorch)")
    parser.add_argument(
        "--report",
        default="leakygrad-demo.doctor.html",
        metavar="PATH",
        help="where the doctor's HTML report goes (default leakygrad-demo.doctor.html)",
    )


def run(args) -> int:
    from leakygrad.demo import run as run_demo
    from leakygrad.doctor.cli import _cannot_write

    problem = None if args.no_doctor else _cannot_write(args.report)
    if problem:  # found before the demo runs, not after it
        print(f"leakygrad demo: cannot write the report to {args.report}: {problem}", file=sys.stderr)
        return 2

    result = run_demo(steps=args.steps, learning_rate=args.lr, doctor=not args.no_doctor, report_path=args.report)
    return 0 if result["gradcheck"].passed else 1
