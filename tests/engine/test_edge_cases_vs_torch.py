"""Edge cases a randomised comparison with PyTorch found (random compositions of ops, first and second
derivatives, float64 and float32): each differed from torch.autograd before its fix."""

import warnings

import numpy as np
import pytest
import torch

import leakygrad as lg
from leakygrad import functional as F


def first_and_second(f_lg, f_torch, x, dtype="float64"):
    """d/dx sum(f(x)) and the second derivative (d/dx of the sum of the first), in both libraries."""
    xl = lg.Tensor(np.array(x), requires_grad=True, dtype=dtype)
    (g,) = lg.grad(f_lg(xl).sum(), [xl], create_graph=True)
    (h,) = lg.grad(g.sum(), [xl])
    xt = torch.tensor(np.array(x, dtype=dtype), requires_grad=True)
    (gt,) = torch.autograd.grad(f_torch(xt).sum(), xt, create_graph=True)
    (ht,) = torch.autograd.grad(gt.sum(), xt)
    return (g.data, h.data), (gt.detach().numpy(), ht.numpy())


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_elu_second_derivative_at_zero_is_zero_as_in_pytorch(alpha):
    ours, theirs = first_and_second(
        lambda x: F.elu(x, alpha), lambda x: torch.nn.functional.elu(x, alpha), [-1.0, 0.0, 2.0]
    )
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12)  # (it was alpha at 0: y + alpha differentiated)


@pytest.mark.parametrize("dtype, x", [("float64", [-30.0, -40.0]), ("float32", [-12.0, -18.0])])
def test_elu_gradient_keeps_its_digits_in_the_negative_tail(dtype, x):
    ours, theirs = first_and_second(F.elu, torch.nn.functional.elu, x, dtype)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)  # (y + alpha cancelled: 0 at -40, 4 digits at -30)
    assert ours[0].dtype == np.dtype(dtype)


@pytest.mark.parametrize("x, beta, threshold", [(1.0, 1.0, 1.0), (1.0, 2.0, 2.0), (20.0, 1.0, 20.0)])
def test_softplus_second_derivative_at_its_threshold_is_zero_as_in_pytorch(x, beta, threshold):
    ours, theirs = first_and_second(
        lambda t: F.softplus(t, beta, threshold),
        lambda t: torch.nn.functional.softplus(t, beta, threshold),
        [x - 0.5, x, x + 0.5],
    )
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize(
    "dtype, a, b",
    [("float64", 1e300, 1e160), ("float64", 1e-300, 1e-170), ("float32", 1e-30, 1e-23), ("float32", 1e30, 1e20)],
)
def test_the_gradient_of_a_quotient_by_its_denominator_does_not_overflow(dtype, a, b):
    al, bl = lg.Tensor(np.array(a), dtype=dtype), lg.Tensor(np.array(b), requires_grad=True, dtype=dtype)
    (al / bl).backward()
    bt = torch.tensor(b, dtype=getattr(torch, dtype), requires_grad=True)
    (torch.tensor(a, dtype=getattr(torch, dtype)) / bt).backward()
    assert np.isfinite(bl.grad.data) and bl.grad.data != 0  # (-a/b^2: b^2 overflowed or underflowed)
    np.testing.assert_allclose(bl.grad.data, bt.grad.numpy(), rtol=1e-5)


