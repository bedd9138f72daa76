"""Accuracy on labelled runs: each broken script yields its symptom at the right place; healthy scripts yield no
error and at most a rare warning. The scripts are under cases/; each runs in a second or two."""

import pytest

pytestmark = pytest.mark.slow

# script -> [(symptom, where, severity)]: `where` ending in "(" is a prefix (recurrent layers add time steps).
FAULTY = {
    "vanishing_sigmoid_deep": [("vanishing_gradient", "net.0", "error")],
    "vanishing_rnn_time": [("vanishing_gradient", "rnn (", "error")],
    "vanishing_rnn_packed": [("vanishing_gradient", "rnn (", "error")],
    "exploding_rnn": [("exploding_gradient", "rnn (", "error")],
    "exploding_deep": [("exploding_gradient", "model.0", "error")],
    "dead_relu": [("dead_relu", "model.3", "error")],
    "saturated_tanh": [("saturated_activation", "model.3", "error"), ("saturated_activation", "model.1", "warning")],
    "nan_log_softmax": [("nonfinite", "log", "error")],
    "nan_where_sqrt": [("nonfinite", "sqrt", "error")],
    "dqn_clipped_td": [("blocked_gradient", "clamp", "error")],
    "quantize_round": [("blocked_gradient", "round", "error"), ("no_gradient", "fc1", "error")],
    "detach_encoder": [("no_gradient", "encoder", "error")],
    "checkpoint_reentrant": [("no_gradient", "encoder", "error")],
    "replaced_head": [("unapplied_gradient", "model.2", "warning")],
    "missing_zero_grad": [("accumulating_gradient", "optimizer", "error")],
    "zero_grad_after_backward": [("no_gradient", "model", "error")],
    "diverging_lr": [
        ("diverging_loss", "loss", "error"),
        ("saturated_activation", "model.1", "error"),
        ("exploding_gradient", "model.2", "warning"),
    ],
    "stalled_lr": [("stalled_loss", "loss", "warning")],
    "adam_lr_blowup": [("diverging_loss", "loss", "error"), ("dead_relu", "model.3", "error")],
    "nan_in_data": [("nonfinite", "input of model.0", "error")],
    "softmax_before_cross_entropy": [("vanishing_gradient", "model.5", "error"), ("stalled_loss", "loss", "warning")],
    "mse_broadcast_target": [("stalled_loss", "mse_loss", "error")],
    "symmetric_init": [("stalled_loss", "model.0", "error")],
}

HEALTHY = [
    "healthy_mlp_adam",
    "healthy_cnn_batchnorm",
    "healthy_lstm_clipping",
    "healthy_tiny_transformer",
    "healthy_residual_gelu",
    "healthy_tanh_xavier",
    "healthy_gru_classifier",
    "healthy_gru_packed",
    "healthy_sigmoid_bce",
    "healthy_dqn_huber",
    "healthy_accumulation",
    "healthy_frozen_encoder",
    "healthy_gan_two_optimizers",
    "healthy_zero_init_heads",
]


def find(findings, symptom, where):
    for f in findings:
        if f.symptom == symptom and (f.where.startswith(where) if where.endswith("(") else f.where == where):
            return f
    return None


@pytest.mark.parametrize("script", sorted(FAULTY))
def test_faulty_script_yields_its_symptom_at_the_right_place(run_case, script):
    run = run_case(script)
    assert run.exit_code == 0, run.stdout
    summary = [f.one_line() for f in run.doctor.findings]
    for symptom, where, severity in FAULTY[script]:
        finding = find(run.doctor.findings, symptom, where)
        assert finding is not None, f"{script}: expected {symptom} at {where}, got {summary}"
        assert finding.severity == severity, f"{script}: {finding.one_line()}"
        assert finding.explanation and finding.remedies
    assert run.doctor.notes == [], run.doctor.notes


@pytest.mark.parametrize("script", HEALTHY)
def test_healthy_script_yields_no_error(run_case, script):
    run = run_case(script)
    assert run.exit_code == 0, run.stdout
    errors = [f.one_line() for f in run.doctor.findings if f.severity == "error"]
    warnings = [f.one_line() for f in run.doctor.findings if f.severity == "warning"]
    assert errors == [], f"{script}: {errors}"
    assert len(warnings) <= 1, f"{script}: {warnings}"
    assert run.doctor.notes == [], run.doctor.notes


def test_warnings_on_healthy_scripts_are_rare(run_case):
    warnings = [f.one_line() for script in HEALTHY for f in run_case(script).doctor.findings]
    assert len(warnings) <= 1, warnings


# --- the evidence and the explanation name the mechanism, with this run's numbers -----------------------------------
def test_vanishing_across_depth_explains_the_sigmoid_factor(run_case):
    f = find(run_case("vanishing_sigmoid_deep").doctor.findings, "vanishing_gradient", "net.0")
    e = f.evidence
    assert e["across"] == "depth" and e["output_layer"] == "out" and e["layers"] == 11
    assert e["ratio"] < 1e-6
    assert 0 < e["mean_factor_per_layer"] < 0.3
    assert e["activation_mean_derivative"]["sigmoid"] <= 0.25
    assert "sigma'(z)" in f.explanation and "net.0" in f.explanation
    assert f.first_step == 0


