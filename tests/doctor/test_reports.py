"""The reports: the JSON schema (exactly the documented fields), the terminal summary, the HTML page's parts."""

import json
import re

import pytest

from leakygrad.doctor import REPORT_VERSION, Doctor, report_html, report_json, report_text
from leakygrad.doctor.runner import run_script
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


def test_a_non_finite_gradient_has_its_own_colour_in_the_heat_map():
    from leakygrad.doctor import svg

    chart = svg.heatmap(["net.0"], [0, 4, 8], [[1.0, float("nan"), 0.0]], "gradient norm", "")
    cells = re.findall(r'<rect x="[^"]+" y="10" width="[^"]+" height="16" fill="([^"]+)"[^>]*data-tip="([^"]+)"', chart)
    fills = {tip.split(": ")[1].split(" ")[0]: fill for fill, tip in cells}
    assert fills["not"] == svg.NONFINITE_FILL != fills["0"] == "#000"  # (a NaN was painted black: "exactly 0")
    assert "NaN/Inf" in chart


def nan_run(first_nan: int, steps: int = 60):
    doctor = Doctor(every=4)
    for step in range(steps):
        doctor.add_loss(step, 1.0 / (1 + step) if step < first_nan else float("nan"))
    doctor.set_steps(steps)
    doctor.set_nonfinite(NonfiniteEvent(step=first_nan, phase="forward", where="log", op="log", module="net.2"))
    return doctor


def test_the_loss_chart_shows_where_the_loss_stopped_being_finite():
    html = report_html.render(nan_run(first_nan=30))
    loss_section = html[html.index("<h2>Loss") : html.index("<h2>Gradient norm per layer")]
    assert "loss not finite on 30 steps from here" in loss_section  # the shaded stretch
    assert "nonfinite at log from step 30" in loss_section  # its marker (it fell off the axis, which ended at 29)
    only_nan = report_html.render(nan_run(first_nan=0))
    assert "The loss was not finite (NaN or Inf) on all 60 steps recorded, from step 0" in only_nan
    assert "No loss was recorded" not in only_nan


def test_a_report_with_nothing_or_too_little_to_judge_says_so():
    nothing = Doctor()
    assert "  nothing to judge: no training step was seen" in report_text.render(nothing)
    assert "no leaks found" not in report_text.render(nothing)
    assert "Nothing to judge" in report_html.render(nothing) and "the loss moves" not in report_html.render(nothing)
    short = Doctor(every=16)
    short.record(StepRecord(step=0, loss=1.0))
    short.add_loss(0, 1.0)
    short.set_steps(1)
    text = report_text.render(short)
    assert text.startswith("leakygrad doctor: 1 step, 1 sampled")  # (it said "1 steps")
    assert "no leaks found, but only 1 sampled step: most rules need 3" in text
    # few steps for many backward passes (optimizer.step() once per epoch): not "run longer", which would not help
    short.history.backward_passes = 43
    text = report_text.render(short)
    assert "the optimiser stepped 1 time for 43 backward passes" in text and "run longer" not in text


def test_a_chart_with_no_series_says_so_whatever_its_axis():
    from leakygrad.doctor import svg

    assert "No data for loss" in svg.line_chart([], "step", "loss", x_max=10, label="loss")


def test_one_step_is_one_step():
    short = Doctor(every=16)
    short.record(StepRecord(step=0, loss=1.0))
    short.set_steps(1)
    assert "1 training step watched" in report_html.render(short)  # (it said "1 training steps")


def test_too_little_to_judge_is_no_green_banner():
    for doctor in (Doctor(), Doctor(every=16)):
        html = report_html.render(doctor)
        banner = html[html.index('<p class="counts') : html.index("<h2>Findings")]
        assert "ok" not in banner.split(">")[0] and "No leaks found" not in banner  # (a green "No leaks found.")
        assert "Nothing to judge" in banner


def test_sections_after_a_nan_from_the_first_step_say_why_they_are_empty():
    doctor = nan_run(first_nan=0)
    layer = LayerStats("net.0", "Linear", 0, True, out_grad_norm=float("nan"), update_ratio=1e-3)
    for step in (0, 16, 32):
        doctor.record(StepRecord(step=step, loss=float("nan"), layers={"net.0": layer}))
    html = report_html.render(doctor)
    assert "No layer with weights was measured" not in html  # (there were: every step came after the NaN)
    assert html.count("Every sampled step came at or after step 0") >= 2


def test_update_ratios_of_zero_are_said_not_hidden():
    doctor = Doctor(every=1)
    for step in range(6):
        layer = LayerStats("net.0", "Linear", 0, True, out_grad_norm=1.0, weight_norm=1.0, update_ratio=0.0)
        doctor.record(StepRecord(step=step, loss=1.0, layers={"net.0": layer}))
    html = report_html.render(doctor)
    assert "update/weight ratio was 0" in html and "No data for update ratio" not in html


