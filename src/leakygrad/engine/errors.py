"""The errors the engine raises. Each message names the operation and the shapes or values at fault."""


class LeakygradError(Exception):
    """Base class of every error leakygrad raises on purpose."""


class OpError(LeakygradError, ValueError):
    """An operation was given inputs it cannot work with (shapes that do not fit, bad arguments)."""


class BackwardError(LeakygradError, RuntimeError):
    """Backpropagation cannot proceed (nothing to differentiate, a backward that returned the wrong shape)."""


class NotTwiceDifferentiable(BackwardError):
    """A fused op's backward runs in NumPy, and no Tensor-op version of it was given: its backward cannot be
    recorded (create_graph=True), so it has no second derivative."""


def describe(array_like) -> str:
    """`(32, 784) float32`: how errors name a tensor."""
    shape = getattr(array_like, "shape", ())
    dtype = getattr(array_like, "dtype", type(array_like).__name__)
    return f"{tuple(shape)} {dtype}"


def what_is(value) -> str:
    """`a Tensor of shape (2, 4) float32`, `a list`: how errors name something given where it does not belong."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"a {type(value).__name__} of shape {describe(value)}"
    return f"a {type(value).__name__}"
