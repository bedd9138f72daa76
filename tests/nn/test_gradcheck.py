"""Conv, pooling, norms, recurrent layers and attention against central differences (float64, small sizes),
and second derivatives where the layers promise them."""

import numpy as np
import pytest

import leakygrad as lg
from leakygrad.engine.ops.nn import Col2Im, GRUSequence, Im2Col, Linear, LSTMSequence, RNNSequence
from leakygrad.nn import functional as F
from leakygrad.nn.recurrent import gru_sequence, lstm_sequence, rnn_relu_sequence, rnn_tanh_sequence

rng = np.random.default_rng(0)


def t(*shape, scale=1.0):
    return lg.Tensor(rng.standard_normal(shape) * scale, requires_grad=True, dtype="float64")


def test_im2col_and_col2im_are_adjoint():
    # <im2col(x), w> = <x, col2im(w)> for all x, w: each is the other's transpose (and backward).
    x = rng.standard_normal((2, 3, 5, 4))
    options = dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1))
    cols = Im2Col(**options).forward(x)
    w = rng.standard_normal(cols.shape)
    back = Col2Im(image_shape=x.shape, **options).forward(w)
    assert np.sum(cols * w) == pytest.approx(np.sum(x * back), rel=1e-12)


@pytest.mark.parametrize("x_shape", [(4, 3), (2, 4, 3), (3,)])
def test_linear_op_gradients_and_second_derivatives(x_shape):
    x, w, b = t(*x_shape), t(2, 3), t(2)
    lg.gradcheck(lambda x, w, b: Linear.apply(x, w, b), x, w, b)
    lg.gradcheck(lambda x, w: Linear.apply(x, w), x, w)
    # linear in each input, so the second derivatives come from the tanh around it and the cross terms
    lg.gradgradcheck(lambda x, w, b: Linear.apply(x, w, b).tanh(), x, w, b)


def test_conv2d_gradients_and_second_derivatives():
    x, w, b = t(1, 2, 5, 4), t(3, 2, 3, 2), t(3)
    conv = lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1)  # noqa: E731
    lg.gradcheck(conv, x, w, b)
    lg.gradgradcheck(lambda x, w: F.conv2d(x, w, None, stride=2, padding=1).tanh(), x, w)


def test_pooling_gradients():
    x = t(1, 2, 5, 5)
    lg.gradcheck(lambda x: F.max_pool2d(x, 3, stride=2, padding=1), x)
    lg.gradcheck(lambda x: F.avg_pool2d(x, 2, stride=1), x)
    lg.gradcheck(lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False), x)
    lg.gradgradcheck(lambda x: F.max_pool2d(x, 2) ** 2, x)


def test_norm_gradients():
    x, weight, bias = t(4, 3, 2), t(3), t(3)
    mean, var = lg.zeros(3, dtype="float64"), lg.ones(3, dtype="float64")
    lg.gradcheck(lambda x, w, b: F.batch_norm(x, mean, var, w, b, training=True), x, weight, bias)
    lg.gradcheck(lambda x, w, b: F.batch_norm(x, mean, var, w, b, training=False), x, weight, bias)
    y, gamma, beta = t(2, 3, 4), t(4), t(4)
    lg.gradcheck(lambda y, g, b: F.layer_norm(y, 4, g, b), y, gamma, beta)
    lg.gradgradcheck(lambda y, g: F.layer_norm(y, 4, g), y, gamma)


def _recurrence_inputs(gates, with_cell=False):
    steps, batch, inputs, hidden = 3, 2, 2, 3
    x, h0 = t(steps, batch, inputs), t(batch, hidden, scale=0.5)
    params = (t(gates * hidden, inputs), t(gates * hidden, hidden), t(gates * hidden), t(gates * hidden))
    return (x, h0, t(batch, hidden, scale=0.5)) + params if with_cell else (x, h0) + params


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_fused_rnn_gradients(nonlinearity):
    lg.gradcheck(lambda *a: RNNSequence.apply(*a, nonlinearity=nonlinearity), *_recurrence_inputs(1))


