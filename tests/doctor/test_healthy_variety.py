"""A false-alarm hunt: small, realistic, healthy training runs that are not in the labelled suite, each watched
with `watch(model, optimizer, every=...)`. None may yield an error; the few warnings that are right (a forecast
that rightly forgets its early inputs, a hand-written cross-entropy that clamps its probabilities) must say so
and suggest what fits the model.

Each run is seeded, trains on the CPU for a few hundred steps at most, and learns (checked, so that a run that
does not learn cannot pass for a healthy one)."""

import math

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils.rnn import pad_sequence

import leakygrad.doctor

pytestmark = pytest.mark.slow


# --- data and the usual loop -----------------------------------------------------------------------------------------
def digits(standardise=True):
    """scikit-learn's bundled 8x8 digits: X (N, 64) float32 (standardised, or scaled to [0, 1]), y (N,)."""
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.from_numpy(data.data.astype(np.float32))
    x = (x - x.mean(0)) / (x.std(0) + 1e-6) if standardise else x / 16.0
    return x, torch.from_numpy(data.target.astype(np.int64))


def batches(x, y, size, seed):
    """Shuffled minibatches, epoch after epoch, without end."""
    generator = torch.Generator().manual_seed(seed)
    while True:
        order = torch.randperm(len(x), generator=generator)
        for start in range(0, len(x) - size + 1, size):
            index = order[start : start + size]
            yield x[index], y[index]


def train(model, optimizer, every, steps, next_batch, loss_of, clip=None, schedule=None):
    """The plain loop under the doctor: zero_grad, backward, (clip), step, (schedule). Returns (doctor, losses)."""
    losses = []
    with leakygrad.doctor.watch(model, optimizer, every=every) as doctor:
        for step in range(steps):
            loss = loss_of(*next_batch(step))
            optimizer.zero_grad()
            loss.backward()
            if clip is not None:
                nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            if schedule is not None:
                schedule.step()
            losses.append(loss.item())
    return doctor, losses


# --- the healthy runs ------------------------------------------------------------------------------------------------
def lstm_padded_last_step(every):
    """LSTM over padded sequences of 5 to 30 steps (not packed), reading the output at each one's last real step;
    the label is the sign of the sum of the first feature."""
    g = torch.Generator().manual_seed(0)

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(2, 32, batch_first=True)
            self.head = nn.Linear(32, 2)

        def forward(self, x, lengths):
            out, _ = self.lstm(x)
            return self.head(out[torch.arange(len(x)), lengths - 1])

    def batch(_):
        lengths = torch.randint(5, 31, (32,), generator=g)
        seqs = [torch.randn(int(n), 2, generator=g) for n in lengths]
        labels = torch.tensor([int(s[:, 0].sum() > 0) for s in seqs])
        return pad_sequence(seqs, batch_first=True), lengths, labels

    model = Classifier()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    return train(model, optimizer, every, 200, batch, lambda x, n, y: F.cross_entropy(model(x, n), y))


def gru_seq2seq_reverse(every):
    """GRU encoder-decoder with teacher forcing, reversing sequences of 8 digits; clipped at max_norm=1.0."""
    g = torch.Generator().manual_seed(0)
    vocab, length, begin = 10, 8, 10

    class Seq2Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.src_emb = nn.Embedding(vocab, 32)
            self.tgt_emb = nn.Embedding(vocab + 1, 32)
            self.encoder = nn.GRU(32, 64, batch_first=True)
            self.decoder = nn.GRU(32, 64, batch_first=True)
            self.out = nn.Linear(64, vocab)

        def forward(self, src, tgt_in):
            _, h = self.encoder(self.src_emb(src))
            dec, _ = self.decoder(self.tgt_emb(tgt_in), h)
            return self.out(dec)

    def batch(_):
        src = torch.randint(0, vocab, (64, length), generator=g)
        tgt = src.flip(1)
        return src, torch.cat([torch.full((64, 1), begin), tgt[:, :-1]], 1), tgt

    model = Seq2Seq()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

    def loss_of(src, tgt_in, tgt):
        return F.cross_entropy(model(src, tgt_in).reshape(-1, vocab), tgt.reshape(-1))

    return train(model, optimizer, every, 250, batch, loss_of, clip=1.0)


def tied_embedding_lm(every):
    """Word-level LSTM language model on a Zipf-like Markov chain (rare tokens appear rarely): an embedding with
    padding_idx=0, its weight shared with the output layer, dropout, AdamW, sequences padded at the end."""
    g = torch.Generator().manual_seed(0)
    vocab, width, pad = 50, 48, 0
    probs = 1.0 / torch.arange(1, vocab) ** 1.1
    transitions = torch.softmax(torch.randn(vocab - 1, vocab - 1, generator=g) * 2 + probs.log(), dim=1)

    def batch(_):
        tokens = torch.empty(32, 21, dtype=torch.long)
        tokens[:, 0] = torch.multinomial(probs / probs.sum(), 32, replacement=True, generator=g)
        for t in range(1, 21):
            tokens[:, t] = torch.multinomial(transitions[tokens[:, t - 1]], 1, generator=g).squeeze(1)
        tokens = tokens + 1  # (0 is the padding)
        lengths = torch.randint(10, 22, (32,), generator=g)
        tokens[torch.arange(21)[None, :] >= lengths[:, None]] = pad
        return (tokens,)

    class LanguageModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, width, padding_idx=pad)
            self.lstm = nn.LSTM(width, width, batch_first=True)
            self.drop = nn.Dropout(0.1)
            self.out = nn.Linear(width, vocab)
            self.out.weight = self.emb.weight  # weight tying

        def forward(self, x):
            h, _ = self.lstm(self.drop(self.emb(x)))
            return self.out(self.drop(h))

    model = LanguageModel()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)

    def loss_of(tokens):
        logits = model(tokens[:, :-1])
        return F.cross_entropy(logits.reshape(-1, vocab), tokens[:, 1:].reshape(-1), ignore_index=pad)

    return train(model, optimizer, every, 200, batch, loss_of)


