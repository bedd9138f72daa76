"""`leakygrad doctor [OPTIONS] SCRIPT.py [ARGS...]` runs the script as `python SCRIPT.py ARGS...` would."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from leakygrad.cli import main

SRC = Path(__file__).resolve().parents[2] / "src"

PROBE_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import torch
    from torch import nn
    import sibling  # importable only if sys.path[0] is this script's folder

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(6):
        loss = model(torch.randn(16, 4)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(json.dumps({"argv": sys.argv, "name": __name__, "path0": sys.path[0], "sibling": sibling.VALUE}))
    sys.exit(int(sys.argv[-1]))
    """
)


@pytest.fixture
def script(tmp_path):
    (tmp_path / "sibling.py").write_text("VALUE = 42\n")
    path = tmp_path / "train.py"
    path.write_text(PROBE_SCRIPT)
    return path


def test_end_to_end_as_python_would_run_it(script, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(SRC))
    out_json, out_html = tmp_path / "r.json", tmp_path / "r.html"
    command = [sys.executable, "-m", "leakygrad", "doctor", "--json", str(out_json), "--html", str(out_html),
               "--every", "2", str(script), "--lr", "0.1", "--json", "theirs", "--", "7"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 7, done.stderr  # the script's exit status
    seen = json.loads(done.stdout.strip().splitlines()[-1])  # the script's stdout, untouched
    assert seen["argv"] == [str(script), "--lr", "0.1", "--json", "theirs", "--", "7"]
    assert seen["name"] == "__main__"
    assert Path(seen["path0"]) == script.parent and seen["sibling"] == 42
    report = json.loads(out_json.read_text())
    assert report["version"] == 1 and report["steps"] == 6
    assert out_html.read_text().startswith("<!DOCTYPE html>")
    assert "leakygrad doctor: 6 steps" in done.stderr  # the summary goes to stderr
    assert f"full report: {out_html}" in done.stderr


def test_a_crashing_script_still_gets_its_report(tmp_path, capsys):
    path = tmp_path / "crash.py"
    path.write_text(
        textwrap.dedent(
            """
            import torch
            model = torch.nn.Linear(2, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(5):
                loss = torch.log(model(torch.zeros(4, 2)) * 0).mean()  # log(0): -inf from the first step
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            raise RuntimeError("loss is " + str(loss.item()))
            """
        )
    )
    report = tmp_path / "crash.json"
    code = main(["doctor", "--json", str(report), str(path)])
    err = capsys.readouterr().err
    assert code == 1
    assert 'crash.py", line 10' in err and "RuntimeError: loss is" in err  # the script's traceback, as Python
    assert "runner.py" not in err  # ... without the doctor's own frames
    findings = json.loads(report.read_text())["findings"]
    assert findings[0]["symptom"] == "nonfinite" and findings[0]["where"] == "log" and findings[0]["first_step"] == 0
    assert "the script stopped after 5 steps with RuntimeError: loss is" in err  # (the summary read as a whole run)
    page = tmp_path / "crash.html"
    main(["doctor", "--quiet", "--html", str(page), str(path)])
    assert "the script stopped after 5 steps with RuntimeError: loss is" in page.read_text()


def test_default_report_and_fail_on(script, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["doctor", "--quiet", str(script), "0"]) == 0
    assert (tmp_path / "train.doctor.html").exists()
    assert capsys.readouterr().err == ""  # --quiet
    assert main(["doctor", "--quiet", "--fail-on", "warning", str(script), "0"]) == 0  # healthy: no finding
    # a run whose loss is NaN: --fail-on error turns the finding into exit status 3
    nan = tmp_path / "nan.py"
    nan.write_text(
        "import torch\nm = torch.nn.Linear(2, 1)\no = torch.optim.SGD(m.parameters(), lr=0.1)\n"
        "for _ in range(3):\n    l = torch.sqrt(m(torch.ones(4, 2)) - 100).mean()\n    o.zero_grad()\n"
        "    l.backward()\n    o.step()\n"
    )
    assert main(["doctor", "--quiet", "--fail-on", "error", str(nan)]) == 3


def test_usage_errors_say_what_to_do(tmp_path, capsys):
    assert main(["doctor"]) == 2
    assert "no script given" in capsys.readouterr().err
    assert main(["doctor", str(tmp_path / "missing.py")]) == 2
    assert "no script at" in capsys.readouterr().err
    (tmp_path / "ok.py").write_text("pass\n")
    assert main(["doctor", "--every", "0", str(tmp_path / "ok.py")]) == 2
    assert "--every must be 1 or more" in capsys.readouterr().err


def test_a_report_that_cannot_be_written_is_refused_before_the_training_runs(tmp_path, capsys):
    script = tmp_path / "train.py"
    script.write_text("open(__file__ + '.ran', 'w').close()\n")
    missing = tmp_path / "no" / "such" / "folder" / "r.html"
    assert main(["doctor", "--html", str(missing), str(script)]) == 2  # (it ran, then exited 0 with no report)
    assert (
        f"cannot write the report to {missing}: the folder {missing.parent} does not exist" in capsys.readouterr().err
    )
    assert main(["doctor", "--json", str(tmp_path), str(script)]) == 2
    assert "that is a folder; give a file name" in capsys.readouterr().err
    assert not (tmp_path / "train.py.ran").exists()  # the training never started


def test_every_model_the_script_creates_is_watched(tmp_path, capsys):
    gan = tmp_path / "gan.py"
    gan.write_text(
        textwrap.dedent(
            """
            import torch
            from torch import nn
            torch.manual_seed(0)
            generator = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 2))
            discriminator = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
            g_opt = torch.optim.Adam(generator.parameters(), lr=1e-3)
            d_opt = torch.optim.Adam(discriminator.parameters(), lr=1e-3)
            bce = nn.BCEWithLogitsLoss()
            for step in range(8):
                real, noise = torch.randn(16, 2) + 3, torch.randn(16, 2)
                fake = generator(noise)
                d_real, d_fake = discriminator(real), discriminator(fake.detach())
                d_loss = bce(d_real, torch.ones(16, 1)) + bce(d_fake, torch.zeros(16, 1))
                d_opt.zero_grad(); d_loss.backward(); d_opt.step()
                g_loss = bce(discriminator(fake), torch.ones(16, 1))
                g_opt.zero_grad(); g_loss.backward(); g_opt.step()
            """
        )
    )
    report = tmp_path / "gan.json"
    assert main(["doctor", "--quiet", "--every", "1", "--json", str(report), str(gan)]) == 0
    from leakygrad.doctor.runner import run_script

    run = run_script(gan, every=1)
    names = set().union(*(r.layers for r in run.doctor.history.records))
    assert names == {"generator.0", "generator.2", "discriminator.0", "discriminator.2"}
    assert {"generator", "discriminator", "Adam"} <= set(run.doctor.history.watched)
    assert run.doctor.steps == 8  # steps of the first optimiser that stepped
    assert json.loads(report.read_text())["findings"] == []


def test_file_threads_excepthook_and_syntax_errors_as_python_has_them(tmp_path, capsys, monkeypatch):
    # __file__ absolute (Python 3.9+), even after the script changes directory; the script's own excepthook
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "data.txt").write_text("hello")
    (folder / "paths.py").write_text(
        "import os, sys\n"
        "os.chdir('/')\n"
        "print(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data.txt')).read(), sys.argv[0])\n"
        "sys.excepthook = lambda kind, error, tb: print('custom hook:', error, file=sys.stderr)\n"
        "raise RuntimeError('x')\n"
    )
    monkeypatch.chdir(tmp_path)
    assert main(["doctor", "--quiet", "--json", "r.json", "sub/paths.py"]) == 1
    out, err = capsys.readouterr()
    assert out == "hello sub/paths.py\n"  # (it failed: __file__ was relative; argv[0] stays as typed)
    assert err == "custom hook: x\n"  # (the doctor printed the traceback itself)
    monkeypatch.chdir(tmp_path)
    sys.excepthook = sys.__excepthook__

    # a thread the script does not join: Python waits for it, so does the doctor, watching it train
    (tmp_path / "thread.py").write_text(
        textwrap.dedent(
            """
            import threading, torch
            from torch import nn
            def train():
                model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
                optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
                for _ in range(20):
                    optimizer.zero_grad(); model(torch.randn(16, 4)).pow(2).mean().backward(); optimizer.step()
            threading.Thread(target=train).start()
            """
        )
    )
    assert main(["doctor", "--quiet", "--json", "t.json", "thread.py"]) == 0
    assert json.loads((tmp_path / "t.json").read_text())["steps"] == 20  # (it was 0: detached at once)

    # a syntax error: what Python prints, none of the doctor's frames
    (tmp_path / "broken.py").write_text("x = (\n")
    assert main(["doctor", "--quiet", "--json", "b.json", "broken.py"]) == 1
    err = capsys.readouterr().err
    assert "SyntaxError" in err and "runner.py" not in err and "runpy" not in err