def test_fused_lstm_gradients_through_hidden_and_cell_states():
    lg.gradcheck(lambda *a: LSTMSequence.apply(*a), *_recurrence_inputs(4, with_cell=True))


def test_fused_gru_gradients():
    lg.gradcheck(lambda *a: GRUSequence.apply(*a), *_recurrence_inputs(3))


def test_composed_recurrences_gradients():
    lg.gradcheck(rnn_tanh_sequence, *_recurrence_inputs(1))
    lg.gradcheck(lstm_sequence, *_recurrence_inputs(4, with_cell=True))
    lg.gradcheck(gru_sequence, *_recurrence_inputs(3))


def test_fused_recurrences_are_twice_differentiable_through_the_composed_fallback():
    lstm_inputs = _recurrence_inputs(4, with_cell=True)
    lg.gradgradcheck(lambda *a: LSTMSequence.apply(*a, composed=lstm_sequence), *lstm_inputs)
    lg.gradgradcheck(lambda *a: GRUSequence.apply(*a, composed=gru_sequence), *_recurrence_inputs(3))
    lg.gradgradcheck(
        lambda *a: RNNSequence.apply(*a, composed=rnn_relu_sequence, nonlinearity="relu"), *_recurrence_inputs(1)
    )


def test_fused_recurrence_without_a_composed_version_refuses_second_derivatives_clearly():
    inputs = _recurrence_inputs(4, with_cell=True)
    out = LSTMSequence.apply(*inputs)
    with pytest.raises(lg.BackwardError, match="cannot be differentiated twice.*fused=False"):
        lg.grad(out.sum(), inputs[3], create_graph=True)


def test_attention_gradients():
    q, k, v = t(1, 2, 4, 3), t(1, 2, 4, 3), t(1, 2, 4, 3)
    lg.gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), q, k, v)


def test_losses_second_derivatives():
    x = t(3, 4)
    lg.gradgradcheck(lambda x: F.cross_entropy(x, np.array([0, 3, 1]), label_smoothing=0.1), x)
    for reduction in ("mean", "sum", "none"):  # the fused op, summing its rows itself or not
        lg.gradgradcheck(lambda x, r=reduction: F.cross_entropy(x, np.array([0, 3, 1]), reduction=r), x)
    lg.gradgradcheck(lambda x: F.binary_cross_entropy_with_logits(x, np.full((3, 4), 0.3)), x)


def test_conv2d_with_bias_second_derivatives_through_the_gradient_ops():
    x, w, b = t(2, 2, 4, 4), t(3, 2, 2, 2), t(3)
    lg.gradgradcheck(lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1) ** 2, x, w, b)
    lg.gradgradcheck(lambda x, w, b: F.conv2d(x, w, b, stride=1, padding=1) ** 2, x, w, b)


@pytest.mark.parametrize(
    "channels, options",
    [
        (3, dict(stride=(2, 1), padding=(1, 0))),  # strided: the input gradient through col2im
        (3, dict(stride=(1, 1), padding=(1, 1))),  # stride 1: as a convolution of the padded gradient
        (1, dict(stride=(1, 1), padding=(2, 0))),  # one channel; padding k - 1 and 0
        (2, dict(stride=(1, 1), padding=(3, 1))),  # padding beyond k - 1: through col2im again
    ],
)
def test_conv2d_gradient_ops_are_the_adjoints_of_the_convolution(channels, options):
    from leakygrad.engine.ops.nn import Conv2d, Conv2dInputGrad, Conv2dWeightGrad

    x, w = rng.standard_normal((2, channels, 6, 5)), rng.standard_normal((4, channels, 3, 2))
    y = Conv2d(**options).forward(x, w)
    g = rng.standard_normal(y.shape)
    # <conv(x, w), g> = <x, input_grad(g, w)> = <w, weight_grad(x, g)>
    dx = Conv2dInputGrad(image_shape=x.shape, **options).forward(g, w)
    dw = Conv2dWeightGrad(kernel_size=(3, 2), **options).forward(x, g)
    assert np.sum(y * g) == pytest.approx(np.sum(x * dx), rel=1e-12)
    assert np.sum(y * g) == pytest.approx(np.sum(w * dw), rel=1e-12)


