"""Learning-rate schedules, used as in PyTorch:

    scheduler = StepLR(optimizer, step_size=30, gamma=0.1)
    for epoch in range(100):
        train(...)            # optimizer.step() inside
        scheduler.step()      # after the optimiser step: sets the lr for the next epoch

Creating a scheduler sets the optimiser's lr to the schedule's first value (and records each group's
`initial_lr`). Like PyTorch's, each schedule updates the lr *relative to its current value* (the "chainable"
form), which is what lets schedules compose:

- `ChainedScheduler([a, b])` steps several schedules together (their factors multiply);
- `SequentialLR(optimizer, [warmup, main], milestones=[k])` runs `warmup` for k steps, then `main`.

A linear warm-up followed by cosine decay, the usual recipe for transformers:

    warmup = LinearLR(optimizer, start_factor=0.01, total_iters=5)
    cosine = CosineAnnealingLR(optimizer, T_max=95)
    scheduler = SequentialLR(optimizer, [warmup, cosine], milestones=[5])

Each class gives its closed form in its docstring; the values agree with torch.optim.lr_scheduler.
"""

from __future__ import annotations

import bisect
import math
import types
from collections.abc import Callable, Sequence

import numpy as np

from leakygrad.optim.optimizer import Optimizer, _as_python_number


