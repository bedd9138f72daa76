"""The rules on synthetic histories: plain numbers in, findings out (no PyTorch anywhere in this file)."""

import math

import pytest

from leakygrad.doctor import Doctor, Finding, Thresholds, diagnose
from leakygrad.doctor.explain import explain
from leakygrad.doctor.findings import sort_findings
from leakygrad.doctor.history import History
from leakygrad.doctor.rules import (
    accumulating_rule,
    blocked_rule,
    dead_relu_rule,
    depth_rule,
    fold_explained,
    frozen_optimizer_rule,
    growth_rule,
    loss_rule,
    no_gradient_rule,
    nonfinite_rule,
    onset,
    saturation_rule,
    symmetric_units_rule,
    time_rule,
    unapplied_rule,
)
from leakygrad.doctor.stats import ActivationStats, LayerStats, NonfiniteEvent, OpStats, StepRecord

T = Thresholds()


def chain(step, norms, **extra):
    """A record with a chain of weighted layers l0 (input end) .. lN whose output-gradient norms are `norms`."""
    layers = {f"l{i}": LayerStats(f"l{i}", "Linear", i, has_weights=True, out_grad_norm=n) for i, n in enumerate(norms)}
    return StepRecord(step=step, layers=layers, **extra)


def history_of(records, losses=None, **tallies):
    history = History(T)
    for r in records:
        history.add_record(r)
    for step, value in enumerate(losses or []):
        history.add_loss(step, value)
    history.steps = max([r.step for r in records] + [len(losses or [])], default=0) + 1
    for name, value in tallies.items():
        setattr(history, name, value)
    return history


# --- depth ------------------------------------------------------------------------------------------------------
def test_vanishing_across_depth_names_the_input_end_and_measures_the_factor():
    history = history_of([chain(s, [1e-7, 1e-5, 1e-3, 1e-1, 1.0]) for s in range(0, 80, 10)])
    [f] = depth_rule(history, T)
    assert (f.symptom, f.where, f.severity, f.first_step) == ("vanishing_gradient", "l0", "error", 0)
    assert f.evidence["ratio"] == pytest.approx(1e-7)
    assert f.evidence["mean_factor_per_layer"] == pytest.approx(10 ** (-7 / 4), rel=1e-2)
    assert f.evidence["backward_gain_by_layer"]["l0"] == pytest.approx(0.01)


def test_a_gradient_lost_through_one_layer_names_that_layer_not_the_input_end():
    """A LayerNorm over the one-unit output returns its bias whatever its input: the gradient falls by 1e-5 through
    it and by nothing anywhere else. Named at the input end, with remedies for depth (init, normalisation between
    layers), the finding pointed away from the cause."""
    records = [chain(s, [6e-6, 3e-6, 6e-6, 9e-6, 0.5]) for s in range(0, 50, 10)]
    for r in records:
        r.layers["l4"].kind = "LayerNorm"
    [f] = depth_rule(history_of(records), T)
    assert (f.symptom, f.where, f.evidence["through_one_layer"]) == ("vanishing_gradient", "l4", "l4")
    assert f.evidence["through_one_layer_kind"] == "LayerNorm" and f.evidence["input_layer"] == "l0"
    [f] = diagnose(history_of(records))
    assert "passing back through `l4` (LayerNorm)" in f.explanation and "depth of the network is not" in f.explanation
    assert f.remedies[0].startswith("Remove the normalisation `l4`")
    for r in records:  # a tanh between l3 and l4 (saturated): the activation rules name it, the depth rule does not
        r.activations["tanh after l3"] = ActivationStats("tanh after l3", "tanh", 8, 64, depth=3.5)
    [f] = depth_rule(history_of(records), T)
    assert f.where == "l0" and "through_one_layer" not in f.evidence
    spread = [chain(s, [1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0]) for s in range(0, 50, 10)]  # a factor 10 at every layer
    [f] = depth_rule(history_of(spread), T)
    assert f.where == "l0" and "through_one_layer" not in f.evidence


def test_exploding_across_depth_and_the_band_between_is_quiet():
    exploding = history_of([chain(s, [1e4, 1e2, 1.0]) for s in range(5)])
    [f] = depth_rule(exploding, T)
    assert (f.symptom, f.severity) == ("exploding_gradient", "error")
    healthy = history_of([chain(s, [0.2, 0.5, 1.0, 3.0]) for s in range(5)])
    assert depth_rule(healthy, T) == []


@pytest.mark.parametrize("function, derivative, leads", [("sigmoid", 0.2, "Replace"), ("tanh", 0.995, "Initialise")])
def test_a_squashing_function_is_blamed_first_only_when_its_derivative_is_small(function, derivative, leads):
    """10 tanh layers whose mean tanh' is 0.995, the weights shrinking the gradient: the first remedy was to replace
    tanh by ReLU, though the text reported a derivative of 0.995."""

    def step(s):
        record = chain(s, [1e-5, 1e-3, 1e-1, 1.0])
        record.activations = {"a": ActivationStats("a", function, 8, 64, mean_derivative=derivative)}
        return record

    [f] = diagnose(history_of([step(s) for s in range(0, 50, 10)]), T)
    assert f.symptom == "vanishing_gradient" and f.remedies[0].startswith(leads)
    assert ("the weights are, initialised too small" in f.explanation) == (function == "tanh")


def test_depth_is_not_judged_on_the_few_steps_a_trickle_reaches_the_input_end():
    """Dead units above l0 give it an exactly-zero gradient on most steps (then the chain is too short to measure) and
    a trickle on a few: the ratio came from those few, the names from the last step, and a vanishing warning
    contradicted itself ('2 layers'). Measured on most steps, the same trickle is still judged."""
    trickle_steps = (310, 340, 370)  # 3 of the 10 recent records (the last quarter of 40)
    records = [chain(s, [1e-6 if s in trickle_steps else 0.0, 0.05, 0.1]) for s in range(0, 400, 10)]
    assert depth_rule(history_of(records), T) == []
    [f] = depth_rule(history_of([chain(s, [1e-6, 0.05, 0.1]) for s in range(0, 400, 10)]), T)
    assert (f.symptom, f.evidence["layers"]) == ("vanishing_gradient", 3)


def test_depth_needs_enough_layers_and_records():
    assert depth_rule(history_of([chain(s, [1e-9, 1.0]) for s in range(5)]), T) == []  # two layers: no trend
    assert depth_rule(history_of([chain(0, [1e-9, 1e-5, 1.0])]), T) == []  # one sampled step: no diagnosis


def test_onset_is_where_the_condition_starts_to_hold():
    records = [chain(s, [1.0, 1.0, 1.0]) for s in range(0, 50, 10)]
    records += [chain(s, [1e-8, 1e-4, 1.0]) for s in range(50, 120, 10)]
    [f] = depth_rule(history_of(records), T)
    assert f.first_step == 50
    # a single early blip does not move the onset back
    steps = [StepRecord(step=s) for s in range(10)]
    verdicts = {0: True, 1: False, 2: False, 3: False, 4: False, 5: True, 6: True, 7: True, 8: True, 9: True}
    assert onset(steps, lambda r: verdicts[r.step], 0.75) == 5


def test_a_leak_that_healed_is_not_reported():
    records = [chain(s, [1e-8, 1e-4, 1.0]) for s in range(0, 40, 10)]
    records += [chain(s, [0.5, 0.8, 1.0]) for s in range(40, 200, 10)]
    assert depth_rule(history_of(records), T) == []


# --- time -------------------------------------------------------------------------------------------------------
def recurrent(step, norms, name="rnn"):
    layer = LayerStats(name, "RNN", 0, has_weights=True, recurrent=True, out_grad_norm=1.0, time_grad_norms=norms)
    return StepRecord(step=step, layers={name: layer})


def test_vanishing_over_time_names_the_early_steps():
    norms = [0.5**k for k in range(39, -1, -1)]  # halves at every step back in time
    [f] = time_rule(history_of([recurrent(s, norms) for s in range(5)]), T)
    assert (f.symptom, f.where) == ("vanishing_gradient", "rnn (time steps 0-3 of 40)")
    assert f.evidence["mean_factor_per_time_step"] == pytest.approx(0.5, rel=0.05)


def test_vanishing_over_time_is_an_error_only_when_the_loss_stalls_too():
    norms = [0.7**k for k in range(49, -1, -1)]  # early/late ~ 2e-7: between the warning and error thresholds
    records = [recurrent(s, norms) for s in range(5)]
    [learning] = time_rule(history_of(records, losses=[2.0 - 0.01 * k for k in range(60)]), T)
    assert learning.severity == "warning"
    [stuck] = time_rule(history_of(records, losses=[0.69] * 60), T)
    assert stuck.severity == "error" and stuck.evidence["loss_stalled"] is True
    # far past the error threshold too: a GRU forecasting from the last two inputs needs nothing from step 0
    norms = [0.5**k for k in range(49, -1, -1)]  # early/late ~ 1e-14
    records = [recurrent(s, norms) for s in range(5)]
    [learning] = time_rule(history_of(records, losses=[2.0 - 0.01 * k for k in range(60)]), T)
    assert learning.severity == "warning"  # (it was an error on a model that solved its task)
    [stuck] = time_rule(history_of(records, losses=[0.69] * 60), T)
    assert stuck.severity == "error"


def test_exploding_over_time_and_a_flat_profile():
    growing = [1.5**k for k in range(39, -1, -1)]
    [f] = time_rule(history_of([recurrent(s, growing) for s in range(5)]), T)
    assert (f.symptom, f.severity) == ("exploding_gradient", "error")
    assert time_rule(history_of([recurrent(s, [1.0] * 40) for s in range(5)]), T) == []


# --- growth -------------------------------------------------------------------------------------------------------
def test_gradient_growing_step_over_step():
    records = []
    for s in range(20):
        r = chain(s * 10, [1.0, 1.0, 1.0])
        r.grad_norm = 10.0 ** (s / 3)
        r.layers["l1"].param_grad_norm = r.grad_norm
        r.layers["l0"].param_grad_norm = 1.0
        records.append(r)
    [f] = growth_rule(history_of(records), T)
    assert (f.symptom, f.where, f.evidence["across"]) == ("exploding_gradient", "l1", "steps")
    assert f.evidence["growth"] > 1e4 and f.severity == "error"


def test_gradient_back_to_its_first_size_after_a_dip_is_no_growth():
    """Class-incremental learning: the first task (two classes) is learnt to a loss of ~0 within a few steps, its
    gradient falls to 1e-9, and the next task brings it back to an ordinary size, below the first step's. The median
    of the first records is the dip's; grown from there by 1e7, it was an `exploding_gradient` error."""
    norms = [1.6, 1.5e-9, 2.6e-9, 1.6e-6, 2.7e-8] + [0.02, 0.05, 0.03] * 5
    records = []
    for s, norm in enumerate(norms):
        r = chain(s * 10, [1.0, 1.0, 1.0])
        r.grad_norm = r.layers["l1"].param_grad_norm = norm
        records.append(r)
    assert growth_rule(history_of(records), T) == []
    records[0].grad_norm = 1e-3  # (the same dip with a first step smaller than the end's: growth, as before)
    [f] = growth_rule(history_of(records), T)
    assert f.evidence["across"] == "steps" and f.evidence["grad_norm_start"] == pytest.approx(2.6e-9)
    # a large first gradient (a large loss at step 0), then growth from 1 to 500: growth, not a dip back (the review)
    norms = [800.0, 1.0, 1.2] + [10.0 ** (k / 6) for k in range(len(records) - 3)]
    for r, norm in zip(records, norms):
        r.grad_norm = r.layers["l1"].param_grad_norm = norm
    [f] = growth_rule(history_of(records), T)
    assert f.evidence["growth"] > 100


# --- activations --------------------------------------------------------------------------------------------------
def relu_site(step, dead, examples=512, units=100):
    stats = ActivationStats("net.1", "relu", units, 64, zero_fraction=0.9, dead_fraction=dead, depth=1.5)
    stats.window_examples = examples
    return StepRecord(step=step, activations={"net.1": stats})


