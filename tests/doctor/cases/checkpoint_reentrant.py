"""Faulty: the encoder is wrapped in torch.utils.checkpoint with use_reentrant=True (to save memory), and its input
is the data, which does not require grad. The reentrant checkpoint runs the encoder under no_grad and records the
graph again in backward only for inputs that require grad: none does, so no gradient ever reaches the encoder.
no_gradient at encoder, with the checkpoint named and use_reentrant=False as the fix."""

import warnings

import torch
from _common import batches, digits, parse
from torch import nn
from torch.utils.checkpoint import checkpoint

args = parse(steps=120)
warnings.filterwarnings("ignore", message="None of the inputs have requires_grad=True")  # PyTorch's only hint


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU())
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        features = checkpoint(self.encoder, x, use_reentrant=True)  # the bug: x does not require grad
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
