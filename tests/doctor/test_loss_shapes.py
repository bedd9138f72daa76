"""A prediction of shape (N, 1) compared with targets of shape (N,): broadcasting makes it (N, N), every prediction
meets every target of the batch, and the gradient pulls each one to the batch's mean target. Named at the loss
operation that broadcast, as a stalled loss; before, a run like this got "no leaks found". Pairwise losses, which
broadcast on purpose (`x[:, None] - x[None, :]`), and predictions of the targets' own shape are left alone."""

import pytest
import torch
from torch import nn
from torch.nn import functional as F

import leakygrad.doctor as doctor


def regression_data(n=64, features=8, seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=generator)
    return x, x @ torch.randn(features, generator=generator)  # targets of shape (n,)


def fit(loss_of, steps=40):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    x, y = regression_data()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    with doctor.watch(model, optimizer, every=1) as dr:
        for _ in range(steps):
            loss = loss_of(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert dr.notes == []
    return dr


def broadcast_findings(dr):
    return [f for f in dr.findings if f.evidence.get("across") == "broadcast"]


@pytest.mark.filterwarnings("ignore:Using a target size")
@pytest.mark.parametrize("loss_fn, op", [(F.mse_loss, "mse_loss"), (F.huber_loss, "huber_loss")])
def test_a_loss_function_given_an_n_by_1_prediction_and_n_targets_is_named(loss_fn, op):
    dr = fit(loss_fn)
    [f] = broadcast_findings(dr)
    assert (f.symptom, f.where, f.severity, f.first_step) == ("stalled_loss", op, "error", 0)
    e = f.evidence
    assert e["prediction"] == "sequential.2" and e["prediction_shape"] == [64, 1] and e["compared_as"] == [64, 64]
    assert "mean(y)" in f.explanation and "pred.squeeze(-1)" in f.remedies[0]
    assert not [g for g in dr.findings if g.symptom == "stalled_loss" and g.where == "loss"]  # (the same stall)


def test_a_hand_written_squared_error_that_broadcasts_is_named_at_the_subtraction():
    dr = fit(lambda pred, y: ((pred - y) ** 2).mean())
    [f] = broadcast_findings(dr)
    assert f.where == "sub" and f.evidence["compared_as"] == [64, 64]


def test_a_prediction_of_the_targets_shape_is_not_named():
    dr = fit(lambda pred, y: F.mse_loss(pred.squeeze(1), y))
    assert all(r.prediction_broadcast is None for r in dr.history.records)
    assert broadcast_findings(dr) == []


def test_a_pairwise_loss_that_broadcasts_on_purpose_is_not_named():
    # a ranking loss over every pair of the batch: x[:, None] - x[None, :] is (N, N) by design
    def pairwise(pred, y):
        scores, order = pred.squeeze(1), torch.sign(y[:, None] - y[None, :])
        return F.softplus(-order * (scores[:, None] - scores[None, :])).mean()

    dr = fit(pairwise)
    assert all(r.prediction_broadcast is None for r in dr.history.records)
    assert broadcast_findings(dr) == []


def test_a_ranking_loss_over_pairs_of_the_models_own_outputs_is_not_named():
    # RankNet: every pair of the batch's scores, the model's (N, 1) output against its own transpose
    def ranknet(pred, y):
        order = torch.sign(y[:, None] - y[None, :])
        return F.softplus(-order * (pred - pred.t())).mean()

    dr = fit(ranknet)
    assert all(r.prediction_broadcast is None for r in dr.history.records)
    assert broadcast_findings(dr) == []