def test_dead_relu_thresholds_and_minimum_evidence():
    [f] = dead_relu_rule(history_of([relu_site(s, 0.8) for s in range(5)]), T)
    assert (f.symptom, f.where, f.severity, f.evidence["dead_units"]) == ("dead_relu", "net.1", "error", 80)
    [w] = dead_relu_rule(history_of([relu_site(s, 0.5) for s in range(5)]), T)
    assert w.severity == "warning"
    assert dead_relu_rule(history_of([relu_site(s, 0.05) for s in range(5)]), T) == []
    assert dead_relu_rule(history_of([relu_site(s, 1.0, examples=32) for s in range(5)]), T) == []  # too few seen


def test_dead_unit_warnings_at_many_sites_are_one_warning_naming_the_others():
    """A deep plain ReLU net with half the units of 16 blocks dead gave 16 warnings (sweep 22, f09): one now, at the
    first site, the others listed; an error stays one per site."""

    def sites(step, dead_by_site):
        activations = {}
        for i, (site, dead) in enumerate(dead_by_site.items()):
            stats = ActivationStats(site, "relu", 100, 64, zero_fraction=0.9, dead_fraction=dead, depth=i + 0.5)
            stats.window_examples = 512
            activations[site] = stats
        return StepRecord(step=step, activations=activations)

    many = {f"blocks.{i}.relu": 0.5 for i in (2, 10, 3, 7, 11)} | {"blocks.12.relu": 0.9}
    findings = dead_relu_rule(history_of([sites(s, many) for s in range(5)]), T)
    assert sorted((f.where, f.severity) for f in findings) == [
        ("blocks.12.relu", "error"),
        ("blocks.2.relu", "warning"),
    ]
    warning = next(f for f in findings if f.severity == "warning")
    assert list(warning.evidence["also_dead"]) == ["blocks.3.relu", "blocks.7.relu", "blocks.10.relu", "blocks.11.relu"]
    few = {"a.relu": 0.5, "b.relu": 0.5}
    assert len(dead_relu_rule(history_of([sites(s, few) for s in range(5)]), T)) == 2


def test_history_folds_unit_masks_into_dead_fractions_over_a_window():
    history = History(T)
    for step in range(10):
        active = bytes([1, 0, 0, 0]) if step < 9 else bytes([0, 0, 0, 1])  # unit 0 active until the last step
        stats = ActivationStats("a", "relu", 4, 64, unit_active=active)
        history.add_record(StepRecord(step=step, activations={"a": stats}))
    last = history.records[-1].activations["a"]
    assert last.dead_fraction == pytest.approx(0.5)  # units 0 and 3 were active within the window
    assert last.window_examples == 64 * T.dead_window
    assert last.unit_active is None  # folded: records do not keep masks


def test_a_dead_layer_is_dated_from_the_start_of_the_window_that_first_showed_it():
    history = History(T)
    for step in range(0, 400, 16):  # sampled every 16 steps; every unit silent from step 32 on
        active = bytes([1, 1, 1, 1]) if step < 32 else bytes(4)
        stats = ActivationStats("net.1", "relu", 4, 64, unit_active=active)
        history.add_record(StepRecord(step=step, activations={"net.1": stats}))
    history.steps = 400
    [f] = dead_relu_rule(history, T)
    assert f.first_step == 32  # (it was the step when the window had filled with silent steps: 144)


def test_units_dead_from_the_first_steps_are_blamed_on_the_start_not_the_learning_rate():
    """A bias initialised far negative: every unit dead from step 0, before any update. 'Lower the learning rate'
    came first among the remedies; a layer that died at step 32 still gets it."""

    def silent_from(first_dead):
        history = History(T)
        for step in range(0, 400, 16):
            active = bytes([1, 1, 1, 1]) if step < first_dead else bytes(4)
            history.add_record(
                StepRecord(
                    step=step, activations={"net.1": ActivationStats("net.1", "relu", 4, 64, unit_active=active)}
                )
            )
        history.steps = 400
        return diagnose(history)

    [f] = silent_from(0)
    assert f.first_step == 0 and f.evidence["dead_from_start"] is True
    assert "not the learning rate" in f.explanation and f.remedies[0].startswith("Initialise with")
    assert not any("Lower the learning rate" in r for r in f.remedies)
    [later] = silent_from(32)
    assert "dead_from_start" not in later.evidence and later.remedies[0].startswith("Lower the learning rate")


def test_units_that_fired_at_the_first_step_and_died_within_the_first_window_are_put_on_the_updates():
    """Sweep 33: Adam at the SGD rate of 0.1. Half a layer fired at step 0, with the initial weights, and the rest died
    in the first updates, inside the first window measured: told as "dead from the start", the initialisation's doing,
    and the lower rate dropped from the remedies. The first step's units say which: those that fired then and are
    silent now died since."""
    history = History(T)
    for step in range(0, 400, 16):
        active = bytes([1, 1, 0, 0]) if step == 0 else bytes(4)
        history.add_record(
            StepRecord(step=step, activations={"net.1": ActivationStats("net.1", "relu", 4, 64, unit_active=active)})
        )
    history.steps = 400
    [f] = diagnose(history)
    assert f.first_step == 0 and "dead_from_start" not in f.evidence
    assert f.evidence["died_after_first_step"] == 0.5
    assert f.remedies[0].startswith("Lower the learning rate")
    assert "50% of the units fired for some example at the first sampled step" in f.explanation


def test_units_dead_from_the_start_stay_so_when_more_of_the_layer_dies_much_later():
    """The review's case: half a layer silent from step 0 (the initialisation's doing), three more units dying at step
    1200. Judged from the last window, the late deaths counted as units that fired at the first step and died: the
    finding said they died within the first window, and dropped the start. Only the steps right after the first
    count."""
    history = History(T)
    for step in range(0, 2400, 16):
        active = bytes([0] * 5 + [1] * 5) if step < 1200 else bytes([0] * 8 + [1] * 2)
        history.add_record(
            StepRecord(step=step, activations={"net.1": ActivationStats("net.1", "relu", 10, 64, unit_active=active)})
        )
    history.steps = 2400
    [f] = diagnose(history)
    assert f.first_step == 0 and f.evidence["dead_from_start"] is True
    assert "died_after_first_step" not in f.evidence and f.remedies[0].startswith("Initialise with")


def test_a_layer_whose_first_step_is_a_new_width_is_judged_from_that_step():
    """The first step's mask is the site's first at its current width: a layer widened during the run starts again."""
    history = History(T)
    for step in range(0, 400, 16):
        units = 4 if step < 64 else 6
        active = bytes([1] * units) if step < 64 else bytes(units)  # the new units silent from their first step
        history.add_record(
            StepRecord(
                step=step, activations={"net.1": ActivationStats("net.1", "relu", units, 64, unit_active=active)}
            )
        )
    assert history.records[-1].activations["net.1"].died_after_first_step == 0.0


def test_units_dead_from_the_start_stay_so_when_the_onset_comes_from_before_a_thinning():
    """A long run with statistics on every step thins its records, and before each thinning the findings' onsets are
    kept. Units dead from step 0, alive for a while later, then dead again: the onset kept was step 0, but "dead from
    the start" was judged from the records left, whose onset had moved on, and the remedies turned to "Lower the
    learning rate" (sweep 32's MobileNet, its squeeze-excitation units off from step 0: right at every 16, wrong at
    every step)."""
    doctor = Doctor(every=1)
    for step in range(600):
        active = bytes([1, 1, 1, 1]) if 160 <= step < 330 else bytes(4)
        doctor.record(
            StepRecord(step=step, activations={"net.1": ActivationStats("net.1", "relu", 4, 64, unit_active=active)})
        )
    doctor.history.steps = 600
    assert doctor.history.onsets[("dead_relu", "net.1")] == 0  # (kept at the first thinning)
    [f] = doctor.findings
    assert f.first_step == 0 and f.evidence["dead_from_start"] is True
    assert f.remedies[0].startswith("Initialise with")


@pytest.mark.parametrize("learning", [True, False])
def test_dead_units_in_a_run_that_learns_are_not_told_to_lower_the_rate_first(learning):
    """Half the units of a layer dead in a run whose loss fell to a tenth: sweep 32's healthy Adam MLPs (lr 1e-3) had
    0.42-0.57 dead, and the first remedy, a lower rate, made all of them worse at the same number of steps (the live
    units carry the task). Other activations come first then, and the rate last, with that said; a run that does not
    learn keeps the rate first."""
    history = History(T)
    for step in range(0, 400, 16):
        stats = ActivationStats("net.1", "relu", 4, 64, unit_active=bytes([1, 1, 0, 0]) if step else bytes([1] * 4))
        history.add_record(StepRecord(step=step, activations={"net.1": stats}))
    for step in range(400):
        history.add_loss(step, 2.0 / (1 + step / 10) if learning else 2.0)
    history.steps = 400
    [f] = [f for f in diagnose(history) if f.symptom == "dead_relu"]
    assert f.severity == "warning"
    if not learning:
        assert f.remedies[0].startswith("Lower the learning rate")
        return
    assert f.evidence["loss_last_third_to_first_step"] < 0.1 and "the live units carry the task" in f.explanation
    assert f.remedies[0].startswith("Use LeakyReLU") and f.remedies[-1].startswith("Lower the learning rate only if")


def squash(step, fraction, depth=1.5):
    stats = ActivationStats("net.1", "tanh", 10, 64, saturated_fraction=fraction, mean_derivative=0.02, depth=depth)
    layers = {
        "net.0": LayerStats("net.0", "Linear", 0, has_weights=True),
        "net.2": LayerStats("net.2", "Linear", 2, True),
    }
    return StepRecord(step=step, activations={"net.1": stats}, layers=layers)


def test_saturation_but_not_of_the_output_probability():
    [f] = saturation_rule(history_of([squash(s, 0.9) for s in range(5)]), T)
    assert (f.symptom, f.where, f.severity) == ("saturated_activation", "net.1", "error")
    assert saturation_rule(history_of([squash(s, 0.3) for s in range(5)]), T) == []
    assert saturation_rule(history_of([squash(s, 0.95, depth=3) for s in range(5)]), T) == []  # after the last layer


@pytest.mark.parametrize("fraction", [0.6, 0.9])
def test_hidden_units_saturated_in_a_run_that_learns_are_a_warning_at_most(fraction):
    """A pointer network's scoring tanh saturates as the pointer sharpens, while the loss falls 1.3 -> 0.035. In a
    run whose loss fell below a tenth of its start, a saturation at the error level is a warning (the gradient still
    gets through to train), and one at the warning level stays one (most outputs flat is said, as the issue asks). In
    a run that does not learn, and in one whose loss fell only from an inflated start (13 -> 5.5 on ten classes, a
    saturating initialisation), the error stands."""
    records = [squash(s, fraction) for s in range(0, 60, 6)]
    level = "error" if fraction > T.saturated_error else "warning"
    stalled = [1.3 - 1e-4 * step for step in range(60)]
    inflated = [13 - 7.5 * min(1.0, step / 20) for step in range(60)]
    learning = [1.3 * 0.9**step for step in range(60)]
    assert [f.severity for f in saturation_rule(history_of(records, losses=stalled), T)] == [level]
    assert [f.severity for f in saturation_rule(history_of(records, losses=inflated), T)] == [level]
    [f] = saturation_rule(history_of(records, losses=learning), T)
    assert f.severity == "warning" and f.evidence["loss_last_third_to_first_step"] < T.saturated_but_learning
    assert "The loss still fell to" in explain(f).explanation


@pytest.mark.parametrize("targets_rms", [0.45, 30.0])
def test_a_saturation_grown_under_raw_inputs_and_small_targets_names_the_inputs_not_the_targets(targets_rms):
    """Sweep 48: an autoencoder given raw 0-16 pixel counts (a feature of RMS 12.8), its targets in [0, 1]: its tanh
    bottleneck saturated in training, and the remedy was to normalise the regression targets, already in [0, 1]."""

    def record(step, fraction):
        r = squash(step, fraction)
        r.loss_ops = ["mse_loss"]
        if step == 0:
            r.input_scale = {"layer": "net.0", "largest": 12.8, "smallest": 0.0}
            r.target_scale = {"loss": "mse_loss", "target_rms": targets_rms, "prediction_rms": 0.1}
        return r

    records = [record(0, 0.05)] + [record(s, 0.7) for s in range(6, 60, 6)]
    [f] = saturation_rule(history_of(records), T)
    assert f.evidence["inputs_unscaled"] == {"layer": "net.0", "largest_column_rms": 12.8}
    assert ("regression_loss_ops" in f.evidence) is (targets_rms > T.small_targets)
    explained = explain(f)
    assert explained.remedies[0].startswith("Standardise the inputs")
    assert any("Normalise the regression targets" in r for r in explained.remedies) is (targets_rms > T.small_targets)


