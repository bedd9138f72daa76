"""A model written without modules: tensors the script holds itself (`w1 = torch.randn(..., requires_grad=True)`),
stepped by an optimiser or updated by hand, as the first chapters of every course write it (PyTorch's "Learning
PyTorch with Examples", d2l.ai's "from scratch" sections). The doctor names those tensors as the script does and
watches them as it watches a module's parameters; before, it said "nothing measured" or only that the loss stalled."""

import textwrap

import pytest

from leakygrad.doctor.runner import run_script

# A two-layer net as plain tensors on a synthetic task; the lines marked with a name are swapped in by each case.
NET = textwrap.dedent(
    """
    import torch
    torch.manual_seed(0)
    X = torch.randn(512, 16)
    y = (X[:, :4].sum(1) > 0).long() + (X[:, 4:8].sum(1) > 0).long()
    w1 = (torch.randn(16, 64) * 0.25).requires_grad_()
    w2 = (torch.randn(64, 3) * 0.125).requires_grad_()
    {optimizer}
    for step in range(240):
        i = (step * 64) % 512
        xb, yb = X[i:i + 64], y[i:i + 64]
        loss = torch.nn.functional.cross_entropy(xb.mm(w1).clamp(min=0).mm({second}), yb)
        {before_backward}
        loss.backward()
        {update}
    with torch.no_grad():
        accuracy = (X.mm(w1).clamp(min=0).mm(w2).argmax(1) == y).float().mean().item()
    print(f"loss {{loss.item():.4f}} accuracy {{accuracy:.3f}}")
    """
)
BY_HAND = "with torch.no_grad():\n            w1 -= 0.1 * w1.grad\n            w2 -= 0.1 * w2.grad\n            {reset}"
RESET = "w1.grad = None; w2.grad = None"
HEALTHY_UPDATE = BY_HAND.format(reset=RESET)


def script(tmp_path, optimizer="", second="w2", before_backward="", update=HEALTHY_UPDATE):
    path = tmp_path / "tensors.py"
    path.write_text(NET.format(optimizer=optimizer, second=second, before_backward=before_backward, update=update))
    return str(path)


def findings(run):
    return [(f.symptom, f.where, f.severity) for f in run.doctor.findings]


def accuracy(capsys) -> float:
    return float(capsys.readouterr().out.split("accuracy ")[-1])


def test_tensors_updated_by_hand_are_named_as_the_script_holds_them_and_a_healthy_run_is_clean(tmp_path, capsys):
    run = run_script(script(tmp_path), every=4)
    assert accuracy(capsys) > 0.8
    assert run.doctor.findings == []
    history = run.doctor.history
    assert history.script_tensors == ["w1", "w2"] and "tensors w1, w2" in history.watched
    assert history.reset_checks > 10 and history.param_checks["w1"] > 10  # (measured, not "nothing measured")


def test_tensors_updated_by_hand_without_resetting_their_gradients_are_accumulating(tmp_path, capsys):
    run = run_script(script(tmp_path, update=BY_HAND.format(reset="pass")), every=4)
    capsys.readouterr()
    found = findings(run)
    assert found[0] == ("accumulating_gradient", "w1, w2", "error")
    [summing] = [f for f in run.doctor.findings if f.symptom == "accumulating_gradient"]
    assert summing.evidence["script_tensors"] == ["w1", "w2"] and summing.evidence["updated_by_hand"]
    assert "`w1.grad = None`" in summing.remedies[0] and "torch.optim.SGD([w1, w2]" in summing.remedies[1]
    # the clamp that acts as a ReLU, its units killed by the growing steps: told as the accumulation's doing
    assert all(severity == "warning" for symptom, _, severity in found[1:])


def test_tensors_stepped_by_an_optimiser_never_zeroed_are_accumulating(tmp_path, capsys):
    path = script(tmp_path, optimizer="opt = torch.optim.SGD([w1, w2], lr=0.1)", update="opt.step()")
    run = run_script(path, every=4)
    capsys.readouterr()
    assert findings(run)[0] == ("accumulating_gradient", "optimizer", "error")
    assert run.doctor.history.script_tensors == ["w1", "w2"]


@pytest.mark.parametrize("detached", [False, True])
def test_a_tensor_read_through_detach_gets_no_gradient_named_as_the_script_holds_it(tmp_path, capsys, detached):
    path = script(
        tmp_path,
        optimizer="opt = torch.optim.Adam([w1, w2], lr=0.01)",
        second="w2.detach()" if detached else "w2",
        before_backward="opt.zero_grad()",
        update="opt.step()",
    )
    run = run_script(path, every=4)
    capsys.readouterr()
    if not detached:
        assert run.doctor.findings == []
        return
    [f] = [f for f in run.doctor.findings if f.symptom == "no_gradient"]
    assert (f.where, f.severity) == ("w2", "error") and f.evidence["script_tensors"]
    assert "a tensor the script holds itself" in f.explanation and "`.detach()`" in f.remedies[0]


def test_gradients_zeroed_before_the_update_by_hand_are_told_as_an_update_of_zero(tmp_path, capsys):
    zeroed_first = (
        "with torch.no_grad():\n"
        "            w1.grad.zero_(); w2.grad.zero_()\n"
        "            w1 -= 0.1 * w1.grad\n"
        "            w2 -= 0.1 * w2.grad"
    )
    run = run_script(script(tmp_path, update=zeroed_first), every=4)
    assert accuracy(capsys) < 0.6
    [f] = run.doctor.findings
    assert f.symptom == "stalled_loss" and f.evidence["updated_by_zero"] and not f.evidence["weights_moved"]
    assert f.remedies[0].startswith("Reset the gradients after the update, not before it")


def test_an_input_made_to_require_grad_at_every_step_is_no_parameter(tmp_path, capsys):
    """A new tensor each step (an adversarial example, a physics-informed net's coordinates) is never changed in place
    between two backward passes: only the weights are named."""
    path = script(tmp_path, before_backward="xb = xb.clone().requires_grad_()")
    run = run_script(path, every=4)
    capsys.readouterr()
    assert run.doctor.history.script_tensors == ["w1", "w2"] and run.doctor.findings == []


def test_the_doctor_changes_nothing_in_a_run_of_plain_tensors(tmp_path, capsys):
    path = script(tmp_path, update=BY_HAND.format(reset="pass"))
    plain = run_script(path, watch=False)
    plain_out = capsys.readouterr().out
    watched = run_script(path, every=1)
    assert capsys.readouterr().out == plain_out
    for name in ("w1", "w2"):
        assert plain.globals[name].equal(watched.globals[name])
