"""Mistakes in how an optimiser is set up and stepped that PyTorch accepts silently: a closure that never resets the
gradients, a parameter group's setting misspelt, gradients computed with torch.func and never handed to the optimiser,
a schedule made anew every epoch. Each was missed by sweep 50 (stop 46); each test fails on the code before it."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import leakygrad.doctor as doctor


def _regression():
    torch.manual_seed(0)
    x = torch.rand(512, 2) * 2 - 1
    y = torch.sin(3 * x[:, :1]) * torch.cos(2 * x[:, 1:]) + 0.5 * x[:, 1:] ** 2
    model = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))
    return model, x, y


@pytest.mark.parametrize("reset", [False, True])
def test_an_lbfgs_closure_that_never_resets_the_gradients_is_an_accumulating_gradient(reset):
    """`opt.step(closure)` with a closure that calls backward() without zero_grad(): LBFGS calls it several times per
    step, each call adds into .grad, and the summed gradients grow until the weights are NaN (test MSE NaN against
    0.00017). The reset was only looked for between steps, and the closure's backward passes all run within one: the
    NaN was told as a learning rate to lower. Now an accumulating_gradient with zero_grad() in the closure first."""
    model, x, y = _regression()
    optimizer = torch.optim.LBFGS(
        model.parameters(), lr=1.0, max_iter=4, history_size=10, line_search_fn="strong_wolfe"
    )

    def closure():
        if reset:
            optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        return loss

    with doctor.watch(model, optimizer) as dr:
        for _ in range(150):
            optimizer.step(closure)
    if reset:
        assert dr.findings == []
        return
    summing, *others = dr.findings
    assert (summing.symptom, summing.where, summing.severity) == ("accumulating_gradient", "optimizer", "error")
    assert summing.evidence["in_closure"] and "inside the closure" in summing.remedies[0]
    [nan] = [f for f in others if f.symptom == "nonfinite"]
    assert nan.evidence["after_accumulating_gradient"] == "optimizer"
    assert nan.remedies[0].startswith("Reset the gradients at every step first")


def _digits_like():
    torch.manual_seed(0)
    x = torch.randn(1024, 20)
    y = (x[:, :10].sum(1) > 0).long() + 2 * (x[:, 10:].sum(1) > 0).long()
    backbone = nn.Sequential(nn.Linear(20, 64), nn.ReLU())
    head = nn.Linear(64, 4)
    return nn.Sequential(backbone, head), backbone, head, x, y


def _train_on_batches(model, optimizer, x, y, steps, after_step=None):
    """`steps` cross-entropy steps on the 16 batches of 64 of (x, y) in turn, under the doctor; returns it."""
    with doctor.watch(model, optimizer) as dr:
        for step in range(steps):
            batch = slice(64 * (step % 16), 64 * (step % 16 + 1))
            loss = F.cross_entropy(model(x[batch]), y[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if after_step is not None:
                after_step(step)
    return dr


@pytest.mark.parametrize("head_group", ["learning_rate", "lr", "named", "scheduled"])
def test_a_parameter_group_given_its_rate_under_a_key_the_optimiser_does_not_know_is_named(head_group):
    """`{"params": head.parameters(), "learning_rate": 5e-2}`: torch.optim keeps any key in a group and reads only its
    own, so the head trains at the default lr=5e-4 (sweep 50: accuracy 0.72 against 0.90, and nothing was said). A
    stalled loss at the optimiser, an error (100 times slower than written). A group's own name and the keys a
    scheduler writes (OneCycleLR's max_lr, base_momentum, ...) are no typo."""
    model, backbone, head, x, y = _digits_like()
    own_settings = {"learning_rate": {"learning_rate": 5e-2}, "lr": {"lr": 5e-2}, "named": {"name": "head"}}
    group = {"params": head.parameters(), **own_settings.get(head_group, {})}
    optimizer = torch.optim.SGD([{"params": backbone.parameters()}, group], lr=5e-4, momentum=0.9)
    schedule = (
        torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=5e-3, total_steps=400)
        if head_group == "scheduled"
        else None
    )
    dr = _train_on_batches(model, optimizer, x, y, 400, after_step=schedule and (lambda _: schedule.step()))
    named = [f for f in dr.findings if "misspelt_setting" in f.evidence]
    if head_group != "learning_rate":
        assert named == []
        return
    [f] = named
    assert (f.symptom, f.where, f.severity) == ("stalled_loss", "optimizer", "error")
    assert f.evidence["misspelt_setting"] == {
        "param_group": 1, "setting": "learning_rate", "meant": "lr", "given": 5e-2, "in_effect": 5e-4
    }  # fmt: skip
    assert "100 times slower than written" in f.explanation
    assert f.remedies[0].startswith("Write `'lr': 0.05` in that group")


