"""The elementwise, activation, reduction and joining ops as plain functions: `F.relu(x)`,
`F.concatenate([a, b], axis=1)`, `F.where(c, a, b)`.

These are thin: most call one op's `apply`. Use whichever reads better, `x.relu()` or `F.relu(x)`.

`inplace`: the activations that take it in PyTorch (`relu`, `leaky_relu`, `elu`, `hardtanh`, `silu`) take it here
too, in the same position, so code ported from PyTorch runs. They compute out of place either way, as the nn
modules do: the values and gradients are PyTorch's, but the input is left unchanged and a new tensor is returned
(tensors have no version counters, so overwriting an input that backward may still read could not be caught).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from leakygrad.engine.errors import OpError
from leakygrad.engine.ops import activations, elementwise, reductions
from leakygrad.engine.ops import shape as shape_ops
from leakygrad.engine.ops.elementwise import where  # noqa: F401  (part of this module's surface)
from leakygrad.engine.tensor import Tensor, as_tensor


def exp(x):
    return elementwise.Exp.apply(x)


def log(x):
    return elementwise.Log.apply(x)


def sqrt(x):
    return elementwise.Sqrt.apply(x)


def abs(x):  # noqa: A001
    return elementwise.Abs.apply(x)


def sign(x):
    return elementwise.Sign.apply(x)


def erf(x):
    return elementwise.Erf.apply(x)


def clip(x, min=None, max=None):  # noqa: A002
    return as_tensor(x).clip(min, max)


clamp = clip


def maximum(a, b):
    return elementwise.Maximum.apply(a, b)


def minimum(a, b):
    return elementwise.Minimum.apply(a, b)


def sigmoid(x):
    return activations.Sigmoid.apply(x)


def tanh(x):
    return activations.Tanh.apply(x)


def relu(x, inplace=False):
    """max(x, 0). `inplace=True` is accepted for PyTorch's sake and computes out of place (x is not changed)."""
    return activations.ReLU.apply(x)


def leaky_relu(x, negative_slope=0.01, inplace=False):
    """x where x > 0, else negative_slope * x. `inplace=True` computes out of place (x is not changed)."""
    return activations.LeakyReLU.apply(x, negative_slope=negative_slope)


def elu(x, alpha=1.0, inplace=False):
    """x where x > 0, else alpha (e^x - 1). `inplace=True` computes out of place (x is not changed)."""
    return activations.ELU.apply(x, alpha=alpha)


def gelu(x, approximate="none"):
    return activations.GELU.apply(x, approximate=approximate)


def silu(x, inplace=False):
    """x sigmoid(x). `inplace=True` computes out of place (x is not changed)."""
    return activations.SiLU.apply(x)


def selu(x, inplace=False):
    """scale (x where x > 0, else alpha (e^x - 1)), the self-normalising constants. `inplace=True` computes out of
    place (x is not changed)."""
    return activations.SELU.apply(x)


def celu(x, alpha=1.0, inplace=False):
    """x where x > 0, else alpha (e^(x / alpha) - 1). `inplace=True` computes out of place (x is not changed)."""
    return activations.CELU.apply(x, alpha=alpha)


def mish(x, inplace=False):
    """x tanh(softplus(x)). `inplace=True` computes out of place (x is not changed)."""
    return activations.Mish.apply(x)


def hardsigmoid(x, inplace=False):
    """clip(x / 6 + 1/2, 0, 1). `inplace=True` computes out of place (x is not changed)."""
    return activations.Hardsigmoid.apply(x)


def hardswish(x, inplace=False):
    """x hardsigmoid(x). `inplace=True` computes out of place (x is not changed)."""
    return activations.Hardswish.apply(x)


def threshold(x, threshold, value, inplace=False):
    """x where x > threshold, else value. `inplace=True` computes out of place (x is not changed)."""
    return activations.Threshold.apply(x, threshold=threshold, value=value)


def softplus(x, beta=1.0, threshold=20.0):
    return activations.Softplus.apply(x, beta=beta, threshold=threshold)


