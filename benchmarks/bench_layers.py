"""Training-step benchmark: leakygrad layers against a hand-written NumPy step and PyTorch (CPU), side by side.

Two networks, each trained with plain SGD (forward, backward, update):

- CNN on the bundled 8x8 digits: conv 16 3x3 pad 1, relu, maxpool 2, conv 32 3x3 pad 1, relu, flatten,
  linear 10, cross-entropy. Batch 128.
- LSTM: input 32, hidden 128, sequence 32, batch 32; a linear readout (128 -> 32) at every step, MSE.
  leakygrad's default (fused) LSTM; `--composed` also times the step-by-step Tensor-op version.

The hand-written NumPy step is the floor: forward and backward written out by hand, channels-last, input
projections of the LSTM batched over time, and every speed trick the leakygrad ops use (running-max pooling,
sums as BLAS products, sigmoid through tanh, im2col as one copy of a strided view or, for one channel, one
copy per kernel offset, the input gradient of a convolution as a convolution with the flipped kernel, biases
added in place). Before timing, the script checks that all three compute the same loss and the same gradients
(float64, from the same weights), so they do the same work.

Each repetition times `--steps` training steps of every contender in turn (interleaved, so that a noisy
neighbour slows all of them alike); the table shows the median over `--repeats` repetitions of the time per
step, wall-clock by default (`--clock cpu`: this process's CPU time, steadier on a shared machine), and the
ratios are medians over repetitions of the ratio within each repetition.

Two settings make the comparison about the code rather than the machine, and apply to all three alike:
- one thread (BLAS and PyTorch) by default; `--threads N` to change it;
- glibc's allocator is told to keep freed memory (mallopt). By default it hands blocks above 128 KiB back to
  the OS and faults them in again on the next allocation, so a step's ~1 MB arrays cost page faults or not
  depending on what the process allocated before: we measured the same NumPy step at 3.2 ms in one process
  and 6.5 ms in another. `--default-malloc` keeps the default behaviour.

    python benchmarks/bench_layers.py            # about 20 seconds
    python benchmarks/bench_layers.py --quick    # a smoke run
"""

from __future__ import annotations

import argparse
import os
import sys

from machine import CLOCKS, keep_freed_memory, paired_ratio, time_interleaved, use_blas_threads_from_argv

# BLAS reads its thread count when NumPy is imported: set it first.
_THREADS = use_blas_threads_from_argv()

import statistics  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
import leakygrad as lg  # noqa: E402
from leakygrad import nn  # noqa: E402
from leakygrad.nn import functional as F  # noqa: E402

LR = 0.05

# ================================================================================================ the CNN


def leakygrad_cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(32 * 4 * 4, 10),
    )


def torch_cnn() -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 16, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(32 * 4 * 4, 10),
    )


