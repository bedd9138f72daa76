"""Faulty: a regression MLP trained with SGD (momentum 0.9) at a learning rate far too high. Each step
overshoots the minimum by more than the last, the loss climbs by orders of magnitude, and each update changes
the weights by a large share of their size: diverging_loss (with the update/weight ratio as evidence)."""

import torch
from _common import parse
from torch import nn

args = parse(steps=100)

generator = torch.Generator().manual_seed(args.seed)
x = torch.randn(512, 16, generator=generator)
y = x @ torch.randn(16, 1, generator=generator) + 0.1 * torch.randn(512, 1, generator=generator)
model = nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.22, momentum=0.9)
losses = []
for _step in range(args.steps):
    index = torch.randint(0, 512, (64,), generator=generator)
    loss = nn.functional.mse_loss(model(x[index]), y[index])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3g}")