def test_the_option_says_the_report_format_whatever_the_file_is_called(script, tmp_path, capsys):
    as_json, as_html = tmp_path / "report", tmp_path / "report.json.backup"
    assert main(["doctor", "--quiet", "--json", str(as_json), "--html", str(as_html), str(script), "0"]) == 0
    assert json.loads(as_json.read_text())["version"] == 1  # (it was an HTML page: no .json suffix)
    assert as_html.read_text().startswith("<!DOCTYPE html>")


def test_the_default_report_in_a_folder_that_cannot_be_written_only_warns(tmp_path, capsys, monkeypatch):
    script = tmp_path / "train.py"
    script.write_text("open(__file__ + '.ran', 'w').close()\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(os, "access", lambda path, mode: False)  # (the tests may run as root, who may write anywhere)
    assert main(["doctor", str(script)]) == 0  # no --html or --json: the run goes on, with the summary
    assert "no report will be written to train.doctor.html (permission denied); give --html PATH" in (
        capsys.readouterr().err
    )
    assert (tmp_path / "train.py.ran").exists() and not (tmp_path / "train.doctor.html").exists()


def test_reports_go_where_they_were_asked_for_when_the_script_changes_folder(tmp_path, monkeypatch):
    (tmp_path / "runs").mkdir()
    script = tmp_path / "train.py"
    script.write_text("import os\nos.chdir('runs')\n")
    monkeypatch.chdir(tmp_path)
    assert main(["doctor", "--quiet", "--json", "r.json", "--html", "r.html", str(script)]) == 0
    assert (tmp_path / "r.json").is_file() and (tmp_path / "r.html").is_file()
    assert not (tmp_path / "runs" / "r.json").exists()
