"""The terminal summary: one line per finding, most severe first, then where the full report is."""

from __future__ import annotations

from leakygrad.doctor.explain import fmt

STYLE = {"error": "bold red", "warning": "yellow"}
WHERE_WIDTH = 32  # the "where" column is padded to the longest, up to this


def first_sentence(text: str, limit: int = 110) -> str:
    """The explanation's first sentence for a one-line summary; if it is longer than `limit`, up to its last clause
    (a colon or semicolon) that fits, else its last whole word that fits, then "...": never cut mid-word."""
    sentence = text.split(". ")[0].rstrip(".")
    if len(sentence) <= limit:
        return sentence
    head = sentence[: limit - 3]
    clause = max(head.rfind(": "), head.rfind("; "))
    if clause >= limit // 2:
        return head[:clause] + "..."
    return head[: head.rfind(" ")].rstrip(",;:") + "..." if " " in head else head + "..."


PASSES_PER_STEP_NOTED = 8  # backward passes per optimiser step from which a short run's summary says so


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def no_finding(doctor) -> str:
    """What a report without findings says: that nothing was seen, too little to judge, or no leak."""
    history = doctor.history
    if history.steps == 0:
        return "nothing to judge: no training step was seen (no backward() through a watched model)"
    needed = doctor.thresholds.min_records
    if history.records_seen < needed:
        passes = history.backward_passes
        if passes >= PASSES_PER_STEP_NOTED * history.steps:  # (not too short a run: too few optimiser steps)
            return (
                f"no leaks found, but only {plural(history.records_seen, 'sampled step')}: the optimiser stepped "
                f"{plural(history.steps, 'time')} for {passes} backward passes (is `optimizer.step()` outside the "
                f"batch loop?); most rules need {needed} sampled steps (rerun with --every 1)"
            )
        return (
            f"no leaks found, but only {plural(history.records_seen, 'sampled step')}: most rules need {needed} "
            "(run longer, or with --every 1)"
        )
    if not history.param_checks and not any(r.layers for r in history.records):
        return (
            "nothing measured: no watched layer has parameters that are trained (frozen with requires_grad=False, "
            "stepped by no optimiser, or copied out of the layers: the optimiser steps tensors no watched module "
            "holds, as `torch.func.stack_module_state` makes), so no gradient could be judged"
        )
    return "no leaks found"


WATCHED_SHOWN = 8  # models and optimisers named in the summary's first line; the rest counted


def watched_names(history, none: str) -> str:
    """The models and optimisers watched, for a summary's first line: the first few, and how many more (a script that
    deep-copies its model at every task, as Reptile does, makes hundreds)."""
    names = list(dict.fromkeys(history.watched))
    if not names:
        return none
    shown = ", ".join(names[:WATCHED_SHOWN])
    return shown if len(names) <= WATCHED_SHOWN else f"{shown} and {len(names) - WATCHED_SHOWN} more"


def lines(doctor) -> list[tuple[str, str]]:
    """(style, text) pairs; style is a rich style name or ''."""
    history = doctor.history
    findings = doctor.findings
    out = []
    watched = watched_names(history, none="no PyTorch model seen")
    head = (
        f"leakygrad doctor: {plural(history.steps, 'step')}, {history.records_seen} sampled (every {doctor.every}); "
        f"{watched}"
    )
    out.append(("bold", head))
    if getattr(doctor, "script_error", None):
        out.append(("red", f"  the script stopped after {plural(history.steps, 'step')} with {doctor.script_error}"))
    if not findings:
        out.append(("green", f"  {no_finding(doctor)}"))
    width = max((len(f.symptom) for f in findings), default=0)
    where_width = min(max((len(f.where) for f in findings), default=0), WHERE_WIDTH)  # (one long name: no gulf)
    for f in findings:
        text = f"  {f.severity.upper():7s} {f.symptom:{width}s}  {f.where:{where_width}s}  (from step {f.first_step}): "
        text += first_sentence(f.explanation)
        out.append((STYLE[f.severity], text))
    for note in doctor.notes:
        out.append(("dim", f"  note (inside the doctor, training unaffected): {note}"))
    return out


def render(doctor, color: bool = False, report_paths=()) -> str:
    text = "\n".join(t for _, t in lines(doctor))
    for path in report_paths:
        text += f"\n  full report: {path}"
    return text


def print_summary(doctor, report_paths=(), file=None) -> None:
    """Print to the terminal (stderr by default, so the script's own stdout stays clean), in colour if rich is there."""
    import sys

    file = file or sys.stderr
    try:
        from rich.console import Console
        from rich.text import Text
    except ImportError:
        print(render(doctor, report_paths=report_paths), file=file)
        return
    console = Console(file=file, highlight=False, soft_wrap=True)
    for style, text in lines(doctor):
        console.print(Text(text, style=style))
    for path in report_paths:
        console.print(Text(f"  full report: {path}", style="bold"))


__all__ = ["fmt", "lines", "print_summary", "render"]
