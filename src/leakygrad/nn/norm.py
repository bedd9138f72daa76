"""Normalisation layers: BatchNorm1d, BatchNorm2d (over the batch) and LayerNorm (over each example)."""

from __future__ import annotations

import numpy as np

from leakygrad.engine import Tensor
from leakygrad.engine.errors import OpError
from leakygrad.nn import functional as F
from leakygrad.nn.module import Module, Parameter


class _BatchNorm(Module):
    """Shared by BatchNorm1d and BatchNorm2d; they differ only in the input shapes they accept."""

    accepted_ndims: tuple[int, ...] = ()
    expected: str = ""

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
    ):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.weight = Parameter(np.ones(num_features, dtype=np.float32)) if affine else None
        self.bias = Parameter(np.zeros(num_features, dtype=np.float32)) if affine else None
        if track_running_stats:
            self.register_buffer("running_mean", Tensor(np.zeros(num_features, dtype=np.float32)))
            self.register_buffer("running_var", Tensor(np.ones(num_features, dtype=np.float32)))
            self.register_buffer("num_batches_tracked", Tensor(np.array(0, dtype=np.int64)))
        else:
            self.running_mean = self.running_var = self.num_batches_tracked = None

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim not in self.accepted_ndims or x.shape[1] != self.num_features:
            raise OpError(
                f"{type(self).__name__}({self.num_features}): expects input {self.expected} with "
                f"C = {self.num_features}, got {x.shape}"
            )
        return F.batch_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            training=self.training or not self.track_running_stats,  # without running stats: always the batch's
            momentum=self.momentum,
            eps=self.eps,
            num_batches_tracked=self.num_batches_tracked,
        )

    def extra_repr(self) -> str:
        extra = "" if self.track_running_stats else ", track_running_stats=False"
        return f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}{extra}"


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) inputs, per channel C."""

    accepted_ndims = (2, 3)
    expected = "(N, C) or (N, C, L)"


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of images (N, C, H, W), per channel C, over the batch and both spatial axes."""

    accepted_ndims = (4,)
    expected = "(N, C, H, W)"


class LayerNorm(Module):
    """Normalise each example over its last dimensions (`normalized_shape`), then scale and shift.
    Unlike batch norm it behaves the same in training and evaluation, and for any batch size."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True):
        super().__init__()
        shape = F._shape(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.weight = Parameter(np.ones(shape, dtype=np.float32)) if elementwise_affine else None
        self.bias = Parameter(np.zeros(shape, dtype=np.float32)) if elementwise_affine and bias else None

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        if self.weight is None:
            return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine=False"
        return f"{self.normalized_shape}, eps={self.eps}" + ("" if self.bias is not None else ", bias=False")
