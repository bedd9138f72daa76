"""Arguments as a PyTorch user writes them: in PyTorch's positions they mean what they mean there, or they are
refused by name; bad values are refused when the layer is built, with a message naming the layer and the value."""

import warnings

import numpy as np
import pytest
import torch

import leakygrad as lg
from leakygrad import nn
from leakygrad.nn import functional as F


def test_conv2d_takes_pytorchs_positions_and_refuses_what_it_lacks():
    # Conv2d(in, out, kernel, stride, padding, dilation, groups, bias): bias is the eighth, as in PyTorch
    assert nn.Conv2d(3, 4, 3, 1, 0, 1, 1, False).bias is None
    with pytest.raises(lg.OpError, match=r"Conv2d: dilation=2 is not supported \(only dilation=1\)"):
        nn.Conv2d(3, 4, 3, 1, 0, 2)  # it used to read the 2 as bias=2 and build an ordinary convolution
    with pytest.raises(lg.OpError, match="Conv2d: groups=2"):
        nn.Conv2d(4, 4, 3, groups=2)
    with pytest.raises(lg.OpError, match="Conv2d: padding_mode='reflect'"):
        nn.Conv2d(4, 4, 3, padding_mode="reflect")
    x = lg.randn(1, 3, 9, 9)
    with pytest.raises(lg.OpError, match="conv2d: dilation=2"):
        F.conv2d(x, lg.randn(4, 3, 3, 3), None, 1, 0, 2)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_recurrent_layers_take_pytorchs_positions_and_refuse_what_they_lack(kind):
    # (..., dropout, bidirectional): a True in the eighth place (RNN: the ninth) meant fused=True, silently
    first = ("tanh",) if kind == "RNN" else ()
    with pytest.raises(lg.OpError, match=rf"{kind}: bidirectional=True is not supported"):
        getattr(nn, kind)(3, 4, 1, *first, True, False, 0.0, True)
    assert getattr(nn, kind)(3, 4, 1, *first, True, False, 0.0, False).hidden_size == 4
    with pytest.raises(lg.OpError, match=rf"{kind}: bidirectional=True"):
        getattr(nn, kind)(3, 4, bidirectional=True)
    with pytest.raises(lg.OpError, match="LSTM: proj_size=2 is not supported"):
        nn.LSTM(3, 4, proj_size=2)


def test_pooling_takes_pytorchs_positions_and_refuses_what_it_lacks():
    x = lg.randn(1, 1, 5, 5)
    with pytest.raises(lg.OpError, match=r"AvgPool2d: ceil_mode=True is not supported"):
        nn.AvgPool2d(2, 2, 0, True)  # it used to read True as count_include_pad
    with pytest.raises(lg.OpError, match="avg_pool2d: ceil_mode=True"):
        F.avg_pool2d(x, 2, 2, 0, True)
    with pytest.raises(lg.OpError, match="AvgPool2d: divisor_override=3"):
        nn.AvgPool2d(2, divisor_override=3)
    with pytest.raises(lg.OpError, match="MaxPool2d: dilation=2"):
        nn.MaxPool2d(2, 2, 0, 2)
    with pytest.raises(lg.OpError, match="MaxPool2d: return_indices=True"):
        nn.MaxPool2d(2, return_indices=True)
    with pytest.raises(lg.OpError, match="max_pool2d: ceil_mode=True"):
        F.max_pool2d(x, 2, 2, 0, 1, True)


def test_avg_pool_in_pytorchs_positions_gives_pytorchs_values():
    # AvgPool2d(3, 2, 1): count_include_pad stays at its default (True) in both
    x = np.random.default_rng(0).normal(size=(2, 3, 7, 6))
    ours = nn.AvgPool2d(3, 2, 1)(lg.Tensor(x, dtype="float64"))
    theirs = torch.nn.AvgPool2d(3, 2, 1)(torch.from_numpy(x))
    np.testing.assert_allclose(ours.data, theirs.numpy(), rtol=1e-12)
    exclude = nn.AvgPool2d(3, 2, 1, False, False)(lg.Tensor(x, dtype="float64"))
    np.testing.assert_allclose(exclude.data, torch.nn.AvgPool2d(3, 2, 1, False, False)(torch.from_numpy(x)).numpy())


