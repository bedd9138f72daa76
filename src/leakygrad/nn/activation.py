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


def _inplace_repr(inplace: bool, before: str = "") -> str:
    """PyTorch's way of showing `inplace`: only when it is True, after the other settings."""
    if not inplace:
        return before
    return f"{before}, inplace=True" if before else "inplace=True"


class ReLU(Module):
    """max(x, 0). Its gradient is 0 wherever x < 0: a unit whose input stays negative never learns again.

    `inplace=True` is accepted for PyTorch's sake and computes out of place: the same values and gradients, but
    the input is not overwritten (see the module docstring)."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class Sigmoid(Module):
    """1 / (1 + e^-x). Its derivative is at most 0.25, and near 0 when |x| is large (saturation)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.sigmoid(x)


class Tanh(Module):
    """tanh(x). Derivative 1 - tanh(x)^2: 1 at 0, near 0 when |x| is large."""

    def forward(self, x: Tensor) -> Tensor:
        return F.tanh(x)


class LeakyReLU(Module):
    """x where x > 0, else negative_slope * x: a ReLU that keeps a small gradient for negative inputs.

    `inplace=True` is accepted and computes out of place (the input is not overwritten; see the module docstring)."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.leaky_relu(x, self.negative_slope)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace, f"negative_slope={self.negative_slope}")


class ELU(Module):
    """x where x > 0, else alpha (e^x - 1).

    `inplace=True` is accepted and computes out of place (the input is not overwritten; see the module docstring)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.elu(x, self.alpha)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace, f"alpha={self.alpha}")


class GELU(Module):
    """x * Phi(x) (Phi the normal CDF), or its tanh approximation with approximate="tanh"."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """x * sigmoid(x) (swish).

    `inplace=True` is accepted and computes out of place (the input is not overwritten; see the module docstring)."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.silu(x)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class Softplus(Module):
    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, x: Tensor) -> Tensor:
        return F.softplus(x, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """clip(x, min_val, max_val), with zero gradient outside (and at) the bounds.

    `inplace=True` is accepted and computes out of place (the input is not overwritten; see the module docstring)."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        if max_val < min_val:
            raise OpError(f"Hardtanh: max_val {max_val} is below min_val {min_val}")
        super().__init__()
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.hardtanh(x, self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace, f"min_val={self.min_val}, max_val={self.max_val}")


class ReLU6(Hardtanh):
    """min(max(x, 0), 6).

    `inplace=True` is accepted and computes out of place (the input is not overwritten; see the module docstring)."""

    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)  # PyTorch's: the bounds are the layer's name


class SELU(Module):
    """scale (x where x > 0, else alpha (e^x - 1)): with LeCun-normal weights, activations keep mean 0 and variance 1
    through depth (the "self-normalising" constants of Klambauer et al. 2017). `inplace=True` computes out of place."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.selu(x)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class CELU(Module):
    """x where x > 0, else alpha (e^(x / alpha) - 1). `inplace=True` computes out of place."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.celu(x, self.alpha)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace, f"alpha={self.alpha}")


class Mish(Module):
    """x tanh(softplus(x)). `inplace=True` computes out of place."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.mish(x)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class Hardsigmoid(Module):
    """clip(x / 6 + 1/2, 0, 1): zero gradient outside (-3, 3). `inplace=True` computes out of place."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.hardsigmoid(x)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class Hardswish(Module):
    """x hardsigmoid(x) (MobileNetV3): zero gradient below -3. `inplace=True` computes out of place."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.hardswish(x)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class Threshold(Module):
    """x where x > threshold, else value: zero gradient at and below the threshold. `inplace=True` computes out of
    place."""

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.threshold(x, self.threshold, self.value)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace, f"threshold={self.threshold}, value={self.value}")


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