# --- ops, parameters, resets, NaN ------------------------------------------------------------------------------------
def test_blocked_gradient_is_named_by_the_op():
    records = [StepRecord(step=s, ops={"clamp@loss": OpStats("clamp", "loss", 0.95, 64)}) for s in range(5)]
    [f] = blocked_rule(history_of(records), T)
    assert (f.symptom, f.where, f.severity, f.evidence["site"]) == ("blocked_gradient", "clamp", "error", "loss")
    mild = [StepRecord(step=s, ops={"clamp@loss": OpStats("clamp", "loss", 0.2, 64)}) for s in range(5)]
    assert blocked_rule(history_of(mild), T) == []


def test_no_gradient_groups_parameters_into_the_widest_silent_module():
    record = StepRecord(
        step=0,
        param_has_grad={"enc.0.weight": False, "enc.0.bias": False, "enc.2.weight": False, "head.weight": True},
        param_module={"enc.0.weight": "enc.0", "enc.0.bias": "enc.0", "enc.2.weight": "enc.2", "head.weight": "head"},
        graph_cuts=[("enc", "head")],
    )
    history = history_of([record, StepRecord(step=1, param_has_grad=dict(record.param_has_grad))])
    [f] = no_gradient_rule(history, T)
    assert (f.symptom, f.where, f.evidence["parameter_count"]) == ("no_gradient", "enc", 3)
    assert f.evidence["graph_cuts"] == [{"from": "enc", "to": "head", "first_step": 0}]
    once = history_of([record])
    assert no_gradient_rule(once, T) == []  # a single sampled step is not enough


def test_gradients_cleared_after_backward_are_named_as_such_and_the_model_by_its_name():
    def record(step, held_after_backward=True):
        layers = {name: LayerStats(name, "Linear", i, has_weights=True, out_grad_norm=0.02) for i, name in
                  enumerate(["model.0", "model.2"])}  # fmt: skip
        return StepRecord(
            step=step,
            layers=layers,
            param_has_grad={"0.weight": False, "2.weight": False},
            param_module={"0.weight": "model.0", "2.weight": "model.2"},
            grads_after_backward=held_after_backward,
        )

    [f] = no_gradient_rule(history_of([record(0), record(16)], watched=["model", "SGD"], models=["model"]), T)
    assert (f.where, f.severity) == ("model", "error")  # (it was "(model)")
    assert f.evidence["gradient_at_output"] == {"layer": "model.0", "norm": 0.02}
    [unnamed] = no_gradient_rule(history_of([record(0), record(16)]), T)
    assert unnamed.where == "(model)"  # parameters not all under one watched model's name
    [explained] = diagnose(history_of([record(0), record(16)]), T)
    assert "`optimizer.zero_grad()`" in explained.explanation and "cuts the graph" not in explained.explanation
    assert "ran_on_other_tensors" not in explained.evidence


def test_a_layer_reached_whose_parameters_never_held_a_gradient_ran_on_other_tensors():
    """Sweep 48: MAML's fast weights cut from the meta-parameters, `(p - lr * g).detach().requires_grad_()`, run
    through `functional_call`: the gradient reaches the layer's output, and goes to the copies. Told as gradients
    "cleared before the step" by a zero_grad() in the wrong place; but none was there even right after backward."""

    def record(step):
        layers = {"model.0": LayerStats("model.0", "Linear", 0, has_weights=True, out_grad_norm=0.5)}
        return StepRecord(
            step=step, layers=layers, param_has_grad={"0.weight": False}, param_module={"0.weight": "model.0"}
        )

    [f] = diagnose(history_of([record(0), record(16)], watched=["model", "Adam"], models=["model"]), T)
    assert f.symptom == "no_gradient" and f.evidence["ran_on_other_tensors"] is True
    assert "not even right after `loss.backward()`" in f.explanation and "zero_grad" not in f.explanation
    assert "no `.detach()`" in f.remedies[0]


def test_a_module_run_without_grad_is_named_as_such_and_a_reentrant_checkpoint_with_its_fix():
    def record(step, without_grad, in_checkpoint=()):
        return StepRecord(
            step=step,
            param_has_grad={"enc.0.weight": False, "head.weight": True},
            param_module={"enc.0.weight": "enc.0", "head.weight": "head"},
            modules_without_grad=list(without_grad),
            modules_in_reentrant_checkpoint=list(in_checkpoint),
        )

    [f] = no_gradient_rule(history_of([record(0, ["enc", "enc.0"]), record(16, ["enc", "enc.0"])]), T)
    assert (f.where, f.severity, f.evidence["forward_ran"]) == ("enc", "error", "without grad")
    assert "reentrant_checkpoint" not in f.evidence
    [explained] = diagnose(history_of([record(0, ["enc.0"]), record(16, ["enc.0"])]), T)
    assert "torch.no_grad()" in explained.explanation and "cuts the graph" not in explained.explanation
    checkpointed = history_of([record(s, ["enc", "enc.0"], ["enc", "enc.0"]) for s in (0, 16)])
    [f] = no_gradient_rule(checkpointed, T)
    assert f.evidence["reentrant_checkpoint"] is True
    [explained] = diagnose(checkpointed, T)
    assert "use_reentrant=True" in explained.explanation
    assert any("use_reentrant=False" in r for r in explained.remedies)
    # with grad on one of the checked steps, the module's forward is not what cut it off
    [f] = no_gradient_rule(history_of([record(0, ["enc.0"]), record(16, [])]), T)
    assert "forward_ran" not in f.evidence


def test_gradients_no_optimiser_applies_on_every_check_are_reported_per_module():
    stepped = {"net.0.weight": "net.0", "net.0.bias": "net.0"}

    def record(step, not_applied, param_module=stepped):
        return StepRecord(
            step=step, optimizer_checked=True, grads_not_applied=dict(not_applied), param_module=dict(param_module)
        )

    head = {"net.2.weight": "net.2", "net.2.bias": "net.2"}
    [f] = unapplied_rule(history_of([record(s, head) for s in (0, 16, 32)]), T)
    assert (f.symptom, f.where, f.severity) == ("unapplied_gradient", "net.2", "warning")
    # not one of the model's parameters stepped (the optimiser made over another model's): the model, an error
    everything = {**head, **stepped}
    checks = [record(s, everything, {}) for s in (0, 16, 32)]
    [whole] = unapplied_rule(history_of(checks, watched=["net", "SGD"], models=["net"]), T)
    assert (whole.where, whole.severity, whole.evidence["whole_model"]) == ("net", "error", True)
    assert f.evidence["parameters"] == ["net.2.bias", "net.2.weight"] and f.evidence["sampled_steps_checked"] == 3
    # applied on one of the checks (a second optimiser that steps them now and then): not reported
    assert unapplied_rule(history_of([record(0, head), record(16, {}), record(32, head)]), T) == []
    assert unapplied_rule(history_of([record(s, head) for s in (0, 16)]), T) == []  # too few checks to judge
    unchecked = [StepRecord(step=s, grads_not_applied=dict(head)) for s in (0, 16, 32)]  # no optimiser step came
    assert unapplied_rule(history_of(unchecked), T) == []


def test_gradients_not_applied_from_part_way_through_are_reported_from_then():
    """A backbone frozen when the optimiser was made over the trainable parameters, unfrozen at step 200 of 500 and
    never added to it: no gradient before, a gradient thrown away at every check since (sweep 22's f19)."""
    backbone = {"net.0.weight": "net.0", "net.0.bias": "net.0"}
    head = {"net.2.weight": "net.2", "net.2.bias": "net.2"}  # (stepped throughout)

    def check(step, unfrozen_at):
        not_applied = dict(backbone if step >= unfrozen_at else {})
        return StepRecord(step=step, optimizer_checked=True, grads_not_applied=not_applied, param_module=dict(head))

    checks = [check(s, 200) for s in range(0, 500, 16)]
    [f] = unapplied_rule(history_of(checks), T)
    assert (f.where, f.first_step, f.severity) == ("net.0", 208, "warning")
    assert f.evidence["since_step"] == 208 and f.evidence["sampled_steps_since"] == 19
    [explained] = diagnose(history_of([check(s, 200) for s in range(0, 500, 16)]))  # (folding empties the records)
    assert "From step 208 on" in explained.explanation and "add_param_group" in explained.remedies[0]
    # for less than the last third of the run: too short to tell from a parameter another optimiser steps now and then
    assert unapplied_rule(history_of([check(s, 600) for s in range(0, 800, 16)]), T) == []


def test_every_parameter_the_optimiser_steps_frozen_is_an_error_from_the_start_of_that_run():
    def stepped(step, frozen, total=6):
        return StepRecord(step=step, optimizer_parameters=total, optimizer_frozen=frozen)

    records = [stepped(s, 2) for s in range(0, 160, 16)] + [stepped(s, 6) for s in range(160, 400, 16)]
    [f] = frozen_optimizer_rule(history_of(records), T)
    assert (f.symptom, f.where, f.first_step, f.severity) == ("no_gradient", "optimizer", 160, "error")
    # a frozen backbone beside a trainable head: fine
    assert frozen_optimizer_rule(history_of([stepped(s, 4) for s in range(0, 400, 16)]), T) == []
    # the loss's drift after the switch is this finding's doing
    losses = [0.1] * 160 + [2.3 + 0.01 * math.sin(k) for k in range(240)]
    history = history_of([stepped(s, 2) for s in range(0, 160, 16)] + [stepped(s, 6) for s in range(160, 400, 16)])
    for step, value in enumerate(losses):
        history.add_loss(step, value)
    assert [(f.symptom, f.where) for f in diagnose(history)] == [("no_gradient", "optimizer")]


def test_parameters_left_out_one_per_layer_across_many_layers_are_one_finding_about_the_parameter_groups():
    """A no-weight-decay group written with `and` for `or`: every Linear's bias and every LayerNorm's weight in
    neither group. Nine warnings, one per layer, were given for the one mistake (sweep 22, f11)."""
    left_out = {f"net.{i}.bias": f"net.{i}" for i in range(5)} | {"net.5.weight": "net.5"}
    left_out |= {"net.6.weight": "net.6", "net.6.bias": "net.6"}  # (a LayerNorm left out whole, by the same mistake)
    stepped = {f"net.{i}.weight": f"net.{i}" for i in range(5)} | {"net.5.bias": "net.5"}
    layers = {f"net.{i}": LayerStats(f"net.{i}", "LayerNorm" if i >= 5 else "Linear", i) for i in range(7)}

    def check(step, not_applied):
        return StepRecord(
            step=step, optimizer_checked=True, grads_not_applied=dict(not_applied), param_module=dict(stepped),
            layers=dict(layers),
        )  # fmt: skip

    [f] = unapplied_rule(history_of([check(s, left_out) for s in range(0, 64, 16)]), T)
    assert (f.where, f.severity, f.evidence["parameter_count"]) == ("net", "warning", 8)
    assert f.evidence["scattered"] and f.evidence["biases_and_norms"] and len(f.evidence["modules"]) == 7
    [explained] = diagnose(history_of([check(s, left_out) for s in range(0, 64, 16)]))
    assert "parameter groups" in explained.explanation and "param_groups" in explained.remedies[0]
    # with a loss that stalled, each module's finding is an error, and so is the one they merge into (sweep 43: the
    # merge made it a warning)
    stalled = history_of([check(s, left_out) for s in range(0, 64, 16)], losses=[0.7] * 64)
    [merged] = unapplied_rule(stalled, T)
    assert (merged.where, merged.severity) == ("net", "error")
    # whole modules made after the optimiser (an adapter in each block): a module each, as before, not a grouping
    adapters = {f"net.{i}.adapter.weight": f"net.{i}.adapter" for i in range(5)}
    made_after = unapplied_rule(history_of([check(s, adapters) for s in range(0, 64, 16)]), T)
    assert sorted(f.where for f in made_after) == [f"net.{i}.adapter" for i in range(5)]
    few = {"net.0.bias": "net.0", "net.1.bias": "net.1"}  # (two layers: named one by one, as before)
    assert sorted(f.where for f in unapplied_rule(history_of([check(s, few) for s in range(0, 64, 16)]), T)) == [
        "net.0",
        "net.1",
    ]


