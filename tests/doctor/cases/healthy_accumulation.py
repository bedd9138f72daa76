"""Healthy: gradient accumulation on purpose, 4 micro-batches per optimiser step, zeroed after each step."""

import torch
from _common import batches, digits, parse
from torch import nn

args = parse(steps=80)
MICRO = 4

model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
x, y = digits()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
stream = batches(x, y, 16, args.seed)
losses = []
for _step in range(args.steps):
    total = 0.0
    for _ in range(MICRO):
        xb, yb = next(stream)
        loss = nn.functional.cross_entropy(model(xb), yb) / MICRO
        loss.backward()
        total += loss.item()
    optimizer.step()
    optimizer.zero_grad()
    losses.append(total)
print(f"final loss {losses[-1]:.3f}")
