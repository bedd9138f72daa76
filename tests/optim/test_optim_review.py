"""Edge cases a demanding user hits, found in a review of leakygrad.optim: each against PyTorch where it has a twin.

The `problem` fixture (tests/optim/conftest.py) is a float64 3-4-2 tanh network built identically in both libraries.
"""

import copy

import numpy as np
import pytest
import torch

import leakygrad as lg
from leakygrad import optim


def _lg_step(problem, opt, params, no_grad_for=()):
    opt.zero_grad()
    problem.lg_loss(params).backward()
    for i in no_grad_for:
        params[i].grad = None
    opt.step()


def _torch_step(problem, opt, params, no_grad_for=()):
    opt.zero_grad()
    problem.torch_loss(params).backward()
    for i in no_grad_for:
        params[i].grad = None
    opt.step()


def _largest_difference(lg_params, torch_params):
    return max(np.abs(a.data - b.detach().numpy()).max() for a, b in zip(lg_params, torch_params))


# ---------------------------------------------------------------------------------------------------------------
# What already agreed with PyTorch, kept as regression tests: groups with different options, settings changed
# mid-run, a parameter without a gradient.

GROUP_CASES = {
    "SGD": (dict(lr=0.05, momentum=0.9), dict(weight_decay=0.2, momentum=0.5, nesterov=True)),
    "Adam": (dict(lr=0.01), dict(amsgrad=True, lr=0.02, weight_decay=0.1)),
    "AdamW": (dict(lr=0.01), dict(weight_decay=0.5, maximize=True)),
    "RMSprop": (dict(lr=0.01, momentum=0.3), dict(centered=True, maximize=True, alpha=0.9)),
    "Adagrad": (dict(lr=0.1), dict(lr_decay=0.1, maximize=True, weight_decay=0.05)),
}


@pytest.mark.parametrize("name", list(GROUP_CASES))
def test_groups_with_their_own_options_settings_changed_mid_run_and_a_missing_gradient_match_pytorch(problem, name):
    defaults, first_group = GROUP_CASES[name]

    def make(library, params):
        groups = [{"params": params[:2], **first_group}, {"params": params[2:]}]
        return getattr(library, name)(groups, **defaults)

    lg_params, torch_params = problem.lg_params(), problem.torch_params()
    lg_opt, torch_opt = make(optim, lg_params), make(torch.optim, torch_params)
    for step in range(30):
        if step == 10:  # as a user or a schedule does: new settings, same state
            for opt in (lg_opt, torch_opt):
                for group in opt.param_groups:
                    group["lr"] *= 0.5
                    group["weight_decay"] = 0.1
                    if "momentum" in group:
                        group["momentum"] = 0.6
                    if "betas" in group:
                        group["betas"] = (0.5, 0.9)
        no_grad_for = (1,) if step % 3 == 0 else ()  # the first group's bias sometimes gets no gradient
        _lg_step(problem, lg_opt, lg_params, no_grad_for)
        _torch_step(problem, torch_opt, torch_params, no_grad_for)
    assert _largest_difference(lg_params, torch_params) < 1e-6


# ---------------------------------------------------------------------------------------------------------------
# Bug: switching an option that needs a buffer on mid-run (RMSprop momentum or centered, Adam amsgrad) raised a
# bare KeyError (PyTorch does too). The buffer now starts at zero when the option is switched on, which is what
# PyTorch computes if one adds the zero buffer to its state by hand at that moment: the oracle below.

SWITCH_CASES = [
    ("RMSprop", dict(lr=0.01), "momentum", 0.9, "momentum_buffer"),
    ("RMSprop", dict(lr=0.01), "centered", True, "grad_avg"),
    ("Adam", dict(lr=0.01), "amsgrad", True, "max_exp_avg_sq"),
    ("AdamW", dict(lr=0.01), "amsgrad", True, "max_exp_avg_sq"),
]
SWITCH_IDS = [f"{name}-{option}" for name, _, option, _, _ in SWITCH_CASES]


@pytest.mark.parametrize("name, kwargs, option, value, buffer", SWITCH_CASES, ids=SWITCH_IDS)
def test_an_option_switched_on_mid_run_starts_its_buffer_at_zero(problem, name, kwargs, option, value, buffer):
    lg_params, torch_params = problem.lg_params(), problem.torch_params()
    lg_opt = getattr(optim, name)(lg_params, **kwargs)
    torch_opt = getattr(torch.optim, name)(torch_params, **kwargs)
    for step in range(25):
        if step == 8:
            lg_opt.param_groups[0][option] = value
            torch_opt.param_groups[0][option] = value
            for p in torch_params:
                torch_opt.state[p][buffer] = torch.zeros_like(p)
        _lg_step(problem, lg_opt, lg_params)
        _torch_step(problem, torch_opt, torch_params)
    assert set(lg_opt.state[lg_params[0]]) == set(torch_opt.state[torch_params[0]])
    assert _largest_difference(lg_params, torch_params) < 1e-6


