"""The chain rule, applied to a whole graph: reverse-mode automatic differentiation.

Every op knows only its own local derivative (its `backward`). This module strings them together:

1. Order the graph so that each tensor comes after every tensor computed from it (a topological order,
   found with an explicit stack, so a chain of 100,000 ops needs no deep recursion).
2. Walk that order from the output back to the leaves. When a tensor's turn comes, every path from the
   output to it has already delivered its contribution, so its gradient is complete: run its hooks, then
   hand the gradient to the op that produced it, whose backward returns one gradient per input.
3. Where a tensor feeds several ops, add up the gradients arriving from each (the multivariable chain rule).
   Leaves that require grad accumulate their gradient into `.grad`, across calls, as in PyTorch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from leakygrad.engine.errors import BackwardError, describe, what_is
from leakygrad.engine.grad_mode import enable_grad, no_grad
from leakygrad.engine.tensor import InPlaceClock, Tensor, as_tensor


def topological_order(roots: Sequence[Tensor]) -> list[Tensor]:
    """Every tensor that requires grad and is reachable from `roots`, each before the tensors it came from."""
    finished: list[Tensor] = []  # post-order: a tensor is finished after all of its inputs
    seen: set[int] = set()
    for root in roots:
        stack: list[tuple[Tensor, bool]] = [(root, False)]
        while stack:
            tensor, inputs_done = stack.pop()
            if inputs_done:
                finished.append(tensor)
                continue
            if id(tensor) in seen:
                continue
            seen.add(id(tensor))
            stack.append((tensor, True))
            if tensor.op is not None:
                for parent in tensor.op.inputs:
                    if parent._requires_grad and id(parent) not in seen:
                        stack.append((parent, False))
    finished.reverse()
    return finished


def backward(tensor: Tensor, gradient=None, create_graph: bool = False) -> None:
    """`tensor.backward()`: add d(tensor)/d(leaf) into `leaf.grad` for every leaf that requires grad."""
    if not tensor.requires_grad:
        raise BackwardError(
            "backward: this tensor does not require grad, so there is nothing to differentiate. "
            "Create the inputs you want gradients for with requires_grad=True (nn.Parameters do this), "
            "and check that the computation was not done inside no_grad() or through .detach()."
        )
    seed = _seed_gradient("backward", tensor, gradient)
    _walk([tensor], [seed], create_graph=create_graph, wanted=None)


def grad(outputs, inputs, grad_outputs=None, create_graph: bool = False, allow_unused: bool = False):
    """d(outputs)/d(inputs), returned as a tuple (one per input) instead of being stored in `.grad`.

    `grad_outputs` weights each output (required for outputs with more than one element). With
    `create_graph=True` the returned gradients are themselves differentiable: call `grad` on them again for
    second derivatives, Hessian-vector products and the like.
    """
    single_input = isinstance(inputs, Tensor)
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    inputs = [inputs] if single_input else list(inputs)
    if grad_outputs is None or isinstance(grad_outputs, Tensor) or isinstance(grad_outputs, np.ndarray):
        grad_outputs = [grad_outputs] * len(outputs) if grad_outputs is None else [grad_outputs]
    if len(grad_outputs) != len(outputs):
        raise BackwardError(f"grad: {len(outputs)} outputs but {len(grad_outputs)} grad_outputs")
    for i, x in enumerate(inputs):
        if not isinstance(x, Tensor) or not x.requires_grad:
            raise BackwardError(f"grad: input {i} does not require grad, so no gradient can be computed for it")

    roots, seeds = [], []
    for i, (output, weight) in enumerate(zip(outputs, grad_outputs)):
        if not isinstance(output, Tensor):
            raise BackwardError(f"grad: output {i} is {what_is(output)}, not a Tensor")
        if output.requires_grad:
            roots.append(output)
            seeds.append(_seed_gradient("grad", output, weight))
        elif not allow_unused:  # (with allow_unused: depending on nothing, it adds nothing; a constant
            # derivative, say, whose own derivative is zero)
            raise BackwardError(
                f"grad: output {i} does not require grad (computed inside no_grad(), from .detach(), or from "
                "nothing that requires grad), so it has no gradient with respect to anything. Pass "
                "allow_unused=True to get None instead."
            )
    found = _walk(roots, seeds, create_graph=create_graph, wanted=inputs) if roots else {}

    results = []
    for i, x in enumerate(inputs):
        g = found.get(id(x))
        if g is None and not allow_unused:
            raise BackwardError(
                f"grad: input {i} (shape {x.shape}) is not used to compute the outputs, so its gradient "
                "is undefined. Pass allow_unused=True to get None for it instead."
            )
        results.append(g)
    return tuple(results)


def _seed_gradient(where: str, tensor: Tensor, gradient) -> Tensor:
    """The gradient the walk starts from: d(output)/d(output) = 1, or what the caller passed."""
    if gradient is None:
        if tensor.size != 1:
            raise BackwardError(
                f"{where}: the output has shape {tensor.shape}, and a gradient can only be implied for a "
                "single number. Reduce it first (out.sum(), out.mean()), or pass the gradient of the final "
                f"result with respect to it: {where}(gradient=Tensor of shape {tensor.shape})."
            )
        return Tensor._wrap(np.ones(tensor.shape, dtype=tensor.dtype))
    gradient = as_tensor(gradient, like=tensor)
    if gradient.shape != tensor.shape:
        raise BackwardError(
            f"{where}: the gradient passed has shape {gradient.shape}, but the output has shape {tensor.shape}"
        )
    return gradient if gradient.dtype == tensor.dtype else gradient.astype(tensor.dtype)


def _walk(roots, seeds, create_graph: bool, wanted) -> dict[int, Tensor]:
    """Backpropagate from `roots`. With `wanted` (a list of tensors), return their gradients instead of
    accumulating into leaves."""
    order = topological_order(roots)
    if wanted is not None:
        order = _only_paths_to(order, {id(x) for x in wanted})
    wanted_ids = None if wanted is None else {id(x) for x in wanted}

    pending: dict[int, Tensor] = {}
    for root, seed in zip(roots, seeds):
        _add(pending, root, seed)
    found: dict[int, Tensor] = {}
    # Arrays someone else holds (the seeds the caller passed, gradients retained on the way) or that a leaf got
    # already: a leaf that receives one of them gets a copy (see _accumulate_into_leaf).
    given_to_leaves: set[int] = {id(seed.data) for seed in seeds}

    # inf and nan in a gradient are results to report (the doctor looks for them), not NumPy warnings
    with enable_grad() if create_graph else no_grad(), np.errstate(all="ignore"):
        for tensor in order:
            g = pending.pop(id(tensor), None)
            if g is None:
                continue  # no path from the roots delivered a gradient here
            if tensor._hooks:
                g = _run_hooks(tensor, g)
            op = tensor.op
            if wanted_ids is not None:
                if id(tensor) in wanted_ids:
                    found[id(tensor)] = g
            elif op is None:
                _accumulate_into_leaf(tensor, g, create_graph, given_to_leaves)
            elif tensor._retains_grad:  # accumulates across calls, like a leaf's (as in PyTorch)
                retained = g if create_graph else g.detach()
                tensor.grad = retained if tensor.grad is None else tensor.grad + retained
                given_to_leaves.add(id(g.data))
            if op is not None:
                if InPlaceClock.now > op.recorded_at:  # something was changed in place since the forward pass
                    _refuse_if_changed(op, tensor)
                _backward_through(op, g, pending, on_arrays=not create_graph)
    return found


def _refuse_if_changed(op, output: Tensor) -> None:
    """An op's backward reads its inputs (x for x * y) or its output (exp's, sigmoid's): if one of them was changed
    in place after the op was recorded, the derivative would be taken at values the forward never used."""
    for role, tensor in [("the output", output)] + [(f"input {i}", x) for i, x in enumerate(op.inputs)]:
        if InPlaceClock.changed_at(tensor.data) > op.recorded_at:
            raise BackwardError(
                f"backward: {role} of `{op.name}` ({describe(tensor)}) was changed in place (x += ..., x *= ... inside "
                f"no_grad()) after `{op.name}` used it, so its backward would read values the forward never saw and "
                "give a wrong gradient. Change a copy (x = x * 2, or x.clone()), or make the change before the "
                "forward pass or after backward()."
            )


def _only_paths_to(order: list[Tensor], target_ids: set[int]) -> list[Tensor]:
    """Drop tensors from which none of the targets can be reached: their backward would be wasted work."""
    leads: set[int] = set()
    for tensor in reversed(order):  # inputs before outputs
        if id(tensor) in target_ids or (tensor.op is not None and any(id(p) in leads for p in tensor.op.inputs)):
            leads.add(id(tensor))
    return [t for t in order if id(t) in leads]


def _run_hooks(tensor: Tensor, g: Tensor) -> Tensor:
    for hook in list(tensor._hooks.values()):  # (a hook may remove itself)
        replaced = hook(g)
        if replaced is not None:
            replaced = as_tensor(replaced, like=g)
            if replaced.shape != g.shape or replaced.dtype != g.dtype:
                raise BackwardError(
                    f"hook {getattr(hook, '__name__', hook)!r}: returned a gradient of {describe(replaced)} for a "
                    f"gradient of {describe(g)}: a hook may change the values, not the shape or dtype"
                )
            g = replaced
    return g


def _backward_through(op, g: Tensor, pending: dict[int, Tensor], on_arrays: bool) -> None:
    """One application of the chain rule: d(final)/d(input) = op's local derivative applied to g. When the
    backward is not recorded (`on_arrays`) and the op has it, its `backward_arrays` computes the same on arrays."""
    if on_arrays and op.backward_arrays is not None:
        input_grads = op.backward_arrays(g.data)
    else:
        input_grads = op.backward(g)
    if not isinstance(input_grads, tuple):
        input_grads = (input_grads,)
    if len(input_grads) != len(op.inputs):
        raise BackwardError(f"{op.name}.backward returned {len(input_grads)} gradients for {len(op.inputs)} inputs")
    for i, (x, gx) in enumerate(zip(op.inputs, input_grads)):
        if gx is None or not x._requires_grad:
            continue
        if type(gx) is np.ndarray:  # from backward_arrays
            gx = Tensor._wrap(gx)
        elif type(gx) is not Tensor:
            gx = as_tensor(gx, like=g)
        if gx.data.shape != x.data.shape:
            raise BackwardError(
                f"{op.name}.backward returned a gradient of shape {gx.shape} for input {i}, which has "
                f"shape {x.shape}: a gradient always has the shape of what it is the gradient of"
            )
        if gx.data.dtype != x.data.dtype:
            gx = gx.astype(x.dtype)  # e.g. a float32 weight times a float64 constant: keep the weight's dtype
        _add(pending, x, gx)


def _add(pending: dict[int, Tensor], tensor: Tensor, g: Tensor) -> None:
    previous = pending.get(id(tensor))
    pending[id(tensor)] = g if previous is None else previous + g


def _accumulate_into_leaf(leaf: Tensor, g: Tensor, create_graph: bool, given: set[int]) -> None:
    # The same array may reach several leaves (add passes its gradient to both inputs), and a view or a
    # broadcast may be read-only: give each leaf an array of its own so that `grad.data *= c` is safe.
    data = g.data
    if id(data) in given or data.base is not None or not data.flags.writeable:
        # (recorded, the copy is a clone: the gradient stays in the graph)
        g = g.clone() if create_graph else Tensor._wrap(data.copy())
    given.add(id(g.data))
    if leaf.grad is None:
        leaf.grad = g
        return
    if not isinstance(leaf.grad, Tensor) or leaf.grad.shape != leaf.shape or leaf.grad.dtype != leaf.dtype:
        raise BackwardError(
            f"backward: the tensor's .grad is {what_is(leaf.grad)}, but the tensor is {describe(leaf)}: a gradient "
            "has the tensor's shape and dtype. Was .grad assigned by hand? Set it to None to start again."
        )
    leaf.grad = leaf.grad + g
