"""Faulty: a vanilla tanh RNN asked to remember the sign of its first input over 60 steps. tanh' <= 1 and a
contracting W_hh make the gradient reaching the first time steps vanish: the loss cannot learn the dependency
and stays at chance: vanishing_gradient at rnn (across time)."""

import torch
from _common import parse
from torch import nn

args = parse(steps=160)
T, HIDDEN = 60, 32


class FirstSignClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(1, HIDDEN, batch_first=True)  # nonlinearity tanh
        self.head = nn.Linear(HIDDEN, 2)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


model = FirstSignClassifier()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
generator = torch.Generator().manual_seed(args.seed)
losses = []
for _step in range(args.steps):
    x = torch.randn(32, T, 1, generator=generator)
    y = (x[:, 0, 0] > 0).long()  # the label depends on the first time step only
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
