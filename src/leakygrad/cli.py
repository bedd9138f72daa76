"""The `leakygrad` command. Thin: it parses arguments, calls into the package, and prints.

Each subcommand is a module with `add_arguments(parser)` and `run(args) -> int`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys

# name -> (module, one-line help)
SUBCOMMANDS = {
    "demo": (
        "leakygrad.cli_demo",
        "the engine trains and gradient-checks an MLP; the doctor diagnoses a sick PyTorch script",
    ),
    "doctor": ("leakygrad.doctor.cli", "run a PyTorch training script and report where its gradients leak"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="leakygrad",
        description="See where backprop leaks: a readable autodiff engine, and a gradient doctor for PyTorch.",
        epilog="Start with `leakygrad demo`. Each command's options: leakygrad COMMAND --help.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        module = importlib.import_module(module_name)
        command = sub.add_parser(name, help=help_text, description=module.__doc__.strip().splitlines()[0])
        module.add_arguments(command)
        command.set_defaults(run=module.run, subcommand_parser=command)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        import rich  # noqa: F401
    except ImportError:
        print("leakygrad's command line needs the 'cli' extra: pip install 'leakygrad[cli]'", file=sys.stderr)
        return 2
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said by the subcommand's parser, with its usage (`leakygrad doctor [OPTIONS] SCRIPT.py ...`)
        getattr(args, "subcommand_parser", parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    if getattr(args, "run", None) is None:
        parser.print_help()
        return 0
    code = int(args.run(args) or 0)
    if argv is None and getattr(args, "interrupted", False):  # (a run from the shell, not a call from Python code)
        _end_by_sigint()
    return code


def _end_by_sigint() -> None:
    """End this process as Python ends one whose Ctrl-C was not caught: killed by SIGINT, not exiting with a status,
    so that a shell loop or `make` running it stops too (they tell "killed by Ctrl-C" from "exited with 130")."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)


if __name__ == "__main__":
    sys.exit(main())