def test_an_unused_parameter_in_a_used_layer_is_not_said_to_be_cleared():
    layer = LayerStats("net.0", "Linear", 0, True, out_grad_norm=0.5)
    records = [
        StepRecord(
            step=s,
            layers={"net.0": layer},
            param_has_grad={"net.0.weight": True, "net.0.unused": False},
            param_module={"net.0.weight": "net.0", "net.0.unused": "net.0"},
        )
        for s in (0, 16)
    ]
    [f] = no_gradient_rule(history_of(records), T)
    assert "gradient_at_output" not in f.evidence  # (it blamed a zero_grad() in the wrong place)


def test_zero_gradients_behind_a_wholly_dead_layer_are_folded_into_it():
    dead = Finding("dead_relu", "head.1", 0, "error", {"dead_fraction": 1.0})
    zero = {"gradient": "exactly zero", "graph_cuts": []}
    behind = Finding("no_gradient", "stem", 0, "warning", {**zero, "output_gradient": "exactly zero"})
    cut = Finding("no_gradient", "encoder", 0, "error", {"gradient": "none", "graph_cuts": [{"from": "encoder"}]})
    cancels = Finding("no_gradient", "pair", 0, "warning", dict(zero))  # its output gets a gradient: not behind
    assert fold_explained([dead, behind, cut, cancels]) == [dead, cut, cancels]  # (behind: it came with the dead ReLU)
    assert dead.evidence["zero_gradient_modules"] == ["stem"]
    reading = Finding("dead_relu", "head.1", 0, "error", {"dead_fraction": 1.0, "feeds_into": "head.2"})
    reader = Finding("no_gradient", "head.2", 0, "warning", dict(zero))  # reads the zeros: its weights get none
    assert fold_explained([reading, reader, cancels]) == [reading, cancels]
    partly = Finding("dead_relu", "head.1", 0, "error", {"dead_fraction": 0.9})
    assert len(fold_explained([partly, behind])) == 2  # some units alive: the zeros have another cause


def test_accumulating_gradient_when_most_steps_were_not_reset():
    history = history_of([], reset_checks=6, not_reset=6, first_not_reset=1)
    [f] = accumulating_rule(history, T)
    assert (f.symptom, f.first_step) == ("accumulating_gradient", 1)
    assert accumulating_rule(history_of([], reset_checks=6, not_reset=1, first_not_reset=3), T) == []


def test_nonfinite_event_and_a_bare_nonfinite_loss():
    event = NonfiniteEvent(step=7, phase="backward", where="sqrt", op="sqrt", through_where=True)
    [f] = nonfinite_rule(history_of([], nonfinite=event), T)
    assert (f.symptom, f.where, f.first_step, f.evidence["through_where"]) == ("nonfinite", "sqrt", 7, True)
    [bare] = nonfinite_rule(history_of([], losses=[1.0, 0.9, math.nan, math.nan]), T)
    assert (bare.where, bare.first_step) == ("loss", 2)


@pytest.mark.parametrize("through_where", [True, False])
def test_a_nan_through_wheres_untaken_branch_puts_the_double_where_before_log_softmax(through_where):
    """Sweep 48: an attention entropy `where(p > 0, p * log(p), 0)` over a masked softmax: the NaN comes through the
    untaken branch, where p is exactly 0 by the mask, and `log_softmax` (the first remedy) is -inf there all the same;
    the double-where (second) fixes it. Without torch.where, log_softmax stays first."""
    evidence = {"phase": "backward", "value": "nan", "op": "log", "module": "the loss", "exact": True}
    evidence.update(through_where=through_where, log_of_probabilities={"log": "log", "of": "softmax", "at": "the loss"})
    f = explain(Finding("nonfinite", "log", 0, "error", evidence))
    first, second = f.remedies[:2]
    if through_where:
        assert "double-where" in first and "F.log_softmax(z, dim)" in second
    else:
        assert "F.log_softmax(z, dim)" in first and not any("double-where" in r for r in f.remedies)


@pytest.mark.parametrize("first_update", [0.9, 1e-3])
def test_a_vanishing_that_came_after_updates_far_too_large_names_the_learning_rate_first(first_update):
    """Sweep 48: a tiny transformer under Adam at lr 0.1: the first step moved layers by 0.9 of their size, the weights
    grew, and from step 17 a LayerNorm's input spread of 1192 passed the gradient back at 3e-4: told as a layer to
    look at ("LayerNorm(1)?"), the depth not the cause, with the dead ReLUs beside it "not the learning rate"."""

    def record(step, norms, update_ratio=None):
        r = chain(step, norms)
        r.layers["l2"].update_ratio = update_ratio
        return r

    healthy, vanished = [1.0, 1.0, 1.0, 1.0], [1e-6, 1e-5, 1e-3, 1.0]
    records = [record(0, healthy, first_update)] + [record(s, vanished, 1e-4) for s in range(16, 160, 16)]
    [f] = depth_rule(history_of(records), T)
    assert f.symptom == "vanishing_gradient" and f.first_step == 16
    if first_update < T.update_ratio_high:
        assert "updates_far_too_large_before" not in f.evidence
        return
    assert f.evidence["updates_far_too_large_before"] == {"step": 0, "update_ratio": 0.9}
    explained = explain(f)
    assert explained.explanation.startswith("It was not there at the start: it came after updates far too large")
    assert explained.remedies[0].startswith("Lower the learning rate")


def test_records_after_the_first_nan_are_not_judged():
    records = [chain(s, [1.0, 1.0, 1.0]) for s in range(0, 50, 10)]
    records += [chain(s, [math.nan, 1e-9, 1.0]) for s in range(50, 200, 10)]
    history = history_of(records, nonfinite=NonfiniteEvent(step=50, phase="forward", where="log"))
    assert depth_rule(history, T) == []


# --- units all alike --------------------------------------------------------------------------------------------------
def looked(step, spreads, ratio=1e-3, weight_norm=1.0):
    """A record whose layers l0, l1, ... were looked at for alike units: `spreads` of each, 16 units each."""
    layers = {
        f"l{i}": LayerStats(
            f"l{i}", "Linear", i, has_weights=True, update_ratio=ratio, weight_norm=weight_norm, units=16, unit_spread=x
        )
        for i, x in enumerate(spreads)
    }
    return StepRecord(step=step, layers=layers)


def test_units_alike_at_two_looks_apart_while_the_weights_move_are_named_at_the_first_alike_layer():
    history = history_of([looked(0, [0.9, 0.0, 0.0, 1.2]), looked(16, [0.8, 0.0, 3e-7, 1.1])])
    [f] = symmetric_units_rule(history, T)
    assert (f.symptom, f.where, f.first_step, f.severity) == ("stalled_loss", "l1", 0, "error")
    assert f.evidence["units"] == 16 and f.evidence["alike_at_steps"] == [0, 16]
    assert f.evidence["also_alike"] == ["l2"]  # (3e-7: parted by rounding only, still alike)


def test_units_alike_once_or_looked_at_close_together_are_not_enough():
    assert symmetric_units_rule(history_of([looked(0, [0.0])]), T) == []
    assert symmetric_units_rule(history_of([looked(0, [0.0]), looked(8, [0.0])]), T) == []


def test_units_parted_at_the_last_look_are_not_named_and_a_later_alike_run_dates_from_its_start():
    assert symmetric_units_rule(history_of([looked(0, [0.0]), looked(16, [0.0]), looked(32, [0.02])]), T) == []
    [f] = symmetric_units_rule(history_of([looked(s, [0.5 if s == 0 else 0.0]) for s in (0, 16, 32, 64)]), T)
    assert f.first_step == 16


def test_alike_units_drifting_apart_by_rounding_are_still_alike_until_well_apart():
    """A constant-initialised GRU's units part by rounding, slowly: 3.5e-4 after 1092 steps. Found at 300 steps, the
    finding was lost by 3000 (the review); a spread below `parted_units` after alike looks is still one unit."""
    drift = [looked(0, [0.0]), looked(16, [0.0]), looked(512, [3.5e-4]), looked(1024, [4e-3])]
    [f] = symmetric_units_rule(history_of(drift), T)
    assert f.evidence["alike_at_steps"] == [0, 16]
    parted = drift + [looked(2048, [0.05])]
    assert symmetric_units_rule(history_of(parted), T) == []
    never_alike = [looked(0, [3e-4]), looked(16, [3e-4]), looked(32, [3e-4])]  # (small, but never alike: not this)
    assert symmetric_units_rule(history_of(never_alike), T) == []


def test_alike_units_updated_by_hand_count_as_moving_when_their_norm_changes():
    by_hand = [looked(s, [0.0], ratio=None, weight_norm=1.0 + s / 100) for s in (0, 16, 32)]  # (no optimiser)
    [f] = symmetric_units_rule(history_of(by_hand), T)
    assert f.evidence["update_ratio"] is None


def test_alike_units_in_a_network_that_still_learns_much_are_a_warning():
    falling = [2.0 - 1.5 * k / 99 for k in range(100)]
    [f] = symmetric_units_rule(history_of([looked(s, [0.0]) for s in (0, 16, 32, 64)], losses=falling), T)
    assert f.severity == "warning"


def test_alike_units_whose_weights_do_not_move_are_left_to_the_other_rules():
    assert symmetric_units_rule(history_of([looked(0, [0.0], ratio=0.0), looked(16, [0.0], ratio=0.0)]), T) == []
    assert symmetric_units_rule(history_of([looked(0, [0.0], ratio=None), looked(16, [0.0], ratio=None)]), T) == []


def test_the_alike_layer_is_the_stall_and_the_loss_stall_folds_into_it():
    flat = [2.30 + 0.01 * math.sin(k) for k in range(100)]
    findings = diagnose(history_of([looked(s, [0.0]) for s in (0, 16, 32, 64)], losses=flat))
    assert [(f.symptom, f.where) for f in findings] == [("stalled_loss", "l0")]
    assert "same gradient" in findings[0].explanation


# --- the loss --------------------------------------------------------------------------------------------------------
def with_ratio(step, ratio):
    layer = LayerStats("l0", "Linear", 0, has_weights=True, update_ratio=ratio)
    return StepRecord(step=step, layers={"l0": layer})


def test_a_stall_with_every_layer_slow_alike_is_not_told_as_a_gradient_that_does_not_reach_the_others():
    """Adam with eps=1: every layer moves by 2e-5 to 1e-4 of its size per step, within 5x of each other. 'The
    gradient is not reaching the others' was the explanation, which fits a spread of orders of magnitude."""
    flat = [2.30 + 0.01 * math.sin(k) for k in range(100)]

    def layers(step, ratios):
        return StepRecord(
            step=step,
            layers={
                f"l{i}": LayerStats(f"l{i}", "Linear", i, has_weights=True, update_ratio=r)
                for i, r in enumerate(ratios)
            },
        )

    [alike] = diagnose(history_of([layers(s, [2.4e-5, 3.7e-5, 1.1e-4]) for s in range(0, 100, 10)], losses=flat))
    assert "Every layer moves slowly, and alike" in alike.explanation and "Adam's eps" in alike.explanation
    assert "not reaching" not in alike.explanation
    [spread] = diagnose(history_of([layers(s, [1e-7, 3.7e-5, 1e-3]) for s in range(0, 100, 10)], losses=flat))
    assert "not reaching the others" in spread.explanation