def tiny_vit(every):
    """ViT-like: 2x2 patches of the digits, a class token, two pre-norm blocks with dropout, AdamW with linear
    warm-up then cosine decay to 0, label smoothing."""
    x, y = digits(standardise=False)
    x = x.view(-1, 1, 8, 8)
    width, steps, warm = 48, 200, 20

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1 = nn.LayerNorm(width)
            self.attn = nn.MultiheadAttention(width, 4, dropout=0.1, batch_first=True)
            self.norm2 = nn.LayerNorm(width)
            self.mlp = nn.Sequential(
                nn.Linear(width, 4 * width), nn.GELU(), nn.Dropout(0.1), nn.Linear(4 * width, width)
            )

        def forward(self, h):
            a = self.norm1(h)
            h = h + self.attn(a, a, a, need_weights=False)[0]
            return h + self.mlp(self.norm2(h))

    class ViT(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch = nn.Conv2d(1, width, 2, stride=2)
            self.cls = nn.Parameter(torch.zeros(1, 1, width))
            self.pos = nn.Parameter(torch.randn(1, 17, width) * 0.02)
            self.drop = nn.Dropout(0.1)
            self.blocks = nn.Sequential(Block(), Block())
            self.norm = nn.LayerNorm(width)
            self.head = nn.Linear(width, 10)

        def forward(self, images):
            h = self.patch(images).flatten(2).transpose(1, 2)
            h = torch.cat([self.cls.expand(len(h), -1, -1), h], 1) + self.pos
            return self.head(self.norm(self.blocks(self.drop(h))[:, 0]))

    model = ViT()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.05)

    def factor(s):
        return (s + 1) / warm if s < warm else 0.5 * (1 + math.cos(math.pi * (s - warm) / (steps - warm)))

    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
    stream = batches(x, y, 64, 0)

    def loss_of(images, labels):
        return F.cross_entropy(model(images), labels, label_smoothing=0.1)

    return train(model, optimizer, every, steps, lambda _: next(stream), loss_of, schedule=schedule)


def resnet_frozen_stem(every):
    """ResNet-style CNN with batch norm; its stem frozen with requires_grad_(False) but still handed to the
    optimiser (model.parameters()); SGD with momentum and weight decay."""
    x, y = digits(standardise=False)
    x = x.view(-1, 1, 8, 8)

    class ResBlock(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(channels)
            self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(channels)

        def forward(self, h):
            return F.relu(h + self.bn2(self.conv2(F.relu(self.bn1(self.conv1(h))))))

    stem = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
    model = nn.Sequential(stem, ResBlock(16), ResBlock(16), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))
    stem.requires_grad_(False)  # "pretrained"
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    stream = batches(x, y, 64, 0)
    return train(model, optimizer, every, 150, lambda _: next(stream), lambda a, b: F.cross_entropy(model(a), b))


def no_grad_encoder(every):
    """A frozen encoder run under torch.no_grad() in forward, a trained head; only the head in the optimiser."""
    x, y = digits()

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU())
            self.head = nn.Linear(32, 10)

        def forward(self, images):
            with torch.no_grad():
                features = self.encoder(images)
            return self.head(features)

    model = Classifier()
    optimizer = torch.optim.Adam(model.head.parameters(), lr=1e-2)
    stream = batches(x, y, 64, 0)
    return train(model, optimizer, every, 150, lambda _: next(stream), lambda a, b: F.cross_entropy(model(a), b))


def digits_autoencoder(every, loss_of, lr, steps):
    """Autoencoder of the digits (pixels in [0, 1]): ReLU encoder and decoder around a linear 8-unit bottleneck,
    and a sigmoid output."""
    x, y = digits(standardise=False)
    model = nn.Sequential(
        nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 8), nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 64), nn.Sigmoid()
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    stream = batches(x, y, 64, 0)
    return train(model, optimizer, every, steps, lambda _: next(stream), lambda a, _: loss_of(model(a), a))


def autoencoder_sigmoid_bce(every):
    """The digits autoencoder with binary cross-entropy on its sigmoid output."""
    return digits_autoencoder(every, F.binary_cross_entropy, lr=1e-3, steps=200)


def autoencoder_sigmoid_mse(every):
    """The same autoencoder trained longer with a squared error on its sigmoid output (no log to cancel sigma'):
    the background pixels, exactly 0, drive their outputs into the sigmoid's tail, rightly."""
    return digits_autoencoder(every, F.mse_loss, lr=3e-3, steps=600)


def wide_mlp_sgd(every):
    """Wide MLP with LeakyReLU, SiLU and Mish; SGD with Nesterov momentum and weight decay; label smoothing."""
    x, y = digits()
    model = nn.Sequential(
        nn.Linear(64, 512), nn.LeakyReLU(0.1), nn.Linear(512, 512), nn.SiLU(), nn.Linear(512, 256), nn.Mish(),
        nn.Linear(256, 10),
    )  # fmt: skip
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4, nesterov=True)
    stream = batches(x, y, 64, 0)

    def loss_of(images, labels):
        return F.cross_entropy(model(images), labels, label_smoothing=0.1)

    return train(model, optimizer, every, 200, lambda _: next(stream), loss_of)


