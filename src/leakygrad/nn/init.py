"""Weight initialisation, with PyTorch's names and conventions (each function fills a tensor in place and
returns it). Random numbers come from `leakygrad.engine.generator()`, so `lg.manual_seed(s)` fixes them.

Why it matters: the scale of the initial weights decides whether signals (and gradients) keep their size
layer after layer. For a layer with `fan_in` inputs, weights of variance 1/fan_in keep a linear layer's output
variance equal to its input's; the activation then changes it by a factor, which the *gain* undoes:

- Xavier/Glorot (2010): variance gain^2 * 2 / (fan_in + fan_out), a compromise between keeping forward
  activations (1/fan_in) and backward gradients (1/fan_out) at the same scale. For tanh and sigmoid nets.
- Kaiming/He (2015): variance gain^2 / fan (fan_in by default). A ReLU zeroes half its inputs and so halves
  the second moment; gain sqrt(2) restores it. For ReLU nets.
- Orthogonal (Saxe et al. 2014): all singular values 1, so repeated multiplication (as in a recurrent net)
  neither shrinks nor grows a vector.
- Truncated normal (`trunc_normal_`): a normal distribution cut to [a, b], so no weight starts far out in the
  tails (the ViT and GPT-style initialisation, `trunc_normal_(w, std=0.02)`).

Fans, as in PyTorch: a weight of shape (out, in, *kernel) has fan_in = in * prod(kernel) and
fan_out = out * prod(kernel). (A Linear weight is (out_features, in_features).)
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from leakygrad.engine import Tensor
from leakygrad.engine.creation import generator
from leakygrad.engine.errors import OpError, what_is


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The factor by which to scale weights so that `nonlinearity` keeps the signal's second moment."""
    linear = ("linear", "identity", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")  # fmt: skip
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(
        f"calculate_gain: unknown nonlinearity {nonlinearity!r} (known: {', '.join(linear)}, "
        "tanh, relu, leaky_relu, selu)"
    )


def fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight of shape (out, in, *kernel)."""
    if tensor.ndim < 2:
        raise OpError(f"init: fan in and fan out need a tensor with at least 2 dimensions, got shape {tensor.shape}")
    receptive_field = int(np.prod(tensor.shape[2:], dtype=np.int64))
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def _has_no_elements(tensor: Tensor, name: str) -> bool:
    """A tensor with no elements (a layer with 0 inputs, say) has nothing to initialise and no fan to scale by:
    leave it, with a warning (as PyTorch does)."""
    if tensor.size == 0:
        warnings.warn(f"{name}: a tensor of shape {tensor.shape} has no elements to initialise", stacklevel=3)
        return True
    return False


def _fill(tensor: Tensor, values) -> Tensor:
    if not isinstance(tensor, Tensor):  # (an array's .data is a raw buffer: writing to it fails obscurely)
        raise OpError(f"init: fills a Tensor (a Parameter, say) in place, got {what_is(tensor)}")
    tensor.data[...] = values  # in place, keeping the tensor's dtype
    return tensor


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    """Uniform in [a, b)."""
    return _fill(tensor, generator().uniform(a, b, size=tensor.shape))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    return _fill(tensor, generator().normal(mean, std, size=tensor.shape))


def constant_(tensor: Tensor, val: float) -> Tensor:
    return _fill(tensor, val)


def zeros_(tensor: Tensor) -> Tensor:
    return _fill(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    return _fill(tensor, 1.0)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)): variance gain^2 * 2 / (fan_in + fan_out)."""
    if _has_no_elements(tensor, "xavier_uniform_"):
        return tensor
    fan_in, fan_out = fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / (fan_in + fan_out))
    bound = math.sqrt(3.0) * std  # a uniform on [-a, a] has standard deviation a / sqrt(3)
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    if _has_no_elements(tensor, "xavier_normal_"):
        return tensor
    fan_in, fan_out = fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"kaiming init: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = fan_in_and_fan_out(tensor)
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Tensor:
    """U(-bound, bound), bound = gain * sqrt(3 / fan). `a` is the leaky ReLU's negative slope (0: a ReLU).

    `mode="fan_in"` keeps the forward signal's scale, `"fan_out"` the backward gradient's.
    """
    if _has_no_elements(tensor, "kaiming_uniform_"):
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Tensor:
    """N(0, std^2), std = gain / sqrt(fan)."""
    if _has_no_elements(tensor, "kaiming_normal_"):
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity))