class LRScheduler:
    """Base class: subclasses write `get_lr()`, the next lr of every group from its current one."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(self).__name__}: expected a leakygrad optimiser, got {type(optimizer).__name__}")
        if any("lr" not in group for group in optimizer.param_groups):
            raise TypeError(
                f"{type(self).__name__}: {type(optimizer).__name__} has no learning rate ('lr') to schedule "
                "(it chooses its own step size)"
            )
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"{type(self).__name__}: resuming at last_epoch={last_epoch}, but parameter group {i} has "
                        "no 'initial_lr'. Load the optimiser's state_dict first, or start with last_epoch=-1."
                    )
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        """Set the schedule's first lr (epoch 0)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        raise NotImplementedError

    def closed_form_lr(self) -> list[float]:
        """The lr at `last_epoch` computed from the base lr directly (used by SequentialLR at a milestone)."""
        raise NotImplementedError(
            f"{type(self).__name__} has no closed form to start from at a SequentialLR milestone (nor in PyTorch); "
            "give SequentialLR the schedules themselves, e.g. a StepLR or a LambdaLR with the combined factor"
        )

    def step(self) -> None:
        """Advance one epoch (or iteration) and set the optimiser's lr for it."""
        self._step_count += 1
        self.last_epoch += 1
        self._set_lrs(self.get_lr())

    def _jump_to(self, epoch: int) -> None:
        """Set `last_epoch` and the lr from the closed form."""
        self.last_epoch = epoch
        self._set_lrs(self.closed_form_lr())

    def _set_lrs(self, lrs: list[float]) -> None:
        for group, lr in zip(self.optimizer.param_groups, lrs):
            # A Python number, as the optimiser keeps its settings: a lambda's np.float64 would make the update
            # of float32 weights run in float64, and differently again after a checkpoint (which stores a float).
            group["lr"] = _as_python_number(lr)
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """The lr of each parameter group, as last set by this scheduler."""
        return list(self._last_lr)

    def _current_lrs(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        """Everything but the optimiser (and functions, which cannot be saved)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas") and not callable(v)}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)


class LambdaLR(LRScheduler):
    """lr = base_lr * lr_lambda(epoch), for any function of the epoch; or a list of functions, one per
    parameter group."""

    def __init__(
        self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | Sequence[Callable], last_epoch: int = -1
    ):
        groups = len(optimizer.param_groups) if isinstance(optimizer, Optimizer) else 0
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != groups:
                raise ValueError(f"LambdaLR: {len(lr_lambda)} functions for {groups} parameter groups")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * groups
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return self.closed_form_lr()

    def closed_form_lr(self) -> list[float]:
        return [base_lr * f(self.last_epoch) for base_lr, f in zip(self.base_lrs, self.lr_lambdas)]

    def state_dict(self) -> dict:
        """As every schedule's, with the attributes of each lr_lambda that is a callable object (a warm-up class
        holding its own step count, say), as PyTorch saves them; a plain function has none (None). Only what a
        saved file can hold is kept (numbers, strings, arrays, and lists, tuples and dicts of them): a function
        or another object held by the callable is left out, and stays as it is on loading."""
        state = super().state_dict()
        state["lr_lambdas"] = [
            None if _stateless(f) else {k: v for k, v in f.__dict__.items() if _storable(v)} for f in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        saved = state_dict.pop("lr_lambdas", None) or [None] * len(self.lr_lambdas)
        super().load_state_dict(state_dict)
        for f, attributes in zip(self.lr_lambdas, saved):
            if attributes is not None:
                f.__dict__.update(attributes)


def _storable(value) -> bool:
    if value is None or isinstance(value, (bool, int, float, str, np.ndarray, np.generic)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_storable(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, (str, int)) and _storable(v) for k, v in value.items())
    return False


def _stateless(f) -> bool:
    return isinstance(f, (types.FunctionType, types.MethodType, types.BuiltinFunctionType)) or not hasattr(
        f, "__dict__"
    )


class StepLR(LRScheduler):
    """Multiply the lr by `gamma` every `step_size` epochs: lr = base_lr * gamma ** (epoch // step_size)."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        if step_size < 1:
            raise ValueError(f"StepLR: step_size must be a positive number of epochs, got {step_size}")
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current_lrs()
        return [lr * self.gamma for lr in self._current_lrs()]

    def closed_form_lr(self) -> list[float]:
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """Linear warm-up (or decay) of the lr's factor from `start_factor` to `end_factor` over `total_iters` steps:

    lr = base_lr * (start_factor + (end_factor - start_factor) * min(epoch, total_iters) / total_iters)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ):
        if not 0 < start_factor <= 1:
            raise ValueError(f"LinearLR: start_factor must be in (0, 1], got {start_factor}")
        if not 0 <= end_factor <= 1:
            raise ValueError(f"LinearLR: end_factor must be in [0, 1], got {end_factor}")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._current_lrs()]
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current_lrs()
        # factor(epoch) / factor(epoch - 1): one step of the line, relative to where the lr is now
        change = self.end_factor - self.start_factor
        ratio = 1.0 + change / (self.total_iters * self.start_factor + (self.last_epoch - 1) * change)
        return [lr * ratio for lr in self._current_lrs()]

    def closed_form_lr(self) -> list[float]:
        progress = min(self.total_iters, self.last_epoch) / self.total_iters
        factor = self.start_factor + (self.end_factor - self.start_factor) * progress
        return [base_lr * factor for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine decay from base_lr to eta_min over T_max epochs (Loshchilov & Hutter 2017, SGDR, without restarts):

        lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2

    After T_max the cosine continues (the lr rises again), as in PyTorch.
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        if T_max < 1:
            raise ValueError(f"CosineAnnealingLR: T_max must be a positive number of epochs, got {T_max}")
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        epoch, T, eta_min = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._current_lrs()
        if self._step_count == 1 and epoch > 0:  # resumed part-way: nothing to be relative to
            return self.closed_form_lr()
        if (epoch - 1 - T) % (2 * T) == 0:  # just past the bottom, where the ratio below would divide by zero
            return [
                lr + (base_lr - eta_min) * (1 - math.cos(math.pi / T)) / 2
                for lr, base_lr in zip(self._current_lrs(), self.base_lrs)
            ]
        # (lr(epoch) - eta_min) / (lr(epoch - 1) - eta_min), from the closed form
        ratio = (1 + math.cos(math.pi * epoch / T)) / (1 + math.cos(math.pi * (epoch - 1) / T))
        return [eta_min + ratio * (lr - eta_min) for lr in self._current_lrs()]

    def closed_form_lr(self) -> list[float]:
        cosine = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (base_lr - self.eta_min) * cosine for base_lr in self.base_lrs]


class ChainedScheduler(LRScheduler):
    """Step several schedules at once; each applies its change to the lr the previous ones left."""

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None):
        if not schedulers:
            raise ValueError("ChainedScheduler: give at least one scheduler")
        self.optimizer = optimizer or schedulers[0].optimizer
        _check_same_optimizer("ChainedScheduler", self.optimizer, schedulers)
        self._schedulers = list(schedulers)
        self._last_lr = self._current_lrs()

    def step(self) -> None:
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = self._current_lrs()

    def state_dict(self) -> dict:
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        for scheduler, saved in zip(self._schedulers, state_dict.pop("_schedulers")):
            scheduler.load_state_dict(saved)
        self.__dict__.update(state_dict)


class SequentialLR(LRScheduler):
    """Run `schedulers[0]` until `milestones[0]`, then `schedulers[1]` (from its own epoch 0), and so on."""

    def __init__(
        self, optimizer: Optimizer, schedulers: Sequence[LRScheduler], milestones: Sequence[int], last_epoch: int = -1
    ):
        if not schedulers:
            raise ValueError("SequentialLR: give at least one scheduler")
        _check_same_optimizer("SequentialLR", optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                f"SequentialLR: {len(schedulers)} schedulers need {len(schedulers) - 1} milestones "
                f"(where each one after the first takes over), got {len(milestones)}"
            )
        self.optimizer = optimizer
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        # Building each scheduler already stepped it once and changed the lr: undo that, then start the first.
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        for scheduler in self._schedulers:
            _undo_initial_step(scheduler)
        first = self._schedulers[bisect.bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def step(self) -> None:
        self.last_epoch += 1
        index = bisect.bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler._jump_to(0)  # its turn starts: from its own first value
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    state_dict = ChainedScheduler.state_dict
    load_state_dict = ChainedScheduler.load_state_dict


def _undo_initial_step(scheduler) -> None:
    if hasattr(scheduler, "_schedulers"):
        for inner in scheduler._schedulers:
            _undo_initial_step(inner)
    else:
        scheduler.last_epoch -= 1


def _check_same_optimizer(name: str, optimizer: Optimizer, schedulers: Sequence[LRScheduler]) -> None:
    for i, scheduler in enumerate(schedulers):
        if getattr(scheduler, "optimizer", None) is not optimizer:
            raise ValueError(f"{name}: scheduler {i} ({type(scheduler).__name__}) belongs to a different optimiser")
