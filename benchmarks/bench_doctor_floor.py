"""The floor under the doctor's every-step overhead: what the core per-step statistics cost with nothing else.

    python benchmarks/bench_doctor_floor.py            # MLP and CNN of bench_doctor.py, on CPU, about a minute
    python benchmarks/bench_doctor_floor.py --rounds 6  # quicker

`BareMonitor` below takes, on every step, only the numbers that per-layer rules cannot do without, the way the doctor
takes them (on the device, one read at the step's end):

- d loss / d output of each weighted layer (a pre-hook on the autograd node that made its output: one norm);
- for each ReLU, which units fired for some example (one sum per unit), and the share of positive outputs (from a
  strided sample);
- each parameter's gradient norm, and its update/weight ratio from up to 4096 entries copied before the optimiser
  step and compared after it (the same torch._foreach_* calls as the doctor's `ParameterSamples`);
- one read of all those numbers to the host, kept as a small record (the last 100).

No graph walk, no loss-structure checks, no rules, no record of anything else. The doctor with statistics on every
step does all of this and much more; its target (issue 3) is 1.15x. This script measures how much of that budget the
bare statistics already take, side by side with plain steps (paired rounds, CPU time, one thread, the allocator told
to keep freed memory, as in bench_doctor.py).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch  # noqa: E402
from bench_doctor import cnn_task, mlp_task  # noqa: E402  (beside this script)
from machine import keep_freed_memory  # noqa: E402
from torch import nn  # noqa: E402

SAMPLE = 4096  # entries per parameter for the update/weight ratio, as the doctor's UPDATE_SAMPLE
ACTIVATION_SAMPLE = 65536  # outputs per activation for the share of positive ones, as the doctor's


class BareMonitor:
    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer):
        self.model, self.optimizer = model, optimizer
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.samples = [p.detach().view(-1)[:: max(1, p.numel() // SAMPLE)] for p in self.params]
        self.copies = [torch.empty_like(s) for s in self.samples]
        self.names = {module: name for name, module in model.named_modules()}
        self.numbers: list[torch.Tensor] = []
        self.unit_counts: list[torch.Tensor] = []
        self.records: list[dict] = []
        self.handles: list = []

    def attach(self) -> None:
        leaves = [m for m in self.model.modules() if not list(m.children())]
        self.handles = [m.register_forward_hook(self.after_forward) for m in leaves]
        self.handles += [
            self.optimizer.register_step_pre_hook(self.before_step),
            self.optimizer.register_step_post_hook(self.after_step),
        ]

    def detach(self) -> None:
        for handle in self.handles:
            handle.remove()

    def after_forward(self, module, args, output) -> None:
        if isinstance(module, nn.ReLU):
            y = output.detach()
            other_axes = tuple(axis for axis in range(y.dim()) if axis != 1)
            self.unit_counts.append(y.sum(dim=other_axes))  # per unit (channel): > 0 iff it fired for some example
            flat = y.reshape(-1)
            sample = flat[:: max(1, flat.numel() // ACTIVATION_SAMPLE)]  # the share of positive outputs, estimated
            self.numbers.append(torch.sign(sample).sum())
        elif output.grad_fn is not None and any(True for _ in module.parameters(recurse=False)):
            output.grad_fn.register_prehook(functools.partial(self.output_gradient, self.names[module]))

    def output_gradient(self, name: str, grad_outputs) -> None:
        self.numbers.append(torch.linalg.vector_norm(grad_outputs[0]))

    def before_step(self, optimizer, args, kwargs) -> None:
        torch._foreach_copy_(self.copies, self.samples)
        self.numbers.extend(torch._foreach_norm([p.grad for p in self.params] + self.copies))

    def after_step(self, optimizer, args, kwargs) -> None:
        torch._foreach_sub_(self.copies, self.samples)  # the change of each sample
        self.numbers.extend(torch._foreach_norm(self.copies + self.samples))
        values = [float(t.item()) for t in self.numbers]
        fired = [counts.gt(0).numpy().tobytes() for counts in self.unit_counts]
        self.records.append({"values": values, "fired": fired})
        del self.records[:-100]
        self.numbers, self.unit_counts = [], []


def time_block(task, steps: int, monitored: bool) -> float:
    model, optimizer, loss_fn, monitor = task
    start = time.process_time()
    if monitored:
        monitor.attach()
    for _ in range(steps):
        loss = loss_fn(model)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    if monitored:
        monitor.detach()
    return (time.process_time() - start) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description="What the bare per-step statistics cost, against plain steps.")
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--block", type=int, default=32)
    args = parser.parse_args()
    torch.set_num_threads(1)
    kept = keep_freed_memory()
    print(
        f"torch {torch.__version__}, cpu, 1 thread, allocator keeps freed memory: {kept}; {args.rounds} rounds of "
        f"{args.block}-step blocks, cpu time; ratio = median over rounds of (monitored / plain in the same round)"
    )
    print("| model | plain | bare statistics every step | ratio | read per step |")
    print("|---|---|---|---|---|")
    for name, make in (("CNN", cnn_task), ("MLP", mlp_task)):
        torch.manual_seed(0)
        model, make_optimizer, loss_fn = make("cpu")
        optimizer = make_optimizer(model)
        task = (model, optimizer, loss_fn, BareMonitor(model, optimizer))
        for monitored in (False, True):  # warm-up
            time_block(task, 16, monitored)
        plain, bare = [], []
        for r in range(args.rounds):
            order = (False, True) if r % 2 == 0 else (True, False)
            for monitored in order:
                (bare if monitored else plain).append(time_block(task, args.block, monitored))
        ratio = statistics.median(b / p for b, p in zip(bare, plain))
        last = task[3].records[-1]  # (what the monitor read on its last step: the work is real)
        read = f"{len(last['values'])} numbers, {len(last['fired'])} unit masks"
        print(
            f"| {name} | {statistics.median(plain) * 1e3:.2f} ms | {statistics.median(bare) * 1e3:.2f} ms "
            f"| {ratio:.3f}x | {read} |"
        )


if __name__ == "__main__":
    main()
