"""Healthy: a 4-layer tanh MLP with Xavier initialisation on digits, SGD with momentum."""

import torch
from _common import batches, digits, parse
from torch import nn

args = parse(steps=200)

model = nn.Sequential(
    nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 10)
)  # fmt: skip
for layer in model:
    if isinstance(layer, nn.Linear):
        nn.init.xavier_uniform_(layer.weight, gain=nn.init.calculate_gain("tanh"))
        nn.init.zeros_(layer.bias)
x, y = digits()
optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
losses = []
for xb, yb in batches(x, y, 64, args.seed, args.steps):
    loss = nn.functional.cross_entropy(model(xb), yb)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