class NumpyCNN:
    """The same network by hand, channels-last (N, H, W, C) throughout, im2col convolutions.

    Parameters are kept in the layout the computation wants: conv weights as (kh*kw*C, O) matrices and the
    linear layer's columns in channels-last flatten order; `from_torch_layout` / `grads_in_torch_layout`
    convert, for the gradient check only.
    """

    def __init__(self, state: dict[str, np.ndarray], dtype=np.float32):
        self.w1 = state["0.weight"].transpose(2, 3, 1, 0).reshape(-1, 16).astype(dtype)  # (9, 16)
        self.b1 = state["0.bias"].astype(dtype)
        self.w2 = state["3.weight"].transpose(2, 3, 1, 0).reshape(-1, 32).astype(dtype)  # (144, 32)
        self.b2 = state["3.bias"].astype(dtype)
        # Linear weight (10, 512) over NCHW-flattened features -> (512, 10) over NHWC-flattened features.
        self.w3 = state["6.weight"].reshape(10, 32, 4, 4).transpose(2, 3, 1, 0).reshape(512, 10).astype(dtype)
        self.b3 = state["6.bias"].astype(dtype)

    def grads_in_torch_layout(self, grads) -> dict[str, np.ndarray]:
        g1, gb1, g2, gb2, g3, gb3 = grads
        return {
            "0.weight": g1.reshape(3, 3, 1, 16).transpose(3, 2, 0, 1),
            "0.bias": gb1,
            "3.weight": g2.reshape(3, 3, 16, 32).transpose(3, 2, 0, 1),
            "3.bias": gb2,
            "6.weight": g3.reshape(4, 4, 32, 10).transpose(3, 2, 0, 1).reshape(10, 512),
            "6.bias": gb3,
        }

    @staticmethod
    def im2col(x, k=3, pad=1):
        """(N, H, W, C) -> (N*H*W, k*k*C) for a stride-1 'same' convolution: one copy of a strided view of
        the windows (the same kernel leakygrad's conv2d uses)."""
        n, h, w, c = x.shape
        padded = np.zeros((n, h + 2 * pad, w + 2 * pad, c), dtype=x.dtype)
        padded[:, pad : pad + h, pad : pad + w] = x
        if c == 1:  # one channel: one copy per kernel offset (an image row at a time) is faster, as in leakygrad
            windows = np.empty((n, h, w, k, k, c), dtype=x.dtype)
            for i in range(k):
                for j in range(k):
                    windows[:, :, :, i, j, :] = padded[:, i : i + h, j : j + w, :]
            return windows.reshape(n * h * w, k * k * c)
        sn, sh, sw, sc = padded.strides
        windows = np.lib.stride_tricks.as_strided(padded, (n, h, w, k, k, c), (sn, sh, sw, sh, sw, sc))
        return windows.reshape(n * h * w, k * k * c)

    @staticmethod
    def flipped(kernel_matrix, k, c_in):
        """A (k*k*C_in, C_out) kernel matrix -> the (k*k*C_out, C_in) matrix of the flipped, transposed kernel:
        the input gradient of a stride-1 'same' convolution is the gradient convolved with it (no col2im)."""
        c_out = kernel_matrix.shape[1]
        kernel = kernel_matrix.reshape(k, k, c_in, c_out)[::-1, ::-1]
        return np.ascontiguousarray(kernel.transpose(0, 1, 3, 2)).reshape(k * k * c_out, c_in)

    def loss_and_grads(self, images, labels):
        n = images.shape[0]
        x = images.reshape(n, 8, 8, 1)
        # forward
        cols1 = self.im2col(x)
        z1 = cols1 @ self.w1  # (n*64, 16)
        z1 += self.b1  # in place, as leakygrad's conv2d adds its bias
        # 2x2 max pool, stride 2: scan the four offsets, keep the running max and the first winner's offset
        a1 = np.maximum(z1, 0).reshape(n, 4, 2, 4, 2, 16)
        p1 = a1[:, :, 0, :, 0, :].copy()  # (n, 4, 4, 16)
        winner = np.zeros(p1.shape, dtype=np.int8)
        for k, (i, j) in ((1, (0, 1)), (2, (1, 0)), (3, (1, 1))):
            candidate = a1[:, :, i, :, j, :]
            winner += (candidate > p1) * (k - winner)  # strictly greater: ties stay with the first
            np.maximum(p1, candidate, out=p1)
        cols2 = self.im2col(p1)
        z2 = cols2 @ self.w2  # (n*16, 32)
        z2 += self.b2
        a2 = np.maximum(z2, 0)
        features = a2.reshape(n, 512)
        logits = features @ self.w3 + self.b3
        shifted = logits - logits.max(axis=1, keepdims=True)
        exp = np.exp(shifted)
        sums = exp.sum(axis=1, keepdims=True)
        loss = np.log(sums[:, 0]).mean() - shifted[np.arange(n), labels].mean()
        # backward
        d_logits = exp / sums
        d_logits[np.arange(n), labels] -= 1
        d_logits /= n
        g3, gb3 = features.T @ d_logits, d_logits.sum(axis=0)
        d_z2 = (d_logits @ self.w3.T).reshape(n * 16, 32)
        d_z2 *= z2 > 0
        g2, gb2 = cols2.T @ d_z2, np.ones(len(d_z2), d_z2.dtype) @ d_z2  # sums, as BLAS products (faster)
        d_p1 = (self.im2col(d_z2.reshape(n, 4, 4, 32)) @ self.flipped(self.w2, 3, 16)).reshape(n, 4, 4, 16)
        d_a1 = np.empty((n, 4, 2, 4, 2, 16), dtype=d_p1.dtype)
        for k, (i, j) in ((0, (0, 0)), (1, (0, 1)), (2, (1, 0)), (3, (1, 1))):
            np.multiply(d_p1, winner == k, out=d_a1[:, :, i, :, j, :])  # only each window's winner
        d_z1 = d_a1.reshape(n * 64, 16)
        d_z1 *= z1 > 0
        g1, gb1 = cols1.T @ d_z1, np.ones(len(d_z1), d_z1.dtype) @ d_z1
        return loss, (g1, gb1, g2, gb2, g3, gb3)

    def step(self, images, labels):
        loss, grads = self.loss_and_grads(images, labels)
        for param, grad in zip((self.w1, self.b1, self.w2, self.b2, self.w3, self.b3), grads):
            param -= LR * grad
        return loss


