"""`Module`, the base of every layer, and `Parameter`, the tensors a module learns.

A module is an object with a `forward` method and attributes. Attributes that are `Parameter`s are its
parameters, attributes that are modules are its children, and tensors registered with `register_buffer` are
its buffers (state that is saved but not learned, like batch norm's running mean). Nothing else is needed:
`named_parameters` finds them by walking the attributes, in the order they were first assigned, which is
also the order of `state_dict` (and the same order PyTorch gives the same class).

Calling a module runs its forward pre-hooks, `forward`, then its forward hooks.

`parameters()` remembers the list it found, until a module anywhere gains, loses or replaces a submodule or
a parameter (assigning or deleting an attribute, `append`, `register_buffer`): a training step asks for the
parameters at least twice (zero_grad, the update), and walking the modules is a noticeable share of a small
network's step. Change the structure through attributes, not through `vars(module)`, or the list goes stale.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import NamedTuple

import numpy as np

from leakygrad.engine import Tensor
from leakygrad.engine.errors import LeakygradError
from leakygrad.engine.tensor import RemovableHandle


class Parameter(Tensor):
    """A tensor that a module learns: it requires grad, and a module lists it among its parameters."""

    __slots__ = ()

    def __init__(self, data, requires_grad: bool = True, dtype=None):
        if isinstance(data, Tensor) and dtype is None:
            dtype = data.dtype  # keep the tensor's precision (Tensor() would make float64 data float32)
        super().__init__(data, requires_grad=requires_grad, dtype=dtype)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


class StateDictError(LeakygradError, KeyError):
    """`load_state_dict` was given keys or shapes that do not match the module."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class NameTakenError(LeakygradError, KeyError):
    """`register_buffer` was given a name the module already uses for something else."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class IncompatibleKeys(NamedTuple):
    missing_keys: list[str]
    unexpected_keys: list[str]


_structure_versions = itertools.count()
_structure_version = next(_structure_versions)  # a new number whenever any module's structure changes


def _structure_changed() -> None:
    global _structure_version
    _structure_version = next(_structure_versions)


class Module:
    """Base class of every layer and every model. Subclasses call `super().__init__()` first, then assign
    their parameters and submodules as attributes, and write `forward`."""

    def __init__(self):
        self.training = True
        self._buffer_names: list[str] = []
        self._non_persistent: set[str] = set()
        self._forward_pre_hooks: dict[int, Callable] = {}  # by registration (see RemovableHandle)
        self._forward_hooks: dict[int, Callable] = {}

    def __setattr__(self, name: str, value) -> None:
        current = self.__dict__.get(name)
        if value is not None:
            _check_replacement(self, name, current, value)
        if isinstance(value, (Module, Parameter)) or isinstance(current, (Module, Parameter)):
            _structure_changed()
            registered = self.__dict__.setdefault("_registered", set())  # names that have held one, None since or not
            if name in self.__dict__ and name not in registered:
                # a plain attribute (None, say) registered only now: listed after those registered before it, as in
                # PyTorch (a parameter set to None and back keeps its place)
                del self.__dict__[name]
            registered.add(name)
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        _structure_changed()
        object.__delattr__(self, name)
        if name in self.__dict__.get("_buffer_names", ()):
            self._buffer_names.remove(name)
            self._non_persistent.discard(name)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward method")

    def __call__(self, *args, **kwargs):
        if "_forward_hooks" not in self.__dict__:
            raise LeakygradError(
                f"{type(self).__name__}: Module.__init__ was not run. Call super().__init__() at the start of "
                f"{type(self).__name__}.__init__."
            )
        if not self._forward_pre_hooks and not self._forward_hooks:  # the usual case
            return self.forward(*args, **kwargs)
        for hook in list(self._forward_pre_hooks.values()):
            replaced = hook(self, args)
            if replaced is not None:
                args = replaced if isinstance(replaced, tuple) else (replaced,)
        output = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            replaced = hook(self, args, output)
            if replaced is not None:
                output = replaced
        return output

    # ------------------------------------------------------------------ hooks

    def register_forward_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Call `hook(module, args)` before each forward. It may return new args (a tuple, or one value)."""
        return RemovableHandle(self._forward_pre_hooks, hook)

    def register_forward_hook(self, hook: Callable) -> RemovableHandle:
        """Call `hook(module, args, output)` after each forward. It may return a replacement output.

        This is how a probe watches a layer without changing it: record statistics of `output`, or call
        `output.register_hook(...)` to see the gradient that reaches this layer's output during backward.
        """
        return RemovableHandle(self._forward_hooks, hook)

    # ------------------------------------------------------------------ what a module holds

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Keep `tensor` as state that is not learned: it is in `state_dict` (unless `persistent=False`) and
        moves with `.double()`, but it is not a parameter and gets no gradient."""
        if not isinstance(name, str) or not name or "." in name:
            raise NameTakenError(f"register_buffer: the name must be a non-empty string without '.', got {name!r}")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"register_buffer: buffer {name!r} must be a Tensor or None, got {type(tensor).__name__} "
                "(wrap an array: Tensor(array))"
            )
        if name not in self._buffer_names and hasattr(self, name):
            raise NameTakenError(
                f"register_buffer: {type(self).__name__} already has an attribute {name!r} (a parameter, a "
                "submodule or another attribute): choose another name"
            )
        if name not in self._buffer_names:
            self._buffer_names.append(name)
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)
        object.__setattr__(self, name, tensor)
        _structure_changed()

    def add_module(self, name: str, module: Module | None) -> None:
        """Add `module` as the child `name` (what `self.name = module` does, for a name made at run time)."""
        _check_child_name(self, name, "add_module")
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: {name!r} must be a Module or None, got {type(module).__name__}")
        setattr(self, name, module)

    register_module = add_module

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add `param` as the parameter `name` (what `self.name = param` does, for a name made at run time)."""
        _check_child_name(self, name, "register_parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"register_parameter: {name!r} must be a Parameter or None, got {type(param).__name__} "
                "(wrap a tensor: Parameter(tensor))"
            )
        setattr(self, name, param)

    def _child_slots(self) -> list[tuple[str, Module]]:
        """(name, child) for every attribute holding a module, a module held twice under both names (a container
        that keeps its modules elsewhere overrides this, as Sequential, or named_children, which is then used)."""
        if type(self).named_children is not Module.named_children:
            return list(self.named_children())
        return [(name, value) for name, value in vars(self).items() if isinstance(value, Module)]

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """(name, child) for each direct submodule, once: a module held under two names is listed under the first
        (as in PyTorch), so that `apply` visits it once."""
        seen: set[int] = set()
        for name, child in self._child_slots():
            if id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self) -> Iterator[Module]:
        return iter([child for _, child in self.named_children()])

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """This module (named `prefix`, "" at the top) and every module inside it, depth first; a module used
        in two places is listed once, under its first name (as in PyTorch)."""
        seen: set[int] = set()
        stack = [(prefix, self)]
        while stack:
            name, module = stack.pop()
            if id(module) in seen:
                continue
            seen.add(id(module))
            yield name, module
            children = [
                (f"{name}.{child_name}" if name else child_name, child) for child_name, child in module.named_children()
            ]
            stack.extend(reversed(children))

    def modules(self) -> Iterator[Module]:
        """The modules of named_modules, in the same order, without building their names."""
        seen: set[int] = set()
        stack = [self]
        while stack:
            module = stack.pop()
            if id(module) in seen:
                continue
            seen.add(id(module))
            yield module
            stack.extend(reversed(list(module.children())))  # popped first to last: depth first, in order

    def named_parameters(self, prefix: str = "", recurse: bool = True) -> Iterator[tuple[str, Parameter]]:
        """("layer.weight", parameter) pairs; a parameter shared by two modules is listed once."""
        seen: set[int] = set()
        modules = self.named_modules(prefix) if recurse else [(prefix, self)]
        for module_name, module in modules:
            for name, value in vars(module).items():
                if isinstance(value, Parameter) and id(value) not in seen:
                    seen.add(id(value))
                    yield (module_name + "." + name if module_name else name), value

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The parameters of named_parameters, in the same order (remembered: see the module docstring)."""
        found = self.__dict__.get("_parameters_found")
        if found is None or found[0] != (_structure_version, recurse):
            found = ((_structure_version, recurse), self._find_parameters(recurse))
            object.__setattr__(self, "_parameters_found", found)
        return iter(found[1])

    def _find_parameters(self, recurse: bool) -> list[Parameter]:
        seen: set[int] = set()
        parameters = []
        for module in self.modules() if recurse else (self,):
            for value in vars(module).values():
                if isinstance(value, Parameter) and id(value) not in seen:
                    seen.add(id(value))
                    parameters.append(value)
        return parameters

    def named_buffers(self, prefix: str = "", recurse: bool = True) -> Iterator[tuple[str, Tensor]]:
        """("bn.running_mean", buffer) pairs, persistent or not; only this module's with `recurse=False`."""
        modules = self.named_modules(prefix) if recurse else [(prefix, self)]
        for module_name, module in modules:
            for name in module._buffer_names:
                buffer = getattr(module, name)
                if buffer is not None:
                    yield (module_name + "." + name if module_name else name), buffer

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def num_parameters(self) -> int:
        return sum(p.size for p in self.parameters())

    # ------------------------------------------------------------------ modes and gradients

    def train(self, mode: bool = True) -> Module:
        """Training mode (the default): dropout drops, batch norm uses and updates batch statistics."""
        if not isinstance(mode, (bool, np.bool_)):
            raise ValueError(f"{type(self).__name__}.train: mode should be True or False, got {mode!r}")
        mode = bool(mode)
        for module in self.modules():
            module.training = mode
        return self

    def eval(self) -> Module:
        """Evaluation mode: dropout passes everything, batch norm uses its running statistics."""
        return self.train(False)

    def get_submodule(self, target: str) -> Module:
        """The submodule at the dotted path `target` ("encoder.0"; "" is this module), as in PyTorch."""
        module = self
        for depth, name in enumerate(target.split(".") if target else []):
            child = dict(module._child_slots()).get(name)
            if child is None:
                where = ".".join(target.split(".")[:depth]) or type(self).__name__
                raise AttributeError(
                    f"get_submodule: {where} has no submodule {name!r} (it has: "
                    f"{', '.join(n for n, _ in module._child_slots()) or 'none'})"
                )
            module = child
        return module

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at the dotted path `target` ("encoder.0.weight"), as in PyTorch."""
        path, _, name = target.rpartition(".")
        module = self.get_submodule(path)
        value = vars(module).get(name)
        if not isinstance(value, Parameter):
            raise AttributeError(f"get_parameter: {path or type(self).__name__} has no parameter {name!r}")
        return value

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Switch gradients on or off for every parameter (off: freeze the module, e.g. for fine-tuning)."""
        for parameter in self.parameters():
            parameter.requires_grad = requires_grad
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients of the last backward (they accumulate otherwise, as in PyTorch)."""
        for parameter in self.parameters():
            if set_to_none or parameter.grad is None:
                parameter.grad = None
            else:
                parameter.grad = Tensor._wrap(np.zeros_like(parameter.data))

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call `fn(module)` on every submodule, then on this one (e.g. to initialise weights)."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def to(self, dtype) -> Module:
        """Convert every floating-point parameter and buffer to `dtype`, in place (the objects stay the same,
        so an optimiser built before the call still holds them)."""
        dtype = np.dtype(dtype)
        for tensor in list(self.parameters()) + list(self.buffers()):
            if tensor.dtype.kind == "f":
                tensor.data = tensor.data.astype(dtype)
                if tensor.grad is not None:
                    tensor.grad = Tensor._wrap(tensor.grad.data.astype(dtype))
        return self

    def double(self) -> Module:
        return self.to(np.float64)

    def float(self) -> Module:
        return self.to(np.float32)

    # ------------------------------------------------------------------ saving and loading

    def state_dict(self) -> dict[str, np.ndarray]:
        """Every parameter and persistent buffer by name, as NumPy arrays, in PyTorch's order (each module's
        parameters, then its buffers, then its children's). A parameter shared by two modules appears under
        both names, as in PyTorch.

        Unlike PyTorch, the arrays are copies: a snapshot that later training does not change.
        """
        return {name: tensor.data.copy() for name, tensor in self._state_tensors()}

    def load_state_dict(self, state_dict, strict: bool = True) -> IncompatibleKeys:
        """Copy values from `state_dict` (arrays or tensors, by name) into this module's parameters and buffers.

        Every key and shape is checked before anything is copied, so a mismatch leaves the module unchanged.
        With `strict=True` (the default) missing and unexpected keys are errors; with `strict=False` they are
        returned. A shape mismatch is always an error. Values are converted to each parameter's dtype.
        """
        own = self._own_state()
        missing = [key for key in own if key not in state_dict]
        unexpected = [key for key in state_dict if key not in own]
        problems, values = [], {}
        for key, target in own.items():
            if key in state_dict:
                try:  # every value is converted before any is copied: one that cannot be leaves nothing half-loaded
                    values[key] = _as_array(state_dict[key], target.dtype)
                except (TypeError, ValueError, RuntimeError) as error:
                    problems.append(f"  {key}: cannot be read as an array of {target.dtype} ({error})")
                    continue
                if values[key].shape != target.shape:
                    problems.append(f"  {key}: the file has shape {values[key].shape}, the model has {target.shape}")
        if strict and missing:
            problems += [f"  {key}: missing (the model has shape {own[key].shape})" for key in missing]
        if strict and unexpected:
            problems += [f"  {key}: unexpected (the model has no such parameter or buffer)" for key in unexpected]
        if problems:
            raise StateDictError(
                f"load_state_dict: the state does not fit {type(self).__name__}:\n"
                + "\n".join(problems)
                + "\nNothing was loaded. Check that the model is built with the same sizes as the one saved."
            )
        for key, value in values.items():
            target = own[key]
            if target.data.flags.writeable:
                target.data[...] = value  # into the same array, as PyTorch does: whoever holds it sees the new values
            else:
                target.data = value
        return IncompatibleKeys(missing, unexpected)

    def _own_state(self) -> dict[str, Tensor]:
        return dict(self._state_tensors())

    def _state_tensors(self, prefix: str = "") -> Iterator[tuple[str, Tensor]]:
        """(name, tensor) for every parameter and persistent buffer, recursively (what state_dict saves)."""
        for name, value in vars(self).items():
            if isinstance(value, Parameter):
                yield prefix + name, value
        for name in self._buffer_names:
            buffer = getattr(self, name)
            if buffer is not None and name not in self._non_persistent:
                yield prefix + name, buffer
        for name, child in self._child_slots():  # a module held twice is saved under both names, as in PyTorch
            yield from child._state_tensors(prefix + name + ".")

    # ------------------------------------------------------------------ printing

    def extra_repr(self) -> str:
        """The arguments shown between the parentheses, e.g. `in_features=3, out_features=2`."""
        return ""

    def __repr__(self) -> str:
        """PyTorch's layout: `Name(extra)` alone; with children, or an extra_repr of several lines, one line each."""
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): " + repr(child).replace("\n", "\n  ") for name, child in self._child_slots()]
        if not child_lines and len(extra_lines) <= 1:
            return f"{type(self).__name__}({extra})"
        return f"{type(self).__name__}(\n  " + "\n  ".join(extra_lines + child_lines) + "\n)"


