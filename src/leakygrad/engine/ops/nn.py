"""The fused ops that layers need: convolution, pooling, and whole-sequence recurrences.

Linear
------
`Linear` is x W^T + b as one op: three ops' worth of work, one op's overhead.

Convolution
-----------
A convolution is one matrix product once every kernel-sized window of the image is copied into a row of its
own ("im2col"): rows (N*OH*OW, kh*kw*C) times the weight as a (kh*kw*C, O) matrix. Its gradients are two
more convolutions, each written as an op of its own, so that each op's backward is made of the others:

    y  = conv2d(x, w)                      forward
    dx = conv2d_input_grad(dy, w)          the "transposed convolution": each output's gradient spread back
                                           over the window it came from ("col2im", the adjoint of im2col)
    dw = conv2d_weight_grad(x, dy)         each window times the gradient of the output it produced

All three are linear in each input, and the adjoint of each is one of the others, so the family is closed
under differentiation: the gradient of a gradient is again one of these ops, to any order.

Backward without a graph. When the backward pass is not itself recorded (the usual `loss.backward()`, without
`create_graph=True`), nothing will differentiate the gradients, so the walk calls each op's `backward_arrays`:
the same derivative with the same NumPy functions, instead of applying one op per gradient (a small network's
step applies a dozen fewer ops, and each costs microseconds of Python).

`Im2Col` and `Col2Im` are also ops (an adjoint pair, each the other's backward), used by average pooling.
`MaxPool2d` scans the windows in place, and routes gradients with an adjoint pair of its own
(`MaxPoolScatter`, `MaxPoolGather`).

Layout. Images are (N, C, H, W), as in PyTorch. Internally the work is done channels-last, (N, H, W, C), where
every window copy is contiguous (several times faster in NumPy). Outputs are returned as (N, C, H, W) views of
channels-last memory; the next op reads them at full speed and nothing is copied back.

Recurrences (RNN, LSTM, GRU)
----------------------------
A recurrent layer written with one small Tensor op per gate and per time step pays Python's overhead a few
dozen times per step, forward and backward. `RNNSequence`, `LSTMSequence` and `GRUSequence` run the whole
sequence in one op: the forward loop and backpropagation through time (BPTT) are written out in NumPy, with
the input projections of all time steps done as one matrix product.

The price: their backward is NumPy, not Tensor operations, so it cannot itself be differentiated. For second
derivatives (`create_graph=True`) each fused op falls back to `composed`, the same recurrence written with
Tensor operations (the layers pass theirs in), and differentiates that instead.
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.lib.stride_tricks import as_strided

from leakygrad.engine.autograd import grad as autograd_grad
from leakygrad.engine.errors import NotTwiceDifferentiable, OpError
from leakygrad.engine.op import Op
from leakygrad.engine.ops.elementwise import keep_bits
from leakygrad.engine.ops.linalg import as_rows
from leakygrad.engine.ops.reductions import sum_over

# ---------------------------------------------------------------------------------------------------- linear


class Linear(Op):
    """y = x W^T + b, the fully connected layer: x (..., in), W (out, in), b (out,) -> y (..., out).

    The same function as x @ W.T + b, as one op instead of three (a transpose, a product, an add; and six
    backward): in a small network the cost of applying an op is a noticeable share of a training step.
    For G = dL/dy, with the leading axes of x and G flattened into rows:

        dL/dx = G W          dL/dW = G^T x          dL/db = the sum of the rows of G
    """

    name = "linear"

    def forward(self, x, w, b=None):
        rows = as_rows(x) @ w.T  # one product, however many leading axes x has
        if b is not None:
            rows += b
        return rows.reshape(x.shape[:-1] + w.shape[:1])

    def backward(self, grad):
        x, w = self.inputs[:2]
        return self._gradients(grad, x, w, row_sums=lambda rows: rows.sum(axis=0))

    def backward_arrays(self, grad):
        x, w = self.inputs[:2]
        return self._gradients(grad, x.data, w.data, row_sums=lambda rows: sum_over(rows, (0,)))

    def _gradients(self, grad, x, w, row_sums):
        """The three formulas above, on Tensors or on arrays alike."""
        want = self.needs_input_grad
        grad_rows = as_rows(grad)
        grad_x = grad @ w if want[0] else None
        grad_w = None
        if want[1]:
            grad_w = grad_rows.T @ as_rows(x)
        grad_b = row_sums(grad_rows) if len(want) == 3 and want[2] else None
        return (grad_x, grad_w, grad_b)[: len(want)]


# ---------------------------------------------------------------------------------------------------- windows


def window_output_size(size: int, kernel: int, stride: int, padding: int) -> int:
    """How many windows fit along one axis: floor((size + 2 padding - kernel) / stride) + 1."""
    return (size + 2 * padding - kernel) // stride + 1


@functools.lru_cache(maxsize=256)  # the same few shapes at every step: checked and computed once each
def _check_windows(name: str, shape, kernel_size, stride, padding) -> tuple[int, int]:
    if len(shape) != 4:
        raise OpError(f"{name}: expects images of shape (N, C, H, W), got shape {tuple(shape)}")
    (kh, kw), (sh, sw), (ph, pw) = kernel_size, stride, padding
    if min(kh, kw, sh, sw) < 1 or min(ph, pw) < 0:
        raise OpError(f"{name}: kernel {kernel_size} and stride {stride} must be >= 1, padding {padding} >= 0")
    out_h = window_output_size(shape[2], kh, sh, ph)
    out_w = window_output_size(shape[3], kw, sw, pw)
    if out_h < 1 or out_w < 1:
        raise OpError(
            f"{name}: a {kh}x{kw} kernel does not fit in a {shape[2]}x{shape[3]} image with padding {padding}: "
            "the output would be empty. Use a smaller kernel or more padding."
        )
    return out_h, out_w


@functools.lru_cache(maxsize=64)
def _kernel_offsets(kernel_size) -> tuple[tuple[int, tuple[int, int]], ...]:
    """The kernel offsets (i, j) in row-major order, numbered k = 0, 1, ...: the order windows are scanned."""
    kh, kw = kernel_size
    return tuple((k, divmod(k, kw)) for k in range(kh * kw))


def _at_offset(padded, offset, stride, out_size):
    """Pixel (i, j) of every window, as an (N, OH, OW, C) view of a padded channels-last image."""
    (i, j), (sh, sw), (out_h, out_w) = offset, stride, out_size
    return padded[:, i : i + sh * out_h : sh, j : j + sw * out_w : sw, :]


def _channels_last(x, padding, fill=0.0):
    """(N, C, H, W) -> (N, H + 2 ph, W + 2 pw, C), padded with `fill` (a view, no copy, when there is no padding)."""
    (ph, pw), (n, c, h, w) = padding, x.shape
    if ph == pw == 0:
        return x.transpose(0, 2, 3, 1)
    shape = (n, h + 2 * ph, w + 2 * pw, c)
    padded = np.full(shape, fill, dtype=x.dtype) if fill else np.zeros(shape, dtype=x.dtype)
    padded[:, ph : ph + h, pw : pw + w, :] = x.transpose(0, 2, 3, 1)
    return padded


def _channels_first(padded, padding, image_shape):
    """Cut the padding off a channels-last image and view it as (N, C, H, W)."""
    (ph, pw), (_, _, h, w) = padding, image_shape
    return padded[:, ph : ph + h, pw : pw + w, :].transpose(0, 3, 1, 2)


def _window_view(padded, kernel_size, stride, out_size):
    """Every window of a padded channels-last image as a read-only (N, OH, OW, kh, kw, C) view, no copy:
    one step along OH moves the window down `stride` rows, one step along kh moves down one row."""
    (kh, kw), (sh, sw), (n, _, _, c) = kernel_size, stride, padded.shape
    step_n, step_h, step_w, step_c = padded.strides
    shape = (n,) + tuple(out_size) + (kh, kw, c)
    strides = (step_n, sh * step_h, sw * step_w, step_h, step_w, step_c)
    if padded.flags.c_contiguous:  # the same view, built directly (as_strided takes a detour through Python)
        return np.ndarray(shape, padded.dtype, padded, 0, strides)
    return as_strided(padded, shape, strides, writeable=False)


def im2col(x, kernel_size, stride, padding):
    """(N, C, H, W) -> (N, OH, OW, kh, kw, C): every window, one per output position, zero-padded."""
    out_size = _check_windows("im2col", x.shape, kernel_size, stride, padding)
    padded = _channels_last(x, padding)
    if x.shape[1] > 1:  # one copy of the window view: NumPy copies each window row (kw*C values) in one go
        return np.ascontiguousarray(_window_view(padded, kernel_size, stride, out_size))
    # One channel: that inner run would be only kw values long, and one copy per kernel offset, whose inner
    # run is an image row, is about twice as fast.
    windows = np.empty((x.shape[0],) + out_size + tuple(kernel_size) + (x.shape[1],), dtype=x.dtype)
    for _, (i, j) in _kernel_offsets(kernel_size):
        windows[:, :, :, i, j, :] = _at_offset(padded, (i, j), stride, out_size)
    return windows


def col2im(windows, image_shape, kernel_size, stride, padding):
    """(N, OH, OW, kh, kw, C) -> (N, C, H, W): add each window back where it was taken (the adjoint of im2col).
    A pixel covered by several windows gets the sum of their values; the padding border is cut off."""
    out_size = _check_windows("col2im", image_shape, kernel_size, stride, padding)
    (ph, pw), (n, c, h, w) = padding, image_shape
    if windows.shape != (n,) + out_size + tuple(kernel_size) + (c,):
        raise OpError(f"col2im: windows of shape {windows.shape} do not come from images of shape {image_shape}")
    padded = np.zeros((n, h + 2 * ph, w + 2 * pw, c), dtype=windows.dtype)
    for _, (i, j) in _kernel_offsets(kernel_size):
        _at_offset(padded, (i, j), stride, out_size)[...] += windows[:, :, :, i, j, :]
    return _channels_first(padded, padding, image_shape)


class Im2Col(Op):
    """(N, C, H, W) -> (N, OH, OW, kh, kw, C): every window, one per output position (zero padding)."""

    name = "im2col"

    def __init__(self, kernel_size, stride, padding):
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def forward(self, x):
        return im2col(x, self.kernel_size, self.stride, self.padding)

    def backward(self, grad):
        (x,) = self.inputs
        return Col2Im.apply(
            grad, image_shape=x.shape, kernel_size=self.kernel_size, stride=self.stride, padding=self.padding
        )


class Col2Im(Op):
    """(N, OH, OW, kh, kw, C) -> (N, C, H, W): windows added back onto the image (the adjoint of Im2Col)."""

    name = "col2im"

    def __init__(self, image_shape, kernel_size, stride, padding):
        self.image_shape, self.kernel_size, self.stride, self.padding = image_shape, kernel_size, stride, padding

    def forward(self, windows):
        return col2im(windows, self.image_shape, self.kernel_size, self.stride, self.padding)

    def backward(self, grad):
        return Im2Col.apply(grad, kernel_size=self.kernel_size, stride=self.stride, padding=self.padding)


# ---------------------------------------------------------------------------------------------------- convolution


def _rows(y):
    """(N, O, OH, OW) -> (N*OH*OW, O): one row per output position (free when y is channels-last in memory)."""
    return y.transpose(0, 2, 3, 1).reshape(-1, y.shape[1])


def _kernel_matrix(w):
    """(O, C, kh, kw) -> (kh*kw*C, O): the weight in the windows' (kh, kw, C) order."""
    return w.transpose(2, 3, 1, 0).reshape(-1, w.shape[0])


