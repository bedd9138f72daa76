"""Run an unmodified training script under the doctor, the way `python SCRIPT.py ARGS...` would.

Same `sys.argv` (the script's path as typed, then its arguments), `sys.path[0]` (the script's folder), a fresh
`__main__` module with `__file__` the script's path made absolute as Python makes it (`<cwd>/../train.py`), the
script's own stdout, stderr and `sys.excepthook`, its exit status, and the wait for the threads it started
(non-daemon ones) before the end. The doctor attaches to every model the script calls with gradients on and every
optimiser that steps their parameters (global module and optimiser hooks, and `torch.autograd.backward`), so the
script needs no change. If the script fails, the report is still written: a crash is often when it is needed most.

Not the same: PyTorch and NumPy are imported before the script runs (the doctor needs them to attach), so thread
settings the script makes in `os.environ` before its own imports have no effect: set them in the environment of
the command. A script that ends with `os._exit` leaves no report (nothing runs after it).
"""

from __future__ import annotations

import builtins
import io
import os
import sys
import threading
import traceback
import types
from dataclasses import dataclass
from pathlib import Path

from leakygrad.doctor.doctor import DEFAULT_EVERY, Doctor
from leakygrad.doctor.thresholds import DEFAULT_THRESHOLDS, Thresholds


@dataclass
class ScriptRun:
    exit_code: int  # what `python SCRIPT.py` would have exited with
    doctor: Doctor
    globals: dict | None  # the script's module globals when it finished (None if it raised)
    interrupted: bool = False  # it ended on Ctrl-C it did not catch: Python would end by SIGINT (leakygrad.cli)


def run_script(
    path, args=(), *, every: int = DEFAULT_EVERY, thresholds: Thresholds = DEFAULT_THRESHOLDS, watch: bool = True
) -> ScriptRun:
    """Run the script at `path` with `args` under the doctor (or, with watch=False, plainly, for comparison).
    Give `path` as a string, as typed: a `Path` drops a leading `./`, which `sys.argv[0]` keeps."""
    typed = os.fspath(path)
    path = Path(typed)
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
    sys.argv = [typed, *args]
    filename = _main_file(typed)  # (now: the script may change the working folder before it fails)
    folder = str(path.resolve().parent)
    if sys.path:
        sys.path[0] = folder
    else:
        sys.path.insert(0, folder)
    exit_code, script_globals, interrupted = 0, None, False
    threads_before = set(threading.enumerate())
    if doctor.probe is not None:
        doctor.probe.attach()
    try:
        script_globals = _run_as_main(filename)
    except SystemExit as stop:
        exit_code = _exit_code(stop.code)
    except KeyboardInterrupt as interrupt:
        _print_script_traceback(interrupt, filename)
        doctor.script_error = "KeyboardInterrupt"
        exit_code, interrupted = 130, True
    except BaseException as error:  # the script's own error: print it as Python would, keep going to the report
        _print_script_traceback(error, filename)
        doctor.script_error = _one_line(_describe(error))
        exit_code = 1
    finally:
        try:
            _wait_for_threads(threads_before)
        except KeyboardInterrupt:  # Ctrl-C while the script's threads ran on: stop waiting, keep the report
            print("leakygrad doctor: interrupted while the script's threads were still running", file=sys.stderr)
            doctor.script_error = doctor.script_error or "KeyboardInterrupt"
            exit_code = exit_code or 130
        if doctor.probe is not None:
            doctor.probe.detach()
        sys.argv = saved_argv
        _restore_path_entry(folder, saved_path0)
    return ScriptRun(exit_code, doctor, script_globals, interrupted)


def _restore_path_entry(folder: str, saved: str | None) -> None:
    """Put back the `sys.path` entry that the script's folder stood in for, wherever the script moved the folder
    (it may insert entries of its own before it, as `sys.path.insert(0, ...)` does), or at the front if the
    script removed it; with no entry saved (sys.path was empty), take the folder out again."""
    if folder in sys.path:
        index = sys.path.index(folder)
        if saved is None:
            del sys.path[index]
        else:
            sys.path[index] = saved
    elif saved is not None:
        sys.path.insert(0, saved)


