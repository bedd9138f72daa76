"""The Doctor: receives statistics from a probe, keeps the bounded history, runs the rules, writes reports.

It knows nothing about PyTorch: `probes/torch_probe.py` feeds it, and a probe for leakygrad's own engine can
feed it the same way (`record`, `add_loss`, `set_nonfinite`, `check_reset`, `note`).
"""

from __future__ import annotations

import traceback
from pathlib import Path

import numpy as np

from leakygrad.doctor.explain import explain
from leakygrad.doctor.findings import Finding, sort_findings
from leakygrad.doctor.history import History
from leakygrad.doctor.rules import RULES, add_run_evidence, fold_copies, fold_explained
from leakygrad.doctor.stats import NonfiniteEvent, StepRecord
from leakygrad.doctor.thresholds import DEFAULT_THRESHOLDS, Thresholds

REPORT_VERSION = 1
DEFAULT_EVERY = 16
"""Costly statistics are taken on one step in 16 by default (see docs/benchmarks.md for what that costs)."""
NOTE_LENGTH = 300  # characters of an error message kept in an internal note


def diagnose(history: History, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> list[Finding]:
    """Run every rule on the history; a rule that fails becomes an internal note, never an exception."""
    findings: list[Finding] = []
    for rule in RULES:
        try:
            findings.extend(rule(history, thresholds))
        except Exception as error:  # a bug in one rule must not hide the others
            history.note(f"rule {rule.__name__} failed: {type(error).__name__}: {error}")
    findings = fold_explained(findings)
    try:
        findings = fold_copies(findings, history)
    except Exception as error:
        history.note(f"folding copies' findings failed: {type(error).__name__}: {error}")
    try:
        findings = add_run_evidence(findings, history, thresholds)
    except Exception as error:
        history.note(f"adding the run's evidence failed: {type(error).__name__}: {error}")
    for finding in findings:
        earlier = history.onsets.get((finding.symptom, finding.where))
        # (a loss that rose again after its lowest point rose from there: an onset an earlier look gave, before that
        # low point, was of another reading of the curve)
        lowest_at = finding.evidence.get("lowest_at_step")
        if earlier is not None and earlier < finding.first_step and (lowest_at is None or earlier >= lowest_at):
            finding.first_step = earlier
        try:
            explain(finding)
        except Exception as error:
            history.note(f"explaining {finding.symptom} failed: {type(error).__name__}: {error}")
    return sort_findings(findings)


class Doctor:
    """Watches one training run. Use `leakygrad.doctor.watch(model, optimizer)` to make one for PyTorch."""

    def __init__(self, every: int = DEFAULT_EVERY, thresholds: Thresholds = DEFAULT_THRESHOLDS, max_records=128):
        if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
            raise ValueError(f"Doctor: every must be a positive whole number of steps, got {every!r}")
        self.every = int(every)
        self.thresholds = thresholds
        self.history = History(thresholds, max_records=max_records)
        self.probe = None  # set by watch(): the object that attaches hooks
        self.script_error: str | None = None  # set by the runner when the script stopped with an exception
        self._findings: list[Finding] | None = None

    # --- what probes call ---------------------------------------------------------------------------------------
    def record(self, record: StepRecord) -> None:
        if self.history.needs_thinning():
            self._remember_onsets()  # so thinning old records never loses when a finding began
            self.history.thin()
        self.history.add_record(record)
        self._findings = None

    def add_loss(self, step: int, value: float) -> None:
        self.history.add_loss(step, value)
        self._findings = None

    def add_competing_loss_step(self) -> None:
        """A step whose loss is the mean of several optimisers' own losses (a GAN's two players)."""
        self.history.competing_loss_steps += 1
        self._findings = None

    def set_steps(self, steps: int) -> None:
        self.history.steps = steps

    def set_nonfinite(self, event: NonfiniteEvent) -> None:
        self.history.set_nonfinite(event)
        self._findings = None

    def check_reset(
        self, step: int, reset: bool, modules_not_reset: list[str] = (), by_hand: bool = False, in_closure: bool = False
    ) -> None:
        history = self.history
        history.reset_checks += 1
        history.reset_by_hand = by_hand  # (checked between updates made by hand: no optimiser steps)
        history.reset_in_closure = in_closure  # (checked within a step whose closure runs the backward passes)
        if not reset:
            history.not_reset += 1
            history.modules_not_reset.update(modules_not_reset)
            if history.first_not_reset is None:
                history.first_not_reset = step
        self._findings = None

    def note(self, message: str) -> None:
        self.history.note(message)

    def internal_error(self, where: str, error: BaseException) -> None:
        """Note an error inside the doctor, in one line of at most NOTE_LENGTH characters (PyTorch's messages can
        run to kilobytes); never raises, since it is called from inside the training's hooks."""
        try:
            frame = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
            at = f" ({Path(frame.filename).name}:{frame.lineno})" if frame else ""
            try:
                message = " ".join(str(error).split())
            except Exception:  # (an exception whose str() itself fails)
                message = "(its message could not be read)"
            if len(message) > NOTE_LENGTH:
                message = message[: NOTE_LENGTH - 3] + "..."
            self.note(f"{where}: {type(error).__name__}: {message}{at}")
        except Exception:  # noting must not fail the training it watches
            pass

    def _remember_onsets(self) -> None:
        for finding in diagnose(self.history, self.thresholds):
            self.history.remember_onset(finding.symptom, finding.where, finding.first_step)

    # --- what users read ------------------------------------------------------------------------------------------
    @property
    def findings(self) -> list[Finding]:
        """The findings so far, most severe first."""
        self._catch_up()
        if self._findings is None:
            self._findings = diagnose(self.history, self.thresholds)
        return self._findings

    def _catch_up(self) -> None:
        """Have the probe read the statistics still on their way from a device (a GPU's arrive a step or two
        after their step, so that the training never waits for them)."""
        probe = self.probe
        if probe is not None and getattr(probe, "attached", False) and hasattr(probe, "catch_up"):
            try:
                probe.catch_up()
            except Exception as error:  # the training goes on regardless: see internal_error
                self.internal_error("reading the last statistics", error)

    @property
    def steps(self) -> int:
        return self.history.steps

    @property
    def notes(self) -> list[str]:
        """Internal notes: errors inside the doctor (the training went on regardless)."""
        return [m if n == 1 else f"{m} (x{n})" for m, n in self.history.notes.items()]

    def to_dict(self) -> dict:
        """The JSON report: {"version": 1, "steps": N, "findings": [...]} (plus "notes" when the doctor had any)."""
        report = {"version": REPORT_VERSION, "steps": self.steps, "findings": [f.to_dict() for f in self.findings]}
        if self.history.notes:
            report["notes"] = self.notes
        return report

    def report(self, path: str | Path, format: str | None = None) -> Path:  # noqa: A002
        """Write the report in `format` ("json", "text" or "html"); by default as the file's name says: .json for the
        JSON report, .txt for plain text, anything else for the HTML page."""
        from leakygrad.doctor import report_html, report_json, report_text

        path = Path(path)
        if format is None:
            format = {".json": "json", ".txt": "text"}.get(path.suffix.lower(), "html")  # noqa: A001
        if format not in ("json", "text", "html"):
            raise ValueError(f"report: format must be 'json', 'text' or 'html', got {format!r}")
        if path.is_dir():
            raise IsADirectoryError(f"report: {path} is a folder; give a file name, such as {path / 'report.html'}")
        if not path.parent.is_dir():
            raise FileNotFoundError(f"report: the folder {path.parent} does not exist; create it first")
        if format == "json":
            report_json.write(self, path)
        elif format == "text":
            path.write_text(report_text.render(self, color=False))
        else:
            report_html.write(self, path)
        return path

    def summary(self) -> str:
        from leakygrad.doctor import report_text

        return report_text.render(self, color=False)

    def __repr__(self) -> str:
        counts = {}
        for f in self.findings:
            counts[f.severity] = counts.get(f.severity, 0) + 1
        parts = [f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items()] or ["no findings"]
        return f"<Doctor: {self.steps} steps, {', '.join(parts)}>"

    def _repr_html_(self) -> str:
        from leakygrad.doctor import report_html

        return report_html.notebook_summary(self)

    # --- as a context manager (watch() attaches the probe) ---------------------------------------------------------
    def __enter__(self):
        if self.probe is not None:
            self.probe.attach()
        return self

    def __exit__(self, *exc):
        if self.probe is not None:
            self.probe.detach()
        return False
