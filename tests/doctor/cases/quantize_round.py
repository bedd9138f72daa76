"""Faulty: activations quantised with torch.round (no straight-through estimator). round's derivative is 0
everywhere, so nothing below it learns: blocked_gradient at round, and no_gradient for the layer below."""

import torch
from _common import batches, digits, parse
from torch import nn

args = parse(steps=120)


class QuantisedMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = torch.round(h * 4) / 4  # 2-bit-ish fixed point; needs x + (round(x) - x).detach()
        return self.fc2(h)


x, y = digits()
model = QuantisedMLP()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
losses = []
for xb, yb in batches(x, y, 64, args.seed, args.steps):
    loss = nn.functional.cross_entropy(model(xb), yb)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
