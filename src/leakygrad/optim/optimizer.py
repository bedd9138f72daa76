"""`Optimizer`: what every optimiser shares, with PyTorch's interface so that knowledge carries over.

An optimiser holds

- `param_groups`: a list of dicts, each with `"params"` (a list of Tensors) and the hyperparameters for
  those tensors (`"lr"`, `"momentum"`, ...). One group is the common case; several let layers learn at
  different rates.
- `state`: per-parameter memory (momentum buffers, running averages, step counts), a dict keyed by the
  parameter Tensor itself; each entry is a dict of NumPy arrays and numbers.

and offers `step(closure=None)`, `zero_grad()`, `state_dict()` / `load_state_dict()` and `add_param_group()`.

Updates work on `param.data` (NumPy) in place: they record no graph, and they keep the parameter's dtype
(a float32 parameter stays float32, its state is float32 too).
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Callable, Iterable

import numpy as np

from leakygrad.engine.grad_mode import enable_grad
from leakygrad.engine.tensor import Tensor


class Optimizer:
    """Base class: subclasses set `defaults` and write `step()`."""

    # State entries shaped like their parameter (momentum buffers, running averages): load_state_dict checks them.
    per_parameter_state: tuple[str, ...] = ()

    def __init__(self, params, defaults: dict):
        name = type(self).__name__
        if isinstance(params, Tensor):
            raise TypeError(
                f"{name}: params should be an iterable of Tensors (e.g. model.parameters() or [w, b]), "
                "not a single Tensor; wrap it in a list: [w]"
            )
        if isinstance(params, (set, frozenset)):
            raise TypeError(_SET_MESSAGE.format(name=name))
        self.defaults = {key: _as_python_number(value) for key, value in defaults.items()}
        self.state: defaultdict[Tensor, dict] = defaultdict(dict)
        self.param_groups: list[dict] = []

        groups = list(params)
        if not groups:
            raise ValueError(
                f"{name}: got an empty parameter list. Does the model have parameters? A generator such as "
                "model.parameters() can be consumed only once: if you iterated over it before, call it again."
            )
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    # ------------------------------------------------------------------ parameter groups

    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters with its own hyperparameters (missing ones take the defaults).

        Parameters may be Tensors or `(name, Tensor)` pairs, as `model.named_parameters()` yields; the names
        are then kept in the group's `"param_names"`.
        """
        name = type(self).__name__
        if not isinstance(param_group, dict):
            raise TypeError(f"{name}.add_param_group: expected a dict with a 'params' entry, got {type(param_group)}")
        group = {key: value if key == "params" else _as_python_number(value) for key, value in param_group.items()}
        params = group.get("params")
        if params is None:
            raise ValueError(f"{name}.add_param_group: the group has no 'params' entry")
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, (set, frozenset)):
            raise TypeError(_SET_MESSAGE.format(name=name))
        params = list(params)

        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        if names and len(names) != len(params):
            raise ValueError(f"{name}: give either all parameters with names, or none")
        if names:
            group["param_names"] = names
        group["params"] = params

        for i, p in enumerate(params):
            if not isinstance(p, Tensor):
                raise TypeError(f"{name}: can only optimise leakygrad Tensors, but parameter {i} is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError(
                    f"{name}: parameter {i} (shape {p.shape}) was computed by an op ({p.op.name}); an optimiser "
                    "updates leaves, the tensors you created. Optimise the tensor it was computed from."
                )
            if p.dtype.kind != "f":
                raise ValueError(f"{name}: parameter {i} has dtype {p.dtype}; only floating-point tensors can learn")
            if not p.data.flags.writeable:
                raise ValueError(
                    f"{name}: parameter {i} (shape {p.shape}) holds a read-only array (a broadcast view?), which "
                    "cannot be updated in place; give it an array of its own: Tensor(array.copy(), ...)"
                )

        for key, default in self.defaults.items():
            if default is _REQUIRED and key not in group:
                raise ValueError(f"{name}: the parameter group does not give '{key}', and it has no default")
            group.setdefault(key, default)

        if len({id(p) for p in params}) != len(params):
            raise ValueError(f"{name}: a parameter appears twice in the same group; it would be updated twice")
        already = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in already for p in params):
            raise ValueError(f"{name}: some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    # ------------------------------------------------------------------ the training-loop calls

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients of the last backward (call it before each new backward: they accumulate)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad = Tensor(np.zeros_like(p.data), dtype=p.dtype)

    def step(self, closure: Callable | None = None):
        """Update the parameters from their `.grad`. Subclasses write the update."""
        raise NotImplementedError

    def _evaluate(self, closure: Callable | None):
        """Run the closure (which recomputes the loss) with the graph recording, as PyTorch does."""
        if closure is None:
            return None
        with enable_grad():
            return closure()

    # ------------------------------------------------------------------ saving and restoring

    def state_dict(self) -> dict:
        """The optimiser's memory, with parameters replaced by their position: `{"state", "param_groups"}`.

        `state` maps a parameter's index (counting through the groups in order) to its state dict;
        `param_groups` lists each group's hyperparameters with `"params"` as a list of indices. Arrays are
        copies, so the dict is a snapshot that later steps do not change.
        """
        index_of: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: copy.deepcopy(v) for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index_of.setdefault(id(p), len(index_of))
            packed["params"] = [index_of[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {}
        for p, entry in self.state.items():
            key = index_of[id(p)] if isinstance(p, Tensor) else p
            state[key] = copy.deepcopy(entry)
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what `state_dict()` returned (for an optimiser built over the same parameters, in order).

        Floating-point state arrays are cast to their parameter's dtype; step counts are left alone.
        """
        name = type(self).__name__
        if not isinstance(state_dict, dict) or "state" not in state_dict or "param_groups" not in state_dict:
            raise ValueError(f"{name}.load_state_dict: expected a dict with 'state' and 'param_groups' entries")
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(
                f"{name}.load_state_dict: the saved state has {len(saved_groups)} parameter group(s), "
                f"this optimiser has {len(self.param_groups)}"
            )
        for i, (saved, group) in enumerate(zip(saved_groups, self.param_groups)):
            missing = [key for key in self.defaults if key not in saved]
            if missing:
                raise ValueError(
                    f"{name}.load_state_dict: parameter group {i} of the saved state has no {', '.join(missing)}: "
                    f"it was saved by another kind of optimiser (its settings: {', '.join(sorted(saved))})"
                )
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(
                    f"{name}.load_state_dict: parameter group {i} has {len(saved['params'])} parameters in the "
                    f"saved state but {len(group['params'])} here"
                )
        saved_indices = [_as_int_key(index) for saved in saved_groups for index in saved["params"]]
        repeated = list(dict.fromkeys(index for index in saved_indices if saved_indices.count(index) > 1))
        if repeated:
            raise ValueError(
                f"{name}.load_state_dict: the saved parameter groups list parameter(s) {_first_few(repeated)} more "
                "than once, but each parameter has one position: was the state dict edited by hand?"
            )
        param_of = {
            index: p
            for saved, group in zip(saved_groups, self.param_groups)
            for index, p in zip(map(_as_int_key, saved["params"]), group["params"])
        }
        # Every state entry must belong to a parameter of the saved groups. (PyTorch keeps a stray one under its
        # bare key, where no step ever reads it: the parameter it was meant for would silently start afresh.)
        stray = [key for key in state_dict["state"] if _as_int_key(key) not in param_of]
        if stray:
            raise ValueError(
                f"{name}.load_state_dict: the saved state has entries for parameter(s) {_first_few(stray)}, which "
                f"no saved parameter group lists (they list {len(param_of)} parameters): the state dict is "
                "inconsistent (edited by hand, or its parts come from different optimisers)"
            )

        state: defaultdict[Tensor, dict] = defaultdict(dict)
        for key, entry in state_dict["state"].items():
            param = param_of[_as_int_key(key)]
            for k, value in entry.items():
                if _from_torch(value):
                    raise TypeError(
                        f"{name}.load_state_dict: the saved '{k}' of parameter {key} is a {type(value).__module__}."
                        f"{type(value).__name__}: this looks like a PyTorch optimiser's state_dict, which a leakygrad "
                        "optimiser cannot take (its state holds NumPy arrays, under names of its own). Nothing was "
                        "loaded. Save and load leakygrad optimisers with leakygrad.io."
                    )
            for k in self.per_parameter_state:
                value = entry.get(k)
                if isinstance(value, np.ndarray) and value.shape != param.shape:
                    raise ValueError(
                        f"{name}.load_state_dict: the saved '{k}' of parameter {key} has shape {value.shape}, but "
                        f"the parameter has shape {param.shape}: was the state saved for another model?"
                    )
            state[param] = {k: _cast_like(param, v, k) for k, v in entry.items()}

        new_groups = []
        for saved, group in zip(saved_groups, self.param_groups):
            restored = {k: copy.deepcopy(v) for k, v in saved.items() if k != "params"}
            restored["params"] = group["params"]
            if "param_names" in group and "param_names" not in restored:
                restored["param_names"] = group["param_names"]
            new_groups.append(restored)
        self.state = state
        self.param_groups = new_groups

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group):
                if key not in ("params", "param_names"):
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)


_SET_MESSAGE = (
    "{name}: parameters must come in an ordered collection (a list), not a set: the order of a set changes "
    "between runs, and saved optimiser state is matched to parameters by position"
)


class _Required:
    """Marks a hyperparameter without a default (SGD's lr in old PyTorch): each group must give it."""

    def __repr__(self) -> str:
        return "<required>"


_REQUIRED = _Required()


def _as_int_key(key):
    """State keys are parameter indices; a file format may have turned them into strings or NumPy ints."""
    if isinstance(key, (int, np.integer)):
        return int(key)
    if isinstance(key, str) and key.isdigit():
        return int(key)
    return key


def _first_few(items: list, shown: int = 8) -> str:
    """`[0, 1, 2]`, or `[0, 1, ..., 7] and 5 more` for a long list: how errors list parameter indices."""
    head = ", ".join(repr(item) for item in items[:shown])
    return f"[{head}]" + (f" and {len(items) - shown} more" if len(items) > shown else "")


def _from_torch(value) -> bool:
    """Whether a state value is (or holds) a PyTorch object, such as a torch.Tensor."""
    if isinstance(value, dict):
        return any(_from_torch(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_from_torch(v) for v in value)
    return type(value).__module__.split(".")[0] == "torch"


def _cast_like(param: Tensor, value, key):
    """A deep copy of a state value; floating arrays take the parameter's dtype (except step counts)."""
    if isinstance(value, np.ndarray):
        if key != "step" and value.dtype.kind == "f":
            return value.astype(param.dtype, copy=True)
        return value.copy()
    if isinstance(value, dict):
        return {k: _cast_like(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_like(param, v, None) for v in value)
    return copy.deepcopy(value)


def params_with_grads(group: dict) -> Iterable[tuple[Tensor, np.ndarray]]:
    """`(param, grad)` for the parameters of a group that got a gradient, the grad as an array of the
    parameter's dtype. Parameters without a gradient (unused, or frozen) are skipped, as in PyTorch."""
    for p in group["params"]:
        if p.grad is None:
            continue
        grad = p.grad.data
        if grad.shape != p.shape:
            raise ValueError(f"optimiser: a parameter of shape {p.shape} has a gradient of shape {grad.shape}")
        yield p, grad.astype(p.dtype, copy=False)


def _as_python_number(value):
    """A NumPy scalar setting (or a tuple of them) as the Python number it holds: with np.float32(0.9) as a beta,
    1 - beta ** t would be computed in float32, and a float64 run would drift from the same run with 0.9."""
    if isinstance(value, np.generic):
        return value.item()
    if type(value) in (tuple, list) and any(isinstance(v, np.generic) for v in value):  # (not a namedtuple)
        return type(value)(_as_python_number(v) for v in value)
    return value


def check_hyperparameter(optimiser: str, name: str, value, low: float = 0.0, high: float | None = None) -> None:
    """Raise a clear error when a hyperparameter is outside [low, high) (high is open, low closed)."""
    if not isinstance(value, (int, float, np.floating, np.integer)) or isinstance(value, bool):
        raise TypeError(f"{optimiser}: {name} must be a number, got {value!r}")
    if not value >= low or (high is not None and not value < high):  # (a NaN fails both comparisons)
        bounds = f">= {low}" if high is None else f"in [{low}, {high})"
        raise ValueError(f"{optimiser}: {name} must be {bounds}, got {value}")


def check_count(optimiser: str, name: str, value, minimum: int = 1) -> None:
    """Raise a clear error when a setting that counts something (iterations, steps kept) is not a whole number
    of at least `minimum` (NumPy integers count as whole numbers, bools do not)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{optimiser}: {name} must be a whole number >= {minimum}, got {value!r}")


def loss_value(loss) -> float:
    """The closure's loss as a Python float (it may return a one-element Tensor or a number)."""
    if isinstance(loss, Tensor):
        if loss.size != 1:
            raise ValueError(f"the closure must return the loss, a single number; it returned shape {loss.shape}")
        return float(loss.item())
    return float(loss)
