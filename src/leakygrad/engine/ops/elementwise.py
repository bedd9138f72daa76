"""Elementwise ops: each output element depends on the input elements at the same position.

Binary ops broadcast as NumPy does. Broadcasting copies an input along new or stretched axes, so in backward
the copies' gradients are summed back: `.sum_to(input.shape)` does that, in every binary op below.

Where a function has a kink, the gradient chosen there follows PyTorch; docs/gradients.md lists them all.
"""

from __future__ import annotations

import numpy as np

from leakygrad.engine.errors import OpError, describe
from leakygrad.engine.op import Op
from leakygrad.engine.ops.erf_numpy import erf as _erf
from leakygrad.engine.tensor import Tensor, as_tensor


class Add(Op):
    name = "add"

    def forward(self, a, b):
        return a + b

    def backward(self, grad):
        a, b = self.inputs
        return grad.sum_to(a.shape), grad.sum_to(b.shape)


class Sub(Op):
    name = "sub"

    def forward(self, a, b):
        return a - b

    def backward(self, grad):
        a, b = self.inputs
        return grad.sum_to(a.shape), (-grad).sum_to(b.shape) if self.needs_input_grad[1] else None


class Mul(Op):
    name = "mul"

    def forward(self, a, b):
        return a * b

    def backward(self, grad):
        a, b = self.inputs
        want_a, want_b = self.needs_input_grad
        return (grad * b).sum_to(a.shape) if want_a else None, (grad * a).sum_to(b.shape) if want_b else None


class Div(Op):
    name = "div"

    def forward(self, a, b):
        with np.errstate(all="ignore"):  # inf and nan are results, not warnings
            return a / b

    def backward(self, grad):
        a, b = self.inputs
        want_a, want_b = self.needs_input_grad
        # d(a/b)/da = 1/b,  d(a/b)/db = -a/b^2, computed as -(a/b)/b: b*b overflows (or underflows to 0) long
        # before the gradient does (float32: beyond |b| = 1.8e19; below 1e-19 it loses digits, below 3e-23 it is 0)
        return (
            (grad / b).sum_to(a.shape) if want_a else None,
            (-grad * (a / b) / b).sum_to(b.shape) if want_b else None,
        )


class Neg(Op):
    name = "neg"

    def forward(self, x):
        return -x

    def backward(self, grad):
        return -grad


class PowScalar(Op):
    """x ** p for a fixed number p."""

    name = "pow"

    def __init__(self, exponent: float):
        self.exponent = plain_number(exponent)  # (NumPy would compute float32 ** np.float64(2) in float64)

    def forward(self, x):
        with np.errstate(all="ignore"):
            return x**self.exponent

    def backward(self, grad):
        (x,) = self.inputs
        p = self.exponent
        if p == 0:
            return zeros_like(grad)  # x^0 = 1 everywhere, even at x = 0 (PyTorch's convention)
        if p == 2:
            return grad * 2 * x  # the same as below, without computing x ** 1 (a copy of x)
        return grad * p * x ** (p - 1)


class Pow(Op):
    """a ** b where the exponent is a tensor too."""

    name = "pow"

    def forward(self, a, b):
        with np.errstate(all="ignore"):
            return a**b

    def backward(self, grad):
        a, b = self.inputs
        y = self.output
        # d(a^b)/da = b a^(b-1), taken as 0 where b = 0;  d(a^b)/db = a^b log(a), taken as 0 where a = 0, b >= 0
        grad_a = where(b == 0, 0.0, grad * b * a ** (b - 1)) if self.needs_input_grad[0] else None
        grad_b = where((a == 0) & (b >= 0), 0.0, grad * y * a.log()) if self.needs_input_grad[1] else None
        return (
            None if grad_a is None else grad_a.sum_to(a.shape),
            None if grad_b is None else grad_b.sum_to(b.shape),
        )


class Exp(Op):
    name = "exp"

    def forward(self, x):
        with np.errstate(all="ignore"):  # inf and nan are results, not warnings
            return np.exp(x)

    def backward(self, grad):
        return grad * self.output  # d(e^x)/dx = e^x


class Log(Op):
    name = "log"

    def forward(self, x):
        with np.errstate(all="ignore"):  # inf and nan are results, not warnings
            return np.log(x)

    def backward(self, grad):
        (x,) = self.inputs
        return grad / x


class Sqrt(Op):
    name = "sqrt"

    def forward(self, x):
        with np.errstate(all="ignore"):  # inf and nan are results, not warnings
            return np.sqrt(x)

    def backward(self, grad):
        return grad / (2 * self.output)  # infinite at x = 0, as in PyTorch


class Abs(Op):
    name = "abs"

    def forward(self, x):
        return np.abs(x)

    def backward(self, grad):
        (x,) = self.inputs
        return grad * x.sign()  # sign(0) = 0: the gradient of |x| at 0 is 0


class Sign(Op):
    name = "sign"

    def forward(self, x):
        return np.sign(x)

    def backward(self, grad):
        return zeros_like(grad)  # flat everywhere it is defined: the gradient is blocked