def test_diverging_loss_blames_a_learning_rate_far_too_high():
    losses = [1.0 - 0.01 * k for k in range(30)] + [0.7 * 1.2**k for k in range(30)]
    [f] = loss_rule(history_of([with_ratio(s, 0.3) for s in range(0, 60, 10)], losses=losses), T)
    assert (f.symptom, f.severity, f.evidence["learning_rate"]) == ("diverging_loss", "error", "far too high")
    assert 25 <= f.first_step <= 45
    assert "far too high" in diagnose(history_of([with_ratio(0, 0.3)] * 3, losses=losses))[0].explanation


def test_one_batchs_spike_at_the_end_of_a_converged_run_is_no_diverging_loss():
    """Sweep 48: a run resumed from a checkpoint (its loss followed from the resumed model, already low) whose epochs
    end with a batch of 3 examples under BatchNorm, each such batch's loss 30 times the others': the last twentieth of
    the curve held one of them, and its mean read as a rise past 3 times the lowest, an error on a healthy run. The
    end is the median of the last three stretches: a spike in one is no rise, a loss that keeps rising is."""
    converged = [0.07 - 0.0005 * k for k in range(120)]
    spiked = converged[:-1] + [2.0]  # (the last step's batch)
    assert loss_rule(history_of([with_ratio(s, 1e-3) for s in range(0, 120, 10)], losses=spiked), T) == []
    # Nor two spikes in the run when its first step's batch was a lucky one (0.015, the first stretch's mean 0.07):
    # they passed 10 times that one batch's loss, read as a blow-up never recovered from.
    noisy = [0.03 + 0.01 * math.sin(k) for k in range(120)]
    lucky = [0.015] + noisy[1:60] + [1.0] + noisy[61:90] + [1.0] + noisy[91:]
    assert loss_rule(history_of([with_ratio(s, 1e-3) for s in range(0, 120, 10)], losses=lucky), T) == []
    # But a jump inside the first stretch is a blow-up still: 2.3 to 80 at step 12 of 400, never back below 2.3
    early = [2.3] * 12 + [80.0] * 8 + [2.4 + 0.01 * math.sin(k) for k in range(380)]
    [f] = loss_rule(history_of([with_ratio(s, 1e-7) for s in range(0, 400, 16)], losses=early), T)
    assert f.symptom == "diverging_loss" and f.evidence["blew_up_at_step"] == 12 and f.evidence["loss_initial"] == 2.3
    rising = converged[:100] + [0.02 * 1.2**k for k in range(20)]
    [f] = loss_rule(history_of([with_ratio(s, 0.3) for s in range(0, 120, 10)], losses=rising), T)
    assert f.symptom == "diverging_loss"


def test_a_loss_that_rose_from_its_first_step_is_not_said_to_have_fallen():
    """Sweep 43's DP-SGD with its noise 64 times too large: the loss rose from step 0 (2.32, 4.56, 7.25, ...), and the
    finding said "the loss fell to 12.7 (around step 14) ... above where it started (12.7)": the first stretch's mean,
    read as both the lowest point and the start."""
    losses = [2.0 * 1.05**k for k in range(60)]
    [f] = diagnose(history_of([with_ratio(s, 0.3) for s in range(0, 60, 10)], losses=losses))
    assert (f.symptom, f.evidence["loss_initial"]) == ("diverging_loss", 2.0)
    assert f.explanation.startswith("The loss never fell: it rose from 2 at the first step") and "fell to" not in (
        f.explanation
    )
    falls_first = [1.0 - 0.01 * k for k in range(30)] + [0.7 * 1.2**k for k in range(30)]
    [f] = diagnose(history_of([with_ratio(s, 0.3) for s in range(0, 60, 10)], losses=falls_first))
    assert "loss_initial" not in f.evidence and f.explanation.startswith("The loss fell to")


def test_a_loss_that_rises_under_updates_of_a_normal_size_is_a_warning_that_names_moving_targets():
    """An actor-critic's value loss rises as the agent survives longer and its returns grow: the updates are of a
    normal size (1e-3), and an error blaming the learning rate was a false alarm on a healthy run."""
    losses = [2.0 - 0.05 * k for k in range(30)] + [0.5 * 1.1**k for k in range(30)]
    [f] = loss_rule(history_of([with_ratio(s, 1e-3) for s in range(0, 60, 10)], losses=losses), T)
    assert (f.symptom, f.severity, f.evidence["updates_normal_size"]) == ("diverging_loss", "warning", True)
    [f] = diagnose(history_of([with_ratio(s, 1e-3) for s in range(0, 60, 10)], losses=losses))
    assert "targets move with the model" in f.explanation and any("episode return" in r for r in f.remedies)


def test_a_loss_that_rises_while_the_weights_grow_under_normal_updates_names_the_update_itself():
    """Sweep 43's hand-written SGDW with `p.mul_(1 + lr * wd)`: updates of a normal size (6.5e-3), the weights 75 times
    larger by the end, and the warning said the targets move with the model (RL returns). Updates that keep pointing
    along the weights compound; gradient steps do not."""
    losses = [2.0 - 0.05 * k for k in range(30)] + [0.5 * 1.1**k for k in range(30)]

    def grown(step, factor):
        record = with_ratio(step, 5e-3)
        for layer in record.layers.values():
            layer.weight_norm = factor
        return record

    records = [grown(s, 1.0 if s == 0 else 1.2 ** (s / 2)) for s in range(0, 60, 10)]
    [f] = diagnose(history_of(records, losses=losses))
    assert (f.symptom, f.severity, f.evidence["updates_normal_size"]) == ("diverging_loss", "error", True)
    assert f.evidence["weights_grew_by"] > 10 and "wrong sign" in f.explanation
    assert "judge progress by the task" not in " ".join(f.remedies) and "p.mul_(1 - lr * wd)" in f.remedies[0]
    # a regression's weights grow with its targets (sweep 42's TRPO value function: 19.5 times as the returns grew)
    for record in records:
        record.loss_ops = ["mse_loss"]
    [f] = diagnose(history_of(records, losses=losses))
    assert (f.severity, "weights_grew_by" in f.evidence) == ("warning", False)


def test_a_rising_loss_is_not_dated_before_its_lowest_point_by_an_earlier_look():
    """An earlier look at the run (diagnose runs as records are thinned) had a diverging_loss from step 3, on the
    curve as it was then; the loss later fell to its lowest around step 30 and rose from there (sweep 42's TRPO value
    loss: told "from step 113", its own evidence saying lowest at step 1011). The onset kept is not before that."""
    losses = [2.0 - 0.05 * k for k in range(30)] + [0.5 * 1.1**k for k in range(30)]
    history = history_of([with_ratio(s, 1e-3) for s in range(0, 60, 10)], losses=losses)
    history.onsets[("diverging_loss", "loss")] = 3
    [f] = diagnose(history)
    assert f.first_step >= f.evidence["lowest_at_step"] > 3


def test_weights_shrinking_to_nothing_are_told_as_a_weight_decay_too_large_not_a_learning_rate_too_high():
    """weight_decay=0.5 where 5e-4 was meant: every weight shrinks a million times, each update is large next to
    what is left (ratio 0.3), and the verdict was 'learning rate far too high'; the gradient vanishing across depth
    was told as a matter of initialisation."""
    flat = [2.30 + 0.01 * math.sin(k) for k in range(100)]

    def shrinking(step):
        norms = [1e-6, 1e-5, 1e-3, 1e-1, 1.0]  # output gradient norms: vanishing towards the input
        record = chain(step, norms)
        for layer in record.layers.values():
            layer.update_ratio, layer.weight_norm = 0.3, 10.0 * 0.5 ** (step / 5)
        return record

    [vanishing, stalled] = diagnose(history_of([shrinking(s) for s in range(0, 100, 10)], losses=flat))
    assert stalled.symptom == "stalled_loss" and stalled.evidence["learning_rate"] is None
    assert stalled.evidence["weights_shrank_by"] == pytest.approx(2**18, rel=1e-2)
    assert "shrank" in stalled.explanation and stalled.remedies[0].startswith("Check the optimiser's weight_decay")
    assert vanishing.symptom == "vanishing_gradient" and vanishing.evidence["weights_shrank_by"] > 1e5
    assert vanishing.remedies[0].startswith("Check the optimiser's weight_decay")
    steady = [with_ratio(s, 0.3) for s in range(0, 100, 10)]  # the same ratio with weights that keep their size
    [f] = loss_rule(history_of(steady, losses=flat), T)
    assert f.evidence["learning_rate"] == "far too high" and "weights_shrank_by" not in f.evidence


def test_a_loss_that_rises_under_tiny_median_updates_or_after_a_blow_up_stays_an_error():
    """SGD at lr 0.3 blew the loss up to 17 and killed every ReLU: the median ratio is 1e-9 (the dead layers do not
    move), one layer's is 6e-4, so no verdict; that is no 'update of a normal size' (a review found it a warning)."""
    losses = [1.3 - 0.03 * k for k in range(30)] + [17.0] * 3 + [2.31] * 40

    def dead(step):
        record = with_ratio(step, 1e-9)
        record.layers["l1"] = LayerStats("l1", "Linear", 1, has_weights=True, update_ratio=6e-4)
        record.layers["l2"] = LayerStats("l2", "Linear", 2, has_weights=True, update_ratio=1e-9)
        return record

    [f] = loss_rule(history_of([dead(s) for s in range(0, 70, 10)], losses=losses), T)
    assert (f.symptom, f.severity, f.evidence["updates_normal_size"]) == ("diverging_loss", "error", False)


def test_a_saturated_output_sigmoid_is_not_blamed_on_the_hovering_loss_of_a_gan():
    """An output sigmoid in a GAN whose players' mean loss hovers by design: no stall to blame it for (the loss rule
    leaves such losses alone, and so must the saturation rule)."""
    flat = [1.38 + 0.01 * math.sin(k) for k in range(100)]

    def record(step):
        layer = LayerStats("l0", "Linear", 0, has_weights=True, update_ratio=1e-3)
        output = ActivationStats("out", "sigmoid", 1, 64, saturated_fraction=0.95, mean_derivative=0.01, depth=1)
        record = StepRecord(step=step, layers={"l0": layer}, activations={"out": output}, loss_ops=["mse_loss"])
        return record

    records = [record(s) for s in range(0, 100, 10)]
    [f] = saturation_rule(history_of(records, losses=flat), T)  # one stalled loss: the output's flat tail is named
    assert f.where == "out" and f.severity == "warning"  # (a loss with no log that does not improve)
    assert "barely improves" in diagnose(history_of(records, losses=flat))[0].explanation
    for r in records:  # under a log loss the output's saturation is a confident probability: excused
        r.loss_ops = ["log"]
    assert saturation_rule(history_of(records, losses=flat), T) == []
    assert saturation_rule(history_of(records, losses=flat, competing_loss_steps=100), T) == []


def test_no_learning_rate_verdict_from_layers_that_start_from_all_zero_weights():
    """Every layer initialised to zero: the hidden units never fire, the only ratio measured is the output layer's,
    grown from zero, and it said 'learning rate far too high, scale by 0.007'."""
    dead = Finding("dead_relu", "model.1", 0, "error", {"dead_fraction": 1.0, "feeds_from_weights_zero": True})
    stalled = Finding("stalled_loss", "loss", 0, "warning", {"learning_rate": "far too high"})
    fold_explained([dead, stalled])
    assert stalled.evidence["learning_rate"] is None
    alone = Finding("stalled_loss", "loss", 0, "warning", {"learning_rate": "far too high"})
    fold_explained([alone])
    assert alone.evidence["learning_rate"] == "far too high"


def test_a_loss_that_climbs_past_ten_times_its_first_by_stages_is_no_blow_up():
    """A denoising curriculum raises the noise from 0.05 to 1 over the run: the loss climbs from 0.003 to 0.24 by
    stages, with updates of a normal size. Taken for a blow-up, it was an error blaming the learning rate."""
    stages = [0.003 * 1.5**k for k in range(12)]
    losses = [value for value in stages for _ in range(25)]
    [f] = loss_rule(history_of([with_ratio(s, 6e-3) for s in range(0, 300, 10)], losses=losses), T)
    assert f.symptom == "diverging_loss" and "loss_highest" not in f.evidence
    assert (f.severity, f.evidence["updates_normal_size"]) == ("warning", True)