def mobilenet_style_cnn(every):
    """MobileNet-v3-style blocks on the digits: convolutions with BatchNorm and ReLU6 or Hardswish, and a
    squeeze-excitation gate through Hardsigmoid (open or shut by design): none dead or saturated."""
    x, y = digits()
    x = x.reshape(-1, 1, 8, 8)

    class SqueezeExcite(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.squeeze, self.excite = nn.Linear(channels, channels // 4), nn.Linear(channels // 4, channels)

        def forward(self, maps):
            weights = F.hardsigmoid(self.excite(F.relu(self.squeeze(maps.mean(dim=(2, 3))))))
            return maps * weights[:, :, None, None]

    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU6(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.Hardswish(), SqueezeExcite(32),
        nn.Flatten(), nn.Linear(32 * 16, 64), nn.Hardswish(), nn.Linear(64, 10),
    )  # fmt: skip
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    stream = batches(x, y, 64, 0)

    def loss_of(images, labels):
        return F.cross_entropy(model(images), labels)

    return train(model, optimizer, every, 150, lambda _: next(stream), loss_of)


def regression_to_near_zero(every):
    """A tanh MLP fitting sin(x . w) with MSE, converging towards zero loss (not stalled once it has learned)."""
    g = torch.Generator().manual_seed(0)
    w = torch.randn(8, 1, generator=g)
    model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

    def batch(_):
        inputs = torch.randn(64, 8, generator=g)
        return inputs, torch.sin(inputs @ w)

    return train(model, optimizer, every, 400, batch, lambda a, b: F.mse_loss(model(a), b))


def accumulation_with_clipping(every):
    """Gradient accumulation over 4 micro-batches (loss / 4), zero_grad(set_to_none=True) first, the gradient
    clipped at max_norm=1.0 before each AdamW step."""
    x, y = digits()
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3)
    stream = batches(x, y, 16, 0)
    losses = []
    with leakygrad.doctor.watch(model, optimizer, every=every) as doctor:
        for _ in range(100):
            optimizer.zero_grad(set_to_none=True)
            total = 0.0
            for _ in range(4):
                images, labels = next(stream)
                loss = F.cross_entropy(model(images), labels) / 4
                loss.backward()
                total += loss.item()
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            losses.append(total)
    return doctor, losses


def masked_gaussian_nll(every):
    """Heteroscedastic regression with missing targets: a Gaussian NLL (it goes negative), its log-variance kept in
    [-6, 6] by a clamp, the missing entries masked out with torch.where."""
    g = torch.Generator().manual_seed(0)
    w = torch.randn(16, 4, generator=g)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 8))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

    def batch(_):
        inputs = torch.randn(64, 16, generator=g)
        targets = inputs @ w + 0.1 * torch.randn(64, 4, generator=g)
        return inputs, targets, torch.rand(64, 4, generator=g) > 0.3

    def loss_of(inputs, targets, observed):
        out = model(inputs)
        mean, log_var = out[:, :4], out[:, 4:].clamp(-6, 6)
        nll = 0.5 * (log_var + (targets - mean) ** 2 / log_var.exp())
        return torch.where(observed, nll, torch.zeros_like(nll)).sum() / observed.sum()

    return train(model, optimizer, every, 200, batch, loss_of)


def zipf_embedding_bag(every):
    """EmbeddingBag over 2000 tokens drawn from a Zipf law (rare rows get a gradient rarely), then an MLP."""
    g = torch.Generator().manual_seed(0)
    vocab = 2000
    probs = 1.0 / torch.arange(1, vocab + 1) ** 1.2
    probs /= probs.sum()
    score = torch.randn(vocab, generator=g)

    class BagModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.EmbeddingBag(vocab, 32, mode="mean")
            self.mlp = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2))

        def forward(self, tokens):
            return self.mlp(self.emb(tokens))

    def batch(_):
        tokens = torch.multinomial(probs, 64 * 12, replacement=True, generator=g).view(64, 12)
        return tokens, (score[tokens].mean(1) > 0).long()

    model = BagModel()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    return train(model, optimizer, every, 200, batch, lambda t, lab: F.cross_entropy(model(t), lab))


def mixture_of_experts(every, balance=0.1):
    """Top-1 routed mixture of 4 experts with a load-balancing loss (each expert runs on the rows routed to it)."""
    x, y = digits()
    experts = 4

    class MoE(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Linear(64, 64)
            self.router = nn.Linear(64, experts)
            self.experts = nn.ModuleList(
                nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 64)) for _ in range(experts)
            )
            self.head = nn.Linear(64, 10)

        def forward(self, images):
            h = F.gelu(self.inp(images))
            probs = torch.softmax(self.router(h), 1)
            top = probs.argmax(1)
            out = torch.zeros_like(h)
            for e in range(experts):
                rows = top == e
                if rows.any():
                    out[rows] = self.experts[e](h[rows]) * probs[rows, e : e + 1]
            self.balance = experts * (F.one_hot(top, experts).float().mean(0) * probs.mean(0)).sum()
            return self.head(h + out)

    model = MoE()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    stream = batches(x, y, 64, 0)

    def loss_of(images, labels):
        return F.cross_entropy(model(images), labels) + balance * model.balance

    return train(model, optimizer, every, 200, lambda _: next(stream), loss_of)


def rezero_residual_mlp(every):
    """Residual MLP whose branches are scaled by a learned alpha initialised at 0 (ReZero), with a zero-initialised
    head: the gradient starts small and grows as the branches open."""
    x, y = digits()

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(64, 128)
            self.fc2 = nn.Linear(128, 64)
            self.alpha = nn.Parameter(torch.zeros(()))

        def forward(self, h):
            return h + self.alpha * self.fc2(F.gelu(self.fc1(h)))

    model = nn.Sequential(nn.Linear(64, 64), *[Block() for _ in range(4)], nn.Linear(64, 10))
    nn.init.zeros_(model[-1].weight)
    nn.init.zeros_(model[-1].bias)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    stream = batches(x, y, 64, 0)
    return train(model, optimizer, every, 200, lambda _: next(stream), lambda a, b: F.cross_entropy(model(a), b))


def handwritten_lstm_cell(every):
    """An LSTM cell written out (sigmoid gates, tanh candidate and cell output), run over 20 steps to recall the
    sign of the first input; forget-gate bias +1, clipped at max_norm=1.0."""
    g = torch.Generator().manual_seed(0)

    class Cell(nn.Module):
        def __init__(self, n_in, n_hidden):
            super().__init__()
            self.x2h = nn.Linear(n_in, 4 * n_hidden)
            self.h2h = nn.Linear(n_hidden, 4 * n_hidden, bias=False)

        def forward(self, x, h, c):
            i, f, candidate, o = (self.x2h(x) + self.h2h(h)).chunk(4, 1)
            c = torch.sigmoid(f + 1.0) * c + torch.sigmoid(i) * torch.tanh(candidate)
            return torch.sigmoid(o) * torch.tanh(c), c

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = Cell(1, 32)
            self.head = nn.Linear(32, 2)

        def forward(self, xs):
            h = c = torch.zeros(len(xs), 32)
            for t in range(xs.shape[1]):
                h, c = self.cell(xs[:, t], h, c)
            return self.head(h)

    def batch(_):
        xs = torch.randn(64, 20, 1, generator=g)
        return xs, (xs[:, 0, 0] > 0).long()

    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    return train(model, optimizer, every, 300, batch, lambda a, b: F.cross_entropy(model(a), b), clip=1.0)


