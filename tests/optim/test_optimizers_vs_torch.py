"""Each optimiser against its PyTorch twin: 50 steps on the same float64 problem, trajectories agree to 1e-6."""

import math

import numpy as np
import pytest
import torch

import leakygrad as lg
from leakygrad import optim

CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.01, momentum=0.5, weight_decay=0.1, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("Adam", dict(lr=0.02, amsgrad=True)),
    ("Adam", dict(lr=0.01, maximize=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.02, weight_decay=0.3, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.9)),
    ("RMSprop", dict(lr=0.005, alpha=0.9, centered=True, momentum=0.5, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.1, eps=1e-8)),
]


@pytest.mark.parametrize("name, kwargs", CASES, ids=[f"{n}-{'-'.join(k)}" for n, k in CASES])
def test_trajectory_matches_pytorch(problem, run_twins, name, kwargs):
    ours, theirs = run_twins(
        problem,
        lambda ps: getattr(optim, name)(ps, **kwargs),
        lambda ps: getattr(torch.optim, name)(ps, **kwargs),
    )
    start = np.concatenate([w.ravel() for w in problem.initial])
    assert np.abs(ours[-1] - start).max() > 1e-2  # the weights did move
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6)


def test_parameter_groups_with_their_own_hyperparameters_match_pytorch(problem, run_twins):
    def groups(params):
        return [{"params": params[:2], "lr": 0.2}, {"params": params[2:], "momentum": 0.5}]

    ours, theirs = run_twins(
        problem,
        lambda ps: optim.SGD(groups(ps), lr=0.05, momentum=0.9),
        lambda ps: torch.optim.SGD(groups(ps), lr=0.05, momentum=0.9),
    )
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "SignSGD", "Signum"])
def test_float32_parameters_and_their_state_stay_float32(problem, name):
    params = [lg.Tensor(w, requires_grad=True, dtype="float32") for w in problem.initial]
    opt = getattr(optim, name)(params, lr=0.01, **({"momentum": 0.9} if name in ("SGD", "RMSprop") else {}))
    for _ in range(3):
        opt.zero_grad()
        w1, b1, w2, b2 = params
        out = (lg.Tensor(problem.x) @ w1 + b1).tanh() @ w2 + b2
        ((out - lg.Tensor(problem.y)) ** 2).mean().backward()
        opt.step()
    for p in params:
        assert p.dtype == np.float32 and p.is_leaf and p.op is None
        for value in opt.state[p].values():
            if isinstance(value, np.ndarray):
                assert value.dtype == np.float32


def test_step_records_no_graph_and_zero_grad_sets_grads_to_none(problem):
    params = problem.lg_params()
    opt = optim.Adam(params, lr=0.1)
    problem.lg_loss(params).backward()
    with lg.enable_grad():
        opt.step()
    assert all(p.op is None and p.is_leaf for p in params)
    opt.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.data.any() for p in params)
    opt.zero_grad()
    assert all(p.grad is None for p in params)


def test_closure_is_called_with_grad_enabled_and_its_loss_returned(problem):
    params = problem.lg_params()
    opt = optim.SGD(params, lr=0.1)

    def closure():
        opt.zero_grad()
        loss = problem.lg_loss(params)
        loss.backward()
        return loss

    with lg.no_grad():
        loss = opt.step(closure)
    assert loss.item() == pytest.approx(problem.lg_loss(problem.lg_params()).item())


def test_state_dict_has_pytorchs_layout_and_resuming_continues_the_same_trajectory(problem):
    def make(params):
        return optim.Adam([{"params": params[:2]}, {"params": params[2:], "lr": 0.03}], lr=0.01, amsgrad=True)

    def train(params, opt, steps):
        for _ in range(steps):
            opt.zero_grad()
            problem.lg_loss(params).backward()
            opt.step()

    straight = problem.lg_params()
    train(straight, make(straight), 20)

    first = problem.lg_params()
    opt = make(first)
    train(first, opt, 10)
    saved = opt.state_dict()
    torch_params = problem.torch_params()
    torch_opt = torch.optim.Adam([{"params": torch_params[:2]}, {"params": torch_params[2:], "lr": 0.03}], amsgrad=True)
    problem.torch_loss(torch_params).backward()
    torch_opt.step()
    theirs = torch_opt.state_dict()
    assert list(saved["state"]) == list(theirs["state"]) == [0, 1, 2, 3]
    assert set(saved["state"][0]) == set(theirs["state"][0])
    assert [g["params"] for g in saved["param_groups"]] == [g["params"] for g in theirs["param_groups"]]

    resumed = [lg.Tensor(p.data.copy(), requires_grad=True, dtype="float64") for p in first]
    opt2 = make(resumed)
    opt2.load_state_dict(saved)
    train(first, opt, 3)  # the snapshot must not move with the original
    train(resumed, opt2, 10)
    for a, b in zip(resumed, straight):
        np.testing.assert_array_equal(a.data, b.data)


