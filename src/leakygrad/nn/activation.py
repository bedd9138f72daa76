"""Every activation as a module, so it can sit in a Sequential and be hooked like any layer.

The math (forward and backward) is in `leakygrad.engine.ops.activations` (softmax and log_softmax:
`leakygrad.engine.ops.reductions`); these only hold the arguments.

`inplace`: the modules that take it in PyTorch (ReLU, ReLU6, LeakyReLU, ELU, SELU, CELU, SiLU, Mish, Hardtanh,
Hardsigmoid, Hardswish, Threshold, and Dropout in `layers.py`) take it here too, in the same position, so code
ported from PyTorch runs. leakygrad computes out of place either way (an input the graph may still read in
backward is never overwritten). The values and gradients are PyTorch's; the difference is that the input tensor
is left unchanged (PyTorch overwrites it and returns it).
"""

from __future__ import annotations

from leakygrad.engine import Tensor
from leakygrad.engine.errors import OpError
from leakygrad.nn import functional as F
from leakygrad.nn.module import Module


class TakesInplace(Module):
    """An activation that takes PyTorch's `inplace` argument: kept, shown in the repr as PyTorch does (only when
    True, after the other settings), and computed out of place (see the module docstring). A subclass lists its
    other settings in `settings()`."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def settings(self) -> str:
        return ""

    def extra_repr(self) -> str:
        settings = self.settings()
        if not self.inplace:
            return settings
        return f"{settings}, inplace=True" if settings else "inplace=True"


class ReLU(TakesInplace):
    """max(x, 0). Its gradient is 0 wherever x < 0: a unit whose input stays negative never learns again."""

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x)


class Sigmoid(Module):
    """1 / (1 + e^-x). Its derivative is at most 0.25, and near 0 when |x| is large (saturation)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.sigmoid(x)


class Tanh(Module):
    """tanh(x). Derivative 1 - tanh(x)^2: 1 at 0, near 0 when |x| is large."""

    def forward(self, x: Tensor) -> Tensor:
        return F.tanh(x)


class LeakyReLU(TakesInplace):
    """x where x > 0, else negative_slope * x: a ReLU that keeps a small gradient for negative inputs."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__(inplace)
        self.negative_slope = negative_slope

    def forward(self, x: Tensor) -> Tensor:
        return F.leaky_relu(x, self.negative_slope)

    def settings(self) -> str:
        return f"negative_slope={self.negative_slope}"


class ELU(TakesInplace):
    """x where x > 0, else alpha (e^x - 1)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__(inplace)
        self.alpha = alpha

    def forward(self, x: Tensor) -> Tensor:
        return F.elu(x, self.alpha)

    def settings(self) -> str:
        return f"alpha={self.alpha}"


class GELU(Module):
    """x * Phi(x) (Phi the normal CDF), or its tanh approximation with approximate="tanh"."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(TakesInplace):
    """x * sigmoid(x) (swish)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.silu(x)


class Softplus(Module):
    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, x: Tensor) -> Tensor:
        return F.softplus(x, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(TakesInplace):
    """clip(x, min_val, max_val), with zero gradient outside (and at) the bounds."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        if max_val < min_val:
            raise OpError(f"Hardtanh: max_val {max_val} is below min_val {min_val}")
        super().__init__(inplace)
        self.min_val, self.max_val = min_val, max_val

    def forward(self, x: Tensor) -> Tensor:
        return F.hardtanh(x, self.min_val, self.max_val)

    def settings(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


class ReLU6(Hardtanh):
    """min(max(x, 0), 6)."""

    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)

    def settings(self) -> str:
        return ""  # PyTorch's: the bounds are the layer's name


class SELU(TakesInplace):
    """scale (x where x > 0, else alpha (e^x - 1)): with LeCun-normal weights, activations keep mean 0 and variance 1
    through depth (the "self-normalising" constants of Klambauer et al. 2017)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.selu(x)


class CELU(TakesInplace):
    """x where x > 0, else alpha (e^(x / alpha) - 1)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__(inplace)
        self.alpha = alpha

    def forward(self, x: Tensor) -> Tensor:
        return F.celu(x, self.alpha)

    def settings(self) -> str:
        return f"alpha={self.alpha}"


class Mish(TakesInplace):
    """x tanh(softplus(x))."""

    def forward(self, x: Tensor) -> Tensor:
        return F.mish(x)


class Hardsigmoid(TakesInplace):
    """clip(x / 6 + 1/2, 0, 1): zero gradient outside (-3, 3)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.hardsigmoid(x)


class Hardswish(TakesInplace):
    """x hardsigmoid(x) (MobileNetV3): zero gradient below -3."""

    def forward(self, x: Tensor) -> Tensor:
        return F.hardswish(x)


class Threshold(TakesInplace):
    """x where x > threshold, else value: zero gradient at and below the threshold."""

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__(inplace)
        self.threshold, self.value = threshold, value

    def forward(self, x: Tensor) -> Tensor:
        return F.threshold(x, self.threshold, self.value)

    def settings(self) -> str:
        return f"threshold={self.threshold}, value={self.value}"


class Softmax(Module):
    """exp(x) / sum(exp(x)) along `dim`."""

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return F.softmax(x, axis=self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """log(softmax(x)) along `dim`, computed stably."""

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return F.log_softmax(x, axis=self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
