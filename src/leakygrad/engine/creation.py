"""Ways to make tensors: from data, filled with a constant, or random (from one seedable generator)."""

from __future__ import annotations

import numpy as np

from leakygrad.engine.tensor import DEFAULT_DTYPE, Tensor

_rng = np.random.default_rng()


def manual_seed(seed: int) -> None:
    """Seed the generator behind randn, rand and every random initialisation in leakygrad."""
    global _rng
    _rng = np.random.default_rng(seed)


def generator() -> np.random.Generator:
    """The generator leakygrad draws random numbers from (seeded by `manual_seed`)."""
    return _rng


def _shape(shape) -> tuple[int, ...]:
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else tuple(shape)


def from_numpy(array: np.ndarray, requires_grad: bool = False) -> Tensor:
    """A tensor that shares memory with `array` (no copy, dtype kept): changing one changes the other."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a NumPy array, got {type(array).__name__}")
    result = Tensor._wrap(array)
    result.requires_grad = requires_grad
    return result


def tensor(data, requires_grad: bool = False, dtype=None) -> Tensor:
    return Tensor(data, requires_grad=requires_grad, dtype=dtype)


def zeros(*shape, dtype=DEFAULT_DTYPE, requires_grad: bool = False) -> Tensor:
    return Tensor(np.zeros(_shape(shape), dtype=dtype), requires_grad=requires_grad, dtype=dtype)


def ones(*shape, dtype=DEFAULT_DTYPE, requires_grad: bool = False) -> Tensor:
    return Tensor(np.ones(_shape(shape), dtype=dtype), requires_grad=requires_grad, dtype=dtype)


def full(shape, value: float, dtype=DEFAULT_DTYPE, requires_grad: bool = False) -> Tensor:
    return Tensor(np.full(shape, value, dtype=dtype), requires_grad=requires_grad, dtype=dtype)


def zeros_like(x: Tensor, requires_grad: bool = False) -> Tensor:
    return Tensor(np.zeros_like(x.data), requires_grad=requires_grad, dtype=x.dtype)


def ones_like(x: Tensor, requires_grad: bool = False) -> Tensor:
    return Tensor(np.ones_like(x.data), requires_grad=requires_grad, dtype=x.dtype)


def eye(n: int, dtype=DEFAULT_DTYPE) -> Tensor:
    return Tensor(np.eye(n, dtype=dtype), dtype=dtype)


def arange(*args, dtype=None) -> Tensor:
    return Tensor(np.arange(*args), dtype=dtype)


def randn(*shape, dtype=DEFAULT_DTYPE, requires_grad: bool = False) -> Tensor:
    """Standard normal samples."""
    return Tensor(_rng.standard_normal(_shape(shape)), requires_grad=requires_grad, dtype=dtype)


def rand(*shape, dtype=DEFAULT_DTYPE, requires_grad: bool = False) -> Tensor:
    """Uniform samples in [0, 1)."""
    return Tensor(_rng.random(_shape(shape)), requires_grad=requires_grad, dtype=dtype)
