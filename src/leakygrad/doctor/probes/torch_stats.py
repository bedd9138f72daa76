"""Turning tensors into small summaries, on the device where they live, fetched once per step.

Every summary here is a reduction (a norm, a count, a per-unit "ever active" flag) computed without leaving the
tensor's device. `Deferred` collects them during a sampled step and moves them to the host in one transfer at
the step's end, so a GPU run pays one synchronisation per sampled step, not one per layer, and the numbers can
be summed across data-parallel ranks before they are fetched.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

CHANNEL_FIRST_KINDS = ("Conv1d", "Conv2d", "Conv3d", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "MaxPool2d",
                       "AvgPool2d", "InstanceNorm2d", "GroupNorm", "ConvTranspose2d")  # fmt: skip


class Deferred:
    """Device tensors waiting to be fetched: scalars and vectors, each read back as floats by its index."""

    def __init__(self):
        self._scalars: list[torch.Tensor] = []
        self._vectors: list[torch.Tensor] = []

    def scalar(self, tensor: torch.Tensor) -> int:
        self._scalars.append(tensor.detach().reshape(()).to(torch.float64))
        return len(self._scalars) - 1

    def vector(self, tensor: torch.Tensor) -> int:
        self._vectors.append(tensor.detach().reshape(-1).to(torch.float64))
        return len(self._vectors) - 1

    def fetch(self) -> tuple[list[float], list[list[float]]]:
        scalars = _fetch_flat(self._scalars)
        vectors = []
        if self._vectors:
            sizes = [v.numel() for v in self._vectors]
            flat = _fetch_flat([v for v in self._vectors])
            start = 0
            for size in sizes:
                vectors.append(flat[start : start + size])
                start += size
        return scalars, vectors


def _fetch_flat(tensors: list[torch.Tensor]) -> list[float]:
    """Concatenate per device, one copy to the host per device, in the original order."""
    if not tensors:
        return []
    by_device: dict = {}
    for i, t in enumerate(tensors):
        by_device.setdefault(t.device, []).append(i)
    out = [0.0] * sum(t.numel() for t in tensors)
    offsets, position = [], 0
    for t in tensors:
        offsets.append(position)
        position += t.numel()
    for indices in by_device.values():
        values = torch.cat([tensors[i].reshape(-1) for i in indices]).tolist()
        cursor = 0
        for i in indices:
            size = tensors[i].numel()
            out[offsets[i] : offsets[i] + size] = values[cursor : cursor + size]
            cursor += size
    return out


@dataclass
class ActivationTally:
    """One activation site's counts over one step (a site can run many times: time steps, shared layers)."""

    function: str
    units: int
    examples: int = 0
    positive: list = None  # [tensor counts] elements > 0 (ReLU family)
    saturated: list = None  # [tensor counts] elements in the flat region (sigmoid/tanh)
    derivative_sum: list = None  # [tensor sums] of the local derivative
    elements: int = 0
    unit_active: torch.Tensor | None = None  # bool per unit: nonzero for some example
    feeds_from: str | None = None
    depth: float | None = None

    def __post_init__(self):
        self.positive, self.saturated, self.derivative_sum = [], [], []


def unit_axis(y: torch.Tensor, feeds_from_kind: str | None) -> int:
    """Which axis holds the units: channels (axis 1) after convolutions and for 4-D/5-D maps, else the last."""
    if y.dim() >= 4 or (y.dim() == 3 and feeds_from_kind in CHANNEL_FIRST_KINDS):
        return 1
    return y.dim() - 1


def add_activation(tally: ActivationTally, y: torch.Tensor, axis: int, saturation_derivative: float) -> None:
    """Fold one activation output `y` (already detached) into the site's tally."""
    y = y.detach()
    if y.dim() == 0 or y.numel() == 0:
        return
    tally.elements += y.numel()
    tally.examples += y.shape[0] if y.dim() > 1 else 1
    function = tally.function
    if function in ("relu", "relu6", "threshold"):
        positive = y > 0
        tally.positive.append(positive.sum())
        tally.derivative_sum.append(tally.positive[-1])  # relu'(z) = 1 where z > 0, else 0
        per_unit = positive.movedim(axis, 0).reshape(positive.shape[axis], -1).any(dim=1)
        if tally.unit_active is None or tally.unit_active.shape != per_unit.shape:
            tally.unit_active = per_unit
        else:
            tally.unit_active = tally.unit_active | per_unit
    elif function == "sigmoid":
        derivative = y * (1 - y)  # sigma'(z) = sigma(z)(1 - sigma(z)), at most 0.25
        tally.saturated.append((derivative < saturation_derivative * 0.25).sum())
        tally.derivative_sum.append(derivative.sum())
    elif function == "tanh":
        derivative = 1 - y * y  # tanh'(z) = 1 - tanh(z)^2, at most 1
        tally.saturated.append((derivative < saturation_derivative).sum())
        tally.derivative_sum.append(derivative.sum())


def time_step_norms(grad: torch.Tensor, time_axis: int) -> torch.Tensor:
    """||gradient|| at each time step: the norm over every axis but time."""
    grad = grad.detach()
    steps = grad.shape[time_axis]
    return torch.linalg.vector_norm(grad.movedim(time_axis, 0).reshape(steps, -1).float(), dim=1)


def squared_norm(tensor: torch.Tensor) -> torch.Tensor:
    """||tensor||^2 in float32 at least (half-precision squares overflow at 256)."""
    t = tensor.detach()
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.float()
    return torch.linalg.vector_norm(t) ** 2


def blocked_fraction(grad_in: torch.Tensor, grad_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(elements whose incoming gradient was nonzero but leaves as zero, elements whose incoming was nonzero)."""
    arriving = grad_out != 0
    return (arriving & (grad_in == 0)).sum(), arriving.sum()