@pytest.mark.parametrize("written_to", ["copies", "parameters"])
def test_gradients_from_torch_func_never_stored_in_the_parameters_are_a_no_gradient(written_to):
    """Per-example gradients with `vmap(grad(...))` over `functional_call`, clipped, averaged and written to `.grad` of
    the dict's detached copies (the torch.func tutorial's `{k: v.detach() ...}`), not of the model's parameters: Adam
    steps nothing (sweep 50: accuracy 0.12 against 0.95; the doctor said only "nothing measured"). No backward ever
    ran, and not one gradient arrived: an error at the model."""
    from torch.func import functional_call, grad, vmap

    model, _, _, x, y = _digits_like()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)

    def example_loss(params, xi, yi):
        return F.cross_entropy(functional_call(model, params, (xi[None],)), yi[None])

    per_example = vmap(grad(example_loss), in_dims=(None, 0, 0))
    with doctor.watch(model, optimizer) as dr:
        for step in range(200):
            batch = slice(64 * (step % 16), 64 * (step % 16 + 1))
            params = {name: p.detach() for name, p in model.named_parameters()}
            grads = per_example(params, x[batch], y[batch])
            optimizer.zero_grad()
            for name, p in model.named_parameters():
                target = params[name] if written_to == "copies" else p
                target.grad = grads[name].mean(0)
            optimizer.step()
    if written_to == "parameters":
        assert [f for f in dr.findings if f.symptom == "no_gradient"] == []
        return
    [f] = dr.findings
    assert (f.symptom, f.severity) == ("no_gradient", "error") and f.evidence["backward_passes"] == 0
    assert f.evidence["stepped_without_gradients"] >= 10 and f.remedies[0].startswith("Store the gradients")


@pytest.mark.parametrize("built", ["every_epoch", "once", "once_per_phase"])
def test_a_scheduler_built_anew_every_epoch_restarts_its_schedule_and_is_named(built):
    """`LambdaLR(opt, warmup_then_cosine)` inside the epoch loop: each new scheduler starts the schedule again, and the
    warm-up never reaches its peak (sweep 50: the rate peaked at 2.2e-4 of 3e-3 given, accuracy 0.89 against 0.98, and
    nothing was said). A warning at the optimiser. Built once, or a second schedule started once for a later phase
    (a warm-up, then a cosine decay), is no finding."""
    model, _, _, x, y = _digits_like()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    epochs, per_epoch = 12, 16
    warmup = epochs * per_epoch // 2

    def warmup_then_flat(step):
        return min(1.0, (step + 1) / warmup)

    schedules = [torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_then_flat)]

    def step_the_schedule(step):
        schedules[-1].step()
        next_epoch, epoch_ends = (step + 1) // per_epoch, (step + 1) % per_epoch == 0
        rebuilt = built == "every_epoch" or (built == "once_per_phase" and next_epoch == epochs // 2)
        if epoch_ends and next_epoch < epochs and rebuilt:  # (built before the next epoch's first batch)
            schedules.append(torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_then_flat))

    dr = _train_on_batches(model, optimizer, x, y, epochs * per_epoch, after_step=step_the_schedule)
    named = [f for f in dr.findings if "schedulers_made_anew" in f.evidence]
    if built != "every_epoch":
        assert named == []
        return
    [f] = named
    assert (f.symptom, f.where, f.severity) == ("stalled_loss", "optimizer", "warning")
    assert f.evidence["schedulers_made_anew"] == epochs - 1 and f.evidence["built_at_steps"][:2] == [16, 32]
    assert f.evidence["lr_highest"] < 3e-3 / 4 and f.remedies[0].startswith("Build the scheduler once")


