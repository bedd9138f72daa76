"""The HTML report: one self-contained page (inline CSS, inline SVG, a few lines of inline script; no network).

Sections: the findings; the loss curve with the steps where findings began; the gradient norm of each layer
over the steps (heat map, log scale); the gradient flow by depth with each layer's backward gain; dead and
saturated fractions per activation; per-time-step gradient norms of recurrent layers; update/weight ratios;
internal notes.
"""

from __future__ import annotations

import json
import math
from html import escape
from pathlib import Path

from leakygrad.doctor import report_text, svg
from leakygrad.doctor.explain import fmt
from leakygrad.doctor.rules import RELU_FAMILY, SQUASHING, median

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;background:#f3f4f6;color:#1f2328}
main{max-width:820px;margin:0 auto;padding:24px 28px 60px;background:#fff;min-height:100vh}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:17px;margin:32px 0 6px;border-bottom:1px solid #e5e7eb;padding-bottom:4px}
p.lede{color:#555;margin:0 0 16px} p.help{color:#555;font-size:13px;margin:2px 0 8px}
.counts span{display:inline-block;padding:2px 10px;border-radius:10px;margin-right:6px;font-size:13px;color:#fff}
.finding{border:1px solid #e5e7eb;border-left:5px solid #999;border-radius:6px;padding:10px 14px;margin:10px 0}
.finding.error{border-left-color:#c62828} .finding.warning{border-left-color:#ef8f00}
.finding h3{font-size:15px;margin:0 0 4px} .badge{font-size:11px;text-transform:uppercase;color:#fff;
padding:1px 7px;border-radius:8px;margin-right:8px;vertical-align:2px}
.badge.error{background:#c62828} .badge.warning{background:#ef8f00}
.finding code,.notes code{background:#f3f4f6;padding:0 3px;border-radius:3px}
.finding ul{margin:4px 0 4px 18px;padding:0} .finding li{margin:2px 0}
details{margin-top:4px} summary{cursor:pointer;color:#555;font-size:13px}
pre{background:#f6f8fa;padding:8px;border-radius:4px;font-size:12px;overflow-x:auto;max-height:300px}
svg.chart{max-width:100%;height:auto;display:block;margin:4px 0}
p.empty{color:#888;font-style:italic} .ok{color:#2e7d32}
#tip{position:fixed;pointer-events:none;background:#222;color:#fff;font-size:12px;padding:3px 7px;border-radius:4px;
display:none;z-index:10} .notes li{font-size:13px}
"""

SCRIPT = """
window.__doctorErrors = [];
window.addEventListener('error', function (e) {
  window.__doctorErrors.push(String(e.message || e));
  var box = document.getElementById('js-errors'); if (box) box.textContent = window.__doctorErrors.join('\\n');
});
document.addEventListener('DOMContentLoaded', function () {
  var tip = document.getElementById('tip');
  document.querySelectorAll('[data-tip]').forEach(function (el) {
    el.addEventListener('mousemove', function (e) {
      tip.textContent = el.getAttribute('data-tip'); tip.style.display = 'block';
      tip.style.left = (e.clientX + 12) + 'px'; tip.style.top = (e.clientY + 12) + 'px';
    });
    el.addEventListener('mouseleave', function () { tip.style.display = 'none'; });
  });
  var data = JSON.parse(document.getElementById('doctor-data').textContent);
  document.body.setAttribute('data-findings', String(data.findings.length));
  document.body.setAttribute('data-charts', String(document.querySelectorAll('svg.chart').length));
  document.body.setAttribute('data-ready', 'yes');
});
"""


def write(doctor, path: Path) -> None:
    Path(path).write_text(render(doctor), encoding="utf-8")


def render(doctor) -> str:
    findings = doctor.findings
    history = doctor.history
    counts = {}
    for f in findings:
        counts[f.severity] = counts.get(f.severity, 0) + 1
    watched = report_text.watched_names(history, none="nothing (no PyTorch model was seen)")
    sections = [
        "<h1>leakygrad doctor</h1>",
        f'<p class="lede">{report_text.plural(history.steps, "training step")} watched ({history.records_seen} '
        f"sampled, every {doctor.every}); watching: {escape(watched)}.</p>",
        _script_error(doctor),
        _counts(counts, doctor),
        "<h2>Findings</h2>",
        _findings(findings, doctor),
        "<h2>Loss</h2>",
        '<p class="help">Mean loss per stretch of steps (band: lowest to highest); dashed lines: where findings '
        "began.</p>",
        _loss_chart(history, findings),
        "<h2>Gradient norm per layer over the steps</h2>",
        '<p class="help">||d loss / d output|| of each layer with weights (of a model without modules: each tensor\'s '
        "own gradient), nearest the input at the top; log colour scale. A dark band at the top is a vanishing "
        "gradient; a bright one an exploding gradient.</p>",
        _heatmap(history),
        "<h2>Gradient flow by depth</h2>",
        '<p class="help">Median over the recent sampled steps. Top: the gradient norm at each layer, input to output '
        "(log). Bottom: each layer's backward gain, the factor by which the gradient changes from one layer to the "
        "one below (1 = unchanged).</p>",
        _flow(history),
        "<h2>Dead and saturated units</h2>",
        '<p class="help">ReLU family: share of units that were zero for every example of the recent window. '
        "Sigmoid/tanh: share of outputs in the flat tails (derivative under "
        f"{fmt(doctor.thresholds.saturation_derivative * 100)}% of its maximum).</p>",
        _activations(history, doctor.thresholds),
        "<h2>Operations that block the gradient</h2>",
        '<p class="help">Gating operations (clamp, hardtanh, round, sign, a ReLU on the loss, ...): the share of '
        "the nonzero gradient entering each that leaves it as exactly zero, median over recent sampled steps.</p>",
        _blocking_ops(history, doctor.thresholds),
        "<h2>Recurrent layers: gradient per time step</h2>",
        '<p class="help">The gradient reaching each time step t, for each recurrent layer (latest sampled step, log '
        "scale): ||d loss / d input_t|| for a layer run over the whole sequence (nn.RNN, nn.LSTM, nn.GRU), "
        "||d loss / d h_t|| for a cell called once per step. Falling towards t = 0: vanishing over time; rising: "
        "exploding.</p>",
        _time_steps(history),
        "<h2>Update / weight ratio per layer</h2>",
        '<p class="help">||weights after the step - before|| / ||weights||, median over recent sampled steps. '
        "Around 1e-3 is healthy (CS231n's rule of thumb).</p>",
        _update_ratios(history),
        _notes(doctor.notes),
        '<pre id="js-errors" style="display:none"></pre><div id="tip"></div>',
    ]
    # (< > & as JSON escapes: no name can end the script element, or open a comment inside it)
    data = (
        json.dumps(_sanitize(doctor.to_dict())).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>leakygrad doctor: {len(findings)} finding(s)</title><style>{CSS}</style>"
        f"<script>{SCRIPT}</script></head><body><main>"
        + "\n".join(sections)
        + f'</main><script type="application/json" id="doctor-data">{data}</script></body></html>'
    )


def _sanitize(value):
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _sanitize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_sanitize(v) for v in value]
    return value


def _script_error(doctor) -> str:
    if not getattr(doctor, "script_error", None):
        return ""
    return (
        f'<p class="counts"><span style="background:{svg.SEVERITY_COLORS["error"]}">the script stopped after '
        f"{report_text.plural(doctor.history.steps, 'step')} with {escape(doctor.script_error)}</span></p>"
    )


def _counts(counts: dict, doctor) -> str:
    if not counts:
        said = report_text.no_finding(doctor)  # (too little seen to judge is not a clean bill of health)
        return f'<p class="counts{" ok" if said == "no leaks found" else ""}">{escape(said).capitalize()}.</p>'
    spans = [
        f'<span style="background:{svg.SEVERITY_COLORS[s]}">{n} {s}{"s" if n != 1 else ""}</span>'
        for s, n in counts.items()
    ]
    return f'<p class="counts">{"".join(spans)}</p>'


def _code(text: str) -> str:
    """Escape, then turn `backticks` into <code>."""
    parts = escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _findings(findings, doctor) -> str:
    if not findings:
        said = report_text.no_finding(doctor)
        if said == "no leaks found":
            return '<p class="ok">No finding: gradients flow, units are alive, the loss moves.</p>'
        return f'<p class="empty">{escape(said).capitalize()}.</p>'
    cards = []
    for f in findings:
        remedies = "".join(f"<li>{_code(r)}</li>" for r in f.remedies)
        evidence = escape(json.dumps(_sanitize(f.evidence), indent=2))
        cards.append(
            f'<section class="finding {f.severity}"><h3><span class="badge {f.severity}">{f.severity}</span>'
            f"{escape(f.symptom)} at <code>{escape(f.where)}</code>, from step {f.first_step}</h3>"
            f"<p>{_code(f.explanation)}</p><b>What to try</b><ul>{remedies}</ul>"
            f"<details><summary>Evidence (measured)</summary><pre>{evidence}</pre></details></section>"
        )
    return "\n".join(cards)


def _loss_chart(history, findings) -> str:
    loss = history.loss
    buckets = loss.buckets
    if not buckets:
        if loss.nonfinite_steps:
            return (
                f'<p class="empty">The loss was not finite (NaN or Inf) on all {loss.nonfinite_steps} steps recorded, '
                f"from step {loss.first_nonfinite_step}: nothing to draw.</p>"
            )
        return '<p class="empty">No loss was recorded (no backward() on a scalar).</p>'
    series = [
        {
            "name": "loss",
            "x": [(b.first_step + b.last_step) / 2 for b in buckets],
            "y": [b.mean for b in buckets],
            "low": [b.low for b in buckets] if len(buckets) > 1 and history.loss.steps_per_bucket > 1 else None,
            "high": [b.high for b in buckets] if len(buckets) > 1 and history.loss.steps_per_bucket > 1 else None,
            "color": "#1565c0",
        }
    ]
    values = [b.mean for b in buckets]
    log = min(values) > 0 and max(values) / min(values) > 100
    markers = [
        {
            "x": f.first_step,
            "label": f"{f.symptom} at {f.where} from step {f.first_step}",
            "short": f.symptom,
            "color": svg.SEVERITY_COLORS[f.severity],
        }
        for f in findings
    ]
    shade = None
    first_bad = loss.first_nonfinite_step
    if first_bad is not None:
        count = report_text.plural(loss.nonfinite_steps, "step")
        if any(b.first_step > first_bad for b in buckets):  # the loss was finite again after it: mark, not shade
            markers.append({"x": first_bad, "label": f"loss not finite on {count}, the first here", "short": "NaN",
                            "color": svg.NONFINITE_FILL})  # fmt: skip
        else:
            shade = (first_bad, f"loss not finite on {count} from here")
    last_step = max([history.steps - 1] + [f.first_step for f in findings])
    first_step = min([buckets[0].first_step] + [f.first_step for f in findings])
    return svg.line_chart(
        series, "training step", "loss" + (" (log)" if log else ""), log, markers, label="loss", x_max=last_step,
        x_min=first_step, shade_from=shade,
    )  # fmt: skip


def _heatmap(history) -> str:
    records = history.records
    names = [n for n in history.layer_names() if any(n in r.layers for r in records)]
    if not names:
        return '<p class="empty">No layer with weights was measured.</p>'
    values = []
    for name in names:
        row = []
        for r in records:
            layer = r.layers.get(name)
            value = None if layer is None else layer.out_grad_norm
            if value is None and layer is not None:
                value = layer.param_grad_norm
            row.append(value)
        values.append(row)
    return svg.heatmap(names, [r.step for r in records], values, "gradient norm per layer", "||grad||")


def _flow(history) -> str:
    recent = history.recent()
    names = [n for n in history.layer_names() if any(n in r.layers and r.layers[n].has_weights for r in recent)]
    if not names:
        return _nothing_measured(history, "No layer with weights was measured.")
    if all(r.layers[n].kind == "tensor" for r in recent for n in names if n in r.layers):
        return (
            '<p class="empty">A model without modules: its tensors have no output of their own at which the gradient '
            "arriving from the loss could be measured (the heat map above shows each tensor's own gradient).</p>"
        )
    norms = [median([r.layers[n].out_grad_norm for r in recent if n in r.layers]) for n in names]
    norms = [None if math.isnan(v) else v for v in norms]
    gains, gain_names, gain_pairs = [], [], []
    for lower, upper, a, b in zip(names, names[1:], norms, norms[1:]):
        if a is not None and b:
            gains.append(a / b)
            gain_names.append(lower)
            gain_pairs.append(f"{lower} (from {upper})")
    if all(len(pair) <= svg.LABEL_LIMIT for pair in gain_pairs):  # (else each bar names its layer; the tip the pair)
        gain_names = gain_pairs
    depth_chart = svg.line_chart(
        [{"name": "||grad||", "x": list(range(len(names))), "y": norms, "color": "#6a1b9a"}],
        "layer, from the input (left) to the output (right)",
        "||d loss / d output|| (log)",
        log_y=True,
        height=240,
        label="gradient norm by depth",
        x_names=names,
    )
    colors = ["#c62828" if g < 0.5 or g > 2 else "#2e7d32" for g in gains]
    gain_chart = svg.bar_chart(
        gain_names,
        gains,
        "backward gain per layer",
        "gain",
        log=True,
        reference=[(1.0, "1 (no change)", "#333")],
        colors=colors,
        origin=1.0,
        tips=gain_pairs,
    )
    return depth_chart + gain_chart


def _activations(history, thresholds) -> str:
    recent = history.recent()
    depth = {s: a.depth for r in recent for s, a in r.activations.items()}
    sites = sorted(depth, key=lambda s: (depth[s] is None, depth[s] or 0, s))
    if not sites:
        return _nothing_measured(history, "No ReLU, sigmoid or tanh activation was measured.")
    dead_sites, dead_values, sat_sites, sat_values = [], [], [], []
    for site in sites:
        stats = [r.activations[site] for r in recent if site in r.activations]
        function = stats[-1].function
        if function in RELU_FAMILY:
            dead_sites.append(f"{site} ({function})")
            dead_values.append(median([s.dead_fraction for s in stats]))
        elif function in SQUASHING:
            sat_sites.append(f"{site} ({function})")
            sat_values.append(median([s.saturated_fraction for s in stats]))
    parts = []
    if dead_sites:
        parts.append(
            svg.bar_chart(
                dead_sites,
                [None if math.isnan(v) else v for v in dead_values],
                "dead units",
                "dead share",
                reference=[
                    (thresholds.dead_warning, "warning", "#ef8f00"),
                    (thresholds.dead_error, "error", "#c62828"),
                ],
                colors=["#c62828" if v > thresholds.dead_warning else "#1565c0" for v in dead_values],
                low=0.0,
                high=1.0,
            )
        )
    if sat_sites:
        parts.append(
            svg.bar_chart(
                sat_sites,
                [None if math.isnan(v) else v for v in sat_values],
                "saturated outputs",
                "saturated share",
                reference=[
                    (thresholds.saturated_warning, "warning", "#ef8f00"),
                    (thresholds.saturated_error, "error", "#c62828"),
                ],
                colors=["#c62828" if v > thresholds.saturated_warning else "#00838f" for v in sat_values],
                low=0.0,
                high=1.0,
            )
        )
    return "".join(parts)


def _blocking_ops(history, thresholds) -> str:
    recent = history.recent()
    keys = sorted({key for r in recent for key in r.ops})
    if not keys:
        return '<p class="empty">No gating operation took part in the measured steps.</p>'
    values = [median([r.ops[k].blocked_fraction for r in recent if k in r.ops]) for k in keys]
    labels = [k.replace("@", " in ") if k.endswith("@loss") else k.replace("@", " ") for k in keys]
    return svg.bar_chart(
        labels,
        values,
        "blocked gradient",
        "blocked share",
        reference=[(thresholds.blocked_warning, "warning", "#ef8f00"), (thresholds.blocked_error, "error", "#c62828")],
        colors=["#c62828" if v > thresholds.blocked_warning else "#1565c0" for v in values],
        low=0.0,
        high=1.0,
    )


def _time_steps(history) -> str:
    latest = {}
    for r in history.records:
        for name, layer in r.layers.items():
            if layer.recurrent and layer.time_grad_norms:
                latest[name] = layer.time_grad_norms
    if not latest:
        return '<p class="empty">No recurrent layer (nn.RNN, nn.LSTM, nn.GRU or a cell) was measured.</p>'
    palette = ["#1565c0", "#c62828", "#2e7d32", "#6a1b9a", "#ef6c00"]
    series = [
        {"name": name, "x": list(range(len(norms))), "y": norms, "color": palette[i % len(palette)]}
        for i, (name, norms) in enumerate(latest.items())
    ]
    return svg.line_chart(series, "time step t", "gradient norm at step t (log)", log_y=True, label="time steps")


def _nothing_measured(history, otherwise: str) -> str:
    """These sections show the steps before the loss went non-finite: say so when there were none."""
    if history.nonfinite is not None and not history.healthy_records() and history.records:
        return (
            f'<p class="empty">Every sampled step came at or after step {history.nonfinite.step}, where the values '
            "went non-finite: nothing healthy to show (see the nonfinite finding and the heat map).</p>"
        )
    return f'<p class="empty">{otherwise}</p>'


def _update_ratios(history) -> str:
    from leakygrad.doctor.rules import update_ratios

    ratios = update_ratios(history)
    if not ratios:
        return _nothing_measured(history, "No optimiser step was measured.")
    names = list(ratios)
    if not any(ratios[n] > 0 for n in names):
        return '<p class="empty">Every layer\'s update/weight ratio was 0: the optimiser steps changed no weight.</p>'
    return svg.bar_chart(
        names,
        [ratios[n] if ratios[n] > 0 else None for n in names],
        "update ratio",
        "update / weight",
        log=True,
        reference=[(1e-3, "1e-3", "#2e7d32")],
    )


def _notes(notes) -> str:
    if not notes:
        return ""
    items = "".join(f"<li>{_code(n)}</li>" for n in notes)
    return (
        '<h2>Internal notes</h2><p class="help">Errors inside the doctor itself; the training was not affected.</p>'
        f'<ul class="notes">{items}</ul>'
    )


def scoped(css: str, scope: str) -> str:
    """The stylesheet with every rule limited to `scope` (so a notebook page keeps its own look)."""
    rules = []
    for rule in css.split("}"):
        if "{" not in rule:
            continue
        selectors, body = rule.split("{", 1)
        names = [name.strip() for name in selectors.split(",")]
        names = [scope if name == "body" else f"{scope} {name}" for name in names]
        rules.append(f"{','.join(names)}{{{body}}}")
    return "".join(rules)


def notebook_summary(doctor) -> str:
    """The rich display of `dr` in a notebook: counts, the findings, and the loss curve."""
    findings = doctor.findings
    counts = {}
    for f in findings:
        counts[f.severity] = counts.get(f.severity, 0) + 1
    return (
        f'<div><style>{scoped(CSS, ".lg-doctor")}</style><div class="lg-doctor">'
        f"<b>leakygrad doctor</b>: {report_text.plural(doctor.steps, 'step')} watched. "
        f"{_counts(counts, doctor)}{_findings(findings, doctor)}"
        f"{_loss_chart(doctor.history, findings)}</div></div>"
    )
