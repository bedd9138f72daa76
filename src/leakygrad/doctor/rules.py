"""The rules: one function per symptom family, the run's history in, findings out.

A rule reads only the statistics in `History` (plain numbers), never a PyTorch or engine object, and compares
them with the named thresholds of `Thresholds`. It fills `symptom`, `where`, `first_step`, `severity` and
`evidence`; `explain.py` then writes the explanation and remedies from that evidence.

Rules judge the run by its most recent sampled steps (a leak that healed is not reported) and date a finding
from the first sampled step after which the condition held nearly all the time (`Thresholds.persistence`).
"""

from __future__ import annotations

import functools
import math
import re
import statistics
from collections.abc import Callable

from leakygrad.doctor.findings import Finding, natural_key, sort_findings
from leakygrad.doctor.history import History, LossSeries
from leakygrad.doctor.stats import LayerStats, StepRecord
from leakygrad.doctor.thresholds import Thresholds

RELU_FAMILY = ("relu", "relu6", "relu_n", "hardswish", "threshold", "leaky_relu")  # (leaky_relu: of slope 0)
# losses that take the log of a probability: on a sigmoid's output their 1/sigma cancels sigma' (not once it rounds to
# exactly 0 or 1)
LOG_LOSS_OPS = ("log", "log_softmax", "log_sigmoid", "binary_cross_entropy", "nll_loss", "xlogy", "kl_div", "log1p")
SQUASHING = ("sigmoid", "tanh", "hardsigmoid", "hardtanh")


def median(values) -> float:
    values = [v for v in values if v is not None and not math.isnan(v)]
    # statistics.median gives numpy.median's value (the mean of the middle two for an even count) without the
    # cost of converting a short list to an array
    return float(statistics.median(values)) if values else math.nan


def onset(records: list[StepRecord], holds: Callable[[StepRecord], bool | None], persistence: float) -> int | None:
    """The first step from which `holds` is true on at least `persistence` of the records that have a verdict.

    `holds` returns None for records that say nothing (the layer was not measured that step).
    """
    verdicts = [(r.step, holds(r)) for r in records]
    verdicts = [(step, v) for step, v in verdicts if v is not None]
    true_after = 0
    first = None
    for i in range(len(verdicts) - 1, -1, -1):  # walk backwards, counting how often it held from i on
        step, held = verdicts[i]
        true_after += int(held)
        if held and true_after / (len(verdicts) - i) >= persistence:
            first = step
    return first


def _grade(value: float, warning: float, error: float, below: bool) -> str | None:
    """'error', 'warning' or None for a value against two thresholds (below=True: small values are bad)."""
    if math.isnan(value):
        return None
    if below:
        return "error" if value < error else "warning" if value < warning else None
    return "error" if value > error else "warning" if value > warning else None


def _sci(x: float) -> float:
    """A number rounded to 3 significant digits for the evidence (JSON-safe: no NaN/Inf)."""
    if x is None or not math.isfinite(x):
        return None
    return float(f"{x:.3g}")


# --- vanishing / exploding across depth ----------------------------------------------------------------------
def weighted_chain(record: StepRecord, drop_output: bool = False) -> list[LayerStats]:
    """The layers with weights that received a nonzero gradient at their output, nearest the input first (without
    the output-end one, with `drop_output`). When the loss reads the outputs of several of them (a classifier's and a
    reconstruction decoder's, two losses), the chain ends at the one whose output gets the largest gradient: a branch
    called after it, under a loss weighted lightly, is no step further from the loss."""
    chain = [
        layer
        for layer in record.layers.values()
        if layer.has_weights and layer.out_grad_norm is not None and layer.out_grad_norm > 0
    ]
    chain = [layer for layer in chain if math.isfinite(layer.out_grad_norm)]
    chain = sorted(chain, key=lambda layer: layer.depth)
    read = [layer for layer in chain if layer.name in record.layers_read_by_loss]
    if len(read) >= 2:
        end = max(read, key=lambda layer: layer.out_grad_norm)
        chain = [layer for layer in chain if layer.depth <= end.depth]
    return chain[:-1] if drop_output else chain


def depth_ratio(record: StepRecord, t: Thresholds, drop_output: bool = False) -> float | None:
    """||gradient at the input-end layer|| / ||gradient at the output-end layer|| on one step."""
    chain = weighted_chain(record, drop_output)
    if len(chain) < t.depth_min_layers:
        return None
    return chain[0].out_grad_norm / chain[-1].out_grad_norm


def depth_rule(history: History, t: Thresholds) -> list[Finding]:
    recent = history.recent()
    # (an output layer that turns features into targets of raw units, 2e5 dollars, multiplies the gradient back by
    # their scale on purpose: the depth is judged below it)
    drop = _output_in_target_units(history, t)
    measured = [(r, x) for r, x in zip(recent, [depth_ratio(r, t, drop) for r in recent]) if x is not None]
    # Judged on most steps, or not at all: a chain long enough on a few steps only (a layer reached by a trickle of
    # gradient through units that are dead on most steps) measures those few steps, not the network.
    if len(measured) < t.min_records or 2 * len(measured) < len(recent):
        return []
    ratio = median([x for _, x in measured])
    vanishing = _grade(ratio, t.depth_vanishing_warning, t.depth_vanishing_error, below=True)
    exploding = _grade(ratio, t.depth_exploding_warning, t.depth_exploding_error, below=False)
    severity = vanishing or exploding
    if severity is None:
        return []
    symptom = "vanishing_gradient" if vanishing else "exploding_gradient"
    threshold = t.depth_vanishing_warning if vanishing else t.depth_exploding_warning

    def holds(record):
        x = depth_ratio(record, t, drop)
        return None if x is None else (x < threshold if vanishing else x > threshold)

    last = measured[-1][0]  # (the chain the ratio was measured on: the last step with one)
    chain = weighted_chain(last, drop)
    names = [layer.name for layer in chain]
    if exploding and _normalised_updates_even(history, chain, t):
        return []
    # Vanished completely: layers nearer the input whose gradient arrived as exactly zero (float32 underflows
    # below about 1e-45), left out of the chain, which measures ratios of nonzero norms.
    zeroed = sorted(
        (layer for layer in last.layers.values() if layer.has_weights and layer.out_grad_norm == 0)
        if vanishing
        else (),
        key=lambda layer: layer.depth,
    )
    zeroed = [layer.name for layer in zeroed if layer.depth < chain[0].depth]
    norms = {name: median(_layer_values(recent, name, "out_grad_norm")) for name in names}
    gains = {}
    for lower, upper in zip(names, names[1:]):
        if norms[upper] > 0:
            gains[lower] = _sci(norms[lower] / norms[upper])
    per_layer = ratio ** (1 / (len(names) - 1)) if len(names) > 1 and ratio > 0 else math.nan
    derivatives = _mean_derivatives(recent)
    evidence = {
        "across": "depth",
        "ratio": _sci(ratio),
        "input_layer": names[0],
        "output_layer": names[-1],
        "layers": len(names),
        "mean_factor_per_layer": _sci(per_layer),
        "grad_norm_by_layer": {name: _sci(v) for name, v in norms.items()},
        "backward_gain_by_layer": gains,
        "activation_mean_derivative": derivatives,
        "kinds": sorted({layer.kind for layer in chain}),
    }
    if zeroed:
        evidence["zero_gradient_layers"] = zeroed
    sines = {layer: w0 for r in recent if r.sine_layers for layer, w0 in r.sine_layers.items() if layer in names}
    if sines:  # (a SIREN: its initialisation is its own, scaled by 1 / w0)
        evidence["sine_layers"] = {layer: _sci(w0) for layer, w0 in sorted(sines.items())}
    through = None if zeroed else _one_layer_to_blame(chain, last, gains, ratio, t)
    if through is not None:
        evidence["through_one_layer"] = through
        evidence["through_one_layer_kind"] = next(layer.kind for layer in chain if layer.name == through)
    first = onset(history.healthy_records(), holds, t.persistence)
    if vanishing and first is not None:
        evidence.update(_updates_far_too_large_before(history, first, t))
    where = zeroed[0] if zeroed else through or names[0]
    return [Finding(symptom, where, first if first is not None else recent[0].step, severity, evidence)]


def _normalised_updates_even(history: History, chain: list, t: Thresholds) -> bool:
    """Whether a chain with normalisation layers in it moves its input-end layer by a healthy share of its weights, at
    most `depth_update_spread` times the share its output-end layer moves by. A normalisation's backward divides by the
    spread of its input, which shrinks with the weights before it (weight decay pulls them down, and the normalisation
    undoes their scale in the forward): the gradient grows towards the input as the weights it updates shrink, and
    the updates, relative to the weights, stay even. A growth that does not reach the updates is no leak (sweep 53: a
    warning on a healthy BatchNorm keypoint net, PCK 1.000, ratio 106, its layers' updates 1.4e-3 and 7.5e-4)."""
    if not any("Norm" in (layer.kind or "") for layer in chain):
        return False
    ratios = update_ratios(history)
    first, last = ratios.get(chain[0].name), ratios.get(chain[-1].name)
    if first is None or last is None or not last > 0:
        return False
    return t.update_ratio_low <= first <= t.update_ratio_high and first <= t.depth_update_spread * last


def _inputs_unstandardised(history: History, t: Thresholds) -> dict | None:
    """{"layer", "largest_column_rms"} when the first weighted Linear read a feature column whose root mean square is
    above `inputs_unstandardised` (on the first sampled steps, where it is looked at), else None."""
    seen = _first_input_scale(history)
    if seen is None or not math.isfinite(seen["largest"]) or not seen["largest"] > t.inputs_unstandardised:
        return None
    return {"layer": seen["layer"], "largest_column_rms": _sci(seen["largest"])}


def _first_input_scale(history: History, until: float = math.inf) -> dict | None:
    """The first record's `input_scale` (the first weighted Linear's input columns: "layer", "largest", "smallest"
    root mean square), taken by step `until`, or None."""
    return next((r.input_scale for r in history.records if r.input_scale and r.step <= until), None)


def _updates_far_too_large_before(history: History, first: int, t: Thresholds) -> dict:
    """A gradient that vanishes across depth from step `first`, not at the start, after a sampled step whose update
    moved the median layer by more than `update_far_too_large` of its weights: updates far too large grew the weights
    (and a normalisation's input with them, whose backward divides by its spread), which is what shrinks the gradient,
    not the depth (sweep 48: a tiny transformer under Adam at lr 0.1, layers moved by 0.89 of their size in one step,
    then a LayerNorm's input at a spread of 1192 passed back 3e-4). {"step", "update_ratio"} of the largest, or {}.
    Not when the weights shrank over the run: then a weight decay pulled them down, the cause told with them."""
    shrank = _weights_shrank_by(history)
    if shrank is not None and shrank > 1:
        return {}
    largest = None
    for record in history.healthy_records():
        if record.step >= first:
            break
        ratios = [
            x.update_ratio
            for x in record.layers.values()
            if x.update_ratio is not None and math.isfinite(x.update_ratio)
        ]
        if ratios and (largest is None or median(ratios) > largest[1]):
            largest = (record.step, median(ratios))  # (the median layer: Adam's first step moves a small layer by lr)
    if largest is None or not largest[1] > t.update_far_too_large:
        return {}
    return {"updates_far_too_large_before": {"step": largest[0], "update_ratio": _sci(largest[1])}}


def _output_in_target_units(history: History, t: Thresholds) -> bool:
    """A regression whose targets are in raw units (root mean square above `raw_target_rms`) and whose first
    predictions were already at their scale (not `raw_target_ratio` times smaller): an output layer made to produce
    them, its bias at their mean and its weights scaled to their spread."""
    scale = history.target_scale
    if scale is None or not scale["target_rms"] > t.raw_target_rms:
        return False
    return scale["target_rms"] <= t.raw_target_ratio * scale["prediction_rms"]


def _one_layer_to_blame(chain: list, record: StepRecord, gains: dict, ratio: float, t: Thresholds) -> str | None:
    """The layer through which the gradient shrinks (or grows) by nearly the whole ratio at once, when there is one:
    `gains[lower]` is the gain from the output of the layer above `lower` back to lower's output, so across that
    layer and what sits between the two. One layer that does it all (a LayerNorm over a single feature outputs its
    bias whatever its input) is to be named, not the depth of the network; but not when an activation sits between
    them (a saturated tanh after `lower` makes the same drop: the activation rules name it)."""
    if not ratio > 0 or math.isinf(ratio):
        return None
    total = abs(math.log10(ratio))
    for lower, upper in zip(chain, chain[1:]):
        gain = gains.get(lower.name)
        if gain is None or not gain > 0 or (gain < 1) != (ratio < 1):
            continue
        between = any(a.depth is not None and lower.depth < a.depth < upper.depth for a in record.activations.values())
        if abs(math.log10(gain)) >= t.one_layer_share * total and not between:
            return upper.name
    return None


def fold_copies(findings: list[Finding], history: History) -> list[Finding]:
    """The findings, less those of copies that took the gradient meant for the module they copy (see below), and
    less the stalled loss that follows from it (the module trained never learns), folded into its finding."""
    copies = _copies_taking_the_gradient(findings, history)
    if not copies:
        return findings
    stalls = [f for f in findings if f.symptom == "stalled_loss" and f.where == "loss"]
    if stalls:
        cause = next(f for f in findings if f.evidence.get("gradient_went_to"))
        cause.evidence["folded"] = ["stalled_loss"]
    return [f for f in findings if not any(f is other for other in copies + stalls)]


def _copies_taking_the_gradient(findings: list[Finding], history: History) -> list[Finding]:
    """A module no gradient reaches at all (`no_gradient`), whose forward ran, beside a module with the same
    parameters (names under it, and shapes) whose gradient no optimiser applies (`unapplied_gradient`): the loss read
    the copy (a DQN's target network) where the trained one was meant, and backprop followed it there. The copy's
    finding is the first's doing: noted in it as `gradient_went_to`, and returned, to be left out."""
    unapplied = [f for f in findings if f.symptom == "unapplied_gradient" and f.evidence.get("parameters")]
    taken = []
    for f in findings:
        if f.symptom != "no_gradient" or f.evidence.get("gradient") != "none" or not f.evidence.get("parameters"):
            continue
        if f.evidence.get("forward_ran") == "never":  # (an unused module is no copy's twin)
            continue
        own = _parameters_under(f.where, f.evidence["parameters"], history)
        twins = (g for g in unapplied if _parameters_under(g.where, g.evidence["parameters"], history) == own)
        copy = next(twins, None)
        if copy is not None and copy not in taken:
            f.evidence["gradient_went_to"] = copy.where
            taken.append(copy)
    return taken


def _parameters_under(module: str, parameters: list[str], history: History) -> list[tuple]:
    """(name relative to the module, shape) of each parameter (`q_net.0.weight` under `q_net`: `0.weight`), sorted;
    a wrapper's `module.` left out (`AveragedModel`, `DataParallel` hold the model they wrap as `.module`)."""
    return sorted(
        (name.removeprefix(module + ".").removeprefix("module."), history.param_shapes.get(name)) for name in parameters
    )


TOO_LARGE_A_GRADIENT = 10  # a custom backward's gradient this many times the true one or more: updates that kill


def fold_explained(findings: list[Finding]) -> list[Finding]:
    """Let one finding explain another: an exactly-zero gradient (`no_gradient` warning) in a layer where a
    vanishing gradient has underflowed to zero is that vanishing gradient, not a second leak; and a stalled loss
    whose updates are tiny everywhere, in a network where the gradient vanishes across depth, is not a learning
    rate "far too low" (a larger one would only scale what is left of the gradient); and a gradient that
    explodes or vanishes across depth mostly through one recurrent layer that does so across time is that
    finding over time (the layer below gets the gradient of every time step: the recurrent layer's gain over
    time shows as a gain across depth); and exactly-zero gradients behind a layer whose every unit is dead are
    that dead layer's doing (listed in its evidence)."""
    vanishing = any(f.symptom == "vanishing_gradient" and f.severity == "error" for f in findings)
    # layers whose weights are all zero give no update/weight ratio, and those grown from zero a huge one: no measure
    # of the learning rate
    zero_weights = any(f.evidence.get("feeds_from_weights_zero") for f in findings)
    for f in findings:
        if vanishing and f.symptom == "stalled_loss" and f.evidence.get("learning_rate") == "far too low":
            f.evidence["learning_rate"] = None
            f.evidence["gradient_vanishes"] = True
        if zero_weights and f.symptom in ("stalled_loss", "diverging_loss") and f.evidence.get("learning_rate"):
            f.evidence["learning_rate"] = None
    zeroed = {
        name
        for f in findings
        if f.symptom == "vanishing_gradient"
        for name in f.evidence.get("zero_gradient_layers", ())
    }

    def explained(f: Finding) -> bool:
        return (
            f.symptom == "no_gradient"
            and f.evidence.get("gradient") == "exactly zero"
            and not f.evidence.get("blocking_op")  # (zeros an op like round explains: not the vanishing's)
            and any(f.where == name or f.where.startswith(name + ".") for name in zeroed)
        )

    # A layer whose every unit is dead passes no gradient at all: the exactly-zero gradients of the layers
    # behind it (and of the weights reading its output) are that finding, listed in its evidence
    all_dead = [f for f in findings if f.symptom == "dead_relu" and f.evidence.get("dead_fraction") == 1.0]

    readers = {f.evidence.get("feeds_into") for f in all_dead} - {None}

    def behind_dead_units(f: Finding) -> bool:
        # behind the dead layer (no gradient reaches their outputs), or the layer that reads its zeros (its weights'
        # gradient, input times output gradient, is 0); not a bias that cancels in a difference elsewhere
        return (
            bool(all_dead)
            and f.symptom == "no_gradient"
            and f.evidence.get("gradient") == "exactly zero"
            and (f.evidence.get("output_gradient") == "exactly zero" or f.where in readers)
            and not f.evidence.get("blocking_op")
            and not f.evidence.get("graph_cuts")
        )

    for f in findings:
        if behind_dead_units(f):
            all_dead[0].evidence.setdefault("zero_gradient_modules", []).append(f.where)
    # a softmax over an axis of length 1 has a derivative of exactly 0: the exactly-zero gradients before it are its
    trivial_softmax = next((f for f in findings if f.evidence.get("axis_length") == 1), None)

    def behind_the_softmax(f: Finding) -> bool:
        return (
            trivial_softmax is not None
            and f.symptom == "no_gradient"
            and f.evidence.get("gradient") == "exactly zero"
            and not f.evidence.get("graph_cuts")
        )

    for f in findings:
        if behind_the_softmax(f):
            trivial_softmax.evidence.setdefault("zero_gradient_modules", []).append(f.where)
    # a custom Function whose backward returns a gradient many times the true one kills ReLUs with its updates: the
    # units that die from its step on are its doing, told as such (and after it)
    too_large = next(
        (
            f
            for f in findings
            if f.symptom == "wrong_gradient"
            and f.evidence.get("custom_function")
            and (f.evidence.get("scaled_by") or 0) >= TOO_LARGE_A_GRADIENT
        ),
        None,
    )
    for f in findings:
        if too_large is not None and f.symptom == "dead_relu" and f.first_step >= too_large.first_step:
            f.evidence["after_wrong_gradient"] = {
                "custom_function": too_large.evidence["custom_function"],
                "scaled_by": too_large.evidence["scaled_by"],
            }
            f.severity = "warning"  # (the consequence: the Function's finding is the error to fix)
    # a learning rate raised without a cap (a warm-up never capped, by a scheduler or by hand) until the loss diverged:
    # units that die once it has, from updates that large, are its doing, told so (and after the loss's finding)
    raised = next((f for f in findings if f.evidence.get("lr_raised") and f.symptom == "diverging_loss"), None)
    for f in findings:
        if raised is not None and f.symptom == "dead_relu" and f.first_step >= raised.first_step:
            f.evidence["after_rate_raised"] = raised.evidence["lr_raised"]
            f.severity = "warning"  # (the consequence: the loss's finding names the rate to cap)
    # a model left in eval mode while it trains (batch norm on frozen running statistics, dropout off): a NaN or a
    # divergence that comes once it trains so is its doing, told so (and after the mode's finding)
    evaluating = next((f for f in findings if f.evidence.get("model_in_eval_mode")), None)
    for f in findings:
        after = evaluating is not None and f.first_step > evaluating.evidence.get("trained_until_step", f.first_step)
        if after and f.symptom in ("nonfinite", "diverging_loss") and evaluating.evidence.get("batch_norms"):
            f.evidence["after_eval_mode"] = evaluating.where
            f.severity = "warning"
    # a loss that rose while the updates stayed of a normal size (its targets move with the model: a value function's
    # returns, a DQN's bootstrapped targets) cannot tell whether the live units carry the task, as a falling loss
    # does (the `dead_but_learning` exemption): some units dead is a warning there, all of them still an error
    moving = next(
        (f for f in findings if f.symptom == "diverging_loss" and f.evidence.get("updates_normal_size")), None
    )
    for f in findings:
        if (
            moving is not None
            and f.symptom == "dead_relu"
            and f.severity == "error"
            and f.evidence["dead_fraction"] < 1
        ):
            f.evidence["loss_rose_with_normal_updates"] = True
            f.severity = "warning"
    # a schedule built over an optimiser that never steps, the training one left at a rate meant to be scaled (the
    # Noam warm-up's 1.0): dead units and a gradient vanishing across depth, measured after the loss diverged under
    # it, are a wrecked network's, told as its consequence (and after the loss's finding)
    idle = next((f for f in findings if f.evidence.get("schedule_not_applied") and f.symptom == "diverging_loss"), None)
    for f in findings:
        consequence = f.symptom == "dead_relu" or (
            f.symptom == "vanishing_gradient" and f.evidence.get("across") == "depth"
        )
        if idle is not None and consequence and f.first_step >= idle.first_step:
            f.evidence["after_schedule_not_applied"] = idle.evidence["schedule_not_applied"]
            f.severity = "warning"
    # gradients never reset: each step applies the sum of every gradient so far, steps that grow until they push the
    # ReLUs' inputs below 0 for every example: units that die once it has begun are its doing, told so
    summing = next((f for f in findings if f.symptom == "accumulating_gradient"), None)
    for f in findings:
        died = f.symptom == "dead_relu" or (f.symptom == "blocked_gradient" and f.evidence.get("floor_at_zero"))
        if summing is not None and died and f.first_step >= summing.first_step:  # (a clamp at 0: a ReLU by hand)
            f.evidence["after_accumulating_gradient"] = summing.where
            f.severity = "warning"  # (the consequence: the accumulation's finding is the error to fix)
        # (the summed steps grew until the values overflowed; found on every check, the summing began at the start)
        blew_up = f.symptom in ("nonfinite", "exploding_gradient")
        if summing is not None and blew_up and (f.first_step >= summing.first_step or _summing_from_the_start(summing)):
            f.evidence["after_accumulating_gradient"] = summing.where
    # a gradient replaced by hand with something that drowns it (DP-SGD's noise batch-size times too large): the
    # weights random-walk, and units that saturate in training are that walk's doing, told so (and after the loss's)
    drowned = next((f for f in findings if f.evidence.get("gradient_replaced")), None)
    for f in findings:
        if drowned is not None and f.symptom == "saturated_activation" and "saturated_at_start" in f.evidence:
            f.evidence["after_replaced_gradient"] = drowned.evidence["gradient_replaced"]
            f.severity = "warning"  # (the consequence: the loss's finding names the cause to fix)
    # a parameter no optimiser steps that multiplies a branch (LayerScale's gamma, started at 0 and left out of the
    # parameter groups) holds it at 0: the exactly-zero gradients of the layers in that branch are its doing
    left_out = _left_out_multipliers(findings)

    def behind_a_left_out_parameter(f: Finding) -> bool:
        cause = left_out.get(id(f))
        if cause is not None:
            cause.evidence.setdefault("zero_gradient_modules", []).append(f.where)
            cause.severity = "error"  # (a whole branch that never learns: not a parameter or two frozen by mistake)
        return cause is not None

    # an attention softmax pooled over its own axis passes the scores nothing: the vanishing gradient across depth at
    # the queries and keys under it, and the stall, are its doing
    pooled = next((f for f in findings if f.evidence.get("gradient_same_along_axis")), None)
    if pooled is not None:
        told = {
            f.symptom
            for f in findings
            if (f.symptom == "vanishing_gradient" and f.evidence.get("across") == "depth")
            or (f.symptom == "stalled_loss" and f.where == "loss")
        }
        if told:
            pooled.evidence["folded"] = sorted(told)
    over_time = {f.where.split(" (")[0]: f.symptom for f in findings if f.evidence.get("across") == "time"}
    # a loss compared with the wrong targets (broadcast), or a network with a layer of units all alike, stalls whatever
    # the learning rate: that finding is the stall
    stall_has_a_cause = any(f.evidence.get("across") in ("broadcast", "units") for f in findings)
    # ... and so does a prediction squashed into a range its targets are not in: the activation's other findings too
    out_of_reach = next((f for f in findings if "targets_outside" in f.evidence), None)
    stall_has_a_cause = stall_has_a_cause or out_of_reach is not None or pooled is not None
    # an output sigmoid squashed again by the loss sits saturated because of it: the "sigmoid twice" finding says so
    twice = {f.where for f in findings if f.evidence.get("across") in SQUASHED_TWICE}
    # a loss minimised with its sign flipped: the loss rule's reading of the same curve says less; so does it when the
    # optimiser steps nothing but frozen parameters (nothing trains)
    curve_has_a_cause = any(
        f.evidence.get("negated") or f.evidence.get("all_frozen") or f.evidence.get("optimizer_steps_without_gradient")
        for f in findings
    )
    # ... or maximised by its optimiser, or stepped with a negative learning rate: the error grows, and the gradients
    # with it (across depth too)
    maximized = any(f.evidence.get("maximized") or f.evidence.get("negative_learning_rate") for f in findings)
    curve_has_a_cause = curve_has_a_cause or maximized
    # a loss unbounded below (its input out of its domain) drives the scores, and their gradients, up without end
    unbounded = next((f for f in findings if f.evidence.get("loss_function")), None)
    curve_has_a_cause = curve_has_a_cause or unbounded is not None
    # ... and so does a loss that falls without bound, told by its curve alone: unless a cause of it is known (a loss
    # negated or maximised, out of its domain, a log-probability or penalty added the wrong way), which says more
    without_floor = next((f for f in findings if f.evidence.get("falls_without_bound")), None)
    if without_floor is not None:
        known = ("negated", "maximized", "loss_function", "log_probabilities_added", "penalty_subtracted")
        if any(key in f.evidence for f in findings for key in known) or maximized:
            findings, without_floor = [f for f in findings if f is not without_floor], None
        else:
            curve_has_a_cause = True
    # a custom backward that ignores grad_output hands the layers below it a gradient unrelated to the loss: their
    # gradients' sizes across depth, and the loss's curve, are its doing
    made_up = any(f.evidence.get("custom_function") for f in findings)
    curve_has_a_cause = curve_has_a_cause or made_up
    # a regression's targets in raw units (the gradients are of their size, the loss far from them), a dropout on the
    # logits (which grow to beat its noise), or Adam's betas swapped (its steps grow past lr): the curve and the
    # gradients' growth are their doing; an error then
    curve_cause = next((f for f in findings if f.evidence.get("across") == "target scale"), None)
    curve_cause = curve_cause or next((f for f in findings if f.evidence.get("dropout_on_prediction")), None)
    curve_cause = curve_cause or next((f for f in findings if f.evidence.get("adam_betas")), None)
    curve_cause = curve_cause or next((f for f in findings if f.evidence.get("momentum_not_decaying")), None)
    curve_cause = curve_cause or next((f for f in findings if f.evidence.get("reinitialised")), None)
    curve_cause = curve_cause or next((f for f in findings if f.evidence.get("penalty_subtracted")), None)
    curve_cause = curve_cause or next((f for f in findings if f.evidence.get("log_probabilities_added")), None)
    curve_cause = curve_cause or next((f for f in findings if f.evidence.get("updates_undone")), None)
    consequences = [
        f
        for f in findings
        if curve_cause is not None
        and f is not curve_cause
        and (
            (f.symptom == "exploding_gradient" and f.evidence.get("across") in ("depth", "steps"))
            or (f.symptom in ("diverging_loss", "stalled_loss") and f.where == "loss")
        )
    ]
    if consequences:
        curve_cause.severity = "error"
        curve_cause.evidence["folded"] = sorted({f.symptom for f in consequences})
    # ... and a loss with no lower bound runs the logits up until they overflow: the NaN that ends it is its doing
    unbounded_sum = curve_cause is not None and bool(curve_cause.evidence.get("log_probabilities_added"))
    negative = next((f for f in findings if f.evidence.get("negative_learning_rate")), None)
    for f in findings:
        if unbounded_sum and f.symptom == "nonfinite" and f.evidence.get("phase") == "forward":
            f.evidence["after_loss_without_floor"] = True
        if negative is not None and f.symptom == "nonfinite" and f.first_step >= negative.first_step:
            f.evidence["after_negative_learning_rate"] = negative.evidence["negative_from_step"]
    # a module "frozen" with `module.requires_grad = False` (an attribute, freezing nothing) trains on: its units that
    # die, and the loss that rises, once it has begun, are that training's doing (a pretrained backbone at a head's
    # rate)
    unfrozen = next((f for f in findings if "requires_grad_attribute" in f.evidence), None)
    for f in findings:
        if unfrozen is None or f.first_step < unfrozen.first_step:
            continue
        meant = unfrozen.evidence["requires_grad_attribute"]
        inside = any(f.where == m or f.where.startswith(f"{m}.") for m in meant)
        if (f.symptom == "dead_relu" and inside) or (f.symptom == "diverging_loss" and f.where == "loss"):
            f.evidence["after_freeze_not_applied"] = unfrozen.where
            if f.symptom == "dead_relu":
                f.severity = "warning"  # (the consequence: the freeze's finding is the error to fix)
    # attention normalised over the queries and pooled over them: told by the gradient that arrives the same along the
    # softmax's axis (a blocked_gradient at the softmax), not a second time as weights over the queries
    pooled_sites = {f.where for f in findings if "gradient_same_along_axis" in f.evidence}
    findings = [f for f in findings if not (f.evidence.get("softmax_over_queries") and f.where in pooled_sites)]
    # a kl_div given logits for its target: its t log t is NaN wherever a logit is negative, the loss's NaN its doing
    logits_target = next((f for f in findings if f.evidence.get("kl_div_target") == "below zero"), None)
    if logits_target is not None:
        made_nan = [f for f in findings if f.symptom == "nonfinite" and f.evidence.get("phase") == "forward"]
        if made_nan:
            logits_target.evidence["folded"] = ["nonfinite"]
            findings = [f for f in findings if not any(f is g for g in made_nan)]
    # `torch.normal(mean, std)` of computed tensors: derivative 0 to both, so the layers before the draw get the loss's
    # gradient from its other terms only (a VAE's KL): their gradient measured across depth looks vanished
    normal_draw = next((f for f in findings if f.evidence.get("drawn_from") == "torch.normal"), None)
    for f in findings:
        if normal_draw is not None and f.symptom == "vanishing_gradient" and f.evidence.get("across") == "depth":
            f.evidence["after_zero_derivative_draw"] = normal_draw.evidence["read_by"]
    # gradients never reset: each step applies the sum of all the gradients so far, which grows, and the loss with it
    summed = any(f.symptom == "accumulating_gradient" for f in findings)
    drawn = any("drawn_from" in f.evidence for f in findings)
    curve_has_a_cause = curve_has_a_cause or summed

    def told_by_its_cause(f: Finding) -> bool:
        the_stall = stall_has_a_cause and f.symptom == "stalled_loss" and f.where == "loss"
        the_curve = curve_has_a_cause and f.symptom in ("stalled_loss", "diverging_loss") and f.where == "loss"
        the_curve = the_curve and not f.evidence.get("negated") and not f.evidence.get("loss_function")
        the_curve = the_curve and not f.evidence.get("maximized") and not f.evidence.get("falls_without_bound")
        growth = f.symptom == "exploding_gradient" and f.evidence.get("across") == "steps"
        the_growth = growth and (unbounded is not None or without_floor is not None or summed)
        the_growth = the_growth or (growth and negative is not None and f.first_step >= negative.first_step)
        the_end = unbounded is not None and _the_loss_running_off(f, unbounded)
        the_depth = made_up and f.evidence.get("across") in ("depth", "steps")
        the_depth = the_depth or (maximized and f.symptom == "exploding_gradient" and f.severity == "warning")
        the_depth = the_depth or (
            pooled is not None and f.symptom == "vanishing_gradient" and f.evidence.get("across") == "depth"
        )
        # (a draw by sample() cuts the layers before it from the loss's terms after it: their gradient looks vanished)
        behind_the_draw = f.symptom == "vanishing_gradient" and f.evidence.get("across") == "depth"
        the_depth = the_depth or (drawn and behind_the_draw and f.severity == "warning")
        return (
            the_depth
            or any(f is g for g in consequences)
            or the_stall
            or the_curve
            or the_growth
            or the_end
            or (out_of_reach is not None and f is not out_of_reach and f.where == out_of_reach.where)
            or (f.symptom == "saturated_activation" and f.where in twice)
        )

    # a module replaced after the optimiser was made over the old one's parameters, frozen with the rest before the
    # replacement (fine-tuning a new head): "the optimiser steps only frozen parameters" is the replacement's doing
    replaced = next((f for f in findings if f.evidence.get("replaced_after_optimizer")), None)
    frozen = [
        f
        for f in findings
        if replaced is not None
        and f.symptom == "no_gradient"
        and f.evidence.get("all_frozen")
        # (an optimiser over frozen parameters, the old module's among them: those it steps outside the model)
        and f.evidence.get("parameter_count", 0) >= replaced.evidence.get("stepped_outside_model", 0) > 0
    ]
    if frozen:
        replaced.evidence["old_parameters_frozen"] = True

    def frozen_with_the_replaced(f: Finding) -> bool:
        return any(f is g for g in frozen)

    kept = [
        f
        for f in findings
        if not explained(f)
        and not behind_dead_units(f)
        and not behind_the_softmax(f)
        and not frozen_with_the_replaced(f)
        and not behind_a_left_out_parameter(f)
        and not _through_a_recurrent_layer(f, over_time)
        and not told_by_its_cause(f)
    ]
    if unbounded is not None:
        ended = next((f.first_step for f in findings if _the_loss_running_off(f, unbounded)), None)
        if ended is not None:
            unbounded.evidence["nonfinite_from_step"] = ended
    # a clip_grad_value_ far below the gradients, or a Huber loss's delta far below the errors: the stall is its doing
    # (steps of lr * clip_value at most; every example's gradient cut to delta)
    # ... or a penalty made of a gradient taken without create_graph (the physics-informed residual was the whole task)
    # ... or an optimiser that decays its own rate to nothing, a cross_entropy softmax over the positions, a
    # recurrent cell given a fresh state at every call (it remembers nothing), or scores confined near 0, or rows
    # that mix the examples, or one class for every row of a contrastive loss, or a layer built anew in forward(), or
    # loss terms each divided by themselves
    stall_causes = {"capped_share", "huber_delta", "constant_loss_term", "lr_decay", "classes_from"}
    stall_causes.update(("state_reset_every_call", "logits_within", "optimizer_eps", "outputs_alike"))
    stall_causes.update(("batch_as_sequence", "examples_mixed", "one_class_over_pairs", "positions_reached"))
    stall_causes.update(("state_from_parameter_every_call", "base_rate_entropy", "made_in_forward", "ratio_of_itself"))
    stall_causes.add("same_ids_embedded")
    capped = next((f for f in kept if stall_causes & f.evidence.keys()), None)
    stalls = [f for f in kept if f.symptom == "stalled_loss" and f.where == "loss"]
    if capped is not None and stalls:
        kept = [f for f in kept if not any(f is stall for stall in stalls)]
        capped.severity, capped.evidence["folded"] = "error", ["stalled_loss"]
    # a clip_grad_norm_ that does not act (before backward, after the step, or given nothing): the NaN it let through
    clipping_idle = any(f.where == "clip_grad_norm_" for f in kept)
    if any(f.evidence.get("clip_on_scaled_gradients") for f in kept):  # (its "clipped" reading of the stall: this)
        kept = [f for f in kept if not (f.symptom == "stalled_loss" and f.evidence.get("learning_rate") == "clipped")]
    for f in kept:
        if clipping_idle and f.symptom == "nonfinite":
            f.evidence["clipping_does_nothing"] = True
        if f.symptom == "stalled_loss":  # (its explanation points to the others, or says there are none)
            f.evidence["other_findings"] = sorted({g.symptom for g in kept if g.symptom != "stalled_loss"})
    # Units dead inside a chain whose gradient vanishes across depth: the layers that shrink the gradient on its way
    # back shrink the signal on its way forward too (weights initialised too small, a norm over a single value), so
    # the layer's inputs are tiny next to its biases, which alone decide each unit's sign: the same cause
    vanishing = next(
        (f for f in kept if f.symptom == "vanishing_gradient" and f.evidence.get("across") == "depth"), None
    )
    chain = set(vanishing.evidence.get("grad_norm_by_layer") or {}) if vanishing is not None else set()
    for f in kept:
        if f.symptom == "dead_relu" and f.evidence.get("feeds_from") in chain and vanishing.severity == "error":
            if not vanishing.evidence.get("updates_far_too_large_before"):  # (then the learning rate's doing)
                f.evidence["behind_vanishing_gradient"] = vanishing.where
    # Weights shrunk towards 0 (a weight decay far too large) make every layer's backward gain tiny: that is the
    # cause of a gradient vanishing across depth, not the depth
    shrank = next((f.evidence["weights_shrank_by"] for f in kept if "weights_shrank_by" in f.evidence), None)
    for f in kept:
        if shrank is not None and f.symptom == "vanishing_gradient" and f.evidence.get("across") == "depth":
            f.evidence["weights_shrank_by"] = shrank
    return kept