def _as_images(rows, n, out_size):
    """(N*OH*OW, O) -> (N, O, OH, OW), a view of channels-last memory."""
    return rows.reshape((n,) + tuple(out_size) + (rows.shape[1],)).transpose(0, 3, 1, 2)


def _window_rows(windows):
    """(N, OH, OW, kh, kw, C) -> (N*OH*OW, kh*kw*C): one row per window (sizes spelled out: an empty batch has no
    -1 to infer)."""
    n, out_h, out_w, kh, kw, c = windows.shape
    return windows.reshape(n * out_h * out_w, kh * kw * c)


def _is_channels_last(x: np.ndarray) -> bool:
    return x.transpose(0, 2, 3, 1).flags.c_contiguous


class ChannelsLast(Op):
    """The same (N, C, H, W) values, stored channels-last in memory (a copy only if they are not already).
    A change of layout, not of value: the gradient passes through unchanged."""

    name = "channels_last"

    def forward(self, x):
        return in_channels_last(x)

    def backward(self, grad):
        return grad


def in_channels_last(x: np.ndarray) -> np.ndarray:
    """(N, C, H, W) values stored channels-last: x itself if they already are, else a copy."""
    if _is_channels_last(x):
        return x
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


class Conv2d(Op):
    """y[n, o, i, j] = b[o] + sum over c, di, dj of w[o, c, di, dj] x[n, c, i s + di - p, j s + dj - p].

    Inputs x (N, C, H, W), w (O, C, kh, kw) and optionally b (O,); output (N, O, OH, OW).
    """

    name = "conv2d"

    def __init__(self, stride, padding):
        self.stride, self.padding = stride, padding

    def forward(self, x, w, b=None):
        if x.ndim != 4 or w.ndim != 4 or x.shape[1] != w.shape[1]:
            raise OpError(
                f"conv2d: expects input (N, C, H, W) and weight (O, C, kh, kw) with the same C, got "
                f"input {x.shape} and weight {w.shape}"
            )
        if b is not None and b.shape != (w.shape[0],):
            raise OpError(f"conv2d: bias must hold one value per output channel, shape ({w.shape[0]},); got {b.shape}")
        self.windows = im2col(x, w.shape[2:], self.stride, self.padding)  # kept for the weight gradient
        n, out_h, out_w = self.windows.shape[:3]
        rows = _window_rows(self.windows) @ _kernel_matrix(w)
        if b is not None:
            rows += b
        return _as_images(rows, n, (out_h, out_w))

    def backward(self, grad):
        x, w = self.inputs[:2]
        want = self.needs_input_grad
        options = dict(stride=self.stride, padding=self.padding)
        if not _is_channels_last(grad.data):  # both gradients read it channels-last: lay it out so once
            grad = ChannelsLast.apply(grad)
        grad_x = grad_w = grad_b = None
        if want[0]:
            grad_x = Conv2dInputGrad.apply(grad, w, image_shape=x.shape, **options)
        if want[1]:
            grad_w = Conv2dWeightGrad.apply(x, grad, kernel_size=w.shape[2:], windows=self.windows, **options)
        if len(want) == 3 and want[2]:
            grad_b = grad.sum(axis=(0, 2, 3))  # the bias is added at every output position
        return (grad_x, grad_w, grad_b)[: len(want)]

    def backward_arrays(self, grad):
        """dx, dw, db as arrays: the functions that the gradient ops' forwards call, called directly."""
        x, w = self.inputs[0].data, self.inputs[1].data
        want = self.needs_input_grad
        grad = in_channels_last(grad)
        grad_x = conv2d_input_grad(grad, w, x.shape, self.stride, self.padding) if want[0] else None
        grad_w = None
        if want[1]:
            grad_w = conv2d_weight_grad(x, grad, w.shape[2:], self.stride, self.padding, self.windows)
        grad_b = sum_over(grad, (0, 2, 3)) if len(want) == 3 and want[2] else None
        return (grad_x, grad_w, grad_b)[: len(want)]


