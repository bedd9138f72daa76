"""Learning-rate schedules against torch.optim.lr_scheduler: the same lr at every step, composed or not."""

import math

import numpy as np
import pytest
import torch
from torch.optim import lr_scheduler as torch_sched

import leakygrad as lg
from leakygrad import optim
from leakygrad.optim import lr_scheduler as sched

SCHEDULES = {
    "step": lambda S, opt: S.StepLR(opt, step_size=4, gamma=0.5),
    "cosine": lambda S, opt: S.CosineAnnealingLR(opt, T_max=10, eta_min=0.01),
    "linear-warmup": lambda S, opt: S.LinearLR(opt, start_factor=0.1, total_iters=6),
    "linear-decay": lambda S, opt: S.LinearLR(opt, start_factor=1.0, end_factor=0.2, total_iters=8),
    "lambda": lambda S, opt: S.LambdaLR(opt, lambda epoch: 1.0 / (1 + epoch)),
    "warmup-then-cosine": lambda S, opt: S.SequentialLR(
        opt,
        [S.LinearLR(opt, start_factor=0.05, total_iters=5), S.CosineAnnealingLR(opt, T_max=20, eta_min=0.001)],
        milestones=[5],
    ),
    "chained-step-and-warmup": lambda S, opt: S.ChainedScheduler(
        [S.StepLR(opt, step_size=3, gamma=0.7), S.LinearLR(opt, start_factor=0.25, total_iters=4)]
    ),
}


def _twin_optimisers():
    w, v = lg.Tensor([1.0], requires_grad=True), lg.Tensor([1.0], requires_grad=True)
    ours = optim.SGD([{"params": [w]}, {"params": [v], "lr": 0.3}], lr=0.1, momentum=0.9)
    tw, tv = torch.zeros(1, requires_grad=True), torch.zeros(1, requires_grad=True)
    theirs = torch.optim.SGD([{"params": [tw]}, {"params": [tv], "lr": 0.3}], lr=0.1, momentum=0.9)
    return ours, theirs


def _lrs(opt):
    return [g["lr"] for g in opt.param_groups]


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_schedule_matches_pytorch_for_40_steps(name):
    ours_opt, torch_opt = _twin_optimisers()
    ours, theirs = SCHEDULES[name](sched, ours_opt), SCHEDULES[name](torch_sched, torch_opt)
    ours_lrs, torch_lrs = [_lrs(ours_opt)], [_lrs(torch_opt)]
    for _ in range(40):
        torch_opt.step()
        ours.step()
        theirs.step()
        ours_lrs.append(_lrs(ours_opt))
        torch_lrs.append(_lrs(torch_opt))
        np.testing.assert_allclose(ours.get_last_lr(), theirs.get_last_lr(), rtol=1e-12)
    np.testing.assert_allclose(ours_lrs, torch_lrs, rtol=1e-12, atol=1e-15)
    assert len({tuple(lr) for lr in ours_lrs}) > 3  # the schedule did change the lr


def test_cosine_follows_its_closed_form():
    opt, _ = _twin_optimisers()
    scheduler = sched.CosineAnnealingLR(opt, T_max=10, eta_min=0.01)
    for epoch in range(1, 25):
        scheduler.step()
        expected = 0.01 + (0.1 - 0.01) * (1 + math.cos(math.pi * epoch / 10)) / 2
        assert opt.param_groups[0]["lr"] == pytest.approx(expected, rel=1e-12)


def test_scheduler_state_round_trip_resumes_the_schedule():
    opt, _ = _twin_optimisers()
    scheduler = SCHEDULES["warmup-then-cosine"](sched, opt)
    for _ in range(7):
        scheduler.step()
    saved_sched, saved_opt = scheduler.state_dict(), opt.state_dict()
    expected = []
    for _ in range(5):
        scheduler.step()
        expected.append(_lrs(opt))

    opt2, _ = _twin_optimisers()
    scheduler2 = SCHEDULES["warmup-then-cosine"](sched, opt2)
    scheduler2.load_state_dict(saved_sched)
    opt2.load_state_dict(saved_opt)
    resumed = []
    for _ in range(5):
        scheduler2.step()
        resumed.append(_lrs(opt2))
    np.testing.assert_allclose(resumed, expected, rtol=1e-12)


