"""Whether operations record the graph: `no_grad()` switches recording off, `enable_grad()` back on."""

from __future__ import annotations

import contextlib
import threading

_state = threading.local()
_state.enabled = True  # the main thread; other threads start from the default in is_grad_enabled


def is_grad_enabled() -> bool:
    """True when new operations record themselves for backward (the default)."""
    return getattr(_state, "enabled", True)


def set_grad_enabled(enabled: bool) -> None:
    _state.enabled = bool(enabled)


@contextlib.contextmanager
def _grad_mode(enabled: bool):
    previous = is_grad_enabled()
    set_grad_enabled(enabled)
    try:
        yield
    finally:
        set_grad_enabled(previous)


def no_grad():
    """Context manager: operations inside record no graph (evaluation, optimiser updates)."""
    return _grad_mode(False)


def enable_grad():
    """Context manager: operations inside record the graph, even within `no_grad()`."""
    return _grad_mode(True)
