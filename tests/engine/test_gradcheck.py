"""`leakygrad.gradcheck` and `gradgradcheck` themselves: they pass a correct op, and catch a wrong one with a
message that says which input, which element, both values, the relative error and CS231n's verdict."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import leakygrad as lg
from leakygrad.engine.op import Op
from leakygrad.gradcheck import GradcheckError, GradcheckReport, judge


class TripleWithOneWrongElement(Op):
    """3 x, whose backward is right everywhere except at one element, where it says 3.3 instead of 3."""

    name = "buggy_triple"

    def __init__(self, wrong_at: tuple[int, ...], wrong_slope: float = 3.3):
        self.wrong_at, self.wrong_slope = wrong_at, wrong_slope

    def forward(self, x):
        return 3 * x

    def backward(self, grad):
        slopes = np.full(grad.shape, 3.0)
        slopes[self.wrong_at] = self.wrong_slope
        return grad * lg.Tensor(slopes, dtype=grad.dtype)


class ProductWithWrongSecondGradient(Op):
    """a * b, with the gradient of b off by 1%."""

    name = "buggy_mul"

    def forward(self, a, b):
        return a * b

    def backward(self, grad):
        a, b = self.inputs
        return grad * b, grad * a * 1.01


class SquareWithNumPyBackward(Op):
    """x ** 2 with a backward that computes 2 x in NumPy: right values, but cut from the graph, so the second
    derivative (through create_graph) comes out zero. The classic way to break double backward."""

    name = "numpy_square"

    def forward(self, x):
        return x * x

    def backward(self, grad):
        (x,) = self.inputs
        return grad * lg.Tensor(2 * x.data, dtype=x.dtype)


def x64(*shape, requires_grad=True, seed=0):
    return lg.Tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=requires_grad, dtype="float64")


def test_a_correct_function_passes_and_the_report_says_so():
    x, w = x64(4, 3), x64(3, 2, seed=1)
    report = lg.gradcheck(lambda x, w: (x @ w).tanh().sum(axis=0), x, w)
    assert isinstance(report, GradcheckReport) and report.passed
    assert [c.position for c in report.inputs] == [0, 1]
    assert report.max_relative_error < 1e-7
    text = str(report)
    assert text.startswith("gradcheck passed (central differences, eps=1e-06, float64)")
    assert "input 0 (4, 3): worst element" in text and "input 1 (3, 2): worst element" in text
    assert text.count("(good)") == 2


def test_a_wrong_backward_is_caught_at_the_right_element_with_both_values():
    x = x64(2, 3)
    with pytest.raises(GradcheckError) as caught:
        lg.gradcheck(lambda x: TripleWithOneWrongElement.apply(x, wrong_at=(1, 2)), x)
    message = str(caught.value)
    check = caught.value.report.inputs[0]
    assert check.worst_index == (1, 2) and not check.passed
    assert check.analytic == pytest.approx(3.3 / 3 * check.numerical, rel=1e-6)
    assert check.relative_error == pytest.approx(0.3 / 3.3, rel=1e-5)
    assert message.startswith("gradcheck failed: the analytic gradient (backward) disagrees with the numerical one")
    assert "input 0 (2, 3): worst element (1, 2)" in message
    assert f"analytic {check.analytic:.10g}, numerical {check.numerical:.10g}" in message
    assert re.search(r"relative error 9\.09e-02 \(wrong\)", message)


def test_the_message_names_only_the_input_whose_gradient_is_wrong():
    a, b = x64(3), x64(3, seed=1)
    with pytest.raises(GradcheckError) as caught:
        lg.gradcheck(lambda a, b: ProductWithWrongSecondGradient.apply(a, b), a, b)
    message = str(caught.value)
    assert "input 1 (3,)" in message and "input 0" not in message
    assert "(probably wrong)" in message  # 1% off: between 1e-4 and 1e-2
    assert [c.passed for c in caught.value.report.inputs] == [True, False]


@pytest.mark.parametrize(
    ("relative_error", "verdict"),
    [(1e-9, "good"), (1e-5, "suspicious unless there are kinks"), (1e-3, "probably wrong"), (0.5, "wrong")],
)
def test_cs231n_bands(relative_error, verdict):
    assert judge(relative_error) == verdict


def test_raise_exception_false_returns_the_failing_report():
    x = x64(3)
    report = lg.gradcheck(lambda x: TripleWithOneWrongElement.apply(x, wrong_at=(0,)), x, raise_exception=False)
    assert not report.passed and str(report).startswith("gradcheck FAILED")


def test_a_kink_under_the_finite_difference_is_flagged():
    """At relu's kink the central difference measures the average slope (0.5), not the convention (0)."""
    x = lg.tensor([0.0, 1.0], requires_grad=True, dtype="float64")
    with pytest.raises(GradcheckError, match=r"worst element \(0,\): analytic 0, numerical .*\(wrong\)"):
        lg.gradcheck(lambda x: x.relu().sum(), x)