@pytest.mark.parametrize("freeze", ["attribute", "method", "none"])
def test_a_module_frozen_with_a_requires_grad_attribute_is_named_for_freezing_nothing(freeze):
    """`backbone.requires_grad = False`: an nn.Module has no such flag, so Python stores the attribute and the backbone
    trains on (sweep 50: a pretrained backbone fine-tuned at lr 0.1 by mistake, accuracy 0.20 against 0.90, told as
    dead units and a diverging loss to lower the learning rate for). An error at the module; `requires_grad_(False)`,
    or no freeze at all, is no finding of it."""
    model, backbone, head, x, y = _digits_like()
    if freeze == "attribute":
        backbone.requires_grad = False
    elif freeze == "method":
        backbone.requires_grad_(False)
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.05)
    dr = _train_on_batches(model, optimizer, x, y, 200)
    named = [f for f in dr.findings if "requires_grad_attribute" in f.evidence]
    if freeze != "attribute":
        assert named == []
        return
    [f] = named
    assert (f.symptom, f.severity, f.evidence["requires_grad_attribute"]) == ("wrong_gradient", "error", [f.where])
    assert f.remedies[0].startswith(f"Call the method: `{f.where}.requires_grad_(False)`")


@pytest.mark.parametrize("applied", ["after the optimiser", "before the optimiser"])
def test_weight_norm_applied_after_the_optimiser_is_named_with_the_order_as_remedy(applied):
    """`weight_norm(m)` in a setup step run after the optimiser was made (sweep 51: accuracy 0.85 against 0.98,
    three warnings that a module was replaced, their remedy `add_param_group`, which raises there): the weight moves
    into new parameters the optimiser does not hold. An error per layer, the parametrization named, the order first."""
    from torch.nn.utils.parametrizations import weight_norm

    model, backbone, head, x, y = _digits_like()
    if applied == "before the optimiser":
        weight_norm(backbone[0])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    if applied == "after the optimiser":
        weight_norm(backbone[0])
    dr = _train_on_batches(model, optimizer, x, y, steps=48)
    assert dr.notes == []
    named = [f for f in dr.findings if f.evidence.get("parametrized_after_optimizer")]
    if applied == "before the optimiser":
        assert named == [] and dr.findings == []
        return
    [f] = named
    assert (f.symptom, f.where, f.severity) == ("unapplied_gradient", "sequential.0.0", "error")
    assert f.evidence["parameters"] == [
        "sequential.0.0.parametrizations.weight.original0",
        "sequential.0.0.parametrizations.weight.original1",
    ]
    assert "applied after the optimiser was made" in f.explanation and "before making the optimiser" in f.remedies[0]


