"""Layer options and inputs at the edges (recurrent, attention, norms, basic layers, init), against PyTorch."""

import warnings

import numpy as np
import pytest
import torch

import leakygrad as lg
from leakygrad import nn
from leakygrad.nn import init


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "composed"])
def test_recurrent_layers_take_an_unbatched_numpy_sequence_as_they_take_a_batched_one(kind, fused):
    # A (T, N, I) array worked, but an unbatched (T, I) one crashed with an AttributeError (ndarray.unsqueeze).
    lg.manual_seed(0)
    ours = getattr(nn, kind)(3, 4, num_layers=2, fused=fused).double()
    theirs = getattr(torch.nn, kind)(3, 4, num_layers=2).double()
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in ours.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 3))
    out, state = ours(x)
    expected, expected_state = theirs(torch.from_numpy(x))
    np.testing.assert_allclose(out.data, expected.detach().numpy(), rtol=1e-6, atol=1e-9)
    h_n, expected_h_n = (state[0], expected_state[0]) if kind == "LSTM" else (state, expected_state)
    np.testing.assert_allclose(h_n.data, expected_h_n.detach().numpy(), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_recurrent_dropout_with_a_single_layer_warns_as_in_pytorch(kind):
    # Dropout acts between layers only: with one layer it silently did nothing (PyTorch warns).
    with pytest.warns(UserWarning, match=f"{kind}: dropout=0.5 does nothing with num_layers=1"):
        getattr(nn, kind)(3, 4, dropout=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        getattr(nn, kind)(3, 4, num_layers=2, dropout=0.5)
        getattr(nn, kind)(3, 4)


def test_reprs_show_the_settings_that_change_what_a_layer_computes():
    # A relu RNN, a norm without running statistics or without affine parameters printed as the defaults.
    assert "nonlinearity=relu" in repr(nn.RNN(3, 4, nonlinearity="relu"))
    assert "nonlinearity" not in repr(nn.RNN(3, 4)) and "nonlinearity" not in repr(nn.LSTM(3, 4))
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu")) == "RNNCell(3, 4, bias=True, nonlinearity=relu)"
    assert "track_running_stats=False" in repr(nn.BatchNorm2d(3, track_running_stats=False))
    assert "track_running_stats" not in repr(nn.BatchNorm2d(3))
    assert repr(nn.LayerNorm(3, elementwise_affine=False)) == "LayerNorm((3,), eps=1e-05, elementwise_affine=False)"
    assert repr(nn.LayerNorm(3, bias=False)) == "LayerNorm((3,), eps=1e-05, bias=False)"
    assert repr(nn.LayerNorm(3)) == "LayerNorm((3,), eps=1e-05)"
    assert "dropout=0.1" in repr(nn.CausalSelfAttention(8, 2, dropout=0.1))


@pytest.mark.parametrize("num_heads", [0, -2])
def test_causal_self_attention_refuses_a_head_count_below_one(num_heads):
    # 0 heads raised ZeroDivisionError; -2 heads divided 8 and failed later, in a reshape during forward.
    with pytest.raises(lg.OpError, match=f"CausalSelfAttention: num_heads must be at least 1, got {num_heads}"):
        nn.CausalSelfAttention(8, num_heads)


def test_causal_self_attention_checks_its_dropout_when_built():
    # It used to fail only in the first training forward, as "dropout: p must be ...", without the layer's name.
    with pytest.raises(lg.OpError, match="CausalSelfAttention: dropout must be between 0 and 1, got 1.5"):
        nn.CausalSelfAttention(8, 2, dropout=1.5)


def test_init_functions_name_a_numpy_array_they_cannot_fill():
    # An array's .data is a memoryview: filling it raised "TypeError: memoryview: invalid slice key".
    for fill in (init.zeros_, init.xavier_uniform_, init.kaiming_normal_, init.orthogonal_):
        with pytest.raises(lg.OpError, match=r"init: fills a Tensor .* in place, got .*\(3, 2\)"):
            fill(np.empty((3, 2)))


def test_identity_takes_and_ignores_any_arguments_as_pytorch():
    # torch.nn.Identity(54, unused_argument1=0.1) is documented usage; here it raised TypeError.
    layer = nn.Identity(54, unused_argument1=0.1)
    x = lg.randn(2, 3)
    assert layer(x) is x and list(layer.parameters()) == []
