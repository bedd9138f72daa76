"""`leakygrad demo`: both halves of leakygrad on a built-in default, in about a minute.

1. The engine: a two-hidden-layer MLP learns to separate three interleaved spirals, with nothing but Tensor
   operations and plain gradient descent. Then `gradcheck` compares backprop's gradients with finite
   differences, and the per-layer gradient norms show how the gradient flows back to the first layer.
2. The doctor (needs PyTorch): an ordinary PyTorch script trains a 10-layer sigmoid network that barely learns;
   the doctor watches it, names the layer where the gradient vanishes and why, and writes an HTML report. Then
   the same script with ReLU and He initialisation, which the doctor finds healthy.
"""

from __future__ import annotations

import numpy as np

import leakygrad as lg
from leakygrad.data import spirals  # CS231n's three interleaved spirals: 300 points, 2 features


def init_mlp(sizes, seed: int = 0, dtype=np.float32):
    """He-initialised weights (std sqrt(2 / fan_in), right for ReLU) and zero biases."""
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        w = rng.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / fan_in)
        params.append(lg.Tensor(w, requires_grad=True, dtype=dtype, name=f"W{len(params) // 2}"))
        params.append(lg.Tensor(np.zeros(fan_out), requires_grad=True, dtype=dtype, name=f"b{len(params) // 2}"))
    return params


def mlp_loss(params, x, y):
    """Mean softmax cross-entropy of the MLP's logits."""
    h = x
    for i in range(0, len(params) - 2, 2):
        h = (h @ params[i] + params[i + 1]).relu()
    logits = h @ params[-2] + params[-1]
    log_probs = logits.log_softmax(axis=1)
    return -log_probs[np.arange(len(y)), y].mean(), logits


def run_engine(steps: int = 600, learning_rate: float = 0.5, print_every: int = 100, console=None) -> dict:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    x_np, y = spirals(seed=0)
    x = lg.Tensor(x_np)
    params = init_mlp([2, 64, 64, 3])
    console.print(
        f"[bold]leakygrad demo[/bold]: an MLP 2-64-64-3 learns {len(y)} points on 3 spirals, "
        "with plain gradient descent on the bare engine"
    )

    table = Table("step", "loss", "training accuracy")
    losses = []
    for step in range(steps + 1):
        loss, logits = mlp_loss(params, x, y)
        for p in params:
            p.grad = None
        loss.backward()
        with lg.no_grad():  # the update itself is not part of the graph
            for p in params:
                p -= learning_rate * p.grad
        losses.append(loss.item())
        if step % print_every == 0 or step == steps:
            accuracy = float((logits.data.argmax(axis=1) == y).mean())
            table.add_row(str(step), f"{loss.item():.4f}", f"{accuracy:.1%}")
    console.print(table)

    norms = Table("parameter", "shape", "|grad|", title="gradient norms at the last step")
    for p in params:
        norms.add_row(p.name, str(p.shape), f"{np.linalg.norm(p.grad.data):.3e}")
    console.print(norms)

    # Random biases keep every ReLU input away from 0, its kink, where finite differences see a slope of 1/2.
    small = init_mlp([2, 4, 4, 3], seed=1, dtype=np.float64)
    for b in small[1::2]:
        b.data[:] = np.random.default_rng(2).standard_normal(b.shape)
    report = lg.gradcheck(lambda *ps: mlp_loss(list(ps), lg.Tensor(x_np[:8], dtype=np.float64), y[:8])[0], *small)
    console.print(
        f"\n[bold]gradcheck[/bold] of the same loss on a 2-4-4-3 net, float64 "
        f"(backprop vs central differences): worst relative error {report.max_relative_error:.1e} "
        f"({'passed' if report.passed else 'FAILED'})"
    )
    return {"losses": losses, "gradcheck": report}


def run_doctor(report_path: str = "leakygrad-demo.doctor.html", console=None) -> dict:
    """Run the sample script `deep_sigmoid.py` under the doctor, sick and then fixed."""
    import contextlib
    import io

    from rich.console import Console

    console = console or Console()
    try:
        import torch  # noqa: F401
    except ImportError:
        console.print("\n[bold]doctor[/bold]: skipped, PyTorch is not installed (pip install 'leakygrad[torch]')")
        return {}
    from leakygrad.doctor import run_script, samples
    from leakygrad.doctor.report_text import print_summary

    script = samples.path("deep_sigmoid")
    results = {}
    for label, args in (("sick", []), ("fixed", ["--fixed"])):
        title = "10 sigmoid layers, default init" if label == "sick" else "the same depth, ReLU and He init (--fixed)"
        console.print(f"\n[bold]leakygrad doctor[/bold] on a PyTorch training script: {title}")
        script_output = io.StringIO()
        with contextlib.redirect_stdout(script_output):
            run = run_script(script, args)
        console.print("  the script's last line: " + script_output.getvalue().strip().splitlines()[-1])
        paths = [run.doctor.report(report_path)] if label == "sick" else []
        print_summary(run.doctor, report_paths=paths, file=console.file)
        results[label] = run.doctor
    return results


def run(
    steps: int = 600, learning_rate: float = 0.5, doctor: bool = True, report_path: str = "leakygrad-demo.doctor.html"
) -> dict:
    """Both halves of the demo; returns what each measured."""
    result = run_engine(steps=steps, learning_rate=learning_rate)
    if doctor:
        result["doctor"] = run_doctor(report_path)
    return result
