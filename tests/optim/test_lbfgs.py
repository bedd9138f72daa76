"""L-BFGS against torch.optim.LBFGS (the same algorithm) on the Rosenbrock function and on an MLP loss."""

import numpy as np
import pytest
import torch

import leakygrad as lg
from leakygrad import optim
from leakygrad.optim.lbfgs import cubic_minimum


def rosenbrock(x):
    """sum_i 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2, minimum 0 at (1, ..., 1); works for both libraries."""
    head, tail = x[:-1], x[1:]
    return (100 * (tail - head * head) ** 2 + (1 - head) ** 2).sum()


START = np.array([-1.2, 1.0, -0.5, 0.8, 1.5])


def _run_rosenbrock(line_search_fn, steps, **kwargs):
    x = lg.Tensor(START.copy(), requires_grad=True, dtype="float64")
    tx = torch.tensor(START.copy(), requires_grad=True)
    ours = optim.LBFGS([x], line_search_fn=line_search_fn, **kwargs)
    theirs = torch.optim.LBFGS([tx], line_search_fn=line_search_fn, **kwargs)

    def closure():
        ours.zero_grad()
        loss = rosenbrock(x)
        loss.backward()
        return loss

    def torch_closure():
        theirs.zero_grad()
        loss = rosenbrock(tx)
        loss.backward()
        return loss

    path, torch_path, losses = [], [], []
    for _ in range(steps):
        losses.append(ours.step(closure).item())
        theirs.step(torch_closure)
        path.append(x.data.copy())
        torch_path.append(tx.detach().numpy().copy())
    return ours, theirs, np.array(path), np.array(torch_path), losses


@pytest.mark.parametrize("history_size", [100, 3])
def test_strong_wolfe_trajectory_matches_pytorch_on_rosenbrock(history_size):
    ours, theirs, path, torch_path, losses = _run_rosenbrock("strong_wolfe", 6, max_iter=10, history_size=history_size)
    np.testing.assert_allclose(path, torch_path, rtol=0, atol=1e-6)
    ours_state = ours.state[ours.param_groups[0]["params"][0]]
    torch_state = next(iter(theirs.state.values()))
    assert ours_state["func_evals"] == torch_state["func_evals"]
    assert ours_state["n_iter"] == torch_state["n_iter"]
    np.testing.assert_allclose(path[-1], np.ones(5), atol=1e-4)  # and it did solve the problem
    assert losses[-1] < losses[0]


def test_fixed_step_trajectory_matches_pytorch_on_rosenbrock():
    _, _, path, torch_path, _ = _run_rosenbrock(None, 5, lr=0.1, max_iter=8)
    np.testing.assert_allclose(path, torch_path, rtol=0, atol=1e-6)


def test_strong_wolfe_trajectory_matches_pytorch_on_an_mlp(problem):
    params, torch_params = problem.lg_params(), problem.torch_params()
    ours = optim.LBFGS(params, line_search_fn="strong_wolfe", history_size=5, max_iter=5)
    theirs = torch.optim.LBFGS(torch_params, line_search_fn="strong_wolfe", history_size=5, max_iter=5)

    def closure():
        ours.zero_grad()
        loss = problem.lg_loss(params)
        loss.backward()
        return loss

    def torch_closure():
        theirs.zero_grad()
        loss = problem.torch_loss(torch_params)
        loss.backward()
        return loss

    for _ in range(10):
        ours.step(closure)
        theirs.step(torch_closure)
        for p, t in zip(params, torch_params):
            np.testing.assert_allclose(p.data, t.detach().numpy(), rtol=0, atol=1e-6)