def test_float32_inputs_are_checked_in_float64():
    x = lg.randn(3, 2, requires_grad=True)
    assert x.dtype == np.float32
    report = lg.gradcheck(lambda x: (x * x).sum(), x)
    assert report.max_relative_error < 1e-7  # impossible with float32 central differences


def test_arguments_that_are_not_tensors_are_passed_through():
    x = x64(3)
    assert lg.gradcheck(lambda x, k, axis: (x**k).sum(axis=axis), x, 3, 0).passed


def test_only_inputs_that_require_grad_are_checked():
    x, c = x64(3), x64(3, requires_grad=False)
    report = lg.gradcheck(lambda x, c: x * c, x, c)
    assert [check.position for check in report.inputs] == [0]


def test_nothing_to_check_is_an_error():
    with pytest.raises(lg.LeakygradError, match="no input requires grad"):
        lg.gradcheck(lambda x: x * 2, x64(3, requires_grad=False))


def test_a_function_that_returns_no_tensor_is_an_error():
    with pytest.raises(lg.LeakygradError, match="must return a Tensor or a tuple of Tensors, got float"):
        lg.gradcheck(lambda x: 1.0, x64(3))


def test_functions_with_several_outputs_are_checked_together():
    x = x64(2, 3)
    assert lg.gradcheck(lambda x: (x.sum(axis=0), x.exp(), x.max()), x).passed


def test_gradgradcheck_passes_correct_second_derivatives():
    x, w = x64(2, 3), x64(3, seed=1)
    report = lg.gradgradcheck(lambda x, w: (x @ w).sigmoid(), x, w)
    assert report.passed
    # The first derivatives are checked as functions of the inputs and of the upstream gradient v.
    assert [c.position for c in report.inputs] == [0, 1, 2]


def test_gradgradcheck_catches_a_backward_written_in_numpy():
    x = x64(3)
    assert lg.gradcheck(lambda x: SquareWithNumPyBackward.apply(x), x).passed  # first order is right
    with pytest.raises(GradcheckError, match="input 0 \\(3,\\)"):
        lg.gradgradcheck(lambda x: SquareWithNumPyBackward.apply(x), x)


class CubeWithTwoBackwards(Op):
    """x^3, with the derivative written twice, as the fused ops have it: on arrays and with Tensor operations."""

    name = "cube"

    def __init__(self, recorded_slope: float = 3.0):
        self.recorded_slope = recorded_slope

    def forward(self, x):
        return x**3

    def backward(self, grad):  # what create_graph=True, jvp and second derivatives run
        (x,) = self.inputs
        return grad * self.recorded_slope * x * x

    def backward_arrays(self, grad):  # what a training step runs
        return grad * 3 * self.inputs[0].data ** 2


def test_gradcheck_checks_both_backwards_of_an_op_that_has_two():
    x = lg.Tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True, dtype="float64")
    assert lg.gradcheck(lambda a: CubeWithTwoBackwards.apply(a), x).passed
    with pytest.raises(GradcheckError, match=r"analytic \(from the recorded backward, as create_graph=True runs it\)"):
        lg.gradcheck(lambda a: CubeWithTwoBackwards.apply(a, recorded_slope=4.0), x)  # (it passed: never ran it)


def test_gradgradcheck_with_nothing_to_check_is_an_error_too():
    with pytest.raises(lg.LeakygradError, match="gradgradcheck: no input requires grad"):
        lg.gradgradcheck(lambda x: (x * x).sum(), lg.Tensor([1.0, 2.0]))


def test_inputs_may_come_as_one_tuple_as_in_pytorch():
    x, y = lg.Tensor([1.0, 2.0], requires_grad=True), lg.Tensor([0.5, -1.0], requires_grad=True)
    assert len(lg.gradcheck(lambda a, b: (a * b).sum(), (x, y)).inputs) == 2
    assert lg.gradgradcheck(lambda a, b: (a * a * b).sum(), (x, y)).passed


def test_eps_must_be_positive():
    with pytest.raises(lg.LeakygradError, match="gradcheck: eps must be > 0, got 0"):
        lg.gradcheck(lambda x: x.sum(), lg.Tensor([1.0], requires_grad=True), eps=0)


def test_an_infinite_analytic_gradient_is_the_worst_error():
    class InfiniteAtFirst(Op):
        """2a, with a backward that is wrongly infinite at element 0."""

        name = "infinite_at_first"

        def forward(self, a):
            return a * 2

        def backward(self, grad):
            return grad * lg.Tensor(np.array([np.inf, 2.0, 2.0]))

    x, y = (lg.Tensor(np.random.default_rng(k).standard_normal(3), requires_grad=True) for k in (0, 1))
    report = lg.gradcheck(
        lambda a, b: a.tanh().sum() + InfiniteAtFirst.apply(b).sum(), x, y, raise_exception=False
    )  # fmt: skip
    assert [c.passed for c in report.inputs] == [True, False]
    assert report.inputs[1].relative_error == math.inf and report.max_relative_error == math.inf


