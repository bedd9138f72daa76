"""Faulty: a ReLU MLP on digits whose layers were all initialised with one constant (weights 0.01, biases 0), a
"deterministic" start. Every hidden unit of a layer computes the same function of the same inputs, so backprop
hands each the same gradient and every update keeps them alike: each hidden layer acts as one unit, and the loss
stalls far above what the network could reach. Named at model.0 (the first alike layer), with model.2 listed."""

import torch
from _common import batches, digits, parse
from torch import nn

args = parse(steps=240)

model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
for layer in (model[0], model[2], model[4]):
    nn.init.constant_(layer.weight, 0.01)  # the bug: units that start alike stay alike
    nn.init.zeros_(layer.bias)
x, y = digits()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
losses = []
for xb, yb in batches(x, y, 64, args.seed, args.steps):
    loss = nn.functional.cross_entropy(model(xb), yb)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
