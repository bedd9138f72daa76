"""Shared fixtures for the doctor's tests: one thread for torch (stable, and fair to the other suites on a
2-core machine), and a cache so that each labelled script runs under the doctor once per session."""

import contextlib
import io
from pathlib import Path

import pytest
import torch

from leakygrad.doctor.runner import run_script

CASES = Path(__file__).resolve().parent / "cases"


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


class CaseRunner:
    """Runs a labelled script (in this process, as `leakygrad doctor` does) and remembers the result."""

    def __init__(self):
        self._cache = {}

    def __call__(self, name: str, *args: str, every: int = 16, watch: bool = True):
        key = (name, args, every, watch)
        if key not in self._cache:
            with contextlib.redirect_stdout(io.StringIO()) as out:
                run = run_script(CASES / f"{name}.py", list(args), every=every, watch=watch)
            run.stdout = out.getvalue()
            self._cache[key] = run
        return self._cache[key]


@pytest.fixture(scope="session")
def run_case():
    return CaseRunner()
