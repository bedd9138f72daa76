"""The PyTorch probe in code: `watch()`, what it measures, where it names things, and that it cleans up."""

import math
import warnings

import numpy as np
import pytest
import torch
import torch.optim.optimizer as optimizer_hooks
from torch import nn

import leakygrad.doctor as doctor
from leakygrad.doctor.probes import torch_probe


def data(seed=0, n=64, features=8, classes=3):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=generator)
    return x, (x[:, 0] > 0).long() + (x[:, 1] > 0).long() * (classes > 2)


class FunctionalNet(nn.Module):
    """ReLU written as a function call inside forward: module hooks never see it; the graph walk does."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def train(model, optimizer, steps, x, y, zero_grad=True):
    losses = []
    for _ in range(steps):
        loss = nn.functional.cross_entropy(model(x), y)
        if zero_grad:
            optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def no_global_hooks_left():
    module = nn.modules.module
    return (
        not module._global_forward_hooks
        and not module._global_forward_pre_hooks
        and not optimizer_hooks._global_optimizer_pre_hooks
        and not optimizer_hooks._global_optimizer_post_hooks
        and torch.autograd.backward is torch_probe.TORCH_BACKWARD
        and torch.nn.utils.clip_grad_norm_ is CLIP_GRAD_NORM
        and torch.nn.utils.clip_grad.clip_grad_norm_ is CLIP_GRAD_NORM
    )


CLIP_GRAD_NORM = torch.nn.utils.clip_grad.clip_grad_norm_  # as PyTorch defines it (imported before any watch)


def test_two_lines_around_a_loop():
    torch.manual_seed(0)
    model = FunctionalNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = data()
    with doctor.watch(model, optimizer, every=4) as dr:
        train(model, optimizer, 20, x, y)
    assert dr.steps == 20 and dr.history.records_seen == 5  # steps 0, 4, 8, 12, 16
    assert dr.findings == [] and dr.notes == []
    record = dr.history.records[-1]
    assert set(record.layers) == {"fc1", "fc2"}
    assert record.layers["fc1"].depth < record.layers["fc2"].depth
    assert set(record.activations) == {"relu after fc1"}
    assert record.activations["relu after fc1"].units == 16 and record.activations["relu after fc1"].feeds_from == "fc1"
    for layer in record.layers.values():
        assert layer.out_grad_norm > 0 and layer.param_grad_norm > 0 and 0 < layer.update_ratio < 1
    assert len(dr.history.loss) == 20
    assert no_global_hooks_left()


def test_reports_from_code(tmp_path):
    model = FunctionalNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = data()
    with doctor.watch(model, optimizer, every=2) as dr:
        train(model, optimizer, 6, x, y)
    html, js = dr.report(tmp_path / "r.html"), dr.report(tmp_path / "r.json")
    assert html.read_text().startswith("<!DOCTYPE html>")
    assert js.read_text().startswith('{\n  "version": 1,\n  "steps": 6,')
    assert "no leaks found" in dr.summary()


def test_without_an_optimizer_each_backward_is_a_step():
    model = FunctionalNet()
    x, y = data()
    with doctor.watch(model, every=1) as dr:
        for _ in range(5):
            loss = nn.functional.cross_entropy(model(x), y)
            model.zero_grad()
            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.1 * p.grad
    assert dr.steps == 5 and dr.history.records_seen == 5
    assert dr.history.records[-1].layers["fc1"].param_grad_norm > 0
    assert dr.history.records[-1].layers["fc1"].update_ratio is None  # no optimiser step to measure
    assert no_global_hooks_left()


def test_the_optimizer_is_found_when_not_given():
    model = FunctionalNet()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = data()
    with doctor.watch(model, every=3) as dr:
        train(model, optimizer, 9, x, y)
    assert dr.steps == 9 and "Adam" in dr.history.watched
    assert dr.history.records[-1].layers["fc2"].update_ratio > 0


def test_clipping_far_below_the_gradient_is_named_as_what_holds_a_stalled_run_back():
    """clip_grad_norm_ with max_norm=1e-6: the updates are a millionth of what the gradient asks. The verdict was
    'learning rate far too low: scale it by 1e3', advice that changes nothing while the clipping stays."""
    torch.manual_seed(0)
    model = FunctionalNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = data()
    returned = []
    with doctor.watch(model, optimizer, every=2) as dr:
        for _ in range(60):
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            returned.append(torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1e-6))
            optimizer.step()
    assert no_global_hooks_left()
    assert all(isinstance(r, torch.Tensor) and r > 1e-3 for r in returned)  # (what it returns is unchanged)
    [f] = [f for f in dr.findings if f.symptom == "stalled_loss"]
    assert f.evidence["learning_rate"] == "clipped" and f.evidence["clip_max_norm"] == 1e-6
    assert f.evidence["grad_norm_before_clip"] == pytest.approx(float(returned[-1]), rel=0.5)
    assert "the clipping, not the learning rate" in f.explanation and "Raise max_norm" in f.remedies[0]
    assert dr.history.records[-1].clip_max_norm == 1e-6


@pytest.mark.parametrize("before_backward", [True, False])
def test_clipping_called_before_backward_is_named_as_clipping_nothing(before_backward):
    """`zero_grad(); clip_grad_norm_(...); backward(); step()`: the clipping measures gradients not yet computed (a
    norm of 0) and the optimiser steps them whole. A ReLU RNN that went to NaN at step 1 so got a NaN finding whose
    remedy was "clip the gradient norm", which the script believed it did."""
    torch.manual_seed(0)
    model = FunctionalNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = data()
    with doctor.watch(model, optimizer, every=2) as dr:
        for _ in range(40):
            optimizer.zero_grad()
            if before_backward:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.01)
            nn.functional.cross_entropy(model(x), y).backward()
            if not before_backward:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.01)
            optimizer.step()
    named = [f for f in dr.findings if f.where == "clip_grad_norm_"]
    if not before_backward:
        assert named == [] and dr.history.records[-1].clip_norm > 0.01
        return
    [f] = named
    assert (f.symptom, f.severity, f.first_step, f.evidence["clip_measured_norm"]) == (
        "exploding_gradient",
        "error",
        0,
        0,
    )
    assert (
        f.evidence["grad_norm_stepped"] > 0.01 and "between `loss.backward()` and `optimizer.step()`" in f.remedies[0]
    )


def test_micro_batches_before_the_first_optimizer_step_are_one_step():
    """Gradients accumulated over 4 backward calls per optimiser step, the optimiser not given: it is met only when
    it first steps, and the 4 backward calls before that had counted as steps of their own (14 steps for 10)."""
    model = FunctionalNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = data()
    with doctor.watch(model, every=1) as dr:
        for _ in range(10):
            optimizer.zero_grad()
            for k in range(4):
                (nn.functional.cross_entropy(model(x[k::4]), y[k::4]) / 4).backward()
            optimizer.step()
    assert dr.steps == 10 and [record.step for record in dr.history.records] == list(range(10))
    assert dr.history.records[0].layers["fc1"].update_ratio > 0  # step 0 too ended at the optimiser step
    assert len(dr.history.loss) == 10


def test_an_error_inside_the_doctor_is_a_note_and_training_goes_on(monkeypatch):
    x, y = data()
    torch.manual_seed(1)
    plain_model = FunctionalNet()
    plain = train(plain_model, torch.optim.SGD(plain_model.parameters(), lr=0.1), 8, x, y)

    def broken(*args, **kwargs):
        raise RuntimeError("synthetic failure")

    monkeypatch.setattr(torch_probe, "add_activation", broken)
    monkeypatch.setattr(torch_probe, "norm", broken)
    torch.manual_seed(1)
    model = FunctionalNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with doctor.watch(model, optimizer, every=1) as dr:
        watched = train(model, optimizer, 8, x, y)
    assert watched == plain
    assert any("synthetic failure" in note for note in dr.notes)
    assert all(torch.equal(a, b) for a, b in zip(plain_model.parameters(), model.parameters()))


def test_the_user_s_exception_propagates_and_hooks_are_removed():
    model = FunctionalNet()
    with pytest.raises(KeyError):
        with doctor.watch(model):
            model(torch.randn(2, 8)).sum().backward()
            raise KeyError("the user's own bug")
    assert no_global_hooks_left()


def test_bad_arguments_are_clear():
    with pytest.raises(TypeError, match="expected a torch.nn.Module"):
        doctor.watch("model")
    with pytest.raises(TypeError, match="optimizer must be a torch.optim.Optimizer"):
        doctor.watch(FunctionalNet(), optimizer=[1, 2])


class SqrtFeatures(nn.Module):
    """sqrt of a squared distance: where the distance is exactly 0, sqrt's derivative 1/(2 sqrt 0) is infinite
    and the backward pass makes NaN (0 x inf). `guarded` wraps it in torch.where, which does not help."""

    def __init__(self, guarded):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.guarded = guarded

    def forward(self, x, poison):
        d2 = (self.fc(x) ** 2).sum(1) * (0.0 if poison else 1.0)
        if self.guarded:
            return torch.where(d2 > 0, torch.sqrt(d2), torch.zeros_like(d2)).mean()
        return torch.sqrt(d2).mean()


def train_sqrt(guarded, every, poison_step=5, steps=10):
    torch.manual_seed(0)
    model = SqrtFeatures(guarded)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 4)
    with doctor.watch(model, optimizer, every=every) as dr:
        for step in range(steps):
            loss = model(x, poison=step == poison_step)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return [f for f in dr.findings if f.symptom == "nonfinite"]


def test_a_backward_nan_on_a_sampled_step_is_named_exactly():
    [finding] = train_sqrt(guarded=True, every=5, poison_step=6)  # sampled: 0, then 6 (one later in each run of 5)
    assert (finding.where, finding.first_step, finding.evidence["phase"]) == ("sqrt", 6, "backward")
    assert finding.evidence["through_where"] is True and finding.evidence["exact"] is True


def test_a_backward_nan_at_acos_of_a_cosine_clamped_to_1_is_explained_with_acos_own_derivative():
    """An angular loss, acos(clamp(cos, -1, 1)), between a vector and itself: cos = 1 exactly, where acos'(x) =
    -1/sqrt(1 - x^2) is infinite. It was explained with log's and sqrt's derivatives (sweep 22, f12)."""
    torch.manual_seed(0)
    model = nn.Linear(4, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 4)
    with doctor.watch(model, optimizer, every=1) as dr:
        for _ in range(3):
            z = model(x)
            cosine = nn.functional.cosine_similarity(z, z.detach(), dim=1)
            loss = torch.acos(cosine.clamp(-1, 1)).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    [f] = [f for f in dr.findings if f.symptom == "nonfinite"]
    assert (f.where, f.evidence["phase"]) == ("acos", "backward")
    assert "acos(x) = -1/sqrt(1 - x^2)" in f.explanation and "sqrt(x) = 1/(2 sqrt(x))" not in f.explanation
    assert any("strictly inside (-1, 1)" in r for r in f.remedies)


def test_a_weight_binarised_with_sign_is_named_on_that_weight():
    """sign(W) in a binarised layer, with no straight-through estimator: the blocked sign was placed 'after input'
    (no module's output feeds it), and the two binarised layers' signs were merged into one site (sweep 22, f10)."""

    class BinaryLinear(nn.Linear):
        def forward(self, v):
            return nn.functional.linear(v, torch.sign(self.weight) * self.weight.abs().mean(), self.bias)

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), BinaryLinear(16, 16), nn.ReLU(), nn.Linear(16, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    x, labels = torch.randn(32, 8), torch.randint(0, 2, (32,))
    with doctor.watch(model, optimizer, every=1, name="model") as dr:
        for _ in range(6):
            loss = nn.functional.cross_entropy(model(x), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    [f] = [f for f in dr.findings if f.symptom == "blocked_gradient"]
    assert (f.where, f.evidence["site"], f.severity) == ("sign", "on model.2.weight", "error")
    assert "applied to the weight `model.2.weight`" in f.explanation and "straight-through" in f.remedies[0]


@pytest.mark.parametrize("threshold", ["sign(z) * relu(|z| - theta)", "sign(z) * clamp(|z| - theta, min=0)"])
def test_a_soft_threshold_written_with_sign_is_no_blocked_gradient(threshold):
    """Soft thresholding (LISTA, a sparse coder's shrinkage) multiplies sign(z) by a magnitude computed from z itself:
    the derivative reaches z through that factor, and the sign's zero derivative is no leak. Sweep 29's LISTA was an
    error blocked_gradient at `sign`; a binarised weight times its mean magnitude (above) still is one."""

    class Shrink(nn.Module):
        def __init__(self):
            super().__init__()
            self.theta = nn.Parameter(torch.tensor(0.1))

        def forward(self, z):
            if threshold.startswith("sign(z) * relu"):
                return torch.sign(z) * torch.relu(z.abs() - self.theta)
            return torch.sign(z) * torch.clamp(z.abs() - self.theta, min=0)

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), Shrink(), nn.Linear(16, 2))
    assert blocked_findings(model) == []


def test_a_binarised_weight_times_its_rows_mean_magnitude_expanded_is_still_blocked():
    """XNOR-Net's `sign(W) * |W|.mean(1, keepdim=True).expand_as(W)`: expanded to the sign's shape, the scale is still
    one number per row, and the signs never learn (the review of stop 28: the soft-threshold exemption took it)."""
    [f] = blocked_findings(quantised_model(lambda w: torch.sign(w) * w.abs().mean(1, keepdim=True).expand_as(w)))
    assert (f.where, f.evidence["site"]) == ("sign", "on model.2.weight")


def quantised_model(quantise):
    class QuantisedLinear(nn.Linear):
        def forward(self, v):
            return nn.functional.linear(v, quantise(self.weight), self.bias)

    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), QuantisedLinear(16, 16), nn.ReLU(), nn.Linear(16, 2))


def blocked_findings(model, extra_parameters=(), steps=6):
    optimizer = torch.optim.SGD([*model.parameters(), *extra_parameters], lr=0.05)
    x, labels = torch.randn(32, 8), torch.randint(0, 2, (32,))
    with doctor.watch(model, optimizer, every=1, name="model") as dr:
        for _ in range(steps):
            loss = nn.functional.cross_entropy(model(x), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return [f for f in dr.findings if f.symptom == "blocked_gradient"]


@pytest.mark.parametrize(
    "quantise",
    [
        lambda w: torch.sign(w) - w.detach() + w,  # straight-through, written around the op
        lambda w: torch.round(w * 8) / 8 - w.detach() + w,
        lambda w: w + (torch.round(w * 8) / 8 - w).detach(),  # (the textbook form: the op is out of the graph)
    ],
)
def test_a_quantised_weight_with_a_straight_through_estimator_is_not_blocked(quantise):
    """`sign(W) - W.detach() + W` passes the gradient to W as if sign were the identity: an error blocked_gradient
    was raised on it (before this stop too), and this stop's wording said the weight never changes (the review)."""
    assert blocked_findings(quantised_model(quantise)) == []


def test_a_weight_quantised_through_a_scale_is_named_on_that_weight():
    [f] = blocked_findings(quantised_model(lambda w: torch.round(w * 8) / 8))
    assert (f.where, f.evidence["site"]) == ("round", "on model.2.weight")  # (was 'after input': the review)


def test_a_learnable_scalar_held_in_its_range_is_no_blocked_gradient():
    """CLIP clamps its learnable temperature's log at ln 100: once there, the clamp passes no gradient to it, by
    design. It was an error blocked_gradient at `clamp` (the review)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    log_scale = nn.Parameter(torch.tensor(5.0))

    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.net, self.log_scale = model, log_scale

        def forward(self, v):
            return self.net(v) * self.log_scale.clamp(max=4.6052).exp()

    assert blocked_findings(Scaled()) == []


def test_a_backward_nan_on_an_unsampled_step_is_bounded_by_the_next_loss():
    [finding] = train_sqrt(guarded=False, every=100)  # the NaN weights make the next loss NaN
    assert (finding.where, finding.first_step) == ("fc", 5)
    assert finding.evidence["phase"] == "update" and finding.evidence["exact"] is False
    assert "fc.weight" in finding.evidence["parameters"]
    assert "--every 1" in finding.explanation


def test_nan_weights_hidden_from_the_loss_are_found_at_the_next_sampled_step():
    # sampled steps 0, 5, 10: the NaN of step 6 is in no sampled backward; where hides the NaN weights from the
    # loss (0 forever); step 10 finds them
    [finding] = train_sqrt(guarded=True, every=4, poison_step=6, steps=12)
    assert (finding.where, finding.first_step, finding.evidence["phase"]) == ("fc", 10, "update")
    assert "finite after sampled step 5 and non-finite when step 10 began" in finding.evidence["detail"]


class LogHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return torch.log(torch.relu(self.fc(x)))  # log(0) = -inf wherever the ReLU is off


def test_a_forward_inf_inside_a_module_names_the_op_and_the_layer():
    torch.manual_seed(0)
    model = LogHead()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with doctor.watch(model, optimizer, every=100) as dr:  # not a sampled step: found from the graph alone
        for _ in range(3):
            loss = model(torch.randn(16, 4)).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    [finding] = [f for f in dr.findings if f.symptom == "nonfinite"]
    assert (finding.where, finding.first_step) == ("log", 0)
    assert finding.evidence["phase"] == "forward" and finding.evidence["exact"] is True
    assert finding.evidence["module"] == "fc" and finding.evidence["value"] == "-inf"
    assert "(after `fc`)" in finding.explanation


def test_a_nan_from_outside_the_graph_is_not_blamed_on_a_square_and_a_fractional_power_is_named():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    with doctor.watch(model, optimizer, every=100) as dr:
        for _ in range(3):
            loss = ((model(x) - y) ** 2).mean() + torch.log(torch.tensor(-1.0))  # a NaN constant, no gradient
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    [finding] = [f for f in dr.findings if f.symptom == "nonfinite"]
    assert finding.where != "pow" and finding.evidence["exact"] is False  # (it said: nan at pow, from finite inputs)
    assert "from outside the graph" in finding.explanation and "epsilon inside the root" not in str(finding.remedies)
    with doctor.watch(model, optimizer, every=100) as dr:
        loss = (model(x) - 5).pow(0.5).mean()  # sqrt of negative outputs: NaN born at pow
        optimizer.zero_grad()
        loss.backward()
    [finding] = [f for f in dr.findings if f.symptom == "nonfinite"]
    assert finding.where == "pow"


class DoubledSkips(nn.Module):
    """Residual blocks that return x + f(x), to which the forward adds x once more: 2x + f(x) per block."""

    def __init__(self, doubled, width=32, blocks=12):
        super().__init__()
        self.doubled = doubled
        self.inp, self.out = nn.Linear(8, width), nn.Linear(width, 3)
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(width, width), nn.ReLU()) for _ in range(blocks))

    def forward(self, x):
        h = self.inp(x)
        for block in self.blocks:
            h = h + block(h) + (h if self.doubled else 0)
        return self.out(h)


@pytest.mark.parametrize("doubled", [True, False])
def test_a_nan_within_a_few_steps_of_a_network_that_amplifies_from_the_start_is_not_blamed_on_the_learning_rate(
    doubled,
):
    """A skip connection added twice: NaN at step 2, with one finite sampled step before it, too few for the depth
    rule. The NaN's explanation blamed the learning rate (the loss grew before it); the first record already showed
    the gradient 2.5e3 times larger at the input end."""
    torch.manual_seed(0)
    model = DoubledSkips(doubled)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = data()
    with doctor.watch(model, optimizer, every=16) as dr:
        for _ in range(20):
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    nonfinite = [f for f in dr.findings if f.symptom == "nonfinite"]
    if not doubled:
        assert nonfinite == []
        return
    [f] = nonfinite
    assert f.evidence["depth_ratio_before"] > 1e3 and f.evidence["depth_measured_at_step"] == 0
    assert "not the learning rate" in f.explanation and "a skip added twice" in f.remedies[0]
    assert not f.remedies[0].startswith("Lower the learning rate")


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_an_exp_that_overflows_float16_is_named_not_the_matmul_before_it(dtype):
    """A hand-written softmax computed in float16: exp(z) is inf past z = 11.1, then inf / inf = NaN. The finding
    named the float32 `addmm` before the cast, the first operation that could have made a NaN."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = 4 * torch.randn(32, 8), torch.randint(0, 3, (32,))
    with doctor.watch(model, optimizer, every=100) as dr:
        for _ in range(3):
            scores = (model(x) * 20).to(dtype)
            p = torch.exp(scores) / torch.exp(scores).sum(dim=1, keepdim=True)
            loss = -torch.log(p[torch.arange(32), y]).float().mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    nonfinite = [f for f in dr.findings if f.symptom == "nonfinite"]
    if dtype == torch.float32:
        assert nonfinite == []
        return
    [f] = nonfinite
    assert (f.where, f.evidence["half_precision_overflow"]) == ("exp", True)
    assert "float16's largest number is 65504" in f.explanation and "in float32" in f.remedies[0]


@pytest.mark.parametrize("every", [1, 100])
def test_a_masked_mean_over_a_batch_whose_mask_is_all_zero_is_a_nan_made_by_the_division(every):
    """`(error * mask).sum() / mask.sum()` on a batch without a labelled example: 0 / 0. The finding named the
    product before it (`mul`, the first operation that could make a NaN), the division only among the candidates."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    with doctor.watch(model, optimizer, every=every) as dr:
        for step in range(3):
            mask = torch.zeros(16, 1) if step == 1 else (torch.arange(16) % 2).float().reshape(16, 1)
            loss = ((model(x) - y) ** 2 * mask).sum() / mask.sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    [finding] = [f for f in dr.findings if f.symptom == "nonfinite"]
    assert (finding.where, finding.first_step, finding.evidence["exact"]) == ("div", 1, True)
    assert "from finite inputs" in finding.explanation and "Dividing by zero" in finding.explanation


@pytest.mark.parametrize("every", [1, 100])
def test_a_nan_in_the_data_is_named_where_it_entered_not_at_the_layer_that_read_it(every):
    """One missing value in a batch: the first layer's matmul read it. The finding said `addmm` made NaN (or one of
    t, addmm, relu), and pointed to --every 1 and detect_anomaly, which name the same addmm."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 8), torch.randn(32, 1)
    with doctor.watch(model, optimizer, every=every) as dr:
        for step in range(3):
            batch = x.clone()
            if step == 1:
                batch[3, 2] = float("nan")  # a missing value in a CSV column, say
            loss = nn.functional.mse_loss(model(batch), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    [finding] = [f for f in dr.findings if f.symptom == "nonfinite"]
    assert (finding.where, finding.first_step, finding.evidence["phase"]) == ("input of sequential.0", 1, "input")
    assert "No operation of the model made it" in finding.explanation
    assert any("torch.isfinite(x).all()" in r for r in finding.remedies)
    assert not any("--every 1" in r for r in finding.remedies)


class CosineHead(nn.Module):
    """Sweep 42's classifier: features and class weights normalised, logits 64 cos (a CosFace-style head)."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64))
        self.W = nn.Parameter(torch.randn(10, 64) * 0.1)

    def forward(self, x):
        return 64 * nn.functional.normalize(self.body(x), dim=1) @ nn.functional.normalize(self.W, dim=1).t()


@pytest.mark.parametrize(("every", "stable"), [(1, False), (16, False), (16, True)])
def test_a_log_of_a_softmax_is_named_beside_the_nan_it_makes(every, stable):
    """Sweep 42's digits run: `torch.log(F.softmax(z))` turns NaN once a probability rounds to 0 (step 4). With
    statistics every step the backward NaN is placed at `log`; at the default it came from a step not sampled, and
    the finding only said to rerun with --every 1. The log of a softmax seen on the sampled steps is now named, with
    log_softmax first among the remedies. Written with log_softmax, it trains."""
    from sklearn.datasets import load_digits

    torch.manual_seed(0)
    x, y = load_digits(return_X_y=True)
    x, y = torch.tensor(x[:640] / 16.0, dtype=torch.float32), torch.tensor(y[:640])
    model = CosineHead()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    with doctor.watch(model, optimizer, every=every) as dr:
        for step in range(30):
            batch = slice(64 * (step % 10), 64 * (step % 10 + 1))
            logits = model(x[batch])
            log_p = nn.functional.log_softmax(logits, 1) if stable else torch.log(nn.functional.softmax(logits, 1))
            loss = nn.functional.nll_loss(log_p, y[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    nonfinite = [f for f in dr.findings if f.symptom == "nonfinite"]
    if stable:
        assert nonfinite == []
        return
    [finding] = nonfinite
    assert finding.evidence["phase"] == ("backward" if every == 1 else "update") and finding.first_step > 0
    assert finding.evidence["log_of_probabilities"] == {"log": "log", "of": "softmax", "at": "the loss"}
    assert "take `log` of a softmax's output (in the loss)" in finding.explanation
    assert finding.remedies[0].startswith("Replace `torch.log(F.softmax(z, dim))` with `F.log_softmax(z, dim)`")


def test_a_hand_written_binary_cross_entropy_is_told_that_one_minus_p_rounds_to_zero():
    """Sweep 45's breast-cancer MLP: `where(y == 1, -log(p), -log(1 - p))` with p = sigmoid(z). Its NaN came from
    log(1 - p), p rounding to exactly 1 at a logit of 17.8; the text said a probability rounds to 0 once its logit
    trails by about 100, and `binary_cross_entropy_with_logits` was not offered. Both are told now."""
    torch.manual_seed(0)
    x = torch.randn(256, 8) * 30  # (unscaled features: logits of several tens from the first steps)
    y = (x[:, 0] > 0).float()
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with doctor.watch(model, optimizer, every=1) as dr:
        for _ in range(30):
            p = torch.sigmoid(model(x)[:, 0])
            loss = torch.where(y == 1, -torch.log(p), -torch.log(1 - p)).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    [f] = [f for f in dr.findings if f.symptom == "nonfinite"]
    assert f.evidence["log_of_probabilities"]["of"] == "sigmoid"
    assert "rounds to exactly 1 once its logit passes about 17" in f.explanation
    assert "F.binary_cross_entropy_with_logits(z, y)" in f.remedies[0]


def _angular_regression(margin: float):
    """Sweep 44's angular regression: a tanh MLP predicts a direction, trained on the angle to its target,
    `acos(cos.clamp(-1 + margin, 1 - margin))`. Returns (model, optimizer, train_step)."""
    torch.manual_seed(0)
    mixing = torch.randn(6, 3)
    x = torch.randn(4096, 6)
    directions = nn.functional.normalize(x @ mixing + 0.3 * torch.tanh(x[:, :3]), dim=1)
    model = nn.Sequential(nn.Linear(6, 128), nn.Tanh(), nn.Linear(128, 128), nn.Tanh(), nn.Linear(128, 3))
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)

    def train_step() -> torch.Tensor:
        batch = torch.randint(0, 4096, (256,))
        cosine = (nn.functional.normalize(model(x[batch]), dim=1) * directions[batch]).sum(1)
        loss = torch.acos(cosine.clamp(-1.0 + margin, 1.0 - margin)).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    return model, optimizer, train_step


def _first_nonfinite_gradient_step(margin: float, steps: int) -> int | None:
    """The step whose gradient first holds a NaN, in a run without the doctor (it depends on the CPU's float32
    kernels: step 45 on one machine, 77 on another), or None."""
    model, _, train_step = _angular_regression(margin)
    for step in range(steps):
        train_step()
        if not all(torch.isfinite(p.grad).all() for p in model.parameters()):
            return step
    return None


@pytest.mark.parametrize(("every", "margin"), [(1, 0.0), (16, 0.0), (16, 1e-6)])
def test_an_angle_through_acos_of_a_cosine_clamped_to_one_is_named_beside_the_nan_it_makes(every, margin):
    """Sweep 44's angular regression: `torch.acos(cos.clamp(-1.0, 1.0))`, the usual guard, keeps the forward finite,
    but once a prediction's direction matches its target to float32's precision the cosine is exactly 1, where acos's
    derivative is infinite: NaN from then on. At the default the NaN came from a step not sampled, and the finding said
    to rerun with --every 1. The clamp to the edge seen on the sampled steps is now named, its remedy first. Clamped
    a little inside, it trains."""
    steps = 200
    nan_step = _first_nonfinite_gradient_step(margin, steps)
    if margin:
        assert nan_step is None
    else:
        assert nan_step is not None, (
            f"the cosine never reached exactly 1 in {steps} steps: the setup no longer shows it"
        )
        steps = nan_step + 15
    model, optimizer, train_step = _angular_regression(margin)
    with doctor.watch(model, optimizer, every=every) as dr:
        for _ in range(steps):
            loss = train_step()
    nonfinite = [f for f in dr.findings if f.symptom == "nonfinite"]
    if margin:
        assert nonfinite == [] and math.isfinite(loss.item())
        return
    [finding] = nonfinite
    assert finding.first_step == nan_step
    sampled = nan_step % every == (nan_step // every) % every
    if sampled:  # (found at the operation itself, with the remedy of the clamp inside)
        assert finding.where == "acos" and finding.evidence["exact"]
        assert any("A clamp to [-1, 1] is not enough" in remedy for remedy in finding.remedies)
        return
    assert finding.evidence["phase"] == "update" and not finding.evidence["exact"]
    assert finding.evidence["clamped_to_the_edge"] == {"op": "acos", "bounds": [-1.0, 1.0], "at": "the loss"}
    assert "take `acos` of a value clamped to [-1, 1] (in the loss)" in finding.explanation
    assert finding.remedies[0].startswith("Clamp strictly inside (-1, 1): `torch.acos(c.clamp(-1 + 1e-6, 1 - 1e-6))`")


@pytest.mark.parametrize("tau_floor", [1e-4, 0.5])
def test_a_gumbel_softmax_annealed_to_a_tiny_temperature_is_a_blocked_gradient_at_its_softmax(tau_floor):
    """Sweep 44's discrete-code autoencoder: the Gumbel-softmax's temperature annealed to 1e-4, every row of the
    softmax exactly one-hot, the encoder's gradient exactly 0 on most steps (reconstruction MSE 0.072 against 0.031
    with the floor at 0.5). Nothing was said. The softmax's rows are read now: a blocked gradient at it, an error,
    with the temperature it was divided by. At a floor of 0.5, none."""
    torch.manual_seed(0)
    x = (torch.rand(512, 32) > 0.5).float()
    encoder = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4 * 8))
    decoder = nn.Sequential(nn.Linear(4 * 8, 64), nn.ReLU(), nn.Linear(64, 32))
    model = nn.ModuleDict({"encoder": encoder, "decoder": decoder})
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    with doctor.watch(model, optimizer, every=4) as dr:
        for step in range(240):
            tau = max(tau_floor, math.exp(-0.05 * step))
            batch = x[torch.randint(0, 512, (64,))]
            z = nn.functional.gumbel_softmax(encoder(batch).view(-1, 4, 8), tau=tau).view(-1, 32)
            loss = nn.functional.binary_cross_entropy_with_logits(decoder(z), batch)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    blocked = [f for f in dr.findings if "one_hot_rows" in f.evidence]
    if tau_floor == 0.5:
        assert blocked == []
        return
    [f] = blocked
    assert (f.symptom, f.severity) == ("blocked_gradient", "error") and f.where.startswith("softmax after encoder")
    assert f.evidence["one_hot_rows"] >= 0.9 and f.evidence["entries"] == 8 and f.evidence["divided_by"] == 1e-4
    assert "diag(p) - p p^T" in f.explanation and "hard=True" in f.remedies[0]


def test_a_fractional_power_of_a_negative_base_is_told_to_keep_the_base_positive():
    """Sweep 45: generalised-mean pooling written without its guard, `x.pow(p).mean().pow(1 / p)`, after a BatchNorm
    with no ReLU: the mean of cubes is negative for some channels and its cube root NaN, from step 0 (accuracy 0.08
    against 0.99). Named at `pow`, but the remedy was an epsilon inside the root, which does not make a negative base
    positive (tried: NaN again). The first of pow's remedies keeps the base positive now."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8))
    head = nn.Linear(8, 3)
    optimizer = torch.optim.Adam([*model.parameters(), *head.parameters()], lr=1e-3)
    x, y = torch.randn(32, 1, 8, 8), torch.randint(0, 3, (32,))
    with doctor.watch(nn.ModuleList([model, head])) as dr:
        for _ in range(4):
            pooled = model(x).pow(3.0).mean(dim=(2, 3)).pow(1.0 / 3.0)
            loss = nn.functional.cross_entropy(head(pooled), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    [f] = [f for f in dr.findings if f.symptom == "nonfinite"]
    assert (f.where, f.first_step) == ("pow", 0)
    keep_positive = [r for r in f.remedies if "x.clamp(min=1e-6).pow(p)" in r]
    assert keep_positive and not any("inside the root" in r for r in f.remedies)


@pytest.mark.parametrize("scaled", [False, True])
def test_a_nan_within_the_first_steps_from_unscaled_features_is_told_to_standardise_them(scaled):
    """Sweep 45: an MLP on polynomial features x, x^2, ..., x^8 of x in [0, 5], unscaled (the last column's root
    mean square 1e5), went to inf at `mse_loss` at step 1, told with "clip the gradient norm and lower the learning
    rate". The first Linear's input columns are measured on the first sampled steps now: an early NaN names them,
    with standardising as the first remedy. Standardised, it trains."""
    torch.manual_seed(0)
    x = torch.rand(256, 1) * 5
    features = torch.cat([x**k for k in range(1, 9)], 1)
    if scaled:
        features = (features - features.mean(0)) / features.std(0)
    y = torch.sin(1.5 * x) + 0.3 * x
    model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    with doctor.watch(model, optimizer) as dr:
        for _ in range(20):
            loss = nn.functional.mse_loss(model(features), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    nonfinite = [f for f in dr.findings if f.symptom == "nonfinite"]
    if scaled:
        assert nonfinite == []
        return
    [f] = nonfinite
    raw = f.evidence["inputs_unscaled"]
    assert f.first_step <= 3 and raw["largest_column_rms"] > 1e4 and raw["smallest_column_rms"] < 10
    assert f.remedies[0].startswith("Standardise the inputs per feature") and "not standardised" in f.explanation


class GaussianEncoder(nn.Module):
    """A VAE's encoder with a head for the mean and one for log sigma."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 32), nn.ReLU())
        self.mu, self.log_sigma = nn.Linear(32, 4), nn.Linear(32, 4)

    def forward(self, x):
        h = self.body(x)
        return self.mu(h), self.log_sigma(h)


@pytest.mark.parametrize("given", ["log_sigma as sigma", "sigma"])
def test_a_log_of_a_layers_raw_output_is_told_to_use_it_as_a_log_scale(given):
    """Sweep 45's VAE: `gaussian_kl(mu, log_sigma)` where `gaussian_kl(mu, sigma)` takes sigma, so its
    `torch.log(sigma)` is the log of a linear head's raw output, negative for about half of it: NaN from step 0.
    Named at `log`, with `log(x.clamp_min(1e-12))` for a remedy, which hid the NaN and left the KL wrong (-ELBO 44.6
    against 25.8). The log reads the layer's output as it made it: the first remedy is to use it as a log-scale."""
    torch.manual_seed(0)
    encoder = GaussianEncoder()
    optimizer = torch.optim.Adam(encoder.parameters(), lr=1e-3)
    x = torch.randn(64, 16)
    with doctor.watch(encoder, optimizer) as dr:
        for _ in range(4):
            mu, log_sigma = encoder(x)
            sigma = log_sigma if given == "log_sigma as sigma" else log_sigma.exp()
            loss = (-torch.log(sigma) + 0.5 * (sigma**2 + mu**2) - 0.5).sum(1).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    nonfinite = [f for f in dr.findings if f.symptom == "nonfinite"]
    if given == "sigma":
        assert nonfinite == []
        return
    [f] = nonfinite
    assert (f.where, f.first_step) == ("log", 0) and f.evidence["raw_layer_output"].endswith("log_sigma")
    assert "`sigma = out.exp()`" in f.remedies[0] and "output as that layer made it" in f.explanation


class DeepKernelGP(nn.Module):
    """Exact GP regression on a learnt feature map (deep kernel learning), its marginal likelihood written out."""

    def __init__(self, jitter: float):
        super().__init__()
        self.feat = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 2))
        self.log_lengthscale = nn.Parameter(torch.zeros(()))
        self.jitter = jitter

    def forward(self, x, y):
        f = self.feat(x)
        K = torch.exp(-0.5 * torch.cdist(f, f) ** 2 / self.log_lengthscale.exp() ** 2)
        K = K + self.jitter * torch.eye(len(x))
        return 0.5 * (y @ torch.linalg.inv(K) @ y + torch.logdet(K)) / len(y)


@pytest.mark.parametrize("jitter", [0.0, 1e-2])
def test_the_logdet_of_a_kernel_matrix_that_is_not_positive_definite_is_named(jitter):
    """Sweep 44's deep-kernel GP: the noise term left off the kernel matrix's diagonal. Its smallest eigenvalues
    round below 0, the determinant turns negative on some batches, and `torch.logdet` (slogdet, then NaN where the
    sign is -1) returns NaN. Told as a NaN at `mm` "or just before it", among mm, squeeze, dot, where, add, mul,
    div, with clipping remedies. Now named exactly as `logdet`, with the jitter and a Cholesky factor as the remedy."""
    torch.manual_seed(0)
    x = torch.linspace(-3, 3, 400).unsqueeze(1)
    y = (torch.sin(3 * x) + 0.3 * x).squeeze(1) + 0.05 * torch.randn(400)
    model = DeepKernelGP(jitter)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    with doctor.watch(model, optimizer) as dr:
        for _ in range(40):
            i = torch.randperm(400)[:128]
            loss = model(x[i], y[i])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    nonfinite = [f for f in dr.findings if f.symptom == "nonfinite"]
    if jitter:
        assert nonfinite == []
        return
    [f] = nonfinite
    assert (f.where, f.evidence["phase"], f.evidence["exact"]) == ("logdet", "forward", True)
    assert "not positive definite" in f.explanation and "torch.linalg.cholesky" in f.remedies[0]


def test_a_bound_that_rounds_to_one_in_float32_is_a_clamp_to_the_edge():
    """`c.clamp(-1 + 1e-8, 1 - 1e-8)` looks like a margin, but 1 - 1e-8 is 1.0 in float32: the same clamp to the edge.
    In float64 it is a margin, and not told."""
    for dtype, told in ((torch.float32, True), (torch.float64, False)):
        model = nn.Linear(3, 3).to(dtype)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        with doctor.watch(model, optimizer, every=1) as dr:
            for _ in range(3):
                x = torch.randn(16, 3, dtype=dtype)
                cosine = nn.functional.cosine_similarity(model(x), x, dim=1)
                loss = torch.asin(cosine.clamp(-1 + 1e-8, 1 - 1e-8)).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        seen = [r.clamped_to_the_edge for r in dr.history.records]
        assert seen == ([{"op": "asin", "bounds": [-1 + 1e-8, 1 - 1e-8], "at": "the loss"}] * 3 if told else [None] * 3)


class BatchStandardise(nn.Module):
    """A hand-written batch normalisation without its statistics' running averages, as in sweep 44's script."""

    def forward(self, h):
        return (h - h.mean(0)) / (h.std(0) + 1e-5)


@pytest.mark.parametrize("last_batch", [1, 2])
def test_a_standard_deviation_over_a_batch_of_one_is_told_so(last_batch):
    """Sweep 44's regression: `h.std(0)` in a hand-written batch normalisation, and 353 examples in batches of 32,
    the last of one example: std divides by N - 1 = 0, NaN from step 11. The finding named `std` with remedies for
    values that grow. It now names the single value and Bessel's correction, with drop_last first. A last batch of
    two trains."""
    torch.manual_seed(0)
    x = torch.randn(32 * 3 + last_batch, 10)
    y = x[:, :1] - x[:, 1:2]
    model = nn.Sequential(nn.Linear(10, 32), BatchStandardise(), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    with doctor.watch(model, optimizer, every=1) as dr, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (torch's own: "degrees of freedom is <= 0")
        for start in (0, 32, 64, 96) * 2:
            loss = nn.functional.mse_loss(model(x[start : start + 32]), y[start : start + 32])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    nonfinite = [f for f in dr.findings if f.symptom == "nonfinite"]
    if last_batch == 2:
        assert nonfinite == []
        return
    [finding] = nonfinite
    assert (finding.where, finding.first_step, finding.evidence["phase"]) == ("std", 3, "forward")
    assert finding.evidence["too_few_to_spread"] == {"values": 1, "correction": 1, "dims": [0]}
    assert "values - correction = 0" in finding.explanation and "a batch of one example" in finding.explanation
    assert finding.remedies[0].startswith("Never give it a batch of one: `DataLoader(..., drop_last=True)`")


class Standardise(nn.Module):
    """A hand-written "batch standardisation" input layer with no eps, as in sweep 42's script."""

    def forward(self, x):
        return (x - x.mean(0, keepdim=True)) / x.std(0, keepdim=True)


@pytest.mark.parametrize("every", [1, 16])
def test_a_nan_made_by_a_module_without_gradient_is_named_at_that_module(every):
    """A parameterless standardisation divides a feature constant in the batch by its standard deviation, 0: NaN.
    Its output has no gradient, so the graph reads it as data, and the finding said the data given to `model.1` were
    non-finite; it names the module that output it."""
    torch.manual_seed(0)
    model = nn.Sequential(Standardise(), nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 8), torch.randint(0, 3, (32,))
    x[:, 5] = 0.0  # (a pixel that is 0 in every image: the digits' corners)
    with doctor.watch(model, optimizer, every=every) as dr:
        for _ in range(3):
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    [finding] = [f for f in dr.findings if f.symptom == "nonfinite"]
    assert (finding.where, finding.first_step, finding.evidence["read_by"]) == ("sequential.0", 0, "sequential.1")
    assert "made by `sequential.0`, whose output has no gradient" in finding.explanation
    assert "x.std(0) + 1e-5" in finding.remedies[0]


def test_a_nan_in_the_data_passed_on_by_a_view_is_still_the_datas():
    """Flatten hands its input on as a view: a NaN in the batch was not made by it, and is told as the data's."""
    model = nn.Sequential(nn.Flatten(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(4, 2, 4)
    x[1, 0, 2] = float("nan")
    with doctor.watch(model, optimizer, every=1) as dr:
        loss = model(x).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    [finding] = [f for f in dr.findings if f.symptom == "nonfinite"]
    assert (finding.where, finding.evidence["read_by"]) == ("input of sequential.1", None)


@pytest.mark.parametrize("every", [1, 100])
def test_a_nonfinite_target_is_named_as_the_losss_target(every):
    """A regression on log(price) where some prices are 0: -inf in the targets of `mse_loss`. The finding named the
    input of the last layer, and the raw-targets warning fired on an infinite size, shown as "n/a" (sweep 33)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, price = torch.randn(32, 8), torch.rand(32, 1) * 100
    price[5] = 0.0  # (a free item)
    with doctor.watch(model, optimizer, every=every) as dr:
        for _ in range(3):
            loss = nn.functional.mse_loss(model(x), torch.log(price))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    [finding] = dr.findings
    assert (finding.symptom, finding.where, finding.first_step) == ("nonfinite", "target of mse_loss", 0)
    assert "in its targets" in finding.explanation and "log1p" in finding.remedies[0]


class CellLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.RNNCell(3, 8)
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        h = torch.zeros(x.shape[0], 8)
        for t in range(x.shape[1]):
            h = self.cell(x[:, t], h)
        return self.head(h)


def test_a_recurrent_cell_called_in_a_loop_gives_per_time_step_gradients():
    torch.manual_seed(0)
    model = CellLoop()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with doctor.watch(model, optimizer, every=1) as dr:
        for _ in range(3):
            loss = model(torch.randn(4, 12, 3)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    layer = dr.history.records[-1].layers["cell"]
    assert layer.recurrent and len(layer.time_grad_norms) == 12
    assert layer.time_grad_norms[0] < layer.time_grad_norms[-1]  # the gradient fades going back in time


def test_missing_zero_grad_is_seen_and_intentional_accumulation_is_not():
    x, y = data()
    model = FunctionalNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with doctor.watch(model, optimizer, every=2) as dr:
        train(model, optimizer, 10, x, y, zero_grad=False)
    assert [f.symptom for f in dr.findings] == ["accumulating_gradient"]
    assert dr.findings[0].evidence["steps_not_reset"] == dr.findings[0].evidence["steps_checked"]

    model = FunctionalNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with doctor.watch(model, optimizer, every=2) as dr:
        for _ in range(10):
            for _ in range(3):  # three micro-batches per step, on purpose
                nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=False)
    assert dr.findings == [] and dr.steps == 10


@pytest.mark.parametrize("reset, micro_batches", [(False, 1), (True, 1), (True, 3)])
def test_weights_updated_by_hand_without_resetting_their_gradients_are_accumulating(reset, micro_batches):
    """A learner's loop with no optimiser: `p -= lr * p.grad` and no `p.grad.zero_()`. Each update applies the sum of
    every gradient so far. It was told as a diverging loss (lower the learning rate) with growing gradients: the
    reset was checked only at an optimiser's step. Gradients accumulated by hand over micro-batches, then reset after
    the update, are not this."""
    x, y = data()
    model = FunctionalNet()
    with doctor.watch(model, every=2, name="net") as dr:
        for _ in range(30):
            for _ in range(micro_batches):
                nn.functional.cross_entropy(model(x), y).backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.2 * p.grad
                    if reset:
                        p.grad.zero_()
    if reset:
        assert dr.findings == [] and dr.history.reset_checks > 0
        return
    [f] = dr.findings  # (the growing gradients and the loss are its doing)
    assert (f.symptom, f.where, f.severity) == ("accumulating_gradient", "net", "error")
    assert f.evidence["updated_by_hand"] and f.evidence["steps_not_reset"] == f.evidence["steps_checked"] >= 10
    assert "p.grad = None" in f.remedies[0]


@pytest.mark.parametrize("zero_grad_inside", [True, False])
def test_gradients_reset_between_the_micro_batches_of_one_step_are_named(zero_grad_inside):
    """Gradient accumulation over 4 micro-batches, `loss / 4`, with `zero_grad()` at the top of the micro-batch loop:
    each step applies the last micro-batch's gradient alone. It was no finding."""
    x, y = data()
    model = FunctionalNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with doctor.watch(model, optimizer, every=2) as dr:
        for _ in range(16):
            for micro_batch in range(4):
                if zero_grad_inside or micro_batch == 0:
                    optimizer.zero_grad()
                (nn.functional.cross_entropy(model(x[micro_batch::4]), y[micro_batch::4]) / 4).backward()
            optimizer.step()
    named = [f for f in dr.findings if f.evidence.get("reset_between_backward_passes")]
    if not zero_grad_inside:
        assert named == [] and dr.findings == []
        return
    [f] = named
    assert (f.symptom, f.where, f.severity) == ("unapplied_gradient", "optimizer", "error")
    assert f.evidence["backward_passes_per_step"] == 4 and f.evidence["loss_divided_by"] == 4
    assert "once per optimiser step" in f.remedies[0]


STEP_PER_EPOCH_SCRIPT = """
import sys, torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
x = torch.randn(1280, 16)
y = (x[:, :3] > 0).long() @ torch.tensor([1, 2, 4])
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 8))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for epoch in range(25):
    for i in range(0, 1280, 32):
        optimizer.zero_grad()
        F.cross_entropy(model(x[i:i + 32]), y[i:i + 32]).backward()
        if sys.argv[1] == "fixed":
            optimizer.step()
    if sys.argv[1] == "dedented":
        optimizer.step()
"""


@pytest.mark.parametrize("step", ["dedented", "fixed"])
def test_a_step_once_per_epoch_in_a_short_run_is_named_at_the_default_sampling(tmp_path, step):
    """Sweep 44's digits MLP: `opt.step()` dedented out of the batch loop, 25 optimiser steps of 42 backward passes.
    At every 16 two steps were sampled, the first before `leakygrad doctor` had found the model: one counted, under
    the three `min_records`, and only the stall was told. Forty passes each after a reset are evidence enough now."""
    from leakygrad.doctor.runner import run_script

    script = tmp_path / "step_per_epoch.py"
    script.write_text(STEP_PER_EPOCH_SCRIPT)
    run = run_script(str(script), [step])
    assert run.exit_code == 0
    named = [f for f in run.doctor.findings if f.evidence.get("reset_between_backward_passes")]
    if step == "fixed":
        assert named == [] and [f for f in run.doctor.findings if f.severity == "error"] == []
        return
    [f] = named
    assert (f.symptom, f.where, f.severity) == ("unapplied_gradient", "optimizer", "error")
    assert f.evidence["backward_passes_per_step"] == 40 and f.evidence["sampled_steps"] < 3


@pytest.mark.parametrize(
    "loop",
    [
        "step_outside_the_loop",
        "step_outside_the_loop, clipped",
        "sam",
        "per_example_sums",
        "fgsm",
        "mgda",
        "a-gem",
    ],
)
def test_a_step_after_several_undivided_backward_passes_reset_between_them(loop):
    """`optimizer.step()` dedented out of the loop over batches, `zero_grad()` still before each `backward()`: each
    step applies the last batch's gradient alone and the other batches' are thrown away (clipped before the step or
    not). It was no finding (the losses are not divided, as gradient accumulation's are). Passes reset on purpose are
    not: SAM's two (the weights moved between them), per-example gradients clipped and summed by hand into `.grad`,
    FGSM's attack pass before the training pass (two passes), MGDA's per-task passes before the combined loss's (the
    losses differ: three or more passes of one loss are looked for). (Two passes were tried in stop 30, and dropped:
    A-GEM's memory pass and a validation gradient taken for a log look the same.)"""
    x, y = data()
    model = FunctionalNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with doctor.watch(model, optimizer, every=2) as dr:
        for _ in range(16):
            if loop.startswith("step_outside_the_loop"):
                for batch in range(4):
                    optimizer.zero_grad()
                    nn.functional.cross_entropy(model(x[batch::4]), y[batch::4]).backward()
                if loop.endswith("clipped"):
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            elif loop == "fgsm":
                attacked = x.clone().requires_grad_(True)
                nn.functional.cross_entropy(model(attacked), y).backward()
                optimizer.zero_grad()
                nn.functional.cross_entropy(model((attacked + 0.1 * attacked.grad.sign()).detach()), y).backward()
            elif loop == "a-gem":  # (the memory's gradient, then the batch's, projected only when they conflict)
                optimizer.zero_grad()
                nn.functional.cross_entropy(model(x[:8]), y[:8]).backward()
                memory = [p.grad.clone() for p in model.parameters()]
                optimizer.zero_grad()
                nn.functional.cross_entropy(model(x[8:]), y[8:]).backward()
                dot = sum((p.grad * m).sum() for p, m in zip(model.parameters(), memory))
                if dot < 0:
                    squared = sum((m * m).sum() for m in memory)
                    for p, m in zip(model.parameters(), memory):
                        p.grad -= dot / squared * m
            elif loop == "mgda":
                losses = [nn.functional.cross_entropy(model(x), y), nn.functional.mse_loss(model(x)[:, 0], x[:, 0])]
                for task in losses:
                    optimizer.zero_grad()
                    task.backward(retain_graph=True)
                optimizer.zero_grad()
                (0.5 * losses[0] + 0.5 * losses[1]).backward()
            elif loop == "sam":
                optimizer.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                with torch.no_grad():
                    moves = [0.05 * p.grad / (p.grad.norm() + 1e-12) for p in model.parameters()]
                    for p, move in zip(model.parameters(), moves):
                        p.add_(move)
                optimizer.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                with torch.no_grad():
                    for p, move in zip(model.parameters(), moves):
                        p.sub_(move)
            else:
                sums = [torch.zeros_like(p) for p in model.parameters()]
                for i in range(4):
                    optimizer.zero_grad()
                    nn.functional.cross_entropy(model(x[i : i + 1]), y[i : i + 1]).backward()
                    for total, p in zip(sums, model.parameters()):
                        total += p.grad / max(1.0, p.grad.norm().item())
                for total, p in zip(sums, model.parameters()):
                    p.grad = total / 4
            optimizer.step()
    named = [f for f in dr.findings if f.evidence.get("reset_between_backward_passes")]
    if not loop.startswith("step_outside_the_loop"):
        assert named == []
        return
    [f] = named
    assert (f.symptom, f.where, f.severity) == ("unapplied_gradient", "optimizer", "error")
    assert f.evidence["backward_passes_per_step"] == 4 and "loss_divided_by" not in f.evidence
    assert "inside the loop" in f.remedies[0] and "dedented" in f.explanation
    assert "the other 3 batches' gradients are" in f.explanation


class ScaledSigmoidStack(nn.Module):
    """A deep sigmoid stack inside a model that holds a parameter of its own (a temperature on the output)."""

    def __init__(self):
        super().__init__()
        layers = []
        for i in range(10):
            layers += [nn.Linear(16 if i == 0 else 32, 32), nn.Sigmoid()]
        self.net = nn.Sequential(*layers, nn.Linear(32, 4))
        self.temperature = nn.Parameter(torch.ones(()))

    def forward(self, x):
        return self.net(x) * self.temperature


def test_a_model_with_a_parameter_of_its_own_is_at_the_output_end_of_the_depth_chain():
    """A model that holds a parameter beside its layers was placed at the input end of the chain, because its forward
    starts first, though its output is made last: the loss's own gradient at "the input" hid a gradient vanishing
    through ten sigmoids (no finding), and in a sweep's capsule network gave an exploding-gradient error."""
    x, _ = data(n=256, features=16)
    y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
    torch.manual_seed(0)
    model = ScaledSigmoidStack()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    with doctor.watch(model, optimizer, every=4) as dr:
        train(model, optimizer, 100, x, y)
    [f] = [f for f in dr.findings if f.symptom == "vanishing_gradient"]
    assert (f.where, f.severity) == ("net.0", "error")
    assert f.evidence["input_layer"] == "net.0" and f.evidence["output_layer"] == "scaledsigmoidstack"


class ReturnsItsLoss(nn.Module):
    """A healthy MLP whose model holds a parameter of its own (a logit scale) and returns the loss itself."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))
        self.scale = nn.Parameter(torch.ones(()))

    def forward(self, x, y):
        return nn.functional.cross_entropy(self.body(x) * self.scale, y)


def test_a_model_that_returns_its_loss_is_not_the_output_end_of_the_depth_chain():
    """`forward(x, y) -> loss` in a model with a parameter of its own: its output is the loss, whose gradient is
    d loss / d loss = 1, so placed at the output end it made every layer's gradient look vanished (a review's repro:
    a warning at ratio 1e-4). A module that returns one number is no layer of the chain."""
    x, _ = data(n=256, features=16)
    y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
    torch.manual_seed(0)
    model = ReturnsItsLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    with doctor.watch(model, optimizer, every=4) as dr:
        for _ in range(100):
            loss = model(x, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert dr.findings == []
    assert "returnsitsloss" not in dr.history.records[-1].layers or (
        dr.history.records[-1].layers["returnsitsloss"].out_grad_norm is None
    )


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU())
        self.classes = nn.Linear(32, 4)
        self.decoder = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 16))

    def forward(self, x):
        h = self.trunk(x)
        return self.classes(h), self.decoder(h)


@pytest.mark.parametrize("weight", [1e-3, 1e-4])
def test_a_lightly_weighted_second_head_called_last_is_not_the_output_end_of_the_chain(weight):
    """A classifier with a reconstruction head called after its class head, under a lightly weighted loss: the
    decoder's output gets a small gradient, and as the last layer called it was taken for the output end, so the
    trunk's gradient looked 700 (6,900) times larger than the output's: an exploding-gradient warning (error). The
    chain now ends at the head whose output the loss leans on most."""
    x, _ = data(n=256, features=16)
    y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
    torch.manual_seed(0)
    model = TwoHeads()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    with doctor.watch(model, optimizer, every=4) as dr:
        for _ in range(200):
            logits, reconstruction = model(x)
            loss = nn.functional.cross_entropy(logits, y) + weight * nn.functional.mse_loss(reconstruction, x)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert dr.findings == []
    assert dr.history.records[-1].layers_read_by_loss == ["classes", "decoder.2"]


def test_history_stays_bounded_over_a_long_run():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    with doctor.watch(model, optimizer, every=2) as dr:
        for _ in range(3000):
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    history = dr.history
    assert history.steps == 3000 and history.records_seen == 1500
    assert len(history.records) <= history.max_records and len(history.loss.buckets) <= history.loss.max_buckets
    assert math.isfinite(history.loss.buckets[-1].mean)


def test_nothing_is_kept_alive_after_the_run():
    """Hooks on autograd nodes point back to the step's state; that state must let go of the nodes, or each
    sampled step's graph (and the whole doctor) would leak through a cycle the garbage collector cannot see."""
    import gc

    from leakygrad.doctor.doctor import Doctor

    def alive(kind):
        gc.collect()
        return sum(1 for o in gc.get_objects() if type(o) is kind or issubclass(type(o), kind))

    before = alive(torch_probe.StepState), alive(Doctor), alive(torch.autograd.graph.Node)
    model = FunctionalNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = data()
    with doctor.watch(model, optimizer, every=1) as dr:
        train(model, optimizer, 12, x, y)
    assert dr.history.records_seen == 12
    del dr
    after = alive(torch_probe.StepState), alive(Doctor), alive(torch.autograd.graph.Node)
    assert after[:2] == before[:2]
    assert after[2] <= before[2] + 2  # no graph of any past step survives


def test_a_watched_op_with_an_infinite_derivative_keeps_nothing_alive():
    """The NaN check hooks the node of each op whose derivative can be infinite (sqrt here). A hook that held that
    node would make a cycle through PyTorch's C++ graph, which Python's collector cannot free: the node, the
    graph behind it and the whole doctor would outlive the run."""
    import gc
    import weakref

    def run():
        torch.manual_seed(0)
        model = nn.Linear(4, 4)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        x = torch.randn(8, 4)
        with doctor.watch(model, optimizer, every=1) as dr:
            for _ in range(3):
                loss = torch.sqrt((model(x) ** 2).sum(1) + 1).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        assert dr.history.records_seen == 3
        return weakref.ref(dr)

    watched = run()
    gc.collect()
    assert watched() is None


def test_deferred_statistics_read_the_same_in_place_joined_and_by_group():
    """On the CPU numbers are read where they are; on a GPU they are joined and copied to the host in one transfer
    (or one per device, for a model split across several). All three give the same numbers, and the same flags:
    one byte per entry, 1 where it is > 0 (a NaN is no)."""
    from leakygrad.doctor.probes.torch_stats import Deferred, Fetch, HostCopy

    def joined(deferred):  # the GPU's path (on the CPU, a HostCopy copies at once)
        fetch = Fetch(copy=HostCopy(deferred._joined()), split=deferred._split)
        assert fetch.ready()
        return fetch.result()

    def by_group(deferred):
        return deferred._fetch_by_group(deferred._vectors + deferred._flags)

    def filled():
        deferred = Deferred()
        deferred.scalar(torch.tensor(1.5))
        deferred.scalars([torch.tensor(2.0), torch.tensor(float("nan"))])
        deferred.vector(torch.tensor([0.25, -1.0, 3.0]))
        deferred.flags(torch.tensor([0.0, 2.0, float("nan"), -0.0, 7.0]))
        deferred.flags(torch.tensor([1.0, 0.0], dtype=torch.float16))
        return deferred

    for scalars, vectors, flags in (filled().fetch(), joined(filled()), by_group(filled())):
        assert scalars[:2] == [1.5, 2.0] and math.isnan(scalars[2])
        assert vectors[0].tolist() == [0.25, -1.0, 3.0]
        assert flags == [b"\x00\x01\x00\x00\x01", b"\x01\x00"]


class NextValueGRU(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(1, 32, batch_first=True)
        self.head = nn.Linear(32, 1)

    def forward(self, x):
        return self.head(self.gru(x)[0][:, -1])


def test_huge_but_finite_gradients_are_not_called_non_finite():
    """SGD at 100x the learning rate: gradients and weights grow past 1e19 (their float32 norms overflow to inf)
    while every entry stays finite; the first non-finite number is a loss, in the forward pass."""
    torch.manual_seed(0)
    model, generator = NextValueGRU(), torch.Generator().manual_seed(1)
    optimizer = torch.optim.SGD(model.parameters(), lr=30.0)
    losses, largest_gradient = [], []
    with doctor.watch(model, optimizer, every=1) as dr:
        for _ in range(10):
            sequence = torch.sin(torch.rand(64, 1, generator=generator) * 6.28 + torch.arange(21) * 0.3)
            sequence = sequence + 0.05 * torch.randn(64, 21, generator=generator)
            loss = nn.functional.mse_loss(model(sequence[:, :20, None]), sequence[:, 20:])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            largest_gradient.append(max(p.grad.abs().max().item() for p in model.parameters()))
    first_inf = next(step for step, loss in enumerate(losses) if not math.isfinite(loss))
    assert max(largest_gradient[:first_inf]) > 1e20 and all(map(math.isfinite, largest_gradient[: first_inf + 1]))
    nonfinite = [(f.first_step, f.evidence["phase"]) for f in dr.findings if f.symptom == "nonfinite"]
    assert nonfinite == [(first_inf, "forward")]


class PackedRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(2, 8, batch_first=True)

    def forward(self, x, lengths):
        return self.rnn(nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True))[1].sum()


def test_a_packed_sequence_is_measured_at_each_time_step():
    torch.manual_seed(0)
    model, x, lengths = PackedRNN(), torch.randn(3, 6, 2), torch.tensor([6, 4, 2])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    with doctor.watch(model, optimizer, every=1) as dr:
        model(x, lengths).backward()
        optimizer.step()
    measured = dr.history.records[-1].layers["rnn"].time_grad_norms
    # by hand: each step's input gradient, scaled to the whole batch by sqrt(3 / the sequences still running)
    x.requires_grad_(True)
    model(x, lengths).backward()
    running = (torch.arange(6)[None, :] < lengths[:, None]).sum(0)
    expected = x.grad.square().sum(dim=(0, 2)).mul(3 / running).sqrt()
    assert measured == pytest.approx(expected.tolist(), rel=1e-5)


def test_a_bidirectional_layer_is_recorded_as_such():
    torch.manual_seed(0)
    model = nn.RNN(2, 4, batch_first=True, bidirectional=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    with doctor.watch(model, optimizer, every=1) as dr:
        model(torch.randn(3, 5, 2))[0].sum().backward()
        optimizer.step()
    [layer] = [layer for layer in dr.history.records[-1].layers.values() if layer.recurrent]
    assert layer.bidirectional and len(layer.time_grad_norms) == 5


class DetachedSeq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.GRU(3, 8, batch_first=True)
        self.decoder = nn.GRU(3, 8, batch_first=True)
        self.head = nn.Linear(8, 2)

    def forward(self, source, target):
        _, h = self.encoder(source)
        out, _ = self.decoder(target, h.detach())  # the bug: the encoder never learns
        return self.head(out[:, -1])


def test_a_cut_through_a_recurrent_layers_final_state_is_named():
    torch.manual_seed(0)
    model = DetachedSeq2Seq()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    source, target, y = torch.randn(16, 5, 3), torch.randn(16, 4, 3), torch.randint(0, 2, (16,))
    with doctor.watch(model, optimizer, every=1) as dr:
        train(lambda x: model(*x), optimizer, 4, (source, target), y)
    [cut] = [f for f in dr.findings if f.symptom == "no_gradient"]
    assert cut.where == "encoder" and cut.evidence["graph_cuts"][0]["from"] == "encoder"
    assert cut.evidence["graph_cuts"][0]["to"] == "decoder"


class MaskedAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
        self.head = nn.Linear(8, 2)

    def forward(self, x, padding):
        return self.head(self.attn(x, x, x, key_padding_mask=padding)[0].mean(1))


def test_a_softmax_over_a_fully_masked_row_is_named():
    """An empty sequence (every key masked) makes a row of -inf scores: its softmax is NaN, not the matrix product
    that added the -inf mask."""
    torch.manual_seed(0)
    model = MaskedAttention()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    padding = torch.zeros(4, 5, dtype=torch.bool)
    padding[0] = True  # the first sequence is empty
    with doctor.watch(model, optimizer, every=1) as dr:
        loss = nn.functional.cross_entropy(model(torch.randn(4, 5, 8), padding), torch.tensor([0, 1, 0, 1]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    [nonfinite] = [f for f in dr.findings if f.symptom == "nonfinite"]
    assert (nonfinite.where, nonfinite.evidence["phase"]) == ("softmax", "forward")
    assert "all -inf" in nonfinite.explanation and "masked" in nonfinite.remedies[0]


SUBMODULES_CALLED_ON_THEIR_OWN = """
import torch
from torch import nn

torch.manual_seed(0)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        self.head = nn.Linear(8, 2)


model = Model()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for _ in range(4):
    features = model.encoder(torch.randn(16, 4))
    loss = nn.functional.cross_entropy(model.head(features.detach()), torch.randint(0, 2, (16,)))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_submodules_called_on_their_own_are_named_by_their_path_in_the_script(tmp_path):
    from leakygrad.doctor.runner import run_script

    script = tmp_path / "train.py"
    script.write_text(SUBMODULES_CALLED_ON_THEIR_OWN)
    run = run_script(script, [], every=1)
    [cut] = [f for f in run.doctor.findings if f.symptom == "no_gradient"]
    assert cut.where == "model.encoder"
    assert (
        cut.evidence["graph_cuts"][0]["from"] == "model.encoder" and cut.evidence["graph_cuts"][0]["to"] == "model.head"
    )


def test_two_models_of_one_class_keep_apart_and_the_cut_between_them_is_found():
    torch.manual_seed(0)
    encoder, head = nn.Sequential(nn.Linear(4, 8), nn.ReLU()), nn.Sequential(nn.Linear(8, 3))
    optimizer = torch.optim.SGD([*encoder.parameters(), *head.parameters()], lr=0.1)
    x, y = data(features=4)
    with doctor.watch([encoder, head], optimizer, every=1) as dr:
        for _ in range(6):
            loss = nn.functional.cross_entropy(head(encoder(x).detach()), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert len(set(dr.history.watched[:2])) == 2  # (both were "sequential": "sequential.0" was two layers)
    [cut] = [f for f in dr.findings if f.symptom == "no_gradient"]
    assert cut.where == dr.history.watched[0] and cut.severity == "error"


def test_the_optimiser_given_to_watch_keeps_counting_the_steps():
    """A WGAN trains its critic five times per generator step: the generator's optimiser, given, sets the steps."""
    torch.manual_seed(0)
    generator, critic = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 2)), nn.Linear(2, 1)
    generator_optimizer = torch.optim.Adam(generator.parameters(), 1e-3)
    critic_optimizer = torch.optim.Adam(critic.parameters(), 1e-3)
    with doctor.watch([generator, critic], generator_optimizer, every=1) as dr:
        for _ in range(6):
            for _ in range(5):
                critic_optimizer.zero_grad()
                fake = generator(torch.randn(16, 2)).detach()
                (critic(fake).mean() - critic(torch.randn(16, 2)).mean()).backward()
                critic_optimizer.step()
            generator_optimizer.zero_grad()
            (-critic(generator(torch.randn(16, 2))).mean()).backward()
            generator_optimizer.step()
    assert dr.steps == 6
    assert dr.history.competing_loss_steps == 6  # each step's loss mixes the critic's and the generator's


def test_one_loss_stepped_by_two_optimisers_is_not_competing():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    first, second = torch.optim.SGD(model[0].parameters(), 0.1), torch.optim.Adam(model[2].parameters(), 1e-3)
    with doctor.watch(model, every=1) as dr:
        for _ in range(5):
            first.zero_grad(), second.zero_grad()
            ((model(torch.randn(16, 4)) - 1) ** 2).mean().backward()
            first.step(), second.step()
    assert dr.steps == 5 and dr.history.competing_loss_steps == 0  # one backward per step: one loss, judged as usual


def test_two_optimisers_on_one_accumulated_loss_are_not_competing():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    body, head = torch.optim.SGD(model[0].parameters(), 0.1), torch.optim.SGD(model[2].parameters(), 0.1)
    with doctor.watch(model, every=1) as dr:
        for _ in range(6):
            body.zero_grad(), head.zero_grad()
            for _ in range(2):  # two micro-batches, then both optimisers step
                ((model(torch.randn(8, 4)) - 1) ** 2).mean().backward()
            body.step(), head.step()
    assert dr.history.competing_loss_steps == 0  # (every step counted as a GAN's, and a stall went unreported)


def test_a_gradient_scalers_loss_is_recorded_unscaled():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.Adam(model.parameters(), 1e-3)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16, growth_interval=5)
    x, y = torch.randn(64, 4), torch.randn(64, 1)
    losses = []
    with doctor.watch(model, optimizer, every=1) as dr:
        for _ in range(30):
            optimizer.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            scaler.scale(loss).backward()  # the scale doubles every 5 steps
            scaler.step(optimizer)
            scaler.update()
            losses.append(loss.item())
    assert scaler.get_scale() > 2.0**16
    recorded = [bucket.mean for bucket in dr.history.loss.buckets]  # (one step per bucket, in so short a run)
    assert recorded == pytest.approx(losses, rel=1e-6)
    assert not [f for f in dr.findings if f.symptom == "diverging_loss"]


def test_settings_that_cannot_work_are_refused_when_the_doctor_is_made():
    with pytest.raises(ValueError, match="Thresholds: dead_window must be a whole number of at least 1, got 0"):
        doctor.Thresholds(dead_window=0)
    with pytest.raises(ValueError, match="Thresholds: stalled_change must be a number >= 0, got nan"):
        doctor.Thresholds(stalled_change=float("nan"))
    doctor.Thresholds(stalled_change=0.0, growth_warning=float("inf"), min_records=np.int64(3))  # (a rule off)
    with pytest.raises(ValueError, match="Thresholds: persistence is a share, at most 1, got 2"):
        doctor.Thresholds(persistence=2)
    assert doctor.Doctor(every=np.int64(4)).every == 4
    with pytest.raises(ValueError, match="every must be a positive whole number of steps, got True"):
        doctor.Doctor(every=True)


def test_losses_kept_on_the_device_are_read_together_and_unscaled():
    """On a GPU the losses wait on the device and are sent every few steps in one transfer, read once it has landed
    (no GPU here: the same path, fed CPU tensors)."""
    dr = doctor.watch(nn.Linear(2, 1))
    probe = dr.probe
    probe._pending_device_losses = [(0, torch.tensor(4.0), torch.tensor([2.0])), (1, torch.tensor([3.0]), None)]
    probe._flush_device_losses()
    assert len(probe._unread_losses) == 1 and dr.history.loss.buckets == []  # one transfer, on its way
    probe.catch_up()
    assert [bucket.mean for bucket in dr.history.loss.buckets] == [2.0, 3.0]


def test_only_a_gradient_scalers_factor_is_divided_out():
    """`loss * 2` and a loss summed over a batch of 64 are the user's losses, recorded as they are; a scaler's
    factor need not be a power of two."""
    torch.manual_seed(0)
    original_scale = torch.amp.GradScaler.scale
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(64, 4), torch.randn(64, 1)
    scaler = torch.amp.GradScaler("cpu", init_scale=1000.0, growth_interval=2)
    recorded, expected = [], []
    for make in (lambda: ((model(x) - y) ** 2).mean() * 2, lambda: ((model(x) - y) ** 2).sum() * torch.tensor(64.0)):
        with doctor.watch(model, optimizer, every=1) as dr:
            for _ in range(4):
                optimizer.zero_grad()
                loss = make()
                loss.backward()
                optimizer.step()
                expected.append(loss.item())
        recorded += [bucket.mean for bucket in dr.history.loss.buckets]
    with doctor.watch(model, optimizer, every=1) as dr:
        for _ in range(6):
            optimizer.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            expected.append(loss.item())
    recorded += [bucket.mean for bucket in dr.history.loss.buckets]
    assert recorded == pytest.approx(expected, rel=1e-6)
    assert torch.amp.GradScaler.scale is original_scale  # (put back when the watch ends)


def test_a_new_optimiser_for_the_next_phase_is_followed_though_one_was_given():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    x, y = torch.randn(32, 4), torch.randn(32, 1)
    first = torch.optim.SGD(model.parameters(), lr=0.01)
    with doctor.watch(model, first, every=1) as dr:
        for optimizer, steps in ((first, 20), (torch.optim.Adam(model.parameters(), 1e-3), 40)):
            for _ in range(steps):
                optimizer.zero_grad()
                nn.functional.mse_loss(model(x), y).backward()
                optimizer.step()
    assert dr.steps == 20 + 40  # its first steps, made before it is taken for the next phase, are counted too


class CopyThatLandsLate:
    """What a GPU's statistics look like to the host: a copy that has not landed for the first `delay` times the
    probe asks (`HostCopy` on the CPU copies at once, so the late path is made here)."""

    def __init__(self, flat: torch.Tensor, delay: int):
        self.flat, self.asks_left = flat, delay

    def ready(self) -> bool:
        self.asks_left -= 1
        return self.asks_left < 0

    def numpy(self) -> np.ndarray:
        return self.flat.numpy().astype(np.float64)


@pytest.mark.parametrize("delay", [1, 10])
def test_statistics_that_land_late_make_the_same_records_in_step_order(monkeypatch, delay):
    """On a GPU the host does not wait for a sampled step's statistics: its record is built once they land, a step
    or more later (at most MAX_UNREAD steps behind: then the oldest is waited for), and every record left is read
    when the run ends. The records and findings are those of a run that read every step's statistics at once."""
    from leakygrad.doctor.probes.torch_stats import Deferred, Fetch

    def run():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 32), nn.Sigmoid(), nn.Linear(32, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        x, y = torch.randn(64, 8), torch.randn(64, 1)
        built_by_step = []
        with doctor.watch(model, optimizer, every=1) as dr:
            for _ in range(30):
                loss = ((model(x) - y) ** 2).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                built_by_step.append(dr.history.records_seen)
        return dr, built_by_step

    on_time, built_on_time = run()

    def start_late_fetch(deferred):
        return Fetch(copy=CopyThatLandsLate(deferred._joined(), delay), split=deferred._split)

    with monkeypatch.context() as patch:
        patch.setattr(Deferred, "start_fetch", start_late_fetch)
        late, built_late = run()
    assert built_on_time == list(range(1, 31))
    lag = min(delay, torch_probe.MAX_UNREAD)  # records still on their way after each step
    assert built_late == [max(0, step - lag) for step in range(1, 31)]
    assert late.history.records_seen == 30  # the last ones read when the doctor detached
    assert [r.to_dict() for r in late.history.records] == [r.to_dict() for r in on_time.history.records]
    assert [f.one_line() for f in late.findings] == [f.one_line() for f in on_time.findings]
    assert late.notes == []


@pytest.mark.parametrize(("every", "where"), [(1, "log"), (4, "sequential.2")])
def test_a_nan_loss_whose_reading_waits_like_a_gpus_is_found_at_the_next_sampled_step(monkeypatch, every, where):
    """A GPU's losses are read a few steps late, without waiting for the device (no GPU here: the CPU's losses sent
    the same way). A NaN born in the forward pass of a step without statistics is then found at the next sampled
    step, in the weights the bad update broke, at the layer nearest the loss, dated from the step whose loss was
    first non-finite, with the advice to rerun with --every 1; with statistics on every step the hooks of the
    backward pass name the operation (log)."""

    def record_as_on_a_gpu(probe, loss):
        probe._pending_device_losses.append((probe.step, loss.detach(), None))

    monkeypatch.setattr(torch_probe.TorchProbe, "_record_loss", record_as_on_a_gpu)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = torch.randn(64, 16) * 3, torch.randint(0, 10, (64,))
    with doctor.watch(model, optimizer, every=every) as dr:
        for step in range(12):
            sharpness = 400.0 if step >= 2 else 1.0  # from step 2 (not sampled at every=4) some underflow to 0
            probabilities = torch.softmax(model(x) * sharpness, dim=1)  # and log(0) = -inf
            loss = -(nn.functional.one_hot(y, 10).float() * torch.log(probabilities)).sum(dim=1).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    nonfinite = [f for f in dr.findings if f.symptom == "nonfinite"]
    assert [f.where for f in nonfinite] == [where], [f.one_line() for f in dr.findings]
    assert nonfinite[0].first_step == 2  # the loss's step, though at every=4 the NaN is found at step 5
    if every > 1:
        assert nonfinite[0].evidence["found_at_step"] == 5  # (steps 0, 5, 10 are sampled)
        assert "--every 1" in nonfinite[0].explanation + " ".join(nonfinite[0].remedies)
    assert dr.notes == []


def _late_fetches(delay):
    """Deferred.start_fetch as on a GPU: the copy lands only after `delay` questions (see CopyThatLandsLate)."""
    from leakygrad.doctor.probes.torch_stats import Fetch

    return lambda deferred: Fetch(copy=CopyThatLandsLate(deferred._joined(), delay), split=deferred._split)


@pytest.mark.parametrize("delay", [0, 1])
def test_a_record_that_fails_to_build_is_noted_and_the_steps_after_it_are_kept(monkeypatch, delay):
    """An error while building one sampled step's record (on a GPU, a step or more after that step) is kept as an
    internal note; the step is counted once, and every other record and loss keeps its own step."""
    from leakygrad.doctor.probes.torch_stats import Deferred

    monkeypatch.setattr(Deferred, "start_fetch", _late_fetches(delay))
    add_layer_stats = torch_probe.TorchProbe._add_layer_stats

    def fails_at_step_3(probe, record, state, value, vectors):
        if state.step == 3:
            raise RuntimeError("boom")
        return add_layer_stats(probe, record, state, value, vectors)

    monkeypatch.setattr(torch_probe.TorchProbe, "_add_layer_stats", fails_at_step_3)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    with doctor.watch(model, optimizer, every=1) as dr:
        for _ in range(8):
            loss = ((model(x) - y) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert dr.steps == 8
    assert [r.step for r in dr.history.records] == [0, 1, 2, 4, 5, 6, 7]
    assert [b.first_step for b in dr.history.loss.buckets] == list(range(8))
    assert len(dr.notes) == 1 and "building a sampled step's record: RuntimeError: boom" in dr.notes[0]


def test_a_nan_born_in_backward_is_named_at_its_op_when_the_statistics_arrive_late(monkeypatch):
    """A loss read on the host (a CPU loss of a model on a GPU) turns NaN a step after a NaN born in the backward
    pass: the statistics of the steps before, still on their way, are read first, and they name the op."""
    from leakygrad.doctor.probes.torch_stats import Deferred

    monkeypatch.setattr(Deferred, "start_fetch", _late_fetches(2))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    with doctor.watch(model, optimizer, every=1) as dr:
        for step in range(8):
            out = model(x)
            distance = out - y if step != 3 else out - out.detach()  # step 3: a distance of 0, sqrt'(0) = inf
            loss = torch.sqrt((distance**2).mean())  # finite at step 3; NaN from step 4, on NaN weights
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    nonfinite = [f for f in dr.findings if f.symptom == "nonfinite"]
    assert [(f.where, f.first_step, f.evidence["phase"]) for f in nonfinite] == [("sqrt", 3, "backward")]


def test_broken_weights_are_not_dated_from_an_earlier_nan_loss_the_run_got_over(monkeypatch):
    """A NaN loss whose step was skipped (as a gradient scaler skips it), healthy sampled steps after it, and much
    later an update that breaks the weights: the finding is dated from that update, not from the old NaN loss."""

    def record_as_on_a_gpu(probe, loss):
        probe._pending_device_losses.append((probe.step, loss.detach(), None))

    monkeypatch.setattr(torch_probe.TorchProbe, "_record_loss", record_as_on_a_gpu)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    with doctor.watch(model, optimizer, every=4) as dr:  # sampled steps: 0, 5, 10
        for step in range(12):
            batch = x.clone()
            if step == 2:
                batch[0, 0] = float("nan")  # one bad batch: a NaN loss...
            loss = ((model(batch) - y) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            if step == 2:
                optimizer.zero_grad()  # ...whose step is skipped
            if step == 10:
                for p in model.parameters():
                    p.grad.fill_(float("nan"))  # an unrelated breakage, long after
            optimizer.step()
    nonfinite = [f for f in dr.findings if f.symptom == "nonfinite"]
    assert [(f.first_step, f.evidence["phase"]) for f in nonfinite] == [(10, "update")]
    assert "found_at_step" not in nonfinite[0].evidence


@pytest.mark.parametrize("kind", [nn.LSTM, nn.GRU, nn.RNN])
def test_a_recurrent_layer_run_for_one_time_step_has_no_gradient_finding(kind):
    """Run for one step from a zero initial state, W_hh multiplies zeros: its gradient is exactly zero by design
    (it was reported as no_gradient, with remedies about cancelling biases and dead units)."""
    torch.manual_seed(0)
    layer, head = kind(4, 8, batch_first=True), nn.Linear(8, 1)
    model = nn.ModuleDict({"rnn": layer, "head": head})
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with doctor.watch(model, optimizer, every=1) as dr:
        for _ in range(40):
            out, _ = layer(torch.randn(16, 1, 4))
            loss = (head(out[:, -1]) - 1).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert dr.history.param_zero_grad["rnn.weight_hh_l0"] == 40  # (the zeros are there: not reported)
    assert [f.one_line() for f in dr.findings] == []


def test_a_model_with_nothing_trained_is_not_called_healthy():
    """Every layer frozen, the loss trained through a scale outside the model: nothing about the model's gradients
    was measured, and the report said "No finding: gradients flow, units are alive"."""
    from leakygrad.doctor import report_html

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)).requires_grad_(False)
    scale = nn.Parameter(torch.ones(1))
    optimizer = torch.optim.SGD([scale], lr=0.01)
    with doctor.watch(model, optimizer, every=1) as dr:
        for _ in range(40):
            loss = (model(torch.randn(16, 4)) * scale - 1).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert dr.findings == []
    assert "nothing measured: no watched layer has parameters that are trained" in dr.summary()
    assert "gradients flow" not in report_html.render(dr)


def _digits_batches(steps, size=64):
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.tensor(data.data, dtype=torch.float32)
    x, y = (x - x.mean(0)) / (x.std(0) + 1e-6), torch.tensor(data.target)
    generator = torch.Generator().manual_seed(0)
    order = torch.cat([torch.randperm(len(x), generator=generator) for _ in range(steps * size // len(x) + 1)])
    return [(x[order[i * size : (i + 1) * size]], y[order[i * size : (i + 1) * size]]) for i in range(steps)]


def test_gradients_zeroed_through_data_are_a_reset():
    """`p.grad.data.zero_()`, older tutorials' way to reset gradients, moves no version counter: the doctor read
    every step as accumulating and reported accumulating_gradient as an error. A real missing zero_grad still is."""

    def run(reset):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        with doctor.watch(model, optimizer, every=1) as dr:
            for x, y in _digits_batches(60):
                loss = nn.functional.cross_entropy(model(x), y)
                reset(model)
                loss.backward()
                optimizer.step()
        return [f.symptom for f in dr.findings]

    def through_data(model):
        for p in model.parameters():
            if p.grad is not None:
                p.grad.data.zero_()

    assert run(through_data) == []
    assert "accumulating_gradient" in run(lambda model: None)


def test_gradients_not_reset_are_found_after_they_killed_the_layers():
    """Accumulation over 4 micro-batches with `optimizer.step()` outside the `if`: each step re-applies the running sum.
    The run blew up and its ReLUs died; a dead layer's gradient reads all zeros before each backward, which was taken
    for a reset, so most checks said "reset" and only dead units were reported, with a lower rate as the remedy
    (sweep 33). All-zero gradients now tell nothing either way, and the accumulation comes first."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.3, momentum=0.9)
    with doctor.watch(model, optimizer, every=3) as dr:
        for i, (x, y) in enumerate(_digits_batches(240, size=16)):
            (nn.functional.cross_entropy(model(x), y) / 4).backward()
            if (i + 1) % 4 == 0:
                optimizer.zero_grad()
            optimizer.step()
    dead = [f for f in dr.findings if f.symptom == "dead_relu"]
    assert dead and dr.findings[0].symptom == "accumulating_gradient"
    assert dr.findings[0].evidence["steps_not_reset"] >= dr.findings[0].evidence["steps_checked"] / 2


@pytest.mark.parametrize("init_scale", [2.0**24, 2.0**30])
def test_a_gradient_scalers_first_overflows_are_not_a_nan_of_the_run(init_scale):
    """A high initial loss scale overflows float16 gradients for the first steps; the scaler skips them and lowers
    its scale, by design. That was reported as an error (nonfinite in the backward pass); now only a NaN that
    keeps coming, whatever the scale, is."""

    def run(nan_every_other_step):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
        optimizer = torch.optim.Adam(model.parameters(), 1e-3)
        scaler = torch.amp.GradScaler("cpu", init_scale=init_scale)
        with doctor.watch(model, optimizer, every=1) as dr:
            for step, (x, y) in enumerate(_digits_batches(60)):
                with torch.autocast("cpu", dtype=torch.float16):
                    logits = model(x)
                    if nan_every_other_step and step % 2:  # sqrt'(0) = inf: no scale makes it finite
                        logits = logits + torch.sqrt(logits - logits.detach())
                    loss = nn.functional.cross_entropy(logits.float(), y)
                optimizer.zero_grad()
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
        return dr, scaler

    dr, scaler = run(nan_every_other_step=False)
    assert scaler.get_scale() < init_scale  # it did overflow, and lowered its scale
    assert [f.one_line() for f in dr.findings] == [] and dr.notes == []
    dr, _ = run(nan_every_other_step=True)  # (a step whose every backward overflows never reaches the optimiser)
    [nonfinite] = [f for f in dr.findings if f.severity == "error"]
    assert (nonfinite.symptom, nonfinite.where, nonfinite.evidence["phase"]) == ("nonfinite", "sqrt", "backward")


def test_gradient_norms_under_a_gradient_scaler_are_recorded_unscaled():
    """`scaler.scale(loss).backward()` sends loss x scale backward, so every layer's output gradient is scale times
    the true one (65536 by default, doubling as training goes): the heat map and the evidence showed those. They
    are divided by the step's scale, as the loss is: the same run with and without a scaler records the same."""

    def run(scaled: bool):
        torch.manual_seed(0)
        model = nn.ModuleDict({"rnn": nn.RNN(3, 8, batch_first=True), "head": nn.Linear(8, 1)})
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16, growth_interval=3, enabled=scaled)
        x, y = torch.randn(16, 5, 3), torch.randn(16, 1)
        with doctor.watch(model, optimizer, every=1) as dr:
            for _ in range(8):  # the scale doubles every 3 steps
                optimizer.zero_grad()
                out, _ = model["rnn"](x)
                loss = ((model["head"](out[:, -1]) - y) ** 2).mean()
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
        return dr.history.records, scaler.get_scale()

    plain, _ = run(scaled=False)
    scaled, final_scale = run(scaled=True)
    assert final_scale == 2.0**18
    assert len(plain) == len(scaled) == 8
    for a, b in zip(plain, scaled):
        for name in ("rnn", "head"):
            assert b.layers[name].out_grad_norm == pytest.approx(a.layers[name].out_grad_norm, rel=1e-5)
            assert b.layers[name].param_grad_norm == pytest.approx(a.layers[name].param_grad_norm, rel=1e-5)
        assert b.layers["rnn"].time_grad_norms == pytest.approx(a.layers["rnn"].time_grad_norms, rel=1e-5)


def test_a_head_the_optimiser_leaves_out_is_counted_until_it_is_added_to_the_optimiser():
    """Which parameters no optimiser steps is kept with the set of stepped parameters: after add_param_group that
    set is new, and the head's gradient counts as applied from then on (a result kept too long would count 7)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 5))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model[2] = nn.Linear(16, 3)  # made after the optimiser: left out of it
    x, y = data()
    with doctor.watch(model, optimizer, every=1) as dr:
        train(model, optimizer, 4, x, y)
        optimizer.add_param_group({"params": model[2].parameters()})
        train(model, optimizer, 3, x, y)
    history = dr.history
    assert history.apply_checks == 7
    assert history.not_applied == {"sequential.2.weight": 4, "sequential.2.bias": 4}
    assert history.stepped_outside_model == 2  # the old head's weight and bias, still in the optimiser


class ExactGP(nn.Module):
    """Sweep 51's GP regression: RBF kernel hyperparameters learnt by the marginal likelihood, its log-determinant
    written `torch.log(torch.det(K))` or `torch.logdet(K)`."""

    def __init__(self, logdet: str):
        super().__init__()
        self.logdet = logdet
        self.log_ls, self.log_sf, self.log_sn = (nn.Parameter(torch.tensor(v)) for v in ([0.0, 0.0], 0.0, 0.0))

    def forward(self, x, y):
        d = (x[:, None, :] - x[None, :, :]) / self.log_ls.exp()
        K = (2 * self.log_sf).exp() * torch.exp(-0.5 * d.pow(2).sum(-1)) + (2 * self.log_sn).exp() * torch.eye(len(x))
        logdet = torch.log(torch.det(K)) if self.logdet == "log of det" else torch.logdet(K)
        return (0.5 * (y * torch.linalg.solve(K, y)).sum() + 0.5 * logdet) / len(x)


@pytest.mark.parametrize("logdet", ["log of det", "logdet"])
def test_a_nan_at_the_log_of_a_determinant_names_logdet_first(logdet):
    """`torch.log(torch.det(K))` in a GP's marginal likelihood (sweep 51: NaN at step 11, its first remedy a clamp
    that would freeze the objective): det(K) underflows as the noise shrinks. `torch.logdet` first; it trains."""
    torch.manual_seed(0)
    x = torch.rand(150, 2) * 4 - 2
    y = torch.sin(3 * x[:, 0]) * torch.cos(2 * x[:, 1]) + 0.5 * x[:, 0] + 0.05 * torch.randn(150)
    model = ExactGP(logdet)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    with doctor.watch(model, optimizer, every=1) as dr:
        for _ in range(20):
            loss = model(x, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    nonfinite = [f for f in dr.findings if f.symptom == "nonfinite"]
    if logdet == "logdet":
        assert nonfinite == [] and math.isfinite(loss.item())
        return
    [f] = nonfinite
    assert f.where == "log" and f.evidence["log_of_probabilities"]["of"] == "det"
    assert "torch.logdet(K)" in f.remedies[0]


@pytest.mark.parametrize("likelihood", ["log of a sum of exps", "logsumexp"])
def test_a_nan_at_the_log_of_a_mixture_written_out_names_logsumexp_first(likelihood):
    """A mixture density network's likelihood as `log((pi * exp(log_prob)).sum(-1))` (sweep 51: -inf at `log` at step
    589 with glitch targets, a clamp first among the remedies): a target far from every component makes each exp
    underflow to 0. `torch.logsumexp` first; with it the loss stays finite."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 9))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    x = torch.rand(64, 1)
    y = torch.where(torch.rand(64) < 0.05, torch.tensor(40.0), torch.sin(6 * x[:, 0]))  # (a few glitches)
    with doctor.watch(model, optimizer, every=1) as dr:
        for _ in range(6):
            logits, mu, log_sigma = model(x).chunk(3, dim=-1)
            log_prob = torch.distributions.Normal(mu, log_sigma.exp()).log_prob(y[:, None])
            if likelihood == "logsumexp":
                loss = -torch.logsumexp(nn.functional.log_softmax(logits, -1) + log_prob, dim=-1).mean()
            else:
                loss = -torch.log((nn.functional.softmax(logits, -1) * log_prob.exp()).sum(-1)).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if not math.isfinite(loss.item()):
                break  # (the next Normal would refuse the NaN weights' outputs, as the script crashed)
    nonfinite = [f for f in dr.findings if f.symptom == "nonfinite"]
    if likelihood == "logsumexp":
        assert nonfinite == [] and math.isfinite(loss.item())
        return
    [f] = nonfinite
    assert f.where == "log" and f.evidence["log_of_probabilities"]["of"] == "sum of exps"
    assert "torch.logsumexp(log_pi + log_prob, dim=-1)" in f.remedies[0]
