"""Gradient checking: compare the gradients backprop computes with the slope measured by finite differences.

For each input element x_i, the central difference

    (f(x + eps e_i) - f(x - eps e_i)) / (2 eps)

approximates df/dx_i with an error of order eps^2. Computed in float64, it agrees with a correct analytic
gradient to about 1e-8 relative; a wrong backward is off by far more. For a function with many outputs, f is
reduced to the scalar sum(v * f(x)) with a fixed random v, which checks the vector-Jacobian product that
backward computes for exactly that upstream gradient.

Relative error, as in the CS231n notes: |analytic - numerical| / max(|analytic|, |numerical|).
Below 1e-7: good. 1e-7 to 1e-4: suspicious unless the function has kinks. 1e-4 to 1e-2: probably wrong.
Above 1e-2: wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from leakygrad.engine import LeakygradError, NotTwiceDifferentiable, Tensor, enable_grad, grad

BANDS = ((1e-7, "good"), (1e-4, "suspicious unless there are kinks"), (1e-2, "probably wrong"))


def judge(relative_error: float) -> str:
    """CS231n's verdict for a relative error."""
    for limit, verdict in BANDS:
        if relative_error < limit:
            return verdict
    return "wrong"


@dataclass
class InputCheck:
    """How one input's analytic gradient compared with the numerical one."""

    position: int  # which argument of fn
    shape: tuple[int, ...]
    worst_index: tuple[int, ...]
    analytic: float  # at the worst element
    numerical: float
    relative_error: float
    max_abs_error: float
    passed: bool
    path: str = ""  # which backward computed `analytic`, when the op has two (see `gradcheck`)
    label: str = ""  # what the input is, when not one the caller passed (gradgradcheck's upstream gradients)
    atol: float = 0.0  # the absolute tolerance the check allowed

    @property
    def verdict(self) -> str:
        if self.passed and judge(self.relative_error) != "good" and abs(self.analytic - self.numerical) <= self.atol:
            # values this small pass on the absolute tolerance, whatever their relative error says
            return f"passed on atol={self.atol:g}: values this small are compared absolutely"
        return judge(self.relative_error)

    def describe(self) -> str:
        via = f" (from {self.path})" if self.path else ""
        what = f" ({self.label})" if self.label else ""
        return (
            f"input {self.position}{what} {self.shape}: worst element {self.worst_index}: "
            f"analytic{via} {self.analytic:.10g}, numerical {self.numerical:.10g}, "
            f"relative error {self.relative_error:.2e} ({self.verdict})"
        )


@dataclass
class GradcheckReport:
    """What `gradcheck` found: one entry per input that requires grad."""

    inputs: list[InputCheck] = field(default_factory=list)
    eps: float = 1e-6

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.inputs)

    @property
    def max_relative_error(self) -> float:
        return max((c.relative_error for c in self.inputs), default=0.0)

    def __str__(self) -> str:
        status = "passed" if self.passed else "FAILED"
        lines = [f"gradcheck {status} (central differences, eps={self.eps:g}, float64)"]
        lines += ["  " + check.describe() for check in self.inputs]
        return "\n".join(lines)


class GradcheckError(LeakygradError, AssertionError):
    """The analytic gradient disagrees with the numerical one. `.report` has the details."""

    def __init__(self, message: str, report: GradcheckReport):
        super().__init__(message)
        self.report = report


def gradcheck(
    fn: Callable,
    *inputs,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    seed: int = 0,
    raise_exception: bool = True,
) -> GradcheckReport:
    """Check backprop's gradient of `fn(*inputs)` against central differences, for every input that requires
    grad. Tensors are copied to float64 first; other arguments are passed through unchanged.

    An element passes when |analytic - numerical| <= atol + rtol * |numerical|. On failure, raises
    GradcheckError naming the input, its worst element, both values and the relative error (or, with
    `raise_exception=False`, returns the failing report). On success returns the report. The inputs may also
    come as one tuple, as `torch.autograd.gradcheck(fn, (x, y))` takes them.
    """
    return _check("gradcheck", fn, _unpacked(inputs), eps, atol, rtol, seed, raise_exception, labels={})


