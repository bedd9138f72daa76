"""`Tensor`: a NumPy array plus what reverse-mode autodiff needs.

A tensor holds

- `data`: the values, a NumPy array (floating data float32 unless you ask for float64; integers and booleans
  keep their type);
- `requires_grad`: whether gradients should flow back to it;
- `grad`: after `backward()`, d(output)/d(this tensor), a Tensor of the same shape;
- `op`: the operation that produced it (None for a leaf: a tensor you created yourself).

Every method below that computes something differentiable calls an op from `leakygrad.engine.ops`, where its
forward and its backward are written side by side (comparisons, round, argmax and the bitwise operators return
results outside the graph: their derivative is zero almost everywhere). The chain rule that strings those
backwards together is in `leakygrad.engine.autograd`.
"""

from __future__ import annotations

import itertools
import math
import weakref
from collections.abc import Callable

import numpy as np

from leakygrad.engine.errors import OpError, describe, what_is
from leakygrad.engine.grad_mode import is_grad_enabled

DEFAULT_DTYPE = np.float32


def _to_array(data, dtype) -> np.ndarray:
    """A copy of `data` (as torch.tensor copies; `from_numpy` shares memory instead).

    Floating data becomes float32 unless a dtype is given; integers and booleans keep their type.
    """
    if dtype is not None:
        check_numeric_dtype("Tensor", dtype)
    not_numbers = isinstance(data, np.ndarray) and data.dtype.kind not in "fiub"
    if isinstance(data, (str, bytes)) or (dtype is None and not_numbers):  # (with a dtype: converted, if it can be)
        raise OpError(f"Tensor: cannot hold {what_is(data)}; give numbers (floats, ints or booleans)")
    try:
        array = np.array(data, dtype=dtype)
    except (ValueError, TypeError) as error:
        raise OpError(f"Tensor: cannot make an array of this data: {error}") from None
    if array.dtype.kind not in "fiub":  # (strings inside a list, say)
        raise OpError(f"Tensor: cannot hold data of dtype {array.dtype}; give numbers (floats, ints or booleans)")
    if dtype is None and array.dtype.kind == "f" and array.dtype != DEFAULT_DTYPE:
        return array.astype(DEFAULT_DTYPE)
    return array


def check_numeric_dtype(name: str, dtype) -> np.dtype:
    """`dtype` as a NumPy dtype, if a tensor can hold it: a float, an integer or a boolean."""
    try:
        dtype = np.dtype(dtype)
    except TypeError as error:
        raise OpError(f"{name}: {dtype!r} is not a dtype ({error})") from None
    if dtype.kind not in "fiub":
        raise OpError(f"{name}: a tensor holds numbers (floats, ints or booleans), not dtype {dtype}")
    return dtype


class InPlaceClock:
    """Dates in-place changes (`x *= 2` inside no_grad()), so that backward can refuse to read changed values.

    Each change ticks the clock and notes the time against the memory it wrote to (so a `detach()`ed alias or a
    view of the same memory counts too); each op notes the time it was recorded (`Op.recorded_at`). A backward
    whose op's input or output memory was changed after that would read values the forward never used: a wrong
    gradient, silently. PyTorch keeps a version counter per tensor for this; one clock does the same job here
    and costs nothing while nothing is changed in place.
    """

    now = 0
    _changes: dict[int, tuple[weakref.ref, int]] = {}  # id(memory) -> (the memory, weakly; when it last changed)

    @classmethod
    def record_change(cls, array: np.ndarray) -> None:
        cls.now += 1
        memory, key = _memory_of(array), id(_memory_of(array))
        forget = lambda _, key=key: cls._changes.pop(key, None)  # noqa: E731  (the memory was freed)
        cls._changes[key] = (weakref.ref(memory, forget), cls.now)

    @classmethod
    def changed_at(cls, array: np.ndarray) -> int:
        """When `array`'s memory was last changed in place (0: never)."""
        memory = _memory_of(array)
        entry = cls._changes.get(id(memory))
        return entry[1] if entry is not None and entry[0]() is memory else 0


