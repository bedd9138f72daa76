"""What a practitioner trips over when running the doctor from the command line and reading its reports: deep
models whose layer names differ only in the middle, long runs, narrow loss ranges, scripts run from another folder.
"""

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from leakygrad.cli import main
from leakygrad.doctor import Doctor, report_html, report_text, svg
from leakygrad.doctor.findings import Finding

SRC = Path(__file__).resolve().parents[2] / "src"

DEEP_NAMES = [f"transformer_encoder_blocks.{i}.{leaf}" for i in range(40) for leaf in ("attention_projection",
              "feedforward_expansion")]  # fmt: skip


def texts(chart: str) -> list[str]:
    return [t for t in re.findall(r"<text[^>]*>([^<]*)</text>", chart)]


# --- layer names of a deep model ---------------------------------------------------------------------------------


def test_the_names_of_a_deep_models_layers_stay_apart_when_shortened():
    """`transformer_encoder_blocks.12.feedforward_expansion` was cut in the middle to `transformer_enc…rward_expansion`:
    the block's number, the one thing that told the rows apart, was what went. Every row read the same."""
    short = [svg.shortened(name) for name in DEEP_NAMES]
    assert all(len(s) <= 32 for s in short)
    assert len(set(short)) == len(DEEP_NAMES), short[:4]
    assert svg.shortened("transformer_encoder_blocks.12.feedforward_expansion").endswith(".12.feedforward_expansion")
    assert svg.shortened("encoder.0") == "encoder.0"  # (names that fit are left alone)


def test_a_deep_models_heat_map_bars_and_depth_axis_name_each_layer_apart():
    values = [[10.0 ** -(i % 9) for _ in range(6)] for i in range(len(DEEP_NAMES))]
    heat = svg.heatmap(DEEP_NAMES, list(range(0, 60, 10)), values, "gradient norm per layer", "||grad||")
    rows = [t for t in texts(heat) if "transformer" in t or t.startswith("t")][: len(DEEP_NAMES)]
    assert len(set(rows)) == len(rows) > 10
    bars = svg.bar_chart(DEEP_NAMES, [1e-3] * len(DEEP_NAMES), "update ratio", "update / weight", log=True)
    labels = [t for t in texts(bars) if "…" in t or "." in t and not t[0].isdigit()]
    assert len(set(labels)) == len(DEEP_NAMES)
    depth = svg.line_chart([{"name": "g", "x": list(range(len(DEEP_NAMES))), "y": [1.0] * len(DEEP_NAMES)}],
                           "layer", "g", log_y=True, x_names=DEEP_NAMES)  # fmt: skip
    names = [t for t in texts(depth) if "." in t and not t[0].isdigit()]
    assert len(names) >= 2 and len(set(names)) == len(names), names


def test_the_gain_chart_of_a_deep_model_names_the_layer_not_the_cut_pair():
    """Each gain bar read `transformer_enc…ward_expansion)`: the pair `lower (from upper)` was cut to its ends."""
    doctor = Doctor(every=1)
    from leakygrad.doctor.stats import LayerStats, StepRecord

    for step in range(8):
        layers = {name: LayerStats(name, "Linear", i, True, out_grad_norm=0.5 ** (len(DEEP_NAMES) - i),
                                   param_grad_norm=1e-3, weight_norm=1.0, update_ratio=1e-3)
                  for i, name in enumerate(DEEP_NAMES)}  # fmt: skip
        doctor.record(StepRecord(step=step, loss=1.0, layers=layers))
        doctor.add_loss(step, 1.0)
    doctor.set_steps(8)
    html = report_html.render(doctor)
    flow = html[html.index("<h2>Gradient flow") : html.index("<h2>Dead and saturated")]
    gain_chart = flow[flow.index('aria-label="backward gain per layer"') :]
    labels = [t for t in texts(gain_chart) if t.endswith(("projection", "expansion"))]
    assert len(labels) == len(DEEP_NAMES) - 1 and len(set(labels)) == len(labels), labels[:3]
    assert "(from transformer_encoder_blocks.0.feedforward_expansion)" in gain_chart  # (the pair, in the tip)


