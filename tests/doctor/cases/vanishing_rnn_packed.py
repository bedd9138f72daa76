"""Faulty: the vanishing RNN of vanishing_rnn_time, fed sequences of different lengths (60 to 80 steps) through
`pack_padded_sequence`, the usual way to batch them. The label is the sign of the first input; the gradient
reaching the first steps vanishes: vanishing_gradient at rnn (across time), measured through the packed data."""

import torch
from _common import parse
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

args = parse(steps=160)
T, HIDDEN = 80, 32


class PackedFirstSignClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(1, HIDDEN, batch_first=True)  # nonlinearity tanh
        self.head = nn.Linear(HIDDEN, 2)

    def forward(self, x, lengths):
        _, h_n = self.rnn(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))
        return self.head(h_n[-1])


model = PackedFirstSignClassifier()
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
generator = torch.Generator().manual_seed(args.seed)
losses = []
for _step in range(args.steps):
    lengths = torch.randint(60, T + 1, (32,), generator=generator)
    x = torch.randn(32, T, 1, generator=generator)
    y = (x[:, 0, 0] > 0).long()  # the label depends on the first time step only
    loss = nn.functional.cross_entropy(model(x, lengths), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
