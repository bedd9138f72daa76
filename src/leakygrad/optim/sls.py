"""SGD with a stochastic Armijo line search (Vaswani, Mishkin, Laradji, Schmidt, Gidel & Lacoste-Julien 2019,
"Painless Stochastic Gradient: Interpolation, Line-Search, and Convergence Rates").

Instead of a hand-tuned learning rate, each step searches for one on the *same minibatch* it computed the
gradient on. With f the minibatch loss, g = grad f(w) and eta the trial step size, a step is accepted
when the Armijo (sufficient decrease) condition holds:

    f(w - eta * g)  <=  f(w) - c * eta * ||g||^2

otherwise eta <- beta * eta and the loss is evaluated again (backtracking; no extra gradients needed).
Each new step starts from the last accepted eta, first grown a little so that it can recover from
earlier cuts (the paper's "reset", option 1):

    eta <- min(eta * gamma ** (1 / n_batches_per_epoch), eta_max)

(so over one epoch it may at most double, with gamma = 2). The defaults are the paper's: c = 0.1,
beta = 0.9, gamma = 2, eta_max = 10, initial step size 1. If 100 cuts find no acceptable step, a tiny
step of 1e-6 is taken, as in the authors' implementation; with a gradient of norm below 1e-8 nothing moves.
A loss or gradient that is inf or nan at the current weights raises FloatingPointError and leaves the
weights and the state as they were (there is no decrease to measure from it); an inf or nan at a trial
point only cuts the step. If the closure raises at a trial point, the weights are put back first.

The closure recomputes the loss on the current minibatch and returns it, *without* calling backward
(the optimiser calls backward itself, once per step, and evaluates the trial points without a graph):

    def closure():
        return loss_fn(model(xb), yb)
    optimizer.step(closure)

Randomness the closure draws from leakygrad's generator (dropout masks, say) is replayed identically at
every trial, so each evaluation sees the same function, as the Armijo condition requires.
"""

from __future__ import annotations

import math

import numpy as np

from leakygrad.engine.creation import generator
from leakygrad.engine.grad_mode import enable_grad, no_grad
from leakygrad.optim.optimizer import Optimizer, check_count, check_hyperparameter, loss_value


