"""signSGD and Signum against hand computation; gradient clipping against torch.nn.utils."""

import math

import numpy as np
import pytest
import torch

import leakygrad as lg
from leakygrad import optim


def _run(opt, w, steps):
    """Minimise 0.5 * |w|^2 (gradient w) and return the iterates."""
    path = []
    for _ in range(steps):
        opt.zero_grad()
        (0.5 * (w * w).sum()).backward()
        opt.step()
        path.append(w.data.copy())
    return np.array(path)


def test_signsgd_moves_every_weight_by_exactly_lr_against_the_gradient_sign():
    w = lg.Tensor([0.5, -0.25, 0.0], requires_grad=True, dtype="float64")
    path = _run(optim.SignSGD([w], lr=0.1), w, 4)
    # by hand: w <- w - 0.1 * sign(w); the zero weight has a zero gradient and stays put
    expected = [[0.4, -0.15, 0.0], [0.3, -0.05, 0.0], [0.2, 0.05, 0.0], [0.1, -0.05, 0.0]]
    np.testing.assert_allclose(path, expected, atol=1e-12)


def test_signum_steps_by_the_sign_of_the_momentum_not_of_the_gradient():
    w = lg.Tensor([0.5, -0.25, 0.0], requires_grad=True, dtype="float64")
    path = _run(optim.Signum([w], lr=0.1, momentum=0.5), w, 4)
    # by hand, m0 = 0, m <- 0.5 m + 0.5 g:
    #   m1 = [0.25, -0.125]            -> w1 = [0.4, -0.15]
    #   m2 = [0.325, -0.1375]          -> w2 = [0.3, -0.05]
    #   m3 = [0.3125, -0.09375]        -> w3 = [0.2, 0.05]
    #   m4 = [0.25625, -0.021875]      -> w4 = [0.1, 0.15]: the gradient is +0.05, the momentum still negative
    expected = [[0.4, -0.15, 0.0], [0.3, -0.05, 0.0], [0.2, 0.05, 0.0], [0.1, 0.15, 0.0]]
    np.testing.assert_allclose(path, expected, atol=1e-12)


def test_sign_methods_add_weight_decay_to_the_gradient_before_the_sign():
    w = lg.Tensor([1.0, -1.0], requires_grad=True, dtype="float64")
    opt = optim.SignSGD([w], lr=0.1, weight_decay=2.0)
    w.grad = lg.Tensor([-1.5, 1.5], dtype="float64")  # g + 2 w = [0.5, -0.5]: the decay wins
    opt.step()
    np.testing.assert_allclose(w.data, [0.9, -0.9])


def test_signum_without_momentum_is_signsgd(problem):
    a, b = problem.lg_params(), problem.lg_params()
    opt_a, opt_b = optim.Signum(a, lr=0.01, momentum=0.0), optim.SignSGD(b, lr=0.01)
    for _ in range(10):
        for params, opt in ((a, opt_a), (b, opt_b)):
            opt.zero_grad()
            problem.lg_loss(params).backward()
            opt.step()
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.data, y.data)


def _twin_grads(seed=0, scale=1.0, poison=None):
    rng = np.random.default_rng(seed)
    grads = [rng.standard_normal(s) * scale for s in [(3, 4), (4,), (2, 2)]]
    if poison is not None:
        grads[1][2] = poison
    ours = [lg.Tensor(np.zeros_like(g), requires_grad=True, dtype="float64") for g in grads]
    theirs = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in grads]
    for p, t, g in zip(ours, theirs, grads):
        p.grad = lg.Tensor(g.copy(), dtype="float64")
        t.grad = torch.from_numpy(g.copy())
    return ours, theirs


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_pytorch(norm_type, max_norm):
    ours, theirs = _twin_grads()
    total = optim.clip_grad_norm_(ours, max_norm, norm_type=norm_type)
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type=norm_type)
    assert total.item() == pytest.approx(expected.item(), rel=1e-12)
    for p, t in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.data, t.grad.numpy(), rtol=1e-12)
    if max_norm < total.item():
        assert optim.total_grad_norm(ours, norm_type) == pytest.approx(max_norm, rel=1e-5)


@pytest.mark.parametrize("poison", [math.inf, math.nan])
def test_clip_grad_norm_with_a_nonfinite_gradient(poison):
    ours, theirs = _twin_grads(poison=poison)
    total = optim.clip_grad_norm_(ours, 1.0)
    expected = torch.nn.utils.clip_grad_norm_(theirs, 1.0)
    assert np.isnan(total.item()) == np.isnan(expected.item()) and np.isinf(total.item()) == np.isinf(expected.item())
    for p, t in zip(ours, theirs):
        np.testing.assert_array_equal(p.grad.data, t.grad.numpy())  # same nans and zeros

    ours, _ = _twin_grads(poison=poison)
    before = [p.grad.data.copy() for p in ours]
    with pytest.raises(RuntimeError, match="cannot be clipped"):
        optim.clip_grad_norm_(ours, 1.0, error_if_nonfinite=True)
    for p, b in zip(ours, before):
        np.testing.assert_array_equal(p.grad.data, b)


def test_clip_grad_value_matches_pytorch():
    ours, theirs = _twin_grads(scale=3.0)
    optim.clip_grad_value_(ours, 1.5)
    torch.nn.utils.clip_grad_value_(theirs, 1.5)
    for p, t in zip(ours, theirs):
        np.testing.assert_array_equal(p.grad.data, t.grad.numpy())


def test_clipping_one_parameter_does_not_change_another_sharing_its_gradient_array():
    a = lg.Tensor(np.zeros(3), requires_grad=True, dtype="float64")
    b = lg.Tensor(np.zeros(3), requires_grad=True, dtype="float64")
    shared = lg.Tensor([3.0, 4.0, 0.0], dtype="float64")
    a.grad = b.grad = shared
    optim.clip_grad_norm_([a], 1.0)
    optim.clip_grad_value_([a], 0.1)
    np.testing.assert_array_equal(b.grad.data, [3.0, 4.0, 0.0])
    np.testing.assert_array_equal(shared.data, [3.0, 4.0, 0.0])
    np.testing.assert_allclose(a.grad.data, [0.1, 0.1, 0.0])


def test_clipping_keeps_float32_gradients_float32():
    w = lg.Tensor(np.zeros(4, dtype=np.float32), requires_grad=True)
    w.grad = lg.Tensor(np.full(4, 10.0, dtype=np.float32))
    optim.clip_grad_norm_([w], 1.0)
    assert w.grad.dtype == np.float32
    assert float(np.linalg.norm(w.grad.data)) == pytest.approx(1.0, rel=1e-5)


def test_an_empty_gradient_does_not_make_the_smallest_entry_zero():
    grads = [lg.Tensor(np.zeros(0)), lg.Tensor([3.0, -4.0])]
    params = [lg.Tensor(np.zeros(0), requires_grad=True), lg.Tensor([0.0, 0.0], requires_grad=True)]
    for p, g in zip(params, grads):
        p.grad = g
    assert optim.total_grad_norm(params, -math.inf) == 3.0  # (it was 0: the empty one counted as a 0 entry)
    assert optim.total_grad_norm(params, 2) == 5.0


def test_no_gradient_at_all_has_norm_zero_whatever_the_order():
    params = [lg.Tensor([1.0], requires_grad=True)]
    assert optim.total_grad_norm(params, -2) == 0.0  # (inf: the empty list of norms counted as one)
    assert float(optim.clip_grad_norm_(params, 1.0, norm_type=-2, error_if_nonfinite=True)) == 0.0