def test_the_heat_maps_colours_do_not_stretch_a_small_change_over_the_whole_ramp():
    from leakygrad.doctor import svg

    chart = svg.heatmap(["head"], [0, 4], [[0.117, 0.119]], "gradient norm", "")
    fills = re.findall(r'<rect x="[^"]+" y="10" width="[^"]+" height="16" fill="([^"]+)"', chart)
    assert fills[0] == fills[1] or abs(int(fills[0][1:3], 16) - int(fills[1][1:3], 16)) < 16  # (yellow vs purple)
    many = svg.heatmap([f"layer{i}" for i in range(65)], [0, 4], [[1.0, 1.0]] * 65, "gradient norm", "")
    assert ">layer0</text>" in many and ">layer64</text>" in many  # (65 rows had no names at all)


def test_the_heat_map_places_thinned_records_at_their_steps_and_ticks_are_whole_steps():
    from leakygrad.doctor import svg

    chart = svg.heatmap(["net.0"], [0, 96, 98, 100], [[1.0, 1.0, 1.0, 1.0]], "gradient norm", "")
    found = re.findall(r'<rect x="([^"]+)" y="10" width="([^"]+)" height="16"', chart)
    cells = [(float(x), float(w)) for x, w in found]
    widths = [w for _, w in cells]
    assert widths[0] == pytest.approx(4 * widths[1], abs=1.5)  # a long gap shows wider, up to 4x the closest spacing
    assert cells[-1][0] + widths[-1] > 500  # the grid is filled: no sliver of cells after a long gap
    steps = [0] + list(range(4800, 6000, 10)) + [5990]  # a long run's thinned history; a step recorded twice
    long_run = svg.heatmap(["net.0"], steps, [[1.0] * len(steps)], "gradient norm", "")
    long_widths = sorted(float(w) for w in re.findall(r'y="10" width="([^"]+)" height="16"', long_run))
    assert long_widths[0] > 1 and long_widths[len(long_widths) // 2] > 3  # (112 cells in 74 of 599 px; width 0)
    labels = re.findall(r'text-anchor="middle" fill="#555">([^<]+)</text>', chart)
    assert labels and all(label.isdigit() for label in labels)
    line = svg.line_chart([{"name": "loss", "x": [0, 2500], "y": [1.0, 0.5]}], "training step", "loss", label="loss")
    assert "e+03" not in line and ">2000<" in line  # (step ticks read 1.5e+03, 2.5e+03)


def test_bars_start_at_their_origin_zero_is_written_and_long_names_are_cut_in_the_middle():
    from leakygrad.doctor import svg

    name = "encoder.blocks.11.attention.output.dense." + "x" * 150
    chart = svg.bar_chart([name, "b", "c"], [0.5, 2.0, 0.0], "gain", "gain", log=True, origin=1.0)
    bars = re.findall(r'<rect x="([^"]+)" y="[^"]+" width="([^"]+)"', chart)
    (x_low, w_low), (x_high, _) = [(float(x), float(w)) for x, w in bars[:2]]
    assert x_low + w_low == pytest.approx(x_high, abs=0.2)  # 0.5 ends where 2.0 begins: both at 1 (no change)
    assert 'fill="#999">0</text>' in chart  # (a gain of exactly 0 read "n/a")
    texts = re.findall(r">([^<]+)</text>", chart)
    assert name not in texts and any(t.startswith("encoder.blocks.") and "…" in t for t in texts)


@pytest.mark.parametrize("value", [4e15, 1e17, 1e30, -3e20])
def test_a_constant_loss_of_any_size_is_drawn(value):
    """A loss that never moves gives the chart a range of one value, widened to draw it: by 0.5 either side it was
    no range at 1e17 (a division by zero), and between 2.3e15 and 9e15 the ticks stepped by nothing forever."""
    from leakygrad.doctor import svg

    scale = svg.Scale(value, value, 0, 100)
    assert scale.low < value < scale.high and scale(value) == pytest.approx(50)
    assert 2 <= len(scale.ticks()) <= svg.MAX_TICKS
    doctor = Doctor(every=4)
    for step in range(5):
        doctor.add_loss(step, value)
    doctor.set_steps(5)
    assert "<svg" in report_html.render(doctor)[report_html.render(doctor).index("<h2>Loss") :]


def test_no_name_can_break_out_of_the_pages_data_block():
    """The findings go into the page as JSON inside a script element. A name holding `<!--<script>` put the
    browser's parser in a state where the page's own `</script>` no longer closed it (found in Chromium): now no
    `<`, `>` or `&` is written there as itself."""
    doctor = Doctor(every=4)
    for step in range(40):
        doctor.add_loss(step, 1.0)
    doctor.set_steps(40)
    doctor.set_nonfinite(NonfiniteEvent(step=3, phase="update", where="<!--<script>&", module="<!--<script>&"))
    page = report_html.render(doctor)
    block = page[page.index('id="doctor-data">') + len('id="doctor-data">') : page.rindex("</script>")]
    assert not set("<>&") & set(block)
    assert json.loads(block)["findings"][0]["where"] == "<!--<script>&"


def test_a_nan_loss_the_run_got_over_is_marked_not_shaded_to_the_end():
    doctor = Doctor(every=4)
    for step in range(100):
        doctor.add_loss(step, float("nan") if step == 20 else 1.0 / (1 + step))
    doctor.set_steps(100)
    html = report_html.render(doctor)
    loss_section = html[html.index("<h2>Loss") : html.index("<h2>Gradient norm per layer")]
    assert "loss not finite on 1 step, the first here" in loss_section
    assert "from here" not in loss_section.replace("the first here", "")  # (no shaded stretch to the end)


@pytest.mark.parametrize(("value", "fill"), [(0.0, "#000"), (float("nan"), "NONFINITE")])
def test_a_heat_map_of_only_zeros_or_only_nans_is_drawn_in_their_colours(value, fill):
    from leakygrad.doctor import svg

    chart = svg.heatmap(["net.0", "net.2"], [0, 4], [[value, value], [value, None]], "gradient norm", "")
    assert "No data" not in chart
    expected = svg.NONFINITE_FILL if fill == "NONFINITE" else fill
    assert len(re.findall(f'fill="{expected}"[^>]*data-tip', chart)) == 3
    assert "No data for gradient norm" in svg.heatmap(["net.0"], [0], [[None]], "gradient norm", "")


def test_a_report_asked_for_in_a_missing_folder_or_as_a_folder_says_so_and_writes_nothing(tmp_path):
    doctor = sick_doctor()
    with pytest.raises(FileNotFoundError, match=r"report: the folder .*nowhere does not exist; create it first"):
        doctor.report(tmp_path / "nowhere" / "report.html")
    with pytest.raises(IsADirectoryError, match=r"is a folder; give a file name, such as .*report.html"):
        doctor.report(tmp_path)
    with pytest.raises(ValueError, match="format must be 'json', 'text' or 'html', got 'pdf'"):
        doctor.report(tmp_path / "report.pdf", format="pdf")
    assert list(tmp_path.iterdir()) == []
    assert doctor.report(tmp_path / "r.txt").read_text().startswith(doctor.summary()[:20])


def test_a_long_first_sentence_is_shortened_at_a_clause_or_a_word_never_mid_word():
    stalled = (
        "The mean loss over the last third of the run (2.31) is within 2% of the mean over the first third (2.31): "
        "the training is not making progress. More text."
    )
    assert report_text.first_sentence(stalled) == (
        "The mean loss over the last third of the run (2.31) is within 2% of the mean over the first third (2.31)..."
    )
    words = "word " * 40
    shortened = report_text.first_sentence(words)
    assert shortened.endswith("word...") and len(shortened) <= 110
    assert report_text.first_sentence("Short and whole. Then more.") == "Short and whole"


def test_an_internal_note_is_one_short_line_even_for_an_error_whose_message_is_huge_or_unreadable():
    class Unprintable(Exception):
        def __str__(self):
            raise RuntimeError("no")

    doctor = Doctor()
    doctor.internal_error("forward hook", RuntimeError("backend list:\n" + "CPU, CUDA, Meta, " * 400))
    doctor.internal_error("output gradient hook", Unprintable())
    long_note, odd_note = doctor.notes
    assert "\n" not in long_note and long_note.endswith("...") and len(long_note) < 360
    assert long_note.startswith("forward hook: RuntimeError: backend list: CPU, CUDA, Meta,")
    assert odd_note == "output gradient hook: Unprintable: (its message could not be read)"


def test_a_script_that_copies_its_model_at_every_task_gets_a_short_summary_line(tmp_path):
    """Reptile deep-copies its model for every task, and each copy that trains is a model the doctor watches. Each
    copy was named with one more underscore than the last (`sequential_____...`), and the summary's first line listed
    them all: 131 kB for a sweep's script. Copies are numbered now, and the line names the first few."""
    script = tmp_path / "reptile.py"
    script.write_text(
        "import copy\nimport torch\nfrom torch import nn\ntorch.manual_seed(0)\n"
        "net = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))\n"
        "for task in range(30):\n"
        "    fast = copy.deepcopy(net)\n"
        "    optimizer = torch.optim.SGD(fast.parameters(), lr=0.01)\n"
        "    x = torch.randn(16, 1)\n"
        "    for _ in range(4):\n"
        "        loss = nn.functional.mse_loss(fast(x), torch.sin(x + task))\n"
        "        optimizer.zero_grad(); loss.backward(); optimizer.step()\n"
        "    with torch.no_grad():\n"
        "        for p, q in zip(net.parameters(), fast.parameters()):\n"
        "            p += 0.1 * (q - p)\n"
    )
    run = run_script(script, every=1)
    head = report_text.lines(run.doctor)[0][1]
    assert len(head) < 200 and "fast_2" in head and head.endswith("more")
    assert "fast_30" in run.doctor.history.models and not any(name.endswith("__") for name in run.doctor.history.models)
