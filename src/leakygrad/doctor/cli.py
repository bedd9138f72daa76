"""Run a training script under the doctor and report where backprop leaks.

Usage: leakygrad doctor [--json PATH] [--html PATH] [--every N] [--quiet] SCRIPT.py [SCRIPT ARGS...]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def add_arguments(parser) -> None:
    from leakygrad.doctor.doctor import DEFAULT_EVERY

    parser.usage = "leakygrad doctor [OPTIONS] SCRIPT.py [SCRIPT ARGS...]"
    parser.add_argument("--json", metavar="PATH", help="write the JSON report here")
    parser.add_argument(
        "--html", metavar="PATH", help="write the HTML report here (default: SCRIPT.doctor.html when no --json)"
    )
    parser.add_argument(
        "--every",
        metavar="N",
        type=int,
        default=DEFAULT_EVERY,
        help=f"take the costly statistics on one step in every N (default {DEFAULT_EVERY}; 1 = every step)",
    )
    parser.add_argument("--quiet", action="store_true", help="no summary on the terminal (reports are still written)")
    parser.add_argument(
        "--fail-on",
        choices=("error", "warning"),
        help="exit with status 3 when the script succeeded but findings of this severity (or worse) were found",
    )
    # (-m MODULE [ARGS...] is taken whole, to be refused in run with what to do instead)
    parser.add_argument("-m", dest="module", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    parser.add_argument(
        "command", nargs=argparse.REMAINDER, metavar="SCRIPT.py [SCRIPT ARGS...]", help="the script and its arguments"
    )


def run(args) -> int:
    from leakygrad.doctor.report_text import print_summary
    from leakygrad.doctor.runner import run_script

    if args.module is not None:
        module = args.module[0] if args.module else "MODULE"
        print(
            f"leakygrad doctor: -m (running a module, as python -m does) is not supported; give the module's file "
            f"instead: leakygrad doctor path/to/{module.replace('.', '/')}.py [ARGS...]",
            file=sys.stderr,
        )
        return 2
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        print(
            "leakygrad doctor: no script given. Usage: leakygrad doctor [OPTIONS] SCRIPT.py [ARGS...]", file=sys.stderr
        )
        return 2
    script, script_args = Path(command[0]), command[1:]
    if args.every < 1:
        print(f"leakygrad doctor: --every must be 1 or more, got {args.every}", file=sys.stderr)
        return 2
    if script.is_dir():
        print(f"leakygrad doctor: {script} is a folder; give the training script's .py file", file=sys.stderr)
        return 2
    if not script.is_file():
        print(f"leakygrad doctor: no script at {script} (expected a Python file to run)", file=sys.stderr)
        return 2
    html = args.html or (None if args.json else f"{script.stem}.doctor.html")
    for path in (html, args.json):
        problem = _cannot_write(path)
        if problem and path == html and not args.html:  # the default report: the run goes on, with the summary
            print(
                f"leakygrad doctor: no report will be written to {path} ({problem}); give --html PATH", file=sys.stderr
            )
            html = None
        elif problem:  # found before the training runs, not after it
            print(f"leakygrad doctor: cannot write the report to {path}: {problem}", file=sys.stderr)
            return 2
    # Where the reports go is fixed now, before the script runs: it may change the working folder.
    reports = [(path, os.path.abspath(path), format) for path, format in ((html, "html"), (args.json, "json")) if path]
    targets = [os.path.realpath(absolute) for _, absolute, _ in reports]
    if os.path.realpath(script) in targets:  # `--json train.py train.py`: the report would overwrite the script
        print(f"leakygrad doctor: the report path {script} is the script itself; give another path", file=sys.stderr)
        return 2
    if len(set(targets)) < len(targets):
        print("leakygrad doctor: --html and --json name the same file; give each report its own", file=sys.stderr)
        return 2
    terminal = sys.stderr  # the summary goes here, even if the script redirects sys.stderr
    result = run_script(command[0], script_args, every=args.every)  # (as typed: `./train.py` stays so in argv)
    doctor = result.doctor
    written = []
    for path, absolute, format in reports:  # (the option says the format, whatever the name)
        if doctor.steps == 0 and os.path.exists(absolute):
            # Nothing trained (`train.py --help`, an early exit): a report of nothing would replace a real one.
            _say(f"leakygrad doctor: no training step ran, so {path} was left as it was", terminal)
            continue
        try:
            doctor.report(absolute, format)
            written.append(path)
        except OSError as error:
            _say(f"leakygrad doctor: could not write the report to {path}: {error}", terminal)
        except Exception as error:  # a bug inside the doctor: say so, and keep the script's exit status
            _say(
                f"leakygrad doctor: could not write the report to {path} (an error inside the doctor, the training "
                f"was not affected): {type(error).__name__}: {error}",
                terminal,
            )
    if not args.quiet:
        try:
            print_summary(doctor, report_paths=written, file=terminal)
        except (OSError, ValueError):  # the script closed the terminal's stream: nothing to print to
            pass
    args.interrupted = result.interrupted  # (the process then ends by SIGINT, as Python's would: leakygrad.cli.main)
    if result.exit_code == 0 and args.fail_on:
        worst = {f.severity for f in doctor.findings}
        if "error" in worst or (args.fail_on == "warning" and "warning" in worst):
            return 3
    return result.exit_code


def _say(message: str, file) -> None:
    try:
        print(message, file=file)
    except (OSError, ValueError):  # the script closed the stream
        pass


def _cannot_write(path: str | None) -> str | None:
    """Why a report could not be written at `path`, or None if it can (or no report goes there)."""
    if path is None:
        return None
    target = Path(path)
    folder = target.parent
    if target.is_dir():
        return "that is a folder; give a file name"
    if not folder.is_dir():
        return f"the folder {folder} does not exist"
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        return "permission denied"
    return None