# ================================================================================================ the LSTM

SEQ, BATCH, INPUT, HIDDEN, OUTPUT = 32, 32, 32, 128, 32


class LeakygradLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(INPUT, HIDDEN)
        self.readout = nn.Linear(HIDDEN, OUTPUT)

    def forward(self, x):
        return self.readout(self.lstm(x)[0])


class TorchLSTM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(INPUT, HIDDEN)
        self.readout = torch.nn.Linear(HIDDEN, OUTPUT)

    def forward(self, x):
        return self.readout(self.lstm(x)[0])


class NumpyLSTM:
    """The same LSTM and readout by hand: input projections for all steps in one product, the recurrence
    step by step, BPTT step by step, weight gradients as one product each at the end."""

    def __init__(self, state: dict[str, np.ndarray], dtype=np.float32):
        self.w_ih = state["lstm.weight_ih_l0"].astype(dtype)  # (4H, I)
        self.w_hh = state["lstm.weight_hh_l0"].astype(dtype)  # (4H, H)
        self.b_ih = state["lstm.bias_ih_l0"].astype(dtype)
        self.b_hh = state["lstm.bias_hh_l0"].astype(dtype)
        self.w_out = state["readout.weight"].astype(dtype)  # (O, H)
        self.b_out = state["readout.bias"].astype(dtype)

    def params(self):
        return self.w_ih, self.w_hh, self.b_ih, self.b_hh, self.w_out, self.b_out

    @staticmethod
    def sigmoid(x):
        return 0.5 * (1 + np.tanh(0.5 * x))

    def loss_and_grads(self, x, target):
        steps, n, _ = x.shape
        hd = HIDDEN
        # forward
        pre_x = (x.reshape(steps * n, -1) @ self.w_ih.T + (self.b_ih + self.b_hh)).reshape(steps, n, 4 * hd)
        gates = np.empty_like(pre_x)
        cs = np.empty((steps, n, hd), dtype=x.dtype)
        hs = np.empty((steps, n, hd), dtype=x.dtype)
        tanh_cs = np.empty_like(cs)
        h = np.zeros((n, hd), dtype=x.dtype)
        c = np.zeros((n, hd), dtype=x.dtype)
        w_hh_t = self.w_hh.T
        for t in range(steps):
            g = gates[t]
            np.matmul(h, w_hh_t, out=g)
            g += pre_x[t]
            g[:, : 2 * hd] = self.sigmoid(g[:, : 2 * hd])  # i, f
            g[:, 2 * hd : 3 * hd] = np.tanh(g[:, 2 * hd : 3 * hd])  # g
            g[:, 3 * hd :] = self.sigmoid(g[:, 3 * hd :])  # o
            c = np.multiply(g[:, hd : 2 * hd], c, out=cs[t])
            c += g[:, :hd] * g[:, 2 * hd : 3 * hd]
            np.tanh(c, out=tanh_cs[t])
            h = np.multiply(g[:, 3 * hd :], tanh_cs[t], out=hs[t])
        flat_h = hs.reshape(steps * n, hd)
        y = flat_h @ self.w_out.T + self.b_out
        diff = y - target.reshape(steps * n, -1)
        loss = np.mean(diff * diff)
        # backward
        d_y = diff * (2 / diff.size)
        g_out, gb_out = d_y.T @ flat_h, d_y.sum(axis=0)
        d_hs = (d_y @ self.w_out).reshape(steps, n, hd)
        d_pre = np.empty_like(gates)
        d_h = np.zeros((n, hd), dtype=x.dtype)
        d_c = np.zeros((n, hd), dtype=x.dtype)
        for t in reversed(range(steps)):
            g = gates[t]
            i, f, gg, o = g[:, :hd], g[:, hd : 2 * hd], g[:, 2 * hd : 3 * hd], g[:, 3 * hd :]
            tc = tanh_cs[t]
            c_prev = cs[t - 1] if t > 0 else np.zeros_like(d_c)
            d_h += d_hs[t]
            d_c += d_h * o * (1 - tc * tc)
            d = d_pre[t]
            d[:, :hd] = d_c * gg * i * (1 - i)
            d[:, hd : 2 * hd] = d_c * c_prev * f * (1 - f)
            d[:, 2 * hd : 3 * hd] = d_c * i * (1 - gg * gg)
            d[:, 3 * hd :] = d_h * tc * o * (1 - o)
            d_h = d @ self.w_hh
            d_c *= f
        flat_d = d_pre.reshape(steps * n, 4 * hd)
        h_prev = np.concatenate([np.zeros((1, n, hd), dtype=x.dtype), hs[:-1]]).reshape(steps * n, hd)
        g_ih = flat_d.T @ x.reshape(steps * n, -1)
        g_hh = flat_d.T @ h_prev
        g_b = flat_d.sum(axis=0)
        return loss, (g_ih, g_hh, g_b, g_b, g_out, gb_out)

    def step(self, x, target):
        loss, grads = self.loss_and_grads(x, target)
        for param, grad in zip(self.params(), grads):
            param -= LR * grad
        return loss


