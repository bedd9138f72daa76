"""The doctor: watches a training run, finds where backprop leaks, names the layer or op, explains, suggests.

In code::

    with leakygrad.doctor.watch(model, optimizer) as dr:
        for x, y in data:
            ...                       # the usual loop, unchanged
    dr.findings                       # most severe first
    dr.report("report.html")          # or .json

From the shell: ``leakygrad doctor [--json PATH] [--html PATH] [--every N] [--quiet] SCRIPT.py [ARGS...]``.
"""

from __future__ import annotations

from leakygrad.doctor.doctor import DEFAULT_EVERY, REPORT_VERSION, Doctor, diagnose
from leakygrad.doctor.findings import SYMPTOMS, Finding
from leakygrad.doctor.thresholds import DEFAULT_THRESHOLDS, Thresholds

__all__ = [
    "DEFAULT_EVERY",
    "DEFAULT_THRESHOLDS",
    "REPORT_VERSION",
    "SYMPTOMS",
    "Doctor",
    "Finding",
    "Thresholds",
    "diagnose",
    "run_script",
    "watch",
]


def watch(model, optimizer=None, *, every: int = DEFAULT_EVERY, thresholds: Thresholds = DEFAULT_THRESHOLDS,
          name: str | None = None) -> Doctor:  # fmt: skip
    """Watch a PyTorch model (and optionally its optimiser) for gradient leaks; use it as a context manager.

    `model`: an `nn.Module` or a list of them. `optimizer`: the optimiser whose steps count as training steps,
    whatever other optimisers do between them (a GAN's critic stepping five times per generator step, say), until
    another clearly takes over (a new optimiser for the next phase: see docs/doctor.md). Without it, the first
    optimiser that steps the model's parameters, until another clearly takes over in the same way; without any, each
    `backward()` is a step.
    `every`: take the costly statistics on one step in every `every` (step 0 first; see the probe for which).
    """
    from leakygrad.doctor.probes.torch_probe import TorchProbe

    doctor = Doctor(every=every, thresholds=thresholds)
    doctor.probe = TorchProbe(doctor, model=model, optimizer=optimizer, name=name)
    return doctor


def run_script(path, args=(), **options):
    """Run a training script under the doctor as `python path args...` would; see `runner.run_script`."""
    from leakygrad.doctor.runner import run_script as _run_script

    return _run_script(path, args, **options)
