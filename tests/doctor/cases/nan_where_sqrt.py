"""Faulty: a metric-learning loss on pairwise distances, "made safe" with torch.where(d2 > 0, sqrt(d2), 0).
On the diagonal d2 = 0: the forward value is fine, but sqrt's derivative 1/(2 sqrt(0)) is infinite, and the 0
gradient that where sends through the untaken branch becomes 0 * inf = NaN: nonfinite at sqrt (backward)."""

import torch
from _common import batches, digits, parse
from torch import nn

args = parse(steps=40)

model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 16))
x, y = digits()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
losses = []
for xb, yb in batches(x, y, 32, args.seed, args.steps):
    z = model(xb)
    d2 = ((z[:, None, :] - z[None, :, :]) ** 2).sum(-1)
    distance = torch.where(d2 > 0, torch.sqrt(d2), torch.zeros_like(d2))
    same = (yb[:, None] == yb[None, :]).float()
    loss = (same * distance + (1 - same) * torch.relu(5.0 - distance)).mean()  # contrastive loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