def test_adding_a_parameter_group_later(problem):
    params = problem.lg_params()
    opt = optim.SGD(params[:2], lr=0.1)
    opt.add_param_group({"params": params[2:], "lr": 0.5})
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["momentum"] == 0.0
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [params[0]]})


def test_named_parameters_are_accepted_and_names_kept(problem):
    params = problem.lg_params()
    opt = optim.SGD([(f"w{i}", p) for i, p in enumerate(params)], lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["w0", "w1", "w2", "w3"]
    assert opt.param_groups[0]["params"][0] is params[0]


@pytest.mark.parametrize(
    "params, error, message",
    [
        ([], ValueError, "empty parameter list"),
        ({lg.Tensor([1.0], requires_grad=True)}, TypeError, "not a set"),
        (lg.Tensor([1.0], requires_grad=True), TypeError, "not a single Tensor"),
        ([np.zeros(3)], TypeError, "parameter 0 is ndarray"),
        ([lg.Tensor([1.0], requires_grad=True) * 2], ValueError, "computed by an op"),
    ],
)
def test_bad_parameters_get_a_clear_error(params, error, message):
    with pytest.raises(error, match=message):
        optim.SGD(params, lr=0.1)


def test_the_same_parameter_twice_is_refused():
    w = lg.Tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="appears twice"):
        optim.SGD([w, w], lr=0.1)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: optim.SGD(p, lr=-1), "lr must be >= 0"),
        (lambda p: optim.SGD(p, lr=0.1, nesterov=True), "Nesterov .* got momentum=0.0, dampening=0.0"),
        (lambda p: optim.Adam(p, betas=(1.0, 0.9)), r"betas\[0\] must be in \[0.0, 1.0\)"),
        (lambda p: optim.Signum(p, momentum=1.5), "momentum must be in"),
        # a NaN is outside every range (it compares false with everything, and used to pass)
        (lambda p: optim.Adam(p, lr=math.nan), "Adam: lr must be >= 0.0, got nan"),
        (lambda p: optim.Adam(p, betas=(math.nan, 0.9)), r"Adam: betas\[0\] must be in \[0.0, 1.0\), got nan"),
        (lambda p: optim.RMSprop(p, alpha=math.nan), "RMSprop: alpha .* got nan"),
        (lambda p: optim.LBFGS(p, history_size=0), "LBFGS: history_size must be a whole number >= 1, got 0"),
        (lambda p: optim.SLS(p, beta=0.0), "SLS: beta must be > 0"),
        (lambda p: optim.SLS(p, eta_max=-1.0), "SLS: eta_max must be >= 0"),
        (lambda p: optim.SLS(p, max_backtracks=0), "SLS: max_backtracks must be a whole number >= 1, got 0"),
    ],
)
def test_bad_hyperparameters_get_a_clear_error(make, message):
    with pytest.raises(ValueError, match=message):
        make([lg.Tensor([1.0], requires_grad=True)])


@pytest.mark.parametrize("make", [lambda ps: optim.LBFGS(ps, line_search_fn="strong_wolfe"), lambda ps: optim.SLS(ps)])
def test_line_search_optimisers_keep_float32_and_record_no_graph(problem, make):
    params = [lg.Tensor(w, requires_grad=True, dtype="float32") for w in problem.initial]
    opt = make(params)

    def loss_fn():
        w1, b1, w2, b2 = params
        out = (lg.Tensor(problem.x) @ w1 + b1).tanh() @ w2 + b2
        return ((out - lg.Tensor(problem.y)) ** 2).mean()

    def closure():
        if isinstance(opt, optim.LBFGS):
            opt.zero_grad()
            loss = loss_fn()
            loss.backward()
            return loss
        return loss_fn()  # SLS calls backward itself

    first = opt.step(closure).item()
    opt.step(closure)
    assert loss_fn().item() < first
    assert all(p.dtype == np.float32 and p.op is None for p in params)


