"""The graph walk: accumulation, hooks, no_grad, functional grad, deep chains."""

import numpy as np
import pytest

import leakygrad as lg


def test_gradient_accumulates_across_backward_calls_like_pytorch():
    x = lg.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.data, [6.0, 6.0])


def test_a_tensor_used_twice_gets_the_sum_of_both_paths():
    x = lg.tensor(3.0, requires_grad=True)
    y = x * x + x  # dy/dx = 2x + 1
    y.backward()
    assert x.grad.item() == pytest.approx(7.0)


def test_chain_of_100000_ops_backpropagates_without_recursion():
    x = lg.tensor(1.0, requires_grad=True, dtype="float64")
    y = x
    for _ in range(100_000):
        y = y + 1e-6 * y
    y.backward()
    assert x.grad.item() == pytest.approx((1 + 1e-6) ** 100_000, rel=1e-9)


def test_no_grad_records_nothing():
    x = lg.tensor([1.0], requires_grad=True)
    with lg.no_grad():
        y = x * 2
    assert not y.requires_grad and y.op is None


def test_hook_can_replace_the_gradient_per_element():
    x = lg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x * 10
    h.register_hook(lambda g: g.clip(-1, 1))  # Graves-style per-element clipping
    (h * lg.tensor([5.0, -0.5, -7.0])).sum().backward()
    np.testing.assert_allclose(x.grad.data, [10.0, -5.0, -10.0])


def test_functional_grad_leaves_dot_grad_alone():
    x = lg.tensor([1.0, 2.0], requires_grad=True)
    (gx,) = lg.grad((x * x).sum(), x)
    np.testing.assert_allclose(gx.data, [2.0, 4.0])
    assert x.grad is None


def test_second_derivative_with_create_graph():
    x = lg.tensor(2.0, requires_grad=True, dtype="float64")
    (g,) = lg.grad(x**3, x, create_graph=True)  # 3x^2
    (h,) = lg.grad(g, x)  # 6x
    assert g.item() == pytest.approx(12.0) and h.item() == pytest.approx(12.0)


def test_leaves_sharing_one_upstream_gradient_get_their_own_arrays():
    a = lg.tensor([1.0, 2.0], requires_grad=True)
    b = lg.tensor([3.0, 4.0], requires_grad=True)
    (a + b).sum().backward()
    a.grad.data *= 2  # must not change b.grad
    np.testing.assert_allclose(b.grad.data, [1.0, 1.0])