def test_fused_and_composed_lstm_modules_give_the_same_second_derivatives():
    from leakygrad import nn

    lg.manual_seed(0)
    fused = nn.LSTM(2, 3).double()
    composed = nn.LSTM(2, 3, fused=False).double()
    composed.load_state_dict(fused.state_dict())
    x = lg.Tensor(rng.standard_normal((4, 2, 2)), dtype="float64")
    hessian_vector_products = []
    for model in (fused, composed):
        weights = list(model.parameters())
        out, (h, c) = model(x)
        grads = lg.grad((out**2).sum() + c.sum(), weights, create_graph=True)
        # d/dw of <grad, v> for a fixed v: a Hessian-vector product, through the backward pass itself
        product = sum((g * lg.Tensor(np.ones(g.shape), dtype="float64")).sum() for g in grads)
        hessian_vector_products.append([g.data for g in lg.grad(product, weights)])
    for a, b in zip(*hessian_vector_products):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def _images_and_kernel():
    return t(2, 2, 4, 3), t(3, 2, 3, 3), t(3)


HEAD = lg.Tensor(rng.standard_normal((2, 3 * 4 * 3)), dtype="float64")  # a linear layer on 3 channels of 4 x 3


def _rows_and_weight():
    return t(2, 5), t(3, 5), t(3)


@pytest.mark.parametrize(
    "inputs, layer",
    [
        (_rows_and_weight, lambda x, w, b: Linear.apply(x, w, b)),
        (_rows_and_weight, lambda x, w, b: F.cross_entropy(F.linear(x, w, b), np.array([1, 0]))),
        (_images_and_kernel, lambda x, w, b: F.relu(F.conv2d(x, w, b, stride=1, padding=1))),
        (_images_and_kernel, lambda x, w, b: F.conv2d(x, w, None, stride=(2, 1), padding=(1, 0))),
        (_images_and_kernel, lambda x, w, b: F.max_pool2d(F.conv2d(x, w, b, padding=1), 2)),
        (_images_and_kernel, lambda x, w, b: F.max_pool2d(F.conv2d(x, w, b, padding=1), 3, stride=2, padding=1)),
        # flatten hands relu a gradient in (N, C, H, W) order, its mask is channels-last: relu lays it out again
        (_images_and_kernel, lambda x, w, b: F.linear(F.relu(F.conv2d(x, w, b, padding=1)).flatten(1), HEAD)),
    ],
    ids=[
        "linear",
        "cross-entropy",
        "conv-relu",
        "conv-strided-no-bias",
        "conv-pool",
        "conv-overlapping-pool",
        "conv-relu-flatten-linear",
    ],
)
def test_backward_on_arrays_gives_the_recorded_backwards_gradients_to_the_bit(inputs, layer):
    # Without create_graph these layers' ops compute their gradients on arrays; with it, as ops. Same numbers.
    x, w, b = inputs()
    weight = lg.Tensor(rng.standard_normal(layer(x, w, b).shape), dtype="float64")
    plain = lg.grad((layer(x, w, b) * weight).sum(), [x, w, b], allow_unused=True)
    recorded = lg.grad((layer(x, w, b) * weight).sum(), [x, w, b], allow_unused=True, create_graph=True)
    assert any(g is not None and g.requires_grad for g in recorded)  # the recorded backward was a graph
    for g_plain, g_recorded in zip(plain, recorded):
        assert (g_plain is None) == (g_recorded is None)
        if g_plain is not None:
            assert not g_plain.requires_grad
            np.testing.assert_array_equal(g_plain.data, g_recorded.data)
