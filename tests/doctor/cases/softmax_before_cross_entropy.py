"""Faulty: the model ends in nn.Softmax and its output goes to nn.CrossEntropyLoss, which applies log_softmax itself.
The second softmax sees inputs in [0, 1]: the loss cannot fall below log(1 + 9/e) = 1.46, and the gradient is
multiplied by the first softmax's derivative on its way back: with plain SGD the loss barely moves.
vanishing_gradient at model.5, the softmax."""

import torch
from _common import batches, digits, parse
from torch import nn

args = parse(steps=300)

model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10), nn.Softmax(dim=1))
x, y = digits()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
criterion = nn.CrossEntropyLoss()
losses = []
for xb, yb in batches(x, y, 64, args.seed, args.steps):
    loss = criterion(model(xb), yb)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
