"""`Op`: one differentiable operation, the unit every op in `leakygrad.engine.ops` is written in.

An op has two methods, side by side:

- `forward(*arrays)`: NumPy arrays in, one NumPy array out. It may keep on `self` what backward needs
  (`self.needs_input_grad` is already set when a backward may follow, and empty when none will).
- `backward(grad)`: given d(final)/d(output) as a Tensor, return d(final)/d(input) for each input, also as
  Tensors. Because backward is written with Tensor operations, running it with the graph recording
  (`create_graph=True`) differentiates the backward pass too: second derivatives come for free.
- optionally, `backward_arrays(grad)`: the same derivative on NumPy arrays (arrays or None out). When the
  backward pass is not recorded, nothing will differentiate the gradients, and the walk calls this one instead:
  the layers' fused ops have it, so that a training step does not apply an op for every gradient.

`Op.apply(*inputs, **params)` runs the forward and, when gradients are wanted, records the op as the
output's `op`, remembering its inputs. Nothing else about the graph lives here: the walk that calls each
backward in turn is `leakygrad.engine.autograd`.
"""

from __future__ import annotations

import operator
import weakref

import numpy as np

from leakygrad.engine.errors import LeakygradError, OpError, describe
from leakygrad.engine.grad_mode import is_grad_enabled
from leakygrad.engine.tensor import InPlaceClock, Tensor, as_tensor


class Op:
    name = "op"  # how errors, the graph drawing and the doctor call it

    inputs: tuple[Tensor, ...] = ()
    recorded_at = 0  # InPlaceClock.now when the op was recorded: its inputs and output must not change after
    # needs_input_grad[i] is True when input i wants a gradient: a backward may skip the others' work. Empty
    # when the op is not recorded (no input wants a gradient, or inside no_grad): no backward will run.
    needs_input_grad: tuple[bool, ...] = ()

    def forward(self, *arrays: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def backward(self, grad: Tensor) -> Tensor | tuple[Tensor | None, ...] | None:
        raise NotImplementedError

    backward_arrays = None  # or a method: (grad: np.ndarray) -> np.ndarray | tuple[np.ndarray | None, ...]

    @property
    def output(self) -> Tensor:
        """The tensor this op produced (held weakly: the output owns its op, not the other way round)."""
        return self._output()

    @classmethod
    def apply(cls, *inputs, **params) -> Tensor:
        op = cls(**params)
        tensors = inputs
        for x in inputs:
            if not isinstance(x, Tensor):
                tensors = _constants_as_tensors(inputs)
                break
        recorded = is_grad_enabled()
        if recorded:  # and some input wants a gradient
            wants = tuple(map(_wants_grad, tensors))
            recorded = True in wants
            if recorded:
                op.needs_input_grad = wants
        try:
            result = op.forward(*map(_array_of, tensors))
        except LeakygradError:
            raise
        except (ValueError, IndexError, TypeError) as error:
            raise OpError(_explain_failure(op.name, tensors, error)) from error

        if not recorded:
            return Tensor._wrap(result)
        output = Tensor._wrap(result, True)
        op.inputs = tensors
        op.recorded_at = InPlaceClock.now
        op._output = weakref.ref(output)
        output.op = op
        return output

    def __repr__(self) -> str:
        shapes = ", ".join(str(t.shape) for t in self.inputs)
        return f"<{self.name} of {shapes}>"


# t._requires_grad and t.data, as functions (map calls them without a Python frame each: ops are applied often)
_wants_grad = operator.attrgetter("_requires_grad")
_array_of = operator.attrgetter("data")


def _constants_as_tensors(inputs) -> tuple[Tensor, ...]:
    """Python numbers and NumPy arrays become constant tensors; numbers take the dtype of a tensor input."""
    like = next((x for x in inputs if isinstance(x, Tensor)), None)
    return tuple([x if isinstance(x, Tensor) else as_tensor(x, like) for x in inputs])


def _explain_failure(name: str, tensors: tuple[Tensor, ...], error: Exception) -> str:
    shapes = [t.shape for t in tensors]
    if len(tensors) == 2 and "broadcast" in str(error):
        return (
            f"{name}: shapes {shapes[0]} and {shapes[1]} cannot be broadcast together "
            "(aligned from the right, each pair of dimensions must be equal or one of them 1)"
        )
    inputs = ", ".join(describe(t) for t in tensors)
    return f"{name}: {error} (inputs: {inputs})"