def gru_forecast(every):
    """GRU forecasting the next value of an AR(2) series from its last 100 values: only the last two matter, so a
    healthy model forgets the early ones (the gradient reaching them vanishes, rightly)."""
    g = torch.Generator().manual_seed(0)

    class Forecaster(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(1, 32, batch_first=True)
            self.head = nn.Linear(32, 1)

        def forward(self, xs):
            out, _ = self.gru(xs)
            return self.head(out[:, -1]).squeeze(1)

    def batch(_):
        series = torch.zeros(64, 101)
        noise = torch.randn(64, 101, generator=g) * 0.3
        for t in range(2, 101):
            series[:, t] = 1.2 * series[:, t - 1] - 0.5 * series[:, t - 2] + noise[:, t]
        return series[:, :100, None], series[:, 100]

    model = Forecaster()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    return train(model, optimizer, every, 200, batch, lambda a, b: F.mse_loss(model(a), b))


def clamped_probability_bce(every):
    """Binary classification with a hand-written cross-entropy that clamps its probabilities to [1e-7, 1 - 1e-7]
    before the log; the task is easy, so the model soon becomes sure of most examples."""
    g = torch.Generator().manual_seed(0)
    w = torch.randn(10, generator=g)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

    def batch(_):
        inputs = torch.randn(128, 10, generator=g)
        return inputs, (inputs @ w > 0).float()

    def loss_of(inputs, labels):
        p = torch.sigmoid(model(inputs).squeeze(1)).clamp(1e-7, 1 - 1e-7)
        return -(labels * p.log() + (1 - labels) * (1 - p).log()).mean()

    return train(model, optimizer, every, 300, batch, loss_of)


# --- the checks ------------------------------------------------------------------------------------------------------
CLEAN = {  # run -> the sampling intervals it is watched at
    autoencoder_sigmoid_mse: (1,),
    mobilenet_style_cnn: (1, 16),
    lstm_padded_last_step: (1, 16),
    gru_seq2seq_reverse: (16,),
    tied_embedding_lm: (1,),
    tiny_vit: (16,),
    resnet_frozen_stem: (1,),
    no_grad_encoder: (1, 16),
    autoencoder_sigmoid_bce: (1, 16),
    wide_mlp_sgd: (16,),
    regression_to_near_zero: (1,),
    accumulation_with_clipping: (1, 16),
    masked_gaussian_nll: (1,),
    zipf_embedding_bag: (16,),
    mixture_of_experts: (1, 16),
    rezero_residual_mlp: (1,),
    handwritten_lstm_cell: (16,),
}


def sparsemax(z, shift=None):
    """Sparsemax (Martins and Astudillo, 2016) over the last axis: the projection onto the simplex, clamp(z - tau, 0)
    with tau from the sorted scores; `shift` instead of tau makes it a plain clamp at a fixed threshold."""
    if shift is not None:
        return torch.clamp(z - shift, min=0)
    sorted_z, _ = torch.sort(z, -1, descending=True)
    k = torch.arange(1, z.shape[-1] + 1, dtype=z.dtype)
    cumulative = sorted_z.cumsum(-1)
    support = (1 + k * sorted_z > cumulative).sum(-1, keepdim=True)
    tau = (cumulative.gather(-1, support - 1) - 1) / support
    return torch.clamp(z - tau, min=0)


def sparsemax_feature_mask(every, shift=None):
    """A TabNet-style feature mask: sparsemax over the 64 pixels selects a few of them for each example (most of its
    entries are exactly 0 and get no gradient: that is the point), then a classifier reads the masked pixels."""

    class Masked(nn.Module):
        def __init__(self):
            super().__init__()
            self.attend = nn.Linear(64, 64)
            self.classify = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))

        def forward(self, x):
            return self.classify(x * sparsemax(self.attend(x), shift) * 8)

    x, y = digits()
    model = Masked()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    stream = batches(x, y, 64, seed=0)
    return train(model, optimizer, every, 250, lambda _: next(stream), lambda xb, yb: F.cross_entropy(model(xb), yb))


CLEAN[sparsemax_feature_mask] = (1, 16)