def _check_child_name(module: Module, name, what: str) -> None:
    """A name for a child or a parameter: a string without "." (state_dict joins names with dots), not empty, not
    an attribute of another kind (`training`, `forward`, ...)."""
    if not isinstance(name, str):
        raise TypeError(f"{what}: the name must be a string, got {type(name).__name__}")
    if not name or "." in name:
        raise NameTakenError(f"{what}: the name must be a non-empty string without '.', got {name!r}")
    current = getattr(module, name, None)
    if hasattr(module, name) and not isinstance(current, (Module, Parameter)) and current is not None:
        raise NameTakenError(f"{what}: {type(module).__name__} already has an attribute {name!r}: choose another name")


def _as_array(value, dtype) -> np.ndarray:
    """A state value (an array, a Tensor, numbers) as a new array of `dtype`: the module owns its arrays."""
    return np.array(value.data if isinstance(value, Tensor) else value, dtype=dtype)


def _check_replacement(module: Module, name: str, current, value) -> None:
    """A parameter, submodule or buffer is replaced by one of its kind or None (as in PyTorch): a plain Tensor
    assigned over a parameter would silently stop being trained and saved."""
    kind = type(module).__name__
    if isinstance(current, Parameter) and not isinstance(value, Parameter):
        raise TypeError(
            f"{kind}.{name} is a parameter: assign a Parameter or None, not {type(value).__name__} "
            f"(Parameter(tensor) to learn it; to change its values in place, assign to {name}.data)"
        )
    if isinstance(current, Module) and not isinstance(value, Module):
        raise TypeError(f"{kind}.{name} is a submodule: assign a Module or None, not {type(value).__name__}")
    if name in module.__dict__.get("_buffer_names", ()) and not isinstance(value, Tensor):
        raise TypeError(f"{kind}.{name} is a buffer: assign a Tensor or None, not {type(value).__name__}")