def test_stalled_loss_with_and_without_a_learning_rate_verdict():
    flat = [2.30 + 0.01 * math.sin(k) for k in range(100)]
    [low] = loss_rule(history_of([with_ratio(s, 1e-8) for s in range(0, 100, 10)], losses=flat), T)
    assert (low.symptom, low.severity, low.evidence["learning_rate"]) == ("stalled_loss", "warning", "far too low")
    [normal] = loss_rule(history_of([with_ratio(s, 1e-3) for s in range(0, 100, 10)], losses=flat), T)
    assert normal.evidence["learning_rate"] is None
    learning = [2.3 * 0.99**k for k in range(100)]
    assert loss_rule(history_of([with_ratio(0, 1e-3)], losses=learning), T) == []


def test_a_stall_with_no_update_measured_first_remedies_the_optimisers_parameters():
    """Sweep 48: a deep ensemble run through `stack_module_state` and `vmap`, its optimiser made over the members' own
    parameters, which the forward never reads: no update of the model's weights was measured, and the stall's only
    remedy was to check the inputs and the labels. The first is now to make the optimiser over the tensors the
    forward computes with."""
    flat = [2.30 + 0.01 * math.sin(k) for k in range(100)]
    [f] = diagnose(history_of([StepRecord(step=s) for s in range(0, 100, 10)], losses=flat))
    assert f.symptom == "stalled_loss" and "the optimiser steps none of them" in f.explanation
    assert "params.values()" in f.remedies[0] and "stack_module_state" in f.remedies[0]


def test_a_loss_that_fell_early_and_then_sat_at_its_floor_is_told_as_converged_or_stuck():
    """Logistic regression on labels 20% flipped: the loss falls from 0.76 to 0.57 within the first steps and sits at
    the noise floor for the rest. 'Training is not making progress' misread a run that had converged."""
    losses = [0.76 - 0.019 * k for k in range(10)] + [0.57 + 0.004 * math.sin(k) for k in range(290)]
    [f] = diagnose(history_of([with_ratio(s, 1e-2) for s in range(0, 300, 10)], losses=losses))
    assert f.symptom == "stalled_loss" and f.severity == "warning"
    assert f.evidence["fell_early"]["loss_initial"] == 0.76 and 5 <= f.evidence["fell_early"]["plateau_from_step"] <= 40
    assert "has converged to the floor of a noisy task" in f.explanation and "not making progress" not in f.explanation
    assert any("early stopping" in r for r in f.remedies)
    flat = [2.30 + 0.01 * math.sin(k) for k in range(100)]  # flat from the start: no early fall
    [f] = diagnose(history_of([with_ratio(s, 1e-3) for s in range(0, 100, 10)], losses=flat))
    assert "fell_early" not in f.evidence and "not making progress" in f.explanation


def test_weights_that_never_move_are_a_stall_though_the_loss_wanders_with_the_batches():
    """A learning rate of 0 on small, noisy batches: the thirds' means differ by 5%, more than a stall's 2%, and no
    finding came, though no weight moved at any sampled step."""
    noisy = [5.4 + 0.6 * math.sin(1.7 * k) ** 3 + (0.3 if k > 66 else 0) for k in range(100)]
    still = [StepRecord(step=s, grad_norm=1.0, layers=with_ratio(s, 0.0).layers) for s in range(0, 100, 10)]
    [f] = diagnose(history_of(still, losses=noisy), T)
    assert (f.symptom, f.evidence["learning_rate"], f.evidence["loss_flat"]) == ("stalled_loss", "zero", False)
    assert "moves only with the batches" in f.explanation and "learning rate is zero" in f.explanation
    moving = [StepRecord(step=s, grad_norm=1.0, layers=with_ratio(s, 1e-3).layers) for s in range(0, 100, 10)]
    assert diagnose(history_of(moving, losses=noisy), T) == []  # the same loss with weights moving: not judged
    # steps sized by a line search (LBFGS) that stop after the loss fell are convergence; before it fell, still a stall
    by_line_search = [
        StepRecord(step=s, grad_norm=1.0, layers=with_ratio(s, 0.0).layers, optimizer_checked=True, line_search=True)
        for s in range(0, 100, 10)
    ]
    [f] = diagnose(history_of(by_line_search, losses=noisy), T)
    assert f.evidence["learning_rate"] == "zero"
    fell = [0.5 * 0.8**k for k in range(30)] + [0.5 * 0.8**30] * 70
    assert diagnose(history_of(by_line_search, losses=fell), T) == []


def test_weights_that_stop_moving_part_way_are_a_stall_from_then_though_the_loss_fell_before():
    """ReduceLROnPlateau given mode='max' for a loss cut the learning rate to 1e-7 of its start by step 100 of 400:
    the loss fell early, then only wandered. The thirds' means differed by 5%, and no finding came."""
    losses = [2.3 - 0.004 * k for k in range(100)] + [1.9 + 0.02 * math.sin(k) for k in range(300)]

    def stilled(gradient_after):  # update/weight 1e-3, then 1e-10 from step 112; the gradient's norm 1, then this
        records = [with_ratio(s, 1e-3 if s < 100 else 1e-10) for s in range(0, 400, 16)]
        for r in records:
            r.grad_norm = 1.0 if r.step < 100 else gradient_after
        return records

    cut = stilled(gradient_after=0.8)
    [f] = diagnose(history_of(cut, losses=losses), T)
    assert (f.symptom, f.severity, f.first_step) == ("stalled_loss", "warning", 112)
    assert f.evidence["learning_rate"] == "far too low" and f.evidence["stopped_moving_at_step"] == 112
    assert "stopped making progress part-way" in f.explanation and "ReduceLROnPlateau" in f.remedies[0]
    # the steps stopped with the gradient: a run converged to its minimum (a noiseless fit), not a rate cut
    converged = [2.3 * 0.9**k for k in range(100)] + [1e-13] * 300
    assert diagnose(history_of(stilled(gradient_after=1e-7), losses=converged), T) == []
    # a step decay that stills the weights of a run whose loss had fallen to a sliver of its start (0.6 to 1e-4, the
    # gradient not shrinking as much: sweep 33's MultiStepLR twin) anneals a converged run: no finding
    annealed = [0.6 * 0.9**k for k in range(80)] + [1e-4 * (1 + 0.3 * math.sin(k)) for k in range(320)]
    assert diagnose(history_of(stilled(gradient_after=0.05), losses=annealed), T) == []
    # a schedule annealed to zero stills the weights only at its very end: no finding
    cosine = [with_ratio(s, 1e-4 * (1 + math.cos(math.pi * s / 400)) / 2) for s in range(0, 400, 16)]
    learning = [2.3 * 0.995**k for k in range(400)]
    assert diagnose(history_of(cosine, losses=learning), T) == []


def test_weights_kept_still_by_a_gradient_too_small_to_move_them_are_not_a_learning_rate_of_zero():
    """A sigmoid rounded to exactly 0 or 1 before BCELoss: the gradient is 1e-11 of the weights, lost in float32
    rounding. "The learning rate is zero" was the verdict; the gradient is what is missing."""
    flat = [47.3 + 0.1 * math.sin(k) for k in range(100)]

    def still(grad_norm):
        layer = LayerStats("l0", "Linear", 0, has_weights=True, update_ratio=0.0, weight_norm=10.0)
        layer.param_grad_norm = grad_norm
        return [StepRecord(step=s, grad_norm=grad_norm, layers={"l0": layer}) for s in range(0, 100, 10)]

    [f] = diagnose(history_of(still(1.2e-10), losses=flat), T)
    assert f.symptom == "stalled_loss" and f.evidence["learning_rate"] is None
    assert f.evidence["gradient_to_weights_max"] == 1.2e-11
    assert "too small for a step to change a float32 weight" in f.explanation
    assert any("BCEWithLogitsLoss" in r for r in f.remedies) and "learning rate is zero" not in f.explanation
    [f] = diagnose(history_of(still(0.5), losses=flat), T)  # a gradient that would move them: the learning rate
    assert f.evidence["learning_rate"] == "zero" and "gradient_to_weights_max" not in f.evidence


def test_a_stall_with_no_update_measured_does_not_call_the_updates_normal():
    flat = [2.30 + 0.01 * math.sin(k) for k in range(100)]
    unmeasured = [StepRecord(step=s, layers={"l0": LayerStats("l0", "Linear", 0, True)}) for s in range(0, 100, 10)]
    [f] = diagnose(history_of(unmeasured, losses=flat), T)
    assert f.symptom == "stalled_loss" and f.evidence["update_ratio_median"] is None
    assert "No update of the model's weights was measured" in f.explanation and "normal size" not in f.explanation


def test_a_loss_that_blew_up_and_never_got_below_its_first_step_is_diverging():
    """Adam at lr=1: the loss jumped from 2.31 to thousands at step 1, then fell back to 2.33 (a dead network at
    chance level). Its smoothed start held the jump, so it looked like a loss that fell: no finding."""
    blown = [2.31] + [8000.0, 3000.0, 200.0, 40.0, 6.0] + [2.33 + 0.01 * math.sin(k) for k in range(194)]
    small = [with_ratio(s, 1e-7) for s in range(0, 200, 16)]  # (a broken network's tiny updates: no verdict)
    [f] = diagnose(history_of(small, losses=blown), T)
    assert (f.symptom, f.first_step, f.evidence["blew_up_at_step"], f.evidence["loss_initial"]) == (
        "diverging_loss",
        1,
        1,
        2.31,
    )
    assert f.evidence["learning_rate"] is None and "jumped from 2.31" in f.explanation
    assert not any("Scale the learning rate" in r for r in f.remedies)
    recovered = blown[:6] + [2.3 * 0.99**k for k in range(194)]  # the same jump, then it learns: not judged
    assert loss_rule(history_of(small, losses=recovered), T) == []


def test_competing_losses_of_a_gan_are_not_a_stall_unless_the_weights_stand_still():
    flat = [1.04 + 0.01 * math.sin(k) for k in range(100)]  # a GAN's discriminator and generator losses, averaged
    moving = [with_ratio(s, 1e-3) for s in range(0, 100, 10)]
    assert loss_rule(history_of(moving, losses=flat, competing_loss_steps=100), T) == []  # (it said stalled_loss)
    [alone] = loss_rule(history_of(moving, losses=flat, competing_loss_steps=10), T)  # one optimiser's loss mostly
    assert alone.symptom == "stalled_loss"
    still = [with_ratio(s, 1e-8) for s in range(0, 100, 10)]
    [frozen] = loss_rule(history_of(still, losses=flat, competing_loss_steps=100), T)
    assert (frozen.symptom, frozen.evidence["learning_rate"]) == ("stalled_loss", "far too low")


def test_loss_rules_need_enough_steps():
    assert loss_rule(history_of([], losses=[1.0, 5.0, 50.0]), T) == []


# --- diagnose: the whole pipeline ----------------------------------------------------------------------------------
def test_diagnose_orders_by_severity_and_explains_every_finding():
    records = [chain(s, [1e-8, 1e-4, 1.0]) for s in range(0, 60, 10)]
    for r in records:
        r.ops["round@after l0"] = OpStats("round", "after l0", 0.6, 10)
    findings = diagnose(history_of(records))
    assert [f.severity for f in findings] == sorted([f.severity for f in findings], key=["error", "warning"].index)
    assert all(f.explanation and f.remedies for f in findings)
    assert {f.symptom for f in findings} == {"vanishing_gradient", "blocked_gradient"}


def test_a_failing_rule_becomes_an_internal_note(monkeypatch):
    import leakygrad.doctor.doctor as doctor_module

    def broken(history, thresholds):
        raise ZeroDivisionError("synthetic")

    monkeypatch.setattr(doctor_module, "RULES", (broken,) + doctor_module.RULES)
    doctor = Doctor()
    for record in [chain(s, [1e-8, 1e-4, 1.0]) for s in range(0, 60, 10)]:
        doctor.record(record)
    assert [f.symptom for f in doctor.findings] == ["vanishing_gradient"]  # the other rules still ran
    assert any("broken failed: ZeroDivisionError: synthetic" in n for n in doctor.notes)


