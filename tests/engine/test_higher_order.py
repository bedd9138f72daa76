"""Derivatives of derivatives: Hessian-vector products (the optimisation lab needs them), higher orders, and
forward mode (`jvp`), each checked against PyTorch and against finite differences."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import leakygrad as lg
from leakygrad import functional as F

# Importing torch.func makes PyTorch warn about its own torch.jit.script; nothing to do with the tests.
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")


def mlp_loss(params, x, labels, backend):
    """A 4-5-3 MLP (tanh, then gelu) with softmax cross-entropy, written once for both frameworks."""
    w1, b1, w2, b2 = params
    if backend == "leakygrad":
        h = F.gelu((x @ w1 + b1).tanh() @ w2 + b2)
        log_probs = h.log_softmax(axis=1)
        return -log_probs[np.arange(len(labels)), labels].mean()
    h = torch.nn.functional.gelu(torch.tanh(x @ w1 + b1) @ w2 + b2)
    log_probs = torch.log_softmax(h, dim=1)
    return -log_probs[torch.arange(len(labels)), torch.from_numpy(labels)].mean()


def mlp_problem(seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(4, 5), (5,), (5, 3), (3,)]
    params = [rng.standard_normal(s) * 0.8 for s in shapes]
    x = rng.standard_normal((6, 4))
    labels = rng.integers(0, 3, size=6)
    direction = [rng.standard_normal(s) for s in shapes]
    return params, x, labels, direction


def hvp_leakygrad(params, x, labels, direction):
    ps = [lg.Tensor(p, requires_grad=True, dtype="float64") for p in params]
    loss = mlp_loss(ps, lg.Tensor(x, dtype="float64"), labels, "leakygrad")
    grads = lg.grad(loss, ps, create_graph=True)
    g_dot_v = sum((g * lg.Tensor(v, dtype="float64")).sum() for g, v in zip(grads, direction))
    return loss.item(), [g.data for g in grads], [h.data for h in lg.grad(g_dot_v, ps)]


def test_hessian_vector_product_of_an_mlp_loss_matches_pytorch():
    params, x, labels, direction = mlp_problem()
    loss, grads, hvp = hvp_leakygrad(params, x, labels, direction)

    t_params = tuple(torch.tensor(p) for p in params)
    t_x = torch.tensor(x)
    t_loss, t_hvp = torch.autograd.functional.hvp(
        lambda *ps: mlp_loss(ps, t_x, labels, "torch"), t_params, tuple(torch.tensor(v) for v in direction)
    )
    t_params = [p.requires_grad_() for p in t_params]
    t_grads = torch.autograd.grad(mlp_loss(t_params, t_x, labels, "torch"), t_params)

    assert loss == pytest.approx(t_loss.item(), rel=1e-12)
    for g, t_g in zip(grads, t_grads):
        np.testing.assert_allclose(g, t_g.numpy(), rtol=1e-10, atol=1e-13)
    for h, t_h in zip(hvp, t_hvp):
        np.testing.assert_allclose(h, t_h.numpy(), rtol=1e-10, atol=1e-13)
    assert max(np.abs(h).max() for h in hvp) > 1e-2  # a real curvature, not zeros on both sides


def test_hessian_vector_product_matches_a_finite_difference_of_gradients():
    params, x, labels, direction = mlp_problem(seed=1)
    _, _, hvp = hvp_leakygrad(params, x, labels, direction)
    eps = 1e-5
    _, g_plus, _ = hvp_leakygrad([p + eps * v for p, v in zip(params, direction)], x, labels, direction)
    _, g_minus, _ = hvp_leakygrad([p - eps * v for p, v in zip(params, direction)], x, labels, direction)
    for h, gp, gm in zip(hvp, g_plus, g_minus):
        np.testing.assert_allclose(h, (gp - gm) / (2 * eps), rtol=1e-6, atol=1e-8)


def test_third_and_fourth_derivatives():
    x = lg.tensor(1.5, requires_grad=True, dtype="float64")
    y = x**4 + x.exp()
    derivatives = []
    g = y
    for _ in range(4):
        (g,) = lg.grad(g, x, create_graph=True)
        derivatives.append(g.item())
    e = np.exp(1.5)
    np.testing.assert_allclose(derivatives, [4 * 1.5**3 + e, 12 * 1.5**2 + e, 24 * 1.5 + e, 24 + e], rtol=1e-12)


def test_double_backward_through_tensor_backward():
    """backward(create_graph=True) leaves a differentiable .grad, as in PyTorch."""
    x = lg.tensor([1.0, 2.0], requires_grad=True, dtype="float64")
    (x**3).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    first = x.grad
    (second,) = lg.grad(first.sum(), x)
    np.testing.assert_allclose(first.data, [3.0, 12.0])
    np.testing.assert_allclose(second.data, [6.0, 12.0])


# ---------------------------------------------------------------------------------------------- jvp


def two_outputs(x, w, backend):
    if backend == "leakygrad":
        return (x @ w).tanh(), (x * x).sum(axis=1).sqrt()
    return torch.tanh(x @ w), torch.sqrt((x * x).sum(dim=1))


def jvp_problem():
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    tx, tw = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    return (x, w), (tx, tw)


def leakygrad_jvp(inputs, tangents):
    xs = [lg.Tensor(a, dtype="float64") for a in inputs]
    ts = [lg.Tensor(t, dtype="float64") for t in tangents]
    return lg.jvp(lambda x, w: two_outputs(x, w, "leakygrad"), xs, ts)


def test_jvp_matches_torch_func_jvp():
    inputs, tangents = jvp_problem()
    outputs, jvps = leakygrad_jvp(inputs, tangents)
    t_outputs, t_jvps = torch.func.jvp(
        lambda x, w: two_outputs(x, w, "torch"),
        tuple(torch.tensor(a) for a in inputs),
        tuple(torch.tensor(t) for t in tangents),
    )
    for o, t_o in zip(outputs, t_outputs):
        np.testing.assert_allclose(o.data, t_o.numpy(), rtol=1e-12)
    for j, t_j in zip(jvps, t_jvps):
        np.testing.assert_allclose(j.data, t_j.numpy(), rtol=1e-10, atol=1e-13)


def test_jvp_matches_finite_differences():
    inputs, tangents = jvp_problem()
    _, jvps = leakygrad_jvp(inputs, tangents)
    eps = 1e-6
    plus = two_outputs(*[lg.Tensor(a + eps * t, dtype="float64") for a, t in zip(inputs, tangents)], "leakygrad")
    minus = two_outputs(*[lg.Tensor(a - eps * t, dtype="float64") for a, t in zip(inputs, tangents)], "leakygrad")
    for j, p, m in zip(jvps, plus, minus):
        np.testing.assert_allclose(j.data, (p.data - m.data) / (2 * eps), rtol=1e-6, atol=1e-9)


def test_jvp_of_a_single_tensor_and_of_an_output_that_ignores_it():
    x = lg.tensor([0.5, -1.0], dtype="float64")
    out, tangent_out = lg.jvp(lambda x: x.exp(), x, lg.tensor([1.0, 2.0], dtype="float64"))
    np.testing.assert_allclose(tangent_out.data, np.exp([0.5, -1.0]) * [1.0, 2.0])
    assert not out.requires_grad and not tangent_out.requires_grad
    _, constant = lg.jvp(lambda x: lg.ones(3, dtype="float64"), x, np.ones(2))
    np.testing.assert_array_equal(constant.data, np.zeros(3))
    # an integer output beside a float one (an argmax with its value): its J t is zero; it raised before
    (_, index), (slope, no_slope) = lg.jvp(lambda x: (x.exp(), x.argmax()), x, np.ones(2))
    np.testing.assert_allclose(slope.data, np.exp([0.5, -1.0]))
    assert index.item() == 0 and no_slope.item() == 0 and no_slope.dtype.kind == "i"


def test_jvp_checks_the_tangents():
    x = lg.tensor([0.5, -1.0], dtype="float64")
    with pytest.raises(lg.LeakygradError, match=r"jvp: tangent 0 has shape \(3,\), input 0 has shape \(2,\)"):
        lg.jvp(lambda x: x.exp(), x, np.ones(3))
    with pytest.raises(lg.LeakygradError, match="jvp: 2 inputs but 1 tangents"):
        lg.jvp(lambda x, y: x * y, [x, x], [np.ones(2)])


def test_jvp_leaves_the_inputs_alone():
    x = lg.tensor([0.5, -1.0], requires_grad=True, dtype="float64")
    lg.jvp(lambda x: (x * x).sum(), x, np.ones(2))
    assert x.grad is None


def test_jvp_names_what_it_cannot_take():
    x = lg.Tensor([1.0, 2.0])
    for call, message in (
        (lambda: lg.jvp(lambda a: float(a.sum().item()), x, np.ones(2)), "jvp: fn must return .* output 0 is a float"),
        (
            lambda: lg.jvp(lambda a: a, np.ones(2), np.ones(2)),
            "jvp: input 0 must be a floating-point Tensor, got a ndarray",
        ),
        (lambda: lg.jvp(lambda a: a, lg.tensor([1, 2]), np.ones(2)), "jvp: input 0 must be a floating-point Tensor"),
    ):
        with pytest.raises(lg.LeakygradError, match=message):
            call()
    value, tangent = lg.jvp(lambda a: a * a, lg.Tensor(3.0), 1.0)  # a number as the tangent of a 0-d input
    assert float(tangent.item()) == 6.0


def test_jvp_takes_one_inputs_tangent_alone_or_in_a_tuple_of_one():
    x = lg.Tensor([1.0, 2.0, 3.0])
    for tangent in (np.ones(3), (np.ones(3),), [lg.ones(3)], [1.0, 1.0, 1.0]):
        _, derivative = lg.jvp(lambda a: a * a, x, tangent)
        np.testing.assert_array_equal(derivative.data, [2.0, 4.0, 6.0])
