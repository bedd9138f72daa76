"""A deep sigmoid network that barely learns, and its fix: an ordinary PyTorch training script.

Ten sigmoid layers with PyTorch's default initialisation learn to read the 8x8 digits with plain SGD. Each
sigmoid multiplies the gradient flowing back through it by sigma'(z) <= 0.25, so the first layers receive
almost nothing: the classic vanishing gradient. `--fixed` trains the same depth with ReLU and He
initialisation instead, whose local derivative is 1 wherever a unit is active.

    python deep_sigmoid.py [--fixed] [--steps 200] [--seed 0]
    leakygrad doctor deep_sigmoid.py           # the doctor names the leak; with --fixed it finds none
"""

import argparse

import numpy as np
import torch
from torch import nn

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--fixed", action="store_true", help="ReLU and He initialisation instead of sigmoid")
parser.add_argument("--steps", type=int, default=200)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()
torch.manual_seed(args.seed)

try:  # scikit-learn's bundled digits (no download); without it, a synthetic stand-in of the same shape
    from sklearn.datasets import load_digits

    digits = load_digits()
    x, y = digits.data.astype(np.float32), digits.target.astype(np.int64)
except ImportError:
    rng = np.random.default_rng(args.seed)
    centres = rng.normal(size=(10, 64)).astype(np.float32)
    y = rng.integers(0, 10, 1797)
    x = centres[y] + rng.normal(size=(1797, 64)).astype(np.float32)
x = torch.from_numpy((x - x.mean(0)) / (x.std(0) + 1e-6))
y = torch.from_numpy(y)

layers = []
for _ in range(10):
    linear = nn.Linear(64, 64)
    if args.fixed:
        nn.init.kaiming_normal_(linear.weight, nonlinearity="relu")
        nn.init.zeros_(linear.bias)
    layers += [linear, nn.ReLU() if args.fixed else nn.Sigmoid()]
model = nn.Sequential(*layers, nn.Linear(64, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

generator = torch.Generator().manual_seed(args.seed)
for step in range(args.steps):
    batch = torch.randint(0, len(x), (64,), generator=generator)
    loss = nn.functional.cross_entropy(model(x[batch]), y[batch])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 50 == 0 or step == args.steps - 1:
        with torch.no_grad():
            accuracy = (model(x).argmax(1) == y).float().mean().item()
        print(f"step {step:4d}   loss {loss.item():.3f}   training accuracy {accuracy:.1%}")
