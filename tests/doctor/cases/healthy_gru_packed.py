"""Healthy: a GRU over sequences of 5 to 40 steps, packed with `pack_padded_sequence`; the label is whether the
sum of the first feature is positive (every step matters). Late steps hold fewer sequences: no finding."""

import torch
from _common import parse
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

args = parse(steps=200)
T = 40


class PackedGRUClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(3, 32, batch_first=True)
        self.head = nn.Linear(32, 2)

    def forward(self, x, lengths):
        _, h_n = self.gru(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))
        return self.head(h_n[-1])


model = PackedGRUClassifier()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
generator = torch.Generator().manual_seed(args.seed)
losses = []
for _step in range(args.steps):
    lengths = torch.randint(5, T + 1, (64,), generator=generator)
    x = torch.randn(64, T, 3, generator=generator) * (torch.arange(T)[None, :, None] < lengths[:, None, None])
    y = (x[:, :, 0].sum(1) > 0).long()
    loss = nn.functional.cross_entropy(model(x, lengths), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
