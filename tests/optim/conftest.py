"""A small float64 problem built twice, in leakygrad and in PyTorch, with identical data and initial weights."""

import numpy as np
import pytest
import torch

import leakygrad as lg


class TwinProblem:
    """Mean squared error of a 3-4-2 tanh network on 8 fixed samples."""

    def __init__(self, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.x = rng.standard_normal((8, 3))
        self.y = rng.standard_normal((8, 2))
        self.initial = [
            rng.standard_normal((3, 4)) * 0.7,
            rng.standard_normal(4) * 0.1,
            rng.standard_normal((4, 2)) * 0.7,
            rng.standard_normal(2) * 0.1,
        ]

    def lg_params(self):
        return [lg.Tensor(w.copy(), requires_grad=True, dtype="float64") for w in self.initial]

    def torch_params(self):
        return [torch.tensor(w, dtype=torch.float64, requires_grad=True) for w in self.initial]

    def lg_loss(self, params):
        w1, b1, w2, b2 = params
        hidden = (lg.Tensor(self.x, dtype="float64") @ w1 + b1).tanh()
        return ((hidden @ w2 + b2 - lg.Tensor(self.y, dtype="float64")) ** 2).mean()

    def torch_loss(self, params):
        w1, b1, w2, b2 = params
        hidden = torch.tanh(torch.from_numpy(self.x) @ w1 + b1)
        return ((hidden @ w2 + b2 - torch.from_numpy(self.y)) ** 2).mean()


@pytest.fixture
def problem():
    return TwinProblem()


def lg_step(problem, optimizer, params):
    optimizer.zero_grad()
    problem.lg_loss(params).backward()
    optimizer.step()


def torch_step(problem, optimizer, params):
    optimizer.zero_grad()
    problem.torch_loss(params).backward()
    optimizer.step()


@pytest.fixture
def run_twins():
    """Run `steps` steps of a leakygrad optimiser and its PyTorch twin; return both trajectories."""

    def run(problem, make_lg, make_torch, steps=50):
        lg_params, torch_params = problem.lg_params(), problem.torch_params()
        lg_opt, torch_opt = make_lg(lg_params), make_torch(torch_params)
        lg_path, torch_path = [], []
        for _ in range(steps):
            lg_step(problem, lg_opt, lg_params)
            torch_step(problem, torch_opt, torch_params)
            lg_path.append(np.concatenate([p.data.ravel() for p in lg_params]))
            torch_path.append(np.concatenate([p.detach().numpy().ravel() for p in torch_params]))
        return np.array(lg_path), np.array(torch_path)

    return run