def test_findings_validate_their_names():
    with pytest.raises(ValueError, match="unknown symptom 'dead_neuron'"):
        Finding("dead_neuron", "x", 0, "error")
    with pytest.raises(ValueError, match="unknown severity 'fatal'"):
        Finding("dead_relu", "x", 0, "fatal")


def test_thresholds_can_be_tuned():
    records = [chain(s, [0.05, 0.3, 1.0]) for s in range(5)]
    assert depth_rule(history_of(records), T) == []
    strict = Thresholds(depth_vanishing_warning=0.1)
    [f] = depth_rule(history_of(records), strict)
    assert f.severity == "warning"


def test_a_nan_after_a_rising_loss_blames_the_learning_rate():
    history = history_of([chain(s, [1.0, 1.0, 1.0]) for s in range(3)], losses=[1.0, 2.0, 8.0, 60.0, 900.0])
    history.loss.add(5, math.inf)
    [finding] = nonfinite_rule(history, T)
    assert finding.evidence["loss_before"] == [pytest.approx(1.0), pytest.approx(900.0)]
    [explained] = diagnose(history, T)
    assert "rose from 1 to 900" in explained.explanation and "learning rate" in explained.remedies[0]

    calm = history_of([chain(s, [1.0, 1.0, 1.0]) for s in range(3)], losses=[1.0, 0.9, 0.8, 0.7, 0.6])
    calm.loss.add(5, math.nan)
    [explained] = diagnose(calm, T)
    assert "rose from" not in explained.explanation


# --- findings one leak explains, and numbers at the edge ---------------------------------------------------------
def test_a_gradient_that_underflowed_to_zero_is_part_of_the_vanishing_not_a_missing_gradient():
    # 12 layers: the 4 nearest the input get exactly zero (float32 underflow); the chain above them vanishes
    def record(step):
        r = chain(step, [0.0] * 4 + [10.0 ** (-40 + 5 * i) for i in range(8)])
        r.param_has_grad = {f"l{i}.weight": i >= 4 for i in range(12)}
        r.param_zero_grad = {f"l{i}.weight": i < 4 for i in range(12)}
        r.param_module = {f"l{i}.weight": f"l{i}" for i in range(12)}
        return r

    findings = diagnose(history_of([record(s) for s in range(0, 60, 10)]))
    assert [(f.symptom, f.where) for f in findings] == [("vanishing_gradient", "l0")]  # (4 no_gradient warnings)
    [f] = findings
    assert f.evidence["input_layer"] == "l4" and f.evidence["zero_gradient_layers"] == ["l0", "l1", "l2", "l3"]
    assert "of the gradient at `l11`, 7 layers nearer the loss" in f.explanation  # l4 .. l11: 7 apart (it said 8)
    assert "4 layers (`l0` to `l3`) receive a gradient of exactly zero" in f.explanation
    blocked = [record(s) for s in range(0, 60, 10)]
    for r in blocked:  # ... unless an op that blocks the gradient explains the zeros: then they stay findings
        r.ops["round@after l3"] = OpStats("round", "after l3", 1.0, 10)
    zero_grad = [f for f in diagnose(history_of(blocked)) if f.symptom == "no_gradient"]
    assert [(f.where, f.severity) for f in zero_grad] == [(f"l{i}", "error") for i in range(4)]


def test_findings_of_many_layers_are_listed_in_the_layers_order():
    findings = [Finding("no_gradient", f"model.{i}", 0, "warning", {}) for i in (10, 2, 0, 12)]
    assert [f.where for f in sort_findings(findings)] == ["model.0", "model.2", "model.10", "model.12"]


def test_updates_of_exactly_zero_are_a_zero_learning_rate_only_when_gradients_arrive():
    flat = [2.30 + 0.01 * math.sin(k) for k in range(100)]
    moving = [with_ratio(s, 0.0) for s in range(0, 100, 10)]
    for r in moving:
        r.grad_norm = 0.5
    [f] = diagnose(history_of(moving, losses=flat))
    assert f.evidence["learning_rate"] == "zero"
    assert "the learning rate is zero" in f.explanation and "param_groups[0]['lr']" in f.remedies[0]
    still = [with_ratio(s, 0.0) for s in range(0, 100, 10)]
    for r in still:
        r.grad_norm = 0.0  # no gradient at all (a clamp that blocks everything): not the learning rate
    [f] = diagnose(history_of(still, losses=flat))
    assert f.evidence["learning_rate"] is None and "no gradient reaches them" in f.explanation


def test_a_stall_where_most_layers_do_not_move_but_one_does_is_not_called_normal():
    flat = [2.30 + 0.01 * math.sin(k) for k in range(100)]
    records = []
    for step in range(0, 100, 10):
        layers = {f"l{i}": LayerStats(f"l{i}", "Linear", i, has_weights=True, update_ratio=r)
                  for i, r in enumerate([0.0, 0.0, 1e-9, 2e-3])}  # fmt: skip
        records.append(StepRecord(step=step, layers=layers, grad_norm=1.0))
    [f] = diagnose(history_of(records, losses=flat))
    assert "normal size" not in f.explanation and "Most layers barely move" in f.explanation


def test_a_stall_in_a_net_whose_gradient_vanishes_does_not_blame_the_learning_rate():
    flat = [2.30 + 0.01 * math.sin(k) for k in range(100)]
    records = [chain(s, [1e-12, 1e-9, 1e-6, 1e-3, 1.0]) for s in range(0, 100, 10)]
    for r in records:
        for layer in r.layers.values():
            layer.update_ratio = 1e-9  # every layer barely moves
        r.grad_norm = 1.0
    findings = {f.symptom: f for f in diagnose(history_of(records, losses=flat))}
    assert findings["vanishing_gradient"].severity == "error"
    stalled = findings["stalled_loss"]
    assert stalled.evidence["learning_rate"] is None  # (it said "far too low": scale the lr by 1e6)
    assert "the gradient vanishes on its way down" in stalled.explanation
    assert not any("Scale the learning rate" in r for r in stalled.remedies)
    alone = [with_ratio(s, 1e-9) for s in range(0, 100, 10)]  # the same stall without a vanishing gradient
    [f] = diagnose(history_of(alone, losses=flat))
    assert f.evidence["learning_rate"] == "far too low"


def test_a_jump_at_one_end_is_not_an_explosion_over_time():
    first_input_matters = [0.5] + [1.6e-3 * 0.84**k for k in range(11)]  # a GRU whose task is its first input
    padded_tail = [1.0] * 54 + [1e-4] * 6  # the last steps are padding for most sequences
    for norms in (first_input_matters, padded_tail):
        assert time_rule(history_of([recurrent(s, norms) for s in range(5)]), T) == []
    # the same ratios built up along the sequence are an explosion
    for norms in ([1.9**k for k in range(11, -1, -1)], [1.15**k for k in range(59, -1, -1)]):
        [f] = time_rule(history_of([recurrent(s, norms) for s in range(5)]), T)
        assert f.symptom == "exploding_gradient"


def test_a_staircase_of_each_steps_own_loss_gradient_is_not_an_explosion_over_time():
    """Sweep 47's healthy GRU language model under truncated BPTT: each step's own loss gradient jumps up at a few
    steps and the gradient falls back across time between them, early/late ~1e3 with the middle between the ends. A
    recurrent Jacobian above 1 grows it at nearly every step instead."""
    level = [3e-3] * 10 + [1e-4] * 10 + [3e-6] * 12  # three plateaus, each falling back across time within it
    staircase = [x * 1.25 ** (k % 10) for k, x in enumerate(level)]
    assert time_rule(history_of([recurrent(s, staircase) for s in range(5)]), T) == []
    noisy_growth = [1.4**k * (1.3 if k % 5 == 0 else 1.0) for k in range(31, -1, -1)]  # (a few steps fall back)
    [f] = time_rule(history_of([recurrent(s, noisy_growth) for s in range(5)]), T)
    assert f.symptom == "exploding_gradient"


def test_a_gradient_that_underflows_early_is_measured_where_it_is_not_zero():
    norms = [0.0] * 20 + [0.5**k for k in range(39, -1, -1)]
    [f] = [f for f in diagnose(history_of([recurrent(s, norms) for s in range(5)], losses=[0.69] * 60), T)
           if f.symptom == "vanishing_gradient"]  # fmt: skip
    assert f.evidence["zero_before_step"] == 20
    assert f.evidence["mean_factor_per_time_step"] == pytest.approx(0.5, rel=0.01)
    assert "from step 20: before it the gradient has underflowed to exactly 0" in f.explanation


def test_an_explosion_over_time_is_not_blamed_on_the_layer_below_the_recurrent_one():
    """Embedding -> RNN -> head: the embedding's output gradient is the RNN's input gradient summed over time,
    so the RNN's gain over time shows as a gain across depth at the embedding."""
    records = []
    for s in range(5):
        r = chain(s, [])
        r.layers = {
            "emb": LayerStats("emb", "Embedding", 0, has_weights=True, out_grad_norm=1.8e4),
            "rnn": LayerStats(
                "rnn",
                "RNN",
                1,
                has_weights=True,
                recurrent=True,
                out_grad_norm=0.15,
                time_grad_norms=[1.35**k for k in range(39, -1, -1)],
            ),  # fmt: skip
            "head": LayerStats("head", "Linear", 2, has_weights=True, out_grad_norm=0.4),
        }
        records.append(r)
    findings = diagnose(history_of(records), T)
    assert [(f.symptom, f.where) for f in findings] == [("exploding_gradient", "rnn (time steps 0-3 of 40)")]


def test_a_bidirectional_layer_is_not_judged_across_time():
    """Its input gradient sums a forward direction (vanishing towards t = 0) and a backward one (vanishing towards
    t = T-1): large at both ends whichever happens, so early over late would say nothing true."""
    forward, backward = [1.5**k for k in range(39, -1, -1)], [1.0] * 40  # as one direction, this would explode
    norms = [a + b for a, b in zip(forward, backward)]
    assert time_rule(history_of([recurrent(s, norms) for s in range(5)]), T) != []
    records = [recurrent(s, norms) for s in range(5)]
    for r in records:
        r.layers["rnn"].bidirectional = True
    assert time_rule(history_of(records, losses=[0.69] * 60), T) == []


def test_a_stalled_loss_points_to_the_other_findings_or_says_there_are_none():
    stalled = history_of([recurrent(s, [1.0] * 40) for s in range(5)], losses=[0.69] * 60)
    [alone] = diagnose(stalled, T)
    assert alone.symptom == "stalled_loss" and "No other leak was found" in alone.explanation
    vanishing = history_of([recurrent(s, [0.5**k for k in range(39, -1, -1)]) for s in range(5)], losses=[0.69] * 60)
    stalled_too = next(f for f in diagnose(vanishing, T) if f.symptom == "stalled_loss")
    assert "See the other findings: vanishing_gradient." in stalled_too.explanation


def test_the_build_up_over_time_is_judged_on_most_records_not_the_last():
    built_up, jump = [1.5**k for k in range(39, -1, -1)], [1e6] + [1.0] * 39
    [f] = time_rule(history_of([recurrent(s, built_up) for s in range(4)] + [recurrent(4, jump)]), T)
    assert f.symptom == "exploding_gradient"
    assert time_rule(history_of([recurrent(s, jump) for s in range(4)] + [recurrent(4, built_up)]), T) == []


def test_a_stalled_loss_does_not_point_to_a_finding_folded_into_another():
    findings = [
        Finding("vanishing_gradient", "net.0", 0, "error", {"across": "depth", "ratio": 1e-9,
                "zero_gradient_layers": ["net.0"], "grad_norm_by_layer": {}, "backward_gain_by_layer": {}}),
        Finding("no_gradient", "net.0", 0, "warning", {"gradient": "exactly zero"}),  # the vanishing's zeros
        Finding("stalled_loss", "loss", 0, "warning", {}),
    ]  # fmt: skip
    kept = fold_explained(findings)
    assert [f.symptom for f in kept] == ["vanishing_gradient", "stalled_loss"]
    assert kept[1].evidence["other_findings"] == ["vanishing_gradient"]