class Erf(Op):
    name = "erf"

    def forward(self, x):
        return _erf(x)

    def backward(self, grad):
        (x,) = self.inputs
        return grad * (2 / np.sqrt(np.pi)) * (-x * x).exp()


def plain_number(setting):
    """An op's numeric setting as a Python number: a NumPy float64 one (from arr.max(), say) would make a float32
    result float64, where a Python float takes the array's dtype."""
    return setting.item() if isinstance(setting, np.generic) else setting


class Clip(Op):
    """min(max(x, low), high). Where a value is clipped, its gradient is zero."""

    name = "clip"

    def __init__(self, low=None, high=None):
        if low is None and high is None:
            raise OpError("clip needs at least one of min and max")
        self.low, self.high = plain_number(low), plain_number(high)

    def forward(self, x):
        low = -np.inf if self.low is None else self.low
        high = np.inf if self.high is None else self.high
        self.inside = (x >= low) & (x <= high)  # bounds included, as in PyTorch's clamp
        return np.clip(x, self.low, self.high)

    def backward(self, grad):
        return where(self.inside, grad, 0.0)


def clip_to_tensors(x: Tensor, low=None, high=None) -> Tensor:
    """clip with bounds that are Tensors (per element, say): min(max(x, low), high), each bound getting the gradient
    where it is the output, as PyTorch's clamp gives it, so a learned bound learns. (Clip keeps number bounds as
    settings, not inputs.) A NaN in x or in a bound gives NaN there, and no gradient to either. (Where low == high
    and x is below them, the gradient goes to low; PyTorch gives it to neither.)"""
    out = x
    if low is not None:
        out = _past_bound(out, low, np.less)
    if high is not None:
        out = _past_bound(out, high, np.greater)
    return out


def _past_bound(x: Tensor, bound, beyond) -> Tensor:
    """`bound` where `beyond(x, bound)`, x elsewhere; NaN where either is NaN."""
    bound_data = bound.data if isinstance(bound, Tensor) else np.asarray(bound)
    try:
        np.broadcast_shapes(x.shape, bound_data.shape)  # (a bound may broadcast the result to its shape, as in PyTorch)
    except ValueError:
        raise OpError(
            f"clip: a bound of shape {bound_data.shape} does not broadcast with the input's {x.shape}"
        ) from None
    out = where(beyond(x.data, bound_data), bound, x)
    undefined = np.isnan(x.data) | np.isnan(bound_data)
    return where(undefined, np.nan, out) if undefined.any() else out


class Maximum(Op):
    name = "maximum"

    def forward(self, a, b):
        return np.maximum(a, b)

    def backward(self, grad):
        a, b = self.inputs
        # The larger input takes the gradient; on a tie each takes half (PyTorch's convention).
        # Written as "zero where smaller" so that a NaN, as in PyTorch, passes the gradient.
        grad_a = where(a.data < b.data, 0.0, where(a.data == b.data, grad / 2, grad))
        grad_b = where(b.data < a.data, 0.0, where(a.data == b.data, grad / 2, grad))
        return grad_a.sum_to(a.shape), grad_b.sum_to(b.shape)


class Minimum(Op):
    name = "minimum"

    def forward(self, a, b):
        return np.minimum(a, b)

    def backward(self, grad):
        a, b = self.inputs
        grad_a = where(a.data > b.data, 0.0, where(a.data == b.data, grad / 2, grad))
        grad_b = where(b.data > a.data, 0.0, where(a.data == b.data, grad / 2, grad))
        return grad_a.sum_to(a.shape), grad_b.sum_to(b.shape)


class Where(Op):
    """condition ? a : b, elementwise. The condition is a constant: it gets no gradient."""

    name = "where"

    def __init__(self, condition: np.ndarray):
        self.condition = condition

    def forward(self, a, b):
        try:
            return _select(self.condition, a, b)
        except ValueError:
            raise OpError(
                f"where: condition {self.condition.shape}, {a.shape} and {b.shape} cannot be broadcast together"
            ) from None

    def backward(self, grad):
        a, b = self.inputs
        # The gradient goes to the branch that was taken, zero to the other. Beware: zero times an infinite
        # local derivative in the branch not taken is still NaN (see docs/gradients.md, "the where trap").
        return where(self.condition, grad, 0.0).sum_to(a.shape), where(self.condition, 0.0, grad).sum_to(b.shape)


