"""Gradient clipping: tame exploding gradients before the optimiser step.

- `clip_grad_norm_` rescales all gradients together so that their joint norm is at most `max_norm`; the
  direction of the update is kept, only its length shrinks. It returns the norm *before* clipping, the
  number worth logging (a spike in it is the explosion).
- `clip_grad_value_` clamps every gradient element to [-clip_value, clip_value]; this changes the
  direction too.

Both replace `param.grad` by a new Tensor instead of writing into the old array: a gradient array may be
shared (by two parameters, or with a hook's caller), and clipping one parameter must not change another.
Same results as torch.nn.utils.clip_grad_norm_ / clip_grad_value_.
"""

from __future__ import annotations

import math

import numpy as np

from leakygrad.engine.tensor import Tensor


def _parameters_list(parameters) -> list[Tensor]:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def _vector_norm(array: np.ndarray, norm_type: float) -> float:
    """||x||_p over all elements; p = inf gives max |x|."""
    values = np.abs(array.astype(np.float64, copy=False)).ravel()
    if values.size == 0:  # (no entries: nothing to add, and no smallest one: as if it were not there for p < 0)
        return math.inf if norm_type < 0 else 0.0
    if norm_type == math.inf:
        return float(values.max())
    if norm_type == -math.inf:
        return float(values.min())
    if norm_type == 0:
        return float(np.count_nonzero(values))
    if norm_type == 2:
        return float(np.sqrt(np.sum(values * values)))
    return float(np.sum(values**norm_type) ** (1.0 / norm_type))


def total_grad_norm(parameters, norm_type: float = 2.0) -> float:
    """The norm of all gradients taken together, as if concatenated into one vector (for norm_type 0, as in
    PyTorch: a norm of the per-tensor norms, the number of tensors with a nonzero gradient)."""
    grads = [p.grad.data for p in _parameters_list(parameters) if p.grad is not None]
    norm_type = float(norm_type)
    if not grads:
        return 0.0  # no gradient at all: nothing to measure (as PyTorch)
    per_tensor = np.array([_vector_norm(g, norm_type) for g in grads])
    return _vector_norm(per_tensor, norm_type)


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False) -> Tensor:
    """Scale all gradients by `min(1, max_norm / (total_norm + 1e-6))`; return `total_norm` (a 0-d Tensor).

    `norm_type` may be `float("inf")` (the largest |gradient| element). When the norm is inf or nan, the
    gradients are scaled anyway (as PyTorch does: they become nan or 0) unless `error_if_nonfinite=True`,
    which raises instead and leaves them untouched. A negative or nan `max_norm` is refused (PyTorch would
    scale by a negative number, reversing the gradients).
    """
    parameters = _parameters_list(parameters)
    max_norm = float(max_norm)  # (a NumPy float32 would round the coefficient to float32)
    if not max_norm >= 0:  # (a NaN fails the comparison too)
        # PyTorch accepts it, and a negative coefficient then turns every gradient around: descent becomes ascent.
        raise ValueError(f"clip_grad_norm_: max_norm must be >= 0 (the largest norm allowed), got {max_norm}")
    total = total_grad_norm(parameters, norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(
            f"clip_grad_norm_: the total {norm_type}-norm of the gradients is {total}, so they cannot be clipped. "
            "Something upstream produced an inf or a nan; set error_if_nonfinite=False to scale them anyway."
        )
    coefficient = min(max_norm / (total + 1e-6), 1.0) if not math.isnan(total) else math.nan
    for p in parameters:
        if p.grad is not None:
            with np.errstate(invalid="ignore"):  # inf * 0 = nan, as in PyTorch: the explosion stays visible
                scaled = p.grad.data * np.asarray(coefficient, dtype=p.grad.dtype)
            p.grad = Tensor(scaled, dtype=p.grad.dtype)
    return Tensor(total, dtype=np.float64)


def clip_grad_value_(parameters, clip_value: float) -> None:
    """Clamp every gradient element to [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    if clip_value < 0:
        raise ValueError(f"clip_grad_value_: clip_value must be >= 0, got {clip_value}")
    for p in _parameters_list(parameters):
        if p.grad is not None:
            p.grad = Tensor(np.clip(p.grad.data, -clip_value, clip_value), dtype=p.grad.dtype)