def test_linear_with_a_vector_for_weight_gives_pytorchs_result():
    x, w = np.random.default_rng(1).normal(size=(2, 3)), np.random.default_rng(2).normal(size=3)
    ours = F.linear(lg.Tensor(x, dtype="float64"), lg.Tensor(w, dtype="float64"))
    np.testing.assert_allclose(ours.data, torch.nn.functional.linear(torch.from_numpy(x), torch.from_numpy(w)))
    with pytest.raises(lg.OpError, match=r"linear: input of shape \(2, 3\) has 3 features .* expects 4"):
        F.linear(lg.Tensor(x), lg.Tensor(np.ones(4)))


def test_rnn_cell_refuses_a_nonlinearity_it_does_not_have():
    with pytest.raises(lg.OpError, match="RNNCell: nonlinearity must be 'tanh' or 'relu', got 'sigmoid'"):
        nn.RNNCell(3, 4, nonlinearity="sigmoid")  # it used to run a ReLU cell
    with pytest.raises(lg.OpError, match="rnn_cell: nonlinearity must be 'tanh' or 'relu', got 'Tanh'"):
        F.rnn_cell(lg.randn(2, 3), lg.randn(2, 4), lg.randn(4, 3), lg.randn(4, 4), nonlinearity="Tanh")


def test_a_buffer_registered_again_as_persistent_is_saved():
    module = nn.Module()
    module.register_buffer("a", lg.zeros(2), persistent=False)
    assert list(module.state_dict()) == []
    module.register_buffer("a", lg.zeros(2), persistent=True)
    assert list(module.state_dict()) == ["a"]


def test_layers_with_no_inputs_are_built_with_a_warning():
    with pytest.warns(UserWarning, match=r"kaiming_uniform_: a tensor of shape \(5, 0\) has no elements"):
        layer = nn.Linear(0, 5)
    assert layer(lg.zeros(2, 0)).shape == (2, 5)
    with pytest.warns(UserWarning, match="no elements"):
        nn.Conv2d(0, 2, 3)
    with pytest.warns(UserWarning, match="xavier_uniform_"):
        nn.init.xavier_uniform_(lg.zeros(0, 0))


def test_sizes_may_be_numpy_integers():
    layer = nn.LayerNorm(np.int64(4))
    assert layer.normalized_shape == (4,) and type(layer.normalized_shape[0]) is int
    assert F.layer_norm(lg.randn(2, 4), np.int64(4)).shape == (2, 4)
    assert nn.Conv2d(1, 2, np.int64(3)).kernel_size == (3, 3)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: nn.RNN(3, 4, dropout=1.5), "RNN: dropout must be between 0 and 1, got 1.5"),
        (lambda: nn.GRU(3, 0), "GRU: hidden_size must be at least 1, got 0"),
        (lambda: nn.Hardtanh(1, -1), "Hardtanh: max_val -1 is below min_val 1"),
        (lambda: nn.Conv2d(1, 1, 2.0), r"Conv2d kernel_size: expected one int or a pair of ints, got 2.0"),
    ],
)
def test_bad_settings_are_refused_when_the_layer_is_built(build, message):
    with pytest.raises(lg.OpError, match=message):
        build()


def test_train_mode_must_be_a_bool():
    with pytest.raises(ValueError, match=r"Linear.train: mode should be True or False, got 'no'"):
        nn.Linear(2, 2).train("no")
    assert nn.Linear(2, 2).train(np.bool_(False)).training is False