def _memory_of(array: np.ndarray) -> np.ndarray:
    """The array that owns the memory `array` looks at (itself, or the base of its view)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


class Tensor:
    """A multi-dimensional array that remembers how it was computed, so that it can be differentiated."""

    __slots__ = ("data", "grad", "_requires_grad", "op", "_hooks", "_retains_grad", "name", "__weakref__")
    # Make `ndarray * Tensor` call Tensor.__rmul__ instead of NumPy trying to take the tensor apart.
    __array_priority__ = 1000

    def __init__(self, data, requires_grad: bool = False, dtype=None, name: str | None = None):
        if isinstance(data, Tensor):
            data = data.data
        self.data = _to_array(data, dtype)
        self.grad: Tensor | None = None
        self.op = None
        self._hooks: dict[int, Callable] | None = None  # by registration (see RemovableHandle)
        self._retains_grad = False
        self.name = name
        self._requires_grad = False
        self.requires_grad = requires_grad

    @classmethod
    def _wrap(cls, array, requires_grad: bool = False) -> Tensor:
        """Fast constructor for op outputs: `array` is already a NumPy array (or scalar) of the right dtype."""
        tensor = cls.__new__(cls)
        tensor.data = array if type(array) is np.ndarray else np.asarray(array)
        tensor.grad = None
        tensor.op = None
        tensor._hooks = None
        tensor._retains_grad = False
        tensor.name = None
        tensor._requires_grad = requires_grad
        return tensor

    # ------------------------------------------------------------------ attributes

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if value and self.data.dtype.kind != "f":
            raise OpError(
                f"Tensor: only floating-point tensors can require gradients, this one is {self.data.dtype}. "
                "A gradient is a rate of change, and integers or booleans cannot change by a small amount. "
                "Convert first: tensor.astype('float32'), or create it with dtype='float32'."
            )
        if not value and self.op is not None:
            raise OpError(
                "Tensor: cannot set requires_grad=False on a tensor computed from others; "
                "use .detach() to get a copy cut from the graph"
            )
        self._requires_grad = bool(value)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def size(self) -> int:
        return self.data.size

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def is_leaf(self) -> bool:
        """A leaf was created by the user, not computed by an op; `backward()` stores gradients in leaves."""
        return self.op is None

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor (a single number)")
        return self.data.shape[0]

    def __index__(self) -> int:
        """A single integer as an index (a slice's bound, say), as NumPy's and PyTorch's are."""
        if self.ndim != 0 or self.dtype.kind not in "iu":
            raise TypeError(f"only a single integer can be an index, not a tensor of shape {self.shape} ({self.dtype})")
        return int(self.data)

    def __repr__(self) -> str:
        body = np.array2string(self.data, precision=4, separator=", ", threshold=20, prefix="Tensor(")
        extras = [f"size={self.shape}"] if self.size == 0 else []  # ([] alone hides whether it is (0,) or (3, 0))
        if self.data.dtype != DEFAULT_DTYPE:
            extras.append(f"dtype={self.data.dtype}")
        if self.op is not None:
            extras.append(f"op={self.op.name}")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        return f"Tensor({body}{''.join(', ' + e for e in extras)})"

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(f"the truth value of a tensor of shape {self.shape} is ambiguous: use .any() or .all()")
        return bool(self.data)

    __hash__ = object.__hash__  # tensors are hashable by identity, although == compares elementwise

    def __format__(self, spec: str) -> str:
        """f"{loss:.3f}" formats a single number as Python formats it (other tensors: their repr, formatted as a
        string, so a number spec such as .3f fails for them)."""
        if self.size == 1 and spec:
            return format(self.item(), spec)
        return format(str(self), spec)

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __setitem__(self, index, value):
        raise OpError(
            "Tensor does not support assignment to elements (x[i] = v): it would change a value that the graph "
            "may still need for backward. Build a new tensor (F.where, F.concatenate), or, outside the graph, "
            "change x.data[i] directly."
        )

    def item(self) -> float:
        """The single number in a one-element tensor, as a Python number."""
        if self.size != 1:
            raise ValueError(f"item(): the tensor has shape {self.shape}, not a single element")
        return self.data.item()

    def numpy(self) -> np.ndarray:
        return self.data

    def tolist(self):
        return self.data.tolist()

    def __array__(self, dtype=None, copy=None):
        return self.data if dtype is None else self.data.astype(dtype)

    # ------------------------------------------------------------------ autograd

    def backward(self, gradient=None, retain_graph: bool | None = None, create_graph: bool = False) -> None:
        """Compute d(self)/d(leaf) for every leaf that requires grad, adding it into `leaf.grad`.

        `gradient` is d(final)/d(self); it may be omitted when self is a single number (it is then 1).
        The graph is kept after backward (so `retain_graph` has no effect); `create_graph=True` records the
        backward pass itself, so that the gradients can be differentiated again.
        """
        autograd.backward(self, gradient, create_graph=create_graph)

    def detach(self) -> Tensor:
        """The same values (shared memory), cut from the graph: no gradient flows back through it."""
        return Tensor._wrap(self.data)

    def clone(self) -> Tensor:
        """The same values in memory of their own, still in the graph: the gradient passes through."""
        return shape_ops.Clone.apply(self)

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        """Call `hook(grad)` when this tensor's gradient has been computed, during backward.

        The hook may return a new gradient, which replaces the old one for everything upstream (this is how
        per-element gradient clipping is done). Returns a handle whose `.remove()` unregisters the hook.
        """
        if not self.requires_grad:
            raise OpError("register_hook: this tensor does not require grad, so no gradient will reach it")
        if self._hooks is None:
            self._hooks = {}
        return RemovableHandle(self._hooks, hook)

    def retain_grad(self) -> None:
        """Keep this intermediate tensor's gradient in `.grad` after backward (leaves always keep theirs)."""
        if not self.requires_grad:
            raise OpError("retain_grad: this tensor does not require grad, so no gradient will reach it")
        self._retains_grad = True

    def zero_grad(self) -> None:
        self.grad = None

    # ------------------------------------------------------------------ arithmetic

    def __add__(self, other):
        return elementwise.Add.apply(self, other)

    def __radd__(self, other):
        return elementwise.Add.apply(other, self)

    def __sub__(self, other):
        return elementwise.Sub.apply(self, other)

    def __rsub__(self, other):
        return elementwise.Sub.apply(other, self)

    def __mul__(self, other):
        return elementwise.Mul.apply(self, other)

    def __rmul__(self, other):
        return elementwise.Mul.apply(other, self)

    def __truediv__(self, other):
        return elementwise.Div.apply(self, other)

    def __rtruediv__(self, other):
        return elementwise.Div.apply(other, self)

    def __neg__(self):
        return elementwise.Neg.apply(self)

    def __pos__(self):
        return self

    def __pow__(self, exponent):
        if isinstance(exponent, (int, float)) and not isinstance(exponent, bool):
            return elementwise.PowScalar.apply(self, exponent=exponent)
        return elementwise.Pow.apply(self, exponent)

    def __rpow__(self, base):
        return elementwise.Pow.apply(base, self)

    def __matmul__(self, other):
        return linalg.MatMul.apply(self, other)

    def __rmatmul__(self, other):
        return linalg.MatMul.apply(other, self)

    def __abs__(self):
        return self.abs()

    # Comparisons give boolean tensors that carry no gradient (their derivative is zero almost everywhere).
    def __lt__(self, other):
        return elementwise.compare(np.less, self, other)

    def __le__(self, other):
        return elementwise.compare(np.less_equal, self, other)

    def __gt__(self, other):
        return elementwise.compare(np.greater, self, other)

    def __ge__(self, other):
        return elementwise.compare(np.greater_equal, self, other)

    def __eq__(self, other):
        if other is None or isinstance(other, (str, bytes)):
            return False  # (not a number: equal to no tensor, as in PyTorch)
        return elementwise.compare(np.equal, self, other)

    def __ne__(self, other):
        if other is None or isinstance(other, (str, bytes)):
            return True
        return elementwise.compare(np.not_equal, self, other)

    def __invert__(self):
        """Logical not of a boolean tensor; bitwise not of an integer one."""
        if self.dtype.kind not in "biu":
            raise OpError(f"~ (not): needs a boolean or integer tensor, got {describe(self)}")
        return Tensor._wrap(~self.data)

    # & | ^ : logical for booleans, bitwise for integers (as NumPy and PyTorch); no gradient, like comparisons
    def __and__(self, other):
        return elementwise.compare(np.bitwise_and, self, other)

    def __rand__(self, other):
        return elementwise.compare(np.bitwise_and, other, self)

    def __or__(self, other):
        return elementwise.compare(np.bitwise_or, self, other)

    def __ror__(self, other):
        return elementwise.compare(np.bitwise_or, other, self)

    def __xor__(self, other):
        return elementwise.compare(np.bitwise_xor, self, other)

    def __rxor__(self, other):
        return elementwise.compare(np.bitwise_xor, other, self)

    # x += y and friends. Inside no_grad() the values change in place, as in PyTorch: `p -= lr * p.grad` updates
    # the parameter itself, and the change is dated (InPlaceClock), so that a backward that would read the changed
    # values refuses. While the graph records, a leaf that requires grad (a parameter) is refused, and any other
    # tensor is replaced by a new one: a graph may still read the old values in backward.
    def __iadd__(self, other):
        return self._in_place(np.add, other, "+=", Tensor.__add__)

    def __isub__(self, other):
        return self._in_place(np.subtract, other, "-=", Tensor.__sub__)

    def __imul__(self, other):
        return self._in_place(np.multiply, other, "*=", Tensor.__mul__)

    def __itruediv__(self, other):
        return self._in_place(np.true_divide, other, "/=", Tensor.__truediv__)

    def _in_place(self, ufunc, other, symbol: str, out_of_place):
        if is_grad_enabled():
            if self.op is None and self._requires_grad:
                raise OpError(
                    f"{symbol}: this tensor (shape {self.shape}) requires grad and was not computed by an op (a "
                    "parameter, say): changing it in place would change what backward reads. Update it inside "
                    f"`with no_grad():`, or write x = x {symbol[0]} ... to make a new tensor."
                )
            return out_of_place(self, other)  # a new tensor, recorded like any op
        value = other.data if isinstance(other, Tensor) else other
        try:
            ufunc(self.data, value, out=self.data, casting="same_kind")
        except (TypeError, ValueError) as error:  # (a shape that does not fit, a float into ints, read-only memory)
            raise OpError(
                f"{symbol}: cannot change {describe(self)} in place with {describe(value)}: {error}"
            ) from None
        InPlaceClock.record_change(self.data)  # a graph recorded before now must not read these values
        return self

    def exp(self):
        return elementwise.Exp.apply(self)

    def log(self):
        return elementwise.Log.apply(self)

    def sqrt(self):
        return elementwise.Sqrt.apply(self)

    def abs(self):
        return elementwise.Abs.apply(self)

    def sign(self):
        return elementwise.Sign.apply(self)

    def erf(self):
        return elementwise.Erf.apply(self)

    def clip(self, min=None, max=None):
        """Values below `min` become `min`, above `max` become `max`; the gradient there is zero."""
        if _is_array_bound(min) or _is_array_bound(max):  # a bound per element: it may broadcast x to its shape
            return elementwise.clip_to_tensors(self, min, max)
        return elementwise.Clip.apply(self, low=min, high=max)

    clamp = clip

    def maximum(self, other):
        return elementwise.Maximum.apply(self, other)

    def minimum(self, other):
        return elementwise.Minimum.apply(self, other)

    def round(self):
        """Rounded values, cut from the graph: rounding has zero derivative almost everywhere."""
        return Tensor._wrap(np.round(self.data))

    def any(self) -> bool:
        return bool(np.any(self.data))

    def all(self) -> bool:
        return bool(np.all(self.data))

    # ------------------------------------------------------------------ activations

    def relu(self):
        return activations.ReLU.apply(self)

    def sigmoid(self):
        return activations.Sigmoid.apply(self)

    def tanh(self):
        return activations.Tanh.apply(self)

    # ------------------------------------------------------------------ reductions

    def sum(self, axis=None, keepdims: bool = False):
        return reductions.Sum.apply(self, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims: bool = False):
        return reductions.Mean.apply(self, axis=axis, keepdims=keepdims)

    def var(self, axis=None, keepdims: bool = False, ddof: int = 0):
        """Variance, NumPy's convention: divides by n - ddof (ddof=0: the biased estimate)."""
        return reductions.Var.apply(self, axis=axis, keepdims=keepdims, ddof=ddof)

    def max(self, axis=None, keepdims: bool = False):
        return reductions.Max.apply(self, axis=axis, keepdims=keepdims)

    def min(self, axis=None, keepdims: bool = False):
        return reductions.Min.apply(self, axis=axis, keepdims=keepdims)

    def logsumexp(self, axis=None, keepdims: bool = False):
        return reductions.LogSumExp.apply(self, axis=axis, keepdims=keepdims)

    def softmax(self, axis: int = -1):
        return reductions.Softmax.apply(self, axis=axis)

    def log_softmax(self, axis: int = -1):
        return reductions.LogSoftmax.apply(self, axis=axis)

    def argmax(self, axis=None):
        """Indices of the largest values (an integer tensor, no gradient)."""
        return Tensor._wrap(np.argmax(self.data, axis=_arg_axis("argmax", axis, self.shape)))

    def argmin(self, axis=None):
        return Tensor._wrap(np.argmin(self.data, axis=_arg_axis("argmin", axis, self.shape)))

    # ------------------------------------------------------------------ shape

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return shape_ops.Reshape.apply(self, shape=tuple(shape))

    view = reshape

    def flatten(self, start_axis: int = 0, end_axis: int = -1):
        """Merge the axes start_axis..end_axis into one (by default all: a 1-D tensor)."""
        if not self.ndim:  # a single number: axis 0 (or -1) is all there is, as in PyTorch
            _check_axis_of_a_number("flatten", start_axis), _check_axis_of_a_number("flatten", end_axis)
            return self.reshape(1)
        start, end = _axis("flatten", start_axis, self.shape), _axis("flatten", end_axis, self.shape)
        if start > end:
            raise OpError(f"flatten: start axis {start_axis} comes after end axis {end_axis} (shape {self.shape})")
        merged = math.prod(self.shape[start : end + 1])
        return self.reshape(self.shape[:start] + (merged,) + self.shape[end + 1 :])

    def transpose(self, *axes):
        """Reverse the axes (no argument), or permute them: `x.transpose(0, 2, 1)`."""
        axes = axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes
        return shape_ops.Transpose.apply(self, axes=tuple(axes) if axes else None)

    permute = transpose

    def swapaxes(self, axis1: int, axis2: int):
        axis1, axis2 = _axis("swapaxes", axis1, self.shape), _axis("swapaxes", axis2, self.shape)
        axes = list(range(self.ndim))
        axes[axis1], axes[axis2] = axes[axis2], axes[axis1]
        return self.transpose(axes)

    @property
    def T(self):
        return self.transpose()

    @property
    def mT(self):
        """Transpose of the last two axes (a batch of matrices)."""
        n = self.data.ndim
        if n < 2:
            raise OpError(f"mT: needs a matrix or a batch of them, got a tensor of shape {self.shape}")
        return shape_ops.Transpose.apply(self, axes=(*range(n - 2), n - 1, n - 2))  # every matmul backward uses it

    def broadcast_to(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        if tuple(shape) == self.shape:
            return self
        return shape_ops.BroadcastTo.apply(self, shape=tuple(shape))

    def expand(self, *sizes):
        """PyTorch's name for `broadcast_to`, where a size of -1 keeps that axis as it is."""
        sizes = sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes
        offset = len(sizes) - self.ndim  # (new axes come first, and cannot be -1)
        if offset < 0:
            raise OpError(f"expand: {len(sizes)} sizes {tuple(sizes)} for a tensor of {self.ndim} axes {self.shape}")
        if -1 in sizes[:offset]:
            raise OpError(
                f"expand: size -1 (keep the axis as it is) given for the new leading axis {list(sizes).index(-1)} "
                f"of {tuple(sizes)}, which a tensor of shape {self.shape} does not have: give its size"
            )
        return self.broadcast_to(
            tuple(self.shape[i - offset] if size == -1 and i >= offset else size for i, size in enumerate(sizes))
        )

    def sum_to(self, shape: tuple[int, ...]):
        """Sum over the axes that broadcasting to self.shape added or stretched, so the result has `shape`.

        This is the backward of broadcasting (a copy forward is a sum backward); every op whose inputs
        broadcast uses it to bring a gradient back to its input's shape.
        """
        if self.shape == tuple(shape):
            return self
        return shape_ops.SumTo.apply(self, shape=tuple(shape))

    def squeeze(self, axis=None):
        if axis is None:
            return self.reshape(tuple(n for n in self.shape if n != 1))
        axes = (axis,) if isinstance(axis, (int, np.integer, float)) else tuple(np.ravel(axis).tolist())
        axes = {_axis("squeeze", a, self.shape) for a in axes}
        for a in axes:
            if self.shape[a] != 1:
                raise OpError(f"squeeze: axis {a} of shape {self.shape} has size {self.shape[a]}, not 1")
        return self.reshape(tuple(n for i, n in enumerate(self.shape) if i not in axes))

    def unsqueeze(self, axis: int):
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise OpError(f"unsqueeze: an axis must be a whole number, got {axis!r}")
        if not -self.ndim - 1 <= axis <= self.ndim:
            raise OpError(
                f"unsqueeze: axis {axis} is out of range for a tensor of shape {self.shape}: "
                f"the new axis can go at {-self.ndim - 1} to {self.ndim}"
            )
        axis = axis % (self.ndim + 1)
        return self.reshape(self.shape[:axis] + (1,) + self.shape[axis:])

    expand_dims = unsqueeze

    def __getitem__(self, index):
        return shape_ops.GetItem.apply(self, index=shape_ops.normalize_index(index))

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def pad(self, pad_width, value: float = 0.0):
        return shape_ops.Pad.apply(self, pad_width=pad_width, value=value)

    def split(self, split_size_or_sections, axis: int = 0):
        return functional.split(self, split_size_or_sections, axis)

    def chunk(self, chunks: int, axis: int = 0):
        return functional.chunk(self, chunks, axis)

    # ------------------------------------------------------------------ types

    def astype(self, dtype):
        """A copy with another dtype (the tensor itself if it has that dtype already). Casting to an integer type
        cuts the graph (no gradient flows back)."""
        dtype = np.dtype(dtype)
        if dtype == self.dtype:
            return self
        if dtype.kind == "f":
            return elementwise.Cast.apply(self, dtype=dtype)
        return Tensor._wrap(self.data.astype(dtype))

    def float(self):
        return self.astype(np.float32)

    def double(self):
        return self.astype(np.float64)


class RemovableHandle:
    """Registers `hook` in `hooks` (a dict kept in registration order) under a number of its own; `.remove()`
    unregisters exactly that registration, once (the same function registered twice stays once)."""

    _numbers = itertools.count()

    def __init__(self, hooks: dict, hook):
        self._hooks, self.id = hooks, next(RemovableHandle._numbers)
        hooks[self.id] = hook

    def remove(self) -> None:
        self._hooks.pop(self.id, None)


def _axis(name: str, axis: int, shape: tuple[int, ...]) -> int:
    """`axis` as a non-negative index into `shape`, or an OpError if it is not a whole number or out of range."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise OpError(f"{name}: an axis must be a whole number, got {axis!r}")
    if not -len(shape) <= axis < len(shape):
        raise OpError(f"{name}: axis {axis} is out of range for a tensor of shape {shape} ({len(shape)} dimensions)")
    return int(axis) % len(shape)


def _check_axis_of_a_number(name: str, axis) -> None:
    """A 0-d tensor (a single number) takes axis 0 or -1, as in PyTorch: its one element is all there is."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise OpError(f"{name}: an axis must be a whole number, got {axis!r}")
    if axis not in (0, -1):
        raise OpError(f"{name}: axis {axis} is out of range for a tensor of shape () (a single number takes 0 or -1)")


def _arg_axis(name: str, axis, shape: tuple[int, ...]) -> int | None:
    """argmax's axis, checked: there must be something along it to choose from."""
    if not shape and axis is not None:
        _check_axis_of_a_number(name, axis)
        return None  # (its one element is at index 0)
    axis = None if axis is None else _axis(name, axis, shape)
    if (math.prod(shape) if axis is None else shape[axis]) == 0:
        along = "" if axis is None else f" along axis {axis}"
        raise OpError(f"{name}: the tensor of shape {shape} has nothing to choose from{along}")
    return axis


def _is_array_bound(bound) -> bool:
    return isinstance(bound, Tensor) or (isinstance(bound, (np.ndarray, list, tuple)) and np.ndim(bound) > 0)


def as_tensor(value, like: Tensor | None = None) -> Tensor:
    """Turn a constant (a Python number, a NumPy array) into a tensor that requires no grad.

    A Python number takes the dtype of `like`, so that `x * 2.0` stays float32 when x is float32, and `i + 1` stays
    int32 when i is int32 (as in NumPy and PyTorch). An integer that does not fit there, and a float with an
    integer `like`, take NumPy's own dtype (int64, float64).
    """
    if isinstance(value, Tensor):
        return value
    if like is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        kind = like.dtype.kind
        if kind == "f":
            return Tensor._wrap(np.asarray(value, dtype=like.dtype))
        if kind in "iu" and isinstance(value, int) and _fits(value, like.dtype):
            return Tensor._wrap(np.asarray(value, dtype=like.dtype))
        if isinstance(value, float):
            return Tensor._wrap(np.asarray(value))
        if not -(2**63) <= value < 2**64:  # (NumPy would hold it as a Python object)
            raise OpError(f"Tensor: the integer {value} is too large for a tensor (integers hold at most 64 bits)")
    if isinstance(value, np.ndarray):
        return Tensor._wrap(value)
    return Tensor(value)


def _fits(value: int, dtype: np.dtype) -> bool:
    limits = np.iinfo(dtype)
    return limits.min <= value <= limits.max


# The ops need `Tensor` to build their outputs, so they are imported after it is defined.
from leakygrad.engine import autograd, functional  # noqa: E402  (functional: split and chunk, written from slices)
from leakygrad.engine.ops import activations, elementwise, linalg, reductions  # noqa: E402
from leakygrad.engine.ops import shape as shape_ops  # noqa: E402
