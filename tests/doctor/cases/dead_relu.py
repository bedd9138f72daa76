"""Faulty: a ReLU MLP trained with a learning rate far too high. Early large updates push most hidden units'
pre-activations below zero for every input; relu' = 0 there, so they never recover: dead_relu at model.3."""

import torch
from _common import batches, digits, parse
from torch import nn

args = parse(steps=200)

model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
x, y = digits()
optimizer = torch.optim.SGD(model.parameters(), lr=1.0, momentum=0.9)
losses = []
for xb, yb in batches(x, y, 64, args.seed, args.steps):
    loss = nn.functional.cross_entropy(model(xb), yb)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
