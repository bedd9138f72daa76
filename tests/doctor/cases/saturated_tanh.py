"""Faulty: a tanh MLP whose weights start 10x too large (std 1 on 64 inputs): pre-activations of size ~8 put
most tanh outputs at +-1, where tanh' = 1 - tanh^2 is near 0: saturated_activation at model.1 and model.3."""

import torch
from _common import batches, digits, parse
from torch import nn

args = parse(steps=160)

model = nn.Sequential(nn.Linear(64, 128), nn.Tanh(), nn.Linear(128, 128), nn.Tanh(), nn.Linear(128, 10))
with torch.no_grad():
    for layer in model:
        if isinstance(layer, nn.Linear):
            layer.weight.normal_(0.0, 1.0)  # should be about 1/sqrt(fan_in) = 0.125 (Xavier)

x, y = digits()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
losses = []
for xb, yb in batches(x, y, 64, args.seed, args.steps):
    loss = nn.functional.cross_entropy(model(xb), yb)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
