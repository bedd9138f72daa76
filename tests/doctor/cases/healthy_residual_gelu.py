"""Healthy: a residual MLP (pre-LayerNorm blocks, GELU) on digits with AdamW."""

import torch
from _common import batches, digits, parse
from torch import nn

args = parse(steps=150)


class ResidualBlock(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 2 * width)
        self.fc2 = nn.Linear(2 * width, width)

    def forward(self, x):
        return x + self.fc2(nn.functional.gelu(self.fc1(self.norm(x))))


class ResidualMLP(nn.Module):
    def __init__(self, width=64, depth=4):
        super().__init__()
        self.stem = nn.Linear(64, width)
        self.blocks = nn.Sequential(*[ResidualBlock(width) for _ in range(depth)])
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)))


x, y = digits()
model = ResidualMLP()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
losses = []
for xb, yb in batches(x, y, 64, args.seed, args.steps):
    loss = nn.functional.cross_entropy(model(xb), yb)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
