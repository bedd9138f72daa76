"""The PyTorch probe: hooks that measure a training run without changing it, and hand the doctor statistics.

What runs when (step = one optimiser step; without an optimiser, one backward call):

- Every step (a few microseconds): the loss is read at `backward()` (one patched function,
  `torch.autograd.backward`, which `Tensor.backward` calls); if it is not finite, the live autograd graph is
  searched for the first operation that produced the NaN/Inf, before the backward pass frees its values.
- Sampled steps (one in every run of `every` steps, step 0 first, a step later in each run): global module
  forward hooks are installed for that step only. They note each layer's position, write its name into the
  autograd node of its output (`node.metadata`) and hook that node for the gradient that arrives there,
  and, for recurrent layers, on its input for the gradient at each time step. At `backward()` the autograd
  graph is walked once: activations (ReLU/sigmoid/tanh, as modules or plain function calls) are summarised
  from the values their nodes saved, and hooks go on gating operations (clamp, round, ...) to measure how much
  gradient they block, and on operations with infinite derivatives (log, sqrt, div, ...) to catch the first
  NaN of the backward pass. At the optimiser step: gradient and weight norms per layer, and the update/weight
  ratio. Everything is reduced on the tensors' device and fetched in one transfer at the end of the step (read
  in place on the CPU). On a GPU that copy is not waited for: the step's record is built a step or two later,
  once the copy has landed, so the host never stalls the device (see `Deferred.start_fetch`).
- Between sampled steps no module hook is installed, so PyTorch takes its hook-free fast path.

Nothing here changes a value the training computes: hooks return None, statistics are computed on detached
tensors under no_grad, and an exception inside the doctor is caught and kept as an internal note. The one
rearrangement, feeding a recurrent layer a detached alias of its input that requires grad (on sampled steps,
when the input has no gradient of its own), computes the same forward values and the same parameter gradients;
`tests/doctor/test_never_changes_training.py` checks losses and parameters bit for bit.
"""

from __future__ import annotations

import difflib
import functools
import gc
import inspect
import itertools
import math
import sys
import threading
import types
import warnings
import weakref
from collections import deque
from dataclasses import dataclass, field

import torch
import torch.optim.optimizer as optimizer_hooks
import torch.utils.checkpoint
from torch import nn
from torch.nn.utils import parametrize
from torch.nn.utils.rnn import PackedSequence

from leakygrad.doctor.probes import torch_graph as graph_tools
from leakygrad.doctor.probes.torch_graph import NodeTags, op_name
from leakygrad.doctor.probes.torch_stats import (
    HALF_PRECISION,
    READ_FROM_INPUT,
    RELU_LIKE,
    UPDATE_SAMPLE,
    ActivationTally,
    Deferred,
    Fetch,
    HostCopy,
    ParameterSamples,
    Scratch,
    activation_values,
    add_activation,
    blocked_fraction,
    norm,
    packed_time_step_norms,
    padding_by_time_step,
    padding_idx_check,
    recurrent_unit_blocks,
    root_mean_square,
    share_outside,
    spread,
    spread_across_batch,
    time_step_norms,
    total,
    unit_axis,
    unit_spread,
    zeros_among_live,
    zeros_among_zero_one,
)
from leakygrad.doctor.stats import ActivationStats, LayerStats, NonfiniteEvent, OpStats, StepRecord

ACTIVATION_OPS = ("relu", "sigmoid", "tanh", "hardswish", "hardsigmoid", "leaky_relu")  # (and ReLU-n: see below)
GATE_FUNCTIONS = ("sigmoid", "hardsigmoid", "relu6", "relu_n")  # multiplying another tensor, these are gates
LOGS = ("log", "log2", "log10")  # (of a probability that rounds to 0: -inf, and an infinite derivative)
GATE_MEANS = ("sigmoid", "hardsigmoid")  # gates in (0, 1) whose mean output is read: all of them shut stalls a run
SQUASHING = (*GATE_FUNCTIONS, "tanh")  # judged once every product of the graph is known (a tanh a sigmoid gates)
GATING_OPS = {
    "clamp": "clamp", "clamp_min": "clamp", "clamp_max": "clamp", "clip": "clamp", "hardtanh": "hardtanh",
    "threshold": "threshold", "round": "round", "sign": "sign", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
}  # fmt: skip
# what the graph walk looks at (a max or min with a constant, `torch.maximum(kl, torch.tensor(3.0))`, is a clamp too)
BATCH_SUMMING_OPS = ("add", "sub", "expand")  # (what adds a sum over the whole batch back onto each example)
WATCHED_OPS = {*ACTIVATION_OPS, *GATING_OPS, *graph_tools.BOUNDING_OPS, *graph_tools.BACKWARD_NAN_PRONE}
ONE_HOT_LOOK_SIZE = 1 << 16  # a softmax's output read for exactly one-hot rows up to this many entries
LAYER_READS = set(graph_tools.LAYER_PRODUCTS)  # the ops that read a layer's weight or bias (addmm: a Linear's bias)
DROPOUT_MOSTLY = 0.8  # a dropout that drops this share or more (GAT's 0.6 is a published setting; 0.9 keep_prob)
DROPOUTS = (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout, nn.FeatureAlphaDropout)
CALLS_MANY = 3  # a weighted module called this many times in a step or more: which of its calls does the loss reach?
ZERO_DERIVATIVE_DRAW = "torch.normal"  # a draw whose derivative to its mean and std is 0 (`decoded_draws`' key for it)
TRANSFORMER_DECODERS = (nn.TransformerDecoder, nn.TransformerDecoderLayer)  # (their self-attention's mask: tgt_mask)
BATCH_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.SyncBatchNorm)
CLASS_SCORE_LOSSES = {"nll_loss", "log_softmax", "binary_cross_entropy_with_logits", "multilabel_soft_margin_loss"}
NORMS_OVER_SAMPLES = (nn.GroupNorm, nn.LayerNorm)  # (an InstanceNorm over one value raises in training)
CLAMPS = ("clamp", "clamp_min", "clamp_max", "clip", "hardtanh")  # a clamp to a range, however it is called
MODEL_OUTPUT = "the model's output, made by"  # a blocking op's site when it makes the watched model's own output
UNIT_ROW_LAYERS = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)  # weight (units, ...): each unit's row reads every input
GATED_RECURRENT = (nn.LSTM, nn.GRU, nn.LSTMCell, nn.GRUCell)  # their gates saturate by design: not reported
RECURRENT_GATES = {"RNN": 1, "LSTM": 4, "GRU": 3}  # blocks of hidden-size rows in each weight of these layers
LEAF_ENTRIES_COMPARED = 16  # entries of a loose leaf compared with its first values: did anything update it?
HAND_UPDATE_LOOKS = 8  # first backward passes on which, with no model of modules, leaves updated by hand are looked for
LEAVES_LOOKED_AT = 256  # ... of each graph, at most this many leaf tensors
HELD_ITEMS = 256  # items of a list or dict the script holds that are looked through for its tensors, at most
LOOSE_LEAF_LOOKS = 6  # first sampled steps on which the graph's leaves are looked through for loose learnable tensors
TARGET_SCALE_LOOKS = 4  # first sampled steps on which a regression's targets and predictions are measured
FROZEN_LOOKS = 64  # calls of a model whose parameters are all frozen before it is left unwatched for good
PHASE_STEPS = 32  # steps of one optimiser after which another taking over the same parameters begins a new phase
DISPLACEMENT_GAP = 16  # steps between two measures of how far the weights moved since the first sampled step
PREVIOUS_TOKEN_LOOKS = 4  # first sampled steps on which a token classifier's targets are compared with its input
INPUT_SPREAD_LOOKS = 4  # ... on which the first weighted layer's outputs are compared across the batch
OUTPUT_SPREAD_LOOKS = 2  # ... on which every weighted layer's are (is the prediction the same for every example?)
SOFT_TARGET_LOOKS = 4  # ... on which a cross-entropy's class probabilities (its float targets) are summed by row
BASE_RATE_LOOKS = 8  # ... on which a binary cross-entropy's share of positive targets is read
CTC_INPUT_LOOKS = 4  # ... on which ctc_loss's input is checked to be log-probabilities
# a classifier's batches: the classes each holds are counted on this many first sampled backward passes with a loss,
# then on those whose count is a power of two (a sorted dataset shows over an epoch, not over a few steps in a row)
CLASS_COUNT_FIRST_LOOKS = 4
CLASS_COUNT_LOOKS = 16
ATTENTION_LOOKS = 4  # first sampled steps on which attention's softmaxes are measured (near uniform at the start?)
LOOKAHEAD_LOOKS = 4  # first sampled steps on which self-attentions' masks are read (can a position read the next?)
OUTPUT_SIDE_LOOKS = 4  # first sampled steps on which the graph tells whether any module reads a sigmoid's output
LATE_PART_LOOKS = 8  # modules met inside forwards of two steps, never named, looked for among the watched models' parts
RELU_OUTPUT_LOOKS = 4  # first sampled steps on which ReLUs' saved outputs are checked for negatives (`.data +=`)
LOSS_MASK_LOOKS = 4  # ... on which a per-token loss's mask is compared with the padding of the tokens an embedding read
PADDING_LOOKS = 4  # ... on which the gradient at an embedding's output is read at its padding_idx and at other ids
POSITION_LOOKS = 4  # ... on which the gradient at a token embedding's output is read position by position
UNHELD_LOOKS = 4  # ... on which the graph is searched for learned weights on loss terms that nothing holds back
REVERSAL_LOOKS = 32  # ... on which a gradient reversal's backward is compared with what it is given (past lambda 0)
CUSTOM_BACKWARD_CHECKS = 3  # sampled steps on which each custom autograd.Function's backward is tested (then trusted)
MAX_ZERO_SUSPECTS = 8  # parameters with a gradient exactly zero at every sampled step, looked at between them
SYMMETRY_CHECK_GAP = 32  # steps at least between two looks at whether a layer's units are all alike (then doubling)
MAX_UNREAD = 4  # sampled steps whose statistics may be on their way from a GPU at once; then the oldest is awaited
ZERO_CHECK_SAMPLE = 256  # entries of a gradient read to tell whether it was zeroed through .data (GradientMarks)
SCALER_OVERFLOWS_TOLERATED = 8  # sampled steps in a row whose scaled backward overflowed before it is reported
# backward passes an optimiser that has not stepped yet is waited for (accumulation over micro-batches), at most
MAX_BACKWARDS_BEFORE_FIRST_STEP = 256
RAN_FORWARD, RAN_BACKWARD, STEPPED = 1, 2, 3  # how far a thread went in a training step (TorchProbe.claim_thread)


# --- the one patched function: torch.autograd.backward ------------------------------------------------------------
_active_probes: list[TorchProbe] = []
_original_backward = None
TORCH_BACKWARD = torch.autograd.backward  # as PyTorch defines it (this module is imported before any patching)
# (A patched function bound by name while a probe watched, `from torch.nn.utils import clip_grad_norm_`, may be
# called after the watch ended: each then calls PyTorch's own, kept here.)


def _probes_of_this_thread() -> list[TorchProbe]:
    """The active probes that follow the thread running now (see `TorchProbe.claim_thread`)."""
    return [probe for probe in _active_probes if probe.in_its_thread()]


def _patched_backward(tensors, *args, **kwargs):
    original = _original_backward or TORCH_BACKWARD
    if _inside_backward():  # re-entrant checkpointing differentiates its recomputed part inside the outer backward:
        return original(tensors, *args, **kwargs)  # part of a backward the probes already see
    probes = [probe for probe in _active_probes if probe.claim_thread(RAN_BACKWARD)]
    retain_graph = _retains_graph(args, kwargs)
    for probe in probes:
        probe.before_backward(tensors, retain_graph)
    result = original(tensors, *args, **kwargs)
    for probe in probes:
        probe.after_backward()
    return result


_REENTRANT_CHECKPOINT_FORWARD = getattr(
    getattr(getattr(torch.utils.checkpoint, "CheckpointFunction", None), "forward", None), "__code__", None
)


def _inside_reentrant_checkpoint() -> bool:
    """Whether this call comes from inside `torch.utils.checkpoint.checkpoint(..., use_reentrant=True)`, whose
    forward runs the checkpointed function under no_grad (read from the call stack: asked only of a module that
    runs without grad, on a sampled step)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is _REENTRANT_CHECKPOINT_FORWARD:
            return True
        frame = frame.f_back
    return False


def _retains_graph(args, kwargs) -> bool:
    """Whether a call `torch.autograd.backward(tensors, grad_tensors, retain_graph, create_graph, ...)` keeps the
    graph's saved tensors for another backward (retain_graph defaults to create_graph)."""
    retain = kwargs.get("retain_graph", args[1] if len(args) > 1 else None)
    if retain is None:
        retain = kwargs.get("create_graph", args[2] if len(args) > 2 else False)
    return bool(retain)


def _inside_backward() -> bool:
    """Whether this call comes from inside a running backward pass (a node's backward calling backward again)."""
    return torch._C._current_graph_task_id() != -1


# The last loss a gradient scaler (torch.amp.GradScaler) scaled, and its factor as it was then: the loss that
# `scaler.scale(loss).backward()` hands to backward is loss x scale, a factor the scaler grows and shrinks during
# training, so the loss is recorded divided by it (see `_scale_of`).
_original_scale = None
CUSTOM_FUNCTION_NODE = torch.autograd.function.BackwardCFunction  # the node of a Python autograd.Function
GRAD_SCALER_SCALE = torch.amp.GradScaler.scale
# (weak reference to the scaled loss, the factor: a one-element tensor, weak reference to the scaler)
_last_scaled: tuple | None = None


def _patched_scale(scaler, outputs):
    global _last_scaled
    scaled = (_original_scale or GRAD_SCALER_SCALE)(scaler, outputs)
    factor = getattr(scaler, "_scale", None)
    if isinstance(scaled, torch.Tensor) and scaled is not outputs and isinstance(factor, torch.Tensor):
        # (a copy of the factor: update() changes it in place)
        _last_scaled = (weakref.ref(scaled), factor.detach().clone(), weakref.ref(scaler))
    return scaled


def _unscaled_yet() -> bool:
    """Whether the gradient scaler that scaled the last loss has unscaled the gradients of an optimiser since
    (`scaler.unscale_(optimizer)`, or its own step): before that they are multiplied by its factor. True when
    unknown, so that nothing is said."""
    stages = _last_scaler_stages()
    if stages is None:
        return True
    return any(getattr(state.get("stage"), "name", "UNSCALED") != "READY" for state in stages.values())


def _last_scaler_stages() -> dict | None:
    """The per-optimiser states (their `stage`: READY, UNSCALED, STEPPED) of the GradScaler that scaled the last
    loss, keyed by id(optimizer); None when unknown."""
    scaler = _last_scaled[2]() if _last_scaled is not None else None
    stages = getattr(scaler, "_per_optimizer_states", None)
    return stages if isinstance(stages, dict) else None


def _steps_scaled_gradients(optimizer, kwargs) -> bool:
    """Whether `optimizer` is about to step on gradients the last GradScaler multiplied and never divided back: the
    scaler neither unscaled them for this optimiser (`scaler.unscale_(optimizer)`, or its own `scaler.step`) nor
    handed it its factor (a fused optimiser divides inside its step: `scaler.step` sets `optimizer.found_inf`, or
    passes `grad_scaler`)."""
    if getattr(optimizer, "found_inf", None) is not None or "grad_scaler" in kwargs:
        return False
    stages = _last_scaler_stages()
    if stages is None:
        return False
    stage = stages.get(id(optimizer), {}).get("stage")  # (`get`: the scaler's defaultdict makes no entry)
    return stage is None or getattr(stage, "name", None) == "READY"


def _scale_of(loss: torch.Tensor) -> torch.Tensor | None:
    """The factor a gradient scaler multiplied this loss by, if it did."""
    if _last_scaled is not None and _last_scaled[0]() is loss:
        return _last_scaled[1]
    return None


# torch.nn.utils.clip_grad_norm_: a max_norm far below the gradient's norm shrinks every update, which the update
# ratios alone would blame on the learning rate. While a probe watches, it notes max_norm and the norm it measured
# (what it returns and does are unchanged).
_original_clip = None
CLIP_GRAD_NORM = torch.nn.utils.clip_grad.clip_grad_norm_
_CLIP_MODULES = (torch.nn.utils, torch.nn.utils.clip_grad)  # (the function, and where the package re-exports it)
EMPTY = object()  # what `next` returns from a generator with nothing left
EMPTY_GENERATOR_WARNING = "`parameters` is an empty generator, no gradient clipping will occur."  # (PyTorch's words)


def _patched_clip(parameters, max_norm, *args, **kwargs):
    given_nothing = False
    if isinstance(parameters, types.GeneratorType):  # (read once: the optimiser may have used it up already)
        first = next(parameters, EMPTY)
        if first is EMPTY:
            # PyTorch warns of it, at the caller of clip_grad_norm_: at the script's line here, not this one's
            warnings.warn(EMPTY_GENERATOR_WARNING, UserWarning, stacklevel=2)
            parameters, given_nothing = [], True  # (what it does with an empty list is the same, without a warning)
        else:
            parameters = itertools.chain((first,), parameters)
    parameters = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)  # (the same, kept)
    total = (_original_clip or CLIP_GRAD_NORM)(parameters, max_norm, *args, **kwargs)
    if not _compiled_or_transformed():  # (traced by torch.compile, the note would be compiled in)
        for probe in _probes_of_this_thread():
            probe.note_clipping(max_norm, total, given_nothing, parameters)
    return total


# torch.nn.utils.clip_grad_value_: a clip_value far below the gradient's entries caps nearly all of them, and each
# update is then about lr * clip_value * sign(g), whatever the gradient's size. While a probe watches, on its sampled
# steps it measures the gradients before and after the call (what the call does is unchanged).
_original_clip_value = None
CLIP_GRAD_VALUE = torch.nn.utils.clip_grad.clip_grad_value_


def _patched_clip_value(parameters, clip_value, *args, **kwargs):
    clip = _original_clip_value or CLIP_GRAD_VALUE
    if _compiled_or_transformed():
        return clip(parameters, clip_value, *args, **kwargs)
    watching = [probe for probe in _probes_of_this_thread() if probe.sampling and probe.state is not None]
    if not watching:
        return clip(parameters, clip_value, *args, **kwargs)
    parameters = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)  # (read twice below)
    before = [probe.before_value_clipping(parameters, clip_value) for probe in watching]
    result = clip(parameters, clip_value, *args, **kwargs)
    for probe, measured in zip(watching, before):
        probe.note_value_clipping(parameters, clip_value, measured)
    return result


# ReduceLROnPlateau.step(metric): the metric it is given, and whether it cut the rate. A scheduler told mode="min" and
# given an accuracy (or "max" and a loss) reads every improvement as none, and cuts the rate every patience + 1 calls.
_original_plateau_step = None
PLATEAU = torch.optim.lr_scheduler.ReduceLROnPlateau


def _plateau_step_noting(original):
    """ReduceLROnPlateau.step, wrapped: the same call, then each probe notes the metric and whether a rate was cut."""

    @functools.wraps(original)
    def step(scheduler, metrics, *args, **kwargs):
        before = [group["lr"] for group in scheduler.optimizer.param_groups]
        result = original(scheduler, metrics, *args, **kwargs)
        for probe in _probes_of_this_thread():
            probe.note_plateau_step(scheduler, metrics, before)
        return result

    return step


# LRScheduler._update_lr(), which its step() calls: the schedulers each probe has seen stepped, so that one whose
# optimiser never steps (a scheduler built over a second optimiser, `LambdaLR(make_optimizer(model), ...)`) is told:
# its schedule reaches no update. (Not step() itself: its warnings name the line that called it, the script's.)
_original_scheduler_update = None
SCHEDULER = torch.optim.lr_scheduler.LRScheduler


def _same_rate(a: float, b: float) -> bool:
    """Whether two learning rates are one (to float rounding)."""
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-12)


def _first_argument_noted(original, note):
    """`original`, wrapped: the same call, then each probe of this thread notes its first argument (`note(probe,
    argument)`): a scheduler whose rate was updated, a tensor an initialiser filled."""

    @functools.wraps(original)
    def noting(first, *args, **kwargs):
        result = original(first, *args, **kwargs)
        for probe in _probes_of_this_thread():
            note(probe, first)
        return result

    return noting


# torch.nn.init's in-place initialisers: a watched parameter initialised again once its optimiser has stepped it
# (`model.apply(init_weights)` slipped inside the epoch loop) throws away what training had learnt so far.
INIT_FUNCTIONS = (
    "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_", "xavier_uniform_",
    "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_",
)  # fmt: skip
_original_inits: dict = {}


# torch.autograd.grad: a gradient taken without create_graph=True is a constant to a later backward. A penalty made of
# it (double backprop, a WGAN's gradient penalty, a physics-informed residual) adds to the loss and passes no gradient.
_original_grad = None
AUTOGRAD_GRAD = torch.autograd.grad


def _patched_grad(outputs, inputs, *args, **kwargs):
    if not isinstance(inputs, (torch.Tensor, tuple, list)):  # (`model.parameters()`: a generator, read once, here)
        inputs = tuple(inputs)
    watching = [] if _compiled_or_transformed() or _inside_backward() else _probes_of_this_thread()
    entered = [probe for probe in watching if probe.enter_grad_of_inputs(inputs)]
    try:
        result = (_original_grad or AUTOGRAD_GRAD)(outputs, inputs, *args, **kwargs)
    finally:
        for probe in entered:
            probe.leave_grad_of_inputs()
    create_graph = kwargs.get("create_graph", args[2] if len(args) > 2 else False)
    for probe in watching:
        probe.note_grad(inputs, create_graph, result)
    return result


# torch.distributions' sample(): a draw made without a path back to the distribution's parameters (under no_grad).
# A VAE that decodes `Normal(mu, std).sample()` where `rsample()` was meant trains its encoder by the KL term alone.
SAMPLING_CLASSES = [
    cls
    for cls in vars(torch.distributions).values()
    if isinstance(cls, type) and issubclass(cls, torch.distributions.Distribution) and "sample" in vars(cls)
]
_original_samples: dict = {}  # class -> its own sample(), while a probe watches


def _parameters_with_a_graph(distribution) -> bool:
    """Whether a distribution's parameters (its tensors, or its base distribution's) carry a graph: a mean and scale
    computed by a model."""
    for value in vars(distribution).values():
        if isinstance(value, torch.Tensor) and value.requires_grad:
            return True
        if isinstance(value, torch.distributions.Distribution) and _parameters_with_a_graph(value):
            return True
    return False


def _patched_sample_of(cls):
    original = vars(cls)["sample"]

    def sample(self, *args, **kwargs):
        drawn = original(self, *args, **kwargs)
        if self.has_rsample and _active_probes and torch.is_grad_enabled() and not _compiled_or_transformed():
            for probe in _probes_of_this_thread():
                probe.note_sample(self, drawn)
        return drawn

    return functools.wraps(original)(sample)


# nn.Module.load_state_dict: weights loaded over those the optimiser stepped (an EMA copied back at every step). Noted
# by a patch of the method while a probe watches, not by a hook on each model: a hook would stay in the model's own
# dict, and go with it wherever the script sends it (`torch.save(model)` and `copy.deepcopy` would carry the probe).
_original_load_state_dict = None
LOAD_STATE_DICT = nn.Module.load_state_dict


def _patched_load_state_dict(self, state_dict, *args, **kwargs):
    if not _compiled_or_transformed():
        for probe in _probes_of_this_thread():
            probe.note_state_load(self, state_dict)
    return (_original_load_state_dict or LOAD_STATE_DICT)(self, state_dict, *args, **kwargs)


# torch.autograd.Function.apply: the calls of custom Functions on sampled steps, with their inputs, so that their
# backward can be tested against their forward (`TorchProbe.note_custom_call`).
_original_function_apply = None
FUNCTION_APPLY = vars(torch.autograd.Function)["apply"]  # a classmethod


def _patched_function_apply(cls, *args, **kwargs):
    apply = (_original_function_apply or FUNCTION_APPLY).__func__
    if kwargs or _compiled_or_transformed():
        return apply(cls, *args, **kwargs)
    probes = [probe for probe in _probes_of_this_thread() if probe.wants_custom_call(cls)]
    if not probes:
        return apply(cls, *args)
    generators = _generator_states(args)  # (a forward that draws random numbers draws the same ones when tested)
    versions = [_version_of(a) for a in args]
    output = apply(cls, *args)
    if [_version_of(a) for a in args] == versions:  # (one that changed an input in place, `mark_dirty`: untested)
        for probe in probes:
            probe.note_custom_call(cls, args, output, generators)
    return output


def _generator_states(args) -> tuple:
    """The CPU's random generator state, and those of the GPUs the arguments are on."""
    devices = sorted({a.device.index for a in args if isinstance(a, torch.Tensor) and a.is_cuda})
    return torch.get_rng_state(), {d: torch.cuda.get_rng_state(d) for d in devices}


def _run_forward_again(function, generators):
    """The Function's own apply, not the patched one (a test's calls are not calls of the training), with the random
    generators as they were when the training called it (the caller restores them after)."""
    apply = (_original_function_apply or FUNCTION_APPLY).__func__
    cpu, gpus = generators

    def forward(*args):
        torch.set_rng_state(cpu)
        for device, state in gpus.items():
            torch.cuda.set_rng_state(state, device)
        return apply(function, *args)

    return forward


def _activate(probe: TorchProbe) -> None:
    global _original_backward, _original_scale, _original_clip, _original_clip_value, _original_grad
    global _original_load_state_dict, _original_function_apply, _original_plateau_step, _original_scheduler_update
    if not _active_probes:
        _original_plateau_step = vars(PLATEAU)["step"]
        PLATEAU.step = _plateau_step_noting(_original_plateau_step)
        for name in INIT_FUNCTIONS:
            if hasattr(nn.init, name):
                _original_inits[name] = getattr(nn.init, name)
                setattr(nn.init, name, _first_argument_noted(_original_inits[name], TorchProbe.note_initialised))
        _original_scheduler_update = vars(SCHEDULER).get("_update_lr")
        if _original_scheduler_update is not None:
            SCHEDULER._update_lr = _first_argument_noted(_original_scheduler_update, TorchProbe.note_scheduler_step)
        _original_function_apply = vars(torch.autograd.Function)["apply"]
        torch.autograd.Function.apply = classmethod(_patched_function_apply)
        _original_load_state_dict = nn.Module.load_state_dict
        nn.Module.load_state_dict = functools.wraps(_original_load_state_dict)(_patched_load_state_dict)
        _original_grad = torch.autograd.grad
        torch.autograd.grad = functools.wraps(_original_grad)(_patched_grad)
        _original_backward = torch.autograd.backward
        torch.autograd.backward = functools.wraps(_original_backward)(_patched_backward)
        _original_scale = torch.amp.GradScaler.scale
        torch.amp.GradScaler.scale = functools.wraps(_original_scale)(_patched_scale)
        _original_clip = torch.nn.utils.clip_grad.clip_grad_norm_
        _original_clip_value = torch.nn.utils.clip_grad.clip_grad_value_
        for module in _CLIP_MODULES:
            module.clip_grad_norm_ = functools.wraps(_original_clip)(_patched_clip)
            module.clip_grad_value_ = functools.wraps(_original_clip_value)(_patched_clip_value)
        for cls in SAMPLING_CLASSES:
            _original_samples[cls] = vars(cls)["sample"]
            cls.sample = _patched_sample_of(cls)
    _active_probes.append(probe)


def _deactivate(probe: TorchProbe) -> None:
    global _original_backward, _original_scale, _original_clip, _original_clip_value, _last_scaled, _original_grad
    global _original_load_state_dict, _original_function_apply, _original_plateau_step, _original_scheduler_update
    if probe in _active_probes:
        _active_probes.remove(probe)
    if not _active_probes and _original_backward is not None:
        PLATEAU.step = _original_plateau_step
        _original_plateau_step = None
        if _original_scheduler_update is not None:
            SCHEDULER._update_lr = _original_scheduler_update
        _original_scheduler_update = None
        for name, original in _original_inits.items():
            setattr(nn.init, name, original)
        _original_inits.clear()
        torch.autograd.Function.apply = _original_function_apply
        _original_function_apply = None
        nn.Module.load_state_dict = _original_load_state_dict
        _original_load_state_dict = None
        torch.autograd.backward = _original_backward
        torch.autograd.grad = _original_grad
        _original_grad = None
        torch.amp.GradScaler.scale = _original_scale
        for module in _CLIP_MODULES:
            module.clip_grad_norm_ = _original_clip
            module.clip_grad_value_ = _original_clip_value
        for cls, original in _original_samples.items():
            cls.sample = original
        _original_samples.clear()
        _original_backward = _original_scale = _original_clip = _original_clip_value = _last_scaled = None


# --- what the probe knows about each module ----------------------------------------------------------------------
@dataclass
class ModuleInfo:
    name: str
    kind: str
    has_weights: bool  # owns trainable parameters directly
    recurrent: str | None  # "sequence" (nn.RNN/LSTM/GRU), "cell" (nn.RNNCell/...), or None
    gated: bool  # LSTM/GRU: internal sigmoid/tanh gates are not reported as saturated
    leaf: bool  # no submodules: an op producing its output is *in* it (else the op sits in its forward, after ...)
    bidirectional: bool = False  # a recurrent layer run in both directions (its time profile sums the two)
    runs: bool = True  # has a forward of its own (a ModuleList or ParameterList is never called: it only holds)
    # its weight's first axis holds its units, each reading the same inputs (nn.Linear, a convolution without groups):
    # units with identical weights stay identical (`unit_spread`)
    unit_rows: bool = False
    # takes (sequence, batch, features), `batch_first=False`: nn.MultiheadAttention, nn.RNN/LSTM/GRU, Transformer layers
    seq_first: bool = False


SEQUENCE_FIRST_LAYERS = (nn.MultiheadAttention, nn.RNNBase, nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)


def _module_info(name: str, module: nn.Module) -> ModuleInfo:
    has_weights = any(p.requires_grad for p in _own_parameters(module))
    recurrent = "sequence" if isinstance(module, nn.RNNBase) else "cell" if isinstance(module, nn.RNNCellBase) else None
    leaf = next(module.children(), None) is None
    gated, bidirectional = isinstance(module, GATED_RECURRENT), bool(getattr(module, "bidirectional", False))
    # (read without running descriptors: a TorchScript module's class `forward` raises when read from the class)
    runs = inspect.getattr_static(type(module), "forward", None) is not nn.Module.forward
    unit_rows = isinstance(module, UNIT_ROW_LAYERS) and getattr(module, "groups", 1) == 1
    seq_first = isinstance(module, SEQUENCE_FIRST_LAYERS) and getattr(module, "batch_first", None) is False
    kind = type(module).__name__
    return ModuleInfo(name, kind, has_weights, recurrent, gated, leaf, bidirectional, runs, unit_rows, seq_first)


def _modules_in_plain_containers(root: nn.Module) -> list[tuple[str, str, str, list]]:
    """Modules with parameters kept in a plain list, tuple or dict attribute (`self.blocks = [nn.Linear(...), ...]`)
    rather than in nn.ModuleList or nn.ModuleDict. PyTorch does not register them: `root.parameters()` (so an optimiser
    made from it), `.to()`, `state_dict()` and `train()`/`eval()` never see them, though the forward pass uses them.
    [(container path, owner path, "list"/"tuple"/"dict", [(key, module)])]. A private attribute (`self._teacher =
    [model]`, a way to keep a module out of `parameters()` on purpose) is left alone, and so is a container whose
    first item is no module (a list of tensors, of numbers)."""
    registered = {id(m) for m in root.modules()}
    found = []
    for owner, module in root.named_modules():
        for attribute, value in vars(module).items():
            if attribute.startswith("_") or not isinstance(value, (list, tuple, dict)) or not value:
                continue
            items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
            if not isinstance(items[0][1], nn.Module):
                continue
            held = []
            for key, item in items:
                unseen = isinstance(item, nn.Module) and id(item) not in registered
                if unseen and next(item.parameters(), None) is not None:
                    registered.update(id(m) for m in item.modules())
                    held.append((str(key), item))
            if held:
                container = f"{owner}.{attribute}" if owner else attribute
                found.append((container, owner, type(value).__name__, held))
    return found


def _own_parameters(module: nn.Module) -> list:
    """The parameters a module computes with: its own, and those behind its parametrized weights (spectral_norm,
    weight_norm: the `original` parameters, held by a ParametrizationList that serves only to compute the weight)."""
    if isinstance(module, parametrize.ParametrizationList):
        return []  # (its parameters are the parametrized module's)
    own = list(module.parameters(recurse=False))
    if parametrize.is_parametrized(module):
        own += list(module.parametrizations.parameters())
    return own


def _weight_owner(root: nn.Module, owner: str) -> str:
    """The path of the module that computes with a parameter held at `owner` (a path under `root`): the
    parametrized module for a parameter behind a parametrized weight, its `original` or one of the parametrization's
    own ('2.parametrizations.weight' or '2.parametrizations.weight.0' -> '2'), as `_own_parameters` counts them."""
    parts = owner.split(".")
    if "parametrizations" not in parts:
        return owner
    layer = ".".join(parts[: len(parts) - 1 - parts[::-1].index("parametrizations")])  # (before the last one)
    return layer if parametrize.is_parametrized(root.get_submodule(layer)) else owner


def _first_tensor(value):
    """A module's main output: the tensor itself, the first of a tuple (an RNN's (output, h_n)), a packed sequence's
    data."""
    if isinstance(value, PackedSequence):
        return value.data
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (tuple, list)) and value:
        return _first_tensor(value[0])
    return None


def _dense(tensor: torch.Tensor) -> bool:
    """A plain strided tensor: not sparse (COO, CSR, ...) and not nested (strided or jagged). Only such a tensor
    has one block of memory (`untyped_storage`), a shape per axis and the reductions the statistics use."""
    return tensor.layout is torch.strided and not tensor.is_nested


def _shares_memory_with_input(output: torch.Tensor, args) -> bool:
    """Whether a module's output lies in the memory of one of its tensor inputs (a view, Flatten's; an in-place
    change; the input passed through): then it made nothing new, and a value in it came in with the input."""
    memory = output.untyped_storage().data_ptr()
    return any(
        isinstance(arg, torch.Tensor) and _dense(arg) and arg.untyped_storage().data_ptr() == memory for arg in args
    )


def _parameter_beneath(tensor: torch.Tensor):
    """The leaf tensor `tensor` is, or is a reshaped view of (`h0.expand(N, -1)`: h0), else None."""
    if tensor.grad_fn is None:
        return tensor
    below = graph_tools.beneath_reshapes(tensor.grad_fn)
    return below.variable if op_name(below) == graph_tools.ACCUMULATE else None


def _left_as_it_was(last: tuple | None, rescaled: bool = False) -> bool:
    """Whether the gradient a backward pass left (`TorchProbe._representative_gradient`) is still there, the same
    tensor unchanged (or, `rescaled`, changed in place by a clipping function): what an optimiser step now applies is
    that pass's gradient alone, not one put together by hand (per-example gradients clipped and summed into `.grad`)."""
    if last is None:
        return False
    param, grad, version, _ = last
    return param.grad is not None and param.grad is grad() and (rescaled or param.grad._version == version)


def _negative_rate(optimizer) -> float | None:
    """The lowest learning rate among an optimiser's parameter groups that a scheduler drove below 0 from a rate given
    at 0 or above (`initial_lr`: a linear decay `LambdaLR(opt, lambda s: 1 - s / total)` run past `total`); else None.
    A rate given below 0 on purpose (a Lagrange multiplier's group, for ascent) is not one. A rate held as a GPU
    tensor is not read."""
    lowest = None
    for group in optimizer.param_groups:
        lr, given = group.get("lr"), group.get("initial_lr")
        readable = [x for x in (lr, given) if isinstance(x, (int, float)) or (isinstance(x, torch.Tensor) and x.is_cpu)]
        if len(readable) == 2 and float(given) >= 0 > float(lr):
            lowest = float(lr) if lowest is None else min(lowest, float(lr))
    return lowest


# Keys a scheduler or SWA writes into an optimiser's groups beside the optimiser's own settings: no typo of them.
SCHEDULER_KEYS = frozenset({"initial_lr", "max_lr", "min_lr", "base_lr", "max_momentum", "base_momentum", "swa_lr"})
# Names a learning rate or a momentum is written by elsewhere (Keras, JAX's optax, papers), too far from `lr` to be
# told by spelling alone
MEANT_SETTING = {"learning_rate": "lr", "learningrate": "lr", "lrate": "lr", "lr_rate": "lr", "mom": "momentum"}


def _plain_number(x) -> bool:
    """An int or a float as a hyperparameter holds it (not a bool, not a tensor: a rate on a GPU is not read)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _misspelt_setting(optimizer) -> dict | None:
    """A parameter group given its learning rate or momentum under a key the optimiser does not know
    (`{"params": ..., "learning_rate": 5e-2}`): torch.optim keeps any key in a group and reads only its own, so the
    group runs at the optimiser's default. {"param_group", "setting", "meant", "given", "in_effect"} of the first such
    key whose value differs from the one in effect, or None."""
    known = optimizer.defaults
    for index, group in enumerate(optimizer.param_groups):
        for key, given in group.items():
            if key in known or key == "params" or key in SCHEDULER_KEYS or not isinstance(key, str):
                continue
            meant = _meant_setting(key, known)
            in_effect = group.get(meant) if meant is not None else None
            numbers = _plain_number(given) and _plain_number(in_effect)
            if numbers and given != in_effect:
                return {"param_group": index, "setting": key, "meant": meant, "given": given, "in_effect": in_effect}
    return None


def _meant_setting(key: str, known) -> str | None:
    """`lr` or `momentum`, when an unknown key is one of them misspelt or named as elsewhere; else None."""
    lowered = key.lower()
    meant = MEANT_SETTING.get(lowered) or next(
        iter(difflib.get_close_matches(lowered, ["lr", "momentum"], 1, 0.8)), None
    )
    return meant if meant in known else None


def _swapped_betas(optimizer) -> list[float] | None:
    """[beta1, beta2] of the first parameter group whose Adam-style betas have beta1 > beta2 (`betas=(0.999, 0.9)`),
    or None. beta1 averages the gradient, beta2 its square; the square must be remembered longer."""
    for group in optimizer.param_groups:
        betas = group.get("betas")
        if isinstance(betas, (tuple, list)) and len(betas) == 2 and all(isinstance(b, (int, float)) for b in betas):
            if betas[0] > betas[1]:
                return [float(betas[0]), float(betas[1])]
    return None


def _momentum_not_decaying(optimizer) -> dict | None:
    """{"momentum", "dampening"} of the first parameter group whose momentum is 1 or more (`SGD(momentum=1)`, momentum
    read as an on/off flag), or None. The velocity v = momentum * v + (1 - dampening) * g then never forgets: with
    dampening 0 it is the sum of every gradient so far, with dampening 1 no gradient ever enters it."""
    for group in optimizer.param_groups:
        momentum = group.get("momentum")
        if _plain_number(momentum) and momentum >= 1:
            dampening = group.get("dampening", 0)
            return {"momentum": float(momentum), "dampening": float(dampening) if dampening is not None else 0.0}
    return None


# optimisers that divide each step by a running size of the gradient: a loss multiplied by a constant moves them alike
SIZE_NORMALISING_NAMES = "Adam AdamW Adamax NAdam RAdam RMSprop Adagrad Adadelta SparseAdam Adafactor Rprop Muon"
SIZE_NORMALISING = tuple(getattr(torch.optim, n) for n in SIZE_NORMALISING_NAMES.split() if hasattr(torch.optim, n))


def _lr_schedule(optimizer) -> tuple[float, float] | None:
    """(lr, initial_lr) of the optimiser's first parameter group, when a learning-rate scheduler has set `initial_lr`
    (the `torch.optim.lr_scheduler` schedules do; `ReduceLROnPlateau` does not): the rate in effect, and the one the
    optimiser was given."""
    group = optimizer.param_groups[0] if optimizer.param_groups else {}
    lr, initial = group.get("lr"), group.get("initial_lr")
    if initial is None or lr is None:
        return None
    if any(isinstance(x, torch.Tensor) and x.device.type != "cpu" for x in (lr, initial)):
        return None  # (a tensor learning rate on a GPU, `capturable`: reading it would wait for the device)
    lr, initial = float(lr), float(initial)
    return (lr, initial) if initial > 0 and math.isfinite(lr) else None


def _one_cycle_max_lr(optimizer) -> float | None:
    """The peak rate `OneCycleLR` set in the first parameter group (`max_lr`, beside its `initial_lr`), or None."""
    group = optimizer.param_groups[0] if optimizer.param_groups else {}
    peak = group.get("max_lr")
    if "initial_lr" not in group or isinstance(peak, bool) or not isinstance(peak, (int, float)):
        return None
    return float(peak) if peak > 0 else None


def _unused_name(name: str, taken) -> str:
    """`name`, or `name_2`, `name_3`, ... when it is taken: a second model of the same class, or a model's copy
    (Reptile deep-copies its model at every task: hundreds of names, each kept short)."""
    if name not in taken:
        return name
    number = 2
    while f"{name}_{number}" in taken:
        number += 1
    return f"{name}_{number}"


def _decayed_rate(optimizer) -> tuple[float, float, float] | None:
    """(lr_decay, lr, the rate in effect) of the optimiser's first parameter group, when it decays its own rate
    (Adagrad's `lr_decay`: the step t uses lr / (1 + (t - 1) lr_decay)), else None. `Adagrad(params, 0.05, 0.9)`, an
    SGD line with its class renamed, makes the momentum 0.9 a decay: the rate is a hundredth of lr after 111 steps."""
    group = optimizer.param_groups[0] if optimizer.param_groups else {}
    decay, lr = group.get("lr_decay"), group.get("lr")
    if not isinstance(decay, (int, float)) or not decay > 0 or not isinstance(lr, (int, float)) or not lr > 0:
        return None
    steps = optimizer.state.get(group["params"][0], {}).get("step") if group.get("params") else None
    if steps is None:  # (before its first step)
        return None
    if isinstance(steps, torch.Tensor):
        if steps.device.type != "cpu":  # (`capturable`: reading it would wait for the device)
            return None
        steps = steps.item()
    return float(decay), float(lr), float(lr) / (1 + float(steps) * float(decay))  # (this step is number steps + 1)


GROUP_RATE_SPREAD = 1000.0  # parameter groups' learning rates this many times apart are looked at (by module)


def _group_rates(optimizer, label_of) -> list | None:
    """[{"lr", "modules"}] of an optimiser's parameter groups, lowest rate first, when their learning rates lie
    GROUP_RATE_SPREAD times apart or more (layer-wise rates decayed by 0.1 where 0.9 was meant); else None."""
    rates = [group.get("lr") for group in optimizer.param_groups]
    if len(rates) < 2 or not all(isinstance(lr, (int, float)) and lr > 0 for lr in rates):
        return None
    if max(rates) < GROUP_RATE_SPREAD * min(rates):
        return None
    groups = []
    for group in optimizer.param_groups:
        labels = sorted({entry[2] for entry in map(label_of, group["params"]) if entry is not None})
        groups.append({"lr": float(group["lr"]), "modules": labels})
    return sorted(groups, key=lambda group: group["lr"])


# optimisers whose step divides by sqrt(v) + eps, v a running mean of each weight's squared gradient (not Adagrad's
# running sum, which outgrows any eps)
EPS_DIVIDING = tuple(getattr(torch.optim, n) for n in "Adam AdamW Adamax NAdam RAdam RMSprop".split())
LARGE_EPS = 1e-4  # (an eps below this is never far above a gradient's size: not looked at)


COUPLED_DECAY = tuple(getattr(torch.optim, n) for n in "Adam Adamax NAdam RAdam RMSprop Adagrad".split())


def _coupled_decay(optimizer) -> dict | None:
    """{optimizer, weight_decay} of an adaptive optimiser given a weight decay it adds to the gradient (Adam's L2, not
    AdamW's decoupled decay): the decay is then divided by sqrt(v) with the gradient, and where gradients are small it
    moves the weights by the full step size towards 0. None otherwise."""
    if not isinstance(optimizer, COUPLED_DECAY) or isinstance(optimizer, torch.optim.AdamW):
        return None
    groups = [group for group in optimizer.param_groups if not group.get("decoupled_weight_decay", False)]
    largest = max((float(group.get("weight_decay") or 0.0) for group in groups), default=0.0)
    return {"optimizer": type(optimizer).__name__, "weight_decay": largest} if largest > 0 else None


def _large_eps(optimizer) -> float | None:
    """The largest `eps` of an optimiser that divides its steps by sqrt(v) + eps (Adam's, RMSprop's), when
    it is at least LARGE_EPS; else None."""
    if not isinstance(optimizer, EPS_DIVIDING):
        return None
    values = [group.get("eps") for group in optimizer.param_groups]
    largest = max((float(eps) for eps in values if isinstance(eps, (int, float))), default=0.0)
    return largest if largest >= LARGE_EPS else None


def _eps_against_gradient(eps: float, params: list, grad_norms: list) -> dict | None:
    """{"eps", "gradient_rms"}: the optimiser's eps beside the size of a typical gradient entry (each parameter's
    gradient norm over the square root of its entry count, the median over the parameters with a gradient)."""
    sizes = sorted(g / math.sqrt(p.numel()) for (_, _, p), g in zip(params, grad_norms) if g and p.numel())
    if not sizes:
        return None
    return {"eps": eps, "gradient_rms": sizes[len(sizes) // 2]}


def _eps_rounding_to_zero(optimizer) -> dict | None:
    """{"eps", "dtype"} when a parameter group's `eps` (Adam's, RMSprop's: added to the square root of the running
    mean of squared gradients before dividing by it) is exactly 0 in the dtype of its parameters: Adam's default 1e-8
    in float16, whose smallest number is 6e-8. Where a gradient's square underflows to 0, the step is 0 / 0 = NaN."""
    for group in optimizer.param_groups:
        eps, params = group.get("eps"), group.get("params") or []
        if not isinstance(eps, float) or not eps > 0 or not params:
            continue
        dtype = params[0].dtype
        if dtype in HALF_PRECISION and torch.tensor(eps, dtype=dtype).item() == 0:
            return {"eps": eps, "dtype": str(dtype).removeprefix("torch.")}
    return None


def _state_kept(optimizer) -> list[str]:
    """What an optimiser keeps per parameter from one step to the next (`exp_avg`, `momentum_buffer`): the tensors in
    its state, its step count aside. Empty for plain SGD."""
    kept = set()
    for state in list(optimizer.state.values())[:8]:
        kept.update(key for key, value in state.items() if isinstance(value, torch.Tensor) and value.dim() > 0)
    return sorted(kept)


def _dense_gradients(parameters: list) -> list[torch.Tensor]:
    """The parameters' gradients that are plain floating-point tensors (what the clipping statistics read)."""
    grads = [getattr(p, "grad", None) for p in parameters]
    return [g for g in grads if g is not None and _dense(g) and g.is_floating_point()]


def _total_norm(grads: list[torch.Tensor]) -> torch.Tensor:
    """The norm of all the gradients taken as one vector, in float32 at least."""
    return torch.linalg.vector_norm(torch.stack([norm(g).float() for g in grads]))


def _activation_function(node, op: str, on_loss: bool) -> str | None:
    """The activation an autograd node computes, when the graph walk should tally it as one: a ReLU (not one on the
    loss: that is a margin loss's hinge, a gating op), sigmoid, tanh, hardswish, hardsigmoid, ReLU6, which
    PyTorch computes as hardtanh(z, 0, 6), and any ReLU-n, hardtanh or clamp to (0, n) (a clamp to another range
    is a gating op), or a LeakyReLU whose negative slope is 0, a ReLU by another name (with a slope, no unit can
    die: it is not tallied)."""
    if op in ("hardtanh", "clamp"):  # (clamp(z, 0, n) is a ReLU-n: flat below 0 and above n; any other, a gating op)
        ceiling = None if on_loss else _relu_ceiling(node)
        return None if ceiling is None else "relu6" if ceiling == 6 else "relu_n"
    if op == "leaky_relu":
        return "leaky_relu" if _has_no_slope(node) and not on_loss else None
    if op not in ACTIVATION_OPS or (op == "relu" and on_loss):
        return None
    return op


def _has_no_slope(node) -> bool:
    """A leaky_relu node whose negative slope is 0: `nn.LeakyReLU(0)`, `negative_slope=0.0`."""
    return graph_tools.saved_value(node, "_saved_negative_slope") == 0


def _relu_ceiling(node) -> float | None:
    """n, for a hardtanh or clamp node that is a ReLU-n: hardtanh(z, 0, n) or clamp(z, 0, n), n finite and above 0
    (ReLU6 is n = 6; NAM's ExU units and hard-concrete gates clamp to [0, 1]). None for any other range."""
    saved = graph_tools.saved_value
    if op_name(node) == "hardtanh":
        low, high = saved(node, "_saved_min_val"), saved(node, "_saved_max_val")
    else:
        low, high = saved(node, "_saved_min"), saved(node, "_saved_max")
    if isinstance(low, (int, float)) and isinstance(high, (int, float)) and low == 0 and 0 < high < math.inf:
        return float(high)
    return None


def _not_dense(*values) -> bool:
    """Whether any tensor in `values` (tensors, tuples or lists of them) is sparse or nested. The statistics read
    dense tensors only; on another layout they raise, which is no error of the doctor's: such a tensor goes
    unmeasured. (Asked only once something has raised, so that the usual dense tensors cost nothing more.)"""
    return any(not _dense(t) for value in values for t in _tensors(value))


# a loss that squashes its input itself -> the squashing a model's output must then not have already
# the loss's own squashing -> the functions whose outputs it must not be given (a sigmoid before cross_entropy too)
SIMILARITY = ("mm", "bmm")  # the products a contrastive loss's similarity matrix is made by (z1 @ z2.T, an einsum)
PENALTY_ROOTS = ("add", "sub", "neg", "rsub", "mul", "div")  # a root that may subtract a penalty: a sum, or scaled

SQUASHED_BY_LOSS = {"log_softmax": ("softmax", "sigmoid"), "binary_cross_entropy_with_logits": ("sigmoid", "softmax")}
SQUASHED_BY_LOSS["sub"] = ("softmax",)  # (z - logsumexp(z): `Categorical(logits=p)` given probabilities)


def _probabilities_into_loss(loss_nodes, names) -> tuple[str, str, int] | None:
    """A loss that applies a softmax (cross_entropy's log_softmax) or a sigmoid (binary_cross_entropy_with_logits)
    to an input that is a softmax's or a sigmoid's output already: (that site, the function, the number of classes).
    The model outputs probabilities (or a sigmoid's per-class scores, for cross_entropy: "sigmoid then softmax"),
    and the loss squashes them a second time. Or a distribution built on them as logits (`Categorical(logits=p)`,
    whose z - logsumexp(z) is a log_softmax): "softmax as logits"."""
    for node in loss_nodes:
        op = op_name(node)
        functions = SQUASHED_BY_LOSS.get(op)
        if functions is None or not node.next_functions or node.next_functions[0][0] is None:
            continue
        if op == "sub" and graph_tools.minus_its_logsumexp(node) is None:
            continue
        # (its first input is what it squashes: the logits; the others, targets and weights)
        below = graph_tools.beneath_reshapes(node.next_functions[0][0], also=graph_tools.SELECTIONS)
        function = op_name(below)
        if function not in functions:
            continue
        if op == "binary_cross_entropy_with_logits" and function == "sigmoid":
            classes = 2
        else:
            softmax = node if op == "log_softmax" else below  # (the softmax over the classes)
            try:
                classes = int(graph_tools.saved_value(softmax, "_saved_result").shape[graph_tools.saved_dim(softmax)])
            except (AttributeError, RuntimeError, IndexError):  # (its saved values already freed)
                return None
        site = names.get(below) or f"{function} after {graph_tools.nearest_upstream(below, names) or 'input'}"
        if op == "sub":
            function = "softmax as logits"
        elif op == "log_softmax" and function == "sigmoid":
            function = "sigmoid then softmax"
        elif op == "binary_cross_entropy_with_logits" and function == "softmax":
            function = "softmax then sigmoid"  # (one-hot targets per class, the model's softmax over them)
        return site, function, classes
    return None


# modules whose outputs hold their features on the last axis, whatever the axes before it
FEATURES_LAST = ("Linear", "LazyLinear", "Bilinear", "NonDynamicallyQuantizableLinear")


def _classes_on_another_axis(loss_nodes, names, infos) -> dict | None:
    """A loss's log_softmax over dim 1 of a layer's output of 3 or more axes whose features are on the last axis (a
    Linear's: (N, T, C)), that axis as long as dim 1, so that no shape error stopped it: `cross_entropy(logits, y)`
    with logits (N, T, C) where it takes the classes on dim 1, (N, C, T). The softmax then runs over the T positions.
    Or over dim 0 of a layer's (N, C) output, C > 1: a cross-entropy written by hand with `log_softmax(logits, dim=0)`,
    the softmax over the batch (`over_batch`; a ranking's (list, 1) scores, normalised over the list, are not this).
    Or over dim 1 of a decoder's steps stacked on dim 1, (N, T, C) with T == C (`stacked`: a pointer network's).
    {"layer", "shape", "dim"} or None."""
    for node in loss_nodes:
        if op_name(node) != "log_softmax" or not node.next_functions or node.next_functions[0][0] is None:
            continue
        # (a view that mixes the classes with the positions; not a layer's own output, which a Linear on 3-D input
        # makes by a view of its own, (N * T, C) as (N, T, C))
        mixed = None if names.get(node.next_functions[0][0]) else graph_tools.classes_mixed_by_view(node)
        if mixed is not None:
            return {"layer": graph_tools.nearest_upstream(node, names) or "input", **mixed, "mixed_by_view": True}
        below = node.next_functions[0][0]
        if op_name(below) == "stack" and getattr(below, "_saved_dim", None) == 1:  # (steps' outputs stacked on dim 1)
            shape, dim = graph_tools.output_shape(below), graph_tools.saved_dim(node)
            if shape is not None and len(shape) == 3 and dim % 3 == 1 and shape[1] == shape[2]:
                layer = names.get(below) or graph_tools.nearest_upstream(below, names) or "input"
                return {"layer": layer, "shape": list(shape), "dim": dim, "stacked": True}
        name = names.get(below)  # (the layer's own output: nothing reshaped or permuted it since)
        info = infos.get(name) if name is not None else None
        if info is None or info.kind not in FEATURES_LAST:
            continue
        try:
            shape, dim = tuple(graph_tools.saved_value(node, "_saved_result").shape), graph_tools.saved_dim(node)
        except (AttributeError, RuntimeError):  # (its saved values already freed)
            continue
        if len(shape) >= 3 and dim % len(shape) == 1 and shape[1] == shape[-1]:
            return {"layer": name, "shape": list(shape), "dim": dim}
        if len(shape) == 2 and dim % 2 == 0 and min(shape) > 1:
            return {"layer": name, "shape": list(shape), "dim": dim, "over_batch": True}
    return None


def _softmax_into_squared_error(loss_nodes, names) -> str | None:
    """The site of a softmax whose output `mse_loss` compares with its targets (a classifier's probabilities against
    one-hot targets), or None. The squared error's gradient reaches the logits only through the softmax's Jacobian,
    diag(p) - p p^T, small wherever the prediction is confident, right or wrong."""
    for node in loss_nodes:
        if op_name(node) != "mse_loss" or not node.next_functions or node.next_functions[0][0] is None:
            continue
        below = graph_tools.beneath_reshapes(node.next_functions[0][0], also=graph_tools.SELECTIONS)
        if op_name(below) == "softmax":
            return names.get(below) or f"softmax after {graph_tools.nearest_upstream(below, names) or 'input'}"
    return None


def _dropout_into_loss(loss_nodes, names, dropout_sites: dict) -> dict | None:
    """The dropout module (in training mode) whose output the loss reads directly: {"module", "p"}, or None. A
    dropout on the logits themselves zeroes a share p of the prediction at every step."""
    for node in loss_nodes:
        for child, _ in node.next_functions:
            name = names.get(child) if child is not None else None
            if name in dropout_sites:
                return {"module": name, "p": dropout_sites[name]}
    return None


def _saved_activation(node):
    """What an activation's node saved for its backward (its output, or for some its input), or None when it is no
    longer held."""
    try:
        result = graph_tools.saved_value(node, "_saved_result")
        return result if result is not None else graph_tools.saved_value(node, "_saved_self")
    except (RuntimeError, AttributeError):
        return None


def _norm_of_all(tensors) -> torch.Tensor:
    """The norm of the gradients an autograd node was given or returned, taken together (in float32 at least)."""
    present = [t for t in tensors if isinstance(t, torch.Tensor)]
    return torch.linalg.vector_norm(torch.stack([norm(t).float() for t in present]))


def _made_by_the_optimizer(optimizer, grad_norm: float | None) -> dict | None:
    """For a NaN the optimiser's step made from finite gradients (of norm `grad_norm`; None: not so): its class, and
    whether it is one of torch.optim's own (a custom one's arithmetic is the first suspect)."""
    if grad_norm is None or optimizer is None:
        return None
    custom = not type(optimizer).__module__.startswith("torch.")
    return {"optimizer": type(optimizer).__name__, "custom": custom, "grad_norm": float(f"{grad_norm:.3g}")}


def _one_time_step(module: nn.RNNBase, x) -> bool:
    """An RNN/LSTM/GRU's input holds a single time step: (N, 1, features) batch first, else (1, N, features)."""
    if not isinstance(x, torch.Tensor) or x.dim() not in (2, 3):
        return False
    time_axis = 1 if module.batch_first and x.dim() == 3 else 0
    return x.shape[time_axis] == 1


def _fed_own_output(state: StepState, name: str, args) -> str | None:
    """How a module called with a state after its input (`cell(x, h)`, `cell(x, (h, c))`) got it: its own last output
    with its gradient ("carried"), that output detached, all of the state ("cut": backprop through time stops here),
    or none of its own (None: a sequence starts, from zeros or a state from elsewhere)."""
    hidden = [t for t in _tensors(args[1:]) if t.is_floating_point() and _dense(t)]
    own = [t for t in hidden if name in state.output_memory.makers(t)]
    if any(t.requires_grad for t in own):
        return "carried"
    return "cut" if own and len(own) == len(hidden) else None


def _parts_detached(state: StepState, name: str, args) -> tuple[int, ...]:
    """Of a state of several parts, all the cell's own last output and carried on with its gradient, the parts given
    detached: `cell(x[t], (h, c.detach()))` -> (1,), the cell state's path through time cut at every call."""
    hidden = [t for t in _tensors(args[1:]) if t.is_floating_point() and _dense(t)]
    if len(hidden) < 2 or not all(name in state.output_memory.makers(t) for t in hidden):
        return ()
    return tuple(i for i, t in enumerate(hidden) if not t.requires_grad)


def _tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        out = []
        for v in value:
            out.extend(_tensors(v))
        return out
    return []


class OutputMemory:
    """Where the modules' outputs of a step live, to tell a module that received an earlier output's memory without
    its history (a graph cut: `.detach()`, `.data`, a round trip through NumPy) from one that received memory that
    was freed and then used again (fresh data, as likely). Holds PyTorch's weak references to the storages, so no
    memory is kept alive; `clear` lets them go."""

    def __init__(self):
        # data pointer -> (module name, weak reference to its storage, the first module that output it: a wrapper
        # that returns its part's output unchanged notes it again, after the part)
        self.outputs: dict[int, tuple[str, int, str]] = {}

    def note(self, tensor: torch.Tensor, name: str) -> None:
        storage = tensor.untyped_storage()
        pointer = storage.data_ptr()
        earlier = self.outputs.get(pointer)
        first = name
        if earlier is not None:
            if not torch.UntypedStorage._expired(earlier[1]):  # (the same memory, alive: the same output, passed up)
                first = earlier[2]
            torch.UntypedStorage._free_weak_ref(earlier[1])
        self.outputs[pointer] = (name, storage._weak_ref(), first)

    def producer(self, tensor: torch.Tensor) -> str | None:
        """The module whose output `tensor`'s memory is, if that output is still alive."""
        made = self.makers(tensor)
        return made[0] if made else None

    def makers(self, tensor: torch.Tensor) -> tuple[str, ...]:
        """The module whose output `tensor`'s memory is, and the first that output it (its part, for a wrapper)."""
        entry = self.outputs.get(tensor.untyped_storage().data_ptr())
        if entry is None or torch.UntypedStorage._expired(entry[1]):
            return ()
        return entry[0], entry[2]

    def clear(self) -> None:
        for _, reference, _ in self.outputs.values():
            torch.UntypedStorage._free_weak_ref(reference)
        self.outputs.clear()


@dataclass
class CustomBackwardTest:
    """One custom autograd.Function's backward, tested on a sampled step: the node it made, what the test measures
    (deferred indices, filled by its gradient hook), and the parameters given to it whose gradient it returned None."""

    node: object  # (held for the step only: released with the state)
    after: str | None  # the module before it
    call: object  # the CustomCall kept by Function.apply's wrapper, or None
    flags_at: list | None = None  # per input: does its gradient stay the same when grad_output is -2 times?
    grad_output_at: int | None = None
    grad_input_at: int | None = None
    grad_output_one_at: int | None = None  # (the loss itself: every grad_output is 1)
    against_forward_at: int | None = None  # the numbers of its backward against its forward's finite differences
    dropped: list = field(default_factory=list)  # parameters given to it whose gradient its backward returned None


@dataclass
class GateTally:
    """One gating op's site on a sampled step: what its gradient hooks measure, and what the graph walk read of it."""

    op: str
    site: str
    floor: bool  # its lower bound is 0 (graph_tools.floors_at_zero)
    reads: str | None  # (on the loss) the weighted layer whose output it reads directly
    pairs: list = field(default_factory=list)  # (deferred blocked, deferred arriving) per call
    elements: int = 0
    hinge_at: int | None = None  # (a margin loss's hinge) deferred mean of its output
    zero_labels_at: int | None = None  # ... deferred share of its labels that are 0, all being 0 or 1 (else -1)
    lower_bound: float | None = None  # (a clamp on the loss with a lower bound only, above 0: free bits) that bound


class Ticket:
    """What a sampled step's hooks hold: the step's state, until the step ends (then None).

    Hooks stay on autograd nodes and tensors after the step, for as long as PyTorch keeps those. Holding the
    state through a ticket lets the step end with one assignment (`StepState.release`), and a hook that fires
    after its step (a second backward through a retained graph) finds the ticket empty and does nothing.
    """

    __slots__ = ("state",)

    def __init__(self, state: StepState):
        self.state: StepState | None = state


_step_keys = itertools.count()


@dataclass(slots=True)
class StepState:
    """What one sampled step has gathered so far (device tensors, fetched at its end)."""

    step: int = 0  # the training step this state measures
    loss_scaled: bool = False  # its loss came from a gradient scaler (torch.amp.GradScaler.scale)
    loss_scale_at: int | None = None  # deferred index of that scaler's factor (gradients in the graph carry it)
    stepped_scaled: bool = False  # the optimiser stepped on them before the scaler unscaled them (no scaler.step)
    deferred: Deferred = field(default_factory=Deferred)
    order: dict = field(default_factory=dict)  # module name -> forward position
    # Written into the graph's nodes (see NodeTags), so that the state holds no node between forward and backward:
    names: NodeTags = field(init=False)  # node -> name of the module whose output it made
    recurrent_outputs: NodeTags = field(init=False)  # node -> name of the recurrent module whose output it made
    enters: NodeTags = field(init=False)  # node -> names of the recurrent modules its output is an input of
    calls: NodeTags = field(init=False)  # node -> (weighted module, which of its calls in the step) that made it
    recurrent: set = field(default_factory=set)  # names of the recurrent modules that ran (with their outputs)
    ran_without_grad: set = field(default_factory=set)  # names of the modules that ran under no_grad (or inference)
    in_reentrant_checkpoint: set = field(default_factory=set)  # ... of them, those run by a reentrant checkpoint
    output_memory: OutputMemory = field(default_factory=OutputMemory)  # where the outputs with grad live
    # where the modules' outputs without grad live (a parameterless preprocessing module's, a frozen layer's): a
    # non-finite value the graph reads from outside it is named by the module that output it
    made_without_grad: OutputMemory = field(default_factory=OutputMemory)
    # where the draws of distributions whose parameters have a graph live (`sample()`, not `rsample()`), and which
    # module read one: {distribution class: module}
    drawn: OutputMemory = field(default_factory=OutputMemory)
    decoded_draws: dict = field(default_factory=dict)
    # site -> (writes, deferred index of the writes to an index written before): an index_put or index_copy
    rows_written_twice: dict = field(default_factory=dict)
    out_grad_norms: list = field(default_factory=list)  # (module name, deferred index) in the order they arrived
    call_counts: dict = field(default_factory=dict)  # weighted module name -> its calls in the step
    calls_reaching_loss: dict = field(default_factory=dict)  # ... -> (calls, [which of them the backward reaches])
    time_norms: dict = field(default_factory=dict)  # module name -> deferred vector index
    time_padding: dict = field(default_factory=dict)  # ... of the share of all-zero inputs at each time step
    # an nn.LSTM's or nn.GRU's name -> deferred mean bias of the gate that keeps its state (forget, update), layer 0
    keep_gate_bias: dict = field(default_factory=dict)
    # the first weighted layer called: (its name, deferred index of its outputs' spread across the batch), or ()
    input_spread: tuple | None = None
    input_scale: tuple | None = None  # the first weighted Linear's input: (name, deferred largest, smallest column rms)
    layer_spreads: dict = field(default_factory=dict)  # on the first sampled steps: each weighted layer's, the same
    seq_first_inputs: dict = field(default_factory=dict)  # the input shape of each layer taking (sequence, batch, ...)
    cell_calls: dict = field(default_factory=dict)  # cell module name -> [deferred index or None] per call
    stepped_calls: dict = field(default_factory=dict)  # RNN/LSTM/GRU name -> its calls on one time step given a state
    cell_cut_calls: dict = field(default_factory=dict)  # cell module name -> calls fed its own last output, detached
    cell_carried_calls: dict = field(default_factory=dict)  # ... -> calls fed it with its gradient (_note_cell_state)
    cell_parameter_calls: dict = field(default_factory=dict)  # ... -> calls given a parameter for a state (learned h0)
    cell_parts_cut: dict = field(default_factory=dict)  # ... -> (carried calls with parts detached, which parts)
    # any other module called with more than one argument -> [calls, calls fed its own last output detached, ... with
    # its gradient, its kind, its parts, calls given a parameter for a state]: a recurrent cell written by hand
    # (`h, c = cell(x[:, t], (h, c))`)
    looped_calls: dict = field(default_factory=dict)
    retained_graph: bool = False  # a backward of this step kept its graph (retain_graph=True)
    model_modes: dict = field(default_factory=dict)  # model with batch norms or dropouts -> ran in training mode
    # the modules whose outputs of the first sampled step this step's backward reached, and that step (see _walk_graph)
    earlier_graph: tuple | None = None
    loss_reads: set = field(default_factory=set)  # modules whose outputs the loss reads directly (no module between)
    activations: dict = field(default_factory=dict)  # site -> ActivationTally
    gates: dict = field(default_factory=dict)  # "op@site" -> GateTally
    nan_prone: list = field(default_factory=list)  # (node, label) of each op hooked for the NaN check
    log_of_probabilities: dict | None = None  # a log of a softmax's (or sigmoid's) output: {"log", "of", "at"}
    clamped_to_the_edge: dict | None = None  # acos/asin of a clamp to [-1, 1]: {"op", "bounds", "at"}
    nan_checks: list = field(default_factory=list)  # (deferred index, node, label) in backward order
    roots: list = field(default_factory=list)  # the graph's root nodes (to find where a NaN flowed, if one is born)
    cuts: set = field(default_factory=set)
    input_nodes: dict = field(default_factory=dict)  # id(module) -> (id of its (one) input's grad_fn, its name)
    read_by_loss: set = field(default_factory=set)  # activation sites the loss reads directly too (a penalty on them)
    # ids of the nodes that made the tensor inputs of modules called with several (a cell's (x, h)), early on
    module_inputs: set = field(default_factory=set)
    seen_nodes: set = field(default_factory=set)
    params: list = field(default_factory=list)  # (name, module label, tensor) measured at the optimiser step
    samples: ParameterSamples | None = None  # their sampled entries (for the update/weight ratio)
    not_applied: dict | None = None  # at an optimiser step: parameters with a gradient no optimiser steps -> module
    held_by_idle_optimizer: dict = field(default_factory=dict)  # ... held by an optimiser never stepped -> its name
    outside_reached: int = 0  # ... and of the tensors the optimisers step outside the model, those with a gradient
    master_copies: bool = False  # ... which are master weights the model's parameters are copied from, by hand
    stepped_outside: int = 0  # ... and parameters the optimisers step that belong to no watched model
    # (max_norm, deferred index of the norm measured, given an empty generator?, called after an optimiser step
    # before any backward?, on gradients still scaled by a GradScaler?) of the step's clip_grad_norm_ with the
    # smallest max_norm
    clipping: tuple | None = None
    # (clip_value, deferred indices of the gradients' norm before and of the entries beyond the cap, how many entries,
    # deferred index of the norm after) of the step's clip_grad_value_ with the smallest cap
    value_clipping: tuple | None = None
    loss_ops: set = field(default_factory=set)  # names of the operations between the model's outputs and the loss
    dropouts: dict = field(default_factory=dict)  # dropout module name -> (its p, elements), when p >= 0.8
    dropout_sites: dict = field(default_factory=dict)  # every dropout module that ran in training mode -> its p
    dropout_into_loss: dict | None = None  # ... the one whose output the loss reads: {"module", "p"}
    # backward passes of the step that followed another with no optimiser step between, and of those, how many found
    # the gradients reset since (a zero_grad() inside a loop of micro-batches); and the first root's constant scale
    backward_pairs: int = 0
    reset_between_backwards: int = 0
    root_scale: float | None = None
    summed_beside_a_mean: dict | None = None  # a loss called with reduction="sum" beside a mean one (see torch_graph)
    loss_term_weights: list | None = None  # the constant weighting each term of the root's sum (see torch_graph)
    # ... whether the weights moved between those passes (SAM's ascent step), and whether the step applied the last
    # pass's gradient just as that pass left it (not replaced or changed: the others' are then thrown away)
    weights_moved_between_backwards: bool = False
    last_gradient_stepped: bool = False
    root_ops: set = field(default_factory=set)  # the operations at the roots of the step's backward passes
    # passes whose root picks a score off a module's output, (module, the ops), and those whose root is a loss (its op)
    score_passes: list = field(default_factory=list)
    loss_passes: list = field(default_factory=list)
    # (site, function, classes) of a softmax or sigmoid whose output the loss squashes again (_probabilities_into_loss);
    # or of a softmax a hand-written cross-entropy reads without its log, with the deferred flag of its target's rows
    probabilities_into_loss: tuple | None = None
    # a log_softmax over dim 1 of a Linear's (N, T, C) output, T == C (_classes_on_another_axis): {"layer", ...}
    classes_on_another_axis: dict | None = None
    # cross_entropy over z @ z.T with the diagonal for targets (graph_tools.diagonal_of_a_self_similarity)
    self_similarity: dict | None = None
    # a loss pulling a predictor's output towards a module's output that the predictor reads, neither detached (SimSiam
    # without its stop-gradient): {"predictor", "target"} (graph_tools.predictor_without_stop_gradient)
    unstopped_target: dict | None = None
    confined_logits: dict | None = None  # cross_entropy over cosine similarities times a constant (graph_tools)
    softmax_into_squared_error: str | None = None  # ... or that `mse_loss` compares with targets: its site
    identity_activations: set = field(default_factory=set)  # sites of LeakyReLUs whose negative slope is 1
    batchnorm_never_estimated: dict = field(default_factory=dict)  # batch norms in eval mode, never estimated
    model_outputs: set = field(default_factory=set)  # ids of the nodes that made a watched model's own output
    norm_over_one_value: dict = field(default_factory=dict)  # norm layers whose every group holds one value
    # layer -> (the layer whose product reads its output as made, share of exact zeros there: see zeros_among_live)
    zeros_outside_autograd: dict = field(default_factory=dict)
    cancelled_straight_through: dict = field(default_factory=dict)  # op -> the layer before: z + (round(z) - z)
    turned_straight_through: dict = field(default_factory=dict)  # op -> the layer before: round(z) - z + z.detach()
    step_size_normalised: bool = False  # the training optimiser divides its steps by the gradient's size (Adam, ...)
    # a loss multiplied by a large constant: the norm of one gradient as the last backward left it, and the deferred
    # index of "it differs at the optimiser step" (divided back, clipped: not what backward made)
    gradient_sample: torch.Tensor | None = None
    gradients_changed_at: int | None = None
    # (once the gradients have been seen changed by hand before a step) the representative parameter and some entries of
    # its gradient as the last backward left them; at the step, (its label, deferred indices of the norm ratio and the
    # cosine of the gradient applied to that one): see _compare_with_backward_gradient
    gradient_from_backward: tuple | None = None
    gradient_replaced: tuple | None = None
    gradients_changed_before_step: bool = False  # ... or the gradient was cleared or replaced before the step
    grad_without_graph: bool = False  # torch.autograd.grad was called without create_graph=True during the step
    grad_of_inputs: bool = False  # ... or with it, with respect to tensors other than the parameters
    input_grad_sizes: list = field(default_factory=list)  # ... deferred indices of each such result's largest |entry|
    gate_means: dict = field(default_factory=dict)  # sigmoid gate's site -> deferred index of its output's mean
    constant_loss_term: bool | None = None  # the backward's root adds a term that has no graph (a constant to it)
    prediction_broadcast: dict | None = None  # a module's (N, 1) output compared with an (N,) target, as (N, N)
    # a regression loss's prediction straight out of a ReLU/sigmoid/tanh: (graph_tools.targets_out_of_reach, deferred
    # index of the share of targets outside the range it can reach)
    targets_out_of_reach: tuple | None = None
    gather_across_batch: tuple | None = None  # the loss gathers a module's output along the batch axis (graph_tools)
    no_branch_taken: tuple | None = None  # where(c1, a, 0) + where(c2, b, 0) on the loss: (neither, c2's share) at
    summed_loss: dict | None = None  # the backward's first root is a loss with reduction="sum" (graph_tools)
    # a regression loss: (its name, deferred indices of its targets' and its predictions' root mean square)
    target_scale: tuple | None = None
    # a huber_loss: (its delta, deferred indices of the share of errors past delta and of their mean size)
    huber: tuple | None = None
    multi_hot_margin: tuple | None = None  # (classes, deferred: 1.0 when a multilabel_margin_loss's target is 0/1 only)
    # binary_cross_entropy_with_logits given a pos_weight: (deferred indices of its smallest entry, of the share of
    # the targets that are positive, and of those weighted 0)
    zero_pos_weight: tuple | None = None
    coupled_decay: dict | None = None  # an adaptive optimiser's weight decay added to the gradient (Adam, not AdamW)
    zero_class_weight: tuple | None = None  # (classes, deferred: classes weighted 0, the share of examples of theirs)
    # a cross-entropy given class probabilities: deferred indices of their rows' mean sum, of the share of rows that
    # sum to more than 1, and of "every entry is 0 or 1"
    soft_targets: tuple | None = None
    # ctc_loss's input: deferred indices of the median over frames of its logsumexp over the classes (0 for
    # log-probabilities) and of its largest entry, and the number of classes
    ctc_input: tuple | None = None
    ctc_targets: dict | None = None  # ... and its targets, against its blank and its input lengths
    # attention's softmax site -> (entries per row, the scores' constant factor, deferred indices of its derivative's
    # capacity (see _look_at_attention) and of the rows' mean largest probability)
    attention: dict = field(default_factory=dict)
    # ... and the share of the gradient arriving at it that is the same along its axis (a tensor, the largest over the
    # site's softmaxes; its deferred index once the step is over)
    attention_gradient: dict = field(default_factory=dict)
    # self-attentions whose masks were read: site -> (index of the share of queries that may read the next position,
    # of the furthest ahead one may, the number of positions, index of the share of the loss's targets that are the
    # next tokens of the sequence it reads or None, extras: a convolution's {"convolution": its settings}, a fused
    # attention's {"float_mask": indices of its float mask's least and largest entries})
    lookahead: dict = field(default_factory=dict)
    attention_examined: bool = False
    # the tokens the first nn.Embedding with a padding_idx read: (their indices, padding_idx); and, a per-token loss
    # multiplied by a mask of their shape: deferred indices of the share of the positions it keeps that are padding,
    # and of the share of the real tokens it keeps
    token_ids: tuple | None = None
    loss_mask: tuple | None = None
    # embeddings with a padding_idx, on the first sampled steps: name -> (the ids they read, padding_idx); then
    # name -> (padding_idx, deferred indices of `padding_idx_check`'s three numbers)
    padding_ids: dict = field(default_factory=dict)
    padding_checks: dict = field(default_factory=dict)
    # token embeddings given (batch, positions) ids: name -> True (None: called twice, not read); and the norm of the
    # gradient at their output at each position: name -> deferred vector index
    position_ids: dict = field(default_factory=dict)
    position_grads: dict = field(default_factory=dict)
    reversal_checks: dict = field(default_factory=dict)  # gradient reversal Function -> [after, deferred cosine]
    unheld_values: dict = field(default_factory=dict)  # loss weight nothing holds back -> deferred vector of it
    # a classifier's targets: (batch size, classes, deferred indices of the distinct classes in the batch and of the
    # most frequent one)
    batch_classes: tuple | None = None
    base_rate: tuple | None = None  # a binary cross-entropy's (deferred share of positive targets, all 0 or 1?)
    relu_lowest: dict = field(default_factory=dict)  # ReLU site -> deferred index of its saved output's minimum
    regression_rows: int | None = None  # a regression's examples: the rows of its loss's prediction (see a softmax)
    # learnable-looking tensors in the graph that are not the watched parameters: attribute path -> (kind, a new
    # object since the last look?, deferred index of "its entries changed since first seen")
    loose_leaves: dict = field(default_factory=dict)
    negated_loss: str | None = None  # the non-negative loss function whose negative is the backward's root
    kl_div_of_probabilities: str | None = None  # the op whose probabilities kl_div was given as log-probabilities
    previous_token_targets: int | None = None  # deferred: the share of the targets that are the input one step back
    # deferred: the share of the targets that are the input at their own position, the share counted, and how many
    # grids of tokens were embedded
    unshifted_targets: tuple | None = None
    kl_div_target_below_zero: int | None = None  # deferred: 1.0 when a kl_div's target has a negative entry (logits)
    # a penalty on the weights the root subtracts (`ce - lam * sum(w ** 2)`): {"form", "parameters"}
    subtracted_penalty: dict | None = None
    log_probability_added: str | None = None  # log-probabilities alone the root adds (log_probability_added)
    target_log_probability: tuple | None = None  # a loss of its own's (deferred mean log p(target), classes, share
    # of the examples above chance)
    root_loss: str | None = None  # ... or that is the root itself (times positive constants)
    maximizes: bool = False  # the training optimiser was made with maximize=True
    swapped_betas: list | None = None  # ... with Adam's betas the wrong way round, (beta1, beta2), beta1 > beta2
    misspelt_setting: dict | None = None  # ... with a group's lr or momentum under a key it does not know
    momentum_not_decaying: dict | None = None  # ... with a momentum of 1 or more: {"momentum", "dampening"}
    negative_lr: float | None = None  # ... with a learning rate below 0 in a parameter group (the lowest)
    lr_schedule: tuple | None = None  # ... its first group's (lr, initial_lr), when a scheduler set initial_lr
    lr_by_hand: tuple | None = (
        None  # ... or, with no scheduler, (lr, the lr at its first sampled step) once they differ
    )
    one_cycle_max_lr: float | None = None  # ... its first group's peak rate, when OneCycleLR set one (`max_lr`)
    schedule_not_applied: dict | None = None  # ... with none, a scheduler stepped over an optimiser that never steps
    line_search: bool = False  # ... it is LBFGS, given a closure: its line search chooses the step's size
    decayed_rate: tuple | None = None  # ... its first group's (lr_decay, lr, rate in effect), when it decays its own
    large_eps: float | None = None  # ... its eps, when it divides steps by sqrt(v) + eps and eps >= LARGE_EPS
    group_rates: list | None = None  # ... its parameter groups' rates and modules, when they lie far apart
    loss_with_domain: str | None = None  # ... or the root itself, one of graph_tools.LOSS_DOMAINS (times constants > 0)
    loss_outside_domain: dict | None = None  # such a loss came out negative: the range its input spanned
    # watched modules made outputs with a history (a frozen backbone's have none), and whether a backward's graph held
    # one of those made before it (None: none had been made when a backward came; a reentrant checkpoint of the
    # whole model makes them inside the backward)
    outputs_made: bool = False
    outputs_reached: bool | None = None
    loss_is_a_leaf: bool = False  # a backward pass started from a leaf tensor: a loss with no graph behind it
    snapshot_taken: bool = False  # the samples were copied before the optimiser step
    grad_norm_idx: list | range = field(default_factory=list)  # per parameter: deferred index of ||grad||, or None
    weights_at: int | None = None  # deferred index of the first parameter's ||sample|| as the step found it
    update_at: int | None = None  # ... of the first ||change of the sample|| (then each ||sample after||)
    displaced_at: tuple | None = None  # (... of the first ||sample - sample at the first look||, that look's step)
    changed_at: int | None = None  # half precision: ... of the first count of sampled entries changed (then pushed)
    module_sums: dict = field(default_factory=dict)  # module label -> [grad^2, weight^2, update^2, has update]
    weights_before: list = field(default_factory=list)  # per parameter, after the fetch: ||entries|| the step used
    weights_after: list = field(default_factory=list)  # ... and after its update
    unit_spreads: dict = field(default_factory=dict)  # layer -> (units, deferred index of its unit spread)
    # (at the optimiser step) the parameters the watched optimisers step, and how many of them are frozen
    stepped_and_frozen: tuple[int, int] = (0, 0)
    # ... frozen ones among them on which `requires_grad_` was assigned, not called (`p.requires_grad_ = True`): labels
    requires_grad_assigned: list = field(default_factory=list)
    module_requires_grad: list = field(default_factory=list)  # watched modules given a `requires_grad` attribute
    grads_after_backward: bool = False  # right after a backward, some parameter the last plan measured held a gradient
    # (sampled) right after the last backward: the plan, and each of its parameters' gradient as (id, version) or None;
    # at the step, the names of those whose gradient was written since (zeroed by hand, clipped, unscaled)
    grad_versions: tuple | None = None
    written_after_backward: list | None = None
    nonzero_between: dict = field(default_factory=dict)  # suspect -> deferred index: nonzero since the last sample?
    softmax_over_one: dict = field(default_factory=dict)  # "softmax"/"log_softmax" over an axis of length 1 -> where
    one_hot_rows: dict = field(default_factory=dict)  # site -> (deferred share of rows exactly one-hot, entries, 1/T)
    difference_of_itself: str | None = None  # where a `sub` takes a tensor from itself (`a - a`: 0, its gradient 0)
    softmax_over_queries: str | None = None  # where attention weights normalised over the queries are applied
    same_ids_embedded: list | None = None  # the two embeddings whose lookups of one index tensor are added
    ratio_of_itself: tuple | None = None  # (op, after which module) of `l / l`, `l * (1 / l)`: 1, its gradient 0
    examples_mixed: dict = field(default_factory=dict)  # site -> a view that mixes the examples (when they are counted)
    target_trained: dict | None = None  # a KL's target from a model an optimiser steps: {"target_modules", ...}
    sine_layers: dict = field(default_factory=dict)  # layer -> w0 of a sin(w0 * layer(x)) after it (a SIREN's)
    one_class_over_pairs: tuple | None = None  # cross_entropy over z1 @ z2.T: (rows, deferred "one class", the class)
    optimizers_without_gradient: list = field(default_factory=list)  # per such optimiser: its modules
    optimizers_stepping_the_same: list = field(default_factory=list)  # others that stepped the training one's params
    custom_backwards: dict = field(default_factory=dict)  # a custom Function tested on this step: name -> its test
    custom_calls: dict = field(default_factory=dict)  # id(node) -> CustomCall: calls of Functions still under test

    ticket: Ticket = field(init=False)  # what this step's hooks hold instead of the state itself

    def __post_init__(self):
        self.ticket = Ticket(self)
        step = next(_step_keys)  # the tags of each step have keys of their own: an old graph's are not read
        self.names = NodeTags(("leakygrad", step, "module"))
        self.recurrent_outputs = NodeTags(("leakygrad", step, "recurrent output"))
        self.enters = NodeTags(("leakygrad", step, "recurrent input"))
        self.calls = NodeTags(("leakygrad", step, "call"))

    def release(self) -> None:
        """End the step for its hooks: they find the ticket empty from now on. The state holds autograd nodes
        (those of the graphs differentiated) and the hooks on those nodes held it, a cycle Python's garbage
        collector cannot see through PyTorch's C++ objects; emptying the ticket breaks it, so the state, the step's
        graph and its tensors are freed as soon as the probe lets go of the state."""
        self.ticket.state = None
        self.output_memory.clear()
        self.made_without_grad.clear()
        self.drawn.clear()
        self.custom_calls.clear()


@dataclass(slots=True)
class CustomCall:
    """A call of a custom autograd.Function on a sampled step, kept until its backward is tested against its forward
    (`torch_graph.backward_against_forward`): the node it made, the Function, its arguments (references, not copies:
    they are copied at the test), which of them required grad, and each tensor's version then (one changed in place
    since is not the input the backward was computed for)."""

    node: object
    function: type
    args: tuple
    differentiated: list
    versions: list
    generators: tuple  # the random generators' states before the call (`_generator_states`)
    outputs: tuple  # what the call returned (detached): the test first checks that the forward gives it again


# other optimisers' steps with none of the followed one's (and beyond 4 times the most ever seen between two of its
# own) after which it is taken for idle, a phase over, though none of them stepped many times in a row
IDLE_TAKEOVER = 32
MAX_CUSTOM_CALLS = 256  # calls of custom Functions kept per sampled step for the test (a Function called at each time
# step of a long sequence: the one the graph walk meets first is tested)


@dataclass(slots=True)
class ParameterPlan:
    """What an optimiser step's measurements need to know of the parameters it steps, found once and reused while
    `key` (those parameters, their storage, and how many parameters the probe knows) stays the same."""

    key: tuple
    params: list  # the stepped parameters the probe knows
    entries: list  # [(name, module label, parameter)] of those
    samples: ParameterSamples
    # with one watched optimiser: the model's parameters it does not step, and how many it steps outside the
    # model (`TorchProbe._left_out`), found when first asked
    unstepped: tuple[list, int] | None = None


@dataclass(slots=True)
class UnreadStep:
    """A sampled step whose statistics are on their way to the host, with what its record needs besides."""

    state: StepState
    fetch: Fetch
    losses: list  # the step's losses read on the host (on the CPU; a GPU's come with the device losses)
    backward_calls: int


class GradientMarks:
    """The parameters' gradients, followed from a sampled optimiser step to the next: were they reset in between?

    `backward()` adds into an existing `.grad` in place, and its version counter goes up by one; `zero_grad()`
    either replaces it with None (a new tensor comes next) or zeroes it in place (one more version). So after
    each backward: a new tensor, or a jump of two versions or more since the last look, is a reset; a gradient
    that only ever moved one version per backward holds last step's gradient still. (Only after each backward:
    clipping the gradients in place between the last backward and the step adds a version too, and is no reset.)
    A gradient that reads all zeros before a backward, its version unmoved, tells nothing either way: zeroed through
    `.data`, or the gradient of a layer that died (all its ReLUs off), which sums to zero whether reset or not.
    """

    def __init__(self, params: list[torch.Tensor], by_hand: bool = False):
        self.params = [p for p in params if p.grad is not None]
        self.grads = [weakref.ref(p.grad) for p in self.params]  # (weak: zero_grad() frees them)
        self.versions = [p.grad._version for p in self.params]
        self.weight_versions = [p._version for p in self.params]  # (an update by hand, `p -= lr * p.grad`, moves it)
        # (updated by hand through `.data`, `p.data -= lr * p.grad`, no version moves: a few entries tell it)
        self.weight_entries = [_first_entries(p) for p in self.params] if by_hand else None
        self.moved = [False] * len(self.params)
        self.reset = [False] * len(self.params)
        self.undetermined = [False] * len(self.params)  # (all zeros, version unmoved: see above)

    def look_before_backward(self) -> None:
        """Before a backward: a gradient zeroed through `.data` (`p.grad.data.zero_()`, older code's way) moves no
        version counter, but reads all zeros now; so does a dead layer's, reset or not. Either is left out of the
        counts. Only gradients that look untouched since the last look are read (after the usual zero_grad() there
        is none: None, or a new version), some entries spread through each, in one call."""
        idle = [
            i
            for i, (p, grad) in enumerate(zip(self.params, self.grads))
            if not (self.reset[i] or self.undetermined[i])
            and p.grad is not None
            and p.grad is grad()
            and p.grad._version == self.versions[i]
        ]
        if not idle:
            return
        samples = [spread(self.params[i].grad.detach(), ZERO_CHECK_SAMPLE) for i in idle]
        for i, size in zip(idle, torch._foreach_norm(samples)):
            if size.item() == 0:
                self.undetermined[i] = True

    def follow(self) -> None:
        """After a backward: note which gradients moved, and which were reset first."""
        for i, (p, grad) in enumerate(zip(self.params, self.grads)):
            if self.reset[i] or self.undetermined[i]:
                continue
            if p.grad is None or p.grad is not grad():
                self.reset[i] = True
                continue
            version = p.grad._version
            self.reset[i] = version - self.versions[i] >= 2  # zeroed in place, then added into
            self.moved[i] = self.moved[i] or version > self.versions[i]
            self.versions[i] = version

    def _updated(self, i: int) -> bool:
        """Whether parameter i's weights changed since the marks were made: a version on, or (by hand, through
        `.data`) its entries."""
        p = self.params[i]
        if p._version != self.weight_versions[i]:
            return True
        return self.weight_entries is not None and not _same_entries(_first_entries(p), self.weight_entries[i])

    def counts(self, updated_only: bool = False) -> tuple[int, list]:
        """(how many gradients were reset, the parameters whose gradient moved and was never reset), at the
        optimiser step; or, with `updated_only` (weights updated by hand, no optimiser), at the next backward and
        among the parameters whose weights changed in between (a gradient accumulated over micro-batches between two
        updates is not reset between them either). Gradients undetermined (all zeros before a backward) are in
        neither."""
        reset = [r or p.grad is None or p.grad is not grad() for r, p, grad in zip(self.reset, self.params, self.grads)]
        kept = [not u and (not updated_only or self._updated(i)) for i, u in enumerate(self.undetermined)]
        return (
            sum(r for r, k in zip(reset, kept) if k),
            [p for p, m, r, k in zip(self.params, self.moved, reset, kept) if m and not r and k],
        )


class TorchProbe:
    def __init__(self, doctor, model=None, optimizer=None, discover: bool = False, name: str | None = None):
        self.doctor = doctor
        self.every = doctor.every
        self.thresholds = doctor.thresholds
        self.discover = discover
        self.infos: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # module -> ModuleInfo
        self.rejected: weakref.WeakSet = weakref.WeakSet()  # roots seen without trainable parameters
        self._frozen_looks: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # frozen roots -> calls seen
        self.param_labels: dict[int, tuple] = {}  # id(parameter) -> (weakref, name, module label)
        self.root_names: list[str] = []
        # root name -> (its module, the prefix of its parts' names)
        self._roots: dict[str, tuple[weakref.ref, str]] = {}
        self._parts_looked_for: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # optimiser -> its size then
        # (`_name_a_late_part`) module -> the step it was first met, None once looked for among the models' parts ...
        self._late_parts_met: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._late_part_looks = 0  # ... and how many were looked for among the models' parts
        self._thread: threading.Thread | None = None  # the thread whose training is followed (`claim_thread`)
        self._thread_level = 0  # ... how far it went in a training step: RAN_FORWARD, RAN_BACKWARD, STEPPED
        self._warning_filter = None  # the one warnings filter attach() adds
        # roots discovered since the last sampled step ended, with the module names and parameter ids they added:
        # one called alone while its model was being built (a dummy forward that sizes a head, spectral_norm's check
        # of its layer) gives way to that model when it runs
        self._fresh_roots: dict[str, tuple[weakref.ref, set[str], set[int]]] = {}
        self.info_by_name: dict[str, ModuleInfo] = {}
        self._callable_cache: tuple[int, list[str]] | None = None  # (modules known, those with weights that run)
        # id(optimiser) -> (weak reference to it, watched?): one freed may pass its id on to the next one made (a
        # script that pretrains with one optimiser and fine-tunes with another), which the reference tells apart
        self.optimizers: dict[int, tuple[weakref.ref, bool]] = {}
        self._watched_optimizers: weakref.WeakSet = weakref.WeakSet()  # those watched, while they live
        self.primary = None  # weakref to the optimiser whose steps count as training steps
        self._stepped_alone = None  # weakref to another watched optimiser that stepped since the primary last did
        # (no optimiser given) the others' steps since the primary last stepped, and the most ever seen between two
        self._others_since_primary: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._longest_wait = 0
        self._primary_params: frozenset = frozenset()  # ids of the parameters the primary optimiser steps
        self._others_in_a_row = 0  # another's steps in a row since the primary's last
        self._longest_gap = 0  # ... the most that ever came before one of the primary's steps
        self._primary_stepped = False
        self._primary_steps = 0  # steps the primary optimiser took since it was adopted
        self._steps_in_flight = 1  # optimiser steps the step in flight stands for (more when one takes over)
        self._names_ahead = None  # (the next step, the module names given to its nodes) when the next is sampled
        self._final_modules: set[str] = set()  # the last module of each watched nn.Sequential: it makes its output
        self._made_anew = False  # ... which replaced one over the same parameters that had stepped once
        self.step = 0
        self.sampling = False
        self.state: StepState | None = None
        self.attached = False
        self._depth = 0
        self._losses: list[float] = []
        self._pending_device_losses: list = []
        self._unread: deque[UnreadStep] = deque()  # sampled steps whose statistics are on their way from a GPU
        self._unread_losses: deque[tuple[list, HostCopy]] = deque()  # (steps, their losses on the way)
        self._backward_calls = 0
        # An optimiser stepped between two backward passes of one step: each optimiser steps on a loss of its own
        # (a GAN's two players), and the step's mean loss mixes competing losses (see History.competing_loss_steps)
        self._stepped_since_backward = False
        self._losses_between_steps = False
        self.mode = "unknown"  # "optimizer": steps end at optimiser steps; "backward": at each backward
        self._optimizer_exists: bool | None = None  # while the mode is unknown: see _optimizer_yet_to_step
        self._awaiting = False  # a backward ended; the step ends unless an optimiser step comes next
        self._reset_marks: GradientMarks | None = None  # from a sampled optimiser step to the next optimiser step
        self._marks_in_closure = False  # the marks were made at the start of a step given a closure (LBFGS)
        self._nonfinite_seen = False
        self._scaler_overflows = 0  # sampled steps in a row whose scaled backward overflowed (see SCALER_...)
        self._last_finite_step = 0  # the last sampled step whose parameters were all finite
        self._layer_order: dict[str, int] = {}  # module name -> forward position, as of the last sampled step
        self._module_handles = []
        self._hooks_paused = False  # inside the optimiser step: module hooks stay installed but do nothing
        self._in_step = False  # inside the primary optimiser's step
        self._closure_params = None  # a sampled step whose gradients a closure computes (LBFGS): what it steps
        self._global_handles = []
        self._last_loads: dict[str, tuple] = {}  # model -> (memory, version) of the first stepped tensor it last loaded
        self._gated_names: set[str] = set()  # LSTM/GRU modules: their internal gates are not reported
        self._last_gradient: tuple | None = None  # (see _representative_gradient)
        self._plateau_rates_given: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # optimiser -> its rate
        self._schedulers_stepped: weakref.WeakSet = weakref.WeakSet()  # LRScheduler.step() seen called on them
        # (scheduler id, group) -> (rate set by hand, step set, optimiser steps it lasted, the scheduled rate before)
        self._rates_set_by_hand: dict = {}
        self._first_rates: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # optimiser -> its first group's lr
        self._grad_of_inputs = 0  # torch.autograd.grad calls under way whose gradients are not the training's
        self._score_reads: set[tuple] = set()  # the reads at the root of backward passes told as scores, not losses
        self._gradient_before_backward: tuple | None = None  # ... as the backward under way found it
        self._gradients_changed_by_hand = False  # a sampled step applied a gradient changed since backward left it
        self._custom_checks: dict[str, int] = {}  # custom autograd.Function -> sampled steps its backward was tested
        self._target_scale_looks = 0  # sampled steps on which a regression's targets were compared with its predictions
        self._previous_token_looks = 0  # ... on which a token classifier's targets were compared with its input
        self._input_spread_looks = 0  # ... on which the first weighted layer's outputs were compared across the batch
        self._output_spread_looks = 0  # ... and every weighted layer's (is the prediction the same for every example?)
        self._soft_target_looks = 0  # sampled backward passes looked through for a cross-entropy's float targets
        self._ctc_input_looks = 0  # ... and for ctc_loss's input
        self._loss_walks = 0  # backward passes of sampled steps with a loss side (see _count_batch_classes)
        self._class_count_looks = 0  # ... of them, those on which a classifier's batch had its classes counted
        self._attention_looks = 0  # sampled steps on which attention's softmaxes were measured
        self._lookahead_looks = 0  # sampled steps on which self-attentions' masks were read
        self._first_walked = None  # (the first sampled step whose graph was walked, the names of its outputs)
        self._mode_sensitive: dict[str, dict] = {}  # watched model -> its batch norms and dropouts (_note_model_mode)
        self._output_side_looks = 0  # ... on which sigmoids and tanhs were looked at: does any module read them?
        self._relu_output_looks = 0  # ... on which ReLUs' saved outputs were checked for negatives
        self._output_side_sites: set[str] = set()  # ... the sites no module reads (an output, a halting probability)
        self._read_sites: set[str] = set()  # ... and those a layer read on some look
        self._loss_mask_looks = 0  # ... on which a per-token loss's mask was compared with the tokens' padding
        self._padding_looks = 0  # ... on which an embedding's output gradient was read at its padding_idx
        self._base_rate_looks = 0  # ... on which a binary cross-entropy's share of positive targets was read
        self._position_looks = 0  # ... on which a token embedding's output gradient was read position by position
        self._reversal_looks: dict[str, int] = {}  # gradient reversal Function -> sampled steps it was looked at
        self._unheld_looks = 0  # ... on which the graph was searched for loss weights nothing holds back
        self._unheld_params: dict = {}  # such a weight's name -> a weak reference to it
        self._script_tensors: list[
            str
        ] = []  # the names of a model's tensors held by no module (a model without modules)
        self._idle_looked_for: tuple = (None, {})  # (parameters not applied, those an idle optimiser holds)
        self._script_tensor_values: list = []  # ... each (weakly) with a few of its entries when named: did they move?
        self._hand_update_looks = 0  # backward passes on which the graph's leaves were looked at (HAND_UPDATE_LOOKS)
        self._hand_updated: dict = {}  # the script's tensors that require grad, at the last backward -> (ref, version)
        self._leaf_looks = 0  # sampled steps on which the graph's leaves were looked through (`_look_at_loose_leaves`)
        self._first_values: dict[str, torch.Tensor] = {}  # loose leaf -> a few of its entries when first seen
        self._last_leaves: dict[str, weakref.ref] = {}  # ... -> the object it was at the last look
        self._failures: dict[str, int] = {}
        self._plan: ParameterPlan | None = None
        self._scratch = Scratch()  # working memory for activation statistics, reused every sampled step
        self._next_symmetry_check = 0  # the step from which a sampled step looks at whether units are alike
        self._unstepped_grads: dict[str, tuple] = {}  # parameter no optimiser steps -> (its .grad, weakly; version)
        self._next_displacement = 0  # the step from which the weights' displacement since the first look is measured
        self._unstepped_versions: dict[str, tuple] = {}  # ... -> (the parameter, weakly; its version at the last look)
        # parameters whose gradient was exactly zero at every sampled step so far -> (the parameter, weakly; a device
        # flag: nonzero at some step between the sampled ones?), looked at on those steps (`_look_at_zero_suspects`)
        self._zero_suspects: dict[str, tuple] = {}
        self._stepped_since_primary: weakref.WeakSet = weakref.WeakSet()  # watched optimisers since the last step
        self._given_optimizer = optimizer
        models = [] if model is None else list(model) if isinstance(model, (list, tuple)) else [model]
        for m in models:
            if not isinstance(m, nn.Module):
                raise TypeError(f"watch: expected a torch.nn.Module (or a list of them), got {type(m).__name__}")
        self._given_models = models
        self._given_name = name
        if optimizer is not None and not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(f"watch: optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")

    # --- attaching ----------------------------------------------------------------------------------------------
    def attach(self) -> None:
        if self.attached:
            return
        # PyTorch warns that a torch.compile'd module meets global module hooks: ours, which do nothing inside
        # compiled code. The user did nothing to cause it, so it is not shown.
        warnings.filterwarnings("ignore", message=r"Using `torch.compile\(module\)` when there are global hooks")
        self._warning_filter = warnings.filters[0]  # (taken out again at detach: the script's filters as they were)
        for i, model in enumerate(self._given_models):
            name = self._given_name if (self._given_name and i == 0) else None
            name = name or _global_name(model) or type(model).__name__.lower()
            # (two models of one class: their layers' paths must not collide)
            self.add_root(model, _unused_name(name, self.root_names), prefixed=len(self._given_models) > 1)
        if self._given_optimizer is not None:
            self.mode = "optimizer"
            self.optimizers[id(self._given_optimizer)] = (weakref.ref(self._given_optimizer), True)
            self._watched_optimizers.add(self._given_optimizer)
            self.primary = weakref.ref(self._given_optimizer)
            self._primary_params = frozenset(map(id, _stepped_parameters(self._given_optimizer)))
            self.doctor.history.watched.append(type(self._given_optimizer).__name__)
        self._global_handles = [
            optimizer_hooks.register_optimizer_step_pre_hook(self._on_optimizer_pre),
            optimizer_hooks.register_optimizer_step_post_hook(self._on_optimizer_post),
        ]
        _activate(self)
        self.attached = True
        self._start_step()

    def detach(self) -> None:
        if not self.attached:
            return
        try:
            if self._backward_calls and self.mode != "optimizer":
                self._close_backward_step()
            # In optimiser mode a step ends at the optimiser step; backward calls after the last one (a GAN's
            # generator loss after the discriminator's step) belong to no complete step and are not counted.
            self._flush_device_losses()
            self.catch_up()
        except Exception as error:
            self._fail("finishing the run", error)
        self._remove_module_hooks()
        for handle in self._global_handles:
            handle.remove()
        self._global_handles = []
        _deactivate(self)
        self.attached = False
        if self._warning_filter in warnings.filters:
            warnings.filters.remove(self._warning_filter)
            getattr(warnings, "_filters_mutated", lambda: None)()  # (what filterwarnings() calls: caches reset)
        if self.state is not None:
            try:
                self.state.release()
            except Exception as error:  # (the hooks are gone already: the state is dropped all the same)
                self._fail("ending the last step", error)
        self.state = None
        self._reset_marks = None
        self._marks_in_closure = False
        self._plan = None
        self._scratch = Scratch()

    def add_root(self, module: nn.Module, name: str, prefixed: bool) -> tuple[set[str], set[int]]:
        """Name `module` and what it holds, except modules and parameters an earlier root named. Returns the module
        names and parameter ids it added."""
        # A bare nn.Sequential's paths are just indices ("3"); prefix them with its name ("model.3").
        prefix = f"{name}." if prefixed or isinstance(module, nn.Sequential) else ""
        self.root_names.append(name)
        self._roots[name] = (weakref.ref(module), prefix)
        if isinstance(module, nn.Sequential) and len(module):  # (its last module makes the model's own output)
            self._final_modules.add(f"{prefix}{len(module) - 1}")
        added_modules, added_params = self._name_parts(module, name, prefix)
        for container, owner, kind, held in _modules_in_plain_containers(module):
            # Named as nn.ModuleList / nn.ModuleDict would name them (`blocks.0`): watched like the registered ones.
            container = f"{prefix}{container}"
            self.doctor.history.unregistered[container] = (f"{prefix}{owner}" if owner else name, kind, len(held))
            for key, item in held:
                for path, sub in item.named_modules(prefix=f"{container}.{key}"):
                    if sub not in self.infos:
                        self.infos[sub] = self.info_by_name[path] = _module_info(path, sub)
                        added_modules.add(path)
                for path, param in item.named_parameters(prefix=f"{container}.{key}"):
                    if id(param) not in self.param_labels and param.is_leaf:
                        self.param_labels[id(param)] = (weakref.ref(param), path, path.rpartition(".")[0])
                        added_params.add(id(param))
        self.doctor.history.watched.append(name)
        self.doctor.history.models.append(name)
        self.doctor.history.model_met_at[name] = self.step
        return added_modules, added_params

    def _name_parts(self, module: nn.Module, name: str, prefix: str) -> tuple[set[str], set[int]]:
        """Name the modules and parameters of the root `module` that no root has named yet: `prefix` + their path."""
        added_modules, added_params = set(), set()
        for path, sub in module.named_modules():
            if sub in self.infos:
                continue
            label = f"{prefix}{path}" if path else name
            self.infos[sub] = _module_info(label, sub)
            self.info_by_name[label] = self.infos[sub]
            added_modules.add(label)
            if self.infos[sub].gated:
                self._gated_names.add(label)
        for path, param in module.named_parameters():
            # (not a tensor computed by the script: `torch.func.functional_call(module, generated, x)` swaps its own
            # in for the duration of the call, a hypernetwork's output, and a model first met then shows those)
            if id(param) not in self.param_labels and param.is_leaf:
                owner = _weight_owner(module, path.rpartition(".")[0])
                label = f"{prefix}{owner}" if owner else name
                self.param_labels[id(param)] = (weakref.ref(param), f"{prefix}{path}", label)
                added_params.add(id(param))
        return added_modules, added_params

    def _name_a_late_part(self, module: nn.Module) -> ModuleInfo | None:
        """A module called inside a forward that was never named: a part put into a watched model after it was first
        seen (a new head, `model.fc = nn.Linear(...)`, perhaps after the optimiser was made over the old one's
        parameters), named under that model as its own parts are; or no part of one (None). Looked for when met on a
        second step: a module made anew in each forward (`self.head = nn.Linear(...)` inside `forward()`) is never
        met twice, and is told as a layer made in forward; each module once, and LATE_PART_LOOKS in a run."""
        first_met = self._late_parts_met.setdefault(module, self.step)
        if first_met is None or first_met == self.step:
            return None
        self._late_parts_met[module] = None
        self._late_part_looks += 1
        for name, (ref, prefix) in list(self._roots.items()):
            root = ref()
            if root is not None and any(part is module for part in root.modules()):
                self._name_parts(root, name, prefix)
                self._plan = self._callable_cache = None
                info = self.infos.get(module)
                if info is not None:  # (the parameters of the module it replaced belong to no watched model now)
                    self._forget_parameters_replaced(info.name, {id(p) for p in module.parameters()})
                return info
        return None

    def _forget_parameters_replaced(self, label: str, kept: set[int]) -> None:
        """Drop the names of parameters once held under module `label` that it holds no more: those of the module a
        new one replaced (an optimiser made before the replacement still steps them, outside any watched model)."""
        for key, (ref, _, owner) in list(self.param_labels.items()):
            if ref() is None:
                del self.param_labels[key]  # (dead: a reused id must not pass for it)
            elif (owner == label or owner.startswith(label + ".")) and key not in kept:
                del self.param_labels[key]
                self.doctor.history.replaced_modules.add(label)

    def _name_parts_added_since(self, params) -> None:
        """Parameters of a new optimiser that no watched model had when it was named, held by one now: modules put
        into a watched model after it was first seen (LoRA adapters wrapping its layers, a new head). Named under it,
        as its own parts are."""
        unknown = {id(p) for p in params if not self._param_label(p)}
        for name, (ref, prefix) in list(self._roots.items()):
            module = ref()
            if unknown and module is not None and any(id(p) in unknown for p in module.parameters()):
                self._name_parts(module, name, prefix)
                unknown -= {id(p) for p in module.parameters()}
                self._plan = self._callable_cache = None

    def note_state_load(self, target: nn.Module, state_dict) -> None:
        """`target.load_state_dict(state_dict)` is about to replace weights of the watched models it is or holds.
        Noted for each when it loads parameters the training optimiser steps, from values that changed since its
        last load: whatever the optimiser's last update did is overwritten (an EMA copied back at every step). A fixed
        snapshot loaded again and again (episodic test-time adaptation resetting to the source model) is told apart
        by its first tensor: the same memory, not written since."""
        try:
            if not self._primary_params or not hasattr(state_dict, "get"):
                return
            roots = set(self.root_names)
            for path, module in target.named_modules():
                info = self.infos.get(module)
                if info is not None and info.name in roots:
                    self._note_model_load(info.name, module, state_dict, f"{path}." if path else "")
        except Exception as error:
            self._fail("load_state_dict", error)

    def _note_model_load(self, name: str, module: nn.Module, state_dict, prefix: str) -> None:
        stepped = [key for key, p in module.named_parameters(prefix=prefix) if id(p) in self._primary_params]
        loaded = next((state_dict.get(key) for key in stepped if key in state_dict), None)
        if not isinstance(loaded, torch.Tensor):
            return
        mark = (loaded.data_ptr(), loaded._version)
        if self._last_loads.get(name) != mark:
            self._last_loads[name] = mark
            self.doctor.history.note_state_loaded(self.step, name)

    def _param_label(self, param):
        entry = self.param_labels.get(id(param))
        if entry is None or entry[0]() is not param:
            return None
        return entry

    def _discover(self, module: nn.Module) -> ModuleInfo | None:
        """A module called at top level with grad enabled and trainable parameters: a model to watch. A module
        compiled with torch.compile is watched as the module it wraps (under the wrapper's name)."""
        if module in self.rejected:
            return None
        wrapped = getattr(module, "_orig_mod", None)
        if isinstance(wrapped, nn.Module):
            name = _global_name(module) or _global_name(wrapped) or type(wrapped).__name__.lower()
            self.rejected.add(module)  # (the wrapper itself is not watched: its calls run compiled code)
            if wrapped not in self.infos and wrapped not in self.rejected:
                self._add_discovered(wrapped, name)
            return None
        if not any(p.requires_grad for p in module.parameters()):  # (before looking for its name: that costs)
            # (frozen for now, perhaps only for a while: a JEM's sampler freezes the model it calls, then trains it.
            # Looked at again on its next calls, a few dozen times, before it is taken for a frozen model for good)
            looks = self._frozen_looks.get(module, 0) + 1
            self._frozen_looks[module] = looks
            if looks >= FROZEN_LOOKS or not any(True for _ in module.parameters()):
                self.rejected.add(module)
            return None
        return self._add_discovered(module, _global_name(module) or type(module).__name__.lower())

    def _discover_owner(self, params: list) -> None:
        """The script's model of an optimiser's parameters that no watched model has: one whose calls the hooks
        never saw (`model.compile()` runs its forward as compiled code; a model trained through a method of its
        own, `model.nll(x, y)`, whose parts alone are called). Looked for among the script's globals."""
        main = sys.modules.get("__main__")
        wanted = {id(p) for p in params}
        candidates = [
            (name, value)
            for name, value in (list(vars(main).items()) if main is not None else ())
            if isinstance(value, nn.Module) and value not in self.infos and value not in self.rejected
        ]
        while wanted:  # the module holding most of them (a model, not its backbone), then any left
            covered = [(sum(id(p) in wanted for p in module.parameters()), name, module) for name, module in candidates]
            count, name, module = max(covered, key=lambda c: c[0], default=(0, None, None))
            if count == 0:
                return
            name = _global_name(module) or name  # (`members[1]` rather than the loop's `m`)
            self._add_discovered(getattr(module, "_orig_mod", module), name)
            wanted -= {id(p) for p in module.parameters()}

    def _name_script_tensors(self, tensors: list) -> None:
        """A model written without modules, as tensors of its own (`w1 = torch.randn(64, 100, requires_grad=True)`,
        the first chapters of every course): each tensor that an optimiser steps, or that the script updates by hand
        between backward passes, is a parameter, named as the script names it (`w1`, `params[0]`) and watched as a
        layer of its own."""
        names = _script_tensor_names()
        for tensor in tensors:
            if id(tensor) in self.param_labels or not tensor.is_leaf or not tensor.is_floating_point():
                continue
            if tensor.layout != torch.strided:  # (a sparse tensor: its entries are not sampled)
                continue
            name = names.get(id(tensor)) or f"tensor{len(self._script_tensors)}"
            self.param_labels[id(tensor)] = (weakref.ref(tensor), name, name)
            self._script_tensors.append(name)
            if not tensor.requires_grad:  # (given to the optimiser, made without requires_grad: it never learns)
                self.doctor.history.script_tensors_without_grad.append(name)
            self._script_tensor_values.append((weakref.ref(tensor), _first_entries(tensor)))
        if tensors:
            history = self.doctor.history
            if history.script_tensors:
                history.watched.remove(_tensors_watched(history.script_tensors))
            history.script_tensors = list(self._script_tensors)
            history.watched.append(_tensors_watched(history.script_tensors))
            self._plan = self._callable_cache = None

    def _tensors_of_a_model_without_modules(self, params: list) -> list:
        """The parameters of a model of plain tensors, at its optimiser's first step: the tensors it steps; or, when
        the script holds none of them (`Adam([torch.tensor(w, requires_grad=True) for w in weights])`: copies) but
        holds leaf tensors that the backward pass just reached (they hold a gradient) while none of those it steps
        was, those: the model, whose gradients the optimiser never applies."""
        # (an nn.Parameter is a module's: a model of modules met later, its forward not seen yet, names it)
        unnamed = [p for p in params if not self._param_label(p) and not isinstance(p, nn.Parameter)]
        if not unnamed or any(p.grad is not None for p in unnamed):
            return unnamed
        stepped = {id(p) for p in unnamed}
        held = _script_tensors().values()
        reached = {id(t): t for t in held if t.requires_grad and t.grad is not None and id(t) not in stepped}
        return list(reached.values()) or unnamed

    def _look_whether_script_tensors_moved(self) -> None:
        """Have a model of plain tensors' values changed since they were named (the layers' weight norms tell it for
        a model of modules)? Looked at on sampled steps until one has."""
        for ref, first in self._script_tensor_values:
            tensor = ref()
            if tensor is not None and not _same_entries(_first_entries(tensor), first):
                self.doctor.history.script_tensors_moved = True
                self._script_tensor_values = []
                return

    def _look_for_tensors_updated_by_hand(self, roots) -> None:
        """Without modules or an optimiser: the leaf tensors that require grad in this backward's graph; those changed
        since the last backward, the same objects (`w1 -= lr * w1.grad` moves a version, `w1.data -= ...` only the
        values), are parameters. An input made anew at each step (an adversarial example) is never the same object.
        Looked at on the first HAND_UPDATE_LOOKS backward passes only: a script that updates its weights by hand
        does so from the first step."""
        self._hand_update_looks += 1
        last, self._hand_updated = self._hand_updated, {}
        moved = []
        for tensor in graph_tools.leaves_requiring_grad(roots, LEAVES_LOOKED_AT):
            if tensor.layout != torch.strided:
                continue
            self._hand_updated[id(tensor)] = (weakref.ref(tensor), tensor._version, _first_entries(tensor))
            ref, version, first = last.get(id(tensor), (None, None, None))
            if ref is not None and ref() is tensor:
                if tensor._version != version or not _same_entries(_first_entries(tensor), first):
                    moved.append(tensor)
        if moved:
            order = {key: i for i, key in enumerate(_script_tensor_names())}  # (as the script made them: w1, w2)
            self._name_script_tensors(sorted(moved, key=lambda t: order.get(id(t), len(order))))
            self._hand_updated = {}

    def _add_discovered(self, module: nn.Module, name: str) -> ModuleInfo | None:
        if not any(p.requires_grad for p in module.parameters()):
            self.rejected.add(module)
            return None
        inside = {id(sub) for sub in module.modules()}
        for earlier, (ref, _, _) in list(self._fresh_roots.items()):
            if id(ref()) in inside:  # called alone while `module` was being built: named as part of it instead
                self._forget_root(earlier)
        name = _unused_name(name, self.root_names)
        # (a part of a model held by the script, called on its own, `flow[0]` -> "flow.0": its layers named under it,
        # as the parts called after it will be, not as the first model's would)
        added = self.add_root(module, name, prefixed=bool(self.root_names) or "." in name)
        self._fresh_roots[name] = (weakref.ref(module), *added)
        return self.infos.get(module)

    def _forget_root(self, name: str) -> None:
        """Drop a root discovered in this sampled step, with the names it gave its modules and parameters (nothing
        has been recorded under them yet), so that the model it is part of names them. Names an earlier root gave
        (a backbone trained on its own before) stay."""
        ref, labels, param_ids = self._fresh_roots.pop(name)
        root = ref()
        for sub in root.modules() if root is not None else ():
            info = self.infos.get(sub)
            if info is not None and info.name in labels:
                del self.infos[sub]
        for label in labels:
            self.info_by_name.pop(label, None)
        for key in param_ids:
            self.param_labels.pop(key, None)
        self._gated_names -= labels
        self.root_names.remove(name)
        self._roots.pop(name, None)
        self.doctor.history.watched.remove(name)
        self.doctor.history.models.remove(name)
        if self.state is not None:
            for label in labels:
                self.state.order.pop(label, None)
        self._plan = self._callable_cache = None

    # --- step boundaries ------------------------------------------------------------------------------------------
    def _start_step(self) -> None:
        self._awaiting = False
        self.sampling = self._samples(self.step)
        self._backward_calls = 0
        self._last_gradient = None
        self._losses_between_steps = False
        self._losses = []
        if self.state is not None:
            self.state.release()  # an unfinished sampled step (no optimiser step came)
        self.state = StepState(step=self.step) if self.sampling else None
        ahead, self._names_ahead = self._names_ahead, None
        if self.state is not None and ahead is not None and ahead[0] == self.step:
            self.state.names = ahead[1]  # (with the names given in the step before: see below)
        if self._samples(self.step + 1):
            # What the step before a sampled one makes is named for it too: a GAN's generator run before the
            # discriminator's step that ends a training step is differentiated in the next one, as its own layers.
            self._names_ahead = (self.step + 1, NodeTags(("leakygrad", next(_step_keys), "module")))
        self._depth = 0
        self._hooks_paused = False
        self._in_step = False
        self._closure_params = None
        if self.sampling or self._names_ahead is not None:
            self._install_module_hooks()  # kept from the step before when it was sampled too (every=1)
        else:
            self._remove_module_hooks()

    def _samples(self, step: int) -> bool:
        """Whether `step` is sampled: one step in every run of `every` (step 0 first), one step later in each run
        than in the one before, so that a training cycle (two heads trained on alternate steps, say) cannot hide
        from samples taken at one phase."""
        return step % self.every == (step // self.every) % self.every

    def _end_step(self) -> None:
        if self._losses:
            self.doctor.add_loss(self.step, sum(self._losses) / len(self._losses))
            if self._losses_between_steps:
                self.doctor.add_competing_loss_step()
        self.step += self._steps_in_flight
        self._steps_in_flight = 1
        self.doctor.set_steps(self.step)
        if len(self._pending_device_losses) >= self.every:
            self._flush_device_losses()
        if self._unread or self._unread_losses:
            self._read_arrived()
        self._start_step()

    def _install_module_hooks(self) -> None:
        if self._module_handles:
            return
        module_hooks = nn.modules.module
        self._module_handles = [
            module_hooks.register_module_forward_pre_hook(self._on_forward_pre),
            module_hooks.register_module_forward_hook(self._on_forward),
        ]

    def _remove_module_hooks(self) -> None:
        for handle in self._module_handles:
            handle.remove()
        self._module_handles = []

    # --- internal errors: noted, never raised into the training -------------------------------------------------------
    def _fail(self, where: str, error: BaseException) -> None:
        self._failures[where] = self._failures.get(where, 0) + 1
        self.doctor.internal_error(where, error)

    # --- forward hooks (sampled steps only) ---------------------------------------------------------------------------
    # --- one thread's training is followed ---------------------------------------------------------------------------
    def claim_thread(self, level: int) -> bool:
        """Whether the running thread's training is the one followed, the others' being left alone: several threads
        training models at once share no step (the probe's hooks would mix their steps, and objects of another
        thread's graph, which its autograd uses without the interpreter's lock, would be the probe's to free: a
        crash). `level` says how far this thread goes in a training step: RAN_FORWARD, RAN_BACKWARD, STEPPED. The
        first thread to come claims it; another takes it over when the one followed has ended (a thread per epoch),
        or has not gone as far as this one does (a sanity check's backward in the main thread, then training in a
        worker): the step begun is dropped, and, the old thread still running, the models it found are forgotten
        (their gradients are its own). (The thread itself, not its number: a thread started after one ended may get
        the same number.)"""
        current, owner = threading.current_thread(), self._thread
        if owner is not current:
            if owner is not None and owner.is_alive() and level <= self._thread_level:
                return False
            if owner is not None:
                self._drop_step_in_flight()
                if owner.is_alive():
                    for name in list(self._fresh_roots):
                        self._forget_root(name)
            self._thread, self._thread_level = current, 0
        self._thread_level = max(self._thread_level, level)
        return True

    def in_its_thread(self) -> bool:
        """Whether the running thread is the one followed, or none is yet."""
        return self._thread is None or self._thread is threading.current_thread()

    def _on_forward_pre(self, module, args):
        # (inside torch.compile or a torch.func transform the hooks do nothing: the module runs as it would,
        # unwatched inside, its parameters still measured at the optimiser step)
        if _compiled_or_transformed() or self._hooks_paused:  # (in this order: no guard on the flag)
            return None
        if not self.claim_thread(RAN_FORWARD):
            return None
        try:
            depth = self._depth
            grad_enabled = torch.is_grad_enabled()
            if self._awaiting and grad_enabled:
                self._resolve_backward_mode()
            self._depth += 1
            info = self.infos.get(module)
            if info is None and self.discover and depth == 0 and grad_enabled:
                info = self._discover(module)
            elif info is None and depth > 0 and grad_enabled and self._late_part_looks < LATE_PART_LOOKS:
                info = self._name_a_late_part(module)
            state = self.state
            if info is None or state is None:
                return None
            if not grad_enabled:  # it ran (a frozen encoder under no_grad): its parameters are not merely unused
                state.ran_without_grad.add(info.name)
                if _inside_reentrant_checkpoint():
                    state.in_reentrant_checkpoint.add(info.name)
                return None
            if info.leaf or not info.has_weights:
                state.order.setdefault(info.name, len(state.order))
            # (a module with weights of its own that also calls layers of its own, a model holding a parameter beside
            # its submodules, takes its depth from its output, made after theirs: see _on_forward)
            if len(args) == 1 and isinstance(args[0], torch.Tensor):  # (ids only: no node is held)
                state.input_nodes[id(module)] = (id(args[0].grad_fn), info.name)
            elif self._output_side_looks < OUTPUT_SIDE_LOOKS:  # (a cell's (x, h), early on: see _walk_graph)
                state.module_inputs.update(id(t.grad_fn) for t in _tensors(args))
            if state.output_memory.outputs:  # an input sharing an earlier output's memory but not its history: a cut
                inputs = args if len(args) == 1 and isinstance(args[0], torch.Tensor) else _tensors(args)
                for arg in inputs:
                    # (only a dense tensor has one block of memory to look up: a sparse adjacency matrix passed to
                    # each layer of a graph network, or a nested tensor, has none, and is no module's output anyway)
                    if not arg.requires_grad and arg.is_floating_point() and _dense(arg):
                        producer = state.output_memory.producer(arg)
                        if producer is not None and producer != info.name:
                            state.cuts.add((producer, info.name))
            if info.seq_first and args and isinstance(args[0], torch.Tensor) and args[0].dim() == 3:
                # (its batch on axis 1? and whether it is a recurrent layer or an attention)
                state.seq_first_inputs.setdefault(info.name, (list(args[0].shape), isinstance(module, nn.RNNBase)))
            if state.drawn.outputs:  # a draw made without a path back to its distribution's parameters, read here
                for arg in _tensors(args):
                    if not arg.requires_grad and arg.is_floating_point() and _dense(arg):
                        drawn_by = state.drawn.producer(arg)
                        if drawn_by is not None:
                            state.decoded_draws.setdefault(drawn_by, info.name)
            if info.recurrent == "cell":
                self._note_cell_state(state, info.name, args)
            elif info.recurrent == "sequence" and len(args) >= 2 and _one_time_step(module, args[0]):
                # (an RNN/LSTM/GRU stepped one time step a call, `out, h = gru(x[:, t:t+1], h)`: a cell in effect)
                state.stepped_calls[info.name] = state.stepped_calls.get(info.name, 0) + 1
                self._note_cell_state(state, info.name, args)
            elif len(args) >= 2 and not info.recurrent:
                self._note_own_state(state, module, info.name, args)
            if info.recurrent:
                for t in _tensors(args):
                    if t.grad_fn is not None:
                        state.enters.add(t.grad_fn, info.name)
                if info.recurrent == "sequence" and any(p.requires_grad for p in module.parameters(recurse=False)):
                    # (a frozen layer: no gradient flows back through it in the training, none is made to)
                    return self._watch_sequence_input(module, info, args)
        except Exception as error:
            self._fail("forward pre-hook", error)
        except BaseException:  # (Ctrl-C in the hook: the script may catch it and train on)
            self._drop_step_in_flight()
            raise
        return None

    def _note_cell_state(self, state: StepState, name: str, args) -> None:
        """How a cell's hidden state (its arguments after the input: h, or (h, c)) came to this call: its own last
        output with its gradient (carried), that output detached (`h.detach()`: backprop through time cut here), or
        none of its own (a sequence starts: zeros, a state from elsewhere)."""
        fed = _fed_own_output(state, name, args)
        if fed is None and self._state_is_a_parameter(args):  # (a learned initial state, h0)
            state.cell_parameter_calls[name] = state.cell_parameter_calls.get(name, 0) + 1
        if fed == "carried":
            state.cell_carried_calls[name] = state.cell_carried_calls.get(name, 0) + 1
            parts = _parts_detached(state, name, args)
            if parts:  # (h carried, c detached: the LSTM's long path through time cut, the short one kept)
                calls, _ = state.cell_parts_cut.get(name, (0, parts))
                state.cell_parts_cut[name] = (calls + 1, parts)
        elif fed == "cut":
            state.cell_cut_calls[name] = state.cell_cut_calls.get(name, 0) + 1

    def _state_is_a_parameter(self, args) -> bool:
        """Whether every tensor of a cell's state (its arguments after the input) is a watched parameter, as it is or
        through reshapes: a learned initial state, `self.h0.expand(N, -1)`."""
        hidden = [t for t in _tensors(args[1:]) if t.is_floating_point()]
        return bool(hidden) and all(self._param_label(_parameter_beneath(t)) is not None for t in hidden)

    def _note_own_state(self, state: StepState, module: nn.Module, name: str, args) -> None:
        """The same for a module of the script's own called with a state after its input: a recurrent cell written by
        hand, fed its own last output (h, c) with its gradient, or detached. (A module holding one of PyTorch's cells
        is not one: the cell inside is followed.)"""
        calls = state.looped_calls.get(name)
        if calls is None:
            holds_a_cell = any(isinstance(m, nn.RNNCellBase) for m in module.modules())
            parts = {self.infos[m].name for m in module.modules() if m in self.infos}  # (itself and its parts)
            calls = state.looped_calls[name] = [0, 0, 0, None if holds_a_cell else type(module).__name__, parts, 0]
        if calls[3] is None:
            return
        calls[0] += 1
        if calls[5] == calls[0] - 1 and self._state_is_a_parameter(args):
            calls[5] += 1  # (every call so far given a parameter for its state: a learned h0, read at each step)
        fed = _fed_own_output(state, name, args) if state.output_memory.outputs else None
        if fed == "carried":
            calls[2] += 1
        elif fed == "cut":
            calls[1] += 1

    def _watch_sequence_input(self, module, info: ModuleInfo, args):
        """Hook the gradient at each time step of a recurrent layer's input: a tensor, or a PackedSequence (whose
        data holds the steps one after another)."""
        x = args[0] if args else None
        if isinstance(x, PackedSequence):
            data, norms_by_step = x.data, functools.partial(packed_time_step_norms, batch_sizes=x.batch_sizes)
        elif isinstance(x, torch.Tensor) and x.dim() >= 2:
            time_axis = 1 if (getattr(module, "batch_first", False) and x.dim() == 3) else 0
            data, norms_by_step = x, functools.partial(time_step_norms, time_axis=time_axis)
            if x.is_floating_point():  # (padded but not packed: which steps are zeros, for the time rule)
                self.state.time_padding[info.name] = self.state.deferred.vector(padding_by_time_step(x, time_axis))
        else:
            return None  # an unusual input: no per-time-step view
        if not data.is_floating_point():
            return None
        if isinstance(module, (nn.LSTM, nn.GRU)) and module.bias:
            # (how far the gate that keeps the state is open, from its first layer's bias: an LSTM's forget gate, gates
            # in order i, f, g, o; a GRU's update gate z, in h' = (1 - z) n + z h, gates in order r, z, n)
            keep = slice(module.hidden_size, 2 * module.hidden_size)
            bias = (module.bias_ih_l0.detach()[keep] + module.bias_hh_l0.detach()[keep]).mean()
            self.state.keep_gate_bias[info.name] = self.state.deferred.scalar(bias)
        hook = functools.partial(self._on_time_grad, self.state.ticket, info.name, norms_by_step)
        if data.grad_fn is not None:  # (the hook lives on the data's node, and goes with this step's graph)
            data.register_hook(hook)
            return None
        if data.requires_grad:
            # A leaf (an input the user differentiates): a hook on it would stay for good. Hook a view of it
            # instead: the same values, and the gradient passes through the view to x unchanged.
            alias = data.view_as(data)
        else:
            # The input carries no gradient (raw data): give the layer a detached alias that does. Same values,
            # same parameter gradients; the extra gradient w.r.t. the input is computed on sampled steps only.
            alias = data.detach().requires_grad_(True)
        alias.register_hook(hook)
        return (x._replace(data=alias) if isinstance(x, PackedSequence) else alias, *args[1:])

    def _on_forward(self, module, args, output):
        if _compiled_or_transformed() or self._hooks_paused:  # (in this order: no guard on the flag)
            return None
        if not self.in_its_thread():  # (its pre-hook claimed the thread, or left it to another)
            return None
        try:
            if self._depth:
                self._depth -= 1
            state = self.state
            info = self.infos.get(module)
            if info is None or not torch.is_grad_enabled():
                return None
            if self._names_ahead is not None:
                self._name_ahead(info.name, args, output)
            if state is None:
                return None
            if info.name in self._roots and not info.leaf:
                self._note_model_mode(state, module, info.name)
            if not info.leaf and info.has_weights:  # (its output comes after its layers': its depth is after theirs)
                state.order.setdefault(info.name, len(state.order))
            y = output if isinstance(output, torch.Tensor) else _first_tensor(output)
            if y is None or not (y.is_floating_point() or y.is_complex()):
                return None
            name = info.name
            node = y.grad_fn
            if y is output and len(args) == 1 and y is args[0]:
                if state.input_nodes.get(id(module), (None,))[0] == id(node):
                    # its input passed through untouched (Identity, a dropout of 0): the op that made it names it. (An
                    # in-place activation returns its input too, changed: made anew by the activation's own node.)
                    return None
            if y is output and not info.recurrent:  # the usual case: one tensor out
                if node is not None:
                    state.names.tag(node, name)
                    state.outputs_made = True
                    if name in self.root_names:
                        state.model_outputs.add(id(node))
            else:
                self._note_output_nodes(state, info, output)
            if not y.requires_grad and _dense(y) and not _shares_memory_with_input(y, args):
                state.made_without_grad.note(y, name)  # (a NaN the graph reads from it is named by this module)
            if not y.requires_grad or y.is_complex():  # (a complex layer is named in the graph, not measured)
                return None
            if isinstance(module, NORMS_OVER_SAMPLES) and _one_value_per_group(module, args):
                state.norm_over_one_value[name] = None  # (its output is its bias, whatever its input)
            if isinstance(module, BATCH_NORMS) and not module.training and _never_estimated(module):
                state.batchnorm_never_estimated[name] = None  # (model.eval() left on: it normalises by 0 and 1)
            if isinstance(module, DROPOUTS) and module.training and module.p > 0:
                state.dropout_sites[name] = float(module.p)  # (is it the last thing before the loss?)
                if module.p >= DROPOUT_MOSTLY:
                    state.dropouts[name] = (float(module.p), y.numel())  # drops most: p is a share to drop, not keep
            # (an RNN's h_n too, and a hand-written cell's (h, c), called with a state: it may be what is cut)
            every_output = info.recurrent or (y is not output and len(args) >= 2)
            for t in (_tensors(output) or (y,)) if every_output else (y,):
                if t.is_floating_point():
                    state.output_memory.note(t, name)
            # (A leaf output, the module's own parameter say, is not hooked: the hook would stay on it for good.)
            if info.has_weights and state.input_spread is None and self._input_spread_looks < INPUT_SPREAD_LOOKS:
                self._look_at_input_spread(state, info, y)
                self._look_at_input_scale(state, info, args)
            if info.has_weights and self._output_spread_looks < OUTPUT_SPREAD_LOOKS and name not in state.layer_spreads:
                if state.input_spread and state.input_spread[0] == name:  # (the first weighted layer's: measured above)
                    state.layer_spreads[name] = state.input_spread[1]
                elif y.dim() >= 2 and y.shape[0] > 1 and not info.recurrent and not info.kind.startswith("Embedding"):
                    state.layer_spreads[name] = state.deferred.scalar(spread_across_batch(y))
            if info.kind == "Embedding" and self._padding_looks < PADDING_LOOKS and module.padding_idx is not None:
                if args and isinstance(args[0], torch.Tensor):  # (read with the gradient at its output; called twice
                    # in the step, a shared embedding, which call's gradient arrives first is not known: not read)
                    state.padding_ids[name] = None if name in state.padding_ids else (args[0], module.padding_idx)
            if info.kind == "Embedding" and self._position_looks < POSITION_LOOKS and args:
                ids = args[0]  # (batch, positions): is every position read by the loss?
                if isinstance(ids, torch.Tensor) and ids.dim() == 2 and ids.shape[0] >= 2 and ids.shape[1] >= 4:
                    state.position_ids[name] = None if name in state.position_ids else True
            if info.kind == "Embedding" and state.token_ids is None and self._loss_mask_looks < LOSS_MASK_LOOKS:
                if module.padding_idx is not None and args and isinstance(args[0], torch.Tensor):
                    state.token_ids = (args[0], module.padding_idx)  # (to compare with a loss mask: padding kept?)
            # (a module that returns a loss, one number, is no layer: its output's gradient is d loss / d loss = 1)
            if (info.has_weights or info.recurrent) and node is not None and y.dim() > 0:
                if info.recurrent == "cell":
                    calls = state.cell_calls.setdefault(name, [])
                    calls.append(None)
                    y.register_hook(functools.partial(self._on_cell_grad, state.ticket, name, len(calls) - 1))
                # a hook on the node that made y sees d loss / d y as it enters; cheaper than a tensor hook
                node.register_prehook(functools.partial(self._on_output_node_grad, state.ticket, name, y.output_nr))
                # (which of its calls the loss reaches: the last alone, a loss overwritten in a loop? Tagged on the
                # nodes, not held: holding them would keep their graphs alive)
                call = state.call_counts[name] = state.call_counts.get(name, 0) + 1
                state.calls.tag(node, (name, call - 1))
        except Exception as error:
            if not _not_dense(output):  # (a sparse or nested output, a layer of a graph network say: unmeasured)
                self._fail("forward hook", error)
        except BaseException:  # (Ctrl-C in the hook: the script may catch it and train on)
            self._drop_step_in_flight()
            raise
        return None

    def _note_model_mode(self, state: StepState, model: nn.Module, name: str) -> None:
        """Whether a watched model that trains (a parameter requires grad: not a frozen encoder under a linear probe)
        and holds modules that compute differently in eval mode (batch norms keeping running statistics, dropouts of
        p > 0) ran in training mode on this step: training if any of its calls with gradient did (a GAN's
        discriminator set to eval for the generator's update and back for its own)."""
        changed = self._mode_sensitive.get(name)
        if changed is None:
            modules = [(self.infos[m].name, m) for m in model.modules() if m in self.infos]  # (named as elsewhere)
            changed = self._mode_sensitive[name] = {
                "batch_norms": [p for p, m in modules if isinstance(m, BATCH_NORMS) and m.track_running_stats],
                "dropouts": [p for p, m in modules if isinstance(m, DROPOUTS) and m.p > 0],
            }
        if not (changed["batch_norms"] or changed["dropouts"]):
            return
        if any(p.requires_grad for p in model.parameters()):  # (not kept: the model is held weakly)
            state.model_modes[name] = state.model_modes.get(name, False) or model.training

    def _name_ahead(self, name: str, args, output) -> None:
        """Name the nodes that made a module's outputs for the next step, which is sampled (`_start_step`). An output
        that is the module's input, already named (Identity), keeps its name."""
        names = self._names_ahead[1]
        for t in (output,) if isinstance(output, torch.Tensor) else _tensors(output):
            node = t.grad_fn
            if node is not None and not (node in names and any(t is arg for arg in args)):
                names.tag(node, name)

    def _look_at_input_spread(self, state: StepState, info: ModuleInfo, y: torch.Tensor) -> None:
        """On the first few sampled steps: how much the first weighted layer's outputs differ between examples.
        Inputs far smaller than the layer's bias (divided by 255 twice), or varying little around a large mean, give
        every example nearly the same output, and nothing to learn from. (An embedding reads indices: not judged.)"""
        self._input_spread_looks += 1
        if not info.kind.startswith("Embedding") and y.dim() >= 2 and y.shape[0] > 1 and not info.recurrent:
            state.input_spread = (info.name, state.deferred.scalar(spread_across_batch(y)))
        else:
            state.input_spread = ()

    def _look_at_input_scale(self, state: StepState, info: ModuleInfo, args) -> None:
        """With the spread above, the size of the first weighted layer's input features when it is a Linear given a
        (batch, features) matrix: the root mean square of each feature's column, its largest and smallest. Raw
        features of very different scales (x^8 of values near 4: 6.5e4) make the first updates huge."""
        x = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if not info.kind.startswith("Linear") or x is None or x.dim() != 2 or x.shape[0] < 2:
            return
        if not x.is_floating_point() or not _dense(x):
            return
        columns = x.detach().float().pow(2).mean(0).sqrt()
        scalar = state.deferred.scalar
        state.input_scale = (info.name, scalar(columns.max()), scalar(columns.min()))

    def _note_output_nodes(self, state: StepState, info: ModuleInfo, output) -> None:
        """The autograd nodes that made a layer's outputs: they name the layer in the graph."""
        for t in _tensors(output):
            node = t.grad_fn
            if node is not None:
                state.names.tag(node, info.name)
                state.outputs_made = True
                if info.recurrent:
                    state.recurrent_outputs.tag(node, info.name)
                    state.recurrent.add(info.name)

    # --- gradient hooks (sampled steps only) --------------------------------------------------------------------------
    def _on_output_node_grad(self, ticket: Ticket, name: str, output_nr: int, grad_outputs):
        state = ticket.state
        if state is None or self._grad_of_inputs:  # (an input gradient's pass: not the training's)
            return
        try:
            grad = grad_outputs[output_nr]
            if grad is not None:
                state.out_grad_norms.append((name, state.deferred.scalar(norm(grad))))
                if state.position_ids.get(name) and grad.dim() == 3 and name not in state.position_grads:
                    by_position = torch.linalg.vector_norm(grad.detach().float(), dim=(0, 2))
                    state.position_grads[name] = state.deferred.vector(by_position)
                if state.padding_ids.get(name) is not None and name not in state.padding_checks:
                    ids, padding_idx = state.padding_ids[name]
                    found = padding_idx_check(grad, ids, padding_idx)
                    if found is not None:
                        state.padding_checks[name] = (padding_idx, *map(state.deferred.scalar, found))
        except Exception as error:
            if not _not_dense(grad_outputs):  # (the gradient of a sparse or nested output: unmeasured)
                self._fail("output gradient hook", error)

    def _on_cell_grad(self, ticket: Ticket, name: str, call: int, grad):
        state = ticket.state
        if state is None or self._grad_of_inputs:  # (an input gradient's pass: not the training's)
            return
        try:
            state.cell_calls[name][call] = state.deferred.scalar(torch.linalg.vector_norm(grad.detach().float()))
        except Exception as error:
            if not _not_dense(grad):
                self._fail("recurrent cell gradient hook", error)

    def _on_time_grad(self, ticket: Ticket, name: str, norms_by_step, grad):
        state = ticket.state
        if state is None or self._grad_of_inputs:  # (an input gradient's pass: not the training's)
            return
        try:
            state.time_norms[name] = state.deferred.vector(norms_by_step(grad))
        except Exception as error:
            if not _not_dense(grad):
                self._fail("time-step gradient hook", error)

    def _on_gate_grad(self, ticket: Ticket, key: str, mask, position: int, grad_inputs, grad_outputs):
        state = ticket.state
        if state is None:
            return
        try:
            grad_in = grad_inputs[position] if len(grad_inputs) > position else None
            grad_out = grad_outputs[0] if grad_outputs else None
            if grad_in is None or grad_out is None or grad_in.numel() != grad_out.numel():
                return
            grad_in = grad_in.reshape(grad_out.shape)  # (a 0-dim KL against free nats of shape (1,): the same one)
            blocked, arriving = blocked_fraction(grad_in, grad_out, mask)
            tally = state.gates[key]
            tally.pairs.append((state.deferred.scalar(blocked), state.deferred.scalar(arriving)))
            tally.elements += grad_out.numel()
        except Exception as error:
            if not _not_dense(grad_inputs, grad_outputs):
                self._fail("gating-op gradient hook", error)

    def _on_nan_prone_grad(self, ticket: Ticket, site: int, grad_inputs, grad_outputs):
        # The node is looked up in the state, not held by the hook: a hook on a node that held the node itself
        # would be a cycle through PyTorch's C++ graph, which Python's collector cannot free (see `release`).
        state = ticket.state
        if state is None:
            return
        try:
            node, label = state.nan_prone[site]
            outs = [g for g in grad_outputs if g is not None]
            ins = [g for g in grad_inputs if g is not None]
            if not outs or not ins:
                return
            # A sum is NaN or Inf when a term is (or when finite terms overflow it, which needs entries near
            # 1e33: broken too). One reduction is far cheaper than isfinite(g).all(), which writes a mask first.
            finite_out = torch.stack([torch.isfinite(total(g)) for g in outs]).all()
            finite_in = torch.stack([torch.isfinite(total(g)) for g in ins]).all()
            born_here = finite_out & ~finite_in  # finite gradient in, non-finite gradient out: NaN born here
            state.nan_checks.append((state.deferred.scalar(born_here), node, label))
        except Exception as error:
            if not _not_dense(grad_inputs, grad_outputs):
                self._fail("NaN check hook", error)

    def _keep_gradient_sample(self, state: StepState) -> None:
        """Under a loss multiplied by a large constant (not a GradScaler's), the norm of one gradient as backward left
        it: compared at the optimiser step, it tells whether the gradients were divided back in between."""
        scale = state.root_scale
        if scale is None or abs(scale) < self.thresholds.loss_scaled_up or state.loss_scaled:
            return
        if self._last_gradient is not None:
            state.gradient_sample = norm(self._last_gradient[0].grad.detach()).float()

    def _compare_gradient_sample(self, state: StepState) -> None:
        """At the optimiser step: is that gradient's norm still what backward left? (A clip that does not cut multiplies
        it by exactly 1: unchanged. NaN then and now is unchanged too: NaN divided back is NaN.)"""
        param = self._last_gradient[0] if self._last_gradient is not None else None
        now = None if param is None else param.grad
        if now is None:  # (cleared)
            state.gradients_changed_before_step = True
            return
        before, after = state.gradient_sample, norm(now.detach()).float()
        # (1: changed; 0: unchanged; NaN: not known, a gradient of 0, NaN or inf, which dividing leaves so)
        telling = before.isfinite() & (before > 0)
        differs = torch.where(telling, (after != before).float(), torch.nan)
        state.gradients_changed_at = state.deferred.scalar(differs)

    @staticmethod
    def _keep_backward_gradient(state: StepState, param: torch.Tensor) -> None:
        """Some entries of the parameter's gradient as this backward left it, copied: compared at the optimiser step
        with the gradient it applies (_compare_with_backward_gradient)."""
        if _dense(param.grad):
            state.gradient_from_backward = (
                param,
                spread(param.grad.detach(), UPDATE_SAMPLE).to(torch.float32, copy=True),
            )

    def _compare_with_backward_gradient(self, state: StepState) -> None:
        """At a sampled optimiser step whose gradient is not the one the last backward left (replaced, or changed in
        place, by hand: DP-SGD's clipped and noised per-example gradients, noise injection, a decay added by hand): how
        it compares with backward's, the ratio of their norms and their cosine, on the same entries of one parameter's.
        Looked at from the step after the first such change on (nothing is kept at a backward before: most runs never
        change their gradients)."""
        self._gradients_changed_by_hand = True
        if state.gradient_from_backward is None:
            return
        param, before = state.gradient_from_backward
        now = param.grad
        if param is not self._last_gradient[0] or now is None or now.shape != param.shape or not _dense(now):
            return
        after = spread(now.detach(), UPDATE_SAMPLE).float()
        size_before, size_after = norm(before), norm(after)
        cosine = torch.dot(before.reshape(-1), after.reshape(-1)) / (size_before * size_after)
        ratio_at = state.deferred.scalar(size_after / size_before)
        label = self._param_label(param)
        state.gradient_replaced = (label[1] if label else "a parameter", ratio_at, state.deferred.scalar(cosine))

    def note_sample(self, distribution, drawn) -> None:
        """A distribution that could be differentiated through (`has_rsample`) was sampled with `sample()`, under
        no_grad, on a sampled step: when its parameters have a graph, where the draw lives (a module reading it gets
        no path back to them)."""
        try:
            if not (self.sampling and self.state is not None and isinstance(drawn, torch.Tensor)):
                return
            if drawn.is_floating_point() and _dense(drawn) and _parameters_with_a_graph(distribution):
                self.state.drawn.note(drawn, type(distribution).__name__)
        except Exception as error:
            self._fail("noting a distribution's sample", error)

    def enter_grad_of_inputs(self, inputs) -> bool:
        """`torch.autograd.grad` with respect to tensors that are not watched parameters begins (an R1 penalty's
        d D(x) / d x, a saliency map's): the gradients it sends through the layers are not the training's, and the
        hooks on their outputs leave them out until it ends. True when so (then `leave_grad_of_inputs` follows)."""
        inputs = (inputs,) if isinstance(inputs, torch.Tensor) else inputs
        if any(id(t) in self.param_labels for t in inputs if isinstance(t, torch.Tensor)):
            return False
        self._grad_of_inputs += 1
        return True

    def leave_grad_of_inputs(self) -> None:
        self._grad_of_inputs -= 1

    def note_grad(self, inputs, create_graph: bool, result=()) -> None:
        """`torch.autograd.grad` was called during this sampled step, with respect to `inputs`, which are not parameters
        the probe watches (first-order MAML's inner step takes the weights' gradient, without a graph on purpose):
        without `create_graph=True` (a penalty made of it is a constant to the backward), or with it (the loss is
        made of a gradient with respect to the inputs: a Hamiltonian network's, a force field's)."""
        if self.sampling and self.state is not None:
            inputs = (inputs,) if isinstance(inputs, torch.Tensor) else inputs
            if not any(id(t) in self.param_labels for t in inputs if isinstance(t, torch.Tensor)):
                if create_graph:
                    self.state.grad_of_inputs = True
                    # (exactly 0 everywhere: the second derivative of a piecewise-linear network, a ReLU MLP's u_xx)
                    sizes = [g.detach().abs().amax() for g in _tensors(result) if g.is_floating_point() and g.numel()]
                    if sizes and len(self.state.input_grad_sizes) < 8:
                        self.state.input_grad_sizes.append(self.state.deferred.scalar(torch.stack(sizes).amax()))
                else:
                    self.state.grad_without_graph = True

    def _plateau_schedule(self, optimizer) -> tuple[float, float] | None:
        """(lr, the rate before a ReduceLROnPlateau first stepped) of the optimiser's first parameter group, as
        `_lr_schedule` reads (lr, initial_lr) for the schedulers that keep the rate given."""
        given = self._plateau_rates_given.get(optimizer)
        lr = optimizer.param_groups[0].get("lr") if optimizer.param_groups else None
        if given is None or given <= 0 or not isinstance(lr, (int, float)) or not math.isfinite(lr):
            return None
        return float(lr), given

    def _rate_set_by_hand(self, optimizer) -> tuple[float, float] | None:
        """(lr, the lr at the first sampled step) of the optimiser's first parameter group, once they differ and no
        scheduler keeps the rate given (`g["lr"] = ...` in the training loop: a warm-up or a decay written by hand)."""
        lr = optimizer.param_groups[0].get("lr") if optimizer.param_groups else None
        if not isinstance(lr, (int, float)) or isinstance(lr, bool) or not math.isfinite(lr):
            return None
        first = self._first_rates.setdefault(optimizer, float(lr))
        return (float(lr), first) if first > 0 and lr != first else None

    def note_initialised(self, tensor) -> None:
        """A `torch.nn.init` initialiser filled `tensor`: a watched parameter, once the training optimiser has stepped,
        is initialised again (its module's `reset_parameters()`, `model.apply(init)`)."""
        try:
            if self._primary_steps and isinstance(tensor, nn.Parameter):
                label = self._param_label(tensor)
                if label is not None:
                    self.doctor.history.note_reinitialised(label[1], label[2], self.step)
        except Exception as error:
            self._fail("noting a parameter initialised again", error)

    def note_scheduler_step(self, scheduler) -> None:
        """`LRScheduler.step()` was called (its first call is the scheduler's own, when it is built; one built before
        the probe began is met at its first step in the loop)."""
        try:
            self._schedulers_stepped.add(scheduler)
            if getattr(scheduler, "last_epoch", None) == 0 and self.step > 0:  # (its first call: built just now)
                primary = self.primary() if self.primary is not None else None
                if primary is not None and getattr(scheduler, "optimizer", None) is primary:
                    lr_given = primary.param_groups[0].get("initial_lr")
                    if _plain_number(lr_given):
                        self.doctor.history.note_scheduler_made_anew(self.step, type(scheduler).__name__, lr_given)
        except Exception as error:
            self._fail("noting a learning-rate scheduler's step", error)

    def _look_for_rates_set_by_hand(self, optimizer) -> None:
        """At each training step, with a scheduler stepped over `optimizer`: a group's rate that differs from the one
        the scheduler set last was set by hand (a backbone "unfrozen" by `param_groups[0]["lr"] = 1e-4`). If the
        scheduler's next step puts its own back, and the script does not set it again, the hand-set rate was
        overwritten (LambdaLR and the others recompute every group's rate from its base rate): noted in the history
        with how many steps it lasted."""
        for scheduler in list(self._schedulers_stepped):
            scheduled = getattr(scheduler, "_last_lr", None)
            if getattr(scheduler, "optimizer", None) is not optimizer or not isinstance(scheduled, list):
                continue
            for group_index, (group, rate) in enumerate(zip(optimizer.param_groups, scheduled)):
                lr = group.get("lr")
                if not (_plain_number(lr) and _plain_number(rate)):
                    continue
                key = (id(scheduler), group_index)
                if not _same_rate(lr, rate):  # (not the schedule's: set by hand)
                    value, since, steps, before = self._rates_set_by_hand.get(key, (lr, self.step, 0, rate))
                    self._rates_set_by_hand[key] = (lr, since if value == lr else self.step, steps + 1, before)
                elif key in self._rates_set_by_hand:  # (the schedule's own again)
                    value, since, steps, before = self._rates_set_by_hand.pop(key)
                    if _same_rate(lr, before):  # (the very rate it held before: the hand-set one overwritten; a
                        # chainable schedule, CosineAnnealingLR's, carries a hand-set rate on from where it was set)
                        self.doctor.history.note_rate_overwritten(
                            type(scheduler).__name__, group_index, value, float(lr), since, steps
                        )

    def _schedule_not_applied(self, optimizer) -> dict | None:
        """A scheduler stepped in the loop (after the one call it makes when built) over an optimiser that has never
        stepped and holds parameters the training `optimizer` steps: `LambdaLR(make_optimizer(model), ...)`, the
        schedule set on a second optimiser while the first trains at the rate it was given. {"scheduler", "lr": the
        training optimiser's, "scheduled_lr": the idle one's, "scheduler_steps"}, or None."""
        for scheduler in list(self._schedulers_stepped):
            idle = getattr(scheduler, "optimizer", None)
            if idle is None or idle is optimizer or getattr(scheduler, "last_epoch", 0) < 2:
                continue
            if self._known_optimizer(idle) is not None or getattr(idle, "_opt_called", False):
                continue  # (it has stepped)
            trained = {id(p) for p in _stepped_parameters(optimizer)}
            if not any(id(p) in trained for p in _stepped_parameters(idle)):
                continue
            lr, scheduled = optimizer.param_groups[0].get("lr"), idle.param_groups[0].get("lr")
            if not (_plain_number(lr) and _plain_number(scheduled)):
                continue
            return {
                "scheduler": type(scheduler).__name__,
                "lr": float(lr),
                "scheduled_lr": float(scheduled),
                "scheduler_steps": int(scheduler.last_epoch),
            }
        return None

    def note_plateau_step(self, scheduler, metrics, lrs_before: list) -> None:
        """`ReduceLROnPlateau.step(metrics)` of a scheduler over a watched optimiser: the metric, and whether the
        call cut a learning rate."""
        try:
            if not self._known_optimizer(scheduler.optimizer):  # (one that stepped watched parameters already)
                return
            cut = any(group["lr"] < lr for group, lr in zip(scheduler.optimizer.param_groups, lrs_before))
            # (the rate it was given, as the other schedulers keep it in `initial_lr`: ReduceLROnPlateau keeps none)
            if lrs_before and isinstance(lrs_before[0], (int, float)):
                self._plateau_rates_given.setdefault(scheduler.optimizer, float(lrs_before[0]))
            self.doctor.history.note_plateau_step(id(scheduler), self.step, scheduler.mode, float(metrics), cut)
        except Exception as error:
            self._fail("noting a ReduceLROnPlateau step", error)

    def note_clipping(self, max_norm, total, given_nothing: bool = False, parameters=()) -> None:
        """`torch.nn.utils.clip_grad_norm_(parameters, max_norm)` returned `total`, the norm before clipping (given
        an empty generator, when `given_nothing`)."""
        try:
            self._clipping_wrote_the_gradients(parameters)
            if self.sampling and self.state is not None and isinstance(total, torch.Tensor) and total.numel() == 1:
                if self.state.clipping is not None and self.state.clipping[0] <= float(max_norm):
                    return  # (the tightest cap of the step is the one that acts: not a norm read for a log, `inf`)
                norm_at = self.state.deferred.scalar(total.detach().float().reshape(()))
                # (after the training optimiser's step, before the next backward: the step used the gradient unclipped)
                after_step = self._stepped_since_backward
                # (on gradients a GradScaler multiplied, before `scaler.unscale_(optimizer)`: the norm is scale times)
                on_scaled = self.state.loss_scaled and not _unscaled_yet()
                self.state.clipping = (float(max_norm), norm_at, given_nothing, after_step, on_scaled)
        except Exception as error:
            self._fail("noting a clip_grad_norm_", error)

    def _clipping_wrote_the_gradients(self, parameters) -> None:
        """Clipping rescales each gradient in place (`clip_grad_norm_` multiplies even by 1), one version on: that
        write is the clipping's, not the script's (a gradient written after backward() and all zero at the step reads
        as zeroed by hand, a freeze). A gradient one version on since backward left it is taken as it is now."""
        state = self.state
        if (
            state is None
            or state.grad_versions is None
            or self._plan is None
            or state.grad_versions[0] is not self._plan
        ):
            return
        seen, clipped = state.grad_versions[1], {id(p) for p in _tensors(parameters)}
        for i, param in enumerate(self._plan.params):
            grad = param.grad
            if id(param) not in clipped:
                continue
            if seen[i] is not None and grad is not None and (id(grad), grad._version - 1) == seen[i]:
                seen[i] = (id(grad), grad._version)

    def before_value_clipping(self, parameters, clip_value) -> tuple | None:
        """Before `torch.nn.utils.clip_grad_value_(parameters, clip_value)` caps the gradients in place: their norm,
        and how many of their entries lie beyond the cap (deferred indices), and how many entries there are."""
        try:
            grads = _dense_gradients(parameters)
            if not grads:
                return None
            cap = abs(float(clip_value))
            beyond = torch.stack([(g.detach().abs() > cap).sum() for g in grads]).sum().float()
            deferred = self.state.deferred
            return deferred.scalar(_total_norm(grads)), deferred.scalar(beyond), sum(g.numel() for g in grads)
        except Exception as error:
            self._fail("measuring before a clip_grad_value_", error)
            return None

    def note_value_clipping(self, parameters, clip_value, before: tuple | None) -> None:
        """After `clip_grad_value_`: the norm of the gradients it left, noted with what `before_value_clipping`
        measured. Of several calls in a step, the tightest cap is kept."""
        try:
            self._clipping_wrote_the_gradients(parameters)
            grads = _dense_gradients(parameters)
            if before is None or not grads or self.state is None:
                return
            cap = abs(float(clip_value))
            if self.state.value_clipping is not None and self.state.value_clipping[0] <= cap:
                return
            norm_after = self.state.deferred.scalar(_total_norm(grads))
            self.state.value_clipping = (cap, *before, norm_after)
        except Exception as error:
            self._fail("noting a clip_grad_value_", error)

    # --- backward (every step) ----------------------------------------------------------------------------------------
    def before_backward(self, tensors, retain_graph: bool = False) -> None:
        try:
            roots = _tensors(tensors) if not isinstance(tensors, torch.Tensor) else [tensors]
            if self._awaiting:
                self._resolve_backward_mode()
            if self._backward_calls and self._stepped_since_backward:
                self._losses_between_steps = True  # this step's losses were each stepped on by an optimiser
            self._stepped_since_backward = False
            self._backward_calls += 1
            hand_looks = self._hand_update_looks < HAND_UPDATE_LOOKS and self.mode != "optimizer"
            if self.discover and not self.root_names and not self._script_tensors and hand_looks:
                self._look_for_tensors_updated_by_hand(roots)
            elif self._script_tensor_values and self.sampling:
                self._look_whether_script_tensors_moved()
            self.doctor.history.backward_passes += 1
            loss = roots[0] if roots else None
            if self._reset_marks is not None:
                self._reset_marks.look_before_backward()
            factor = None if loss is None else _scale_of(loss)
            if self.state is not None and factor is not None:
                self.state.loss_scaled = True
                if self.state.loss_scale_at is None:  # (the scale changes only at scaler.update(), after the step)
                    self.state.loss_scale_at = self.state.deferred.scalar(factor.detach().reshape(()))
            # (inside the optimiser step, the loss of its first closure call only: LBFGS returns that one, and
            # evaluates more in its line search)
            first = not (self._in_step and self._losses)
            score = self._score_differentiated(loss)  # (a saliency map's score: no loss, its value not the loss's)
            if first and score is None and loss is not None and loss.numel() == 1 and loss.is_floating_point():
                self._record_loss(loss)
            if self.sampling and self.state is not None:
                self._gradient_before_backward = self._representative_gradient()
                self.state.retained_graph = self.state.retained_graph or retain_graph
            if self.sampling and self.state is not None and not self._hooks_paused:
                self._look_for_reset_since_last_backward(self.state)
                self._note_what_the_pass_differentiates(self.state, loss, score)
                self._walk_graph(roots)  # (not inside the optimiser step: an LBFGS closure's layers are not watched)
        except Exception as error:
            self._fail("before backward", error)
        except BaseException:  # (Ctrl-C in the hook: the script may catch it and train on)
            self._drop_step_in_flight()
            raise

    def after_backward(self) -> None:
        """Without an optimiser, each forward + backward is one step and ends here.

        Until an optimiser has been seen we cannot tell: the step may yet end at an optimiser step (the runner
        meets optimisers only when they first step). So wait with the hooks on: an optimiser step next means
        "optimizer" mode; another forward or backward first means "backward" mode, and the step ended here.
        """
        try:
            if self.state is not None:
                # The outputs of the forward pass just differentiated are done with: their memory may now be
                # reused (the next micro-batch of an accumulated step), and an input found there is no cut.
                self.state.output_memory.clear()
                self.state.made_without_grad.clear()
                # (had they a gradient then? none at the optimiser step: cleared in between, or stepped before this)
                if self._plan is not None and not self.state.grads_after_backward:
                    self.state.grads_after_backward = any(p.grad is not None for p in self._plan.params)
            if self.sampling and self.state is not None:
                if self._plan is not None:
                    versions = [None if p.grad is None else (id(p.grad), p.grad._version) for p in self._plan.params]
                    self.state.grad_versions = (self._plan, versions)
                self._last_gradient = self._representative_gradient()
                if _left_as_it_was(self._gradient_before_backward):
                    # the gradient untouched: this backward reached none of the parameters (a probe trained on
                    # detached features, by its own optimiser), and is no pass of this step's
                    self._last_gradient = None
                self._keep_gradient_sample(self.state)
                if self._gradients_changed_by_hand and self._last_gradient is not None:
                    self._keep_backward_gradient(self.state, self._last_gradient[0])
            if self._reset_marks is not None:
                self._reset_marks.follow()
                if self.mode == "backward":  # (no optimiser: the weights are updated by hand between backward passes)
                    self._check_reset(updated_only=True)
            if self._closure_params is not None:  # the first backward of the step, in its closure (LBFGS)
                params, self._closure_params = self._closure_params, None
                self._hooks_paused = True
                self._measure_parameters(params, snapshot=True)
            if self.mode == "backward":
                self._close_backward_step()
            elif self.mode == "unknown":
                self._awaiting = True
                self._install_module_hooks()
        except Exception as error:
            self._fail("after backward", error)
        except BaseException:  # (Ctrl-C in the hook: the script may catch it and train on)
            self._drop_step_in_flight()
            raise

    def _representative_gradient(self) -> tuple | None:
        """(parameter, weak reference to its gradient, the gradient's version, the parameter's version) of the first
        parameter the last plan
        measured (before the first optimiser step, the model's) that holds a gradient: read again at the step's next
        backward (`_look_for_reset_since_last_backward`) or at its optimiser step (changed in place before it?)."""
        for param in self._plan.params if self._plan is not None else self._model_parameters():
            if param.grad is not None:
                return param, weakref.ref(param.grad), param.grad._version, param._version
        return None

    def _look_for_reset_since_last_backward(self, state: StepState) -> None:
        """A backward that follows another in one step, with no optimiser step between: were the gradients reset in
        between? (zero_grad() at the top of a loop over micro-batches: only the last one's gradient is stepped.)
        One parameter stands for all: its gradient gone (None), replaced, or zeroed in place (a version on, no
        backward having run)."""
        last, self._last_gradient = self._last_gradient, None
        if last is None or self.mode != "optimizer":  # (without one, each backward is a step of its own)
            return
        param, grad, version, weights_version = last
        state.backward_pairs += 1
        if param.grad is None or param.grad is not grad() or param.grad._version != version:
            state.reset_between_backwards += 1
        if param._version != weights_version:  # (moved between the passes: SAM's ascent step, say)
            state.weights_moved_between_backwards = True

    def _score_differentiated(self, loss) -> tuple | None:
        """(module output, reads) when this backward's root is a score picked off a module's output, not a loss
        (`graph_tools.score_of_an_output`). Told on sampled steps, where the modules' outputs are tagged; between
        them, by the same reads at the root as a score had there (a few nodes looked at, and only once one was seen)."""
        root = getattr(loss, "grad_fn", None)
        if root is None:
            return None
        if self.sampling and self.state is not None and not self._hooks_paused:
            score = graph_tools.score_of_an_output(root, self.state.names)
            if score is not None:
                self._score_reads.add(tuple(score[1]))
            return score
        if self._score_reads:
            reads = graph_tools.reads_at_the_root(root)
            return reads if tuple(reads[1]) in self._score_reads else None
        return None

    def _note_what_the_pass_differentiates(self, state: StepState, loss, score) -> None:
        """A score picked off a module's output (module, reads), or a loss (its op): two kinds of pass in a step."""
        if score is not None:
            output, reads = score
            state.score_passes.append((state.names.get(output), reads))
            return
        sign, function = graph_tools.signed_loss(loss.grad_fn) if getattr(loss, "grad_fn", None) else (1, None)
        if function is not None and sign > 0:
            state.loss_passes.append(function)

    def _close_backward_step(self) -> None:
        self._awaiting = False
        if self.sampling and self.state is not None:
            state = self.state
            self._finish_sampled_step(with_update=False)
            # were the gradients reset before the next backward? (those of the parameters the step measured)
            params = [p for _, _, p in state.params] or self._model_parameters()
            self._reset_marks = GradientMarks(params, by_hand=self.mode == "backward")
        self._end_step()

    def _resolve_backward_mode(self) -> None:
        """A new forward or backward began after a backward with no optimiser step between. Either there is no
        optimiser, and each backward ends a step; or one has yet to take its first step, after several backward
        passes (gradients accumulated over micro-batches, or a loss per task): then the step goes on."""
        if self._optimizer_yet_to_step():
            self._awaiting = False  # (until the next backward ends)
            return
        self.mode = "backward"
        self._close_backward_step()

    def _optimizer_yet_to_step(self) -> bool:
        """Whether an optimiser exists that steps a watched parameter (none has stepped yet: the mode is unknown).
        Optimisers are only met when they step; this one is looked for once among every live object, at the first
        backward pass that follows another in one step before any optimiser step."""
        if self._backward_calls >= MAX_BACKWARDS_BEFORE_FIRST_STEP:  # it never steps: the backward passes are steps
            return False
        if self._optimizer_exists is None:
            self._optimizer_exists = False  # (until found: a lookup that fails is not made again)
            # (by type, not isinstance: that reads __class__, which some objects answer with a warning)
            optimizers = [c for c in gc.get_objects() if issubclass(type(c), torch.optim.Optimizer)]
            self._optimizer_exists = any(map(self._steps_a_watched_parameter, optimizers))
        return self._optimizer_exists

    def _steps_a_watched_parameter(self, optimizer) -> bool:
        try:
            return any(id(p) in self.param_labels for p in _stepped_parameters(optimizer))
        except Exception:  # (an optimiser half made, or a subclass without param_groups: not the training's)
            return False

    def _record_loss(self, loss: torch.Tensor) -> None:
        factor = _scale_of(loss)
        if not loss.is_cpu:  # (read later, with other steps' losses: no synchronisation per step)
            self._pending_device_losses.append((self.step, loss.detach(), factor))
            return
        value = loss.item() if factor is None else loss.item() / factor.item()
        self._losses.append(value)
        if not math.isfinite(value) and not self._nonfinite_seen:
            self.catch_up()  # (statistics still on their way from a GPU: an earlier step may hold the first NaN)
            if not self._nonfinite_seen:
                self._nonfinite_seen = True
                self._locate_forward_nonfinite(loss)

    def _flush_device_losses(self) -> None:
        if not self._pending_device_losses:
            return
        pending, self._pending_device_losses = self._pending_device_losses, []
        ones = torch.ones((), device=pending[0][1].device)
        pairs = [
            torch.stack([t.float().reshape(()), ones if f is None else f.float().reshape(()).to(t.device)])
            for _, t, f in pending
        ]
        # one transfer for all of them, not waited for: read once it has landed (`_read_arrived`)
        self._unread_losses.append(([step for step, _, _ in pending], HostCopy(torch.stack(pairs))))

    # --- reading what a GPU sent: records are built in step order, once their statistics have landed ------------------
    def _read_arrived(self, wait: bool = False) -> None:
        """Build the records of the sampled steps whose statistics have reached the host, oldest first (all of
        them, waiting for the device, when `wait`); likewise for losses. More than MAX_UNREAD on their way: the
        oldest is waited for, so a host far ahead of its device does not hold many steps' state."""
        # (never raises: it runs at the end of a step, and a failure must not end that step twice, or lose the rest)
        unread = self._unread
        while unread and (wait or len(unread) > MAX_UNREAD or unread[0].fetch.ready()):
            try:
                self._build_record(unread.popleft())
            except Exception as error:
                self._fail("building a sampled step's record", error)
        losses = self._unread_losses
        while losses and (wait or len(losses) > MAX_UNREAD or losses[0][1].ready()):
            steps, copy = losses.popleft()
            try:
                values = copy.numpy().tolist()
            except Exception as error:
                self._fail("reading the losses", error)
                continue
            for step, (value, scale) in zip(steps, values):
                self.doctor.add_loss(step, value / scale)  # (a scale of 1 where no gradient scaler was used)

    def catch_up(self) -> None:
        """Read every statistic still on its way from the device (waits for it): before findings are read."""
        self._read_arrived(wait=True)

    # --- the graph walk (sampled steps) -------------------------------------------------------------------------------
    def _walk_graph(self, roots) -> None:
        state = self.state
        root_nodes = [t.grad_fn for t in roots if isinstance(t, torch.Tensor) and t.grad_fn is not None]
        if roots and all(isinstance(t, torch.Tensor) and t.is_leaf and t.requires_grad for t in roots):
            state.loss_is_a_leaf = True  # (`torch.tensor(numpy_loss, requires_grad=True)`: nothing to go back through)
        if not root_nodes:
            return
        nodes = graph_tools.new_nodes(root_nodes, state.seen_nodes)  # those not met by an earlier backward
        if self._first_walked is None:
            self._first_walked = (state.step, state.names)
        first_step, first_names = self._first_walked
        if first_step < state.step and state.retained_graph:
            self._look_for_earlier_graph(state, nodes, first_step, first_names)
        state.roots.extend(root_nodes)
        state.root_ops.add(op_name(root_nodes[0]))  # (the same loss over several batches, or different losses?)
        many = {name: calls for name, calls in state.call_counts.items() if calls >= CALLS_MANY}
        if many and self._backward_calls == 1:  # (the step's first backward, after all its calls: which it reaches)
            reached = {name: [] for name in many}
            for node in nodes:
                found = state.calls.get(node)
                if found is not None and found[0] in reached:
                    reached[found[0]].append(found[1])
            for name, calls in many.items():
                state.calls_reaching_loss[name] = (calls, sorted(reached[name]))
        names = state.names
        if state.outputs_made and not state.outputs_reached:  # (modules made outputs before this backward: in it?)
            state.outputs_reached = any(node in names for node in nodes)
        # The loss is what lies between the roots and the modules' outputs. When no watched module's forward was
        # seen (a compiled model: the hooks do nothing inside it), no output bounds it, and every op of the model
        # would pass for the loss's (its ReLUs for the hinge of a margin loss): none is taken for the loss's then.
        loss_nodes = graph_tools.loss_side(root_nodes, names) if state.order else {}
        state.loss_ops.update(op_name(node) for node in loss_nodes)
        if state.probabilities_into_loss is None and not state.loss_ops.isdisjoint(SQUASHED_BY_LOSS):
            state.probabilities_into_loss = _probabilities_into_loss(loss_nodes, names)
        if state.probabilities_into_loss is None and "mul" in state.loss_ops:  # (t * softmax(z): the log left out?)
            found = graph_tools.probability_without_log(root_nodes[0])
            if found is not None:
                softmax, is_distribution = found
                site = names.get(softmax) or f"softmax after {graph_tools.nearest_upstream(softmax, names) or 'input'}"
                classes = int(graph_tools.saved_value(softmax, "_saved_result").shape[graph_tools.saved_dim(softmax)])
                flag = state.deferred.scalar(is_distribution)
                state.probabilities_into_loss = (site, "softmax without log", classes, flag)
        if state.classes_on_another_axis is None and "log_softmax" in state.loss_ops:
            state.classes_on_another_axis = _classes_on_another_axis(loss_nodes, names, self.info_by_name)
        # (its (N, N) product made on the loss side, or by the model's forward: CLIP's returns its similarities)
        if state.one_class_over_pairs is None and "nll_loss" in state.loss_ops:
            found = graph_tools.one_class_over_pairs(loss_nodes)
            if found is not None:
                rows, one_class, target = found
                state.one_class_over_pairs = (rows, state.deferred.scalar(one_class), state.deferred.scalar(target))
        if state.self_similarity is None and "nll_loss" in state.loss_ops and not state.loss_ops.isdisjoint(SIMILARITY):
            found = graph_tools.diagonal_of_a_self_similarity(loss_nodes)
            if found is not None:
                made_by, rows = found
                embedding = names.get(made_by) or graph_tools.nearest_upstream(made_by, names) or "input"
                state.self_similarity = {"embedding": embedding, "rows": rows}
        if state.unstopped_target is None and state.loss_ops.isdisjoint(graph_tools.HOLDS_EXAMPLES_APART):
            # (rows normalised on the loss side, or in the model's forward: looked for from the root, a few nodes)
            state.unstopped_target = graph_tools.predictor_without_stop_gradient(root_nodes, names)
        if state.confined_logits is None and "nll_loss" in state.loss_ops:
            # (cosines made on the loss side, or by the model's forward, its output the scores: a few nodes walked)
            state.confined_logits = graph_tools.confined_logits(loss_nodes)
        if state.softmax_into_squared_error is None and "mse_loss" in state.loss_ops:
            state.softmax_into_squared_error = _softmax_into_squared_error(loss_nodes, names)
        if state.root_scale is None:
            state.loss_term_weights = graph_tools.loss_term_weights(root_nodes[0]) or None
            state.summed_beside_a_mean = graph_tools.summed_beside_a_mean(root_nodes[0])
            state.root_scale = graph_tools.root_scale(root_nodes[0])
            state.summed_loss = graph_tools.summed_loss(root_nodes[0])
        if state.constant_loss_term is None and (state.grad_without_graph or state.grad_of_inputs):
            # (a term with no graph, or one that reaches no parameter: a residual of inputs alone, a constant to them.
            # With create_graph=True, a term with no graph at all only, `g.detach()`: one that reaches parameters of no
            # watched model, learnt loss weights or an unwatched critic's penalty, is no constant)
            terms = graph_tools.loss_terms(root_nodes[0])
            if state.grad_without_graph:
                state.constant_loss_term = any(t is None or not self._reaches_a_watched_parameter(t) for t in terms)
            else:
                state.constant_loss_term = None in terms
        if state.kl_div_of_probabilities is None:
            state.kl_div_of_probabilities = graph_tools.kl_div_of_probabilities(root_nodes[0])
        if state.kl_div_target_below_zero is None:
            below_zero = graph_tools.kl_div_target_below_zero(root_nodes[0])
            state.kl_div_target_below_zero = None if below_zero is None else state.deferred.scalar(below_zero)
        if state.negated_loss is None and state.loss_with_domain is None:
            sign, function = graph_tools.signed_loss(root_nodes[0])
            state.root_loss = function if sign > 0 else None
            if sign < 0:
                state.negated_loss = function
            elif function in graph_tools.LOSS_DOMAINS:
                state.loss_with_domain = function
            if state.loss_with_domain and self._losses and self._losses[-1] < -self.thresholds.loss_below_zero:
                # (a loss never negative came out negative: which of its inputs left its domain, read on the CPU, where
                # the loss is known at once, and only then)
                state.loss_outside_domain = graph_tools.loss_outside_its_domain(root_nodes[0])
        if loss_nodes:  # (a loop whose every output the loss reads refines a prediction; two outputs, two losses)
            for node in loss_nodes:
                for child, _ in node.next_functions:
                    read = graph_tools.beneath_reshapes(child, also=graph_tools.SELECTIONS) if child else None
                    if read is not None and names.get(read) is not None:
                        state.loss_reads.add(names.get(read))
        if state.subtracted_penalty is None and op_name(root_nodes[0]) in PENALTY_ROOTS:
            found = graph_tools.subtracted_weight_penalty(root_nodes[0])
            if found is not None:
                form, parameters = found
                labels = [self._param_label(p) for p in parameters]
                penalised = sorted({entry[1] for entry in labels if entry is not None})
                state.subtracted_penalty = {"form": form, "parameters": penalised} if penalised else None
        if state.log_probability_added is None:
            state.log_probability_added = graph_tools.log_probability_added(root_nodes[0])
        if loss_nodes and state.dropout_sites and state.dropout_into_loss is None:
            state.dropout_into_loss = _dropout_into_loss(loss_nodes, names, state.dropout_sites)
        if loss_nodes and state.prediction_broadcast is None:
            state.prediction_broadcast = graph_tools.prediction_broadcast(loss_nodes, names)
        if "nll_loss" in state.loss_ops and self._previous_token_looks < PREVIOUS_TOKEN_LOOKS:
            found = graph_tools.token_targets(loss_nodes)
            if found is not None:  # (a language model's targets: the next tokens, or the ones it has read?)
                self._previous_token_looks += 1
                scalar = state.deferred.scalar
                state.previous_token_targets = scalar(found["previous"])
                state.unshifted_targets = tuple(scalar(found[key]) for key in ("unshifted", "counted", "grids"))
        if loss_nodes and state.target_scale is None and self._target_scale_looks < TARGET_SCALE_LOOKS:
            self._target_scale_looks += 1  # (a classifier's loss is looked through a few times only, not every step)
            found = graph_tools.regression_target(loss_nodes)
            if found is not None:
                loss, prediction, target = found
                rms = state.deferred.scalar
                state.target_scale = (loss, rms(root_mean_square(target)), rms(root_mean_square(prediction)))
        if loss_nodes and state.target_trained is None:
            self._look_for_a_trained_target(state, loss_nodes, names)
        if state.base_rate is None and self._base_rate_looks < BASE_RATE_LOOKS:
            self._look_at_base_rate(state, root_nodes[0])
        if state.soft_targets is None and self._soft_target_looks < SOFT_TARGET_LOOKS:
            self._look_at_soft_targets(state, root_nodes[0])
        if state.ctc_input is None and "ctc_loss" in state.loss_ops and self._ctc_input_looks < CTC_INPUT_LOOKS:
            self._look_at_ctc_input(state, loss_nodes)
        if loss_nodes and state.batch_classes is None and self._class_count_looks < CLASS_COUNT_LOOKS:
            self._loss_walks += 1
            seen = self._loss_walks
            if seen <= CLASS_COUNT_FIRST_LOOKS or not seen & (seen - 1):  # (the first few, then 8, 16, 32, ...)
                found = graph_tools.class_targets(loss_nodes)
                if found is not None:
                    self._count_batch_classes(state, *found)
        if loss_nodes and state.seq_first_inputs and state.batch_classes is None and state.regression_rows is None:
            self._examples_in_the_batch(state, loss_nodes)  # (a regression's examples: a sequence-first layer's batch?)
        if loss_nodes and state.target_log_probability is None and state.root_loss is None:
            # (a loss of its own made from the target's log-probability, a focal loss: does it reward the right class?
            # Not cross_entropy itself, which is minus that log-probability)
            found = graph_tools.target_log_probability(loss_nodes)
            if found is not None:
                mean, classes, above = found
                state.target_log_probability = (state.deferred.scalar(mean), classes, state.deferred.scalar(above))
        if loss_nodes and state.token_ids is not None and state.loss_mask is None:
            self._look_at_loss_mask(state, loss_nodes)
        if loss_nodes and state.zero_pos_weight is None:
            found = graph_tools.positive_weight(loss_nodes)
            if found is not None:  # (its smallest entry, the positive targets, and those of them weighted 0)
                weight, target = found
                positive = target >= 0.5  # (with label smoothing, a negative's target is a little above 0)
                scalar = state.deferred.scalar
                unweighted = (positive & (weight == 0)).float().mean()  # (pos_weight broadcast over the classes)
                smallest = scalar(weight.min().float())
                state.zero_pos_weight = (smallest, scalar(positive.float().mean()), scalar(unweighted))
        if loss_nodes and state.zero_class_weight is None:
            found = graph_tools.class_weight(loss_nodes)
            if found is not None:  # (how many classes are weighted 0, and the share of the examples that are theirs)
                weight, target, ignore_index = found
                counted = target != ignore_index
                of_zero = (weight == 0)[target.clamp(0, weight.numel() - 1)] & counted
                scalar = state.deferred.scalar
                share = of_zero.float().sum() / counted.float().sum().clamp_min(1)
                state.zero_class_weight = (weight.numel(), scalar((weight == 0).float().sum()), scalar(share))
        if loss_nodes and state.multi_hot_margin is None and "multilabel_margin_loss" in state.loss_ops:
            target = graph_tools.multilabel_margin_target(loss_nodes)
            if target is not None and target.shape[-1] > 2:  # (a multi-hot row read as indices: classes 0 and 1 only)
                multi_hot = ((target == 0) | (target == 1)).all() & (target == 1).any()
                state.multi_hot_margin = (int(target.shape[-1]), state.deferred.scalar(multi_hot.float()))
        if loss_nodes and state.huber is None:
            found = graph_tools.huber_errors(loss_nodes)
            if found is not None:  # (how far past delta the errors are: the share, and their mean size)
                delta, errors = found
                size = errors.abs()
                scalar = state.deferred.scalar
                state.huber = (delta, scalar((size > delta).float().mean()), scalar(size.mean()))
        if loss_nodes and state.no_branch_taken is None and "where" in state.loss_ops:
            found = graph_tools.examples_no_branch_takes(loss_nodes)
            if found is not None:
                state.no_branch_taken = tuple(state.deferred.scalar(share) for share in found)
        if loss_nodes and state.gather_across_batch is None:
            found = graph_tools.gather_across_batch(loss_nodes, names)
            if found is not None:
                state.gather_across_batch = (found[0], state.deferred.scalar(found[1]))
        if loss_nodes and state.targets_out_of_reach is None:
            found = graph_tools.targets_out_of_reach(loss_nodes, names)
            if found is not None:
                share = share_outside(found.pop("target"), found["range"])
                state.targets_out_of_reach = (found, state.deferred.scalar(share))
        if self._leaf_looks < LOOSE_LEAF_LOOKS:
            self._leaf_looks += 1
            self._look_at_loose_leaves(state, nodes, names)
        self._look_at_loss_weights(state, nodes)
        inside = self._recurrent_regions(state, nodes) if state.recurrent else {}
        gated = self._gated_names
        saturation = self.thresholds.saturation_derivative
        multiplied = set()  # nodes whose output multiplies another computed tensor: x * sigmoid(g) is a gate
        scoring = set()  # tanh nodes an attention softmax's scores are made from, one per position (additive attention)
        gated_by_sigmoid = set()  # ... and those it multiplies: tanh(f) * sigmoid(g), the gated unit's other half
        sums = None  # the graph's additions and subtractions, found at its first gating op (see straight_through)
        products = None  # ... and its products (see times_its_own_magnitude)
        fed_to_modules = None  # ids of the nodes that made a watched module's input (found at the first loss-side op)
        read_by_modules = None  # nodes beneath a module's inputs or a weighted op (at the first squashing, early on)
        output_side_look = self._output_side_looks < OUTPUT_SIDE_LOOKS
        self._output_side_looks += output_side_look
        relu_output_look = self._relu_output_looks < RELU_OUTPUT_LOOKS
        self._relu_output_looks += relu_output_look
        # (a step whose attention is measured measures every attention softmax in it)
        attention_look = bool(state.attention) or self._attention_looks < ATTENTION_LOOKS
        lookahead_look = self._lookahead_looks < LOOKAHEAD_LOOKS
        examples = None  # how many examples the batch holds (0: not known), found at the first softmax
        # Breadth first from the loss: a product usually comes before the factors it multiplies. A squashing function
        # met before every product is (reached first by a shorter path: log(s) of Glow's scale s, which also
        # multiplies z) is judged again after them, once (`postponed`): a product met later may make it a gate.
        walk, postponed = list(nodes), set()
        for node in walk:
            op = op_name(node)
            if op == "normal" and any(child is not None for child, _ in node.next_functions):
                # (`torch.normal(mean, std)` of computed tensors: its derivative is 0 to both, by PyTorch's definition)
                made_by = graph_tools.nearest_upstream(node, names) or "input"
                state.decoded_draws.setdefault(ZERO_DERIVATIVE_DRAW, made_by)
            if isinstance(node, CUSTOM_FUNCTION_NODE):
                self._test_custom_backward(state, node, names)
                self._look_at_reversal(state, node, names)
            if op in ("softmax", "log_softmax") and op not in state.softmax_over_one:
                trivial = graph_tools.softmax_over_one_entry(node)
                if (
                    trivial is not None
                    and trivial.pop("batch_axis_only")
                    and not graph_tools.read_by_a_loss(node, loss_nodes)
                ):
                    trivial = None  # (an (N, 1) the loss does not read as it is: a one-component mixture's weight)
                if trivial is not None:
                    state.softmax_over_one[op] = {**trivial, "after": graph_tools.nearest_upstream(node, names)}
            if op == "div" and op not in state.softmax_over_one:  # (a weight over its own sum, on an axis of one)
                trivial = graph_tools.divided_by_own_sum_over_one(node)
                if trivial is not None:
                    state.softmax_over_one[op] = {**trivial, "after": graph_tools.nearest_upstream(node, names)}
            if op == "softmax" and node not in loss_nodes and not graph_tools.read_on_the_loss_side(node, loss_nodes):
                self._look_at_one_hot_rows(state, node, names)  # (not the probabilities a loss reads: a prediction)
            if op == "softmax" and attention_look and node not in loss_nodes:
                self._look_at_attention(state, node, names)
            elif attention_look and graph_tools.is_attention_kernel(op):
                self._look_at_kernel_attention(state, node, names)
            if lookahead_look and (op == "softmax" or graph_tools.is_attention_kernel(op)) and node not in loss_nodes:
                self._look_at_lookahead(state, node, names, loss_nodes, nodes)
            elif lookahead_look and op == "convolution":
                self._look_at_convolution_lookahead(state, node, names, loss_nodes)
            if op in ("softmax", "log_softmax"):  # (additive attention's tanh, sharp by design; a pointer's is on the
                scoring.update(graph_tools.scoring_tanhs(node))  # loss side, under the log_softmax of its nll_loss)
            if op == "softmax" and node not in loss_nodes and examples is None:
                examples = self._examples_in_the_batch(state, loss_nodes)
            if op == "softmax" and examples and node not in loss_nodes:
                mixed = graph_tools.softmax_over_the_examples(node, examples)
                if mixed is not None:  # (attention pooling's softmax(scores, dim=0) over (N, T): over the batch)
                    site = f"softmax after {graph_tools.nearest_upstream(node, names) or 'input'}"
                    state.examples_mixed.setdefault(site, mixed)
            if op not in WATCHED_OPS:
                if op in graph_tools.LAYER_PRODUCTS:
                    self._look_for_zeros_outside_autograd(state, node, names)
                if op == "sin":  # (SIREN's sin(w0 * (W x + b)): which layers, and w0)
                    found = graph_tools.sine_of_a_layer(node, names)
                    if found is not None:
                        state.sine_layers.setdefault(*found)
                if op == "sub" and state.difference_of_itself is None and graph_tools.difference_of_itself(node):
                    state.difference_of_itself = graph_tools.nearest_upstream(node, names) or "input"
                if op == "bmm" and state.softmax_over_queries is None:
                    softmax = graph_tools.softmax_over_the_queries(node)
                    if softmax is not None:
                        state.softmax_over_queries = (
                            f"softmax after {graph_tools.nearest_upstream(softmax, names) or 'input'}"
                        )
                if op == "add" and state.same_ids_embedded is None:
                    pair = graph_tools.embeddings_of_the_same_ids(node)
                    if pair is not None:
                        state.same_ids_embedded = [names.get(e) or graph_tools.nearest_upstream(e, names) for e in pair]
                if op in ("div", "mul") and state.ratio_of_itself is None and graph_tools.ratio_of_itself(node):
                    state.ratio_of_itself = (op, graph_tools.nearest_upstream(node, names) or "input")
                found = graph_tools.batch_summed_into_each(node) if op in BATCH_SUMMING_OPS else None
                if found is not None and not state.examples_mixed:
                    reduction, summed = found
                    # (a penalty summed on the loss side and added to each example's loss is meant; a module that
                    # returns the sum, a flow's log-determinant, is not)
                    if op == "expand" or node not in loss_nodes or reduction in names:
                        upstream = names.get(reduction) or graph_tools.nearest_upstream(reduction, names) or "input"
                        state.examples_mixed[f"{summed['reduction']} after {upstream}"] = summed
                if op in ("add", "sub") and not state.examples_mixed:  # ((N, 1) + (N,) in the model: (N, N))
                    crossed = graph_tools.column_added_to_row(node, names)
                    if crossed is not None:
                        state.examples_mixed[f"{op} after {crossed['module']}"] = crossed
                if op in ("index_put", "index_copy") and not state.rows_written_twice:
                    written = graph_tools.rows_written_twice(node)
                    if written is not None:
                        site = f"{op} after {graph_tools.nearest_upstream(node, names) or 'input'}"
                        state.rows_written_twice[site] = (written[0], state.deferred.scalar(written[1]))
                if op == "index" and not state.examples_mixed:  # (an integer mask of 0s and 1s used as an index)
                    picked = graph_tools.integer_mask_as_index(node)
                    if picked is not None:
                        state.examples_mixed[f"index after {graph_tools.nearest_upstream(node, names) or 'input'}"] = (
                            picked
                        )
                if op in graph_tools.VIEWS and state.batch_classes is not None:  # (the examples counted)
                    mixed = graph_tools.examples_mixed_by_view(node, state.batch_classes[0])
                    if mixed is not None:
                        site = f"{op} after {graph_tools.nearest_upstream(node, names) or 'input'}"
                        state.examples_mixed.setdefault(site, mixed)
                if op == "mul":
                    factors = [child for child, _ in node.next_functions if child is not None]
                    if len(factors) == 2:
                        below = [graph_tools.beneath_scaling(factor) for factor in factors]
                        multiplied.update(step for factor in factors for step in graph_tools.gate_tree(factor))
                        for one, other in (below, below[::-1]):  # tanh(f) * sigmoid(g): WaveNet's gated unit
                            if op_name(other) == "sigmoid":
                                gated_by_sigmoid.add(one)
                    elif len(factors) == 1 and graph_tools.times_a_tensor(node):
                        # a hard gate on the inputs, x * clamp(..., 0, 1) (hard-concrete); not a mask or a
                        # hand-written dropout after an activation, `h * mask`, whose activation is judged
                        chain = graph_tools.gate_chain(factors[0])
                        if any(op_name(step) in ("clamp", "hardtanh") for step in chain):
                            multiplied.update(chain)
                continue
            # (a clamp that makes the model's own output, an image kept in [0, 1], is no hidden layer's activation; an
            # op the loss reads that also feeds a module of its own model is one: `h = relu(fc2(x))` given to `out` and
            # to an activity penalty `h.abs().sum()`; not a generator's output given to the discriminator)
            if node in loss_nodes and fed_to_modules is None:
                fed_to_modules = dict(state.input_nodes.values())  # (node id -> the module reading it)
            hidden = node in loss_nodes and self._read_by_its_own_model(node, fed_to_modules.get(id(node)), names)
            on_loss = (node in loss_nodes and not hidden) or (op == "clamp" and names.get(node) in self.root_names)
            # (a ReLU that makes the model's own output, read as class scores by the loss itself: scores floored at 0)
            on_loss = on_loss or (op == "relu" and self._relu_scores(state, node, names, loss_nodes))
            function = _activation_function(node, op, on_loss=on_loss)
            bound = graph_tools.constant_bound(node)  # (a max or min with a constant: which input, and the number)
            if op == "leaky_relu" and function is None and graph_tools.saved_value(node, "_saved_negative_slope") == 1:
                # (`nn.LeakyReLU(True)`, meant as inplace=True: a slope of 1, the identity)
                state.identity_activations.add(names.get(node) or graph_tools.nearest_upstream(node, names) or "input")
            if function is not None:
                owner = inside.get(node)
                if function in SQUASHING and node not in multiplied and node not in postponed:
                    postponed.add(node)
                    walk.append(node)
                    continue
                # (met before a product that multiplies it, and read by a layer too: a hidden activation, judged)
                as_gate = node in multiplied and not (node in postponed and self._read_by_a_layer(state, node, nodes))
                if owner in gated or (function in GATE_FUNCTIONS and as_gate):
                    # gates (LSTM/GRU, squeeze-excitation, GLU, a hand-written h_swish x * relu6(x + 3) / 6, a
                    # hard-concrete gate x * clamp(...)) sit saturated by design: open or shut. A sigmoid gate's mean
                    # is read all the same (all of them shut: what they gate gets no gradient, a stall's cause)
                    if function in GATE_MEANS and owner not in gated and len(state.gate_means) < 16:
                        self._note_gate_mean(state, node, function)
                    continue
                if function == "tanh" and node in gated_by_sigmoid:  # (a gated unit's, or a hand-written LSTM's
                    continue  # sigmoid(o) * tanh(c): the gate decides what passes, as in the layers PyTorch gates)
                if function == "tanh" and node in scoring:  # (v(tanh(W h + U s)): attention's scores, sharp by design)
                    continue
                if self._of_a_parameter(node):  # (sigmoid(log_alpha - c): a learned choice's probability, no layer's
                    continue  # output; at an end of its range, the choice is made)
                if _saved_activation(node) is None:  # (held by a saved-tensor hook, a non-reentrant checkpoint's: its
                    continue  # unpacking would run the block again; or freed)
                try:
                    site = self._tally_activation(state, node, function, owner, saturation)
                    if relu_output_look and op == "relu":  # (what its backward masks with: never below 0 if untouched)
                        state.relu_lowest[site] = state.deferred.scalar(_saved_activation(node).detach().min())
                    if node in loss_nodes and not on_loss:  # (a hidden layer's, fed to a module, the loss reads too)
                        state.read_by_loss.add(site)
                    if output_side_look and function in ("sigmoid", "tanh"):
                        if read_by_modules is None:
                            inputs = state.module_inputs | {node_id for node_id, _ in state.input_nodes.values()}
                            readers = (n for n in nodes if id(n) in inputs or graph_tools.weighs_its_input(n))
                            read_by_modules = graph_tools.beneath(readers)
                        # (no layer reads it, even through other ops, on any look: an output; or it makes a watched
                        # model's own output, a generator's image in [-1, 1] that the discriminator reads: its flat
                        # regions are the image's background, meant)
                        own_output = id(node) in state.model_outputs or names.get(node) in self._final_modules
                        read = node in read_by_modules and not own_output
                        (self._read_sites if read else self._output_side_sites).add(site)
                except Exception as error:  # (one site that cannot be read does not end the walk: the rest is read)
                    if not _not_dense(_saved_activation(node)):  # (of a sparse or nested tensor: unmeasured)
                        self._fail("summarising an activation", error)
            elif op in GATING_OPS or (op == "relu" and on_loss) or bound is not None:
                gate = "relu6" if op == "hardtanh" and _relu_ceiling(node) == 6 else GATING_OPS.get(op, op)
                parameter = self._parameter_read(node)  # (sign(W), round(W / s): a weight quantised or binarised)
                sums = graph_tools.additions(nodes) if sums is None else sums
                if graph_tools.turned_straight_through(node, sums):  # (round(z) - z + z.detach(): -g reaches z)
                    upstream = graph_tools.nearest_upstream(node, names) or "input"
                    state.turned_straight_through.setdefault(gate, upstream)
                    continue
                if graph_tools.cancelled_straight_through(node, sums):  # (z + (round(z) - z): no detach, no gradient)
                    upstream = graph_tools.nearest_upstream(node, names) or "input"
                    state.cancelled_straight_through.setdefault(gate, upstream)
                    continue  # (not a gate that blocks: the gradient around it cancels, told with what gets none)
                if graph_tools.straight_through(node, sums) or (parameter is not None and parameter[1].numel() == 1):
                    continue  # bypassed by design; or a learnable scalar held in its range (CLIP's temperature)
                if graph_tools.sparse_projection(node):
                    continue  # a sparsemax's threshold: no gradient outside its support, by design
                products = [n for n in nodes if op_name(n) == "mul"] if products is None else products
                if graph_tools.times_its_own_magnitude(node, products):
                    continue  # sign(z) * relu(|z| - theta): the gradient reaches z through the other factor
                if node in loss_nodes:
                    site = "loss"
                elif op == "relu" and self._relu_scores(state, node, names, loss_nodes):
                    site = f"{MODEL_OUTPUT} {names.get(node)}"  # (the model's last module: a ReLU on its scores)
                elif op in CLAMPS and self._clamps_the_prediction(state, node, names):
                    site = f"{MODEL_OUTPUT} {names.get(node)}"  # (the prediction clamped to a range in the forward)
                elif names.get(node) or inside.get(node):
                    site = f"in {names.get(node) or inside.get(node)}"
                elif parameter is not None:
                    site = f"on {parameter[0]}"
                else:
                    upstream = graph_tools.nearest_upstream(node, names)
                    if upstream is None and not self._reaches_a_watched_parameter(node):
                        continue  # (on inputs alone: an adversarial example kept a valid image. Nothing learns there)
                    site = f"after {upstream or 'input'}"
                key = f"{gate}@{site}"
                # (on the loss: a clamp of the model's prediction itself, a weighted layer's output, or of an error or a
                # probability made from it)
                reads = _layer_output_read(node, names) if site == "loss" else None
                if reads is not None and reads not in self.root_names:  # (the watched model's output: its prediction)
                    reads = reads if getattr(self.info_by_name.get(reads), "has_weights", False) else None
                floor = graph_tools.floors_at_zero(node)  # (a ReLU; inside the model, one kept off 0 by an epsilon too)
                floor = floor or (site != "loss" and graph_tools.floors_at_an_epsilon(node))
                tally = state.gates.setdefault(key, GateTally(gate, site, floor, reads))
                tally.lower_bound = graph_tools.floor_above_zero(node) if site == "loss" else None
                if floor and site == "loss" and tally.hinge_at is None:  # (a margin loss's hinge: its own value)
                    hinge = graph_tools.hinge_mean(node)
                    tally.hinge_at = None if hinge is None else state.deferred.scalar(hinge)
                    labels = graph_tools.label_factor(node)  # (max(0, 1 - y f): are the labels y 0/1, not -1/+1?)
                    if labels is not None and labels.numel() and not labels.is_complex():
                        tally.zero_labels_at = state.deferred.scalar(zeros_among_zero_one(labels.detach()))
                position = bound[0] if bound else 0  # (the input whose gradient is read: a max's computed one)
                mask = graph_tools.masking_factor(node, position)  # (x * mask, then the gate: masked entries uncounted)
                node.register_hook(functools.partial(self._on_gate_grad, state.ticket, key, mask, position))
            if op in graph_tools.BACKWARD_NAN_PRONE:
                label = "the loss" if node in loss_nodes else graph_tools.nearest_upstream(node, names)
                state.nan_prone.append((node, label))
                if op in LOGS and state.log_of_probabilities is None:
                    self._look_for_log_of_probabilities(state, node, label)
                if op in ("acos", "asin") and state.clamped_to_the_edge is None:
                    self._look_for_clamp_to_the_edge(state, node, label)
                node.register_hook(functools.partial(self._on_nan_prone_grad, state.ticket, len(state.nan_prone) - 1))

    @staticmethod
    def _examples_in_the_batch(state: StepState, loss_nodes) -> int:
        """The examples in the batch: a classifier's targets counted on this step, or the rows of a regression loss's
        prediction (what `mse_loss`, `huber_loss` or `smooth_l1_loss` saved); 0 when neither is known."""
        if state.batch_classes is not None:
            return state.batch_classes[0]
        for node in loss_nodes:
            if op_name(node) in graph_tools.BROADCASTING_LOSSES:  # (mse, huber, smooth_l1: they keep the prediction)
                prediction = graph_tools.saved_value(node, "_saved_self")
                if isinstance(prediction, torch.Tensor) and prediction.dim() >= 1 and prediction.shape[0] >= 2:
                    state.regression_rows = prediction.shape[0]
                    return state.regression_rows
        return 0

    @staticmethod
    def _look_for_log_of_probabilities(state: StepState, node, label: str | None) -> None:
        """A log taken of a softmax's or a sigmoid's output (through reshapes and selections: `torch.log(p[range(n),
        y])`): a probability that rounds to exactly 0 in float32 (a logit some 100 below the largest) gives log 0 =
        -inf, and log's derivative 1/p = inf, times 0, is NaN. `F.log_softmax` and `F.logsigmoid` never form p.
        Likewise a log of a determinant (`torch.logdet` never forms it) or of a sum of exponentials (`logsumexp`)."""
        inputs = [child for child, _ in node.next_functions if child is not None]
        picked = (*graph_tools.SELECTIONS, "gather", "index")  # (`torch.log(p.gather(1, y))`, `p[range(n), y]`)
        below = graph_tools.beneath_reshapes(inputs[0], also=picked) if inputs else None
        made_by = op_name(below) if below is not None else None
        if made_by == "linalg_det":  # (a determinant underflows long before its matrix is singular)
            made_by = "det"
        elif made_by == "sum" and graph_tools.sum_of_exponentials(below):
            made_by = "sum of exps"  # (a mixture's likelihood: log(sum(pi * exp(log_prob))), each exp underflowing)
        if made_by in ("softmax", "sigmoid", "det", "sum of exps"):
            state.log_of_probabilities = {"log": op_name(node), "of": made_by, "at": label or "input"}

    @staticmethod
    def _look_for_clamp_to_the_edge(state: StepState, node, label: str | None) -> None:
        """acos or asin of a value clamped to [-1, 1] (a cosine kept in their domain): the forward is finite, but at
        exactly +-1, which a cosine between a vector and its own direction reaches, the derivative -+1 / sqrt(1 - x^2)
        is infinite, and NaN comes back. A bound that rounds to +-1 in the input's dtype (1 - 1e-8 in float32) is
        +-1."""
        inputs = [child for child, _ in node.next_functions if child is not None]
        bounds = graph_tools.clamp_range(inputs[0]) if inputs else None
        if bounds is None:
            return
        dtype = graph_tools.saved_value(node, "_saved_self")
        dtype = dtype.dtype if isinstance(dtype, torch.Tensor) else torch.float32
        at_the_edge = [b for b in bounds if b is not None and abs(torch.tensor(float(b), dtype=dtype).item()) == 1]
        if at_the_edge:
            state.clamped_to_the_edge = {"op": op_name(node), "bounds": list(bounds), "at": label or "input"}

    @staticmethod
    def _look_for_earlier_graph(state: StepState, nodes, earlier_step: int, earlier_names) -> None:
        """A backward that keeps its graph (retain_graph=True) and reaches outputs modules made on the first sampled
        step: the graph spans training steps (the rule asks that it be many steps back: truncated backprop through time
        over overlapping windows retains the last few steps' graph on purpose). A recurrent state carried from batch
        to batch without `detach()` links each step's graph to the one before; `retain_graph=True` silences the error
        PyTorch raises at the second backward through it, and each backward then goes back through every batch since
        the start, with the weights as they were then. (Only with retain_graph: without it the old graph's saved
        tensors are gone, and PyTorch says so.)"""
        # (in the order the walk from the loss met them: the carried state's module first)
        reached = list(dict.fromkeys(earlier_names.get(node) for node in nodes if node in earlier_names))
        if reached:
            state.earlier_graph = (earlier_step, reached)

    def _clamps_the_prediction(self, state: StepState, node, names) -> bool:
        """Whether a clamp to a range makes the watched model's own output (itself, or as its last module's): the
        prediction kept in [1, 5]. Not a floor at 0 (a ReLU), nor a probability kept off 0 and 1 before a log."""
        if names.get(node) not in self.root_names and id(node) not in state.model_outputs:
            return False
        inputs = [child for child, _ in node.next_functions if child is not None]
        made_by = op_name(graph_tools.beneath_reshapes(inputs[0])) if inputs else None
        return not graph_tools.floors_at_zero(node) and made_by not in ("sigmoid", "softmax", "log_softmax")

    @staticmethod
    def _look_for_zeros_outside_autograd(state: StepState, node, names) -> None:
        """A layer's output that the next layer's product reads with no operation between them in the graph, measured
        for exact zeros: set by something autograd did not record (`h.data.clamp_(min=0)`, a ReLU through `.data`),
        the backward passes the gradient through them as if they were the layer's values."""
        found = graph_tools.layer_output_read_as_made(node, names)
        if found is not None and found[0] not in state.zeros_outside_autograd:
            share = state.deferred.scalar(zeros_among_live(found[1].detach()))
            state.zeros_outside_autograd[found[0]] = (names.get(node), share)

    @staticmethod
    def _read_by_a_layer(state: StepState, node, nodes) -> bool:
        """Whether a module, or an operation that weighs its input (a matrix product, a convolution), reads `node`'s
        output directly (through reshapes at most)."""
        if id(node) in state.module_inputs or any(node_id == id(node) for node_id, _ in state.input_nodes.values()):
            return True
        return any(
            child is not None and graph_tools.beneath_reshapes(child) is node
            for reader in nodes
            if graph_tools.weighs_its_input(reader)
            for child, _ in reader.next_functions
        )

    @staticmethod
    def _relu_scores(state: StepState, node, names, loss_nodes) -> bool:
        """Whether a ReLU made the watched model's own output, and a loss on class scores (cross-entropy's
        log_softmax, a logistic loss) takes it as its scores, through reshapes at most: logits of any sign, floored
        at 0. (Not an encoder ending in a ReLU whose features another module reads, nor embeddings whose similarities
        are the scores (InfoNCE), nor a count or an image predicted >= 0 under a squared error.)"""
        if id(node) not in state.model_outputs or names.get(node) not in state.loss_reads:
            return False
        scoring = (n for n in loss_nodes if op_name(n) in CLASS_SCORE_LOSSES)
        return any(
            child is not None and graph_tools.beneath_reshapes(child) is node
            for n in scoring
            for child, _ in n.next_functions
        )

    def _look_at_one_hot_rows(self, state: StepState, node, names) -> None:
        """A softmax that is not an attention's (their rows are measured by `_look_at_attention`), of at most
        `ONE_HOT_LOOK_SIZE` entries: the share of its rows that are exactly one-hot, one entry 1 and every other exactly
        0. There its Jacobian diag(p) - p p^T is exactly 0, and no gradient reaches its input: a Gumbel-softmax whose
        temperature was annealed to 1e-4, logits divided by a tiny number (noted with the divisor, when constant)."""
        p = graph_tools.saved_value(node, "_saved_result")
        if not isinstance(p, torch.Tensor) or p.dim() < 1 or not 0 < p.numel() <= ONE_HOT_LOOK_SIZE:
            return
        dim = graph_tools.saved_dim(node) % p.dim()
        if p.shape[dim] < 2 or graph_tools.attention_scores(node) is not None:
            return
        site = f"softmax after {graph_tools.nearest_upstream(node, names) or 'input'}"
        if site not in state.one_hot_rows:
            one_hot = ((p.detach() == 0).sum(dim) == p.shape[dim] - 1).float().mean()
            temperature = graph_tools.divided_by_constant(node)
            state.one_hot_rows[site] = (state.deferred.scalar(one_hot), p.shape[dim], temperature)

    def _look_at_attention(self, state: StepState, node, names) -> None:
        """An attention's softmax, on the first sampled steps: how much of its derivative is left. The softmax's
        Jacobian is diag(p) - p p^T, and 1 - sum(p^2), its trace, measures it: 1 - 1/n for a row spread evenly over n
        entries, 0 for a one-hot row, where no gradient reaches the scores (nor the queries and keys under them). The
        capacity is the rows' mean over 1 - 1/n, n the row's length. (Masked entries lower it for a row spread over
        the rest: a causal mask over 8 entries to 0.75, over 64 to 0.94, one key left of 60 to 0; a one-hot row gives
        0 whatever the mask. Counting the entries that are not 0 would take those a saturated softmax rounds to 0 for
        masked ones.)"""
        found = graph_tools.attention_scores(node)
        p = graph_tools.saved_value(node, "_saved_result")
        if found is None or not isinstance(p, torch.Tensor) or p.dim() < 2 or p.numel() == 0:
            return
        (scale, mask), dim = found, graph_tools.saved_dim(node) % p.dim()
        if p.shape[dim] < 4:
            return
        if not state.attention:
            self._attention_looks += 1
        p = p.detach().float()
        # entries a row may spread over: all, or those a masked_fill left (rows left one or none are not judged)
        n = torch.full(p.shape[:dim] + p.shape[dim + 1 :], float(p.shape[dim]), device=p.device)
        if mask is not None and mask.device == p.device:
            try:
                n = (~torch.broadcast_to(mask, p.shape)).sum(dim).float()
            except RuntimeError:  # (a mask that does not broadcast to the scores: all entries counted)
                pass
        judged = (n >= 2).float()
        kept = (1 - (p * p).sum(dim)) / (1 - 1 / n.clamp(min=2))
        capacity = (kept * judged).sum() / judged.sum()  # (NaN when no row is judged: not judged)
        # (further than a layer's output is looked for: a fused qkv projection lies a dozen reshapes below)
        site = f"softmax after {graph_tools.nearest_upstream(node, names, limit=24) or 'input'}"
        scalar = state.deferred.scalar
        state.attention[site] = (p.shape[dim], scale, scalar(capacity), scalar(p.amax(dim).mean()), None)
        node.register_hook(functools.partial(self._on_attention_grad, state.ticket, site, dim))

    def _look_at_kernel_attention(self, state: StepState, node, names) -> None:
        """The same for a fused attention (`F.scaled_dot_product_attention`, which nn.MultiheadAttention and
        nn.TransformerEncoder call): no softmax node holds its weights, so they are recomputed from the queries and keys
        its node kept, for some rows of its first heads (`graph_tools.kernel_weights`). Its arriving gradient is not
        read: the kernel's backward takes the output's gradient, not the weights'."""
        found = graph_tools.kernel_weights(node)
        if found is None or found[0].shape[-1] < 4:
            return
        p, n, scale, width = found
        if not state.attention:
            self._attention_looks += 1
        judged = (n >= 2).float()
        kept = (1 - (p * p).sum(-1)) / (1 - 1 / n.clamp(min=2))
        capacity = (kept * judged).sum() / judged.sum()
        site = f"attention after {graph_tools.nearest_upstream(node, names, limit=24) or 'input'}"
        scalar = state.deferred.scalar
        state.attention[site] = (p.shape[-1], scale, scalar(capacity), scalar(p.amax(-1).mean()), width)

    def _look_at_lookahead(self, state: StepState, node, names, loss_nodes, nodes) -> None:
        """A self-attention (its queries and keys projections of one sequence) whose mask lets a query read positions
        after its own: no mask at all, or a causal mask one diagonal off (`triu(ones, diagonal=2)` shuts the future
        from two positions on, where `diagonal=1` is meant). In a model whose targets are the next tokens of the
        sequence it reads, each position then reads its own answer. Read on the first sampled steps: the share of
        the queries that may read the next position, the furthest ahead one may, and the share of the loss's targets
        that are the input's next tokens. A fused kernel's mask is the one it kept; a hand-written softmax's, the one
        `masked_fill` put into its scores (anything else added to them, a float mask, is not read)."""
        if op_name(node) == "softmax":
            p = graph_tools.saved_value(node, "_saved_result")
            found = graph_tools.masked_scores(node)
            if found is None or not isinstance(p, torch.Tensor) or p.dim() < 2:
                return
            if graph_tools.saved_dim(node) % p.dim() != p.dim() - 1 or p.shape[-2] != p.shape[-1]:
                return  # (a softmax over the keys, one row per query, as many queries as keys)
            (allowed, query, key), length, device = found, p.shape[-1], p.device
            site = f"softmax after {graph_tools.nearest_upstream(node, names, limit=24) or 'input'}"
            float_mask = None  # (masked_fill's mask is boolean)
        else:
            found = graph_tools.attention_kernel_keys(node)
            if found is None:
                return
            allowed, query, key, length = found
            device = graph_tools.saved_value(node, "_saved_query").device
            site = f"attention after {graph_tools.nearest_upstream(node, names, limit=24) or 'input'}"
            float_mask = graph_tools.float_mask_range(node)
        if not state.attention_examined:  # (a look, judged or not: a cross-attention is not looked at forever)
            state.attention_examined = True
            self._lookahead_looks += 1
        if length < 4 or site in state.lookahead or not graph_tools.same_source(query, key):
            return
        share, furthest = graph_tools.keys_ahead(allowed, length, device)
        scalar = state.deferred.scalar
        # (from the keys, what a query may read ahead: a decoder started from its encoder's state reaches the source
        # through its queries too, and its targets are the next tokens of its own input, not of the source it reads)
        next_tokens = graph_tools.next_token_targets(loss_nodes, key)
        next_tokens_at = None if next_tokens is None else scalar(next_tokens)
        extra = {} if float_mask is None else {"float_mask": tuple(map(scalar, float_mask))}
        if any(isinstance(module, TRANSFORMER_DECODERS) for module in list(self.infos.keys())):
            extra["decoder"] = True  # (a model with nn.Transformer's decoder: the self-attention its targets reach)
        state.lookahead[site] = (scalar(share), scalar(furthest), length, next_tokens_at, extra)

    def _look_for_a_trained_target(self, state: StepState, loss_nodes, names) -> None:
        """A KL divergence whose target distribution carries a graph into a model of its own that an optimiser steps:
        a distillation's teacher not frozen (its logits computed with gradient, its parameters in the optimiser).
        The loss then pulls the teacher towards the student as much as the student towards it, and both drift to
        whatever is easiest to agree on. Not when both sides come from the same modules (R-Drop's two passes)."""
        for node in loss_nodes:
            op = op_name(node)
            sides = graph_tools.divergence_sides(node) if op in ("sub", "mul") else None
            if sides is None:
                continue
            target, prediction = sides
            target_modules = graph_tools.modules_upstream(target, names)
            prediction_modules = graph_tools.modules_upstream(prediction, names)
            if not target_modules or target_modules & prediction_modules:
                continue
            if not self._reaches_a_watched_parameter(target):
                continue
            state.target_trained = {  # (named after their common prefix by the rule)
                "target_modules": sorted(target_modules),
                "prediction_modules": sorted(prediction_modules),
            }
            return

    def _look_at_convolution_lookahead(self, state: StepState, node, names, loss_nodes) -> None:
        """A 1-D convolution padded on both sides (`padding=d * (k - 1) // 2`: output t reads inputs after t) in a
        model whose targets are the next entries of the sequence it reads (a WaveNet's or a TCN's forecast, a
        convolutional language model): each position reads its own target. Causal ones are padded on the left only."""
        found = graph_tools.convolution_reach_ahead(node)
        if found is None:
            return
        if not state.attention_examined:  # (a look at what positions may read, judged or not)
            state.attention_examined = True
            self._lookahead_looks += 1
        ahead, length, convolution = found
        site = names.get(node) or f"conv1d after {graph_tools.nearest_upstream(node, names, limit=24) or 'input'}"
        if length < 4 or site in state.lookahead or not graph_tools.reaches_by_position(loss_nodes, node):
            return  # (pooled on the way to the prediction: its positions are not the prediction's)
        next_steps = graph_tools.next_step_targets(loss_nodes, node)
        scalar = state.deferred.scalar
        next_steps_at = None if next_steps is None else scalar(next_steps)
        share, furthest = (ahead > 0).float(), ahead.float()  # (every position reads ahead, or none)
        state.lookahead[site] = (scalar(share), scalar(furthest), length, next_steps_at, {"convolution": convolution})

    def _on_attention_grad(self, ticket: Ticket, site: str, dim: int, grad_inputs, grad_outputs):
        """The share of the gradient g arriving at an attention's softmax that is the same for every entry along the
        axis it normalises: the softmax's backward, p * (g - sum(p * g)), removes exactly that part. All of it (1.0)
        when the output is summed or averaged over that same axis afterwards (a softmax over the queries, then pooled
        over them): nothing reaches the scores."""
        state = ticket.state
        if state is None:
            return
        try:
            g = grad_outputs[0] if grad_outputs else None
            if g is None or g.dim() <= dim:
                return
            g = g.detach().float()
            same = g.mean(dim).square().sum() * g.shape[dim]  # (the squared norm of g's mean along the axis, spread)
            share = same / g.square().sum()  # (NaN for g = 0)
            # (several softmaxes under one site, an attention module called at every layer: one pooled over its own
            # axis is blocked, whatever the others do; fmax passes over a NaN)
            before = state.attention_gradient.get(site)
            state.attention_gradient[site] = share if before is None else torch.fmax(before, share)
        except Exception as error:
            if not _not_dense(grad_outputs):
                self._fail("attention gradient hook", error)

    def _look_at_loss_mask(self, state: StepState, loss_nodes) -> None:
        """A per-token loss multiplied by a mask of the tokens' shape, on the first sampled steps with both: which
        positions it keeps. A mask meant to drop the padding, built the wrong way round (`arange(T) >= lengths`), keeps
        the padding only: every real token's loss is multiplied by 0, and so is its gradient."""
        self._loss_mask_looks += 1
        mask = graph_tools.loss_mask(loss_nodes)
        ids, padding_idx = state.token_ids
        if mask is None or mask.numel() != ids.numel() or mask.device != ids.device:
            return
        kept, padding = mask.reshape(-1) != 0, ids.reshape(-1) == padding_idx
        real = ~padding
        scalar = state.deferred.scalar
        padding_of_kept = (kept & padding).sum().float() / kept.sum().clamp(min=1).float()
        real_kept = (kept & real).sum().float() / real.sum().clamp(min=1).float()
        state.loss_mask = (padding_idx, scalar(padding_of_kept), scalar(real_kept))

    def _look_at_base_rate(self, state: StepState, root) -> None:
        """A loss that is a binary cross-entropy itself (its mean, no weights): the share of its targets that are 1,
        and whether all are 0 or 1. A model that predicts that share for every entry has a loss of its entropy."""
        if op_name(root) not in ("binary_cross_entropy_with_logits", "binary_cross_entropy"):
            return
        self._base_rate_looks += 1
        weighted = graph_tools.saved_value(root, "_saved_weight") is not None
        weighted = weighted or graph_tools.saved_value(root, "_saved_pos_weight") is not None
        target = graph_tools.saved_value(root, "_saved_target")
        if weighted or graph_tools.saved_value(root, "_saved_reduction") != 1 or not isinstance(target, torch.Tensor):
            return  # (weighted, or summed: its loss at the base rate is not the entropy)
        if target.numel() < 2 or not target.is_floating_point():
            return
        scalar = state.deferred.scalar
        binary = ((target == 0) | (target == 1)).all().float()
        state.base_rate = (scalar(target.float().mean()), scalar(binary))

    def _look_at_soft_targets(self, state: StepState, root) -> None:
        """A cross-entropy given class probabilities as its target, or a binary cross-entropy given a softmax's
        output: how the targets' rows sum. A softmax's outputs sum to 1, so targets whose rows sum to more (a
        multi-hot target, 2.4 tags an example) are out of its reach."""
        self._soft_target_looks += 1
        found = graph_tools.soft_targets(root)
        if found is None:
            return
        target, dim, loss = found
        if target.numel() == 0:
            return
        rows = target.float().sum(dim)
        scalar = state.deferred.scalar
        over_one = (rows > 1.01).float().mean()  # (label smoothing's and mixup's rows sum to 1 up to rounding)
        binary = ((target == 0) | (target == 1)).all().float()  # (a multi-hot target; not a label distribution)
        state.soft_targets = (scalar(rows.mean()), scalar(over_one), scalar(binary), loss)

    def _look_at_ctc_input(self, state: StepState, loss_nodes) -> None:
        """`ctc_loss` wants log-probabilities, each frame's normalised over the classes (`log_softmax`): the median
        over the frames within each sequence's length of their logsumexp, 0 for log-probabilities and about log(C)
        or more for raw scores, and the largest entry there (never above 0 for log-probabilities)."""
        self._ctc_input_looks += 1
        state.ctc_targets = graph_tools.ctc_targets(loss_nodes)  # (its targets: a CPU tensor, read at once)
        found = graph_tools.ctc_input(loss_nodes)
        if found is None or found[0].numel() == 0:
            return
        log_probs, lengths = found
        steps, batch = log_probs.shape[:2]
        within = torch.ones(steps, batch, dtype=torch.bool, device=log_probs.device)
        if len(lengths) == batch:  # (padding past a sequence's length holds anything: zeros, often)
            within = torch.arange(steps, device=log_probs.device)[:, None] < torch.tensor(lengths)[None, :].to(
                within.device
            )
        frames = log_probs.float()[within]  # (frames, C)
        if frames.numel() == 0:
            return
        scalar = state.deferred.scalar
        logsumexp = torch.logsumexp(frames, dim=-1).abs().median()
        state.ctc_input = (scalar(logsumexp), scalar(frames.amax()), log_probs.shape[-1])

    def _count_batch_classes(self, state: StepState, target: torch.Tensor, classes: int, ignore_index: int) -> None:
        """How many classes a classifier's batch holds, and which is the most frequent: on a few first sampled steps,
        then on those whose count is a power of two. Batches of one class each come from a dataset sorted by class
        and not shuffled: each stretch of steps pulls the model towards one class."""
        self._class_count_looks += 1
        if target.numel() < 2:
            return
        ordered = target.sort().values
        ignored = (ordered == ignore_index).any()
        distinct = (ordered[1:] != ordered[:-1]).sum() + 1 - ignored.long()
        scalar = state.deferred.scalar
        state.batch_classes = (target.numel(), classes, scalar(distinct.float()), scalar(target.mode().values.float()))

    def _look_at_loose_leaves(self, state: StepState, nodes: list, names: dict) -> None:
        """Tensors that get a gradient but are no watched parameter, held by a watched module: a plain tensor made
        with `requires_grad=True` (`self.scale = torch.tensor(1.0, requires_grad=True)`: `parameters()` leaves it out,
        no optimiser steps it), or an `nn.Parameter` registered in `forward()` (a new one at every call); or an
        `nn.Parameter` no watched module holds, read by a layer's operation: a layer built inside `forward()`
        (`nn.Linear(64, 10)(x)`), named after the watched module before it. Inputs made to require grad (an
        adversarial example, a physics-informed network's coordinates) are plain tensors of no module."""
        held_by_script = None  # (id -> name of the small learnable-looking tensors the script holds: found once)
        for node in nodes:
            for child, _ in node.next_functions:
                if type(child) is not graph_tools.PARAMETER_LEAF or id(child.variable) in self.param_labels:
                    continue
                found = self._attribute_holding(child.variable)
                if found is None and isinstance(child.variable, nn.Parameter) and op_name(node) in LAYER_READS:
                    found = (
                        f"layer made in forward after {graph_tools.nearest_upstream(node, names) or 'input'}",
                        "made",
                    )
                if found is None and self.infos and _stands_for_a_parameter(child.variable):
                    if held_by_script is None:
                        held_by_script = self._small_tensors_held_by_script(nodes)
                    name = held_by_script.get(id(child.variable))
                    found = None if name is None else (name, "script")
                if found is None or found[0] in state.loose_leaves:
                    continue
                path, kind = found
                entries = child.variable.detach().flatten()[:LEAF_ENTRIES_COMPARED]
                first = self._first_values.setdefault(path, entries.clone())
                changed = (entries != first).any() if entries.shape == first.shape else torch.tensor(True)
                last = self._last_leaves.get(path)
                renewed = last is not None and last() is not child.variable  # (a new object since the last look)
                self._last_leaves[path] = weakref.ref(child.variable)
                state.loose_leaves[path] = (kind, renewed, state.deferred.scalar(changed))

    def _small_tensors_held_by_script(self, nodes: list) -> dict[int, str]:
        """id -> name of the tensors the script holds by a name (`log_k = torch.tensor(0.0, requires_grad=True)` at top
        level, an inverse problem's unknown coefficient) that the graph reads, none of them through a layer's product:
        an input made to require grad (a PINN's coordinates, a saliency map's image) is what a layer reads."""
        read_by_layers = {
            id(child.variable)
            for node in nodes
            if op_name(node) in LAYER_READS
            for child, _ in node.next_functions
            if type(child) is graph_tools.PARAMETER_LEAF
        }
        return {key: name for key, name in _script_tensor_names().items() if key not in read_by_layers}

    def _attribute_holding(self, tensor: torch.Tensor) -> tuple[str, str] | None:
        """(path, "parameter" or "tensor") of the watched module's attribute that holds `tensor`, or None."""
        for module, info in list(self.infos.items()):
            for attribute, value in module._parameters.items():
                if value is tensor:
                    return f"{info.name}.{attribute}", "parameter"
            for attribute, value in vars(module).items():
                if value is tensor:
                    return f"{info.name}.{attribute}", "tensor"
        return None

    def _test_custom_backward(self, state: StepState, node, names) -> None:
        """Call a custom autograd.Function's backward once more after it ran, on its first few sampled steps, to
        see whether it uses the gradient it is given (see graph_tools.ignores_grad_output); and on those steps see,
        at every call of it, whether its backward returns None for parameters given to it as inputs."""
        name = graph_tools.custom_function(node)
        testable = name is not None
        name = name or graph_tools.custom_function(node, testable=False)  # (any: which parameters it drops, at least)
        if name is None or (
            name not in state.custom_backwards and self._custom_checks.get(name, 0) >= CUSTOM_BACKWARD_CHECKS
        ):
            return
        # the watched parameters given to it as inputs: (position, name), to see whether its backward returns None
        given = []
        for position, (child, _) in enumerate(node.next_functions):
            label = self._param_label(getattr(child, "variable", None)) if child is not None else None
            if label is not None:
                given.append((position, label[1]))
        if name in state.custom_backwards:  # (another call of it in this step: its parameters only)
            if given:
                node.register_hook(functools.partial(self._on_custom_parameters, state.ticket, name, given))
            return
        self._custom_checks[name] = self._custom_checks.get(name, 0) + 1
        after = graph_tools.nearest_upstream(node, names)
        call = state.custom_calls.get(id(node))
        call = call if call is not None and call.node is node else None
        state.custom_backwards[name] = CustomBackwardTest(node, after, call)
        if given:
            node.register_hook(functools.partial(self._on_custom_parameters, state.ticket, name, given))
        if testable:
            node.register_hook(functools.partial(self._on_custom_backward, state.ticket, name))

    def _look_at_loss_weights(self, state: StepState, nodes) -> None:
        """Learned weights on loss terms that nothing holds back (`graph_tools.unheld_loss_weights`), looked for on the
        first UNHELD_LOOKS sampled steps; each found is read on every sampled step after (its few values)."""
        if self._unheld_looks < UNHELD_LOOKS:
            self._unheld_looks += 1
            for variable in graph_tools.unheld_loss_weights(nodes):
                label = self._param_label(variable)
                if label is not None:
                    self._unheld_params[label[1]] = weakref.ref(variable)
        for name, ref in self._unheld_params.items():
            variable = ref()
            if variable is not None and name not in state.unheld_values:
                state.unheld_values[name] = state.deferred.vector(variable.detach().reshape(-1).float())

    def _look_at_reversal(self, state: StepState, node, names) -> None:
        """A custom Function named as a gradient reversal, on its first REVERSAL_LOOKS sampled steps (whatever its
        backward does: an in-place `grad.neg_()` too): the cosine between what its backward returns and what it is
        given. Steps whose lambda is still 0 return nothing and tell nothing; the looks go on past them."""
        name = graph_tools.custom_function(node, testable=False)
        if name is None or name in state.reversal_checks or not graph_tools.named_as_gradient_reversal(name):
            return
        if self._reversal_looks.get(name, 0) >= REVERSAL_LOOKS:
            return
        self._reversal_looks[name] = self._reversal_looks.get(name, 0) + 1
        state.reversal_checks[name] = [graph_tools.nearest_upstream(node, names), None]
        node.register_hook(functools.partial(self._on_reversal_grad, state.ticket, name))

    def _on_reversal_grad(self, ticket: Ticket, name: str, grad_inputs, grad_outputs):
        state = ticket.state
        if state is None or state.reversal_checks[name][1] is not None:
            return
        try:
            along = graph_tools.along_grad_output(grad_inputs, grad_outputs)
            if along is not None:
                state.reversal_checks[name][1] = state.deferred.scalar(along)
        except Exception as error:
            self._fail("looking at a gradient reversal", error)

    def _on_custom_parameters(self, ticket: Ticket, name: str, given: list, grad_inputs, grad_outputs):
        """Which parameters given to a custom Function as inputs its backward returned None for: it drops them."""
        state = ticket.state
        if state is None:
            return
        dropped = state.custom_backwards[name].dropped
        dropped.extend(parameter for position, parameter in given if grad_inputs[position] is None)

    def _on_custom_backward(self, ticket: Ticket, name: str, grad_inputs, grad_outputs):
        state = ticket.state  # (the node is looked up in the state, not held by the hook: see _on_nan_prone_grad)
        if state is None:
            return
        test = state.custom_backwards[name]
        try:
            flags = graph_tools.ignores_grad_output(test.node, grad_inputs, grad_outputs)
        except Exception:  # (the user's backward cannot run twice, having freed what it saved, say: left untested)
            return
        if flags is None:  # (a backward that draws random numbers: a different gradient at each call, by design)
            return
        try:
            test.flags_at = [None if flag is None else state.deferred.scalar(flag) for flag in flags]
            test.grad_output_at = state.deferred.scalar(_norm_of_all(grad_outputs))
            test.grad_input_at = state.deferred.scalar(_norm_of_all(grad_inputs))
            given = [g for g in grad_outputs if isinstance(g, torch.Tensor)]
            if given and all(g.numel() == 1 for g in given):  # (the loss itself: d loss / d loss = 1)
                test.grad_output_one_at = state.deferred.scalar(torch.stack([(g == 1).all() for g in given]).all())
        except Exception as error:
            self._fail("testing a custom Function's backward", error)
        call = test.call
        if call is None or [_version_of(a) for a in call.args] != call.versions:  # (changed in place since: untested)
            return
        try:
            numbers = graph_tools.backward_against_forward(
                _run_forward_again(call.function, call.generators),
                call.args,
                call.differentiated,
                grad_inputs,
                grad_outputs,
                call.outputs,
                held=graph_tools.held_for_backward(test.node),
            )
            if numbers is not None:
                test.against_forward_at = state.deferred.vector(numbers)
        except Exception as error:
            self._fail("testing a custom Function's backward against its forward", error)

    def wants_custom_call(self, function) -> bool:
        """Whether a call of this custom autograd.Function is to be kept for the test of its backward against its
        forward: on a sampled step, while the Function is still under test and its forward may run again."""
        state = self.state
        if state is None or self._hooks_paused or len(state.custom_calls) >= MAX_CUSTOM_CALLS:
            return False
        if function.__module__.split(".")[0] == "torch" or not torch.is_grad_enabled():
            return False
        if self._custom_checks.get(function.__name__, 0) >= CUSTOM_BACKWARD_CHECKS:
            return False
        return graph_tools.forward_may_run_again(function)

    def note_custom_call(self, function, args, output, generators) -> None:
        """A custom autograd.Function applied (`_patched_function_apply`), one `wants_custom_call` wanted: the call
        is kept, with the random generators' states before it."""
        state = self.state
        node = next((t.grad_fn for t in _tensors(output) if t.grad_fn is not None), None)  # (one node for every output)
        if state is None or node is None:
            return
        differentiated = [isinstance(a, torch.Tensor) and a.requires_grad for a in args]
        versions = [_version_of(a) for a in args]
        returned = output if isinstance(output, tuple) else (output,)
        outputs = tuple(t.detach() if isinstance(t, torch.Tensor) else t for t in returned)
        call = CustomCall(node, function, args, differentiated, versions, generators, outputs)
        state.custom_calls[id(node)] = call

    def _reaches_a_watched_parameter(self, node, limit: int = 256) -> bool:
        """Whether a watched parameter lies upstream of `node` in the graph (the first `limit` nodes looked at)."""
        seen, queue = {node}, [node]
        for current in queue:
            if len(seen) > limit:
                return True  # (a graph that large is a model's: assume so)
            for child, _ in current.next_functions:
                if child is None or child in seen:
                    continue
                if type(child) is graph_tools.PARAMETER_LEAF:
                    if id(child.variable) in self.param_labels:
                        return True
                    continue
                seen.add(child)
                queue.append(child)
        return False

    def _of_a_parameter(self, node) -> bool:
        """Whether an operation is taken of a watched parameter alone, shifted or scaled by constants (an L0 penalty's
        sigmoid(log_alpha - c), a mixing weight's sigmoid(w)), or of parameters and constants through a few operations
        and no layer (concrete dropout's relaxed Bernoulli mask, sigmoid((logit(p) + logit(u)) / t), u uniform noise):
        no data flows through it."""
        inputs = [child for child, _ in node.next_functions if child is not None]
        if len(inputs) != 1:
            return False
        variable = getattr(graph_tools.gate_chain(inputs[0])[-1], "variable", None)  # (AccumulateGrad holds its leaf)
        if variable is not None and self._param_label(variable) is not None:
            return True
        return op_name(node) in SQUASHING and graph_tools.of_parameters_alone(inputs[0])  # (a ReLU's is no mask)

    def _parameter_read(self, node) -> tuple[str, torch.Tensor] | None:
        """(name, tensor) of the watched parameter an operation reads, itself or scaled by a constant, if any:
        `sign(self.weight)` in a binarised layer, `round(self.weight * 16)` in a quantised one."""
        for child, _ in node.next_functions:
            below = graph_tools.beneath_scaling(child) if child is not None else None
            variable = getattr(below, "variable", None)  # (an AccumulateGrad node holds its leaf as `variable`)
            entry = self._param_label(variable) if variable is not None else None
            if entry is not None:
                return entry[1], variable
        return None

    def _recurrent_regions(self, state: StepState, nodes: list) -> dict:
        """node -> the recurrent module whose forward made it (the ops between its inputs and its outputs)."""
        outputs: dict[str, list] = {}
        for node in nodes:
            module_name = state.recurrent_outputs.get(node)
            if module_name is not None:
                outputs.setdefault(module_name, []).append(node)
        inside = {}
        for module_name, ends in outputs.items():

            def is_input(node, module_name=module_name) -> bool:  # made one of the module's inputs
                return module_name in state.enters.get(node, ())

            for node in graph_tools.region(ends, is_input):
                inside.setdefault(node, module_name)
        return inside

    def _read_by_its_own_model(self, node, reader: str | None, names) -> bool:
        """Whether a module of the model that made `node` (the one nearest upstream of it) reads its output: a hidden
        layer's activation, not a model's output read by another model (a generator's, by the discriminator)."""
        if reader is None:
            return False
        if len(self.root_names) <= 1:
            return True
        maker = graph_tools.nearest_upstream(node, names)
        return maker is not None and maker.split(".")[0] == reader.split(".")[0]

    def _note_gate_mean(self, state: StepState, node, function: str) -> None:
        """The mean of a sigmoid (or hardsigmoid) gate's output, under its site's name: a sigmoid's node saved its
        output, a hardsigmoid's its input."""
        site = f"{function} after {graph_tools.nearest_upstream(node, state.names) or 'input'}"
        if function == "hardsigmoid":
            saved = graph_tools.saved_value(node, "_saved_self")
            gate = None if saved is None else nn.functional.hardsigmoid(saved.detach().float())
        else:
            saved = graph_tools.saved_value(node, "_saved_result")
            gate = None if saved is None else saved.detach().float()
        if gate is not None:
            state.gate_means[site] = state.deferred.scalar(gate.mean())

    def _tally_activation(self, state: StepState, node, op: str, owner: str | None, saturation: float) -> str:
        """Count an activation's outputs into its site's tally; returns the site."""
        names = state.names
        feeds_from = graph_tools.nearest_upstream(node, names)
        site = names.get(node) or owner or f"{op} after {feeds_from or 'input'}"
        if op == "leaky_relu":  # (it keeps its input; in place, `inplace=True`, its result)
            saved = _saved_activation(node)
        else:
            saved = graph_tools.saved_value(node, "_saved_self" if op in READ_FROM_INPUT else "_saved_result")
        y = activation_values(op, saved.detach(), _relu_ceiling(node) if op in ("relu6", "relu_n") else None)
        feeds_info = self.info_by_name.get(feeds_from) if feeds_from else None
        feeds_kind = feeds_info.kind if feeds_info else None
        axis = unit_axis(y, feeds_kind)
        units = y.shape[axis] if y.dim() else 1
        tally = state.activations.get(site)
        if tally is None or tally.units != units or tally.function != op:
            tally = ActivationTally(op, units, feeds_from=feeds_from if feeds_from != site else None)
            if site in state.order:
                tally.depth = state.order[site]
            elif feeds_from in state.order:
                tally.depth = state.order[feeds_from] + 0.5
            state.activations[site] = tally
        try:
            add_activation(tally, y, axis, saturation, self._scratch)
        except Exception:
            del state.activations[site]  # (counted in part, its record could not be built: the site goes unmeasured)
            raise
        return site

    # --- optimiser steps ----------------------------------------------------------------------------------------------
    def _known_optimizer(self, optimizer) -> bool | None:
        """Whether an optimiser met before was found watched; None for one not met (or a freed one's id reused)."""
        ref, known = self.optimizers.get(id(optimizer), (None, None))
        return known if ref is not None and ref() is optimizer else None

    def _steps_watched(self, params) -> bool:
        """Whether an optimiser stepping `params` is watched: any in a script the runner runs (its model may not be
        discovered yet), else one that steps a watched parameter."""
        return self.discover or any(self._param_label(p) for p in params)

    def _may_watch(self, optimizer) -> bool:
        """`_is_watched_optimizer`'s answer, told without finding models for it (which is that method's to do). An
        optimiser over parameters none of the watched models had when named may step parts put into one since (LoRA
        adapters): looked for once per optimiser and size."""
        known = self._known_optimizer(optimizer)
        if known is not None:
            return known
        params = _stepped_parameters(optimizer)
        if self._steps_watched(params) or self._parts_looked_for.get(optimizer) == len(params):
            return self._steps_watched(params)
        self._parts_looked_for[optimizer] = len(params)
        self._name_parts_added_since(params)
        return self._steps_watched(params)

    def _is_watched_optimizer(self, optimizer) -> bool:
        known = self._known_optimizer(optimizer)
        if known is None:
            params = _stepped_parameters(optimizer)
            self._name_parts_added_since(params)
            known = self._steps_watched(params)
            if self.discover:  # (its model, or the part of it whose own parameters no called module holds)
                self._discover_owner([p for p in params if not self._param_label(p)])
                if not self.root_names and self._backward_calls:  # no model: the tensors it steps are the script's
                    self._name_script_tensors(self._tensors_of_a_model_without_modules(params))
                    known = self._steps_watched(params)
            if self.discover and not self.root_names and not self._backward_calls:
                return known  # (stepped before any backward, no model met: looked at again at its next step)
            self.optimizers[id(optimizer)] = (weakref.ref(optimizer), known)
            if known:
                self.doctor.history.watched.append(type(optimizer).__name__)
                self._watched_optimizers.add(optimizer)
        return known

    def _on_optimizer_pre(self, optimizer, args, kwargs):
        try:
            if not self._may_watch(optimizer) or not self.claim_thread(STEPPED):
                return None
            if not self._is_watched_optimizer(optimizer):
                return None
            self._stepped_since_backward = True
            if self.sampling and self.state is not None and self.state.gradient_sample is not None:
                self._compare_gradient_sample(self.state)
            if self.sampling and self.state is not None:
                # (clipped in place since, the gradient is still that pass's own)
                clipped = self.state.clipping is not None or self.state.value_clipping is not None
                self.state.last_gradient_stepped = _left_as_it_was(self._last_gradient, rescaled=clipped)
                if self._last_gradient is not None and not self.state.last_gradient_stepped:
                    self._compare_with_backward_gradient(self.state)
            self._last_gradient = None  # (a step came: a reset before the next backward is the usual zero_grad())
            if self.sampling:  # (read at a sampled step: those stepped in its period, before or after it)
                self._stepped_since_primary.add(optimizer)
            if not self._is_primary(optimizer):
                if self.sampling and self.state is not None:
                    self._note_step_without_gradient(optimizer)
                    self._note_same_parameters(optimizer)
                return None
            self.mode = "optimizer"
            self._awaiting = False
            self._in_step = True
            self._primary_steps += 1
            if self._schedulers_stepped:
                self._look_for_rates_set_by_hand(optimizer)
            if self._reset_marks is not None:
                self._check_reset()
            if not self.sampling and self._zero_suspects:
                self._look_at_zero_suspects()
            if self.sampling and self.state is not None:
                self.state.stepped_and_frozen = self._stepped_and_frozen(optimizer)
                if self.state.stepped_and_frozen[1]:
                    self.state.requires_grad_assigned = self._requires_grad_assigned(optimizer)
                self.state.module_requires_grad = self._modules_given_requires_grad()
                self.state.maximizes = any(group.get("maximize", False) for group in optimizer.param_groups)
                self.state.swapped_betas = _swapped_betas(optimizer)
                self.state.misspelt_setting = _misspelt_setting(optimizer)
                self.state.momentum_not_decaying = _momentum_not_decaying(optimizer)
                self.state.negative_lr = _negative_rate(optimizer)
                self.state.step_size_normalised = isinstance(optimizer, SIZE_NORMALISING) or any(
                    "betas" in group for group in optimizer.param_groups
                )
                self.state.lr_schedule = _lr_schedule(optimizer) or self._plateau_schedule(optimizer)
                if self.state.lr_schedule is None:
                    self.state.lr_by_hand = self._rate_set_by_hand(optimizer)
                    if self._schedulers_stepped:
                        self.state.schedule_not_applied = self._schedule_not_applied(optimizer)
                self.state.one_cycle_max_lr = _one_cycle_max_lr(optimizer)
                # (`optimizer.step()` where `scaler.step(optimizer)` was meant: the gradients are scale times theirs)
                self.state.stepped_scaled = self.state.loss_scaled and _steps_scaled_gradients(optimizer, kwargs)
                self.state.decayed_rate = _decayed_rate(optimizer)
                self.state.large_eps = _large_eps(optimizer)
                self.state.coupled_decay = _coupled_decay(optimizer)
                self.state.group_rates = _group_rates(optimizer, self._param_label)
                closure = args[1] if len(args) > 1 else kwargs.get("closure")  # (args[0] is the optimiser)
                self.state.line_search = closure is not None and isinstance(optimizer, torch.optim.LBFGS)
                if closure is not None:  # its backward passes run inside this step: were the gradients reset in them?
                    self._reset_marks = GradientMarks(self._optimizer_parameters(optimizer))
                    self._marks_in_closure = True
                if closure is not None and not self._backward_calls:
                    # No backward yet: the optimiser computes the gradients itself, calling the closure (LBFGS).
                    # Its first forward and backward are this step's; the gradients are measured after them.
                    self._closure_params = _stepped_parameters(optimizer)
                else:
                    self._hooks_paused = True  # forward calls inside the step (a closure) are not this step's
                    self._measure_parameters(_stepped_parameters(optimizer), snapshot=True)
                if self._zero_suspects:
                    self._defer_zero_suspects(self.state)
        except Exception as error:
            self._fail("optimizer pre-step hook", error)
        except BaseException:  # (Ctrl-C in the hook: the script may catch it and train on)
            self._drop_step_in_flight()
            raise
        return None

    def _look_at_zero_suspects(self) -> None:
        """On a step between sampled ones: whether the gradient of a parameter found exactly zero at every sampled step
        so far is nonzero now (a hinge loss's bias, zero on most steps: the samples may all fall on those). Kept as a
        flag on the device, read with the next sampled step's statistics: no synchronisation here."""
        for name, (ref, flag) in list(self._zero_suspects.items()):
            param = ref()
            grad = None if param is None else param.grad
            if grad is None or grad.is_sparse:
                continue
            nonzero = torch.any(grad.detach())
            self._zero_suspects[name] = (ref, nonzero if flag is None else flag.logical_or_(nonzero))

    def _note_zero_suspects(self, record: StepRecord, state: StepState) -> None:
        """After a sampled step's record (before the history folds it): a parameter with an exactly zero gradient,
        never nonzero at a sampled step before, becomes a suspect (`_look_at_zero_suspects`); one found nonzero is one
        no more."""
        with_grad = self.doctor.history.param_with_grad
        for (name, _, param), zero in zip(state.params, record.param_zero_grad.values()):
            if zero and not with_grad.get(name) and name not in self._zero_suspects:
                if len(self._zero_suspects) < MAX_ZERO_SUSPECTS:
                    self._zero_suspects[name] = (weakref.ref(param), None)
            elif name in self._zero_suspects and record.param_has_grad.get(name):
                del self._zero_suspects[name]

    def _defer_zero_suspects(self, state: StepState) -> None:
        """At a sampled step: the suspects' flags join the step's statistics, and start again."""
        for name, (ref, flag) in list(self._zero_suspects.items()):
            if flag is not None:
                state.nonzero_between[name] = state.deferred.scalar(flag.float())
                self._zero_suspects[name] = (ref, None)

    def _note_step_without_gradient(self, optimizer) -> None:
        """A watched optimiser beside the training one (a GAN's generator's) about to step parameters that require
        grad and of which not one holds a gradient: the loss differentiated before it does not reach them (the
        generator's loss computed from `G(z).detach()`). Its modules are noted for the step's record."""
        params = [p for p in _stepped_parameters(optimizer) if p.requires_grad]
        if params and all(p.grad is None for p in params):
            modules = sorted({entry[2] for entry in map(self._param_label, params) if entry is not None})
            if modules:
                self.state.optimizers_without_gradient.append(modules)

    def _note_same_parameters(self, optimizer) -> None:
        """A watched optimiser beside the training one that steps exactly the training one's parameters, outside its
        step (a wrapper's inner optimiser, Lookahead's, steps them inside it): each update applied twice, by two
        optimisers with states of their own (an ensemble made as `[model()] * 3`, one optimiser per member)."""
        primary = self.primary() if self.primary is not None else None
        if primary is None or self._in_step or primary.param_groups is optimizer.param_groups:
            return
        own = {id(p) for p in _stepped_parameters(optimizer) if p.requires_grad}
        if own and own == {id(p) for p in _stepped_parameters(primary) if p.requires_grad}:
            self.state.optimizers_stepping_the_same.append(type(optimizer).__name__)

    def _stepped_and_frozen(self, optimizer) -> tuple[int, int]:
        """How many parameters the watched optimisers that stepped since the last training step step (this one's,
        and every other's: a frozen backbone's optimiser beside the head's; not a pretraining optimiser still alive
        but idle), and how many of them are frozen (requires_grad=False, and no gradient given by hand: step() updates
        a tensor that holds a .grad, whether backward wrote it or the script did, float32 master weights)."""
        own = _stepped_parameters(optimizer)
        frozen = sum(_frozen(p) for p in own)
        if frozen < len(own):  # (the usual case: this one trains something; no need to count the others')
            return len(own), frozen
        stepping = [optimizer, *self._stepped_since_primary]
        stepped = {id(p): p for other in stepping for p in _stepped_parameters(other)}
        return len(stepped), sum(_frozen(p) for p in stepped.values())

    def _modules_given_requires_grad(self) -> list[str]:
        """The watched modules holding an attribute `requires_grad = False` of their own while some of their parameters
        still require grad: `backbone.requires_grad = False` meant to freeze them, and an `nn.Module` has no such flag
        (`requires_grad_(False)` is the method), so Python just stores it and nothing is frozen. Outermost first."""
        given = []
        for module, info in list(self.infos.items()):
            if module.__dict__.get("requires_grad") is False and any(p.requires_grad for p in module.parameters()):
                given.append(info.name)
        return [name for name in given if not any(name.startswith(f"{outer}.") for outer in given)]

    def _requires_grad_assigned(self, optimizer) -> list[str]:
        """The frozen parameters the optimiser steps that hold an attribute `requires_grad_` of their own: the
        unfreezing line `p.requires_grad_ = True` assigns one, hiding the method it meant to call, and the parameter
        stays frozen (named by their labels; `parameter` when the probe does not know one)."""
        labels = []
        for param in _stepped_parameters(optimizer):
            if not param.requires_grad and "requires_grad_" in vars(param):
                label = self._param_label(param)
                labels.append(label[1] if label else "parameter")
        return labels

    def _is_primary(self, optimizer) -> bool:
        """Whether this optimiser's steps are the training steps: the one given to `watch`, or else the first watched
        one to step, until another replaces it (see `_held_primary`). A script may make a new optimiser each epoch or
        fold: when the old one has been freed, the next to step is adopted. Without one given, others taking turns
        while the followed one stays idle far longer than ever before take over too (`_take_over_from_idle`)."""
        if self._given_optimizer is None:
            primary = self.primary() if self.primary is not None else None
            if primary is None:
                self._adopt(optimizer)
            elif primary is not optimizer:
                waiting = self._others_since_primary
                waiting[optimizer] = waiting.get(optimizer, 0) + 1
                if sum(waiting.values()) > max(IDLE_TAKEOVER, 4 * self._longest_wait):
                    return self._take_over_from_idle(optimizer) is optimizer
        return self._held_primary(optimizer)

    def _take_over_from_idle(self, optimizer):
        """The primary has not stepped for far longer than ever before while others took turns (a pretraining
        optimiser kept alive, then a phase whose model's and discriminator's optimisers alternate): the one of them
        over the primary's parameters takes over (the one stepping now when none is), its steps since the primary's
        last within its first step. Returns the new primary."""
        waiting = self._others_since_primary
        overlapping = [o for o in waiting if not self._primary_params.isdisjoint(map(id, _stepped_parameters(o)))]
        successor = optimizer if optimizer in overlapping or not overlapping else overlapping[0]
        # (the steps it took while waiting; one more, its next, when it is not the one stepping now)
        self._steps_in_flight = waiting[successor] + (successor is not optimizer)
        self._adopt(successor)
        return successor

    def _adopt(self, optimizer) -> None:
        """Take `optimizer`'s steps for the training steps from now on. When it trains other parameters than the one
        before (a second model trained after the first), its loss is another training's: the loss rules judge it on
        its own, not as the continuation of the first model's curve."""
        params = frozenset(map(id, _stepped_parameters(optimizer)))
        if self._primary_params and params.isdisjoint(self._primary_params):
            self.doctor.history.restart_loss(self.step)
        elif self._primary_params and self._primary_steps >= PHASE_STEPS:
            # (a new optimiser over the same model after a phase of training: a new task of a continual learner, a
            # fine-tuning after pretraining; its loss, on other data or another objective, starts a curve of its own)
            self.doctor.history.restart_loss(self.step)
        # (an optimiser made anew at every step, over the same parameters: each one steps once)
        self._made_anew = params == self._primary_params and self._primary_steps == 1
        self.primary, self._primary_params, self._primary_steps = weakref.ref(optimizer), params, 0
        # (what was counted of the others' steps between the old one's is counted anew for this one)
        self._stepped_alone, self._others_in_a_row, self._longest_gap = None, 0, 0
        self._others_since_primary.clear()
        self._longest_wait = 0

    def _held_primary(self, optimizer) -> bool:
        """The followed optimiser's steps are the training steps, whatever another does between them (a GAN's critic
        stepping five times per generator step; SAC's actor stepping twice in a row between the critic's steps, its
        temperature's optimiser unwatched). Only another that steps more than twice as many times in a row as ever
        came before one of its steps (and more than twice), once it has stepped, is taken for the next phase's
        optimiser (a new one per epoch, the old one still alive), and followed from then on."""
        primary = self.primary() if self.primary is not None else None
        if optimizer is primary:
            self._longest_gap = max(self._longest_gap, self._others_in_a_row)
            self._others_in_a_row = 0
            if self._others_since_primary:  # (usually none stepped between: nothing to count, on every step)
                self._longest_wait = max(self._longest_wait, sum(self._others_since_primary.values()))
                self._others_since_primary.clear()
            self._primary_stepped = True
            return True
        stepped_alone = self._stepped_alone() if self._stepped_alone is not None else None
        self._others_in_a_row = self._others_in_a_row + 1 if stepped_alone is optimizer else 1
        self._stepped_alone = weakref.ref(optimizer)
        if not self._primary_stepped or self._others_in_a_row <= max(2 * self._longest_gap, 2):
            return False
        self._steps_in_flight = self._others_in_a_row  # (its steps in a row so far are all within this one)
        self._adopt(optimizer)
        return True

    def _on_optimizer_post(self, optimizer, args, kwargs):
        step = self.step
        try:
            if not self.in_its_thread() or self.primary is None or self.primary() is not optimizer:
                return
            if self._stepped_since_primary:
                self._stepped_since_primary.clear()  # (a training step ends here)
            if self._made_anew:  # (its state, made by this first step, is what the one before it threw away)
                self._made_anew = False
                kind, kept = type(optimizer).__name__, _state_kept(optimizer)
                self.doctor.history.note_optimizer_made_anew(self.step, kind, kept)
            if self._marks_in_closure:  # (made at this step's start: its closure's backward passes have run since)
                self._marks_in_closure = False
                if self._reset_marks is not None:
                    self._check_reset(in_closure=True)
            if self.sampling and self.state is not None:
                params = [p for _, _, p in self.state.params] or self._optimizer_parameters(optimizer)
                self._finish_sampled_step(with_update=True)
                # weak references: holding last step's gradients would keep them from being freed by zero_grad()
                self._reset_marks = GradientMarks(params)
            self._end_step()
        except Exception as error:
            self._fail("optimizer post-step hook", error)
            try:
                self._end_step()
            except Exception as second:
                self._fail("ending a step", second)
        except BaseException:  # (Ctrl-C in the hook: the script may catch it and train on)
            self._drop_step_in_flight()
            try:
                if self.step == step:  # (the optimiser did step: counted, once)
                    self._end_step()
            except Exception as second:
                self._fail("ending a step", second)
            raise

    def _drop_step_in_flight(self) -> None:
        """A Ctrl-C (KeyboardInterrupt) inside one of the probe's hooks leaves the sampled step's statistics half
        gathered; the script may catch it and train on. The step is dropped whole (no record of it), never read
        half-made, and the next optimiser step begins a new one as usual. (Also: a step begun by a thread whose
        training is followed no longer, `claim_thread`.)"""
        if self.state is not None:
            self.state.release()
        self.state = None

    def _optimizer_parameters(self, optimizer):
        return [p for p in _stepped_parameters(optimizer) if self._param_label(p)]

    def _model_parameters(self):
        out = []
        for ref, _, _ in self.param_labels.values():
            p = ref()
            if p is not None and p.requires_grad:
                out.append(p)
        return out

    def _check_reset(self, updated_only: bool = False, in_closure: bool = False) -> None:
        """At the optimiser step after a sampled one (without an optimiser: at the backward after it, `updated_only`;
        for a step given a closure, which runs its own backward passes: at that step's end, `in_closure`): were the
        gradients reset in between (`GradientMarks`)?"""
        marks, self._reset_marks = self._reset_marks, None
        reset, stale = marks.counts(updated_only)
        if updated_only and any(marks._updated(i) for i in range(len(marks.params))):
            self.doctor.history.updated_in_place_by_hand = True  # (`p -= lr * p.grad` ran: whatever it moved them by)
        if stale or reset:
            modules = sorted({entry[2] for entry in map(self._param_label, stale) if entry is not None})
            self.doctor.check_reset(
                self.step, len(stale) <= reset, modules, by_hand=updated_only, in_closure=in_closure
            )

    def _measure_parameters(self, candidates, snapshot: bool) -> None:
        """Gradient norms (whole tensors) and, for the update/weight ratio, a snapshot of sampled entries, of the
        `candidates` the probe knows (an optimiser may also step parameters of models it does not watch).

        Copying every parameter before each sampled update would cost as much as a plain SGD step; the ratio
        ||change|| / ||weights|| is estimated as well from up to UPDATE_SAMPLE entries spread through each
        tensor (`ParameterSamples`: views made once, copied into buffers made once).
        """
        state = self.state
        plan = self._parameter_plan(candidates)
        params, state.params, state.samples = plan.params, plan.entries, plan.samples  # the plan's: read, never changed
        if snapshot and self.param_labels:  # (at an optimiser step, once a watched model has run)
            # checked even when the optimiser steps none of the model's parameters (it was made over another's)
            state.not_applied, state.stepped_outside = self._gradients_no_optimizer_applies(plan)
            if state.not_applied:
                state.held_by_idle_optimizer = self._held_by_idle_optimizer(state.not_applied)
                if state.stepped_outside:  # (outside the model: copies of its parameters, or inputs being optimised?)
                    outside = [
                        p
                        for optimizer in list(self._watched_optimizers)
                        for p in _stepped_parameters(optimizer)
                        if not self._param_label(p)
                    ]
                    state.outside_reached = sum(p.grad is not None for p in outside)
                    state.master_copies = self._copied_from(outside, state.not_applied)
        if not params:  # an optimiser step before any watched model ran (a step to start a scheduler, say)
            return
        grads = [p.grad for p in params]
        if snapshot and state.grad_versions is not None and state.grad_versions[0] is plan:
            state.written_after_backward = [
                name
                for (name, _, _), grad, seen in zip(plan.entries, grads, state.grad_versions[1])
                if seen is not None and grad is not None and (id(grad), grad._version) != seen
            ]
        # a .grad requires grad only after backward(create_graph=True): detached, its norm records no graph
        with_grad = [g.detach() if g.requires_grad else g for g in grads if g is not None]
        if True in [g.is_sparse for g in with_grad]:  # nn.Embedding(sparse=True): the norm of its (summed) values
            with_grad = [g.coalesce().values() if g.is_sparse else g for g in with_grad]
        if snapshot:  # the update is measured after the optimiser step, and the weights recorded are those after it
            norms = plan.samples.snapshot_with_norms(with_grad)  # (the samples' norms: only whether they are finite)
            state.snapshot_taken = True
            if state.step >= self._next_displacement:  # (how far the weights moved since the first look: every 16)
                self._next_displacement = state.step + DISPLACEMENT_GAP
                displaced = plan.samples.displacement_norms(state.step)
                if displaced is not None:
                    state.displaced_at = (state.deferred.scalars(displaced), plan.samples.start_step)
        else:  # no update follows: the weights recorded are these
            norms = plan.samples.norms_with(with_grad)
        first = state.deferred.scalars(norms)  # the gradients', then the samples'
        if len(with_grad) == len(grads):  # the usual case: every parameter has a gradient
            state.grad_norm_idx = range(first, first + len(grads))
        else:
            slots = iter(range(first, first + len(with_grad)))
            state.grad_norm_idx = [None if g is None else next(slots) for g in grads]
        state.weights_at = first + len(with_grad)

    def _gradients_no_optimizer_applies(self, plan: ParameterPlan) -> tuple[dict[str, str], int]:
        """At an optimiser step (whose parameters `plan` holds): the model's parameters holding a gradient that no
        watched optimiser steps (name -> module label), and how many parameters the optimisers step that belong to
        no watched model (a module replaced after the optimiser was made leaves its old parameters there).

        Which parameters are left out depends only on what the optimisers step and what the probe knows: with one
        watched optimiser (the usual case) that is found once per plan, and each step only reads whether the
        left-out ones hold a gradient (usually there are none)."""
        if len(self._watched_optimizers) == 1:  # the one that steps now: it steps the plan's candidates
            if plan.unstepped is None:
                plan.unstepped = self._left_out({key[0] for key in plan.key[0]})  # (the candidates' ids)
            unstepped, stepped_outside = plan.unstepped
        else:  # several (a GAN's two): what they step together, found anew
            optimizers = list(self._watched_optimizers)
            stepped = {id(p) for optimizer in optimizers for p in _stepped_parameters(optimizer)}
            unstepped, stepped_outside = self._left_out(stepped)
        not_applied = {}
        for ref, name, label in unstepped:
            p = ref()
            if p is not None and p.requires_grad and p.grad is not None and self._written_since_last_look(name, p.grad):
                not_applied[name] = label
                self.doctor.history.param_shapes.setdefault(name, tuple(p.shape))
        return not_applied, stepped_outside

    def _copied_from(self, outside: list, not_applied: dict[str, str]) -> bool:
        """Whether the model's parameters that no optimiser steps are master weights' copies: as many tensors outside
        the model are stepped, of the same shapes, and every one of the model's was written since the last look (by
        hand: `p.copy_(master)` after the step, the float16 recipe with float32 masters). Not on the first look."""
        versions, written = self._unstepped_versions, True
        params = {name: ref() for ref, name, _ in self.param_labels.values() if name in not_applied}
        for name, p in params.items():
            if p is None:
                return False
            seen = versions.get(name)
            versions[name] = (weakref.ref(p), p._version)
            written = written and seen is not None and seen[0]() is p and seen[1] != p._version
        shapes = sorted(tuple(p.shape) for p in outside)
        return written and shapes == sorted(tuple(p.shape) for p in params.values())

    def _held_by_idle_optimizer(self, not_applied: dict[str, str]) -> dict[str, str]:
        """Of the parameters whose gradient no optimiser applies, those an optimiser held by the script (at top level)
        has in its groups though it never stepped (`encoder_optimizer.step()` forgotten) -> that optimiser's name.
        Looked for once per set of such parameters."""
        key = tuple(sorted(not_applied))
        if self._idle_looked_for[0] == key:
            return self._idle_looked_for[1]
        main = sys.modules.get("__main__")
        ids = {
            id(ref()): name for ref, name, _ in self.param_labels.values() if name in not_applied and ref() is not None
        }
        held = {}
        stepped = {id(p) for optimizer in list(self._watched_optimizers) for p in _stepped_parameters(optimizer)}
        for variable, value in list(vars(main).items()) if main is not None else ():
            if isinstance(value, torch.optim.Optimizer) and value not in self._watched_optimizers:
                params = _stepped_parameters(value)
                if any(id(p) in stepped for p in params):
                    continue  # (shares parameters with one that steps: an optimiser for a later phase, not forgotten)
                for param in params:
                    if id(param) in ids:
                        held.setdefault(ids[id(param)], variable)
        self._idle_looked_for = (key, held)
        return held

    def _written_since_last_look(self, name: str, grad: torch.Tensor) -> bool:
        """Whether a parameter's gradient, which no optimiser steps, was written since the last check looked at it (a
        new tensor, or added into: its version moved). A gradient left over from a model trained earlier in the
        script, which no backward reaches any more, is not one thrown away at every step."""
        seen = self._unstepped_grads.get(name)
        self._unstepped_grads[name] = (weakref.ref(grad), grad._version)
        return seen is None or seen[0]() is not grad or seen[1] != grad._version

    def _left_out(self, stepped: set[int]) -> tuple[list, int]:
        """[(weak reference, name, module label)] of the model's parameters not among `stepped` (ids), and how
        many of `stepped` belong to no watched model."""
        in_model, unstepped = set(), []
        for key, (ref, name, label) in self.param_labels.items():
            if ref() is None:
                continue
            in_model.add(key)
            if key not in stepped:
                unstepped.append((ref, name, label))
        return unstepped, len(stepped - in_model)

    def _parameter_plan(self, candidates) -> ParameterPlan:
        """The candidates the probe knows, [(name, module label, parameter)] and their samples: made once and
        reused while the candidates (and their storage) and the parameters the probe knows stay the same."""
        # (labels are only ever added; a parameter frozen since the last step leaves the plan)
        key = ([(id(p), p.data_ptr(), p.requires_grad) for p in candidates], len(self.param_labels))
        if self._plan is None or self._plan.key != key:
            params = [p for p in candidates if p.requires_grad and self._param_label(p)]
            entries = [(name, label, p) for p, (_, name, label) in zip(params, map(self._param_label, params))]
            samples = ParameterSamples(params)
            if self._plan is not None:  # (the same parameters with new storage, `p.data = saved`: same start)
                samples.carry_start_from(self._plan.samples, [name for name, _, _ in self._plan.entries], entries)
            self._plan = ParameterPlan(key, params, entries, samples)
            self.doctor.history.param_shapes.update((name, tuple(p.shape)) for name, _, p in entries)
        return self._plan

    def _measure_update(self) -> None:
        """||change|| and ||entries after|| of each parameter's sample (detached views and plain buffers: no graph
        is recorded, so no no_grad() is needed)."""
        state = self.state
        if state.snapshot_taken and state.params:
            state.update_at = state.deferred.scalars(state.samples.norms_after_update())
            if state.samples.half:  # (how many sampled entries changed: in half precision, updates may round away)
                params = [p for _, _, p in state.params]
                state.changed_at = state.deferred.scalars(state.samples.changed_and_pushed(params))
        state.snapshot_taken = False

    def _parameter_values(self, state: StepState, scalars) -> tuple[list, list, list, list]:
        """Per parameter: ||grad|| (None without one), ||weights|| after the step, before it, ||update|| (None
        without an update). Sample norms are scaled up to the whole tensor (their ratio needs no scaling)."""
        count = len(state.params)
        grads = [None if i is None else scalars[i] for i in state.grad_norm_idx]
        if state.weights_at is None:
            return grads, [None] * count, [None] * count, [None] * count
        scales = state.samples.scales
        start = state.weights_at
        before = [value * scale for value, scale in zip(scalars[start : start + count], scales)]
        if state.update_at is None:
            return grads, before, before, [None] * count
        start = state.update_at
        update = [value * scale for value, scale in zip(scalars[start : start + count], scales)]
        after = [value * scale for value, scale in zip(scalars[start + count : start + 2 * count], scales)]
        return grads, after, before, update

    # --- the end of a sampled step: fetch everything once, build the record -------------------------------------------
    def _finish_sampled_step(self, with_update: bool) -> None:
        """The last measurements of a sampled step; its statistics start for the host, and its record is built when
        they arrive (on the CPU, at once: `_end_step` comes next, and reads what has arrived)."""
        state = self.state
        if with_update:
            self._measure_update()
        elif not state.params:
            self._measure_parameters(self._model_parameters(), snapshot=False)
        if state.step >= self._next_symmetry_check:
            self._next_symmetry_check = max(2 * state.step, state.step + SYMMETRY_CHECK_GAP)
            try:
                self._measure_unit_spread(state)
            except Exception as error:  # (the rest of the step's record is built all the same)
                state.unit_spreads.clear()
                self._fail("looking at whether units are alike", error)
        self._defer_activation_tallies(state)
        if state.layer_spreads:
            self._output_spread_looks += 1
        for site, share in state.attention_gradient.items():
            state.attention_gradient[site] = state.deferred.scalar(share)
        self._unread.append(UnreadStep(state, state.deferred.start_fetch(), list(self._losses), self._backward_calls))
        self._fresh_roots.clear()  # (their names may now be in a record)
        state.release()  # the step is over for its hooks; what the record needs stays in the state
        self.state = None

    def _measure_unit_spread(self, state: StepState) -> None:
        """Whether each layer's units are still one and the same (`unit_spread`), from the weights as the step left
        them. Units with the same incoming weights compute the same output, receive the same gradient and take the
        same update: alike once, alike for good. So this is looked at rarely (at steps 0, 32, 64, 128, ...),
        and the rule asks for two looks far apart."""
        by_name = {name: p for name, _, p in state.params}
        for label in {label for _, label, _ in state.params}:
            info = self.info_by_name.get(label)
            if info is None:
                continue
            if info.unit_rows and by_name.get(f"{label}.weight") is not None:
                weight, bias = by_name[f"{label}.weight"], by_name.get(f"{label}.bias")
                units, spread_now = weight.shape[0], unit_spread([weight] if bias is None else [weight, bias])
            elif info.recurrent == "sequence" and info.kind in RECURRENT_GATES:
                units, spread_now = self._recurrent_unit_spread(label, info.kind, by_name)
            else:
                continue
            if units >= 2 and spread_now is not None:
                state.unit_spreads[label] = (units, state.deferred.scalar(spread_now))

    @staticmethod
    def _recurrent_unit_spread(label: str, kind: str, by_name: dict) -> tuple[int, torch.Tensor | None]:
        """(hidden units, the least unit spread over a recurrent module's layers and directions): one layer whose
        units are alike is enough."""
        layers = list(_recurrent_layers(label, by_name))
        if not layers:
            return 0, None
        spreads = [unit_spread(recurrent_unit_blocks(RECURRENT_GATES[kind], *weights)) for weights in layers]
        return layers[0][1].shape[1], torch.stack(spreads).amin()

    def _build_record(self, unread: UnreadStep) -> None:
        state = unread.state
        scalars, vectors, flags = unread.fetch.result()
        value = lambda i: None if i is None else scalars[i]  # noqa: E731
        record = StepRecord(step=state.step)
        if unread.losses:
            record.loss = sum(unread.losses) / len(unread.losses)
        grads, state.weights_after, state.weights_before, updates = self._parameter_values(state, scalars)
        self._add_parameter_stats(record, state, grads, updates, unread.backward_calls)
        if state.displaced_at is not None:
            record.displacement = _displacement_in_updates(state, scalars, updates)
        record.params_nonzero_between = [name for name, i in state.nonzero_between.items() if value(i) > 0]
        if self._zero_suspects or True in record.param_zero_grad.values():  # (usually neither: nothing to do)
            self._note_zero_suspects(record, state)
        if state.changed_at is not None:
            self._add_updated_shares(record, state, scalars)
        self._add_layer_stats(record, state, value, vectors)
        self._add_activation_stats(record, state, value, flags)
        record.activations_read_by_loss = sorted(state.read_by_loss)
        record.layers_read_by_loss = sorted(state.loss_reads)
        record.output_side_activations = sorted(self._output_side_sites - self._read_sites)
        for key, tally in state.gates.items():
            arriving = sum(value(a) for _, a in tally.pairs)
            if arriving > 0:
                blocked = sum(value(b) for b, _ in tally.pairs) / arriving
                zero_labels = value(tally.zero_labels_at)
                record.ops[key] = OpStats(
                    tally.op,
                    tally.site,
                    blocked,
                    tally.elements,
                    floor_at_zero=tally.floor,
                    reads=tally.reads,
                    hinge_mean=value(tally.hinge_at),
                    zero_labels=zero_labels if zero_labels is not None and zero_labels >= 0 else None,
                    lower_bound=tally.lower_bound,
                )
        for name, (p, elements) in state.dropouts.items():  # (its derivative is 0 for the share p it drops)
            record.ops[f"dropout@{name}"] = OpStats("dropout", name, p, elements)
        if state.probabilities_into_loss is not None:
            site, function, classes, *target_is_distribution = state.probabilities_into_loss
            if not target_is_distribution or value(target_is_distribution[0]) > 0.5:  # (softmax without log: t's)
                record.probabilities_into_loss, record.probabilities_function = site, function
                record.probabilities_classes = classes
        record.prediction_broadcast = state.prediction_broadcast
        record.softmax_into_squared_error = state.softmax_into_squared_error
        record.classes_on_another_axis = state.classes_on_another_axis
        record.self_similarity = state.self_similarity
        record.unstopped_target = state.unstopped_target
        record.decoded_draws = dict(state.decoded_draws) or None
        repeated = {site: (writes, int(value(at))) for site, (writes, at) in state.rows_written_twice.items()}
        record.rows_written_twice = {site: found for site, found in repeated.items() if found[1] > 0} or None
        record.confined_logits = state.confined_logits
        record.identity_activations = sorted(state.identity_activations) or None
        record.batchnorm_never_estimated = list(state.batchnorm_never_estimated) or None  # (in forward order)
        record.norm_over_one_value = list(state.norm_over_one_value) or None
        record.cancelled_straight_through = dict(state.cancelled_straight_through) or None
        record.turned_straight_through = dict(state.turned_straight_through) or None
        record.zeros_outside_autograd = {
            name: (value(share), reader) for name, (reader, share) in state.zeros_outside_autograd.items()
        } or None
        # (a GradScaler's factor is its own business, not the user's constant; Adam's steps do not grow with it; and
        # gradients divided back in place before the step are the loss's own again)
        changed = 1.0 if state.gradients_changed_before_step else value(state.gradients_changed_at)
        record.loss_term_weights = state.loss_term_weights
        record.summed_beside_a_mean = state.summed_beside_a_mean
        if not (state.loss_scaled or state.step_size_normalised or changed):  # (0.0 or None: kept as backward made it)
            record.root_scale = state.root_scale
        if state.stepped_scaled and state.loss_scale_at is not None and not state.step_size_normalised:
            record.root_scale, record.scaler_never_unscaled = value(state.loss_scale_at), True  # (its factor, left in)
        record.root_scale_unknown = changed is not None and math.isnan(changed)
        if state.gradient_replaced is not None:
            parameter, ratio_at, cosine_at = state.gradient_replaced
            record.gradient_replaced = {
                "parameter": parameter,
                "norm_ratio": value(ratio_at),
                "cosine": value(cosine_at),
            }
        record.dropout_into_loss = state.dropout_into_loss
        if state.backward_pairs:
            # (three passes or more of one loss: the same loss over several batches, not an attack's or a task's pass
            # before the training's, nor SAM's two, nor A-GEM's memory pass, nor a validation gradient for a log)
            only_the_last = state.last_gradient_stepped and not state.weights_moved_between_backwards
            only_the_last = only_the_last and state.backward_pairs >= 2 and len(state.root_ops) == 1
            record.reset_between_backwards = (
                state.reset_between_backwards,
                state.backward_pairs,
                state.root_scale,
                only_the_last,
            )
            if state.score_passes and state.loss_passes and not state.reset_between_backwards:
                if state.last_gradient_stepped and not state.weights_moved_between_backwards:
                    module, reads = state.score_passes[0]
                    record.score_backward = {
                        "score_of": module,
                        "score_reads": reads,
                        "loss": state.loss_passes[0],
                        "backward_passes": state.backward_pairs + 1,
                    }
        record.loose_leaves = {
            path: {"kind": kind, "renewed": renewed, "changed": value(changed_at) > 0}
            for path, (kind, renewed, changed_at) in state.loose_leaves.items()
        } or None
        if state.target_scale is not None:
            loss, target_at, prediction_at = state.target_scale
            record.target_scale = {"loss": loss, "target_rms": value(target_at), "prediction_rms": value(prediction_at)}
        if state.zero_class_weight is not None:
            classes, zero_at, share_at = state.zero_class_weight
            record.zero_class_weight = {
                "classes": classes,
                "classes_weighted_zero": int(value(zero_at)),
                "examples_weighted_zero": value(share_at),
            }
        if state.zero_pos_weight is not None:
            smallest_at, positive_at, unweighted_at = state.zero_pos_weight
            record.zero_pos_weight = {
                "pos_weight_min": value(smallest_at),
                "positives": value(positive_at),
                "positives_weighted_zero": value(unweighted_at),
            }
        if state.base_rate is not None:
            positives_at, binary_at = state.base_rate
            record.base_rate = {"positives": value(positives_at), "binary": value(binary_at) == 1}
        if state.soft_targets is not None:
            row_sum_at, over_one_at, binary_at, loss = state.soft_targets
            record.soft_targets = {
                "row_sum": value(row_sum_at),
                "rows_over_one": value(over_one_at),
                "binary": value(binary_at) == 1,
                "loss": loss,
            }
        record.ctc_targets = state.ctc_targets
        if state.ctc_input is not None:
            logsumexp_at, high_at, classes = state.ctc_input
            record.ctc_input = {"logsumexp": value(logsumexp_at), "high": value(high_at), "classes": classes}
        if state.one_hot_rows:
            record.one_hot_rows = {
                site: {"share": value(share_at), "entries": entries, "divided_by": temperature}
                for site, (share_at, entries, temperature) in state.one_hot_rows.items()
            }
        if state.attention:
            record.attention = {
                site: {
                    "entries": entries,
                    "scale": scale,
                    "capacity": value(left_at),
                    "max_probability": value(max_at),
                    "head_width": width,
                }
                for site, (entries, scale, left_at, max_at, width) in state.attention.items()
            }
            for site, same_at in state.attention_gradient.items():
                if site in record.attention:
                    record.attention[site]["gradient_same_along_axis"] = value(same_at)
        if state.lookahead:
            record.lookahead = {
                site: {
                    "next_position": value(share_at),
                    "furthest_ahead": int(value(furthest_at)),
                    "positions": length,
                    "next_tokens": value(next_tokens_at),
                    **({"convolution": extra["convolution"]} if "convolution" in extra else {}),
                    **({"float_mask": [value(at) for at in extra["float_mask"]]} if "float_mask" in extra else {}),
                    **({"decoder": True} if extra.get("decoder") else {}),
                }
                for site, (share_at, furthest_at, length, next_tokens_at, extra) in state.lookahead.items()
            }
        if state.padding_ids:
            self._padding_looks += 1
        if state.position_ids:
            self._position_looks += 1
        record.position_grad_norms = {name: vectors[at].tolist() for name, at in state.position_grads.items()} or None
        record.unheld_loss_weights = {name: vectors[at].tolist() for name, at in state.unheld_values.items()} or None
        record.reversal_checks = {
            name: (value(cosine_at), after) for name, (after, cosine_at) in state.reversal_checks.items() if cosine_at
        } or None
        if state.padding_checks:
            record.padding_checks = {
                name: {
                    "padding_idx": padding_idx,
                    "gradient_at_padding": value(at_padding),
                    "silent_id": int(value(silent_id)),
                    "silent_share": value(silent_share),
                    "silent_at_row_ends": value(at_ends) > 0,
                }
                for name, (padding_idx, at_padding, silent_id, silent_share, at_ends) in state.padding_checks.items()
            }
        if state.loss_mask is not None:
            padding_idx, padding_at, real_at = state.loss_mask
            record.loss_mask = {
                "padding_idx": padding_idx,
                "padding_of_kept": value(padding_at),
                "real_kept": value(real_at),
            }
        if state.batch_classes is not None:
            batch, classes, distinct_at, most_at = state.batch_classes
            record.batch_classes = {
                "batch": batch,
                "classes": classes,
                "distinct": value(distinct_at),
                "most_frequent": value(most_at),
            }
        if state.input_spread:
            layer, spread_at = state.input_spread
            record.input_spread = {"layer": layer, "spread": value(spread_at)}
        if state.input_scale:
            layer, largest_at, smallest_at = state.input_scale
            record.input_scale = {"layer": layer, "largest": value(largest_at), "smallest": value(smallest_at)}
        if state.seq_first_inputs and (state.batch_classes is not None or state.regression_rows is not None):
            # (how many examples: a classifier's targets, or a regression's predictions)
            batch = state.batch_classes[0] if state.batch_classes is not None else state.regression_rows
            record.batch_as_sequence = [
                {"layer": name, "input_shape": shape, "batch": batch, "recurrent": recurrent}
                for name, (shape, recurrent) in state.seq_first_inputs.items()
                if shape[0] == batch and shape[1] not in (1, batch)
            ]
        # (the examples were counted; or a sum over the batch was added to each, which needs no count)
        if state.batch_classes is not None or state.regression_rows is not None or state.examples_mixed:
            record.examples_mixed = [{"site": site, **found} for site, found in state.examples_mixed.items()]
        if state.layer_spreads:
            record.layer_spreads = {layer: value(spread_at) for layer, spread_at in state.layer_spreads.items()}
        if state.multi_hot_margin is not None and value(state.multi_hot_margin[1]) == 1:
            record.multi_hot_margin = {"classes": state.multi_hot_margin[0]}
        if state.huber is not None:
            delta, beyond_at, mean_at = state.huber
            record.huber = {"delta": delta, "beyond_delta": value(beyond_at), "error_mean": value(mean_at)}
        if state.targets_out_of_reach is not None:
            found, share_at = state.targets_out_of_reach
            record.targets_out_of_reach = {**found, "targets_outside": value(share_at)}
        if not state.step_size_normalised:  # (Adam's steps do not grow with the loss's scale: no matter then)
            record.summed_loss = state.summed_loss
        if state.no_branch_taken is not None:
            neither_at, second_at = state.no_branch_taken
            record.no_branch_taken = (value(neither_at), value(second_at))
        if state.gather_across_batch is not None:
            found, share_at = state.gather_across_batch
            record.gather_across_batch = {**found, "rows_read": value(share_at)}
        record.negated_loss = state.negated_loss
        record.kl_div_of_probabilities = state.kl_div_of_probabilities
        record.previous_token_targets = value(state.previous_token_targets)
        if state.unshifted_targets is not None:
            share_at, counted_at, grids = state.unshifted_targets
            record.unshifted_targets = {"share": value(share_at), "counted": value(counted_at), "grids": value(grids)}
        if state.kl_div_target_below_zero is not None and value(state.kl_div_target_below_zero) > 0.5:
            record.kl_div_target_below_zero = True
        fed_own = {
            # (read by the loss: its output, or that of a part of it whose output it returned, the graph naming an
            # output after the innermost module that made it)
            name: dict(
                calls=calls,
                cut=cut,
                carried=carried,
                kind=kind,
                read_by_loss=bool(parts & state.loss_reads),
                from_parameter=from_parameter,
            )  # fmt: skip
            for name, (calls, cut, carried, kind, parts, from_parameter) in state.looped_calls.items()
            if cut + carried or (kind is not None and calls >= self.thresholds.cut_loop_calls)  # (or a fresh state)
        }
        record.looped_calls = fed_own or None
        if state.model_modes:
            record.model_modes = {
                name: {
                    "training": training,
                    "batch_norms": self._mode_sensitive[name]["batch_norms"],
                    "dropouts": self._mode_sensitive[name]["dropouts"],
                }
                for name, training in state.model_modes.items()
            }
        if state.earlier_graph is not None:
            step, modules = state.earlier_graph
            record.graph_from_earlier_step = {"step": step, "modules": modules}
        # (an objective maximised, `maximize=True`: a penalty subtracted from it is the right sign)
        record.subtracted_penalty = None if state.maximizes else state.subtracted_penalty
        record.log_probability_added = None if state.maximizes else state.log_probability_added
        if state.target_log_probability is not None:
            mean_at, classes, above_at = state.target_log_probability
            record.target_log_probability = {
                "mean": value(mean_at),
                "classes": classes,
                "above_chance": value(above_at),
            }
        record.without_optimizer = self.mode == "backward"
        record.penalty_without_graph = state.grad_without_graph and bool(state.constant_loss_term)
        record.penalty_detached = (
            state.grad_of_inputs and not state.grad_without_graph and bool(state.constant_loss_term)
        )
        record.loss_of_input_gradient = state.grad_of_inputs
        record.gate_means = {site: value(at) for site, at in state.gate_means.items()} or None
        record.log_of_probabilities = state.log_of_probabilities
        record.clamped_to_the_edge = state.clamped_to_the_edge
        if state.relu_lowest:  # (on the first few sampled steps: ReLU outputs changed outside autograd)
            record.relu_outputs_negative = {site: value(at) for site, at in state.relu_lowest.items() if value(at) < 0}
        if state.input_grad_sizes:  # (did one of the step's input gradients come out exactly 0 everywhere?)
            record.input_gradient_zero = any(value(i) == 0 for i in state.input_grad_sizes)
        record.maximized_loss = state.root_loss if state.maximizes else None
        record.swapped_betas = state.swapped_betas
        record.misspelt_setting = state.misspelt_setting
        record.momentum_not_decaying = state.momentum_not_decaying
        record.negative_lr = state.negative_lr
        record.lr_schedule, record.one_cycle_max_lr = state.lr_schedule, state.one_cycle_max_lr
        record.lr_by_hand = state.lr_by_hand
        record.schedule_not_applied = state.schedule_not_applied
        record.line_search = state.line_search
        record.decayed_rate = state.decayed_rate
        record.coupled_decay = state.coupled_decay
        record.group_rates = state.group_rates
        if state.large_eps is not None:
            record.eps_against_gradient = _eps_against_gradient(state.large_eps, state.params, grads)
        record.loss_with_domain, record.loss_outside_domain = state.loss_with_domain, state.loss_outside_domain
        record.loss_reaches_model = state.outputs_reached
        record.loss_is_a_leaf = state.loss_is_a_leaf
        record.graph_cuts = sorted(state.cuts)
        record.loss_ops = sorted(state.loss_ops)
        record.modules_not_called = self._not_called(state)
        record.modules_without_grad = sorted(state.ran_without_grad)
        record.modules_in_reentrant_checkpoint = sorted(state.in_reentrant_checkpoint)
        if state.clipping is not None:
            record.clip_max_norm, record.clip_norm = state.clipping[0], value(state.clipping[1])
            record.clip_given_nothing, record.clip_after_step, record.clip_on_scaled = state.clipping[2:]
            if record.clip_on_scaled and state.loss_scale_at is not None:
                record.clip_scale = value(state.loss_scale_at)
        if state.value_clipping is not None:
            cap, before_at, beyond_at, entries, after_at = state.value_clipping
            record.clip_value = cap
            record.clip_value_share = value(beyond_at) / entries
            record.clip_value_norms, record.clip_value_entries = (value(before_at), value(after_at)), entries
        record.optimizer_parameters, record.optimizer_frozen = state.stepped_and_frozen
        record.requires_grad_assigned = state.requires_grad_assigned or None
        record.calls_reaching_loss = dict(state.calls_reaching_loss) or None
        record.module_requires_grad = state.module_requires_grad or None
        record.optimizers_without_gradient = state.optimizers_without_gradient
        record.optimizers_stepping_the_same = state.optimizers_stepping_the_same
        record.softmax_over_one = state.softmax_over_one or None
        record.difference_of_itself = state.difference_of_itself
        record.ratio_of_itself = state.ratio_of_itself
        record.same_ids_embedded = state.same_ids_embedded
        record.softmax_over_queries = state.softmax_over_queries
        record.target_trained = state.target_trained
        record.sine_layers = dict(state.sine_layers) or None
        if state.one_class_over_pairs is not None:
            rows, one_class_at, target_at = state.one_class_over_pairs
            if value(one_class_at) > 0:
                record.one_class_over_pairs = {"rows": rows, "target": int(value(target_at))}
        record.custom_backwards = {}
        for name, test in state.custom_backwards.items():
            flags, numbers_at = test.flags_at, test.against_forward_at
            if flags:  # (tested: the hook ran, and the backward could be called again)
                record.custom_backwards[name] = {
                    "ignores_grad_output": [i for i, at in enumerate(flags) if at is not None and value(at) > 0],
                    "inputs": sum(at is not None for at in flags),
                    "after": test.after,
                    "grad_output_norm": value(test.grad_output_at),
                    "grad_input_norm": value(test.grad_input_at),
                    "grad_output_one": test.grad_output_one_at is not None and value(test.grad_output_one_at) > 0,
                    "drops_parameters": test.dropped,
                    "against_forward": None
                    if numbers_at is None
                    else graph_tools.backward_disagrees(vectors[numbers_at].tolist()),
                }
            elif test.dropped:  # (not run again, but seen to return None for parameters given to it)
                record.custom_backwards[name] = {"tested": False, "drops_parameters": test.dropped}
        record.custom_backwards = record.custom_backwards or None
        record.grads_after_backward = state.grads_after_backward
        if state.not_applied is not None:  # (checked at an optimiser step)
            record.optimizer_checked = True
            record.grads_not_applied, record.stepped_outside_model = state.not_applied, state.stepped_outside
            record.held_by_idle_optimizer = state.held_by_idle_optimizer
            record.stepped_outside_reached = state.outside_reached
            record.master_copies = state.master_copies
        self._layer_order.update(state.order)
        self._backward_nonfinite(record, state, value)
        self.doctor.record(record)

    def _not_called(self, state: StepState) -> list[str]:
        """The modules with parameters of their own whose forward did not run on this step (an expert no token was
        routed to, a branch not taken): a parameter without a gradient there was not cut off, it was not used. One
        whose parts ran is not among them: its own parameters may be read by a method of its own (`model.nll(x, y)`)."""
        if self._callable_cache is None or self._callable_cache[0] != len(self.info_by_name):
            parts = {
                info.name: [self.infos[sub].name for sub in module.modules() if sub is not module and sub in self.infos]
                for module, info in list(self.infos.items())
                if info.has_weights and info.runs and not info.leaf
            }
            infos = self.info_by_name.values()
            names = [(info.name, parts.get(info.name, ())) for info in infos if info.has_weights and info.runs]
            self._callable_cache = (len(self.info_by_name), names)
        order, without_grad = state.order, state.ran_without_grad
        return [
            name
            for name, inner in self._callable_cache[1]
            if name not in order and name not in without_grad and not any(part in order for part in inner)
        ]

    def _add_parameter_stats(
        self, record: StepRecord, state: StepState, grads: list, updates: list, backward_calls: int
    ) -> None:
        params = state.params
        # a NaN norm counts as a gradient: it arrived
        # (a step with no backward and no gradient, an optimiser step before the first backward, checks nothing;
        # with a backward, none arriving is the finding: an optimiser given another model's parameters, say)
        # (no backward since the last step, and not one gradient: the step applies nothing; gradients computed by
        # torch.func.grad or autograd.grad are returned, not stored in .grad)
        record.stepped_without_gradients = not backward_calls and bool(grads) and all(g is None for g in grads)
        if backward_calls or any(g is not None for g in grads):
            record.param_has_grad = {name: g is not None and g != 0 for (name, _, _), g in zip(params, grads)}
            record.param_zero_grad = {name: g == 0 for (name, _, _), g in zip(params, grads)}
            record.grads_written_after_backward = state.written_after_backward
        record.param_module = {name: label for name, label, _ in params}
        # (gradient hooks left on a parameter: one registered in forward() piles up, one more every step)
        record.param_hooks = {name: len(p._backward_hooks) for name, _, p in params if p._backward_hooks} or None
        by_module: dict[str, list] = {}  # module label -> [grad^2, weight^2, update^2, has update]
        total = 0.0
        for (_, label, _), grad_norm, weight_norm, update_norm in zip(params, grads, state.weights_after, updates):
            sums = by_module.get(label)
            if sums is None:
                sums = by_module[label] = [0.0, 0.0, 0.0, False]
            if grad_norm is not None:
                squared = grad_norm**2
                sums[0] += squared
                total += squared
            sums[1] += (weight_norm or 0.0) ** 2
            if update_norm is not None:
                sums[2] += update_norm**2
                sums[3] = True
        record.grad_norm = math.sqrt(total) if params else None
        state.module_sums = by_module

    def _add_updated_shares(self, record: StepRecord, state: StepState, scalars) -> None:
        """Half precision: per module, the share of its sampled entries pushed by a nonzero gradient that the update
        changed at all (`ParameterSamples.changed_and_pushed`)."""
        count, start = len(state.params), state.changed_at
        changed, pushed = scalars[start : start + count], scalars[start + count : start + 2 * count]
        by_module: dict[str, list[float]] = {}
        for (_, label, _), c, n in zip(state.params, changed, pushed):
            sums = by_module.setdefault(label, [0.0, 0.0])
            sums[0], sums[1] = sums[0] + c, sums[1] + n
        record.updated_share = {label: min(1.0, c / n) for label, (c, n) in by_module.items() if n > 0}
        half = next(sample.dtype for sample in state.samples.samples if sample.dtype in HALF_PRECISION)
        record.half_precision = str(half).removeprefix("torch.")

    def _add_layer_stats(self, record: StepRecord, state: StepState, value, vectors) -> None:
        infos = self.info_by_name
        sums = state.module_sums
        # The gradients in the graph of a scaled loss carry the scaler's factor (the parameters' were unscaled before
        # the optimiser stepped): divided out, as the loss's is, so that the records measure the training.
        scale = 1.0 if state.loss_scale_at is None else value(state.loss_scale_at)
        out_grad_norms: dict[str, list] = {}
        for name, index in state.out_grad_norms:  # one per call of the layer
            norms = out_grad_norms.get(name)
            if norms is None:
                out_grad_norms[name] = [value(index) / scale]
            else:
                norms.append(value(index) / scale)
        for name, depth in state.order.items():
            info = infos.get(name)
            if info is None or not (info.has_weights or info.recurrent):
                continue
            norms = out_grad_norms.get(name)
            out_grad_norm = math.sqrt(sum(n * n for n in norms)) if norms else None  # over every call of the layer
            grad_norm, weight_norm, update_ratio = _norms_and_ratio(sums.get(name))
            record.layers[name] = layer = LayerStats(
                name, info.kind, depth, has_weights=info.has_weights, out_grad_norm=out_grad_norm,
                param_grad_norm=grad_norm, weight_norm=weight_norm, update_ratio=update_ratio,
                nonfinite_grad=out_grad_norm is not None and math.isnan(out_grad_norm),  # (see LayerStats)
                recurrent=bool(info.recurrent), bidirectional=info.bidirectional,
            )  # fmt: skip
            if info.recurrent:
                self._add_time_norms(layer, state, value, vectors, scale)
            if name in state.unit_spreads:
                units, spread_at = state.unit_spreads[name]
                if math.isfinite(value(spread_at)):
                    layer.units, layer.unit_spread = units, value(spread_at)
        # A model without modules: each of its tensors is a layer of its own (its gradient, weights and update; no
        # output of its own, so no gradient arriving at one), after the modules, in the order they were found.
        for position, name in enumerate(self._script_tensors, start=len(state.order)):
            if name in sums and name not in record.layers:
                grad_norm, weight_norm, update_ratio = _norms_and_ratio(sums[name])
                record.layers[name] = LayerStats(
                    name, "tensor", position, has_weights=True, param_grad_norm=grad_norm, weight_norm=weight_norm,
                    update_ratio=update_ratio,
                )  # fmt: skip

    def _add_time_norms(self, layer: LayerStats, state: StepState, value, vectors, scale: float) -> None:
        """A recurrent layer's gradient at each time step: of its input (RNN/LSTM/GRU) or of each call (cells)."""
        name = layer.name
        if name in state.time_norms:
            layer.time_grad_norms = (vectors[state.time_norms[name]] / scale).tolist()
            if name in state.time_padding:
                layer.time_padding = vectors[state.time_padding[name]].tolist()
            if name in state.keep_gate_bias:
                layer.keep_gate_bias = value(state.keep_gate_bias[name])
        elif name in state.cell_calls:
            norms = [value(i) for i in state.cell_calls[name]]
            if len(norms) >= 2 and all(n is not None for n in norms):
                layer.time_grad_norms = [n / scale for n in norms]
        calls = len(state.cell_calls[name]) if name in state.cell_calls else state.stepped_calls.get(name)
        if calls:
            layer.calls = calls  # (every call, whether a gradient reached it or not)
            layer.cut_calls = state.cell_cut_calls.get(name, 0)
            layer.carried_calls = state.cell_carried_calls.get(name, 0)
            layer.parameter_state_calls = state.cell_parameter_calls.get(name, 0)
            layer.part_cut_calls, layer.parts_cut = state.cell_parts_cut.get(name, (0, ()))

    def _add_activation_stats(self, record: StepRecord, state: StepState, value, flags) -> None:
        for site, tally in state.activations.items():
            if not tally.elements:
                continue
            stats = ActivationStats(
                site, tally.function, tally.units, tally.examples, feeds_from=tally.feeds_from, depth=tally.depth
            )
            if tally.function in RELU_LIKE:
                positive = sum(value(i) for i in tally.positive)
                stats.zero_fraction = 1 - positive / tally.elements  # (outputs where the local derivative is 0)
                if tally.function != "hardswish":  # relu'(z) and relu6'(z) are 1 where they pass gradient, else 0
                    stats.mean_derivative = positive / tally.elements
                stats.unit_active = flags[tally.unit_flags]
            if tally.saturated:
                stats.saturated_fraction = sum(value(i) for i in tally.saturated) / tally.elements
            if tally.derivative_sum:
                stats.mean_derivative = sum(value(i) for i in tally.derivative_sum) / tally.elements
            record.activations[site] = stats

    def _defer_activation_tallies(self, state: StepState) -> None:
        """Turn each tally's device counts into deferred indices (so they ride the step's one transfer)."""
        deferred = state.deferred
        for tally in state.activations.values():
            tally.positive = [deferred.scalar(t) for t in tally.positive]
            if tally.unit_fired:
                tally.unit_flags = deferred.flags(_peak(tally.unit_fired))
            tally.saturated = [deferred.scalar(t) for t in tally.saturated]
            tally.derivative_sum = [deferred.scalar(t) for t in tally.derivative_sum]

    def _backward_nonfinite(self, record: StepRecord, state: StepState, value) -> None:
        """After a sampled step: a NaN born in its backward pass (exact), one that reached a layer's output (bounded
        to the ops between it and the loss), or parameters made non-finite by some update since the last sample."""
        if self._nonfinite_seen or (record.loss is not None and not math.isfinite(record.loss)):
            return
        if self._report_broken_weights(state, state.weights_before, before=True):
            return  # the step ran on weights an earlier update had broken: what follows is a consequence
        born = next((entry for entry in state.nan_checks if value(entry[0]) > 0), None)
        first_bad = next(
            (name for name, _ in state.out_grad_norms if name in record.layers and record.layers[name].nonfinite_grad),
            None,
        )
        if state.loss_scaled:  # a gradient scaler's loss (mixed precision)
            overflowed = born is not None or first_bad is not None
            self._scaler_overflows = self._scaler_overflows + 1 if overflowed else 0
            if overflowed and self._scaler_overflows < SCALER_OVERFLOWS_TOLERATED:
                # Its scaled gradients overflowed: the scaler skips this step and lowers its scale, by design (a
                # high initial scale overflows for a few steps). Reported once it keeps happening: then no scale
                # helps, and the NaN is the run's own.
                born = first_bad = None
        if born is not None:
            _, node, label = born
            parents = graph_tools.walk(state.roots, with_parents=True).parents  # walked again only now
            op = op_name(node)
            self._nonfinite_seen = True
            self.doctor.set_nonfinite(
                NonfiniteEvent(
                    step=state.step,
                    phase="backward",
                    where=op,
                    op=op,
                    module=label,
                    through_where=graph_tools.leads_to_where(node, parents),
                )
            )
            return
        if first_bad is not None:
            self._nonfinite_seen = True
            self.doctor.set_nonfinite(
                NonfiniteEvent(
                    step=state.step,
                    phase="backward",
                    where=first_bad,
                    module=first_bad,
                    exact=False,
                    detail=f"the gradient arriving at `{first_bad}`'s output was already non-finite: the operation "
                    "that produced it lies between that layer and the loss",
                )
            )
            return
        if not self._report_broken_weights(state, state.weights_after, before=False, grad_norm=record.grad_norm):
            self._last_finite_step = state.step

    def _report_broken_weights(
        self, state: StepState, norms: list, before: bool, grad_norm: float | None = None
    ) -> bool:
        """Parameters whose sampled entries hold NaN, made so by an update the loss did not reveal (a where, a
        clamp or a max can hide NaN weights from the loss). Only a NaN norm counts: an infinite one may be the
        float32 overflow of huge but finite weights (entries above ~1e19), which a diverging run reaches before
        its loss overflows. `grad_norm`: (after the step's update) its gradients' norm; finite, the optimiser's
        own arithmetic made the NaN."""
        if None not in norms and not math.isnan(sum(norms)):  # the usual case, in one sum: no norm is NaN
            return False
        finite_gradients = not before and grad_norm is not None and math.isfinite(grad_norm)
        bad = [
            self._param_label(p)
            for (_, _, p), norm in zip(state.params, norms)
            if norm is not None and math.isnan(norm)
        ]
        if not bad:
            return False
        if before:
            detail = (
                f"parameters were finite after sampled step {self._last_finite_step} and non-finite when step "
                f"{state.step} began: an optimiser step in between applied a non-finite gradient (rerun with "
                "--every 1 to name the operation)"
            )
        elif finite_gradients:
            detail = (
                f"the update of step {state.step} made the parameters non-finite from finite gradients (their norm "
                f"{grad_norm:.3g})"
            )
        else:
            detail = (
                f"the update of step {state.step} made the parameters non-finite, though no NaN was seen in its "
                "backward pass at the measured points (the layers' outputs and the ops with infinite derivatives)"
            )
        finite_until = self._last_finite_step if before else None
        self._report_nonfinite_parameters(
            [entry for entry in bad if entry is not None], state.step, detail, finite_until,
            finite_grad_norm=grad_norm if finite_gradients else None,
        )  # fmt: skip
        return True

    # --- locating a non-finite loss in the live graph -----------------------------------------------------------------
    def _locate_forward_nonfinite(self, loss: torch.Tensor) -> None:
        try:
            culprit = graph_tools.locate_forward_nonfinite(loss)
        except Exception as error:
            self._fail("locating the first non-finite value", error)
            self.doctor.set_nonfinite(NonfiniteEvent(self.step, "forward", "loss", exact=False))
            return
        if culprit.phase == "update":
            labels = [self._param_label(p) for p in culprit.parameters]
            self._report_nonfinite_parameters(
                [entry for entry in labels if entry is not None],
                step=max(0, self.step - 1),
                detail=f"parameters were already non-finite when step {self.step} began, so the optimiser step "
                "before made them so, from a non-finite gradient (that step was not sampled: rerun with --every 1 "
                "to name the operation)",
            )
            return
        graph = graph_tools.walk([loss.grad_fn])
        labels = self._node_labels(graph)
        if culprit.data_fed:  # already non-finite in a tensor that needs no gradient: the data, not the model
            if graph_tools.nonfinite_target(culprit.node):  # (a loss's targets: log(0) of a price of 0)
                module, where = None, f"target of {culprit.op}"
            else:
                module = labels.get(culprit.node)  # (the layer that read it, or the operation outside any layer)
                where = f"input of {module or culprit.op}"
            event = NonfiniteEvent(self.step, "input", where, culprit.op, module, value=culprit.value)
            # (output by a watched module whose output has no gradient: `(x - x.mean(0)) / x.std(0)` in a layer of its
            # own, a frozen encoder's layer; the first, innermost, that output it)
            makers = self.state.made_without_grad.makers(culprit.fed_tensor) if self.state is not None else ()
            if makers and makers[-1] != module:
                event.where = event.module = makers[-1]
                event.read_by = module or culprit.op
            self.doctor.set_nonfinite(event)
            return
        owner = self.info_by_name.get(labels.get(culprit.node))
        inside = owner is not None and owner.leaf  # the op is the layer's own computation (a matmul that overflowed)
        if inside:
            module = owner.name
        else:
            module = graph_tools.nearest_upstream(culprit.node, labels) or labels.get(culprit.node)
        self.doctor.set_nonfinite(
            NonfiniteEvent(
                step=self.step,
                phase="forward",
                where=culprit.op or "loss",
                op=culprit.op,
                module=module,
                inside=inside,
                value=culprit.value,
                exact=culprit.exact,
                candidates=culprit.candidates,
                detail="" if culprit.exact else f"one of {', '.join(culprit.candidates)}",
                half_precision=culprit.half_precision,
                floor_at_zero=graph_tools.fed_by_a_floor_at_zero(culprit.node) if culprit.node is not None else None,
                half_precision_root=graph_tools.half_precision_root(culprit.node) if culprit.node is not None else None,
                rate_read_as_rate=culprit.node is not None and graph_tools.rate_read_as_rate(culprit.node, graph.nodes),
                too_few_to_spread=graph_tools.too_few_to_spread(culprit.node) if culprit.node is not None else None,
                raw_layer_output=self._raw_layer_output(culprit, labels),
            )
        )

    def _raw_layer_output(self, culprit, labels: dict) -> str | None:
        """The weighted layer (a Linear, a convolution) whose output a log or a root that made the NaN read as that
        layer made it, through reshapes at most (`torch.log(self.log_sigma(h))`): any real number, negative for
        about half its entries."""
        if culprit.node is None or culprit.op not in (*LOGS, "sqrt", "rsqrt", "pow"):
            return None
        child = culprit.node.next_functions[0][0] if culprit.node.next_functions else None
        if child is None:
            return None
        name = labels.get(graph_tools.beneath_reshapes(child))
        info = self.info_by_name.get(name)
        return name if info is not None and info.leaf and info.has_weights else None

    def _report_nonfinite_parameters(
        self, entries, step: int, detail: str, finite_until: int | None = None, finite_grad_norm: float | None = None
    ) -> None:
        """Parameters turned NaN/Inf by an update: name the layer nearest the loss (the gradient reached it first).
        `finite_until`: found as a sampled step began, the last sampled step whose parameters were finite.
        `finite_grad_norm`: the norm of the finite gradients the step was given (its optimiser made the NaN)."""
        modules = list(dict.fromkeys(label for _, _, label in entries))
        modules.sort(key=lambda m: self._layer_order.get(m, -1))
        where = modules[-1] if modules else "parameters"
        self._nonfinite_seen = True
        optimizer = self.primary() if self.primary is not None else None
        self.doctor.set_nonfinite(
            NonfiniteEvent(
                step=step,
                phase="update",
                where=where,
                module=where,
                exact=False,
                parameters=[name for _, name, _ in entries],
                detail=detail,
                finite_until=finite_until,
                eps_rounds_to_zero=_eps_rounding_to_zero(optimizer) if optimizer is not None else None,
                finite_gradients=_made_by_the_optimizer(optimizer, finite_grad_norm),
            )
        )

    def _node_labels(self, graph) -> dict:
        """node -> module label: module outputs seen this step, and ops that consume a module's parameters."""
        names = self.state.names if self.state is not None else None
        labels = {} if names is None else {node: names[node] for node in graph.nodes if node in names}
        for node in graph.nodes:
            if node in labels:
                continue
            for child in graph.children.get(node, ()):
                grandchildren = [child] + list(graph.children.get(child, ()))[:1]
                for leaf in grandchildren:
                    if op_name(leaf) == graph_tools.ACCUMULATE:
                        entry = self._param_label(leaf.variable)
                        if entry is not None:
                            labels[node] = entry[2]
                            break
                if node in labels:
                    break
        return labels


def _layer_output_read(node, names) -> str | None:
    """The layer whose output an operation reads directly (under reshapes), if one does: `model(x).clamp(0, 1)`."""
    inputs = [child for child, _ in node.next_functions if child is not None]
    if len(inputs) != 1:
        return None
    return names.get(graph_tools.beneath_reshapes(inputs[0], also=graph_tools.SELECTIONS))  # (`model(x)[:, 0]`)


def _recurrent_layers(label: str, by_name: dict):
    """(weight_ih, weight_hh, bias_ih, bias_hh) of each layer and direction of a recurrent module, from its
    parameters by name (`rnn.weight_ih_l0`, `rnn.weight_hh_l1_reverse`, ...; a bias None without one). A layer
    projected to fewer outputs (an LSTM's proj_size: `weight_hr_l0`) is left out: its hidden weight is not square."""
    prefix = f"{label}.weight_ih_l"
    for name, weight_ih in by_name.items():
        suffix = name[len(prefix) :] if name.startswith(prefix) else None  # "0", "1_reverse", ...
        if suffix is None or f"{label}.weight_hr_l{suffix}" in by_name or f"{label}.weight_hh_l{suffix}" not in by_name:
            continue
        biases = (by_name.get(f"{label}.bias_ih_l{suffix}"), by_name.get(f"{label}.bias_hh_l{suffix}"))
        yield weight_ih, by_name[f"{label}.weight_hh_l{suffix}"], *biases


def _one_value_per_group(norm, args) -> bool:
    """Whether a normalisation layer takes each mean and variance over one value only: GroupNorm(C, C) on inputs with
    no length (an MLP's (N, C) features), a LayerNorm over an axis of size 1. That value minus its own mean is 0,
    whatever it was: the output is the layer's bias, and no gradient passes back."""
    x = args[0] if args and isinstance(args[0], torch.Tensor) else None
    if x is None or x.dim() < 2:
        return False
    if isinstance(norm, nn.LayerNorm):
        return math.prod(norm.normalized_shape) == 1
    return norm.num_channels // norm.num_groups * math.prod(x.shape[2:]) == 1


def _never_estimated(norm) -> bool:
    """A batch norm whose running statistics were never estimated: it has them, has counted no training batch, and
    they are still the mean 0 and variance 1 it was made with (a checkpoint saved before `num_batches_tracked`
    existed loads real statistics with a count of 0). Read only for a batch norm in eval mode."""
    counted = getattr(norm, "num_batches_tracked", None)
    if not (norm.track_running_stats and isinstance(counted, torch.Tensor) and int(counted) == 0):
        return False
    mean, var = norm.running_mean, norm.running_var
    return bool((mean == 0).all()) and bool((var == 1).all())


def _version_of(value) -> int | None:
    return value._version if isinstance(value, torch.Tensor) else None


def _stepped_parameters(optimizer) -> list:
    """Every parameter the optimiser steps, in its groups' order (those of unwatched models included)."""
    return [p for group in optimizer.param_groups for p in group["params"]]


def _peak(per_unit: list[torch.Tensor]) -> torch.Tensor:
    """Per unit, its largest value over the calls of a site (the sum of its outputs, or its count of positive
    outputs, in each call): > 0 iff the unit fired in some call. A NaN in any call makes it NaN, which counts as not
    firing."""
    return per_unit[0] if len(per_unit) == 1 else torch.stack(per_unit).amax(dim=0)


def _compiled_or_transformed() -> bool:
    """Inside code torch.compile or torch.jit.trace is tracing, or inside a torch.func transform (vmap, grad): where
    the hooks do nothing. Traced, they would be compiled into the model (and `jit.trace`, which runs the model twice
    and compares the graphs, fails when a hook looks on one run and not the other); under a transform, the tensors
    are functorch's wrappers (no storage to read) and the parameters its stand-ins."""
    return (
        torch.compiler.is_compiling()
        or torch.jit.is_tracing()
        or torch._C._functorch.peek_interpreter_stack() is not None
    )


def _modules_listed(value) -> list[tuple[str, nn.Module]]:
    """The parts of a list of modules, each with how its place is written after the list's name: a ModuleList's
    (`.0`), a plain list's or tuple's (`[0]`), a dict's (`['actor']`); [] for anything else."""
    if isinstance(value, nn.ModuleList):
        return [(f".{i}", part) for i, part in enumerate(value)]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, nn.Module) for v in value):
        return [(f"[{i}]", part) for i, part in enumerate(value)]
    if (
        isinstance(value, dict)
        and value
        and all(isinstance(k, str) and isinstance(v, nn.Module) for k, v in value.items())
    ):
        return [(f"[{k!r}]", part) for k, part in value.items()]
    return []


def _tensors_held(namespace: dict) -> dict[str, torch.Tensor]:
    """The floating-point leaf tensors a script holds at top level (or a function of it, in its locals), by name:
    `w1`, and those in a list, tuple or dict held there, one level further too (`params[0]`, `weights['w1']`,
    `layers[3][0]`). A tensor under two names is listed first under its own name (`W1` before `params[0]`), unless
    its container holds tensors without one: then by its place there (`layers[39][0]`, not the loop variable `W`
    left holding the last pair)."""
    bare: dict[str, torch.Tensor] = {}
    containers: list[list[tuple[str, torch.Tensor]]] = []
    for name, value in list(namespace.items()):
        if name.startswith("_"):
            continue
        if isinstance(value, torch.Tensor):
            if value.is_leaf and value.is_floating_point():
                bare[name] = value
            continue
        held = [
            (inner_path, inner)
            for path, item in _items_of(name, value)
            for inner_path, inner in [(path, item), *_items_of(path, item)]
            if isinstance(inner, torch.Tensor) and inner.is_leaf and inner.is_floating_point()
        ]
        if held:
            containers.append(held)
    named = {id(t) for t in bare.values()}
    by_place = [held for held in containers if not all(id(t) in named for _, t in held)]
    found: dict[str, torch.Tensor] = {}
    for path, tensor in [item for held in by_place for item in held] + list(bare.items()):
        found.setdefault(path, tensor)
    for held in containers:
        for path, tensor in held:
            found.setdefault(path, tensor)
    return found


def _items_of(name: str, value) -> list:
    """(path, item) of a list, tuple or dict (exact types: a subclass's indexing is the script's own code), its first
    HELD_ITEMS items; [] for anything else."""
    if type(value) in (list, tuple):
        return [(f"{name}[{i}]", v) for i, v in enumerate(itertools.islice(value, HELD_ITEMS))]
    if type(value) is dict:
        return [(f"{name}[{k!r}]", v) for k, v in itertools.islice(value.items(), HELD_ITEMS) if isinstance(k, str)]
    return []


def _first_entries(tensor: torch.Tensor) -> torch.Tensor:
    """A copy of a few entries spread through a tensor, to tell later whether it changed."""
    return spread(tensor.detach(), LEAF_ENTRIES_COMPARED).clone()


def _same_entries(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two samples of a tensor hold the same values, NaN where NaN was (NaN equals nothing, itself included)."""
    return a.shape == b.shape and torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(), b.nan_to_num())


def _tensors_watched(names: list[str]) -> str:
    """How a model of plain tensors is named among the watched: `tensors w1, w2`, or the first few and a count."""
    shown = ", ".join(names[:4])
    return f"tensors {shown}" + (f" and {len(names) - 4} more" if len(names) > 4 else "")


def _frozen(param: torch.Tensor) -> bool:
    """Whether an optimiser's step skips `param`: it requires no gradient, and holds none given by hand."""
    return not param.requires_grad and param.grad is None


def _displacement_in_updates(state: StepState, scalars, updates: list) -> dict | None:
    """How far the weights (their samples, all together) have moved since the first sampled step, in units of this
    step's update: {"updates", "since_step"}; None without an update measured."""
    first, since = state.displaced_at
    scales = state.samples.scales
    moved = sum((scalars[first + i] * scale) ** 2 for i, scale in enumerate(scales))
    step = sum(u**2 for u in updates if u is not None)
    if not step > 0 or not math.isfinite(moved):
        return None
    return {"updates": math.sqrt(moved / step), "since_step": since}


def _norms_and_ratio(module_sums) -> tuple[float | None, float | None, float | None]:
    """A layer's gradient norm, weight norm and update/weight ratio, from its parameters' summed squares
    ([grad^2, weight^2, update^2, whether an update was measured]; None: none measured)."""
    if module_sums is None:
        return None, None, None
    grad_sq, weight_sq, update_sq, has_update = module_sums
    weight_norm = math.sqrt(weight_sq)
    update_ratio = math.sqrt(update_sq) / weight_norm if has_update and weight_sq > 0 else None
    return math.sqrt(grad_sq), weight_norm, update_ratio


SCRIPT_LEAF_ENTRIES = (
    64  # a tensor the script holds, outside the model, with at most this many entries may be a parameter
)


def _stands_for_a_parameter(tensor: torch.Tensor) -> bool:
    """A plain tensor that requires grad, small enough to be learnt beside a model rather than data fed to it (an
    unknown coefficient, a temperature, a prior's mean: a few numbers)."""
    return (
        not isinstance(tensor, nn.Parameter)
        and tensor.requires_grad
        and tensor.is_floating_point()
        and tensor.numel() <= SCRIPT_LEAF_ENTRIES
    )


def _script_tensors() -> dict[str, torch.Tensor]:
    """The tensors the running script holds (see `_tensors_held`), by name: in the functions of the script's that are
    running now, innermost first (a training loop inside `main()`), then at top level. A function's locals are read
    once, and the snapshot Python keeps of them (before 3.13) is emptied at once: it would keep alive tensors the
    function deletes later (Python fills it again whenever something asks for it)."""
    main = sys.modules.get("__main__")
    if main is None:
        return {}
    held: dict[str, torch.Tensor] = {}
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals is vars(main) and frame.f_code.co_flags & inspect.CO_OPTIMIZED:  # (a function of the script)
            local_names = frame.f_locals
            for name, tensor in _tensors_held(local_names).items():
                held.setdefault(name, tensor)
            if sys.version_info < (3, 13) and isinstance(local_names, dict):
                local_names.clear()
            del local_names
        frame = frame.f_back
    for name, tensor in _tensors_held(vars(main)).items():
        held.setdefault(name, tensor)
    return held


def _script_tensor_names() -> dict[int, str]:
    """id -> the name the running script holds a tensor by (`_script_tensors`), the first name found."""
    names: dict[int, str] = {}
    for name, tensor in _script_tensors().items():
        names.setdefault(id(tensor), name)
    return names


def _global_name(module: nn.Module) -> str | None:
    """The name the running script gives the module: at top level (`model = Net()` -> 'model'), or its path from
    a model held at top level (`model.encoder(x)` called on its own -> 'model.encoder')."""
    main = sys.modules.get("__main__")
    script_globals = [(name, value) for name, value in vars(main).items() if not name.startswith("_")] if main else []
    held = {id(value) for _, value in script_globals}
    for name, value in script_globals:
        # (first: a part of a list of modules held at top level, named by its place in it, `flow.0` in a ModuleList,
        # `members[1]` in a plain list, not by the loop variable that holds it for now, `for m in members: m(x)` at
        # top level; unless each of the list's parts has a name of its own, a GAN's generator and discriminator
        # gathered in a list)
        parts = _modules_listed(value)
        if parts and not all(id(part) in held for _, part in parts):
            for place, part in parts:
                path = next((path for path, inner in part.named_modules() if inner is module), None)
                if path is not None:
                    return f"{name}{place}.{path}" if path else f"{name}{place}"
    for name, value in script_globals:
        if value is module:
            return name
    for name, value in script_globals:
        if isinstance(value, nn.Module):
            path = next((path for path, inner in value.named_modules() if inner is module), "")
            if path:
                return f"{name}.{path}"
    return None
