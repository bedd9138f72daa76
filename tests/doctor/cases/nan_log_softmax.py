"""Faulty: cross-entropy written by hand as -(y * log(softmax(z))) on logits scaled by a temperature of 1/40.
Once a class's probability underflows to 0, log(0) = -inf and 0 * -inf = NaN: nonfinite at log (forward)."""

import torch
from _common import batches, digits, parse
from torch import nn

args = parse(steps=60)

model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
x, y = digits()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
losses = []
for xb, yb in batches(x, y, 64, args.seed, args.steps):
    probabilities = torch.softmax(model(xb) * 40.0, dim=1)
    one_hot = nn.functional.one_hot(yb, 10).float()
    loss = -(one_hot * torch.log(probabilities)).sum(dim=1).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