def _main_file(typed: str) -> str:
    """The script's `__file__` (and its code's file name, in tracebacks) as Python gives them: the path as typed,
    made absolute by putting the working folder in front, not normalised (`python ../train.py` run from /w/run
    has `/w/run/../train.py`)."""
    return typed if os.path.isabs(typed) else os.path.join(os.getcwd(), typed)


def _run_as_main(filename: str) -> dict:
    """Run the file as `python path` does: as a new `__main__` module (so that its classes pickle as `__main__.X`),
    with `__file__` the absolute `filename`. Returns the module's globals."""
    with io.open_code(filename) as file:
        code = compile(file.read(), filename, "exec")  # (compile reads the source's encoding declaration itself)
    module = types.ModuleType("__main__")
    module.__dict__.update(__file__=filename, __builtins__=builtins, __cached__=None)
    saved_main = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    try:
        exec(code, module.__dict__)
    finally:
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
    return module.__dict__


def _wait_for_threads(before: set) -> None:
    """Python's own last act: wait for the threads the script started and did not mark as daemons (one of them
    may be the one training), after telling the idle workers of its executors to stop, as Python's exit does."""
    while True:
        started = [t for t in threading.enumerate() if t not in before and not t.daemon and t.is_alive()]
        if not started:
            return
        _stop_idle_executors(started)
        for thread in started:
            thread.join()
        before.update(started)


def _stop_idle_executors(threads: list) -> None:
    """concurrent.futures' own exit hook (`_python_exit`), for these threads only: a thread or process pool the
    script never shut down has threads that wait for more work until the interpreter says it is shutting down.
    The flag is set back afterwards: the process goes on (to the report; in a test, to the next test)."""
    for name, flag, registry, wake in (
        ("concurrent.futures.thread", "_shutdown", "_threads_queues", lambda queue: queue.put(None)),
        ("concurrent.futures.process", "_global_shutdown", "_threads_wakeups", lambda wakeup: wakeup.wakeup()),
    ):
        module = sys.modules.get(name)
        ours = [(t, w) for t, w in list(getattr(module, registry, {}).items()) if t in threads] if module else []
        if not ours or not hasattr(module, flag):
            continue
        saved = getattr(module, flag)
        setattr(module, flag, True)
        try:
            for _, waiting in ours:
                wake(waiting)
            for thread, _ in ours:
                thread.join()
        finally:
            setattr(module, flag, saved)


def _describe(error: BaseException) -> str:
    """The exception's last line, as Python's traceback writes it."""
    try:
        message = str(error)
    except Exception:
        message = "<exception str() failed>"
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def _one_line(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _exit_code(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message") prints the message and exits with 1
    return 1


DOCTOR_FOLDER = str(Path(__file__).resolve().parent)


def _without_doctor_frames(tb):
    """A traceback without the frames of the doctor's own code: the wrappers it puts around `torch.autograd.backward`
    and the like while it watches (an error raised by PyTorch inside `loss.backward()` passed through one). Python
    would show the script's frames and PyTorch's only."""
    frames = []
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(DOCTOR_FOLDER):
            frames.append(tb)
        tb = tb.tb_next
    rebuilt = None
    for frame in reversed(frames):
        rebuilt = types.TracebackType(rebuilt, frame.tb_frame, frame.tb_lasti, frame.tb_lineno)
    return rebuilt


def _linked_exceptions(error: BaseException) -> list[BaseException]:
    """The exceptions Python prints with `error`: its cause or context, theirs, and so on (each once)."""
    linked, seen, current = [], {id(error)}, error
    while True:
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
        if current is None or id(current) in seen:
            return linked
        seen.add(id(current))
        linked.append(current)


def _print_script_traceback(error: BaseException, script: str) -> None:
    """The traceback from the script's first frame on (`script`: its code's file name), without the runner's own
    frames, through the script's `sys.excepthook` if it set one (as Python would)."""
    tb = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != script:
        tb = tb.tb_next
    if tb is None and not isinstance(error, SyntaxError):  # raised before the script ran: show where
        tb = error.__traceback__
    else:
        tb = _without_doctor_frames(tb)
        for linked in _linked_exceptions(error):  # (`raise ... from`, and during handling of ...: theirs too)
            linked.__traceback__ = _without_doctor_frames(linked.__traceback__)
    if sys.excepthook is not sys.__excepthook__:
        sys.excepthook(type(error), error, tb)
    else:
        traceback.print_exception(type(error), error, tb, file=sys.stderr)
