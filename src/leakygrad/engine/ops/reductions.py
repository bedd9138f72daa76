"""Reductions: ops that combine many elements into fewer (sum, mean, var, max, min, logsumexp), and the
softmax family, which normalises along an axis.

Backward of a reduction spreads each output gradient back over the elements that were combined into it.
`_spread` does the shape work: it restores the reduced axes (as size 1) and broadcasts.
"""

from __future__ import annotations

import math

import numpy as np

from leakygrad.engine.op import Op
from leakygrad.engine.tensor import Tensor


def _axes(axis, ndim: int) -> tuple[int, ...]:
    """`axis` as a tuple of non-negative axes (None: all of them)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        axes = (axis,)
    else:  # a tuple or list of axes; or an array or a 0-d tensor of them, which NumPy unpacks
        axes = tuple(axis) if isinstance(axis, (tuple, list, range)) else tuple(np.ravel(axis).tolist())
    for a in axes:
        if not isinstance(a, (int, np.integer)):  # (1.0 and "rows" would fail with a message about floats, strings)
            raise ValueError(f"an axis must be a whole number, got {a!r}")
        if not -max(ndim, 1) <= a < max(ndim, 1):  # a 0-d tensor accepts axis 0 or -1, as in PyTorch
            raise ValueError(f"axis {a} is out of range for a tensor with {ndim} dimensions")
    if ndim == 0:
        return ()  # nothing to reduce over: the value itself
    normalised = [a % ndim for a in axes]
    if len(set(normalised)) < len(normalised):
        raise ValueError(f"axes {axes} name the same axis twice (for a tensor with {ndim} dimensions)")
    return tuple(sorted(normalised))


def _kept_shape(shape, axes) -> tuple[int, ...]:
    """The shape with the reduced axes kept as size 1 (what keepdims=True gives)."""
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _spread(grad: Tensor, shape, axes) -> Tensor:
    """Bring the gradient of a reduction back to the input's shape: one copy per combined element."""
    return grad.reshape(_kept_shape(shape, axes)).broadcast_to(shape)


def _count(shape, axes) -> int:
    return math.prod(shape[a] for a in axes)


def sum_over(x: np.ndarray, axes: tuple[int, ...], keepdims: bool = False) -> np.ndarray:
    """np.sum(x, axis=axes), faster when the summed axes are the outer ones in memory.

    Summing the rows of a long, narrow array (a bias gradient: every batch position, a few channels) NumPy
    does row by row, some 20 times slower than the same sum as a product with a vector of ones, which BLAS
    does at full speed. The result may differ from np.sum in the last bits (BLAS adds in blocks, usually more
    accurately than one row after another).
    """
    kept = [a for a in range(x.ndim) if a not in axes]
    if x.dtype.kind == "f" and axes and kept and x.size:
        moved = x.transpose(list(axes) + kept)  # a view; C-contiguous when the summed axes are outermost
        if moved.flags.c_contiguous:
            rows = moved.reshape(-1, moved[(0,) * len(axes)].size)
            total = np.ones(rows.shape[0], dtype=x.dtype) @ rows
            shape = _kept_shape(x.shape, axes) if keepdims else moved.shape[len(axes) :]
            return total if total.shape == shape else total.reshape(shape)  # an array of its own, not a view
    return np.sum(x, axis=axes, keepdims=keepdims)


class Sum(Op):
    name = "sum"

    def __init__(self, axis=None, keepdims: bool = False):
        self.axis, self.keepdims = axis, keepdims

    def forward(self, x):
        self.axes = _axes(self.axis, x.ndim)
        return sum_over(x, self.axes, self.keepdims)

    def backward(self, grad):
        (x,) = self.inputs
        return _spread(grad, x.shape, self.axes)  # each summed element contributed with slope 1


class Mean(Op):
    name = "mean"

    def __init__(self, axis=None, keepdims: bool = False):
        self.axis, self.keepdims = axis, keepdims

    def forward(self, x):
        self.axes = _axes(self.axis, x.ndim)
        if x.size == 0:  # a mean over no element is 0 / 0 = nan, as in PyTorch (np.mean would warn)
            with np.errstate(invalid="ignore"):
                return np.sum(x, axis=self.axes, keepdims=self.keepdims) / _count(x.shape, self.axes)
        return np.mean(x, axis=self.axes, keepdims=self.keepdims)

    def backward(self, grad):
        (x,) = self.inputs
        # divided before it is spread (over no element at all, there is nothing to divide: x is empty)
        return _spread(grad / max(_count(x.shape, self.axes), 1), x.shape, self.axes)