def test_the_last_category_name_on_the_depth_axis_is_not_cut_off_by_the_charts_edge():
    """A name centred under the right-most tick ran past the SVG's right edge, where the browser clips it."""
    names = [f"block_{i:02d}.feedforward_expansion" for i in range(7)]
    chart = svg.line_chart([{"name": "g", "x": list(range(7)), "y": [1.0] * 7}], "layer", "g", x_names=names)
    labels = re.findall(r'<text x="([^"]+)" y="[^"]+" text-anchor="(\w+)"[^>]*>([^<]*expansion)<', chart)
    assert labels
    for x, anchor, text in labels:
        width = 6.5 * len(text)  # (about 6 px a character at 11 px)
        left = {"start": 0, "middle": width / 2, "end": width}[anchor]
        assert float(x) - left >= 0 and float(x) - left + width <= svg.WIDTH, (text, x, anchor)


# --- axes ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("low, high", [(8.5512, 8.5519), (2.30251, 2.30259), (1234.5, 1234.9), (0.5, 3.0)])
def test_no_two_ticks_of_an_axis_read_the_same(low, high):
    """A loss between 8.5512 and 8.5519 was labelled 8.55 at every tick: an axis that says nothing."""
    chart = svg.line_chart([{"name": "loss", "x": [0, 1, 2], "y": [high, low, low]}], "training step", "loss")
    y_labels = re.findall(r'<text x="60" y="[^"]+" text-anchor="end" fill="#555">([^<]*)</text>', chart)
    assert len(y_labels) >= 2 and len(set(y_labels)) == len(y_labels), y_labels


def test_a_finding_from_step_0_is_marked_on_a_long_runs_loss_chart():
    """With more than 1024 steps the loss is kept in stretches of several steps, drawn at their middles: the axis
    began at step 3.5, and the dashed lines of every finding from step 0 fell off it."""
    doctor = Doctor(every=16)
    for step in range(6000):
        doctor.add_loss(step, 2.0 + 0.001 * (step % 5))
    doctor.set_steps(6000)
    assert doctor.history.loss.steps_per_bucket > 1
    findings = [Finding("stalled_loss", "loss", 0, "warning"), Finding("vanishing_gradient", "net.0", 0, "error")]
    chart = report_html._loss_chart(doctor.history, findings)
    marker = re.search(r'<line x1="([^"]+)"[^>]*stroke-dasharray="4 3"[^>]*><title>([^<]*)</title>', chart)
    assert marker and "from step 0" in marker.group(2), "no dashed line for the findings from step 0"
    assert float(marker.group(1)) == pytest.approx(64, abs=0.5)  # (the plot's left edge is step 0)


# --- the terminal summary ------------------------------------------------------------------------------------------


def test_the_summarys_columns_line_up_as_the_readme_shows():
    doctor = Doctor()
    doctor._findings = [
        Finding("vanishing_gradient", "model.0", 0, "error", explanation="The gradient vanishes. More."),
        Finding("stalled_loss", "loss", 0, "warning", explanation="The loss is stuck. More."),
    ]
    rows = [t for _, t in report_text.lines(doctor) if t.startswith(("  ERROR", "  WARNING"))]
    assert len({row.index("(from step") for row in rows}) == 1, rows


# --- the script, as Python runs it ---------------------------------------------------------------------------------


