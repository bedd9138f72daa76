"""Mistakes in a model's forward that leave it running and its loss falling, with a gradient that is not what the
model was meant to compute: each example's prediction made from the whole batch, or a backward that sends gradient
to values the forward dropped.

A matrix factorisation that sums its dot products over the whole batch (`(P(u) * Q(i)).sum()`, no `dim`), or adds
an (N, 1) bias to its (N,) dot products: every example's prediction holds other examples' values. A message-passing
layer that writes its messages with `agg[dst] += m[src]`: where several edges reach one node, the forward keeps one
message, and the backward trains all of them.
"""

import pytest
import torch
from torch import nn
from torch.nn import functional as F

import leakygrad.doctor as doctor


class MatrixFactorisation(nn.Module):
    """Ratings as mu + b_u + b_i + <P[u], Q[i]>: the dot products summed per example, or over the whole batch."""

    def __init__(self, dot: str, biases: str = "squeezed"):
        super().__init__()
        self.dot, self.biases = dot, biases
        self.P, self.Q = nn.Embedding(40, 8), nn.Embedding(30, 8)
        self.bu, self.bi = nn.Embedding(40, 1), nn.Embedding(30, 1)
        self.mu = nn.Parameter(torch.tensor(3.0))

    def forward(self, u, i):
        product = self.P(u) * self.Q(i)
        dot = {"whole batch": product.sum(), "per example": product.sum(dim=1)}[self.dot]
        if self.biases == "columns":  # ((N, 1) each: added to the (N,) dot products, (N, N))
            return self.mu + dot + self.bu(u) + self.bi(i)
        return self.mu + self.bu(u).squeeze(1) + self.bi(i).squeeze(1) + dot


@pytest.mark.parametrize("dot", ["whole batch", "per example", "activity penalty"])
def test_a_product_summed_over_the_batch_into_each_prediction_is_named(dot):
    """`(P(u) * Q(i)).sum()` without `dim=1` in a matrix factorisation (sweep 50: test RMSE 2.82 against 0.42, told as
    an exploding gradient at a bias): the batch's sum of dot products goes into every prediction. A `wrong_gradient`
    error at the sum, `.sum(dim=1)` first. The per-example sum is clean, and so is a penalty summed over the batch
    and added to each example's loss on the loss side (the same gradient as adding it once)."""
    torch.manual_seed(0)
    model = MatrixFactorisation("whole batch" if dot == "whole batch" else "per example")
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    u, i = torch.randint(0, 40, (64,)), torch.randint(0, 30, (64,))
    ratings = 3 + torch.randn(64)
    with doctor.watch(model, optimizer, every=2, name="mf") as dr:
        for _ in range(12):
            errors = F.mse_loss(model(u, i), ratings, reduction="none")
            if dot == "activity penalty":
                errors = errors + 1e-4 * (model.P(u) * model.P(u)).sum()
            loss = errors.mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert dr.notes == []
    named = [f for f in dr.findings if f.evidence.get("summed_over_batch")]
    if dot != "whole batch":
        assert named == []
        return
    [f] = named
    assert (f.symptom, f.where, f.severity) == ("wrong_gradient", "sum after P", "error")
    assert f.evidence["input_shape"] == [64, 8] and f.evidence["output_shape"] == [64]
    assert "whole batch's sum" in f.explanation and "dim=1" in f.remedies[0]


