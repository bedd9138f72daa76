"""Faulty: a regression net on digits (predict the digit as a number) whose output has shape (N, 1) while the
targets have shape (N,): `mse_loss` broadcasts them to (N, N), every prediction meets every target of the batch,
and the gradient pulls each prediction to the batch's mean target. The model learns the mean and nothing more:
a stalled loss, named at `mse_loss`, whatever the learning rate."""

import warnings

import torch
from _common import batches, digits, parse
from torch import nn

args = parse(steps=240)
warnings.filterwarnings("ignore", message="Using a target size")  # (PyTorch's own warning, easy to miss in a log)

model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
x, labels = digits()
y = labels.float()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
losses = []
for xb, yb in batches(x, y, 64, args.seed, args.steps):
    loss = nn.functional.mse_loss(model(xb), yb)  # (64, 1) against (64,): the bug
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
