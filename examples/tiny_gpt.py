"""A tiny GPT: a decoder-only transformer that writes verse, one character at a time.

The same task as char_lstm.py, with attention instead of recurrence. Each character becomes a vector (token
embedding) plus a vector for its position (position embedding); two transformer blocks (layer norm, causal
self-attention that only looks backwards, layer norm, an MLP, each wrapped in a residual connection) mix
information between positions; a last layer norm and a linear head score the next character.

As in char_lstm.py, the loss printed is that of the training batch, on a small corpus. Over 300 steps it falls
more slowly than the LSTM's (to about 1.3, against 0.9), so the sample is rougher. About a minute on a laptop
CPU, the slowest of the examples.

    python examples/tiny_gpt.py [--steps 300] [--seed 0]
"""

import argparse
import math

import numpy as np

import leakygrad as lg
from leakygrad import nn, optim
from leakygrad.data import char_corpus
from leakygrad.nn import functional as F


class TinyGPT(nn.Module):
    def __init__(self, vocab_size: int, context: int = 64, width: int = 64, heads: int = 4, depth: int = 2):
        super().__init__()
        self.context = context
        self.token_embedding = nn.Embedding(vocab_size, width)
        self.position_embedding = nn.Embedding(context, width)
        self.blocks = nn.Sequential(*[nn.Block(width, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab_size)

    def forward(self, ids: lg.Tensor) -> lg.Tensor:
        time_steps = ids.shape[1]
        positions = np.arange(time_steps)
        x = self.token_embedding(ids) + self.position_embedding(positions)  # (batch, time, width)
        return self.head(self.norm(self.blocks(x)))  # (batch, time, vocab)


def sample(model: TinyGPT, corpus, prompt: str, length: int, rng, temperature: float = 0.8) -> str:
    model.eval()
    ids = list(corpus.encode(prompt))
    with lg.no_grad():
        for _ in range(length):
            window = np.array([ids[-model.context :]])
            scores = model(lg.Tensor(window)).data[0, -1].astype(np.float64) / temperature
            probabilities = np.exp(scores - scores.max())
            ids.append(rng.choice(len(probabilities), p=probabilities / probabilities.sum()))
    model.train()
    return corpus.decode(ids)


def main(steps: int = 300, seed: int = 0, verbose: bool = True) -> dict:
    lg.manual_seed(seed)
    rng = np.random.default_rng(seed)
    corpus = char_corpus()
    inputs, targets = corpus.windows(seq_len=64, stride=8)
    model = TinyGPT(corpus.vocab_size)
    optimizer = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    warmup = optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=30)  # gentle first steps

    losses = []
    for step in range(1, steps + 1):
        batch = rng.integers(0, len(inputs), size=32)
        scores = model(lg.Tensor(inputs[batch]))
        loss = F.cross_entropy(scores.reshape(-1, corpus.vocab_size), targets[batch].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optim.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        warmup.step()
        losses.append(loss.item())
        if verbose and (step == 1 or step % 50 == 0):
            print(f"step {step:4d}   loss {loss.item():.3f}   (a uniform guess: {math.log(corpus.vocab_size):.3f})")

    text = sample(model, corpus, prompt="Shall I ", length=200, rng=rng)
    if verbose:
        print("\nsample:\n" + text)
    return {"losses": losses, "uniform_loss": math.log(corpus.vocab_size), "sample": text}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Train a tiny GPT on the built-in corpus.")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(args.steps, args.seed)
