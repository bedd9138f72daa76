"""Healthy: a tiny GPT (2 pre-norm blocks, causal self-attention written out, GELU MLP, AdamW) learning
characters of a small generated text."""

import math

import torch
from _common import parse
from torch import nn
from torch.nn import functional as F

args = parse(steps=150)
CONTEXT, WIDTH, HEADS, BLOCKS = 32, 48, 4, 2

words = "the doctor watches the gradient flow through every layer of the network and names the leak".split()
generator = torch.Generator().manual_seed(args.seed)
text = " ".join(words[i] for i in torch.randint(0, len(words), (3000,), generator=generator).tolist())
vocab = sorted(set(text))
data = torch.tensor([vocab.index(c) for c in text])


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.register_buffer("mask", torch.tril(torch.ones(CONTEXT, CONTEXT, dtype=torch.bool)))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(WIDTH, dim=2)
        q, k, v = (z.view(b, t, HEADS, c // HEADS).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(c // HEADS)
        scores = scores.masked_fill(~self.mask[:t, :t], float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.attention = CausalSelfAttention()
        self.mlp = nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH))

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(len(vocab), WIDTH)
        self.positions = nn.Embedding(CONTEXT, WIDTH)
        self.blocks = nn.Sequential(*[Block() for _ in range(BLOCKS)])
        self.ln = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, len(vocab))

    def forward(self, idx):
        x = self.tokens(idx) + self.positions(torch.arange(idx.shape[1]))
        return self.head(self.ln(self.blocks(x)))


model = TinyGPT()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
losses = []
for _step in range(args.steps):
    starts = torch.randint(0, len(data) - CONTEXT - 1, (16,), generator=generator)
    x = torch.stack([data[s : s + CONTEXT] for s in starts])
    y = torch.stack([data[s + 1 : s + CONTEXT + 1] for s in starts])
    logits = model(x)
    loss = F.cross_entropy(logits.reshape(-1, len(vocab)), y.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
