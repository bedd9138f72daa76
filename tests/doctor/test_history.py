"""The history stays bounded however long the run, without losing when a finding began."""

import math

import pytest

from leakygrad.doctor import Doctor
from leakygrad.doctor.history import History, LossSeries
from leakygrad.doctor.stats import LayerStats, StepRecord


def test_loss_series_is_bounded_and_keeps_totals():
    series = LossSeries(max_buckets=64)
    for step in range(100_000):
        series.add(step, 1.0 + (step % 7))
    assert len(series.buckets) <= 64
    assert len(series) == 100_000
    total = sum(b.total for b in series.buckets)
    assert total == pytest.approx(sum(1.0 + (s % 7) for s in range(100_000)))
    assert series.buckets[0].first_step == 0 and series.buckets[-1].last_step == 99_999
    assert min(b.low for b in series.buckets) == 1.0 and max(b.high for b in series.buckets) == 7.0


def test_loss_series_counts_nonfinite_steps_apart():
    series = LossSeries()
    for step, value in enumerate([1.0, math.nan, math.inf, 0.5]):
        series.add(step, value)
    assert series.first_nonfinite_step == 1 and series.nonfinite_steps == 2 and len(series) == 2


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="max_buckets must be an even number"):
        LossSeries(max_buckets=7)
    with pytest.raises(ValueError, match="max_records must be at least 8"):
        History(max_records=4)
    with pytest.raises(ValueError, match="every must be a positive whole number"):
        Doctor(every=0)


def vanishing_record(step, vanishing):
    norms = [1e-8, 1e-4, 1.0] if vanishing else [0.5, 0.8, 1.0]
    layers = {f"l{i}": LayerStats(f"l{i}", "Linear", i, has_weights=True, out_grad_norm=n) for i, n in enumerate(norms)}
    return StepRecord(step=step, layers=layers)


def test_records_are_thinned_but_the_onset_survives():
    doctor = Doctor(max_records=32)
    for step in range(5000):
        doctor.record(vanishing_record(step, vanishing=step >= 100))
        doctor.add_loss(step, 1.0)
    history = doctor.history
    assert len(history.records) <= 32
    assert history.records_seen == 5000
    assert history.records[0].step == 0  # the first record always stays
    recent = [r.step for r in history.records[-16:]]
    assert recent == list(range(4984, 5000))  # the recent half is whole
    [finding] = [f for f in doctor.findings if f.symptom == "vanishing_gradient"]
    assert finding.first_step == 100  # though the records around step 100 are long gone


def test_thinned_records_stay_spread_over_the_whole_run():
    """Old records used to be halved again at every round of thinning: after 20,000 steps the history held step 0
    and the last ~250 steps, and the heat map "over the steps" showed nothing between."""
    doctor = Doctor(every=1)
    for step in range(20000):
        doctor.record(StepRecord(step=step))
    steps = [r.step for r in doctor.history.records]
    assert len(steps) <= doctor.history.max_records and steps[0] == 0
    older = steps[: -doctor.history.max_records // 2]
    assert len(older) >= 8 and max(b - a for a, b in zip(older, older[1:])) < 20000 / 4
    assert any(5000 < s < 15000 for s in steps)  # the middle of the run is there


def test_a_nan_the_run_got_over_does_not_blind_the_rules_for_the_rest_of_it():
    """One bad batch at step 10, its step skipped (as a gradient scaler does), and every ReLU killed at step 30:
    the dead ReLUs are found beside the NaN. The records after a NaN count again once the loss is finite again;
    a run whose loss stays NaN is judged on the records before it, as before."""
    import torch
    from torch import nn

    import leakygrad.doctor as doctor

    def run(bad_batch_at):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        with doctor.watch(model, optimizer, every=1) as dr:
            for step in range(300):
                if step == 30:
                    with torch.no_grad():
                        model[0].bias.fill_(-100.0)  # every ReLU unit dies
                x = torch.randn(32, 4)
                if step == bad_batch_at:
                    x[0, 0] = float("nan")
                loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
                optimizer.zero_grad()
                loss.backward()
                if all(torch.isfinite(p.grad).all() for p in model.parameters()):
                    optimizer.step()
        return {f.symptom for f in dr.findings}

    assert run(bad_batch_at=None) == {"dead_relu"}
    assert run(bad_batch_at=10) == {"dead_relu", "nonfinite"}
