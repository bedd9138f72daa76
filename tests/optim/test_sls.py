"""The stochastic Armijo line search against a plain NumPy reference of Vaswani et al. (2019), Algorithm 1-2."""

import math

import numpy as np
import pytest

import leakygrad as lg
from leakygrad import optim

C, BETA, GAMMA, ETA_MAX = 0.1, 0.9, 2.0, 10.0  # the paper's defaults


def _data(seed=0, n=100, d=5):
    rng = np.random.default_rng(seed)
    X = 3.0 * rng.standard_normal((n, d))  # curved enough that large steps get cut
    y = np.sign(X @ rng.standard_normal(d) + 0.1 * rng.standard_normal(n))  # labels in {-1, +1}
    batches = [rng.choice(n, size=10, replace=False) for _ in range(50)]
    return X, y, batches


def logistic_loss_and_grad(w, X, y):
    """mean log(1 + exp(-y x.w)) and its gradient, by hand."""
    margins = y * (X @ w)
    loss = np.mean(np.logaddexp(0.0, -margins))
    sigma = 0.5 * (1 - np.tanh(margins / 2))  # = 1 / (1 + exp(margins)), stable
    return loss, -(X * (y * sigma)[:, None]).mean(axis=0)


def reference_sls(X, y, batches, w0, n_batches_per_epoch, init_step_size, reset_option):
    """Algorithm 1 of the paper with the reset of Algorithm 2, written out directly on NumPy arrays."""
    w, eta = w0.copy(), init_step_size
    path, etas = [], []
    for index in batches:
        Xb, yb = X[index], y[index]
        if reset_option == 1:
            eta = min(eta * GAMMA ** (1 / n_batches_per_epoch), ETA_MAX)
        elif reset_option == 2:
            eta = init_step_size
        f, g = logistic_loss_and_grad(w, Xb, yb)
        g_squared = g @ g
        if math.sqrt(g_squared) >= 1e-8:
            for _ in range(100):
                if logistic_loss_and_grad(w - eta * g, Xb, yb)[0] <= f - C * eta * g_squared:
                    w = w - eta * g
                    break
                eta *= BETA
            else:
                w = w - 1e-6 * g
        path.append(w.copy())
        etas.append(eta)
    return np.array(path), etas


def run_sls(X, y, batches, w0, **kwargs):
    w = lg.Tensor(w0.copy(), requires_grad=True, dtype="float64")
    opt = optim.SLS([w], **kwargs)
    path, etas, before = [], [], []
    for index in batches:
        Xb, yb = lg.Tensor(X[index], dtype="float64"), lg.Tensor(y[index], dtype="float64")
        before.append(w.data.copy())
        # threshold=50: softplus is exact up to e^-50 (the default 20 would differ from NumPy's by e^-20)
        opt.step(lambda Xb=Xb, yb=yb: lg.functional.softplus(-yb * (Xb @ w), threshold=50.0).mean())
        path.append(w.data.copy())
        etas.append(opt.state[w]["step_size"])
    return np.array(path), etas, before, opt


@pytest.mark.parametrize("reset_option, init_step_size", [(1, 1.0), (1, 10.0), (0, 5.0), (2, 50.0)])
def test_trajectory_and_step_sizes_match_the_reference(reset_option, init_step_size):
    X, y, batches = _data()
    w0 = np.zeros(X.shape[1])
    kwargs = dict(n_batches_per_epoch=10, init_step_size=init_step_size, reset_option=reset_option)
    path, etas, _, opt = run_sls(X, y, batches, w0, **kwargs)
    ref_path, ref_etas = reference_sls(X, y, batches, w0, 10, init_step_size, reset_option)
    np.testing.assert_allclose(path, ref_path, rtol=0, atol=1e-10)
    np.testing.assert_allclose(etas, ref_etas, rtol=1e-10)
    assert len(set(np.round(etas, 12))) > 1  # the step size did adapt


def test_armijo_condition_holds_at_every_accepted_step():
    X, y, batches = _data(seed=1)
    path, _, before, opt = run_sls(X, y, batches, np.zeros(X.shape[1]), init_step_size=10.0, n_batches_per_epoch=10)
    state = opt.state[opt.param_groups[0]["params"][0]]
    assert state["n_forwards"] > 2 * len(batches)  # there was backtracking to do
    for w_before, w_after, index in zip(before, path, batches):
        f, g = logistic_loss_and_grad(w_before, X[index], y[index])
        eta = np.linalg.norm(w_after - w_before) / np.linalg.norm(g)
        np.testing.assert_allclose(w_after, w_before - eta * g, atol=1e-12)  # a gradient step
        f_after = logistic_loss_and_grad(w_after, X[index], y[index])[0]
        assert f_after <= f - C * eta * (g @ g) + 1e-15


def test_random_draws_in_the_closure_are_replayed_at_every_trial():
    w = lg.Tensor(np.ones(3), requires_grad=True, dtype="float64")
    opt = optim.SLS([w], init_step_size=10.0)
    draws = []

    def closure():  # a loss with "dropout-like" randomness from leakygrad's generator
        noise = lg.randn(3, dtype="float64")
        draws.append(noise.data.copy())
        return ((w - noise) ** 2).sum()

    lg.manual_seed(0)
    opt.step(closure)
    first_step = len(draws)
    opt.step(closure)
    assert first_step > 2  # it backtracked
    for d in draws[1:first_step]:
        np.testing.assert_array_equal(d, draws[0])
    assert not np.array_equal(draws[first_step], draws[0])  # the next step sees new randomness


def test_sls_needs_a_closure():
    with pytest.raises(ValueError, match="needs a closure"):
        optim.SLS([lg.Tensor([1.0], requires_grad=True)]).step()
