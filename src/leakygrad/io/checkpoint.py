"""Saving and restoring models, optimisers and whole training checkpoints, with errors that say what differs.

A model is anything with `state_dict()` (name -> array, in order) and `load_state_dict(dict, strict=True)`,
as `leakygrad.nn.Module` has; an optimiser or a scheduler anything with `state_dict()` and
`load_state_dict(dict)`.

    io.save_model(model, "digits.npz")
    io.load_model(model, "digits.npz")              # the model must have the same layers and shapes

    io.save_checkpoint("run.npz", model=model, optimizer=optimizer, scheduler=scheduler, epoch=7)
    extra = io.load_checkpoint("run.npz", model=model, optimizer=optimizer, scheduler=scheduler)
    extra["epoch"]                                   # 7
"""

from __future__ import annotations

import copy
import os

import numpy as np

from leakygrad.engine.errors import LeakygradError
from leakygrad.io.npz import load, save

_SHOWN = 8  # how many names an error lists before "and N more"


class StateDictMismatchError(LeakygradError, ValueError):
    """Saved state does not fit the object it is loaded into: missing or unexpected keys, or other shapes."""


def save_model(module, path) -> None:
    """Save the model's `state_dict()` (its parameters and buffers) to `path`."""
    save(_state_dict_of(module, "save_model"), path)


def load_model(module, path, strict: bool = True):
    """Load parameters saved by `save_model` into `module` and return it.

    Every saved array must have the shape of the model's entry of the same name; with `strict=True` (the
    default) the names must also be exactly the model's. Otherwise nothing is loaded and the error lists
    the missing, unexpected and mis-shaped entries.
    """
    saved = load(path)
    where = f"load_model('{os.fspath(path)}')"
    if not isinstance(saved, dict) or not all(isinstance(v, np.ndarray) for v in saved.values()):
        raise StateDictMismatchError(f"{where}: the file does not hold a model's state dict (name -> array)")
    check_state_dict(_state_dict_of(module, "load_model"), saved, where, strict=strict)
    module.load_state_dict(saved, strict=strict)
    return module


def check_state_dict(expected: dict, saved: dict, where: str, strict: bool = True) -> None:
    """Raise `StateDictMismatchError` naming every key and shape of `saved` that does not fit `expected`."""
    missing = [key for key in expected if key not in saved]
    unexpected = [key for key in saved if key not in expected]
    mis_shaped = [
        f"{key}: saved {tuple(np.shape(saved[key]))}, model {tuple(np.shape(expected[key]))}"
        for key in expected
        if key in saved and np.shape(saved[key]) != np.shape(expected[key])
    ]
    problems = []
    if mis_shaped:
        problems.append("shapes differ for " + _listing(mis_shaped))
    if strict and missing:
        problems.append("missing from the file: " + _listing(missing))
    if strict and unexpected:
        problems.append("in the file but not in the model: " + _listing(unexpected))
    if problems:
        hint = "" if mis_shaped or not strict else " (pass strict=False to load the entries that do match)"
        raise StateDictMismatchError(f"{where}: the saved state does not fit; " + "; ".join(problems) + hint)


def _listing(names: list[str]) -> str:
    shown = ", ".join(names[:_SHOWN])
    return shown + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")


def save_optimizer(optimizer, path) -> None:
    """Save an optimiser's state (moment estimates, step counts, hyperparameters) to `path`."""
    save(optimizer.state_dict(), path)


def load_optimizer(optimizer, path):
    """Load state saved by `save_optimizer` into an optimiser built over the same parameters; return it."""
    _load_into(optimizer, load(path), f"load_optimizer('{os.fspath(path)}')")
    return optimizer


def save_checkpoint(path, **objects) -> None:
    """Save several things in one file: models, optimisers, schedulers (their state dicts) and plain values.

    `save_checkpoint("run.npz", model=model, optimizer=opt, epoch=3, history=[...])`
    """
    save({name: _state_of(value) for name, value in objects.items()}, path)


def load_checkpoint(path, strict: bool = True, **objects) -> dict:
    """Load a `save_checkpoint` file into the objects named as they were saved; return the other entries.

    Every name given must be in the file. Models are checked key by key and shape by shape (see
    `load_model`), optimisers by their parameter groups and state shapes.
    """
    where = f"load_checkpoint('{os.fspath(path)}')"
    saved = load(path)
    if not isinstance(saved, dict):
        raise StateDictMismatchError(f"{where}: the file does not hold a checkpoint (a dict of named entries)")
    absent = [name for name in objects if name not in saved]
    if absent:
        raise StateDictMismatchError(f"{where}: the file has no {_listing(absent)}; it has {_listing(list(saved))}")
    for name, target in objects.items():  # every model checked before anything is loaded
        if _is_model(target) and not isinstance(saved[name], dict):
            raise StateDictMismatchError(
                f"{where}: entry '{name}' is not a model's state dict (it holds a {type(saved[name]).__name__} value)"
            )
        if _is_model(target):
            check_state_dict(_state_dict_of(target, where), saved[name], f"{where}, entry '{name}'", strict=strict)
    loaded = []  # (object, its state before): an entry that does not fit puts back those loaded before it
    try:
        for name, target in objects.items():
            before = copy.deepcopy(target.state_dict())
            if _is_model(target):
                target.load_state_dict(saved[name], strict=strict)
            else:
                _load_into(target, saved[name], f"{where}, entry '{name}'")
            loaded.append((target, before))
    except Exception:
        for target, before in reversed(loaded):
            target.load_state_dict(before)
        raise
    return {name: value for name, value in saved.items() if name not in objects}


def _load_into(target, state, where: str) -> None:
    try:
        target.load_state_dict(state)
    except (ValueError, KeyError, TypeError) as error:
        raise StateDictMismatchError(f"{where}: the saved state does not fit: {error}") from error


def _is_model(obj) -> bool:
    return callable(getattr(obj, "parameters", None)) and callable(getattr(obj, "state_dict", None))


def _state_of(value):
    return value.state_dict() if callable(getattr(value, "state_dict", None)) else value


def _state_dict_of(module, where: str) -> dict:
    if not callable(getattr(module, "state_dict", None)):
        raise TypeError(f"{where}: expected a model with a state_dict() method, got {type(module).__name__}")
    return module.state_dict()
