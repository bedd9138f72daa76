"""Train a small MLP on three spirals with the bare engine, then gradient-check it."""

from __future__ import annotations


def add_arguments(parser) -> None:
    parser.add_argument("--steps", type=int, default=600, help="gradient descent steps (default 600)")
    parser.add_argument("--lr", type=float, default=0.5, help="learning rate (default 0.5)")


def run(args) -> int:
    from leakygrad.demo import run as run_demo

    result = run_demo(steps=args.steps, learning_rate=args.lr)
    return 0 if result["gradcheck"].passed else 1