@pytest.mark.parametrize("folder, typed", [("run", "../train.py"), (".", "./train.py")])
def test_file_argv_and_tracebacks_name_the_script_as_typed(tmp_path, folder, typed):
    """`python ../train.py` gives `__file__` = `<cwd>/../train.py` (made absolute, not normalised); the runner
    normalised it to `/.../train.py`, and the script's own tracebacks named another path than Python's would. And
    `./train.py` became `train.py` in `sys.argv[0]` (the path went through `Path`, which drops the `./`)."""
    (tmp_path / "train.py").write_text("import sys\nprint(__file__, sys.argv[0])\nraise ValueError('boom')\n")
    (tmp_path / "run").mkdir()
    env = dict(os.environ, PYTHONPATH=str(SRC))
    plain = subprocess.run([sys.executable, typed], capture_output=True, text=True, cwd=tmp_path / folder, env=env,
                           timeout=60)  # fmt: skip
    doctor = subprocess.run([sys.executable, "-m", "leakygrad", "doctor", "--quiet", "--json", "r.json", typed],
                            capture_output=True, text=True, cwd=tmp_path / folder, env=env, timeout=120)  # fmt: skip
    assert plain.returncode == doctor.returncode == 1, doctor.stderr
    assert doctor.stdout == plain.stdout == f"{os.path.join(tmp_path / folder, typed)} {typed}\n"
    assert doctor.stderr == plain.stderr  # (the traceback, file names and all)


def test_a_script_that_changes_folder_then_fails_shows_only_its_own_traceback(tmp_path):
    """The traceback is cut to the script's frames by the script's file name, which was worked out again after the
    run from the path as typed: after an `os.chdir` (Hydra does one) it named another file, nothing matched, and the
    runner's own frames (`runner.py`, `exec`) were shown above the script's."""
    (tmp_path / "out").mkdir()
    (tmp_path / "train.py").write_text("import os\nos.chdir('out')\nraise ValueError('bad batch')\n")
    env = dict(os.environ, PYTHONPATH=str(SRC))
    plain = subprocess.run([sys.executable, "train.py"], capture_output=True, text=True, cwd=tmp_path, env=env,
                           timeout=60)  # fmt: skip
    doctor = subprocess.run([sys.executable, "-m", "leakygrad", "doctor", "--quiet", "--json", "r.json", "train.py"],
                            capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)  # fmt: skip
    assert doctor.returncode == plain.returncode == 1
    assert "runner.py" not in doctor.stderr
    assert doctor.stderr == plain.stderr


def test_the_heat_maps_colour_key_is_readable_for_a_single_layer():
    """With one layer (a frozen encoder and a trained head) the colour key was as tall as the one row, 16 px, and
    its top and bottom values were written over each other (`1.16` on `0.0116`)."""
    chart = svg.heatmap(["head"], [0, 4, 8], [[1.16, 0.5, 0.0116]], "gradient norm per layer", "||grad||")
    top, bottom = (float(y) for y in re.findall(r'<text x="[^"]+" y="([^"]+)" fill="#333">[0-9.e-]+</text>', chart))
    assert bottom - top >= 24  # (two lines of 11 px type, apart)
    keys = [float(y) for y in re.findall(r'<text x="[^"]+" y="([^"]+)" text-anchor="start" fill="#555">', chart)]
    height = float(re.search(r'height="(\d+)"', chart).group(1))
    assert max(keys) <= height  # (the legend of 0, n/a and NaN/Inf still inside the chart)


# --- in a browser --------------------------------------------------------------------------------------------------

LAYOUT_CHECK = """<script>
window.addEventListener('load', function () {
  var problems = [];
  document.querySelectorAll('svg.chart').forEach(function (chart) {
    var edge = chart.getBoundingClientRect(), name = chart.getAttribute('aria-label');
    var boxes = Array.from(chart.querySelectorAll('text')).map(function (t) {
      var b = t.getBoundingClientRect(); return {l: b.left, t: b.top, r: b.right, b: b.bottom, s: t.textContent};
    });
    boxes.forEach(function (b) {
      if (b.l < edge.left - 0.5 || b.r > edge.right + 0.5 || b.t < edge.top - 0.5 || b.b > edge.bottom + 0.5)
        problems.push(name + ': cut off: ' + b.s);
    });
    boxes.forEach(function (a, i) { boxes.slice(i + 1).forEach(function (c) {
      if (Math.min(a.r, c.r) - Math.max(a.l, c.l) > 1 && Math.min(a.b, c.b) - Math.max(a.t, c.t) > 1)
        problems.push(name + ': overlap: ' + a.s + ' / ' + c.s);
    }); });
  });
  document.body.setAttribute('data-layout', problems.join(' | ') || 'ok');
});
</script>"""


