"""Activation functions: the elementwise nonlinearities between layers, and where gradients most often leak.

Each backward multiplies the incoming gradient by the activation's local derivative. When that derivative is
small (a saturated sigmoid: at most 0.25, near 0 in its tails) or zero (a ReLU whose input is negative), the
gradient reaching the layers below shrinks or stops: the vanishing gradient and the dead ReLU.

Masks use `where(mask, grad, 0)` rather than `grad * mask`, as PyTorch does, so that a NaN in the gradient
of a unit that is switched off does not leak through.
"""

from __future__ import annotations

import math

import numpy as np

from leakygrad.engine.errors import OpError
from leakygrad.engine.op import Op
from leakygrad.engine.ops.elementwise import plain_number, where, zero_where
from leakygrad.engine.ops.erf_numpy import erf as _erf

SQRT_HALF = math.sqrt(0.5)
INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
GELU_TANH_COEFF = 0.044715


class Sigmoid(Op):
    name = "sigmoid"

    def forward(self, x):
        e = np.exp(-np.abs(x))  # never overflows: computed on -|x|
        return np.where(x >= 0, 1 / (1 + e), e / (1 + e))

    def backward(self, grad):
        y = self.output
        return grad * y * (1 - y)  # sigma'(x) = sigma(x) (1 - sigma(x)) <= 0.25


class Tanh(Op):
    name = "tanh"

    def forward(self, x):
        return np.tanh(x)

    def backward(self, grad):
        y = self.output
        return grad * (1 - y * y)  # tanh'(x) = 1 - tanh(x)^2 <= 1


class ReLU(Op):
    name = "relu"

    def forward(self, x):
        return np.maximum(x, 0)

    def backward(self, grad):
        return where(self.switched_off(), 0.0, grad)

    def backward_arrays(self, grad):
        return zero_where(self.switched_off(), grad)

    def switched_off(self):
        """Slope 0 where the output is 0 (x <= 0, at x = 0 too), 1 elsewhere: NaN passes the gradient, as in PyTorch."""
        return self.output.data <= 0


class LeakyReLU(Op):
    name = "leaky_relu"

    def __init__(self, negative_slope: float = 0.01):
        self.negative_slope = plain_number(negative_slope)

    def forward(self, x):
        if self.negative_slope:
            return np.where(x > 0, x, x * self.negative_slope)
        with np.errstate(invalid="ignore"):  # a slope of 0 times inf, in the branch not taken: not a warning
            return np.where(x > 0, x, x * self.negative_slope)

    def backward(self, grad):
        (x,) = self.inputs
        return where(x > 0, grad, grad * self.negative_slope)


class ELU(Op):
    name = "elu"

    def __init__(self, alpha: float = 1.0):
        self.alpha = plain_number(alpha)

    def forward(self, x):
        with np.errstate(over="ignore"):
            return np.where(x > 0, x, self.alpha * np.expm1(np.minimum(x, 0)))

    def backward(self, grad):
        (x,) = self.inputs
        # d elu/dx = alpha e^x below 0, alpha at 0 (as PyTorch: a constant there, so no second derivative), 1 above.
        # e^x is computed from min(x, 0), which cannot overflow; from y + alpha it would lose digits in the tail.
        slope = where(
            x.data < 0, self.alpha * x.minimum(0.0).exp(), np.where(x.data == 0, self.alpha, 1.0).astype(x.dtype)
        )
        return grad * slope


class GELU(Op):
    """x * Phi(x), Phi the standard normal CDF; or its tanh approximation (`approximate="tanh"`)."""

    name = "gelu"

    def __init__(self, approximate: str = "none"):
        if approximate not in ("none", "tanh"):
            raise OpError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        with np.errstate(over="ignore", invalid="ignore"):  # -inf * 0 = nan at x = -inf: a result (PyTorch's too)
            if self.approximate == "tanh":
                return 0.5 * x * (1 + np.tanh(SQRT_2_OVER_PI * (x + GELU_TANH_COEFF * x**3)))
            return 0.5 * x * (1 + _erf(x * SQRT_HALF))

    def backward(self, grad):
        (x,) = self.inputs
        if self.approximate == "tanh":
            t = (SQRT_2_OVER_PI * (x + GELU_TANH_COEFF * x * x * x)).tanh()
            dt_dx = (1 - t * t) * SQRT_2_OVER_PI * (1 + 3 * GELU_TANH_COEFF * x * x)
            return grad * (0.5 * (1 + t) + 0.5 * x * dt_dx)
        cdf = 0.5 * (1 + (x * SQRT_HALF).erf())
        pdf = (-0.5 * x * x).exp() * INV_SQRT_2PI
        return grad * (cdf + x * pdf)  # d(x Phi(x))/dx = Phi(x) + x phi(x)


class SiLU(Op):
    """x * sigmoid(x), also called swish."""

    name = "silu"

    def forward(self, x):
        with np.errstate(invalid="ignore"):  # -inf * 0 = nan at x = -inf: a result (PyTorch's too)
            return x * Sigmoid().forward(x)

    def backward(self, grad):
        (x,) = self.inputs
        s = x.sigmoid()
        return grad * s * (1 + x * (1 - s))  # s + x s (1 - s)


