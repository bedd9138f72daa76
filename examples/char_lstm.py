"""A character-level LSTM learns to write verse, one character at a time.

The corpus is the small collection of nursery rhymes and sonnets that ships with leakygrad. The model reads 64
characters and, at every position, predicts the next one: an embedding turns each character into a vector,
the LSTM carries what it has read so far in its cell state, and a linear layer scores the next character.
The loss starts at log(vocabulary size), the loss of a uniform guess, and falls as the model learns spelling,
words and line breaks. Gradient clipping keeps the occasional exploding step in check.

The loss printed is that of the training batch: the corpus is small (about 4,700 characters), and with more
steps the model learns it by heart, so a low loss here means memory more than skill. About half a minute on a
laptop CPU.

    python examples/char_lstm.py [--steps 300] [--seed 0]
"""

import argparse
import math

import numpy as np

import leakygrad as lg
from leakygrad import nn, optim
from leakygrad.data import char_corpus
from leakygrad.nn import functional as F


class CharLSTM(nn.Module):
    def __init__(self, vocab_size: int, embed: int = 32, hidden: int = 128):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed)
        self.lstm = nn.LSTM(embed, hidden, batch_first=True)
        self.head = nn.Linear(hidden, vocab_size)

    def forward(self, ids, state=None):
        outputs, state = self.lstm(self.embed(ids), state)  # outputs: (batch, time, hidden)
        return self.head(outputs), state  # scores for the next character at every position


def sample(model: CharLSTM, corpus, prompt: str, length: int, rng, temperature: float = 0.8) -> str:
    """Feed the prompt, then repeatedly draw the next character from the model's softmax."""
    model.eval()
    ids = list(corpus.encode(prompt))
    with lg.no_grad():
        scores, state = model(lg.Tensor(np.array([ids])))
        for _ in range(length):
            probabilities = (scores.data[0, -1] / temperature).astype(np.float64)
            probabilities = np.exp(probabilities - probabilities.max())
            next_id = rng.choice(len(probabilities), p=probabilities / probabilities.sum())
            ids.append(next_id)
            scores, state = model(lg.Tensor(np.array([[next_id]])), state)
    model.train()
    return corpus.decode(ids)


def main(steps: int = 300, seed: int = 0, verbose: bool = True) -> dict:
    lg.manual_seed(seed)
    rng = np.random.default_rng(seed)
    corpus = char_corpus()
    inputs, targets = corpus.windows(seq_len=64, stride=16)
    model = CharLSTM(corpus.vocab_size)
    optimizer = optim.Adam(model.parameters(), lr=3e-3)

    losses = []
    for step in range(1, steps + 1):
        batch = rng.integers(0, len(inputs), size=32)
        scores, _ = model(lg.Tensor(inputs[batch]))
        loss = F.cross_entropy(scores.reshape(-1, corpus.vocab_size), targets[batch].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optim.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        losses.append(loss.item())
        if verbose and (step == 1 or step % 50 == 0):
            print(f"step {step:4d}   loss {loss.item():.3f}   (a uniform guess: {math.log(corpus.vocab_size):.3f})")

    text = sample(model, corpus, prompt="Shall I ", length=200, rng=rng)
    if verbose:
        print("\nsample:\n" + text)
    return {"losses": losses, "uniform_loss": math.log(corpus.vocab_size), "sample": text}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Train a character-level LSTM on the built-in corpus.")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(args.steps, args.seed)
