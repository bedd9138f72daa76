"""The reports: the JSON schema (exactly the documented fields), the terminal summary, the HTML page's parts."""

import json
import re

from leakygrad.doctor import REPORT_VERSION, Doctor, report_html, report_json, report_text
from leakygrad.doctor.stats import ActivationStats, LayerStats, NonfiniteEvent, OpStats, StepRecord

FINDING_FIELDS = ["symptom", "where", "first_step", "severity", "evidence", "explanation", "remedies"]


def sick_doctor():
    """A doctor fed a synthetic run with several leaks (and a NaN in the evidence)."""
    doctor = Doctor(every=4)
    for step in range(0, 200, 4):
        layers = {
            f"net.{2 * i}": LayerStats(
                f"net.{2 * i}", "Linear", 2 * i, True, out_grad_norm=10.0 ** (2 * i - 8), param_grad_norm=1e-3,
                weight_norm=1.0, update_ratio=1e-3,
            )
            for i in range(5)
        }  # fmt: skip
        layers["rnn"] = LayerStats("rnn", "RNN", 10, True, out_grad_norm=1.0, recurrent=True,
                                   time_grad_norms=[0.5**k for k in range(19, -1, -1)])  # fmt: skip
        activations = {"net.1": ActivationStats("net.1", "sigmoid", 8, 64, saturated_fraction=0.9,
                                                mean_derivative=float("nan"), depth=1)}  # fmt: skip
        ops = {"clamp@loss": OpStats("clamp", "loss", 0.97, 64)}
        doctor.record(StepRecord(step=step, loss=2.3, layers=layers, activations=activations, ops=ops))
    for step in range(200):
        doctor.add_loss(step, 2.3 - 0.001 * (step % 3))
    doctor.set_steps(200)
    doctor.set_nonfinite(NonfiniteEvent(step=150, phase="forward", where="log", op="log", module="net.8"))
    doctor.note("forward hook: RuntimeError: synthetic (torch_probe.py:1)")
    return doctor


def test_json_report_has_exactly_the_documented_fields(tmp_path):
    doctor = sick_doctor()
    path = doctor.report(tmp_path / "report.json")
    report = json.loads(path.read_text())
    assert list(report) == ["version", "steps", "findings", "notes"]
    assert report["version"] == REPORT_VERSION == 1 and report["steps"] == 200
    assert report["findings"], "the synthetic run has leaks"
    for finding in report["findings"]:
        assert list(finding) == FINDING_FIELDS
        assert finding["severity"] in ("error", "warning")
        assert isinstance(finding["first_step"], int) and isinstance(finding["remedies"], list)
    symptoms = {f["symptom"] for f in report["findings"]}
    assert {"nonfinite", "vanishing_gradient", "saturated_activation", "blocked_gradient"} <= symptoms
    assert not re.search(r"[:\[,]\s*-?(NaN|Infinity)", path.read_text())  # the NaN in the evidence became null
    assert report["notes"] == ["forward hook: RuntimeError: synthetic (torch_probe.py:1)"]


def test_a_clean_run_has_no_notes_key():
    doctor = Doctor()
    assert json.loads(report_json.dumps(doctor)) == {"version": 1, "steps": 0, "findings": []}


def test_terminal_summary_one_line_per_finding_most_severe_first():
    doctor = sick_doctor()
    text = report_text.render(doctor, report_paths=["out.html"])
    lines = text.splitlines()
    finding_lines = [line for line in lines if line.startswith(("  ERROR", "  WARNING"))]
    assert len(finding_lines) == len(doctor.findings)
    severities = [line.split()[0] for line in finding_lines]
    assert severities == sorted(severities, key=["ERROR", "WARNING"].index)
    assert lines[-1] == "  full report: out.html"
    assert any("note (inside the doctor" in line for line in lines)


def test_html_is_self_contained_and_has_every_part(tmp_path):
    doctor = sick_doctor()
    html = report_html.render(doctor)
    for title in ("Findings", "Loss", "Gradient norm per layer", "Gradient flow by depth", "Dead and saturated",
                  "Operations that block", "Recurrent layers", "Update / weight ratio", "Internal notes"):  # fmt: skip
        assert f"<h2>{title}" in html, title
    assert html.count('<svg class="chart"') >= 7
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)  # nothing fetched from anywhere
    assert "<link" not in html and "@import" not in html
    assert 'id="doctor-data"' in html and "vanishing_gradient" in html
    # findings are marked on the loss curve, and each cell of the heat map says its value
    assert html.count("stroke-dasharray") >= len(doctor.findings)
    assert "net.0, step 4: " in html


def test_notebook_display():
    doctor = sick_doctor()
    html = doctor._repr_html_()
    assert "leakygrad doctor" in html and "vanishing_gradient" in html and "<svg" in html
    style = html[html.index("<style>") + 7 : html.index("</style>")]
    assert all(rule.startswith(".lg-doctor") for rule in style.split("}") if rule)  # scoped: the page keeps its look
    assert repr(doctor).startswith("<Doctor: 200 steps, ")