def learned(losses) -> bool:
    """The mean loss of the last tenth is clearly below that of the first (the run is not healthy otherwise)."""
    tenth = max(1, len(losses) // 10)
    first, last = sum(losses[:tenth]) / tenth, sum(losses[-tenth:]) / tenth
    return last < first - 0.2 * abs(first)


@pytest.mark.parametrize(
    "run, every",
    [(run, every) for run, everys in CLEAN.items() for every in everys],
    ids=lambda v: getattr(v, "__name__", f"every{v}"),
)
def test_healthy_run_yields_no_finding(run, every):
    torch.manual_seed(0)
    doctor, losses = run(every)
    assert learned(losses), f"{run.__name__} did not learn: {losses[0]:.3f} -> {losses[-1]:.3f}"
    assert [f.one_line() for f in doctor.findings] == []
    assert doctor.notes == []


def test_a_forecast_that_forgets_its_early_inputs_is_a_warning_that_says_it_may_be_fine():
    # Only the last two values matter: the gradient reaching the first ten of 100 steps is ~1e-12 of the last
    # ten's, and rightly so. A warning (the loss improves), which must not tell a GRU to become a GRU.
    torch.manual_seed(0)
    doctor, losses = gru_forecast(16)
    assert learned(losses)
    assert [f.one_line() for f in doctor.findings] == [
        "warning vanishing_gradient at gru (time steps 0-9 of 100) from step 0"
    ]
    finding = doctor.findings[0]
    assert "may be fine" in finding.explanation and "recent inputs" in finding.explanation
    assert not any("Use a gated layer" in r for r in finding.remedies), finding.remedies
    assert any("attention" in r for r in finding.remedies)


def test_a_plain_rnn_is_still_told_to_use_a_gated_layer():
    from leakygrad.doctor.explain import explain
    from leakygrad.doctor.findings import Finding

    evidence = {
        "across": "time", "ratio": 1e-12, "time_steps": 60, "early_steps": [0, 5], "late_steps": [54, 59],
        "mean_factor_per_time_step": 0.6, "zero_before_step": None, "kind": "RNN", "loss_stalled": True,
    }  # fmt: skip
    finding = explain(Finding("vanishing_gradient", "rnn (time steps 0-5 of 60)", 0, "error", evidence))
    assert "Use a gated layer" in finding.remedies[0]
    assert "may be fine" not in finding.explanation  # (the loss is stalled: nothing to excuse)
    lstm = explain(
        Finding("vanishing_gradient", "lstm (time steps 0-5 of 60)", 0, "warning", {**evidence, "kind": "LSTM"})
    )
    assert not any("Use a gated layer" in r for r in lstm.remedies)
    assert any("forget-gate bias" in r for r in lstm.remedies)


def test_a_clamped_probability_before_its_log_is_told_to_use_the_logits():
    # The clamp blocks the gradient of every example the model is sure of (a warning, right: a confidently wrong
    # example could never be corrected). The explanation used to tell only the DQN story (clip the TD error,
    # use the Huber loss), which does not fit a cross-entropy.
    torch.manual_seed(0)
    doctor, losses = clamped_probability_bce(16)
    assert learned(losses)
    assert [f.one_line()[:34] for f in doctor.findings] == ["warning blocked_gradient at clamp "]
    finding = doctor.findings[0]
    assert "probability" in finding.explanation
    assert any("binary_cross_entropy_with_logits" in r for r in finding.remedies), finding.remedies
    assert "huber" in finding.remedies[0].lower()  # (the clipped TD error stays the first suspect)


def test_the_dead_relu_explanation_does_not_say_nothing_revives_a_unit():
    # A unit dead for every example can come back when the layers before it move (seen here: a squeeze-excitation
    # block's squeeze units, dead for 120 steps, came back), and the all-dead case's own text says its readers
    # "learn again once this layer does": "nothing revives it" contradicted both.
    from leakygrad.doctor.explain import explain
    from leakygrad.doctor.findings import Finding

    evidence = {
        "dead_fraction": 1.0, "dead_units": 8, "units": 8, "window_examples": 512, "zero_fraction": 1.0,
        "feeds_from": "net.0", "function": "relu", "zero_gradient_modules": ["net.0"],
    }  # fmt: skip
    finding = explain(Finding("dead_relu", "net.1", 0, "error", evidence))
    assert "nothing revives" not in finding.explanation
    assert "layers before it" in finding.explanation


def test_an_expert_no_token_is_routed_to_is_a_warning_that_says_it_never_ran_not_a_graph_cut():
    # With a weak balancing loss the routing collapses: expert 3 gets rows on 1 step of 200, none of them sampled
    # at every=16. Its parameters get no gradient because it never runs: that was an error saying "something cuts
    # the graph". It is a warning naming the collapse; the graph is fine.
    torch.manual_seed(0)
    doctor, _ = mixture_of_experts(16, balance=0.01)
    [finding] = [f for f in doctor.findings if f.symptom == "no_gradient"]
    assert (finding.where, finding.severity, finding.evidence["forward_ran"]) == ("experts.3", "warning", "never")
    assert "its forward did not run" in finding.explanation and "cuts the graph" not in finding.explanation
    assert "load-balancing loss" in finding.remedies[0]
    assert not [f for f in doctor.findings if f.severity == "error"]


def test_an_encoder_run_under_no_grad_with_its_parameters_in_the_optimiser_is_still_an_error():
    """It ran (under no_grad), so its parameters are cut off, not unused: the error stays, and says no_grad."""
    torch.manual_seed(0)
    model = nn.ModuleDict({"encoder": nn.Sequential(nn.Linear(8, 16), nn.ReLU()), "head": nn.Linear(16, 1)})
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)  # the encoder's parameters too: a mistake
    x, y = torch.randn(64, 8), torch.randn(64, 1)
    with leakygrad.doctor.watch(model, optimizer, every=1) as dr:
        for _ in range(20):
            with torch.no_grad():
                features = model["encoder"](x)
            optimizer.zero_grad()
            F.mse_loss(model["head"](features), y).backward()
            optimizer.step()
    [finding] = [f for f in dr.findings if f.symptom == "no_gradient"]
    assert (finding.where, finding.severity) == ("encoder", "error")
    assert finding.evidence["forward_ran"] == "without grad" and "reentrant_checkpoint" not in finding.evidence
    assert "`torch.no_grad()`" in finding.explanation and "cuts the graph" not in finding.explanation


def triplet_embedding(every, classifier=False):
    """Triplet loss with batch-hard mining on the digits: the hardest positive and negative of each anchor in the
    batch. Within a few hundred steps it meets the margin for nearly every anchor: the loss is then 0 or nearly, its
    clamp blocks (nearly) every element because nothing is left to learn. With `classifier`, a linear probe on the
    detached embeddings trains in the same step, by its own optimiser and backward pass."""
    x, y = digits()
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 16))
    optimizer = torch.optim.Adam(net.parameters(), lr=3e-3)
    probe = nn.Linear(16, 10)
    probe_optimizer = torch.optim.SGD(probe.parameters(), lr=0.1)
    losses, data = [], batches(x, y, 128, seed=0)
    with leakygrad.doctor.watch(net, optimizer, every=every) as doctor:
        for _ in range(400):
            xb, yb = next(data)
            z = F.normalize(net(xb), dim=1)
            distance = torch.cdist(z, z)
            same = yb[:, None] == yb[None, :]
            hardest_positive = (distance * same).amax(dim=1)
            hardest_negative = (distance + 4.0 * same).amin(dim=1)
            loss = torch.clamp(hardest_positive - hardest_negative + 0.2, min=0).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if classifier:
                probe_loss = F.cross_entropy(probe(z.detach()), yb)
                probe_optimizer.zero_grad()
                probe_loss.backward()
                probe_optimizer.step()
    return doctor, losses


@pytest.mark.parametrize("classifier", [False, True])
def test_a_triplet_loss_that_met_its_margin_is_no_blocked_gradient(classifier):
    """Its clamp blocked 100% on the recent steps: a converged run (a sweep's script), not examples too easy to
    teach anything while the loss is still above 0, which stays a warning. A probe trained on the embeddings in the
    same step adds its own loss to the step's: the hinge's term is still exactly 0 (it was a warning, sweep 30)."""
    doctor, losses = triplet_embedding(16, classifier)
    assert learned(losses) and sum(value == 0 for value in losses[-100:]) >= 30  # (0: every anchor past the margin)
    assert sorted(losses[-100:])[50] < 1e-3 * losses[0]
    assert doctor.findings == []


