"""Layers and losses as plain functions of tensors: `F.linear(x, w, b)`, `F.cross_entropy(logits, labels)`.

The modules in `leakygrad.nn` hold parameters and call these; the functions hold the math. Everything is
written with Tensor operations, so gradients (and gradients of gradients) come from the engine. Conventions
follow PyTorch: shapes, argument names, reductions ("mean", "sum", "none").
"""

from __future__ import annotations

import math

import numpy as np

from leakygrad.engine import Tensor, no_grad
from leakygrad.engine.creation import generator
from leakygrad.engine.errors import OpError, describe
from leakygrad.engine.functional import (  # noqa: F401  (activations are part of this module's surface)
    celu,
    elu,
    gelu,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    log_softmax,
    mish,
    relu,
    selu,
    sigmoid,
    silu,
    softmax,
    softplus,
    stack,
    tanh,
    threshold,
    where,
)
from leakygrad.engine.ops import nn as nn_ops
from leakygrad.engine.ops.nn import Im2Col
from leakygrad.engine.tensor import as_tensor

# ---------------------------------------------------------------------------------------------------- layers


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x W^T + b, with W of shape (out_features, in_features) as in PyTorch."""
    if x.ndim == 0 or weight.ndim == 0 or x.shape[-1] != weight.shape[-1]:
        raise OpError(
            f"linear: input of shape {x.shape} has {x.shape[-1] if x.ndim else 0} features in its last "
            f"dimension, the weight {weight.shape} expects {weight.shape[-1] if weight.ndim else 0}"
        )
    fused = weight.ndim == 2 and (bias is None or (bias.shape == weight.shape[:1] and bias.dtype == x.dtype))
    if fused and x.ndim >= 1 and x.dtype == weight.dtype:  # the common case: one op (ops.nn.Linear)
        return nn_ops.Linear.apply(x, weight) if bias is None else nn_ops.Linear.apply(x, weight, bias)
    out = x @ weight.T  # any other shapes and dtypes: the same function, by the rules of @ and +
    return out if bias is None else out + bias


def _shape(size) -> tuple[int, ...]:
    """A size given as one integer (Python's or NumPy's) or a sequence of them, as a tuple of ints."""
    return (int(size),) if isinstance(size, (int, np.integer)) else tuple(int(s) for s in size)


def _refuse_unsupported(name: str, **options) -> None:
    """Refuse an option of PyTorch's that leakygrad does not have, given anything but its default:
    `options` maps each option to (value given, default)."""
    for option, (value, default) in options.items():
        if isinstance(value, np.ndarray):
            value = tuple(value.tolist())
        unchanged = value == default if not isinstance(value, (tuple, list)) else all(v == default for v in value)
        if not unchanged:
            raise OpError(f"{name}: {option}={value!r} is not supported (only {option}={default!r})")


def _pair(value, name: str) -> tuple[int, int]:
    if isinstance(value, (int, np.integer)):
        return int(value), int(value)
    if isinstance(value, np.ndarray):
        value = tuple(value.tolist())
    pair = tuple(value) if isinstance(value, (tuple, list)) else ()
    if len(pair) != 2 or not all(isinstance(v, (int, np.integer)) for v in pair):
        raise OpError(f"{name}: expected one int or a pair of ints, got {value!r}")
    return int(pair[0]), int(pair[1])


def conv2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """2-D convolution (cross-correlation, as in every deep learning library) of x (N, C, H, W) with weight
    (O, C, kh, kw): out[n, o, i, j] = b[o] + sum over c, di, dj of w[o, c, di, dj] x[n, c, i s + di - p, j s + dj - p]
    (x is 0 outside the image: zero padding p). `padding` may also be "valid" (none) or, with stride 1, "same"
    (the output as large as the input: k - 1 zeros in all per axis, the extra one after when k is even, as in
    PyTorch).

    One op (`leakygrad.engine.ops.nn.Conv2d`): every window of the image becomes a row, and one matrix product
    with the weight computes every output. Its gradients are convolutions too (see that module).
    """
    if type(dilation) is not int or dilation != 1 or groups != 1:  # (the full check only then: this runs each step)
        _refuse_unsupported("conv2d", dilation=(dilation, 1), groups=(groups, 1))
    if isinstance(padding, str):
        x, padding = _pad_by_name(x, padding, _pair(stride, "conv2d stride"), weight.shape[2:])
    # (the shapes are checked by the op)
    options = dict(stride=_pair(stride, "conv2d stride"), padding=_pair(padding, "conv2d padding"))
    if bias is None:
        return nn_ops.Conv2d.apply(x, weight, **options)
    return nn_ops.Conv2d.apply(x, weight, bias, **options)


def check_padding_name(name: str, padding: str, stride: tuple[int, int]) -> None:
    if padding not in ("same", "valid"):
        raise OpError(f"{name}: padding must be a number, a pair, 'same' or 'valid', got {padding!r}")
    if padding == "same" and stride != (1, 1):
        raise OpError(
            f"{name}: padding='same' needs stride 1 (got stride {stride}): with a larger stride the output cannot be "
            "as large as the input. Give the padding as a number."
        )


def _pad_by_name(x: Tensor, padding: str, stride: tuple[int, int], kernel_size) -> tuple[Tensor, tuple[int, int]]:
    """The input and the symmetric padding for conv2d with padding "valid" or "same". An even kernel needs one more
    zero after than before on its axis (PyTorch's choice): the input is padded for that, and the op pads nothing."""
    check_padding_name("conv2d", padding, stride)
    if padding == "valid":
        return x, (0, 0)
    before = [(k - 1) // 2 for k in kernel_size]
    after = [k - 1 - b for k, b in zip(kernel_size, before)]
    if before == after:
        return x, (before[0], before[1])
    return x.pad(((0, 0), (0, 0), (before[0], after[0]), (before[1], after[1]))), (0, 0)


def _pool_options(name: str, x: Tensor, kernel_size, stride, padding) -> dict:
    kernel = _pair(kernel_size, f"{name} kernel_size")
    stride = kernel if stride is None else _pair(stride, f"{name} stride")
    padding = _pair(padding, f"{name} padding")
    if padding[0] > kernel[0] // 2 or padding[1] > kernel[1] // 2:
        raise OpError(f"{name}: padding {padding} should be at most half the kernel size {kernel}")
    if x.ndim != 4:
        raise OpError(f"{name}: expects images of shape (N, C, H, W), got {x.shape}")
    return dict(kernel_size=kernel, stride=stride, padding=padding)


def max_pool2d(
    x: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
) -> Tensor:
    """The largest value of each window (stride defaults to the kernel size). Padding counts as -inf.
    Only the largest element of each window gets a gradient (the first, if several are equal)."""
    if type(dilation) is not int or dilation != 1 or ceil_mode or return_indices:
        _refuse_unsupported(
            "max_pool2d", dilation=(dilation, 1), ceil_mode=(ceil_mode, False), return_indices=(return_indices, False)
        )
    return nn_ops.MaxPool2d.apply(x, **_pool_options("max_pool2d", x, kernel_size, stride, padding))


def avg_pool2d(
    x: Tensor, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad: bool = True,
    divisor_override=None,
) -> Tensor:  # fmt: skip
    """The mean of each window. With padding, `count_include_pad` says whether the zeros count (PyTorch's
    default, True) or only the image's own pixels do."""
    if ceil_mode or divisor_override is not None:
        _refuse_unsupported("avg_pool2d", ceil_mode=(ceil_mode, False), divisor_override=(divisor_override, None))
    options = _pool_options("avg_pool2d", x, kernel_size, stride, padding)
    windows = Im2Col.apply(x, **options)  # (N, OH, OW, kh, kw, C)
    if count_include_pad or options["padding"] == (0, 0):
        return windows.mean(axis=(3, 4)).transpose(0, 3, 1, 2)
    pixels = Im2Col(**options).forward(np.ones((1, 1) + x.shape[2:], dtype=x.dtype))  # 1 on the image, 0 padding
    return (windows.sum(axis=(3, 4)) / pixels.sum(axis=(3, 4))).transpose(0, 3, 1, 2)


def flatten(x: Tensor, start_dim: int = 1, end_dim: int = -1) -> Tensor:
    return x.flatten(start_dim, end_dim)


def dropout(x: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Zero each element with probability p and scale the rest by 1 / (1 - p), so the expected value is
    unchanged ("inverted dropout"); at evaluation (training=False) do nothing."""
    if not 0 <= p <= 1:
        raise OpError(f"dropout: p must be between 0 and 1, got {p}")
    if not training or p == 0:
        return x
    if p == 1:
        return x * 0.0
    keep = generator().random(x.shape) >= p
    return x * (keep / (1 - p)).astype(x.dtype)


def embedding(indices, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """Row `indices[...]` of `weight` for each index: a lookup table, whose backward adds each gradient into
    the row that was looked up. The row `padding_idx` gets no gradient."""
    index = np.asarray(indices.data if isinstance(indices, Tensor) else indices)
    if index.dtype.kind not in "iu":
        raise OpError(f"embedding: indices must be integers, got {describe(index)}")
    if weight.ndim != 2:
        raise OpError(f"embedding: the weight must be a table of shape (rows, features), got shape {weight.shape}")
    rows = weight.shape[0]
    if index.size and (index.min() < 0 or index.max() >= rows):
        bad = index.min() if index.min() < 0 else index.max()
        raise OpError(f"embedding: index {bad} is out of range for an embedding of {rows} rows (0 to {rows - 1})")
    out = weight[index]
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise OpError(f"embedding: padding_idx {padding_idx} is not a row of a table of {rows} (0 to {rows - 1})")
        padding_idx %= rows  # -1: the last row, as in PyTorch
        out = where((index != padding_idx)[..., None], out, out.detach())  # same values, no gradient there
    return out


def batch_norm(
    x,
    running_mean,
    running_var,
    weight=None,
    bias=None,
    training=False,
    momentum=0.1,
    eps=1e-5,
    num_batches_tracked=None,
) -> Tensor:
    """Normalise each channel (axis 1) to zero mean and unit variance over the batch (and the spatial axes),
    then scale and shift: y = (x - mean) / sqrt(var + eps) * weight + bias.

    Training uses the batch's statistics and updates the running ones in place (PyTorch's rule:
    running = (1 - momentum) running + momentum batch, with the unbiased batch variance; momentum=None means
    a cumulative average over `num_batches_tracked`). Evaluation uses the running statistics.
    """
    x = as_tensor(x)  # (a NumPy array is taken as a constant, as by the other layers)
    if x.ndim < 2:
        raise OpError(f"batch_norm: expects input (N, C) or (N, C, ...), got {x.shape}")
    axes = (0,) + tuple(range(2, x.ndim))  # every axis but the channels
    channel_shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    if training or running_mean is None:
        count = math.prod(x.shape[axis] for axis in axes)
        if count == 1:
            raise OpError(f"batch_norm: needs more than one value per channel in training, got input {x.shape}")
        if count == 0:  # an empty batch: an empty output, and no statistics to learn (PyTorch counts the batch)
            if running_mean is not None and num_batches_tracked is not None:
                num_batches_tracked.data += 1
            mean, var = np.zeros(channel_shape, dtype=x.dtype), np.ones(channel_shape, dtype=x.dtype)
            return _scale_and_shift((x - mean) / np.sqrt(var + eps), weight, bias, channel_shape)
        mean = x.mean(axis=axes, keepdims=True)
        var = x.var(axis=axes, keepdims=True)
        if running_mean is not None:
            with no_grad():
                _update_running_stats(
                    running_mean, running_var, mean.data, var.data, count, momentum, num_batches_tracked
                )
    else:
        mean = running_mean.reshape(channel_shape)
        var = running_var.reshape(channel_shape)
    return _scale_and_shift((x - mean) / (var + eps).sqrt(), weight, bias, channel_shape)


def _scale_and_shift(normalised: Tensor, weight, bias, channel_shape) -> Tensor:
    out = normalised
    if weight is not None:
        out = out * weight.reshape(channel_shape)
    if bias is not None:
        out = out + bias.reshape(channel_shape)
    return out


def _update_running_stats(running_mean, running_var, mean, var, count, momentum, num_batches_tracked) -> None:
    if num_batches_tracked is not None:
        num_batches_tracked.data += 1
    if momentum is None:  # cumulative moving average
        if num_batches_tracked is None:
            raise OpError("batch_norm: momentum=None (a cumulative average) needs num_batches_tracked")
        momentum = 1.0 / float(num_batches_tracked.data)
    unbiased = var.reshape(-1) * (count / (count - 1))
    running_mean.data = ((1 - momentum) * running_mean.data + momentum * mean.reshape(-1)).astype(running_mean.dtype)
    running_var.data = ((1 - momentum) * running_var.data + momentum * unbiased).astype(running_var.dtype)


def layer_norm(x: Tensor, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Normalise over the last dimensions (`normalized_shape`) of each example, then scale and shift."""
    x = as_tensor(x)
    normalized_shape = _shape(normalized_shape)
    if x.shape[x.ndim - len(normalized_shape) :] != normalized_shape:
        raise OpError(f"layer_norm: the input's last dimensions {x.shape} do not end with {normalized_shape}")
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    out = (x - mean) / (var + eps).sqrt()
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def scaled_dot_product_attention(
    query, key, value, is_causal: bool = False, dropout_p: float = 0.0, training: bool = True
) -> Tensor:
    """softmax(Q K^T / sqrt(d)) V over the last two axes (..., L, d). With `is_causal`, position i attends
    only to positions j <= i (the future is masked with -inf before the softmax, so it gets weight 0)."""
    d = query.shape[-1]
    scores = (query @ key.mT) * (1.0 / math.sqrt(d))
    if is_causal:
        length, source = scores.shape[-2:]
        future = np.triu(np.ones((length, source), dtype=bool), k=1)
        scores = where(future, -np.inf, scores)
    weights = scores.softmax(axis=-1)
    weights = dropout(weights, dropout_p, training)
    return weights @ value


# ---------------------------------------------------------------------------------------------------- recurrent cells


def _check_nonlinearity(owner: str, nonlinearity: str) -> None:
    """An Elman RNN's activation is tanh or relu (as in PyTorch); anything else is refused, not run as relu."""
    if nonlinearity not in ("tanh", "relu"):
        raise OpError(f"{owner}: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")


def rnn_cell(x, h, w_ih, w_hh, b_ih=None, b_hh=None, nonlinearity: str = "tanh") -> Tensor:
    """One step of an Elman RNN: h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh), act tanh or relu."""
    _check_nonlinearity("rnn_cell", nonlinearity)
    pre = linear(x, w_ih, b_ih) + linear(h, w_hh, b_hh)
    return pre.tanh() if nonlinearity == "tanh" else pre.relu()


def lstm_cell(x, h, c, w_ih, w_hh, b_ih=None, b_hh=None) -> tuple[Tensor, Tensor]:
    """One LSTM step, PyTorch's gate order (input, forget, cell, output). Returns (h', c')."""
    gates = linear(x, w_ih, b_ih) + linear(h, w_hh, b_hh)
    hidden = h.shape[-1]
    i = gates[..., :hidden].sigmoid()  # how much of the candidate to write
    f = gates[..., hidden : 2 * hidden].sigmoid()  # how much of the old cell to keep
    g = gates[..., 2 * hidden : 3 * hidden].tanh()  # the candidate
    o = gates[..., 3 * hidden :].sigmoid()  # how much of the cell to show
    c = f * c + i * g  # the cell path: gradients flow back through it multiplied only by f
    return o * c.tanh(), c


def gru_cell(x, h, w_ih, w_hh, b_ih=None, b_hh=None) -> Tensor:
    """One GRU step, PyTorch's gate order (reset, update, new): h' = (1 - z) n + z h."""
    x_part = linear(x, w_ih, b_ih)
    h_part = linear(h, w_hh, b_hh)
    hidden = h.shape[-1]
    r = (x_part[..., :hidden] + h_part[..., :hidden]).sigmoid()
    z = (x_part[..., hidden : 2 * hidden] + h_part[..., hidden : 2 * hidden]).sigmoid()
    n = (x_part[..., 2 * hidden :] + r * h_part[..., 2 * hidden :]).tanh()
    return (1 - z) * n + z * h


# ---------------------------------------------------------------------------------------------------- losses


def _check_reduction(name: str, reduction: str) -> None:
    if reduction not in ("mean", "sum", "none"):
        raise OpError(f"{name}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _reduce(name: str, loss: Tensor, reduction: str) -> Tensor:
    _check_reduction(name, reduction)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _same_shape(name: str, prediction: Tensor, target) -> Tensor:
    """Losses compare element with element. Different shapes would broadcast silently ((N, 1) against (N,)
    gives an (N, N) loss that still trains, badly), so they are an error here."""
    if not isinstance(target, Tensor):
        target = Tensor(target, dtype=prediction.dtype)
    elif target.dtype.kind in "biu":  # integer labels: numbers in the input's precision (NumPy would make float64)
        target = Tensor(target.data, dtype=prediction.dtype)
    if prediction.shape != target.shape:
        raise OpError(
            f"{name}: input has shape {prediction.shape} but target has shape {target.shape}; they must match "
            "(broadcasting them would compare every input with every target). Reshape one of them."
        )
    return target


def mse_loss(input: Tensor, target, reduction: str = "mean") -> Tensor:  # noqa: A002
    """Mean squared error: (input - target)^2. Its gradient, 2 (input - target), grows with the error."""
    target = _same_shape("mse_loss", input, target)
    return _reduce("mse_loss", (input - target) ** 2, reduction)


def l1_loss(input: Tensor, target, reduction: str = "mean") -> Tensor:  # noqa: A002
    """Mean absolute error: |input - target|. Its gradient is sign(error): the same size for every error."""
    target = _same_shape("l1_loss", input, target)
    return _reduce("l1_loss", (input - target).abs(), reduction)


def huber_loss(input: Tensor, target, reduction: str = "mean", delta: float = 1.0) -> Tensor:  # noqa: A002
    """Quadratic for small errors, linear for large ones: 0.5 e^2 where |e| < delta, else delta (|e| - delta/2).

    Its derivative is the *clipped error*, clip(e, -delta, delta): large errors still push, with bounded force.
    This is the error clipping of the DQN paper (Mnih et al. 2015). Clipping the error *before* squaring it,
    `(clip(e, -1, 1))**2`, is the well-known bug: there the derivative is zero wherever |e| > 1, so exactly
    the transitions with the largest errors stop teaching the network anything.
    """
    if not delta > 0:
        raise OpError(f"huber_loss: delta must be positive, got {delta}")
    target = _same_shape("huber_loss", input, target)
    return _reduce("huber_loss", _huber(input - target, delta), reduction)


def _huber(error: Tensor, delta: float) -> Tensor:
    """0.5 e^2 where |e| <= delta, delta (|e| - delta/2) beyond. The square is taken of the error clipped to
    [-delta, delta], which is the error itself wherever that branch is chosen: where it is not, the error may be
    infinite, and the branch not taken would still send back 0 * e = NaN."""
    size = error.abs()
    clipped = error.clip(-delta, delta)
    return where(size.data <= delta, 0.5 * clipped * clipped, delta * (size - 0.5 * delta))


def smooth_l1_loss(input: Tensor, target, reduction: str = "mean", beta: float = 1.0) -> Tensor:  # noqa: A002
    """Huber loss divided by `beta`: 0.5 e^2 / beta where |e| < beta, else |e| - beta/2. Derivative:
    clip(e / beta, -1, 1). (beta = 0 is the L1 loss.)"""
    if not beta >= 0:
        raise OpError(f"smooth_l1_loss: beta must be 0 or more, got {beta}")
    target = _same_shape("smooth_l1_loss", input, target)
    error = input - target
    if beta == 0:
        return _reduce("smooth_l1_loss", error.abs(), reduction)
    return _reduce("smooth_l1_loss", _huber(error, beta) / beta, reduction)


def binary_cross_entropy_with_logits(
    input: Tensor,
    target,
    weight=None,
    reduction: str = "mean",  # noqa: A002
    pos_weight=None,
) -> Tensor:
    """-[y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))] from the logit x, without computing sigmoid(x):

        loss = (1 - y) x + softplus(-x),    softplus(z) = log(1 + e^z)

    which never overflows and never takes log(0). Its gradient is sigmoid(x) - y. `pos_weight` multiplies
    the positive term: (1 - y) x + (1 + (pos_weight - 1) y) softplus(-x).
    """
    name = "binary_cross_entropy_with_logits"
    target = _same_shape(name, input, target)
    softplus_neg = softplus(-input, threshold=math.inf)  # = -log sigmoid(x), exact for every x
    if pos_weight is None:
        loss = (1 - target) * input + softplus_neg
    else:
        pos_weight = _elementwise_weight(name, "pos_weight", pos_weight, input)
        loss = (1 - target) * input + (1 + (pos_weight - 1) * target) * softplus_neg
    if weight is not None:
        loss = loss * _elementwise_weight(name, "weight", weight, input)
    return _reduce(name, loss, reduction)


def _elementwise_weight(name: str, what: str, weight, input: Tensor) -> Tensor:  # noqa: A002
    """A weight per element (`weight`, `pos_weight`), in the input's dtype. It must broadcast to the input's
    shape without enlarging it: an (N, 1) weight against an (N,) loss would make an (N, N) loss."""
    weight = as_tensor(weight, like=input)
    if weight.dtype != input.dtype:
        weight = weight.astype(input.dtype)
    try:
        fits = np.broadcast_shapes(input.shape, weight.shape) == input.shape
    except ValueError:
        fits = False
    if not fits:
        raise OpError(f"{name}: {what} of shape {weight.shape} does not broadcast to the input's shape {input.shape}")
    return weight


def binary_cross_entropy(input: Tensor, target, weight=None, reduction: str = "mean") -> Tensor:  # noqa: A002
    """-[y log p + (1 - y) log(1 - p)] from probabilities p; each log is clamped at -100, as in PyTorch.
    Prefer `binary_cross_entropy_with_logits`: a saturated sigmoid before this loss loses precision."""
    target = _same_shape("binary_cross_entropy", input, target)
    low, high = (np.min(input.data), np.max(input.data)) if input.data.size else (0, 1)
    if not (low >= 0 and high <= 1):  # (NaN fails this too)
        found = "NaN" if np.isnan(low) else f"values from {low} to {high}"
        raise OpError(
            f"binary_cross_entropy: input must hold probabilities in [0, 1], got {found}; "
            "for logits use binary_cross_entropy_with_logits"
        )
    loss = nn_ops.BinaryCrossEntropy.apply(input, target)
    if weight is not None:
        loss = loss * _elementwise_weight("binary_cross_entropy", "weight", weight, input)
    return _reduce("binary_cross_entropy", loss, reduction)


def _class_targets(name: str, input: Tensor, target, weight, ignore_index: int):  # noqa: A002
    """Check integer class targets against input (N, C, ...) or (C,).

    Returns the targets with ignored ones replaced by class 0 (so they can index), each target's weight
    (its class weight, 0 where ignored; None when every target weighs 1, the usual case), and the class axis.
    """
    target = _targets(name, target)
    class_axis = 0 if input.ndim == 1 else 1
    classes = input.shape[class_axis]
    expected = input.shape[:class_axis] + input.shape[class_axis + 1 :]
    if target.dtype.kind not in "iu":
        raise OpError(
            f"{name}: targets must be integer class indices, got {describe(target)} (for class "
            "probabilities, give a float target of the input's shape to cross_entropy)"
        )
    if target.shape != expected:
        raise OpError(f"{name}: input {input.shape} needs targets of shape {expected}, got {target.shape}")
    if weight is None and not 0 <= ignore_index < classes and target.size:
        # The common case, in fewer NumPy calls: when every target is a class, none can be ignore_index.
        if 0 <= target.min() and target.max() < classes:
            return target, None, class_axis
    ignored = target == ignore_index
    out_of_range = ~ignored & ((target < 0) | (target >= classes))
    if out_of_range.any():
        _out_of_range(name, target, out_of_range, classes, ignore_index)
    safe_target = np.where(ignored, 0, target)
    class_weight = np.ones(classes) if weight is None else _class_weight(name, weight, classes)
    target_weight = np.where(ignored, 0.0, class_weight[safe_target]).astype(input.dtype)
    return safe_target, target_weight, class_axis


def _row_weights(target: np.ndarray, target_weight: np.ndarray | None, reduction: str):
    """The weight of each prediction's loss for the op, and the total weight of the targets.

    "mean" divides by the total weight: folded into the weights, that saves a division op. When every target
    weighs 1 (no class weights, nothing ignored), the weight is one number for every row.
    """
    total = float(target.size if target_weight is None else target_weight.sum())
    scale = 1 / total if reduction == "mean" and total else 1.0
    return (scale if target_weight is None else target_weight.reshape(-1) * scale), total


def _out_of_range(name: str, target: np.ndarray, candidates: np.ndarray, classes: int, ignore_index: int):
    bad = target[candidates & ((target < 0) | (target >= classes))][0]
    raise OpError(
        f"{name}: target {bad} is out of range for {classes} classes "
        f"(targets must be in 0..{classes - 1}, or ignore_index={ignore_index})"
    )


def _array(value) -> np.ndarray:
    return np.asarray(value.data if isinstance(value, Tensor) else value)


def _check_class_scores(name: str, input: Tensor) -> None:  # noqa: A002
    if input.ndim == 0:
        raise OpError(f"{name}: input must hold class scores, shape (C,) or (N, C, ...); got a single number")


def _targets(name: str, target) -> np.ndarray:
    """The targets as an array (a list of lists of different lengths is refused by name)."""
    try:
        return _array(target)
    except ValueError as error:
        raise OpError(f"{name}: the targets do not form an array of one shape ({error})") from None


def _class_weight(name: str, weight, classes: int) -> np.ndarray:
    """The per-class `weight` as an array, checked: one number per class."""
    weight = _array(weight)
    if weight.shape != (classes,):
        raise OpError(f"{name}: weight must hold one number per class, shape ({classes},); got shape {weight.shape}")
    return weight


def _nan_if_nothing_counted(loss: Tensor, total_weight: float) -> Tensor:
    """A "mean" over targets of total weight 0 is 0/0: NaN, as in PyTorch, with a zero gradient (PyTorch's when
    every target is ignored). The loss was computed with weight 0 (gradient 0 everywhere); NaN is added as a
    constant, so none reaches it."""
    return loss if total_weight else loss + float("nan")


def nll_loss(input: Tensor, target, weight=None, ignore_index: int = -100, reduction: str = "mean") -> Tensor:  # noqa: A002
    """Negative log-likelihood: -input[n, target[n]] (times weight[target[n]]), from log-probabilities.

    input (N, C) or (N, C, d1, ...) or (C,); target integer classes of shape (N,) or (N, d1, ...) or ().
    Targets equal to `ignore_index` contribute nothing. "mean" divides by the total weight of the targets
    that are not ignored (as PyTorch), not by their count.
    """
    _check_class_scores("nll_loss", input)
    target, target_weight, class_axis = _class_targets("nll_loss", input, target, weight, ignore_index)
    _check_reduction("nll_loss", reduction)
    row_weight, total = _row_weights(target, target_weight, reduction)
    loss = nn_ops.NegativeLogLikelihood.apply(
        _classes_last(input, class_axis), target=target.reshape(-1), weight=row_weight, total=reduction != "none"
    )
    if reduction == "none":
        return loss if loss.shape == target.shape else loss.reshape(target.shape)
    return _nan_if_nothing_counted(loss, total) if reduction == "mean" else loss


def _classes_last(input: Tensor, class_axis: int) -> Tensor:
    """(N, C, d1, ...) or (C,) -> (M, C): one row of class scores per prediction."""
    if input.ndim == 2:
        return input
    if input.ndim < 2:
        return input.reshape(-1, input.shape[class_axis])
    axes = (0,) + tuple(range(2, input.ndim)) + (1,)
    return input.transpose(axes).reshape(-1, input.shape[1])


def cross_entropy(
    input: Tensor,  # noqa: A002
    target,
    weight=None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross-entropy from logits (unnormalised scores): -log softmax(input)[target], per prediction.

    Computed as logsumexp(x) - x[target] after subtracting the largest logit, so no logit is too large (one
    fused op, `leakygrad.engine.ops.nn.CrossEntropy`). The gradient with respect to the logits is
    softmax(input) - one_hot(target), times the target's weight (and divided by the total weight for "mean").

    input (N, C), (N, C, d1, ...) or (C,). Targets are integer classes of shape (N,), (N, d1, ...) or (), or
    class probabilities of the input's shape. `label_smoothing` = eps mixes the one-hot target with the
    uniform distribution: (1 - eps) one_hot + eps / C. `weight`, `ignore_index` and the reductions as PyTorch.
    """
    _check_class_scores("cross_entropy", input)
    if not 0 <= label_smoothing <= 1:
        raise OpError(f"cross_entropy: label_smoothing must be between 0 and 1, got {label_smoothing}")
    class_axis = 0 if input.ndim == 1 else 1
    classes = input.shape[class_axis]
    class_weight = None if weight is None else _class_weight("cross_entropy", weight, classes)

    def weighted_log_p():
        log_p = log_softmax(input, axis=class_axis)
        if class_weight is None:
            return log_p
        weight_shape = tuple(classes if axis == class_axis else 1 for axis in range(input.ndim))
        return log_p * class_weight.reshape(weight_shape).astype(input.dtype)

    if _targets("cross_entropy", target).dtype.kind == "f":  # class probabilities
        target = _same_shape("cross_entropy", input, target)
        if label_smoothing:
            target = target * (1 - label_smoothing) + label_smoothing / classes
        loss = -(weighted_log_p() * target).sum(axis=class_axis)
        if reduction == "mean":
            return loss.sum() / loss.size
        return _reduce("cross_entropy", loss, reduction)

    kept = _array(target) != ignore_index if label_smoothing else None
    target, target_weight, class_axis = _class_targets("cross_entropy", input, target, weight, ignore_index)
    _check_reduction("cross_entropy", reduction)
    row_weight, total = _row_weights(target, target_weight, reduction)
    summed = reduction != "none" and not label_smoothing  # the op sums the rows itself when that is all that is asked
    loss = nn_ops.CrossEntropy.apply(
        _classes_last(input, class_axis), target=target.reshape(-1), weight=row_weight, total=summed
    )
    if summed:
        return _nan_if_nothing_counted(loss, total) if reduction == "mean" else loss
    loss = loss if loss.shape == target.shape else loss.reshape(target.shape)
    if label_smoothing:
        # Smoothing adds eps times the cross-entropy with the uniform distribution: -sum_c w_c log p_c / C.
        # (ignored predictions are left out, not multiplied by 0: their log-probabilities may be -inf)
        scale = 1 / total if reduction == "mean" and total else 1.0
        smooth = where(kept, -weighted_log_p().sum(axis=class_axis) * (scale / classes), 0.0)
        loss = (1 - label_smoothing) * loss + label_smoothing * smooth
    if reduction == "none":
        return loss
    return _nan_if_nothing_counted(loss.sum(), total) if reduction == "mean" else loss.sum()
