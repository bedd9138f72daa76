"""The doctor on a GPU: the same findings as on the CPU, the training unchanged, the statistics reduced on the device.

    python benchmarks/doctor_on_gpu.py                  # needs CUDA; about a minute
    python benchmarks/doctor_on_gpu.py --device cpu     # the same checks with the CPU in the GPU's place

The unit tests run on the CPU only (CI has no GPU); this script checks, where a GPU is lent, what the CPU cannot:

1. **Findings.** Five small faulty models (a deep sigmoid MLP, a ReLU net killed by a learning rate of 1, a DQN
   loss with its TD error clamped, a log of an underflowed softmax, a vanilla RNN that explodes over time) train
   from the same initial weights on the same batches on the CPU and on the device. Each run must give its
   expected finding at the expected place, and both runs the same other errors; warnings are shown. (Where a
   GPU names another place by design, ON_A_GPU says so and why.)
2. **Training unchanged.** On the device, with PyTorch's deterministic kernels, the losses and final parameters of
   an MLP (Adam) and a CNN with batch norm (SGD with momentum) are bit for bit the same with the doctor attached
   (statistics on every step) as without it.
3. **Where the statistics are reduced, and whether the host waits.** Under `torch.profiler`, the device-to-host
   copies of a run and the calls in which the host waited for the device: the doctor reduces its statistics on
   the device and sends them in one copy per sampled step (and the losses of the steps between in one more),
   so a run of S steps with statistics every E steps makes at most 2 S / E copies, not one per layer or per
   statistic; and it never waits for them (a wait would stall the host until the device caught up, and leave
   the device idle while the host prepared the next step).

Exit status 0 when every check passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
from pathlib import Path

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS: set before CUDA starts
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

import leakygrad.doctor as doctor  # noqa: E402


# --- five faulty runs: (model, optimiser, the loss of step s) on a device ----------------------------------------
def batches(steps, shape, classes, seed=0):
    """The same batches on every device: Gaussian blobs made on the CPU from a seeded generator."""
    generator = torch.Generator().manual_seed(seed)
    centres = torch.randn(classes, *shape[1:], generator=generator)
    out = []
    for _ in range(steps):
        y = torch.randint(0, classes, (shape[0],), generator=generator)
        out.append((centres[y] + torch.randn(shape, generator=generator), y))
    return out


def digit_batches(steps, device, size=64):
    """scikit-learn's bundled 8x8 digits, standardised, in shuffled batches of `size` (made on the CPU)."""
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.tensor(data.data, dtype=torch.float32)
    x, y = (x - x.mean(0)) / (x.std(0) + 1e-6), torch.tensor(data.target)
    generator = torch.Generator().manual_seed(0)
    out = []
    while len(out) < steps:
        order = torch.randperm(len(x), generator=generator)
        for start in range(0, len(x) - size + 1, size):
            index = order[start : start + size]
            out.append((x[index].to(device), y[index].to(device)))
    return out[:steps]


def deep_sigmoid(device, steps):
    layers = []
    for _ in range(10):
        layers += [nn.Linear(64, 64), nn.Sigmoid()]
    model = nn.Sequential(nn.Sequential(*layers), nn.Linear(64, 10)).to(device)
    data = digit_batches(steps, device)
    return model, torch.optim.SGD(model.parameters(), lr=0.1), lambda s: F.cross_entropy(model(data[s][0]), data[s][1])


def dead_relu(device, steps):
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
    model = model.to(device)
    data = digit_batches(steps, device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0, momentum=0.9)
    return model, optimizer, lambda s: F.cross_entropy(model(data[s][0]), data[s][1])


def clamped_td(device, steps):
    model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4)).to(device)
    target = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(0)
    rewards = torch.randn(8, 4, generator=generator) * 4.0
    data = []
    for _ in range(steps):
        state, action = torch.randn(64, 8, generator=generator), torch.randint(0, 4, (64,), generator=generator)
        reward = (state @ rewards).gather(1, action[:, None]).squeeze(1) + 10.0
        data.append([t.to(device) for t in (state, action, reward, state + 0.1 * torch.randn(64, 8))])

    def loss(s):
        state, action, reward, next_state = data[s]
        with torch.no_grad():
            td_target = reward + 0.9 * target(next_state).max(dim=1).values
        td_error = model(state).gather(1, action[:, None]).squeeze(1) - td_target
        return (td_error.clamp(-1.0, 1.0) ** 2).mean()  # the mistake: the error clipped, not the gradient

    return model, torch.optim.Adam(model.parameters(), lr=1e-3), loss


