"""Run an unmodified training script under the doctor, the way `python SCRIPT.py ARGS...` would.

Same `sys.argv` (the script's path, then its arguments), `sys.path[0]` (the script's folder), `__name__ ==
"__main__"`, the script's own stdout and stderr, and its exit status. The doctor attaches to every model the
script calls with gradients on and every optimiser that steps their parameters (global module and optimiser
hooks, and `torch.autograd.backward`), so the script needs no change. If the script fails, the report is still
written: a crash is often when it is needed most.
"""

from __future__ import annotations

import runpy
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

from leakygrad.doctor.doctor import DEFAULT_EVERY, Doctor
from leakygrad.doctor.thresholds import DEFAULT_THRESHOLDS, Thresholds


@dataclass
class ScriptRun:
    exit_code: int  # what `python SCRIPT.py` would have exited with
    doctor: Doctor
    globals: dict | None  # the script's module globals when it finished (None if it raised)


def run_script(
    path, args=(), *, every: int = DEFAULT_EVERY, thresholds: Thresholds = DEFAULT_THRESHOLDS, watch: bool = True
) -> ScriptRun:
    """Run the script at `path` with `args` under the doctor (or, with watch=False, plainly, for comparison)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"leakygrad doctor: no script at {path} (expected a Python file to run)")
    doctor = Doctor(every=every, thresholds=thresholds)
    if watch:
        try:
            from leakygrad.doctor.probes.torch_probe import TorchProbe

            doctor.probe = TorchProbe(doctor, discover=True)
        except ImportError:
            doctor.note("PyTorch is not installed: the script ran without being watched")
    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    sys.argv = [str(path), *args]
    folder = str(path.resolve().parent)
    if sys.path:
        sys.path[0] = folder
    else:
        sys.path.insert(0, folder)
    exit_code, script_globals = 0, None
    if doctor.probe is not None:
        doctor.probe.attach()
    try:
        script_globals = runpy.run_path(str(path), run_name="__main__")
    except SystemExit as stop:
        exit_code = _exit_code(stop.code)
    except KeyboardInterrupt:
        print("KeyboardInterrupt", file=sys.stderr)
        exit_code = 130
    except BaseException as error:  # the script's own error: print it as Python would, keep going to the report
        _print_script_traceback(error, path)
        exit_code = 1
    finally:
        if doctor.probe is not None:
            doctor.probe.detach()
        sys.argv = saved_argv
        if saved_path0 is not None:
            sys.path[0] = saved_path0
    return ScriptRun(exit_code, doctor, script_globals)


def _exit_code(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message") prints the message and exits with 1
    return 1


def _print_script_traceback(error: BaseException, path: Path) -> None:
    """The traceback from the script's first frame on, without the runner's own frames."""
    tb = error.__traceback__
    script = str(path.resolve())
    while tb is not None and str(Path(tb.tb_frame.f_code.co_filename).resolve()) != script:
        tb = tb.tb_next
    traceback.print_exception(type(error), error, tb if tb is not None else error.__traceback__, file=sys.stderr)
