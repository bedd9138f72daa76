"""Every number the doctor's rules compare against, named, in one place.

Each threshold was set on healthy runs first (the six-plus healthy scripts under `tests/doctor/cases`, several
seeds each, see `tests/doctor/calibrate.py`) so that healthy training trips none of them, and then checked on
the broken scripts. `docs/doctor.md` lists each rule with its threshold and the margins measured on both kinds
of run. Pass `Thresholds(...)` with other values to `watch(..., thresholds=...)` to tune them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np


@dataclass(frozen=True)
class Thresholds:
    # --- how much evidence a rule needs -------------------------------------------------------------------
    min_records: int = 3
    """Sampled steps needed before any trend rule speaks (one noisy batch is not a diagnosis)."""
    persistence: float = 0.75
    """A condition "holds from step s" when it holds on at least this share of the sampled steps from s on."""
    recent_share: float = 0.25
    """Rules judge the state of the run on its most recent quarter of sampled steps (at least `min_records`)."""

    # --- vanishing / exploding across depth ---------------------------------------------------------------
    depth_vanishing_warning: float = 1e-2
    """Gradient norm at the input end over that at the output end below this: vanishing (warning).
    Healthy scripts measured 0.14 .. 7.2 (docs/doctor.md)."""
    depth_vanishing_error: float = 1e-4
    """... below this: vanishing (error). The 10-layer sigmoid net measures 3e-9."""
    depth_exploding_warning: float = 1e2
    """Input-end over output-end gradient norm above this: exploding across depth (warning)."""
    depth_exploding_error: float = 1e3
    """... above this: exploding across depth (error). The over-scaled 8-layer ReLU net measures ~3e3."""
    depth_update_spread: float = 10.0
    """A growth across depth in a chain with normalisation layers is not told when its input-end layer moves
    by a healthy update/weight ratio at most this many times its output-end layer's: the normalisation divides the
    gradient by the spread of weights that shrank, and the updates stay even (sweep 53: a BatchNorm keypoint net, PCK
    1.000, ratio 106, updates 1.4e-3 at the input end and 7.5e-4 at the output)."""
    depth_min_layers: int = 3
    """Layers with weights needed before depth is judged (two layers are too few to call a trend)."""

    # --- vanishing / exploding across time (recurrent layers) ---------------------------------------------
    time_vanishing_warning: float = 1e-6
    """Gradient reaching the earliest time steps over that at the latest below this: vanishing over time. An
    error only while the loss is not improving: a model that learns may need only its recent steps (however
    small the ratio: a GRU forecasting an AR(2) series solved its task at 4e-11)."""
    time_exploding_warning: float = 1e2
    """Earliest-steps over latest-steps gradient above this: exploding over time (warning). A healthy GRU
    whose task depends on early tokens measured up to 34: early steps may rightly get *more* gradient. (1e3 until
    sweep 33's IRNN, W_hh = 1.41 I, whose ratio stayed at 440-735 while it failed; 18 healthy recurrent runs, seven
    with a loss at every step over 50-120 steps, gave no finding at 1e2, every 16 steps or every step.)"""
    time_exploding_error: float = 1e4
    """... above this: exploding over time (error)."""
    time_edge_share: float = 0.1
    """Share of the sequence averaged at each end (first and last 10% of time steps, at least one)."""
    time_buildup_share: float = 0.2
    """Exploding over time also needs the growth spread along the sequence, as backprop through time compounds
    it: the middle steps' gradient lies between the ends, at least this share of the way (in orders of
    magnitude) from each. A jump at one end is no explosion: a healthy GRU whose task depends on its first input
    measured early/late 1.4e3, nearly all of it at step 0; padding at the end of sequences of varied length
    measured 1.1e3, nearly all of it in the padded steps."""
    forget_gate_kept: float = 0.27
    """An LSTM whose gradient vanishes across time, with its forget gate keeping less than this share of the cell state
    per step at its mean bias (sigmoid(b_f) < 0.27: b_f below -1), is told that the gate starts closed, with a positive
    bias as the first remedy (sweep 47: a chrono initialisation with its sign flipped, mean bias -3.4, keeps 0.03).
    PyTorch's own initialisation gives a mean bias near 0, a gate half open. Likewise a GRU's update gate z, the share
    of the state h' = (1 - z) n + z h keeps (sweep 48: its bias set to -2 in both b_ih and b_hh, z = 0.02)."""
    time_growth_steps_share: float = 0.6
    """... and the gradient growing from a step to the one before it at more than this share of the steps, as a
    recurrent Jacobian above 1 makes it: a healthy 2-layer GRU language model under truncated BPTT measured early/late
    950 from a staircase (each step's own loss gradient jumping at a few steps, falling back across time between
    them), its gradient growing backwards at 0.42-0.55 of the steps; a vanilla RNN that explodes, at 0.82-0.92."""

    # --- exploding step over step ------------------------------------------------------------------------
    growth_warning: float = 1e2
    """Total gradient norm in the recent window over that in the first window above this: growing (warning)."""
    growth_error: float = 1e4
    """... above this: exploding step over step (error)."""

    # --- dead ReLUs ----------------------------------------------------------------------------------------
    dead_window: int = 8
    """A unit is dead when it outputs zero for every example of this many consecutive sampled steps."""
    dead_min_examples: int = 128
    """... and those steps held at least this many examples (fewer is not enough to call a unit dead)."""
    dead_warning: float = 0.4
    """Share of a layer's units that are dead above this: warning. Healthy ReLU layers measured 0 .. 0.08 (docs)."""
    dead_error: float = 0.7
    """... above this: error (most of the layer no longer passes any gradient)."""
    died_after_first_step: float = 0.2
    """Dead in the first window measured, yet this share of the layer's units or more fired at its first sampled step
    (the initial weights) and were silent over the `dead_window` sampled steps after it: they died in the first
    updates, and it is not the initialisation's doing
    (sweep 33: Adam at the SGD rate of 0.1, half a layer firing at step 0 and all of it dead by step 34)."""

    # --- saturated sigmoid / tanh --------------------------------------------------------------------------
    saturation_derivative: float = 0.05
    """An output is saturated when the local derivative is below this share of its maximum
    (sigmoid: y(1-y) < 0.0125, |z| > 4.4; tanh: 1-y^2 < 0.05, |z| > 2.2)."""
    saturated_warning: float = 0.5
    """Share of a layer's outputs that are saturated above this: warning ("most inputs")."""
    saturated_error: float = 0.8
    """... above this: error."""

    # --- blocked gradient -----------------------------------------------------------------------------------
    blocked_warning: float = 0.5
    """Share of the nonzero gradient entering an op that leaves it as exactly zero above this: warning."""
    blocked_error: float = 0.9
    """... above this: error (the op has become a wall)."""

    # --- units all alike (symmetric initialisation) -------------------------------------------------------
    identical_units: float = 1e-4
    """A layer's units are one and the same when the largest difference between two units' incoming weights (or
    biases) is below this share of the largest weight (`unit_spread`): each then receives the same gradient and
    takes the same update, so they stay so. Measured: exactly 0 for a constant initialisation after 273 steps of
    SGD with momentum; 0.45 to 1.7 for an output layer initialised alike and driven apart by its targets, and
    about 1 for layers initialised at random. (Not 0: rounding may part alike units by a few parts in 1e7.)"""
    identical_units_steps: int = 16
    """... found so at two looks at least this many steps apart, the weights moving (an error; a warning when the
    loss still shed more than `alike_units_learning` of its first third's mean)."""
    parted_units: float = 1e-2
    """Units once alike stay one unit for the training until their spread reaches this: rounding parts them, slowly
    (a constant-initialised GRU: 1e-6 after 273 steps, 3.5e-4 after 1092)."""
    alike_units_learning: float = 0.5
    """A layer of alike units in a network whose loss still fell by more than this share is a warning, not an error."""

    # --- parameters without gradient ----------------------------------------------------------------------
    no_gradient_min_checks: int = 2
    """Sampled optimiser steps on which a parameter must have had no gradient before it is called unreached."""

    # --- loss ------------------------------------------------------------------------------------------------
    loss_min_steps: int = 20
    """Steps with a recorded loss needed before the loss trend is judged."""
    diverging_factor: float = 3.0
    """Loss (smoothed) at the end over its lowest value above this, and above where it started: diverging."""
    clip_heavy_factor: float = 10.0
    """The gradient's norm over clip_grad_norm_'s max_norm above this on most recent sampled steps: the clipping cuts
    every update by that much, and a stall is its doing ("clipped"), not the learning rate's."""
    clip_value_share: float = 0.5
    """clip_grad_value_ capped more than this share of the gradients' entries, and cut their norm by more than
    `clip_heavy_factor`, on most recent sampled steps that called it: the cap sits below the gradient itself, and the
    update follows the gradients' signs, not their sizes (a warning)."""
    clip_value_sign_share: float = 0.9
    """... more than this share: nearly every update is lr * clip_value * sign(g) (an error)."""
    huber_delta_ratio: float = 100.0
    """A huber_loss whose errors' mean size is above this many times its delta, with nearly all of them
    (`huber_beyond_share`) past delta, on most recent sampled steps: every example's gradient is cut to delta (an
    L1 loss scaled down by delta), whatever its error."""
    huber_beyond_share: float = 0.9
    optimizer_anew_min: int = 20
    """An optimiser that keeps state (momentum, moment estimates) made anew over the same parameters at least this
    many times, each after one step of the one before, and at half the steps at least: its state never builds."""
    state_loads_min: int = 20
    """A watched model whose weights `load_state_dict` replaced on at least this many steps, and on half the steps at
    least, while the training optimiser steps them: its updates are overwritten (an EMA loaded back each step)."""
    late_padding_share: float = 0.5
    """A gradient vanishing across time whose latest time steps are all-zero inputs for more than this share of the
    sequences: they are padding, and the output read at the last step reaches the real steps through it."""
    one_layer_share: float = 0.8
    """Across depth: when the gradient's change through one layer is at least this share of the whole change (in
    orders of magnitude), that layer is named (`through_one_layer`) rather than the input end of the network."""
    output_saturation_progress: float = 0.1
    """An output sigmoid/tanh under a loss with no log (MSE) is judged saturated (a warning) only while the loss has
    shed less than this share of its first third's mean by its last third: outputs in the flat tail at their targets
    are right, and a run that learns is no sign of outputs pinned far from them."""
    weights_shrank: float = 10.0
    """A stalled or diverging loss whose layers' weight norms shrank by more than this factor (median over layers)
    since the first sampled step: something pulls the weights towards 0 at every step (a weight decay far too
    large), and the update/weight ratio is large for it, not for the learning rate (`weights_shrank_by`)."""
    base_rate_margin: float = 0.05
    """A binary cross-entropy over 0/1 targets, a share p < 1/2 of them 1, whose last third's mean loss is within this
    share of the entropy of p: the model predicts p for every entry (`base_rate_entropy`)."""
    weights_grew: float = 10.0
    """A diverging loss under updates of a normal size whose layers' weight norms grew by more than this factor
    (median over layers) since the first sampled step: each update kept pointing along the weights, as a weight decay
    with the wrong sign does (`w *= 1 + lr * wd`), not a loss whose targets move (`weights_grew_by`)."""
    unscaled_input: float = 1e3
    early_nonfinite: int = 3
    """A NaN or inf by step `early_nonfinite` in a run whose first Linear was given a feature column of root mean
    square `unscaled_input` or more (raw pixels of 0-255 stay under it): the inputs were not standardised, and the
    first updates, proportional to them, overshoot (sweep 45: polynomial features up to x^8, RMS 1e5, inf at step 1)."""
    term_weight_change: float = 2.0
    """A constant weighting a term of the loss's sum that changed more than this many times over the run (from 0 at
    the start of a KL warm-up): the objective is scheduled, and the total's stall is not judged."""
    one_hot_rows_warning: float = 0.5
    one_hot_rows_error: float = 0.9
    """A softmax inside the model (not an attention's) whose rows are exactly one-hot on this share of them (median
    over the recent sampled steps): no gradient passes those rows (a Gumbel-softmax annealed to tau = 1e-4: 0.92 of
    the rows and the encoder's gradient exactly 0 on 78% of steps; at tau = 0.5, none)."""
    resets_enough: int = 16
    """Backward passes found with the gradients reset before them, counted over the sampled steps, that are evidence
    enough for `unapplied_gradient` on fewer sampled steps than `min_records`: a run whose `step()` sits outside the
    loop over batches takes a few dozen optimiser steps, each after some forty passes, and at every 16 two are
    sampled (under `leakygrad doctor`, the first before the model is found: one that counted)."""
    replaced_gradient_ratio: float = 5.0
    replaced_gradient_cosine: float = 0.1
    """A stalled or diverging loss whose optimiser applied, on most recent sampled steps that looked, a gradient
    changed by hand since backward left it (`p.grad = ...` between `backward()` and `step()`) that is at least
    `replaced_gradient_ratio` times backward's in norm and within `replaced_gradient_cosine` of orthogonal to it: what
    was put in dominates what backward computed (DP-SGD's noise added after the mean, B times too large: ratio ~10,
    cosine 0.01; added before dividing by B, 2 to 3 and 0.07 to 0.19), and the steps are a random walk
    (`gradient_replaced`)."""
    scheduler_anew_min: int = 3
    """A learning-rate scheduler built over the training optimiser this many times or more after the training began (at
    different steps): its schedule restarts each time (one built inside the epoch loop). A second schedule started
    once for a later phase is no finding."""
    ctc_short_inputs: float = 0.1
    """`ctc_loss` with `zero_infinity=True`, and this share of its target sequences (median over the looks) longer than
    their inputs allow: their loss is set to 0, and they teach nothing (a warning)."""
    misspelt_rate_factor: float = 10.0
    """A parameter group's learning rate given under a key the optimiser does not know ("learning_rate"): an error when
    the rate in effect (the optimiser's default) is this factor off the one written or more, a warning closer."""
    lr_schedule_cut: float = 1e-2
    """A stalled loss whose learning rate, at every sampled step, was at most this share of the rate the optimiser was
    given (`initial_lr`, set by a scheduler): the schedule holds it near 0 ("scheduled to nothing": a LambdaLR lambda
    that returns a rate, not a factor). A warm-up from 0, or a decay to 0 at the end, reaches 1 on the way."""
    eps_dominates: float = 10.0
    """An optimiser that divides each step by sqrt(v) + eps (Adam, RMSprop, Adagrad) whose eps is at least this many
    times a typical gradient entry (median over the parameters, on most recent sampled steps) while the loss stalls:
    the denominator is eps, and every step is that many times smaller than the optimiser's usual step of about lr
    (`Adam(eps=1.0)`). Only an eps of 1e-4 or more is looked at."""
    confined_logits: float = 0.9
    """cross_entropy over cosine similarities times a constant c (`F.normalize(a) @ F.normalize(b).T * c`): each score
    lies within +-c, so no example's target class can get more than p = 1 / (1 + (classes - 1) exp(-2c)) of the
    probability, and the loss cannot fall below -log p. When that floor is this share of the loss at chance (log
    classes) or more (a temperature 0.07 multiplied where it divides: 4.71 against 4.85 over 128 candidates), the loss
    can barely move and its gradient is scaled by c: an error. (SimCLR at 0.5, MoCo v3 at 1: far below chance.)"""
    lr_raised: float = 3.0
    """A diverging loss whose learning rate a scheduler had raised to this many times the rate the optimiser was given
    (`initial_lr`) by the divergence's onset, and never lowered on a sampled step: a warm-up factor never capped at 1.
    Evidence `lr_raised`, and capping the warm-up is the first remedy. (A one-cycle schedule comes back down.)"""
    outputs_alike: float = 1e-4
    """Every weighted layer whose output the loss reads gave outputs whose spread across the batch was below this share
    of their size (on both of the first 2 sampled steps), while the weighted layer run just before them differed by
    `inputs_alike` or more: the prediction is the same for every example, so something between the two discards what
    tells the examples apart (a mask that hides the real tokens, a mean over the batch axis). An error
    (`blocked_gradient`). A spread that fades layer after layer (deep sigmoids) is not this."""
    inputs_alike: float = 0.05
    """A stalled loss whose first weighted layer gave outputs whose spread across the batch was below this share of
    their size on the first sampled steps (median): every example looks nearly the same to the network (inputs far
    smaller than the layer's bias, or varying little around a large mean): evidence `inputs_alike`."""
    scheduled_ratio: float = 10.0
    """... and only when the updates are small: the learning-rate verdict "far too low", or a median update/weight
    ratio under this many times `update_ratio_low` (a Noam schedule written as `Adam(lr=1.0)` under a LambdaLR that
    returns the rate is held at 1e-3 of its "given" 1.0 by design, and moves the weights at a normal pace)."""
    fell_early: float = 0.1
    """A stalled loss whose first step was above the last third's mean by more than this share learned first and then
    stopped (`fell_early`): converged to a noisy task's floor, or stuck at a trivial solution; told as either."""
    movable_gradient: float = 1e-6
    """A learning rate of 0 ("zero") is the verdict on weights that never move only when some layer's gradient was
    above this share of its weights' norm at a sampled step: below it, a step at a learning rate up to 1 changes a
    float32 weight by about its rounding error, so weights that stay put are the gradient's doing."""
    loss_blowup_factor: float = 10.0
    """Loss (smoothed) at some point above this times the first step's (or the first stretch's mean, when larger and no
    jump is in it), and at the end no lower than that (less `stalled_change`): it blew up and never recovered,
    diverging too (an update too large that the run did not get over: units killed in the jump stay dead)."""
    stalled_change: float = 0.02
    """Mean loss over the last third of the run within this share of the mean over the first third: stalled.
    (Thirds, not single points: a minibatch loss is noisy; the mean of a third varies by well under 1%.)"""
    update_ratio_high: float = 3e-2
    """Median per-layer update/weight ratio above this: the learning rate is far too high (CS231n: ~1e-3).
    Healthy scripts measured 4.5e-4 .. 1.2e-2."""
    update_ratio_low: float = 1e-5
    """Largest per-layer update/weight ratio below this (no layer moves): the learning rate is far too low."""
    rounded_derivative: float = 1e-6
    """An output sigmoid or tanh whose mean local derivative is below this sits rounded to the ends of its range (a
    float32 sigmoid past |z| of about 17 is exactly 0 or 1, its derivative exactly 0): an error even under a log loss,
    which cannot cancel a derivative of 0. (A mean: a few outputs short of the ends lift it above; a confident
    classifier's logits of +-10 give 4.5e-5.)"""
    targets_out_of_reach_warning: float = 0.1
    """A regression loss whose prediction comes out of a ReLU, sigmoid or tanh, with more than this share of its
    targets outside the range the prediction can reach (median over the recent sampled steps): warning."""
    targets_out_of_reach_error: float = 0.25
    """... more than this share: error."""
    updated_share_low: float = 0.25
    """Half-precision weights: a layer whose optimiser step changed less than this share of the sampled entries a
    nonzero gradient pushed (median over the recent sampled steps) loses its updates to rounding: warning. (Sweep 29: a
    float16 MLP whose Adam changed 47% of them reached float32's accuracy; a bfloat16 one under SGD that changed 3%
    lost half of it.)"""
    updated_share_error: float = 0.1
    """... under this share: error."""
    margin_met: float = 1e-2
    """A margin loss (hinge, triplet) whose recent sampled losses (median) are below this share of its first third's
    mean has met its margin on nearly every example: its clamp blocks all gradient because there is nothing left to
    learn, not a leak."""
    margin_learning: float = 0.1
    """A margin loss whose hinge (its own mean, or the loss) has fallen to this share of its
    first sampled value or below is learning: the examples past its margin, however many, are not judged. (Sweep 31:
    a batch-hard triplet loss fallen to 0.08 of its start and a cosine embedding loss fallen to 0.02, 77% and 98% of
    their examples past the margin, kNN accuracy 0.94, were warnings; a linear SVM on noisy labels, stalled at 0.36 of
    its start with 66% past the margin, is one.)"""
    penalty_weights_grew: float = 2.0
    """A penalty on the weights subtracted at the loss's root (`ce - lam * sum(w ** 2)`): a warning, an error once the
    weights' norm (median over layers, last sampled step against the first) grew by this factor."""
    loss_below_zero: float = 1e-4
    """A loss never negative while its input is in its domain (binary cross-entropy, nll_loss) recorded below minus
    this has left the domain (float rounding takes such a loss a few 1e-8 below zero at most)."""
    loss_without_floor: float = 1e6
    """A loss that fell below minus this, to `loss_without_floor_growth` times the size of its first value or more,
    has a term with no lower bound: no likelihood or divergence of a well-posed problem runs off like that (a
    density's log-likelihood reaches some thousands of nats; sweep 42's VAE with its KL's sign flipped, -1e21)."""
    loss_without_floor_growth: float = 1e3
    zero_weight_examples: float = 0.1
    """Examples of classes that `cross_entropy`'s `weight` sets to exactly 0 at this share of the batch or more: their
    gradient is 0 (sweep 34: "balanced" weights computed with `//`, 0 for the five largest classes, half the data)."""
    clamped_output_warning: float = 0.2
    clamped_output_error: float = 0.5
    """A clamp (or hardtanh) that makes the watched model's own output in the training forward, `pred.clamp(1, 5)`:
    every example whose prediction lies outside the range gets no gradient, and nothing brings it back. A share of
    the gradient blocked there above these lines is a warning, an error (sweep 33: a rating model clamped to [1, 5],
    26-59% blocked over the run, test RMSE 1.67 against 1.11 without the clamp; a clamp whose outside examples already
    match their targets blocks no gradient: an image decoder clamped to [0, 1] over pixels of 0 and 1)."""
    padding_gradient: float = 0.05
    padding_elsewhere: float = 0.1
    """An embedding's `padding_idx` that names a real token: on its first sampled steps (median) this share of the
    gradient at its output (squared norm) or more arrives at the positions holding padding_idx, whose row is never
    updated, while another id, on `padding_elsewhere` of the positions or more, gets exactly no gradient at any of
    them (the padding the script masks out). Sweep 35: `padding_idx=0` where 0 was a real word and 50 the padding,
    12-17% at id 0 and id 50 on 43% of the positions, accuracy 0.81 against 1.00; a true padding_idx under a mask gets
    0%, and one left unmasked (pooled with the rest) leaves no other id silent."""
    plateau_calls: int = 6
    plateau_against: float = 2.0
    """A ReduceLROnPlateau called this many times or more, whose metric moved the way its mode calls worse this many
    times as often as the other way, with two rate cuts or more: its mode is the wrong way round for its metric
    (sweep 35: mode="min" given the validation accuracy, which rose on most epochs; the rate halved every 4 epochs from
    the first, accuracy 0.81 against 0.87 with mode="max")."""
    unheld_weight_moved: float = 1.0
    """A learned weight exp(+-s) on a loss term that nothing holds back (no `+ s` term): an error once s has moved by
    this much or more since the first record (the weight e-fold smaller or larger), a warning before (sweep 36:
    uncertainty weights without their `+ s`, s rising to 6.7 and 3.2, the task weights 0.0012 and 0.042, accuracy 0.12
    against 0.87; Kendall's form, with `+ s`, is not this)."""
    piled_hooks: int = 8
    piled_hooks_change: float = 1e-2
    """Gradient hooks on one parameter that grew in number on every recent sampled step, to this many or more, while
    its layer's gradient changed by this factor or more (either way) over those steps: a hook registered in forward()
    every step, its effect compounding (sweep 35: `p.register_hook(lambda g: g * 0.5)` in forward, 200 hooks by step
    200 and the backbone's gradient 0 from step 147, accuracy 0.29 against 0.91; a hook registered once stays at 1)."""
    reversal_along: float = 0.9
    """A custom Function named as a gradient reversal whose backward returned, for its input, a gradient this close in
    direction (cosine) to the one it was given, and never one pointing against it: it passes the gradient on instead of
    reversing it (sweep 35: a DANN whose `GradReverse.backward` returned `grad_output * lambd`, cosine 1.0,
    target-domain accuracy 0.49 against 0.82; a true reversal gives -1, and 0 while its lambda is 0)."""
    zeros_outside_autograd: float = 0.2
    """A layer's output read by the next layer's product with nothing between them in the graph, with this share of
    exact zeros or more among its live entries (examples and units nonzero somewhere): zeros no recorded operation
    made, an activation applied through `.data`. A layer's output is exactly 0 by chance about never: 0% in the
    healthy runs; sweep 33's `h.data.clamp_(min=0)` MLP had 53-87%."""
    zero_labels: float = 0.1
    """A margin loss's hinge max(0, m - y f) whose labels y are all 0 or 1, with this share of zeros or more: those
    examples give the constant m whatever f is, so no gradient (sweep 34: digits 0-4 against 5-9 with 0/1 labels, 42 to
    61% zeros in a batch, test accuracy 0.52 against 0.98 with -1/+1). Labels of -1/+1 have no zeros; labels of 0 for
    "ignore" among -1/+1 are not all 0 or 1, and are not judged."""
    dead_but_learning: float = 0.5
    """Units dead at the error level, but not all of them, in a run whose last third's loss fell below this share of its
    first step's: a warning (the live units carry the task; capacity is lost), not an error."""
    saturated_but_learning: float = 0.1
    """Hidden units saturated at the error level in a run whose last third's loss fell below this share of its first
    step's (a pointer network's scoring tanh, sharpening as it learns): a warning, not an error. Stricter than for dead
    units: a saturating initialisation also inflates the first loss (13 -> 5.5 on 10 classes is no learning)."""
    target_row_sum: float = 1.1
    """A cross-entropy given class probabilities whose rows sum to more than this on the first sampled steps (median of
    the mean row sum) ..."""
    target_rows_over_one: float = 0.25
    """... with more than this share of its rows summing past 1: a multi-hot target, out of a softmax's reach (a
    probability target sums to 1: label smoothing, mixup and distillation's targets do, up to rounding)."""
    ctc_unnormalised: float = 0.1
    """`ctc_loss` given an input whose frames' logsumexp over the classes is further than this from 0 (the median over
    the frames within each sequence's length, the median over the first sampled steps' looks), with an entry above 0:
    raw scores, not log-probabilities (log_softmax's frames give 0 up to float rounding, ~1e-7; raw scores about
    log(C) or more; `log(softmax + 1e-4)` over 500 classes 0.05, never above 0)."""
    loss_scaled_up: float = 64.0
    """A backward root that multiplies its loss by this constant or more on every sampled step (no GradScaler): the
    gradients are that many times the loss's, and NaNs, a divergence or exploding gradients are told with it
    (evidence `loss_multiplied_by`: an fp16 loss scale kept without dividing the gradients back)."""
    mask_keeps_padding: float = 0.9
    """A per-token loss's mask whose kept positions are more than this share padding (the tokens an embedding read
    at its padding_idx), on the first sampled steps (median), while it keeps less than 1 minus this share of the real
    tokens: built the wrong way round, it blocks every real token's gradient."""
    attention_capacity: float = 0.25
    """An attention's softmax whose derivative kept less than this share of what rows spread evenly would have
    (1 - sum p^2 against 1 - 1/n, n entries a row), on the first sampled steps (median): saturated from the start, its
    scores too large (a freshly initialised attention is spread nearly evenly: 0.98-1.0 in healthy scripts, a causal
    mask over 8 entries lowers that to 0.75; scores multiplied by sqrt(64) gave 0.08)."""
    growth_dip: float = 1e3
    """Gradient growth step over step is not judged when the first records' gradient (median) is this many times
    below the first sampled step's and the recent one no larger than that first: it grew back from a dip (a first task
    learnt to a loss of ~0, then the next task began), not past where it started."""
    cut_loop_calls: int = 8
    """A module of the script's own given its own last output detached at every call is judged a recurrent cell cut at
    every time step when it is called this many times a step or more: a loop over a sequence (AlphaFold's recycling
    feeds a model its own outputs detached 3 or 4 times, on purpose)."""
    softmax_gradient_same: float = 0.9999
    """An attention's softmax whose arriving gradient has more than this share (of its squared norm) the same along the
    axis it normalises (median over the first sampled steps): its backward removes exactly that part, so the scores
    get (nearly) nothing; 1 - 1e-7 for a softmax over the queries then pooled over them, far lower for attention
    whose output is read per query, 0.996 for slot attention (a softmax over the slots, by design) whose slots start
    nearly alike."""
    attention_capacity_first: float = 0.5
    """... and its first look (step 0 when the doctor watched from the start) under this: attention spread at its
    first look that sharpened since was learnt so, not started so (a Hopfield layer's retrieval: 0.54 and 0.80 at step
    0, 0.05-0.11 by step 51; scores multiplied by sqrt(d) over 8 keys: 0.23-0.28 at step 0)."""
    graph_span_steps: int = 32
    """A backward with retain_graph=True that still reaches the outputs of the first sampled step this many steps
    after it spans the training: truncated backprop through time over overlapping windows reaches a few steps back
    (k2 / k1 of them), a state carried without detach every step back to the first."""
    lookahead_next_position: float = 0.5
    """A self-attention whose mask lets more than this share of its queries read the position after their own (0
    under a causal mask, 1 under one a diagonal off or none), on the first sampled steps (median), ..."""
    next_token_targets: float = 0.75
    """... while more than this share of the loss's targets are the next tokens of the sequence an embedding read (a
    language model's `y = x[:, 1:]`; a sequence labeller's targets, or a copy task's, match by chance only): each
    position reads its own answer. (0.9 until sweep 50: a decoder's targets end with an end-of-sequence token that no
    input holds, so L targets in L + 1 follow their input, 0.8 to 0.91 for sentences of 4 to 10 tokens.)"""
    summed_weight_ratio: float = 64.0
    """A loss called with `reduction="sum"` beside one that takes the mean, its weight times its terms this many times
    the mean's weight or more: the sum's gradient outweighs the other's by that much (sweep 51: a reconstruction
    summed over 32 x 64 pixels beside a classifier's cross-entropy, accuracy 0.81 against 0.92). A sum divided by
    the batch, a VAE's per-example ELBO, weighs its pixels alone."""
    ctc_frames_read: float = 0.5
    """`ctc_loss` whose `input_lengths` reach at most this share of the frames given, on every look (2 or more): the
    lengths of the raw input divided by the wrong subsampling factor (sweep 52: `lens // 8` for a network that
    subsamples by 4, token error rate 0.69 against 0.011, silent). A batch padded for its longest sequence reaches
    all of them."""
    rate_overwritten_steps: int = 2
    """A rate set by hand that served this many optimiser steps or fewer before the scheduler's next step put its own
    back (sweep 51: a backbone "unfrozen" by hand under LambdaLR, its rate back at 0 after one step, accuracy 0.867
    against 0.910). One set by hand at every step lasts; one set once and then scheduled lasted one step."""
    previous_token_share: float = 0.75
    """A token classifier whose targets are, on every look (2 or more), this share or more the token its input held
    one position back, beyond those equal to the input at their own position (`tgt = seq[:, :-1]` for `inp =
    seq[:, 1:]`, the shift written the wrong way round): the model is taught to repeat what it has read. A language
    model's targets match the input before them by chance only (sweep 51's character model: 1.0 shifted wrongly)."""
    unshifted_share: float = 0.9
    """A token classifier whose targets are, on every look (2 or more), this share or more the token its input holds at
    their own position, with no grid's next tokens among them, in a model that embeds two grids of tokens (a seq2seq's
    decoder fed `tgt` where `tgt[:, :-1]` was meant, its targets `tgt`) or whose loss counts fewer than
    `unshifted_counted` of its targets (masked-LM labels read from the ids after masking). Sweep 53: exact match 0.000
    against 0.788, masked-token accuracy 0.04 against 0.59, both silent. A token autoencoder (one grid, every target
    counted) copies on purpose: not judged. A correct masked LM's masked inputs match their labels 10% of the time."""
    unshifted_counted: float = 0.5
    """See `unshifted_share`: a loss that counts fewer than this share of its targets (its ignore_index on the rest)
    predicts some positions only, those that should be hidden from the input."""
    undone_updates: float = 3.0
    """Weights within this many single updates (the step's own ||update||) of where they were at the first sampled
    step, measured every 16 steps, on most measures `undone_after` steps or more after it: the updates are undone
    between steps. Sweep 53: SAM restoring its saved weights after the base step, 0.4 to 2.4 updates (accuracy 0.09
    against 0.98; the healthy twin 60 to 7000); a Lookahead resetting its fast weights before the slow ones moved,
    0 to 4 (healthy 30 to 700). Noise alone moves weights about sqrt(steps) updates away, 7 after 48 steps."""
    undone_after: int = 48
    """See `undone_updates`: measures this many steps or more after the first sampled step are judged."""
    batch_classes_few: int = 2
    """A classifier's batches (of 16 or more) holding this many classes or fewer, on three quarters of the sampled
    steps that counted them, while the most frequent class changed between them: the data are sorted by class and
    not shuffled (evidence `batches_of_one_class`)."""
    update_far_too_large: float = 0.3
    """A sampled step whose update moved the median layer by more than this share of its weights (Adam's first step
    at lr 1e-3 moves a 512-wide layer by about 0.04; sweep 48's transformer at lr 0.1, by 0.89), before a gradient
    vanishing across depth set in: the learning rate did it."""
    small_targets: float = 1.0
    """A saturation that grew in training under a regression loss is blamed on large targets (a head growing the
    weights to reach them) unless the targets' root mean square, on the first sampled steps, is at most this: targets
    in [0, 1] are no cause (sweep 48: an autoencoder of raw 0-16 pixel counts into 0-1 targets was told to normalise
    its targets)."""
    inputs_unstandardised: float = 4.0
    """A saturated activation in a run whose first weighted Linear read a feature column of root mean square above
    this (raw 0-16 pixel counts: up to 11) is told with standardising the inputs first: large inputs make large
    pre-activations, and the layers after them learn to keep them so."""
    raw_target_rms: float = 100.0
    """A regression's targets whose root mean square is above this, on the first sampled steps ... (1e3 until sweep
    51: a forecaster's targets of about 500, a thousand times its first predictions, had gone unnamed)"""
    raw_target_rms_bounded: float = 1e3
    """... above this for a Huber or smooth L1 loss, whose gradient is capped at delta whatever the targets' size (a
    run on targets around 300 learns under Adam, its errors past delta: a median regression, no finding)."""
    raw_target_ratio: float = 100.0
    """... and this many times the predictions' (a network starts near 0), were left in raw units: the loss's
    gradient 2 (prediction - target) is of their size, and every layer's with it."""
    gate_shut: float = 1e-3
    """A stall whose every sigmoid gate's output had a mean below this on every recent sampled step: the gates are
    shut, and what they gate gets (almost) no gradient (evidence `gates_shut`; a highway's transform gate started
    at bias -10: 4.5e-5)."""
    one_cycle_reached: float = 0.25
    """A stall under OneCycleLR whose rate never rose past this share of its max_lr on any sampled step (it starts at
    max_lr / 25 = 0.04 of it): the schedule is stepped per epoch while it counts batches (evidence
    `one_cycle_never_peaked`)."""
    wrong_backward_tests: int = 2
    """A custom autograd.Function's backward is reported wrong when it disagrees with its forward's finite
    differences on every test that could tell, and on at least this many (each test: two random directions, the
    dot products <g, v> and <grad_output, J v> more than 10% apart on both; see docs/doctor.md)."""
    stopped_gradient_share: float = 1e-2
    """Weights that stopped moving part-way are a stall only if the gradient's norm since then (median) is at least
    this share of its norm before: a learning rate cut to almost nothing, not a run converged to a zero gradient."""
    stopped_after_converging: float = 1e-2
    """... and only if the last third's loss is above this share of the first loss: a step decay that stills the weights
    of a run whose loss fell from 0.61 to 1e-4 anneals a converged run (sweep 33's MultiStepLR twin)."""

    def __post_init__(self):
        """A setting that cannot work is refused here, not met as an error inside every sampled step. (0 and inf
        are settings: they switch a rule off.)"""
        for setting in fields(self):
            value = getattr(self, setting.name)
            if setting.type in (int, "int"):
                if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                    raise ValueError(f"Thresholds: {setting.name} must be a whole number of at least 1, got {value!r}")
            elif isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not value >= 0:
                raise ValueError(f"Thresholds: {setting.name} must be a number >= 0, got {value!r}")  # (NaN too)
        shares = ("persistence", "recent_share", "time_edge_share", "time_buildup_share", "time_growth_steps_share")
        shares += ("forget_gate_kept",)
        for share in (*shares, "saturation_derivative"):
            if getattr(self, share) > 1:
                raise ValueError(f"Thresholds: {share} is a share, at most 1, got {getattr(self, share)}")


DEFAULT_THRESHOLDS = Thresholds()