class Softplus(Op):
    """log(1 + exp(beta x)) / beta, a smooth ReLU; linear above `threshold` (as PyTorch, for stability)."""

    name = "softplus"

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        self.beta, self.threshold = plain_number(beta), plain_number(threshold)

    def forward(self, x):
        bx = x * self.beta
        with np.errstate(invalid="ignore"):  # logaddexp(0, nan) = nan: a result, not a warning
            return np.where(bx > self.threshold, x, np.logaddexp(0, bx) / self.beta)

    def backward(self, grad):
        (x,) = self.inputs
        bx = x * self.beta
        # d softplus/dx = sigmoid(beta x), 1 above the threshold; at the threshold itself sigmoid(threshold), held
        # constant (PyTorch's second derivative is zero there)
        at_most = where(bx.data >= self.threshold, self.threshold, bx)  # (a NaN stays NaN)
        return where(bx.data > self.threshold, grad, grad * at_most.sigmoid())


class Hardtanh(Op):
    """clip(x, min_val, max_val), as a layer. Its gradient is zero at the bounds and beyond."""

    name = "hardtanh"

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0):
        self.min_val, self.max_val = plain_number(min_val), plain_number(max_val)
        if self.max_val < self.min_val:
            raise OpError(f"hardtanh: max_val {max_val} is below min_val {min_val}")

    def forward(self, x):
        return np.clip(x, self.min_val, self.max_val)

    def backward(self, grad):
        (x,) = self.inputs
        # Open interval, unlike clip: PyTorch's hardtanh passes no gradient at the bounds themselves.
        return where((x <= self.min_val) | (x >= self.max_val), 0.0, grad)


SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


class SELU(Op):
    """scale (x where x > 0, else alpha (e^x - 1)), with the constants that keep activations at mean 0 and
    variance 1 through a deep net of LeCun-initialised layers (Klambauer et al. 2017, "self-normalising")."""

    name = "selu"

    def forward(self, x):
        with np.errstate(over="ignore"):
            return SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(np.minimum(x, 0)))

    def backward(self, grad):
        (x,) = self.inputs
        # d selu/dx = scale alpha e^x below 0, scale above (and at 0, as PyTorch)
        slope = where(x.data <= 0, (SELU_SCALE * SELU_ALPHA) * x.minimum(0.0).exp(), SELU_SCALE)
        return grad * slope


class CELU(Op):
    """x where x > 0, else alpha (e^(x / alpha) - 1): an ELU whose slope is continuous at 0 for every alpha."""

    name = "celu"

    def __init__(self, alpha: float = 1.0):
        self.alpha = plain_number(alpha)
        if self.alpha == 0:
            raise OpError("celu: alpha must not be 0 (it divides x)")

    def forward(self, x):
        with np.errstate(over="ignore"):
            return np.where(x > 0, x, self.alpha * np.expm1(np.minimum(x, 0) / self.alpha))

    def backward(self, grad):
        (x,) = self.inputs
        # d celu/dx = e^(x / alpha) below 0, 1 above (and at 0, as PyTorch)
        return grad * where(x.data <= 0, (x.minimum(0.0) / self.alpha).exp(), 1.0)


class Mish(Op):
    """x tanh(softplus(x)) (Misra 2019): smooth, non-monotonic, close to x for large x and to 0 for very negative x."""

    name = "mish"

    def forward(self, x):
        with np.errstate(invalid="ignore"):  # -inf * 0 = nan at x = -inf: a result (PyTorch's too)
            return x * np.tanh(np.logaddexp(0, x))

    def backward(self, grad):
        (x,) = self.inputs
        t = Softplus.apply(x).tanh()
        # d/dx x t(x) = t + x t', and t' = (1 - t^2) softplus'(x) = (1 - t^2) sigmoid(x)
        return grad * (t + x * x.sigmoid() * (1 - t * t))


class Hardsigmoid(Op):
    """A piecewise-linear sigmoid: 0 below -3, 1 above 3, x / 6 + 1/2 between."""

    name = "hardsigmoid"

    def forward(self, x):
        return np.clip(x / 6 + 0.5, 0.0, 1.0)

    def backward(self, grad):
        (x,) = self.inputs
        # slope 1/6 strictly inside (-3, 3), 0 elsewhere (at the corners too, as PyTorch)
        return where((x.data > -3) & (x.data < 3), grad / 6, 0.0)


class Hardswish(Op):
    """x hardsigmoid(x) (MobileNetV3): 0 below -3, x above 3, x (x + 3) / 6 between."""

    name = "hardswish"

    def forward(self, x):
        return x * np.clip(x / 6 + 0.5, 0.0, 1.0)

    def backward(self, grad):
        (x,) = self.inputs
        # slope 0 below -3, (2x + 3) / 6 = x / 3 + 1/2 from -3 to 3 (both included, as PyTorch), 1 above 3
        middle = (x.data >= -3) & (x.data <= 3)
        return where(middle, grad * (x / 3 + 0.5), where(x.data > 3, grad, 0.0))


class Threshold(Op):
    """x where x > threshold, else `value`. Its gradient is 1 above the threshold and 0 at or below it: with a
    threshold of 0 and a value of 0, a ReLU."""

    name = "threshold"

    def __init__(self, threshold: float, value: float):
        self.threshold, self.value = plain_number(threshold), plain_number(value)

    def forward(self, x):  # (x <= threshold: a NaN is not, and stays NaN, as in PyTorch)
        return np.where(x <= self.threshold, np.asarray(self.value, dtype=x.dtype), x)

    def backward(self, grad):
        (x,) = self.inputs
        return where(x.data <= self.threshold, 0.0, grad)
