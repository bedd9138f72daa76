"""L-BFGS (Nocedal 1980; Liu & Nocedal 1989) with an optional strong-Wolfe line search.

A quasi-Newton method: it builds a picture of the loss's curvature from the last `history_size` steps
s_k = w_{k+1} - w_k and gradient changes y_k = g_{k+1} - g_k, and steps along d = -H g, where H
approximates the inverse Hessian. H is never formed: the "two-loop recursion" applies it to g in
O(history * n) (Nocedal & Wright, Numerical Optimization, Algorithm 7.4):

    q <- -g
    for i = newest .. oldest:   a_i = rho_i * s_i.q,   q <- q - a_i * y_i           (rho_i = 1 / y_i.s_i)
    r <- H0 * q                                   with H0 = s.y / y.y of the newest pair
    for i = oldest .. newest:   b_i = rho_i * y_i.r,   r <- r + (a_i - b_i) * s_i
    d = r

A pair is remembered only when y.s > 1e-10 (curvature positive), which keeps H positive definite.

The step length t along d is 1 (times lr; on the first iteration min(1, 1/||g||_1) times lr), or, with
`line_search_fn="strong_wolfe"`, one satisfying the strong Wolfe conditions (Nocedal & Wright, Algorithm 3.5 and
3.6, with cubic interpolation):

    f(w + t d) <= f(w) + c1 t g.d          (sufficient decrease)
    |g(w + t d).d| <= c2 |g.d|             (the slope has flattened enough)

This is the same algorithm as torch.optim.LBFGS (itself after minFunc), step for step, so the two
follow the same trajectory. One `step(closure)` runs up to `max_iter` iterations; the closure clears
the gradients, computes the loss, calls backward and returns the loss:

    def closure():
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        return loss
    optimizer.step(closure)
"""

from __future__ import annotations

import functools
import math

import numpy as np

from leakygrad.engine.grad_mode import enable_grad
from leakygrad.optim.optimizer import Optimizer, check_count, check_hyperparameter, loss_value


def cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None) -> float:
    """The minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2, clamped to `bounds`
    (default: between x1 and x2). When the cubic has no minimum, the middle of the bounds.

    Along a line (g1 = g2 = the slope between the points: a hinge or an absolute error away from its kink) the
    formula divides by zero: the minimum is infinitely far downhill, so the step goes to the bound on that side,
    as in PyTorch (whose tensors divide to +-inf)."""
    low, high = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 * d1 - g1 * g2
    if d2_square < 0:
        return (low + high) / 2.0
    d2 = math.sqrt(d2_square)
    if x1 <= x2:
        minimum = x2 - (x2 - x1) * _divide(g2 + d2 - d1, g2 - g1 + 2 * d2)
    else:
        minimum = x1 - (x1 - x2) * _divide(g1 + d2 - d1, g1 - g2 + 2 * d2)
    if math.isnan(minimum):  # 0 / 0: no direction to prefer
        return (low + high) / 2.0
    return min(max(minimum, low), high)


def _divide(numerator: float, denominator: float) -> float:
    """numerator / denominator as floating point has it: x / 0 is +-inf (by the signs of both), 0 / 0 is nan."""
    if denominator != 0:
        return numerator / denominator
    if numerator == 0 or math.isnan(numerator):
        return math.nan
    return math.copysign(math.inf, numerator) * math.copysign(1.0, denominator)


def strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Find a step t along d satisfying the strong Wolfe conditions.

    `evaluate(t)` returns (loss, flat gradient) at w + t * d; f, g, gtd are the loss, gradient and slope
    g.d at t = 0. Returns (f_new, g_new, t, number of evaluations).
    """
    d_norm = np.abs(d).max()
    f_new, g_new = evaluate(t)
    evaluations = 1
    gtd_new = float(g_new @ d)

    # 1. Bracketing: grow t until an interval [t_prev, t] must contain an acceptable step.
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    iteration = 0
    while iteration < max_ls:
        if f_new > f + c1 * t * gtd or (iteration > 1 and f_new >= f_prev):
            bracket = [t_prev, t]  # sufficient decrease fails (or the loss rose): the answer lies between
            bracket_f, bracket_g, bracket_gtd = [f_prev, f_new], [g_prev, g_new], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:  # both conditions hold: done
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:  # the slope turned positive: we stepped over a minimum
            bracket = [t_prev, t]
            bracket_f, bracket_g, bracket_gtd = [f_prev, f_new], [g_prev, g_new], [gtd_prev, gtd_new]
            break
        # still going down steeply: extrapolate to a longer step, between t + 0.01 (t - t_prev) and 10 t
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        t_prev, t = t, cubic_minimum(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        f_prev, g_prev, gtd_prev = f_new, g_new, gtd_new
        f_new, g_new = evaluate(t)
        evaluations += 1
        gtd_new = float(g_new @ d)
        iteration += 1
    if iteration == max_ls:  # out of evaluations while still extrapolating
        bracket, bracket_f, bracket_g = [0.0, t], [f, f_new], [g, g_new]

    # 2. Zoom: shrink the bracket by cubic interpolation until a point satisfies both conditions.
    insufficient_progress = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)  # low: the end with the lower loss
    while not done and iteration < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = cubic_minimum(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])

        # If t lands too close to an end of the bracket twice in a row (or on it), move it 10% inside.
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insufficient_progress or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) else min(bracket) + eps
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False

        f_new, g_new = evaluate(t)
        evaluations += 1
        gtd_new = float(g_new @ d)
        iteration += 1

        if f_new > f + c1 * t * gtd or f_new >= bracket_f[low]:
            # not enough decrease: t becomes the new high end
            bracket[high], bracket_f[high], bracket_g[high], bracket_gtd[high] = t, f_new, g_new, gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True  # strong Wolfe conditions hold
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                # the minimum lies on the other side of t: the old low end becomes the high end
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low], bracket_g[low], bracket_gtd[low] = t, f_new, g_new, gtd_new

    return bracket_f[low], bracket_g[low], bracket[low], evaluations


class LBFGS(Optimizer):
    """L-BFGS over all parameters as one flat vector (a single parameter group). See the module docstring."""

    def __init__(
        self,
        params,
        lr: float = 1.0,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ):
        check_hyperparameter("LBFGS", "lr", lr)
        check_count("LBFGS", "max_iter", max_iter)
        check_count("LBFGS", "history_size", history_size)
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got {line_search_fn!r}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        check_count("LBFGS", "max_eval", max_eval)
        defaults = dict(
            lr=lr,
            max_iter=max_iter,
            max_eval=max_eval,
            tolerance_grad=tolerance_grad,
            tolerance_change=tolerance_change,
            history_size=history_size,
            line_search_fn=line_search_fn,
        )
        super().__init__(params, defaults)
        self._params = self.param_groups[0]["params"]

    def add_param_group(self, param_group: dict) -> None:
        if self.param_groups:  # (the constructor adds the first; a second would never be stepped)
            raise ValueError("LBFGS: all parameters form one vector, so give a single parameter group")
        super().add_param_group(param_group)

    # ---- the parameters and their gradients as one flat vector

    def _flat_grad(self) -> np.ndarray:
        return np.concatenate(
            [np.zeros(p.size, p.dtype) if p.grad is None else p.grad.data.astype(p.dtype).ravel() for p in self._params]
        )

    def _add_to_params(self, step: float, direction: np.ndarray) -> None:
        offset = 0
        for p in self._params:
            p.data += step * direction[offset : offset + p.size].reshape(p.shape)
            offset += p.size

    def _set_params(self, values: list[np.ndarray]) -> None:
        for p, value in zip(self._params, values):
            p.data[...] = value

    def _evaluate_along(self, closure, start: list[np.ndarray], d: np.ndarray, t: float):
        """Loss and flat gradient at start + t * d; the parameters are put back afterwards (also when the
        closure raises, so that an interrupted line search does not leave them at a trial point)."""
        self._add_to_params(t, d)
        try:
            loss = loss_value(closure())
            flat_grad = self._flat_grad()
        finally:
            self._set_params(start)
        return loss, flat_grad

    def load_state_dict(self, state_dict: dict) -> None:
        """As `Optimizer.load_state_dict`, and the saved memory must be for as many numbers as these parameters
        have: L-BFGS keeps it as flat vectors over all of them (the direction, the last gradient, past steps)."""
        size = sum(p.size for p in self._params)
        for entry in state_dict.get("state", {}).values() if isinstance(state_dict, dict) else ():
            for key, value in entry.items():
                for vector in value if isinstance(value, list) else [value]:
                    if isinstance(vector, np.ndarray) and vector.ndim == 1 and vector.size != size:
                        raise ValueError(
                            f"LBFGS.load_state_dict: the saved '{key}' holds {vector.size} numbers, but these "
                            f"parameters have {size}: was the state saved for another model?"
                        )
        super().load_state_dict(state_dict)

    def step(self, closure=None):
        if closure is None:
            raise ValueError(
                "LBFGS.step needs a closure that clears the gradients, computes the loss, calls backward and "
                "returns the loss (it is called several times per step)"
            )

        def evaluate():
            with enable_grad():
                return closure()

        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size = group["history_size"]

        # All of L-BFGS's memory lives in the first parameter's state, so state_dict() saves it.
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        original_loss = evaluate()
        loss = loss_value(original_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if np.abs(flat_grad).max() <= tolerance_grad:
            return original_loss  # already at a stationary point

        d, t = state.get("d"), state.get("t")
        old_dirs, old_steps, rho = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag = state.get("H_diag")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1

            # ---- the search direction d = -H g
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_steps, rho = [], [], []
                H_diag = 1.0
            else:
                y = flat_grad - prev_flat_grad  # change of gradient
                s = d * t  # the step taken
                ys = float(y @ s)
                if ys > 1e-10:  # positive curvature along s: remember the pair
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_steps.pop(0)
                        rho.pop(0)
                    old_dirs.append(y)
                    old_steps.append(s)
                    rho.append(1.0 / ys)
                    H_diag = ys / float(y @ y)  # scale of the initial inverse Hessian H0
                d = self._two_loop(flat_grad, old_dirs, old_steps, rho, H_diag)

            prev_flat_grad = flat_grad.copy()
            prev_loss = loss

            # ---- the step length
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / float(np.abs(flat_grad).sum())) * lr  # a cautious first step
            else:
                t = lr
            gtd = float(flat_grad @ d)  # slope along d
            if gtd > -tolerance_change:
                break  # d is not a descent direction (any more)

            ls_func_evals = 0
            if group["line_search_fn"] == "strong_wolfe":
                start = [p.data.copy() for p in self._params]
                loss, flat_grad, t, ls_func_evals = strong_wolfe(
                    functools.partial(self._evaluate_along, evaluate, start, d),  # t -> (loss, grad) at start + t d
                    t,
                    d,
                    loss,
                    flat_grad,
                    gtd,
                    max_ls=max_eval - current_evals,
                )
                self._add_to_params(t, d)
                converged = np.abs(flat_grad).max() <= tolerance_grad
            else:
                self._add_to_params(t, d)  # fixed step
                converged = False
                if n_iter != max_iter:  # re-evaluate, except after the last iteration
                    loss = loss_value(evaluate())
                    flat_grad = self._flat_grad()
                    converged = np.abs(flat_grad).max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            # ---- stopping tests
            if n_iter == max_iter or current_evals >= max_eval or converged:
                break
            if np.abs(d * t).max() <= tolerance_change:
                break  # the step has become negligible
            if abs(loss - prev_loss) < tolerance_change:
                break  # the loss no longer changes

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_steps, ro=rho, H_diag=H_diag)
        state.update(prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return original_loss

    @staticmethod
    def _two_loop(flat_grad, old_dirs, old_steps, rho, H_diag) -> np.ndarray:
        """-H g by the two-loop recursion (old_dirs are the y's, old_steps the s's)."""
        q = -flat_grad
        alphas = [0.0] * len(old_dirs)
        for i in reversed(range(len(old_dirs))):
            alphas[i] = float(old_steps[i] @ q) * rho[i]
            q = q - alphas[i] * old_dirs[i]
        r = q * H_diag
        for i in range(len(old_dirs)):
            beta_i = float(old_dirs[i] @ r) * rho[i]
            r = r + (alphas[i] - beta_i) * old_steps[i]
        return r
