"""Faulty: a 10-layer sigmoid MLP on digits with SGD. Each sigmoid multiplies the gradient by at most 0.25, so
the gradient reaching the first layer is orders of magnitude below the last: vanishing_gradient at net.0."""

import torch
from _common import batches, digits, parse
from torch import nn

args = parse(steps=160)


class DeepSigmoid(nn.Module):
    def __init__(self, depth=10, width=64):
        super().__init__()
        layers = []
        for _ in range(depth):
            layers += [nn.Linear(width, width), nn.Sigmoid()]
        self.net = nn.Sequential(*layers)
        self.out = nn.Linear(width, 10)

    def forward(self, x):
        return self.out(self.net(x))


x, y = digits()
model = DeepSigmoid()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
losses = []
for xb, yb in batches(x, y, 64, args.seed, args.steps):
    loss = nn.functional.cross_entropy(model(xb), yb)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
