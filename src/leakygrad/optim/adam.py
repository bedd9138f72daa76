"""Adam (Kingma & Ba 2015), its AMSGrad variant (Reddi et al. 2018) and AdamW (Loshchilov & Hutter 2019).

Adam keeps running averages of the gradient and of its square, corrects their bias towards zero (both
start at zero), and divides one by the square root of the other, so each weight moves by about `lr`
whatever the scale of its gradient:

    m     <- beta1 * m + (1 - beta1) * g
    v     <- beta2 * v + (1 - beta2) * g^2
    m_hat =  m / (1 - beta1^t),     v_hat = v / (1 - beta2^t)          (t counts steps from 1)
    w     <- w - lr * m_hat / (sqrt(v_hat) + eps)

AMSGrad divides by the largest v seen so far instead (v_max <- max(v_max, v)), so the step never grows
back. Weight decay: Adam adds it to the gradient (g <- g + weight_decay * w, an L2 penalty, which the
adaptive scaling then distorts); AdamW *decouples* it and shrinks the weights directly before the update,
w <- w * (1 - lr * weight_decay). The arithmetic follows torch.optim.Adam / AdamW step by step.
"""

from __future__ import annotations

import math

import numpy as np

from leakygrad.optim.optimizer import Optimizer, check_hyperparameter, params_with_grads


class Adam(Optimizer):
    """Adam; `amsgrad=True` for AMSGrad; `weight_decay` is an L2 penalty added to the gradient."""

    decoupled_weight_decay = False
    per_parameter_state = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        maximize: bool = False,
    ):
        name = type(self).__name__
        check_hyperparameter(name, "lr", lr)
        check_hyperparameter(name, "eps", eps)
        given = betas
        try:
            betas = tuple(betas)  # (a list or a NumPy array will do, as in PyTorch)
        except TypeError:
            betas = ()
        if len(betas) != 2:
            raise ValueError(f"{name}: betas must be a pair (beta1, beta2), got {given!r}")
        check_hyperparameter(name, "betas[0]", betas[0], 0.0, 1.0)
        check_hyperparameter(name, "betas[1]", betas[1], 0.0, 1.0)
        check_hyperparameter(name, "weight_decay", weight_decay)
        defaults = dict(
            lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize
        )
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, (beta1, beta2), eps, weight_decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            for p, grad in params_with_grads(group):
                g = -grad if group["maximize"] else grad
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = np.zeros_like(p.data)
                    state["exp_avg_sq"] = np.zeros_like(p.data)
                    if group["amsgrad"]:
                        state["max_exp_avg_sq"] = np.zeros_like(p.data)
                state["step"] += 1
                t = state["step"]

                if weight_decay != 0:
                    if self.decoupled_weight_decay:
                        p.data *= 1 - lr * weight_decay  # AdamW: shrink the weights themselves
                    else:
                        g = g + weight_decay * p.data  # Adam: L2 penalty in the gradient

                m, v = state["exp_avg"], state["exp_avg_sq"]
                m += (1 - beta1) * (g - m)  # = beta1 * m + (1 - beta1) * g
                v *= beta2
                v += (1 - beta2) * g * g

                if group["amsgrad"]:
                    if "max_exp_avg_sq" not in state:  # amsgrad switched on mid-run: v_max starts now, from 0
                        state["max_exp_avg_sq"] = np.zeros_like(p.data)  # (PyTorch raises a KeyError)
                    np.maximum(state["max_exp_avg_sq"], v, out=state["max_exp_avg_sq"])
                    v = state["max_exp_avg_sq"]
                # lr * m_hat / (sqrt(v_hat) + eps), with the bias corrections folded in as torch does:
                denominator = np.sqrt(v) / math.sqrt(1 - beta2**t) + eps
                p.data -= (lr / (1 - beta1**t)) * (m / denominator)
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay: `w <- w * (1 - lr * weight_decay)` before each Adam step."""

    decoupled_weight_decay = True

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        maximize: bool = False,
    ):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize)
