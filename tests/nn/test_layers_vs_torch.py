"""Every layer against its PyTorch twin: same weights, same inputs, float64; outputs and all gradients agree."""

import numpy as np
import pytest
import torch

import leakygrad as lg
from leakygrad import nn


def test_linear(twin):
    twin.compare(nn.Linear(5, 3), torch.nn.Linear(5, 3), [twin.normal(4, 5)])


def test_linear_without_bias_on_a_batch_of_sequences(twin):
    twin.compare(nn.Linear(5, 3, bias=False), torch.nn.Linear(5, 3, bias=False), [twin.normal(2, 4, 5)])


@pytest.mark.parametrize("x_shape", [(5,), (2, 4, 5)])
def test_linear_on_a_vector_and_with_bias_on_a_batch_of_sequences(twin, x_shape):
    twin.compare(nn.Linear(5, 3), torch.nn.Linear(5, 3), [twin.normal(*x_shape)])


def test_functional_linear_with_mixed_dtypes_keeps_the_rules_of_matmul_and_add():
    # Not the fused op's case (it wants one dtype): the composed x @ W.T + b, which promotes to float64.
    x = lg.Tensor(np.ones((2, 3)), requires_grad=True)  # float32
    w = lg.Tensor(np.ones((4, 3)), requires_grad=True, dtype="float64")
    out = nn.functional.linear(x, w, lg.Tensor(np.zeros(4), dtype="float64"))
    assert out.dtype == np.float64 and out.op.name == "add"
    out.sum().backward()
    assert x.grad.dtype == np.float32 and np.allclose(x.grad.data, 4.0)


def test_embedding_with_repeated_indices_and_padding(twin):
    indices = np.array([[1, 2, 1], [0, 4, 4]])
    module = nn.Embedding(6, 3, padding_idx=4)
    module.weight.data[4] = 1.5  # a nonzero padding row: its value is used, its gradient stays zero
    twin.compare(module, torch.nn.Embedding(6, 3, padding_idx=4), [indices])
    assert np.all(module.weight.grad.data[4] == 0)


def test_functional_embedding_counts_a_negative_padding_idx_from_the_end_as_pytorch():
    from leakygrad.nn import functional as F

    weight = np.random.default_rng(0).standard_normal((4, 2))
    indices = np.array([0, 3, 3, 1])
    ours = lg.Tensor(weight, requires_grad=True, dtype="float64")
    theirs = torch.tensor(weight, requires_grad=True)
    F.embedding(indices, ours, padding_idx=-1).sum().backward()
    torch.nn.functional.embedding(torch.from_numpy(indices), theirs, padding_idx=-1).sum().backward()
    np.testing.assert_array_equal(ours.grad.data, theirs.grad.numpy())  # row 3 (the last) gets no gradient
    with pytest.raises(lg.OpError, match="embedding: padding_idx -5 is not a row of a table of 4"):
        F.embedding(indices, ours, padding_idx=-5)


@pytest.mark.parametrize(
    "kwargs, size",
    [
        (dict(kernel_size=3, padding=1), 8),
        (dict(kernel_size=3, stride=2), 9),
        (dict(kernel_size=(2, 3), stride=(2, 1), padding=(1, 0)), 7),
        (dict(kernel_size=1, bias=False), 4),
    ],
)
def test_conv2d(twin, kwargs, size):
    twin.compare(nn.Conv2d(3, 4, **kwargs), torch.nn.Conv2d(3, 4, **kwargs), [twin.normal(2, 3, size, size)])


def test_conv2d_on_the_channels_last_output_of_another_convolution(twin):
    # The second convolution reads the first's output in place (channels-last memory, no padding to copy into).
    ours = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.Conv2d(4, 2, 2, stride=(1, 2)))
    theirs = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.Conv2d(4, 2, 2, stride=(1, 2)))
    twin.compare(ours, theirs, [twin.normal(2, 3, 5, 6)])


@pytest.mark.parametrize(
    "in_channels, kwargs", [(1, dict(kernel_size=3, padding=1)), (2, dict(kernel_size=2, padding=2))]
)
def test_conv2d_with_one_input_channel_or_padding_beyond_the_kernel(twin, in_channels, kwargs):
    ours, theirs = nn.Conv2d(in_channels, 4, **kwargs), torch.nn.Conv2d(in_channels, 4, **kwargs)
    twin.compare(ours, theirs, [twin.normal(2, in_channels, 5, 6)])