def orthogonal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """A (semi-)orthogonal matrix times `gain`: rows orthonormal if there are fewer rows than columns, else
    columns. Tensors with more than 2 dimensions are flattened to (shape[0], rest)."""
    if tensor.ndim < 2:
        raise OpError(f"orthogonal_: needs a tensor with at least 2 dimensions, got shape {tensor.shape}")
    if _has_no_elements(tensor, "orthogonal_"):
        return tensor
    rows = tensor.shape[0]
    cols = tensor.size // rows
    flat = generator().standard_normal((rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q *= np.sign(np.diag(r))  # makes the result uniformly distributed over orthogonal matrices
    if rows < cols:
        q = q.T
    return _fill(tensor, gain * q.reshape(tensor.shape))


def trunc_normal_(
    tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, generator=None
) -> Tensor:
    """Values from N(mean, std^2) truncated to [a, b]: drawn from the normal distribution, conditioned on landing
    in [a, b] (a and b are values, not numbers of standard deviations, as in PyTorch). `generator` is a NumPy
    `np.random.Generator`; by default the draws come from `lg.engine.generator()`, like every other init.

    The draws are exact for any interval, including one far in a tail (PyTorch's inverse-CDF method warns there
    that its values may be wrong): each value is drawn by rejection from whichever of three proposals fits the
    interval (Robert 1995), and every proposal accepts at least about a third of what it draws.
    """
    name = "trunc_normal_"
    if not isinstance(tensor, Tensor):
        _fill(tensor, 0.0)  # (raises the error every init function gives for something that is not a Tensor)
    for what, value in (("mean", mean), ("std", std), ("a", a), ("b", b)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise OpError(f"{name}: {what} must be a number, got {what_is(value)}")
    if not math.isfinite(mean):
        raise OpError(f"{name}: mean must be finite, got {mean}")
    if not (std > 0 and math.isfinite(std)):
        raise OpError(f"{name}: std must be positive and finite, got {std}")
    if not a < b:  # (NaN fails this too)
        raise OpError(f"{name}: the interval [a, b] must have a < b, got a={a}, b={b}")
    rng = _generator(name, generator)
    if tensor.size == 0:
        return tensor
    z = _truncated_standard_normal(rng, tensor.size, (a - mean) / std, (b - mean) / std)
    values = np.clip(mean + std * z, a, b)  # (mean + std z can round a hair past a bound)
    low, high = _bounds_in(tensor.dtype, a, b)  # ... and so can the conversion to the tensor's precision
    return _fill(tensor, np.clip(values.astype(tensor.dtype), low, high).reshape(tensor.shape))


def _generator(name: str, given) -> np.random.Generator:
    """The generator to draw from: the one given, or leakygrad's (seeded by `lg.manual_seed`)."""
    if given is None:
        return generator()
    if not isinstance(given, np.random.Generator):
        raise OpError(f"{name}: generator must be a np.random.Generator (or None), got {what_is(given)}")
    return given


def _truncated_standard_normal(rng: np.random.Generator, count: int, low: float, high: float) -> np.ndarray:
    """`count` draws of a standard normal z conditioned on low <= z <= high, by rejection (Robert 1995):

    - an interval that holds 0 and is wide (over sqrt(2 pi)): draw z ~ N(0, 1), keep those inside;
    - a narrow interval: draw z uniform in it, keep it with probability exp((m^2 - z^2) / 2), m the point of
      the interval nearest 0 (the normal density relative to its highest value on the interval);
    - an interval in the right tail, low > 0 (the left tail is its mirror image): z = low + e / rate with e
      ~ Exp(1), rate = (low + sqrt(low^2 + 4)) / 2, kept with probability exp(-(z - rate)^2 / 2) if z <= high.
    """
    if high <= 0:  # the left tail: draw from the mirror image [-high, -low] and flip the sign
        return -_truncated_standard_normal(rng, count, -high, -low)
    if low <= 0:
        wide = high - low > math.sqrt(2 * math.pi)
        nearest = 0.0
    else:
        root = math.sqrt(low * low + 4)
        rate = (low + root) / 2
        # Robert's rule: the uniform proposal accepts more than the exponential one on intervals narrower than this
        wide = high - low > math.exp((low * low - low * root) / 4 + 0.5) / rate
        nearest = low
    out = np.empty(count)
    filled = 0
    while filled < count:
        size = count - filled
        if low <= 0 and wide:
            z = rng.standard_normal(size)
            keep = (z >= low) & (z <= high)
        elif not wide:
            z = rng.uniform(low, high, size)
            keep = rng.random(size) < np.exp((nearest * nearest - z * z) / 2)
        else:
            z = low + rng.standard_exponential(size) / rate
            keep = (z <= high) & (rng.random(size) < np.exp(-((z - rate) ** 2) / 2))
        accepted = z[keep]
        out[filled : filled + accepted.size] = accepted
        filled += accepted.size
    return out


def _bounds_in(dtype, a: float, b: float) -> tuple:
    """The lowest and highest values of `dtype` inside [a, b] (float32(0.1) is above 0.1, say)."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        return a, b
    low, high = dtype.type(a), dtype.type(b)
    if low < a:
        low = np.nextafter(low, dtype.type(np.inf))
    if high > b:
        high = np.nextafter(high, dtype.type(-np.inf))
    return low, high


# The other names these go by.
glorot_uniform_ = xavier_uniform_
glorot_normal_ = xavier_normal_
he_uniform_ = kaiming_uniform_
he_normal_ = kaiming_normal_
