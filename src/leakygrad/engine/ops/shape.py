"""Shape ops: they move, copy or select elements without changing any value.

Their backward moves the gradient back where each element came from: reshape back, transpose back, a copy
(broadcast) becomes a sum, a selection (indexing) becomes a scatter that adds into zeros.
"""

from __future__ import annotations

import numpy as np

from leakygrad.engine.errors import OpError
from leakygrad.engine.op import Op
from leakygrad.engine.ops.reductions import sum_over
from leakygrad.engine.tensor import Tensor


class Clone(Op):
    """The same values in memory of their own: a gradient passes through unchanged."""

    name = "clone"

    def forward(self, x):
        return x.copy()

    def backward(self, grad):
        return grad


class Reshape(Op):
    name = "reshape"

    def __init__(self, shape: tuple[int, ...]):
        self.shape = shape

    def forward(self, x):
        try:
            return x.reshape(self.shape)
        except ValueError:
            raise OpError(f"reshape: cannot reshape {x.shape} ({x.size} elements) into {self.shape}") from None

    def backward(self, grad):
        (x,) = self.inputs
        return grad.reshape(x.shape)

    def backward_arrays(self, grad):
        return grad.reshape(self.inputs[0].shape)


class Transpose(Op):
    name = "transpose"

    def __init__(self, axes: tuple[int, ...] | None = None):
        self.axes = axes

    def forward(self, x):
        if self.axes is None:  # reverse them all
            self.axes = tuple(range(x.ndim - 1, -1, -1))
        elif sorted(a % max(x.ndim, 1) for a in self.axes) != list(range(x.ndim)):
            raise OpError(f"transpose: axes {self.axes} are not a permutation of the {x.ndim} axes of {x.shape}")
        return np.transpose(x, self.axes)

    def backward(self, grad):
        inverse = [0] * grad.ndim  # the permutation that undoes self.axes
        for position, axis in enumerate(self.axes):
            inverse[axis % grad.ndim] = position
        return grad.transpose(tuple(inverse))


class BroadcastTo(Op):
    """Copy the tensor along new leading axes and along axes of size 1 (NumPy's broadcasting, made explicit)."""

    name = "broadcast_to"

    def __init__(self, shape: tuple[int, ...]):
        self.shape = shape

    def forward(self, x):
        try:
            return np.broadcast_to(x, self.shape)
        except ValueError:
            raise OpError(f"broadcast_to: cannot broadcast {x.shape} to {self.shape}") from None

    def backward(self, grad):
        (x,) = self.inputs
        return grad.sum_to(x.shape)  # every copy's gradient flows back to the one original


class SumTo(Op):
    """Sum a tensor down to a shape it could have been broadcast from: the backward of broadcasting."""

    name = "sum_to"

    def __init__(self, shape: tuple[int, ...]):
        self.shape = shape

    def forward(self, x):
        lead = x.ndim - len(self.shape)
        if lead < 0 or any(n not in (1, m) for n, m in zip(self.shape, x.shape[lead:])):
            raise OpError(f"sum_to: {x.shape} cannot be summed down to {self.shape}")
        stretched = tuple(lead + i for i, n in enumerate(self.shape) if n == 1 and x.shape[lead + i] != 1)
        return sum_over(x, tuple(range(lead)) + stretched).reshape(self.shape)

    def backward(self, grad):
        (x,) = self.inputs
        return grad.broadcast_to(x.shape)


def normalize_index(index):
    """Turn tensors and lists inside an index into NumPy arrays, so that NumPy's indexing rules apply."""
    if isinstance(index, tuple):
        return tuple(_index_part(i) for i in index)
    return _index_part(index)


def _index_part(part):
    if isinstance(part, Tensor):
        return part.data
    if isinstance(part, list):
        return np.asarray(part) if part else np.zeros(0, dtype=np.intp)  # [] selects nothing (not a float array)
    return part


def _is_basic(index) -> bool:
    """Basic indexing (ints, slices, None, ...) selects each element at most once; arrays may repeat."""
    parts = index if isinstance(index, tuple) else (index,)
    return all(isinstance(p, (int, np.integer, slice)) or p is None or p is Ellipsis for p in parts)