class Conv2dInputGrad(Op):
    """The gradient of conv2d with respect to its input, (g, w) -> dx: each output position's gradient,
    times the kernel, spread back over the window it came from (a "transposed convolution")."""

    name = "conv2d_input_grad"

    def __init__(self, image_shape, stride, padding):
        self.image_shape, self.stride, self.padding = image_shape, stride, padding

    def forward(self, g, w):
        return conv2d_input_grad(g, w, self.image_shape, self.stride, self.padding)

    def backward(self, grad):
        g, w = self.inputs
        options = dict(stride=self.stride, padding=self.padding)
        # Linear in g: its adjoint is the convolution itself. Linear in w: the weight gradient of grad and g.
        grad_g = grad_w = None
        if self.needs_input_grad[0]:
            grad_g = Conv2d.apply(grad, w, **options)
        if self.needs_input_grad[1]:
            grad_w = Conv2dWeightGrad.apply(grad, g, kernel_size=w.shape[2:], **options)
        return grad_g, grad_w


def conv2d_input_grad(g, w, image_shape, stride, padding):
    """dx for y = conv2d(x, w): each row of g times the kernel matrix, put back with col2im; for stride 1, the
    same as one convolution of g (`_full_correlation`), which is faster."""
    kernel_size = w.shape[2:]
    if stride == (1, 1) and all(p < k for p, k in zip(padding, kernel_size)):
        return _full_correlation(g, w, padding)
    n, _, out_h, out_w = g.shape
    windows = (_rows(g) @ _kernel_matrix(w).T).reshape((n, out_h, out_w) + kernel_size + (w.shape[1],))
    return col2im(windows, image_shape, kernel_size, stride, padding)


