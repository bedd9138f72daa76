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


class _grad_mode(contextlib.ContextDecorator):
    """Switch recording on or off inside a `with` block (or a decorated function), then restore it.
    (A class rather than a @contextmanager generator: backward enters one per call, and this is cheaper.)"""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.previous: list[bool] = []  # a stack: the same object may be entered again (a recursive function)

    def __enter__(self):
        self.previous.append(is_grad_enabled())
        set_grad_enabled(self.enabled)

    def __exit__(self, *exc_info):
        set_grad_enabled(self.previous.pop())


def no_grad():
    """Context manager: operations inside record no graph (evaluation, optimiser updates)."""
    return _grad_mode(False)


def enable_grad():
    """Context manager: operations inside record the graph, even within `no_grad()`."""
    return _grad_mode(True)
