"""Healthy: a binary classifier (digit 0-4 vs 5-9) ending in nn.Sigmoid with BCELoss. The output sigmoid
saturates as the model grows confident; with a log loss that is fine (the loss's 1/(y(1-y)) cancels sigma')."""

import torch
from _common import batches, digits, parse
from torch import nn

args = parse(steps=200)

model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1), nn.Sigmoid())
x, y = digits()
y = (y >= 5).float()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
losses = []
for xb, yb in batches(x, y, 64, args.seed, args.steps):
    loss = nn.functional.binary_cross_entropy(model(xb).squeeze(1), yb)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
