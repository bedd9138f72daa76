"""Stochastic gradient descent, with momentum, Nesterov momentum and weight decay.

The update, in the order torch.optim.SGD applies it (momentum as in Sutskever et al. 2013, written so
that the learning rate multiplies the whole step):

    g  <- grad + weight_decay * w                      (L2 penalty (weight_decay / 2) * |w|^2)
    b  <- g                                            on the first step
    b  <- momentum * b + (1 - dampening) * g           afterwards
    g  <- g + momentum * b   with nesterov,   g <- b   without
    w  <- w - lr * g
"""

from __future__ import annotations

import numpy as np

from leakygrad.optim.optimizer import Optimizer, check_hyperparameter, params_with_grads


class SGD(Optimizer):
    """Gradient descent: `w <- w - lr * grad`, plus the momentum options above (all off by default)."""

    per_parameter_state = ("momentum_buffer",)

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        maximize: bool = False,
    ):
        check_hyperparameter("SGD", "lr", lr)
        check_hyperparameter("SGD", "momentum", momentum)
        check_hyperparameter("SGD", "weight_decay", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError(
                f"SGD: Nesterov momentum needs momentum > 0 and dampening = 0, got momentum={momentum}, "
                f"dampening={dampening}"
            )
        defaults = dict(
            lr=lr,
            momentum=momentum,
            dampening=dampening,
            weight_decay=weight_decay,
            nesterov=nesterov,
            maximize=maximize,
        )
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
            for p, grad in params_with_grads(group):
                g = -grad if group["maximize"] else grad
                if group["weight_decay"] != 0:
                    g = g + group["weight_decay"] * p.data
                if momentum != 0:
                    state = self.state[p]
                    buffer = state.get("momentum_buffer")
                    if buffer is None:
                        # (np.array: a copy, and an array even for a 0-d parameter, whose g is a NumPy scalar;
                        # a scalar buffer would not be updated in place below)
                        buffer = state["momentum_buffer"] = np.array(g)
                    else:
                        buffer *= momentum
                        buffer += (1 - dampening) * g
                    g = g + momentum * buffer if group["nesterov"] else buffer
                p.data -= lr * g
        return loss