def _late_steps_padded(layer: LayerStats, edge: int) -> float | None:
    """The mean share of the sequences whose input is all zeros over a recurrent layer's last `edge` time steps."""
    padding = layer.time_padding
    if not padding or len(padding) != len(layer.time_grad_norms or ()):
        return None
    return sum(padding[-edge:]) / edge


def _through_a_recurrent_layer(f: Finding, over_time: dict[str, str]) -> bool:
    """A finding across depth at least half of whose change (in orders of magnitude) happens across a recurrent
    layer with the same finding across time."""
    if f.evidence.get("across") != "depth" or not f.evidence["ratio"] > 0:
        return False
    names, gains = list(f.evidence["grad_norm_by_layer"]), f.evidence["backward_gain_by_layer"]
    whole = abs(math.log(f.evidence["ratio"]))
    return any(
        over_time.get(upper) == f.symptom and gains.get(lower, 0) > 0 and abs(math.log(gains[lower])) >= whole / 2
        for lower, upper in zip(names, names[1:])
    )


def _layer_values(records: list[StepRecord], name: str, attribute: str) -> list[float]:
    values = []
    for record in records:
        layer = record.layers.get(name)
        if layer is not None and getattr(layer, attribute) is not None:
            values.append(getattr(layer, attribute))
    return values


def _mean_derivatives(records: list[StepRecord]) -> dict[str, float]:
    """Mean local derivative of each activation function, over sites and recent steps."""
    by_function: dict[str, list[float]] = {}
    for record in records:
        for site in record.activations.values():
            if site.mean_derivative is not None:
                by_function.setdefault(site.function, []).append(site.mean_derivative)
    return {function: _sci(median(values)) for function, values in by_function.items()}


# --- vanishing / exploding across time -------------------------------------------------------------------------
def time_ratio(norms: list[float], edge_share: float) -> tuple[float, int] | None:
    """(mean gradient over the earliest time steps / mean over the latest, how many steps each end covers)."""
    if norms is None or len(norms) < 4:
        return None
    edge = max(1, int(len(norms) * edge_share))
    early = sum(norms[:edge]) / edge
    late = sum(norms[-edge:]) / edge
    if not (math.isfinite(early) and math.isfinite(late)) or late <= 0:
        return None
    return early / late, edge


def time_rule(history: History, t: Thresholds) -> list[Finding]:
    findings = []
    recent = history.recent()
    # (a bidirectional layer's profile sums two directions that vanish or explode towards opposite ends: large
    # at both ends whichever happens, so early over late says nothing)
    recurrent = sorted(
        {name for r in recent for name, layer in r.layers.items() if layer.recurrent and not layer.bidirectional}
    )
    loss_stalled = _loss_is_stalled(history.current_loss(), t)
    for name in recurrent:

        def ratio_of(record, name=name):
            layer = record.layers.get(name)
            result = time_ratio(layer.time_grad_norms if layer else None, t.time_edge_share)
            return None if result is None else result[0]

        cut = _cut_at_every_call(history, name, loss_stalled, t)
        if cut is not None:  # (then no gradient crosses a time step: no ratio to measure)
            findings.append(cut)
            continue
        part_cut = _parts_cut_at_every_call(history, name, loss_stalled, t)
        if part_cut is not None:  # (its ratio, if one is measured, is what the cut leaves: told by this finding)
            findings.append(part_cut)
            continue
        ratios = [x for x in (ratio_of(r) for r in recent) if x is not None]
        if len(ratios) < t.min_records:
            continue
        ratio = median(ratios)
        vanishing = None
        if ratio < t.time_vanishing_warning:
            # An error only when the loss does not improve: early steps that get no gradient *and* a stalled loss.
            # While it improves, the task may need only the recent steps (a forecast from the last few inputs).
            vanishing = "error" if loss_stalled else "warning"
        exploding = _grade(ratio, t.time_exploding_warning, t.time_exploding_error, below=False)
        if exploding and not _builds_up_in_most(recent, name, t):
            exploding = None
        severity = vanishing or exploding
        if severity is None:
            continue
        threshold = t.time_vanishing_warning if vanishing else t.time_exploding_warning

        def holds(record, ratio_of=ratio_of, vanishing=vanishing, threshold=threshold):
            x = ratio_of(record)
            return None if x is None else (x < threshold if vanishing else x > threshold)

        layer = _latest_time_layer(recent, name)
        norms = layer.time_grad_norms
        steps = len(norms)
        _, edge = time_ratio(norms, t.time_edge_share)
        per_step, zero_before = _factor_per_time_step(norms, ratio, edge)
        first = onset(history.healthy_records(), holds, t.persistence)
        evidence = {
            "across": "time",
            "ratio": _sci(ratio),
            "time_steps": steps,
            "early_steps": [0, edge - 1],
            "late_steps": [steps - edge, steps - 1],
            "mean_factor_per_time_step": _sci(per_step),
            "zero_before_step": zero_before,
            "grad_norm_by_time_step": [_sci(x) for x in norms],
            "kind": layer.kind,
            "loss_stalled": loss_stalled,
        }
        clipped = [r.clip_max_norm for r in recent if r.clip_max_norm is not None]
        if exploding and not vanishing and 2 * len(clipped) >= len(recent) and clipped:  # (already clipped)
            evidence["clipped_at"] = _sci(median(clipped))
        bias = layer.keep_gate_bias
        kept = None if bias is None else 1 / (1 + math.exp(-bias))  # sigmoid(b): the share of the state kept per step
        if vanishing and kept is not None and kept < t.forget_gate_kept:  # (the gate that keeps it (nearly) shut)
            if layer.kind.startswith("GRU"):
                evidence["update_bias"], evidence["update_gate_keeps"] = _sci(bias), _sci(kept)
            else:
                evidence["forget_bias"], evidence["forget_gate_keeps"] = _sci(bias), _sci(kept)
        padded = _late_steps_padded(layer, edge)
        if vanishing and padded is not None and padded > t.late_padding_share:
            # the late steps are padding: a readout at the last step reaches the real ones through the padding
            evidence["late_steps_padding"] = _sci(padded)
        where = f"{name} (time steps 0-{edge - 1} of {steps})"
        symptom = "vanishing_gradient" if vanishing else "exploding_gradient"
        findings.append(Finding(symptom, where, first if first is not None else recent[0].step, severity, evidence))
    return findings


def _cut_at_every_call(history: History, name: str, loss_stalled: bool, t: Thresholds) -> Finding | None:
    """A recurrent cell given its own last output detached at every call that received one, never with its gradient,
    on most recent sampled steps that called it (`h = cell(x[t], h.detach())`): backprop through time is cut at
    every step, a gradient across time of exactly zero. Vanishing across time at its extreme; an error when the loss
    does not improve either. (Detached every k steps, the calls between carry the gradient: no finding.)"""
    recent = history.recent()
    linked = [r for r in recent if name in r.layers and r.layers[name].cut_calls + r.layers[name].carried_calls]
    cut = [r for r in linked if _cut_every_call(r.layers[name])]
    if len(cut) < t.min_records or 2 * len(cut) < len(linked):
        return None
    layer = cut[-1].layers[name]
    # (from the first record that shows the cut, not the first recent one: a cut from the start began at step 0)
    first = next(r.step for r in history.records if _cut_every_call(r.layers.get(name)))
    return _cut_through_time(name, first, layer.calls, layer.cut_calls, layer.kind, loss_stalled)


def _cut_every_call(layer) -> bool:
    """A cell's record in which every call that was given a state was given it detached."""
    return layer is not None and layer.cut_calls > 0 and layer.carried_calls == 0


def _parts_cut_at_every_call(history: History, name: str, loss_stalled: bool, t: Thresholds) -> Finding | None:
    """An LSTM cell given its own last state with h carried on but c detached at every call (`h, c = cell(x[t],
    (h, c.detach()))`), on most recent sampled steps that called it. Backprop through time goes on, through h and
    the gates only: the cell state, the path along which the gradient crosses a step multiplied by the forget gate
    alone, is cut at every step. (Either part detached is told; both detached is the cut above.)"""
    recent = history.recent()
    linked = [
        r.layers[name] for r in recent if name in r.layers and r.layers[name].cut_calls + r.layers[name].carried_calls
    ]
    cut = [layer for layer in linked if _parts_cut_every_call(layer)]
    if len(cut) < t.min_records or 2 * len(cut) < len(linked):
        return None
    layer = cut[-1]
    first = next(r.step for r in history.records if _parts_cut_every_call(r.layers.get(name)))
    lstm = layer.kind in ("LSTMCell", "LSTM")  # (its state is (h, c))
    evidence = {
        "across": "time",
        "parts_cut_every_step": [("h", "c")[i] if lstm else f"part {i}" for i in layer.parts_cut],
        "time_steps": layer.calls,
        "cut_calls": layer.part_cut_calls,
        "kind": layer.kind,
        "loss_stalled": loss_stalled,
    }
    where = f"{name} ({', '.join(evidence['parts_cut_every_step'])} cut at every time step)"
    return Finding("vanishing_gradient", where, first, "error" if loss_stalled else "warning", evidence)


def _parts_cut_every_call(layer) -> bool:
    """A cell's record in which every call given its state carried part of it on and was given the rest detached."""
    return layer is not None and not layer.cut_calls and 0 < layer.part_cut_calls == layer.carried_calls


def _cut_through_time(name: str, first: int, calls: int, cut_calls: int, kind: str, loss_stalled: bool) -> Finding:
    """The finding for a cell cut at every time step: vanishing across time at its extreme."""
    evidence = {
        "across": "time",
        "cut_every_step": True,
        "time_steps": calls,
        "cut_calls": cut_calls,
        "kind": kind,
        "loss_stalled": loss_stalled,
    }
    severity = "error" if loss_stalled else "warning"
    return Finding("vanishing_gradient", f"{name} (cut at every time step)", first, severity, evidence)


def state_from_parameter_rule(history: History, t: Thresholds) -> list[Finding]:
    """A recurrent cell (one of PyTorch's, or written by hand) called `cut_loop_calls` times or more a step and given
    a parameter for its state at every call, never its own last output, on most recent sampled steps (2 at least):
    the learned initial state read again inside the time loop (`h = self.h0.expand(N, -1)` at each step). Nothing is
    carried from one step to the next, though W_hh gets a gradient (h0 is not 0): the recurrence is off."""
    recent = history.recent()
    names = {name for r in recent for name in (*r.layers, *(r.looped_calls or {}))}
    findings = []
    for name in sorted(names):
        looks = [c for c in (_cell_calls(r, name) for r in recent) if c is not None]
        reset = [n for n, cut, carried, given in looks if n >= t.cut_loop_calls and given == n and not cut + carried]
        if len(reset) < t.min_records or 2 * len(reset) < len(looks):
            continue
        evidence = {"across": "time", "state_from_parameter_every_call": reset[-1]}
        kind = next((r.looped_calls[name]["kind"] for r in reversed(recent) if name in (r.looped_calls or {})), None)
        if kind:
            evidence["kind"] = kind  # (a cell written by hand: its class)
        first = history.records[0].step if history.records else 0
        findings.append(
            Finding("vanishing_gradient", f"{name} (state reset at every time step)", first, "error", evidence)
        )
    return findings


def hand_written_cell_rule(history: History, t: Thresholds) -> list[Finding]:
    """The same for a module of the script's own called in a loop, `cut_loop_calls` times or more a step, and given
    its own last output detached at every call that received one (`h, c = cell(x[:, t], (h.detach(), c.detach()))`):
    a recurrent cell written by hand whose backprop through time is cut at every step."""
    recent = history.recent()
    names = sorted({name for r in recent for name in (r.looped_calls or {})})
    loss_stalled = _loss_is_stalled(history.current_loss(), t)
    findings = []
    for name in names:
        linked = [r.looped_calls[name] for r in recent if r.looped_calls and name in r.looped_calls]
        if any(calls["read_by_loss"] for calls in linked):  # (each iterate judged by the loss: a refinement, by design)
            continue  # (read_by_loss: the loss reads the module's output, or one of its parts' it returned)
        cut = [calls for calls in linked if _cut_loop(calls, t)]
        if len(cut) < t.min_records or 2 * len(cut) < len(linked):
            continue
        first = next(r.step for r in history.records if r.looped_calls and _cut_loop(r.looped_calls.get(name), t))
        last = cut[-1]
        findings.append(_cut_through_time(name, first, last["calls"], last["cut"], last["kind"], loss_stalled))
    return findings


def graph_across_steps_rule(history: History, t: Thresholds) -> list[Finding]:
    """A backward with retain_graph=True that reached the outputs modules made on the first sampled step, on
    `min_records` sampled steps or more, the last of them `graph_span_steps` steps or more after it (truncated
    backprop through time over overlapping windows, k1 < k2, retains a few steps' graph on purpose): the graph spans
    training steps (a recurrent state carried from batch to batch without `detach()`, PyTorch's error at the second
    backward through it silenced by retain_graph). Each backward goes back through every batch since the start: its
    cost grows with the step, and the gradient adds terms computed with the weights as they were then."""
    spanning = [r for r in history.records if r.graph_from_earlier_step is not None]
    if len(spanning) < t.min_records:
        return []
    if spanning[-1].step - spanning[-1].graph_from_earlier_step["step"] < t.graph_span_steps:
        return []
    first, last = spanning[0], spanning[-1]
    # (each in the order the walk from the loss met them: the module whose state was carried first)
    modules = list(dict.fromkeys(name for r in spanning for name in r.graph_from_earlier_step["modules"]))
    evidence = {
        "graph_from_earlier_step": True,
        "retain_graph": True,
        "modules_reached": modules,
        "reached_back_to_step": last.graph_from_earlier_step["step"],
        "at_step": last.step,
        "sampled_steps": len(spanning),
    }
    return [Finding("wrong_gradient", modules[0], first.step, "error", evidence)]


def eval_mode_left_rule(history: History, t: Thresholds) -> list[Finding]:
    """A watched model that trains (a parameter requires grad), with batch norms or dropouts that eval mode changes,
    seen in training mode on earlier sampled steps and in eval mode on every sampled step since, `min_records` of them
    or more:
    `model.eval()` for a validation pass, and no `model.train()` after it. Its batch norms normalise with the running
    statistics frozen at that step, whatever the weights do since (the backward leaves out the batch statistics'
    terms too), and its dropouts are off. A model in eval mode from the start is not judged (on purpose: a policy
    fine-tuned with its dropout off), nor batch norms frozen one by one (their model stays in training mode)."""
    findings = []
    names = sorted({name for r in history.records for name in (r.model_modes or {})})
    for name in names:
        modes = [(r.step, r.model_modes[name]) for r in history.records if r.model_modes and name in r.model_modes]
        trained = [step for step, mode in modes if mode["training"]]
        since = [step for step, mode in modes if trained and step > trained[-1]]
        if not trained or len(since) < t.min_records:
            continue
        last = modes[-1][1]
        evidence = {
            "model_in_eval_mode": True,
            "eval_since_step": since[0],
            "trained_until_step": trained[-1],
            "sampled_steps_in_eval": len(since),
            "batch_norms": last["batch_norms"][:8],
            "dropouts": last["dropouts"][:8],
        }
        severity = "error" if last["batch_norms"] else "warning"  # (dropout off: it may overfit, not go wrong)
        findings.append(Finding("wrong_gradient", name, since[0], severity, evidence))
    return findings


def _cut_loop(calls: dict | None, t: Thresholds) -> bool:
    """A step on which a module of the script's own was called in a loop and never given its own output with its
    gradient (see hand_written_cell_rule)."""
    return calls is not None and calls["carried"] == 0 and calls["cut"] > 0 and calls["calls"] >= t.cut_loop_calls


def _latest_time_layer(recent, name: str):
    return next(r.layers[name] for r in reversed(recent) if name in r.layers and r.layers[name].time_grad_norms)


def _builds_up_in_most(recent, name: str, t: Thresholds) -> bool:
    """Whether the growth builds up along the sequence in most of the recent records that measured the layer."""
    profiles = [r.layers[name].time_grad_norms for r in recent if name in r.layers and r.layers[name].time_grad_norms]
    return 2 * sum(_builds_up_over_time(norms, t) for norms in profiles) > len(profiles)


