"""Healthy: an LSTM on the adding problem (sum the two marked numbers of a 30-step sequence), with gradient
clipping, the standard recipe for recurrent nets."""

import torch
from _common import parse
from torch import nn

args = parse(steps=200)
T = 30


class Adder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(2, 32, batch_first=True)
        self.head = nn.Linear(32, 1)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def adding_batch(size, generator):
    values = torch.rand(size, T, generator=generator)
    marks = torch.zeros(size, T)
    first = torch.randint(0, T // 2, (size,), generator=generator)
    second = torch.randint(T // 2, T, (size,), generator=generator)
    marks[torch.arange(size), first] = 1.0
    marks[torch.arange(size), second] = 1.0
    return torch.stack([values, marks], dim=2), (values * marks).sum(1, keepdim=True)


model = Adder()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
generator = torch.Generator().manual_seed(args.seed)
losses = []
for _step in range(args.steps):
    x, y = adding_batch(64, generator)
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.4f}")
