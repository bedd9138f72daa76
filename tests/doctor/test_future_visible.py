"""A language model whose self-attention lets a position read the next one: its own target.

A causal mask one diagonal off (`torch.triu(ones, diagonal=2)` where `diagonal=1` is meant) or no causal mask at all,
in a model trained to predict `x[:, t + 1]` from `x[:, :t + 1]`: the output at t copies its target from the input at
t + 1. The training loss falls to near 0 while generation fails (sweep 38: train loss 0.010 against 0.215, the loss
of prediction from the prefix alone 1.97 against 0.23). Named as a `wrong_gradient` error at the attention, for
nn.TransformerEncoder's fused kernel and for a hand-written `masked_fill` attention. Likewise a 1-D convolution padded
on both sides in a forecaster or a convolutional language model (sweep 40), named at the convolution.

Left alone: the same models with their masks right, a fused kernel with `is_causal=True`, a masked language model
(no mask, its targets the tokens at their own positions), a sequence-to-sequence Transformer whose cross-attention has
no mask by design, and a tagger whose mask reads one position ahead on purpose (its targets are no next tokens).
"""

import math

import pytest
import torch
from torch import nn
from torch.nn import functional as F

import leakygrad.doctor as doctor

VOCAB, T, WIDTH = 12, 12, 32


def tokens(batch=16, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, VOCAB, (batch, T + 1), generator=generator)


class EncoderLM(nn.Module):
    """nn.TransformerEncoder as a language model, given a boolean mask (True = shut) or none."""

    def __init__(self, mask: torch.Tensor | None):
        super().__init__()
        self.mask = mask
        self.embed, self.position = nn.Embedding(VOCAB, WIDTH), nn.Embedding(T, WIDTH)
        layer = nn.TransformerEncoderLayer(WIDTH, 4, 64, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, x):
        h = self.embed(x) + self.position(torch.arange(x.shape[1]))
        return self.head(self.blocks(h, mask=self.mask))


