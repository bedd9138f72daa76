"""Healthy: a frozen pretrained-style encoder done right: requires_grad_(False) and left out of the optimiser,
so only the head trains (contrast with detach_encoder.py)."""

import torch
from _common import batches, digits, parse
from torch import nn

args = parse(steps=120)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU())
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.encoder(x))


x, y = digits()
model = Classifier()
model.encoder.requires_grad_(False)
optimizer = torch.optim.Adam(model.head.parameters(), lr=3e-3)
losses = []
for xb, yb in batches(x, y, 64, args.seed, args.steps):
    loss = nn.functional.cross_entropy(model(xb), yb)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