class SLS(Optimizer):
    """Stochastic line search: SGD whose step size is chosen by Armijo backtracking on each minibatch."""

    def __init__(
        self,
        params,
        n_batches_per_epoch: int = 500,
        init_step_size: float = 1.0,
        c: float = 0.1,
        beta: float = 0.9,
        gamma: float = 2.0,
        eta_max: float = 10.0,
        reset_option: int = 1,
        max_backtracks: int = 100,
    ):
        check_hyperparameter("SLS", "init_step_size", init_step_size)
        check_hyperparameter("SLS", "c", c, 0.0, 1.0)
        check_hyperparameter("SLS", "beta", beta, 0.0, 1.0)
        check_hyperparameter("SLS", "gamma", gamma, 1.0)
        check_hyperparameter("SLS", "eta_max", eta_max)
        if beta == 0 or eta_max == 0 or init_step_size == 0:  # each would make every step zero
            zero = "beta" if beta == 0 else "eta_max" if eta_max == 0 else "init_step_size"
            raise ValueError(f"SLS: {zero} must be > 0 (with 0 every step after backtracking is 0)")
        check_count("SLS", "max_backtracks", max_backtracks)
        if reset_option not in (0, 1, 2):
            raise ValueError(
                "SLS: reset_option must be 0 (keep the last step size), 1 (grow it by "
                f"gamma^(1/n_batches_per_epoch)) or 2 (restart from init_step_size), got {reset_option}"
            )
        if n_batches_per_epoch < 1:
            raise ValueError(f"SLS: n_batches_per_epoch must be >= 1, got {n_batches_per_epoch}")
        defaults = dict(
            n_batches_per_epoch=n_batches_per_epoch,
            init_step_size=init_step_size,
            c=c,
            beta=beta,
            gamma=gamma,
            eta_max=eta_max,
            reset_option=reset_option,
            max_backtracks=max_backtracks,
        )
        super().__init__(params, defaults)
        self._params = self.param_groups[0]["params"]

    def add_param_group(self, param_group: dict) -> None:
        if self.param_groups:  # (the constructor adds the first; a second would never be stepped)
            raise ValueError("SLS: one step size is searched for all parameters, so give a single parameter group")
        super().add_param_group(param_group)

    def _reset(self, step_size: float, group: dict) -> float:
        """The first trial step size of a new step, from the last accepted one."""
        if group["reset_option"] == 0:
            return step_size
        if group["reset_option"] == 1:
            return min(step_size * group["gamma"] ** (1.0 / group["n_batches_per_epoch"]), group["eta_max"])
        return group["init_step_size"]

    def step(self, closure=None):
        if closure is None:
            raise ValueError(
                "SLS.step needs a closure that recomputes the minibatch loss (without calling backward): "
                "optimizer.step(lambda: loss_fn(model(xb), yb))"
            )
        group = self.param_groups[0]
        rng_state = generator().bit_generator.state

        def same_minibatch_loss(with_graph: bool):
            generator().bit_generator.state = rng_state  # replay the closure's random draws
            with enable_grad() if with_graph else no_grad():
                return closure()

        for p in self._params:
            p.grad = None
        loss = same_minibatch_loss(with_graph=True)
        loss.backward()
        rng_after_first_call = generator().bit_generator.state

        start = [p.data.copy() for p in self._params]
        grads = [np.zeros_like(p.data) if p.grad is None else p.grad.data.astype(p.dtype) for p in self._params]
        grad_norm = math.sqrt(sum(float(np.sum(g.astype(np.float64) ** 2)) for g in grads))
        f0 = loss_value(loss)
        if not (math.isfinite(f0) and math.isfinite(grad_norm)):
            # f(w) - c * eta * |g|^2 is then inf or nan: every trial would fail the Armijo test (or an inf
            # gradient would send the weights to inf), so there is no step to search for. Stop before changing
            # anything: the weights, the step size and the counters stay as they were.
            what = f"the loss is {f0}" if not math.isfinite(f0) else f"the gradient's norm is {grad_norm}"
            raise FloatingPointError(
                f"SLS.step: at the current weights {what}, so the Armijo line search cannot compare against it; "
                "the weights and the optimiser's state were left as they were. Look for what produced the inf "
                "or nan in the closure (a log of 0, an overflow, bad data in this minibatch), or skip this minibatch."
            )

        # All the line search's memory lives in the first parameter's state, so state_dict() saves it.
        state = self.state[self._params[0]]
        state.setdefault("step", 0)
        state.setdefault("step_size", group["init_step_size"])
        state.setdefault("n_forwards", 0)
        state.setdefault("n_backwards", 0)
        state["n_forwards"] += 1
        state["n_backwards"] += 1
        step_size = self._reset(state["step_size"], group)

        if grad_norm >= 1e-8:
            found = False
            try:
                for _ in range(group["max_backtracks"]):
                    self._move_to(start, grads, step_size)  # w = w0 - eta * g
                    # (a trial loss that is inf or nan fails the test below, so the step is cut: as it should be)
                    trial = loss_value(same_minibatch_loss(with_graph=False))
                    state["n_forwards"] += 1
                    if trial <= f0 - group["c"] * step_size * grad_norm**2:  # Armijo: enough decrease
                        found = True
                        break
                    step_size *= group["beta"]
            except BaseException:
                for p, w0 in zip(self._params, start):  # the closure failed at a trial point: put the weights back
                    p.data[...] = w0
                raise
            if not found:
                self._move_to(start, grads, 1e-6)

        generator().bit_generator.state = rng_after_first_call
        state["step_size"] = step_size
        state["step"] += 1
        return loss

    def _move_to(self, start: list[np.ndarray], grads: list[np.ndarray], step_size: float) -> None:
        for p, w0, g in zip(self._params, start, grads):
            p.data[...] = w0 - step_size * g