@pytest.mark.parametrize(
    "kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=(3, 2), stride=1)]
)
@pytest.mark.parametrize("size", [(7, 6), (6, 4)])  # (6, 4): windows of 2 tile the image
def test_max_pool2d(twin, kwargs, size):
    twin.compare(nn.MaxPool2d(**kwargs), torch.nn.MaxPool2d(**kwargs), [twin.normal(2, 3, *size)])


def test_max_pool2d_gives_a_tie_to_the_first_maximum_as_pytorch():
    x = np.zeros((1, 1, 2, 2))
    ours = lg.Tensor(x, requires_grad=True, dtype="float64")
    nn.MaxPool2d(2)(ours).sum().backward()
    theirs = torch.zeros(1, 1, 2, 2, dtype=torch.float64, requires_grad=True)
    torch.nn.functional.max_pool2d(theirs, 2).sum().backward()
    np.testing.assert_array_equal(ours.grad.data, theirs.grad.numpy())
    assert ours.grad.data.sum() == 1


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(kernel_size=2),
        dict(kernel_size=3, stride=2, padding=1),
        dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    ],
)
def test_avg_pool2d(twin, kwargs):
    twin.compare(nn.AvgPool2d(**kwargs), torch.nn.AvgPool2d(**kwargs), [twin.normal(2, 3, 7, 6)])


def test_flatten(twin):
    twin.compare(nn.Flatten(), torch.nn.Flatten(), [twin.normal(2, 3, 2, 2)])
    twin.compare(nn.Flatten(1, 2), torch.nn.Flatten(1, 2), [twin.normal(2, 3, 2, 2)])
    twin.compare(nn.Flatten(-3, -2), torch.nn.Flatten(-3, -2), [twin.normal(2, 3, 2, 2)])
    with pytest.raises(lg.OpError, match=r"flatten: axis 4 is out of range for a tensor of shape \(2, 3, 4, 5\)"):
        nn.Flatten(start_dim=4)(lg.randn(2, 3, 4, 5))  # (it used to wrap around to axis 0, silently)


@pytest.mark.parametrize("shape", [(6, 3), (6, 3, 5)])
def test_batch_norm_1d_training_then_eval(twin, shape):
    ours, theirs = nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3)
    for _ in range(3):  # three training steps: running statistics must follow PyTorch's
        twin.compare(ours, theirs, [twin.normal(*shape) * 2 + 1])
    ours.eval(), theirs.eval()
    twin.compare(ours, theirs, [twin.normal(*shape)])
    assert ours.num_batches_tracked.item() == 3


def test_batch_norm_2d_with_cumulative_average_and_without_affine(twin):
    ours, theirs = nn.BatchNorm2d(2, momentum=None), torch.nn.BatchNorm2d(2, momentum=None)
    for _ in range(2):
        twin.compare(ours, theirs, [twin.normal(3, 2, 4, 4) * 3 - 1])
    ours.eval(), theirs.eval()
    twin.compare(ours, theirs, [twin.normal(3, 2, 4, 4)])
    plain = nn.BatchNorm2d(2, affine=False, track_running_stats=False).eval()  # always batch statistics
    twin.compare(
        plain, torch.nn.BatchNorm2d(2, affine=False, track_running_stats=False).eval(), [twin.normal(3, 2, 4, 4)]
    )


def test_batch_norm_in_training_refuses_a_single_value_per_channel():
    with pytest.raises(lg.OpError, match="more than one value per channel"):
        nn.BatchNorm1d(3)(lg.randn(1, 3))


def test_layer_norm(twin):
    twin.compare(nn.LayerNorm(4), torch.nn.LayerNorm(4), [twin.normal(2, 3, 4)])
    twin.compare(nn.LayerNorm((3, 4)), torch.nn.LayerNorm((3, 4)), [twin.normal(2, 3, 4)])
    twin.compare(nn.LayerNorm(4, bias=False), torch.nn.LayerNorm(4, bias=False), [twin.normal(2, 4)])