def _builds_up_over_time(norms: list[float], t: Thresholds) -> bool:
    """Whether the gradient grows from the late end to the early end along the sequence (see
    `Thresholds.time_buildup_share`): log(early / middle) and log(middle / late) each carry that share of
    log(early / late), and it grows from a step to the one before it at most steps (`time_growth_steps_share`)."""
    edge = max(1, int(len(norms) * t.time_edge_share))
    start = max(0, len(norms) // 2 - edge // 2)
    early, middle, late = (sum(part) / len(part) for part in (norms[:edge], norms[start : start + edge], norms[-edge:]))
    if not (early > middle > late > 0):
        return False
    whole = math.log(early / late)
    if min(math.log(early / middle), math.log(middle / late)) < t.time_buildup_share * whole:
        return False
    pairs = [(before, after) for before, after in zip(norms, norms[1:]) if before > 0 and after > 0]
    return sum(before > after for before, after in pairs) > t.time_growth_steps_share * len(pairs)


def _factor_per_time_step(norms: list[float], ratio: float, edge: int) -> tuple[float, int | None]:
    """The mean factor per step between the two ends (steps - edge apart), and None; or, when the earliest steps'
    gradient is exactly 0 (it underflowed), the factor over the steps that still have some, and the first of them."""
    if ratio > 0:
        return ratio ** (1 / (len(norms) - edge)), None
    first = next((i for i, x in enumerate(norms) if x > 0), None)
    if first is None or first >= len(norms) - 1 or not norms[-1] > 0:
        return math.nan, first
    return (norms[first] / norms[-1]) ** (1 / (len(norms) - 1 - first)), first


# --- exploding step over step ----------------------------------------------------------------------------------
def growth_rule(history: History, t: Thresholds) -> list[Finding]:
    records = [r for r in history.healthy_records() if r.grad_norm is not None and math.isfinite(r.grad_norm)]
    if len(records) < 2 * t.min_records:
        return []
    first_norms = [r.grad_norm for r in records[: t.min_records]]
    start = median(first_norms)
    recent = history.recent()
    end = median([r.grad_norm for r in recent if r.grad_norm is not None])
    if not start > 0 or math.isnan(end):
        return []
    if start * t.growth_dip <= first_norms[0] and end <= first_norms[0]:  # grown back from a dip, to no more than
        return []  # the first step's gradient: a first task learnt to a loss of ~0, then the next
    growth = end / start
    severity = _grade(growth, t.growth_warning, t.growth_error, below=False)
    if severity is None:
        return []
    # Name the layer whose parameter gradient grew the most.
    growth_by_layer = {}
    for name in history.layer_names():
        early = median(_layer_values(records[: t.min_records], name, "param_grad_norm"))
        late = median(_layer_values(recent, name, "param_grad_norm"))
        if early > 0 and math.isfinite(late):
            growth_by_layer[name] = late / early
    where = max(growth_by_layer, key=growth_by_layer.get) if growth_by_layer else "all parameters"
    first = onset(
        history.healthy_records(), lambda r: None if r.grad_norm is None else r.grad_norm > start * 10, t.persistence
    )
    evidence = {
        "across": "steps",
        "growth": _sci(growth),
        "grad_norm_start": _sci(start),
        "grad_norm_end": _sci(end),
        "growth_by_layer": {k: _sci(v) for k, v in sorted(growth_by_layer.items(), key=lambda kv: -kv[1])[:8]},
        "clip_suggestion": _sci(start * 5),
    }
    return [Finding("exploding_gradient", where, first if first is not None else recent[0].step, severity, evidence)]


def _first_marked(history: History, attribute: str) -> int:
    """The step of the first record on which `attribute` was found (is not None)."""
    return next(r.step for r in history.records if getattr(r, attribute) is not None)


def _marked_on_most(history: History, attribute: str, t: Thresholds) -> list[StepRecord]:
    """The recent records on which `attribute` was found (is not None), when they are at least `min_records` and half
    the recent ones: a mark of the way the loss is written, seen on most steps. Else []."""
    recent = history.recent()
    marked = [r for r in recent if getattr(r, attribute) is not None]
    return marked if len(marked) >= t.min_records and 2 * len(marked) >= len(recent) else []


# --- a softmax (or sigmoid) given to a loss that applies one itself -----------------------------------------------
SQUASHED_TWICE = ("softmax twice", "sigmoid twice", "sigmoid then softmax", "softmax then sigmoid")  # the rule's


def squashed_twice_rule(history: History, t: Thresholds) -> list[Finding]:
    """The model ends in a softmax (or a sigmoid) and the loss (cross_entropy) takes log_softmax of its output, or
    ends in a sigmoid and binary_cross_entropy_with_logits applies a sigmoid again: the second squashing sees inputs
    in [0, 1], so the loss has a floor far above 0, and the gradient is multiplied by the first one's derivative on
    the way: a vanishing gradient at the model's output. A distribution built on a softmax's output as its logits
    (`Categorical(logits=p)`) is the same second softmax, and an error whatever the loss does: what it samples can
    never give one class more than e / (e + C - 1). A hand-written cross-entropy that reads a softmax without its log,
    against targets that are a distribution (`-(t * softmax(z)).sum(-1).mean()`), is an error too: its gradient
    vanishes for the examples the model gets confidently wrong."""
    marked = _marked_on_most(history, "probabilities_into_loss", t)
    if not marked:
        return []
    last = marked[-1]
    function, classes = last.probabilities_function or "softmax", last.probabilities_classes or 2
    first = next((r.step for r in history.records if r.probabilities_into_loss is not None), marked[0].step)
    if function == "softmax without log":  # (-(t * softmax(z)).sum(-1): the expected probability, no log)
        evidence = {"across": "softmax without log", "classes": classes}
        return [Finding("vanishing_gradient", last.probabilities_into_loss, first, "error", evidence)]
    if function == "softmax as logits":
        evidence = {"across": "softmax twice", "as_logits": True, "classes": classes}
        evidence["max_probability"] = _sci(math.e / (math.e + classes - 1))  # (one-hot p: exp(1) against exp(0)s)
        return [Finding("vanishing_gradient", last.probabilities_into_loss, first, "error", evidence)]
    stalled = _loss_is_stalled(history.current_loss(), t)
    evidence = {"across": function if " then " in function else f"{function} twice"}
    evidence["classes"] = classes
    if function in ("sigmoid", "softmax then sigmoid"):  # -log sigma(p), -log(1 - sigma(p)), p in [0, 1]
        evidence["loss_floor_positive"] = _sci(math.log(1 + math.exp(-1)))
        evidence["loss_floor_negative"] = _sci(math.log(2))
    else:
        evidence["loss_floor"] = _sci(math.log(1 + (classes - 1) / math.e))  # -log(e / (e + C - 1)): one-hot p
    evidence["loss_stalled"] = stalled
    severity = "error" if stalled else "warning"
    return [Finding("vanishing_gradient", last.probabilities_into_loss, first, severity, evidence)]


# --- a loss minimised with its sign flipped ------------------------------------------------------------------------
def negated_loss_rule(history: History, t: Thresholds) -> list[Finding]:
    """The backward pass starts from the negative of a loss that is never negative (`-F.mse_loss(...)`, a sign left
    from code that maximised a reward): descending it ascends the error, which grows while the recorded loss falls
    below zero. Reported when it did (the error of the last third above that of the first). Not when several
    optimisers step on one recorded loss (the original GAN's generator maximises the discriminator's loss, on purpose,
    and its players' losses are mixed in the record: the sign of the curve tells nothing then)."""
    marked = _marked_on_most(history, "negated_loss", t)
    if not marked:
        return []
    if history.competing_loss_steps > history.steps / 2:
        return []
    loss = history.current_loss()
    thirds = _loss_thirds(loss)
    if len(loss) < t.loss_min_steps or thirds is None or not thirds[1] < thirds[0] < 0:
        return []
    first, last = thirds
    evidence = {
        "negated": marked[-1].negated_loss,
        "loss_first_third": _sci(first),
        "loss_last_third": _sci(last),
        "error_grew_by": _sci(last / first),  # (both negative: the error's own growth)
    }
    first_step = next(r.step for r in history.records if r.negated_loss is not None)
    return [Finding("diverging_loss", "loss", first_step, "error", evidence)]


# --- a penalty on the weights subtracted instead of added ----------------------------------------------------------
def subtracted_penalty_rule(history: History, t: Thresholds) -> list[Finding]:
    """The backward pass starts from a loss minus a penalty on the weights (`ce - lam * sum(w ** 2)`, a sign slip in
    a hand-written weight decay), on most recent sampled steps: the penalty's gradient, -2 lam w, pushes every
    weight away from 0 at each step, and the weights grow without bound while the recorded loss falls below zero. A
    warning; an error once the weights grew twofold or more, or the loss's curve or the gradients' growth shows it
    (folded into it)."""
    marked = _marked_on_most(history, "subtracted_penalty", t)
    if not marked:
        return []
    evidence = {"penalty_subtracted": marked[-1].subtracted_penalty}
    shrank = _weights_shrank_by(history)
    grew = 1 / shrank if shrank else None
    if grew is not None:
        evidence["weights_grew_by"] = _sci(grew)
    first = next(r.step for r in history.records if r.subtracted_penalty is not None)
    severity = "error" if grew is not None and grew >= t.penalty_weights_grew else "warning"
    return [Finding("diverging_loss", "loss", first, severity, evidence)]


# --- log-probabilities added to the loss (a minus sign dropped) ------------------------------------------------------
def log_probability_added_rule(history: History, t: Thresholds) -> list[Finding]:
    """The backward root adds a term made of log-probabilities alone (`nll + eps * logp.mean()`: label smoothing's
    -mean(log p) with its minus dropped; or `logp.gather(1, y).mean()`, a likelihood minimised). A log-probability is
    never positive and has no lower bound: minimising it drives the logits apart without end, and the loss below 0. A
    warning; an error once the loss went below 0 (on `min_records` records), with the loss's curve and the gradients'
    growth folded in."""
    marked = _marked_on_most(history, "log_probability_added", t)
    if not marked:
        return []
    below = [r for r in history.records if r.loss is not None and r.loss < -t.loss_below_zero]
    evidence = {"log_probabilities_added": marked[-1].log_probability_added}
    finite = [r.loss for r in below if math.isfinite(r.loss)]
    if finite:
        evidence["loss_lowest"] = _sci(min(finite))
    first = next(r.step for r in history.records if r.log_probability_added is not None)
    severity = "error" if len(below) >= t.min_records else "warning"
    return [Finding("diverging_loss", "loss", first, severity, evidence)]


# --- a loss of its own that rewards the wrong class -------------------------------------------------------------------
def wrong_class_rewarded_rule(history: History, t: Thresholds) -> list[Finding]:
    """A classification loss of its own, made from the log-probability of the target class (a focal loss written by
    hand), that fell while that log-probability fell too, below chance (log 1/C): the objective is lowest where the
    model is wrong. `pt ** gamma * -log(pt)`, where `(1 - pt) ** gamma` was meant, is 0 at pt = 0 as well as at 1,
    and the model learns to put its probability elsewhere. An error, on most recent sampled steps, when most examples
    (median over the last third) give their target less than chance: not a mean dragged down by a few labels the model
    rejects with confidence (a loss robust to label noise)."""
    if not _marked_on_most(history, "target_log_probability", t):
        return []
    looked = [r for r in history.records if r.target_log_probability is not None]
    values = [r.target_log_probability["mean"] for r in looked]
    if len(values) < 3 * t.min_records or not all(math.isfinite(v) for v in values):
        return []
    third = len(values) // 3
    first, last = sum(values[:third]) / third, sum(values[-third:]) / third
    chance = math.log(1 / looked[-1].target_log_probability["classes"])
    thirds = _loss_thirds(history.current_loss())
    if thirds is None or not thirds[1] < thirds[0] or not (last < first and last < chance):
        return []
    # (most examples above chance: a few confidently rejected labels drag the mean, as a loss robust to label noise
    # does by design: symmetric cross-entropy on 40% noisy labels, 63% of the examples above chance)
    above = [r.target_log_probability.get("above_chance") for r in looked[-third:]]
    above = [share for share in above if share is not None and math.isfinite(share)]
    if above and median(above) >= 0.5:
        return []
    evidence = {
        "target_log_probability_first_third": _sci(first),
        "target_log_probability_last_third": _sci(last),
        "chance_log_probability": _sci(chance),
        "loss_first_third": _sci(thirds[0]),
        "loss_last_third": _sci(thirds[1]),
    }
    return [Finding("diverging_loss", "loss", looked[0].step, "error", evidence)]


# --- a loss maximised by its optimiser (maximize=True) ----------------------------------------------------------------
def maximized_loss_rule(history: History, t: Thresholds) -> list[Finding]:
    """The training optimiser was made with `maximize=True` (a line copied from code that maximised a reward), and
    the backward pass starts from a loss never negative (cross-entropy, a squared error): each step goes up the
    gradient instead of down it, and the error grows. Reported when it did (the loss of the last third above that
    of the first)."""
    marked = _marked_on_most(history, "maximized_loss", t)
    if not marked:
        return []
    loss = history.current_loss()
    thirds = _loss_thirds(loss)
    if len(loss) < t.loss_min_steps or thirds is None or not thirds[1] > thirds[0] >= 0:
        return []
    first, last = thirds
    evidence = {
        "maximized": marked[-1].maximized_loss,
        "loss_first_third": _sci(first),
        "loss_last_third": _sci(last),
        "error_grew_by": _sci(last / first) if first > 0 else None,
    }
    first_step = next(r.step for r in history.records if r.maximized_loss is not None)
    return [Finding("diverging_loss", "optimizer", first_step, "error", evidence)]


# --- a learning rate below zero ---------------------------------------------------------------------------------------
def negative_learning_rate_rule(history: History, t: Thresholds) -> list[Finding]:
    """The training optimiser's learning rate below 0 on a sampled step (a linear decay, `LambdaLR(opt, lambda s: 1 -
    s / total)`, run past `total`: its factor turns negative): each step then moves the weights along the gradient,
    up the loss. An error whatever the loss did since: no schedule means a negative rate (`maximize=True` is how an
    objective is climbed on purpose). Its evidence has the loss around the step the rate turned negative, and the
    last."""
    marked = [r for r in history.records if r.negative_lr is not None]
    if not marked:
        return []
    onset = marked[0].step
    loss = history.current_loss()
    before = [b for b in loss.buckets if b.first_step <= onset]
    after = loss.since(onset + 1).buckets
    evidence = {
        "negative_learning_rate": _sci(marked[-1].negative_lr),
        "negative_from_step": onset,
        "negative_on_sampled_steps": len(marked),
        "loss_when_negative": _sci(before[-1].mean) if before else None,
        "loss_last": _sci(after[-1].mean) if after else None,
        "nonfinite_loss_steps": loss.nonfinite_steps or None,
    }
    return [Finding("diverging_loss", "optimizer", onset, "error", evidence)]


def swapped_betas_rule(history: History, t: Thresholds) -> list[Finding]:
    """The training optimiser's Adam betas the wrong way round, beta1 > beta2 (`betas=(0.999, 0.9)`): the update is
    m / sqrt(v), m averaging the gradient over ~1/(1 - beta1) steps and v its square over ~1/(1 - beta2). With v the
    shorter memory, it drops as soon as recent gradients are small while m still holds old large ones, and the
    update grows far past lr. A warning; an error when the run shows it (a diverging loss, a gradient growing or
    exploding across depth: folded into it)."""
    marked = _marked_on_most(history, "swapped_betas", t)
    if not marked:
        return []
    first_step = next(r.step for r in history.records if r.swapped_betas is not None)
    evidence = {"adam_betas": marked[-1].swapped_betas}
    return [Finding("diverging_loss", "optimizer", first_step, "warning", evidence)]


def misspelt_setting_rule(history: History, t: Thresholds) -> list[Finding]:
    """A parameter group's learning rate (or momentum) given under a key the optimiser does not know
    (`{"params": head.parameters(), "learning_rate": 5e-2}`): torch.optim keeps the key and never reads it, and the
    group runs at the optimiser's default. Slower than written is a stall in the making, faster a divergence; an
    error when the rate in effect is `misspelt_rate_factor` (10) times off the one written or more, a warning else."""
    marked = _marked_on_most(history, "misspelt_setting", t)
    if not marked:
        return []
    found = marked[-1].misspelt_setting
    given, in_effect = found["given"], found["in_effect"]
    off = max(given, in_effect) / min(given, in_effect) if min(given, in_effect) > 0 else math.inf
    symptom = "stalled_loss" if given > in_effect else "diverging_loss"
    severity = "error" if found["meant"] == "lr" and off >= t.misspelt_rate_factor else "warning"
    first_step = next(r.step for r in history.records if r.misspelt_setting is not None)
    return [Finding(symptom, "optimizer", first_step, severity, {"misspelt_setting": found})]


def reinitialised_rule(history: History, t: Thresholds) -> list[Finding]:
    """Half or more of the model's weighted layers initialised again by `torch.nn.init` (`reset_parameters()`,
    `model.apply(init_weights)`) at two steps or more after the training had stepped them: each time, every update
    applied so far is thrown away (the init call slipped inside the epoch loop). An error at the modules (their common
    parent), the loss's stall or divergence folded into it. Not when the loss fell below half its first value at some
    point: a model trained anew on purpose (the folds of a cross-validation) learns in between."""
    again = {tally["module"]: tally for tally in history.reinitialised.values() if tally["times"] >= 2}
    buckets = history.loss.buckets
    if not again or not buckets or not min(b.mean for b in buckets) > buckets[0].first / 2:
        return []
    recent = history.recent()
    weighted = {name for name, layer in recent[-1].layers.items() if layer.has_weights} if recent else set()
    hit = sorted(weighted & set(again))
    if not weighted or 2 * len(hit) < len(weighted):
        return []
    evidence = {
        "reinitialised": {
            "modules": hit,
            "times": min(again[m]["times"] for m in hit),
            "first_step": min(again[m]["first_step"] for m in hit),
            "last_step": max(again[m]["last_step"] for m in hit),
        }
    }
    where = _common_prefix(hit) or "model"  # (the modules' common parent: `model` for model.0, model.2, model.4)
    return [Finding("unapplied_gradient", where, evidence["reinitialised"]["first_step"], "error", evidence)]


def momentum_not_decaying_rule(history: History, t: Thresholds) -> list[Finding]:
    """The training optimiser's momentum is 1 or more (`SGD(lr, momentum=1)`: momentum written as a switch): the
    velocity v = momentum * v + (1 - dampening) * g never decays, so each step applies the sum of every gradient so far
    (or, dampening 1, none of them), and never settles: an error whatever the loss did yet (a diverging loss, a gradient
    growing across depth or steps, are folded into it). No run wants it."""
    marked = _marked_on_most(history, "momentum_not_decaying", t)
    if not marked:
        return []
    first_step = next(r.step for r in history.records if r.momentum_not_decaying is not None)
    evidence = {"momentum_not_decaying": marked[-1].momentum_not_decaying}
    return [Finding("diverging_loss", "optimizer", first_step, "error", evidence)]


def decayed_rate_rule(history: History, t: Thresholds) -> list[Finding]:
    """The training optimiser decays its own rate (Adagrad's `lr_decay`: step t takes lr / (1 + (t - 1) lr_decay)) to at
    most `lr_schedule_cut` of the lr it was given, by the last sampled step. `Adagrad(params, 0.05, 0.9)`, an SGD line
    whose class was renamed, passes the momentum as the decay: a hundredth of the rate after 111 steps, a thousandth
    after 1,111, and the weights all but stop. A warning; an error with the stalled loss (folded into it)."""
    marked = _marked_on_most(history, "decayed_rate", t)
    if not marked or not marked[-1].decayed_rate[2] <= t.lr_schedule_cut * marked[-1].decayed_rate[1]:
        return []
    decay, given, in_effect = marked[-1].decayed_rate
    first_step = next(
        (r.step for r in history.records if r.decayed_rate and r.decayed_rate[2] <= t.lr_schedule_cut * given),
        marked[-1].step,
    )
    evidence = {"lr_decay": decay, "lr_given": _sci(given), "lr_in_effect": _sci(in_effect)}
    return [Finding("stalled_loss", "optimizer", first_step, "warning", evidence)]


def eps_dominates_rule(history: History, t: Thresholds) -> list[Finding]:
    """The training optimiser divides each step by sqrt(v) + eps, sqrt(v) about the size of each weight's gradient,
    and its eps is `eps_dominates` or more times that size (`Adam(..., eps=1.0)`): the denominator is eps, so each
    step is lr * m / eps instead of about lr, shrunk by eps / size on every weight alike. Told on most recent sampled
    steps, and only with a stalled loss (an error, the stall folded into it): late in a run that learns, gradients
    shrink below a large eps without harm."""
    if not _loss_is_stalled(history.current_loss(), t):
        return []
    marked = [r for r in history.recent() if _eps_dominates(r, t)]
    if len(marked) < t.min_records or 2 * len(marked) < len(history.recent()):
        return []
    eps = marked[-1].eps_against_gradient["eps"]
    size = median([r.eps_against_gradient["gradient_rms"] for r in marked])
    first_step = next(r.step for r in history.records if _eps_dominates(r, t))
    evidence = {"optimizer_eps": _sci(eps), "gradient_entry_rms": _sci(size), "steps_shrunk_by": _sci(eps / size)}
    return [Finding("stalled_loss", "optimizer", first_step, "warning", evidence)]


def _eps_dominates(record: StepRecord, t: Thresholds) -> bool:
    """Whether the optimiser's eps was `eps_dominates` or more times a typical gradient entry on this step."""
    found = record.eps_against_gradient
    return found is not None and found["eps"] >= t.eps_dominates * found["gradient_rms"]


def classes_on_another_axis_rule(history: History, t: Thresholds) -> list[Finding]:
    """`cross_entropy(logits, y)` given a Linear's output of shape (N, T, C), where it takes the classes on dim 1:
    (N, C, T). With T == C there is no shape error, and the softmax runs over the T positions of each sequence instead
    of the C classes: a class's score at one position competes with the same class's scores at the others. Told on
    most recent sampled steps: a warning, as the same shapes serve a softmax over positions on purpose (learning to
    sort: each slot's distribution over the items); an error with the stall folded into it. Likewise a hand-written
    cross-entropy whose log_softmax runs over dim 0 of a Linear's (N, C) output: over the batch."""
    marked = _marked_on_most(history, "classes_on_another_axis", t)
    if not marked:
        return []
    found = marked[-1].classes_on_another_axis
    first_step = next(r.step for r in history.records if r.classes_on_another_axis is not None)
    if found.get("mixed_by_view"):  # (always wrong: no softmax means its rows to mix classes and positions)
        evidence = {"classes_mixed_by_view": {k: found[k] for k in ("input_shape", "shape", "dim")}}
        evidence["classes_from"] = found["layer"]
        return [Finding("wrong_gradient", "view", first_step, "error", evidence)]
    evidence = {"classes_from": found["layer"], "logits_shape": found["shape"], "softmax_dim": found["dim"]}
    if found.get("stacked"):
        evidence["stacked"] = True  # (a decoder's steps' scores, stacked on dim 1: a pointer network's)
    if found.get("over_batch"):
        evidence["softmax_over_batch"] = True  # (log_softmax(logits, dim=0) of an (N, C) output, by hand)
    return [Finding("stalled_loss", "cross_entropy", first_step, "warning", evidence)]


def self_similarity_rule(history: History, t: Thresholds) -> list[Finding]:
    """cross_entropy over z @ z.T with targets 0, 1, ..., N - 1: each row's class is its own similarity to itself
    (`z1 @ z1.T` where a contrastive loss meant `z1 @ z2.T`). For unit vectors that entry is 1, the largest, whatever
    the weights: the positive term passes no gradient to them, and the loss only pushes the examples apart. An error,
    on most recent sampled steps."""
    marked = _marked_on_most(history, "self_similarity", t)
    if not marked:
        return []
    found = marked[-1].self_similarity
    first_step = next(r.step for r in history.records if r.self_similarity is not None)
    evidence = {"self_similarity_of": found["embedding"], "rows": found["rows"]}
    return [Finding("blocked_gradient", "mm", first_step, "error", evidence)]


def _on_every_look(looks: list[list], key: str) -> dict | None:
    """The last look's first entry when every look (at least 2) holds an entry with its `key` (the same layer or
    site, seen each time a classifier's targets were counted), else None."""
    if len(looks) < 2 or not all(looks):
        return None
    found = looks[-1][0]
    return found if all(any(entry[key] == found[key] for entry in look) for look in looks) else None


def batch_as_sequence_rule(history: History, t: Thresholds) -> list[Finding]:
    """A layer that takes (sequence, batch, features) (`batch_first=False`, PyTorch's default for nn.MultiheadAttention,
    nn.LSTM and the Transformer layers) given an input whose first axis holds as many entries as the classifier's
    targets and whose second does not, on every look (at least 2): it was given (batch, sequence, features), and takes
    the examples for the steps of one sequence. Attention then mixes the examples, a recurrence runs across them.
    A warning; an error with the stalled loss (folded into it)."""
    found = _on_every_look(history.batch_as_sequence, "layer")
    if found is None:
        return []
    evidence = {"batch_as_sequence": True, "input_shape": found["input_shape"], "batch": found["batch"]}
    evidence["recurrent"] = found.get("recurrent", False)
    return [Finding("stalled_loss", found["layer"], 0, "warning", evidence)]


def examples_mixed_rule(history: History, t: Thresholds) -> list[Finding]:
    """A view that turns a tensor with the examples on a later axis into (batch, ...) without moving that axis first
    (`h_n.view(N, -1)` of a bidirectional RNN's (2, N, H)), on every look at a classifier's targets (at least 2):
    each row of its output holds pieces of several examples, so each prediction is made from other examples'
    features: a `stalled_loss` error at the view (the model cannot learn the task from mixed rows). Or a softmax over
    dim 0, the examples' axis (`softmax_over_the_examples`), or a (N, T, ...) viewed as (T, N, ...) (a view written
    for a transpose), or a per-example product summed over every axis, the batch's too, and added to each example
    (`(U(u) * V(i)).sum()` for `.sum(dim=1)`, `batch_summed_into_each`): a `wrong_gradient` error at the
    softmax, the view or the sum."""
    found = _on_every_look(history.examples_mixed, "site")
    if found is None:
        return []
    evidence = {"examples_mixed": True, **{key: value for key, value in found.items() if key != "site"}}
    # (a softmax over the examples, or a (N, T, ...) viewed as (T, N, ...) for a sequence-first layer: the model may
    # learn, wrongly, each example helped by the others)
    wrongly = found.get("softmax_dim") == 0 or found.get("swapped_by_view") or found.get("integer_mask")
    wrongly = (
        wrongly or found.get("summed_over_batch") or found.get("column_added_to_row")
    )  # (a product summed over the batch too, added to each example)
    symptom = "wrong_gradient" if wrongly else "stalled_loss"
    return [Finding(symptom, found["site"], 0, "error", evidence)]


def outputs_alike_rule(history: History, t: Thresholds) -> list[Finding]:
    """On the first 2 sampled steps (both), every weighted layer whose output the loss reads gave the
    same output for every example of the batch (spread below `outputs_alike` of its size) while the weighted layer
    that ran just before them gave outputs that differ (`inputs_alike` or more): between the two, something discards
    what tells the examples apart, and the prediction cannot depend on the example. Named at the output layer: an
    error. (A spread that fades layer after layer, through saturated sigmoids, is the depth's doing, told there.)"""
    marked = []
    for spreads, read in history.layer_spreads:
        outputs = [name for name in read if name in spreads and math.isfinite(spreads[name])]
        if not outputs or not all(spreads[name] < t.outputs_alike for name in outputs):
            continue
        order = list(spreads)
        first_output = min(order.index(name) for name in outputs)
        before = order[first_output - 1] if first_output > 0 else None
        if before is not None and spreads[before] >= t.inputs_alike:  # (lost at once, not faded layer by layer)
            marked.append((outputs, before, max(spreads[name] for name in outputs)))
    if len(marked) < 2 or len(marked) < len(history.layer_spreads):
        return []
    outputs, differing, _ = marked[-1]
    evidence = {
        "outputs_alike": outputs,
        "spread": _sci(median([spread for _, _, spread in marked])),
        "last_differing": differing,
        "looks": len(marked),
    }
    return [Finding("blocked_gradient", outputs[0], 0, "error", evidence)]


def rows_written_twice_rule(history: History, t: Thresholds) -> list[Finding]:
    """An `index_put` that does not accumulate, or an `index_copy`, writing computed values at an index that repeats
    (`agg[dst] += m[src]` for a graph's messages, several edges into one node), on most recent sampled steps: the
    forward keeps one value per place and drops the others, the backward sends gradient to all of them. A
    `wrong_gradient` error at the write (`index_add` or `index_put_(..., accumulate=True)` sums them)."""
    marked = _marked_on_most(history, "rows_written_twice", t)
    if not marked:
        return []
    site, (writes, repeated) = next(iter(marked[-1].rows_written_twice.items()))
    first_step = _first_marked(history, "rows_written_twice")
    evidence = {"rows_written_twice": True, "writes": writes, "repeated_writes": repeated, "sampled_steps": len(marked)}
    return [Finding("wrong_gradient", site, first_step, "error", evidence)]


def draw_without_path_rule(history: History, t: Thresholds) -> list[Finding]:
    """A distribution whose parameters a model computed (a VAE's mean and scale) sampled with `sample()`, which draws
    under no_grad, and the draw read by a module (the decoder), on most recent sampled steps: everything computed
    from the draw passes no gradient back to those parameters (`rsample()` was meant). An error."""
    marked = _marked_on_most(history, "decoded_draws", t)
    if not marked:
        return []
    distribution, module = next(iter(marked[-1].decoded_draws.items()))
    first_step = next(r.step for r in history.records if r.decoded_draws)
    evidence = {"drawn_from": distribution, "read_by": module, "sampled_steps": len(marked)}
    where = distribution if distribution == "torch.normal" else f"{distribution}.sample"
    return [Finding("blocked_gradient", where, first_step, "error", evidence)]


def one_class_over_pairs_rule(history: History, t: Thresholds) -> list[Finding]:
    """cross_entropy over a contrastive (N, N) similarity `z1 @ z2.T` with one class for every row (`torch.zeros(N)`
    where `torch.arange(N)` is meant: each example's pair is on the diagonal), on most recent sampled steps: every
    row is pulled towards the batch's first example, a task with nothing to learn. A `stalled_loss` error."""
    marked = _marked_on_most(history, "one_class_over_pairs", t)
    if not marked:
        return []
    first = next(r.step for r in history.records if r.one_class_over_pairs is not None)
    evidence = {"one_class_over_pairs": True, **marked[-1].one_class_over_pairs}
    return [Finding("stalled_loss", "cross_entropy", first, "error", evidence)]


def confined_logits_rule(history: History, t: Thresholds) -> list[Finding]:
    """cross_entropy over cosine similarities times a constant c only (`F.normalize(a) @ F.normalize(b).T * tau`, a
    temperature multiplied where it divides), or times a learnt scale whose value is c (a learnt temperature divided
    where CLIP multiplies, `/ logit_scale.exp()`): every score lies within +-c, whatever the weights, so the softmax can
    give the target at most p = 1 / (1 + (classes - 1) exp(-2c)), and the loss cannot fall below -log p. When that
    floor is `confined_logits` of the loss at chance (log classes) or more, on most recent sampled steps: an error, the
    stall folded into it. (InfoNCE over hundreds of candidates at a temperature of 0.5 or 1 is bounded too, far below
    chance: not this.)"""
    marked = _marked_on_most(history, "confined_logits", t)
    if not marked:
        return []
    factor, classes = marked[-1].confined_logits["factor"], marked[-1].confined_logits["classes"]
    best = 1.0 / (1.0 + (classes - 1) * math.exp(-2.0 * factor))
    if -math.log(best) < t.confined_logits * math.log(classes):
        return []
    first_step = next(r.step for r in history.records if r.confined_logits is not None)
    evidence = {
        "logits_within": _sci(factor),
        "classes": classes,
        "max_target_probability": _sci(best),
        "loss_floor": _sci(-math.log(best)),
        "loss_at_chance": _sci(math.log(classes)),
    }
    if marked[-1].confined_logits.get("learnt_scale"):  # (a learnt temperature, its value at the last look)
        evidence["learnt_scale"] = marked[-1].confined_logits["learnt_scale"]
    return [Finding("stalled_loss", "cross_entropy", first_step, "error", evidence)]


# --- a loss never negative, below zero: its input left the domain ----------------------------------------------------
def loss_below_zero_rule(history: History, t: Thresholds) -> list[Finding]:
    """A loss that is never negative while its input is in its domain came out negative: binary cross-entropy given
    targets outside [0, 1] (masks of 0 and 255), nll_loss given scores that are not log-probabilities (logits, or
    probabilities, without log_softmax). Outside the domain the loss has no lower bound: -t log(sigma(z)) with t = 255
    falls without end as z grows, so the training drives the logits (and the loss) towards -infinity instead of
    fitting the data. Impossible in the domain, so one mark is enough: the recent records minimise such a loss, and
    at least `min_records` of all the records kept recorded it below zero."""
    if not _marked_on_most(history, "loss_with_domain", t):
        return []
    below = [r for r in history.records if r.loss_with_domain and r.loss is not None and r.loss < -t.loss_below_zero]
    if len(below) < t.min_records:
        return []
    finite = [r.loss for r in below if math.isfinite(r.loss)]
    evidence = {
        "loss_function": below[-1].loss_with_domain,
        "loss_lowest": _sci(min(finite)) if finite else None,  # (it may have gone on to -inf)
        "records_below_zero": len(below),
        "records": len(history.records),
    }
    measured = next((r.loss_outside_domain for r in below if r.loss_outside_domain), None)
    if measured is not None:  # (read on the CPU: the range of the input at fault, on the first step found negative)
        evidence.update(
            input=measured["input"], input_low=_sci(measured["low"]), input_high=_sci(measured["high"]),
            domain=measured["domain"],
        )  # fmt: skip
    return [Finding("diverging_loss", "loss", below[0].step, "error", evidence)]


def kl_div_of_probabilities_rule(history: History, t: Thresholds) -> list[Finding]:
    """`F.kl_div(F.softmax(s), target)` on most recent sampled steps: kl_div reads its input as log-probabilities and
    computes sum(t log t - t * input); given probabilities p, that is linear in p and always negative, and its
    gradient, -t, raises each class in proportion to the target's mass: the student is pushed onto the target's top
    class, not towards its distribution."""
    marked = _marked_on_most(history, "kl_div_of_probabilities", t)
    if not marked:
        return []
    first = next(r.step for r in history.records if r.kl_div_of_probabilities)
    losses = [r.loss for r in marked if r.loss is not None and math.isfinite(r.loss)]
    evidence = {"kl_div_input": marked[-1].kl_div_of_probabilities, "sampled_steps": len(marked)}
    if losses:
        evidence["loss_median"] = _sci(median(losses))
    return [Finding("wrong_gradient", "kl_div", first, "error", evidence)]


def previous_token_targets_rule(history: History, t: Thresholds) -> list[Finding]:
    """A token classifier whose targets are, on every look (at least 2), at least `previous_token_share` the token its
    input held one position back (`inp, tgt = seq[:, 1:], seq[:, :-1]`): the model is taught to repeat what it has
    just read, which a recurrence does from its state at once, and learns nothing of what comes next. A
    `wrong_gradient` error at cross_entropy."""
    looks = [r.previous_token_targets for r in history.records if r.previous_token_targets is not None]
    if len(looks) < 2 or min(looks) < t.previous_token_share:
        return []
    first = _first_marked(history, "previous_token_targets")
    evidence = {"previous_token_targets": _sci(min(looks)), "looks": len(looks)}
    return [Finding("wrong_gradient", "cross_entropy", first, "error", evidence)]


def unshifted_targets_rule(history: History, t: Thresholds) -> list[Finding]:
    """A token classifier whose targets are, on every look (at least 2), at least `unshifted_share` the token its input
    holds at their own position, none of its grids' next tokens among them, in a model that embeds two grids of tokens
    (a seq2seq decoder fed its targets unshifted) or whose loss counts under `unshifted_counted` of its targets (a
    masked LM whose labels were read after masking): each position is given its answer, the loss falls to 0, and
    nothing is learnt that generation or held-out prediction can use. A `wrong_gradient` error at cross_entropy."""
    looks = [r.unshifted_targets for r in history.records if r.unshifted_targets is not None]
    shares = [look["share"] for look in looks]
    if len(looks) < 2 or any(share is None or not share >= t.unshifted_share for share in shares):
        return []
    grids = max(look["grids"] or 0 for look in looks)
    counted = max(look["counted"] or 0 for look in looks)
    if grids < 2 and not counted < t.unshifted_counted:
        return []  # (a token autoencoder: one grid, every position predicted, copied through a bottleneck on purpose)
    first = _first_marked(history, "unshifted_targets")
    evidence = {"unshifted_targets": _sci(min(shares)), "token_grids": int(grids), "targets_counted": _sci(counted)}
    evidence["looks"] = len(looks)
    return [Finding("wrong_gradient", "cross_entropy", first, "error", evidence)]


def multi_hot_margin_rule(history: History, t: Thresholds) -> list[Finding]:
    """`nn.MultiLabelMarginLoss` given a multi-hot target of 0s and 1s over more than two classes, on most recent
    sampled steps: it reads its target as class indices, each row's list ended by -1, so every example is trained
    for classes 0 and 1 (its first entries), whatever its labels. A `wrong_gradient` error at the loss."""
    marked = _marked_on_most(history, "multi_hot_margin", t)
    if not marked:
        return []
    first = _first_marked(history, "multi_hot_margin")
    evidence = {
        "multi_hot_target": True,
        "classes": marked[-1].multi_hot_margin["classes"],
        "sampled_steps": len(marked),
    }
    return [Finding("wrong_gradient", "multilabel_margin_loss", first, "error", evidence)]


def updates_undone_rule(history: History, t: Thresholds) -> list[Finding]:
    """The weights, measured every 16 steps, within `undone_updates` single updates of where they were at the first
    sampled step, on most of the measures taken `undone_after` steps or more after it (at least `min_records`): the
    optimiser moves them at every step, and something writes them back before the next one (SAM's restore after its
    base step, a Lookahead reset before its slow weights move, weights re-quantised in place in forward). Each
    update is thrown away: an `unapplied_gradient` error at the model."""
    looks = [
        (r.step, r.displacement["updates"], r.displacement["since_step"])
        for r in history.records
        if r.displacement is not None and r.step - r.displacement["since_step"] >= t.undone_after
    ]
    near = [step for step, updates, _ in looks if updates <= t.undone_updates]
    if len(looks) < t.min_records or 2 * len(near) <= len(looks):
        return []
    evidence = {
        "displacement_in_updates": _sci(median([updates for _, updates, _ in looks])),
        "since_step": looks[-1][2],
        "measures": len(looks),
        "measures_near_start": len(near),
        "updates_undone": True,
    }
    where = history.models[0] if len(history.models) == 1 else "optimizer"
    return [Finding("unapplied_gradient", where, near[0], "error", evidence)]


def kl_div_target_below_zero_rule(history: History, t: Thresholds) -> list[Finding]:
    """`F.kl_div(log_q, target)` whose target has negative entries on most recent sampled steps: logits given where
    probabilities are read (a teacher's `t_logits / T` without its softmax). kl_div's t log t is NaN at a negative
    t, and its gradient -t pushes the student towards the raw logits' order with no sense of a distribution. A
    `wrong_gradient` error at kl_div; the NaN it makes is told as its doing."""
    # (read on every record, the poisoned ones too: the target's sign is the data's, and its NaN comes at once)
    first = next((r.step for r in history.records if r.kl_div_target_below_zero), None)
    since = [r for r in history.records if first is not None and r.step >= first]
    marked = [r for r in since if r.kl_div_target_below_zero]
    if len(marked) < t.min_records or 2 * len(marked) < len(since):
        return []
    evidence = {"kl_div_target": "below zero", "sampled_steps": len(marked)}
    return [Finding("wrong_gradient", "kl_div", first, "error", evidence)]


def loss_without_floor_rule(history: History, t: Thresholds) -> list[Finding]:
    """The loss fell below -`loss_without_floor`, to `loss_without_floor_growth` times the size of its first value or
    more: a term of it has no lower bound and is being minimised (a KL divergence added with its sign flipped,
    `+0.5 * sum(1 + logvar - mu^2 - exp(logvar))`; a variance's log driven to -infinity). Told by the loss's curve
    alone; a loss whose sign or domain is known to be at fault is told by its own rule (fold_explained)."""
    buckets = [b for b in history.loss.buckets if math.isfinite(b.low)]
    if not buckets:
        return []
    first = history.loss.buckets[0].first
    below = next((b for b in buckets if b.low < -t.loss_without_floor), None)
    lowest = min(b.low for b in buckets)
    if below is None or not math.isfinite(first) or -lowest < t.loss_without_floor_growth * max(abs(first), 1.0):
        return []
    evidence = {"falls_without_bound": True, "loss_first": _sci(first), "loss_lowest": _sci(lowest)}
    return [Finding("diverging_loss", "loss", below.first_step, "error", evidence)]


def _the_loss_running_off(f: Finding, unbounded: Finding) -> bool:
    """A non-finite value first made by the loss itself, unbounded below (`loss_below_zero_rule`): it ran to -inf."""
    return f.symptom == "nonfinite" and f.where == unbounded.evidence["loss_function"]


# --- a prediction squashed into a range its targets are not in -------------------------------------------------------
def targets_out_of_reach_rule(history: History, t: Thresholds) -> list[Finding]:
    """A regression loss's prediction comes straight out of a ReLU, softplus or exp (>= 0), sigmoid (0..1) or tanh
    (-1..1), and a share of the targets lies outside that range on most recent sampled steps: those can never be
    fitted. A ReLU's predictions pushed towards a negative target stop at 0, where it passes no gradient (a blocked
    gradient); the others' are pushed into their flat tails (a saturated activation). A ReLU after a regressor's
    last layer with standardised targets, half of them negative, is the usual case."""
    marked = _marked_on_most(history, "targets_out_of_reach", t)
    if not marked:
        return []
    share = median([r.targets_out_of_reach["targets_outside"] for r in marked])
    severity = _grade(share, t.targets_out_of_reach_warning, t.targets_out_of_reach_error, below=False)
    if severity is None:
        return []
    last = marked[-1].targets_out_of_reach
    symptom = "blocked_gradient" if last["activation"] == "relu" else "saturated_activation"
    evidence = {
        "targets_outside": _sci(share),
        "prediction_activation": last["activation"],
        "prediction_range": last["range"],
        "regression_loss": last["loss"],
        "prediction_module": last["module"],
    }
    first = next(r.step for r in history.records if r.targets_out_of_reach is not None)
    return [Finding(symptom, last["module"] or last["activation"], first, severity, evidence)]


NO_BRANCH_SHARE = 0.25  # examples no branch of a loss's where-pair takes, from which it is told (the other: never)


def no_branch_taken_rule(history: History, t: Thresholds) -> list[Finding]:
    """The loss adds two `torch.where` terms, `where(c1, a, 0) + where(c2, b, 0)` (how `cosine_embedding_loss`
    computes itself, c1: target == 1, c2: target == -1), the second condition held for no example and neither for a
    quarter of them or more, on most recent sampled steps: those examples add 0 and pass no gradient, and the second
    term never acts. Targets of 0 and 1 given where 1 and -1 are expected. An error."""
    marked = _marked_on_most(history, "no_branch_taken", t)
    if not marked:
        return []
    neither = median([r.no_branch_taken[0] for r in marked])
    second = max(r.no_branch_taken[1] for r in marked)
    if not (second == 0 and neither >= NO_BRANCH_SHARE):
        return []
    evidence = {"examples_no_branch_takes": _sci(neither), "second_branch_taken": 0.0}
    first = next(r.step for r in history.records if r.no_branch_taken is not None)
    return [Finding("blocked_gradient", "where", first, "error", evidence)]


def gather_across_batch_rule(history: History, t: Thresholds) -> list[Finding]:
    """The loss picks entries of a module's (N, C) output with `gather` along dim 0, the batch axis, one index per
    example, and reads at most half of the N rows (median over most recent sampled steps): `q.gather(0, a[:, None])`
    where `gather(1, ...)` was meant. Example i reads row a[i], another example's; the rows no index names get no
    gradient, whatever their examples were. An error."""
    marked = _marked_on_most(history, "gather_across_batch", t)
    if not marked:
        return []
    read = median([r.gather_across_batch["rows_read"] for r in marked])
    if not read <= 0.5:
        return []
    last = marked[-1].gather_across_batch
    evidence = {"gathered_along": 0, "rows_read": _sci(read), "batch": last["batch"], "columns": last["columns"]}
    evidence["output_of"] = last["module"]
    first = next(r.step for r in history.records if r.gather_across_batch is not None)
    return [Finding("blocked_gradient", "gather", first, "error", evidence)]


# --- learnable tensors that no optimiser can see ---------------------------------------------------------------------
def loose_leaf_rule(history: History, t: Thresholds) -> list[Finding]:
    """A tensor held by a module that gets a gradient on every look but is no parameter the optimisers know: a plain
    tensor made with `requires_grad=True`, never changed since (no optimiser steps it: `parameters()` leaves it
    out), or one the script holds beside the model, a few numbers that no layer reads (an inverse problem's unknown
    coefficient left out of the optimiser); or an `nn.Parameter` registered in `forward()`, a new object at every
    look (made after the optimiser, and made again from its initial value at every call), or held by a layer built in
    `forward()` and so by no watched module. Its gradient is computed and thrown away."""
    findings = []
    for path, tally in sorted(history.loose_leaves.items()):
        if tally["looks"] < t.min_records:
            continue
        if tally["kind"] in ("tensor", "script") and tally["renewed"] == 0 and not tally["changed"]:
            evidence = {"not_a_parameter": True, "looks": tally["looks"]}
            if tally["kind"] == "script":  # (held by the script, outside the model: no optimiser was given it)
                evidence["held_by_script"] = True
        elif tally["kind"] == "parameter" and tally["renewed"] == tally["looks"] - 1:
            evidence = {"recreated_each_step": True, "looks": tally["looks"]}
        elif tally["kind"] == "made" and tally["renewed"] == tally["looks"] - 1:  # (a layer built in forward())
            evidence = {"recreated_each_step": True, "looks": tally["looks"], "made_in_forward": True}
        else:
            continue
        findings.append(Finding("unapplied_gradient", path, tally["first_step"], "error", evidence))
    return findings


# --- gradients reset between the micro-batches of one step -----------------------------------------------------------
def reset_between_backwards_rule(history: History, t: Thresholds) -> list[Finding]:
    """Several backward passes per optimiser step, and the gradients reset between them on most recent sampled steps,
    with each loss divided by a constant k >= 2 (gradient accumulation's `loss / k`: zero_grad() sits inside the loop
    over micro-batches), or with three passes or more of one loss, the step applying the last pass's gradient as that
    pass left it, on the weights every pass saw (`step()` dedented out of the loop over batches). Each step applies
    the last batch's gradient alone; the others' are computed and thrown away. (SAM's two passes move the weights in
    between; per-example gradients summed by hand into `.grad` are not the last pass's.)"""
    recent = history.recent()
    checked = [r for r in recent if r.reset_between_backwards is not None]
    marked = [r for r in checked if _reset_between_backward_passes(r)]
    # (each record counts its resets: a step of forty passes, each after a reset, is evidence enough)
    enough = len(marked) >= t.min_records or sum(r.reset_between_backwards[0] for r in marked) >= t.resets_enough
    if not enough or 2 * len(marked) < len(checked) or 2 * len(checked) < len(recent):
        return []
    evidence = {
        "reset_between_backward_passes": True,
        "backward_passes_per_step": median([r.reset_between_backwards[1] + 1 for r in marked]),
        "sampled_steps": len(marked),
    }
    scale = median([abs(r.reset_between_backwards[2] or 1.0) for r in marked])
    if 0 < scale <= 0.5:
        evidence["loss_divided_by"] = _sci(1 / scale)
    first = next(r.step for r in history.records if _reset_between_backward_passes(r))
    return [Finding("unapplied_gradient", "optimizer", first, "error", evidence)]


def _reset_between_backward_passes(record: StepRecord) -> bool:
    """Every backward pass of the step that followed another found the gradients reset, and either the loss was
    divided by a constant of 2 or more (scaled by at most 1/2), or the step applied the last pass's gradient alone."""
    if record.reset_between_backwards is None:
        return False
    resets, pairs, scale, only_the_last_stepped = record.reset_between_backwards
    divided = scale is not None and 0 < abs(scale) <= 0.5
    return resets == pairs and (divided or only_the_last_stepped)


# --- dropout on the prediction itself ------------------------------------------------------------------------------
def dropout_into_loss_rule(history: History, t: Thresholds) -> list[Finding]:
    """A dropout module in training mode whose output the loss reads directly, on most recent sampled steps: the
    prediction itself (the logits) has a share p of its entries zeroed at random at every step and the rest
    scaled by 1 / (1 - p). The loss's gradient reaches none of the dropped entries, and to beat the noise the
    network grows the logits. A warning; an error when the loss diverges or stalls (folded into it)."""
    marked = _marked_on_most(history, "dropout_into_loss", t)
    if not marked:
        return []
    found = marked[-1].dropout_into_loss
    evidence = {"dropout_on_prediction": True, "p": found["p"], "blocked_fraction": found["p"]}
    first = next(r.step for r in history.records if r.dropout_into_loss is not None)
    return [Finding("blocked_gradient", found["module"], first, "warning", evidence)]


# --- a regression's targets left in raw units ----------------------------------------------------------------------
def raw_targets_rule(history: History, t: Thresholds) -> list[Finding]:
    """A regression loss whose targets, on the first sampled steps, were far larger than anything a freshly made
    network outputs (house prices of 2e5 against predictions near 0): the loss's gradient, 2 (prediction - target),
    is of the targets' size, and backprop scales every layer's gradient by it. A warning; an error when the run
    shows it (a gradient exploding or growing, a loss diverging or stalled: those findings are folded into it)."""
    scale = history.target_scale
    # (a Huber loss's gradient is capped at delta, whatever the targets' size: only far larger ones are told there)
    bounded = scale is not None and scale["loss"] in ("huber_loss", "smooth_l1_loss")
    threshold = t.raw_target_rms_bounded if bounded else t.raw_target_rms
    if scale is None or not math.isfinite(scale["target_rms"]) or not scale["target_rms"] > threshold:
        return []  # (targets holding NaN or Inf are the nonfinite finding's: their size means nothing)
    if not scale["target_rms"] > t.raw_target_ratio * scale["prediction_rms"]:  # (a head started at the targets' mean)
        return []
    first = history.records[0].grad_norm if history.records else None
    evidence = {
        "across": "target scale",
        "target_rms": _sci(scale["target_rms"]),
        "prediction_rms": _sci(scale["prediction_rms"]),
        "grad_norm_first": _sci(first) if first is not None else None,
    }
    return [Finding("exploding_gradient", scale["loss"], scale["step"], "warning", evidence)]


# --- updates rounded away in half precision -------------------------------------------------------------------------
def rounded_away_rule(history: History, t: Thresholds) -> list[Finding]:
    """Half-precision weights (a model cast to bfloat16) whose optimiser step leaves most of the entries a nonzero
    gradient pushed unchanged, on most recent sampled steps: bfloat16 keeps 8 significant bits, so an update below
    about |w|/256 rounds back to w. The gradient is computed and then lost to rounding. One finding for the layers
    where the median share changed is under `updated_share_low`."""
    recent = history.recent()
    marked = [r for r in recent if r.updated_share]
    if len(marked) < t.min_records or 2 * len(marked) < len(recent):
        return []
    shares = {}
    for layer in sorted({name for r in marked for name in r.updated_share}):
        values = [r.updated_share[layer] for r in marked if layer in r.updated_share]
        if len(values) >= t.min_records and median(values) < t.updated_share_low:
            shares[layer] = median(values)
    if not shares:
        return []
    ratios = [r.layers[name].update_ratio for r in marked for name in shares if name in r.layers]
    ratios = [x for x in ratios if x is not None]
    evidence = {
        "dtype": marked[-1].half_precision,
        "updated_share": {name: _sci(share) for name, share in shares.items()},
        "update_ratio_median": _sci(median(ratios)) if ratios else None,
        "sampled_steps": len(marked),
    }
    first = next(r.step for r in history.records if r.updated_share)
    where = _common_prefix(list(shares)) or min(shares)
    severity = "error" if median(list(shares.values())) < t.updated_share_error else "warning"
    return [Finding("unapplied_gradient", where, first, severity, evidence)]


# --- a softmax over an axis of length 1 ------------------------------------------------------------------------------
def softmax_over_one_rule(history: History, t: Thresholds) -> list[Finding]:
    """A softmax taken over an axis of length 1 (attention pooling's `softmax(scores, dim=-1)` on scores of shape
    (N, T, 1), meant over T) on most recent sampled steps: every output is exactly 1, whatever the scores, and its
    derivative exactly 0, so nothing that computes the scores ever gets a gradient."""
    marked = _marked_on_most(history, "softmax_over_one", t)
    if not marked:
        return []
    findings = []
    for op, found in sorted(marked[-1].softmax_over_one.items()):
        first = next(r.step for r in history.records if r.softmax_over_one and op in r.softmax_over_one)
        evidence = {"blocked_fraction": 1.0, "site": found["after"] or "input", "axis_length": 1, **found}
        findings.append(Finding("blocked_gradient", op, first, "error", evidence))
    return findings


def one_hot_softmax_rule(history: History, t: Thresholds) -> list[Finding]:
    """A softmax inside the model (not an attention's, not the loss's) whose rows are exactly one-hot, one entry 1 and
    the others exactly 0 (score gaps past ~100, as a temperature of 1e-4 makes them), on `one_hot_rows_warning` of
    them or more (median over the recent sampled steps that looked, at least `min_records`, most of them): its
    Jacobian diag(p) - p p^T is exactly 0 on those rows, and nothing that computes its input gets a gradient from
    them (a Gumbel-softmax annealed to tau = 1e-4: the encoder's gradient exactly 0). A `blocked_gradient` at the
    softmax; an error from `one_hot_rows_error`."""
    recent = history.recent()
    looked = [r for r in recent if r.one_hot_rows]
    if len(looked) < t.min_records or 2 * len(looked) < len(recent):
        return []
    findings = []
    for site in sorted({site for r in looked for site in r.one_hot_rows}):
        shares = [r.one_hot_rows[site]["share"] for r in looked if site in r.one_hot_rows]
        shares = [share for share in shares if math.isfinite(share)]
        if len(shares) < t.min_records or 2 * len(shares) < len(looked) or median(shares) < t.one_hot_rows_warning:
            continue
        latest = next(r.one_hot_rows[site] for r in reversed(looked) if site in r.one_hot_rows)
        first = next(
            r.step
            for r in history.records
            if r.one_hot_rows and r.one_hot_rows.get(site, {}).get("share", 0) >= t.one_hot_rows_warning
        )
        evidence = {"one_hot_rows": _sci(median(shares)), "entries": latest["entries"]}
        if latest["divided_by"] is not None:
            evidence["divided_by"] = _sci(latest["divided_by"])
        severity = "error" if median(shares) >= t.one_hot_rows_error else "warning"
        findings.append(Finding("blocked_gradient", site, first, severity, evidence))
    return findings


# --- a straight-through estimator that turns the gradient around ----------------------------------------------------
def turned_straight_through_rule(history: History, t: Thresholds) -> list[Finding]:
    """A straight-through estimator written `round(z) - z + z.detach()` (the detach on the wrong term), on most
    recent sampled steps: the forward is round(z) as meant, but the gradient reaching z is -g, so everything before it
    steps up the loss. A `wrong_gradient` error at the op."""
    marked = _marked_on_most(history, "turned_straight_through", t)
    findings = []
    for op, after in sorted((marked[-1].turned_straight_through if marked else {}).items()):
        first = next(r.step for r in history.records if r.turned_straight_through and op in r.turned_straight_through)
        findings.append(Finding("wrong_gradient", op, first, "error", {"straight_through_turned": True, "site": after}))
    return findings


# --- a distillation's teacher trained by its own soft targets ----------------------------------------------------
def target_trained_rule(history: History, t: Thresholds) -> list[Finding]:
    """A KL divergence whose target distribution comes, with its graph, from modules of their own (not the
    prediction's) whose parameters an optimiser steps, on most recent sampled steps: a distillation whose teacher
    was not frozen. A `wrong_gradient` error at the target's module."""
    marked = _marked_on_most(history, "target_trained", t)
    if not marked:
        return []
    found = marked[-1].target_trained
    first = next(r.step for r in history.records if r.target_trained is not None)
    teacher = _common_prefix(found["target_modules"]) or found["target_modules"][0]
    student = _common_prefix(found["prediction_modules"]) or "input"
    evidence = {"target_trained": True, "target_module": teacher, "prediction_module": student}
    return [Finding("wrong_gradient", teacher, first, "error", evidence)]


# --- a tensor subtracted from itself ---------------------------------------------------------------------------------
def difference_of_itself_rule(history: History, t: Thresholds) -> list[Finding]:
    """A `sub` whose two inputs are one tensor (`a - a`), on most recent sampled steps: its value is 0 whatever `a`
    is, and the gradient it passes back, g - g, exactly 0. A triplet loss given the anchor as its own positive
    (`TripletMarginLoss()(a, a, n)`) learns from its negatives only, and its hinge is met from the first step."""
    marked = _marked_on_most(history, "difference_of_itself", t)
    if not marked:
        return []
    first = next(r.step for r in history.records if r.difference_of_itself is not None)
    evidence = {"blocked_fraction": 1.0, "site": marked[-1].difference_of_itself, "difference_of_itself": True}
    return [Finding("blocked_gradient", "sub", first, "error", evidence)]


def summed_beside_a_mean_rule(history: History, t: Thresholds) -> list[Finding]:
    """A loss function called with `reduction="sum"` added beside one that takes the mean, its weight times its terms
    `summed_weight_ratio` or more times the mean's weight, on most recent sampled steps: the summed term's gradient
    drowns the other's in every layer they share (a VAE's summed reconstruction copied beside a classifier's mean
    cross-entropy). A warning at the summed loss: the weighting may be meant."""
    marked = [r for r in _marked_on_most(history, "summed_beside_a_mean", t)]
    marked = [r for r in marked if r.summed_beside_a_mean["weight_ratio"] >= t.summed_weight_ratio]
    if len(marked) < t.min_records:
        return []
    found = marked[-1].summed_beside_a_mean
    first = _first_marked(history, "summed_beside_a_mean")
    evidence = {"summed_beside_a_mean": {**found, "weight_ratio": _sci(found["weight_ratio"])}}
    return [Finding("stalled_loss", found["summed"], first, "warning", evidence)]


def softmax_over_queries_rule(history: History, t: Thresholds) -> list[Finding]:
    """Attention weights normalised over the queries (`softmax(q @ k.T, dim=-2)`, dim=1 of (B, T_q, T_k)) and applied
    to the values as they are, on most recent sampled steps: no query's weights sum to 1 over the keys, and each
    depends on the other queries' scores (a decoder's later steps, its targets' future among them). A
    `wrong_gradient` error at the softmax."""
    marked = _marked_on_most(history, "softmax_over_queries", t)
    if not marked:
        return []
    first = _first_marked(history, "softmax_over_queries")
    evidence = {"softmax_over_queries": True, "sampled_steps": len(marked)}
    return [Finding("wrong_gradient", marked[-1].softmax_over_queries, first, "error", evidence)]


def same_ids_embedded_rule(history: History, t: Thresholds) -> list[Finding]:
    """Two embedding tables' lookups of one index tensor added, on most recent sampled steps (`tok_emb(x) +
    pos_emb(x)`, the token ids given where the positions were meant): one table's lookup, written twice; the
    positions are never told, and an attention model sees a bag of tokens. A `stalled_loss` warning at the
    addition; an error with a stalled loss folded into it."""
    marked = _marked_on_most(history, "same_ids_embedded", t)
    if not marked:
        return []
    first = _first_marked(history, "same_ids_embedded")
    evidence = {"same_ids_embedded": marked[-1].same_ids_embedded}
    return [Finding("stalled_loss", "add", first, "warning", evidence)]


def ratio_of_itself_rule(history: History, t: Thresholds) -> list[Finding]:
    """A quotient of a tensor by itself (`l / l`, `l / (l + eps)`) or a product by its own reciprocal, on most recent
    sampled steps: 1 whatever `l` is, and a gradient of 0. Loss terms weighted by `1 / loss` without `.detach()`
    (meant to balance them) each become 1: the loss is a constant, and nothing learns. A `blocked_gradient` error."""
    marked = _marked_on_most(history, "ratio_of_itself", t)
    if not marked:
        return []
    first = _first_marked(history, "ratio_of_itself")
    op, site = marked[-1].ratio_of_itself
    evidence = {"blocked_fraction": 1.0, "site": site, "ratio_of_itself": True}
    return [Finding("blocked_gradient", op, first, "error", evidence)]


# --- a custom autograd.Function whose backward ignores grad_output --------------------------------------------------
def custom_backward_rule(history: History, t: Thresholds) -> list[Finding]:
    """A custom `torch.autograd.Function` whose backward returned the same nonzero gradient when given -2 times its
    grad_output, on every test of it: it returns its local derivative without multiplying it by the gradient that
    arrives (the chain rule's dL/dx = dL/dy * dy/dx without the dL/dy). Whatever the loss asks, the layers below it
    get the same made-up gradient: the loss's gradient stops at that operation."""
    findings = []
    for name, tally in sorted(history.custom_backwards.items()):
        if tally["ignoring"] < tally["tests"] or tally["tests"] == 0:  # (once it used grad_output: not this mistake)
            continue
        evidence = {
            "custom_function": name,
            "inputs_ignoring_grad_output": tally["inputs"],
            "site": tally["after"] or "input",
            "tests": tally["tests"],
            "grad_output_norm": _sci(tally["grad_output_norm"]),
            "grad_input_norm": _sci(tally["grad_input_norm"]),
        }
        severity = "error"
        if tally["grad_output_one"]:  # (the loss itself: grad_output is 1, and leaving it out changes nothing, yet)
            severity, evidence["grad_output_one"] = "warning", True
        findings.append(Finding("blocked_gradient", name, tally["first_step"], severity, evidence))
    return findings


# --- ReduceLROnPlateau told the wrong direction -----------------------------------------------------------------------
def plateau_mode_rule(history: History, t: Thresholds) -> list[Finding]:
    """A `ReduceLROnPlateau` over the training optimiser whose metric moved the way its `mode` calls worse on most calls
    (rose in mode "min", fell in "max": at least `plateau_against` times as often as the other way, over
    `plateau_calls` calls or more) while it cut the rate at least twice: an accuracy given with the default mode="min"
    (or a loss with "max"), and the first metric never beaten by the mode's measure (a validation loss that fell, then
    rose as the model overfit, beat it). Every improvement reads as none, and the rate is cut every patience + 1
    calls, on a schedule, however well the training goes."""
    findings = []
    for tally in history.plateaus.values():
        if tally["calls"] < t.plateau_calls or tally["cuts"] < 2:
            continue
        worse, better = (tally["rose"], tally["fell"]) if tally["mode"] == "min" else (tally["fell"], tally["rose"])
        if worse < t.plateau_against * max(better, 1) or tally["first_beaten"]:
            continue  # (a validation loss that fell below its first value, then rose as the model overfit: it fits)
        # A loss given to mode "min", rising from the first call (a model that overfits from the start), is right; an
        # accuracy given to "max", falling, too. The wrong way round, the metric is, or is not, the loss.
        if _looks_like_the_loss(tally) == (tally["mode"] == "min"):
            continue
        findings.append(_plateau_finding(tally))
    return findings


def _looks_like_the_loss(tally: dict) -> bool:
    """Whether a scheduler's first metric lies within half of the training loss of that time: a validation loss."""
    loss = tally["loss_at_first"]
    return loss is not None and loss > 0 and abs(tally["metric_first"] - loss) <= 0.5 * loss


def _plateau_finding(tally: dict) -> Finding:
    evidence = {
        "plateau_mode": tally["mode"],
        "metric_first": _sci(tally["metric_first"]),
        "metric_last": _sci(tally["metric_last"]),
        "calls": tally["calls"],
        "metric_rose": tally["rose"],
        "metric_fell": tally["fell"],
        "lr_cuts": tally["cuts"],
    }
    return Finding("stalled_loss", "ReduceLROnPlateau", tally["first_cut_step"], "warning", evidence)


# --- gradient hooks piling up on a parameter --------------------------------------------------------------------------
def hooks_piling_up_rule(history: History, t: Thresholds) -> list[Finding]:
    """A parameter whose gradient hooks grew in number on every one of the recent sampled steps (at least
    `min_records`), to `piled_hooks` or more: a hook registered in forward() or the loop, never removed, one more each
    step. Each runs on every backward, each on what the one before returned: a hook that scales the gradient by c
    scales it by c^n after n steps. Reported when its layer's gradient fell (or grew) by `piled_hooks_change` or more
    over those steps: a vanishing (or exploding) gradient across the steps, whose cause is the hooks."""
    recent = history.recent()
    findings, seen_modules = [], set()
    names = sorted({name for r in recent for name in (r.param_hooks or ())}, key=natural_key)
    for name in names:
        counts = [(r, r.param_hooks[name]) for r in recent if name in (r.param_hooks or ())]
        module = history.param_module.get(name)
        if len(counts) < t.min_records or counts[-1][1] < t.piled_hooks or module in seen_modules:
            continue
        if any(later <= earlier for (_, earlier), (_, later) in zip(counts, counts[1:])):
            continue  # (a fixed set of hooks, or one that comes and goes: not piling up)
        # (the gradient since the hooks began, over every record kept: it may have reached 0 long before these)
        counts = [(r, r.param_hooks[name]) for r in history.records if name in (r.param_hooks or ())]
        norms = [r.layers[module].param_grad_norm for r, _ in counts if module in r.layers]
        norms = [n for n in norms if n is not None]
        if len(norms) < 2 or not norms[0] > 0:
            continue
        change = norms[-1] / norms[0]
        if t.piled_hooks_change <= change <= 1 / t.piled_hooks_change:
            continue  # (hooks that leave the gradient as it is: memory and time lost, not the gradient)
        learnt = _loss_learnt(history)
        if learnt is not None and learnt <= t.margin_learning:
            continue  # (a loss that fell to a tenth: the gradient fell with it, whatever the hooks did)
        symptom = "vanishing_gradient" if change < 1 else "exploding_gradient"
        seen_modules.add(module)
        if findings:  # (one hook registered on every parameter of a part of the model: one finding, at its first layer)
            findings[0].evidence.setdefault("also_layers", []).append(module)
            continue
        evidence = {
            "across": "steps",
            "hooks_piling_up": {"parameter": name, "hooks_first": counts[0][1], "hooks_last": counts[-1][1]},
            "steps_between": counts[-1][0].step - counts[0][0].step,
            "grad_norm_first": _sci(norms[0]),
            "grad_norm_last": _sci(norms[-1]),
            "ratio": _sci(change),
        }
        findings.append(Finding(symptom, module, counts[0][0].step, "error", evidence))
    return findings


# --- learned loss weights that nothing holds back ---------------------------------------------------------------------
def unheld_loss_weights_rule(history: History, t: Thresholds) -> list[Finding]:
    """A parameter of a few entries used only as exp(+-s) multiplying loss terms, with no term holding it back (no
    `+ s`), on most recent sampled steps: the optimiser lowers the loss by moving s, not by learning, until the
    weights are near 0, and the gradient reaching the model is scaled down with them. An error once a weight has moved
    by `unheld_weight_moved` (e-fold) or more since the first record; a warning before."""
    recent = history.recent()
    findings = []
    for name in sorted({name for r in recent for name in (r.unheld_loss_weights or ())}):
        seen = [r for r in recent if name in (r.unheld_loss_weights or ())]
        if len(seen) < t.min_records or 2 * len(seen) < len(recent):
            continue
        first = next(r for r in history.records if name in (r.unheld_loss_weights or ()))
        before, after = first.unheld_loss_weights[name], seen[-1].unheld_loss_weights[name]
        moved = max((abs(b - a) for a, b in zip(before, after)), default=0.0)
        evidence = {
            "loss_weight_unheld": name,
            "values_first": [round(v, 3) for v in before],
            "values_last": [round(v, 3) for v in after],
            "moved_by": round(moved, 3),
        }
        severity = "error" if moved >= t.unheld_weight_moved else "warning"
        findings.append(Finding("vanishing_gradient", name, first.step, severity, evidence))
    return findings


# --- a gradient reversal that does not reverse ----------------------------------------------------------------------
def reversal_not_reversing_rule(history: History, t: Thresholds) -> list[Finding]:
    """A custom Function named as a gradient reversal (`GradReverse`, `ReverseLayerF`, `GRL`) whose backward passed
    the gradient it was given on in the same direction (cosine above `reversal_along`) on a test, and never reversed
    it: `return grad_output * lambd` with the minus sign lost. The domain-adversarial encoder then helps the domain
    classifier instead of fooling it."""
    findings = []
    for name, tests in sorted(history.reversal_checks.items()):
        if not tests or min(cosine for _, cosine, _ in tests) < 0:
            continue
        passed_on = [test for test in tests if test[1] >= t.reversal_along]
        if not passed_on:
            continue
        step, cosine, after = passed_on[0]  # (the first test that saw it)
        evidence = {
            "custom_function": name,
            "site": after or "input",
            "gradient_reversal_not_reversed": True,
            "along_grad_output": round(cosine, 3),
            "tests": len(tests),
        }
        findings.append(Finding("wrong_gradient", name, step, "error", evidence))
    return findings


# --- a predictor pulled towards its own input, the target's gradient not stopped --------------------------------------
def unstopped_target_rule(history: History, t: Thresholds) -> list[Finding]:
    """A loss that pulls a predictor's output p towards the output z of a module the predictor reads, by their cosine
    (or the distance of the unit vectors), with z's gradient kept: SimSiam's D(p1, z2) without `z2.detach()`. The
    loss then moves z too, towards p, and the easiest way to make them agree is one constant output for every
    example (collapse; Chen & He 2021, fig. 2). BYOL and SimSiam stop the target's gradient. A warning, on most
    recent sampled steps: the graph shows the stop-gradient missing, not the collapse itself."""
    marked = _marked_on_most(history, "unstopped_target", t)
    if not marked:
        return []
    found = marked[-1].unstopped_target
    first_step = next(r.step for r in history.records if r.unstopped_target is not None)
    evidence = {"predictor": found["predictor"], "target_from": found["target"], "target_detached": False}
    return [Finding("wrong_gradient", found["target"], first_step, "warning", evidence)]


# --- a layer's output changed outside autograd ---------------------------------------------------------------------
def zeros_outside_autograd_rule(history: History, t: Thresholds) -> list[Finding]:
    """A layer's output that the next layer's product reads with no operation between them in the graph, holding exact
    zeros in `zeros_outside_autograd` or more of its live entries (median over the recent sampled steps, measured on
    most of them): set by something autograd did not record, `h.data.clamp_(min=0)`. The forward computes a ReLU; the
    backward passes the gradient through the zeroed entries as it would through the identity, so every layer before
    learns from a gradient that is not the loss's. A layer's own output is never exactly 0 by chance."""
    recent = history.recent()
    findings = []
    layers = sorted({name for r in recent for name in (r.zeros_outside_autograd or ())}, key=natural_key)
    for name in layers:
        seen = [r.zeros_outside_autograd[name] for r in recent if name in (r.zeros_outside_autograd or ())]
        shares = [share for share, _ in seen if share is not None]
        if (
            len(shares) < t.min_records
            or 2 * len(shares) < len(recent)
            or not median(shares) >= t.zeros_outside_autograd
        ):
            continue

        def holds(record, name=name):
            share = (record.zeros_outside_autograd or {}).get(name, (None,))[0]
            return None if share is None else share >= t.zeros_outside_autograd

        if findings:  # (one finding, at the first such layer: the others, written the same way, are listed)
            findings[0].evidence.setdefault("also_layers", []).append(name)
            continue
        first = onset(history.healthy_records(), holds, t.persistence)
        evidence = {"zeros_outside_autograd": _sci(median(shares)), "read_by": seen[-1][1]}
        findings.append(
            Finding("wrong_gradient", name, first if first is not None else recent[0].step, "error", evidence)
        )
    return findings


def base_rate_rule(history: History, t: Thresholds) -> list[Finding]:
    """A loss that is a binary cross-entropy's mean over 0/1 targets, a share p < 1/2 of them 1 (the mean over the
    looks, 2 at least), whose last third's mean sits within `base_rate_margin` of the entropy of p: the loss a
    model has that predicts p for every entry, whatever its input. Rare positives (a segmentation's few lit pixels)
    are the usual cause: the constant prediction is a local minimum the unweighted loss hardly leaves."""
    looks = [look for look in history.base_rates if look["binary"] and math.isfinite(look["positives"])]
    if len(looks) < 2 or len(looks) < len(history.base_rates):
        return []
    p = sum(look["positives"] for look in looks) / len(looks)  # (a batch's share is noisy: their mean)
    if not 0 < p < 0.5:
        return []
    thirds = _loss_thirds(history.current_loss())
    entropy = -(p * math.log(p) + (1 - p) * math.log(1 - p))
    if thirds is None or abs(thirds[1] - entropy) > t.base_rate_margin * entropy:
        return []
    evidence = {"positives": _sci(p), "base_rate_entropy": _sci(entropy), "loss_last_third": _sci(thirds[1])}
    function = next((op for r in reversed(history.records) for op in r.loss_ops if "binary_cross_entropy" in op), None)
    return [Finding("stalled_loss", function or "loss", 0, "warning", evidence)]


def last_call_only_rule(history: History, t: Thresholds) -> list[Finding]:
    """A weighted module called several times in each step (a decoder's output layer, once per position) of which the
    loss reaches only the last call's output, on most recent sampled steps: `loss = criterion(out_t, y_t)` inside the
    loop where `loss = loss + ...` was meant, each step's loss overwriting the one before. Every other call's output,
    and the positions it predicts, get no gradient. A warning at the module; an error with the loss stalled."""
    recent = history.recent()
    marked = [r for r in recent if r.calls_reaching_loss]
    found = {}
    for r in marked:
        for name, (calls, _) in r.calls_reaching_loss.items():
            if _last_call_only(r, name):
                found.setdefault(name, []).append((r.step, calls))
    findings = []
    for name, hits in sorted(found.items()):
        if len(hits) < t.min_records or 2 * len(hits) < len(recent):
            continue
        evidence = {"calls_per_step": hits[-1][1], "calls_reaching_loss": 1, "last_call_only": True}
        severity = "error" if _loss_is_stalled(history.current_loss(), t) else "warning"
        first = next(r.step for r in history.records if _last_call_only(r, name))
        findings.append(Finding("vanishing_gradient", name, first, severity, evidence))
    return findings


def _last_call_only(record: StepRecord, name: str) -> bool:
    calls, reached = (record.calls_reaching_loss or {}).get(name, (0, None))
    return reached == [calls - 1]


def first_position_only_rule(history: History, t: Thresholds) -> list[Finding]:
    """A token embedding given (batch, positions) ids whose output got a gradient at position 0 and exactly none at
    every later one, on every look (the first few sampled steps, 2 at least): the loss reads the model's output at the
    first position only, and nothing there depends on the others. A causal transformer whose classifier reads
    `h[:, 0]` (position 0 attends to itself alone), a recurrence read at its first step: one token decides."""
    looks = history.position_grad_norms
    if len(looks) < 2:
        return []
    names = sorted({name for look in looks for name in look}, key=natural_key)
    for name in names:
        norms = [look.get(name) for look in looks]
        if any(n is None or len(n) < 4 or not n[0] > 0 or any(n[1:]) for n in norms):
            continue
        evidence = {"across": "positions", "positions": len(norms[-1]), "positions_reached": 1, "looks": len(looks)}
        first = history.records[0].step if history.records else 0
        return [Finding("vanishing_gradient", name, first, "error", evidence)]
    return []


def relu_output_changed_rule(history: History, t: Thresholds) -> list[Finding]:
    """ReLU sites whose saved output, which their backward masks the gradient with (it passes where the output is
    > 0), held negative values on most looks (the first few sampled steps, 2 at least): a ReLU never outputs one, so
    the output was changed after the ReLU made it, outside autograd (`out.data += h`, the way round PyTorch's error
    for an in-place change of a tensor the backward needs). The forward adds; the backward masks with the wrong
    entries, and what was added gets no gradient. One finding, at the first site, the others listed."""
    looks = history.relu_outputs_negative
    if len(looks) < 2:
        return []
    seen = {site for look in looks for site in look}
    negative = {site: [look[site] for look in looks if site in look] for site in seen}
    mostly = [site for site, lows in negative.items() if len(lows) >= 2 and 2 * len(lows) >= len(looks)]
    sites = sorted(mostly, key=natural_key)
    if not sites:
        return []
    evidence = {
        "relu_output_negative": _sci(min(negative[sites[0]])),
        "looks": len(looks),
        "looks_negative": len(negative[sites[0]]),
    }
    if len(sites) > 1:
        evidence["also_sites"] = sites[1:]
    return [Finding("wrong_gradient", sites[0], history.records[0].step if history.records else 0, "error", evidence)]


# --- a custom autograd.Function whose backward disagrees with its forward ------------------------------------------
def custom_backward_wrong_rule(history: History, t: Thresholds) -> list[Finding]:
    """A custom `torch.autograd.Function` whose backward's gradient g disagrees with its forward's finite
    differences on most tests that could tell (at least `wrong_backward_tests`): <g, v> against <u, (f(x + h v) -
    f(x - h v)) / 2h> along random directions v, u the gradient that arrived. The chain rule holds only if each
    backward returns J^T u; every layer before this one learns from a gradient that is not the loss's. (A backward
    that ignores grad_output altogether is told as such, by `custom_backward_rule`.)"""
    findings = []
    for name, tally in sorted(history.custom_backwards.items()):
        checked, wrong = tally.get("checked", 0), tally.get("disagreeing", 0)
        if wrong < t.wrong_backward_tests or 2 * wrong <= checked:
            continue
        if tally["tests"] and tally["ignoring"] == tally["tests"]:  # (it ignores grad_output: said so, more exactly)
            continue
        first = tally["disagreement"]
        evidence = {
            "custom_function": name,
            "site": first["after"] or "input",
            "tests": checked,
            "backward_dot": _sci(first["backward_dot"]),
            "finite_difference_dot": _sci(first["numerical_dot"]),
            "relative_mismatch": round(first["mismatch"], 3),
            "tests_disagreeing": wrong,
        }
        if "scaled_by" in first:  # (the true gradient times one constant: a sign, or a factor)
            evidence["scaled_by"] = _sci(first["scaled_by"])
        findings.append(Finding("wrong_gradient", name, first["first_step"], "error", evidence))
    return findings


# --- gradient clipping called before backward() -------------------------------------------------------------------
def clipping_before_backward_rule(history: History, t: Thresholds) -> list[Finding]:
    """`clip_grad_norm_` measured a norm of exactly 0 on most recent sampled steps that called it, while the
    gradients the optimiser then stepped were larger than its max_norm: it ran before `backward()` (after
    `zero_grad()`), on gradients not yet computed, and clipped nothing. The cap the script relies on is not there."""
    records = history.records  # (all kept: the run may have gone to NaN at once, with its clipping doing nothing)
    calls = [r for r in records if r.clip_max_norm is not None and r.clip_norm is not None]
    if 2 * len(calls) < len(records):
        return []
    scaled = [r for r in calls if r.clip_on_scaled and r.clip_scale and r.clip_norm > r.clip_max_norm]
    if len(scaled) >= t.min_records and 2 * len(scaled) >= len(calls):
        return [_clipping_scaled_gradients(scaled)]
    # (after the step and before zero_grad() it measures last step's gradients; after zero_grad(), none: a norm of 0)
    late = [r for r in calls if r.clip_after_step and r.clip_norm != 0 and _above_the_cap(r)]
    if len(late) >= t.min_records and 2 * len(late) >= len(calls):
        return [_clipping_after_step(late)]
    early = [r for r in calls if r.clip_norm == 0 and _above_the_cap(r)]
    if len(early) < t.min_records or 2 * len(early) < len(calls):
        return []
    finite = [r.grad_norm for r in early if math.isfinite(r.grad_norm)]
    evidence = {
        "clip_max_norm": _sci(median([r.clip_max_norm for r in early])),
        "clip_measured_norm": 0.0,
        "grad_norm_stepped": _sci(median(finite)) if finite else None,  # (None: NaN or inf at every one)
        "sampled_steps": len(early),
    }
    if all(r.clip_given_nothing for r in early):  # (not too early: given no parameter at all)
        evidence["clip_given_no_parameters"] = True
    return [Finding("exploding_gradient", "clip_grad_norm_", early[0].step, "error", evidence)]


def _clipping_scaled_gradients(scaled: list[StepRecord]) -> Finding:
    """`clip_grad_norm_` ran on gradients a GradScaler had multiplied by its factor (`scaler.unscale_(optimizer)`
    not called first), and measured a norm above its max_norm: it cut them to max_norm / scale once unscaled."""
    norms = [r.clip_norm for r in scaled if math.isfinite(r.clip_norm)]
    scale = median([r.clip_scale for r in scaled])
    evidence = {
        "clip_max_norm": _sci(median([r.clip_max_norm for r in scaled])),
        "clip_on_scaled_gradients": True,
        "loss_scale": _sci(scale),
        "clip_measured_norm_scaled": _sci(median(norms)) if norms else None,
        "grad_norm_unscaled": _sci(median(norms) / scale) if norms else None,
        "sampled_steps": len(scaled),
    }
    return Finding("exploding_gradient", "clip_grad_norm_", scaled[0].step, "error", evidence)


def _clipping_after_step(late: list[StepRecord]) -> Finding:
    """`clip_grad_norm_` ran after `optimizer.step()` (before the next backward) on most sampled steps that called it,
    while the gradients stepped were above its max_norm: the update used them unclipped, and what it clipped is then
    thrown away by zero_grad()."""
    finite = [r.grad_norm for r in late if math.isfinite(r.grad_norm)]
    evidence = {
        "clip_max_norm": _sci(median([r.clip_max_norm for r in late])),
        "clip_after_step": True,
        "grad_norm_stepped": _sci(median(finite)) if finite else None,  # (None: NaN or inf at every one)
        "sampled_steps": len(late),
    }
    return Finding("exploding_gradient", "clip_grad_norm_", late[0].step, "error", evidence)


# --- gradient clipping by value far below the gradients ----------------------------------------------------------
def value_clipping_rule(history: History, t: Thresholds) -> list[Finding]:
    """`clip_grad_value_` capped most of the gradients' entries and cut their norm many times over, on most recent
    sampled steps that called it: its clip_value sits below the gradient itself. Each capped entry's update is
    lr * clip_value * sign(g): the chain rule's sizes are thrown away, and the steps are as small as the cap."""
    recent = history.recent()
    calls = [r for r in recent if r.clip_value is not None and r.clip_value_norms is not None]
    if len(calls) < t.min_records or 2 * len(calls) < len(recent):
        return []

    def capped_hard(r: StepRecord) -> bool:
        return (
            r.clip_value_norms is not None
            and r.clip_value_share > t.clip_value_share
            and r.clip_value_norms[0] > t.clip_heavy_factor * r.clip_value_norms[1]  # (not NaN: no comparison holds)
        )

    heavy = [r for r in calls if capped_hard(r)]
    if 2 * len(heavy) <= len(calls):
        return []
    first_step = next(r.step for r in history.records if capped_hard(r))
    share = median([r.clip_value_share for r in heavy])
    before, after = median([r.clip_value_norms[0] for r in heavy]), median([r.clip_value_norms[1] for r in heavy])
    entries = median([r.clip_value_entries for r in heavy])
    evidence = {
        "clip_value": _sci(median([r.clip_value for r in heavy])),
        "capped_share": round(share, 3),
        "grad_norm_before_clip": _sci(before),
        "grad_norm_after_clip": _sci(after),
        "grad_entry_rms": _sci(before / math.sqrt(entries)),  # (the size of a typical entry, before the cap)
        "sampled_steps": len(heavy),
    }
    severity = "error" if share > t.clip_value_sign_share else "warning"
    return [Finding("blocked_gradient", "clip_grad_value_", first_step, severity, evidence)]


# --- positive examples weighted 0 ----------------------------------------------------------------------------------
def zero_pos_weight_rule(history: History, t: Thresholds) -> list[Finding]:
    """`binary_cross_entropy_with_logits(..., pos_weight=w)` with w = 0 for most of the positive targets, on most
    recent sampled steps that had any: a positive example's loss is w * -log(sigmoid(x)), so with w = 0 it passes no
    gradient back, and the model learns to call everything negative."""

    def unweighted(r: StepRecord) -> bool:  # (most of the step's positive targets weighted 0)
        w = r.zero_pos_weight
        return w is not None and w["positives"] > 0 and 2 * w["positives_weighted_zero"] > w["positives"]

    marked = _marked_on_most(history, "zero_pos_weight", t)
    hit = [r for r in marked if unweighted(r)]
    if len(hit) < t.min_records or 2 * len(hit) < len(marked):
        return []
    share = median([r.zero_pos_weight["positives_weighted_zero"] / r.zero_pos_weight["positives"] for r in hit])
    evidence = {
        "pos_weight_min": hit[-1].zero_pos_weight["pos_weight_min"],
        "positive_targets": round(median([r.zero_pos_weight["positives"] for r in hit]), 3),
        "positives_weighted_zero": round(share, 3),
        "blocked_fraction": round(share, 3),  # (of the positives' gradient)
        "site": "loss",
    }
    first = next(r.step for r in history.records if unweighted(r))
    return [Finding("blocked_gradient", "binary_cross_entropy_with_logits", first, "error", evidence)]


def zero_class_weight_rule(history: History, t: Thresholds) -> list[Finding]:
    """`cross_entropy(..., weight=w)` with classes weighted exactly 0 whose examples are `zero_weight_examples` (10%) of
    the batch or more, on most recent sampled steps that had class weights: their loss is multiplied by 0, and so
    is their gradient. One class weighted 0 may be meant (a background class left out: a warning); several, holding
    a quarter of the examples or more, are weights computed wrongly (`n // count`: an error)."""

    def unweighted(r: StepRecord) -> bool:
        w = r.zero_class_weight
        if w is None or w["classes_weighted_zero"] == 0:
            return False
        return w["examples_weighted_zero"] >= t.zero_weight_examples

    marked = _marked_on_most(history, "zero_class_weight", t)
    hit = [r for r in marked if unweighted(r)]
    if len(hit) < t.min_records or 2 * len(hit) < len(marked):
        return []
    share = median([r.zero_class_weight["examples_weighted_zero"] for r in hit])
    zero_classes = hit[-1].zero_class_weight["classes_weighted_zero"]
    evidence = {
        "classes": hit[-1].zero_class_weight["classes"],
        "classes_weighted_zero": zero_classes,
        "examples_weighted_zero": round(share, 3),
        "blocked_fraction": round(share, 3),  # (of the examples' gradient)
        "site": "loss",
    }
    severity = "error" if zero_classes > 1 and share >= 0.25 else "warning"
    first = next(r.step for r in history.records if unweighted(r))
    return [Finding("blocked_gradient", "cross_entropy", first, severity, evidence)]


# --- class probabilities that sum to more than 1 ---------------------------------------------------------------------
def soft_targets_rule(history: History, t: Thresholds) -> list[Finding]:
    """A cross-entropy given targets of 0s and 1s whose rows sum to more than 1, on the first sampled steps (median): a
    multi-hot target (2.4 tags an example) given to `cross_entropy`. A softmax shares one unit of
    probability among the classes, and the derivative of -sum(t * log softmax(z)) is s * softmax(z) - t with s the
    row's sum: it is 0 where each of k tagged classes has probability 1/k. The gradient stops pushing a tag up
    halfway (at 1/2 for two tags), however sure the example is. So does a binary cross-entropy of a softmax's
    output: each tag's probability is capped by the others'."""
    looks = [look for look in history.soft_targets if math.isfinite(look["row_sum"])]
    if not looks or not all(look["binary"] for look in looks):
        return []  # (a label distribution, unnormalised on purpose; a policy gradient's advantages times an action)
    row_sum, over_one = median([look["row_sum"] for look in looks]), median([look["rows_over_one"] for look in looks])
    if not (row_sum > t.target_row_sum and over_one > t.target_rows_over_one):
        return []
    evidence = {
        "target_row_sum": round(row_sum, 3),
        "rows_summing_over_one": round(over_one, 3),
        "probability_per_class_at_most": round(1 / row_sum, 3),  # (where the gradient stops, for a typical row)
        "site": "loss",
    }
    loss = looks[-1].get("loss", "cross_entropy")
    return [Finding("blocked_gradient", loss, history.records[0].step, "error", evidence)]


# --- ctc_loss given raw scores ---------------------------------------------------------------------------------------
def ctc_raw_scores_rule(history: History, t: Thresholds) -> list[Finding]:
    """`ctc_loss` given scores that are not log-probabilities (no `log_softmax` over the classes): the median frame's
    logsumexp over the classes (frames within each sequence's length) further than `ctc_unnormalised` from 0, on the
    median of the first sampled steps' looks, and some entry above 0. The loss is -log of a sum over alignments of
    products of exp(input): unnormalised, it falls as every score grows, without the labels being learnt (it is
    unbounded below)."""
    looks = [(step, look) for step, look in history.ctc_inputs if math.isfinite(look["logsumexp"])]
    if not looks or median([look["logsumexp"] for _, look in looks]) <= t.ctc_unnormalised:
        return []
    if max(look["high"] for _, look in looks) <= 0:  # (log(softmax + eps): never above 0, and bounded)
        return []
    evidence = {
        "input_logsumexp_over_classes": _sci(median([look["logsumexp"] for _, look in looks])),
        "input_high": _sci(max(look["high"] for _, look in looks)),
        "classes": looks[-1][1]["classes"],
        "site": "loss",
    }
    first = next(step for step, look in looks if look["logsumexp"] > t.ctc_unnormalised)
    return [Finding("diverging_loss", "ctc_loss", first, "error", evidence)]


# --- ctc_loss's targets: the blank used as a label, alignments that cannot exist --------------------------------------
def ctc_targets_rule(history: History, t: Thresholds) -> list[Finding]:
    """`ctc_loss`'s targets hold its blank index as a label (`nn.CTCLoss()` keeps blank=0, and the model's blank is
    its last class, so label 0 is a real one): the loss reads the blank's score where the label's belongs, and the two
    can no longer be told apart (the loss can even go below 0). An error at `ctc_loss`. And, with
    `zero_infinity=True`, `ctc_short_inputs` (10%) or more of the sequences with no alignment at all (longer than their
    input allows): their loss is set to 0, and they teach nothing (a warning; without zero_infinity the loss is
    infinite, and the nonfinite finding says why). And `input_lengths` whose longest is at most `ctc_frames_read` of
    the frames given, on every look: the frames after them get no gradient (an error)."""
    looks = history.ctc_targets
    if not looks:
        return []
    findings = []
    blank = next(((step, look) for step, look in looks if look["with_blank"]), None)
    if blank is not None:
        step, look = blank
        evidence = {"blank": look["blank"], "targets_with_blank": look["with_blank"], "sequences": look["sequences"]}
        findings.append(Finding("wrong_gradient", "ctc_loss", step, "error", evidence))
    short = [(step, look) for step, look in looks if look["zero_infinity"] and look["sequences"]]
    shares = [look["too_long"] / look["sequences"] for _, look in short]
    if shares and median(shares) >= t.ctc_short_inputs:
        evidence = {"ctc_targets_too_long": {"share": _sci(median(shares)), "zero_infinity": True}}
        findings.append(Finding("blocked_gradient", "ctc_loss", short[0][0], "warning", evidence))
    # input_lengths that never reach half the frames given, on every look (2 or more): the lengths of the input before
    # the model subsampled it, divided by the wrong factor; the loss never reads the frames after them
    reads = [(step, look) for step, look in looks if look.get("frames") and look.get("longest_input")]
    if len(reads) >= 2 and all(look["longest_input"] <= t.ctc_frames_read * look["frames"] for _, look in reads):
        step, look = reads[0]
        evidence = {"ctc_frames_read": {"longest_input": look["longest_input"], "frames": look["frames"]}}
        findings.append(Finding("blocked_gradient", "ctc_loss", step, "error", evidence))
    return findings


# --- a gradient penalty with no graph -------------------------------------------------------------------------------
def penalty_without_graph_rule(history: History, t: Thresholds) -> list[Finding]:
    """`torch.autograd.grad` called without `create_graph=True` (not for the watched weights), in steps whose loss
    adds a term that has no graph or reaches no parameter, on most recent sampled steps (and `min_records`): the
    gradient it returned is a constant to the weights, and so is the term made of it (double backprop, a WGAN's
    gradient penalty, a physics-informed residual). It adds to the loss's value;
    backprop passes nothing through it (`retain_graph=True` only silences the error a second backward would raise).
    Likewise with `create_graph=True`, when the term made of the gradient lost its graph on the way (`g.detach()`)."""
    recent = history.recent()
    hit = [r for r in recent if r.penalty_without_graph or r.penalty_detached]
    if len(hit) < t.min_records or 2 * len(hit) < len(recent):
        return []
    first = next(r.step for r in history.records if r.penalty_without_graph or r.penalty_detached)
    create_graph = not any(r.penalty_without_graph for r in hit)
    evidence = {"create_graph": create_graph, "constant_loss_term": True, "sampled_steps": len(hit), "site": "loss"}
    return [Finding("blocked_gradient", "autograd.grad", first, "error", evidence)]


# --- a loss mask that keeps the padding ---------------------------------------------------------------------------
def inverted_loss_mask_rule(history: History, t: Thresholds) -> list[Finding]:
    """A per-token loss multiplied by a mask that keeps the padding (the tokens an embedding read at its padding_idx)
    and drops the real tokens, on the first sampled steps (median): the mask was built the wrong way round
    (`arange(T) >= lengths`). Every real token's loss, and so its gradient, is multiplied by 0."""
    looks = [look for _, look in history.loss_masks if math.isfinite(look["padding_of_kept"])]
    if not looks:
        return []
    padding_of_kept = median([look["padding_of_kept"] for look in looks])
    real_kept = median([look["real_kept"] for look in looks])
    if not (padding_of_kept > t.mask_keeps_padding and real_kept < 1 - t.mask_keeps_padding):
        return []
    evidence = {
        "padding_of_kept": round(padding_of_kept, 3),
        "real_tokens_kept": round(real_kept, 3),
        "padding_idx": looks[-1]["padding_idx"],
        "blocked_fraction": round(1 - real_kept, 3),  # (of the real tokens' gradient)
        "site": "loss",
    }
    return [Finding("blocked_gradient", "mul", history.loss_masks[0][0], "error", evidence)]


# --- a padding_idx that names a real token ----------------------------------------------------------------------------
def padding_idx_rule(history: History, t: Thresholds) -> list[Finding]:
    """An embedding whose `padding_idx` is a real token, read from the gradient at its output on the first sampled
    steps (median): `padding_gradient` or more of it (squared norm) arrives at the positions holding padding_idx,
    whose row the embedding never updates, while another id, on `padding_elsewhere` or more of the positions, gets
    exactly no gradient at any of them: the script masks that one out, the padding it means. The real token's row
    keeps its initial values for the whole run."""
    findings = []
    for name in sorted({name for _, checks in history.padding_checks for name in checks}):
        looks = [(step, checks[name]) for step, checks in history.padding_checks if name in checks]
        at_padding = median([look["gradient_at_padding"] for _, look in looks])
        silent_share = median([look["silent_share"] for _, look in looks])
        silent_ids = {look["silent_id"] for _, look in looks}
        if not (at_padding >= t.padding_gradient and silent_share >= t.padding_elsewhere and len(silent_ids) == 1):
            continue
        if not all(look["silent_at_row_ends"] for _, look in looks):
            continue  # (an id replaced after the lookup, a [MASK] token's, sits anywhere: padding sits at the ends)
        evidence = {
            "padding_idx": looks[-1][1]["padding_idx"],
            "gradient_at_padding": round(at_padding, 3),
            "masked_id": silent_ids.pop(),
            "masked_share": round(silent_share, 3),
            "site": name,
        }
        findings.append(Finding("blocked_gradient", name, looks[0][0], "error", evidence))
    return findings


# --- attention saturated from the start -------------------------------------------------------------------------------
def attention_saturation_rule(history: History, t: Thresholds) -> list[Finding]:
    """An attention's softmax whose rows were nearly one-hot on the first sampled steps (the median capacity of its
    derivative under `attention_capacity`, the first look's under `attention_capacity_first`), where a freshly
    initialised network's attention is spread nearly evenly: its scores start too large (multiplied by sqrt(d) where
    scaled dot-product attention divides by it). The softmax's derivative diag(p) - p p^T is near 0 for a one-hot row:
    the queries and keys get almost no gradient."""
    findings = []
    sites = sorted({site for _, looks in history.attention for site in looks})
    for site in sites:
        looks = [(step, looks[site]) for step, looks in history.attention if site in looks]
        capacities = [look["capacity"] for _, look in looks if math.isfinite(look["capacity"])]
        if not capacities or not median(capacities) < t.attention_capacity:
            continue
        if not capacities[0] < t.attention_capacity_first:  # spread at the first look, sharpened by learning since
            continue  # (a Hopfield layer's retrieval; at every 16 the looks are steps 0, 17, 34 and 51)
        evidence = {
            "function": "softmax",
            "derivative_capacity": _sci(median(capacities)),
            "max_probability": _sci(median([look["max_probability"] for _, look in looks])),
            "entries": looks[-1][1]["entries"],
            "scores_scaled_by": _sci(looks[-1][1]["scale"]),
            "head_width": looks[-1][1].get("head_width"),  # (a fused kernel's: its scale is known to be 1 / sqrt(d))
            "from_start": True,
            "sampled_steps": len(capacities),
        }
        findings.append(Finding("saturated_activation", site, looks[0][0], "warning", evidence))
    return findings


# --- attention pooled over the axis its softmax normalises ----------------------------------------------------------
def attention_pooled_rule(history: History, t: Thresholds) -> list[Finding]:
    """An attention's softmax whose arriving gradient is the same along the axis it normalises, on the first
    sampled steps (median share over `softmax_gradient_same`): its backward p * (g - sum(p * g)) is then exactly 0, so
    the scores, and the queries and keys under them, get no gradient at all. It happens when the softmax's output is
    summed or averaged over that same axis afterwards, where it sums to 1 whatever the scores: a softmax over the
    queries (dim=1) where the keys (dim=-1) were meant, then pooled over the queries."""
    findings = []
    sites = sorted({site for _, looks in history.attention for site in looks})
    for site in sites:
        looks = [(step, looks[site]) for step, looks in history.attention if site in looks]
        shares = [look.get("gradient_same_along_axis", math.nan) for _, look in looks]
        shares = [share for share in shares if math.isfinite(share)]
        if len(shares) < min(2, len(looks)) or not shares or not median(shares) > t.softmax_gradient_same:
            continue
        evidence = {"gradient_same_along_axis": _sci(median(shares)), "blocked_fraction": _sci(median(shares)),
                    "site": site, "entries": looks[-1][1]["entries"], "sampled_steps": len(shares)}  # fmt: skip
        findings.append(Finding("blocked_gradient", site, looks[0][0], "error", evidence))
    return findings


# --- a self-attention that reads the next token, its own target ------------------------------------------------------
def future_visible_rule(history: History, t: Thresholds) -> list[Finding]:
    """A self-attention whose mask lets its queries read the position after their own (no causal mask, or one a
    diagonal off), or a 1-D convolution padded on both sides, in a model whose targets are the next tokens (or values)
    of the sequence it reads: each position's output can copy its target from the input. The loss falls fast and
    far, and the gradient teaches copying, not predicting: generation, which has no next token to read, fails."""
    findings = []
    sites = sorted({site for _, looks in history.lookahead for site in looks})
    for site in sites:
        looks = [(step, looks[site]) for step, looks in history.lookahead if site in looks]
        readable = median([look["next_position"] for _, look in looks])
        next_tokens = [look["next_tokens"] for _, look in looks if look["next_tokens"] is not None]
        next_tokens = [share for share in next_tokens if math.isfinite(share)]
        if not next_tokens or not readable > t.lookahead_next_position:
            continue
        if not median(next_tokens) > t.next_token_targets:
            continue
        last = looks[-1][1]
        evidence = {
            "next_position_readable": _sci(readable),
            "furthest_ahead": last["furthest_ahead"],
            "positions": last["positions"],
            "no_mask": last["furthest_ahead"] == last["positions"] - 1,
            "targets_next_tokens": _sci(median(next_tokens)),
            "sampled_steps": len(looks),
            **({"convolution": last["convolution"]} if "convolution" in last else {}),
            # (a float mask that shuts nothing: no entry -inf or far below 0; a padding mask's -inf rows shut keys)
            **({"float_mask": [_sci(v) for v in last["float_mask"]]} if _shuts_nothing(last.get("float_mask")) else {}),
        }
        if last.get("decoder") or "decoder" in site.split(" ")[-1].split("."):  # (nn.Transformer's: its tgt_mask)
            evidence["decoder"] = True
        findings.append(Finding("wrong_gradient", site, looks[0][0], "error", evidence))
    # (one finding for the self-attentions of one model: its first, the others named beside it)
    if len(findings) > 1 and not any("convolution" in f.evidence for f in findings):
        first, *others = sorted(findings, key=lambda f: (f.first_step, f.where))
        first.evidence["also_sites"] = [f.where for f in others]
        findings = [first]
    return findings


def _logits_clamped(history: History) -> bool:
    """Whether a clamped prediction is a classifier's logits: one model watched, trained by a loss of logits alone (no
    regression term beside it, whose box or image the clamp might keep in range; no second model, a GAN's, whose
    images the first one's loss reads)."""
    recent = history.recent()
    ops = set(recent[-1].loss_ops or ()) if recent else set()
    return len(history.models) == 1 and not ops.isdisjoint(LOGIT_LOSS_OPS) and ops.isdisjoint(REGRESSION_LOSS_OPS)


def _shuts_nothing(float_mask: list | None) -> bool:
    """Whether a float attention mask's least and largest entries leave every key open: none below -1e4."""
    return float_mask is not None and math.isfinite(float_mask[0]) and float_mask[0] > -1e4


def _batches_of_one_class(history: History, t: Thresholds) -> dict | None:
    """{"classes_per_batch", "batch_size", "classes", "most_frequent_classes"} when most of a classifier's batches
    looked at held at most `batch_classes_few` classes, of batches of 16 or more, while the most frequent class
    changed between them (3 or more different ones): the dataset is sorted by class and read in order."""
    looks = [look for look in history.batch_classes if look["batch"] >= 16 and math.isfinite(look["distinct"])]
    if len(looks) < t.min_records or looks[0]["classes"] < 3:
        return None
    few = [look for look in looks if look["distinct"] <= t.batch_classes_few]
    most_frequent = sorted({int(look["most_frequent"]) for look in looks})
    if 4 * len(few) < 3 * len(looks) or len(most_frequent) < 3:
        return None
    return {
        "classes_per_batch": median([look["distinct"] for look in looks]),
        "batch_size": median([look["batch"] for look in looks]),
        "classes": looks[0]["classes"],
        "most_frequent_classes": most_frequent[:10],
    }


def _loss_multiplied_by(history: History, t: Thresholds) -> float | None:
    """The constant every recorded backward root multiplied its loss by, when it is `loss_scaled_up` or more (not a
    GradScaler's: its own factor is left out of the records): `(loss * 1024).backward()` with the gradients never
    divided back, an fp16 habit kept in float32."""
    known = [r for r in history.records if not r.root_scale_unknown]  # (not the steps whose gradients were NaN already)
    scales = [r.root_scale for r in known if r.root_scale is not None]
    if not scales or 2 * len(scales) < len(known) or not min(scales) >= t.loss_scaled_up:
        return None
    return float(f"{median(scales):.6g}")  # (1024, as written: not rounded to 1020)


def _scaler_never_unscaled(history: History) -> bool:
    """Whether the factor the loss was multiplied by is a GradScaler's that no `scaler.step` (or `unscale_`) divided
    back: the optimiser stepped itself on every step that recorded a factor."""
    scaled = [r for r in history.records if r.root_scale is not None and not r.root_scale_unknown]
    return bool(scaled) and all(r.scaler_never_unscaled for r in scaled)


# (the graph's or the layers' marks that explain a curve, each read on most recent sampled steps)
CURVE_CAUSES = (
    "identity_activations", "softmax_into_squared_error", "batchnorm_never_estimated", "norm_over_one_value",
    "cancelled_straight_through",
)  # fmt: skip


def _curve_causes(history: History) -> dict:
    """Evidence for a stalled loss from the graph: a LeakyReLU with a slope of 1 (`identity_activations`), a softmax
    compared by a squared error (`softmax_into_squared_error`), each on most recent sampled steps; and from the layers:
    batch norms trained in eval mode with statistics never estimated, norms over one value (which go on the depth and
    unit findings too)."""
    recent = history.recent()
    causes = {}
    for key in CURVE_CAUSES:
        seen = [getattr(r, key) for r in recent if getattr(r, key)]
        if seen and 2 * len(seen) >= len(recent):
            causes[key] = seen[-1]
    return causes


def add_run_evidence(findings: list[Finding], history: History, t: Thresholds) -> list[Finding]:
    """Evidence about the whole run, given to the findings it explains, after the rules and their folding: batches
    of one class each (units that die, a loss that stalls or blows up, under a gradient that points to another class
    every few steps); a loss multiplied by a large constant before backward (NaNs, a divergence, gradients that
    explode: every step is that many times too large); a network made linear, or a squared error of probabilities,
    under a stall."""
    if not findings:
        return findings
    sorted_data = _batches_of_one_class(history, t)
    scaled_by = _loss_multiplied_by(history, t)
    causes = _curve_causes(history)
    coupled = next((r.coupled_decay for r in reversed(history.recent()) if r.coupled_decay), None)
    outside = _changed_outside_autograd(findings)
    for f in findings:
        if coupled is not None and "weights_shrank_by" in f.evidence:
            f.evidence["coupled_weight_decay"] = coupled  # (Adam's L2: the decay divided by sqrt(v) with the gradient)
        on_the_curve = f.where == "loss" and f.symptom in ("stalled_loss", "diverging_loss")
        if sorted_data is not None and (f.symptom == "dead_relu" or on_the_curve):
            f.evidence["batches_of_one_class"] = sorted_data
        if scaled_by is not None and f.symptom in ("nonfinite", "diverging_loss", "exploding_gradient"):
            f.evidence["loss_multiplied_by"] = scaled_by
            if _scaler_never_unscaled(history):
                f.evidence["scaler_never_unscaled"] = True
        if f.symptom == "stalled_loss" and f.where == "loss":
            f.evidence.update(causes)
        elif f.symptom in BATCH_NORM_SYMPTOMS:
            for key in ("batchnorm_never_estimated", "norm_over_one_value"):
                if key in causes:
                    f.evidence[key] = causes[key]
        zeroed = f.symptom == "no_gradient" and f.evidence.get("gradient") == "exactly zero"
        if zeroed and "cancelled_straight_through" in causes:  # (what gets exactly 0 behind it, not None)
            f.evidence["cancelled_straight_through"] = causes["cancelled_straight_through"]
            f.severity = "error"  # (nothing before it can learn: no design sets a gradient to exactly 0 this way)
        if outside and f.symptom in ("vanishing_gradient", "exploding_gradient", "stalled_loss", "diverging_loss"):
            f.evidence["changed_outside_autograd"] = outside  # (the gradients measured are not the loss's)
    return findings


def _changed_outside_autograd(findings: list[Finding]) -> list[str] | None:
    """The layers whose outputs a `wrong_gradient` finding says were changed outside autograd, or None."""
    found = next((f for f in findings if "zeros_outside_autograd" in f.evidence), None)
    return None if found is None else [found.where, *found.evidence.get("also_layers", [])]


# what batch norms that do not normalise (eval mode, statistics never estimated) leave a deep network to
BATCH_NORM_SYMPTOMS = (
    "vanishing_gradient", "exploding_gradient", "dead_relu", "saturated_activation", "diverging_loss",
)  # fmt: skip


# --- a Huber loss's delta far below the errors -----------------------------------------------------------------------
def huber_delta_rule(history: History, t: Thresholds) -> list[Finding]:
    """`huber_loss(prediction, target, delta)` whose errors lie far past delta on most recent sampled steps: past delta
    its derivative is delta * sign(error), so the gradient of every example is cut down to delta, however large its
    error. The loss is an L1 loss scaled by delta, and with SGD every step shrinks with it."""
    recent = history.recent()
    looked = [r for r in recent if r.huber is not None]
    if len(looked) < t.min_records or 2 * len(looked) < len(recent):
        return []

    def far_past(r: StepRecord) -> bool:
        h = r.huber
        return h["beyond_delta"] > t.huber_beyond_share and h["error_mean"] > t.huber_delta_ratio * h["delta"]

    far = [r for r in looked if far_past(r)]
    if 2 * len(far) <= len(looked):
        return []
    learnt = _loss_learnt(history)
    if learnt is not None and learnt < t.dead_but_learning:
        return []  # (the loss fell below half its start: an L1-like regression that learns, Adam's scale-free steps)
    delta, error = median([r.huber["delta"] for r in far]), median([r.huber["error_mean"] for r in far])
    evidence = {
        "huber_delta": _sci(delta),
        "errors_beyond_delta": round(median([r.huber["beyond_delta"] for r in far]), 3),
        "error_mean": _sci(error),
        "error_over_delta": _sci(error / delta),
        "sampled_steps": len(far),
    }
    first_step = next(r.step for r in history.records if r.huber is not None and far_past(r))
    return [Finding("blocked_gradient", "huber_loss", first_step, "warning", evidence)]


def _above_the_cap(record: StepRecord) -> bool:
    """The gradients the optimiser stepped had a norm above clip_grad_norm_'s max_norm (or a NaN or inf one)."""
    return record.grad_norm is not None and not record.grad_norm <= record.clip_max_norm


# --- a prediction broadcast against the batch's targets ---------------------------------------------------------------
def broadcast_rule(history: History, t: Thresholds) -> list[Finding]:
    """The loss compares a prediction of shape (N, 1) with a target of shape (N,): broadcast to (N, N), every
    prediction meets every target of the batch, and the gradient that reaches prediction p_i is 2/N (p_i - mean(y))
    with mean(y) in place of its own target y_i. The model can learn the mean target and nothing else: a stalled
    loss, whatever the learning rate, named at the operation that broadcast."""
    marked = _marked_on_most(history, "prediction_broadcast", t)
    if not marked:
        return []
    found = marked[-1].prediction_broadcast
    loss = history.current_loss()
    thirds = _loss_thirds(loss)
    stalled = _loss_is_stalled(loss, t)
    # (a hand-written loss may broadcast on purpose, against targets laid out as a row: an energy distance, a kernel
    # MMD between predictions and targets, which learn; a loss function that broadcasts does so by mistake, and warns)
    if not found.get("by_loss_function", True) and not stalled:
        return []
    evidence = {
        "across": "broadcast",
        "prediction": found["module"],
        "prediction_shape": found["prediction"],
        "compared_as": found["compared_as"],
        "loss_first_third": _sci(thirds[0]) if thirds else None,
        "loss_last_third": _sci(thirds[1]) if thirds else None,
        "loss_stalled": stalled,
    }
    first = next(r.step for r in history.records if r.prediction_broadcast is not None)
    return [Finding("stalled_loss", found["op"], first, "error", evidence)]


# --- units all alike: a symmetric initialisation ------------------------------------------------------------------
def symmetric_units_rule(history: History, t: Thresholds) -> list[Finding]:
    """A layer whose units all have the same incoming weights (and biases) computes one function of its inputs,
    copied: every unit gets the same output, hence the same gradient, dL/dW_j = delta_j x with the same delta_j, and
    takes the same update. Nothing in backprop can tell them apart, so they stay alike for good, and the layer is as
    good as one unit wide: the loss can only fall as far as that allows. Found at two looks `identical_units_steps`
    apart or more, with the weights moving (weights that do not move are the learning rate's or the gradient's
    finding); named at the alike layer nearest the input, the others listed."""
    recent = history.recent()
    alike = []
    for name, looks in history.unit_spreads.items():
        steps = _alike_since_last_parted(looks, t)
        if len(steps) >= 2 and steps[-1] - steps[0] >= t.identical_units_steps and _weights_moved(recent, name):
            depth = next((r.layers[name].depth for r in reversed(recent) if name in r.layers), math.inf)
            alike.append((depth, name, steps))
    if not alike:
        return []
    alike.sort(key=lambda a: (a[0], a[1]))
    _, name, steps = alike[0]
    loss = history.current_loss()
    thirds = _loss_thirds(loss)
    moved = [ratio for ratio in _layer_values(recent, name, "update_ratio") if ratio > 0]
    evidence = {
        "across": "units",
        "units": history.layer_units[name],
        "unit_spread": _sci(history.unit_spreads[name][-1][1]),
        "alike_at_steps": steps,
        "update_ratio": _sci(median(moved)) if moved else None,
        "also_alike": [other for _, other, _ in alike[1:]],
        "loss_first_third": _sci(thirds[0]) if thirds else None,
        "loss_last_third": _sci(thirds[1]) if thirds else None,
    }
    # a network that still learns much (the other layers carry it) is warned about; one that cannot, an error
    severity = "warning" if _loss_fell_by(loss) > t.alike_units_learning else "error"
    return [Finding("stalled_loss", name, steps[0], severity, evidence)]


def _alike_since_last_parted(looks: list[tuple[int, float]], t: Thresholds) -> list[int]:
    """The steps of the looks that found a layer's units alike, since they were last found well apart. Units alike
    to the last bit may drift apart by rounding, slowly (a GRU's by 3.5e-4 after a thousand steps): still one unit
    for the training, until the spread reaches `parted_units`."""
    steps: list[int] = []
    drifting = False
    for step, spread in looks:
        if spread >= t.parted_units:
            steps, drifting = [], False
        elif spread < t.identical_units:
            steps.append(step)
            drifting = True
        elif not drifting:  # (between the thresholds, never alike before: not this)
            steps = []
    return steps


def _weights_moved(records: list[StepRecord], name: str) -> bool:
    """Whether a layer's weights moved on recent steps: an update/weight ratio above 0, or (no optimiser measured:
    weights updated by hand) a weight norm that changed."""
    if any(ratio > 0 for ratio in _layer_values(records, name, "update_ratio")):
        return True
    return len(set(_layer_values(records, name, "weight_norm"))) > 1


# --- dead ReLUs and saturated squashing functions ----------------------------------------------------------------
def dead_relu_rule(history: History, t: Thresholds) -> list[Finding]:
    findings = []
    recent = history.recent()
    sites = sorted({s for r in recent for s, a in r.activations.items() if a.function in RELU_FAMILY})
    for site in sites:

        def dead(record, site=site):
            stats = record.activations.get(site)
            if stats is None or stats.dead_fraction is None or stats.window_examples < t.dead_min_examples:
                return None
            return stats.dead_fraction

        fractions = [x for x in (dead(r) for r in recent) if x is not None]
        if len(fractions) < t.min_records:
            continue
        fraction = median(fractions)
        severity = _grade(fraction, t.dead_warning, t.dead_error, below=False)
        if severity is None:
            continue
        first = onset(
            history.healthy_records(),
            lambda r, dead=dead: None if dead(r) is None else dead(r) > t.dead_warning,
            t.persistence,
        )
        if first is not None:  # dead over the whole window that first showed it: dead since that window began
            found = next(r.activations[site] for r in history.healthy_records() if r.step == first)
            first = found.window_start if found.window_start is not None else first
        last = next(r.activations[site] for r in reversed(recent) if site in r.activations)
        evidence = {
            "dead_fraction": _sci(fraction),
            "dead_units": int(round(fraction * last.units)),
            "units": last.units,
            "window_examples": last.window_examples,
            "zero_fraction": _sci(median(_site_values(recent, site, "zero_fraction"))),
            "feeds_from": last.feeds_from,
            "function": last.function,
        }
        reader = _next_weighted_layer(recent, last.depth)
        if reader is not None:
            evidence["feeds_into"] = reader  # (the layer after it in the forward pass: most likely its reader)
        feeder = recent[-1].layers.get(last.feeds_from) if last.feeds_from else None
        if feeder is not None and feeder.has_weights and feeder.weight_norm == 0:
            evidence["feeds_from_weights_zero"] = True  # initialised to zero: no unit ever fired
            if "Norm" in feeder.kind:  # (a normalisation's scale, gamma, at 0: the zero-init-residual trick)
                evidence["feeds_from_kind"] = feeder.kind
        # (the onset remembered before old records were thinned: the run's first record may be gone by now)
        earliest = min(first, history.onsets.get(("dead_relu", site), first)) if first is not None else None
        start = history.healthy_records()[0].step
        if history.first_record_step is not None and history.nonfinite is None:
            start = min(start, history.first_record_step)
        died = last.died_after_first_step or 0.0  # (judged once, over the sampled steps right after the first)
        if earliest is not None and earliest <= start:
            if died < t.died_after_first_step:
                evidence["dead_from_start"] = True  # dead in the first window measured, and already at its first step
            else:  # (they fired at the first step, with the initial weights: the first updates killed them)
                evidence["died_after_first_step"] = _sci(died)
                evidence["silent_at_first_step"] = _sci(last.silent_at_first_step or 0.0)
        if not evidence.get("dead_from_start"):  # (killed by the updates: too large, a rate tuned for a mean on a sum?)
            _note_summed_loss(evidence, history, t)
        if any(site in r.activations_read_by_loss for r in recent):
            evidence["read_by_loss"] = True  # the loss reads these outputs directly too: a penalty on the activations
        learnt = _loss_learnt(history)
        if fraction < 1 and learnt is not None and learnt < t.dead_but_learning:
            # the loss fell to under half its start: the live units carry the task (a hypernetwork whose task code is
            # 2-D); capacity lost, not a training that stopped. Most units dead: a warning, not an error
            severity, evidence["loss_last_third_to_first_step"] = "warning", _sci(learnt)
        findings.append(Finding("dead_relu", site, first if first is not None else recent[0].step, severity, evidence))
    return _warnings_folded_into_the_first(findings)


SEPARATE_DEAD_SITES = 3  # more sites than this with a dead-unit warning: one warning, naming the others


def _warnings_folded_into_the_first(findings: list[Finding]) -> list[Finding]:
    """Dead-unit warnings at many sites (a deep plain ReLU net: half the units of each of 16 blocks) are one
    condition of the network, told once: at the first site, the others listed with their dead shares. Errors stay
    one per site."""
    warnings = [f for f in findings if f.severity == "warning"]
    if len(warnings) <= SEPARATE_DEAD_SITES:
        return findings
    first, *others = sort_findings(warnings)
    first.evidence["also_dead"] = {f.where: f.evidence["dead_fraction"] for f in others}
    return [f for f in findings if f not in others]


def _site_values(records, site, attribute):
    return [getattr(r.activations[site], attribute) for r in records if site in r.activations]


def is_output_activation(record: StepRecord, site: str) -> bool:
    """An activation after the last layer with weights: the model's output squashing (a probability); or one whose
    output no module reads, even through other operations (PonderNet's halting probability, an output of its own).

    Its saturation is how a confident classifier looks, and with a log loss it does not block the gradient
    (d/dz of -log(sigma(z)) = sigma(z) - 1: the loss's 1/sigma cancels sigma'), so the saturation rule skips it.
    """
    if site in record.output_side_activations:
        return True
    stats = record.activations.get(site)
    depths = [layer.depth for layer in record.layers.values() if layer.has_weights]
    return stats is not None and stats.depth is not None and bool(depths) and stats.depth > max(depths)


def saturation_rule(history: History, t: Thresholds) -> list[Finding]:
    findings = []
    recent = history.recent()
    # The output squashing is excused, unless a loss with no log of it (a squared error: nothing cancels sigma')
    # barely improves while it saturates: then outputs pinned in the tail, far from their targets, are the likely
    # cause (a warning: outputs in the tail at their targets, a run resumed or begun near its optimum, look alike).
    # Or unless its outputs are rounded to exactly 0 or 1 (mean derivative below `rounded_derivative`): there sigma'
    # is exactly 0, and no loss, a log loss's 1/sigma included, gets a gradient back through it (an error).
    competing = history.competing_loss_steps > history.steps / 2  # (a GAN's players: their loss hovers by design)
    unlogged = (
        bool(recent)
        and bool(recent[-1].loss_ops)
        and not set(recent[-1].loss_ops) & set(LOG_LOSS_OPS)
        and _loss_fell_by(history.current_loss()) < t.output_saturation_progress
        and not competing
    )
    squashing = {s for r in recent for s, a in r.activations.items() if a.function in SQUASHING}
    rounded = {s: _rounded(history, s, t) for s in squashing}
    sites = sorted(
        {
            s
            for r in recent
            for s in r.activations
            if s in squashing and (unlogged or rounded[s] or not is_output_activation(r, s))
        }
    )
    for site in sites:
        fractions = [x for x in _site_values(recent, site, "saturated_fraction") if x is not None]
        if len(fractions) < t.min_records:
            continue
        fraction = median(fractions)
        severity = _grade(fraction, t.saturated_warning, t.saturated_error, below=False)
        output = is_output_activation(recent[-1], site)
        if severity is None or (output and severity != "error"):
            continue
        if output and not rounded[site]:
            severity = "warning"
        learnt = None if output else _loss_learnt(history)
        learning = learnt is not None and learnt < t.saturated_but_learning
        if learning:
            # saturated hidden units in a run whose loss fell below a tenth of its start: the gradient still reaches
            # the layers below (a pointer network's scoring tanh, sharpening as it learns); a warning at most
            severity = "warning"

        def holds(record, site=site):
            stats = record.activations.get(site)
            if stats is None or stats.saturated_fraction is None:
                return None
            return stats.saturated_fraction > t.saturated_warning

        last = next(r.activations[site] for r in reversed(recent) if site in r.activations)
        evidence = {
            "saturated_fraction": _sci(fraction),
            "mean_derivative": _sci(median(_site_values(recent, site, "mean_derivative"))),
            "function": last.function,
            "units": last.units,
            "feeds_from": last.feeds_from,
            "derivative_threshold": t.saturation_derivative,
        }
        if learning:
            evidence["loss_last_third_to_first_step"] = _sci(learnt)
        at_start = None if output else _saturation_at_start(history, site)
        if at_start is not None and at_start < t.saturated_warning / 2:
            evidence["saturated_at_start"] = _sci(at_start)  # (it grew in training: not the initialisation's doing)
            regressions = sorted(set(recent[-1].loss_ops) & set(REGRESSION_LOSS_OPS)) if recent else []
            targets = history.target_scale
            small = targets is not None and targets["target_rms"] <= t.small_targets  # (NaN: not known to be small)
            if regressions and not small:  # (a head regressing large targets from it, the likely cause)
                evidence["regression_loss_ops"] = regressions
        if not output:
            inputs = _inputs_unstandardised(history, t)
            if inputs is not None:
                evidence["inputs_unscaled"] = inputs
        if output:
            evidence["output_activation"] = True  # (reported under a loss with no log that barely improves, or rounded)
            evidence["loss_ops"] = recent[-1].loss_ops
            if rounded[site]:
                evidence["rounded_to_0_or_1"] = True
        first = onset(history.healthy_records(), holds, t.persistence)
        findings.append(
            Finding("saturated_activation", site, first if first is not None else recent[0].step, severity, evidence)
        )
    return findings


# a squared or absolute error on the loss side (written out: a power), what a regression's loss is made of
REGRESSION_LOSS_OPS = ("mse_loss", "huber_loss", "smooth_l1_loss", "l1_loss", "pow")
LOGIT_LOSS_OPS = ("log_softmax", "nll_loss", "binary_cross_entropy_with_logits")  # (losses of logits: classifiers')


def _saturation_at_start(history: History, site: str) -> float | None:
    """A site's saturated share on the run's first sampled step, when its record is still held (a long run thins its
    records, the first among them), else None."""
    records = history.healthy_records()
    if not records or records[0].step != history.first_record_step or site not in records[0].activations:
        return None
    return records[0].activations[site].saturated_fraction


def _rounded(history: History, site: str, t: Thresholds) -> bool:
    """Whether a site's outputs sit rounded to the ends of its range (its median mean derivative below
    `rounded_derivative`: a sigmoid at exactly 0.0 or 1.0 in float32 has sigma' = 0) while the loss neither improves
    nor has reached 0 (outputs rounded to their targets, a separable task learnt to the last bit, are right)."""
    derivative = median(_site_values(history.recent(), site, "mean_derivative"))
    if not derivative < t.rounded_derivative:  # (NaN: not measured)
        return False
    loss = history.current_loss()
    thirds = _loss_thirds(loss)
    return thirds is not None and thirds[1] > 1e-2 and _loss_fell_by(loss) < t.output_saturation_progress


# --- blocked gradient ------------------------------------------------------------------------------------------
def blocked_rule(history: History, t: Thresholds) -> list[Finding]:
    findings = []
    recent = history.recent()
    keys = sorted({key for r in recent for key in r.ops})
    for key in keys:
        fractions = [r.ops[key].blocked_fraction for r in recent if key in r.ops]
        if len(fractions) < t.min_records:
            continue
        fraction = median(fractions)
        last = next(r.ops[key] for r in reversed(recent) if key in r.ops)
        severity = _grade(fraction, t.blocked_warning, t.blocked_error, below=False)
        zero_labels = _zero_labels(recent, key) if last.floor_at_zero and last.site == "loss" else None
        # (the prediction itself clamped to a range: made so by the model, or read so by the loss)
        clamped_output = last.site.startswith("the model's output") and last.op != "relu"
        clamped_output = clamped_output or (last.site == "loss" and last.reads is not None and not last.floor_at_zero)
        logits_clamped = clamped_output and _logits_clamped(history)
        if zero_labels is not None and zero_labels >= t.zero_labels:
            severity = "error"  # a hinge over 0/1 labels: y = 0 makes max(0, m - 0 f) = m, a constant, for those
        elif last.floor_at_zero and last.site == "loss" and last.op != "hardtanh":
            if _margin_loss_met(history, t) or _hinge_met(history, key, t) or _hinge_learning(history, key, t):
                continue  # every example past the margin, the loss at its floor of 0: learnt, not leaking
            severity = severity and "warning"  # a margin loss: examples past the margin give nothing, by design
        elif clamped_output:
            # the prediction clamped to a range in training: no example outside it comes back, unless the loss fell
            # far all the same (an image kept in [0, 1]: the pixels outside are those already near their targets).
            # Not a classifier's logits: clamped, they cap its confidence and the loss sits at the floor the bounds
            # set, however far it fell (sweep 48: logits.clamp(-2, 2), 98% at the bounds, test NLL 0.22 against 0.04)
            severity = _grade(fraction, t.clamped_output_warning, t.clamped_output_error, below=False)
            learnt = _loss_learnt(history)
            if learnt is not None and learnt <= t.margin_learning and not logits_clamped:
                severity = None
        elif last.floor_at_zero and severity == "warning" and not last.site.startswith("the model's output"):
            severity = None  # a ReLU written as a clamp: half its outputs at zero is the usual sparsity
        if severity is None:
            continue
        if zero_labels is not None and zero_labels >= t.zero_labels:  # (wrong from the first step: the labels are)
            holds = functools.partial(_labels_zero_one, key=key, line=t.zero_labels)
        else:
            line = t.clamped_output_warning if clamped_output else t.blocked_warning
            holds = functools.partial(_blocks_past, key=key, line=line)
        first = onset(history.healthy_records(), holds, t.persistence)
        evidence = {"blocked_fraction": _sci(fraction), "site": last.site, "elements": last.elements}
        if last.floor_at_zero:
            evidence["floor_at_zero"] = True
        if zero_labels is not None and zero_labels >= t.zero_labels:
            evidence["zero_labels"] = _sci(zero_labels)
        if last.site.startswith("the model's output"):
            evidence["on_model_output"] = True  # (a ReLU as the model's last module, or a clamp of its prediction)
            if last.op != "relu":
                evidence["output_of"] = last.site.rpartition(" ")[2]
        if last.reads:
            evidence["output_of"] = last.reads  # it clamps a layer's output, the prediction, not an error
        if logits_clamped:
            evidence["logits_clamped"] = True
        if last.lower_bound is not None and not last.reads:
            evidence["lower_bound"] = _sci(last.lower_bound)  # a floor on a loss term: free bits, free nats
        findings.append(
            Finding("blocked_gradient", last.op, first if first is not None else recent[0].step, severity, evidence)
        )
    return _one_for_all_dropouts(findings)


def _blocks_past(record: StepRecord, key: str, line: float) -> bool | None:
    """Whether the gating op `key` blocked more than `line` of its gradient on this sampled step (None: not seen)."""
    return record.ops[key].blocked_fraction > line if key in record.ops else None


def _labels_zero_one(record: StepRecord, key: str, line: float) -> bool | None:
    """Whether the hinge `key` read labels of 0 and 1 with at least `line` of zeros on this sampled step."""
    return (record.ops[key].zero_labels or 0) >= line if key in record.ops else None


def _zero_labels(recent: list, key: str) -> float | None:
    """The median share of 0 labels in the product y * f under a margin loss's hinge, over the recent sampled steps
    that measured it (labels all 0 or 1), or None."""
    shares = [r.ops[key].zero_labels for r in recent if key in r.ops and r.ops[key].zero_labels is not None]
    return median(shares) if shares else None


def _one_for_all_dropouts(findings: list[Finding]) -> list[Finding]:
    """Dropout modules that drop most of their inputs (p = 0.9 for a keep probability of 0.1, in every layer of a
    transformer): one finding, at the first site, the others listed in `also_sites`."""
    dropouts = [f for f in findings if f.where == "dropout"]
    if len(dropouts) < 2:
        return findings
    dropouts.sort(key=lambda f: natural_key(f.evidence["site"]))
    first = dropouts[0]
    first.evidence["also_sites"] = [f.evidence["site"] for f in dropouts[1:]]
    first.severity = "error" if any(f.severity == "error" for f in dropouts) else first.severity
    return [f for f in findings if f.where != "dropout" or f is first]


def _hinge_met(history: History, key: str, t: Thresholds) -> bool:
    """Whether a margin loss's hinge, measured on its own (the mean of its output: the margin loss's value, whatever
    other losses the step adds to the one recorded, a probe's trained beside it), sits at its floor of 0 on the recent
    sampled steps: median below `margin_met` of its mean over the first third of the sampled steps kept."""
    values, recent = _hinge_means(history, key)
    if len(values) < 3 or not recent:
        return False
    first = sum(values[: len(values) // 3]) / (len(values) // 3)
    return first > 0 and median(recent) <= t.margin_met * first


def _hinge_means(history: History, key: str) -> tuple[list[float], list[float]]:
    """A margin loss's hinge means (`OpStats.hinge_mean`) on every record kept, and on the recent ones."""
    values = [r.ops[key].hinge_mean for r in history.records if key in r.ops and r.ops[key].hinge_mean is not None]
    recent = [r.ops[key].hinge_mean for r in history.recent() if key in r.ops and r.ops[key].hinge_mean is not None]
    return values, recent


def _hinge_learning(history: History, key: str, t: Thresholds) -> bool:
    """Whether a margin loss is still learning, however many of its examples are past the margin: its hinge's mean,
    or the loss, on the recent sampled steps (median; the loss: its last third's mean) is `margin_learning` of its
    first sampled value or less. The blocked examples are those it has learnt; the others keep teaching. (The loss
    too: a hinge inside `torch.where`, as `cosine_embedding_loss` computes it, is measured over the pairs the other
    branch takes as well.)"""
    values, recent = _hinge_means(history, key)
    if len(values) >= 3 and recent and values[0] > 0 and median(recent) <= t.margin_learning * values[0]:
        return True
    learnt = _loss_learnt(history)
    return learnt is not None and learnt <= t.margin_learning


def _margin_loss_met(history: History, t: Thresholds) -> bool:
    """Whether the loss (a margin loss: a hinge's clamp or ReLU at its root) sits at its floor of 0 on the recent
    sampled steps (median below `margin_met` of its first third's mean): the margin is met for every example of
    most batches, which is what the training asked for (a triplet loss with hard mining that has converged)."""
    thirds = _loss_thirds(history.current_loss())
    losses = [r.loss for r in history.recent() if r.loss is not None]
    return thirds is not None and thirds[0] > 0 and bool(losses) and median(losses) <= t.margin_met * thirds[0]


def cut_before_loss_rule(history: History, t: Thresholds) -> list[Finding]:
    """The watched modules ran with gradients on, and a backward pass came, but its graph held none of their outputs:
    the loss reads the model's output through a copy cut from the graph (`out.detach()`, `.data`, `.item()`), and
    reaches the parameters only through terms that read them directly (a weight penalty). Named as the cut."""
    recent = history.recent()
    walked = [r for r in recent if r.loss_reaches_model is not None]
    cut = [r for r in walked if r.loss_reaches_model is False and r.grad_norm]
    if len(cut) < t.min_records or 2 * len(cut) < len(walked):
        return []
    first = next(r.step for r in history.records if r.loss_reaches_model is False)
    evidence = {"blocked_fraction": 1.0, "site": "loss", "model_outputs_reached": False}
    return [Finding("blocked_gradient", "detach", first, "error", evidence)]


# --- parameters that never receive a gradient ---------------------------------------------------------------------
def frozen_optimizer_rule(history: History, t: Thresholds) -> list[Finding]:
    """Every parameter the optimiser steps is frozen (requires_grad=False) on most recent sampled steps: backward
    computes no gradient for any of them, step() skips them all, and nothing trains. (A frozen backbone beside a
    trainable head is common and fine: only all of them frozen is this.) The loss's stall or drift is its doing."""
    recent = history.recent()
    frozen = [r for r in recent if r.optimizer_parameters and r.optimizer_frozen == r.optimizer_parameters]
    if len(frozen) < t.min_records or 2 * len(frozen) < len(recent):
        return []
    first = frozen[0].step
    for record in reversed(history.records):  # (the start of the trailing run of such steps)
        if record.optimizer_parameters and record.optimizer_frozen < record.optimizer_parameters:
            break
        if record.optimizer_parameters:
            first = record.step
    evidence = {
        "all_frozen": True,
        "parameter_count": frozen[-1].optimizer_parameters,
        "models_watched": list(history.models),
    }
    return [Finding("no_gradient", "optimizer", first, "error", evidence)]


def requires_grad_assigned_rule(history: History, t: Thresholds) -> list[Finding]:
    """Frozen parameters the optimiser steps, on most recent sampled steps, that hold an attribute `requires_grad_`:
    the unfreezing `p.requires_grad_ = True` assigned an attribute where `p.requires_grad_(True)` was meant, so they
    stay frozen, and step() skips them (sweep 44's fine-tuning: the backbone never trained in stage 2, loss 0.92
    against 0.026). An error at the modules that hold them."""
    marked = _marked_on_most(history, "requires_grad_assigned", t)
    if not marked:
        return []
    parameters = marked[-1].requires_grad_assigned
    modules = sorted({name.rpartition(".")[0] or name for name in parameters})
    first = next(r.step for r in history.records if r.requires_grad_assigned)
    evidence = {"requires_grad_assigned": parameters[:12], "parameter_count": len(parameters), "modules": modules}
    return [Finding("no_gradient", _common_prefix(modules) or modules[0], first, "error", evidence)]


def stepped_without_gradients_rule(history: History, t: Thresholds) -> list[Finding]:
    """The training optimiser steps, on most recent sampled steps, with no `backward()` since its last step and not one
    of its parameters holding a gradient: the gradients are computed some other way (`torch.func.grad`,
    `torch.autograd.grad`, which return them) and never stored in the `.grad` of the parameters it holds (written to
    copies of them instead, `{k: v.detach() for k, v in model.named_parameters()}`), so each step() changes nothing.
    An error at the model."""
    recent = history.recent()
    marked = [r for r in recent if r.stepped_without_gradients]
    if len(marked) < t.min_records or 2 * len(marked) < len(recent) or history.backward_passes:
        return []
    first = next(r.step for r in history.records if r.stepped_without_gradients)
    where = history.models[0] if len(history.models) == 1 else "model"
    evidence = {
        "stepped_without_gradients": sum(r.stepped_without_gradients for r in history.records),
        "backward_passes": history.backward_passes,
    }
    return [Finding("no_gradient", where, first, "error", evidence)]


def freeze_by_attribute_rule(history: History, t: Thresholds) -> list[Finding]:
    """A watched module given `requires_grad = False` as an attribute (`backbone.requires_grad = False`) while its
    parameters still require grad and are stepped, on most recent sampled steps: an `nn.Module` has no such flag
    (`requires_grad_(False)` is the method), so nothing is frozen, and the part meant to stay fixed trains on. An
    error at the module."""
    marked = _marked_on_most(history, "module_requires_grad", t)
    if not marked:
        return []
    modules = marked[-1].module_requires_grad
    first = next(r.step for r in history.records if r.module_requires_grad)
    evidence = {"requires_grad_attribute": modules}
    return [Finding("wrong_gradient", modules[0], first, "error", evidence)]


def gradientless_optimizer_rule(history: History, t: Thresholds) -> list[Finding]:
    """A second optimiser (a GAN's generator's, beside the discriminator's that steps first) steps, on most recent
    sampled steps, parameters of which not one has a gradient: the loss differentiated before its step never
    reaches them (`D(G(z).detach())` reused for the generator's loss), and step() skips them all."""
    recent = history.recent()
    marked = [r for r in recent if r.optimizers_without_gradient]
    if len(marked) < t.min_records or 2 * len(marked) < len(recent):
        return []
    modules = sorted({name for r in marked for group in r.optimizers_without_gradient for name in group})
    evidence = {"optimizer_steps_without_gradient": True, "modules": modules, "sampled_steps": len(marked)}
    first = next(r.step for r in history.records if r.optimizers_without_gradient)
    return [Finding("no_gradient", _common_prefix(modules) or modules[0], first, "error", evidence)]


def same_parameters_rule(history: History, t: Thresholds) -> list[Finding]:
    """On most recent sampled steps (at least `min_records`), another optimiser stepped exactly the parameters the
    training optimiser steps, outside its step: every update is applied twice, each time by an optimiser with its
    own state (`members = [make()] * 3`, the same model three times, one optimiser per member; an optimiser made
    twice over `model.parameters()` and both stepped)."""
    recent = history.recent()
    marked = [r for r in recent if r.optimizers_stepping_the_same]
    if len(marked) < t.min_records or 2 * len(marked) < len(recent):
        return []
    others = max((r.optimizers_stepping_the_same for r in marked), key=len)
    evidence = {"stepped_by_others": others, "sampled_steps": len(marked)}
    first = next(r.step for r in history.records if r.optimizers_stepping_the_same)
    return [Finding("wrong_gradient", "optimizer", first, "error", evidence)]


def score_backward_rule(history: History, t: Thresholds) -> list[Finding]:
    """On most recent sampled steps (at least `min_records`), a backward pass from a score picked off a module's output
    (`scores.gather(1, y[:, None]).sum().backward()` for a saliency map) and one from the loss added into the same
    `.grad`, not reset between them, and the optimiser step applied the sum: it also pushes that score down."""
    checked = [r for r in history.recent() if r.reset_between_backwards is not None]  # (steps of several passes)
    marked = [r for r in checked if r.score_backward]
    # (a pattern of the code, not a statistic: a run that soon turns NaN leaves one or two healthy records to see it)
    if not marked or len(marked) < min(t.min_records, len(checked)) or 2 * len(marked) < len(checked):
        return []
    evidence = dict(marked[-1].score_backward, sampled_steps=len(marked))
    first = next(r.step for r in history.records if r.score_backward)
    return [Finding("wrong_gradient", "optimizer", first, "error", evidence)]


def script_tensor_without_grad_rule(history: History, t: Thresholds) -> list[Finding]:
    """A model of plain tensors whose optimiser steps some that do not require grad beside others that do
    (`W2 = torch.randn(32, 10) * 0.2`, `requires_grad_()` forgotten): backward computes no gradient for them, the
    optimiser skips them, and they keep their initial values. (A module's frozen parameters are frozen on purpose.)"""
    frozen = history.script_tensors_without_grad
    if not frozen or set(history.script_tensors) <= set(frozen) or history.records_seen < t.min_records:
        return []
    evidence = {
        "parameters": list(frozen),
        "parameter_count": len(frozen),
        "gradient": "none",
        "graph_cuts": [],
        "script_tensors": True,
        "requires_grad": False,
    }
    return [Finding("no_gradient", _tensors_named(frozen), 0, "error", evidence)]


def no_gradient_rule(history: History, t: Thresholds) -> list[Finding]:
    checked = {name: n for name, n in history.param_checks.items() if n >= t.no_gradient_min_checks}
    unreached = sorted(
        name
        for name in checked
        if history.param_with_grad.get(name, 0) == 0
        and name not in history.param_nonzero_between  # (zero at each sample by chance: a hinge loss's bias)
        and not _recurrent_weight_with_nothing_to_carry(name, history)
    )
    if not unreached:
        return []
    reached = [name for name in checked if history.param_with_grad.get(name, 0) > 0]
    # (an op blocking nearly all the gradient through it; not a margin loss's hinge, which blocks the examples past
    # its margin by design: a ranking loss's, whose bias cancels in s(x_i) - s(x_j), is no cause of anything)
    blocking = any(
        op.blocked_fraction >= t.blocked_error and not (op.floor_at_zero and op.site == "loss")
        for r in history.recent()
        for op in r.ops.values()
    )
    groups: dict[str, list[str]] = {}
    for name in unreached:
        groups.setdefault(_widest_unreached_module(name, history.param_module, reached), []).append(name)
    findings = []
    for module, params in sorted(groups.items()):
        cuts = [
            {"from": a, "to": b, "first_step": step}
            for (a, b), step in history.graph_cuts.items()
            if module == "(model)" or a == module or a.startswith(module + ".")
        ]
        # A gradient computed on every check, and exactly zero every time, is no cut: the backward pass reaches
        # the parameter, which has no effect on the loss (a bias that cancels in a difference of two outputs, or
        # a layer behind dead units, reported on their own). Worth a look, not an error, unless an operation that
        # blocks nearly all gradient (round, sign, a saturated clamp) explains the zeros.
        always_zero = all(history.param_zero_grad.get(p, 0) == checked[p] for p in params)
        evidence = {
            "parameters": params,
            "parameter_count": len(params),
            "sampled_steps_checked": min(checked[p] for p in params),
            "gradient": "exactly zero" if always_zero else "none",
            "graph_cuts": cuts,
        }
        if set(params) <= set(history.script_tensors):  # (tensors the script holds itself, in no module)
            evidence["script_tensors"] = True
        if blocking:
            evidence["blocking_op"] = True  # an op on the way blocks (nearly) all the gradient through it
        if all(r.loss_is_a_leaf for r in history.recent()):  # (the loss has no graph: nothing reaches anything)
            evidence["loss_is_a_leaf"] = True
        walked = [r.loss_reaches_model for r in history.recent() if r.loss_reaches_model is not None]
        if not always_zero and walked and not any(walked):  # (the loss's graph holds none of the model's outputs)
            evidence["model_outputs_reached"] = False
        layers = {_module_of(p, history.param_module) for p in params}
        if not always_zero and not reached:
            # None at the optimiser step for every parameter, though backward brought a gradient to their layers'
            # outputs: computed, then cleared before the step (a zero_grad() between backward() and step() wipes
            # them all; one unused parameter in a layer that is used is another matter)
            reached_layer = _gradient_at_output(history, layers)
            if reached_layer is not None:
                evidence["gradient_at_output"] = {"layer": reached_layer[0], "norm": _sci(reached_layer[1])}
                if not any(r.grads_after_backward for r in history.recent()):
                    # (and none held one even right after backward: nothing cleared them; the layer ran on other
                    # tensors in their place, copies detached from them, which the gradient went to)
                    evidence["ran_on_other_tensors"] = True
            elif _held_after_backward(history):  # (the backward of the step before: step() came before backward())
                evidence["gradient_after_backward"] = True
        elif not always_zero and not cuts:
            # None at the step, though backward brought a gradient to their layers' outputs while other parameters
            # kept theirs: these alone were cleared in between (`p.grad = None` for a backbone: a freeze by hand)
            reached_layer = _gradient_at_output(history, layers)
            if reached_layer is not None:
                evidence["cleared_after_backward"] = {"layer": reached_layer[0], "norm": _sci(reached_layer[1])}
        # Exactly zero at the step because the script zeroed them after backward (`p.grad.zero_()` to freeze a
        # backbone): the optimiser still steps them, and weight decay or momentum moves them, gradient or not
        compared = [history.param_compared_after_backward.get(p, 0) for p in params]
        zeroed = always_zero and min(compared) >= t.min_records
        zeroed = zeroed and all(history.param_zeroed_after_backward.get(p, 0) == n for p, n in zip(params, compared))
        if zeroed:
            evidence["zeroed_after_backward"] = True
            moved = [x for layer in sorted(layers) for x in _layer_values(history.recent(), layer, "update_ratio")]
            if moved and median(moved) > 0:
                evidence["moved_per_step"] = _sci(median(moved))  # (relative to the weights: they drift)
        elif always_zero and not cuts and not blocking and _biases_cancelling(params, layers, history):
            continue  # (harmless by design: a constant the loss subtracts from itself, D(fake) - D(real))
        if always_zero and _output_gradient_always_zero(history, layers):
            evidence["output_gradient"] = "exactly zero"  # nothing reaches their outputs: something after them
        elif (
            always_zero
            and not zeroed
            and not cuts
            and not blocking
            and _weights_and_biases(params)
            and _gradient_at_output(history, layers)
        ):
            # Gradient reaches their outputs, and a layer's bias as well as its weight gets exactly 0: no dead input
            # explains that (a bias reads none); what reaches the layer cancels exactly, as in f(x) - f(x)
            evidence["cancels_exactly"] = True
        if always_zero and all(_only_first_time_step_reached(history, layer) for layer in layers):
            evidence["only_time_step_reached"] = 0  # a recurrent layer read at its first step: nothing to carry over
        elif always_zero and all(
            _FORWARD_DIRECTION.fullmatch(p) and f"{p}_reverse" in history.param_module for p in params
        ):
            evidence["reverse_direction_only"] = True  # a bidirectional layer's `h_n[-1]` read alone: the reverse's
        elif always_zero and all(_REVERSE_RECURRENCE.fullmatch(p) for p in params):
            # a bidirectional layer read at its last step only: there the reverse direction has made its first step,
            # from the zero initial state, and its hidden-to-hidden weights carry nothing
            evidence["reverse_read_at_last_step"] = True
        shut = _gates_shut_exactly(history, module) if always_zero else None
        if shut:
            evidence["gates_shut_exactly"] = shut  # (a hardsigmoid gate at 0 for every input: it and its branch)
        reset = _state_reset_at_every_call(history, layers, t) if always_zero else None
        if reset is not None:
            evidence["state_reset_every_call"] = reset[0]  # a cell given a fresh state at each call: nothing carried
            if reset[1] != module:
                evidence["cell"] = reset[1]  # (the hand-written cell holding the layer whose weights get 0)
        # Not cut off but not used: their modules' forward never ran on a checked step while the rest of the model
        # learned (an expert no token was routed to, a branch never taken). Worth a look (a collapsed mixture of
        # experts), not an error of the graph. (Nothing reached at all: an optimiser given a model that never runs.)
        never_ran = bool(reached) and _on_every_check(history.not_called, params, checked, history.param_module)
        dropping = _custom_backward_dropping(history, params)
        if dropping is not None:  # (its forward runs under no_grad by design: that is no cause)
            evidence["custom_backward_returns_none"] = dropping
        elif never_ran:
            evidence["forward_ran"] = "never"
        # Run, but with gradient recording off on every checked step (inside torch.no_grad(), or by a reentrant
        # checkpoint whose inputs do not require grad): no graph joins them to the loss. The cause, named.
        elif not always_zero and _on_every_check(history.without_grad, params, checked, history.param_module):
            evidence["forward_ran"] = "without grad"
            if _on_every_check(history.in_reentrant_checkpoint, params, checked, history.param_module):
                evidence["reentrant_checkpoint"] = True
        # Biases that never get a gradient in a run whose loss is made of a gradient with respect to the inputs (a
        # Hamiltonian network trained on dH/dz): a constant added to the output has no derivative with respect to the
        # input, so it drops out of that loss by construction. Harmless, and nothing cut the graph.
        constant = not always_zero and not cuts and all(p.rpartition(".")[2] == "bias" for p in params)
        constant = constant and all(history.checked_under_input_gradient.get(p, 0) == checked[p] for p in params)
        if constant:
            evidence["drops_out_of_input_gradient"] = True
        first_step = history.records[0].step if history.records else 0
        cleared = "cleared_after_backward" in evidence  # (the optimiser skips a gradient of None: a freeze, perhaps)
        severity = (
            "warning" if (always_zero or never_ran or constant or cleared) and not cuts and not blocking else "error"
        )
        if reset is not None or evidence.get("cancels_exactly"):  # (not by design: nothing of the layers learns)
            severity = "error"
        if always_zero and not all(p.rpartition(".")[2].startswith("bias") for p in params):
            evidence["weights_without_effect"] = True  # (not biases alone: no cancelling constant, by design)
            if severity == "warning" and _loss_is_stalled(history.current_loss(), t):
                severity = "error"  # (weights that never learn, and a loss that stopped: the cause, likely)
        if zeroed:  # (frozen by hand, as meant, unless the optimiser moves them all the same)
            severity = "error" if "moved_per_step" in evidence else "warning"
        if module == "(model)":
            module = _whole_model_name(params, history.param_module, history)
        findings.append(Finding("no_gradient", module, first_step, severity, evidence))
    return _dead_ends_at_stack_ends(_zero_factors_together(findings, history), history)


def _gates_shut_exactly(history: History, module: str) -> list[str]:
    """The gates beside `module` (after it, in it, or after a sibling of it: a highway block's transform gate, after
    `blocks.0.T`, beside `blocks.0.H`) whose output's mean was exactly 0 on every recent sampled step: a hardsigmoid
    whose input is below -3 for every example. Such a gate passes 0 times what it gates, and its own derivative is 0
    there, so neither its branch nor its own layer gets any gradient."""
    recent = history.recent()
    sites = {site for r in recent for site in (r.gate_means or {})}
    shut = []
    for site in sorted(sites):
        means = [r.gate_means.get(site) for r in recent if r.gate_means]
        if len(means) >= 2 and len(means) == len(recent) and all(m == 0 for m in means):
            shut.append((site, site.partition(" after ")[2]))
    inside = [site for site, after in shut if after == module or after.startswith(module + ".")]
    parent = module.rpartition(".")[0]
    beside = [site for site, after in shut if parent and after.startswith(parent + ".")]
    return (inside or beside)[:8]


_INDEXED = re.compile(r"(.*)\.(\d+)\.(.+)")  # `blocks.5.res`: a submodule of the 6th of a stack of blocks


def _dead_ends_at_stack_ends(findings: list[Finding], history: History) -> list[Finding]:
    """A module with no gradient (None, nothing cut) that is the last of a submodule repeated along a stack of blocks,
    whose copies in the blocks before it do get one (`blocks.5.theta_b` after `blocks.0-4.theta_b`): each block's copy
    feeds the next block, and the last block has no next. A dead end built into the stack (N-BEATS's last backcast,
    WaveNet's last residual projection), harmless to the rest: a warning."""
    silent = {f.where for f in findings if f.symptom == "no_gradient"}
    modules = set(history.param_module.values())
    for f in findings:
        e = f.evidence
        match = _INDEXED.fullmatch(f.where)
        if f.symptom != "no_gradient" or match is None or e.get("gradient") != "none" or e.get("graph_cuts"):
            continue
        if e.get("blocking_op") or e.get("forward_ran"):
            continue
        prefix, index, suffix = match.group(1), int(match.group(2)), match.group(3)
        siblings = [f"{prefix}.{i}.{suffix}" for i in range(index)]
        last = f"{prefix}.{index + 1}.{suffix}" not in modules
        if index >= 1 and last and all(sibling in modules and sibling not in silent for sibling in siblings):
            f.severity = "warning"
            e["last_of_stack"] = {"stack": prefix, "submodule": suffix, "copies": index + 1}
    return findings


_REVERSE_RECURRENCE = re.compile(r".*\.weight_hh_l\d+_reverse")  # a bidirectional RNN's reverse hidden-to-hidden
_FORWARD_DIRECTION = re.compile(r".*\.(weight|bias)_(ih|hh)_l\d+")  # an RNN's parameter of its forward direction


def _biases_cancelling(params: list[str], layers: set, history: History) -> bool:
    """Biases alone, whose gradient is exactly 0 while their layers' weights get one and gradient reaches their output:
    a constant that cancels in the loss, which compares two outputs of the same layer (a WGAN critic's D(fake) -
    D(real), a siamese distance). It has no effect on the loss at all, by design: nothing to learn, nothing lost."""
    if not all(p.rpartition(".")[2] == "bias" for p in params):
        return False
    weights = [p.rpartition(".")[0] + ".weight" for p in params]
    return all(history.param_with_grad.get(w, 0) > 0 for w in weights) and _gradient_at_output(history, layers)


def _zero_factors_together(findings: list[Finding], history: History) -> list[Finding]:
    """Layers whose weights are exactly 0 and whose gradient is exactly 0, two or more of them: factors of a product
    that all start at 0 (LoRA's A and B both zero-initialised, two layers in a row zeroed). Each one's gradient is
    the other's value times something, 0, so none ever moves: a saddle the optimiser cannot leave. One error at the
    module holding them, in place of a warning for each."""
    stuck = [
        f
        for f in findings
        if f.evidence.get("gradient") == "exactly zero"
        and not f.evidence.get("graph_cuts")
        and not f.evidence.get("forward_ran")
    ]
    # (a normalisation over one value per group, GroupNorm(C, C) at 1 x 1: its output is its bias whatever its input,
    # and every layer before it gets exactly 0: one error at the norm, in place of one per layer)
    recent = history.recent()
    over_one = [r.norm_over_one_value for r in recent if r.norm_over_one_value]
    if stuck and over_one and 2 * len(over_one) >= len(recent):
        merged = _merged_zero_gradients(findings, stuck, history, {"norm_over_one_value": over_one[-1]})
        merged[-1].where = over_one[-1][0]
        return merged
    zeroed = [f for f in stuck if _weights_stay_zero(history, _layers_of(f, history))]
    # (a normalisation's scale held at exactly 0: every layer after it sees an input of 0, and the layers whose
    # gradient is exactly 0 with it get none from an input of 0 and pass none back, SwiGLU's silu(a) b at 0)
    norms = sorted({layer for f in stuck for layer in _norm_layers(history, f) if _weights_stay_zero(history, {layer})})
    if norms and all(_norm_layers(history, f) for f in zeroed):  # (and no other layer held at 0: LoRA's, below)
        return _merged_zero_gradients(findings, stuck, history, {"norm_scale_zero": norms})
    # (a gradient reaches one of them at least: B's output in LoRA's y = B A x. Layers none reaches, zero-initialised
    # heads whose loss is weighted 0, are not a product's factors: their own warnings stand)
    if len(zeroed) < 2 or all(f.evidence.get("output_gradient") == "exactly zero" for f in zeroed):
        return findings
    return _merged_zero_gradients(findings, zeroed, history, {})


def _layers_of(f: Finding, history: History) -> set[str]:
    return {_module_of(p, history.param_module) for p in f.evidence["parameters"]}


def _norm_layers(history: History, f: Finding) -> list[str]:
    """The normalisation layers (LayerNorm, RMSNorm, ...) among a finding's, by their kind on the last record."""
    last = history.records[-1].layers if history.records else {}
    return sorted(layer for layer in _layers_of(f, history) if layer in last and _is_norm_kind(last[layer].kind))


def _is_norm_kind(kind: str) -> bool:
    """LayerNorm, RMSNorm, GroupNorm, BatchNorm2d, ...: a normalisation layer's class (not `NormedLinear`)."""
    return re.search(r"Norm(\dd)?$", kind) is not None


def _merged_zero_gradients(findings: list[Finding], zeroed: list[Finding], history: History, extra: dict) -> list:
    """One error for zero-gradient findings that one cause explains: layers whose weights stay at 0."""
    params = sorted(p for f in zeroed for p in f.evidence["parameters"])
    layers = sorted({_module_of(p, history.param_module) for p in params})
    where = _common_prefix(layers) or _whole_model_name(params, history.param_module, history)
    evidence = {
        "parameters": params,
        "parameter_count": len(params),
        "sampled_steps_checked": min(f.evidence["sampled_steps_checked"] for f in zeroed),
        "gradient": "exactly zero",
        "graph_cuts": [],
        "zero_weights": extra.get("norm_scale_zero", layers),
        **extra,
    }
    merged = Finding("no_gradient", where, min(f.first_step for f in zeroed), "error", evidence)
    return [f for f in findings if f not in zeroed] + [merged]


def _weights_stay_zero(history: History, layers: set[str]) -> bool:
    """Whether every one of `layers` had weights of norm exactly 0 on every sampled step that measured them."""
    for layer in layers:
        norms = [r.layers[layer].weight_norm for r in history.records if layer in r.layers]
        norms = [n for n in norms if n is not None]
        if not norms or any(n != 0 for n in norms):
            return False
    return True


def _weights_and_biases(params: list[str]) -> bool:
    """Whether `params` hold both a weight and a bias of one layer."""
    owners = {name.rpartition(".")[0]: set() for name in params}
    for name in params:
        owners[name.rpartition(".")[0]].add(name.rpartition(".")[2])
    return any({"weight", "bias"} <= kinds for kinds in owners.values())


def _custom_backward_dropping(history: History, params: list[str]) -> str | None:
    """The custom autograd.Function whose backward returned None for most of `params`, given to it as inputs (a
    reversible block's `RevFn.apply(x1, x2, f, g, *params)` recomputing its gradients by hand), or None."""
    for name, tally in sorted(history.custom_backwards.items()):
        dropped = tally.get("drops_parameters") or set()
        if 2 * len(dropped.intersection(params)) > len(params):
            return name
    return None


def _whole_model_name(params: list[str], param_module: dict[str, str], history: History) -> str:
    """The name of the model `params` make up whole: the one model watched, or the one whose name they all carry; a
    model of plain tensors by its tensors' names."""
    if len(history.models) == 1:
        return history.models[0]
    if not history.models and history.script_tensors and set(params) <= set(history.script_tensors):
        return _tensors_named(sorted(params, key=history.script_tensors.index))
    roots = {_module_of(p, param_module).split(".")[0] for p in params}
    if len(roots) == 1 and roots <= set(history.models):
        return roots.pop()
    # (parts of one model called one by one, each watched as a model of its own: `feat.0`, `feat.2` -> `feat`)
    modules = sorted({_module_of(p, param_module) for p in params})
    watched = all(any(m == model or m.startswith(model + ".") for model in history.models) for m in modules)
    return (_common_prefix(modules) if watched else "") or "(model)"


def _on_every_check(steps_by_module: dict[str, int], params: list[str], checked: dict, param_module: dict) -> bool:
    """Whether the module of each parameter was counted in `steps_by_module` on every step its parameter was checked."""
    return all(steps_by_module.get(_module_of(p, param_module), 0) >= checked[p] for p in params)


def _next_weighted_layer(records: list[StepRecord], depth: float | None) -> str | None:
    """The layer with weights that runs first after `depth` in the forward pass."""
    if depth is None:
        return None
    after = {name: layer.depth for r in records for name, layer in r.layers.items() if layer.has_weights}
    after = {name: d for name, d in after.items() if d is not None and d > depth}
    return min(after, key=after.get) if after else None


def _output_gradient_always_zero(history: History, layers: set[str]) -> bool:
    """Whether the gradient arriving at these layers' outputs was exactly 0 on every recent record that has it."""
    norms = [r.layers[name].out_grad_norm for r in history.recent() for name in layers if name in r.layers]
    norms = [n for n in norms if n is not None]
    return bool(norms) and all(n == 0 for n in norms)


def _held_after_backward(history: History) -> bool:
    """Parameters held a gradient right after the backward passes of most recent sampled steps (so one with none
    at the optimiser step lost it in between)."""
    recent = history.recent()
    return 2 * sum(r.grads_after_backward for r in recent) > len(recent)


def _gradient_at_output(history: History, layers: set[str]) -> tuple[str, float] | None:
    """A layer among `layers` whose output received a nonzero gradient on a recent sampled step, with its norm."""
    for record in reversed(history.recent()):
        for name in sorted(layers):
            layer = record.layers.get(name)
            norm = layer.out_grad_norm if layer else None
            if norm is not None and math.isfinite(norm) and norm > 0:
                return name, norm
    return None


def _recurrent_weight_with_nothing_to_carry(param: str, history: History) -> bool:
    """A recurrent layer's hidden-to-hidden weight, its gradient exactly zero, in a layer only ever run for one
    time step: W_hh multiplies the previous hidden state, which at the first step is the initial state, zero
    unless one is given, so d loss / d W_hh = (d loss / d gates) h_0^T = 0 by design, not a cut."""
    if not param.rpartition(".")[2].startswith("weight_hh"):
        return False
    if history.param_zero_grad.get(param, 0) != history.param_checks.get(param, 0):
        return False
    module = _module_of(param, history.param_module)
    lengths = [len(r.layers[module].time_grad_norms or ()) for r in history.records if module in r.layers]
    return bool(lengths) and max(lengths) == 1


def _state_reset_at_every_call(history: History, layers: set[str], t: Thresholds) -> tuple[int, str] | None:
    """The calls per step of a recurrent cell called at least `cut_loop_calls` times a step on the recent sampled
    steps, none of them given its own last output for a state (neither carried nor detached: a fresh one every time,
    `h = zeros(...)` inside the time loop), whose hidden-to-hidden weights get exactly zero gradient: the state is
    all zeros at every call, and the cell sees one input at a time. The weights may be those of a layer inside a
    cell written by hand (`self.h2h = nn.Linear(...)`, the cell called with (x, h)): its calls are then the module's
    holding it. (calls per step, the cell), or None."""
    if len(layers) != 1:
        return None
    (layer,) = layers
    recent = history.recent()
    # (one of PyTorch's cells is the layer itself; a hand-written one holds it)
    cell = next((m for m in _self_and_parents(layer) if any(_cell_calls(r, m) for r in recent)), None)
    calls = [c for c in (_cell_calls(r, cell) for r in recent) if c is not None] if cell else []
    if len(calls) < t.min_records:
        return None
    if not all(n >= t.cut_loop_calls and not cut and not carried for n, cut, carried, _ in calls):
        return None
    return int(median([n for n, _, _, _ in calls])), cell


def _cell_calls(record: StepRecord, name: str) -> tuple[int, int, int, int] | None:
    """A recurrent cell's calls on a sampled step, one of PyTorch's (its layer's counts) or one written by hand
    (`looped_calls`): (calls, given its own last output detached, ... with its gradient, given a parameter for its
    state); None when it was not called so."""
    layer = record.layers.get(name)
    if layer is not None and layer.calls:
        return layer.calls, layer.cut_calls, layer.carried_calls, layer.parameter_state_calls
    looped = (record.looped_calls or {}).get(name)
    if looped is not None:
        return looped["calls"], looped["cut"], looped["carried"], looped["from_parameter"]
    return None


def _self_and_parents(module: str) -> list[str]:
    """`cell.h2h`, then `cell`: a module path and those of the modules holding it, innermost first."""
    parts = module.split(".")
    return [".".join(parts[:depth]) for depth in range(len(parts), 0, -1)]


def _only_first_time_step_reached(history: History, layer: str) -> bool:
    """Whether, on the recent sampled steps, a recurrent layer run over several time steps got a gradient at its
    first step only (exactly 0 at every later one): the loss reads its output at step 0 alone (`out[:, 0]`)."""
    profiles = [r.layers[layer].time_grad_norms for r in history.recent() if layer in r.layers]
    profiles = [p for p in profiles if p and len(p) > 1]
    return bool(profiles) and all(p[0] > 0 and not any(p[1:]) for p in profiles)


def _module_of(param: str, param_module: dict[str, str]) -> str:
    return param_module.get(param, param.rpartition(".")[0])


def _widest_unreached_module(param: str, param_module: dict[str, str], reached: list[str]) -> str:
    """The outermost module containing `param` none of whose parameters received a gradient."""
    module = _module_of(param, param_module)
    parts = module.split(".") if module else []
    reached_modules = [_module_of(p, param_module) for p in reached]
    for depth in range(0, len(parts) + 1):
        prefix = ".".join(parts[:depth])
        inside = [m for m in reached_modules if prefix == "" or m == prefix or m.startswith(prefix + ".")]
        if not inside:
            return prefix or "(model)"
    return module or "(model)"


def _tensors_named(names: list[str]) -> str:
    """Where a finding about a model of plain tensors is: `w1, w2`, or `tensors` when there are many."""
    return ", ".join(names) if len(names) <= 4 else "tensors"


# --- gradients never reset ---------------------------------------------------------------------------------------
def _summing_from_the_start(summing: Finding) -> bool:
    """Gradients found not reset at every check: they were not before the first check either (its step is only the
    first sampled one that could tell)."""
    return summing.evidence["steps_not_reset"] == summing.evidence["steps_checked"]


def accumulating_rule(history: History, t: Thresholds) -> list[Finding]:
    if history.reset_checks < t.min_records - 1 or history.not_reset == 0:
        return []
    share = history.not_reset / history.reset_checks
    if share < 0.5:
        return []
    norms = [(r.step, _sci(r.grad_norm)) for r in history.records if r.grad_norm is not None][:6]
    evidence = {
        "steps_checked": history.reset_checks,
        "steps_not_reset": history.not_reset,
        "grad_norm_by_step": norms,
        "modules_not_reset": sorted(history.modules_not_reset),
    }
    where = "optimizer"
    if history.reset_in_closure:  # (`optimizer.step(closure)`: the closure runs the backward passes, LBFGS's several)
        evidence["in_closure"] = True
    if history.reset_by_hand:  # (no optimiser: the weights are updated by hand, `p -= lr * p.grad`)
        evidence["updated_by_hand"] = True
        where = history.models[0] if len(history.models) == 1 else "model"
        if history.script_tensors and not history.models:  # (a model of plain tensors: named as the script holds them)
            evidence["script_tensors"] = list(history.script_tensors)
            where = _tensors_named(history.script_tensors)
    return [Finding("accumulating_gradient", where, history.first_not_reset or 0, "error", evidence)]


# --- gradients no optimiser applies ----------------------------------------------------------------------------------
SEPARATE_UNAPPLIED_MODULES = 3  # more modules than this with some parameters left out: one finding for all of them


def optimizer_made_anew_rule(history: History, t: Thresholds) -> list[Finding]:
    """An optimiser made anew inside the training loop: each one, over the same parameters, steps once and is
    replaced. What it keeps between steps (momentum, Adam's moment estimates) starts empty every time, so every update
    is a first one: momentum never builds, and Adam's first step is lr * g / |g|, a step of lr per weight whatever the
    gradient's size. Plain SGD keeps nothing, and loses nothing."""
    made = history.optimizers_made_anew
    if made is None or not made["state"] or made["count"] < t.optimizer_anew_min or 2 * made["count"] < history.steps:
        return []
    evidence = {
        "optimizer": made["optimizer"],
        "optimizers_made_anew": made["count"],
        "steps": history.steps,
        "state_lost": made["state"],
    }
    return [Finding("unapplied_gradient", "optimizer", made["first_step"], "warning", evidence)]


def rate_overwritten_rule(history: History, t: Thresholds) -> list[Finding]:
    """A parameter group's learning rate set by hand (`optimizer.param_groups[0]["lr"] = 1e-4`, a backbone unfrozen)
    that the scheduler's next step replaced by its own, the hand-set rate serving `rate_overwritten_steps` optimiser
    steps or fewer: LambdaLR, CosineAnnealingLR and the others recompute each group's rate from its base rate, so the
    change never takes. An error where the rate put back is 0 (the group is never trained: its gradients are computed
    and not applied), else a warning."""
    brief = [r for r in history.rates_overwritten if r["steps_applied"] <= t.rate_overwritten_steps]
    if not brief:
        return []
    first = brief[0]
    evidence = {"rate_overwritten": {key: first[key] for key in ("scheduler", "group", "set_by_hand", "put_back")}}
    evidence["rate_overwritten"]["steps_applied"] = first["steps_applied"]
    evidence["times"] = len(brief)
    severity = "error" if first["put_back"] == 0 else "warning"
    symptom = "unapplied_gradient" if first["put_back"] == 0 else "stalled_loss"
    return [Finding(symptom, first["scheduler"], first["step"], severity, evidence)]


def scheduler_made_anew_rule(history: History, t: Thresholds) -> list[Finding]:
    """A learning-rate scheduler built over the training optimiser `scheduler_anew_min` times or more after the training
    began (`LambdaLR(opt, warmup_then_cosine)` inside the epoch loop): each starts its schedule from the beginning, so
    the rate runs through the schedule's first stretch again and again (a warm-up that restarts every epoch never
    reaches its peak; a decay never happens). A warning at the optimiser, with the highest rate seen on the sampled
    steps beside the one given."""
    made = history.schedulers_made_anew
    if made is None or made["count"] < t.scheduler_anew_min:
        return []
    rates = [r.lr_schedule[0] for r in history.records if r.lr_schedule is not None]
    evidence = {
        "scheduler": made["scheduler"],
        "schedulers_made_anew": made["count"],
        "built_at_steps": made["steps"],
        "lr_given": made["lr_given"],
        "lr_highest": _sci(max(rates)) if rates else None,
    }
    return [Finding("stalled_loss", "optimizer", made["first_step"], "warning", evidence)]


def state_loaded_rule(history: History, t: Thresholds) -> list[Finding]:
    """`model.load_state_dict(...)` at most steps, on a model the training optimiser steps: each load overwrites the
    weights its last update made (an EMA of the weights, or a saved copy, loaded back into the model being trained).
    What the gradients taught stays only as far as the loaded copy follows them."""
    findings = []
    for model, loads in sorted(history.state_loads.items()):
        if loads["steps"] < t.state_loads_min or 2 * loads["steps"] < history.steps:
            continue
        evidence = {"state_loaded_steps": loads["steps"], "steps": history.steps}
        findings.append(Finding("unapplied_gradient", model, loads["first_step"], "warning", evidence))
    return findings


def unapplied_rule(history: History, t: Thresholds) -> list[Finding]:
    """Parameters that had a gradient at every checked optimiser step, yet no optimiser steps them: the backward pass
    computes their gradient, and it is thrown away. One finding per widest module none of whose parameters is
    stepped (the whole model, named by its name, when the optimiser was made over another model's parameters).
    Also from part-way through, when that held on every check since, for the last third of the run at least (a
    frozen backbone unfrozen with requires_grad_(True), never added to the optimiser)."""
    checks = history.apply_checks
    if checks < t.min_records:
        return []
    always, from_part_way = _unapplied_always_and_from_part_way(history, t)
    # every parameter's module: those stepped (recorded at each optimiser step), and those not
    param_module = {**history.param_module, **history.not_applied_module}
    applied = [name for name in history.param_module if name not in history.not_applied]
    by_module: dict[str, list[str]] = {}
    untrained = _models_never_stepped([*always, *from_part_way], param_module, applied, history)
    for name in [*always, *from_part_way]:
        module = untrained.get(name) or _widest_unreached_module(name, param_module, applied)
        by_module.setdefault(module, []).append(name)
    findings = []
    for module, params in sorted(by_module.items()):
        # not one of the model's parameters is stepped: its training does nothing
        whole = module == "(model)" or module in untrained.values()
        if module == "(model)":
            module = _whole_model_name(params, param_module, history)
        evidence = {
            "parameters": sorted(params),
            "parameter_count": len(params),
            "sampled_steps_checked": checks,
            "stepped_outside_model": history.stepped_outside_model,
            "whole_model": whole,
        }
        if set(params) <= set(history.script_tensors):  # (tensors the script holds itself, in no module)
            evidence["script_tensors"] = True
        idle = {history.held_by_idle_optimizer.get(name) for name in params}
        if len(idle) == 1 and None not in idle:  # (an optimiser made for them, whose step() is never called)
            evidence["idle_optimizer"] = idle.pop()
        if module in history.unregistered:  # (held in a plain list or dict: `parameters()` does not return them)
            owner, container_type, held = history.unregistered[module]
            evidence["unregistered"] = {"owner": owner, "container": container_type, "modules": held}
        first_step = history.records[0].step if history.records else 0
        if all(name in from_part_way for name in params):  # (no gradient before: frozen, then unfrozen)
            first_step = evidence["since_step"] = min(from_part_way[name] for name in params)
            evidence["sampled_steps_since"] = min(history.not_applied_run[name][1] for name in params)
        # (part of the model never stepped, while the loss stopped: likely why; a layer held in a plain list, hidden
        # from parameters(), is a mistake whatever the loss does)
        severity = "error" if whole or "unregistered" in evidence or "idle_optimizer" in evidence else "warning"
        outside = history.stepped_outside_model
        if whole and outside and history.master_copies:
            continue  # (float32 master weights stepped, copied into a float16 model by hand after each step: applied)
        if whole and outside and history.stepped_outside_reached == outside:
            # (the optimiser steps only tensors outside the model that the backward pass reaches: inputs optimised
            # through a model kept fixed, style transfer's image, an adversarial perturbation; not copies)
            evidence["inputs_optimised"] = outside
            severity = "warning"
        if "since_step" in evidence and module in history.replaced_modules:  # (replaced part-way: it never trains)
            evidence["replaced_after_optimizer"], severity = True, "error"
        # (a model first met after step 0: not a teacher met first, trained by its own optimiser, then run beside)
        met_part_way = history.model_met_at.get(module, 0) > 0
        if "since_step" in evidence and not whole and module in history.models and met_part_way:
            # every parameter of a model met part-way, another watched model's stepped instead: a model made anew (a
            # restart from a checkpoint) while the optimiser kept the old one's parameters
            own = [name for name in param_module if name.startswith(module + ".")]
            if own and set(own) <= set(params):
                evidence["model_made_anew"], severity = True, "error"
        if all(".parametrizations." in name for name in params) and history.stepped_outside_model:
            # (`weight_norm(m)` or `spectral_norm(m)` after the optimiser was made: m.weight is now computed from new
            # parameters, original0/original1, and the optimiser steps the old weight, which nothing reads)
            evidence["parametrized_after_optimizer"], severity = True, "error"
        if severity == "warning" and _loss_is_stalled(history.current_loss(), t):
            severity = "error"
            if "inputs_optimised" in evidence:  # (nothing learns: the model's parameters left out, more likely)
                evidence["loss_stalled"] = True
        findings.append(Finding("unapplied_gradient", module, first_step, severity, evidence))
    return _one_finding_when_scattered(findings, param_module, history)


def _models_never_stepped(unapplied: list[str], param_module: dict, applied: list[str], history: History) -> dict:
    """The first model watched, beside others, when none of its parameters is stepped while others' are (an encoder
    whose optimiser never steps, beside a decoder trained): parameter -> its name, to be told as one. The first model
    named holds its parameters unprefixed (`embedding.weight`), so the widest module none of whose parameters is
    stepped is each of its parts; the others' are under their names (`decoder.gru...`), and found so already."""
    if len(history.models) < 2 or not applied:
        return {}
    first, prefixes = history.models[0], [model + "." for model in history.models]
    own = [name for name in param_module if not any(name.startswith(prefix) for prefix in prefixes)]
    if own and set(own) <= set(unapplied):
        return dict.fromkeys(own, first)
    return {}


def _unapplied_always_and_from_part_way(history: History, t: Thresholds) -> tuple[list[str], dict[str, int]]:
    """The parameters whose gradient no optimiser applied at every check of the run, and those (-> the step it
    began) at every check since part-way through, over the last third of the run at least."""
    always, from_part_way = [], {}
    for name, (first, count) in history.not_applied_run.items():
        if count >= history.apply_checks:
            always.append(name)
        elif count >= t.min_records and history.steps - first >= history.steps / 3:
            from_part_way[name] = first
    return always, from_part_way


def _one_finding_when_scattered(findings: list[Finding], param_module: dict, history: History) -> list[Finding]:
    """Parameters left out one or two per layer, across many layers (every Linear's bias and every norm's weight),
    are one mistake in the optimiser's parameter groups, not many: one finding, at the module holding them all."""

    def beside_trained(f: Finding) -> bool:  # (a module some of whose parameters are stepped: not one made after)
        stepped_modules = history.param_module.values()  # (recorded for the parameters stepped)
        return any(name == f.where or name.startswith(f.where + ".") for name in stepped_modules)

    def biases_and_norms(f: Finding) -> bool:  # (what a no-weight-decay group is meant to hold)
        return all(p.endswith("bias") or _is_norm_layer(history, param_module.get(p)) for p in f.evidence["parameters"])

    candidates = [f for f in findings if not f.evidence["whole_model"] and "since_step" not in f.evidence]
    scattered = [f for f in candidates if beside_trained(f)]
    if len(scattered) <= SEPARATE_UNAPPLIED_MODULES:
        return findings
    # with them, whole normalisation layers left out (LayerNorm: its weight and bias), by the same grouping
    scattered += [f for f in candidates if not beside_trained(f) and biases_and_norms(f)]
    params = sorted(p for f in scattered for p in f.evidence["parameters"])
    modules = sorted(f.where for f in scattered)
    common = _common_prefix(modules) or _whole_model_name(params, param_module, history)
    evidence = {
        "parameters": params,
        "parameter_count": len(params),
        "sampled_steps_checked": history.apply_checks,
        "stepped_outside_model": history.stepped_outside_model,
        "whole_model": False,
        "modules": modules,
        "scattered": True,
        "biases_and_norms": all(map(biases_and_norms, scattered)),
    }
    severity = "error" if any(f.severity == "error" for f in scattered) else "warning"  # (a stalled loss: error)
    merged = Finding("unapplied_gradient", common, min(f.first_step for f in scattered), severity, evidence)
    return [f for f in findings if f not in scattered] + [merged]


def _left_out_multipliers(findings: list[Finding]) -> dict:
    """`no_gradient` findings (id -> the `unapplied_gradient` finding that explains them) whose parameters get exactly
    zero gradient, none reaching their layers' outputs, inside a module that holds a parameter of its own that no
    optimiser steps (not a bias): `x + self.gamma * branch(x)` with gamma started at 0 and in no parameter group. The
    gamma gets a gradient, is never stepped, stays 0, and the branch behind it gets 0 times its gradient."""
    owners = {}  # module -> the unapplied finding holding a parameter directly on it
    for f in findings:
        if f.symptom == "unapplied_gradient":
            for p in f.evidence.get("parameters", ()):
                owner, _, name = p.rpartition(".")
                if owner and name != "bias":
                    owners.setdefault(owner, f)
    explained = {}
    for f in findings:
        e = f.evidence
        if f.symptom != "no_gradient" or e.get("gradient") != "exactly zero" or e.get("graph_cuts"):
            continue
        if e.get("output_gradient") != "exactly zero" or e.get("blocking_op"):
            continue
        causes = [_owner_beneath(p, owners) for p in e.get("parameters", ())]
        if causes and None not in causes:
            explained[id(f)] = causes[0]
    return explained


def _owner_beneath(parameter: str, owners: dict):
    """The finding of the module in `owners` that holds `parameter` in one of its submodules (`blocks.0.fc1.weight`
    under `blocks.0`: not a parameter of that module itself), else None."""
    parts = parameter.split(".")
    for depth in range(len(parts) - 2, 0, -1):
        cause = owners.get(".".join(parts[:depth]))
        if cause is not None:
            return cause
    return None


def _is_norm_layer(history: History, module: str | None) -> bool:
    """Whether `module` is a normalisation layer (LayerNorm, BatchNorm2d, GroupNorm, RMSNorm, ...), by its kind."""
    layer = next((r.layers[module] for r in reversed(history.records) if module in r.layers), None)
    return layer is not None and re.search(r"Norm(\d+d)?$", layer.kind) is not None  # (LayerNorm, BatchNorm2d, ...)


def _common_prefix(modules: list[str]) -> str:
    """The deepest module path that holds every one of `modules` ('model' for 'model.0' and 'model.1.fc')."""
    parts = [m.split(".") for m in modules]
    common = []
    for names in zip(*parts):
        if len(set(names)) > 1:
            break
        common.append(names[0])
    return ".".join(common)


# --- non-finite values -----------------------------------------------------------------------------------------------
def _loss_before(history: History, step: int) -> list[float] | None:
    """[first, highest] finite loss recorded before `step`: did the loss grow on its way to the NaN?"""
    buckets = [b for b in history.loss.buckets if b.last_step < step]
    if len(buckets) < 2:
        return None
    return [_sci(buckets[0].mean), _sci(max(b.high for b in buckets))]


def nonfinite_rule(history: History, t: Thresholds) -> list[Finding]:
    event = history.nonfinite
    if event is None:
        if history.loss.first_nonfinite_step is None:
            return []
        evidence = {"phase": "forward", "value": "nan or inf", "exact": False, "nonfinite_loss_steps": 0}
        evidence["nonfinite_loss_steps"] = history.loss.nonfinite_steps
        evidence["loss_before"] = _loss_before(history, history.loss.first_nonfinite_step)
        _note_summed_loss(evidence, history, t)
        _note_impossible_ctc_alignments(evidence, history)
        return [Finding("nonfinite", "loss", history.loss.first_nonfinite_step, "error", evidence)]
    evidence = {
        "phase": event.phase,
        "value": event.value,
        "op": event.op,
        "module": event.module,
        "inside": event.inside,
        "exact": event.exact,
        "through_where": event.through_where,
        "candidates": event.candidates,
        "parameters": event.parameters[:12],
        "detail": event.detail,
        "half_precision_overflow": event.half_precision,
        "eps_rounds_to_zero": event.eps_rounds_to_zero,
        "finite_gradients": event.finite_gradients,
        "floor_at_zero": event.floor_at_zero,
        "half_precision_root": event.half_precision_root,
        "rate_read_as_rate": event.rate_read_as_rate,
        "too_few_to_spread": event.too_few_to_spread,
        "raw_layer_output": None if event.rate_read_as_rate else event.raw_layer_output,  # (poisson's own, told so)
        "read_by": event.read_by,
        "nonfinite_loss_steps": history.loss.nonfinite_steps,
        "loss_before": _loss_before(history, event.step),
    }
    if event.phase != "input" and not event.finite_gradients and event.op in (None, "log", "log2", "log10"):
        # (the NaN at a log, or not located, from a step not sampled: a log of a softmax seen on the sampled steps)
        seen = next((r.log_of_probabilities for r in reversed(history.records) if r.log_of_probabilities), None)
        if seen is not None:
            evidence["log_of_probabilities"] = seen
    if event.phase != "input" and not event.finite_gradients and event.op in (None, "acos", "asin"):
        # (the NaN at acos, or not located, from a step not sampled: acos of a clamp to [-1, 1] seen on sampled steps)
        seen = next((r.clamped_to_the_edge for r in reversed(history.records) if r.clamped_to_the_edge), None)
        if seen is not None and (event.op is None or event.op == seen["op"]):
            evidence["clamped_to_the_edge"] = seen
    first = event.step
    loss_first = history.loss.first_nonfinite_step
    since = event.finite_until
    if event.phase == "update" and since is not None and loss_first is not None and since < loss_first < first:
        # Weights found broken as a sampled step began, finite at the sampled step before, and a loss non-finite
        # in between (read late, as a GPU's are, without waiting for the device): the run went wrong at that step.
        first, evidence["found_at_step"] = loss_first, event.step
        evidence["loss_before"] = _loss_before(history, loss_first)
    evidence.update(_amplified_from_the_start(history, first, t))
    _note_summed_loss(evidence, history, t)
    _note_unscaled_inputs(evidence, history, first, t)
    _note_impossible_ctc_alignments(evidence, history)
    return [Finding("nonfinite", event.where, first, "error", evidence)]


def _note_impossible_ctc_alignments(evidence: dict, history: History) -> None:
    """`ctc_loss` given target sequences longer than their inputs allow (a label per frame, and a blank between two
    equal labels: an input subsampled too far), without `zero_infinity`: no alignment exists, and their loss is
    infinite. Noted as `ctc_targets_too_long` ({"sequences", "of", "step"}), the first sampled step's that had any."""
    seen = next(((step, look) for step, look in history.ctc_targets if look["too_long"]), None)
    if seen is not None and not seen[1]["zero_infinity"]:
        step, look = seen
        evidence["ctc_targets_too_long"] = {"sequences": look["too_long"], "of": look["sequences"], "step": step}


def _note_unscaled_inputs(evidence: dict, history: History, first_nonfinite: int, t: Thresholds) -> None:
    """A NaN or inf within the first `early_nonfinite` steps of a run whose first weighted layer was given features
    with a column of root mean square `unscaled_input` or more (x^8 of values near 4, raw prices): the first
    gradients, proportional to the inputs, are that large, and one update overshoots to inf. Noted as
    `inputs_unscaled` ({"layer", "largest_column_rms", "smallest_column_rms"})."""
    if first_nonfinite > t.early_nonfinite:
        return
    seen = _first_input_scale(history, until=first_nonfinite)
    if seen is not None and math.isfinite(seen["largest"]) and seen["largest"] >= t.unscaled_input:
        evidence["inputs_unscaled"] = {
            "layer": seen["layer"],
            "largest_column_rms": _sci(seen["largest"]),
            "smallest_column_rms": _sci(seen["smallest"]),
        }


def _amplified_from_the_start(history: History, first_nonfinite: int, t: Thresholds) -> dict:
    """A run that went non-finite before the depth rule had records enough to judge (it needs min_records), whose
    first finite record already shows the gradient growing across depth at the error level: the network amplifies
    what flows through it before any update could have (a residual added twice doubles it per block), which the
    growth of the loss would otherwise blame on the learning rate. {} when not."""
    before = [r for r in history.records if r.step < first_nonfinite]
    if not before or len(before) >= t.min_records:
        return {}
    chain = weighted_chain(before[0])
    ratio = depth_ratio(before[0], t)
    if ratio is None or not ratio > t.depth_exploding_error:
        return {}
    return {
        "depth_ratio_before": _sci(ratio),
        "depth_measured_at_step": before[0].step,
        "gain_per_layer_before": _sci(ratio ** (1 / (len(chain) - 1))),
        "input_layer": chain[0].name,
        "output_layer": chain[-1].name,
    }


# --- the loss: diverging or stalled -------------------------------------------------------------------------------
def _loss_thirds(loss: LossSeries) -> tuple[float, float] | None:
    """Mean loss over the first and the last third of the recorded steps."""
    thirds = loss.smoothed(points=3)
    if len(thirds) < 3:
        return None
    return thirds[0][1], thirds[-1][1]


def _loss_learnt(history: History) -> float | None:
    """The last third's mean loss over the first step's loss (None: too few steps, or a loss not above 0)."""
    loss = history.current_loss()
    thirds = _loss_thirds(loss)
    if thirds is None or not loss.buckets or not loss.buckets[0].first > 0 or thirds[1] < 0:
        return None
    return thirds[1] / loss.buckets[0].first


def _loss_fell_by(loss: LossSeries) -> float:
    """How much of the first third's mean loss the last third's has shed (0: none; 1: all of it)."""
    thirds = _loss_thirds(loss)
    if thirds is None or not thirds[0] > 0:
        return math.nan
    return 1 - thirds[1] / thirds[0]


def _loss_is_stalled(loss: LossSeries, t: Thresholds) -> bool:
    thirds = _loss_thirds(loss)
    if len(loss) < t.loss_min_steps or thirds is None:
        return False
    first, last = thirds
    return abs(first - last) / max(abs(first), 1e-12) < t.stalled_change


def update_ratios(history: History) -> dict[str, float]:
    """Median update/weight ratio of each layer over the recent sampled steps (since another model's training began,
    when one did: the layers of the model trained before it are not this training's)."""
    recent = history.recent()
    if history.loss_restarts:
        recent = [r for r in recent if r.step >= history.loss_restarts[-1]] or recent
    out = {}
    for name in history.layer_names():
        value = median(_layer_values(recent, name, "update_ratio"))
        if not math.isnan(value):
            out[name] = value
    return out


def _weights_shrank_by(history: History) -> float | None:
    """Median over the layers with weights of ||weights|| at the first sampled step / at the last: how many times
    smaller the weights have become (None when not measured)."""
    recent = history.recent()
    if not history.records or not recent:
        return None
    first, last = history.records[0].layers, recent[-1].layers
    factors = [
        first[name].weight_norm / layer.weight_norm
        for name, layer in last.items()
        if layer.has_weights and layer.weight_norm and name in first and first[name].weight_norm
    ]
    return median(factors) if factors else None


def _largest_gradient_to_weights(records: list[StepRecord]) -> float | None:
    """The largest ||gradient|| / ||weights|| of any layer at any of `records`, or None when none was measured."""
    shares = [
        layer.param_grad_norm / layer.weight_norm
        for r in records
        for layer in r.layers.values()
        if layer.param_grad_norm is not None and layer.weight_norm
    ]
    return max(shares) if shares else None


def _heavy_clipping(history: History, t: Thresholds) -> tuple[float, float] | None:
    """(median gradient norm measured by clip_grad_norm_, its max_norm) over the recent sampled steps that called it,
    when the norm is over `clip_heavy_factor` times max_norm on most of them: every update cut down that much."""
    recent = history.recent()
    clipped = [(r.clip_norm, r.clip_max_norm) for r in recent if r.clip_norm is not None and r.clip_max_norm]
    if len(clipped) < t.min_records or 2 * len(clipped) < len(recent):
        return None
    norm, max_norm = median([n for n, _ in clipped]), median([m for _, m in clipped])
    if not norm > t.clip_heavy_factor * max_norm:
        return None
    return _sci(norm), _sci(max_norm)


def _note_summed_micro_batches(evidence: dict, history: History, t: Thresholds) -> None:
    """A diverging loss under gradient accumulation whose losses were not divided (several backward passes per
    optimiser step, the gradients never reset between them, each loss's root scaled by more than 1/2) on most recent
    sampled steps: each step applies k micro-batches' gradients summed, k times the mean's. Noted as
    `micro_batches_summed` (k), the likely reason the learning rate is too high."""
    recent = history.recent()
    checked = [r.reset_between_backwards for r in recent if r.reset_between_backwards is not None]
    summed = [pairs + 1 for resets, pairs, scale, _ in checked if resets == 0 and not abs(scale or 1.0) <= 0.5]
    if len(summed) >= t.min_records and 2 * len(summed) >= len(recent):
        evidence["micro_batches_summed"] = median(summed)


SUMMED_TERMS_NOTED = 16  # a loss summed over fewer terms than this is not named as the rate's multiplier


def _note_summed_loss(evidence: dict, history: History, t: Thresholds) -> None:
    """A diverging loss computed with `reduction="sum"` over N >= 16 terms (the batch's examples, or entries) on most
    recent sampled steps, stepped by an optimiser whose steps grow with the gradient (SGD, not Adam): each step is
    N times the mean's, as if the learning rate were N times larger (a rate tuned for the mean, reused). Noted as
    `loss_summed_over` (N) and `loss_function`."""
    # (read from every record kept, not the recent ones only: a run that overflows early has few before its NaN)
    marked = [r for r in history.records if r.summed_loss is not None]
    if marked and 2 * len(marked) >= len(history.records) and marked[-1].summed_loss["terms"] >= SUMMED_TERMS_NOTED:
        evidence["loss_summed_over"] = marked[-1].summed_loss["terms"]
        evidence["summed_loss"] = marked[-1].summed_loss["loss"]


def _inputs_alike(history: History, t: Thresholds) -> dict | None:
    """{"layer", "spread"} when the first weighted layer's outputs, on the first sampled steps, differed between the
    examples of a batch by less than `inputs_alike` of their size (median): the inputs barely vary next to its bias."""
    looks = history.input_spreads
    spreads = [look["spread"] for look in looks if math.isfinite(look["spread"])]
    if not spreads or not median(spreads) < t.inputs_alike:
        return None
    return {"layer": looks[0]["layer"], "spread": _sci(median(spreads))}


def _term_weights_scheduled(history: History, t: Thresholds) -> bool:
    """Whether a term of the loss's sum is weighted by a constant that changed more than `term_weight_change` times
    between the first and the last sampled steps that read the weights (`ce + beta * kl` with beta warmed up from 0:
    KL annealing, a penalty's schedule). The weighted total then measures a moving objective: its stall is no
    finding (sweep 45's sparse variational dropout, whose CE fell from 0.47 to 0.21 and KL from 56 to 10 while the
    total stayed at 3.3 under beta rising from 0 to 0.37)."""
    read = [r.loss_term_weights for r in history.records if r.loss_term_weights]
    if len(read) < t.min_records or len(read[0]) != len(read[-1]):
        return False
    for first, last in zip(read[0], read[-1]):
        low, high = sorted((abs(first), abs(last)))
        if high > 0 and (low == 0 or high / low > t.term_weight_change):
            return True
    return False


def _note_rate_raised(evidence: dict, history: History, onset: int, t: Thresholds) -> None:
    """A diverging loss whose learning rate a scheduler had raised to `lr_raised` times the rate it started from
    (`initial_lr`) or more by the divergence's onset, and kept raising to the end (never lower on a sampled step than on
    the one before): a warm-up factor never capped at 1 (`LambdaLR(opt, lambda s: (s + 1) / warmup)`), or a schedule's
    peak too high (OneCycleLR's `max_lr`, ExponentialLR's gamma above 1), the likely reason the rate is too high.
    With no scheduler, the rate the training loop set by hand against the one at the first sampled step (`g["lr"] *=
    1.02` at every step, a warm-up never capped), noted `by_hand`, when it still rose after its first change (a rate set
    once by hand is left to the learning-rate remedy). Noted as `lr_raised` ({"lr_given": initial_lr,
    "lr_at_onset", "lr_last"})."""
    scheduled = [(r.step, *r.lr_schedule) for r in history.records if r.lr_schedule is not None]
    by_hand = not scheduled
    if by_hand:  # (steps at the first rate have no record of it: those before any change)
        scheduled = [(r.step, *r.lr_by_hand) for r in history.records if r.lr_by_hand is not None]
    if len(scheduled) < t.min_records or any(later[1] < earlier[1] for earlier, later in zip(scheduled, scheduled[1:])):
        return
    if by_hand and not scheduled[-1][1] > scheduled[0][1]:  # (set once, `g["lr"] = 60.0` at step 60: not a warm-up)
        return
    at_onset = next((lr for step, lr, _ in reversed(scheduled) if step <= onset), None)
    given = scheduled[-1][2]
    if at_onset is not None and at_onset >= t.lr_raised * given:
        last = scheduled[-1][1]
        evidence["lr_raised"] = {"lr_given": _sci(given), "lr_at_onset": _sci(at_onset), "lr_last": _sci(last)}
        if by_hand:
            evidence["lr_raised"]["by_hand"] = True


def _note_schedule_not_applied(evidence: dict, history: History, t: Thresholds) -> None:
    """A diverging or stalled loss whose training optimiser, on most recent sampled steps, had no scheduler while one
    was stepped over another optimiser of the same parameters that never steps (`LambdaLR(make_optimizer(model), ...)`:
    the schedule goes nowhere, the rate stays the one given). Noted as `schedule_not_applied` ({"scheduler", "lr",
    "scheduled_lr", "scheduler_steps"}: the latest)."""
    recent = history.recent()
    looks = [r.schedule_not_applied for r in recent if r.schedule_not_applied is not None]
    if len(looks) >= t.min_records and 2 * len(looks) > len(recent):
        latest = looks[-1]
        evidence["schedule_not_applied"] = {
            "scheduler": latest["scheduler"],
            "lr": _sci(latest["lr"]),
            "scheduled_lr": _sci(latest["scheduled_lr"]),
            "scheduler_steps": latest["scheduler_steps"],
        }


def _note_gradient_replaced(evidence: dict, history: History, t: Thresholds) -> None:
    """A stalled or diverging loss whose optimiser applied, on most recent sampled steps that compared them (3 at
    least), a gradient put in by hand in place of backward's that is `replaced_gradient_ratio` times larger and about
    orthogonal to it (see Thresholds): noise, or whatever was added, drowns the gradient. Noted as `gradient_replaced`
    ({"parameter", "norm_ratio", "cosine"}: medians)."""
    looks = [r.gradient_replaced for r in history.recent() if r.gradient_replaced is not None]
    looks = [look for look in looks if math.isfinite(look["norm_ratio"]) and math.isfinite(look["cosine"])]
    if len(looks) < t.min_records:
        return
    drowned = [
        look
        for look in looks
        if look["norm_ratio"] >= t.replaced_gradient_ratio and abs(look["cosine"]) <= t.replaced_gradient_cosine
    ]
    if 4 * len(drowned) >= 3 * len(looks):
        evidence["gradient_replaced"] = {
            "parameter": drowned[-1]["parameter"],
            "norm_ratio": _sci(median([look["norm_ratio"] for look in drowned])),
            "cosine": round(median([look["cosine"] for look in drowned]), 3),
        }


def _note_group_rates(evidence: dict, history: History, ratios: dict, t: Thresholds) -> None:
    """A stalled loss whose optimiser's parameter groups have learning rates 1000 times apart or more, on the last
    sampled step, and whose lowest-rate group's layers barely move (their median update/weight ratio below
    `update_ratio_low`): those layers are held by their own rate (layer-wise rates decayed by 0.1 where 0.9 was
    meant). Noted as `lr_by_group` ({"lowest", "highest", "modules_at_lowest", "update_ratio_at_lowest"})."""
    groups = history.records[-1].group_rates if history.records else None
    if not groups:
        return
    lowest = groups[0]
    moved = [ratios[name] for name in lowest["modules"] if name in ratios]
    if moved and max(moved) < t.update_ratio_low:
        evidence["lr_by_group"] = {
            "lowest": _sci(lowest["lr"]),
            "highest": _sci(groups[-1]["lr"]),
            "modules_at_lowest": lowest["modules"],
            "update_ratio_at_lowest": _sci(max(moved)),
        }


def _note_one_cycle_never_peaked(evidence: dict, history: History, t: Thresholds) -> None:
    """A stalled loss under `OneCycleLR` whose rate stayed at most `one_cycle_reached` of its `max_lr` on every sampled
    step (at least `min_records`): the schedule never got past the start of its warm-up (max_lr / 25). It counts its
    `scheduler.step()` calls against `total_steps` (epochs x batches): stepped once per epoch, it advances one batch
    per epoch. Noted as `one_cycle_never_peaked` ({"max_lr", "lr_highest", "sampled_steps"})."""
    rates = [(r.lr_schedule[0], r.one_cycle_max_lr) for r in history.records if r.one_cycle_max_lr and r.lr_schedule]
    if len(rates) < t.min_records or 2 * len(rates) < len(history.records):
        return
    highest, peak = max(lr for lr, _ in rates), rates[-1][1]
    if highest <= t.one_cycle_reached * peak:
        evidence["one_cycle_never_peaked"] = {
            "max_lr": _sci(peak),
            "lr_highest": _sci(highest),
            "sampled_steps": len(rates),
        }


def _note_gates_shut(evidence: dict, history: History, t: Thresholds) -> None:
    """A stalled loss whose every sigmoid gate (a sigmoid multiplying another computed tensor: a highway's transform
    gate, a GLU) sat shut, its output's mean under `gate_shut` on every recent sampled step: a gate t passes t times
    what it gates, and its own derivative is t (1 - t): with t near 0 neither the gated branch nor the gate learns
    (a highway's transform bias started at -10, where -1 to -3 is the advice). Noted as `gates_shut` (site -> the
    median mean)."""
    recent = history.recent()
    sites = {site for r in recent for site in (r.gate_means or {})}
    if not sites or len(recent) < t.min_records:
        return
    means = {site: [r.gate_means[site] for r in recent if r.gate_means and site in r.gate_means] for site in sites}
    if all(len(values) == len(recent) and max(values) < t.gate_shut for values in means.values()):
        evidence["gates_shut"] = {site: _sci(median(values)) for site, values in sorted(means.items())[:8]}
        evidence["gates_shut_count"] = len(means)


def input_derivative_zero_rule(history: History, t: Thresholds) -> list[Finding]:
    """The same derivative as `_note_input_derivative_zero`'s (exactly 0 on every sampled step, a ReLU network), on a
    loss that did not stall: the other terms of the loss fell (a heat equation's u_t, driven to 0 by a solution
    constant in time), so no stall carries it. A `blocked_gradient` error at `autograd.grad`."""
    noted: dict = {}
    _note_input_derivative_zero(noted, history, t)
    if not noted or _loss_is_stalled(history.current_loss(), t):
        return []
    first = next(r.step for r in history.records if r.input_gradient_zero is not None)
    evidence = {"second_derivative_zero": noted["input_derivative_zero"]}  # (not the stall's cause: told here)
    return [Finding("blocked_gradient", "autograd.grad", first, "error", evidence)]


def _note_input_derivative_zero(evidence: dict, history: History, t: Thresholds) -> None:
    """A stalled loss made of a gradient with respect to the inputs (`torch.autograd.grad(..., create_graph=True)`),
    one of which came out exactly 0 everywhere on every sampled step that took one (at least `min_records`), in a
    network whose activations are all of the ReLU family: piecewise linear, so its second derivative is 0 wherever
    it is defined, and a loss term made of one (a PDE residual u_xx - f) is a constant to the weights. Noted as
    `input_derivative_zero` ({"activations": the ReLU sites, "sampled_steps"})."""
    looked = [r for r in history.records if r.input_gradient_zero is not None]
    if len(looked) < t.min_records or not all(r.input_gradient_zero for r in looked):
        return
    functions = {site: a.function for r in looked for site, a in r.activations.items()}
    if functions and all(function in RELU_FAMILY for function in functions.values()):
        evidence["input_derivative_zero"] = {"activations": sorted(functions)[:6], "sampled_steps": len(looked)}


def _scheduled_to_nothing(history: History, t: Thresholds) -> tuple[float, float, int, bool] | None:
    """(median learning rate in effect, the rate given, the first sampled step cut, whether the rate was set by hand)
    when a scheduler kept the rate at
    most `lr_schedule_cut` of the one the optimiser was given at every sampled step kept from some step on, and those
    steps are at least 3/4 of those that recorded a schedule (most recorded one): a `StepLR(step_size=10)` meant per
    epoch but stepped per batch cuts the rate from the second sampled step. A schedule decayed to near 0 at its end
    (cosine annealing) is cut over its last few sampled steps only. With no scheduler, the same of a rate the training
    loop sets by hand, against the one at the first sampled step (`g["lr"] *= (step + 1) / warmup` at every step:
    a warm-up that compounds down to nothing). Else None."""
    records = history.records
    scheduled = [(r.step, *r.lr_schedule) for r in records if r.lr_schedule is not None]
    by_hand = not scheduled
    if by_hand:
        scheduled = [(r.step, *r.lr_by_hand) for r in records if r.lr_by_hand is not None]
    if len(scheduled) < t.min_records or 2 * len(scheduled) < len(records):
        return None
    uncut = [i for i, (_, lr, given) in enumerate(scheduled) if lr > t.lr_schedule_cut * given]
    cut = scheduled[uncut[-1] + 1 :] if uncut else scheduled
    if len(cut) < t.min_records or 4 * len(cut) < 3 * len(scheduled):
        return None
    return _sci(median([lr for _, lr, _ in cut])), _sci(median([given for _, _, given in cut])), cut[0][0], by_hand


def _curve_end(smoothed: list) -> float:
    """Where the smoothed loss ended: the median of its last three stretches, so that one batch's spike in the last (a
    final batch of 3 examples under BatchNorm, its loss 30 times the others') is no rise; a loss that diverges stays
    up."""
    return median([value for _, value in smoothed[-3:]])


def _blowup(history: History, smoothed: list, t: Thresholds) -> dict | None:
    """A loss that jumped far above its first step's and came back no lower: evidence, or None. (The smoothed start
    already holds the jump when it came in the first steps: the first step's own loss is the reference.) Not when
    the update right before the jump was measured and of a normal size: the loss jumped with the objective, not the
    weights (MoCo's queue of negatives, random at step 0 and real keys from step 1, turns an easy task hard). When most
    steps' losses are several optimisers' mixed (a policy's and its value baseline's, stepped in turn), the first step
    holds one of them only, the next ones both (REINFORCE's value error, 27 times its policy loss, "jumped in" at step
    1): the reference is then the larger of the first two steps' losses."""
    loss = history.current_loss()
    initial = loss.buckets[0].first  # (the first step's loss)
    if history.competing_loss_steps > history.steps / 2 and len(loss.buckets) > 1:
        initial = max(initial, loss.buckets[1].high)
    # With no jump inside the first stretch, its mean, when larger, is the start: one batch's loss is noise (a
    # converged run resumed from a checkpoint: 0.015 against the stretch's 0.073)
    first_stretch = [b for b in loss.buckets if b.last_step <= smoothed[0][0]]
    if max(b.high for b in first_stretch) <= t.loss_blowup_factor * initial:
        initial = max(initial, smoothed[0][1])
    highest = max(value for _, value in smoothed)
    end = _curve_end(smoothed)
    if initial <= 0 or highest <= t.loss_blowup_factor * initial or end < initial * (1 - t.stalled_change):
        return None
    jump = next(b for b in loss.buckets if b.high > t.loss_blowup_factor * initial)
    # sudden: from under twice the first loss to past the factor within a few steps (a loss that climbs by stages, a
    # curriculum making the task harder, is no blow-up)
    calm = [b for b in loss.buckets if b.last_step < jump.first_step and b.mean < 2 * initial]
    since_calm = jump.first_step - (calm[-1].last_step if calm else 0)
    if since_calm > max(5, 0.05 * loss.buckets[-1].last_step):
        return None
    if _update_of_normal_size(history, jump.first_step - 1, t):
        return None
    return {"loss_initial": _sci(initial), "loss_highest": _sci(highest), "blew_up_at_step": jump.first_step}


def _update_of_normal_size(history: History, step: int, t: Thresholds) -> bool:
    """Whether the update of `step` was sampled, and of a normal size: its largest update/weight ratio in the healthy
    band, between `update_ratio_low` and `update_ratio_high`."""
    record = next((r for r in history.records if r.step == step), None)
    ratios = [] if record is None else [x.update_ratio for x in record.layers.values() if x.update_ratio is not None]
    return bool(ratios) and t.update_ratio_low <= max(ratios) <= t.update_ratio_high


def _stopped_moving(history: History, t: Thresholds) -> int | None:
    """The sampled step from which no layer's update/weight ratio reached `update_ratio_low`."""

    def still(record: StepRecord) -> bool | None:
        ratios = [layer.update_ratio for layer in record.layers.values() if layer.update_ratio is not None]
        return max(ratios) < t.update_ratio_low if ratios else None

    return onset(history.healthy_records(), still, t.persistence)


def _steps_by_line_search(history: History) -> bool:
    """Whether the recent sampled steps' optimiser is LBFGS given a closure, whose line search sizes each step."""
    recent = [r for r in history.recent() if r.optimizer_checked]
    return bool(recent) and all(r.line_search for r in recent)


def _gradient_kept_up(history: History, since: int, t: Thresholds) -> bool:
    """Whether the gradient's norm since step `since` (median) is at least `stopped_gradient_share` of what it was
    before: the steps stopped while the gradient did not (a learning rate cut), rather than with it (converged)."""
    records = history.healthy_records()
    before = median([r.grad_norm for r in records if r.step < since])
    after = median([r.grad_norm for r in records if r.step >= since])
    return after >= t.stopped_gradient_share * before  # (False when either is NaN: none measured)


def loss_rule(history: History, t: Thresholds) -> list[Finding]:
    loss = history.current_loss()  # (a second model trained after the first: its own curve)
    smoothed = loss.smoothed()
    if len(loss) < t.loss_min_steps or len(smoothed) < 3:
        return []
    start, end = smoothed[0][1], _curve_end(smoothed)
    low_step, lowest = min(smoothed, key=lambda sv: sv[1])
    ratios = update_ratios(history)
    overall = median(list(ratios.values()))
    verdict, too_small = None, None
    if not math.isnan(overall):
        if max(ratios.values()) == 0:  # (medians: most steps moved no weight)
            # Not one weight changed at a step that had a gradient: a learning rate of 0, or steps skipped. (Weights
            # that moved only at the few steps a gradient came through are the gradient's doing.)
            with_gradient = [r for r in history.recent() if r.grad_norm]
            moved = any(layer.update_ratio for r in with_gradient for layer in r.layers.values())
            if with_gradient and not moved:
                largest = _largest_gradient_to_weights(with_gradient)
                # a gradient at most movable_gradient of the weights is lost in float32 rounding: weights that stay
                # put are then the gradient's doing, not the learning rate's (no weight norm measured: the rate's)
                if largest is None or largest > t.movable_gradient:
                    verdict = "zero"
                else:
                    too_small = largest
        elif overall > t.update_ratio_high:
            verdict = "far too high"
        elif max(ratios.values()) < t.update_ratio_low:
            verdict = "far too low"  # not one layer moves (a low median alone may be a vanishing gradient)
    evidence = {
        "loss_start": _sci(start),
        "loss_end": _sci(end),
        "loss_lowest": _sci(lowest),
        "lowest_at_step": low_step,
        "update_ratio_median": _sci(overall),
        "update_ratio_by_layer": {k: _sci(v) for k, v in ratios.items()},
        "learning_rate": verdict,
    }
    if too_small is not None:
        evidence["gradient_to_weights_max"] = _sci(too_small)  # too small to move a float32 weight
    if not ratios:  # (no layer measured: were the layers' own forward ever called, or their weights read directly?)
        checks = max(history.param_checks.values(), default=0)
        never = sorted(name for name, count in history.not_called.items() if checks and count == checks)
        if never:
            evidence["layers_never_called"] = never
    shrank = _weights_shrank_by(history)
    if shrank is not None and shrank > t.weights_shrank:
        evidence["weights_shrank_by"] = _sci(shrank)  # pulled towards 0: a large update/weight ratio is its sign
        if verdict == "far too high":
            evidence["learning_rate"] = verdict = None
    if history.loss_restarts:  # another model's training began then: this one is judged on its own
        evidence["training_began"] = history.loss_restarts[-1]
    diverging = end > t.diverging_factor * lowest and end > start * (1 + t.stalled_change) and lowest >= 0
    if diverging or (lowest < 0 and end > start + abs(start) * t.diverging_factor):
        first = next((step for step, value in smoothed if step > low_step and value > 1.5 * lowest), low_step)
        # Updates of a normal size (measured, no verdict) do not make a loss diverge: its targets may move with the
        # model instead (the returns of a reinforcement-learning agent that lives longer): a warning, told so.
        normal_updates = (
            verdict is None
            and t.update_ratio_low <= overall <= t.update_ratio_high  # (the median in the healthy band)
            and _blowup(history, smoothed, t) is None  # (a jump past 10x the first loss is an update far too large)
        )
        evidence["updates_normal_size"] = normal_updates
        # (a regression's weights grow with targets that grow, a value function's with the returns: not judged)
        recent = history.recent()
        regression = bool(recent) and bool(set(recent[-1].loss_ops or ()) & set(REGRESSION_LOSS_OPS))
        if normal_updates and not regression and shrank is not None and shrank > 0 and 1 / shrank > t.weights_grew:
            evidence["weights_grew_by"] = _sci(1 / shrank)  # (updates of a normal size, all along the weights)
        if low_step == smoothed[0][0] and loss.buckets[0].first < lowest:  # (its lowest stretch is its first)
            evidence["loss_initial"] = _sci(loss.buckets[0].first)  # it never fell: it rose from the first step
        _note_summed_micro_batches(evidence, history, t)
        _note_summed_loss(evidence, history, t)
        _note_rate_raised(evidence, history, first, t)
        _note_gradient_replaced(evidence, history, t)
        _note_schedule_not_applied(evidence, history, t)
        severity = "warning" if normal_updates and "weights_grew_by" not in evidence else "error"
        return [Finding("diverging_loss", "loss", first, severity, evidence)]
    blowup = _blowup(history, smoothed, t)
    if blowup is not None:
        evidence.update(blowup)
        _note_summed_micro_batches(evidence, history, t)
        _note_summed_loss(evidence, history, t)
        _note_gradient_replaced(evidence, history, t)
        _note_schedule_not_applied(evidence, history, t)
        if verdict != "far too high":  # (ratios measured after the jump are a broken network's: no verdict)
            evidence["learning_rate"] = None
        return [Finding("diverging_loss", "loss", blowup["blew_up_at_step"], "error", evidence)]
    if _term_weights_scheduled(history, t):  # (the objective itself changes: a flat total says nothing of progress)
        return []
    # Competing losses (a GAN's discriminator and generator, each stepping its own optimiser on its own loss) hover
    # by design: their mean is no measure of progress, and stalls only when the weights do not move either.
    competing = history.competing_loss_steps > history.steps / 2
    # Weights that do not move while gradients arrive (a learning rate of 0) leave a loss that only wanders with the
    # batches, by more than the stall's 2% when they are small or noisy: stalled, whatever the thirds say.
    thirds = _loss_thirds(loss)
    flat = _loss_is_stalled(loss, t)
    # Weights that stopped moving part-way (a schedule that cut the learning rate to almost nothing) leave a loss that
    # fell early and now only wanders: stalled since then, though the first third's loss was higher than the last's.
    # After moving at first, and for the last third of the run at least: a schedule that anneals to zero stills the
    # weights only at its very end.
    stopped_at = _stopped_moving(history, t) if verdict == "far too low" and thirds is not None and not flat else None
    stopped = (
        stopped_at is not None
        and stopped_at > history.healthy_records()[0].step  # (they moved at first)
        and history.steps - stopped_at >= history.steps / 3
        and _gradient_kept_up(history, stopped_at, t)  # (not a run converged to a zero gradient)
        and thirds[1] > t.stopped_after_converging * start  # (nor one whose loss had fallen to a sliver of its start)
    )
    # A line search (LBFGS's) that finds no step lowering the loss any more leaves the weights exactly where they are,
    # whatever the learning rate: after a fall, that is convergence at float32's resolution, not a rate of zero
    # (fallen by half within the first third, or at all from its smoothed start to an end that is its lowest: LBFGS
    # often converges within its first ten steps, and sits there, unchanged, for the rest of the run; at a rate of 0
    # it never moved)
    at_lowest = end <= lowest * (1 + t.stalled_change) if lowest > 0 else end <= lowest
    fell = thirds is not None and (thirds[0] > thirds[1] * 2 or (start > end * (1 + t.stalled_change) and at_lowest))
    converged_by_line_search = verdict == "zero" and fell and _steps_by_line_search(history)
    # A schedule that held the rate near nothing from the first sampled step on (a LambdaLR lambda that returns a rate,
    # not a factor): the weights never moved at the rate given, whatever the loss's wandering says
    held = _scheduled_to_nothing(history, t) if verdict == "far too low" and thirds is not None else None
    held_from_start = held is not None and held[2] <= history.healthy_records()[0].step
    still = flat or (verdict == "zero" and thirds is not None and not converged_by_line_search) or stopped
    still = still or held_from_start
    stopped = stopped and not held_from_start  # (held from the start: it never moved, not stopped part-way)
    if still and (not competing or verdict in ("zero", "far too low")):
        first, last = thirds
        evidence["loss_first_third"], evidence["loss_last_third"] = _sci(first), _sci(last)
        clipping = _heavy_clipping(history, t)
        scheduled = _scheduled_to_nothing(history, t)
        if clipping is not None and verdict in (None, "far too low"):
            # the updates are small because clip_grad_norm_ cuts the gradient, whatever the learning rate
            evidence["learning_rate"] = "clipped"
            evidence["grad_norm_before_clip"], evidence["clip_max_norm"] = clipping
        elif scheduled is not None and (verdict == "far too low" or overall < t.scheduled_ratio * t.update_ratio_low):
            # the updates are small because a scheduler holds the rate near 0, whatever rate the optimiser was given
            # (and small they must be: `Adam(lr=1.0)` under a LambdaLR that returns the rate, as in the Annotated
            # Transformer's Noam schedule, is held at 1e-3 by design, and its updates are of a normal size)
            evidence["learning_rate"] = "scheduled to nothing"
            evidence["lr_in_effect"], evidence["lr_given"], evidence["lr_cut_from_step"], by_hand = scheduled
            if by_hand:
                evidence["lr_by_hand"] = True  # (no scheduler: the training loop set the rate)
            plateau = max(history.plateaus.values(), key=lambda tally: tally["cuts"], default=None)
            if plateau is not None and plateau["cuts"]:  # (a ReduceLROnPlateau made the cuts)
                evidence["plateau_calls"], evidence["plateau_cuts"] = plateau["calls"], plateau["cuts"]
            rates = [r.lr_schedule[0] for r in history.records if r.lr_schedule is not None]
            if rates and all(lr == 0 for lr in rates):
                evidence["lr_exactly_zero"] = True  # (at every sampled step: nothing trains at all, an error)
        alike = _inputs_alike(history, t)
        if alike is not None:
            evidence["inputs_alike"] = alike
        _note_group_rates(evidence, history, ratios, t)
        _note_one_cycle_never_peaked(evidence, history, t)
        _note_input_derivative_zero(evidence, history, t)
        _note_gates_shut(evidence, history, t)
        _note_gradient_replaced(evidence, history, t)
        _note_schedule_not_applied(evidence, history, t)
        evidence["loss_flat"] = flat  # (False: stalled because no weight moves, the loss wandering with the batches)
        looked = history.recent()
        if looked and all(r.without_optimizer for r in looked):  # (and, updated by hand, did the weights move?)
            layers = {name for r in looked for name, layer in r.layers.items() if layer.has_weights}
            evidence["without_optimizer"] = True
            evidence["weights_moved"] = any(_weights_moved(looked, name) for name in layers) or (
                history.script_tensors_moved
            )
            if history.updated_in_place_by_hand and not evidence["weights_moved"]:
                # (`p -= lr * p.grad` ran at every step, and moved nothing: the gradient was zero by then)
                evidence["updated_by_zero"] = True
        initial = loss.buckets[0].first
        if flat and initial > last * (1 + t.fell_early):  # it learned, then stopped: converged, or stuck at a floor
            plateau = next((step for step, value in smoothed if value <= last * (1 + t.stalled_change)), None)
            evidence["fell_early"] = {"loss_initial": _sci(initial), "plateau_from_step": plateau}
        evidence["update_ratio_max"] = _sci(max(ratios.values())) if ratios else None
        first_step = loss.buckets[0].first_step
        if stopped:
            first_step = evidence["stopped_moving_at_step"] = stopped_at
        # (a rate held at 0, or by a schedule at a ten-thousandth of the one given or less, or at a hundredth or less
        # from the first step on: nothing trains, an error)
        held = evidence.get("learning_rate") == "scheduled to nothing"
        held = held and (held_from_start or evidence["lr_in_effect"] <= t.lr_schedule_cut**2 * evidence["lr_given"])
        severity = "error" if evidence.get("lr_exactly_zero") or held else "warning"
        return [Finding("stalled_loss", "loss", first_step, severity, evidence)]
    return []


RULES = (
    nonfinite_rule,
    depth_rule,
    time_rule,
    squashed_twice_rule,
    broadcast_rule,
    negated_loss_rule,
    subtracted_penalty_rule,
    maximized_loss_rule,
    negative_learning_rate_rule,
    swapped_betas_rule,
    misspelt_setting_rule,
    momentum_not_decaying_rule,
    one_hot_softmax_rule,
    reinitialised_rule,
    decayed_rate_rule,
    classes_on_another_axis_rule,
    self_similarity_rule,
    confined_logits_rule,
    one_class_over_pairs_rule,
    draw_without_path_rule,
    rows_written_twice_rule,
    outputs_alike_rule,
    batch_as_sequence_rule,
    examples_mixed_rule,
    eps_dominates_rule,
    log_probability_added_rule,
    wrong_class_rewarded_rule,
    loss_below_zero_rule,
    loss_without_floor_rule,
    kl_div_of_probabilities_rule,
    kl_div_target_below_zero_rule,
    previous_token_targets_rule,
    unshifted_targets_rule,
    updates_undone_rule,
    multi_hot_margin_rule,
    clipping_before_backward_rule,
    value_clipping_rule,
    huber_delta_rule,
    zero_pos_weight_rule,
    zero_class_weight_rule,
    soft_targets_rule,
    attention_saturation_rule,
    attention_pooled_rule,
    future_visible_rule,
    hand_written_cell_rule,
    state_from_parameter_rule,
    graph_across_steps_rule,
    eval_mode_left_rule,
    penalty_without_graph_rule,
    inverted_loss_mask_rule,
    padding_idx_rule,
    gradientless_optimizer_rule,
    stepped_without_gradients_rule,
    freeze_by_attribute_rule,
    same_parameters_rule,
    score_backward_rule,
    targets_out_of_reach_rule,
    gather_across_batch_rule,
    no_branch_taken_rule,
    raw_targets_rule,
    dropout_into_loss_rule,
    softmax_over_one_rule,
    difference_of_itself_rule,
    ratio_of_itself_rule,
    same_ids_embedded_rule,
    softmax_over_queries_rule,
    summed_beside_a_mean_rule,
    target_trained_rule,
    input_derivative_zero_rule,
    turned_straight_through_rule,
    custom_backward_rule,
    custom_backward_wrong_rule,
    zeros_outside_autograd_rule,
    relu_output_changed_rule,
    first_position_only_rule,
    last_call_only_rule,
    base_rate_rule,
    reversal_not_reversing_rule,
    unstopped_target_rule,
    hooks_piling_up_rule,
    unheld_loss_weights_rule,
    plateau_mode_rule,
    rounded_away_rule,
    symmetric_units_rule,
    growth_rule,
    dead_relu_rule,
    saturation_rule,
    blocked_rule,
    cut_before_loss_rule,
    frozen_optimizer_rule,
    requires_grad_assigned_rule,
    no_gradient_rule,
    script_tensor_without_grad_rule,
    accumulating_rule,
    optimizer_made_anew_rule,
    scheduler_made_anew_rule,
    rate_overwritten_rule,
    ctc_raw_scores_rule,
    ctc_targets_rule,
    state_loaded_rule,
    unapplied_rule,
    reset_between_backwards_rule,
    loose_leaf_rule,
    loss_rule,
)
"""Every rule, in the order the report lists symptoms of equal severity."""
