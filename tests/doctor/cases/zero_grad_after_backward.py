"""Faulty: optimizer.zero_grad() is called between backward() and step(). backward() computes every gradient,
zero_grad() sets them to None, and step() has nothing to apply: no_gradient, with the cause named (the gradient
reached the layers, then was cleared), not a cut graph."""

import torch
from _common import batches, digits, parse
from torch import nn

args = parse(steps=120)

model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
x, y = digits()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
losses = []
for xb, yb in batches(x, y, 64, args.seed, args.steps):
    loss = nn.functional.cross_entropy(model(xb), yb)
    loss.backward()
    optimizer.zero_grad()  # the bug: it clears what backward() just computed
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
