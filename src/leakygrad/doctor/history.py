"""The run's history, bounded: memory stays flat however long the training runs.

- Sampled step records: the most recent half of `max_records` is kept whole; the older half is thinned by
  dropping every other record each time the history fills, so old steps survive at a coarser and coarser
  spacing (the first record is always kept).
- The loss of every step goes into at most `max_loss_buckets` buckets (mean, min, max); when they fill,
  neighbouring buckets merge and each bucket covers twice as many steps.
- Running tallies that must see every sampled step (units active in the recent window, parameters that ever
  received a gradient, whether gradients were reset, the first NaN) are kept as small counters, not as records.
"""

from __future__ import annotations

import functools
import math
import operator
from collections import deque
from dataclasses import dataclass, field

from leakygrad.doctor.stats import NonfiniteEvent, StepRecord
from leakygrad.doctor.thresholds import DEFAULT_THRESHOLDS, Thresholds

MAX_UNIT_SPREAD_LOOKS = 64  # looks at a layer's unit spread kept (the first always)


@dataclass
class LossBucket:
    first_step: int
    last_step: int
    total: float
    count: int
    low: float
    high: float
    first: float  # the loss of its first step (the run's first loss, for the first bucket, however merged)

    @property
    def mean(self) -> float:
        return self.total / self.count

    def merge(self, other: LossBucket) -> LossBucket:
        return LossBucket(
            self.first_step,
            other.last_step,
            self.total + other.total,
            self.count + other.count,
            min(self.low, other.low),
            max(self.high, other.high),
            self.first,
        )


class LossSeries:
    """The loss of every step, summarised into a bounded number of buckets."""

    def __init__(self, max_buckets: int = 1024):
        if max_buckets < 2 or max_buckets % 2:
            raise ValueError(f"LossSeries: max_buckets must be an even number >= 2, got {max_buckets}")
        self.max_buckets = max_buckets
        self.steps_per_bucket = 1
        self.buckets: list[LossBucket] = []
        self.count = 0  # finite losses added (the buckets' counts summed, kept as they are added)
        self.nonfinite_steps = 0
        self.first_nonfinite_step: int | None = None

    def add(self, step: int, value: float) -> None:
        if not math.isfinite(value):
            self.nonfinite_steps += 1
            if self.first_nonfinite_step is None:
                self.first_nonfinite_step = step
            return
        self.count += 1
        last = self.buckets[-1] if self.buckets else None
        if last is not None and last.count < self.steps_per_bucket and step >= last.last_step:
            last.last_step = step
            last.total += value
            last.count += 1
            last.low = min(last.low, value)
            last.high = max(last.high, value)
        else:
            self.buckets.append(LossBucket(step, step, value, 1, value, value, value))
        if len(self.buckets) > self.max_buckets:
            merged = [a.merge(b) for a, b in zip(self.buckets[0::2], self.buckets[1::2])]
            if len(self.buckets) % 2:
                merged.append(self.buckets[-1])  # the odd one out stays as it is
            self.buckets = merged
            self.steps_per_bucket *= 2

    def __len__(self) -> int:
        return self.count

    def since(self, step: int) -> LossSeries:
        """A copy holding only the buckets that begin at `step` or later (a bucket straddling it is left out)."""
        part = LossSeries(self.max_buckets)
        part.steps_per_bucket = self.steps_per_bucket
        part.buckets = [b for b in self.buckets if b.first_step >= step]
        part.count = sum(b.count for b in part.buckets)
        return part

    def smoothed(self, points: int = 20) -> list[tuple[int, float]]:
        """The loss averaged over `points` equal stretches of the recorded steps: (last step, mean) pairs.

        The buckets are split as numpy.array_split would: the first len % points stretches get one more."""
        if not self.buckets:
            return []
        groups = min(points, len(self.buckets))
        size, extra = divmod(len(self.buckets), groups)
        out, start = [], 0
        for group in range(groups):
            stop = start + size + (1 if group < extra else 0)
            chunk = self.buckets[start:stop]
            total = sum(b.total for b in chunk)
            count = sum(b.count for b in chunk)
            out.append((chunk[-1].last_step, total / count))
            start = stop
        return out