def deep_doctor(names, steps=8):
    from leakygrad.doctor.stats import LayerStats, StepRecord

    doctor = Doctor(every=1)
    for step in range(steps):
        layers = {name: LayerStats(name, "Linear", i, True, out_grad_norm=0.5 ** (len(names) - i),
                                   param_grad_norm=1e-3, weight_norm=1.0, update_ratio=1e-3)
                  for i, name in enumerate(names)}  # fmt: skip
        doctor.record(StepRecord(step=step, loss=8.5512 + 1e-4 * (step % 3), layers=layers))
    for step in range(steps):
        doctor.add_loss(step, 8.5512 + 1e-4 * (step % 3))
    doctor.set_steps(steps)
    return doctor


@pytest.mark.slow
@pytest.mark.parametrize("names", [DEEP_NAMES, ["head"], [f"block_{i:02d}.feedforward_expansion" for i in range(7)]])
def test_no_label_of_the_report_is_cut_off_or_written_over_another_in_chromium(tmp_path, names):
    """The reports of a deep model with long layer names, of a single trained layer, and of a few long names, drawn
    by Chromium: every text of every chart lies inside its chart and clear of the others."""
    page = tmp_path / "report.html"
    page.write_text(report_html.render(deep_doctor(names)).replace("</body>", LAYOUT_CHECK + "</body>"))
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "headless Chromium is needed for this test: apt-get install chromium (see DEVELOPERS.md)"
    done = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           f"--user-data-dir={tmp_path / 'profile'}", "--window-size=900,2400",
                           "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    layout = re.search(r'data-layout="([^"]*)"', done.stdout).group(1)
    assert layout == "ok", html.unescape(layout)


def test_a_run_with_no_training_step_leaves_an_earlier_report_as_it_was(tmp_path, capsys, monkeypatch):
    """`leakygrad doctor train.py --help` runs the script, which prints its help and exits: a report of nothing
    replaced the last real one. It is left as it was, and the terminal says so; with no earlier report, one is
    written (it says that nothing was measured)."""
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "train.py"
    script.write_text(
        "import sys, torch\n"
        "if '--help' in sys.argv:\n    print('usage: train.py'); sys.exit(0)\n"
        "m = torch.nn.Linear(2, 1)\no = torch.optim.SGD(m.parameters(), lr=0.1)\n"
        "for _ in range(5):\n    l = m(torch.ones(4, 2)).pow(2).mean()\n"
        "    o.zero_grad()\n    l.backward()\n    o.step()\n"
    )
    assert main(["doctor", "--json", "r.json", str(script)]) == 0
    real = (tmp_path / "r.json").read_text()
    assert json.loads(real)["steps"] == 5
    capsys.readouterr()
    assert main(["doctor", "--json", "r.json", str(script), "--help"]) == 0
    assert (tmp_path / "r.json").read_text() == real
    assert "no training step ran, so r.json was left as it was" in capsys.readouterr().err
    assert main(["doctor", "--json", "fresh.json", str(script), "--help"]) == 0
    assert json.loads((tmp_path / "fresh.json").read_text())["steps"] == 0


def test_running_a_module_with_dash_m_is_refused_with_what_to_do(capsys):
    assert main(["doctor", "-m", "mypkg.train", "--epochs", "3"]) == 2
    err = capsys.readouterr().err
    assert "-m (running a module, as python -m does) is not supported" in err
    assert "leakygrad doctor path/to/mypkg/train.py [ARGS...]" in err


def test_a_scripts_own_dash_m_option_is_its_own(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "argv.py").write_text("import sys\nprint(sys.argv)\n")
    assert main(["doctor", "--quiet", "argv.py", "-m", "foo"]) == 0
    assert "['argv.py', '-m', 'foo']" in capsys.readouterr().out
