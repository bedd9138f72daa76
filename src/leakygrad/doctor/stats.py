"""The statistics the doctor reasons about: small per-layer and per-op summaries of one training step.

These are plain dataclasses of floats, ints and strings. A probe (the PyTorch one in `probes/torch_probe.py`,
later one for leakygrad's own engine) turns live tensors into them; the rules read nothing else. That keeps
the rules testable on synthetic histories and lets several probes feed them. Every summary is a reduction taken
where the tensors live (one number per layer, never a copy of the tensor), so records are tiny and can be
gathered across processes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class LayerStats:
    """One module (layer) on one sampled step."""

    name: str  # module path in the model, such as "encoder.0"
    kind: str  # its class name: "Linear", "Conv2d", "RNN", ...
    depth: int  # position in the order the forward pass first called the layers (0 = nearest the input)
    has_weights: bool = False  # owns trainable parameters
    out_grad_norm: float | None = None  # ||d loss / d output||: the gradient arriving at the layer's output
    param_grad_norm: float | None = None  # ||d loss / d (the layer's own parameters)||
    weight_norm: float | None = None  # ||parameters||
    update_ratio: float | None = None  # ||parameters after the step - before|| / ||before||
    # NaN in the gradient arriving at the output (its norm is NaN). An infinite norm is not enough: huge finite
    # entries (above 1.8e19) overflow a float32 norm too; an Inf born in backward is caught where it is born.
    nonfinite_grad: bool = False
    recurrent: bool = False  # an RNN/LSTM/GRU (or cell) layer
    bidirectional: bool = False  # recurrent, in both directions: time_grad_norms sums the two (not judged)
    time_grad_norms: list[float] | None = None  # recurrent: ||d loss / d input at time t||, t = 0 .. T-1
    time_padding: list[float] | None = None  # ... and the share of sequences whose input at time t is all zeros
    # the mean bias (b_ih + b_hh, first layer) of the gate that keeps the state: an LSTM's forget gate, a GRU's update
    # gate z (the share of the state kept in h' = (1 - z) n + z h)
    keep_gate_bias: float | None = None
    calls: int = 0  # a cell (nn.RNNCell, GRUCell, LSTMCell): its calls on this step
    cut_calls: int = 0  # ... given its own last output detached (backprop through time cut before them)
    carried_calls: int = 0  # ... given its own last output with its gradient (backprop through time goes on)
    parameter_state_calls: int = 0  # ... given a parameter for a state (a learned initial state, h0)
    part_cut_calls: int = 0  # ... of those, given some parts of it detached (an LSTM cell's c, h carried on)
    parts_cut: tuple[int, ...] = ()  # ... which parts, by position in the state: (1,) for c in (h, c)
    # Looked at on a few sampled steps only (0, 32, 64, 128, ...), for a layer whose weight holds one row per unit
    # (nn.Linear, a convolution): its units, and the largest difference between two units' incoming weights or biases
    # relative to the largest of them. 0: every unit computes the same function (symmetric initialisation).
    units: int | None = None
    unit_spread: float | None = None


@dataclass
class ActivationStats:
    """One activation site (a ReLU, sigmoid, tanh module or function call) on one sampled step."""

    site: str  # module path ("net.1") or, for a function call inside a forward, "relu after fc1"
    function: str  # "relu", "relu6", "sigmoid", "tanh", "hardtanh", ...
    units: int  # units (features, or channels for convolutions)
    examples: int  # examples in this batch
    zero_fraction: float | None = None  # share of outputs exactly zero (ReLU family)
    saturated_fraction: float | None = None  # share of outputs whose local derivative is near zero
    mean_derivative: float | None = None  # mean local derivative: sigma' = y(1 - y), tanh' = 1 - y^2, relu' = 0/1
    unit_active: bytes | None = None  # one byte per unit: 1 if any example made it nonzero (folded by History)
    dead_fraction: float | None = None  # filled by History: share of units zero over the whole recent window
    window_examples: int = 0  # filled by History: examples in that window
    window_start: int | None = None  # filled by History: the step of the window's first sampled step
    died_after_first_step: float | None = None  # filled by History: share of units that fired at the site's first
    # sampled step and were silent over the next `dead_window` sampled steps (they died early), once those have come
    silent_at_first_step: float | None = None  # filled by History: share of units silent at the site's first step
    feeds_from: str | None = None  # the layer whose output this activation transforms, when known
    depth: float | None = None  # position in the forward pass, comparable with LayerStats.depth


@dataclass
class OpStats:
    """One gating operation (clamp, hardtanh, round, sign, a ReLU on the loss, ...) on one sampled step."""

    op: str  # "clamp", "round", ...
    site: str  # where it sits: "loss" (after the model's output) or "in net.head", "after fc1"
    blocked_fraction: float  # share of the nonzero gradient entering it that leaves as exactly zero
    elements: int  # elements flowing through it
    floor_at_zero: bool = False  # its lower bound is 0: a ReLU written as a clamp, or the hinge of a margin loss
    reads: str | None = None  # (on the loss) the layer whose output it reads directly: it clamps the prediction
    hinge_mean: float | None = None  # (a floor at 0 on the loss: a margin loss's hinge) the mean of its output
    zero_labels: float | None = None  # (a margin loss's hinge over y * f) the share of labels y that are 0, all 0 or 1
    lower_bound: float | None = None  # (a clamp on the loss bounded below only, above 0: free bits on a KL) its bound


@dataclass
class StepRecord:
    """Everything measured on one sampled training step."""

    step: int
    loss: float | None = None
    grad_norm: float | None = None  # norm over all parameters' gradients
    layers: dict[str, LayerStats] = field(default_factory=dict)
    activations: dict[str, ActivationStats] = field(default_factory=dict)
    ops: dict[str, OpStats] = field(default_factory=dict)  # keyed by "op@site"
    param_has_grad: dict[str, bool] = field(default_factory=dict)  # optimiser parameters: nonzero gradient?
    param_zero_grad: dict[str, bool] = field(default_factory=dict)  # ... a gradient, but exactly zero (not None)?
    param_module: dict[str, str] = field(default_factory=dict)  # parameter name -> its module path
    param_hooks: dict[str, int] | None = None  # parameter name -> gradient hooks on it, where it has some
    graph_cuts: list[tuple[str, str]] = field(default_factory=list)  # (producer, consumer) joined by a detach
    modules_not_called: list[str] = field(default_factory=list)  # modules with parameters whose forward did not run
    modules_without_grad: list[str] = field(default_factory=list)  # modules whose forward ran with grad recording off
    modules_in_reentrant_checkpoint: list[str] = field(default_factory=list)  # ... by checkpoint(use_reentrant=True)
    optimizer_checked: bool = False  # an optimiser step came: were the gradients applied?
    grads_not_applied: dict[str, str] = field(default_factory=dict)  # parameter whose gradient none steps -> module
    # ... of those, the ones an optimiser the script holds has in its groups, and never steps -> that optimiser's name
    held_by_idle_optimizer: dict[str, str] = field(default_factory=dict)
    # ... changed between backward and step (None: not compared, no plan of the parameters yet at that backward)
    grads_written_after_backward: list[str] | None = None
    stepped_outside_model: int = 0  # parameters the optimisers step that belong to no watched model
    stepped_outside_reached: int = 0  # ... of them, those the backward pass reached (they hold a gradient)
    # how far the weights have moved since the first sampled step, in units of this step's update ("updates"), and
    # that first step ("since_step"): measured every 16 steps
    displacement: dict | None = None
    master_copies: bool = False  # ... of the same shapes as the model's parameters, copied into them by hand
    optimizer_parameters: int = 0  # (at an optimiser step) the parameters the watched optimisers step
    optimizer_frozen: int = 0  # ... of them, frozen (requires_grad=False): step() skips them
    requires_grad_assigned: list | None = None  # ... frozen, `p.requires_grad_ = True` assigned on them: their labels
    # a weighted module called several times in the step: name -> (calls, the indices of those the loss reaches)
    calls_reaching_loss: dict | None = None
    module_requires_grad: list | None = None  # modules given `requires_grad = False` as an attribute: freezing nothing
    grads_after_backward: bool = False  # right after a backward of this step, some watched parameter held a gradient
    stepped_without_gradients: bool = False  # an optimiser step with no backward since the last and no gradient
    # half-precision parameters (their dtype): per module, the share of the sampled entries a nonzero gradient pushed
    # that the optimiser step changed at all (an update below half the spacing of bfloat16 numbers rounds away)
    half_precision: str | None = None
    updated_share: dict[str, float] = field(default_factory=dict)
    # a softmax or log_softmax taken over an axis of length 1: op -> {"dim", "shape", "after" (the module before it)}
    softmax_over_one: dict | None = None
    difference_of_itself: str | None = None  # a `sub` of a tensor from itself (`a - a`): after which module
    softmax_over_queries: str | None = None  # attention weights normalised over the queries, then applied
    same_ids_embedded: list | None = None  # two embeddings whose lookups of one index tensor are added
    summed_beside_a_mean: dict | None = None  # a loss called with reduction="sum" added beside one that takes the mean
    ratio_of_itself: tuple | None = None  # (op, after which module) of a tensor over itself (`l / l`, `l * (1 / l)`)
    target_trained: dict | None = None  # a KL divergence's target computed by another model that an optimiser steps
    sine_layers: dict | None = None  # layer -> w0, for each sin(w0 * layer(x)) (a SIREN's activations)
    one_class_over_pairs: dict | None = None  # cross_entropy over a (N, N) z1 @ z2.T with one target class for all
    # custom autograd.Functions whose backward was tested on this step (called again with -2 times its grad_output):
    # name -> {"ignores_grad_output" (its inputs whose gradient came out the same), "inputs" (with a gradient),
    # "after" (the module before it), "grad_output_norm", "grad_input_norm"}
    custom_backwards: dict | None = None
    # watched optimisers beside the training one that stepped parameters of which none had a gradient: their modules
    optimizers_without_gradient: list[list[str]] = field(default_factory=list)
    # watched optimisers beside the training one that stepped exactly its parameters in the step: their class names
    optimizers_stepping_the_same: list[str] = field(default_factory=list)
    # parameters whose gradient, exactly zero at every sampled step before, was nonzero at a step since the last one
    params_nonzero_between: list[str] = field(default_factory=list)
    clip_max_norm: float | None = None  # torch.nn.utils.clip_grad_norm_'s max_norm on this step, if it was called
    clip_norm: float | None = None  # ... and the gradient norm it measured (before clipping)
    clip_given_nothing: bool = False  # ... and it was given an empty generator (used up by the optimiser already)
    clip_after_step: bool = False  # ... and it ran after an optimiser step, before the next backward
    clip_on_scaled: bool = False  # ... and on gradients a GradScaler had scaled, before `scaler.unscale_`
    clip_scale: float | None = None  # ... by this factor
    clip_value: float | None = None  # torch.nn.utils.clip_grad_value_'s clip_value on this step, if it was called
    clip_value_share: float | None = None  # ... the share of the gradients' entries beyond it (capped)
    clip_value_norms: tuple[float, float] | None = None  # ... the gradients' norm before and after the call
    clip_value_entries: int = 0  # ... and how many entries they have
    loss_ops: list[str] = field(default_factory=list)  # the operations between the model's output and the loss
    activations_read_by_loss: list[str] = field(default_factory=list)  # hidden activations the loss reads too
    layers_read_by_loss: list[str] = field(default_factory=list)  # modules whose outputs the loss reads directly
    output_side_activations: list[str] = field(default_factory=list)  # sigmoids and tanhs no module reads
    swapped_betas: list | None = None  # the training optimiser's Adam betas, when beta1 > beta2
    # ... a parameter group's lr or momentum given under a key it does not know ("learning_rate"): {"param_group",
    # "setting", "meant", "given", "in_effect"}
    misspelt_setting: dict | None = None
    momentum_not_decaying: dict | None = None  # ... its momentum and dampening, when the momentum is 1 or more
    negative_lr: float | None = None  # ... its lowest learning rate, when below 0
    lr_schedule: tuple[float, float] | None = None  # ... its (lr, initial_lr), when a scheduler set initial_lr
    lr_by_hand: tuple[float, float] | None = (
        None  # ... or, no scheduler, (lr, its first sampled step's) when they differ
    )
    # ... or a scheduler stepped over another optimiser, one that never steps: {"scheduler", "lr", "scheduled_lr", ...}
    schedule_not_applied: dict | None = None
    one_cycle_max_lr: float | None = None  # ... its peak rate, when OneCycleLR set one (`max_lr`)
    line_search: bool = False  # ... it is LBFGS, given a closure: its line search chooses the step's size
    # an optimiser dividing its steps by sqrt(v) + eps, eps >= 1e-4: {"eps", "gradient_rms"} (a typical entry's size)
    eps_against_gradient: dict | None = None
    # its parameter groups, lowest rate first, when their rates lie 1000 times apart or more: [{"lr", "modules"}]
    group_rates: list | None = None
    decayed_rate: tuple[float, float, float] | None = None  # ... its (lr_decay, lr, rate in effect): Adagrad's lr_decay
    # the first weighted layer's output: {"layer", "spread" (its spread across the batch over its size)}
    input_spread: dict | None = None
    # the first weighted Linear's input features (first sampled steps): {"layer", "largest", "smallest"} column rms
    input_scale: dict | None = None
    # on the first sampled steps, every weighted layer's outputs compared across the batch: {layer: spread}, in the
    # order the layers ran
    layer_spreads: dict | None = None
    # on the steps a classifier's targets are counted: the layers taking (sequence, batch, ...) whose input's first
    # axis holds as many entries as the targets and whose second does not: [{"layer", "input_shape", "batch"}]
    batch_as_sequence: list | None = None
    # (likewise) views that move the examples off the first axis without a permute: [{"site", "input_shape",
    # "output_shape", "batch"}] (`h_n.view(N, -1)` of a bidirectional RNN's (2, N, H))
    examples_mixed: list | None = None
    huber: dict | None = None  # a huber_loss: {"delta", "beyond_delta" (share of errors past it), "error_mean"}
    multi_hot_margin: dict | None = None  # a multilabel_margin_loss given a multi-hot target (0s and 1s): {"classes"}
    # binary_cross_entropy_with_logits given a pos_weight: {"pos_weight_min", "positives" (their share of the
    # targets), "positives_weighted_zero" (the share of the targets that are positive and weighted 0)}
    zero_pos_weight: dict | None = None
    zero_class_weight: dict | None = None  # cross-entropy's class weights: classes weighted 0, the examples' share
    coupled_decay: dict | None = None  # {optimizer, weight_decay}: an adaptive optimiser's decay added to the gradient
    # the targets a softmax's probabilities are compared with (first sampled steps: a cross-entropy's class
    # probabilities, a binary cross-entropy's of a softmax): {"row_sum" (mean), "rows_over_one" (share), "binary"
    # (every entry 0 or 1), "loss" ("cross_entropy" or "binary_cross_entropy")}
    soft_targets: dict | None = None
    # ctc_loss's input (first sampled steps): {"logsumexp" (median over frames, over the classes: 0 for
    # log-probabilities), "high" (its largest entry), "classes"}
    ctc_input: dict | None = None
    # ctc_loss's targets (first sampled steps): {"blank", "with_blank", "too_long", "sequences", "zero_infinity"}
    ctc_targets: dict | None = None
    # attention's softmaxes (first sampled steps): site -> {"entries" (per row), "scale" (the scores' constant factor),
    # "capacity" (1 - sum p^2 over its value for rows spread evenly), "max_probability" (rows' mean), "head_width" (d,
    # a fused kernel's, whose weights are recomputed; None for a softmax node's)}
    attention: dict | None = None
    # other softmaxes (not on the loss, not attention's; small): site -> {"share" (of rows exactly one-hot: no gradient
    # passes them), "entries" (per row), "divided_by" (a constant its input was divided by: a temperature, or None)}
    one_hot_rows: dict | None = None
    # self-attentions' masks (first sampled steps): site -> {"next_position" (share of the queries that may read the
    # position after their own), "furthest_ahead", "positions" (the keys' count), "next_tokens" (the share of the
    # loss's targets that are the next tokens of the sequence it reads; None: no such targets found)}
    lookahead: dict | None = None
    # a per-token loss's mask against the tokens an embedding with a padding_idx read (first sampled steps):
    # {"padding_idx", "padding_of_kept" (share of the kept positions that are padding), "real_kept" (of real tokens)}
    loss_mask: dict | None = None
    # (first sampled steps) embedding -> the gradient at its output read at its padding_idx and at other ids
    # (on the first few sampled steps) a token embedding's output gradient, position by position: name -> norms
    position_grad_norms: dict | None = None
    padding_checks: dict | None = None
    # custom Functions named as gradient reversals -> (cosine of the gradient they returned with the one given, after)
    reversal_checks: dict | None = None
    # learned weights on loss terms, exp(+-s) * loss, that nothing holds back -> their values s on this step
    unheld_loss_weights: dict | None = None
    # a classifier's batch (a few sampled steps): {"batch", "classes", "distinct" (classes in it), "most_frequent"}
    batch_classes: dict | None = None
    # a softmax (or sigmoid) whose output the loss squashes again (cross_entropy given probabilities, or
    # binary_cross_entropy_with_logits given a sigmoid's output): where it is, which function, over how many classes
    probabilities_into_loss: str | None = None
    softmax_into_squared_error: str | None = None  # the site of a softmax whose output mse_loss compares with targets
    # the loss's log_softmax over dim 1 of a Linear's (N, T, C) output, T == C: {"layer", "shape", "dim"}
    classes_on_another_axis: dict | None = None
    # cross_entropy over a self-similarity z @ z.T with targets 0..N-1 (its diagonal): {"embedding", "rows"}
    self_similarity: dict | None = None
    # a loss pulling a predictor's output towards the output of a module it reads, not detached: {"predictor", "target"}
    unstopped_target: dict | None = None
    # a distribution's draw by `sample()` (no path back to its parameters, which have a graph) that a module read:
    # {distribution class: module}
    decoded_draws: dict | None = None
    rows_written_twice: dict | None = None  # index_put/index_copy site -> (writes, writes to an index written before)
    # cross_entropy over cosine similarities times constants only: {"factor", "classes"} (every score within +-factor)
    confined_logits: dict | None = None
    identity_activations: list | None = None  # LeakyReLUs with a negative slope of 1 (the identity): where they act
    norm_over_one_value: list | None = None  # normalisation layers whose every group holds one value: output = bias
    # layer -> (share of exact zeros in its output that no recorded op made, the layer reading it): see the probe
    zeros_outside_autograd: dict | None = None
    # a straight-through estimator without its detach, z + (round(z) - z): op -> the layer before it (z gets 0)
    cancelled_straight_through: dict | None = None
    turned_straight_through: dict | None = None  # a straight-through that hands back -g: op -> the layer before
    batchnorm_never_estimated: list | None = None  # batch norms run in eval mode with running statistics never
    # estimated (num_batches_tracked 0) on a training step: they normalise by mean 0 and variance 1, not at all
    # torch.autograd.grad called without create_graph=True in a step whose loss adds a term that has no graph
    penalty_without_graph: bool = False
    # ... or with create_graph=True, in a step whose loss adds such a term all the same (one made of that gradient lost
    # its graph on the way: `g.detach()`, `g.data`, `g.item()`)
    penalty_detached: bool = False
    # torch.autograd.grad(..., create_graph=True) taken with respect to tensors other than the parameters (the inputs):
    # a loss made of a gradient, a Hamiltonian network's dH/dz
    loss_of_input_gradient: bool = False
    # ... one of them came out exactly 0 everywhere (None: no such call measured on this step)
    input_gradient_zero: bool | None = None
    gate_means: dict | None = None  # a (hard)sigmoid gate multiplying another tensor (site -> its output's mean)
    # (on the first few sampled steps) ReLU sites whose saved output, which their backward masks with, held negatives:
    # site -> the lowest value (an empty dict: looked at, none found)
    relu_outputs_negative: dict | None = None
    # (on the first few sampled steps) a loss that is a binary cross-entropy's mean: {"positives": the share of its
    # targets that are 1, "binary": all are 0 or 1}
    base_rate: dict | None = None
    log_of_probabilities: dict | None = None  # a log of a softmax's or sigmoid's output: {"log", "of", "at"}
    clamped_to_the_edge: dict | None = None  # acos or asin of a clamp to [-1, 1]: {"op", "bounds", "at"}
    without_optimizer: bool = False  # no optimiser steps the model: each backward pass is a step of its own
    # the constant the backward's root multiplies its loss by (not a GradScaler's, nor under an optimiser whose steps
    # are divided by the gradient's size: Adam's do not grow with it)
    root_scale: float | None = None
    loss_term_weights: list | None = None  # the constant weighting each term of the loss's sum (a KL warm-up's beta)
    # the gradient the optimiser applied was not the one backward left (changed by hand in between), compared with it on
    # some entries of one parameter's: {"parameter", "norm_ratio": applied / backward's, "cosine": of the two}
    gradient_replaced: dict | None = None
    # the root's factor is a GradScaler's, never unscaled: the optimiser stepped itself (`optimizer.step()`), not
    # through `scaler.step(optimizer)`, and no `scaler.unscale_` came before it
    scaler_never_unscaled: bool = False
    root_scale_unknown: bool = False  # ... not known: the gradients were already NaN or inf (dividing leaves them so)
    probabilities_function: str | None = None
    probabilities_classes: int | None = None
    # the loss compared a module's output of shape (N, 1) with a target of shape (N,), broadcast to (N, N): the
    # operation, the module, and the two shapes (graph_tools.prediction_broadcast)
    prediction_broadcast: dict | None = None
    # a dropout module in training mode whose output the loss reads directly (on the logits): {"module", "p"}
    dropout_into_loss: dict | None = None
    # several backward passes in the step: (pairs of them with no optimiser step between whose gradients were reset in
    # between, such pairs, the constant the first loss was scaled by: 1/8 for `loss / 8`, whether the step applied the
    # last pass's gradient as it was left, on weights that had not moved between the passes)
    reset_between_backwards: tuple | None = None
    # a backward pass from a score picked off a module's output (a saliency map's `scores.gather(1, y).sum()`) and one
    # from a loss, the gradients not reset between them, the step applying both: {"score_of", "score_reads", "loss",
    # "backward_passes"}
    score_backward: dict | None = None
    # a regression loss whose prediction comes straight out of a ReLU, sigmoid or tanh: {"loss", "activation",
    # "module", "range" (what the prediction can reach), "targets_outside" (the share of targets outside it)}
    targets_out_of_reach: dict | None = None
    # the loss gathers a module's (N, C) output along dim 0: {"module", "batch", "columns", "rows_read"} (a share)
    gather_across_batch: dict | None = None
    summed_loss: dict | None = None  # a loss with reduction="sum", stepped by SGD-like steps: {"loss", "terms"}
    # the loss adds where(c1, a, 0) + where(c2, b, 0): (share of examples neither takes, share the second takes)
    no_branch_taken: tuple[float, float] | None = None
    # a regression loss on one of the first sampled steps: {"loss", "target_rms", "prediction_rms"}, the targets' and
    # the predictions' typical size (targets left in raw units, house prices of 2e5, against predictions near 0)
    target_scale: dict | None = None
    # (first sampled steps only) tensors in the graph that require grad, held by a watched module, and no watched
    # parameter: attribute path -> {"kind" ("tensor": not an nn.Parameter; "parameter": registered since the model was
    # attached), "renewed" (a new object since the last look), "changed" (its entries since first seen)}
    loose_leaves: dict | None = None
    negated_loss: str | None = None  # the loss function (never negative) whose negative was minimised: `-mse_loss`
    previous_token_targets: float | None = None  # share of a token classifier's targets that are its input one back
    # share of a token classifier's targets that are its input at their own position ("share"), the share of targets
    # the loss counts ("counted") and how many token grids were embedded ("grids")
    unshifted_targets: dict | None = None
    kl_div_target_below_zero: bool | None = None  # True: a kl_div's target had negative entries (logits, not p)
    kl_div_of_probabilities: str | None = None  # "softmax": kl_div given probabilities where it reads log-probabilities
    subtracted_penalty: dict | None = None  # a penalty on weights subtracted at the root: {"form", "parameters"}
    # a term of log-probabilities alone that the root adds (`nll + eps * logp.mean()`): "log_softmax"
    log_probability_added: str | None = None
    # a loss of its own made from the target class's log-probability (a focal loss): {"mean", "classes"}
    target_log_probability: dict | None = None
    # a module of the script's own fed its own last output (a hand-written recurrent cell): name -> {"calls", "cut"
    # (calls fed it detached), "carried" (... with its gradient), "kind"}
    looped_calls: dict | None = None
    # each watched model with batch norms or dropouts called with gradient: name -> {"training" (in training mode on
    # any of its calls), "batch_norms", "dropouts" (their paths)}
    model_modes: dict | None = None
    # the graph differentiated reached the outputs of the first sampled step (retain_graph=True): {"step", "modules"}
    graph_from_earlier_step: dict | None = None
    maximized_loss: str | None = None  # ... or that an optimiser made with maximize=True stepped up, not down
    # the loss minimised, when it is never negative while its input is in its domain (binary cross-entropy, whose
    # targets are probabilities; nll_loss, whose input is log-probabilities), and unbounded below outside it
    loss_with_domain: str | None = None
    # such a loss came out negative: its input out of its domain (binary cross-entropy's targets outside [0, 1]):
    # {"loss_function", "input", "low", "high", "domain"} (graph_tools.loss_outside_its_domain)
    loss_outside_domain: dict | None = None
    # whether the graph of the step's backward passes held any output of the watched modules that ran (None: not
    # walked); False: the loss reached the parameters only directly, as a weight penalty does
    loss_reaches_model: bool | None = None
    # the tensor a backward pass started from was a leaf made to require grad, with no graph behind it (a loss computed
    # outside autograd, in NumPy or from `.item()`, wrapped as `torch.tensor(value, requires_grad=True)`)
    loss_is_a_leaf: bool = False

    def to_dict(self) -> dict:
        record = asdict(self)
        for activation in record["activations"].values():
            activation.pop("unit_active", None)
        return record


@dataclass
class NonfiniteEvent:
    """The first NaN or Inf of the run: where it appeared, as far as the probe could tell."""

    step: int
    phase: str  # "forward", "backward", "update" (parameters made nonfinite by the optimiser step) or "input" (data)
    where: str  # module path or operation ("log", "fc2", ...)
    op: str | None = None  # the operation, when known
    module: str | None = None  # the module it sits in or after, when known
    inside: bool = False  # the op is the module's own computation (in it), not an op after it
    value: str = "nan"  # "nan", "inf" or "nan and inf"
    exact: bool = True  # located at the op/module itself, or only bounded (see `detail`)
    through_where: bool = False  # the NaN reached the gradient through the untaken branch of torch.where
    candidates: list[str] = field(default_factory=list)  # ops between the last finite and first nonfinite value
    parameters: list[str] = field(default_factory=list)  # parameters that turned nonfinite
    detail: str = ""
    read_by: str | None = None  # (phase "input", where: a module whose output has no gradient) the module that read it
    finite_until: int | None = None  # (phase "update", found when a sampled step began) the last step seen finite
    half_precision: bool = False  # (phase "forward") the op ran in float16/bfloat16, and its result overflowed
    floor_at_zero: str | None = None  # (phase "forward") the op at a floor of 0 (a relu) whose output the NaN op read
    half_precision_root: str | None = None  # (phase "forward") a square root computed in this dtype (bfloat16, ...)
    rate_read_as_rate: bool = False  # (phase "forward") the log of poisson_nll_loss(input, y, log_input=False)
    too_few_to_spread: dict | None = None  # (phase "forward") a std or var over too few values (see torch_graph)
    raw_layer_output: str | None = None  # (phase "forward") the weighted layer whose output a log or root read as it is
    # (phase "update") the training optimiser's eps, which rounds to 0 in the parameters' dtype: {"eps", "dtype"}
    eps_rounds_to_zero: dict | None = None
    # (phase "update") the step's gradients were finite: the optimiser's own arithmetic made the NaN. {"optimizer":
    # its class name, "custom": not one of torch.optim's, "grad_norm": the step's gradient norm}
    finite_gradients: dict | None = None