def test_a_zero_gradient_passes_on_the_absolute_tolerance():
    report = lg.gradcheck(lambda x: (x**3 - 3 * x).sum(), lg.Tensor([1.0], requires_grad=True))  # f'(1) = 0
    check = report.inputs[0]  # analytic 0 against a numerical ~1e-11: "100% off", which means nothing here
    assert report.passed and check.verdict.startswith("passed on atol=1e-05") and check.max_abs_error < 1e-9


class ScaledWithWrongSlope(Op):
    """scale * x, whose backward says 1.5 * scale: wrong by half, at any scale."""

    name = "wrongly_scaled"

    def __init__(self, scale: float):
        self.scale = scale

    def forward(self, x):
        return x * self.scale

    def backward(self, grad):
        return grad * (1.5 * self.scale)


@pytest.mark.parametrize("scale", [3e-6, 1e-6])
def test_a_wrong_gradient_too_small_for_atol_passes_as_in_pytorch_but_the_report_shows_how_far_off(scale):
    """Values below atol pass on the absolute tolerance (PyTorch's rule too), and the report says so: it used to
    print a relative error of 0.00e+00 "(good)", or 3.33e-01 "(wrong)" under "passed"."""
    x = x64(4)
    report = lg.gradcheck(lambda a: ScaledWithWrongSlope.apply(a, scale=scale), x)
    check = report.inputs[0]
    assert report.passed
    assert check.relative_error == pytest.approx(1 / 3, rel=1e-4)  # |1.5s - s| / 1.5s
    assert check.verdict == "passed on atol=1e-05: values this small are compared absolutely"
    assert "passed on atol" in str(report)
    with pytest.raises(GradcheckError):  # with a tighter atol the same gradient fails
        lg.gradcheck(lambda a: ScaledWithWrongSlope.apply(a, scale=scale), x, atol=1e-8)


class SquareWithWrongFirstDerivative(Op):
    """x^2, whose backward says 5x."""

    name = "wrong_square"

    def forward(self, x):
        return x * x

    def backward(self, grad):
        (x,) = self.inputs
        return grad * x * 5


def test_checks_run_the_same_inside_no_grad():
    """Inside no_grad() nothing is recorded: gradgradcheck saw zero first derivatives, and a zero slope of them,
    and passed a backward cut from the graph; gradcheck failed a correct function. Both turn recording on."""
    x = x64(3)
    with lg.no_grad():
        assert lg.gradcheck(lambda a: a.tanh(), x).passed
        assert lg.gradgradcheck(lambda a: a.tanh(), x).passed
        with pytest.raises(GradcheckError):
            lg.gradcheck(lambda a: SquareWithWrongFirstDerivative.apply(a), x)
        with pytest.raises(GradcheckError):  # (a backward cut from the graph: its second derivative reads 0)
            lg.gradgradcheck(lambda a: SquareWithNumPyBackward.apply(a), x)


class CubeWhoseRecordedBackwardHasTheWrongShape(CubeWithTwoBackwards):
    name = "cube_with_a_broken_recorded_backward"

    def backward(self, grad):
        return (grad * 3 * self.inputs[0] * self.inputs[0]).sum()


def test_a_recorded_backward_that_breaks_is_an_error_not_a_pass():
    """Only an op that has no recorded backward at all (a fused op without a composed version) is checked on its
    NumPy backward alone; a recorded backward that fails is reported, not skipped."""
    x = x64(3)
    with pytest.raises(lg.BackwardError, match="returned a gradient of shape \\(\\) for input 0"):
        lg.gradcheck(lambda a: CubeWhoseRecordedBackwardHasTheWrongShape.apply(a), x)


def test_inputs_may_come_as_one_list_as_in_pytorch():
    x, y = x64(2), x64(2, seed=1)
    assert len(lg.gradcheck(lambda a, b: (a * b).sum(), [x, y]).inputs) == 2
    assert lg.gradgradcheck(lambda a, b: (a * a * b).sum(), [x, y]).passed


def test_gradgradcheck_names_itself_when_fn_returns_no_tensor():
    with pytest.raises(lg.LeakygradError, match="gradgradcheck: fn must return a Tensor"):
        lg.gradgradcheck(lambda a: 3.0, x64(2))


def test_gradgradcheck_names_the_upstream_gradient_it_checks():
    class DetachedBackward(Op):
        """Its backward is computed in NumPy: not differentiable with respect to the upstream gradient."""

        name = "detached_square"

        def forward(self, x):
            return x * x

        def backward(self, grad):
            (x,) = self.inputs
            return lg.Tensor(2 * x.data * grad.data)

    x = lg.Tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(GradcheckError, match=r"second derivative .*\n(.|\n)*the upstream gradient of output 0"):
        lg.gradgradcheck(lambda x: DetachedBackward.apply(x), x)