def _full_correlation(g, w, padding):
    """The input gradient of a stride-1 convolution, computed as a convolution itself:

        dx[n, c, y, x] = sum over o, i, j of g[n, o, y + p - i, x + p - j] w[o, c, i, j]

    that is, g padded by k - 1 - p on each side, convolved with the kernel flipped in space and with its
    in and out channels swapped. One im2col and one product, instead of a product and col2im, whose sum of
    overlapping windows NumPy does in short strided pieces (about twice as slow). Needs p <= k - 1.
    """
    (ph, pw), (kh, kw) = padding, w.shape[2:]
    flipped = w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3)  # (C, O, kh, kw)
    windows = im2col(g, (kh, kw), (1, 1), (kh - 1 - ph, kw - 1 - pw))  # (N, H, W, kh, kw, O)
    n, h, width = windows.shape[:3]
    return _as_images(_window_rows(windows) @ _kernel_matrix(flipped), n, (h, width))


class Conv2dWeightGrad(Op):
    """The gradient of conv2d with respect to its weight, (x, g) -> dw: the sum over every output position of
    its input window times its gradient. `windows` may pass im2col(x), already computed by the forward."""

    name = "conv2d_weight_grad"

    def __init__(self, kernel_size, stride, padding, windows=None):
        self.kernel_size, self.stride, self.padding, self.windows = tuple(kernel_size), stride, padding, windows

    def forward(self, x, g):
        windows, self.windows = self.windows, None  # not needed again: do not keep it alive with the graph
        return conv2d_weight_grad(x, g, self.kernel_size, self.stride, self.padding, windows)

    def backward(self, grad):
        x, g = self.inputs
        options = dict(stride=self.stride, padding=self.padding)
        # Linear in x: the input gradient of g with kernel grad. Linear in g: the convolution of x with grad.
        grad_x = grad_g = None
        if self.needs_input_grad[0]:
            grad_x = Conv2dInputGrad.apply(g, grad, image_shape=x.shape, **options)
        if self.needs_input_grad[1]:
            grad_g = Conv2d.apply(x, grad, **options)
        return grad_x, grad_g


def conv2d_weight_grad(x, g, kernel_size, stride, padding, windows=None):
    """dw for y = conv2d(x, w): the input windows (im2col(x), unless the forward passes them) times g's rows."""
    if windows is None:
        windows = im2col(x, kernel_size, stride, padding)
    kh, kw = kernel_size
    grad_kernel = windows.reshape(-1, windows.shape[-1] * kh * kw).T @ _rows(g)  # (kh*kw*C, O)
    # laid out as the weight is (a copy the weight's .grad would need anyway: it must not be a view)
    return np.ascontiguousarray(grad_kernel.reshape(kh, kw, x.shape[1], g.shape[1]).transpose(3, 2, 0, 1))


# ---------------------------------------------------------------------------------------------------- pooling


class MaxPool2d(Op):
    """The largest value of each window: (N, C, H, W) -> (N, C, OH, OW). Padding counts as -inf.

    Forward scans the kernel offsets, keeping the running maximum and which offset holds it (`winner`: the
    first maximum, or a NaN, PyTorch's rule). Backward sends each gradient to its window's winner and zero to
    the rest of the window, through `MaxPoolScatter`, whose own backward is `MaxPoolGather`.
    """

    name = "max_pool2d"

    def __init__(self, kernel_size, stride, padding):
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def forward(self, x):
        out_size = _check_windows(self.name, x.shape, self.kernel_size, self.stride, self.padding)
        padded = _channels_last(x, self.padding, fill=-np.inf)
        offsets = _kernel_offsets(self.kernel_size)
        best = _at_offset(padded, (0, 0), self.stride, out_size).copy()
        self.winner = np.zeros(best.shape, dtype=np.int8 if len(offsets) < 128 else np.int32)
        for k, offset in offsets[1:]:
            candidate = _at_offset(padded, offset, self.stride, out_size)
            wins = candidate > best  # strictly greater: a tie stays with the first
            self.winner += wins * (k - self.winner)  # where it wins, winner = k (arithmetic beats masked copies)
            np.maximum(best, candidate, out=best)  # propagates NaN
        if best.size and np.isnan(np.maximum.reduce(best, axis=None)):  # rare: a window holding NaN (max keeps it).
            # PyTorch's rule: the (last) NaN is the winner.
            for k, offset in offsets:
                self.winner[np.isnan(_at_offset(padded, offset, self.stride, out_size))] = k
        if self.padding != (0, 0) and best.size and np.fmin.reduce(best, axis=None) == -np.inf:
            self._first_pixel_inside_wins(best == -np.inf, x.shape[2:], out_size)  # rare, as above
        return best.transpose(0, 3, 1, 2)

    def _first_pixel_inside_wins(self, stuck, image_size, out_size):
        """A window whose pixels inside the image are all -inf ties with its padding, which the scan may have made
        its winner. PyTorch's rule: the window's first pixel inside the image wins (and gets the gradient)."""
        (ph, pw), (sh, sw), (h, w) = self.padding, self.stride, image_size
        top, left = np.arange(out_size[0]) * sh - ph, np.arange(out_size[1]) * sw - pw  # image row, column of (0, 0)
        for k, (i, j) in reversed(_kernel_offsets(self.kernel_size)):  # the first offset inside is written last
            inside = ((0 <= top + i) & (top + i < h))[:, None] & ((0 <= left + j) & (left + j < w))[None, :]
            self.winner[stuck & inside[None, :, :, None]] = k

    def backward(self, grad):
        (x,) = self.inputs
        return MaxPoolScatter.apply(grad, pool=self, image_shape=x.shape)

    def backward_arrays(self, grad):
        return scatter_to_winners(grad, self, self.inputs[0].shape)

    def overlapping(self) -> bool:
        return self.stride[0] < self.kernel_size[0] or self.stride[1] < self.kernel_size[1]