# ================================================================================================ steps


def leakygrad_step(model, inputs, loss_fn):
    loss = loss_fn(model, inputs)
    model.zero_grad()
    loss.backward()
    for p in model.parameters():
        p.data -= LR * p.grad.data
    return loss


def torch_step(model, inputs, loss_fn):
    loss = loss_fn(model, inputs)
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= LR * p.grad
    return loss


def cnn_loss_leakygrad(model, inputs):
    images, labels = inputs
    return F.cross_entropy(model(images), labels)


def cnn_loss_torch(model, inputs):
    images, labels = inputs
    return torch.nn.functional.cross_entropy(model(images), labels)


def lstm_loss_leakygrad(model, inputs):
    x, target = inputs
    return F.mse_loss(model(x), target)


def lstm_loss_torch(model, inputs):
    x, target = inputs
    return torch.nn.functional.mse_loss(model(x), target)


# ================================================================================================ checks


def check_same_gradients(
    name, ours, theirs, hand, ours_inputs, theirs_inputs, hand_inputs, ours_loss, theirs_loss, hand_grads_by_name
):
    """One forward and backward of each, float64, same weights: losses and gradients must agree."""
    ours.double()
    ours.zero_grad()
    loss = ours_loss(ours, ours_inputs)
    loss.backward()
    theirs.double()
    theirs.zero_grad()
    torch_loss = theirs_loss(theirs, theirs_inputs)
    torch_loss.backward()
    hand_loss, hand_grads = hand.loss_and_grads(*hand_inputs)
    worst = 0.0
    assert abs(loss.item() - torch_loss.item()) < 1e-9 and abs(loss.item() - hand_loss) < 1e-9, "losses differ"
    torch_grads = {k: p.grad.numpy() for k, p in theirs.named_parameters()}
    for key, value in hand_grads_by_name(hand, hand_grads).items():
        mine = dict(ours.named_parameters())[key].grad.data
        for other in (torch_grads[key], value):
            scale = max(np.abs(other).max(), 1e-12)
            worst = max(worst, np.abs(mine - other).max() / scale)
    if worst > 1e-8:
        raise SystemExit(f"{name}: gradients disagree (worst relative difference {worst:.2e})")
    print(f"{name}: leakygrad, NumPy by hand and PyTorch agree (float64 loss and every gradient, worst {worst:.1e})")
    ours.float()
    theirs.float()


# ================================================================================================ timing


CLOCK = CLOCKS["wall"]  # set from --clock in main


def digits_batch(batch: int, rng):
    try:
        from sklearn.datasets import load_digits

        digits = load_digits()
        images = (digits.images / 16.0).astype(np.float32)
        labels = digits.target.astype(np.int64)
    except ImportError:  # the benchmark does not need real data to time, only to look real
        images = rng.random((1797, 8, 8), dtype=np.float32)
        labels = rng.integers(0, 10, 1797)
    chosen = rng.choice(len(images), batch, replace=False)
    return images[chosen].reshape(batch, 1, 8, 8), labels[chosen]


def bench_cnn(batch: int, steps: int, repeats: int) -> dict[str, list[float]]:
    rng = np.random.default_rng(0)
    lg.manual_seed(0)
    images, labels = digits_batch(batch, rng)
    ours, theirs = leakygrad_cnn(), torch_cnn()
    state = ours.state_dict()
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})

    check_same_gradients(
        "CNN",
        ours,
        theirs,
        NumpyCNN(state, np.float64),
        (lg.Tensor(images, dtype="float64"), labels),
        (torch.from_numpy(images.astype(np.float64)), torch.from_numpy(labels)),
        (images.astype(np.float64), labels),
        cnn_loss_leakygrad,
        cnn_loss_torch,
        lambda hand, grads: hand.grads_in_torch_layout(grads),
    )
    hand = NumpyCNN(state)
    x_lg, x_torch, y_torch = lg.Tensor(images), torch.from_numpy(images), torch.from_numpy(labels)
    return time_interleaved(
        {
            "numpy": lambda: hand.step(images, labels),
            "leakygrad": lambda: leakygrad_step(ours, (x_lg, labels), cnn_loss_leakygrad),
            "torch": lambda: torch_step(theirs, (x_torch, y_torch), cnn_loss_torch),
        },
        repeats,
        steps,
        CLOCK,
        warmup=2,
    )


