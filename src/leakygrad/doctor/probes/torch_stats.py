"""Turning tensors into small summaries, on the device where they live, fetched once per step.

Every summary here is a reduction (a norm, a count, a per-unit "ever active" flag) computed without leaving the
tensor's device. `Deferred` collects them during a sampled step and moves them to the host in one transfer at
the step's end, so a GPU run pays one synchronisation per sampled step, not one per layer, and the numbers can
be summed across data-parallel ranks before they are fetched. (On the CPU they are read where they are.)
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np
import torch

CHANNEL_FIRST_KINDS = ("Conv1d", "Conv2d", "Conv3d", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "MaxPool2d",
                       "AvgPool2d", "InstanceNorm2d", "GroupNorm", "ConvTranspose2d")  # fmt: skip


class Deferred:
    """Device tensors waiting to be fetched: scalars, vectors and flags, each read back by its index.

    Nothing is converted or copied when a number is added; at `start_fetch` they are joined into one tensor and
    copied to the host in one transfer (one per device and dtype in the rare run whose statistics live on
    several), or, when they are on the CPU already, read one by one.
    """

    def __init__(self):
        self._scalars: list[torch.Tensor] = []
        self._vectors: list[torch.Tensor] = []
        self._flags: list[torch.Tensor] = []

    def scalar(self, tensor: torch.Tensor) -> int:
        """A 0-d tensor (already detached, or made by a reduction of a detached tensor): its index."""
        self._scalars.append(tensor)
        return len(self._scalars) - 1

    def scalars(self, tensors) -> int:
        """Several 0-d tensors (a list from torch._foreach_norm, say): the index of the first."""
        start = len(self._scalars)
        self._scalars.extend(tensors)
        return start

    def vector(self, tensor: torch.Tensor) -> int:
        """A 1-d tensor (detached): its index."""
        self._vectors.append(tensor)
        return len(self._vectors) - 1

    def flags(self, tensor: torch.Tensor) -> int:
        """A 1-d tensor (detached) read as one yes or no per entry: yes where it is > 0 (a NaN is no). It comes
        back as bytes, one per entry, 1 or 0: the form a dead-unit tally keeps. Its index."""
        self._flags.append(tensor)
        return len(self._flags) - 1

    def fetch(self) -> tuple[list[float], list[np.ndarray], list[bytes]]:
        """Everything, on the host now (a GPU run waits here for the device to finish the step's work)."""
        return self.start_fetch().result()

    def start_fetch(self) -> Fetch:
        """Begin moving everything to the host. On a CUDA device: one copy into pinned host memory, queued behind
        the step's work, that the host does not wait for (a synchronisation would stall the host until the device
        caught up, and the device would then sit idle while the host prepared the next step: about twice the
        step's time, measured). Elsewhere the numbers are read at once."""
        if not self._scalars and not self._vectors and not self._flags:
            return Fetch(([], [], []))
        first = (self._scalars or self._vectors or self._flags)[0]
        if first.is_cpu and all(t.is_cpu for t in self._vectors) and all(t.is_cpu for t in self._flags):
            return Fetch(self._read_in_place())  # (float() reads a scalar anywhere: only vectors must be on the CPU)
        try:  # the usual case: every statistic on one device, joined into one tensor (dtypes are promoted)
            flat = self._joined()
        except RuntimeError:  # statistics on several devices (a model split across them): one copy per group
            return Fetch(self._fetch_by_group(self._vectors + self._flags))
        return Fetch(copy=HostCopy(flat), split=self._split)

    def _joined(self) -> torch.Tensor:
        parts = ([torch.stack(self._scalars)] if self._scalars else []) + self._vectors + self._flags
        flat = torch.cat(parts)
        return flat.detach() if flat.requires_grad else flat  # (a statistic of a tensor not detached: none should be)

    def _split(self, flat: np.ndarray) -> tuple[list[float], list[np.ndarray], list[bytes]]:
        """The joined numbers, back on the host as float64, cut into scalars, vectors and flags again."""
        count = len(self._scalars)
        scalars, vectors, start = flat[:count].tolist(), [], count
        for t in self._vectors + self._flags:  # flags travel as vectors, and are turned into bytes here
            vectors.append(flat[start : start + t.numel()])
            start += t.numel()
        flags_from = len(self._vectors)
        return scalars, vectors[:flags_from], [(v > 0).tobytes() for v in vectors[flags_from:]]  # a bool: one byte

    def _read_in_place(self) -> tuple[list[float], list[np.ndarray], list[bytes]]:
        """On the CPU there is nothing to transfer: each number is read where it is, which costs less than joining
        them into one tensor first. (Counts are read exactly; joined with float32 norms they would be float32.)
        Flags are compared in the tensor's own dtype and read as bytes: no conversion to float64 first.
        (`float(t.item())` is quicker than `float(t)`, by some 0.2 us a number on a training step's cold caches.)"""
        scalars = [float(t.item()) for t in self._scalars]
        vectors = [t.detach().double().numpy() for t in self._vectors]
        flags = [t.detach().gt(0).numpy().tobytes() for t in self._flags]  # a bool is one byte, 1 or 0
        return scalars, vectors, flags

    def _fetch_by_group(self, tensors: list[torch.Tensor]) -> tuple[list[float], list[np.ndarray], list[bytes]]:
        """One synchronous transfer per (device, dtype): the rare run whose statistics live on several devices."""
        scalars = [0.0] * len(self._scalars)
        for indices, group in _groups(self._scalars):
            for i, value in zip(indices, torch.stack(group).tolist()):
                scalars[i] = float(value)
        vectors: list = [None] * len(tensors)
        for indices, group in _groups(tensors):
            flat = torch.cat(group).cpu().numpy().astype(np.float64)
            start = 0
            for i, t in zip(indices, group):
                vectors[i] = flat[start : start + t.numel()]
                start += t.numel()
        flags_from = len(self._vectors)
        return scalars, vectors[:flags_from], [(v > 0).tobytes() for v in vectors[flags_from:]]


class HostCopy:
    """A device tensor on its way to the host. On CUDA the copy goes into pinned memory without waiting for the
    device, and an event recorded behind it says when it has landed; elsewhere it is copied at once."""

    def __init__(self, tensor: torch.Tensor):
        self.event = None
        if tensor.device.type == "cuda":
            self.host = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
            self.host.copy_(tensor, non_blocking=True)
            self.event = torch.cuda.Event()
            self.event.record(torch.cuda.current_stream(tensor.device))
        else:
            self.host = tensor.cpu()

    def ready(self) -> bool:
        """Whether the copy has landed (asking does not wait)."""
        if self.event is not None and self.event.query():
            self.event = None  # landed: nothing to wait for from now on
        return self.event is None

    def numpy(self) -> np.ndarray:
        """The numbers, as float64 (waits for the copy if it has not landed)."""
        if self.event is not None:
            self.event.synchronize()
            self.event = None
        return self.host.numpy().astype(np.float64)


class Fetch:
    """Statistics on their way to the host: `ready()` asks whether they have arrived, `result()` reads them as
    (scalars, vectors, flags), waiting if need be."""

    def __init__(self, done=None, copy: HostCopy | None = None, split=None):
        self._done, self._copy, self._split = done, copy, split

    def ready(self) -> bool:
        return self._copy is None or self._copy.ready()

    def result(self) -> tuple[list[float], list[np.ndarray], list[bytes]]:
        if self._done is None:
            self._done = self._split(self._copy.numpy())
            self._copy = self._split = None
        return self._done


def _groups(tensors: list[torch.Tensor]):
    """(indices, tensors) for each (device, dtype) among `tensors`, in order."""
    groups: dict = {}
    for i, t in enumerate(tensors):
        groups.setdefault((t.device, t.dtype), []).append(i)
    return [(indices, [tensors[i] for i in indices]) for indices in groups.values()]


class Scratch:
    """Working memory reused from step to step, one buffer per device and dtype.

    Summarising an activation needs an elementwise temporary the size of its sample (256 KiB for 65,536 float32
    outputs). Allocated afresh each sampled step, such blocks come from (and go back to) the operating system,
    and the page faults cost more than the arithmetic; written into a buffer made once, they cost nothing.
    The view of the buffer for each shape is kept too: making a tensor view is a call into PyTorch, and on a
    training step's cold caches each such call costs some 10 microseconds.
    """

    MAX_VIEWS = 64  # shapes remembered (a run with ever-changing shapes forgets them and starts again)

    def __init__(self):
        self._buffers: dict = {}
        self._views: dict = {}

    def like(self, tensor: torch.Tensor) -> torch.Tensor:
        """An uninitialised tensor of `tensor`'s shape, device and dtype, in memory reused across calls."""
        key = (tensor.shape, tensor.dtype, tensor.device)
        view = self._views.get(key)
        if view is None:
            view = self._new_view(tensor)
            if len(self._views) >= self.MAX_VIEWS:
                self._views.clear()
            self._views[key] = view
        return view

    def _new_view(self, tensor: torch.Tensor) -> torch.Tensor:
        key = (tensor.device, tensor.dtype)
        buffer = self._buffers.get(key)
        count = tensor.numel()
        if buffer is None or buffer.numel() < count:
            buffer = torch.empty(count, dtype=tensor.dtype, device=tensor.device)
            self._buffers[key] = buffer
            self._views.clear()  # views of the old buffer would keep it alive
        return buffer[:count].view(tensor.shape)


@dataclass(slots=True)
class ActivationTally:
    """One activation site's counts over one step (a site can run many times: time steps, shared layers)."""

    function: str
    units: int
    examples: int = 0
    # device tensors, fetched at the step's end. ReLU family (RELU_LIKE): sampled elements > 0 (`positive`); per
    # unit, a value > 0 iff it fired (`unit_fired`: its count of outputs > 0 when every output was read, else the
    # sum of its outputs).
    # Sigmoid, tanh, hardsigmoid: elements in the flat region (`saturated`), sums of the local derivative
    # (`derivative_sum`).
    positive: list = field(default_factory=list)
    unit_fired: list = field(default_factory=list)
    saturated: list = field(default_factory=list)
    derivative_sum: list = field(default_factory=list)
    elements: int = 0
    unit_flags: int | None = None  # at the step's end: the deferred index of "fired in some call", per unit
    feeds_from: str | None = None
    depth: float | None = None


def unit_axis(y: torch.Tensor, feeds_from_kind: str | None) -> int:
    """Which axis holds the units: channels (axis 1) after convolutions and for 4-D/5-D maps, else the last."""
    if y.dim() >= 4 or (y.dim() == 3 and feeds_from_kind in CHANNEL_FIRST_KINDS):
        return 1
    return y.dim() - 1


ACTIVATION_SAMPLE = 65536  # outputs per site and step used to estimate zero/saturated fractions
SAMPLE_RUNS = 64  # samples are taken as this many runs of consecutive entries, spread through the tensor


def spread(t: torch.Tensor, count: int) -> torch.Tensor:
    """Up to `count` entries of `t`, as a view (no copy): `t` itself when it has no more, else SAMPLE_RUNS runs
    of consecutive entries spread evenly through it.

    Runs rather than single entries at a fixed stride: reading whole cache lines is several times faster than
    gathering entries a cache line apart. The runs start a little less than 1/SAMPLE_RUNS of the tensor apart,
    at a distance sharing no factor with the length of its rows (or planes): so the runs start at different
    columns (channels, positions), not all at column 0 of every 8th row.
    """
    total = t.numel()
    if total <= count:
        return t
    runs = min(SAMPLE_RUNS, count)
    run = count // runs
    stride = _run_stride(tuple(t.shape), runs, run)
    if t.is_contiguous():  # one call makes the view: rows `stride` apart in memory, `run` entries each
        return t.as_strided((runs, run), (stride, 1))
    flat = t.reshape(-1)  # a copy
    return flat[: runs * stride].view(runs, stride)[:, :run]


@functools.lru_cache(maxsize=256)
def _run_stride(shape: tuple, runs: int, run: int) -> int:
    """The distance between runs: at most total/runs, at least `run`, coprime with every trailing block size."""
    total = math.prod(shape)
    blocks = {math.prod(shape[i:]) for i in range(1, len(shape))} - {0, 1}
    stride = total // runs
    while stride > run and any(math.gcd(stride, block) > 1 for block in blocks):
        stride -= 1
    return stride


# Activations whose flat region is where no gradient passes (the ReLU family: a unit is dead when it sits there for
# every example), and the squashing functions read from their input instead of their output.
RELU_LIKE = ("relu", "relu6", "relu_n", "hardswish", "leaky_relu")  # (a leaky_relu of slope 0, relu_n: clamp(z, 0, n))
READ_FROM_INPUT = ("relu6", "relu_n", "hardswish", "hardsigmoid")  # their autograd nodes keep the input, not the output


def activation_values(function: str, saved: torch.Tensor, ceiling: float | None = None) -> torch.Tensor:
    """What `add_activation` reads for one activation call, from what its autograd node saved (detached).

    ReLU, sigmoid and tanh keep their output, read as it is. For the others the node keeps the input z, and the
    ReLU-like ones are read as a value that is > 0 exactly where the local derivative is not zero, so that a unit
    counts as fired, as for a ReLU, when some example passed gradient through it:
    relu6'(z) = 1 inside (0, 6) and 0 outside, and a ReLU-n's inside (0, `ceiling`); hardswish'(z) = 0 below -3.
    (Hardsigmoid's input is read by `add_activation` itself.)"""
    if function in ("relu6", "relu_n"):
        return torch.minimum(saved, (ceiling or 6.0) - saved).clamp_min_(0)
    if function == "hardswish":
        return (saved + 3).clamp_min_(0)
    if function == "leaky_relu":  # (of slope 0: its input, or its output, which is relu(z))
        return saved.clamp_min(0)
    return saved


def add_activation(
    tally: ActivationTally, y: torch.Tensor, axis: int, saturation_derivative: float, scratch: Scratch
) -> None:
    """Fold one activation output `y` (detached, or read under no_grad) into the site's tally.

    Whether a unit fired for *some* example is taken over every example: a dead unit is a claim about all of
    them. The shares of zero and saturated outputs, and the mean derivative, are averages, estimated from up to
    ACTIVATION_SAMPLE outputs spread through the tensor (`spread`); counts come from sums of sign(), several
    times faster than summing a boolean mask, written into reused memory. When the sample is the whole tensor,
    one sum per unit serves both: the units that fired, and (added up) the share of positive outputs.
    """
    if y.dim() == 0 or y.numel() == 0:
        return
    sample = spread(y, ACTIVATION_SAMPLE)
    n = sample.numel()
    tally.elements += n
    tally.examples += y.shape[0] if y.dim() > 1 else 1
    function = tally.function
    work = scratch.like(sample)
    if function in RELU_LIKE:  # (y from `activation_values`: >= 0, and > 0 where gradient passes)
        other_axes = tuple(a for a in range(y.dim()) if a != axis)
        signs = torch.sign(sample, out=work)  # relu(z) >= 0: sign is 1 where the unit fired, else 0
        if sample is y and other_axes:
            counts = signs.sum(dim=other_axes, dtype=torch.float32)  # per unit: > 0 iff it fired
            tally.positive.append(counts.sum())  # a small sum, on the device: no host work per unit
            tally.unit_fired.append(counts)
        else:
            tally.positive.append(signs.sum(dtype=torch.float32))
            # (outputs >= 0 sum to more than 0 iff one is: a sum reads a convolution's channels twice as fast as a max)
            tally.unit_fired.append(y.sum(dim=other_axes) if other_axes else y)  # > 0 iff the unit fired
    elif function in ("sigmoid", "tanh"):
        squares = torch.mul(sample, sample, out=work).sum(dtype=torch.float32)
        if function == "sigmoid":
            # sigma'(z) = sigma(z)(1 - sigma(z)), at most 1/4; summed: sum(y) - sum(y^2)
            tally.derivative_sum.append(sample.sum(dtype=torch.float32) - squares)
            # sigma' < t/4  <=>  |sigma - 1/2| > sqrt(1/4 - t/4)
            distance, edge = torch.sub(sample, 0.5, out=work).abs_(), (0.25 - 0.25 * saturation_derivative) ** 0.5
        else:
            tally.derivative_sum.append(n - squares)  # tanh'(z) = 1 - tanh(z)^2, at most 1
            # tanh' < t  <=>  |tanh| > sqrt(1 - t)
            distance, edge = torch.abs(sample, out=work), (1 - saturation_derivative) ** 0.5
        signs = distance.sub_(edge).sign_().sum(dtype=torch.float32)  # +1 per saturated output, -1 per other
        tally.saturated.append((signs + n) * 0.5)
    elif function == "hardsigmoid":  # y is its input z: hardsigmoid'(z) = 1/6 inside (-3, 3), exactly 0 outside
        signs = torch.abs(sample, out=work).sub_(3).sign_().sum(dtype=torch.float32)  # +1 per flat input, -1 per other
        flat = (signs + n) * 0.5
        tally.saturated.append(flat)
        tally.derivative_sum.append((n - flat) / 6)


UPDATE_SAMPLE = 4096  # entries per parameter used to estimate its update/weight ratio


HALF_PRECISION = (torch.float16, torch.bfloat16)


class ParameterSamples:
    """Entries spread through each parameter (views, made once), and buffers made once to copy them into.

    The update/weight ratio ||change|| / ||weights|| of a parameter is estimated from up to UPDATE_SAMPLE of its
    entries (`spread`). Before the optimiser step, `snapshot_with_norms` copies them and measures the copies
    (together with the gradients, in the same call); after it, `norms_after_update()` turns each copy into the
    change and measures the changes and the updated entries. Without an optimiser step, `norms_with` measures
    the samples themselves (with the gradients). Each of these is one call over every parameter
    (torch._foreach_*): on a CPU, where each call into PyTorch costs more than the arithmetic on a few thousand
    entries, that is what makes them cheap; on a GPU each is one kernel launch or a few.
    """

    def __init__(self, params: list[torch.Tensor]):
        # a parameter that is not contiguous (rare) is measured whole, through a view of itself
        self.samples = [spread(p.detach(), UPDATE_SAMPLE) if p.is_contiguous() else p.detach() for p in params]
        # sqrt(entries / sampled entries): scales a sample's norm up to the whole tensor's
        self.scales = [math.sqrt(p.numel() / max(s.numel(), 1)) for p, s in zip(params, self.samples)]
        self.copies = [torch.empty(s.shape, dtype=s.dtype, device=s.device) for s in self.samples]
        self.half = any(s.dtype in HALF_PRECISION for s in self.samples)
        self.start: list[torch.Tensor] | None = None  # the samples as the first snapshot found them
        self.start_step: int | None = None  # ... and that snapshot's step

    def norms_with(self, tensors: list[torch.Tensor]) -> list[torch.Tensor]:
        """||t|| of each of `tensors` (whole), then ||entries|| of each parameter's sample, as they are now."""
        return self._norms(tensors, self.samples)

    def snapshot_with_norms(self, tensors: list[torch.Tensor]) -> list[torch.Tensor]:
        """Before the optimiser step: copy the sampled entries, then ||t|| of each of `tensors` (whole) and ||copy||
        of each sample.

        The copies are measured rather than the samples: a sample's runs lie far apart in its parameter, and
        reading them again costs a cache miss per run, while the copies lie together and were just written. A
        copy's squares are summed in another order than its sample's, so its norm may differ in the last bit:
        it serves only to tell whether the weights were finite before the update (the weight norms recorded are
        those after it)."""
        torch._foreach_copy_(self.copies, self.samples)
        return self._norms(tensors, self.copies)

    def _norms(self, tensors: list[torch.Tensor], samples: list[torch.Tensor]) -> list[torch.Tensor]:
        if not self.half:
            return list(torch._foreach_norm(tensors + samples))
        # half precision: the samples' squares are summed in float32 (they overflow at 256), `tensors` as given
        return (list(torch._foreach_norm(tensors)) if tensors else []) + _foreach_norms(samples, half=True)

    def displacement_norms(self, step: int) -> list[torch.Tensor] | None:
        """After `snapshot_with_norms`: ||entries now - entries at the first snapshot|| of each parameter's sample, how
        far the weights have moved since (None at that first snapshot, which is kept: `start`, `start_step`)."""
        if self.start is None:
            self.start, self.start_step = [copy.clone() for copy in self.copies], step
            return None
        return _foreach_norms(torch._foreach_sub(self.copies, self.start), self.half)

    def carry_start_from(self, before: "ParameterSamples", names_before: list[str], entries: list) -> None:
        """Keep the first snapshot of `before` (the samples of parameters `names_before`) when these samples are of
        the same parameters, by name and shape (their storage replaced, `p.data = saved`, or the plan made anew)."""
        if before.start is None:
            return
        kept = dict(zip(names_before, before.start))
        start = [kept.get(name) for name, _, _ in entries]
        if all(s is not None and s.shape == mine.shape for s, mine in zip(start, self.samples)):
            self.start, self.start_step = start, before.start_step

    def norms_after_update(self) -> list[torch.Tensor]:
        """After the optimiser step: ||change|| of each parameter's sample, then ||entries after||."""
        torch._foreach_sub_(self.copies, self.samples)  # before - after: the change (its sign does not matter)
        return _foreach_norms(self.copies + self.samples, self.half)

    def changed_and_pushed(self, params: list[torch.Tensor]) -> list[torch.Tensor]:
        """After `norms_after_update`, for half-precision parameters: per parameter, how many sampled entries changed
        at all, then how many had a nonzero gradient pushing them (read at the same entries of its gradient; none
        counted where the two layouts may differ). In bfloat16 an update smaller than half the spacing of
        representable numbers around a weight rounds away: the weight does not change."""
        changed = [torch.count_nonzero(c) for c in self.copies]
        pushed = []
        for p in params:
            grad = p.grad
            same_layout = grad is not None and p.is_contiguous() and grad.is_contiguous() and grad.shape == p.shape
            pushed.append(
                torch.count_nonzero(spread(grad.detach(), UPDATE_SAMPLE))
                if same_layout
                else torch.zeros((), dtype=torch.int64, device=p.device)
            )
        return changed + pushed


def _foreach_norms(tensors: list[torch.Tensor], half: bool) -> list[torch.Tensor]:
    """||t|| of each tensor in one call, accumulated in float32 at least when some are half precision."""
    if half:
        return list(torch._foreach_norm(tensors, 2, dtype=torch.float32))
    return list(torch._foreach_norm(tensors))


def unit_spread(blocks: list[torch.Tensor]) -> torch.Tensor:
    """How far a layer's units are from all being one and the same, from `blocks` whose first axis holds the units
    (a weight, (units, inputs...); a bias, (units,); `recurrent_unit_blocks`): the widest range, across units, of
    any one incoming weight or bias, over the largest of them in magnitude. 0 exactly when every unit computes the
    same function of the same inputs (all zero counts as alike); NaN for NaN weights. Reductions only: no copy of
    a weight is made, however large."""
    ranges, sizes = [], []
    for block in blocks:
        high, low = block.detach().amax(dim=0).float(), block.detach().amin(dim=0).float()  # (per input: over units)
        ranges.append((high - low).amax())
        sizes.append(torch.maximum(high.abs().amax(), low.abs().amax()))
    spread, largest = torch.stack(ranges).amax(), torch.stack(sizes).amax()
    return torch.where(largest > 0, spread / largest, largest)  # (0 where all are 0; NaN stays NaN)


def recurrent_unit_blocks(gates: int, weight_ih, weight_hh, bias_ih=None, bias_hh=None) -> list[torch.Tensor]:
    """One layer (and direction) of an nn.RNN, LSTM or GRU as blocks with the hidden units first: each of its
    `gates` (1; 4 for an LSTM's i, f, g, o; 3 for a GRU's r, z, n) holds `hidden` rows of each weight, and unit j
    owns row j of every gate. Views, not copies."""
    hidden = weight_hh.shape[1]
    blocks = [w.reshape(gates, hidden, -1).transpose(0, 1) for w in (weight_ih, weight_hh)]  # (hidden, gates, inputs)
    return blocks + [b.reshape(gates, hidden).t() for b in (bias_ih, bias_hh) if b is not None]


def time_step_norms(grad: torch.Tensor, time_axis: int) -> torch.Tensor:
    """||gradient|| at each time step: the norm over every axis but time."""
    grad = grad.detach()
    steps = grad.shape[time_axis]
    return torch.linalg.vector_norm(grad.movedim(time_axis, 0).reshape(steps, -1).float(), dim=1)


SPREAD_OUTPUTS = 4096  # outputs per example read to compare the examples of a batch


def spread_across_batch(y: torch.Tensor) -> torch.Tensor:
    """How much a layer's outputs differ between the examples of a batch (axis 0), over their size: the standard
    deviation across the batch, averaged over the rest, divided by the root mean square. Near 0: every example gives
    the layer nearly the same output. Read from the first 64 examples, and of each at most about 4,096 outputs,
    evenly spaced (a transformer layer's (batch, sequence, features) output, read whole at every layer, would cost
    milliseconds)."""
    y = y.detach()[:64]
    y = y.reshape(y.shape[0], -1)
    if y.shape[1] > SPREAD_OUTPUTS:
        y = y[:, :: y.shape[1] // SPREAD_OUTPUTS]
    dtype, y = y.dtype, y.float()
    # (the standard deviation written out: PyTorch's std over dim 0 of a few rows is several times slower on the CPU)
    deviation = ((y - y.mean(dim=0)).square().sum(dim=0) / max(y.shape[0] - 1, 1)).sqrt()
    spread = deviation.mean() / y.square().mean().sqrt()
    if dtype in (torch.float16, torch.bfloat16):  # (autocast: outputs that differ by less than the format's spacing
        # round to one value, which says nothing of the graph: not measured)
        spread = torch.where(spread < torch.finfo(dtype).eps, torch.nan, spread)
    return spread


def padding_by_time_step(x: torch.Tensor, time_axis: int) -> torch.Tensor:
    """The share of the sequences whose input at each time step is all zeros (padding), on the tensor's device."""
    empty = (x.detach() == 0).all(dim=-1)  # (time, batch), (batch, time), or (time,) unbatched
    return empty.float().mean(dim=1 - time_axis) if empty.dim() == 2 else empty.float()


def packed_time_step_norms(grad: torch.Tensor, batch_sizes: torch.Tensor) -> torch.Tensor:
    """||gradient|| at each time step of a PackedSequence's data, whose rows hold the steps one after another
    (batch_sizes[t] rows at step t: the sequences still running then). Each step's norm is scaled to the whole
    batch, sqrt(N / batch_sizes[t]) times its own, as if the sequences that had ended had the same mean square:
    otherwise the late steps of a batch of varied lengths would look small for having fewer sequences."""
    grad = grad.detach().float()
    rows = grad.reshape(grad.shape[0], -1).square().sum(dim=1)
    sizes = batch_sizes.to(grad.device)
    step_of_row = torch.repeat_interleave(torch.arange(len(sizes), device=grad.device), sizes)
    squares = torch.zeros(len(sizes), device=grad.device).index_add_(0, step_of_row, rows)
    return (squares * (sizes[0] / sizes)).sqrt()


def share_outside(target: torch.Tensor, bounds: list) -> torch.Tensor:
    """The share of `target`'s entries outside [low, high] (a bound of None: none on that side), on its device."""
    low, high = bounds
    outside = target < low if high is None else (target < low) | (target > high)
    return outside.float().mean()


def padding_idx_check(grad: torch.Tensor, ids: torch.Tensor, padding_idx: int) -> tuple[torch.Tensor, ...] | None:
    """What the gradient at an embedding's output says of its `padding_idx`, on the device: the share of its squared
    norm at the positions holding padding_idx (the loss wants to move that row, which the embedding never updates);
    and, among the other ids, the one whose every position got exactly no gradient (masked out: the padding the
    script means) with the largest share of the positions, and that share. None when the shapes do not match."""
    rows = ids.reshape(-1, ids.shape[-1]) if ids.dim() >= 2 else ids  # (a batch of sequences: one row each)
    ids = ids.reshape(-1)
    if ids.numel() == 0 or grad.numel() % ids.numel() or ids.dtype not in (torch.int32, torch.int64):
        return None
    squares = grad.detach().reshape(ids.numel(), -1).float().pow(2).sum(dim=1)
    at_padding = (squares * (ids == padding_idx)).sum() / squares.sum().clamp_min(torch.finfo(torch.float32).tiny)
    counts = torch.bincount(ids)
    silent_counts = torch.bincount(ids[squares == 0], minlength=counts.numel())
    silent = (silent_counts == counts) & (counts > 0)
    if padding_idx < counts.numel():
        silent[padding_idx] = False
    silent_positions = counts * silent
    silent_id = silent_positions.argmax()
    return at_padding, silent_id, silent_positions.max() / ids.numel(), _at_row_ends(rows == silent_id)


def _at_row_ends(mask: torch.Tensor) -> torch.Tensor:
    """Whether, in every row of a (rows, positions) mask, the marked positions run to the row's end, or from its
    start: what padding looks like (a [MASK] token scattered through a sequence does not)."""
    if mask.dim() != 2 or mask.shape[1] < 2:
        return torch.zeros((), dtype=torch.bool, device=mask.device)
    suffix = (mask[:, 1:] >= mask[:, :-1]).all()
    prefix = (mask[:, 1:] <= mask[:, :-1]).all()
    return suffix | prefix


def zeros_among_live(x: torch.Tensor) -> torch.Tensor:
    """What a ReLU applied outside autograd leaves in a layer's output (N, units, ...), on its device: the share of
    exact zeros among the entries whose example and whose unit are nonzero somewhere, when none of them is negative;
    0 when some are (a layer's own output, a bias-free layer's over zero padding say, has zeros and negatives). An
    empty example (all zeros) or a pruned unit (zero for every example) does not count."""
    if x.dim() < 2 or x.numel() == 0:
        return torch.zeros((), device=x.device)
    nonzero = x != 0
    examples = nonzero.reshape(x.shape[0], -1).any(dim=1)
    units = nonzero.transpose(0, 1).reshape(x.shape[1], -1).any(dim=1)
    rest = [1] * (x.dim() - 2)
    live = examples.view(-1, 1, *rest) & units.view(1, -1, *rest)
    zeros = (live & ~nonzero).sum() / (live.sum() * (x[0, 0].numel() if x.dim() > 2 else 1)).clamp_min(1)
    return torch.where((live & (x < 0)).any(), 0.0, zeros)


def zeros_among_zero_one(labels: torch.Tensor) -> torch.Tensor:
    """The share of `labels` exactly 0 when every one of them is 0 or 1 (a classifier's 0/1 labels), else -1, on
    their device."""
    zeros = labels == 0
    zero_one = (zeros | (labels == 1)).all()
    return torch.where(zero_one, zeros.float().mean(), -1.0)


def norm(tensor: torch.Tensor) -> torch.Tensor:
    """||tensor||, accumulated in float32 at least (half-precision squares overflow at 256)."""
    t = tensor.detach() if tensor.requires_grad else tensor  # a gradient in a hook rarely requires grad
    if t.dtype in HALF_PRECISION:
        return torch.linalg.vector_norm(t, dtype=torch.float32)
    return torch.linalg.vector_norm(t)


def total(tensor: torch.Tensor) -> torch.Tensor:
    """The sum of the entries, accumulated in float32 at least (a half-precision sum overflows at 65,504)."""
    return tensor.sum(dtype=torch.float32) if tensor.dtype in HALF_PRECISION else tensor.sum()


def blocked_fraction(
    grad_in: torch.Tensor, grad_out: torch.Tensor, mask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(elements whose incoming gradient was nonzero but leaves as zero, elements whose incoming was nonzero); with a
    `mask` the gate's input was multiplied by, only where it is not 0 (elsewhere no gradient would pass anyway)."""
    arriving = grad_out != 0
    if mask is not None:
        arriving = arriving & (mask != 0)
    return (arriving & (grad_in == 0)).sum(), arriving.sum()


def root_mean_square(tensor: torch.Tensor) -> torch.Tensor:
    """sqrt(mean(x^2)), in float32 at least, on the tensor's device: the typical size of its entries."""
    return torch.linalg.vector_norm(tensor.float()) / math.sqrt(max(tensor.numel(), 1))
