"""Whether operations record the graph: `no_grad()` switches recording off, `enable_grad()` back on.

Each is a context manager (`with no_grad():`) and a decorator (`@no_grad()` or `@no_grad`, on functions and on
generator functions), as in PyTorch. The setting belongs to the thread that makes it.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading

_state = threading.local()
_state.enabled = True  # the main thread; other threads start from the default in is_grad_enabled


def is_grad_enabled() -> bool:
    """True when new operations record themselves for backward (the default)."""
    return getattr(_state, "enabled", True)


def _set(enabled: bool) -> None:
    _state.enabled = bool(enabled)


class _grad_mode(contextlib.ContextDecorator):
    """Switch recording on or off inside a `with` block (or a decorated function), then restore it.
    (A class rather than a @contextmanager generator: backward enters one per call, and this is cheaper.)"""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.previous: list[bool] = []  # a stack: the same object may be entered again (a recursive block)

    def __enter__(self):
        self.previous.append(is_grad_enabled())
        _set(self.enabled)

    def __exit__(self, *exc_info):
        _set(self.previous.pop())

    def _recreate_cm(self):
        """Each call of a decorated function gets a context of its own (two threads must not share one)."""
        return _grad_mode(self.enabled)

    def __call__(self, function):
        if inspect.isgeneratorfunction(function):
            return _generator_in_mode(function, self._recreate_cm)
        return super().__call__(function)


def _generator_in_mode(function, make_context):
    """A generator function whose body runs in the mode at every resumption (the caller's mode in between)."""

    @functools.wraps(function)
    def generator(*args, **kwargs):
        inner = function(*args, **kwargs)
        sent, thrown = None, None
        while True:
            try:
                with make_context():
                    item = inner.throw(thrown) if thrown is not None else inner.send(sent)
            except StopIteration as finished:
                return finished.value
            sent, thrown = None, None
            try:
                sent = yield item
            except GeneratorExit:
                with make_context():
                    inner.close()
                raise
            except BaseException as error:  # thrown into the generator: pass it on to the inner one
                thrown = error

    return generator


def no_grad(function=None):
    """Operations inside record no graph (evaluation, optimiser updates): `with no_grad():`, or a decorator."""
    mode = _grad_mode(False)
    return mode if function is None else mode(function)


def enable_grad(function=None):
    """Operations inside record the graph, even within `no_grad()`: `with enable_grad():`, or a decorator."""
    mode = _grad_mode(True)
    return mode if function is None else mode(function)


class set_grad_enabled(_grad_mode):
    """Switch recording on (True) or off (False) now, as in PyTorch: called alone it stays so; used as a context
    manager it is restored at the end of the block; used as a decorator, it applies inside the function only."""

    def __init__(self, enabled: bool):
        super().__init__(enabled)
        self.before = is_grad_enabled()
        _set(enabled)

    def __enter__(self):
        _set(self.enabled)  # (switched already when made; again, should the object be entered again)

    def __exit__(self, *exc_info):
        _set(self.before)

    def __call__(self, function):
        _set(self.before)  # made to decorate: the switch applies to the function's calls only
        return super().__call__(function)
