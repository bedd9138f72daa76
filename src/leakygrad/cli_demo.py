"""Train a small MLP on the bare engine and gradient-check it; then run the doctor on a sick PyTorch script."""

from __future__ import annotations


def add_arguments(parser) -> None:
    parser.add_argument("--steps", type=int, default=600, help="gradient descent steps of the engine MLP (default 600)")
    parser.add_argument("--lr", type=float, default=0.5, help="its learning rate (default 0.5)")
    parser.add_argument("--no-doctor", action="store_true", help="skip the doctor half (which needs PyTorch)")
    parser.add_argument(
        "--report",
        default="leakygrad-demo.doctor.html",
        metavar="PATH",
        help="where the doctor's HTML report goes (default leakygrad-demo.doctor.html)",
    )


def run(args) -> int:
    from leakygrad.demo import run as run_demo

    result = run_demo(steps=args.steps, learning_rate=args.lr, doctor=not args.no_doctor, report_path=args.report)
    return 0 if result["gradcheck"].passed else 1