class MaxPoolScatter(Op):
    """(N, C, OH, OW) -> (N, C, H, W): each value put at its window's winner, zero elsewhere."""

    name = "max_pool2d_scatter"

    def __init__(self, pool: MaxPool2d, image_shape):
        self.pool, self.image_shape = pool, image_shape

    def forward(self, values):
        return scatter_to_winners(values, self.pool, self.image_shape)

    def backward(self, grad):
        return MaxPoolGather.apply(grad, pool=self.pool)


def scatter_to_winners(values, pool: MaxPool2d, image_shape):
    """(N, C, OH, OW) -> (N, C, H, W): each value put at its window's winner in `pool`, zero elsewhere."""
    (ph, pw), (sh, sw), (n, c, h, w) = pool.padding, pool.stride, image_shape
    values = values.transpose(0, 2, 3, 1)
    out_h, out_w = values.shape[1:3]
    tiled = pool.stride == pool.kernel_size and (h + 2 * ph, w + 2 * pw) == (out_h * sh, out_w * sw)
    # Windows that tile the image leave no pixel unwritten below: no need to fill it with zeros first.
    padded = (np.empty if tiled else np.zeros)((n, h + 2 * ph, w + 2 * pw, c), dtype=values.dtype)
    overlapping = pool.overlapping()  # a pixel may win several windows: add, not put
    for k, offset in _kernel_offsets(pool.kernel_size):
        target = _at_offset(padded, offset, pool.stride, (out_h, out_w))
        # where(winner == k, values, 0) as a bitwise AND (keep_bits: np.where's result without its branches)
        wins = (pool.winner == k).view(np.int8)
        np.negative(wins, out=wins)  # True -> -1: all bits set
        if overlapping:
            target += keep_bits(values, wins)
        else:  # each pixel is in one window only: put, in place
            keep_bits(values, wins, out=target)
    return _channels_first(padded, pool.padding, image_shape)


class MaxPoolGather(Op):
    """(N, C, H, W) -> (N, C, OH, OW): the value at each window's winner (the adjoint of MaxPoolScatter)."""

    name = "max_pool2d_gather"

    def __init__(self, pool: MaxPool2d):
        self.pool = pool

    def forward(self, image):
        pool = self.pool
        padded = _channels_last(image, pool.padding)
        out = np.zeros(pool.winner.shape, dtype=image.dtype)
        for k, offset in _kernel_offsets(pool.kernel_size):
            out = np.where(pool.winner == k, _at_offset(padded, offset, pool.stride, out.shape[1:3]), out)
        return out.transpose(0, 3, 1, 2)

    def backward(self, grad):
        (image,) = self.inputs
        return MaxPoolScatter.apply(grad, pool=self.pool, image_shape=image.shape)


# ---------------------------------------------------------------------------------------------------- losses


def _weighted(losses: np.ndarray, weight) -> np.ndarray:
    """Each row's loss times its weight: one number for every row (a nonzero one), or an array, one per row.
    A row of weight 0 (an ignored target) counts nothing, even when its loss is not finite (inf * 0 is NaN)."""
    if not isinstance(weight, np.ndarray):
        return losses * weight
    with np.errstate(invalid="ignore"):
        return np.where(weight != 0, losses * weight, 0.0)


def _column(weight):
    """The row weights as a column, to scale whole rows of a gradient (a single number as it is)."""
    return weight[:, None] if isinstance(weight, np.ndarray) else weight


class CrossEntropy(Op):
    """Cross-entropy of each row of logits x (M, C) with its target class, times the row's weight:

        loss[m] = weight[m] (logsumexp(x[m]) - x[m, target[m]])          (= -weight[m] log softmax(x[m])[target])

    and with `total=True` their sum, a single number. One op instead of log_softmax, a pick and a sum: a loss
    is computed once per step, but for small models its handful of ops is a noticeable share of the step.
    `weight` is one number per row, or one number for every row (the usual case: 1, or 1/M for a mean).
    Backward: weight (softmax(x) - one_hot(target)), times the incoming gradient.
    """

    name = "cross_entropy"

    def __init__(self, target: np.ndarray, weight: np.ndarray | float, total: bool = False):
        self.target, self.weight, self.total = target, weight, total

    def forward(self, x):
        shifted = x - x.max(axis=1, keepdims=True)  # the same result, and exp cannot overflow
        exp = np.exp(shifted)
        sums = exp.sum(axis=1, keepdims=True)
        self.softmax = exp / sums  # kept for backward
        losses = _weighted(np.log(sums[:, 0]) - shifted[np.arange(x.shape[0]), self.target], self.weight)
        return losses.sum() if self.total else losses

    def backward(self, grad):
        (x,) = self.inputs
        row_grad = grad if self.total else grad.reshape(-1, 1)  # d(result)/d(loss[m]): one number, or a column
        one_hot = np.zeros(x.shape, dtype=x.dtype)
        one_hot[np.arange(x.shape[0]), self.target] = 1
        return (x.softmax(axis=1) - one_hot) * (row_grad * _column(self.weight))  # softmax(x): an op of x

    def backward_arrays(self, grad):
        # The same formula on the forward's softmax, in place: one step instead of three ops.
        row_grad = grad if self.total else grad.reshape(-1, 1)
        result = self.softmax.copy()
        result[np.arange(result.shape[0]), self.target] -= 1
        result *= row_grad * _column(self.weight)
        return result