class Attention(nn.Module):
    """Hand-written attention as in nanoGPT: scores filled with -inf where `shut`; or F.scaled_dot_product_attention
    with is_causal=True."""

    def __init__(self, shut: torch.Tensor | None, fused_causal: bool = False):
        super().__init__()
        self.qkv, self.out = nn.Linear(WIDTH, 3 * WIDTH), nn.Linear(WIDTH, WIDTH)
        self.shut, self.fused_causal = shut, fused_causal

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, 4, c // 4).transpose(1, 2) for z in self.qkv(x).split(c, dim=2))
        if self.fused_causal:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(c // 4)
            if self.shut is not None:
                scores = scores.masked_fill(self.shut[:t, :t], float("-inf"))
            y = torch.softmax(scores, dim=-1) @ v
        return x + self.out(y.transpose(1, 2).reshape(b, t, c))


class HandWrittenLM(nn.Module):
    def __init__(self, shut=None, fused_causal=False):
        super().__init__()
        self.embed, self.position = nn.Embedding(VOCAB, WIDTH), nn.Embedding(T, WIDTH)
        self.attention = Attention(shut, fused_causal)
        self.ln, self.head = nn.LayerNorm(WIDTH), nn.Linear(WIDTH, VOCAB)

    def forward(self, x):
        h = self.embed(x) + self.position(torch.arange(x.shape[1]))
        return self.head(self.ln(self.attention(h)))


def train(model, batch_of, steps=24):
    """AdamW under the doctor at every step; `batch_of(step)` gives (inputs, targets)."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    with doctor.watch(model, optimizer, every=1) as dr:
        for step in range(steps):
            x, y = batch_of(step)
            loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert dr.notes == []
    return dr


def next_tokens(step):
    idx = tokens(seed=step)
    return idx[:, :-1], idx[:, 1:]


def future_findings(dr):
    return [f for f in dr.findings if "targets_next_tokens" in f.evidence]


def shut_after(diagonal):
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=diagonal)


def test_a_causal_mask_one_diagonal_off_in_nn_transformer_encoder_is_an_error_at_each_attention():
    """(One finding for the model's attentions, at the first, the others beside it: sweep 50's two-layer decoder had
    two errors saying the same.)"""
    torch.manual_seed(0)
    found = future_findings(train(EncoderLM(shut_after(2)), next_tokens))
    assert [f.where for f in found] == ["attention after blocks.layers.0.norm1"]
    first = found[0]
    assert first.evidence["also_sites"] == ["attention after blocks.layers.1.norm1"]
    assert "The same holds at `attention after blocks.layers.1.norm1`" in first.explanation
    assert first.severity == "error" and first.symptom == "wrong_gradient" and first.first_step == 0
    assert first.evidence["next_position_readable"] == 1.0 and first.evidence["furthest_ahead"] == 1
    assert first.evidence["targets_next_tokens"] == 1.0 and first.evidence["no_mask"] is False
    assert "1 diagonal off" in first.explanation and "diagonal=1" in first.remedies[0]


def test_no_causal_mask_at_all_is_told_as_such():
    torch.manual_seed(0)
    (found, *_) = future_findings(train(EncoderLM(None), next_tokens))
    assert found.evidence["no_mask"] is True and found.evidence["furthest_ahead"] == T - 1
    assert "has no causal mask" in found.explanation


def test_a_float_mask_of_zeros_and_ones_is_told_as_a_mask_that_shuts_nothing():
    # Sweep 47: `torch.triu(torch.ones(T, T), 1)`, a causal mask's shape in floats, is added to the scores (the future
    # gets +1, not -inf) and shuts nothing: found, but told as "no causal mask", with no word of the mask it was given.
    torch.manual_seed(0)
    (found, *_) = future_findings(train(EncoderLM(torch.triu(torch.ones(T, T), 1)), next_tokens))
    assert found.evidence["no_mask"] is True and found.evidence["float_mask"] == [0.0, 1.0]
    assert "is given a float mask (its entries from 0 to 1)" in found.explanation
    assert "float('-inf')" in found.remedies[0] and "dtype=torch.bool" in found.remedies[0]


def test_a_float_mask_that_shuts_padded_keys_only_is_told_as_no_causal_mask():
    """A float mask whose least entry is -inf shuts some keys (a padding mask's, given as floats): not a mask that shuts
    nothing, whatever the share of queries that may read ahead (a review's case: "entries from -inf to 0... shuts no
    key" contradicted itself)."""
    from leakygrad.doctor import Thresholds
    from leakygrad.doctor.history import History
    from leakygrad.doctor.rules import future_visible_rule

    history = History(Thresholds())
    look = {"next_position": 1.0, "furthest_ahead": T - 1, "positions": T, "next_tokens": 1.0}
    history.lookahead = [(s, {"attention after embed": {**look, "float_mask": [-math.inf, 0.0]}}) for s in (0, 16)]
    [f] = future_visible_rule(history, Thresholds())
    assert f.evidence["no_mask"] is True and "float_mask" not in f.evidence


def test_a_float_mask_holding_minus_infinity_is_left_alone():
    torch.manual_seed(0)
    shut = torch.triu(torch.full((T, T), float("-inf")), 1)
    assert future_findings(train(EncoderLM(shut), next_tokens)) == []


def test_the_right_mask_in_nn_transformer_encoder_is_left_alone():
    torch.manual_seed(0)
    assert future_findings(train(EncoderLM(shut_after(1)), next_tokens)) == []  # (PyTorch passes it as is_causal)


def test_a_hand_written_attention_filled_one_diagonal_off_is_found_at_its_softmax():
    torch.manual_seed(0)
    shut = torch.tril(torch.ones(T, T), diagonal=1) == 0  # (nanoGPT's `bias == 0`, its tril taken a diagonal up)
    (found,) = future_findings(train(HandWrittenLM(shut), next_tokens))
    assert found.where == "softmax after attention.qkv"
    assert found.evidence["furthest_ahead"] == 1 and found.severity == "error"


def test_hand_written_and_fused_causal_attention_are_left_alone():
    torch.manual_seed(0)
    dr = train(HandWrittenLM(torch.tril(torch.ones(T, T)) == 0), next_tokens)
    assert future_findings(dr) == []
    # (read, and found causal: no query reads a key after its own)
    assert [looks["softmax after attention.qkv"]["next_position"] for _, looks in dr.history.lookahead] == [0.0] * 4
    torch.manual_seed(0)
    assert future_findings(train(HandWrittenLM(fused_causal=True), next_tokens)) == []


def test_a_masked_language_model_reads_every_position_and_is_left_alone():
    """BERT's objective: the targets are the tokens at their own positions (some inputs replaced), no mask."""

    def masked_tokens(step):
        idx = tokens(seed=step)[:, :T]
        hidden = torch.rand(idx.shape, generator=torch.Generator().manual_seed(step)) < 0.15
        return idx.masked_fill(hidden, 0), idx

    torch.manual_seed(0)
    dr = train(EncoderLM(None), masked_tokens)
    assert future_findings(dr) == []
    assert dr.history.lookahead
    assert all(look["next_tokens"] < 0.5 for _, looks in dr.history.lookahead for look in looks.values())


class Seq2Seq(nn.Module):
    """nn.Transformer with a causal decoder: its cross-attention reads every source position, by design."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.transformer = nn.Transformer(WIDTH, 4, 1, 1, 64, dropout=0.0, batch_first=True)
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, source, target_in):
        causal = nn.Transformer.generate_square_subsequent_mask(target_in.shape[1])
        return self.head(self.transformer(self.embed(source), self.embed(target_in), tgt_mask=causal))


def train_seq2seq(model, optimizer, steps, batch_of):
    """Teacher forcing under the doctor at every step: `batch_of(step)` gives (source, target); the decoder reads
    [0] + target[:-1]."""
    with doctor.watch(model, optimizer, every=1) as dr:
        for step in range(steps):
            source, target = batch_of(step)
            target_in = torch.cat([torch.zeros_like(target[:, :1]), target[:, :-1]], dim=1)
            loss = F.cross_entropy(model(source, target_in).reshape(-1, VOCAB), target.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return dr


def reversed_sequences(step):
    source = tokens(seed=step)[:, :T]
    return source, source.flip(1)


class UnmaskedSeq2Seq(Seq2Seq):
    """The same, its decoder called without `tgt_mask`: each target position reads the decoder input after its own."""

    def forward(self, source, target_in):
        return self.head(self.transformer(self.embed(source), self.embed(target_in)))


def test_a_decoder_without_its_causal_mask_is_found_though_its_last_target_is_an_end_token():
    """Sweep 50: `nn.Transformer` called without `tgt_mask`, on sentences of 4 to 10 tokens whose targets end with an
    end-of-sequence token, padded: the end token's target is followed by padding in the input, so L of the L + 1
    targets follow their input (0.8 to 0.91), under the 0.9 the rule wanted, and nothing was said (greedy exact match
    0.00 against 0.74). Now found, with nn.Transformer's `tgt_mask` as the remedy."""
    torch.manual_seed(0)
    model = UnmaskedSeq2Seq()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    with doctor.watch(model, optimizer, every=1) as dr:
        for step in range(16):
            source = tokens(seed=step)[:, :8].clamp(min=3)  # (0: padding, 1: end, 2: start)
            lengths = torch.randint(4, 9, (source.shape[0],), generator=torch.Generator().manual_seed(step))
            target = torch.full((source.shape[0], 9), -100)  # (padding the loss ignores)
            target_in = torch.zeros(source.shape[0], 9, dtype=torch.long)
            for row, length in enumerate(lengths.tolist()):
                sentence = source[row, :length].flip(0)
                target[row, : length + 1] = torch.cat([sentence, torch.tensor([1])])
                target_in[row, : length + 1] = torch.cat([torch.tensor([2]), sentence])
            loss = F.cross_entropy(model(source, target_in).reshape(-1, VOCAB), target.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    [found] = future_findings(dr)
    assert found.evidence["decoder"] and 0.75 < found.evidence["targets_next_tokens"] < 0.9
    assert found.remedies[0].startswith("Give the decoder its causal mask: `tgt_mask=")


def test_a_sequence_to_sequence_transformer_with_its_decoder_masked_is_left_alone():
    torch.manual_seed(0)
    model = Seq2Seq()
    dr = train_seq2seq(model, torch.optim.AdamW(model.parameters(), lr=3e-3), 16, reversed_sequences)
    assert dr.notes == [] and future_findings(dr) == []
    # (the encoder's self-attention was read, no mask: its queries read the source, whose next tokens are no targets;
    # the decoder's causal mask reaches its kernel as is_causal, and the cross-attention is no self-attention)
    looks = [looks["attention after embed"] for _, looks in dr.history.lookahead]
    assert len(looks) == 4 and all(look["next_position"] == 1.0 and look["next_tokens"] < 0.5 for look in looks)


class LuongSeq2Seq(nn.Module):
    """An LSTM encoder-decoder with dot-product attention over the source (Luong's "general" score), the decoder
    started from the encoder's final state, so that its queries' graph reaches the source's embedding too."""

    def __init__(self, hidden=64):
        super().__init__()
        self.source_embed, self.target_embed = nn.Embedding(VOCAB, WIDTH), nn.Embedding(VOCAB, WIDTH)
        self.encoder = nn.LSTM(WIDTH, hidden, batch_first=True)
        self.decoder = nn.LSTM(WIDTH, hidden, batch_first=True)
        self.score = nn.Linear(hidden, hidden, bias=False)
        self.combine, self.head = nn.Linear(2 * hidden, hidden), nn.Linear(hidden, VOCAB)

    def forward(self, source, target_in):
        keys, state = self.encoder(self.source_embed(source))
        d, _ = self.decoder(self.target_embed(target_in), state)
        weights = torch.softmax(torch.bmm(self.score(d), keys.transpose(1, 2)), dim=-1)  # (every source position)
        return self.head(torch.tanh(self.combine(torch.cat([d, torch.bmm(weights, keys)], dim=-1))))


def test_an_attention_over_the_source_from_a_decoder_started_from_its_state_is_left_alone():
    # Sweep 47: its queries and keys both reach the encoder, so it is looked at as a self-attention without a causal
    # mask; the targets, the next tokens of the decoder's own input, were counted from the queries' side and taken for
    # tokens the keys let it read: an error on a healthy model (sort 8 digits: greedy accuracy 0.998).
    def sorted_digits(step):
        source = tokens(batch=64, seed=step)[:, :8]
        return source, source.sort(dim=1).values

    torch.manual_seed(0)
    model = LuongSeq2Seq()
    dr = train_seq2seq(model, torch.optim.Adam(model.parameters(), lr=3e-3), 8, sorted_digits)
    assert dr.notes == [] and future_findings(dr) == []
    looks = [look for _, looks in dr.history.lookahead for look in looks.values()]
    assert looks and all(look["next_position"] == 1.0 and look["next_tokens"] < 0.5 for look in looks)


def test_a_tagger_that_reads_one_position_ahead_on_purpose_is_left_alone():
    """A streaming tagger given one position of right context: its targets are labels of the positions themselves."""

    def tags(step):
        idx = tokens(seed=step)[:, :T]
        return idx, (idx + torch.roll(idx, -1, dims=1)) % VOCAB  # (a label that needs the next token)

    torch.manual_seed(0)
    assert future_findings(train(EncoderLM(shut_after(2)), tags)) == []


class Tagger(nn.Module):
    """A bidirectional token tagger (no causal mask, on purpose) over sentences padded with token 0, its padding's tag 0
    ignored by the loss (`ignore_index=0`, as tutorials write it)."""

    def __init__(self):
        super().__init__()
        self.embed, self.position = nn.Embedding(VOCAB, WIDTH, padding_idx=0), nn.Embedding(64, WIDTH)
        self.attention = nn.MultiheadAttention(WIDTH, 4, batch_first=True)
        self.head = nn.Linear(WIDTH, 5)

    def forward(self, x):
        h = self.embed(x) + self.position(torch.arange(x.shape[1]))
        return self.head(h + self.attention(h, h, h, need_weights=False)[0])


def test_padding_the_loss_ignores_is_not_counted_as_next_tokens():
    """(The review of stop 37.) In the padding, target 0 equals the next token 0: 94% of the targets looked like next
    tokens, and a healthy tagger was told it reads its own target. Targets the loss ignores are left out."""
    generator = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    model = Tagger()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    with doctor.watch(model, optimizer, every=2) as dr:
        for _ in range(12):
            x, y = torch.zeros(16, 64, dtype=torch.long), torch.zeros(16, 64, dtype=torch.long)
            for row in range(16):
                length = int(torch.randint(3, 9, (), generator=generator))
                x[row, :length] = torch.randint(1, VOCAB, (length,), generator=generator)
                y[row, :length] = 1 + x[row, :length] % 4
            loss = F.cross_entropy(model(x).reshape(-1, 5), y.reshape(-1), ignore_index=0)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert dr.notes == [] and future_findings(dr) == []
    assert all(look["next_tokens"] < 0.5 for _, looks in dr.history.lookahead for look in looks.values())


# --- 1-D convolutions: a WaveNet's or a TCN's forecast, a convolutional language model --------------------------------
class Forecaster(nn.Module):
    """Dilated 1-D convolutions with residuals, forecasting x[t + 1] from x[:t + 1] (sweep 40's WaveNet-style model):
    `padding` "both" pads each side by d (k - 1) / 2 (the bug), "left" pads by F.pad on the left only, "cut" pads by
    d (k - 1) on both sides and cuts the end off (both causal)."""

    def __init__(self, padding: str, width=16):
        super().__init__()
        self.padding = padding
        self.inp, self.out = nn.Conv1d(1, width, 1), nn.Conv1d(width, 1, 1)
        pads = {"both": lambda d: d, "left": lambda d: 0, "cut": lambda d: 2 * d}
        self.convs = nn.ModuleList(nn.Conv1d(width, width, 3, dilation=d, padding=pads[padding](d)) for d in (1, 2, 4))

    def forward(self, x):
        h = self.inp(x)
        for conv in self.convs:
            span = 2 * conv.dilation[0]
            if self.padding == "left":
                z = conv(F.pad(h, (span, 0)))
            else:
                z = conv(h)[..., :-span] if self.padding == "cut" else conv(h)
            h = h + F.relu(z)
        return self.out(h)


def signals(step, batch=16, length=48):
    generator = torch.Generator().manual_seed(step)
    t = torch.arange(length + 1).float()
    frequency, phase = 0.05 + 0.1 * torch.rand(batch, 1, generator=generator), torch.rand(batch, 1, generator=generator)
    return torch.sin(2 * math.pi * (frequency * t + phase)).unsqueeze(1)  # (batch, 1, length + 1)


def forecast(model, target_of=lambda x: x[..., 1:], steps=16):
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    with doctor.watch(model, optimizer, every=2) as dr:
        for step in range(steps):
            x = signals(step)
            loss = F.mse_loss(model(x[..., :-1]), target_of(x))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert dr.notes == []
    return dr


def test_a_convolution_padded_on_both_sides_in_a_forecaster_reads_its_target():
    """Sweep 40: symmetric padding in a WaveNet-style forecaster, training loss 0.0009 against 0.017 for its causal
    twin, and the forecast from the past alone 3.2 times worse (0.042 against 0.013). An error at each convolution
    that reads ahead, with the padding that makes it causal."""
    torch.manual_seed(0)
    found = future_findings(forecast(Forecaster("both")))
    assert [f.where for f in found] == ["convs.0", "convs.1", "convs.2"]
    first, last = found[0], found[-1]
    assert (first.symptom, first.severity, first.first_step) == ("wrong_gradient", "error", 0)
    assert first.evidence["convolution"] == {"kernel": 3, "dilation": 1, "left": 1, "right": 1}
    assert first.evidence["targets_next_tokens"] == 1.0 and first.evidence["furthest_ahead"] == 1
    assert last.evidence["furthest_ahead"] == 4 and "F.pad(x, (8, 0))" in last.remedies[0]
    assert "4 positions after its own" in last.explanation


def test_causal_convolutions_and_a_denoiser_padded_on_both_sides_are_left_alone():
    """Padded on the left by F.pad, or by d (k - 1) with the end cut off: nothing ahead. Padded on both sides but
    trained to give back its own input cleaned (targets at their own positions, not the next): no finding."""
    torch.manual_seed(0)
    assert future_findings(forecast(Forecaster("left"))) == []
    assert future_findings(forecast(Forecaster("cut"))) == []
    dr = forecast(Forecaster("both"), target_of=lambda x: x[..., :-1])
    assert future_findings(dr) == [] and dr.history.lookahead  # (looked at, and its targets are no next values)


class ConvLM(nn.Module):
    """A convolutional character model: embeddings, a 1-D convolution over the positions, a head per position."""

    def __init__(self, causal: bool):
        super().__init__()
        self.causal = causal
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.conv = nn.Conv1d(WIDTH, WIDTH, 5, padding=0 if causal else 2)
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, x):
        h = self.embed(x).transpose(1, 2)
        h = F.pad(h, (4, 0)) if self.causal else h
        return self.head(torch.relu(self.conv(h)).transpose(1, 2))


def test_a_convolutional_language_model_padded_on_both_sides_is_found():
    torch.manual_seed(0)
    (found,) = future_findings(train(ConvLM(causal=False), next_tokens))
    assert found.where == "conv" and found.evidence["furthest_ahead"] == 2
    torch.manual_seed(0)
    assert future_findings(train(ConvLM(causal=True), next_tokens)) == []


# --- the review of stop 38 --------------------------------------------------------------------------------------------
class OneConv(nn.Module):
    """Embeddings (or raw values), one 1-D convolution over the positions, a head per position: the convolution padded
    as `padding` says ("both": 2 each side; "replicate"; "same" with an even kernel; "masked": both sides, but the
    taps after the centre held at 0, a PixelCNN-style causal convolution)."""

    def __init__(self, padding: str, tokens: bool = True):
        super().__init__()
        self.tokens = tokens
        self.embed = nn.Embedding(VOCAB, WIDTH) if tokens else None  # (or a series of 3 channels, read as it is)
        kernel = 4 if padding == "same" else 5
        options = {"both": {"padding": 2}, "masked": {"padding": 2}, "same": {"padding": "same"}}
        options["replicate"] = {"padding": 2, "padding_mode": "replicate"}
        self.conv = nn.Conv1d(WIDTH if tokens else 3, WIDTH, kernel, **options[padding])
        self.mask = torch.tensor([1.0, 1.0, 1.0, 0.0, 0.0]) if padding == "masked" else None
        self.head = nn.Conv1d(WIDTH, VOCAB if tokens else 3, 1)

    def forward(self, x):
        h = (self.embed(x) if self.tokens else x).transpose(1, 2)  # (B, WIDTH or 3, L)
        if self.mask is not None:
            h = F.conv1d(h, self.conv.weight * self.mask, self.conv.bias, padding=2)
        else:
            h = self.conv(h)
        return self.head(torch.relu(h))  # (B, VOCAB or 3, L)


def train_channels(model, batch_of, loss_of, steps=8):
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    with doctor.watch(model, optimizer, every=2) as dr:
        for step in range(steps):
            x, y = batch_of(step)
            loss = loss_of(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert dr.notes == []
    return future_findings(dr)


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")
def test_convolutions_padded_ahead_in_other_spellings_are_found():
    """`padding_mode='replicate'` (an F.pad before it), `padding='same'` with an even kernel (an F.pad on the right),
    cross_entropy over (B, V, L) logits (`nll_loss2d`), and a multivariate forecaster given (B, L, C) targets."""
    torch.manual_seed(0)
    for padding in ("replicate", "same"):
        (found,) = train_channels(OneConv(padding), next_tokens, F.cross_entropy)
        assert found.where == "conv" and found.evidence["furthest_ahead"] >= 1, padding

    def series(step):
        x = torch.randn(16, T + 1, 3, generator=torch.Generator().manual_seed(step)).cumsum(1)
        return x[:, :-1], x[:, 1:]

    model = OneConv("both", tokens=False)
    (found,) = train_channels(model, series, lambda out, y: F.mse_loss(out.transpose(1, 2), y))
    assert found.where == "conv" and found.evidence["convolution"]["left"] == 2


def test_a_masked_convolution_a_pooled_encoder_and_a_slow_signal_are_left_alone():
    """A convolution padded on both sides whose taps after the centre are 0 reads nothing ahead; one pooled into a
    code per sequence before a decoder predicts the next tokens gives no position its own; a denoiser of an on/off
    trace, whose targets equal the input one step on as often as at their own step, shows no forecast."""
    torch.manual_seed(0)

    def flat(logits, y):  # (cross_entropy over (B * L, V) rows: an `nll_loss`, the form first judged)
        return F.cross_entropy(logits.transpose(1, 2).reshape(-1, VOCAB), y.reshape(-1))

    assert train_channels(OneConv("masked"), next_tokens, flat) == []

    class PooledEncoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.conv = nn.Embedding(VOCAB, WIDTH), nn.Conv1d(WIDTH, WIDTH, 5, padding=2)
            self.decoder, self.head = nn.GRU(WIDTH, WIDTH, batch_first=True), nn.Linear(WIDTH, VOCAB)

        def forward(self, x):
            h = self.embed(x)
            code = self.conv(h.transpose(1, 2)).amax(-1)  # (B, WIDTH): one per sequence
            out, _ = self.decoder(h, code[None].contiguous())
            return self.head(out).transpose(1, 2)

    assert train_channels(PooledEncoder(), next_tokens, flat) == []

    def trace(step):
        generator = torch.Generator().manual_seed(step)
        clean = (torch.rand(16, 1, 64, generator=generator).cumsum(-1) % 8 > 4).float()  # (long runs of 0s and 1s)
        return clean + 0.1 * torch.randn(16, 1, 64, generator=generator), clean

    denoiser = nn.Sequential(nn.Conv1d(1, 8, 5, padding=2), nn.ReLU(), nn.Conv1d(8, 1, 5, padding=2))
    dr_findings = train_channels(denoiser, trace, F.mse_loss)
    assert dr_findings == []


class DroppingSeq2Seq(nn.Module):
    """nn.Transformer at its default dropout of 0.1, with key-padding masks: in training PyTorch then runs attention
    on its unfused path, a `_safe_softmax` over scores a float mask is added to, not the fused kernel."""

    def __init__(self, causal: bool):
        super().__init__()
        self.causal = causal
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.transformer = nn.Transformer(WIDTH, 4, 1, 1, 64, dropout=0.1, batch_first=True)
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, source, target_in):
        mask = nn.Transformer.generate_square_subsequent_mask(target_in.shape[1]) if self.causal else None
        padding = torch.zeros(target_in.shape)
        padding[:, -1] = float("-inf")  # (the last position padding, in every example; a float mask, as tgt_mask is)
        return self.head(
            self.transformer(self.embed(source), self.embed(target_in), tgt_mask=mask, tgt_key_padding_mask=padding)
        )


@pytest.mark.parametrize("causal", [False, True])
def test_a_decoder_without_its_causal_mask_is_found_under_dropout_too(causal):
    """Sweep 53: `nn.Transformer(..., dropout=0.1)` (its default) called without `tgt_mask` was silent (exact match
    0.000 against 0.558), though found at dropout 0: under dropout PyTorch takes the unfused path, whose softmax is a
    `_safe_softmax` and whose masks are added to the scores as floats. The keys a float mask shuts are those the
    softmax gave exactly 0. Without the causal mask: the error; with it, no finding of that kind."""
    torch.manual_seed(0)
    model = DroppingSeq2Seq(causal)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    dr = train_seq2seq(model, optimizer, 12, reversed_sequences)
    assert dr.notes == []
    found = future_findings(dr)
    if causal:
        assert found == []
        return
    [f] = found
    assert (f.symptom, f.severity, f.evidence["decoder"]) == ("wrong_gradient", "error", True)