def test_recurrent_layers_name_a_bad_state_or_an_empty_sequence():
    x = lg.randn(5, 2, 3)
    with pytest.raises(lg.OpError, match=r"GRU: the sequence \(0, 2, 3\) has no time steps"):
        nn.GRU(3, 4)(lg.randn(0, 2, 3))
    with pytest.raises(lg.OpError, match=r"RNN: the sequence \(2, 0, 3\) has no time steps"):
        nn.RNN(3, 4, batch_first=True)(lg.randn(2, 0, 3))
    with pytest.raises(lg.OpError, match=r"LSTM: the initial state should be a pair \(h0, c0\), got a Tensor"):
        nn.LSTM(3, 4)(x, lg.zeros(1, 2, 4))
    with pytest.raises(lg.OpError, match=r"GRU: h0 should be a Tensor of shape \(1, 2, 4\), got tuple"):
        nn.GRU(3, 4)(x, (lg.zeros(1, 2, 4),))
    with pytest.raises(lg.OpError, match=r"RNN: h0 should have shape \(1, 4\) \(num_layers, hidden_size\)"):
        nn.RNN(3, 4)(lg.randn(5, 3), lg.zeros(1, 2, 4))  # unbatched input, batched state
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert nn.LSTM(3, 4)(x, [lg.zeros(1, 2, 4), lg.zeros(1, 2, 4)])[0].shape == (5, 2, 4)


def test_sizes_may_be_numpy_arrays_of_two_integers_as_in_pytorch():
    x = lg.randn(1, 3, 6, 6)
    assert nn.Conv2d(3, 4, np.array([3, 3]), stride=np.array([1, 1]), dilation=np.array([1, 1]))(x).shape == (
        1,
        4,
        4,
        4,
    )
    assert nn.MaxPool2d(np.array([2, 2]))(x).shape == (1, 3, 3, 3)
    assert F.conv2d(x, lg.randn(4, 3, 3, 3), dilation=np.array([1, 1]), groups=np.int64(1)).shape == (1, 4, 4, 4)
    assert F.max_pool2d(x, 2, dilation=(1, 1), ceil_mode=np.bool_(False)).shape == (1, 3, 3, 3)
    with pytest.raises(lg.OpError, match=r"Conv2d: dilation=\(2, 2\) is not supported"):
        nn.Conv2d(3, 4, 3, dilation=np.array([2, 2]))  # (NumPy's "truth value of an array is ambiguous")
    with pytest.raises(lg.OpError, match="expected one int or a pair of ints, got"):
        nn.Conv2d(3, 4, (3.0, 3.0))  # PyTorch refuses floats too


def test_cells_refuse_a_state_that_does_not_fit_the_input():
    x = lg.randn(2, 3)
    with pytest.raises(lg.OpError, match=r"LSTMCell: the state should be a pair \(h, c\), got a Tensor of shape"):
        nn.LSTMCell(3, 4)(x, lg.zeros(2, 4))  # one tensor: its rows would have been taken as h and c
    with pytest.raises(lg.OpError, match=r"RNNCell: h should have shape \(2, 4\) for an input of shape \(2, 3\)"):
        nn.RNNCell(3, 4)(x, lg.zeros(1, 4))  # would have broadcast over the batch
    with pytest.raises(lg.OpError, match=r"GRUCell: h should have shape \(2, 4\) .* got \(4,\)"):
        nn.GRUCell(3, 4)(x, lg.zeros(4))
    with pytest.raises(lg.OpError, match=r"LSTMCell: c should have shape \(2, 4\)"):
        nn.LSTMCell(3, 4)(x, (lg.zeros(2, 4), lg.zeros(3, 4)))
    with pytest.raises(lg.OpError, match=r"GRUCell: expects input \(batch, 3\) or \(3,\), got \(1, 2, 3\)"):
        nn.GRUCell(3, 4)(lg.randn(1, 2, 3))
    assert nn.LSTMCell(3, 4)(lg.randn(3), (lg.zeros(4), lg.zeros(4)))[0].shape == (4,)  # unbatched, as in PyTorch


@pytest.mark.parametrize("layer", [nn.RNN, nn.LSTM, nn.GRU, nn.RNNCell, nn.GRUCell])
def test_a_state_in_another_precision_than_the_input_is_refused(layer):
    recurrent = layer not in (nn.RNNCell, nn.GRUCell)
    x = lg.randn(5, 2, 3) if recurrent else lg.randn(2, 3)
    h = lg.zeros(1, 2, 4, dtype="float64") if recurrent else lg.zeros(2, 4, dtype="float64")
    state = (h, h) if layer is nn.LSTM else h
    for fused in (True, False) if recurrent else (True,):
        module = layer(3, 4, fused=fused) if recurrent else layer(3, 4)
        with pytest.raises(lg.OpError, match="is float64 but the input is float32; give both the same dtype"):
            module(x, state)
