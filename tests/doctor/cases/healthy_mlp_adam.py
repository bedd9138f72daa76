"""Healthy: a ReLU MLP on digits with Adam (lr 1e-3), the everyday baseline."""

import torch
from _common import batches, digits, parse
from torch import nn

args = parse(steps=200)

model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))
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