@pytest.mark.parametrize(
    "ours, theirs",
    [
        (nn.ReLU(), torch.nn.ReLU()),
        (nn.Sigmoid(), torch.nn.Sigmoid()),
        (nn.Tanh(), torch.nn.Tanh()),
        (nn.LeakyReLU(0.2), torch.nn.LeakyReLU(0.2)),
        (nn.ELU(0.7), torch.nn.ELU(0.7)),
        (nn.GELU(), torch.nn.GELU()),
        (nn.GELU("tanh"), torch.nn.GELU("tanh")),
        (nn.SiLU(), torch.nn.SiLU()),
        (nn.Softplus(2.0, 5.0), torch.nn.Softplus(2.0, 5.0)),
        (nn.Hardtanh(-0.5, 0.8), torch.nn.Hardtanh(-0.5, 0.8)),
        (nn.ReLU6(), torch.nn.ReLU6()),
        (nn.SELU(), torch.nn.SELU()),
        (nn.CELU(0.6), torch.nn.CELU(0.6)),
        (nn.Mish(), torch.nn.Mish()),
        (nn.Hardsigmoid(), torch.nn.Hardsigmoid()),
        (nn.Hardswish(), torch.nn.Hardswish()),
        (nn.Threshold(0.1, -2.0), torch.nn.Threshold(0.1, -2.0)),
        (nn.Softmax(dim=1), torch.nn.Softmax(dim=1)),
        (nn.LogSoftmax(dim=-1), torch.nn.LogSoftmax(dim=-1)),
        (nn.Identity(), torch.nn.Identity()),
    ],
    ids=lambda m: type(m).__name__,
)
def test_activation(twin, ours, theirs):
    twin.compare(ours, theirs, [twin.normal(3, 5) * 4])


def test_dropout_in_eval_is_the_identity_and_in_training_keeps_the_mean():
    layer = nn.Dropout(0.25)
    x = lg.ones(200, 500)
    kept = layer(x).data
    assert set(np.unique(kept)) == {0.0, np.float32(1 / 0.75)}
    assert abs((kept == 0).mean() - 0.25) < 0.01 and abs(kept.mean() - 1) < 0.02
    layer.eval()
    assert layer(x) is x


def test_dropout_gradient_flows_only_through_kept_units():
    x = lg.ones(50, 40, requires_grad=True)
    out = nn.Dropout(0.5)(x)
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.data, out.data)  # 2 where kept, 0 where dropped


def test_dropout_is_reproducible_with_manual_seed():
    lg.manual_seed(3)
    a = nn.Dropout(0.5)(lg.ones(10, 10)).data
    lg.manual_seed(3)
    b = nn.Dropout(0.5)(lg.ones(10, 10)).data
    np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------------------------------- recurrent layers


def _lstm_call(module, x, h0, c0):
    return module(x, (h0, c0))


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "composed"])
@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_rnn(twin, fused, nonlinearity):
    ours = nn.RNN(3, 4, num_layers=2, nonlinearity=nonlinearity, fused=fused)
    theirs = torch.nn.RNN(3, 4, num_layers=2, nonlinearity=nonlinearity)
    twin.compare(ours, theirs, [twin.normal(5, 2, 3), twin.normal(2, 2, 4)])


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "composed"])
def test_lstm_two_layers_with_initial_state(twin, fused):
    ours, theirs = nn.LSTM(3, 4, num_layers=2, fused=fused), torch.nn.LSTM(3, 4, num_layers=2)
    twin.compare(ours, theirs, [twin.normal(6, 2, 3), twin.normal(2, 2, 4), twin.normal(2, 2, 4)], call=_lstm_call)


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "composed"])
def test_lstm_batch_first_without_bias_and_default_state(twin, fused):
    ours = nn.LSTM(3, 4, bias=False, batch_first=True, fused=fused)
    theirs = torch.nn.LSTM(3, 4, bias=False, batch_first=True)
    twin.compare(ours, theirs, [twin.normal(2, 5, 3)])


def test_lstm_unbatched_sequence(twin):
    twin.compare(nn.LSTM(3, 4), torch.nn.LSTM(3, 4), [twin.normal(5, 3)])


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "composed"])
def test_gru(twin, fused):
    ours, theirs = nn.GRU(3, 4, num_layers=2, batch_first=True, fused=fused), torch.nn.GRU(3, 4, 2, batch_first=True)
    twin.compare(ours, theirs, [twin.normal(2, 5, 3), twin.normal(2, 2, 4)])


