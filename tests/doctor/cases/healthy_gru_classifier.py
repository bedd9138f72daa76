"""Healthy: an embedding + GRU classifier on token sequences (label: does token 3 occur in the first half),
Adam with gradient clipping."""

import torch
from _common import parse
from torch import nn

args = parse(steps=150)
T, VOCAB = 24, 8


class GRUClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, 16)
        self.gru = nn.GRU(16, 32, batch_first=True)
        self.head = nn.Linear(32, 2)

    def forward(self, tokens):
        out, _ = self.gru(self.embedding(tokens))
        return self.head(out[:, -1])


model = GRUClassifier()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
generator = torch.Generator().manual_seed(args.seed)
losses = []
for _step in range(args.steps):
    tokens = torch.randint(0, VOCAB, (64, T), generator=generator)
    label = (tokens[:, : T // 2] == 3).any(dim=1).long()
    loss = nn.functional.cross_entropy(model(tokens), label)
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