@pytest.mark.parametrize("unfrozen", ["by hand, once", "by hand, every step", "by the schedule"])
def test_a_rate_set_by_hand_that_the_scheduler_puts_back_is_named(unfrozen):
    """A backbone "frozen" at lr 0 under a warm-up LambdaLR, then unfrozen by `param_groups[0]["lr"] = 1e-3` (sweep
    51: accuracy 0.867 against 0.910, silent): the scheduler's next step puts back base_lr * factor = 0, so the
    backbone trains for one step. An `unapplied_gradient` error at LambdaLR; a rate set at every step, or a
    per-group lambda that turns it on, is no finding."""
    model, backbone, head, x, y = _digits_like()
    groups = [{"params": backbone.parameters(), "lr": 0.0 if unfrozen != "by the schedule" else 1e-3}]
    optimizer = torch.optim.Adam(groups + [{"params": head.parameters(), "lr": 1e-2}])
    warm = lambda step: min(1.0, (step + 1) / 10)  # noqa: E731
    later = lambda step: float(step >= 20)  # noqa: E731
    lambdas = [later, warm] if unfrozen == "by the schedule" else [warm, warm]
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambdas)

    def after_step(step):
        scheduler.step()
        if (unfrozen == "by hand, once" and step == 19) or (unfrozen == "by hand, every step" and step >= 19):
            optimizer.param_groups[0]["lr"] = 1e-3

    dr = _train_on_batches(model, optimizer, x, y, steps=48, after_step=after_step)
    assert dr.notes == []
    named = [f for f in dr.findings if "rate_overwritten" in f.evidence]
    if unfrozen != "by hand, once":
        assert named == []
        return
    [f] = named
    assert (f.symptom, f.where, f.severity, f.first_step) == ("unapplied_gradient", "LambdaLR", "error", 20)
    assert f.evidence["rate_overwritten"] == {
        "scheduler": "LambdaLR",
        "group": 0,
        "set_by_hand": 1e-3,
        "put_back": 0.0,
        "steps_applied": 1,
    }
    assert "put its own rate back" in f.explanation and "base_lrs[0]" in f.remedies[0]


