"""leakygrad: see where backprop leaks.

- `leakygrad.engine`: a NumPy autodiff engine whose every backward pass is written out beside its forward.
- `leakygrad.gradcheck`, `leakygrad.jvp`, `leakygrad.viz`: check, extend and draw what the engine computes.
- `leakygrad.nn`: layers and losses; `leakygrad.optim`: optimisers and schedules; `leakygrad.io`: saving and
  loading; `leakygrad.data`: minibatches, synthetic tasks, a character corpus and the 8x8 digits.
"""

from leakygrad import data, io, nn, optim, viz  # noqa: F401
from leakygrad.engine import (  # noqa: F401
    BackwardError,
    LeakygradError,
    Op,
    OpError,
    Tensor,
    arange,
    enable_grad,
    eye,
    from_numpy,
    full,
    functional,
    generator,
    grad,
    is_grad_enabled,
    manual_seed,
    no_grad,
    ones,
    ones_like,
    rand,
    randn,
    set_grad_enabled,
    tensor,
    zeros,
    zeros_like,
)
from leakygrad.forward import jvp  # noqa: F401
from leakygrad.gradcheck import GradcheckError, GradcheckReport, gradcheck, gradgradcheck  # noqa: F401

__version__ = "0.1.0"
