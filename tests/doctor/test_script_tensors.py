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


def write(tmp_path, text: str) -> str:
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(text))
    return str(path)


@pytest.mark.parametrize("reset", [True, False])
def test_tensors_of_a_loop_inside_main_updated_through_data_are_watched(tmp_path, capsys, reset):
    """Sweep 49: a training loop inside `main()` (its tensors are locals), or updates through `.data` (which move no
    version), were not watched: "nothing measured", and gradients never reset went unseen. The graph's leaves are
    looked at now, named from the frame of the script's function, and compared by their values too."""
    path = write(
        tmp_path,
        f"""
        import torch

        def main():
            torch.manual_seed(0)
            X = torch.randn(256, 8)
            y = (X[:, :2].sum(1) > 0).float()
            w = torch.zeros(8, requires_grad=True)
            b = torch.zeros(1, requires_grad=True)
            for step in range(200):
                loss = torch.nn.functional.binary_cross_entropy_with_logits(X @ w + b, y)
                loss.backward()
                w.data.add_(w.grad, alpha=-0.5)
                b.data.add_(b.grad, alpha=-0.5)
                if {reset}:
                    w.grad.zero_(); b.grad.zero_()
            print(round(loss.item(), 4))

        if __name__ == "__main__":
            main()
        """,
    )
    run = run_script(path, every=4)
    capsys.readouterr()
    assert run.doctor.history.script_tensors == ["w", "b"] and run.doctor.notes == []
    if reset:
        assert run.doctor.findings == []
        return
    assert findings(run)[0] == ("accumulating_gradient", "w, b", "error")


COPIED = """
import torch
torch.manual_seed(0)
X = torch.randn(256, 8)
y = (X[:, :2].sum(1) > 0).long()
W1, W2 = (torch.randn(8, 16) * 0.3).requires_grad_(), {second}
opt = torch.optim.Adam({given}, lr=0.01)
for step in range(120):
    loss = torch.nn.functional.cross_entropy((X @ W1).relu() @ W2, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""


def test_an_optimiser_given_copies_of_the_tensors_is_told_so(tmp_path, capsys):
    """An optimiser over copies of the tensors, `Adam([w.detach().clone().requires_grad_() for w in weights])` (sweep
    49, with `torch.tensor(w)`: accuracy 0.12 against 0.93): the copies were named as the model (`tensor0`, ...) and
    told to get no gradient, "find where they are read". The tensors the script holds and the backward reaches are
    the model; no optimiser steps them."""
    text = COPIED.format(
        second="(torch.randn(16, 2) * 0.3).requires_grad_()",
        given="[w.detach().clone().requires_grad_() for w in (W1, W2)]",
    )
    run = run_script(write(tmp_path, text), every=4)
    capsys.readouterr()
    [f] = [f for f in run.doctor.findings if f.symptom == "unapplied_gradient"]
    assert (f.where, f.severity, f.evidence["script_tensors"]) == ("W1, W2", "error", True)
    assert f.remedies[0] == "Give the optimiser the tensors themselves: `torch.optim.Adam([W1, W2])`."


@pytest.mark.parametrize("made", ["without requires_grad", "with requires_grad"])
def test_a_tensor_given_to_the_optimiser_without_requires_grad_is_named(tmp_path, capsys, made):
    """`W2 = torch.randn(16, 2) * 0.3` beside tensors that require grad, all given to Adam (sweep 49: accuracy 0.89
    against 0.93, silent): backward computes no gradient for it and it never trains. A `no_gradient` error at W2."""
    second = (
        "torch.randn(16, 2) * 0.3" if made == "without requires_grad" else "(torch.randn(16, 2) * 0.3).requires_grad_()"
    )
    run = run_script(write(tmp_path, COPIED.format(second=second, given="[W1, W2]")), every=4)
    capsys.readouterr()
    named = [f for f in run.doctor.findings if f.evidence.get("requires_grad") is False]
    if made == "with requires_grad":
        assert run.doctor.findings == []
        return
    [f] = named
    assert (f.symptom, f.where, f.severity) == ("no_gradient", "W2", "error")
    assert ".requires_grad_()" in f.remedies[0]


@pytest.mark.parametrize("frozen", [False, True])
def test_an_input_optimised_through_a_model_left_trainable_is_a_warning(tmp_path, capsys, frozen):
    """Style transfer's loop: `Adam([img])` through a feature net put in eval mode but not frozen (sweep 49: an
    `unapplied_gradient` error at `(model)`, "make the optimiser from its parameters", which would break the script).
    The optimiser steps only a tensor outside the model that the backward reaches: an input being optimised; at most a
    warning that the model's gradients are computed for nothing. Frozen: nothing."""
    path = write(
        tmp_path,
        f"""
        import torch
        from torch import nn
        torch.manual_seed(0)
        net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1)).eval()
        if {frozen}:
            net.requires_grad_(False)
        target = net(torch.rand(1, 3, 16, 16)).detach()
        img = torch.rand(1, 3, 16, 16, requires_grad=True)
        opt = torch.optim.Adam([img], lr=0.05)
        for step in range(60):
            loss = (net(img) - target).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(round(loss.item(), 6))
        """,
    )
    run = run_script(path, every=4)
    capsys.readouterr()
    if frozen:
        assert run.doctor.findings == []
        return
    [f] = run.doctor.findings
    assert (f.symptom, f.where, f.severity, f.evidence["inputs_optimised"]) == (
        "unapplied_gradient",
        "net",
        "warning",
        1,
    )
    assert "requires_grad_(False)" in f.remedies[0]