def test_schedules_of_another_optimiser_are_refused():
    a, _ = _twin_optimisers()
    b, _ = _twin_optimisers()
    with pytest.raises(ValueError, match="different optimiser"):
        sched.SequentialLR(a, [sched.StepLR(a, 2), sched.StepLR(b, 2)], milestones=[3])
    with pytest.raises(ValueError, match="2 schedulers need 1 milestones"):
        sched.SequentialLR(a, [sched.StepLR(a, 2), sched.StepLR(a, 2)], milestones=[])


def test_lambda_lr_takes_one_function_per_group_as_pytorch_does():
    def make(lib, S):
        a, b = lib([1.0], requires_grad=True), lib([2.0], requires_grad=True)
        opt = (optim if lib is lg.Tensor else torch.optim).SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
        return opt, S.LambdaLR(opt, [lambda e: 0.9**e, lambda e: 1 / (1 + e)])

    ours, theirs = make(lg.Tensor, sched)[1], make(torch.tensor, torch_sched)[1]
    for _ in range(6):
        np.testing.assert_allclose(ours.get_last_lr(), theirs.get_last_lr(), rtol=1e-15)
        ours.optimizer.step()
        theirs.optimizer.step()
        ours.step()
        theirs.step()
    assert ours.state_dict()["lr_lambdas"] == [None, None]  # functions hold no state to save
    with pytest.raises(ValueError, match="LambdaLR: 1 functions for 2 parameter groups"):
        sched.LambdaLR(ours.optimizer, [lambda e: 1.0])


def test_a_schedule_for_an_optimiser_without_a_learning_rate_is_refused_by_name():
    w = lg.Tensor([1.0], requires_grad=True)
    with pytest.raises(TypeError, match=r"StepLR: SLS has no learning rate \('lr'\) to schedule"):
        sched.StepLR(optim.SLS([w]), step_size=2)


class WarmUp:
    """A schedule kept as an object with its own state (as PyTorch's state_dict saves it)."""

    def __init__(self, steps):
        self.steps = steps

    def __call__(self, epoch):
        return min(1.0, (epoch + 1) / self.steps)


def test_lambda_lr_saves_the_state_of_a_callable_object():
    def make(steps):
        w = lg.Tensor([1.0], requires_grad=True)
        optimizer = optim.SGD([w], lr=0.1)
        return optimizer, sched.LambdaLR(optimizer, WarmUp(steps))

    optimizer, schedule = make(10)
    for _ in range(4):
        optimizer.step()
        schedule.step()
    saved = schedule.state_dict()
    assert saved["lr_lambdas"] == [{"steps": 10}]
    resumed_optimizer, resumed = make(99)
    resumed.load_state_dict(saved)
    resumed_optimizer.load_state_dict(optimizer.state_dict())
    for _ in range(3):
        for o, s in ((optimizer, schedule), (resumed_optimizer, resumed)):
            o.step()
            s.step()
        assert resumed.get_last_lr() == schedule.get_last_lr()


class CosineAfterWarmUp(WarmUp):
    def __init__(self, steps):
        super().__init__(steps)
        self.after = math.cos  # a function: the file format holds no code


def test_lambda_lr_state_leaves_out_what_a_file_cannot_hold(tmp_path):
    from leakygrad import io

    w = lg.Tensor([1.0], requires_grad=True)
    schedule = sched.LambdaLR(optim.SGD([w], lr=0.1), CosineAfterWarmUp(10))
    assert schedule.state_dict()["lr_lambdas"] == [{"steps": 10}]
    io.save_checkpoint(tmp_path / "run.npz", scheduler=schedule)