def _check(name, fn, inputs, eps, atol, rtol, seed, raise_exception, labels) -> GradcheckReport:
    """gradcheck itself; `name` and `labels` (position -> what that input is) only word the report."""
    if not eps > 0:
        raise LeakygradError(f"{name}: eps must be > 0, got {eps}")
    with enable_grad():  # (inside no_grad() nothing would be recorded, and every gradient would read 0)
        return _check_recording(name, fn, inputs, eps, atol, rtol, seed, raise_exception, labels)


def _check_recording(name, fn, inputs, eps, atol, rtol, seed, raise_exception, labels) -> GradcheckReport:
    args = [_float64_copy(x) for x in inputs]
    checked = [i for i, x in enumerate(args) if isinstance(x, Tensor) and x.requires_grad]
    if not checked:
        raise LeakygradError(f"{name}: no input requires grad, so there is no gradient to check")

    outputs = _as_outputs(name, fn(*args))
    rng = np.random.default_rng(seed)
    weights = [rng.standard_normal(out.shape) for out in outputs]  # the upstream gradient v

    def scalar(*xs) -> float:
        """sum(v * f(x)). (fn may itself call backward, as in gradgradcheck: the graph stays on.)"""
        outs = _as_outputs(name, fn(*xs))
        return float(sum(np.sum(w * o.data) for w, o in zip(weights, outs)))

    # Both backward passes an op may have: `backward_arrays` (on NumPy arrays: what a training step runs) and
    # `backward` (Tensor operations: what create_graph=True, jvp and every second derivative run). Each must agree.
    xs = [args[i] for i in checked]
    on_arrays = _analytic(outputs, weights, xs)
    try:
        recorded = _analytic(outputs, weights, xs, create_graph=True)
    except NotTwiceDifferentiable:  # an op with no recorded backward (a fused layer without a composed version)
        recorded = on_arrays
    report = GradcheckReport(eps=eps)
    for i, a, r in zip(checked, on_arrays, recorded):
        numerical = _numerical(scalar, args, i, eps)
        check = _compare(i, a, numerical, atol, rtol)
        check.label = labels.get(i, "")
        if not np.array_equal(a, r):
            other = _compare(i, r, numerical, atol, rtol)
            other.label = check.label
            other.path = "the recorded backward, as create_graph=True runs it"
            check.path = "the backward a training step runs"
            if (other.passed, -other.relative_error) < (check.passed, -check.relative_error):
                check = other
        report.inputs.append(check)

    if not report.passed and raise_exception:
        failing = [c for c in report.inputs if not c.passed]
        what = "gradient (backward)" if name == "gradcheck" else "second derivative (the backward's own backward)"
        raise GradcheckError(
            f"{name} failed: the analytic {what} disagrees with the numerical one "
            f"(central differences, eps={eps:g})\n" + "\n".join("  " + c.describe() for c in failing),
            report,
        )
    return report


def gradgradcheck(
    fn: Callable,
    *inputs,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    seed: int = 0,
    raise_exception: bool = True,
) -> GradcheckReport:
    """Check second derivatives: gradcheck the backward pass itself.

    The function checked is (x, v) -> d/dx sum(v * fn(x)), built with `create_graph=True`, so its gradient
    involves the derivative of every op's backward, with respect to both the inputs and the upstream v.
    """
    with enable_grad():  # (inside no_grad() the first derivatives would all read 0, and so would their slopes)
        return _gradgradcheck(fn, inputs, eps, atol, rtol, seed, raise_exception)


def _gradgradcheck(fn, inputs, eps, atol, rtol, seed, raise_exception) -> GradcheckReport:
    args = [_float64_copy(x) for x in _unpacked(inputs)]
    checked = [i for i, x in enumerate(args) if isinstance(x, Tensor) and x.requires_grad]
    if not checked:
        raise LeakygradError("gradgradcheck: no input requires grad, so there is no gradient to check")
    rng = np.random.default_rng(seed + 1)
    upstream = [
        Tensor(rng.standard_normal(out.shape), requires_grad=True, dtype=np.float64)
        for out in _as_outputs("gradgradcheck", fn(*args))
    ]
    n_args = len(args)
    labels = {n_args + k: f"the upstream gradient of output {k}" for k in range(len(upstream))}

    def first_derivatives(*xs_and_vs):
        xs, vs = list(xs_and_vs[:n_args]), xs_and_vs[n_args:]
        outs = _as_outputs("gradgradcheck", fn(*xs))
        grads = grad(list(outs), [xs[i] for i in checked], grad_outputs=list(vs), create_graph=True, allow_unused=True)
        return tuple(
            g if g is not None else Tensor(np.zeros(xs[i].shape), dtype=np.float64) for g, i in zip(grads, checked)
        )

    return _check(
        "gradgradcheck", first_derivatives, [*args, *upstream], eps, atol, rtol, seed, raise_exception, labels
    )