# ---------------------------------------------------------------------------------------------------------------
# Bug: load_state_dict kept state entries that no saved parameter group lists under their bare index, where no step
# reads them: the parameter they were meant for silently started afresh. And a parameter index listed twice in the
# saved groups gave a misleading shape error (or none, with parameters of equal shapes).


def _trained_adam(problem, steps=3):
    params = problem.lg_params()
    opt = optim.Adam(params, lr=0.01)
    for _ in range(steps):
        _lg_step(problem, opt, params)
    return opt


def _snapshot(opt):
    return copy.deepcopy(opt.state_dict())


def test_state_for_a_parameter_that_no_group_lists_is_refused_and_nothing_changes(problem):
    saved = _trained_adam(problem).state_dict()
    saved["state"][7] = saved["state"].pop(3)  # (as in a state dict assembled from two files)
    target = _trained_adam(problem, steps=1)
    before = _snapshot(target)
    with pytest.raises(ValueError, match=r"Adam\.load_state_dict: .*entries for parameter\(s\) \[7\].*4 parameters"):
        target.load_state_dict(saved)
    after = _snapshot(target)
    assert after["param_groups"] == before["param_groups"]
    assert after["state"].keys() == before["state"].keys()
    for index, entry in before["state"].items():
        np.testing.assert_array_equal(after["state"][index]["exp_avg"], entry["exp_avg"])


def test_a_parameter_listed_twice_in_the_saved_groups_is_named(problem):
    params = problem.lg_params()
    opt = optim.SGD([{"params": params[:2]}, {"params": params[2:]}], lr=0.1, momentum=0.9)
    _lg_step(problem, opt, params)
    saved = opt.state_dict()
    saved["param_groups"][1]["params"] = [2, 1]
    with pytest.raises(ValueError, match=r"list parameter\(s\) \[1\] more than once"):
        optim.SGD([{"params": params[:2]}, {"params": params[2:]}], lr=0.1, momentum=0.9).load_state_dict(saved)


def test_state_keys_written_as_strings_still_load(problem):
    opt = _trained_adam(problem)
    saved = opt.state_dict()
    saved["state"] = {str(k): v for k, v in saved["state"].items()}  # (as some file formats hand them back)
    saved["param_groups"][0]["params"] = [str(i) for i in saved["param_groups"][0]["params"]]
    fresh = optim.Adam(problem.lg_params(), lr=0.01)
    fresh.load_state_dict(saved)
    assert len(fresh.state) == 4


# ---------------------------------------------------------------------------------------------------------------
# Bug: SLS with a closure whose loss (or gradient) is inf or nan at the current weights. With an inf loss it spent
# 100 evaluations and then took a 1e-6 step along an inf gradient, sending every weight to -inf; with a nan loss it
# silently grew its step size and counted a step. It now raises and leaves the weights and its state as they were.


def _sls_problem():
    w = lg.Tensor(np.array([1.0, -2.0, 0.0]), requires_grad=True, dtype="float64")
    return w, optim.SLS([w], n_batches_per_epoch=10)


@pytest.mark.parametrize(
    "bad_loss, what",
    [
        (lambda w: (w * w).sum() * float("inf"), "the loss is inf"),
        (lambda w: (w * w).sum() * float("nan"), "the loss is nan"),
        (lambda w: (w * w).sum() - float("inf"), "the loss is -inf"),
        (lambda w: (w * w).sum() + (w * w).sum() ** 0.5 * 0 + w[2] ** 0.5, "the gradient's norm is inf"),
    ],
    ids=["inf", "nan", "-inf", "inf-gradient"],
)
def test_sls_refuses_a_nonfinite_loss_or_gradient_and_changes_nothing(bad_loss, what):
    w, opt = _sls_problem()
    good = lambda: (w * w).sum()  # noqa: E731
    opt.step(good)
    weights, state = w.data.copy(), copy.deepcopy(opt.state_dict())
    with pytest.raises(FloatingPointError, match=f"SLS.step: at the current weights {what}"):
        opt.step(lambda: bad_loss(w))
    np.testing.assert_array_equal(w.data, weights)
    assert opt.state_dict() == state
    opt.step(good)  # and it carries on
    assert opt.state[w]["step"] == 2


