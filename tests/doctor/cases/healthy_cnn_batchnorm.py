"""Healthy: a small CNN with batch norm on the 8x8 digits as images, SGD with momentum."""

import torch
from _common import batches, digits, parse
from torch import nn

args = parse(steps=150)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
        )  # fmt: skip
        self.classifier = nn.Linear(32 * 4 * 4, 10)

    def forward(self, x):
        return self.classifier(self.features(x.view(-1, 1, 8, 8)).flatten(1))


x, y = digits()
model = SmallCNN()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
losses = []
for xb, yb in batches(x, y, 64, args.seed, args.steps):
    loss = nn.functional.cross_entropy(model(xb), yb)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
