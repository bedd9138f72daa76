"""What the doctor costs: training steps with and without it, side by side in one run, and its memory over a long run.

    python benchmarks/bench_doctor.py                 # tiny GPT, CNN, MLP on CPU (one thread), ~3 minutes
    python benchmarks/bench_doctor.py --quick         # fewer rounds, for a smoke test
    python benchmarks/bench_doctor.py --device cuda --clock wall --big-gpt   # where a GPU is available
    python benchmarks/bench_doctor.py --device cuda --clock wall --large-gpt --models "tiny GPT" --rounds 10

Method. Each model trains on a fixed batch, one run, in blocks of steps taken in turn: plain; under the doctor with
default settings (statistics every 16th step); under the doctor with statistics on every step; and, for reference,
under `torch.autograd.detect_anomaly()`. (One model for all four, as in a real run: separate copies would also time
how they evict each other from the cache.) Blocks are a multiple of 16 steps, so every doctor block holds the same
share of sampled steps; many rounds, in an order rotated each round; a block's
time over its step count is one measurement of the time per step. The table gives the median over rounds, and the
median over rounds of each mode's ratio to the plain block of the same round (paired, so drift cancels).
Time is this process's CPU time by default: on a shared machine other processes' load inflates elapsed time
unevenly, but not the CPU time the training itself uses (with one torch thread on CPU, that is the step's cost). The
doctor is attached for its block and detached after (so the plain blocks run with no hook of ours installed); its
attach and detach are inside the timed block. Targets (issue 3): default <= 1.05x, every step <= 1.15x.

Allocator: as in the other two benchmarks (benchmarks/machine.py), glibc is told to keep freed memory. By default
it hands blocks above 128 KiB back to the OS and faults them in again on the next allocation, whenever the free
space at the top of its heap passes a threshold that it adjusts as the process runs: a plain MLP step here took
270 to 600 page faults, an every-step CNN block 252 or 2,129 per step in two runs of the same code, and the
plain MLP step ranged from 4.8 to 7.6 ms. That is the allocator's history, not the doctor's work; with freed
memory kept, no step takes page faults and the ratios measure the code. `--default-malloc` measures the default.

Memory: one model trains for many steps under the doctor with statistics on every step; at checkpoints the script
prints how many step records and loss buckets the history holds and its size when pickled. Flat = bounded.
"""

from __future__ import annotations

import argparse
import math
import pickle
import statistics
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch  # noqa: E402
from machine import CLOCKS, keep_freed_memory  # noqa: E402  (benchmarks/machine.py, beside this script)
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

import leakygrad.doctor as doctor  # noqa: E402


# --- the models ------------------------------------------------------------------------------------------------
class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        attention = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
        x = x + self.proj((attention @ v).transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab=65, context=64, width=128, heads=4, blocks=2):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, width), nn.Embedding(context, width)
        self.blocks = nn.Sequential(*[Block(width, heads) for _ in range(blocks)])
        self.ln, self.head = nn.LayerNorm(width), nn.Linear(width, vocab)

    def forward(self, idx):
        x = self.tokens(idx) + self.positions(torch.arange(idx.shape[1], device=idx.device))
        return self.head(self.ln(self.blocks(x)))


# name -> (TinyGPT's arguments, batch). "big" and "large" are for GPUs: on an H200 the big one's step is still
# bound by the host's kernel launches, the large one's by the device's arithmetic.
GPT_SIZES = {
    "small": ({}, 16),
    "big": (dict(width=384, heads=6, blocks=6, context=128), 16),
    "large": (dict(width=768, heads=12, blocks=6, context=256), 32),
}


def gpt_task(device, size="small"):
    arguments, batch = GPT_SIZES[size]
    model = TinyGPT(**arguments).to(device)
    context = arguments.get("context", 64)
    idx = torch.randint(0, 65, (batch, context + 1), device=device)
    x, y = idx[:, :-1], idx[:, 1:]
    loss = lambda m: F.cross_entropy(m(x).reshape(-1, 65), y.reshape(-1))  # noqa: E731
    return model, lambda m: torch.optim.AdamW(m.parameters(), lr=3e-4), loss


def cnn_task(device):
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 10),
    ).to(device)  # fmt: skip
    x, y = torch.randn(64, 1, 28, 28, device=device), torch.randint(0, 10, (64,), device=device)
    return model, lambda m: torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9), lambda m: F.cross_entropy(m(x), y)


def mlp_task(device):
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
    model = model.to(device)
    x, y = torch.randn(128, 784, device=device), torch.randint(0, 10, (128,), device=device)
    return model, lambda m: torch.optim.Adam(m.parameters(), lr=1e-3), lambda m: F.cross_entropy(m(x), y)


TASKS = {"tiny GPT": gpt_task, "CNN": cnn_task, "MLP": mlp_task}


# --- timing ------------------------------------------------------------------------------------------------------
clock = CLOCKS["cpu"]  # set from --clock in main


def train_block(model, optimizer, loss_fn, steps, mode, sync):
    """Time `steps` training steps under `mode`; returns seconds per step."""
    start = clock()
    if mode == "plain":
        context = None
    elif mode == "anomaly":
        context = torch.autograd.detect_anomaly()
    else:
        context = doctor.watch(model, optimizer, every=16 if mode == "doctor" else 1)
    if context is not None:
        context.__enter__()
    try:
        for _ in range(steps):
            loss = loss_fn(model)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        sync()
    finally:
        if context is not None:
            context.__exit__(None, None, None)
    return (clock() - start) / steps