def test_a_tensor_held_by_its_own_name_and_in_a_list_is_named_by_its_own(tmp_path, capsys):
    """`params = [W1, W2]` beside `W1` and `W2`: the names the script wrote (`W2`), not `params[1]`; tensors in a list
    held by no name of their own are named by their place (see test_guards' list of pairs)."""
    text = COPIED.replace("(X @ W1).relu() @ W2, y", "(X @ W1).relu() @ W2.detach(), y").format(
        second="(torch.randn(16, 2) * 0.3).requires_grad_()", given="params"
    )
    text = text.replace("opt = torch.optim.Adam(params", "params = [W1, W2]\nopt = torch.optim.Adam(params")
    run = run_script(write(tmp_path, text), every=4)
    capsys.readouterr()
    assert run.doctor.history.script_tensors == ["W1", "W2"]
    assert [f.where for f in run.doctor.findings if f.symptom == "no_gradient"] == ["W2"]


def test_the_html_report_charts_each_tensor_of_a_model_without_modules_as_a_layer(tmp_path, capsys):
    """Each tensor is a layer of its own in the records: its gradient in the heat map and its update/weight ratio in
    the bar chart (both were empty before: "No layer with weights was measured"); the gradient flow by depth, which
    needs a layer's output, says why it is not drawn."""
    from leakygrad.doctor import report_html

    run = run_script(script(tmp_path, optimizer="optimizer = torch.optim.SGD([w1, w2], lr=0.1)",
                            update="optimizer.step(); optimizer.zero_grad()"), every=4)  # fmt: skip
    assert accuracy(capsys) > 0.8 and run.doctor.findings == []
    records = run.doctor.history.records
    layers = records[-1].layers
    assert sorted(layers) == ["w1", "w2"] and all(layer.kind == "tensor" for layer in layers.values())
    assert all(layer.param_grad_norm > 0 and 1e-5 < layer.update_ratio < 1 for layer in layers.values())
    page = report_html.render(run.doctor)
    assert "No layer with weights was measured" not in page and "No optimiser step was measured" not in page
    assert 'aria-label="gradient norm per layer"' in page or "gradient norm per layer" in page
    assert "A model without modules: its tensors have no output of their own" in page


INVERSE_PROBLEM = textwrap.dedent(
    """
    import torch
    from torch import nn
    torch.manual_seed(0)
    # u'' = -k u on [0, 1]: fit u to measurements and learn the unknown k = exp(log_k) (true k = 4)
    x = torch.linspace(0, 1, 128).unsqueeze(1).requires_grad_()  # (collocation points: an input, read by the net)
    measured = torch.sin(2 * x.detach())
    net = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))
    log_k = torch.tensor(0.0, requires_grad=True)
    optimizer = torch.optim.Adam({params}, lr=1e-2)
    for step in range(300):
        u = net(x)
        du = torch.autograd.grad(u.sum(), x, create_graph=True)[0]
        d2u = torch.autograd.grad(du.sum(), x, create_graph=True)[0]
        loss = ((d2u + log_k.exp() * u) ** 2).mean() + ((u - measured) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"k {{log_k.exp().item():.3f}}")
    """
)


@pytest.mark.parametrize("stepped", [False, True])
def test_an_unknown_coefficient_the_script_holds_and_no_optimiser_steps_is_named(tmp_path, capsys, stepped):
    """An inverse PINN: `log_k = torch.tensor(0., requires_grad=True)` at top level, the optimiser made over
    `net.parameters()` alone. log_k gets a gradient at every step and never moves (sweep 50: k stayed 1.00 where the
    true one was 0.4, and nothing was said). Named as the script holds it, with the remedy to give it to the optimiser.
    The collocation points, which require grad too but are the net's input, are no parameter."""
    params = "list(net.parameters()) + [log_k]" if stepped else "net.parameters()"
    path = tmp_path / "inverse.py"
    path.write_text(INVERSE_PROBLEM.format(params=params))
    run = run_script(str(path))
    k = float(capsys.readouterr().out.split("k ")[-1])
    if stepped:
        assert k != 1.0 and run.doctor.findings == []  # (it moves)
        return
    assert k == 1.0
    [f] = run.doctor.findings
    assert (f.symptom, f.where, f.severity) == ("unapplied_gradient", "log_k", "error")
    assert f.evidence["held_by_script"] and f.remedies[0].startswith("Give it to the optimiser")
