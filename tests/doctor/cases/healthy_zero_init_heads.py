"""Healthy: a residual MLP on digits whose residual branches and output layer start at zero (weights and biases),
as in ReZero, Fixup, zero-initialised ControlNet convolutions and many diffusion and RL heads. Those layers' units
all start alike, but each receives a different gradient (different targets, different units above), so the first
steps part them: nothing to report."""

import torch
from _common import batches, digits, parse
from torch import nn
from torch.nn import functional as F


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.inner, self.out = nn.Linear(width, width), nn.Linear(width, width)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def forward(self, x):
        return x + self.out(F.relu(self.inner(x)))


args = parse(steps=240)

model = nn.Sequential(nn.Linear(64, 64), Block(64), Block(64), nn.Linear(64, 10))
nn.init.zeros_(model[3].weight)
nn.init.zeros_(model[3].bias)
x, y = digits()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
losses = []
for xb, yb in batches(x, y, 64, args.seed, args.steps):
    loss = nn.functional.cross_entropy(model(xb), yb)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
