"""Forward mode: Jacobian-vector products, J(x) t, the directional derivative of f at x along t.

Reverse mode (backward) gives vector-Jacobian products u^T J. The double-backward construction turns one into
the other: g(u) = u^T J is linear in u, so its gradient with respect to u, taken along t, is J t:

    d/du <u^T J, t> = J t.

This needs every op's backward to be differentiable with respect to its upstream gradient, which it is, being
written in Tensor operations. It costs two backward passes: a price worth paying for one readable mechanism.
(The lab's forward-gradient experiment uses it.)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from leakygrad.engine import LeakygradError, Tensor, enable_grad, grad, what_is


def jvp(fn: Callable, inputs, tangents):
    """Return `(fn(*inputs), J t)`: the outputs and their directional derivative along `tangents`.

    `inputs` and `tangents` are a Tensor each, or sequences of the same length and shapes. The outputs come
    back detached; the Jacobian-vector product has the outputs' structure (a Tensor or a tuple).

    Being built from two backward passes, J t goes through any gradient hook that `fn` puts on a tensor
    (`register_hook`): a hook that changes the gradient changes J t too (torch.func.jvp, forward mode proper,
    runs no hooks), and one that only looks is called twice, the first time with a gradient of zeros.
    """
    single = isinstance(inputs, Tensor)
    inputs = [inputs] if single else list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]
    one_of_each = single and isinstance(tangents, (tuple, list)) and len(tangents) == 1
    if isinstance(tangents, (tuple, list)) and (not single or (one_of_each and _is_array(tangents[0]))):
        tangents = list(tangents)  # (one input's tangent may come alone, or in a tuple of one)
    else:
        tangents = [tangents]
    if len(tangents) != len(inputs):
        raise LeakygradError(f"jvp: {len(inputs)} inputs but {len(tangents)} tangents")
    for i, (x, t) in enumerate(zip(inputs, tangents)):
        if not isinstance(x, Tensor) or x.dtype.kind != "f":
            raise LeakygradError(f"jvp: input {i} must be a floating-point Tensor, got {what_is(x)}")
        if tuple(np.shape(t)) != x.shape:
            raise LeakygradError(f"jvp: tangent {i} has shape {tuple(np.shape(t))}, input {i} has shape {x.shape}")

    with enable_grad():
        xs = [Tensor(x.data, requires_grad=True, dtype=x.dtype) for x in inputs]
        result = fn(*xs)
        outputs = list(result) if isinstance(result, (tuple, list)) else [result]
        for k, out in enumerate(outputs):
            if not isinstance(out, Tensor):
                raise LeakygradError(
                    f"jvp: fn must return a Tensor or a flat tuple of Tensors; output {k} is {what_is(out)}"
                )
        # u: a stand-in upstream gradient. Its value does not matter (the backward is linear in it). An integer
        # output (an argmax, a count) has none: its J t is zero.
        us = [
            Tensor(np.zeros(out.shape, dtype=out.dtype), requires_grad=out.dtype.kind == "f", dtype=out.dtype)
            for out in outputs
        ]
        live = [(o, u) for o, u in zip(outputs, us) if o.requires_grad]
        if live:
            vjps = grad(
                [o for o, _ in live], xs, grad_outputs=[u for _, u in live], create_graph=True, allow_unused=True
            )
        else:
            vjps = [None] * len(xs)
        pairs = [
            (g, Tensor(t, dtype=x.dtype)) for g, t, x in zip(vjps, tangents, xs) if g is not None and g.requires_grad
        ]
        jvps = [None] * len(us)
        if pairs:
            floating = [i for i, u in enumerate(us) if u.requires_grad]
            found = grad([g for g, _ in pairs], [us[i] for i in floating], [t for _, t in pairs], allow_unused=True)
            for i, j in zip(floating, found):
                jvps[i] = j

    jvps = [
        Tensor(np.zeros(o.shape, dtype=o.dtype), dtype=o.dtype) if j is None else j.detach()
        for j, o in zip(jvps, outputs)
    ]
    outputs = [o.detach() for o in outputs]
    if isinstance(result, (tuple, list)):
        return tuple(outputs), tuple(jvps)
    return outputs[0], jvps[0]


def _is_array(value) -> bool:
    return isinstance(value, (Tensor, np.ndarray))