class GetItem(Op):
    """x[index]: ints, slices, None, Ellipsis, boolean masks and integer arrays, as in NumPy."""

    name = "getitem"

    def __init__(self, index):
        self.index = index

    def forward(self, x):
        try:
            return x[self.index]
        except IndexError as error:
            raise IndexingError(f"getitem: {error} (indexing a tensor of shape {x.shape})") from None

    def backward(self, grad):
        (x,) = self.inputs
        return ScatterAdd.apply(grad, shape=x.shape, index=self.index)


class ScatterAdd(Op):
    """Zeros of `shape`, with `values` added at `index`: the backward of indexing.

    An element selected twice (`x[[0, 0]]`) gets both gradients added, hence `np.add.at`.
    """

    name = "scatter_add"

    def __init__(self, shape: tuple[int, ...], index):
        self.shape, self.index = shape, index

    def forward(self, values):
        out = np.zeros(self.shape, dtype=values.dtype)
        if _is_basic(self.index):
            out[self.index] = values
        else:
            np.add.at(out, self.index, values)
        return out

    def backward(self, grad):
        return grad[self.index]


class Concatenate(Op):
    name = "concatenate"

    def __init__(self, axis: int = 0):
        self.axis = axis

    def forward(self, *arrays):
        _check_axis("concatenate", self.axis, arrays, arrays[0].ndim)
        try:
            return np.concatenate(arrays, axis=self.axis)
        except (ValueError, np.exceptions.AxisError):
            shapes = ", ".join(str(a.shape) for a in arrays)
            raise OpError(
                f"concatenate: shapes {shapes} must match in every dimension except axis {self.axis}"
            ) from None

    def backward(self, grad):
        axis = self.axis % grad.ndim
        grads, start = [], 0
        for x in self.inputs:
            end = start + x.shape[axis]
            grads.append(grad[(slice(None),) * axis + (slice(start, end),)])
            start = end
        return tuple(grads)


class Stack(Op):
    name = "stack"

    def __init__(self, axis: int = 0):
        self.axis = axis

    def forward(self, *arrays):
        _check_axis("stack", self.axis, arrays, arrays[0].ndim + 1)  # the new axis may go anywhere
        try:
            return np.stack(arrays, axis=self.axis)
        except ValueError:
            shapes = ", ".join(str(a.shape) for a in arrays)
            raise OpError(f"stack: all tensors need the same shape, got {shapes}") from None

    def backward(self, grad):
        axis = self.axis % grad.ndim
        return tuple(grad[(slice(None),) * axis + (i,)] for i in range(len(self.inputs)))


class Pad(Op):
    """Pad with a constant. `pad_width` as in `numpy.pad`: ((before, after), ...) per axis, or one pair."""

    name = "pad"

    def __init__(self, pad_width, value: float = 0.0):
        self.pad_width, self.value = pad_width, value

    def forward(self, x):
        if x.ndim == 0:
            raise OpError("pad: a 0-d tensor (a single number) has no axes to pad")
        widths = np.asarray(self.pad_width)
        if widths.dtype.kind not in "iu":  # (1.5 would have been cut to 1)
            raise OpError(f"pad: widths must be whole numbers, got {self.pad_width}")
        if widths.shape not in ((), (2,), (1, 2), (x.ndim, 2)):
            raise OpError(
                f"pad: widths {self.pad_width} do not fit a tensor of shape {x.shape}: give one (before, after) "
                f"pair for every one of its {x.ndim} axes, or one pair for all"
            )
        self.widths = np.broadcast_to(widths, (x.ndim, 2))
        if (self.widths < 0).any():
            raise OpError(f"pad: widths must be non-negative, got {self.pad_width}")
        return np.pad(x, self.widths, mode="constant", constant_values=self.value)

    def backward(self, grad):
        inside = tuple(slice(before, n - after) for (before, after), n in zip(self.widths, grad.shape))
        return grad[inside]  # the padding was constant: only the original elements get a gradient


def _check_axis(name: str, axis: int, arrays, ndim: int) -> None:
    if not -ndim <= axis < ndim:
        shapes = ", ".join(str(a.shape) for a in arrays)
        raise OpError(f"{name}: axis {axis} is out of range for shapes {shapes} (the result has {ndim} dimensions)")


class IndexingError(OpError, IndexError):
    """An index out of range or of the wrong kind."""