@dataclass
class UnitWindow:
    """The last few sampled steps' "was this unit ever nonzero" masks for one activation site, and the examples
    each of those steps saw.

    Each mask is kept as one integer read from its bytes (byte i is unit i's flag): OR-ing the window's masks
    gives, in a few machine-word operations per unit byte, every unit that fired at some step of the window."""

    masks: deque = field(default_factory=deque)
    examples: deque = field(default_factory=deque)
    steps: deque = field(default_factory=deque)
    units: int | None = None
    first: int = 0  # the mask of the site's first sampled step: which units fired with the weights it started from
    masks_seen: int = 0  # masks added since the window (re)started
    died_early: float | None = None  # share of units that fired at the first step and were silent over the window
    # that followed it (the next `dead_window` sampled steps): set once that window is complete, then kept
    silent_at_first: float | None = None  # share of units silent at the first step


class History:
    def __init__(self, thresholds: Thresholds = DEFAULT_THRESHOLDS, max_records: int = 128, max_loss_buckets=1024):
        if max_records < 8:
            raise ValueError(f"History: max_records must be at least 8, got {max_records}")
        self.thresholds = thresholds
        self.max_records = max_records
        self.records: list[StepRecord] = []
        self.loss = LossSeries(max_loss_buckets)
        self.loss_restarts: list[int] = []  # steps at which another model's training began (see restart_loss)
        self.steps = 0  # training steps seen (sampled or not)
        # steps whose loss is the mean of several optimisers' own losses (a GAN: two players, competing)
        self.competing_loss_steps = 0
        self.records_seen = 0  # sampled records ever added (records holds at most max_records of them)
        self.unit_windows: dict[str, UnitWindow] = {}
        self.param_checks: dict[str, int] = {}  # parameter -> sampled steps on which it was checked
        self.param_with_grad: dict[str, int] = {}  # parameter -> sampled steps on which it had a gradient
        self.param_zero_grad: dict[str, int] = {}  # parameter -> ... on which its gradient was exactly zero (not None)
        self.param_compared_after_backward: dict[str, int] = {}  # ... its gradient compared with backward's
        self.param_zeroed_after_backward: dict[str, int] = {}  # ... and was zero at the step, written after backward
        # parameter -> ... whose loss was made of a gradient with respect to the inputs (loss_of_input_gradient)
        self.checked_under_input_gradient: dict[str, int] = {}
        self.param_module: dict[str, str] = {}
        self.param_shapes: dict[str, tuple] = {}  # parameter -> its shape (those stepped, and those left out)
        self.param_nonzero_between: set[str] = set()  # ... nonzero at some step between the sampled ones
        self.not_called: dict[str, int] = {}  # module -> sampled steps on which its forward did not run
        self.without_grad: dict[str, int] = {}  # module -> sampled steps on which it ran with grad recording off
        self.in_reentrant_checkpoint: dict[str, int] = {}  # ... of them, inside checkpoint(use_reentrant=True)
        self.apply_checks = 0  # sampled optimiser steps on which we checked which gradients were applied
        # parameters held by an optimiser the script made and never steps (their gradients unapplied) -> its name
        self.held_by_idle_optimizer: dict[str, str] = {}
        self.not_applied: dict[str, int] = {}  # parameter -> those steps on which it had a gradient no optimiser steps
        self.not_applied_module: dict[str, str] = {}  # ... its module
        # parameter -> [first step, checks] of its current run of checks that found its gradient not applied (a
        # parameter unfrozen part-way through the run, never added to the optimiser: from then on)
        self.not_applied_run: dict[str, list[int]] = {}
        self.stepped_outside_model = 0  # (as of the last check) parameters the optimisers step outside the model
        self.stepped_outside_reached = 0  # ... of them, those the backward pass reached: inputs being optimised
        self.master_copies = False  # ... of them, master weights the model's parameters are copied from by hand
        self.reset_checks = 0  # optimiser steps on which we checked whether gradients were reset
        self.not_reset = 0  # ... and found they were not
        self.first_not_reset: int | None = None
        self.reset_by_hand = False  # (as of the last check) between weights updated by hand, without an optimiser
        self.reset_in_closure = False  # (as of the last check) within a step whose closure runs its backward passes
        self.modules_not_reset: set[str] = set()  # ... the modules whose parameters' gradients were not reset
        self.graph_cuts: dict[tuple[str, str], int] = {}  # (producer, consumer) -> first step seen
        # layer -> (step, unit spread) at each look at whether its units are all alike (steps 0, 32, 64, 128, ...)
        self.unit_spreads: dict[str, list[tuple[int, float]]] = {}
        self.layer_units: dict[str, int] = {}  # ... and its units
        self.nonfinite: NonfiniteEvent | None = None
        self.notes: dict[str, int] = {}  # internal notes (errors inside the doctor) -> times seen
        self.onsets: dict[tuple[str, str], int] = {}  # (symptom, where) -> earliest step, kept across thinning
        self.first_record_step: int | None = None  # the first sampled step recorded (thinning may drop its record)
        self.watched: list[str] = []  # names of the models and optimisers watched
        self.models: list[str] = []  # ... of the models alone
        # modules kept in a plain list/tuple/dict attribute, unregistered: container -> (owner, its type, modules held)
        self.unregistered: dict[str, tuple[str, str, int]] = {}
        self.model_met_at: dict[str, int] = {}  # each watched model's name -> the step it was first met
        self.script_tensors: list[str] = []  # a model without modules: its tensors, as the script names them
        self.script_tensors_without_grad: list[str] = []  # ... those an optimiser steps that do not require grad
        self.script_tensors_moved = False  # ... and whether their values changed since they were named
        self.updated_in_place_by_hand = False  # weights changed in place between backward passes, no optimiser
        self.replaced_modules: set[str] = set()  # modules put in place of others part-way (old parameters dropped)
        # custom autograd.Function -> {"tests", "ignoring" (tests whose backward ignored grad_output for every input),
        # "first_step" (of the first such), "inputs" (those ignored), "after", "grad_output_norm", "grad_input_norm"
        # (that test's), "grad_output_one" (on every test grad_output was the number 1: the Function is the root)}
        self.custom_backwards: dict[str, dict] = {}
        self.backward_passes = 0  # backward() calls through a watched model (several per step when accumulating)
        # optimisers each made over the same parameters as the one before, which had stepped once: {"count",
        # "first_step", "optimizer" (its class), "state" (what it keeps between steps: `exp_avg`, ...)}
        self.optimizers_made_anew: dict | None = None
        self.schedulers_made_anew: dict | None = None  # learning-rate schedulers built after training began
        self.rates_overwritten: list[dict] = []  # rates set by hand that a scheduler's next step put back (the first 8)
        # watched model -> {"steps" (with a load_state_dict of it, whose parameters the optimiser steps), "first_step",
        # "last_step"}
        self.state_loads: dict[str, dict] = {}
        self.target_scale: dict | None = None  # the first sampled step's record.target_scale (with its "step")
        self.input_spreads: list[dict] = []  # the first sampled steps' record.input_spread (measured there only)
        self.layer_spreads: list[tuple] = []  # ... their (record.layer_spreads, record.layers_read_by_loss)
        self.batch_as_sequence: list[list] = []  # the records' batch_as_sequence, where looked at
        self.examples_mixed: list[list] = []  # ... their examples_mixed (likewise)
        self.base_rates: list[dict] = []  # the first sampled steps' record.base_rate
        self.relu_outputs_negative: list[dict] = []  # the first sampled steps' record.relu_outputs_negative
        self.soft_targets: list[dict] = []  # ... record.soft_targets (likewise)
        self.ctc_inputs: list[tuple[int, dict]] = []  # ... (step, record.ctc_input) (likewise)
        self.ctc_targets: list[tuple[int, dict]] = []  # ... (step, record.ctc_targets) (likewise)
        self.batch_classes: list[dict] = []  # a few sampled steps' record.batch_classes (likewise)
        self.attention: list[tuple[int, dict]] = []  # the first sampled steps' (step, record.attention) (likewise)
        self.lookahead: list[tuple[int, dict]] = []  # the first sampled steps' (step, record.lookahead) (likewise)
        self.loss_masks: list[tuple[int, dict]] = []  # ... (step, record.loss_mask) (likewise)
        self.position_grad_norms: list[dict] = []  # the first sampled steps' record.position_grad_norms
        self.padding_checks: list[tuple[int, dict]] = []  # ... (step, record.padding_checks) (likewise)
        # ReduceLROnPlateau.step calls on a watched optimiser, per scheduler: mode, how often the metric rose and fell
        # from one call to the next, the rate cuts and the step of the first, the first and last metric, and the
        # training loss at the first call (a few numbers, however long the run)
        self.plateaus: dict[int, dict] = {}
        # parameter -> {"module", "times", "first_step", "last_step"}: initialised again (torch.nn.init) in training
        self.reinitialised: dict[str, dict] = {}
        # custom Functions named as gradient reversals: (step, cosine of what the backward returned with what it was
        # given, the module before it), on the sampled steps that looked
        self.reversal_checks: dict[str, list[tuple[int, float, str | None]]] = {}
        # attribute path -> {"kind", "looks", "renewed" (looks that found a new object), "changed" (ever), "first_step"}
        self.loose_leaves: dict[str, dict] = {}
        self.max_notes = 50

    # --- adding ---------------------------------------------------------------------------------------------
    def add_loss(self, step: int, value: float) -> None:
        self.loss.add(step, value)

    def note_optimizer_made_anew(self, step: int, optimizer: str, state: list[str]) -> None:
        """The training optimiser at `step` replaced one over the same parameters that had stepped once."""
        if self.optimizers_made_anew is None:
            self.optimizers_made_anew = {"count": 0, "first_step": step, "optimizer": optimizer, "state": state}
        self.optimizers_made_anew["count"] += 1

    def note_rate_overwritten(
        self, scheduler: str, group: int, set_by_hand: float, put_back: float, step: int, steps: int
    ):
        """A parameter group's rate set by hand at `step` to `set_by_hand`, which `scheduler`'s next step replaced by
        its own, `put_back`, after it had served `steps` optimiser steps."""
        if len(self.rates_overwritten) < 8:
            self.rates_overwritten.append(
                {
                    "scheduler": scheduler,
                    "group": group,
                    "set_by_hand": set_by_hand,
                    "put_back": put_back,
                    "step": step,
                    "steps_applied": steps,
                }  # fmt: skip
            )

    def note_scheduler_made_anew(self, step: int, scheduler: str, lr_given: float) -> None:
        """A learning-rate scheduler built at `step`, over the training optimiser, after the training had begun."""
        if self.schedulers_made_anew is None:
            self.schedulers_made_anew = {"count": 0, "first_step": step, "scheduler": scheduler, "steps": []}
        made = self.schedulers_made_anew
        if step not in made["steps"]:  # (one per step: the parts of a SequentialLR built together count once)
            made["count"] += 1
            if len(made["steps"]) < 8:  # (the first few)
                made["steps"].append(step)
        made["lr_given"] = lr_given

    def note_state_loaded(self, step: int, model: str) -> None:
        """`load_state_dict` replaced the weights of `model`, which the training optimiser steps, at `step`."""
        loads = self.state_loads.setdefault(model, {"steps": 0, "first_step": step, "last_step": None})
        if loads["last_step"] != step:
            loads["steps"] += 1
            loads["last_step"] = step

    def restart_loss(self, step: int) -> None:
        """From `step` on, the losses are another training's (a second model, trained after the first): the loss
        rules judge them on their own. The curve in the report keeps both."""
        self.loss_restarts.append(step)

    def current_loss(self) -> LossSeries:
        """The losses since the last restart (all of them, usually), as a series of their own."""
        if not self.loss_restarts:
            return self.loss
        return self.loss.since(self.loss_restarts[-1])

    def add_record(self, record: StepRecord) -> None:
        if self.first_record_step is None:
            self.first_record_step = record.step
        self._fold_unit_masks(record)
        self._fold_parameter_checks(record)
        for cut in record.graph_cuts:
            self.graph_cuts.setdefault(tuple(cut), record.step)
        self._fold_unit_spreads(record)
        self._fold_custom_backwards(record)
        for path, seen in (record.loose_leaves or {}).items():
            tally = self.loose_leaves.setdefault(
                path, {"kind": seen["kind"], "looks": 0, "renewed": 0, "changed": False, "first_step": record.step}
            )
            tally["looks"] += 1
            tally["renewed"] += seen["renewed"]
            tally["changed"] = tally["changed"] or seen["changed"]
        if record.target_scale is not None and self.target_scale is None:  # (measured on the first few steps only)
            self.target_scale = {**record.target_scale, "step": record.step}
        if record.input_spread is not None:  # (measured on the first few sampled steps only)
            self.input_spreads.append(record.input_spread)
        if record.batch_as_sequence is not None:  # (looked at when a classifier's targets are counted)
            self.batch_as_sequence.append(record.batch_as_sequence)
        if record.examples_mixed is not None:  # (likewise)
            self.examples_mixed.append(record.examples_mixed)
        if record.relu_outputs_negative is not None:  # (looked at on the first few sampled steps)
            self.relu_outputs_negative.append(record.relu_outputs_negative)
        if record.base_rate is not None:  # (likewise)
            self.base_rates.append(record.base_rate)
        if record.layer_spreads is not None:  # (the same; with the layers the loss read)
            self.layer_spreads.append((record.layer_spreads, list(record.layers_read_by_loss)))
        if record.soft_targets is not None:
            self.soft_targets.append(record.soft_targets)
        if record.ctc_input is not None:
            self.ctc_inputs.append((record.step, record.ctc_input))
        if record.ctc_targets is not None:
            self.ctc_targets.append((record.step, record.ctc_targets))
        if record.batch_classes is not None:
            self.batch_classes.append(record.batch_classes)
        if record.attention is not None:
            self.attention.append((record.step, record.attention))
        if record.lookahead is not None:
            self.lookahead.append((record.step, record.lookahead))
        if record.loss_mask is not None:
            self.loss_masks.append((record.step, record.loss_mask))
        if record.padding_checks is not None:
            self.padding_checks.append((record.step, record.padding_checks))
        if record.position_grad_norms is not None:  # (the first few sampled steps)
            self.position_grad_norms.append(record.position_grad_norms)
        for name, (cosine, after) in (record.reversal_checks or {}).items():
            self.reversal_checks.setdefault(name, []).append((record.step, cosine, after))
        self.records.append(record)
        self.records_seen += 1

    def needs_thinning(self) -> bool:
        return len(self.records) >= self.max_records

    def thin(self) -> None:
        """Keep the recent half whole, and of the older records about a quarter of max_records, spread evenly over
        the steps they cover (the first record always stays). Dropping every other older record by position,
        as this once did, halved the records already thinned again at every round: a long run kept step 0 and
        its last few hundred steps, nothing between."""
        keep_recent = self.max_records // 2
        older, recent = self.records[:-keep_recent], self.records[-keep_recent:]
        wanted = max(1, self.max_records // 4)
        spacing = (older[-1].step - older[0].step) / wanted if len(older) > 1 else 0
        kept = older[:1]
        for record in older[1:]:
            if record.step - kept[-1].step >= spacing:
                kept.append(record)
        self.records = kept + recent

    def note(self, message: str) -> None:
        """An internal note: something inside the doctor failed; the training went on."""
        if message in self.notes or len(self.notes) < self.max_notes:
            self.notes[message] = self.notes.get(message, 0) + 1

    def set_nonfinite(self, event: NonfiniteEvent) -> None:
        """Keep the first NaN/Inf event; a later one only refines it if it happened earlier."""
        if self.nonfinite is None or event.step < self.nonfinite.step:
            self.nonfinite = event

    def remember_onset(self, symptom: str, where: str, step: int) -> None:
        key = (symptom, where)
        self.onsets[key] = min(step, self.onsets.get(key, step))

    def note_reinitialised(self, parameter: str, module: str, step: int) -> None:
        """A watched parameter (of `module`) filled by a `torch.nn.init` initialiser at `step`, after the training had
        stepped it (counted once per step)."""
        tally = self.reinitialised.setdefault(
            parameter, {"module": module, "times": 0, "first_step": step, "last_step": None}
        )
        if tally["last_step"] != step:
            tally["times"] += 1
            tally["last_step"] = step

    def note_plateau_step(self, scheduler_id: int, step: int, mode: str, metric: float, cut: bool) -> None:
        tally = self.plateaus.get(scheduler_id)
        if tally is None or tally["mode"] != mode:
            tally = {"mode": mode, "calls": 0, "rose": 0, "fell": 0, "cuts": 0, "first_cut_step": None}
            tally["metric_first"] = metric
            tally["loss_at_first"] = self.loss.buckets[-1].mean if self.loss.buckets else None
            self.plateaus[scheduler_id] = tally
        elif metric > tally["metric_last"]:
            tally["rose"] += 1
        elif metric < tally["metric_last"]:
            tally["fell"] += 1
        # (the first metric beaten, by the mode's measure, at some call since: the scheduler saw an improvement)
        better = metric < tally["metric_first"] if mode == "min" else metric > tally["metric_first"]
        tally["first_beaten"] = tally.get("first_beaten", False) or better
        tally["calls"] += 1
        tally["metric_last"] = metric
        if cut:
            tally["cuts"] += 1
            tally["first_cut_step"] = step if tally["first_cut_step"] is None else tally["first_cut_step"]

    # --- folding running tallies ------------------------------------------------------------------------------
    def _fold_custom_backwards(self, record: StepRecord) -> None:
        """Each custom Function's backward is tested on a few sampled steps only: what they found is kept here, past
        the thinning of the records."""
        for name, test in (record.custom_backwards or {}).items():
            tally = self.custom_backwards.setdefault(
                name, {"tests": 0, "ignoring": 0, "first_step": None, "grad_output_one": True}
            )
            if test.get("drops_parameters"):  # (the parameters given to it whose gradient its backward returned None)
                tally.setdefault("drops_parameters", set()).update(test["drops_parameters"])
            if test.get("tested") is False:
                continue
            tally["tests"] += 1
            self._fold_against_forward(tally, test.get("against_forward"), record.step, test["after"])
            tally["grad_output_one"] = tally["grad_output_one"] and test["grad_output_one"]
            # (every input that got a gradient: one input's constant gradient beside another's that uses grad_output
            # is an injection on purpose, such as an auxiliary loss's gradient of 1)
            if test["ignores_grad_output"] and len(test["ignores_grad_output"]) == test["inputs"]:
                tally["ignoring"] += 1
                if tally["first_step"] is None:
                    tally["first_step"] = record.step
                    for key in ("after", "grad_output_norm", "grad_input_norm"):
                        tally[key] = test[key]
                    tally["inputs"] = test["ignores_grad_output"]

    @staticmethod
    def _fold_against_forward(tally: dict, verdict: dict | None, step: int, after: str | None) -> None:
        """A custom Function's backward compared with its forward's finite differences on one step (None: the test
        said nothing there, a rounding or a kink within the step): does it disagree, and by how much?"""
        if verdict is None:
            return
        tally["checked"] = tally.get("checked", 0) + 1
        if verdict["agrees"]:
            return
        tally["disagreeing"] = tally.get("disagreeing", 0) + 1
        if "disagreement" not in tally:  # (the first step it disagreed: its numbers are the evidence)
            tally["disagreement"] = {"first_step": step, "after": after, **verdict}

    def _fold_unit_masks(self, record: StepRecord) -> None:
        window = self.thresholds.dead_window
        for site, stats in record.activations.items():
            if stats.unit_active is None:
                continue
            units = len(stats.unit_active)
            tally = self.unit_windows.get(site)
            if tally is None:  # (not setdefault: that would build a window to throw away at every step)
                tally = self.unit_windows[site] = UnitWindow()
            if tally.units != units:
                tally.masks.clear()  # a new site, or the layer changed width: start the window again
                tally.examples.clear()
                tally.steps.clear()
                tally.units = units
                tally.first = int.from_bytes(stats.unit_active, "little")
                tally.masks_seen, tally.died_early = 0, None
                tally.silent_at_first = stats.unit_active.count(0) / units if units else 0.0
            tally.masks.append(int.from_bytes(stats.unit_active, "little"))
            tally.examples.append(stats.examples)
            tally.steps.append(record.step)
            tally.masks_seen += 1
            while len(tally.masks) > window:
                tally.masks.popleft()
                tally.examples.popleft()
                tally.steps.popleft()
            fired = functools.reduce(operator.or_, tally.masks)
            silent = fired.to_bytes(units, "little").count(0)  # units whose flag was 0 at every step of the window
            stats.dead_fraction = silent / units if units else 0.0
            stats.window_examples = int(sum(tally.examples))
            stats.window_start = tally.steps[0]  # a unit silent over the window has been since this step
            if tally.died_early is None and tally.masks_seen == window + 1:  # (the first step just left the window)
                # each unit's flag is one byte, 0 or 1: fired first and silent since is one set bit per unit
                tally.died_early = (tally.first & ~fired).bit_count() / units if units else 0.0
            stats.died_after_first_step, stats.silent_at_first_step = tally.died_early, tally.silent_at_first
            stats.unit_active = None  # folded: the record keeps only the fraction

    def _fold_unit_spreads(self, record: StepRecord) -> None:
        """Keep every look at a layer's unit spread: they are few (their steps double), and thinning the records
        must not lose the first."""
        for name, layer in record.layers.items():
            if layer.unit_spread is None:
                continue
            looks = self.unit_spreads.setdefault(name, [])
            looks.append((record.step, layer.unit_spread))
            if len(looks) > MAX_UNIT_SPREAD_LOOKS:  # (only a probe looking more often than doubling steps gets here)
                del looks[1]
            self.layer_units[name] = layer.units

    def _fold_parameter_checks(self, record: StepRecord) -> None:
        self.param_module.update(record.param_module)
        self.param_nonzero_between.update(record.params_nonzero_between)
        record.params_nonzero_between = []
        record.param_module = {}
        for name, has_grad in record.param_has_grad.items():
            self.param_checks[name] = self.param_checks.get(name, 0) + 1
            self.param_with_grad[name] = self.param_with_grad.get(name, 0) + int(has_grad)
            self.param_zero_grad[name] = self.param_zero_grad.get(name, 0) + int(
                record.param_zero_grad.get(name, False)
            )
            if record.loss_of_input_gradient:
                self.checked_under_input_gradient[name] = self.checked_under_input_gradient.get(name, 0) + 1
        if record.grads_written_after_backward is not None:  # (zeroed by hand: `p.grad.zero_()` after backward())
            for name in record.param_has_grad:
                self.param_compared_after_backward[name] = self.param_compared_after_backward.get(name, 0) + 1
            for name in record.grads_written_after_backward:
                if record.param_zero_grad.get(name):
                    self.param_zeroed_after_backward[name] = self.param_zeroed_after_backward.get(name, 0) + 1
        if record.param_has_grad:  # (counted on the steps its parameters were checked, as their checks are)
            checked = {self.param_module.get(name, name.rpartition(".")[0]) for name in record.param_has_grad}
            for counts, names in (
                (self.not_called, record.modules_not_called),
                (self.without_grad, record.modules_without_grad),
                (self.in_reentrant_checkpoint, record.modules_in_reentrant_checkpoint),
            ):
                for name in names:
                    if name in checked:
                        counts[name] = counts.get(name, 0) + 1
        if record.optimizer_checked:
            self.apply_checks += 1
            for name, module in record.grads_not_applied.items():
                self.not_applied[name] = self.not_applied.get(name, 0) + 1
                self.not_applied_module[name] = module
                self.not_applied_run.setdefault(name, [record.step, 0])[1] += 1
            for name in [name for name in self.not_applied_run if name not in record.grads_not_applied]:
                del self.not_applied_run[name]  # (applied, or without a gradient, at this check: the run ends)
            self.stepped_outside_model = record.stepped_outside_model
            self.stepped_outside_reached = record.stepped_outside_reached
            self.master_copies = record.master_copies
            self.held_by_idle_optimizer.update(record.held_by_idle_optimizer)
        record.param_has_grad = record.param_zero_grad = record.grads_not_applied = {}
        record.held_by_idle_optimizer = {}
        record.grads_written_after_backward = None
        record.modules_not_called, record.modules_without_grad, record.modules_in_reentrant_checkpoint = [], [], []

    # --- reading ------------------------------------------------------------------------------------------------
    def recent(self, share: float | None = None) -> list[StepRecord]:
        """The most recent share of the records (at least `min_records` of them, or all there are)."""
        share = self.thresholds.recent_share if share is None else share
        records = self.healthy_records()
        count = max(self.thresholds.min_records, int(math.ceil(len(records) * share)))
        return records[-count:]

    def healthy_records(self) -> list[StepRecord]:
        """The records whose statistics mean something. After the first NaN/Inf they are poisoned, and say
        nothing new: the records before it. Unless the run got over it (finite losses came after it: a gradient
        scaler skipped the step whose gradients overflowed, a bad batch was skipped): then every record whose
        own numbers are finite."""
        if self.nonfinite is None:
            return self.records
        first = self.nonfinite.step
        if not any(bucket.last_step > first for bucket in self.loss.buckets):
            return [r for r in self.records if r.step < first]
        return [r for r in self.records if r.step != first and _all_finite(r)]

    def layer_names(self) -> list[str]:
        """Every layer seen, in depth order (as of the latest record that saw it)."""
        depth: dict[str, int] = {}
        for record in self.records:
            for name, layer in record.layers.items():
                depth[name] = layer.depth
        return sorted(depth, key=lambda name: (depth[name], name))

    def to_dict(self) -> dict:
        return {
            "steps": self.steps,
            "records": [r.to_dict() for r in self.records],
            "loss": [
                {"first_step": b.first_step, "last_step": b.last_step, "mean": b.mean, "min": b.low, "max": b.high}
                for b in self.loss.buckets
            ],
        }


def _all_finite(record: StepRecord) -> bool:
    """No NaN or Inf in a record's loss and gradient norms."""
    numbers = [record.loss, record.grad_norm]
    for layer in record.layers.values():
        if layer.nonfinite_grad:
            return False
        numbers += [layer.out_grad_norm, layer.param_grad_norm]
    return all(n is None or math.isfinite(n) for n in numbers)
