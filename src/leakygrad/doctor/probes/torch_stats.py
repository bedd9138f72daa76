"""Turning tensors into small summaries, on the device where they live, fetched once per step.

Every summary here is a reduction (a norm, a count, a per-unit "ever active" flag) computed without leaving the
tensor's device. `Deferred` collects them during a sampled step and moves them to the host in one transfer at
the step's end, so a GPU run pays one synchronisation per sampled step, not one per layer, and the numbers can
be summed across data-parallel ranks before they are fetched.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

CHANNEL_FIRST_KINDS = ("Conv1d", "Conv2d", "Conv3d", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "MaxPool2d",
                       "AvgPool2d", "InstanceNorm2d", "GroupNorm", "ConvTranspose2d")  # fmt: skip


class Deferred:
    """Device tensors waiting to be fetched: scalars and vectors, each read back by its index.

    Nothing is converted or copied when a number is added; at `fetch`, tensors of one device and dtype are
    stacked and copied to the host together (one transfer per group, usually one or two per step).
    """

    def __init__(self):
        self._scalars: list[torch.Tensor] = []
        self._vectors: list[torch.Tensor] = []

    def scalar(self, tensor: torch.Tensor) -> int:
        tensor = tensor.detach()
        self._scalars.append(tensor if tensor.dim() == 0 else tensor.reshape(()))
        return len(self._scalars) - 1

    def scalars(self, tensors: list[torch.Tensor]) -> list[int]:
        """Several scalars at once (a list from torch._foreach_norm, say): their indices."""
        start = len(self._scalars)
        self._scalars.extend(t.detach() for t in tensors)
        return list(range(start, len(self._scalars)))

    def vector(self, tensor: torch.Tensor) -> int:
        self._vectors.append(tensor.detach().reshape(-1))
        return len(self._vectors) - 1

    def fetch(self) -> tuple[list[float], list[np.ndarray]]:
        scalars = [0.0] * len(self._scalars)
        for indices, tensors in _groups(self._scalars):
            for i, value in zip(indices, torch.stack(tensors).tolist()):
                scalars[i] = float(value)
        vectors: list = [None] * len(self._vectors)
        for indices, tensors in _groups(self._vectors):
            flat = torch.cat(tensors).cpu().numpy().astype(np.float64)
            start = 0
            for i, t in zip(indices, tensors):
                vectors[i] = flat[start : start + t.numel()]
                start += t.numel()
        return scalars, vectors


def _groups(tensors: list[torch.Tensor]):
    """(indices, tensors) for each (device, dtype) among `tensors`, in order."""
    groups: dict = {}
    for i, t in enumerate(tensors):
        groups.setdefault((t.device, t.dtype), []).append(i)
    return [(indices, [tensors[i] for i in indices]) for indices in groups.values()]


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
    unit_active: torch.Tensor | None = None  # per unit: its largest output (> 0: it fired for some example)
    feeds_from: str | None = None
    depth: float | None = None

    def __post_init__(self):
        self.positive, self.saturated, self.derivative_sum = [], [], []


def unit_axis(y: torch.Tensor, feeds_from_kind: str | None) -> int:
    """Which axis holds the units: channels (axis 1) after convolutions and for 4-D/5-D maps, else the last."""
    if y.dim() >= 4 or (y.dim() == 3 and feeds_from_kind in CHANNEL_FIRST_KINDS):
        return 1
    return y.dim() - 1


ACTIVATION_SAMPLE = 65536  # outputs per site and step used to estimate zero/saturated fractions


def spread(t: torch.Tensor, count: int) -> torch.Tensor:
    """Up to `count` entries spread evenly through `t` (a strided view of a contiguous tensor: no copy)."""
    flat = t.reshape(-1)
    return flat[:: max(1, flat.numel() // count)]


def add_activation(tally: ActivationTally, y: torch.Tensor, axis: int, saturation_derivative: float) -> None:
    """Fold one activation output `y` (already detached) into the site's tally.

    Whether a unit fired for *some* example is taken over every example (one max over the non-unit axes): a
    dead unit is a claim about all of them. The shares of zero and saturated outputs, and the mean derivative,
    are averages, estimated from up to ACTIVATION_SAMPLE outputs spread evenly through the tensor; counts come
    from sums of sign(), several times faster than summing a boolean mask.
    """
    y = y.detach()
    if y.dim() == 0 or y.numel() == 0:
        return
    sample = spread(y, ACTIVATION_SAMPLE)
    n = sample.numel()
    tally.elements += n
    tally.examples += y.shape[0] if y.dim() > 1 else 1
    function = tally.function
    if function == "relu":
        positive = sample.sign().sum()  # relu(z) >= 0, so sign is 1 where the unit fired and 0 where it did not
        tally.positive.append(positive)
        tally.derivative_sum.append(positive)  # relu'(z) = 1 where z > 0, else 0
        other_axes = tuple(a for a in range(y.dim()) if a != axis)
        per_unit = y.amax(dim=other_axes) if other_axes else y  # > 0 iff the unit fired for some example
        tally.unit_active = per_unit if tally.unit_active is None else torch.maximum(tally.unit_active, per_unit)
    elif function in ("sigmoid", "tanh"):
        if function == "sigmoid":
            derivative = sample * (1 - sample)  # sigma'(z) = sigma(z)(1 - sigma(z)), at most 1/4
            # sigma' < t/4  <=>  |sigma - 1/2| > sqrt(1/4 - t/4)
            distance, edge = (sample - 0.5).abs_(), (0.25 - 0.25 * saturation_derivative) ** 0.5
        else:
            derivative = 1 - sample * sample  # tanh'(z) = 1 - tanh(z)^2, at most 1
            distance, edge = sample.abs(), (1 - saturation_derivative) ** 0.5  # tanh' < t  <=>  |tanh| > sqrt(1-t)
        signs = distance.sub_(edge).sign_().sum()  # +1 per saturated output, -1 per other
        tally.saturated.append((signs + n) * 0.5)
        tally.derivative_sum.append(derivative.sum())


def time_step_norms(grad: torch.Tensor, time_axis: int) -> torch.Tensor:
    """||gradient|| at each time step: the norm over every axis but time."""
    grad = grad.detach()
    steps = grad.shape[time_axis]
    return torch.linalg.vector_norm(grad.movedim(time_axis, 0).reshape(steps, -1).float(), dim=1)


def norm(tensor: torch.Tensor) -> torch.Tensor:
    """||tensor||, accumulated in float32 at least (half-precision squares overflow at 256)."""
    t = tensor.detach()
    if t.dtype in (torch.float16, torch.bfloat16):
        return torch.linalg.vector_norm(t, dtype=torch.float32)
    return torch.linalg.vector_norm(t)


def blocked_fraction(grad_in: torch.Tensor, grad_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(elements whose incoming gradient was nonzero but leaves as zero, elements whose incoming was nonzero)."""
    arriving = grad_out != 0
    return (arriving & (grad_in == 0)).sum(), arriving.sum()