MODES = ["plain", "doctor", "doctor every step", "anomaly"]


def bench_task(name, device, rounds, block, gpt_size="small"):
    """Median time per step of each mode, and the median over rounds of its ratio to the plain block of the round.

    Within a round the modes run back to back, in an order rotated from round to round, so each ratio compares
    blocks run moments apart: slow drifts in the machine's speed (other processes, clock changes) cancel.
    """
    make = TASKS[name]
    model, make_optimizer, loss_fn = make(device, gpt_size) if name == "tiny GPT" else make(device)
    optimizer = make_optimizer(model)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    times = {mode: [] for mode in MODES}
    for mode in MODES:  # warm-up: caches, allocator, lazy initialisation
        train_block(model, optimizer, loss_fn, 16, mode, sync)
    for r in range(rounds):
        for mode in MODES[r % len(MODES) :] + MODES[: r % len(MODES)]:
            steps = block if mode != "anomaly" else 16  # anomaly mode is slow: fewer steps
            times[mode].append(train_block(model, optimizer, loss_fn, steps, mode, sync))
    medians = {mode: statistics.median(values) for mode, values in times.items()}
    ratios = {}
    for mode in MODES:
        paired = sorted(t / p for t, p in zip(times[mode], times["plain"]))
        quartiles = statistics.quantiles(paired, n=4) if len(paired) > 1 else [paired[0]] * 3
        ratios[mode] = (quartiles[1], quartiles[0], quartiles[2])  # median, lower and upper quartile
    return medians, ratios


def memory_run(device, steps, checkpoints):
    model, make_optimizer, loss_fn = mlp_task(device)
    optimizer = make_optimizer(model)
    rows = []
    with doctor.watch(model, optimizer, every=1) as dr:
        for step in range(1, steps + 1):
            loss = loss_fn(model)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step in checkpoints:
                history = dr.history
                size = len(pickle.dumps((history.records, history.loss.buckets)))
                rows.append((step, len(history.records), len(history.loss.buckets), size / 1024))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description="Time training steps with and without the leakygrad doctor.")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1: steadiest timings)")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--block", type=int, default=32, help="steps per timed block (a multiple of 16)")
    parser.add_argument("--models", default=",".join(TASKS), help="comma-separated: " + ", ".join(TASKS))
    parser.add_argument("--big-gpt", action="store_true", help="a larger tiny GPT (6 blocks, width 384) for GPUs")
    parser.add_argument(
        "--large-gpt", action="store_true", help="larger still (6 blocks, width 768, context 256, batch 32)"
    )
    parser.add_argument("--memory-steps", type=int, default=20000)
    parser.add_argument("--quick", action="store_true", help="4 rounds, 2000 memory steps")
    parser.add_argument(
        "--clock",
        choices=CLOCKS,
        default="cpu",
        help="cpu: this process's CPU time (default; steady on a shared machine, right for one thread on CPU); "
        "wall: elapsed time (use on a GPU, or on an idle machine)",
    )
    parser.add_argument("--default-malloc", action="store_true", help="leave glibc's allocator thresholds alone")
    args = parser.parse_args()
    tuned = not args.default_malloc and keep_freed_memory()
    global clock
    clock = CLOCKS[args.clock]
    if args.block % 16:
        parser.error("--block must be a multiple of 16 (the default sampling interval)")
    if args.quick:
        args.rounds, args.memory_steps = 4, 2000
    gpt_size = "large" if args.large_gpt else "big" if args.big_gpt else "small"
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    warnings.filterwarnings("ignore", message="Anomaly Detection has been enabled")
    print(f"torch {torch.__version__}, device {args.device}, {torch.get_num_threads()} thread(s), "
          f"allocator {'keeps freed memory' if tuned else 'default'}, "
          f"{args.rounds} rounds of {args.block}-step blocks: median {args.clock} time per step; "
          "ratio = median over rounds of (mode / plain in the same round), (interquartile range)")  # fmt: skip
    header = "| model | plain | doctor (every 16) | ratio | doctor (every step) | ratio | detect_anomaly | ratio |"
    print(header)
    print("|" + "---|" * 8)
    for name in args.models.split(","):
        name = name.strip()
        medians, ratios = bench_task(name, args.device, args.rounds, args.block, gpt_size)
        cells = [f"{medians['plain'] * 1e3:.2f} ms"]
        for mode in MODES[1:]:
            middle, low, high = ratios[mode]
            cells += [f"{medians[mode] * 1e3:.2f} ms", f"{middle:.3f}x ({low:.2f}-{high:.2f})"]
        label = name + (f" ({gpt_size})" if gpt_size != "small" and name == "tiny GPT" else "")
        print(f"| {label} | " + " | ".join(cells) + " |", flush=True)
    checkpoints = sorted({args.memory_steps // 20, args.memory_steps // 4, args.memory_steps // 2, args.memory_steps})
    print(f"\nMemory: MLP, statistics on every step, {args.memory_steps} steps")
    print("| steps | records kept | loss buckets | history pickled |")
    print("|---|---|---|---|")
    for step, records, buckets, kib in memory_run(args.device, args.memory_steps, checkpoints):
        print(f"| {step} | {records} | {buckets} | {kib:.0f} KiB |", flush=True)


if __name__ == "__main__":
    main()