def test_the_line_search_step_satisfies_the_strong_wolfe_conditions():
    # One iteration from the start: the accepted step t along d = -g must satisfy both conditions.
    x = lg.Tensor(START.copy(), requires_grad=True, dtype="float64")
    opt = optim.LBFGS([x], line_search_fn="strong_wolfe", max_iter=1)

    def closure():
        opt.zero_grad()
        loss = rosenbrock(x)
        loss.backward()
        return loss

    f0 = closure().item()
    g0 = x.grad.data.copy()
    opt.step(closure)
    state = opt.state[x]
    d, t = state["d"], state["t"]
    np.testing.assert_allclose(x.data, START + t * d)
    f1 = closure().item()
    g1 = x.grad.data
    assert f1 <= f0 + 1e-4 * t * (g0 @ d)  # sufficient decrease
    assert abs(g1 @ d) <= 0.9 * abs(g0 @ d)  # curvature


def test_cubic_minimum_finds_the_minimum_of_a_cubic():
    f = lambda x: (x - 1.0) ** 3 - 3 * (x - 1.0)  # noqa: E731  local minimum at x = 2
    df = lambda x: 3 * (x - 1.0) ** 2 - 3  # noqa: E731
    assert cubic_minimum(1.5, f(1.5), df(1.5), 3.0, f(3.0), df(3.0)) == pytest.approx(2.0)
    assert cubic_minimum(3.0, f(3.0), df(3.0), 1.5, f(1.5), df(1.5)) == pytest.approx(2.0)
    assert cubic_minimum(1.5, f(1.5), df(1.5), 3.0, f(3.0), df(3.0), bounds=(2.5, 3.0)) == 2.5


def test_lbfgs_needs_a_closure_and_a_single_group():
    x = lg.Tensor(START.copy(), requires_grad=True, dtype="float64")
    with pytest.raises(ValueError, match="needs a closure"):
        optim.LBFGS([x]).step(None)
    with pytest.raises(ValueError, match="single parameter group"):
        optim.LBFGS([{"params": [x]}, {"params": [lg.Tensor([1.0], requires_grad=True)]}])


def test_a_loss_linear_along_the_search_direction_extrapolates_like_pytorch():
    # Along a line the cubic fit divides by zero (g1 = g2): its minimum is infinitely far downhill, so the step
    # goes to the bound on that side, as PyTorch's tensors (which divide to inf) have it. It used to raise.
    assert cubic_minimum(0.0, 1.0, -1.0, 0.5, 0.5, -1.0, bounds=(0.505, 5.0)) == 5.0
    assert cubic_minimum(0.5, 0.5, 1.0, 0.0, 0.0, 1.0, bounds=(-5.0, -0.005)) == -5.0
    x = lg.Tensor(np.zeros(2), requires_grad=True, dtype="float64")
    tx = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    ours = optim.LBFGS([x], line_search_fn="strong_wolfe")
    theirs = torch.optim.LBFGS([tx], line_search_fn="strong_wolfe")

    def closure():
        ours.zero_grad()
        loss = (x - 10.0).abs().sum()  # |w - 10|: linear all the way from 0 to the kink
        loss.backward()
        return loss

    def torch_closure():
        theirs.zero_grad()
        loss = (tx - 10.0).abs().sum()
        loss.backward()
        return loss

    ours.step(closure)
    theirs.step(torch_closure)
    np.testing.assert_allclose(x.data, tx.detach().numpy())
    np.testing.assert_allclose(x.data, [10.0, 10.0])


def test_max_eval_must_allow_an_evaluation():
    with pytest.raises(ValueError, match="LBFGS: max_eval must be a whole number >= 1, got 0"):
        optim.LBFGS([lg.Tensor([1.0], requires_grad=True)], max_eval=0, line_search_fn="strong_wolfe")


@pytest.mark.parametrize("make", [lambda p: optim.LBFGS([p]), lambda p: optim.SLS([p])], ids=["LBFGS", "SLS"])
def test_a_second_parameter_group_is_refused_as_by_the_constructor(make):
    opt = make(lg.Tensor([1.0], requires_grad=True))
    with pytest.raises(ValueError, match="single parameter group"):
        opt.add_param_group({"params": [lg.Tensor([0.0], requires_grad=True)]})  # (never stepped, silently)
