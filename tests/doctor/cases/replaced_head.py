"""Faulty: fine-tuning with a new head, made after the optimiser. The optimiser still holds the old head's
parameters; the new head gets a gradient at every step, and nothing applies it, so it keeps its random initial
weights while the layers below learn around it: unapplied_gradient at model.2, with the old head's parameters
counted as stepped outside the model."""

import torch
from _common import batches, digits, parse
from torch import nn

args = parse(steps=120)

x, y = digits()
model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 5))  # "pretrained" on a 5-class task
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
model[2] = nn.Linear(64, 10)  # the bug: the new 10-class head is not in the optimiser made above
losses = []
for xb, yb in batches(x, y, 64, args.seed, args.steps):
    loss = nn.functional.cross_entropy(model(xb), yb)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