def test_recurrent_findings_name_time_steps(run_case):
    vanish = find(run_case("vanishing_rnn_time").doctor.findings, "vanishing_gradient", "rnn (")
    assert vanish.evidence["across"] == "time" and vanish.evidence["time_steps"] == 60
    assert vanish.where == "rnn (time steps 0-5 of 60)"
    assert vanish.evidence["mean_factor_per_time_step"] < 1
    explode = find(run_case("exploding_rnn").doctor.findings, "exploding_gradient", "rnn (")
    assert explode.evidence["across"] == "time" and explode.evidence["ratio"] > 1e4
    assert explode.evidence["mean_factor_per_time_step"] > 1
    assert any("clip_grad_norm_" in r for r in explode.remedies)


def test_nonfinite_forward_names_the_op_and_the_layer_before_it(run_case):
    f = find(run_case("nan_log_softmax").doctor.findings, "nonfinite", "log")
    assert f.evidence["phase"] == "forward" and f.evidence["exact"] is True
    assert f.evidence["module"] == "model.2"
    assert "-inf" in f.evidence["value"]
    assert any("log_softmax" in r or "cross_entropy" in r for r in f.remedies)


def test_nonfinite_through_the_untaken_branch_of_where(run_case):
    f = find(run_case("nan_where_sqrt").doctor.findings, "nonfinite", "sqrt")
    assert f.evidence["phase"] == "backward" and f.first_step == 0
    assert f.evidence["through_where"] is True
    assert "torch.where" in f.explanation
    assert any("double-where" in r for r in f.remedies)


def test_clipped_td_error_is_blocked_in_the_loss_and_the_fix_is_huber(run_case):
    f = find(run_case("dqn_clipped_td").doctor.findings, "blocked_gradient", "clamp")
    assert f.evidence["site"] == "loss" and f.evidence["blocked_fraction"] > 0.9
    assert any("huber" in r.lower() for r in f.remedies)
    assert find(run_case("healthy_dqn_huber").doctor.findings, "blocked_gradient", "clamp") is None


def test_detached_encoder_names_the_cut(run_case):
    f = find(run_case("detach_encoder").doctor.findings, "no_gradient", "encoder")
    assert f.evidence["parameter_count"] == 4
    assert {"from": "encoder", "to": "head", "first_step": 0} in f.evidence["graph_cuts"]
    assert "detach" in f.explanation


def test_a_reentrant_checkpoint_on_data_is_named_with_its_fix(run_case):
    f = find(run_case("checkpoint_reentrant").doctor.findings, "no_gradient", "encoder")
    assert f.evidence["parameter_count"] == 4 and f.evidence["graph_cuts"] == []
    assert f.evidence["forward_ran"] == "without grad" and f.evidence["reentrant_checkpoint"] is True
    assert "use_reentrant=True" in f.explanation
    assert any("use_reentrant=False" in r for r in f.remedies)


def test_a_head_made_after_the_optimiser_is_found_with_the_parameters_it_replaced(run_case):
    f = find(run_case("replaced_head").doctor.findings, "unapplied_gradient", "model.2")
    assert f.evidence["parameters"] == ["model.2.bias", "model.2.weight"]
    assert f.evidence["stepped_outside_model"] == 2  # the old head's weight and bias
    assert "no optimiser steps them" in f.explanation and any("add_param_group" in r for r in f.remedies)


def test_accumulated_micro_batches_are_not_taken_for_graph_cuts(run_case):
    # A micro-batch's input may be allocated where the previous micro-batch's outputs lived (freed after their
    # backward): the same address, but no detach. Every step is sampled, so any such reuse would be seen.
    run = run_case("healthy_accumulation", every=1)
    assert run.doctor.history.graph_cuts == {}


def test_learning_rate_verdicts_come_from_update_ratios(run_case):
    stalled = find(run_case("stalled_lr").doctor.findings, "stalled_loss", "loss")
    assert stalled.evidence["learning_rate"] == "far too low"
    assert stalled.evidence["update_ratio_median"] < 1e-5
    diverging = find(run_case("diverging_lr").doctor.findings, "diverging_loss", "loss")
    assert diverging.evidence["learning_rate"] == "far too high"
    # The vanishing net's loss stalls too, but its last layer moves: not blamed on the learning rate.
    vanishing = find(run_case("vanishing_sigmoid_deep").doctor.findings, "stalled_loss", "loss")
    assert vanishing is None or vanishing.evidence["learning_rate"] is None


def test_dead_relu_is_not_sparsity(run_case):
    f = find(run_case("dead_relu").doctor.findings, "dead_relu", "model.3")
    assert f.evidence["dead_fraction"] > 0.9 and f.evidence["window_examples"] >= 128
    healthy = run_case("healthy_mlp_adam").doctor.history.records[-1].activations
    zero_fractions = [a.zero_fraction for a in healthy.values()]
    dead_fractions = [a.dead_fraction for a in healthy.values()]
    assert all(0.2 < z < 0.9 for z in zero_fractions), zero_fractions  # plenty of zeros per batch ...
    assert all(d < 0.1 for d in dead_fractions), dead_fractions  # ... but hardly a dead unit