class NegativeLogLikelihood(Op):
    """-weight[m] x[m, target[m]] for each row of log-probabilities x (M, C), and with `total=True` their sum.

    Only each row's target entry is read: a -inf at another class (a masked one) does not matter, and a row of
    weight 0 (an ignored target) counts nothing, whatever it holds. `weight` as in `CrossEntropy`.
    Backward: -weight[m] at (m, target[m]), zero elsewhere, times the incoming gradient.
    """

    name = "nll_loss"

    def __init__(self, target: np.ndarray, weight: np.ndarray | float, total: bool = False):
        self.target, self.weight, self.total = target, weight, total

    def forward(self, x):
        losses = _weighted(-x[np.arange(x.shape[0]), self.target], self.weight)
        return losses.sum() if self.total else losses

    def _slopes(self, x) -> np.ndarray:
        slopes = np.zeros(x.shape, dtype=x.dtype)
        slopes[np.arange(x.shape[0]), self.target] = -self.weight
        return slopes

    def backward(self, grad):
        (x,) = self.inputs
        return (grad if self.total else grad.reshape(-1, 1)) * self._slopes(x)  # linear in x: constant slopes

    def backward_arrays(self, grad):
        return (grad if self.total else grad.reshape(-1, 1)) * self._slopes(self.inputs[0])


class BinaryCrossEntropy(Op):
    """-[y log p + (1 - y) log(1 - p)] for probabilities p and targets y, elementwise; each log is clamped at
    -100, as in PyTorch, so that a prediction of exactly 0 or 1 gives a finite loss.

    Backward, also as PyTorch: d/dp = (p - y) / (p (1 - p)), its denominator kept >= 1e-12. Written as the
    derivatives of the two clamped logs, a saturated prediction (p exactly 1, which a float32 sigmoid reaches
    beyond x = 17, or exactly 0, below x = -104) would get 0 / 0 = NaN there, and the NaN would reach every
    weight. d/dy = log(1 - p) - log p, clamped as in the forward: the exact derivative of the loss as computed
    (PyTorch's is not clamped, so it is inf where p is 0 or 1).
    """

    name = "binary_cross_entropy"

    def forward(self, p, y):
        with np.errstate(divide="ignore"):  # log 0 = -inf: clamped
            log_p, log_not_p = np.maximum(np.log(p), -100), np.maximum(np.log1p(-p), -100)
        return -(y * log_p + (1 - y) * log_not_p)

    def backward(self, grad):
        p, y = self.inputs
        grad_p = grad_y = None
        if self.needs_input_grad[0]:
            grad_p = grad * (p - y) / (p * (1 - p)).clip(min=1e-12)
        if self.needs_input_grad[1]:
            grad_y = grad * ((1 - p).log().clip(min=-100) - p.log().clip(min=-100))
        return grad_p, grad_y


# ---------------------------------------------------------------------------------------------------- recurrences


class FusedRecurrence(Op):
    """A whole-sequence recurrence whose backward (BPTT) is written in NumPy, for speed.

    Subclasses write `forward` and `backward_arrays` (NumPy arrays in and out), which the walk calls when the
    backward pass is not recorded. `composed`, if given, is the same function written with Tensor operations;
    when the backward pass is being recorded for a second derivative, it is differentiated instead (`backward`).
    """

    def __init__(self, composed=None):
        self.composed = composed

    def backward_arrays(self, grad: np.ndarray) -> tuple:
        raise NotImplementedError

    def backward(self, grad):
        if self.composed is None:
            raise NotTwiceDifferentiable(
                f"{self.name}: this fused op computes its backward in NumPy, so it cannot be differentiated "
                "twice, and no composed (Tensor-op) version was given to fall back on. Use the layer with "
                "fused=False for second derivatives."
            )
        wanted = [x for x, needed in zip(self.inputs, self.needs_input_grad) if needed]
        output = self.composed(*self.inputs)
        grads = iter(autograd_grad(output, wanted, grad_outputs=grad, create_graph=True, allow_unused=True))
        return tuple(next(grads) if needed else None for needed in self.needs_input_grad)


def _check_recurrence(name, x, h0, w_ih, w_hh, b_ih, b_hh, gates: int) -> None:
    """Shapes: x (T, N, I), h0 (N, H), w_ih (gates*H, I), w_hh (gates*H, H), biases (gates*H,)."""
    if x.ndim != 3:
        raise OpError(f"{name}: expects a sequence of shape (T, N, input_size), got {x.shape}")
    _, n, i = x.shape
    h, g = w_hh.shape[-1], gates * w_hh.shape[-1]
    expected = {"h0": (n, h), "w_ih": (g, i), "w_hh": (g, h), "b_ih": (g,), "b_hh": (g,)}
    for label, array in zip(expected, (h0, w_ih, w_hh, b_ih, b_hh)):
        if array.shape != expected[label]:
            raise OpError(
                f"{name}: {label} has shape {array.shape}, expected {expected[label]} "
                f"(sequence {x.shape}, hidden size {h})"
            )


