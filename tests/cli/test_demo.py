"""`leakygrad demo`, the README's main job: both halves run and say what they found."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "leakygrad", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600
    )


@pytest.mark.slow
def test_demo_trains_checks_and_diagnoses(tmp_path):
    done = run_cli("demo", "--steps", "200", "--report", "report.html", cwd=tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "worst relative error" in output and "(passed)" in output  # the engine's gradcheck
    assert "vanishing_gradient" in output and "model.0" in output  # the sick script's leak, named
    # ... and nothing else as an error: its output, alike for every example, is the vanishing chain's doing
    assert output.count("ERROR") == 1, output
    assert "no leaks found" in output  # the fixed script
    report = (tmp_path / "report.html").read_text()
    assert report.startswith("<!DOCTYPE html>") and "vanishing_gradient" in report


def test_demo_engine_half_alone(tmp_path):
    done = run_cli("demo", "--steps", "100", "--no-doctor", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "(passed)" in done.stdout
    assert not (tmp_path / "leakygrad-demo.doctor.html").exists()


def test_help_lists_the_commands(tmp_path):
    done = run_cli("--help", cwd=tmp_path)
    assert done.returncode == 0
    assert "demo" in done.stdout and "doctor" in done.stdout


def test_demo_refuses_bad_settings_before_it_runs(tmp_path):
    for args, message in (
        (("--steps", "-1"), "argument --steps: must be 0 or more, got -1"),
        (("--lr", "nan"), "argument --lr: must be a positive number, got nan"),
        (
            ("--report", "nowhere/x.html"),
            "cannot write the report to nowhere/x.html: the folder nowhere does not exist",
        ),
    ):
        done = run_cli("demo", *args, cwd=tmp_path)
        assert done.returncode == 2 and message in done.stderr, done.stderr
        assert "step" not in done.stdout  # nothing was trained first


def test_demo_shows_its_last_step(tmp_path):
    done = run_cli("demo", "--steps", "50", "--no-doctor", cwd=tmp_path)
    assert done.returncode == 0 and "│ 50 " in done.stdout, done.stdout