def hardtanh(x, min_val=-1.0, max_val=1.0, inplace=False):
    """clip(x, min_val, max_val), with no gradient at the bounds. `inplace=True` computes out of place (x is not
    changed)."""
    return activations.Hardtanh.apply(x, min_val=min_val, max_val=max_val)


def sum(x, axis=None, keepdims=False):  # noqa: A001
    return reductions.Sum.apply(x, axis=axis, keepdims=keepdims)


def mean(x, axis=None, keepdims=False):
    return reductions.Mean.apply(x, axis=axis, keepdims=keepdims)


def var(x, axis=None, keepdims=False, ddof=0):
    return reductions.Var.apply(x, axis=axis, keepdims=keepdims, ddof=ddof)


def max(x, axis=None, keepdims=False):  # noqa: A001
    return reductions.Max.apply(x, axis=axis, keepdims=keepdims)


def min(x, axis=None, keepdims=False):  # noqa: A001
    return reductions.Min.apply(x, axis=axis, keepdims=keepdims)


def logsumexp(x, axis=None, keepdims=False):
    return reductions.LogSumExp.apply(x, axis=axis, keepdims=keepdims)


def softmax(x, axis=-1):
    return reductions.Softmax.apply(x, axis=axis)


def log_softmax(x, axis=-1):
    return reductions.LogSoftmax.apply(x, axis=axis)


def concatenate(tensors: Sequence, axis: int = 0) -> Tensor:
    tensors = _as_tensors("concatenate", tensors)
    return shape_ops.Concatenate.apply(*tensors, axis=axis)


cat = concatenate


def stack(tensors: Sequence, axis: int = 0) -> Tensor:
    tensors = _as_tensors("stack", tensors)
    return shape_ops.Stack.apply(*tensors, axis=axis)


def split(x: Tensor, split_size_or_sections, axis: int = 0) -> tuple[Tensor, ...]:
    """Cut x along `axis` into pieces of `split_size_or_sections` (an int: that size, the last piece smaller if need
    be) or of the sizes listed, as PyTorch's split. Each piece is a slice of x: its gradient goes back in its place.
    (In this module `sum`, `min` and `max` are ops: plain Python numbers are added with NumPy here.)"""
    x = as_tensor(x)
    if x.ndim == 0 or not -x.ndim <= axis < x.ndim:
        raise OpError(f"split: axis {axis} is out of range for a tensor of shape {x.shape}")
    length = x.shape[axis]
    if isinstance(split_size_or_sections, (int, np.integer)) and not isinstance(split_size_or_sections, bool):
        size = int(split_size_or_sections)
        if size <= 0:
            raise OpError(f"split: the size of each piece must be at least 1, got {size}")
        sizes = [size] * (length // size) + ([length % size] if length % size else []) or [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if int(np.sum(sizes)) != length or any(s < 0 for s in sizes):
            raise OpError(
                f"split: sizes {sizes} must be non-negative and add up to {length}, the length of axis {axis}"
            )
    pieces, start = [], 0
    before = (slice(None),) * (axis % x.ndim)
    for size in sizes:
        pieces.append(x[before + (slice(start, start + size),)])
        start += size
    return tuple(pieces)


def chunk(x: Tensor, chunks: int, axis: int = 0) -> tuple[Tensor, ...]:
    """Cut x along `axis` into `chunks` pieces of ceil(length / chunks) (fewer if the length runs out), as PyTorch's
    chunk."""
    if not isinstance(chunks, (int, np.integer)) or isinstance(chunks, bool) or chunks < 1:
        raise OpError(f"chunk: the number of chunks must be a whole number of at least 1, got {chunks!r}")
    x = as_tensor(x)
    length = x.shape[axis] if x.ndim else 0
    return split(x, -(-length // int(chunks)) or 1, axis)  # ceil(length / chunks), at least 1


def pad(x, pad_width, value: float = 0.0) -> Tensor:
    return shape_ops.Pad.apply(x, pad_width=pad_width, value=value)


def _as_tensors(name: str, tensors) -> list[Tensor]:
    tensors = list(tensors)
    if not tensors:
        raise OpError(f"{name}: needs at least one tensor")
    like = next((t for t in tensors if isinstance(t, Tensor)), None)
    return [as_tensor(t, like) for t in tensors]
