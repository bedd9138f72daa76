"""The examples under examples/ run, and learn what they claim to learn (fixed seeds)."""

import importlib.util
import os
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
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
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


def test_digits_mlp_reaches_95_percent_test_accuracy():
    assert load("digits_mlp").main(seed=0, verbose=False) >= 0.95


@pytest.mark.slow
def test_digits_cnn_reaches_97_percent_test_accuracy():
    assert load("digits_cnn").main(seed=0, verbose=False) >= 0.97


def test_char_lstm_learns_the_corpus_far_below_a_uniform_guess():
    result = load("char_lstm").main(steps=80, seed=0, verbose=False)
    losses = result["losses"]
    assert losses[0] == pytest.approx(result["uniform_loss"], abs=0.2)  # starts as a uniform guess
    assert np.mean(losses[-10:]) < 0.7 * result["uniform_loss"]
    assert result["sample"].startswith("Shall I ") and len(result["sample"]) == len("Shall I ") + 200


@pytest.mark.slow
def test_tiny_gpt_learns_the_corpus_far_below_a_uniform_guess():
    result = load("tiny_gpt").main(steps=60, seed=0, verbose=False)
    losses = result["losses"]
    assert np.mean(losses[-10:]) < 0.7 * result["uniform_loss"]
    assert result["sample"].startswith("Shall I ")


def test_an_example_runs_as_a_script():
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "digits_mlp.py"), "--epochs", "2"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "final test accuracy" in done.stdout