def test_recurrent_dropout_between_layers_is_off_in_eval(twin):
    ours, theirs = nn.GRU(3, 4, num_layers=2, dropout=0.5), torch.nn.GRU(3, 4, num_layers=2, dropout=0.5)
    twin.compare(ours.eval(), theirs.eval(), [twin.normal(4, 2, 3)])


def test_cells(twin):
    twin.compare(
        nn.RNNCell(3, 4, nonlinearity="relu"),
        torch.nn.RNNCell(3, 4, nonlinearity="relu"),
        [twin.normal(2, 3), twin.normal(2, 4)],
    )
    twin.compare(nn.GRUCell(3, 4), torch.nn.GRUCell(3, 4), [twin.normal(2, 3), twin.normal(2, 4)])
    twin.compare(
        nn.LSTMCell(3, 4),
        torch.nn.LSTMCell(3, 4),
        [twin.normal(2, 3), twin.normal(2, 4), twin.normal(2, 4)],
        call=lambda m, x, h, c: m(x, (h, c)),
    )


def test_fused_and_composed_lstm_agree_in_float32():
    lg.manual_seed(1)
    fused = nn.LSTM(8, 16)
    composed = nn.LSTM(8, 16, fused=False)
    composed.load_state_dict(fused.state_dict())
    x = lg.randn(10, 4, 8)
    out_a, (h_a, c_a) = fused(x)
    out_b, (h_b, c_b) = composed(x)
    (out_a.sum() + c_a.sum()).backward()
    (out_b.sum() + c_b.sum()).backward()
    np.testing.assert_allclose(out_a.data, out_b.data, atol=1e-6)
    for (name, a), b in zip(fused.named_parameters(), composed.parameters()):
        np.testing.assert_allclose(a.grad.data, b.grad.data, rtol=1e-4, atol=1e-5, err_msg=name)


def test_recurrent_shape_errors_name_the_expected_shape():
    with pytest.raises(lg.OpError, match=r"input_size 3, got \(5, 2, 4\)"):
        nn.LSTM(3, 4)(lg.randn(5, 2, 4))
    with pytest.raises(lg.OpError, match=r"h0 should have shape \(1, 2, 4\)"):
        nn.GRU(3, 4)(lg.randn(5, 2, 3), lg.randn(2, 4))


# ------------------------------------------------------------------------------------------- attention


def _causal_mask(length):
    return torch.triu(torch.full((length, length), float("-inf"), dtype=torch.float64), diagonal=1)


def test_causal_self_attention_matches_multihead_attention_with_a_causal_mask(twin):
    ours = nn.CausalSelfAttention(8, num_heads=2)
    theirs = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    names = {"qkv.weight": "in_proj_weight", "qkv.bias": "in_proj_bias"}
    names |= {"proj.weight": "out_proj.weight", "proj.bias": "out_proj.bias"}

    def call(module, x):
        if isinstance(module, nn.Module):
            return module(x)
        return module(x, x, x, attn_mask=_causal_mask(x.shape[1]), need_weights=False)[0]

    twin.compare(ours, theirs, [twin.normal(2, 5, 8)], call=call, name_map=names)


def test_transformer_block_matches_a_pre_norm_encoder_layer_with_a_causal_mask(twin):
    ours = nn.Block(8, num_heads=2)
    theirs = torch.nn.TransformerEncoderLayer(
        8, 2, dim_feedforward=32, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
    )
    names = {
        "ln1.weight": "norm1.weight",
        "ln1.bias": "norm1.bias",
        "ln2.weight": "norm2.weight",
        "ln2.bias": "norm2.bias",
        "attn.qkv.weight": "self_attn.in_proj_weight",
        "attn.qkv.bias": "self_attn.in_proj_bias",
        "attn.proj.weight": "self_attn.out_proj.weight",
        "attn.proj.bias": "self_attn.out_proj.bias",
        "mlp.0.weight": "linear1.weight",
        "mlp.0.bias": "linear1.bias",
        "mlp.2.weight": "linear2.weight",
        "mlp.2.bias": "linear2.bias",
    }

    def call(module, x):
        if isinstance(module, nn.Module):
            return module(x)
        return module(x, src_mask=_causal_mask(x.shape[1]))

    twin.compare(ours, theirs, [twin.normal(2, 5, 8)], call=call, name_map=names)


