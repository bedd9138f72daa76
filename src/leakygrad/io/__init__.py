"""Saving and loading: models, optimiser state and checkpoints in a safe, documented `.npz` format.

- `save(obj, path)` / `load(path)`: any nested state (dicts, lists, arrays, numbers); see `npz.py` for the
  format. Files load with `allow_pickle=False` and are written atomically.
- `save_model` / `load_model`, `save_optimizer` / `load_optimizer`, `save_checkpoint` / `load_checkpoint`:
  the same, with checks that say which keys or shapes do not match.
"""

from leakygrad.io.checkpoint import (
    StateDictMismatchError,
    check_state_dict,
    load_checkpoint,
    load_model,
    load_optimizer,
    save_checkpoint,
    save_model,
    save_optimizer,
)
from leakygrad.io.npz import FORMAT_VERSION, CorruptFileError, load, save

__all__ = [
    "save",
    "load",
    "save_model",
    "load_model",
    "save_optimizer",
    "load_optimizer",
    "save_checkpoint",
    "load_checkpoint",
    "check_state_dict",
    "CorruptFileError",
    "StateDictMismatchError",
    "FORMAT_VERSION",
]
