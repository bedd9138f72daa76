"""The losses as modules (PyTorch's names); the math is in `leakygrad.nn.functional`."""

from __future__ import annotations

from leakygrad.engine import Tensor
from leakygrad.nn import functional as F
from leakygrad.nn.module import Module


class MSELoss(Module):
    def __init__(self, reduction: str = "mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002
        return F.mse_loss(input, target, self.reduction)


class L1Loss(Module):
    def __init__(self, reduction: str = "mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002
        return F.l1_loss(input, target, self.reduction)


class HuberLoss(Module):
    """Squared error for |error| < delta, linear beyond: its gradient is the error clipped to [-delta, delta]."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__()
        self.reduction, self.delta = reduction, delta

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002
        return F.huber_loss(input, target, self.reduction, self.delta)


class SmoothL1Loss(Module):
    def __init__(self, reduction: str = "mean", beta: float = 1.0):
        super().__init__()
        self.reduction, self.beta = reduction, beta

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002
        return F.smooth_l1_loss(input, target, self.reduction, self.beta)


class CrossEntropyLoss(Module):
    """Cross-entropy from logits: log_softmax, then the negative log-likelihood of the target class."""

    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__()
        self.weight, self.ignore_index = weight, ignore_index
        self.reduction, self.label_smoothing = reduction, label_smoothing

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002
        return F.cross_entropy(input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing)


class NLLLoss(Module):
    """Negative log-likelihood of the target class, from log-probabilities (e.g. after LogSoftmax)."""

    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean"):
        super().__init__()
        self.weight, self.ignore_index, self.reduction = weight, ignore_index, reduction

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002
        return F.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class BCEWithLogitsLoss(Module):
    """Binary cross-entropy from logits, computed stably (never log(0), never overflow)."""

    def __init__(self, weight=None, reduction: str = "mean", pos_weight=None):
        super().__init__()
        self.weight, self.reduction, self.pos_weight = weight, reduction, pos_weight

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002
        return F.binary_cross_entropy_with_logits(input, target, self.weight, self.reduction, self.pos_weight)


class BCELoss(Module):
    """Binary cross-entropy from probabilities. Prefer BCEWithLogitsLoss, which is stable."""

    def __init__(self, weight=None, reduction: str = "mean"):
        super().__init__()
        self.weight, self.reduction = weight, reduction

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002
        return F.binary_cross_entropy(input, target, self.weight, self.reduction)