def bench_lstm(steps: int, repeats: int, fused: bool = True) -> dict[str, list[float]]:
    rng = np.random.default_rng(0)
    lg.manual_seed(0)
    x = rng.standard_normal((SEQ, BATCH, INPUT)).astype(np.float32)
    target = rng.standard_normal((SEQ, BATCH, OUTPUT)).astype(np.float32)
    ours, theirs = LeakygradLSTM(), TorchLSTM()
    ours.lstm.fused = fused
    state = ours.state_dict()
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})

    def hand_grads_by_name(hand, grads):
        names = ["lstm.weight_ih_l0", "lstm.weight_hh_l0", "lstm.bias_ih_l0", "lstm.bias_hh_l0"]
        return dict(zip(names + ["readout.weight", "readout.bias"], grads))

    check_same_gradients(
        "LSTM" + ("" if fused else " (composed)"),
        ours,
        theirs,
        NumpyLSTM(state, np.float64),
        (lg.Tensor(x, dtype="float64"), lg.Tensor(target, dtype="float64")),
        (torch.from_numpy(x.astype(np.float64)), torch.from_numpy(target.astype(np.float64))),
        (x.astype(np.float64), target.astype(np.float64)),
        lstm_loss_leakygrad,
        lstm_loss_torch,
        hand_grads_by_name,
    )
    hand = NumpyLSTM(state)
    x_lg, t_lg = lg.Tensor(x), lg.Tensor(target)
    x_torch, t_torch = torch.from_numpy(x), torch.from_numpy(target)
    return time_interleaved(
        {
            "numpy": lambda: hand.step(x, target),
            "leakygrad": lambda: leakygrad_step(ours, (x_lg, t_lg), lstm_loss_leakygrad),
            "torch": lambda: torch_step(theirs, (x_torch, t_torch), lstm_loss_torch),
        },
        repeats,
        steps,
        CLOCK,
        warmup=2,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=9, help="repetitions; the median is reported (default 9)")
    parser.add_argument("--steps", type=int, default=30, help="training steps per repetition (default 30)")
    parser.add_argument("--batch", type=int, default=128, help="CNN batch size (default 128)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS and PyTorch threads (default 1)")
    parser.add_argument("--composed", action="store_true", help="also time the composed (unfused) LSTM")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall", help="what to time (default wall)")
    parser.add_argument("--default-malloc", action="store_true", help="leave glibc's allocator thresholds alone")
    parser.add_argument("--quick", action="store_true", help="3 repeats of 3 steps: a smoke run")
    args = parser.parse_args()
    if args.quick:
        args.repeats, args.steps = 3, 3
    torch.set_num_threads(args.threads)
    global CLOCK
    CLOCK = CLOCKS[args.clock]
    tuned = not args.default_malloc and keep_freed_memory()

    results = {
        f"CNN, digits 8x8, batch {args.batch}": bench_cnn(args.batch, args.steps, args.repeats),
        f"LSTM fused, T={SEQ} N={BATCH} I={INPUT} H={HIDDEN}": bench_lstm(args.steps, args.repeats),
    }
    if args.composed:
        composed_steps = max(1, args.steps // 4)
        results[f"LSTM composed (fused=False), T={SEQ} N={BATCH}"] = bench_lstm(composed_steps, args.repeats, False)

    print(
        f"\nmedian of {args.repeats} repetitions x {args.steps} steps, {args.clock} clock, {args.threads} thread(s), "
        f"float32, allocator {'keeps freed memory' if tuned else 'default'}, numpy {np.__version__}, "
        f"torch {torch.__version__}"
    )
    print(
        "| network | NumPy by hand (ms/step) | leakygrad (ms/step) | PyTorch CPU (ms/step) "
        "| leakygrad / NumPy | leakygrad / PyTorch |"
    )
    print("|" + "---|" * 6)
    for name, samples in results.items():
        ms = {contender: statistics.median(times) * 1e3 for contender, times in samples.items()}
        print(
            f"| {name} | {ms['numpy']:.2f} | {ms['leakygrad']:.2f} | {ms['torch']:.2f} | "
            f"{paired_ratio(samples, 'leakygrad', 'numpy'):.2f}x | {paired_ratio(samples, 'leakygrad', 'torch'):.2f}x |"
        )


if __name__ == "__main__":
    main()
