"""Convolution and pooling over images of shape (N, C, H, W)."""

from __future__ import annotations

import math

import numpy as np

from leakygrad.engine import Tensor
from leakygrad.engine.errors import OpError
from leakygrad.nn import functional as F
from leakygrad.nn import init
from leakygrad.nn.module import Module, Parameter


class Conv2d(Module):
    """2-D convolution: `out_channels` filters of shape (in_channels, kh, kw) slid over the image.

    Output size per axis: floor((size + 2 padding - kernel) / stride) + 1. Weight (O, C, kh, kw) and
    initialisation as in PyTorch (uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)], fan_in = C kh kw).
    """

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1, groups: int = 1,
        bias: bool = True, padding_mode: str = "zeros",
    ):  # fmt: skip
        # (PyTorch's arguments in PyTorch's order, so that positional calls mean the same; those not supported
        # are refused unless they have their default value)
        F._refuse_unsupported(
            "Conv2d", dilation=(dilation, 1), groups=(groups, 1), padding_mode=(padding_mode, "zeros")
        )
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = F._pair(kernel_size, "Conv2d kernel_size")
        self.stride = F._pair(stride, "Conv2d stride")
        if isinstance(padding, str):  # "same" or "valid", kept by name (as in PyTorch)
            F.check_padding_name("Conv2d", padding, self.stride)
            self.padding = padding
        else:
            self.padding = F._pair(padding, "Conv2d padding")
        self.weight = Parameter(np.empty((out_channels, in_channels) + self.kernel_size, dtype=np.float32))
        self.bias = Parameter(np.empty(out_channels, dtype=np.float32)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))  # bound 1 / sqrt(fan_in), PyTorch's default
        if self.bias is not None:
            fan_in, _ = init.fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim != 4 or x.shape[1] != self.in_channels:
            raise OpError(f"{self!r}: expects images of shape (N, {self.in_channels}, H, W), got {x.shape}")
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding)

    def extra_repr(self) -> str:
        return (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
            f"padding={self.padding}, bias={self.bias is not None}"
        )


class MaxPool2d(Module):
    """The largest value in each kernel_size window (stride defaults to kernel_size: windows do not overlap).

    Only the largest element of each window passes gradient back: the rest of the window gets zero.
    """

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        F._refuse_unsupported(
            "MaxPool2d", dilation=(dilation, 1), return_indices=(return_indices, False), ceil_mode=(ceil_mode, False)
        )
        super().__init__()
        self.kernel_size, self.padding = kernel_size, padding
        self.stride = kernel_size if stride is None else stride  # (PyTorch's attribute: the stride used)

    def forward(self, x: Tensor) -> Tensor:
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """The mean of each kernel_size window; every element of a window gets an equal share of the gradient."""

    def __init__(
        self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad: bool = True,
        divisor_override=None,
    ):  # fmt: skip
        F._refuse_unsupported("AvgPool2d", ceil_mode=(ceil_mode, False), divisor_override=(divisor_override, None))
        super().__init__()
        self.kernel_size, self.padding = kernel_size, padding
        self.stride = kernel_size if stride is None else stride  # (PyTorch's attribute: the stride used)
        self.count_include_pad = count_include_pad

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, count_include_pad=self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"
