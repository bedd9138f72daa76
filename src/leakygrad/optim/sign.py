"""signSGD and Signum (Bernstein, Wang, Azizzadenesheli & Anandkumar 2018, "signSGD: Compressed
Optimisation for Non-Convex Problems"): step by the *sign* of the gradient, or of its momentum.

Every weight moves by exactly `lr` each step, however large or small its gradient: a tiny gradient that
points the right way counts as much as a huge one. That makes the method robust to badly scaled
gradients (and its updates one bit per weight), at the price of never slowing down near a minimum.

    signSGD  (Algorithm 1):   w <- w - lr * sign(g)
    Signum   (Algorithm 2):   m <- beta * m + (1 - beta) * g,     w <- w - lr * sign(m)       (m starts at 0)

with g <- grad + weight_decay * w when weight_decay is set. sign(0) = 0: a weight with a zero gradient
does not move. Signum with momentum 0 is signSGD.
"""

from __future__ import annotations

import numpy as np

from leakygrad.optim.optimizer import Optimizer, check_hyperparameter, params_with_grads


class SignSGD(Optimizer):
    """`w <- w - lr * sign(grad + weight_decay * w)`."""

    def __init__(self, params, lr: float = 1e-3, weight_decay: float = 0.0):
        check_hyperparameter("SignSGD", "lr", lr)
        check_hyperparameter("SignSGD", "weight_decay", weight_decay)
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay))

    def step(self, closure=None):
        loss = self._evaluate(closure)
        for group in self.param_groups:
            for p, grad in params_with_grads(group):
                g = grad + group["weight_decay"] * p.data if group["weight_decay"] != 0 else grad
                p.data -= group["lr"] * np.sign(g)
        return loss


class Signum(Optimizer):
    """Sign of momentum: `m <- momentum * m + (1 - momentum) * g`, `w <- w - lr * sign(m)`."""

    per_parameter_state = ("momentum_buffer",)

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.9, weight_decay: float = 0.0):
        check_hyperparameter("Signum", "lr", lr)
        check_hyperparameter("Signum", "momentum", momentum, 0.0, 1.0)
        check_hyperparameter("Signum", "weight_decay", weight_decay)
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay))

    def step(self, closure=None):
        loss = self._evaluate(closure)
        for group in self.param_groups:
            beta = group["momentum"]
            for p, grad in params_with_grads(group):
                g = grad + group["weight_decay"] * p.data if group["weight_decay"] != 0 else grad
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = np.zeros_like(p.data)
                m = state["momentum_buffer"]
                m *= beta
                m += (1 - beta) * g
                p.data -= group["lr"] * np.sign(m)
        return loss
