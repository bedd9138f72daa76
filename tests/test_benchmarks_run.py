"""The benchmark scripts still run: each, in its smallest setting, checks that its contenders agree and prints its
table. (What they measure is read from their output by a person, never asserted: see docs/benchmarks.md.)"""

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def run(script: str, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_engine_benchmark_runs_and_checks_its_contenders_agree():
    out = run("bench_engine.py", "--repeats", "1", "--steps", "1", "--skip-peers")
    assert "| leakygrad |" in out and "leakygrad / hand-written NumPy" in out


def test_layers_benchmark_runs_and_checks_its_contenders_agree():
    out = run("bench_layers.py", "--quick")
    assert "CNN: leakygrad, NumPy by hand and PyTorch agree" in out
    assert "LSTM: leakygrad, NumPy by hand and PyTorch agree" in out
    assert "| CNN, digits 8x8, batch 128 |" in out


@pytest.mark.slow
def test_doctor_benchmark_runs_every_mode_and_the_memory_run():
    out = run("bench_doctor.py", "--models", "MLP", "--rounds", "1", "--block", "16", "--memory-steps", "40")
    assert "| MLP |" in out and "allocator keeps freed memory" in out
    assert "| 40 |" in out  # the memory table's last checkpoint


@pytest.mark.slow
def test_doctor_floor_benchmark_runs_and_its_bare_monitor_reads_every_layer():
    out = run("bench_doctor_floor.py", "--rounds", "2", "--block", "4")
    # MLP: 3 output-gradient norms, 2 ReLU shares, 6 gradient norms, 6 + 6 + 6 sample norms; 2 ReLU masks
    assert "| 29 numbers, 2 unit masks |" in out.split("| MLP |")[1].splitlines()[0]
    assert "| CNN |" in out
