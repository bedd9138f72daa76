"""Optimisers, gradient clipping and learning-rate schedules, with PyTorch's interface.

    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        optim.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()

Each optimiser is one small file with its update rule written out and the paper's formula beside it;
see docs/optim.md for a summary and the points where leakygrad differs from PyTorch.
"""

from leakygrad.optim import lr_scheduler
from leakygrad.optim.adagrad import Adagrad
from leakygrad.optim.adam import Adam, AdamW
from leakygrad.optim.clip import clip_grad_norm_, clip_grad_value_, total_grad_norm
from leakygrad.optim.lbfgs import LBFGS
from leakygrad.optim.optimizer import Optimizer
from leakygrad.optim.rmsprop import RMSprop
from leakygrad.optim.sgd import SGD
from leakygrad.optim.sign import SignSGD, Signum
from leakygrad.optim.sls import SLS

__all__ = [
    "Optimizer",
    "SGD",
    "RMSprop",
    "Adagrad",
    "Adam",
    "AdamW",
    "SignSGD",
    "Signum",
    "SLS",
    "LBFGS",
    "clip_grad_norm_",
    "clip_grad_value_",
    "total_grad_norm",
    "lr_scheduler",
]
