"""Engine benchmark: how close leakygrad comes to the NumPy floor, side by side with its peers, in one run.

1. One training step of an MLP 784-512-512-10, batch 128, float32, ReLU, softmax cross-entropy, plain SGD:
   (a) leakygrad, (b) the same step written by hand in NumPy (the floor any NumPy engine can reach),
   (c) PyTorch CPU, (d) HIPS autograd and tinygrad (CPU backend, needs clang) where installed.
2. Per-op overhead: a graph of 10,000 tiny scalar ops, forward and backward, for leakygrad, PyTorch and
   micrograd.

Each contender is warmed up, then timed `--repeats` times over `--steps` steps, the contenders interleaved within
each repetition (a noisy moment slows all of them alike). The table gives the median time per step and the median
over repetitions of each contender's ratio to the NumPy floor in the same repetition (or to leakygrad for the
scalar graph). Machines here are shared and noisy: compare ratios, not seconds.

Two settings make the comparison about the code rather than the machine, and apply to every contender alike:
one thread for BLAS and PyTorch (`--threads N` to change it: with two threads on two shared cores, a busy
neighbour stalls BLAS's thread pool and single steps took 3 ms or 100 ms at random), and glibc's allocator told
to keep freed memory (a step's arrays otherwise come fresh from the OS and are page-faulted in, or not,
depending on what the process allocated before). `--clock cpu` (the default) times this process's CPU time,
steadier than elapsed time on a shared machine; `--clock wall` for an idle one.

    python benchmarks/bench_engine.py [--repeats 15] [--steps 10] [--skip-peers]

The peers (autograd, tinygrad, micrograd) are benchmark-only dependencies: pip install autograd tinygrad micrograd
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

from machine import CLOCKS, keep_freed_memory, paired_ratios, time_interleaved, use_blas_threads_from_argv

# BLAS reads its thread count when NumPy is imported: set it first.
THREADS = use_blas_threads_from_argv()

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import leakygrad as lg  # noqa: E402
from leakygrad.nn import functional as F  # noqa: E402

SIZES = (784, 512, 512, 10)
BATCH = 128
LEARNING_RATE = 0.01
SCALAR_OPS = 10_000


def make_problem(seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH)
    weights = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        weights.append((rng.standard_normal((fan_in, fan_out)) * np.sqrt(2 / fan_in)).astype(np.float32))
        weights.append(np.zeros(fan_out, dtype=np.float32))
    return x, y, weights


# ---------------------------------------------------------------------------------------------- MLP step


def numpy_step(x, y, params):
    """Forward and backward by hand: the floor."""
    w1, b1, w2, b2, w3, b3 = params
    z1 = x @ w1 + b1
    h1 = np.maximum(z1, 0)
    z2 = h1 @ w2 + b2
    h2 = np.maximum(z2, 0)
    logits = h2 @ w3 + b3
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    n = len(y)
    loss = -log_probs[np.arange(n), y].mean()

    dlogits = np.exp(log_probs)
    dlogits[np.arange(n), y] -= 1
    dlogits /= n
    dw3, db3 = h2.T @ dlogits, dlogits.sum(axis=0)
    dz2 = (dlogits @ w3.T) * (z2 > 0)
    dw2, db2 = h1.T @ dz2, dz2.sum(axis=0)
    dz1 = (dz2 @ w2.T) * (z1 > 0)
    dw1, db1 = x.T @ dz1, dz1.sum(axis=0)
    for p, g in zip(params, (dw1, db1, dw2, db2, dw3, db3)):
        p -= LEARNING_RATE * g
    return loss


def leakygrad_step(x, y, params):
    h = x
    for i in range(0, 4, 2):
        h = (h @ params[i] + params[i + 1]).relu()
    logits = h @ params[4] + params[5]
    loss = F.cross_entropy(logits, y)  # as the PyTorch step below: the library's softmax cross-entropy
    for p in params:
        p.grad = None
    loss.backward()
    for p in params:
        p.data -= LEARNING_RATE * p.grad.data
    return loss


def torch_step(torch, x, y, params):
    h = x
    for i in range(0, 4, 2):
        h = torch.relu(h @ params[i] + params[i + 1])
    logits = h @ params[4] + params[5]
    loss = torch.nn.functional.cross_entropy(logits, y)
    for p in params:
        p.grad = None
    loss.backward()
    with torch.no_grad():
        for p in params:
            p -= LEARNING_RATE * p.grad
    return loss


def mlp_contenders(x, y, weights, skip_peers: bool):
    contenders = {}
    np_params = [w.copy() for w in weights]
    contenders["hand-written NumPy"] = lambda: numpy_step(x, y, np_params)
    lg_params = [lg.Tensor(w.copy(), requires_grad=True) for w in weights]
    lg_x = lg.Tensor(x)
    contenders["leakygrad"] = lambda: leakygrad_step(lg_x, y, lg_params)

    import torch

    t_params = [torch.tensor(w.copy(), requires_grad=True) for w in weights]
    t_x, t_y = torch.tensor(x), torch.tensor(y)
    contenders[f"PyTorch {torch.__version__} CPU"] = lambda: torch_step(torch, t_x, t_y, t_params)

    if not skip_peers:
        contenders.update(_autograd_contender(x, y, weights))
        try:
            contenders.update(_tinygrad_contender(x, y, weights))
        except Exception as error:  # a peer that fails to run here is reported, not fatal
            print(f"  (tinygrad failed here: {type(error).__name__}: {str(error)[:120]})")
    return contenders


def _autograd_contender(x, y, weights):
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError:
        print("  (HIPS autograd not installed: skipped)")
        return {}

    def loss_fn(params):
        h = x
        for i in range(0, 4, 2):
            h = anp.maximum(anp.dot(h, params[i]) + params[i + 1], 0)
        logits = anp.dot(h, params[4]) + params[5]
        shifted = logits - anp.max(logits, axis=1, keepdims=True)
        log_probs = shifted - anp.log(anp.sum(anp.exp(shifted), axis=1, keepdims=True))
        return -anp.mean(log_probs[np.arange(len(y)), y])

    grad_fn = autograd.grad(loss_fn)
    params = [w.copy() for w in weights]

    def step():
        grads = grad_fn(params)
        for p, g in zip(params, grads):
            p -= LEARNING_RATE * g

    return {"HIPS autograd": step}


def _tinygrad_contender(x, y, weights):
    try:
        os.environ.setdefault("DEV", "CPU")  # the C backend, compiled with clang
        from tinygrad import Tensor as TinyTensor
        from tinygrad import TinyJit
    except ImportError:
        print("  (tinygrad not installed: skipped)")
        return {}
    params = [TinyTensor(w.copy()).realize() for w in weights]
    tx, ty = TinyTensor(x).realize(), TinyTensor(y.astype(np.int32)).realize()

    def step_body():
        h = tx
        for i in range(0, 4, 2):
            h = (h @ params[i] + params[i + 1]).relu()
        logits = h @ params[4] + params[5]
        loss = logits.sparse_categorical_crossentropy(ty)
        grads = loss.gradient(*params)
        for p, g in zip(params, grads):
            p.assign(p.detach() - LEARNING_RATE * g)
        TinyTensor.realize(loss, *params)
        return loss

    plain = _try_tinygrad(lambda: step_body())
    if plain is None:
        return {}
    TinyTensor.training = True
    jitted = TinyJit(step_body)
    contenders = {"tinygrad (eager)": step_body}
    if _try_tinygrad(jitted) is not None:
        contenders["tinygrad (TinyJit)"] = jitted
    return contenders


def _try_tinygrad(fn):
    try:
        from tinygrad import Tensor as TinyTensor

        TinyTensor.training = True
        for _ in range(3):
            fn()
        return fn
    except Exception as error:  # a peer that fails to run here is reported, not fatal
        print(f"  (tinygrad failed here: {type(error).__name__}: {str(error)[:120]})")
        return None


# ---------------------------------------------------------------------------------------------- scalar graph


def scalar_graph(inputs):
    """About 10,000 scalar ops: rounds in which each value mixes with its neighbour, then one sum.

    A wide graph of modest depth (micrograd's recursive topological sort cannot take a 10,000-deep chain).
    """
    values = list(inputs)
    n = len(values)
    for _ in range(SCALAR_OPS // (3 * n)):
        values = [values[i] * 0.999 + values[(i + 1) % n] * 0.001 for i in range(n)]
    total = values[0]
    for v in values[1:]:
        total = total + v
    return total


SCALAR_WIDTH = 100


def scalar_graph_leakygrad():
    xs = [lg.Tensor(0.5 + i / SCALAR_WIDTH, requires_grad=True, dtype=np.float64) for i in range(SCALAR_WIDTH)]
    scalar_graph(xs).backward()
    return xs[0].grad.item()


def scalar_graph_torch(torch):
    xs = [torch.tensor(0.5 + i / SCALAR_WIDTH, requires_grad=True, dtype=torch.float64) for i in range(SCALAR_WIDTH)]
    scalar_graph(xs).backward()
    return xs[0].grad.item()


def scalar_graph_micrograd(Value):
    xs = [Value(0.5 + i / SCALAR_WIDTH) for i in range(SCALAR_WIDTH)]
    scalar_graph(xs).backward()
    return xs[0].grad


def scalar_contenders():
    import torch

    contenders = {"leakygrad": scalar_graph_leakygrad, "PyTorch": lambda: scalar_graph_torch(torch)}
    try:
        from micrograd.engine import Value

        contenders["micrograd"] = lambda: scalar_graph_micrograd(Value)
    except ImportError:
        print("  (micrograd not installed: skipped)")
    return contenders


# ---------------------------------------------------------------------------------------------- timing


def print_table(title: str, times: dict[str, list[float]], baseline: str) -> dict[str, float]:
    """Median time per step, and the median over repetitions of the ratio to `baseline` in the same one."""
    print(f"\n{title}")
    print(f"| contender | median ms | min ms | ratio to {baseline} (median, quartiles) |")
    print("|---|---|---|---|")
    ratios = {}
    for name, ts in times.items():
        paired = paired_ratios(times, name, baseline)
        ratios[name] = statistics.median(paired)
        low, _, high = statistics.quantiles(paired, n=4) if len(paired) > 1 else (paired[0],) * 3
        spread = f"{ratios[name]:.2f} ({low:.2f}-{high:.2f})"
        print(f"| {name} | {statistics.median(ts) * 1e3:.2f} | {min(ts) * 1e3:.2f} | {spread} |")
    return ratios


def check_same_step(x, y, weights) -> float:
    """The leakygrad step and the NumPy step must compute the same update (else the timing means nothing)."""
    a = [w.copy() for w in weights]
    b = [lg.Tensor(w.copy(), requires_grad=True) for w in weights]
    numpy_step(x, y, a)
    leakygrad_step(lg.Tensor(x), y, b)
    return max(float(np.max(np.abs(p - q.data))) for p, q in zip(a, b))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15, help="repetitions; medians are reported (default 15)")
    parser.add_argument("--steps", type=int, default=10, help="MLP steps per repetition (default 10)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS and PyTorch threads (default 1)")
    parser.add_argument("--clock", choices=["cpu", "wall"], default="cpu", help="what to time (default cpu)")
    parser.add_argument("--skip-peers", action="store_true", help="only NumPy, leakygrad and PyTorch")
    args = parser.parse_args(argv)
    clock = CLOCKS[args.clock]
    tuned = keep_freed_memory()
    import torch

    torch.set_num_threads(args.threads)

    x, y, weights = make_problem()
    print(
        f"MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, float32; NumPy {np.__version__}, torch {torch.__version__}; "
        f"{os.cpu_count()} CPUs, {args.threads} thread(s); {args.clock} clock; allocator "
        f"{'keeps freed memory' if tuned else 'default'}; {args.repeats} repetitions of {args.steps} steps"
    )
    difference = check_same_step(x, y, weights)
    print(f"leakygrad vs hand-written NumPy: largest parameter difference after one step {difference:.1e}")
    mlp_times = time_interleaved(mlp_contenders(x, y, weights, args.skip_peers), args.repeats, args.steps, clock)
    ratios = print_table("One training step", mlp_times, "hand-written NumPy")
    scalar_times = time_interleaved(scalar_contenders(), max(9, args.repeats // 2 + 1), 1, clock, warmup=1)
    print_table(f"{SCALAR_OPS:,} scalar ops, forward + backward", scalar_times, "leakygrad")
    target = 1.10
    verdict = "meets" if ratios["leakygrad"] <= target else "MISSES"
    print(f"\nleakygrad / hand-written NumPy = {ratios['leakygrad']:.3f}: {verdict} the target of <= {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