class PairwiseScores(nn.Module):
    """Scores between every pair of a batch's embeddings from their squared distances, `sq[:, None] + sq - 2 e e^T`:
    an (N, 1) column made by an unsqueeze, added to an (N,) row on purpose."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(6, 4)

    def forward(self, x):
        e = self.embed(x)
        sq = (e * e).sum(1)
        return -(sq[:, None] + sq - 2 * e @ e.t())


@pytest.mark.parametrize("biases", ["columns", "squeezed", "pairwise"])
def test_a_column_output_added_to_a_row_in_the_model_is_named(biases):
    """`nn.Embedding(users, 1)(u)`, (N, 1), added to the (N,) dot products without `.squeeze(-1)` (sweep 51: test
    RMSE 0.63 against 0.51, silent: the model's output is (N, N), and a hand-written loss broadcasts nothing more).
    A `wrong_gradient` error at the addition, named after the module; a pairwise distance matrix is left alone."""
    torch.manual_seed(0)
    u, i = torch.randint(0, 40, (64,)), torch.randint(0, 30, (64,))
    ratings = 3 + torch.randn(64)
    x, same = torch.randn(64, 6), (torch.arange(64)[:, None] % 4 == torch.arange(64) % 4).float()
    model = PairwiseScores() if biases == "pairwise" else MatrixFactorisation("per example", biases)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    with doctor.watch(model, optimizer, every=2, name="mf") as dr:
        for _ in range(12):
            if biases == "pairwise":
                loss = F.binary_cross_entropy_with_logits(model(x), same)
            else:
                loss = ((model(u, i) - ratings) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert dr.notes == []
    named = [f for f in dr.findings if f.evidence.get("column_added_to_row")]
    if biases != "columns":
        assert named == []
        return
    [f] = named
    assert (f.symptom, f.where, f.severity) == ("wrong_gradient", "add after bu", "error")
    assert f.evidence["output_shape"] == [64, 64] and f.evidence["module"] == "bu"
    assert "every example against every other" in f.explanation and "squeeze(-1)" in f.remedies[0]


class MessagePassing(nn.Module):
    """One round of messages along a graph's edges, summed per node: with `index_add_`, with `agg[dst] += m` (which
    keeps one message per node), or written once per node through a permutation (no index repeats)."""

    def __init__(self, write: str):
        super().__init__()
        self.write = write
        self.message, self.update = nn.Linear(4, 8), nn.Linear(12, 3)

    def forward(self, x, src, dst):
        m = self.message(x[src])
        agg = torch.zeros(x.shape[0], 8)
        if self.write == "index_add":
            agg = agg.index_add(0, dst, m)
        elif self.write == "+= by index":
            agg[dst] += m
        else:  # (one message per node, each node written once)
            agg[torch.randperm(x.shape[0])] = m[: x.shape[0]]
        return self.update(torch.cat([x, agg], 1))


@pytest.mark.parametrize("write", ["+= by index", "index_add", "each place once"])
def test_messages_written_by_index_to_one_node_twice_are_named(write):
    """`agg[dst] += m[src]` in a hand-written GNN (sweep 51: node accuracy 0.88 against 0.99, silent): a write by
    index replaces, so each node keeps one incoming message, but the backward trains every message. A
    `wrong_gradient` error at the write, `index_add_` first; `index_add` and a write to each place once are clean."""
    torch.manual_seed(0)
    x, y = torch.randn(30, 4), torch.randint(0, 3, (30,))
    src, dst = torch.randint(0, 30, (90,)), torch.randint(0, 30, (90,))
    model = MessagePassing(write)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    with doctor.watch(model, optimizer, every=2) as dr:
        for _ in range(12):
            loss = F.cross_entropy(model(x, src, dst), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert dr.notes == []
    named = [f for f in dr.findings if f.evidence.get("rows_written_twice")]
    if write != "+= by index":
        assert named == []
        return
    [f] = named
    assert (f.symptom, f.where, f.severity) == ("wrong_gradient", "index_put after message", "error")
    assert f.evidence["writes"] == 90 and f.evidence["repeated_writes"] == 90 - len(set(dst.tolist()))
    assert "keeps one value per place" in f.explanation and "index_add_" in f.remedies[0]


class OrderClassifier(nn.Module):
    """Whether a sequence's first token is larger than its last: tokens plus learnt positions, attention, a head. The
    positions looked up with `arange(T)`, or (the mistake) with the token ids; or a factorisation machine's first- and
    second-order tables of the same ids, used apart (no sum of lookups)."""

    def __init__(self, positions: str):
        super().__init__()
        self.positions = positions
        self.tok_emb, self.pos_emb = nn.Embedding(16, 16), nn.Embedding(16, 16)
        self.attention = nn.MultiheadAttention(16, 2, batch_first=True)
        self.head = nn.Linear(16, 2)

    def forward(self, x):
        if self.positions == "first and second order":
            first, second = self.pos_emb(x).sum((1, 2)), self.tok_emb(x).sum(1).pow(2).sum(1)
            return torch.stack([first, second], 1)
        where = torch.arange(x.shape[1])[None] if self.positions == "arange" else x
        h = self.tok_emb(x) + self.pos_emb(where)
        return self.head(self.attention(h, h, h)[0].mean(1))


@pytest.mark.parametrize("positions", ["token ids", "arange", "first and second order"])
def test_two_embeddings_of_the_same_ids_added_are_named(positions):
    """`tok_emb(x) + pos_emb(x)` where `pos_emb(torch.arange(T))` was meant (sweep 51: accuracy 0.557 against 1.000,
    told as a stall with no cause): one table's lookup written twice, no position told. A `stalled_loss` at the
    addition naming both tables; the positions looked up, or two tables of one id used apart, are no finding."""
    torch.manual_seed(0)
    model = OrderClassifier(positions)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    with doctor.watch(model, optimizer, every=2) as dr:
        for _ in range(12):
            x = torch.randint(0, 16, (64, 8))
            loss = F.cross_entropy(model(x), (x[:, 0] > x[:, -1]).long())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert dr.notes == []
    named = [f for f in dr.findings if "same_ids_embedded" in f.evidence]
    if positions != "token ids":
        assert named == []
        return
    [f] = named
    assert (f.symptom, f.where, f.evidence["same_ids_embedded"]) == ("stalled_loss", "add", ["tok_emb", "pos_emb"])
    assert "never told where a token stands" in f.explanation and "torch.arange" in f.remedies[0]


class CrossAttention(nn.Module):
    """Decoder states attending to encoder states: weights over the source positions (dim -1), over the decoder's
    steps (dim 1, the mistake), or slot attention's over the slots renormalised over the inputs."""

    def __init__(self, normalised: str):
        super().__init__()
        self.normalised = normalised
        self.enc, self.dec, self.out = nn.Linear(4, 16), nn.Linear(4, 16), nn.Linear(16, 5)

    def forward(self, source, target):
        enc, dec = self.enc(source), self.dec(target)  # (B, S, 16), (B, T, 16)
        scores = torch.bmm(dec, enc.transpose(1, 2))  # (B, T, S)
        if self.normalised == "over the keys":
            attn = F.softmax(scores, dim=-1)
        elif self.normalised == "over the queries":
            attn = F.softmax(scores, dim=1)
        else:
            attn = F.softmax(scores, dim=1) + 1e-8
            attn = attn / attn.sum(dim=-1, keepdim=True)
        return self.out(torch.bmm(attn, enc) + dec)