def test_the_state_of_another_kind_of_optimiser_is_refused_by_name(problem):
    params = [lg.Tensor(w, requires_grad=True, dtype="float64") for w in problem.initial]
    adam = optim.Adam(params)
    with pytest.raises(
        ValueError,
        match=r"SGD.load_state_dict: parameter group 0 of the saved state has no "
        r"momentum, .*: it was saved by another kind of optimiser \(its settings: .*betas",
    ):
        optim.SGD(params, lr=0.1, momentum=0.9).load_state_dict(adam.state_dict())


def test_counts_may_be_numpy_integers():
    w = [lg.Tensor([1.0], requires_grad=True)]
    assert optim.LBFGS(w, max_iter=np.int64(5), history_size=np.int64(3)).defaults["history_size"] == 3
    assert optim.SLS(w, max_backtracks=np.int64(50)).defaults["max_backtracks"] == 50


def test_numpy_scalar_settings_act_as_the_python_numbers_they_hold():
    """np.float32(0.999) ** t computed in float32 made a float64 Adam run drift by 9e-8 over 50 steps."""
    rng = np.random.default_rng(0)
    start, grads = rng.standard_normal(5), rng.standard_normal((50, 5))
    runs = []
    same = np.float32([0.9, 0.999, 1e-2])  # the same numbers, as NumPy float32 scalars and as Python floats
    for betas, lr in (((float(same[0]), float(same[1])), float(same[2])), ((same[0], same[1]), same[2])):
        w = lg.Tensor(start.copy(), requires_grad=True, dtype="float64")
        optimizer = optim.Adam([{"params": [w], "betas": betas}], lr=lr)
        for g in grads:
            w.grad = lg.Tensor(g, dtype="float64")
            optimizer.step()
        runs.append(w.data.copy())
    np.testing.assert_array_equal(runs[1], runs[0])
    with pytest.raises(ValueError, match=r"Adam: betas must be a pair \(beta1, beta2\), got \(0.9, 0.99, 0.9\)"):
        optim.Adam([w], betas=(0.9, 0.99, 0.9))


def test_clip_grad_norm_with_a_numpy_float32_limit_matches_pytorch():
    grads = np.random.default_rng(0).standard_normal((2, 4)) * 10
    ours = [lg.Tensor(np.zeros(4), requires_grad=True, dtype="float64") for _ in grads]
    theirs = [torch.zeros(4, dtype=torch.float64, requires_grad=True) for _ in grads]
    for p, q, g in zip(ours, theirs, grads):
        p.grad, q.grad = lg.Tensor(g, dtype="float64"), torch.tensor(g)
    optim.clip_grad_norm_(ours, np.float32(1.3))
    torch.nn.utils.clip_grad_norm_(theirs, np.float32(1.3))
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.data, q.grad.numpy(), rtol=1e-15)


def test_group_settings_of_other_kinds_are_kept_as_given():
    from collections import namedtuple

    Pair = namedtuple("Pair", "a b")
    w = lg.Tensor([1.0], requires_grad=True)
    names = ["w"]
    group = optim.SGD([{"params": [w], "lr": 0.1, "tag": Pair(1, 2), "names": names}]).param_groups[0]
    assert group["tag"] == Pair(1, 2) and group["names"] is names
    assert optim.Adam([w], betas=np.array([0.9, 0.99])).param_groups[0]["betas"] == (0.9, 0.99)  # as PyTorch


@pytest.mark.parametrize(
    "options", [{"weight_decay": 0.1}, {"maximize": True}, {"nesterov": True, "weight_decay": 0.1}], ids=str
)
def test_sgd_momentum_on_a_single_number_parameter_as_pytorch(options):
    # A 0-d parameter's g was a NumPy scalar: its momentum buffer stayed at the first step's value
    ours = lg.Tensor(np.array(0.5), requires_grad=True, dtype="float64")
    theirs = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    opt = optim.SGD([ours], lr=0.1, momentum=0.9, **options)
    topt = torch.optim.SGD([theirs], lr=0.1, momentum=0.9, **options)
    for _ in range(4):
        ours.grad = lg.Tensor(np.array(1.0), dtype="float64")
        theirs.grad = torch.tensor(1.0, dtype=torch.float64)
        opt.step()
        topt.step()
    np.testing.assert_allclose(ours.data, theirs.detach().numpy(), rtol=1e-12)
