"""Faulty: the loop never calls optimizer.zero_grad(). backward() adds into .grad, so every step applies the
sum of all gradients so far: accumulating_gradient."""

import torch
from _common import batches, digits, parse
from torch import nn

args = parse(steps=120)

model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
x, y = digits()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
losses = []
for xb, yb in batches(x, y, 64, args.seed, args.steps):
    loss = nn.functional.cross_entropy(model(xb), yb)
    loss.backward()  # the bug: no optimizer.zero_grad() before this
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