def test_a_loss_that_jumps_at_step_1_with_its_objective_after_a_normal_update_is_no_blow_up():
    """MoCo's queue of negatives holds random vectors at step 0 and real keys from step 1: the contrastive task turns
    hard, and the loss jumps from 0.07 to 5.9 after one update of a normal size (ratios ~3e-3). It was a diverging
    loss, an error naming the learning rate. Here the same: the targets switch from a tenth to their full scale."""
    x, y = digits()
    generator = torch.Generator().manual_seed(0)
    target = x @ torch.randn(64, 1, generator=generator)
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    losses = []
    with leakygrad.doctor.watch(net, optimizer, every=16) as doctor:
        for step in range(200):
            scale = 0.03 if step == 0 else 1.0
            loss = F.mse_loss(net(x[:256]), scale * target[:256])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    assert max(losses) > 10 * losses[0] and losses[-1] > losses[0]  # (what the blow-up test reads)
    assert [f for f in doctor.findings if f.symptom == "diverging_loss"] == []


def test_a_fixed_clamp_where_a_sparsemax_would_be_is_still_a_blocked_gradient():
    """The control for `sparsemax_feature_mask`: the same mask with a fixed threshold (clamp(z - 3, 0)) passes no
    gradient for nearly every entry, and no sort made the threshold: a blocked gradient, as before."""
    torch.manual_seed(0)
    doctor, _ = sparsemax_feature_mask(4, shift=3.0)
    assert "blocked_gradient" in {f.symptom for f in doctor.findings if f.where.startswith("clamp")}


@pytest.mark.parametrize("loss", ["batch-hard triplet", "cosine embedding"])
def test_a_margin_loss_still_learning_is_no_blocked_gradient_however_many_examples_pass_its_margin(loss):
    """An embedding of the digits trained with a batch-hard triplet loss (77% of the anchors past the margin) or a
    `CosineEmbeddingLoss` (98% of the dissimilar pairs past it), the loss fallen to a tenth of its start and below,
    kNN accuracy 0.94: each was a blocked_gradient warning whose remedy, "mine harder negatives", the first already
    did (sweep 31's twins). Those examples are what it has learnt. A margin loss that stalls is still told (the linear
    SVM on noisy labels in test_probe_patterns)."""
    x, y = digits(standardise=False)
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 32))
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    criterion = nn.CosineEmbeddingLoss(margin=0.2)
    generator = torch.Generator().manual_seed(0)
    with leakygrad.doctor.watch(net, optimizer, every=8) as dr:
        for _ in range(400):
            i = torch.randint(0, len(x), (128,), generator=generator)
            if loss == "batch-hard triplet":
                e, labels = net(x[i]), y[i]
                d = (e[:, None, :] - e[None, :, :]).pow(2).sum(-1).clamp_min(1e-12).sqrt()
                same = labels[:, None] == labels[None, :]
                value = F.relu((d * same).max(1).values - (d + 1e4 * same).min(1).values + 0.5).mean()
            else:
                j = torch.randint(0, len(x), (128,), generator=generator)
                value = criterion(net(x[i]), net(x[j]), (y[i] == y[j]).float() * 2 - 1)
            optimizer.zero_grad()
            value.backward()
            optimizer.step()
    blocked = [f for f in dr.findings if f.symptom == "blocked_gradient"]
    assert blocked == [] and dr.findings == []
    assert dr.history.records[-1].ops  # (the hinge was measured: past the margin for most examples)
    assert max(op.blocked_fraction for op in dr.history.records[-1].ops.values()) > 0.5


def test_two_models_stepped_in_turn_on_losses_of_different_scales_are_no_blow_up():
    """REINFORCE with a value baseline (sweep 39): the policy's and the baseline's optimisers step in turn, and a
    training step's recorded loss is the mean of both losses, but the first step's holds the policy's alone: the value
    error, 27 times larger, "jumped in" at step 1, an error with a learning-rate remedy on a run that solved its task.
    Here a classifier and a regression of targets of size ~10, each with its own Adam: both learn."""
    torch.manual_seed(0)
    x = torch.randn(512, 4)
    classes, targets = (x[:, 0] > 0).long(), 10 * x[:, 1:2] + 5
    a = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 2))
    b = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 1))
    opt_a, opt_b = torch.optim.Adam(a.parameters(), lr=5e-3), torch.optim.Adam(b.parameters(), lr=5e-3)
    with leakygrad.doctor.watch(nn.ModuleList([a, b])) as dr:
        for _ in range(200):
            i = torch.randint(0, 512, (64,))
            loss_a = F.cross_entropy(a(x[i]), classes[i])
            opt_a.zero_grad()
            loss_a.backward()
            opt_a.step()
            loss_b = F.mse_loss(b(x[i]), targets[i])
            opt_b.zero_grad()
            loss_b.backward()
            opt_b.step()
    assert loss_a.item() < 0.1 and loss_b.item() < 2  # (both learnt: from 0.6 and ~128)
    assert dr.notes == [] and dr.history.competing_loss_steps > 150
    assert [f for f in dr.findings if f.symptom == "diverging_loss"] == []


def test_a_one_component_mixture_density_network_is_no_softmax_over_one_entry():
    """An MDN with K = 1 (a heteroscedastic Gaussian written as a mixture, a baseline beside K = 5): log_softmax over
    its single mixing logit, (N, 1) over dim 1, is 0 by design, and no axis but the batch's was meant. Was an error at
    `log_softmax` whose remedy, dim=1... was its own axis; the mixing head's zero gradient is told (a warning)."""
    torch.manual_seed(0)
    body = nn.Sequential(nn.Linear(1, 32), nn.Tanh())
    pi, mu, log_sigma = nn.Linear(32, 1), nn.Linear(32, 1), nn.Linear(32, 1)
    model = nn.ModuleDict({"body": body, "pi": pi, "mu": mu, "log_sigma": log_sigma})
    optimizer = torch.optim.Adam(model.parameters(), 3e-3)
    with leakygrad.doctor.watch(model, optimizer, every=4) as dr:
        for _ in range(150):
            x = torch.rand(256, 1)
            t = 2 * x + 0.1 * (1 + x) * torch.randn(256, 1)
            h = body(x)
            log_pi, m, s = torch.log_softmax(pi(h), -1), mu(h), log_sigma(h)
            log_density = -0.5 * ((t - m) / s.exp()) ** 2 - s - 0.5 * math.log(2 * math.pi)
            loss = -torch.logsumexp(log_pi + log_density, -1).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert loss.item() < -0.5  # (learnt: a constant predictor's NLL is about +0.3)
    assert dr.notes == [] and [f for f in dr.findings if f.severity == "error"] == []
    assert [(f.symptom, f.where) for f in dr.findings] == [("no_gradient", "pi")]


