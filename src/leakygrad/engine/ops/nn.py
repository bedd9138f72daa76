"""The fused ops that layers need: sliding windows for convolution and pooling, and whole-sequence recurrences.

Windows (convolution and pooling)
---------------------------------
`Im2Col` copies every kernel-sized window of an image into a row of its own, so that a convolution becomes
one matrix product and a pooling layer one reduction. `Col2Im` is the reverse: it adds each row back onto the
image position it came from (overlapping windows add up). Both are linear, and each one's backward is the
other, so a convolution built from them is differentiable twice without a line of extra code.

Layout. Images are (N, C, H, W), as in PyTorch. Windows come out channels-last, (N, OH, OW, kh, kw, C): each
output position holds its kh x kw x C patch, which makes the copies contiguous in NumPy (several times faster
than the channels-first order). A convolution weight of shape (O, C, kh, kw) is permuted to match.

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

import numpy as np

from leakygrad.engine.autograd import grad as autograd_grad
from leakygrad.engine.errors import BackwardError, OpError
from leakygrad.engine.grad_mode import is_grad_enabled
from leakygrad.engine.op import Op
from leakygrad.engine.ops.elementwise import where
from leakygrad.engine.tensor import Tensor

# ---------------------------------------------------------------------------------------------------- windows


def window_output_size(size: int, kernel: int, stride: int, padding: int) -> int:
    """How many windows fit along one axis: floor((size + 2 padding - kernel) / stride) + 1."""
    return (size + 2 * padding - kernel) // stride + 1


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


class Im2Col(Op):
    """(N, C, H, W) -> (N, OH, OW, kh, kw, C): every window, one per output position, channels last.

    `pad_value` fills the border (0 for convolution and average pooling, -inf for max pooling); it is a
    constant, so it does not change the gradient, which only flows to the image's own pixels.
    """

    name = "im2col"

    def __init__(self, kernel_size, stride, padding, pad_value: float = 0.0):
        self.kernel_size, self.stride, self.padding, self.pad_value = kernel_size, stride, padding, pad_value

    def forward(self, x):
        out_h, out_w = _check_windows(self.name, x.shape, self.kernel_size, self.stride, self.padding)
        (kh, kw), (sh, sw), (ph, pw) = self.kernel_size, self.stride, self.padding
        n, c, h, w = x.shape
        padded = np.full((n, h + 2 * ph, w + 2 * pw, c), self.pad_value, dtype=x.dtype)
        padded[:, ph : ph + h, pw : pw + w, :] = x.transpose(0, 2, 3, 1)
        windows = np.empty((n, out_h, out_w, kh, kw, c), dtype=x.dtype)
        for i in range(kh):  # one strided copy per kernel offset: kh * kw copies, each of the whole batch
            for j in range(kw):
                windows[:, :, :, i, j, :] = padded[:, i : i + sh * out_h : sh, j : j + sw * out_w : sw, :]
        return windows

    def backward(self, grad):
        (x,) = self.inputs
        return Col2Im.apply(
            grad, image_shape=x.shape, kernel_size=self.kernel_size, stride=self.stride, padding=self.padding
        )


class Col2Im(Op):
    """(N, OH, OW, kh, kw, C) -> (N, C, H, W): add every window back where it was taken (the adjoint of Im2Col).

    A pixel covered by several windows receives the sum of their values; the padding border is cut off.
    """

    name = "col2im"

    def __init__(self, image_shape, kernel_size, stride, padding):
        self.image_shape, self.kernel_size, self.stride, self.padding = image_shape, kernel_size, stride, padding

    def forward(self, windows):
        out_h, out_w = _check_windows(self.name, self.image_shape, self.kernel_size, self.stride, self.padding)
        (kh, kw), (sh, sw), (ph, pw) = self.kernel_size, self.stride, self.padding
        n, c, h, w = self.image_shape
        if windows.shape != (n, out_h, out_w, kh, kw, c):
            raise OpError(f"col2im: windows of shape {windows.shape} do not come from images of shape {(n, c, h, w)}")
        padded = np.zeros((n, h + 2 * ph, w + 2 * pw, c), dtype=windows.dtype)
        for i in range(kh):
            for j in range(kw):
                padded[:, i : i + sh * out_h : sh, j : j + sw * out_w : sw, :] += windows[:, :, :, i, j, :]
        return padded[:, ph : ph + h, pw : pw + w, :].transpose(0, 3, 1, 2)

    def backward(self, grad):
        return Im2Col.apply(grad, kernel_size=self.kernel_size, stride=self.stride, padding=self.padding)


class WindowMax(Op):
    """(N, OH, OW, kh, kw, C) -> (N, OH, OW, C): the largest value of each window (max pooling).

    The gradient goes to the first largest element of each window in row-major order, as in PyTorch, and
    every other element of the window gets zero: a max-pooling layer passes gradient to one input in four.
    """

    name = "max_pool"

    def forward(self, windows):
        n, out_h, out_w, kh, kw, c = windows.shape
        flat = windows.reshape(n, out_h, out_w, kh * kw, c)
        winner = np.argmax(flat, axis=3)[:, :, :, None, :]  # the first maximum (or the first NaN, as PyTorch)
        self.is_winner = (np.arange(kh * kw)[:, None] == winner).reshape(windows.shape)
        return np.take_along_axis(flat, winner, axis=3)[:, :, :, 0, :]

    def backward(self, grad):
        n, out_h, out_w, c = grad.shape
        return where(self.is_winner, grad.reshape(n, out_h, out_w, 1, 1, c), 0.0)


# ---------------------------------------------------------------------------------------------------- recurrences


class FusedRecurrence(Op):
    """A whole-sequence recurrence whose backward (BPTT) is written in NumPy, for speed.

    Subclasses write `forward` and `backward_arrays` (NumPy arrays in and out). `composed`, if given, is the
    same function written with Tensor operations; when the backward pass is being recorded for a second
    derivative, it is differentiated in place of the NumPy backward.
    """

    def __init__(self, composed=None):
        self.composed = composed

    def backward(self, grad):
        if is_grad_enabled():  # backward(create_graph=True): the gradient itself must be differentiable
            return self._backward_through_composed(grad)
        grads = self.backward_arrays(np.asarray(grad.data))
        return tuple(None if g is None else Tensor._wrap(g) for g in grads)

    def backward_arrays(self, grad: np.ndarray) -> tuple:
        raise NotImplementedError

    def _backward_through_composed(self, grad):
        if self.composed is None:
            raise BackwardError(
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
    return (x.reshape(t * n, i) @ w_ih.T + bias).reshape(t, n, -1)


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
    d_b = flat.sum(axis=0) if want_b else None
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
            i[...], f[...], g[...], o[...] = _sigmoid(i), _sigmoid(f), np.tanh(g), _sigmoid(o)
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
        for t in reversed(range(x.shape[0])):
            i, f, g, o = (self.gates[t, :, k * hidden : (k + 1) * hidden] for k in range(4))
            tanh_c, c_prev = self.tanh_c[t], (cs[t - 1] if t > 0 else c0)
            d_h = d_h + grad[0, t]
            d_c = d_c + grad[1, t] + d_h * o * (1 - tanh_c * tanh_c)  # through h_t = o tanh(c_t)
            d = d_pre[t]
            d[:, :hidden] = d_c * g * i * (1 - i)  # sigmoid' = s (1 - s)
            d[:, hidden : 2 * hidden] = d_c * c_prev * f * (1 - f)
            d[:, 2 * hidden : 3 * hidden] = d_c * i * (1 - g * g)  # tanh' = 1 - tanh^2
            d[:, 3 * hidden :] = d_h * tanh_c * o * (1 - o)
            d_h = d @ w_hh
            d_c = d_c * f  # the cell path: multiplied by the forget gate, and nothing else
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
        d_b_ih = d_x_pre.reshape(-1, g).sum(axis=0) if want[4] else None
        d_b_hh = d_h_pre.reshape(-1, g).sum(axis=0) if want[5] else None
        return d_x, d_h, d_w_ih, d_w_hh, d_b_ih, d_b_hh
