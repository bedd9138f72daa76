"""`model.eval()` called for a validation pass inside the training loop, and no `model.train()` after it.

From then on the batch norms normalise with the running statistics frozen at that step (and the backward leaves out
the batch statistics' terms), the dropouts are off. Sweep 39: accuracy 0.09 against 0.98, a NaN from step 27 told as
a learning rate far too high. Named as a `wrong_gradient` error at the model (a warning when it holds dropouts only).
Left alone: evaluation followed by `model.train()`, batch norms frozen one by one in a model left in training mode
(fine-tuning), and a model in eval mode from its first step.
"""

import torch
from torch import nn
from torch.nn import functional as F

import leakygrad.doctor as doctor


def make_model(norms: bool = True):
    torch.manual_seed(0)
    layers = [nn.Linear(16, 32), nn.BatchNorm1d(32) if norms else nn.Identity(), nn.ReLU(), nn.Dropout(0.2)]
    return nn.Sequential(*layers, nn.Linear(32, 4))


def train(model, validate_then, steps=60, every=4, freeze_norms=False, eval_from_start=False):
    generator = torch.Generator().manual_seed(0)
    x, y = torch.randn(256, 16, generator=generator), torch.randint(0, 4, (256,), generator=generator)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    if freeze_norms:
        for m in model.modules():
            if isinstance(m, nn.BatchNorm1d):
                m.eval()
    if eval_from_start:
        model.eval()
    with doctor.watch(model, optimizer, every=every) as dr:
        for step in range(steps):
            i = torch.randint(0, 256, (32,), generator=generator)
            loss = F.cross_entropy(model(x[i]), y[i])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step == 10:
                model.eval()
                with torch.no_grad():
                    model(x)  # (the validation pass)
                validate_then(model)
    assert dr.notes == []
    return dr


def left(dr):
    return [f for f in dr.findings if f.evidence.get("model_in_eval_mode")]


def test_eval_left_on_after_a_validation_pass_is_an_error_at_the_model():
    dr = train(make_model(), validate_then=lambda model: None)
    (finding,) = left(dr)
    assert (finding.symptom, finding.severity, finding.where) == ("wrong_gradient", "error", "sequential")
    assert finding.evidence["trained_until_step"] <= 10 < finding.evidence["eval_since_step"] == finding.first_step
    assert finding.evidence["batch_norms"] == ["sequential.1"] and finding.evidence["dropouts"] == ["sequential.3"]
    assert "sequential.train()" in finding.remedies[0] and "running statistics" in finding.explanation


def test_a_model_with_dropouts_only_left_in_eval_is_a_warning():
    (finding,) = left(train(make_model(norms=False), validate_then=lambda model: None))
    assert finding.severity == "warning" and finding.evidence["batch_norms"] == []


def test_evaluation_followed_by_train_and_norms_frozen_on_purpose_are_left_alone():
    assert left(train(make_model(), validate_then=lambda model: model.train())) == []
    assert left(train(make_model(), validate_then=lambda model: model.train(), freeze_norms=True)) == []


def test_a_model_in_eval_mode_from_its_first_step_is_left_alone():
    """Fine-tuned with its dropout off on purpose (an RL fine-tuning of a policy, say): never seen training."""
    assert left(train(make_model(), validate_then=lambda model: None, eval_from_start=True)) == []


def test_a_frozen_encoder_under_a_linear_probe_and_a_model_eval_mode_does_not_change_are_left_alone():
    """(The review of stop 37.) A linear probe on a pretrained encoder set to eval and frozen on purpose
    (`requires_grad_(False)`, features taken with autograd on): nothing of it trains. And eval mode that changes
    nothing: dropouts of p = 0 (nanoGPT's default), a batch norm without running statistics."""
    generator = torch.Generator().manual_seed(0)
    x, y = torch.randn(256, 16, generator=generator), torch.randint(0, 4, (256,), generator=generator)
    torch.manual_seed(0)
    encoder, probe = make_model(), nn.Linear(4, 4)
    encoder.eval()
    encoder.requires_grad_(False)
    optimizer = torch.optim.SGD(probe.parameters(), lr=0.1)
    with doctor.watch([encoder, probe], every=4) as dr:
        for _ in range(40):
            loss = F.cross_entropy(probe(encoder(x[:32])), y[:32])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert dr.notes == [] and left(dr) == []
    for middle in (nn.Dropout(0.0), nn.BatchNorm1d(32, track_running_stats=False)):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(16, 32), middle, nn.ReLU(), nn.Linear(32, 4))
        assert left(train(model, validate_then=lambda model: None)) == []