@pytest.mark.parametrize("every", [1, 4])
@pytest.mark.parametrize("returns", ["the rate", "a factor"])
def test_a_lambda_schedule_that_returns_the_rate_is_an_error_from_the_first_step(returns, every):
    """A LambdaLR whose lambda returns the rate, 1e-3, which LambdaLR multiplies by the 1e-3 given (sweep 51: accuracy
    0.127, chance, against 0.978; a warning at every 16 that said training "stopped part-way", nothing at every 1):
    the rate is held near nothing from the first step. An error at the loss, the schedule named; a factor is fine."""
    model, backbone, head, x, y = _digits_like()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    rate = (lambda step: 1e-3 * min(1.0, (step + 1) / 5)) if returns == "the rate" else (lambda step: 1.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, rate)
    with doctor.watch(model, optimizer, every=every) as dr:
        for step in range(160):
            batch = slice(64 * (step % 16), 64 * (step % 16 + 1))
            loss = F.cross_entropy(model(x[batch]), y[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
    assert dr.notes == []
    stalls = [f for f in dr.findings if f.symptom == "stalled_loss"]
    if returns == "a factor":
        assert stalls == []
        return
    [f] = stalls
    assert (f.where, f.severity, f.evidence["learning_rate"], f.evidence["lr_cut_from_step"]) == (
        "loss",
        "error",
        "scheduled to nothing",
        0,
    )
    assert "stopped_moving_at_step" not in f.evidence and "part-way" not in f.explanation


def test_lbfgs_converged_within_its_first_steps_is_no_stall():
    """Softmax regression fitted by full-batch L-BFGS with a strong Wolfe search (sweep 52: test accuracy 1.000, a
    stalled_loss warning, "the learning rate is zero"): converged by step ~10, every later step ends on its tolerance
    and leaves the weights exactly where they are. Converged (the loss fell, and ends at its lowest): no finding."""
    torch.manual_seed(0)
    x = torch.randn(256, 6)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).long() + (x[:, 2] > 1).long()
    model = nn.Linear(6, 3)
    optimizer = torch.optim.LBFGS(model.parameters(), max_iter=20, line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y) + 1e-2 * model.weight.pow(2).sum()
        loss.backward()
        return loss

    with doctor.watch(model, optimizer) as dr:
        for _ in range(120):
            optimizer.step(closure)
    assert dr.notes == []
    assert dr.findings == []


@pytest.mark.parametrize("copied_back, masters_require_grad", [(True, True), (True, False), (False, True)])
def test_float32_master_weights_copied_into_a_float16_model_are_no_unapplied_gradient(
    copied_back, masters_require_grad
):
    """The pre-AMP mixed-precision recipe: a float16 model, float32 master copies of its parameters in the optimiser,
    gradients copied over and unscaled by hand, and the masters copied back into the model after each step (sweep 53: a
    false `unapplied_gradient` warning on a healthy run, accuracy 0.977; with masters that do not require grad, a false
    error "every parameter the optimiser steps is frozen", though step() updates a tensor whose .grad the script set).
    The model's parameters are written after every step from tensors of their own shapes: applied. Without the copy
    back, the model never changes: an error."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).half()
    masters = [p.detach().float().clone().requires_grad_(masters_require_grad) for p in model.parameters()]
    optimizer = torch.optim.SGD(masters, lr=0.1, momentum=0.9)
    x, y = torch.randn(64, 8).half(), torch.randint(0, 3, (64,))
    with doctor.watch(model, optimizer, every=2) as dr:
        for _ in range(24):
            loss = F.cross_entropy(model(x).float(), y)
            model.zero_grad(set_to_none=True)
            (loss * 1024).backward()
            for master, p in zip(masters, model.parameters()):
                master.grad = p.grad.float() / 1024
            optimizer.step()
            if copied_back:
                with torch.no_grad():
                    for p, master in zip(model.parameters(), masters):
                        p.copy_(master)
    assert dr.notes == []
    unapplied = [f for f in dr.findings if f.symptom == "unapplied_gradient"]
    if copied_back:
        assert unapplied == [] and [f for f in dr.findings if f.severity == "error"] == []
        return
    [f] = unapplied
    assert (f.where, f.severity, f.evidence["parameter_count"]) == ("sequential", "error", 4)


class RestoringSAM:
    """A hand-written SAM: climb to w + e(w), take the gradient there, restore w, then the base step (`restore_first`);
    or, the mistake, the base step at w + e(w) and then w restored, which throws the step away."""

    def __init__(self, params, restore_first, rho=0.05, lr=0.1):
        self.params, self.restore_first, self.rho = list(params), restore_first, rho
        self.base = torch.optim.SGD(self.params, lr=lr, momentum=0.9)

    @torch.no_grad()
    def first_step(self):
        norm = torch.norm(torch.stack([p.grad.norm() for p in self.params]))
        self.saved = [p.detach().clone() for p in self.params]
        for p in self.params:
            p.add_(p.grad * (self.rho / (norm + 1e-12)))

    @torch.no_grad()
    def second_step(self):
        if self.restore_first:
            for p, saved in zip(self.params, self.saved):
                p.data = saved
        self.base.step()
        if not self.restore_first:
            for p, saved in zip(self.params, self.saved):
                p.data = saved


@pytest.mark.parametrize("restore_first", [True, False])
def test_sam_restoring_its_weights_after_the_base_step_is_named(restore_first):
    """SAM's `second_step` with the base optimiser's step before the weights are restored from the copy saved at the
    climb (sweep 53: accuracy 0.09 against 0.98, only a `stalled_loss` warning): every update is written over. Measured
    every 16 steps, the weights stay within a few updates of where they started: an `unapplied_gradient` error at the
    model, with the stall folded in. Restored before the base step, they travel far: no finding."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
    sam = RestoringSAM(model.parameters(), restore_first)
    x, y = torch.randn(256, 8), torch.randint(0, 3, (256,))
    with doctor.watch(model, sam.base, every=4) as dr:
        for _ in range(160):
            batch = torch.randint(0, 256, (32,))
            F.cross_entropy(model(x[batch]), y[batch]).backward()
            sam.first_step()
            sam.base.zero_grad()
            F.cross_entropy(model(x[batch]), y[batch]).backward()
            sam.second_step()
            sam.base.zero_grad()
    assert dr.notes == []
    named = [f for f in dr.findings if f.evidence.get("updates_undone")]
    if restore_first:
        assert named == [] and [f for f in dr.findings if f.severity == "error"] == []
        return
    [f] = named
    assert (f.symptom, f.where, f.severity) == ("unapplied_gradient", "sequential", "error")
    assert f.evidence["displacement_in_updates"] < 3 and "SAM" in f.explanation and "base_optimizer" in f.remedies[0]
    assert [g for g in dr.findings if g.symptom in ("stalled_loss", "diverging_loss")] == []


@pytest.mark.parametrize("order", ["slow weights first", "fast weights reset first"])
def test_a_lookahead_that_resets_its_fast_weights_before_moving_the_slow_ones_is_named(order):
    """A hand-written Lookahead over Adam whose synchronisation has its two lines swapped (sweep 53: the model put back
    to its initial weights every k = 5 steps, only a `stalled_loss` warning): the fast weights are reset to the slow
    ones, which then move by alpha * 0. An `unapplied_gradient` error; in the right order, no finding."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    slow = [p.detach().clone() for p in model.parameters()]
    x = torch.randn(256, 8)
    y = x[:, :1] * 2 - x[:, 1:2]
    with doctor.watch(model, optimizer, every=4) as dr:
        for step in range(160):
            batch = torch.randint(0, 256, (32,))
            loss = F.mse_loss(model(x[batch]), y[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if (step + 1) % 5 == 0:
                with torch.no_grad():
                    for p, s in zip(model.parameters(), slow):
                        if order == "slow weights first":
                            s.add_(0.5 * (p - s))
                            p.copy_(s)
                        else:
                            p.copy_(s)
                            s.add_(0.5 * (p - s))
    assert dr.notes == []
    named = [f for f in dr.findings if f.evidence.get("updates_undone")]
    if order == "slow weights first":
        assert named == [] and loss.item() < 0.1
        return
    [f] = named
    assert (f.symptom, f.where, f.severity) == ("unapplied_gradient", "sequential", "error")


def test_a_new_optimiser_for_each_task_of_a_continual_learner_starts_a_loss_curve_of_its_own():
    """Class-incremental learning with a new Adam for each task (sweep 53: a `diverging_loss` warning on a healthy
    run, accuracy 0.887: the loss rises at each task's start, when the new classes arrive, and was judged against
    the first task's lowest). A new optimiser over the same model after a phase of training begins a new curve: each
    task's loss is judged on its own, and each new classes' jump is no divergence."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 6))
    x = torch.randn(512, 8)
    with doctor.watch(model, every=4) as dr:
        for task in range(3):
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
            labels = 2 * task + (x[:, task] > 0).long()  # (two new classes per task)
            for _ in range(96):
                batch = torch.randint(0, 512, (64,))
                loss = F.cross_entropy(model(x[batch]), labels[batch])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    assert dr.notes == [] and loss.item() < 1.0  # (each task's loss falls: the third from about 10)
    assert dr.history.loss_restarts == [96, 192]
    assert [f for f in dr.findings if f.symptom in ("diverging_loss", "stalled_loss")] == []


AVERAGED_SCRIPT = """
import torch
from torch import nn
import torch.nn.functional as F
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.99))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(256, 8)
y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
for _ in range(48):
    batch = torch.randint(0, 256, (32,))
    loss = F.cross_entropy({forward_through}(x[batch]), y[batch])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    ema.update_parameters(model)
"""


@pytest.mark.parametrize("forward_through", ["model", "ema"])
def test_a_loss_computed_through_an_averaged_models_copy_names_the_copy(tmp_path, forward_through):
    """The training forward called through `torch.optim.swa_utils.AveragedModel`'s EMA instead of the model (sweep 53:
    accuracy 0.10 against 0.99; an `unapplied_gradient` error at the EMA whose remedy, to make the optimiser over
    the EMA's parameters, would have trained the average). The EMA names its parameters under `module.`: a copy all
    the same, and the model's `no_gradient` error says the gradient went to it, with the right remedy."""
    from leakygrad.doctor.runner import run_script

    script = tmp_path / "averaged.py"
    script.write_text(AVERAGED_SCRIPT.format(forward_through=forward_through))
    run = run_script(script, every=4)
    assert run.doctor.notes == []
    if forward_through == "model":
        assert run.doctor.findings == []
        return
    [f] = run.doctor.findings
    assert (f.symptom, f.where, f.severity, f.evidence["gradient_went_to"]) == ("no_gradient", "model", "error", "ema")
    assert "no_grad" in f.remedies[0]
