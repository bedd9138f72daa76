"""Faulty: features standardised with `(x - mean) / std` where one pixel is 0 in every image (std 0): 0/0 puts NaN
in that column of every batch, outside the autograd graph. The first layer reads it: nonfinite at `input of
model.0` (phase input), not at the layer's matmul, with the advice to check the data and its preprocessing."""

import torch
from _common import batches, parse
from sklearn.datasets import load_digits
from torch import nn

args = parse(steps=30)

data = load_digits()
x = torch.tensor(data.data, dtype=torch.float32)
x = (x - x.mean(0)) / x.std(0)  # the bug: pixel (0, 0) is 0 in every image, so its std is 0 and 0/0 = NaN
y = torch.tensor(data.target)
model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
losses = []
for xb, yb in batches(x, y, 64, args.seed, args.steps):
    loss = nn.functional.cross_entropy(model(xb), yb)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
