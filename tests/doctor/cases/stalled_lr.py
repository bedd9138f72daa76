"""Faulty: an MLP on digits trained with SGD at lr = 1e-6: every step moves the weights by about a millionth
of their size and the loss does not move: stalled_loss, with the update/weight ratio as evidence."""

import torch
from _common import batches, digits, parse
from torch import nn

args = parse(steps=160)

model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
x, y = digits()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
losses = []
for xb, yb in batches(x, y, 64, args.seed, args.steps):
    loss = nn.functional.cross_entropy(model(xb), yb)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