def test_sls_refuses_a_nonfinite_loss_on_its_very_first_step_without_creating_state():
    w, opt = _sls_problem()
    with pytest.raises(FloatingPointError):
        opt.step(lambda: (w * w).sum() * float("nan"))
    np.testing.assert_array_equal(w.data, [1.0, -2.0, 0.0])
    assert opt.state_dict()["state"] == {}


def test_sls_backtracks_past_trial_points_where_the_loss_is_not_finite():
    w, opt = _sls_problem()

    def closure():  # nan beyond |w| = 1.5, as a log of a negative number would give
        loss = (w * w).sum()
        return loss * float("nan") if np.abs(w.data).max() > 1.5 and not loss.requires_grad else loss

    opt.step(closure)
    assert np.isfinite(w.data).all()
    assert (w * w).sum().item() < 5.0  # it did go downhill


def test_sls_puts_the_weights_back_when_the_closure_fails_at_a_trial_point():
    w, opt = _sls_problem()
    calls = []

    def closure():
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt  # (or any error in the user's code, at a trial point)
        return ((w - 0.1) ** 4).sum()

    with pytest.raises(KeyboardInterrupt):
        opt.step(closure)
    np.testing.assert_array_equal(w.data, [1.0, -2.0, 0.0])


# ---------------------------------------------------------------------------------------------------------------
# Bug (shared with PyTorch, which it follows elsewhere): L-BFGS's line search left the weights at a trial point when
# the closure raised there (an interrupt, an error in the user's code).


def test_lbfgs_puts_the_weights_back_when_the_closure_fails_in_the_line_search():
    x = lg.Tensor(np.array([-1.2, 1.0]), requires_grad=True, dtype="float64")
    opt = optim.LBFGS([x], line_search_fn="strong_wolfe")
    seen = []

    def closure():
        seen.append(x.data.copy())
        if len(seen) == 2:  # the first trial point of the line search (the first call is at the start)
            raise KeyboardInterrupt
        opt.zero_grad()
        loss = 100 * (x[1] - x[0] ** 2) ** 2 + (1 - x[0]) ** 2
        loss.backward()
        return loss

    with pytest.raises(KeyboardInterrupt):
        opt.step(closure)
    assert not np.array_equal(seen[1], seen[0])  # it had moved to the trial point
    np.testing.assert_array_equal(x.data, [-1.2, 1.0])


# ---------------------------------------------------------------------------------------------------------------
# Bug (shared with PyTorch): clip_grad_norm_ with a negative max_norm scaled every gradient by a negative number,
# turning descent into ascent; a nan max_norm made every gradient nan. Both are refused, the gradients untouched.


@pytest.mark.parametrize("max_norm", [-1.0, float("nan")])
def test_clip_grad_norm_refuses_a_negative_or_nan_limit(max_norm):
    p = lg.Tensor(np.zeros(2), requires_grad=True, dtype="float64")
    p.grad = lg.Tensor(np.array([3.0, 4.0]), dtype="float64")
    with pytest.raises(ValueError, match="clip_grad_norm_: max_norm must be >= 0"):
        optim.clip_grad_norm_([p], max_norm)
    np.testing.assert_array_equal(p.grad.data, [3.0, 4.0])


def test_clip_grad_norm_with_a_zero_limit_zeroes_the_gradients_as_pytorch():
    p = lg.Tensor(np.zeros(2), requires_grad=True, dtype="float64")
    p.grad = lg.Tensor(np.array([3.0, 4.0]), dtype="float64")
    t = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    t.grad = torch.tensor([3.0, 4.0], dtype=torch.float64)
    assert optim.clip_grad_norm_([p], 0.0).item() == torch.nn.utils.clip_grad_norm_([t], 0.0).item() == 5.0
    np.testing.assert_array_equal(p.grad.data, t.grad.numpy())


def test_a_pytorch_optimisers_state_dict_is_refused_by_name_and_nothing_changes(problem):
    """It has the same outline ('state', 'param_groups', Adam's settings), so it loaded silently, with torch tensors in
    the state, and the first step failed far from the cause."""
    target = _trained_adam(problem)
    torch_params = problem.torch_params()
    torch_opt = torch.optim.Adam(torch_params, lr=0.01)
    for _ in range(2):
        _torch_step(problem, torch_opt, torch_params)
    before = _snapshot(target)
    with pytest.raises(TypeError, match=r"Adam\.load_state_dict: the saved 'step' of parameter 0 is a torch\.Tensor"):
        target.load_state_dict(torch_opt.state_dict())
    after = _snapshot(target)
    assert after["param_groups"] == before["param_groups"]
    for index, entry in before["state"].items():
        np.testing.assert_array_equal(after["state"][index]["exp_avg"], entry["exp_avg"])