def _select(condition: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """np.where(condition, a, b), faster in the common case of masking a gradient: where(mask, grad, 0).

    np.where branches on every element, and on a random mask (half the ReLUs on) the branches are mispredicted
    half the time: it runs some ten times slower than one pass without branches. So when one side is the
    constant +0.0, keep the bits of the other side where it is chosen and clear them elsewhere (a bitwise AND
    with all ones or all zeros): the same result to the bit, NaN and inf included. The result is laid out in
    memory like the condition: a mask computed from the forward activations has their layout (e.g.
    channels-last), which is the one the ops upstream in the backward pass work in.
    """
    if _is_plus_zero(b) and a.dtype == b.dtype and _fills(condition, a):
        return _keep_bits_in_layout_of(condition, a, -condition.view(np.int8))  # -1: all bits set where true
    if _is_plus_zero(a) and a.dtype == b.dtype and _fills(condition, b):
        return zero_where(condition, b)
    return np.where(condition, a, b)


def zero_where(condition: np.ndarray, x: np.ndarray) -> np.ndarray:
    """np.where(condition, 0.0, x) to the bit, for a boolean condition of x's shape (see `_select`): how a
    gradient is masked where the local derivative is zero, as in ReLU's backward."""
    return _keep_bits_in_layout_of(condition, x, condition.view(np.int8) - 1)  # all bits set where false


def _keep_bits_in_layout_of(like: np.ndarray, x: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """keep_bits(x, bits), laid out in memory like `like`. When x has to be copied into that layout, the copy
    is ours: mask it in place, instead of writing the result to yet another new array."""
    laid_out = _in_layout_of(like, x)
    return keep_bits(laid_out, bits, out=None if laid_out is x else laid_out)


_SAME_WIDTH_INTEGER = {2: np.int16, 4: np.int32, 8: np.int64}  # float16, float32, float64 read as integers


def _is_plus_zero(x: np.ndarray) -> bool:
    """A single +0.0 (not -0.0): the one number whose bits are all zero."""
    return (
        x.ndim == 0
        and x.dtype.kind == "f"
        and x.itemsize in _SAME_WIDTH_INTEGER
        and not x.view(_SAME_WIDTH_INTEGER[x.itemsize])
    )


def keep_bits(x: np.ndarray, bits: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """x where `bits` is -1 (all bits set), +0.0 where it is 0 (int8 bits broadcast): np.where(bits, x, 0.0) to
    the bit, NaN and inf included, as one branch-free pass: x's bits AND'ed with them, read as integers."""
    integers = _SAME_WIDTH_INTEGER[x.itemsize]
    return np.bitwise_and(x.view(integers), bits, out=None if out is None else out.view(integers)).view(x.dtype)


def _fills(condition: np.ndarray, x: np.ndarray) -> bool:
    """Whether the condition broadcasts to x's shape (so the result has x's shape)."""
    return condition.shape == x.shape or x.shape == np.broadcast_shapes(x.shape, condition.shape)


def _in_layout_of(like: np.ndarray, x: np.ndarray) -> np.ndarray:
    """`x` laid out in memory like `like` (e.g. channels-last), when both have the same shape: NumPy combines
    two arrays of different memory orders several times slower than it copies one and combines the two."""
    if x.shape != like.shape or _same_steps(x, like) or _axis_order(x) == _axis_order(like):
        return x
    same = np.empty_like(like, dtype=x.dtype)
    same[...] = x
    return same


def _same_steps(x: np.ndarray, y: np.ndarray) -> bool:
    """The same strides in elements (the usual case, checked first: it is cheaper than _axis_order)."""
    return [s // x.itemsize for s in x.strides] == [s // y.itemsize for s in y.strides]


def _axis_order(x: np.ndarray) -> list[int]:
    """The axes from innermost to outermost in memory (axes of size 1 do not count: any stride will do)."""
    return sorted((axis for axis in range(x.ndim) if x.shape[axis] > 1), key=lambda axis: abs(x.strides[axis]))


def where(condition, a, b) -> Tensor:
    """`a` where `condition` is true, else `b` (broadcasting all three)."""
    condition = condition.data if isinstance(condition, Tensor) else np.asarray(condition)
    if condition.dtype != np.bool_:
        condition = condition.astype(bool)
    like = a if isinstance(a, Tensor) else b if isinstance(b, Tensor) else None
    return Where.apply(as_tensor(a, like), as_tensor(b, like), condition=condition)


class Cast(Op):
    """Change the floating-point precision (float32 <-> float64); the gradient is cast back."""

    name = "cast"

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)

    def forward(self, x):
        return x.astype(self.dtype)

    def backward(self, grad):
        (x,) = self.inputs
        return grad.astype(x.dtype)


def compare(comparison, a, b) -> Tensor:
    """`a < b` and friends: a boolean tensor, outside the graph (a step function has zero derivative)."""
    like = a if isinstance(a, Tensor) else b
    a, b = as_tensor(a, like), as_tensor(b, like)
    try:
        return Tensor._wrap(comparison(a.data, b.data))
    except ValueError as error:
        raise OpError(f"{comparison.__name__}: shapes {a.shape} and {b.shape} cannot be broadcast together") from error
    except TypeError:  # (& and | of floats: they are bitwise, for booleans and integers)
        raise OpError(
            f"{comparison.__name__}: takes booleans or integers, got {describe(a.data)} and {describe(b.data)}"
        ) from None


def zeros_like(x: Tensor) -> Tensor:
    return Tensor._wrap(np.zeros_like(x.data))
