"""The doctor never changes the training: with it attached (statistics on every step, the most it ever does),
losses and final parameters are bitwise identical to a run without it, on CPU with fixed seeds."""

import pytest
import torch

pytestmark = pytest.mark.slow

SCRIPTS = [
    "healthy_mlp_adam",  # the baseline
    "healthy_cnn_batchnorm",  # batch-norm running statistics, in-place ReLU
    "exploding_rnn",  # a recurrent layer fed a gradient-carrying alias of its input on sampled steps
    "healthy_tiny_transformer",  # many functional ops, attention, embeddings, AdamW
    "dqn_clipped_td",  # hooks on a gating op, a target network called under no_grad
    "nan_where_sqrt",  # a NaN in the backward pass: localisation must not disturb it
    "healthy_gan_two_optimizers",  # two optimisers in turn, a detached fake, two backward passes per step
]


def parameters(run):
    return {name: p.detach().clone() for name, p in run.globals["model"].state_dict().items()}


@pytest.mark.parametrize("script", SCRIPTS)
def test_losses_and_parameters_are_bitwise_identical(run_case, script):
    plain = run_case(script, "--steps", "40", watch=False)
    watched = run_case(script, "--steps", "40", every=1)
    assert watched.doctor.history.records_seen == 40  # it really measured every step
    assert plain.globals["losses"] == watched.globals["losses"] or _same_with_nan(
        plain.globals["losses"], watched.globals["losses"]
    )
    before, after = parameters(plain), parameters(watched)
    assert before.keys() == after.keys()
    for name in before:
        assert torch.equal(before[name], after[name]) or _same_nan_pattern(before[name], after[name]), name
    assert watched.doctor.notes == []


def _same_with_nan(a, b):
    return len(a) == len(b) and all(x == y or (x != x and y != y) for x, y in zip(a, b))


def _same_nan_pattern(a, b):
    return torch.equal(torch.isnan(a), torch.isnan(b)) and torch.equal(a.nan_to_num(0.0), b.nan_to_num(0.0))


def test_default_sampling_is_also_identical(run_case):
    plain = run_case("healthy_lstm_clipping", "--steps", "40", watch=False)
    watched = run_case("healthy_lstm_clipping", "--steps", "40", every=16)
    assert plain.globals["losses"] == watched.globals["losses"]
    before, after = parameters(plain), parameters(watched)
    assert all(torch.equal(before[name], after[name]) for name in before)