@pytest.mark.parametrize("normalised", ["over the queries", "over the keys", "slots, renormalised"])
def test_attention_weights_normalised_over_the_queries_are_named(normalised):
    """Luong attention with `F.softmax(scores, dim=1)` over (B, T_dec, S) (sweep 51: greedy token accuracy 0.20
    against 0.99, a lower training loss, silent): each step's weights carry the later steps'. A `wrong_gradient` error
    at the softmax; over the keys, or slot attention's renormalised weights, no finding."""
    torch.manual_seed(0)
    model = CrossAttention(normalised)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    with doctor.watch(model, optimizer, every=2) as dr:
        for _ in range(12):
            source, target = torch.randn(32, 7, 4), torch.randn(32, 6, 4)
            loss = F.cross_entropy(model(source, target).reshape(-1, 5), (target[..., 0] > 0).long().reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert dr.notes == []
    named = [f for f in dr.findings if f.evidence.get("softmax_over_queries")]
    if normalised != "over the queries":
        assert named == []
        return
    [f] = named
    assert (f.symptom, f.where, f.severity) == ("wrong_gradient", "softmax after dec", "error")
    assert "over the queries' axis" in f.explanation and "dim=-1" in f.remedies[0]


class AffineCoupling(nn.Module):
    """RealNVP's coupling layer: returns z and the log-determinant, summed over the features per example, or (the
    mistake) over everything, the batch too."""

    def __init__(self, mask, summed: str):
        super().__init__()
        self.mask, self.summed = mask, summed
        self.net = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 4))

    def forward(self, x):
        log_s, t = self.net(x * self.mask).chunk(2, -1)
        log_s = torch.tanh(log_s) * (1 - self.mask)
        z = x * self.mask + (1 - self.mask) * (x * torch.exp(log_s) + t)
        return z, log_s.sum() if self.summed == "over everything" else log_s.sum(-1)


@pytest.mark.parametrize("summed", ["over everything", "per example"])
def test_a_flows_log_determinant_summed_over_the_batch_is_named(summed):
    """Each coupling layer returns `log_s.sum()` where `log_s.sum(-1)` was meant (sweep 51: held-out NLL 258 nats
    against 1.36, silent): the batch's total log-determinant goes into every example's log-likelihood. Added on the
    loss side, as a penalty would be, but made by a module: a `wrong_gradient` error at the sum."""
    torch.manual_seed(0)
    layers = nn.ModuleList(
        [AffineCoupling(torch.tensor([1.0, 0.0] if i % 2 else [0.0, 1.0]), summed) for i in range(4)]
    )
    optimizer = torch.optim.Adam(layers.parameters(), lr=1e-3)
    with doctor.watch(layers, optimizer, every=2) as dr:
        for _ in range(12):
            x, log_det = torch.randn(128, 2) * torch.tensor([2.0, 0.5]), torch.zeros(128)
            for layer in layers:
                x, part = layer(x)
                log_det = log_det + part
            loss = -(-0.5 * (x**2).sum(-1) + log_det).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert dr.notes == []
    named = [f for f in dr.findings if f.evidence.get("summed_over_batch")]
    if summed == "per example":
        assert named == []
        return
    [f] = named
    assert (f.symptom, f.where, f.severity) == ("wrong_gradient", "sum after 3", "error")
    assert f.evidence["input_shape"] == [128, 2] and f.evidence["output_shape"] == [128]