def test_a_softmax_that_overflowed_is_not_said_to_be_masked():
    from leakygrad.doctor.explain import explain

    finding = Finding("nonfinite", "log_softmax", 3, "error", {"phase": "forward", "op": "log_softmax", "value": "-inf",
                      "exact": True, "module": None, "inside": False})  # fmt: skip
    explained = explain(finding)
    assert "from finite inputs" in explained.explanation
    assert "masked" not in explained.explanation + " ".join(explained.remedies)


def test_weights_moved_only_when_a_gradient_came_through_are_no_learning_rate_of_zero():
    """Most steps had no gradient (a clamp blocked it) and so no update; the few that had one moved the weights. The
    verdict was 'the learning rate is zero', from the per-layer medians of 0 and a gradient at some step."""
    flat = [2.30 + 0.01 * math.sin(k) for k in range(100)]
    records = [StepRecord(step=s, grad_norm=0.0, layers=with_ratio(s, 0.0).layers) for s in range(0, 100, 10)]
    records[8] = StepRecord(step=80, grad_norm=0.5, layers=with_ratio(80, 1e-3).layers)
    [f] = loss_rule(history_of(records, losses=flat), T)
    assert f.symptom == "stalled_loss" and f.evidence["learning_rate"] is None


def test_a_long_run_that_fell_fast_is_not_a_blowup():
    """After 1024 steps the loss buckets merge, and the first bucket's lowest loss stood in for the first step's: a
    loss falling from 2e4 to 1.1 in 20 steps, over 20,000 steps, was a 'blow-up' from 1.02 to 40."""
    losses = [2e4 * 0.5**k + 1.0 + 0.1 * math.sin(k) for k in range(20_000)]
    history = history_of([with_ratio(s, 1e-3) for s in range(0, 20_000, 400)], losses=losses)
    assert history.loss.steps_per_bucket > 1 and history.loss.buckets[0].first == losses[0]
    assert loss_rule(history, T) == []


def test_heavy_clipping_is_named_only_for_a_stall_not_for_a_diverging_loss():
    """'Raise max_norm' beside 'lower the learning rate, and clip' for a diverging run: the clipping verdict belongs
    to a stall, where it is what holds the training back."""
    clipped = [StepRecord(step=s, layers=with_ratio(s, 1e-3).layers, clip_max_norm=1.0, clip_norm=50.0)
               for s in range(0, 100, 10)]  # fmt: skip
    rising = [1.0 - 0.005 * k for k in range(30)] + [0.85 * 1.1**k for k in range(70)]
    [f] = loss_rule(history_of(clipped, losses=rising), T)
    assert f.symptom == "diverging_loss" and f.evidence["learning_rate"] != "clipped"
    assert "clip_max_norm" not in f.evidence and not any("max_norm" in r for r in f.remedies)
    flat = [2.30 + 0.01 * math.sin(k) for k in range(100)]
    [stall] = loss_rule(history_of(clipped, losses=flat), T)
    assert (stall.symptom, stall.evidence["learning_rate"], stall.evidence["clip_max_norm"]) == (
        "stalled_loss",
        "clipped",
        1.0,
    )


@pytest.mark.parametrize("layers", [6, 42])
def test_a_gradient_vanishing_through_dozens_of_plain_layers_puts_residual_connections_first(layers):
    """A 41-layer plain ReLU stack (residual blocks that lost their skip, sweep 27's q02): He initialisation, the first
    remedy given, still left it at chance; the residual connection fixes it. From 20 weighted layers on it comes first;
    a shallow stack keeps the initialisation first."""
    evidence = {"across": "depth", "ratio": 1e-12, "input_layer": "m.0", "output_layer": "m.9", "layers": layers}
    evidence |= {"mean_factor_per_layer": 0.43, "activation_mean_derivative": {"relu": 0.5}, "kinds": ["Linear"]}
    finding = explain(Finding("vanishing_gradient", "m.0", 0, "error", evidence))
    first = "Add residual connections" if layers >= 20 else "Initialise for the activation"
    assert finding.remedies[0].startswith(first)
    assert len(finding.remedies) == 3
    # (a residual net whose skip was detached, x.detach() + f(x), told in two sweep-41 scripts to add what it had)
    [residual] = [r for r in finding.remedies if r.startswith("Add residual connections")]
    assert "`x.detach() + f(x)`" in residual


def test_attention_that_sharpened_after_its_first_look_is_not_saturated_from_the_start():
    """A Hopfield layer with a learned inverse temperature: spread at step 0 (capacity 0.54), one-hot by step 17 as
    it learns to retrieve one pattern. At every 16 the first four looks are steps 0, 17, 34 and 51, and their median
    said "saturated from the start" (sweep 28); `--every 1`, looking at steps 0-3, said nothing."""
    from leakygrad.doctor.rules import attention_saturation_rule

    def history_with(capacities):
        history = history_of([])
        for step, capacity in zip((0, 17, 34, 51), capacities):
            look = {"capacity": capacity, "max_probability": 0.9, "entries": 64, "scale": 1.0}
            history.attention.append((step, {"softmax after q": look}))
        return history

    assert attention_saturation_rule(history_with([0.54, 0.11, 0.11, 0.05]), T) == []
    [f] = attention_saturation_rule(history_with([0.28, 0.24, 0.23, 0.18]), T)  # (scores too large from the start)
    assert (f.symptom, f.where, f.first_step) == ("saturated_activation", "softmax after q", 0)


def test_update_ratios_after_another_model_began_are_of_that_model_alone():
    """A script trains a network, then a linear baseline with an optimiser of its own: the baseline's stall was told
    with the network's layers' update ratios mixed in (sweep 28: `net.*` at 4.2e-3 beside the judged `lin`)."""
    from leakygrad.doctor.rules import update_ratios
    from leakygrad.doctor.stats import LayerStats

    records = []
    for step in range(12):  # (the recent quarter: the last 3 records, 1 of the network's and 2 of the baseline's)
        name = "net.0" if step < 10 else "lin"
        layer = LayerStats(name, "Linear", 0, has_weights=True, update_ratio=4.2e-3 if step < 10 else 2.1e-4)
        records.append(StepRecord(step=step * 10, layers={name: layer}))
    history = history_of(records)
    assert set(update_ratios(history)) == {"net.0", "lin"}  # (the recent records span both)
    history.restart_loss(100)
    assert update_ratios(history) == {"lin": pytest.approx(2.1e-4)}


def test_attention_pooled_over_its_axis_is_judged_on_a_gradient_all_but_exactly_the_same():
    """1.0 for a softmax over the queries then pooled over them; slot attention (a softmax over the slots, by design)
    with slots that start nearly alike measured 0.996 (the review of stop 27: an error that said to use dim=-1)."""
    from leakygrad.doctor.rules import attention_pooled_rule

    def history_with(share):
        history = history_of([])
        for step in (0, 17, 34, 51):
            look = {"capacity": 0.9, "max_probability": 0.3, "entries": 12, "scale": 1.0}
            history.attention.append((step, {"softmax after q": {**look, "gradient_same_along_axis": share}}))
        return history

    assert attention_pooled_rule(history_with(0.996), T) == []
    [f] = attention_pooled_rule(history_with(1.0 - 1e-7), T)
    assert (f.symptom, f.where, f.severity) == ("blocked_gradient", "softmax after q", "error")


@pytest.mark.parametrize("share, severity", [(0.47, None), (0.2, "warning"), (0.05, "error")])
def test_half_precision_updates_rounded_away_are_judged_by_the_share_that_moved(share, severity):
    """A float16 MLP under Adam whose steps changed 47% of the entries a gradient pushed trained to float32's accuracy
    (sweep 29's s04 twin: it was a warning that the layers "barely train"); a bfloat16 one under SGD that changed 3%
    lost half its accuracy."""
    from leakygrad.doctor.rules import rounded_away_rule

    records = []
    for step in range(0, 64, 8):
        record = chain(step, [1e-2, 1e-2])
        record.updated_share, record.half_precision = {"net.0": share, "net.2": share}, "float16"
        records.append(record)
    found = rounded_away_rule(history_of(records), T)
    assert [f.severity for f in found] == ([] if severity is None else [severity])


@pytest.mark.parametrize("scaled_by", [128.0, 2.0])
def test_relus_killed_by_a_custom_backward_many_times_too_large_are_told_as_its_doing(scaled_by):
    """Sweep 43: a softmax cross-entropy written as a custom Function whose backward left out the mean's 1/N (128
    times too large). At every step the dead layers came first, with "lower the learning rate", and nothing tied them
    to the Function's finding. Now they follow it, as warnings that name it; a factor of 2 kills nothing by itself."""
    evidence = {"custom_function": "SoftmaxCE", "site": "model.8", "scaled_by": scaled_by}
    wrong = Finding("wrong_gradient", "SoftmaxCE", 0, "error", evidence)
    dead = Finding(
        "dead_relu", "model.3", 2, "error",
        {"dead_fraction": 1.0, "dead_units": 32, "units": 32, "window_examples": 1001, "zero_fraction": 1.0,
         "feeds_from": "model.2", "function": "relu", "feeds_into": "model.4"},
    )  # fmt: skip
    first, second = sort_findings(fold_explained([dead, wrong]))
    if scaled_by < 10:
        assert (first, second) == (dead, wrong) and "after_wrong_gradient" not in dead.evidence
        return
    assert (first, second) == (wrong, dead) and dead.severity == "warning"
    assert dead.evidence["after_wrong_gradient"] == {"custom_function": "SoftmaxCE", "scaled_by": 128.0}
    explain(dead)
    assert "128 times the true one" in dead.explanation and dead.remedies[0].startswith("Fix `SoftmaxCE`'s backward")


def test_a_head_never_run_is_told_to_check_how_it_is_chosen_and_an_expert_to_balance_the_routing():
    """Sweep 48: a multi-task loop that drew its task with `torch.randint(0, n - 1, ...)` never ran the last head; the
    first remedy was a mixture of experts' load-balancing loss. An expert keeps that first."""

    def never_ran(where):
        evidence = {"parameters": [f"{where}.weight"], "parameter_count": 1, "sampled_steps_checked": 56}
        evidence.update(gradient="none", graph_cuts=[], forward_ran="never")
        return explain(Finding("no_gradient", where, 0, "warning", evidence))

    assert never_ran("heads.ink").remedies[0].startswith("If it is meant to run (a task's head, a branch)")
    assert never_ran("moe.experts.3").remedies[0].startswith("If it is an expert of a mixture")


def test_a_nan_and_a_divergence_after_a_model_left_in_eval_mode_are_told_as_its_doing():
    """Sweep 49: batch norms left in eval mode after a validation pass, a NaN 10 steps later and the loss diverging:
    told as a learning rate far too high (lower it 10x), beside the eval-mode error. What comes after the model
    began training in eval mode is its consequence (a warning), with `model.train()` first; what came before is not."""
    mode = {"model_in_eval_mode": True, "trained_until_step": 17, "eval_since_step": 34, "batch_norms": ["m.1"]}
    evaluating = Finding("wrong_gradient", "model", 34, "error", dict(mode))
    nan = Finding("nonfinite", "native_batch_norm", 26, "error", {"phase": "forward", "value": "nan"})
    loss = {"loss_start": 2.3, "loss_end": 6e3, "loss_lowest": 0.2, "lowest_at_step": 21, "update_ratio_median": 0.01}
    rose = Finding("diverging_loss", "loss", 22, "error", dict(loss))
    earlier = Finding("nonfinite", "log", 5, "error", {"phase": "forward", "value": "inf"})
    kept = fold_explained([evaluating, nan, rose, earlier])
    assert kept == [evaluating, nan, rose, earlier]
    assert [(f.severity, f.evidence.get("after_eval_mode")) for f in (nan, rose, earlier)] == [
        ("warning", "model"),
        ("warning", "model"),
        ("error", None),
    ]
    told = explain(rose)
    assert told.explanation.startswith("This came once `model` trained in eval mode")
    assert told.remedies[0].startswith("Put `model` back in training mode after each evaluation")
    dropouts_only = Finding("wrong_gradient", "model", 34, "warning", {**mode, "batch_norms": []})
    fine = Finding("diverging_loss", "loss", 40, "error", dict(loss))
    fold_explained([dropouts_only, fine])
    assert fine.severity == "error" and "after_eval_mode" not in fine.evidence  # (dropout off does not blow up)
