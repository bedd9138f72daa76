"""What a learner meets first: the examples' progress lines, the demo's help, the README's snippets."""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def run_cli(*args, cwd, columns="80"):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), COLUMNS=columns)
    return subprocess.run(
        [sys.executable, "-m", "leakygrad", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )


@pytest.mark.parametrize("columns", ["60", "80", "100"])
def test_demo_help_keeps_the_report_file_name_whole_and_says_what_it_writes(tmp_path, columns):
    done = run_cli("demo", "--help", cwd=tmp_path, columns=columns)
    assert done.returncode == 0, done.stderr
    assert "leakygrad-demo.doctor.html" in done.stdout  # not "leakygrad-" / "demo.doctor.html" on two lines
    text = " ".join(done.stdout.split())
    assert "Exit status: 0 when the gradient check passes, 1 when it fails" in text


def test_top_level_help_says_where_to_start(tmp_path):
    done = run_cli("--help", cwd=tmp_path)
    assert done.returncode == 0 and "Start with `leakygrad demo`" in done.stdout


def readme_python_blocks():
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_the_readme_engine_snippet_runs_and_its_gradcheck_passes(capsys):
    engine_snippet = next(block for block in readme_python_blocks() if "lg.gradcheck" in block)
    np.random.seed(0)
    exec(compile(engine_snippet, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "gradcheck passed" in printed


def test_the_readme_layers_snippet_runs_an_epoch_of_the_cnn():
    layers_snippet = next(block for block in readme_python_blocks() if "load_digits(images=True)" in block)
    namespace = {}
    exec(compile(layers_snippet, "README.md", "exec"), namespace)
    assert np.isfinite(namespace["loss"].item())
