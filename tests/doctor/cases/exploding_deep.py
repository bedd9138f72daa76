"""Faulty: an 8-layer ReLU MLP initialised with std 0.5 on 64-wide layers, 2.8x He's sqrt(2/64). Each layer
multiplies the gradient (on its way back) by about 0.5 * sqrt(64 / 2) = 2.8: exploding_gradient across depth."""

import torch
from _common import batches, digits, parse
from torch import nn

args = parse(steps=120)

layers = []
for _ in range(8):
    layers += [nn.Linear(64, 64), nn.ReLU()]
model = nn.Sequential(*layers, nn.Linear(64, 10))
with torch.no_grad():
    for layer in model:
        if isinstance(layer, nn.Linear):
            layer.weight.normal_(0.0, 0.5)
x, y = digits()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
losses = []
for xb, yb in batches(x, y, 64, args.seed, args.steps):
    loss = nn.functional.cross_entropy(model(xb), yb)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3g}")