def log_of_softmax(device, steps):
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)
    data = digit_batches(steps, device)

    def loss(s):
        x, y = data[s]
        probabilities = torch.softmax(model(x) * 40.0, dim=1)
        return -(F.one_hot(y, 10).float() * torch.log(probabilities)).sum(dim=1).mean()  # log(0) = -inf

    return model, torch.optim.SGD(model.parameters(), lr=0.05), loss


class SequenceRegressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(4, 32, batch_first=True)
        self.head = nn.Linear(32, 1)
        with torch.no_grad():  # 3 x orthogonal: backprop through time multiplies the gradient by ~3 a step
            nn.init.orthogonal_(self.rnn.weight_hh_l0)
            self.rnn.weight_hh_l0.mul_(3.0)

    def forward(self, x):
        return self.head(self.rnn(x)[0][:, -1])


def exploding_rnn(device, steps):
    model = SequenceRegressor().to(device)
    generator = torch.Generator().manual_seed(0)
    data = []
    for _ in range(steps):
        x = torch.randn(32, 40, 4, generator=generator)
        data.append((x.to(device), x[:, :, 0].mean(dim=1, keepdim=True).to(device)))
    return model, torch.optim.Adam(model.parameters(), lr=1e-3), lambda s: F.mse_loss(model(data[s][0]), data[s][1])


# name -> (build, steps, what must be found: (symptom, where or a prefix ending in "("), on the CPU and on a GPU)
FAULTY = {
    "deep sigmoid": (deep_sigmoid, 160, ("vanishing_gradient", "sequential.0.0")),
    "dead ReLU": (dead_relu, 160, ("dead_relu", "sequential.3")),
    "clamped TD error": (clamped_td, 96, ("blocked_gradient", "clamp")),
    "log of a softmax": (log_of_softmax, 48, ("nonfinite", "log")),
    "exploding RNN": (exploding_rnn, 120, ("exploding_gradient", "rnn (")),
}
# Where a GPU differs, by design. The CPU reads every step's loss at once, and a NaN loss on a step without
# statistics is traced through the live graph to its operation (log). A GPU's losses are read a few steps late,
# without waiting for the device (a wait every step cost 2x), so the graph is gone by then: the NaN is found at
# the next sampled step, in the weights the bad update broke, named at the layer nearest the loss and dated
# from the step whose loss was first non-finite, with the advice to rerun with --every 1 (a NaN born on a sampled
# step is named at its operation on a GPU too).
ON_A_GPU = {"log of a softmax": ("nonfinite", "sequential.2")}


def train(build, steps, device, every, watch=True):
    torch.manual_seed(0)
    model, optimizer, loss_of_step = build(device, steps)
    losses = []
    dr = doctor.watch(model, optimizer, every=every) if watch else None
    if dr is not None:
        dr.__enter__()
    try:
        for s in range(steps):
            loss = loss_of_step(s)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.detach())
    finally:
        if dr is not None:
            dr.__exit__(None, None, None)
    return model, torch.stack(losses).cpu(), dr


def matches(finding, symptom, where):
    return finding.symptom == symptom and (
        finding.where.startswith(where) if where.endswith("(") else finding.where == where
    )


def check_findings(device) -> bool:
    print(f"\n1. Findings, CPU against {device} (statistics every 4 steps; a GPU's expectation in brackets)")
    print("| run | expected | CPU: first step | device: first step | same findings on both | pass |")
    print("|---|---|---|---|---|---|")
    passed = True
    for name, (build, steps, expected) in FAULTY.items():
        runs, expect = {}, {"cpu": expected, device: ON_A_GPU.get(name, expected) if device != "cpu" else expected}
        for place in ("cpu", device):
            _, _, dr = train(build, steps, place, every=4)
            runs[place] = dr
        firsts = []
        for place in ("cpu", device):
            found = [f for f in runs[place].findings if matches(f, *expect[place])]
            firsts.append(str(found[0].first_step) if found else "not found")
        keys = [sorted((f.symptom, f.where, f.severity) for f in runs[place].findings) for place in ("cpu", device)]
        errors = [{key for key in found if key[2] == "error"} for found in keys]
        errors = [found - {(*expect[place], "error")} for found, place in zip(errors, ("cpu", device))]
        notes = runs["cpu"].notes + runs[device].notes
        ok = "not found" not in firsts and errors[0] == errors[1] and not notes
        passed &= ok
        same = "yes" if keys[0] == keys[1] else f"other errors {'the same' if errors[0] == errors[1] else 'differ'}"
        wanted = " at ".join(expected) + ("" if expect[device] == expected else f" ({' at '.join(expect[device])})")
        print(f"| {name} | {wanted} | {firsts[0]} | {firsts[1]} | {same} | {'yes' if ok else 'NO'} |")
        if keys[0] != keys[1]:
            print(f"    CPU: {keys[0]}\n    {device}: {keys[1]}")
        for note in notes:
            print(f"    internal note: {note}")
    return passed


