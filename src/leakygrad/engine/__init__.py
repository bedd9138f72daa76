"""The engine: `Tensor`, the ops (forward and backward side by side) and the graph walk.

It depends on NumPy alone and knows nothing of the layers, the doctor or the lab built on it.
"""

from leakygrad.engine.tensor import Tensor  # noqa: I001  (first: the ops need it)
from leakygrad.engine import functional
from leakygrad.engine.autograd import grad, topological_order
from leakygrad.engine.creation import (
    arange,
    eye,
    from_numpy,
    full,
    generator,
    manual_seed,
    ones,
    ones_like,
    rand,
    randn,
    tensor,
    zeros,
    zeros_like,
)
from leakygrad.engine.errors import BackwardError, LeakygradError, NotTwiceDifferentiable, OpError, what_is
from leakygrad.engine.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from leakygrad.engine.op import Op

__all__ = [
    "Tensor",
    "Op",
    "functional",
    "grad",
    "topological_order",
    "tensor",
    "zeros",
    "ones",
    "full",
    "zeros_like",
    "ones_like",
    "eye",
    "from_numpy",
    "arange",
    "randn",
    "rand",
    "manual_seed",
    "generator",
    "no_grad",
    "enable_grad",
    "is_grad_enabled",
    "set_grad_enabled",
    "LeakygradError",
    "OpError",
    "what_is",
    "BackwardError",
    "NotTwiceDifferentiable",
]