def _position(owner: str, index, length: int, inserting: bool = False) -> int:
    """A list position given as an int (negative counts from the end), checked. Inserting may also use `length`."""
    if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
        raise TypeError(f"{owner}: indices must be integers or slices, got {type(index).__name__}")
    last = length if inserting else length - 1
    if not -length <= index <= last:
        raise IndexError(f"{owner}: index {index} is out of range for {length} modules")
    return int(index) % length if index < 0 else int(index)


def _refuse_non_module(container: str, value) -> None:
    if not isinstance(value, Module):
        raise TypeError(f"{container} holds modules, got {type(value).__name__}")


class Sequential(Module):
    """Modules applied one after another: `Sequential(Linear(2, 8), ReLU(), Linear(8, 1))`.

    The children are named "0", "1", ..., so parameters are "0.weight", "0.bias", ... as in PyTorch; or named by
    the keys of a dict: `Sequential(OrderedDict(fc=Linear(2, 8), act=ReLU()))`. As in PyTorch, `insert`, `del`
    and `pop` renumber the children "0", "1", ... by position afterwards.
    """

    def __init__(self, *modules: Module):
        super().__init__()
        self._items: list[Module] = []
        self._names: list[str] = []
        if len(modules) == 1 and isinstance(modules[0], dict):  # named children, in the dict's order
            for name, module in modules[0].items():
                _check_child_name(self, name, "Sequential")
                self.append(module, name)
            return
        for module in modules:
            self.append(module)

    def __getattr__(self, name: str):
        """A child named by a dict's key, as an attribute: `model.encoder` (only called when nothing else has the
        name)."""
        names = self.__dict__.get("_names", ())
        if name in names:
            return self.__dict__["_items"][names.index(name)]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute {name!r}")

    def append(self, module: Module, name: str | None = None) -> Sequential:
        """Add `module` at the end, named by its position ("3") unless `name` is given."""
        _refuse_non_module("Sequential", module)
        if name is None:  # its position, or the next number free (a slice keeps its modules' names: "1", "2")
            number = len(self._names)
            while str(number) in self._names:
                number += 1
            name = str(number)
        elif name in self._names:
            raise ValueError(f"Sequential.append: the name {name!r} is taken (names: {self._names})")
        self._items.append(module)
        self._names.append(name)
        _structure_changed()
        return self

    def extend(self, modules) -> Sequential:
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Put `module` before position `index` (len(self) for the end); the children are renumbered."""
        _refuse_non_module("Sequential", module)
        self._items.insert(_position("Sequential.insert", index, len(self), inserting=True), module)
        self._renumber()
        return self

    def pop(self, index: int = -1) -> Module:
        """Remove and return the module at `index`; the children are renumbered."""
        module = self._items.pop(_position("Sequential.pop", index, len(self)))
        self._renumber()
        return module

    def _renumber(self) -> None:
        self._names = [str(i) for i in range(len(self._items))]
        _structure_changed()

    def _child_slots(self) -> list[tuple[str, Module]]:
        return list(zip(self._names, self._items))

    def forward(self, x):
        for module in self._items:
            x = module(x)
        return x

    def __getitem__(self, index):
        if isinstance(index, slice):  # the modules keep their names ("1", "2", ...), as in PyTorch
            part = Sequential()
            for name, module in zip(self._names[index], self._items[index]):
                part.append(module, name)
            return part
        return self._items[_position("Sequential", index, len(self))]

    def __setitem__(self, index: int, module: Module) -> None:
        """Replace the module at `index`; it keeps the name of the one it replaces."""
        _refuse_non_module("Sequential", module)
        self._items[_position("Sequential", index, len(self))] = module
        _structure_changed()

    def __delitem__(self, index) -> None:
        if isinstance(index, slice):
            del self._items[index]
        else:
            del self._items[_position("Sequential", index, len(self))]
        self._renumber()

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._items)


class ModuleList(Module):
    """A list of modules whose parameters belong to the owner (a plain Python list would hide them:
    `self.layers = [Linear(...), ...]` registers nothing, so nothing would be trained or saved).

    The children are named by position, "0", "1", ..., and renamed when modules are inserted or removed."""

    def __init__(self, modules=()):
        super().__init__()
        self._items: list[Module] = []
        for module in modules:
            self.append(module)

    def append(self, module: Module) -> ModuleList:
        _refuse_non_module("ModuleList", module)
        self._items.append(module)
        _structure_changed()
        return self

    def extend(self, modules) -> ModuleList:
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Put `module` before position `index` (len(self) for the end)."""
        _refuse_non_module("ModuleList", module)
        self._items.insert(_position("ModuleList.insert", index, len(self), inserting=True), module)
        _structure_changed()

    def pop(self, index: int = -1) -> Module:
        module = self._items.pop(_position("ModuleList.pop", index, len(self)))
        _structure_changed()
        return module

    def _child_slots(self) -> list[tuple[str, Module]]:
        return [(str(i), module) for i, module in enumerate(self._items)]

    def __getitem__(self, index):
        if isinstance(index, slice):
            return ModuleList(self._items[index])
        return self._items[_position("ModuleList", index, len(self))]

    def __setitem__(self, index: int, module: Module) -> None:
        _refuse_non_module("ModuleList", module)
        self._items[_position("ModuleList", index, len(self))] = module
        _structure_changed()

    def __delitem__(self, index) -> None:
        if isinstance(index, slice):
            del self._items[index]
        else:
            del self._items[_position("ModuleList", index, len(self))]
        _structure_changed()

    def __iadd__(self, modules) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other) -> ModuleList:
        return ModuleList(list(self) + list(other))

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._items)

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList has no forward: iterate over it in your module's forward")


