"""dtypes: float32 by default, float64 on request, and each kept through the graph. (test_ops.py checks every
op's value, gradient and second derivative keep float32; this file checks creation, mixing and casts.)"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import leakygrad as lg
from leakygrad import functional as F


@pytest.mark.parametrize(
    "make",
    [
        lambda: lg.tensor([1.0, 2.0]),
        lambda: lg.Tensor(np.array([1.0, 2.0])),  # a float64 array becomes float32 unless asked
        lambda: lg.zeros(2),
        lambda: lg.ones(2, 3),
        lambda: lg.full((2,), 0.5),
        lambda: lg.randn(2),
        lambda: lg.rand(2),
        lambda: lg.eye(2),
        lambda: lg.zeros_like(lg.tensor([1, 2])).float(),
    ],
)
def test_floating_tensors_are_float32_by_default(make):
    assert make().dtype == np.float32


def test_float64_on_request_and_other_kinds_kept():
    assert lg.tensor([1.0], dtype="float64").dtype == np.float64
    assert lg.randn(2, dtype=np.float64).dtype == np.float64
    assert lg.tensor([1, 2]).dtype.kind == "i"
    assert lg.tensor([True]).dtype == np.bool_
    assert lg.arange(3).dtype.kind == "i"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_python_numbers_take_the_tensors_dtype(dtype):
    x = lg.tensor([1.5, 2.5], requires_grad=True, dtype=dtype)
    results = [x + 1, 1 - x, x * 2.5, 2.5 / x, x**2, x**0.5, 2.0**x, F.maximum(x, 0.0), F.where(x > 2, x, 0.0)]
    results += [x.clip(0.0, 2.0), F.leaky_relu(x, 0.1), F.elu(x, 0.5), F.softplus(x, beta=2.0), F.pad(x, (1, 1), 0.5)]
    for y in results:
        assert y.dtype == dtype, y.op.name
        (g,) = lg.grad(y.sum(), x)
        assert g.dtype == dtype, y.op.name


def test_cast_moves_between_precisions_and_the_gradient_comes_back_in_the_input_dtype():
    values = [0.1, 0.2, 0.3]
    x = lg.tensor(values, requires_grad=True, dtype="float64")
    y = x.float()
    assert y.dtype == np.float32 and y.op.name == "cast"
    (y.exp() * 3).sum().backward()
    assert x.grad.dtype == np.float64
    xt = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    (xt.float().exp() * 3).sum().backward()
    np.testing.assert_allclose(x.grad.data, xt.grad.numpy(), rtol=1e-6)  # float32 arithmetic: a few ulps
    # and back up: float32 -> float64
    w = lg.tensor(values, requires_grad=True)
    (w.double() ** 2).sum().backward()
    assert w.grad.dtype == np.float32
    np.testing.assert_allclose(w.grad.data, 2 * np.float32(values), rtol=1e-7)


def test_casting_to_the_same_dtype_is_free_and_to_an_integer_cuts_the_graph():
    x = lg.tensor([1.7], requires_grad=True)
    assert x.astype(np.float32) is x
    i = x.astype(np.int64)
    assert i.dtype == np.int64 and not i.requires_grad


def test_mixing_precisions_follows_numpy_and_keeps_each_leafs_gradient_dtype():
    a = lg.tensor([1.0, 2.0], requires_grad=True)
    b = lg.tensor([3.0, 4.0], requires_grad=True, dtype="float64")
    y = a * b
    assert y.dtype == np.float64
    y.sum().backward()
    assert a.grad.dtype == np.float32 and b.grad.dtype == np.float64
    np.testing.assert_allclose(a.grad.data, [3.0, 4.0])


def test_integer_and_boolean_results_are_outside_the_graph_and_match_torch():
    values = [[0.3, -1.2, 2.5], [1.7, 1.7, -0.4]]
    x = lg.tensor(values, requires_grad=True, dtype="float64")
    xt = torch.tensor(values, dtype=torch.float64)
    for result, expected in [
        (x.argmax(axis=1), xt.argmax(dim=1)),
        (x.argmin(axis=0), xt.argmin(dim=0)),
        (x.argmax(), xt.argmax()),
        (x.round(), xt.round()),
        (x > 1, xt > 1),
    ]:
        assert not result.requires_grad and result.op is None
        np.testing.assert_array_equal(result.data, expected.numpy())
    assert (x > 2).any() and not (x > 3).any() and (x > -2).all()


def test_manual_seed_makes_random_tensors_reproducible():
    lg.manual_seed(7)
    first = (lg.randn(3).data, lg.rand(2).data)
    lg.manual_seed(7)
    second = (lg.randn(3).data, lg.rand(2).data)
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])
    assert lg.generator() is lg.engine.generator()