def test_causal_attention_does_not_look_ahead():
    attention = nn.CausalSelfAttention(8, num_heads=2).double()
    x = lg.Tensor(np.random.default_rng(0).standard_normal((1, 6, 8)), requires_grad=True, dtype="float64")
    attention(x)[0, 2].sum().backward()  # output at position 2
    assert np.all(x.grad.data[0, 3:] == 0) and np.all(x.grad.data[0, :3] != 0)


def test_max_pool2d_propagates_nan_and_routes_its_gradient_like_pytorch():
    x = np.arange(32, dtype=np.float64).reshape(1, 2, 4, 4) % 7
    x[0, 0, 0, 1] = np.nan  # a window with a NaN
    x[0, 1, 2, 2] = x[0, 1, 3, 3] = np.nan  # a window with two
    ours = lg.Tensor(x, requires_grad=True, dtype="float64")
    theirs = torch.tensor(x, requires_grad=True)
    out = nn.MaxPool2d(2)(ours)
    expected = torch.nn.functional.max_pool2d(theirs, 2)
    np.testing.assert_array_equal(out.data, expected.detach().numpy())  # NaN where torch has NaN
    out.sum().backward()
    expected.sum().backward()
    np.testing.assert_array_equal(ours.grad.data, theirs.grad.numpy())


def test_max_pool2d_with_infinite_maxima_of_both_signs_routes_gradients_like_pytorch():
    x = np.random.default_rng(2).standard_normal((2, 3, 4, 4))
    x[0, 0, 1, 1] = np.inf
    x[1, 2, 2:, 2:] = -np.inf  # a whole window of -inf
    ours = lg.Tensor(x, requires_grad=True, dtype="float64")
    theirs = torch.tensor(x, requires_grad=True)
    out = nn.MaxPool2d(2)(ours)
    expected = torch.nn.functional.max_pool2d(theirs, 2)
    np.testing.assert_array_equal(out.data, expected.detach().numpy())
    out.backward(lg.Tensor(np.arange(out.size, dtype=np.float64).reshape(out.shape), dtype="float64"))
    expected.backward(torch.arange(out.size, dtype=torch.float64).reshape(out.shape))
    np.testing.assert_array_equal(ours.grad.data, theirs.grad.numpy())


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2, padding=1), dict(kernel_size=3, stride=1, padding=1)])
def test_max_pool2d_with_padding_gives_an_all_minus_inf_window_to_its_first_pixel_inside_as_pytorch(kwargs):
    # Padding counts as -inf: in a window whose own pixels are all -inf too, the padding ties with them, and
    # PyTorch gives the gradient to the window's first pixel inside the image (never to the padding).
    x = np.random.default_rng(3).standard_normal((2, 2, 5, 4))
    x[0, 0, :2, :2] = -np.inf
    x[1, 1] = -np.inf  # a whole channel
    x[1, 0, 4, 3] = -np.inf  # a corner
    ours = lg.Tensor(x, requires_grad=True, dtype="float64")
    theirs = torch.tensor(x, requires_grad=True)
    out, expected = nn.MaxPool2d(**kwargs)(ours), torch.nn.MaxPool2d(**kwargs)(theirs)
    np.testing.assert_array_equal(out.data, expected.detach().numpy())
    upstream = np.arange(1, out.size + 1, dtype=np.float64).reshape(out.shape)
    out.backward(lg.Tensor(upstream, dtype="float64"))
    expected.backward(torch.from_numpy(upstream))
    np.testing.assert_array_equal(ours.grad.data, theirs.grad.numpy())
    assert ours.grad.data.sum() == upstream.sum()  # every window's gradient landed on a pixel of the image


