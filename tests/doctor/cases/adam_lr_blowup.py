"""Faulty: Adam at lr=1.0 (meant 1e-3) on a digits MLP. The first update is far too large: the loss jumps from
ln 10 to thousands, most ReLUs of the second layer die in the jump, and the loss falls back to chance level and
stays there. The smoothed loss seems to fall (from the jump), so the blow-up is measured against the first step:
diverging_loss from step 1, with dead_relu at the layer whose units died."""

import torch
from _common import batches, digits, parse
from torch import nn

args = parse(steps=200)

x, y = digits()
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
optimizer = torch.optim.Adam(model.parameters(), lr=1.0)
losses = []
for xb, yb in batches(x, y, 64, args.seed, args.steps):
    loss = nn.functional.cross_entropy(model(xb), yb)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
