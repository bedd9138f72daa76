"""Ways to make tensors: from data, filled with a constant, or random (from one seedable generator)."""

from __future__ import annotations

import math

import numpy as np

from leakygrad.engine.errors import OpError, what_is
from leakygrad.engine.tensor import DEFAULT_DTYPE, Tensor, check_numeric_dtype

_rng = np.random.default_rng()


def manual_seed(seed: int) -> None:
    """Seed the generator behind randn, rand and every random initialisation in leakygrad."""
    global _rng
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise OpError(f"manual_seed: the seed must be a whole number, got {what_is(seed)}")
    _rng = np.random.default_rng(int(seed) % 2**64)  # (a negative seed too, as PyTorch takes it)


def generator() -> np.random.Generator:
    """The generator leakygrad draws random numbers from (seeded by `manual_seed`)."""
    return _rng


def _shape(name: str, shape) -> tuple[int, ...]:
    """The sizes given as `f(2, 3)` or `f((2, 3))`, checked: whole numbers, none negative."""
    sizes = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else tuple(shape)
    for size in sizes:
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
            raise OpError(f"{name}: sizes must be whole numbers >= 0, got {sizes}")
    return tuple(int(size) for size in sizes)


def from_numpy(array: np.ndarray, requires_grad: bool = False) -> Tensor:
    """A tensor that shares memory with `array` (no copy, dtype kept): changing one changes the other."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a NumPy array, got {type(array).__name__}")
    check_numeric_dtype("from_numpy", array.dtype)
    result = Tensor._wrap(array)
    result.requires_grad = requires_grad
    return result


def tensor(data, requires_grad: bool = False, dtype=None) -> Tensor:
    return Tensor(data, requires_grad=requires_grad, dtype=dtype)


def zeros(*shape, dtype=DEFAULT_DTYPE, requires_grad: bool = False) -> Tensor:
    return Tensor(np.zeros(_shape("zeros", shape), dtype=check_numeric_dtype("zeros", dtype)), requires_grad, dtype)


def ones(*shape, dtype=DEFAULT_DTYPE, requires_grad: bool = False) -> Tensor:
    return Tensor(np.ones(_shape("ones", shape), dtype=check_numeric_dtype("ones", dtype)), requires_grad, dtype)


def full(shape, value: float, dtype=DEFAULT_DTYPE, requires_grad: bool = False) -> Tensor:
    shape = _shape("full", (shape,))
    return Tensor(np.full(shape, value, dtype=check_numeric_dtype("full", dtype)), requires_grad, dtype)


def zeros_like(x: Tensor, requires_grad: bool = False) -> Tensor:
    return Tensor(np.zeros_like(x.data), requires_grad=requires_grad, dtype=x.dtype)


def ones_like(x: Tensor, requires_grad: bool = False) -> Tensor:
    return Tensor(np.ones_like(x.data), requires_grad=requires_grad, dtype=x.dtype)


def eye(n: int, dtype=DEFAULT_DTYPE) -> Tensor:
    (n,) = _shape("eye", (n,))
    return Tensor(np.eye(n, dtype=check_numeric_dtype("eye", dtype)), dtype=dtype)


def arange(*args, dtype=None) -> Tensor:
    """start, start + step, ... below end: arange(end), arange(start, end) or arange(start, end, step)."""
    if not 1 <= len(args) <= 3:
        raise OpError(f"arange: takes end, or start and end, or start, end and step; got {len(args)} numbers")
    args = tuple(_number(value) for value in args)  # (a 0-d tensor or array, as PyTorch takes)
    start, end, step = (0, args[0], 1) if len(args) == 1 else (args + (1,))[:3]
    for value in (start, end, step):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise OpError(f"arange: start, end and step must be numbers, got {what_is(value)}")
        if not math.isfinite(value):
            raise OpError(f"arange: start, end and step must be finite, got {value}")
    if step == 0:
        raise OpError("arange: step must not be 0")
    if (end - start) * step < 0:
        raise OpError(f"arange: from {start} to {end} is the wrong way for step {step} (as in PyTorch, an error)")
    if dtype is not None and check_numeric_dtype("arange", dtype).kind in "iub":
        if any(not float(value).is_integer() for value in (start, end, step)):
            raise OpError(f"arange: an integer dtype needs whole numbers, got start {start}, end {end}, step {step}")
    return Tensor(np.arange(start, end, step), dtype=dtype)


def _number(value):
    """A single number given as a 0-d Tensor or array, as a Python number; anything else as it is."""
    if isinstance(value, Tensor):
        value = value.data
    return value.item() if isinstance(value, (np.ndarray, np.generic)) and np.ndim(value) == 0 else value


def _float_dtype(name: str, dtype) -> np.dtype:
    dtype = check_numeric_dtype(name, dtype)
    if dtype.kind != "f":
        raise OpError(f"{name}: draws real numbers, so the dtype must be a float type, got {dtype}")
    return dtype


def randn(*shape, dtype=DEFAULT_DTYPE, requires_grad: bool = False) -> Tensor:
    """Standard normal samples."""
    dtype = _float_dtype("randn", dtype)
    return Tensor(_rng.standard_normal(_shape("randn", shape)), requires_grad=requires_grad, dtype=dtype)


def rand(*shape, dtype=DEFAULT_DTYPE, requires_grad: bool = False) -> Tensor:
    """Uniform samples in [0, 1)."""
    dtype = _float_dtype("rand", dtype)
    return Tensor(_rng.random(_shape("rand", shape)), requires_grad=requires_grad, dtype=dtype)