# --- training unchanged -----------------------------------------------------------------------------------------
def mlp(device, steps):
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)
    data = [(x.to(device), y.to(device)) for x, y in batches(steps, (128, 64), 10)]
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return model, optimizer, lambda s: F.cross_entropy(model(data[s][0]), data[s][1])


def cnn(device, steps):
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 10),
    ).to(device)  # fmt: skip
    data = [(x.to(device), y.to(device)) for x, y in batches(steps, (32, 1, 28, 28), 10)]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return model, optimizer, lambda s: F.cross_entropy(model(data[s][0]), data[s][1])


def check_unchanged(device) -> bool:
    print(f"\n2. Training unchanged on {device}: losses and parameters without and with the doctor (every step)")
    print("| model | steps | losses identical | parameters identical | pass |")
    print("|---|---|---|---|---|")
    torch.use_deterministic_algorithms(True)
    passed = True
    try:
        for name, build in (("MLP, Adam", mlp), ("CNN with batch norm, SGD", cnn)):
            plain_model, plain_losses, _ = train(build, 40, device, every=1, watch=False)
            watched_model, watched_losses, dr = train(build, 40, device, every=1)
            same_losses = torch.equal(plain_losses, watched_losses)
            plain_state, watched_state = plain_model.state_dict(), watched_model.state_dict()
            same_params = all(torch.equal(plain_state[k], watched_state[k]) for k in plain_state)
            ok = same_losses and same_params and not dr.notes
            passed &= ok
            print(f"| {name} | 40 | {'yes' if same_losses else 'NO'} | {'yes' if same_params else 'NO'} "
                  f"| {'yes' if ok else 'NO'} |")  # fmt: skip
    finally:
        torch.use_deterministic_algorithms(False)
    return passed


# --- device-to-host copies ----------------------------------------------------------------------------------------
WAITS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy")  # (not ...Async)


def copies_and_waits(device, steps, every) -> tuple[int, int]:
    """While an MLP trains `steps` steps (every=None: without the doctor): the device-to-host copies the device
    made, and the calls in which the host waited for the device."""
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    model, optimizer, loss_of_step = mlp(device, steps)
    dr = doctor.watch(model, optimizer, every=every) if every else None
    if dr is not None:
        dr.__enter__()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as profiler:
        for s in range(steps):
            loss = loss_of_step(s)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    if dr is not None:
        dr.__exit__(None, None, None)  # (reads the statistics still on their way: that waits, outside the count)
        assert dr.history.records_seen == steps // every
    events = profiler.events()
    copies = sum(1 for event in events if "memcpy dtoh" in event.name.lower())
    waits = sum(1 for event in events if event.name in WAITS)
    return copies, waits


def check_copies(device) -> bool:
    if not device.startswith("cuda"):
        print("\n3. Device-to-host copies: skipped (there is no device memory on the CPU)")
        return True
    steps = 64
    print(f"\n3. Device-to-host copies, and waits of the host for the device, while an MLP trains {steps} steps")
    print("| run | copies | copies per sampled step | host waited | pass |")
    print("|---|---|---|---|---|")
    plain_copies, plain_waits = copies_and_waits(device, steps, None)
    print(f"| without the doctor | {plain_copies} | | {plain_waits} | |")
    passed = True
    for every in (16, 1):
        sampled = steps // every
        copies, waits = copies_and_waits(device, steps, every)
        copies, waits = copies - plain_copies, waits - plain_waits
        # per sampled step, one copy of its statistics, and the losses of the steps since the last one in another;
        # none at all would mean the profiler saw no copies (the check itself broken)
        ok = 1 <= copies <= 2 * sampled + 1 and waits <= 0
        passed &= ok
        print(f"| doctor, statistics every {every} | {copies} | {copies / sampled:.2f} | {waits} "
              f"| {'yes' if ok else 'NO'} |")  # fmt: skip
    return passed


def main() -> int:
    parser = argparse.ArgumentParser(description="Check the doctor on a GPU against the CPU.")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA device here: run with --device cpu, or on a machine with a GPU", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    name = torch.cuda.get_device_name() if args.device.startswith("cuda") else "CPU"
    print(f"torch {torch.__version__}, device {args.device} ({name})")
    results = [check_findings(args.device), check_unchanged(args.device), check_copies(args.device)]
    print("\nall checks passed" if all(results) else "\nSOME CHECKS FAILED")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
