"""What a learner meets first: the examples' progress lines, the demo's help, the README's snippets."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import leakygrad as lg
from leakygrad import optim
from leakygrad.data import DataLoader, load_digits
from leakygrad.nn import functional as F

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_review_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name, images", [("digits_mlp", False), ("digits_cnn", True)])
def test_digits_examples_report_the_mean_loss_over_the_epoch_not_the_last_tiny_batch(name, images):
    # 1347 training images in batches of 64 (or 32) leave 3 for the last batch: its loss alone is noise. With a
    # learning rate of 0 the weights stay put, so the epoch's mean loss per image is the loss on the whole set.
    example = load(name)
    lg.manual_seed(0)
    data = load_digits(seed=0, images=images)
    model = example.build_model()
    model.eval()  # no dropout: every pass computes the same function
    batches = DataLoader(data.X_train, data.y_train, batch_size=64, shuffle=True, seed=0)
    reported = example.train_epoch(model, optim.SGD(model.parameters(), lr=0.0), batches)
    with lg.no_grad():
        whole = F.cross_entropy(model(lg.Tensor(data.X_train)), data.y_train).item()
    assert reported == pytest.approx(whole, rel=1e-5)


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