class Var(Op):
    """Variance: mean of squared deviations, divided by n - ddof."""

    name = "var"

    def __init__(self, axis=None, keepdims: bool = False, ddof: int = 0):
        self.axis, self.keepdims, self.ddof = axis, keepdims, ddof

    def forward(self, x):
        self.axes = _axes(self.axis, x.ndim)
        # inf - inf = nan in the centring: a result, not a warning (n <= ddof still warns, as PyTorch does)
        with np.errstate(invalid="ignore"):
            return np.var(x, axis=self.axes, keepdims=self.keepdims, ddof=self.ddof)

    def backward(self, grad):
        (x,) = self.inputs
        n = _count(x.shape, self.axes)
        centred = x - x.mean(axis=self.axes, keepdims=True)
        # n <= ddof leaves no degrees of freedom: the variance is inf or nan, and so is its gradient (PyTorch too)
        scale = 2 / (n - self.ddof) if n > self.ddof else np.inf
        return _spread(grad, x.shape, self.axes) * centred * scale


def _check_not_empty(name: str, x, axes) -> None:
    """A max or min over axes with no elements has no value (an empty tensor reduced over a nonempty axis is fine:
    the result is empty too)."""
    if x.size == 0 and any(x.shape[a] == 0 for a in axes):
        raise ValueError(f"cannot take the {name} over an axis of length 0")  # (the shape is added to it)


class Max(Op):
    """Largest element along axes. Ties share the gradient equally (as PyTorch's amax)."""

    name = "max"

    def __init__(self, axis=None, keepdims: bool = False):
        self.axis, self.keepdims = axis, keepdims

    def forward(self, x):
        self.axes = _axes(self.axis, x.ndim)
        _check_not_empty("max", x, self.axes)
        return np.max(x, axis=self.axes, keepdims=self.keepdims)

    def backward(self, grad):
        return _grad_of_extremum(self, grad)


class Min(Op):
    """Smallest element along axes. Ties share the gradient equally (as PyTorch's amin)."""

    name = "min"

    def __init__(self, axis=None, keepdims: bool = False):
        self.axis, self.keepdims = axis, keepdims

    def forward(self, x):
        self.axes = _axes(self.axis, x.ndim)
        _check_not_empty("min", x, self.axes)
        return np.min(x, axis=self.axes, keepdims=self.keepdims)

    def backward(self, grad):
        return _grad_of_extremum(self, grad)


def _grad_of_extremum(op: Max | Min, grad: Tensor) -> Tensor:
    """Only the winning elements moved the max (or min): they split the gradient, the rest get zero."""
    (x,) = op.inputs
    winners = x.data == op.output.data.reshape(_kept_shape(x.shape, op.axes))
    share = winners / winners.sum(axis=op.axes, keepdims=True)
    return _spread(grad, x.shape, op.axes) * share.astype(x.dtype)


class LogSumExp(Op):
    """log(sum(exp(x))), computed without overflow by factoring out the maximum."""

    name = "logsumexp"

    def __init__(self, axis=None, keepdims: bool = False):
        self.axis, self.keepdims = axis, keepdims

    def forward(self, x):
        self.axes = _axes(self.axis, x.ndim)
        if x.size == 0:  # the log of an empty sum: -inf, as in PyTorch (a float, also for integers: -inf is not one)
            dtype = x.dtype if x.dtype.kind == "f" else np.float64
            return np.full(np.sum(x, axis=self.axes, keepdims=self.keepdims).shape, -np.inf, dtype=dtype)
        peak = np.max(x, axis=self.axes, keepdims=True)
        peak = np.where(np.isfinite(peak), peak, 0)
        with np.errstate(divide="ignore"):
            out = np.log(np.sum(np.exp(x - peak), axis=self.axes, keepdims=True)) + peak
        return out if self.keepdims else np.squeeze(out, axis=self.axes)

    def backward(self, grad):
        (x,) = self.inputs
        y = self.output.reshape(_kept_shape(x.shape, self.axes))
        return _spread(grad, x.shape, self.axes) * (x - y).exp()  # the softmax of x


class Softmax(Op):
    name = "softmax"

    def __init__(self, axis: int = -1):
        self.axis = axis

    def forward(self, x):
        if x.size == 0:
            return x.copy()  # nothing to normalise (PyTorch gives the empty tensor back)
        # a slice holding +inf, or only -inf, is nan (inf - inf): a result, as in PyTorch, not a warning
        with np.errstate(invalid="ignore"):
            shifted = x - np.max(x, axis=self.axis, keepdims=True)  # same result, no overflow
        e = np.exp(shifted)
        return e / np.sum(e, axis=self.axis, keepdims=True)

    def backward(self, grad):
        y = self.output
        # Jacobian diag(y) - y y^T, applied to grad without building it
        return y * (grad - (grad * y).sum(axis=self.axis, keepdims=True))


class LogSoftmax(Op):
    name = "log_softmax"

    def __init__(self, axis: int = -1):
        self.axis = axis

    def forward(self, x):
        if x.size == 0:
            return x.copy()
        with np.errstate(invalid="ignore"):  # (inf - inf = nan, as in Softmax)
            shifted = x - np.max(x, axis=self.axis, keepdims=True)
            return shifted - np.log(np.sum(np.exp(shifted), axis=self.axis, keepdims=True))

    def backward(self, grad):
        y = self.output
        return grad - y.exp() * grad.sum(axis=self.axis, keepdims=True)  # exp(y) is the softmax
