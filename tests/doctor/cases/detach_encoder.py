"""Faulty: the encoder's output is detach()ed before the head (left over from a frozen-features experiment),
yet the optimiser still holds the encoder's parameters. No gradient ever reaches them: no_gradient at encoder,
with the cut between encoder and head named."""

import torch
from _common import batches, digits, parse
from torch import nn

args = parse(steps=120)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU())
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        features = self.encoder(x).detach()  # the bug
        return self.head(features)


x, y = digits()
model = Classifier()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
losses = []
for xb, yb in batches(x, y, 64, args.seed, args.steps):
    loss = nn.functional.cross_entropy(model(xb), yb)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
