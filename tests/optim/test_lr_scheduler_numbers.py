"""Schedules set the lr as a Python number, and say why one cannot start at a SequentialLR milestone."""

import numpy as np
import pytest

import leakygrad as lg
from leakygrad import io, nn, optim
from leakygrad.optim import lr_scheduler as sched


def _train(model, optimizer, scheduler, x, y, steps):
    for _ in range(steps):
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()
        scheduler.step()


def test_a_lambda_that_returns_a_numpy_number_resumes_from_a_checkpoint_exactly(tmp_path):
    # np.exp gives np.float64: kept as the lr, it made the float32 update run in float64 until the checkpoint,
    # and in float32 after it (the file stores a Python float), so the resumed run drifted.
    rng = np.random.default_rng(0)
    x, y = lg.Tensor(rng.standard_normal((64, 3))), lg.Tensor(rng.standard_normal((64, 2)))

    def build(seed):
        lg.manual_seed(seed)
        model = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 2))
        optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        return model, optimizer, sched.LambdaLR(optimizer, lambda epoch: np.exp(-0.01 * epoch))

    model, optimizer, scheduler = build(0)
    _train(model, optimizer, scheduler, x, y, 3)
    assert type(optimizer.param_groups[0]["lr"]) is float and type(scheduler.get_last_lr()[0]) is float
    io.save_checkpoint(tmp_path / "run.npz", model=model, optimizer=optimizer, scheduler=scheduler)
    model2, optimizer2, scheduler2 = build(1)
    io.load_checkpoint(tmp_path / "run.npz", model=model2, optimizer=optimizer2, scheduler=scheduler2)
    _train(model, optimizer, scheduler, x, y, 20)
    _train(model2, optimizer2, scheduler2, x, y, 20)
    for a, b in zip(model.parameters(), model2.parameters()):
        np.testing.assert_array_equal(a.data, b.data)


def test_a_schedule_without_a_closed_form_at_a_milestone_says_why():
    opt = optim.SGD([lg.Tensor([1.0], requires_grad=True)], lr=0.1)
    chained = sched.ChainedScheduler([sched.StepLR(opt, 3), sched.CosineAnnealingLR(opt, 10)])
    scheduler = sched.SequentialLR(opt, [sched.LinearLR(opt, total_iters=2), chained], milestones=[2])
    scheduler.step()
    with pytest.raises(NotImplementedError, match="ChainedScheduler has no closed form .*SequentialLR milestone"):
        scheduler.step()