class ModuleDict(Module):
    """A dict of modules whose parameters belong to the owner (a plain dict would hide them, as a plain list
    does). The children are named by their keys ("encoder.weight"), in insertion order, as in PyTorch.

    Keys are strings without "." (state_dict joins names with dots). Unlike PyTorch's, a key may be any such
    string, `keys` or `training` too: the modules are kept apart from the attributes."""

    def __init__(self, modules=None):
        super().__init__()
        self._entries: dict[str, Module] = {}
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        if key not in self._entries:
            raise KeyError(f"ModuleDict has no module {key!r} (keys: {list(self._entries)})")
        return self._entries[key]

    def __setitem__(self, key: str, module: Module) -> None:
        if not isinstance(key, str):
            raise TypeError(f"ModuleDict: keys must be strings, got {type(key).__name__}")
        if not key or "." in key:
            raise NameTakenError(f"ModuleDict: a key must be a non-empty string without '.', got {key!r}")
        if not isinstance(module, Module):
            raise TypeError(f"ModuleDict holds modules, got {type(module).__name__} for key {key!r}")
        self._entries[key] = module
        _structure_changed()

    def __delitem__(self, key: str) -> None:
        self[key]  # (the KeyError that names the keys)
        del self._entries[key]
        _structure_changed()

    def pop(self, key: str) -> Module:
        module = self[key]
        del self[key]
        return module

    def clear(self) -> None:
        self._entries.clear()
        _structure_changed()

    def update(self, modules) -> None:
        """Add (or replace) modules from a dict or from (key, module) pairs."""
        pairs = modules.items() if hasattr(modules, "items") else modules
        for pair in pairs:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(f"ModuleDict.update: expects a dict or (key, module) pairs, got {pair!r}")
            self[pair[0]] = pair[1]

    def keys(self):
        return self._entries.keys()

    def values(self):
        return self._entries.values()

    def items(self):
        return self._entries.items()

    def _child_slots(self) -> list[tuple[str, Module]]:
        return list(self._entries.items())

    def __contains__(self, key) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleDict has no forward: pick modules by key in your module's forward")