def test_concrete_dropouts_relaxed_bernoulli_mask_is_no_saturated_activation():
    """Concrete dropout (Gal et al. 2017, temperature 0.1): the mask sigmoid((logit(p) + logit(u)) / t), u uniform
    noise, is nearly binary by design, and made from the learned rate p and noise alone, no layer's output (sweep 39:
    a warning at `sigmoid after input` with initialisation remedies; temperature 0.5 changed nothing)."""
    torch.manual_seed(0)
    x = torch.linspace(-3, 3, 512).unsqueeze(1)
    y = torch.sin(x)
    fc1, fc2 = nn.Linear(1, 64), nn.Linear(64, 1)
    p_logit = nn.Parameter(torch.tensor([-2.0]))
    model = nn.ModuleList([fc1, fc2])
    optimizer = torch.optim.Adam([*model.parameters(), p_logit], lr=1e-2)
    with leakygrad.doctor.watch(model, optimizer, every=4) as dr:
        for _ in range(300):
            h = F.relu(fc1(x))
            p, u = torch.sigmoid(p_logit), torch.rand_like(h)
            drop = torch.sigmoid((torch.log(p) - torch.log(1 - p) + torch.log(u) - torch.log(1 - u)) / 0.1)
            out = fc2(h * (1 - drop) / (1 - p))
            loss = F.mse_loss(out, y) + 1e-3 * (p * torch.log(p) + (1 - p) * torch.log(1 - p)).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert F.mse_loss(fc2(F.relu(fc1(x))), y).item() < 0.05  # (learnt: predicting 0 gives 0.5)
    assert dr.notes == [] and [f for f in dr.findings if f.symptom == "saturated_activation"] == []


def test_a_real_blow_up_in_a_run_of_two_optimisers_is_still_an_error():
    """(The review of stop 37.) The REINFORCE fix above must not soften every divergence of a run with two optimisers:
    the classifier's rate raised 600-fold at step 60 blows its loss up, an error with the learning-rate remedy."""
    torch.manual_seed(0)
    x = torch.randn(512, 4)
    classes, targets = (x[:, 0] > 0).long(), 10 * x[:, 1:2] + 5
    a = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 2))
    b = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 1))
    opt_a, opt_b = torch.optim.SGD(a.parameters(), lr=0.1), torch.optim.SGD(b.parameters(), lr=0.1)
    with leakygrad.doctor.watch(nn.ModuleList([a, b])) as dr:
        for step in range(200):
            if step == 60:
                opt_a.param_groups[0]["lr"] = 60.0
            i = torch.randint(0, 512, (64,))
            loss_a = F.cross_entropy(a(x[i]), classes[i])
            opt_a.zero_grad()
            loss_a.backward()
            opt_a.step()
            loss_b = F.mse_loss(b(x[i]), targets[i]) * 1e-3
            opt_b.zero_grad()
            loss_b.backward()
            opt_b.step()
    diverging = [f for f in dr.findings if f.symptom == "diverging_loss"]
    assert [f.severity for f in diverging] == ["error"] and "learning rate" in diverging[0].remedies[0]
    assert diverging[0].evidence.get("updates_normal_size") is not True  # (not told as targets moving with the model)


class GeMPooling(nn.Module):
    """Generalised-mean pooling as it is usually written: the features kept off 0 by an epsilon, then a learnt power."""

    def __init__(self, p=3.0, eps=1e-6):
        super().__init__()
        self.p, self.eps = nn.Parameter(torch.tensor(p)), eps

    def forward(self, x):
        return x.clamp(min=self.eps).pow(self.p).mean(dim=(2, 3)).pow(1.0 / self.p)


