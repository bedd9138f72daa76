"""Faulty: a vanilla tanh RNN whose recurrent matrix is 3 x orthogonal (the chaotic regime of Pascanu et al.
2013). Backprop through time multiplies the gradient by W_hh^T diag(tanh') at every step; here that product has
gain above 1, so over 40 steps the gradient at the earliest time steps grows orders of magnitude above the last,
while the forward activations stay bounded by tanh: exploding_gradient at rnn (across time)."""

import torch
from _common import parse
from torch import nn

args = parse(steps=120)
T, FEATURES, HIDDEN = 40, 4, 32


class SequenceRegressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(FEATURES, HIDDEN, batch_first=True)
        self.head = nn.Linear(HIDDEN, 1)
        with torch.no_grad():
            nn.init.orthogonal_(self.rnn.weight_hh_l0)
            self.rnn.weight_hh_l0.mul_(3.0)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


model = SequenceRegressor()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
generator = torch.Generator().manual_seed(args.seed)
losses = []
for _step in range(args.steps):
    x = torch.randn(32, T, FEATURES, generator=generator)
    y = x[:, :, 0].mean(dim=1, keepdim=True)  # the mean of the first feature over the sequence
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3g}")
