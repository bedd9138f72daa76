"""Adagrad (Duchi, Hazan & Singer 2011): each weight's step shrinks with the sum of its squared gradients,
so rarely-updated weights keep large steps and frequently-updated ones slow down.

    t   <- t + 1
    g   <- grad + weight_decay * w
    lr_t = lr / (1 + (t - 1) * lr_decay)
    s   <- s + g^2                                  (s starts at initial_accumulator_value)
    w   <- w - lr_t * g / (sqrt(s) + eps)

Same order of operations as torch.optim.Adagrad (whose state is created when the optimiser is built).
"""

from __future__ import annotations

import numpy as np

from leakygrad.optim.optimizer import Optimizer, check_hyperparameter, params_with_grads


class Adagrad(Optimizer):
    per_parameter_state = ("sum",)

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        lr_decay: float = 0.0,
        weight_decay: float = 0.0,
        initial_accumulator_value: float = 0.0,
        eps: float = 1e-10,
        maximize: bool = False,
    ):
        for name, value in [
            ("lr", lr),
            ("lr_decay", lr_decay),
            ("weight_decay", weight_decay),
            ("initial_accumulator_value", initial_accumulator_value),
            ("eps", eps),
        ]:
            check_hyperparameter("Adagrad", name, value)
        defaults = dict(
            lr=lr,
            lr_decay=lr_decay,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
            eps=eps,
            maximize=maximize,
        )
        super().__init__(params, defaults)  # calls add_param_group below, which creates the state

    def _init_state(self, p, group) -> None:
        state = self.state[p]
        if not state:
            state["step"] = 0
            state["sum"] = np.full_like(p.data, group["initial_accumulator_value"])

    def add_param_group(self, param_group: dict) -> None:
        """As for every optimiser, and create the new parameters' accumulators right away."""
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        for p in group["params"]:
            self._init_state(p, group)

    def step(self, closure=None):
        loss = self._evaluate(closure)
        for group in self.param_groups:
            for p, grad in params_with_grads(group):
                g = -grad if group["maximize"] else grad
                state = self.state[p]
                state["step"] += 1
                if group["weight_decay"] != 0:
                    g = g + group["weight_decay"] * p.data
                lr_t = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
                state["sum"] += g * g
                p.data -= lr_t * (g / (np.sqrt(state["sum"]) + group["eps"]))
        return loss