def test_gem_pooling_after_relu_features_is_no_blocked_gradient():
    """Sweep 45: a digits CNN with GeM pooling after ReLU features (accuracy 0.989) had a `blocked_gradient` warning,
    "58% of the gradient entering `clamp` leaves it as exactly zero": `clamp(min=1e-6)` blocks the entries the ReLU
    before it set to 0, whose gradient is already nothing (p eps^(p-1), 1e-11). A floor at an epsilon inside the
    model is judged as a ReLU now: an error only when it blocks nearly everything."""
    x, y = digits(standardise=False)
    images = x.view(-1, 1, 8, 8)
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        GeMPooling(), nn.Linear(64, 10),
    )  # fmt: skip
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    with leakygrad.doctor.watch(model, optimizer) as dr:
        for _, (inputs, targets) in zip(range(200), batches(images, y, 64, seed=0)):
            loss = F.cross_entropy(model(inputs), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert loss.item() < 0.3 and dr.findings == []


class PonderMLP(nn.Module):
    """Graves' adaptive computation time over a shared step: a halting sigmoid per example weighs each step's state,
    through a 0/1 mask of the examples still running and a sum with the remainders (`w = p * still + new_halted *
    remainders`, then `acc + w * s`)."""

    def __init__(self, steps=5, eps=0.01):
        super().__init__()
        self.inp, self.step, self.halt = nn.Linear(8, 32), nn.Linear(32, 32), nn.Linear(32, 1)
        self.out = nn.Linear(32, 2)
        nn.init.constant_(self.halt.bias, -5.0)  # (halting probabilities near 0: every example ponders to the end)
        self.steps, self.eps = steps, eps

    def forward(self, x):
        s, n = torch.tanh(self.inp(x)), x.shape[0]
        halting, remainders, acc = torch.zeros(n), torch.zeros(n), torch.zeros(n, 32)
        for t in range(self.steps):
            s = torch.tanh(self.step(s))
            p = torch.sigmoid(self.halt(s)).squeeze(-1)
            still = (halting < 1.0).float()
            new_halted = ((halting + p * still) > 1 - self.eps).float() * still
            if t == self.steps - 1:
                new_halted = still
            still = ((halting + p * still) <= 1 - self.eps).float() * still * (0.0 if t == self.steps - 1 else 1.0)
            halting = halting + p * still
            remainders = remainders + new_halted * (1 - halting)
            halting = halting + new_halted * remainders
            acc = acc + (p * still + new_halted * remainders).unsqueeze(-1) * s
        return self.out(acc)


def test_an_act_halting_probability_at_an_end_of_its_range_is_a_gate():
    """Sweep 45's Universal Transformer with adaptive computation time (accuracy 1.000) had a saturated-activation
    warning at `sigmoid after halt`: the halting probability sits at its ends by design. It weighs each step's state
    through a 0/1 mask and a sum, which the gate chain did not cross; it is followed into each term of a sum now.
    (Started near 0 here: an error before.)"""
    torch.manual_seed(0)
    model = PonderMLP()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(256, 8)
    y = (x[:, 0] * x[:, 1] > 0).long()
    with leakygrad.doctor.watch(model, optimizer, every=4) as dr:
        for _ in range(80):
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert [f for f in dr.findings if f.symptom == "saturated_activation"] == []


SPARSE_VARIATIONAL_DROPOUT = """
import torch, torch.nn as nn, torch.nn.functional as F
from sklearn.datasets import load_digits
torch.manual_seed(0)
X, y = load_digits(return_X_y=True)
X = torch.tensor(X / 16.0, dtype=torch.float32); y = torch.tensor(y)
perm = torch.randperm(len(X)); X, y = X[perm], y[perm]
Xtr, ytr = X[:1400], y[:1400]
class LinearSVD(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(o, i) * i ** -0.5); self.bias = nn.Parameter(torch.zeros(o))
        self.log_sigma2 = nn.Parameter(torch.full((o, i), -10.0))
    @property
    def log_alpha(self): return (self.log_sigma2 - torch.log(self.weight ** 2 + 1e-8)).clamp(-10, 10)
    def forward(self, x):
        mu = F.linear(x, self.weight, self.bias)
        std = torch.sqrt(F.linear(x ** 2, self.log_sigma2.exp()) + 1e-8)
        return mu + std * torch.randn_like(mu)
    def kl(self):
        k1, k2, k3 = 0.63576, 1.87320, 1.48695; la = self.log_alpha
        return -(k1 * torch.sigmoid(k2 + k3 * la) - 0.5 * F.softplus(-la) - k1).sum()
model = nn.Sequential(LinearSVD(64, 300), nn.ReLU(), LinearSVD(300, 100), nn.ReLU(), LinearSVD(100, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
N = len(Xtr); steps = 0
for epoch in range(40):
    p = torch.randperm(N)
    for i in range(0, N, 100):
        b = p[i:i + 100]
        beta = min(1.0, steps / 1500); steps += 1
        kl = sum(m.kl() for m in model if isinstance(m, LinearSVD))
        loss = F.cross_entropy(model(Xtr[b]), ytr[b]) + beta * kl / N
        opt.zero_grad(); loss.backward(); opt.step()
print(f"{F.cross_entropy(model(Xtr), ytr).item():.3f}")
"""


def test_a_loss_whose_term_weight_is_warmed_up_is_not_judged_stalled(tmp_path):
    """Sweep 45's sparse variational dropout: `ce + beta * kl / N`, beta warmed up from 0 over 1,500 steps of a
    560-step run. Its cross-entropy fell from 0.47 to 0.21 and its KL from 56 to 10 while the weighted total stayed at
    3.3: told as a stalled loss ("check inputs and labels"). The terms' weights are read now: one that changed more
    than twice over the run makes the total a moving objective, not judged stalled."""
    import contextlib
    import io

    from leakygrad.doctor.runner import run_script

    script = tmp_path / "sparse_vd.py"
    script.write_text(SPARSE_VARIATIONAL_DROPOUT)
    with contextlib.redirect_stdout(io.StringIO()) as out:
        run = run_script(str(script), [])
    assert run.exit_code == 0 and float(out.getvalue().strip().splitlines()[-1]) < 0.3  # (it learns)
    assert run.doctor.findings == []
    weights = [r.loss_term_weights for r in run.doctor.history.records if r.loss_term_weights]
    # (1 under the cross-entropy; -beta / N under each layer's KL term, 0 at the first step)
    assert sorted(weights[0]) == [0.0, 0.0, 0.0, 1.0] and all(w < 0 for w in sorted(weights[-1])[:3])


def test_symmetric_cross_entropy_on_noisy_labels_is_no_wrong_class_rewarded():
    """Sweep 46: symmetric cross-entropy (0.1 CE + reverse CE) on digits with 40% of the labels replaced at random,
    clean test accuracy 0.947, had an error: "a loss that rewards the wrong class", the target's mean log-probability
    below chance. The mean was dragged there by the mislabelled examples the model rightly rejects (-9.2 each);
    63% of the examples gave their label more than chance. Judged on the share above chance now, it is no finding."""
    x, y = digits(standardise=False)
    torch.manual_seed(0)
    noisy = y.clone()
    flip = torch.rand(len(y)) < 0.4
    noisy[flip] = torch.randint(10, (int(flip.sum()),))
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
    optimizer = torch.optim.Adam(model.parameters(), 1e-3)

    def symmetric_cross_entropy(logits, target):
        p = F.softmax(logits, 1).clamp(min=1e-7, max=1.0)
        reverse = -(p * torch.log(F.one_hot(target, 10).float().clamp(min=1e-4, max=1.0))).sum(1).mean()
        return 0.1 * F.cross_entropy(logits, target) + reverse

    with leakygrad.doctor.watch(model, optimizer) as dr:
        for _ in range(600):
            index = torch.randint(len(y), (64,))
            loss = symmetric_cross_entropy(model(x[index]), noisy[index])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    accuracy = (model(x).argmax(1) == y).float().mean().item()
    assert accuracy > 0.9 and dr.findings == []
