"""RMSprop (Hinton, Coursera lecture 6e, 2012): divide each gradient by a running root-mean-square of it.

    g   <- grad + weight_decay * w
    s   <- alpha * s + (1 - alpha) * g^2                    (running mean of squares)
    a   <- g_avg = alpha * a + (1 - alpha) * g              (only when centered)
    rms =  sqrt(s - a^2) if centered else sqrt(s),    then  rms <- rms + eps
    b   <- momentum * b + g / rms,   w <- w - lr * b        (with momentum)
    w   <- w - lr * g / rms                                 (without)

`centered` (Graves 2013) divides by an estimate of the gradient's standard deviation rather than its
root mean square. Same order of operations as torch.optim.RMSprop.
"""

from __future__ import annotations

import numpy as np

from leakygrad.optim.optimizer import Optimizer, check_hyperparameter, params_with_grads


class RMSprop(Optimizer):
    per_parameter_state = ("square_avg", "momentum_buffer", "grad_avg")

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        momentum: float = 0.0,
        centered: bool = False,
        maximize: bool = False,
    ):
        check_hyperparameter("RMSprop", "lr", lr)
        check_hyperparameter("RMSprop", "alpha", alpha)
        check_hyperparameter("RMSprop", "eps", eps)
        check_hyperparameter("RMSprop", "weight_decay", weight_decay)
        check_hyperparameter("RMSprop", "momentum", momentum)
        defaults = dict(
            lr=lr,
            alpha=alpha,
            eps=eps,
            weight_decay=weight_decay,
            momentum=momentum,
            centered=centered,
            maximize=maximize,
        )
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, alpha, eps, momentum = group["lr"], group["alpha"], group["eps"], group["momentum"]
            for p, grad in params_with_grads(group):
                g = -grad if group["maximize"] else grad
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["square_avg"] = np.zeros_like(p.data)
                # The momentum buffer and the gradient average start at zero when their option is first on, which
                # may be mid-run (a user or a schedule setting momentum > 0 later; PyTorch raises a KeyError then).
                if momentum > 0 and "momentum_buffer" not in state:
                    state["momentum_buffer"] = np.zeros_like(p.data)
                if group["centered"] and "grad_avg" not in state:
                    state["grad_avg"] = np.zeros_like(p.data)
                state["step"] += 1

                if group["weight_decay"] != 0:
                    g = g + group["weight_decay"] * p.data
                square_avg = state["square_avg"]
                square_avg *= alpha
                square_avg += (1 - alpha) * g * g
                if group["centered"]:
                    grad_avg = state["grad_avg"]
                    grad_avg += (1 - alpha) * (g - grad_avg)  # = alpha * grad_avg + (1 - alpha) * g
                    rms = np.sqrt(square_avg - grad_avg * grad_avg)
                else:
                    rms = np.sqrt(square_avg)
                rms += eps

                if momentum > 0:
                    buffer = state["momentum_buffer"]
                    buffer *= momentum
                    buffer += g / rms
                    p.data -= lr * buffer
                else:
                    p.data -= lr * (g / rms)
        return loss