def _sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + e^-x) computed as (1 + tanh(x / 2)) / 2: the same function, and tanh never overflows."""
    out = np.tanh(0.5 * x)
    out += 1
    out *= 0.5
    return out


def _input_projection(x, w_ih, bias):
    """x_t W_ih^T + bias for every time step at once: one (T*N, I) @ (I, G) matrix product, not T small ones."""
    t, n, i = x.shape
    return (x.reshape(t * n, i) @ w_ih.T + bias).reshape(t, n, w_ih.shape[0])  # (not -1: N may be 0)


def _previous_states(h0, hs):
    """h_{t-1} for t = 0..T-1: the initial state, then every state but the last."""
    return np.concatenate([h0[None], hs[:-1]], axis=0)


def _weight_grads(d_pre, x, h_prev, want_w_ih: bool, want_w_hh: bool, want_b: bool):
    """Gradients of W_ih, W_hh and the biases from the pre-activation gradients of all steps: three big
    matrix products instead of one small product per step."""
    g = d_pre.shape[-1]
    flat = d_pre.reshape(-1, g)
    d_w_ih = flat.T @ x.reshape(-1, x.shape[-1]) if want_w_ih else None
    d_w_hh = flat.T @ h_prev.reshape(-1, h_prev.shape[-1]) if want_w_hh else None
    d_b = sum_over(flat, (0,)) if want_b else None
    return d_w_ih, d_w_hh, d_b


class RNNSequence(FusedRecurrence):
    """Elman RNN over a whole sequence: h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), act tanh or relu.

    Inputs x (T, N, I), h0 (N, H), w_ih (H, I), w_hh (H, H), b_ih (H,), b_hh (H,). Output: all states (T, N, H).
    """

    name = "rnn_sequence"

    def __init__(self, nonlinearity: str = "tanh", composed=None):
        super().__init__(composed)
        if nonlinearity not in ("tanh", "relu"):
            raise OpError(f"rnn: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        self.nonlinearity = nonlinearity

    def forward(self, x, h0, w_ih, w_hh, b_ih, b_hh):
        _check_recurrence(self.name, x, h0, w_ih, w_hh, b_ih, b_hh, gates=1)
        self.x_w = _input_projection(x, w_ih, b_ih + b_hh)
        hs = np.empty((x.shape[0],) + h0.shape, dtype=x.dtype)
        h = h0
        for t in range(x.shape[0]):
            pre = self.x_w[t] + h @ w_hh.T
            h = np.tanh(pre, out=hs[t]) if self.nonlinearity == "tanh" else np.maximum(pre, 0, out=hs[t])
        return hs

    def backward_arrays(self, grad):
        x, h0, w_ih, w_hh, _, _ = (t.data for t in self.inputs)
        hs = self.output.data
        d_pre = np.empty_like(hs)
        d_h = np.zeros_like(h0)  # gradient reaching h_t from step t+1
        for t in reversed(range(x.shape[0])):
            d_h = d_h + grad[t]
            if self.nonlinearity == "tanh":
                d_pre[t] = d_h * (1 - hs[t] * hs[t])  # tanh' = 1 - tanh^2
            else:
                d_pre[t] = np.where(hs[t] > 0, d_h, 0)  # relu' = 1 where active
            d_h = d_pre[t] @ w_hh
        want = self.needs_input_grad
        d_x = (d_pre.reshape(-1, d_pre.shape[-1]) @ w_ih).reshape(x.shape) if want[0] else None
        d_w_ih, d_w_hh, d_b = _weight_grads(d_pre, x, _previous_states(h0, hs), want[2], want[3], any(want[4:]))
        return d_x, d_h, d_w_ih, d_w_hh, d_b, d_b  # b_ih and b_hh enter as a sum: the same gradient


class LSTMSequence(FusedRecurrence):
    """LSTM over a whole sequence, PyTorch's equations and gate order (input, forget, cell, output):

        i, f, g, o = split(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)      (4 blocks of H)
        c_t = sigmoid(f) c_{t-1} + sigmoid(i) tanh(g)
        h_t = sigmoid(o) tanh(c_t)

    Inputs x (T, N, I), h0, c0 (N, H), w_ih (4H, I), w_hh (4H, H), b_ih, b_hh (4H,). One op has one output,
    so the output stacks both sequences of states: (2, T, N, H), [0] the h_t and [1] the c_t.
    """

    name = "lstm_sequence"

    def forward(self, x, h0, c0, w_ih, w_hh, b_ih, b_hh):
        _check_recurrence(self.name, x, h0, w_ih, w_hh, b_ih, b_hh, gates=4)
        if c0.shape != h0.shape:
            raise OpError(f"{self.name}: c0 has shape {c0.shape}, expected {h0.shape} (the shape of h0)")
        steps, hidden = x.shape[0], h0.shape[1]
        x_w = _input_projection(x, w_ih, b_ih + b_hh)
        self.gates = np.empty_like(x_w)  # activated gates of every step, kept for backward
        self.tanh_c = np.empty((steps,) + h0.shape, dtype=x.dtype)
        states = np.empty((2, steps) + h0.shape, dtype=x.dtype)
        hs, cs = states[0], states[1]
        h, c = h0, c0
        for t in range(steps):
            gates = np.matmul(h, w_hh.T, out=self.gates[t])
            gates += x_w[t]
            i, f, g, o = (gates[:, k * hidden : (k + 1) * hidden] for k in range(4))
            gates[:, : 2 * hidden] = _sigmoid(gates[:, : 2 * hidden])  # i and f, side by side: one call
            g[...], o[...] = np.tanh(g), _sigmoid(o)  # (in place on these strided views would be slower)
            c = np.multiply(f, c, out=cs[t])
            c += i * g
            np.tanh(c, out=self.tanh_c[t])
            h = np.multiply(o, self.tanh_c[t], out=hs[t])
        return states

    def backward_arrays(self, grad):
        x, h0, c0, w_ih, w_hh, _, _ = (t.data for t in self.inputs)
        states = self.output.data
        hs, cs = states[0], states[1]
        hidden = h0.shape[1]
        d_pre = np.empty_like(self.gates)  # gradients of the gate pre-activations, all steps
        d_h = np.zeros_like(h0)  # what reaches h_t and c_t from step t+1
        d_c = np.zeros_like(c0)
        cell_states_used = grad[1].any()  # usually only the h_t are: skip adding zeros at every step
        for t in reversed(range(x.shape[0])):
            i, f, g, o = (self.gates[t, :, k * hidden : (k + 1) * hidden] for k in range(4))
            tanh_c, c_prev = self.tanh_c[t], (cs[t - 1] if t > 0 else c0)
            d_h += grad[0, t]
            if cell_states_used:
                d_c += grad[1, t]
            d_c += d_h * o * (1 - tanh_c * tanh_c)  # through h_t = o tanh(c_t)
            d = d_pre[t]
            d[:, :hidden] = d_c * g * i * (1 - i)  # sigmoid' = s (1 - s)
            d[:, hidden : 2 * hidden] = d_c * c_prev * f * (1 - f)
            d[:, 2 * hidden : 3 * hidden] = d_c * i * (1 - g * g)  # tanh' = 1 - tanh^2
            d[:, 3 * hidden :] = d_h * tanh_c * o * (1 - o)
            d_h = d @ w_hh
            d_c *= f  # the cell path: multiplied by the forget gate, and nothing else
        want = self.needs_input_grad
        d_x = (d_pre.reshape(-1, d_pre.shape[-1]) @ w_ih).reshape(x.shape) if want[0] else None
        d_w_ih, d_w_hh, d_b = _weight_grads(d_pre, x, _previous_states(h0, hs), want[3], want[4], any(want[5:]))
        return d_x, d_h, d_c, d_w_ih, d_w_hh, d_b, d_b


class GRUSequence(FusedRecurrence):
    """GRU over a whole sequence, PyTorch's equations and gate order (reset, update, new):

        r = sigmoid(x W_ir^T + b_ir + h W_hr^T + b_hr)      z = the same with the z blocks
        n = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn))
        h_t = (1 - z) n + z h_{t-1}

    Inputs x (T, N, I), h0 (N, H), w_ih (3H, I), w_hh (3H, H), b_ih, b_hh (3H,). Output: all states (T, N, H).
    """

    name = "gru_sequence"

    def forward(self, x, h0, w_ih, w_hh, b_ih, b_hh):
        _check_recurrence(self.name, x, h0, w_ih, w_hh, b_ih, b_hh, gates=3)
        steps, hidden = x.shape[0], h0.shape[1]
        x_w = _input_projection(x, w_ih, b_ih)
        self.gates = np.empty_like(x_w)  # r, z, n of every step
        self.h_n = np.empty((steps,) + h0.shape, dtype=x.dtype)  # h W_hn^T + b_hn, which r multiplies
        hs = np.empty((steps,) + h0.shape, dtype=x.dtype)
        h = h0
        for t in range(steps):
            h_w = h @ w_hh.T + b_hh
            r, z, n = (self.gates[t, :, k * hidden : (k + 1) * hidden] for k in range(3))
            r[...] = _sigmoid(x_w[t, :, :hidden] + h_w[:, :hidden])
            z[...] = _sigmoid(x_w[t, :, hidden : 2 * hidden] + h_w[:, hidden : 2 * hidden])
            self.h_n[t] = h_w[:, 2 * hidden :]
            n[...] = np.tanh(x_w[t, :, 2 * hidden :] + r * self.h_n[t])
            h = np.add(n, z * (h - n), out=hs[t])  # (1 - z) n + z h
        return hs

    def backward_arrays(self, grad):
        x, h0, w_ih, w_hh, _, _ = (t.data for t in self.inputs)
        hs = self.output.data
        hidden = h0.shape[1]
        h_prev = _previous_states(h0, hs)
        d_x_pre = np.empty_like(self.gates)  # gradients of x W_ih^T + b_ih, all steps
        d_h_pre = np.empty_like(self.gates)  # gradients of h W_hh^T + b_hh, all steps
        d_h = np.zeros_like(h0)
        for t in reversed(range(x.shape[0])):
            r, z, n = (self.gates[t, :, k * hidden : (k + 1) * hidden] for k in range(3))
            d_h = d_h + grad[t]
            d_n = d_h * (1 - z) * (1 - n * n)  # through tanh
            d_z = d_h * (h_prev[t] - n) * z * (1 - z)
            d_r = d_n * self.h_n[t] * r * (1 - r)
            d_x_pre[t, :, :hidden] = d_h_pre[t, :, :hidden] = d_r
            d_x_pre[t, :, hidden : 2 * hidden] = d_h_pre[t, :, hidden : 2 * hidden] = d_z
            d_x_pre[t, :, 2 * hidden :] = d_n
            d_h_pre[t, :, 2 * hidden :] = d_n * r  # r gates the hidden part of n
            d_h = d_h * z + d_h_pre[t] @ w_hh  # the direct path z h_{t-1}, and through the gates
        want = self.needs_input_grad
        g = d_x_pre.shape[-1]
        d_x = (d_x_pre.reshape(-1, g) @ w_ih).reshape(x.shape) if want[0] else None
        d_w_ih = d_x_pre.reshape(-1, g).T @ x.reshape(-1, x.shape[-1]) if want[2] else None
        d_w_hh = d_h_pre.reshape(-1, g).T @ h_prev.reshape(-1, hidden) if want[3] else None
        d_b_ih = sum_over(d_x_pre.reshape(-1, g), (0,)) if want[4] else None
        d_b_hh = sum_over(d_h_pre.reshape(-1, g), (0,)) if want[5] else None
        return d_x, d_h, d_w_ih, d_w_hh, d_b_ih, d_b_hh