def test_max_pool2d_backward_keeps_an_infinite_gradient_at_the_winner_only():
    x = np.random.default_rng(1).standard_normal((1, 1, 4, 4))
    ours = lg.Tensor(x, requires_grad=True, dtype="float64")
    theirs = torch.tensor(x, requires_grad=True)
    upstream = np.array([[[[np.inf, 1.0], [np.nan, -2.0]]]])
    nn.MaxPool2d(2)(ours).backward(lg.Tensor(upstream, dtype="float64"))
    torch.nn.functional.max_pool2d(theirs, 2).backward(torch.from_numpy(upstream))
    np.testing.assert_array_equal(ours.grad.data, theirs.grad.numpy())
    assert np.isfinite(ours.grad.data).sum() == 14  # the inf and the NaN stay at their windows' winners


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("fused", [True, False])
def test_recurrent_layers_take_an_empty_batch_as_pytorch_does(kind, fused):
    ours = getattr(nn, kind)(3, 4, fused=fused)
    x = lg.randn(5, 0, 3, requires_grad=True)
    output, _ = ours(x)
    expected, _ = getattr(torch.nn, kind)(3, 4)(torch.randn(5, 0, 3))
    assert output.shape == tuple(expected.shape) == (5, 0, 4)
    output.sum().backward()
    assert x.grad.shape == (5, 0, 3) and np.all(ours.weight_ih_l0.grad.data == 0)


def test_batch_norm_takes_an_empty_batch_as_pytorch_does():
    for ours, theirs, shape in (
        (nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3), (0, 3)),
        (nn.BatchNorm2d(3, momentum=None), torch.nn.BatchNorm2d(3, momentum=None), (0, 3, 4, 4)),
    ):
        x = lg.zeros(*shape, requires_grad=True)
        out = ours(x)
        expected = theirs(torch.zeros(shape, requires_grad=True))
        assert out.shape == tuple(expected.shape)
        out.sum().backward()
        for name, value in theirs.state_dict().items():  # statistics unchanged, the batch counted
            np.testing.assert_array_equal(ours.state_dict()[name], value.numpy())
        assert int(ours.num_batches_tracked.data) == 1 and np.all(ours.weight.grad.data == 0)
    assert nn.BatchNorm1d(3, track_running_stats=False)(lg.zeros(0, 3)).shape == (0, 3)


def test_norm_layers_take_a_numpy_array_as_input():
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    for ours, theirs in ((nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3)), (nn.LayerNorm(3), torch.nn.LayerNorm(3))):
        np.testing.assert_allclose(ours(x).data, theirs(torch.from_numpy(x)).detach().numpy(), atol=1e-6)


def test_transformer_block_drops_out_where_pytorchs_encoder_layer_does():
    x = np.random.default_rng(0).standard_normal((1, 3, 8))
    ours = nn.Block(8, 2, dropout=1.0).double()  # training: every sublayer's output dropped, as in PyTorch
    theirs = torch.nn.TransformerEncoderLayer(8, 2, 32, dropout=1.0, batch_first=True, norm_first=True).double()
    np.testing.assert_array_equal(ours(lg.Tensor(x, dtype="float64")).data, x)
    np.testing.assert_array_equal(theirs(torch.tensor(x), is_causal=False).detach().numpy(), x)
    assert [type(layer).__name__ for layer in ours.mlp[1]] == ["GELU", "Dropout"]  # after the activation too


@pytest.mark.parametrize("stride, padding", [(1, 1), (2, 0), (1, 0)])
def test_conv2d_takes_an_empty_batch_as_pytorch_does(stride, padding):
    ours = nn.Conv2d(3, 4, 3, stride=stride, padding=padding)
    theirs = torch.nn.Conv2d(3, 4, 3, stride=stride, padding=padding)
    x = lg.Tensor(np.zeros((0, 3, 5, 5)), requires_grad=True)
    xt = torch.zeros((0, 3, 5, 5), requires_grad=True)
    y, yt = ours(x), theirs(xt)  # (it raised: NumPy cannot infer -1 in a reshape of size 0)
    assert y.shape == tuple(yt.shape)
    y.sum().backward()
    yt.sum().backward()
    assert x.grad.shape == (0, 3, 5, 5)
    np.testing.assert_array_equal(ours.weight.grad.data, theirs.weight.grad.numpy())
    np.testing.assert_array_equal(ours.bias.grad.data, theirs.bias.grad.numpy())