def _unpacked(inputs: tuple) -> tuple:
    """The inputs, given one by one (`gradcheck(fn, x, y)`) or as one tuple or list, PyTorch's way
    (`gradcheck(fn, (x, y))`)."""
    if len(inputs) == 1 and isinstance(inputs[0], (tuple, list)) and any(isinstance(x, Tensor) for x in inputs[0]):
        return inputs[0]
    return inputs


def _float64_copy(x):
    if isinstance(x, Tensor) and x.dtype.kind == "f":
        return Tensor(np.array(x.data, dtype=np.float64), requires_grad=x.requires_grad, dtype=np.float64)
    return x


def _as_outputs(name: str, result) -> list[Tensor]:
    outputs = list(result) if isinstance(result, (tuple, list)) else [result]
    for out in outputs:
        if not isinstance(out, Tensor):
            raise LeakygradError(f"{name}: fn must return a Tensor or a tuple of Tensors, got {type(out).__name__}")
    return outputs


def _analytic(outputs: list[Tensor], weights, xs: list[Tensor], create_graph: bool = False) -> list[np.ndarray]:
    differentiable = [(o, w) for o, w in zip(outputs, weights) if o.requires_grad]
    if not differentiable:  # outputs do not depend on the inputs at all
        return [np.zeros(x.shape) for x in xs]
    grads = grad(
        [o for o, _ in differentiable],
        xs,
        grad_outputs=[Tensor(w, dtype=np.float64) for _, w in differentiable],
        create_graph=create_graph,
        allow_unused=True,
    )
    return [np.zeros(x.shape) if g is None else g.data for g, x in zip(grads, xs)]


def _numerical(scalar: Callable, args: list, position: int, eps: float) -> np.ndarray:
    x = args[position]
    original = x.data
    slopes = np.zeros(original.shape)
    for index in np.ndindex(original.shape):
        values = original.copy()
        values[index] += eps
        plus = scalar(*_replace(args, position, values))
        values[index] -= 2 * eps
        minus = scalar(*_replace(args, position, values))
        slopes[index] = (plus - minus) / (2 * eps)
    return slopes


def _replace(args: list, position: int, values: np.ndarray) -> list:
    replaced = list(args)
    replaced[position] = Tensor(values, requires_grad=True, dtype=np.float64)
    return replaced


def _compare(position: int, analytic: np.ndarray, numerical: np.ndarray, atol: float, rtol: float) -> InputCheck:
    diff = np.abs(analytic - numerical)
    scale = np.maximum(np.abs(analytic), np.abs(numerical))
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(scale > 0, diff / scale, 0.0)
    relative = np.where(np.isfinite(diff), relative, np.inf)  # (an inf or NaN on either side: as far off as can be)
    if analytic.size == 0:
        return InputCheck(position, analytic.shape, (), 0.0, 0.0, 0.0, 0.0, True, atol=atol)
    excess = np.where(np.isfinite(diff), diff - (atol + rtol * np.abs(numerical)), np.inf)
    passed = bool(np.all(excess <= 0))
    # The element reported: on failure, the one furthest beyond tolerance; on success, the largest relative error
    # among values above atol (near zero a relative error means nothing: 0 against 3e-11 is "100% off"), or among
    # all of them when every value is that small.
    above = scale > atol
    worst_of = (relative * above if above.any() else relative) if passed else excess
    worst = np.unravel_index(np.argmax(worst_of), analytic.shape)
    return InputCheck(
        position=position,
        shape=analytic.shape,
        worst_index=tuple(int(i) for i in worst),
        analytic=float(analytic[worst]),
        numerical=float(numerical[worst]),
        relative_error=float(worst_of[worst]) if passed else float(relative[worst]),
        max_abs_error=float(np.nanmax(diff)) if not np.isnan(diff).all() else float("nan"),
        passed=passed,
        atol=atol,
    )