def test_clip_with_tensor_bounds_gives_the_bounds_their_gradient():
    x = lg.Tensor([0.0, 1.0, 2.0, 3.0], requires_grad=True, dtype="float64")
    low = lg.Tensor(1.5, requires_grad=True, dtype="float64")
    high = lg.Tensor([2.5, 2.5, 2.5, 2.5], requires_grad=True, dtype="float64")
    weights = np.array([1.0, 1.0, 1.0, 1.0])
    (x.clip(low, high) * lg.Tensor(weights, dtype="float64")).sum().backward()
    xt = torch.tensor([0.0, 1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    lt = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
    ht = torch.full((4,), 2.5, dtype=torch.float64, requires_grad=True)
    torch.clamp(xt, lt, ht).sum().backward()
    for ours, theirs in ((x, xt), (low, lt), (high, ht)):
        np.testing.assert_array_equal(ours.grad.data, theirs.grad.numpy())  # (the bounds got None)
    assert F.clip(x, low, None).shape == (4,)


def test_a_numpy_exponent_keeps_float32():
    x = lg.Tensor([1.0, 2.0], dtype="float32")
    assert (x ** np.float64(2.0)).dtype == np.float32  # as x * np.float64(2.0) does (it was float64)


@pytest.mark.parametrize(
    "ours, theirs",
    [
        (lambda: lg.zeros(0, 3).max(axis=1), lambda: torch.zeros(0, 3).amax(dim=1)),
        (lambda: lg.zeros(2, 0, 3).min(axis=0), lambda: torch.zeros(2, 0, 3).amin(dim=0)),
        (lambda: F.softmax(lg.zeros(3, 0), -1), lambda: torch.softmax(torch.zeros(3, 0), -1)),
        (lambda: F.log_softmax(lg.zeros(0), 0), lambda: torch.log_softmax(torch.zeros(0), 0)),
        (lambda: lg.zeros(2, 3, 0) @ lg.zeros(0, 4), lambda: torch.zeros(2, 3, 0) @ torch.zeros(0, 4)),
    ],
    ids=["max over a nonempty axis", "min over a nonempty axis", "softmax", "log_softmax", "matmul inner 0"],
)
def test_empty_tensors_give_what_pytorch_gives(ours, theirs):
    np.testing.assert_array_equal(ours().data, theirs().numpy())


def test_an_empty_reduction_and_padding_a_number_are_named_errors():
    with pytest.raises(lg.OpError, match="max: cannot take the max over an axis of length 0"):
        lg.zeros(3, 0).max(axis=1)
    with pytest.raises(lg.OpError, match=r"pad: a 0-d tensor \(a single number\) has no axes to pad"):
        F.pad(lg.tensor(1.0), (1, 1))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_at_infinities_gives_pytorchs_values_without_warnings(approximate):
    x = lg.Tensor([np.inf, -np.inf, 1.0], requires_grad=True, dtype="float64")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (NumPy warned: invalid value in multiply)
        y = F.gelu(x, approximate)
        y.sum().backward()
    xt = torch.tensor([np.inf, -np.inf, 1.0], dtype=torch.float64, requires_grad=True)
    yt = torch.nn.functional.gelu(xt, approximate=approximate)
    yt.sum().backward()
    np.testing.assert_allclose(y.data, yt.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.data, xt.grad.numpy(), rtol=1e-12)


def test_clip_with_tensor_bounds_and_nan_as_pytorch():
    values = np.array([np.nan, 1.0, 3.0])
    for low, high in ((np.array([0.0, 0.0, 0.0]), np.array([2.0, 2.0, 2.0])), (np.array([np.nan, 0.0, 0.0]), None)):
        x, xt = lg.Tensor(values, requires_grad=True, dtype="float64"), torch.tensor(values, requires_grad=True)
        bounds = [None if b is None else lg.Tensor(b, requires_grad=True, dtype="float64") for b in (low, high)]
        torch_bounds = [None if b is None else torch.tensor(b, requires_grad=True) for b in (low, high)]
        out, expected = x.clip(*bounds), torch.clamp(xt, *torch_bounds)
        np.testing.assert_array_equal(out.data, expected.detach().numpy())  # NaN from x or from a bound
        out.sum().backward()
        expected.sum().backward()
        for ours, theirs in zip([x, *bounds], [xt, *torch_bounds]):
            if ours is not None:
                np.testing.assert_array_equal(ours.grad.data, theirs.grad.numpy())  # none where NaN
    with pytest.raises(lg.OpError, match=r"clip: a bound of shape \(5,\) does not broadcast with the input's \(2, 4\)"):
        lg.randn(2, 4).clip(lg.zeros(5), None)
    wider = np.array([[0.5], [2.5]])  # a bound may widen the result, as in torch.clamp
    x, xt = (
        lg.Tensor([1.0, 2.0, 3.0], requires_grad=True, dtype="float64"),
        torch.tensor([1.0, 2.0, 3.0], requires_grad=True),
    )
    out, expected = x.clip(None, lg.Tensor(wider, dtype="float64")), torch.clamp(xt, max=torch.tensor(wider))
    np.testing.assert_array_equal(out.data, expected.detach().numpy())
    out.sum().backward()
    expected.sum().backward()
    np.testing.assert_array_equal(x.grad.data, xt.grad.numpy())
    assert lg.randn(3).clip(np.float64(-1.0), np.float64(1.0)).dtype == np.float32  # as x * np.float64(2)


def test_shape_methods_take_what_pytorch_takes_and_refuse_the_rest_by_name():
    x = lg.randn(2, 1, 3)
    assert x.squeeze(np.int64(1)).shape == (2, 3)
    assert lg.randn(1, 2, 1).squeeze(np.array([0, 2])).shape == lg.randn(1, 2, 1).squeeze(range(0, 3, 2)).shape == (2,)
    assert x.expand(-1, 4, -1).shape == (2, 4, 3) and x.expand(5, -1, 4, -1).shape == (5, 2, 4, 3)
    assert lg.arange(5.0)[lg.tensor(2) :].shape == (3,)  # a 0-d integer tensor as a slice bound
    for call, message in (
        (lambda: x.squeeze(1.0), "squeeze: an axis must be a whole number, got 1.0"),
        (lambda: x.flatten(1.0), "flatten: an axis must be a whole number, got 1.0"),
        (lambda: x.unsqueeze(0.5), "unsqueeze: an axis must be a whole number, got 0.5"),
        (lambda: x.pad(1.5), "pad: widths must be whole numbers, got 1.5"),
        (lambda: x.expand(2, -1), r"expand: 2 sizes \(2, -1\) for a tensor of 3 axes \(2, 1, 3\)"),
        (lambda: lg.zeros(0, 3).argmax(), r"argmax: the tensor of shape \(0, 3\) has nothing to choose from"),
        (lambda: lg.zeros(0, 3).argmin(axis=0), "argmin: .* nothing to choose from along axis 0"),
    ):
        with pytest.raises(lg.OpError, match=message):
            call()


@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")  # (the NaN mean)
def test_the_second_derivative_of_a_mean_over_nothing_is_zero():
    x = lg.zeros(0, 3, requires_grad=True, dtype="float64")
    upstream = lg.ones(3, requires_grad=True, dtype="float64")
    (g,) = lg.grad((x.mean(axis=0) * upstream).sum(), [x], create_graph=True)
    (h,) = lg.grad(g.sum(), [upstream], allow_unused=True)
    np.testing.assert_array_equal(h.data, np.zeros(3))


def test_softplus_gradient_at_nan_is_nan_as_in_pytorch():
    ours, theirs = first_and_second(F.softplus, torch.nn.functional.softplus, [np.nan, 1.0, 30.0])
    np.testing.assert_array_equal(ours[0], theirs[0])  # (the NaN was held at the threshold: gradient ~1)
    np.testing.assert_array_equal(ours[1], theirs[1])


def test_clip_with_an_array_bound_that_broadcasts_the_input_sums_its_gradient_back():
    x = lg.Tensor([-1.0, 0.5, 2.0], requires_grad=True, dtype="float64")
    xt = torch.tensor([-1.0, 0.5, 2.0], requires_grad=True, dtype=torch.float64)
    out, expected = x.clip(np.zeros((2, 3)), None), xt.clamp(torch.zeros(2, 3, dtype=torch.float64), None)
    np.testing.assert_array_equal(out.data, expected.detach().numpy())
    out.sum().backward()  # (it raised: a (2, 3) gradient for a (3,) input)
    expected.sum().backward()
    np.testing.assert_array_equal(x.grad.data, xt.grad.numpy())


@pytest.mark.parametrize(
    "ours",
    [
        lambda x: F.leaky_relu(x, np.float64(0.2)),
        lambda x: F.elu(x, np.float64(0.5)),
        lambda x: F.softplus(x, np.float64(2.0), np.float64(10.0)),
        lambda x: F.hardtanh(x, np.float64(-0.5), np.float64(0.5)),
        lambda x: lg.nn.LeakyReLU(np.float64(0.2))(x),
    ],
    ids=["leaky_relu", "elu", "softplus", "hardtanh", "nn.LeakyReLU"],
)
def test_numpy_number_settings_keep_float32(ours):
    x = lg.Tensor([-1.0, 0.25, 2.0], requires_grad=True, dtype="float32")
    y = ours(x)
    y.sum().backward()
    assert y.dtype == np.float32 and x.grad.dtype == np.float32  # (a NumPy float64 setting made them float64)


@pytest.mark.parametrize(
    "ours, theirs, values",
    [
        (F.silu, torch.nn.functional.silu, [-np.inf, np.inf, 1.0]),
        (F.softplus, torch.nn.functional.softplus, [np.nan, 1.0]),
        (lambda x: F.leaky_relu(x, 0.0), lambda x: torch.nn.functional.leaky_relu(x, 0.0), [np.inf, -1.0]),
    ],
    ids=["silu", "softplus", "leaky_relu"],
)
def test_activations_at_infinities_and_nan_give_pytorchs_values_without_warnings(ours, theirs, values):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (NumPy warned: invalid value encountered)
        y = ours(lg.Tensor(values, dtype="float64"))
    np.testing.assert_array_equal(y.data, theirs(torch.tensor(values, dtype=torch.float64)).numpy())


def test_functional_hardtanh_refuses_min_above_max():
    with pytest.raises(lg.OpError, match="hardtanh: max_val 1.0 is below min_val 2.0"):
        F.hardtanh(lg.Tensor([0.0, 3.0]), 2.0, 1.0)  # (it gave 1 everywhere, gradient 0; PyTorch refuses)
