"""Bad input gets a clear error naming the operation and the shapes or values at fault, never a bare NumPy
traceback from deep inside the engine."""

from __future__ import annotations

import numpy as np
import pytest

import leakygrad as lg
from leakygrad import functional as F
from leakygrad.engine.op import Op


def test_matmul_shape_mismatch_message():
    with pytest.raises(lg.OpError) as caught:
        lg.randn(32, 784) @ lg.randn(512, 10)
    assert str(caught.value) == "matmul: (32, 784) @ (512, 10): inner dimensions 784 and 512 differ"


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        ((3,), (4,), "matmul: (3,) @ (4,): inner dimensions 3 and 4 differ"),
        ((2, 3), (4,), "matmul: (2, 3) @ (4,): inner dimensions 3 and 4 differ"),
        (
            (2, 3, 4),
            (5, 4, 2),
            "matmul: (2, 3, 4) @ (5, 4, 2): batch dimensions (2,) and (5,) cannot be broadcast together",
        ),
        ((), (3,), "matmul: () @ (3,): both operands need at least one dimension; use * to scale"),
    ],
)
def test_matmul_other_mismatches(a, b, message):
    with pytest.raises(lg.OpError) as caught:
        lg.randn(*a) @ lg.randn(*b)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("add", lambda a, b: a + b),
        ("sub", lambda a, b: a - b),
        ("mul", lambda a, b: a * b),
        ("div", lambda a, b: a / b),
        ("pow", lambda a, b: a**b),
        ("maximum", F.maximum),
        ("minimum", F.minimum),
        ("less", lambda a, b: a < b),
        ("equal", lambda a, b: a == b),
        ("bitwise_and", lambda a, b: (a > 0) & (b > 0)),
        ("bitwise_or", lambda a, b: (a > 0) | (b > 0)),
    ],
)
def test_broadcasting_failures_name_the_op_and_both_shapes(name, call):
    with pytest.raises(lg.OpError) as caught:
        call(lg.randn(2, 3), lg.randn(4))
    assert str(caught.value).startswith(f"{name}: shapes (2, 3) and (4,) cannot be broadcast together")


def test_where_names_all_three_shapes():
    with pytest.raises(lg.OpError) as caught:
        F.where(np.ones(5, dtype=bool), lg.randn(2, 3), lg.randn(2, 3))
    assert str(caught.value) == "where: condition (5,), (2, 3) and (2, 3) cannot be broadcast together"


def test_backward_on_a_non_scalar_says_what_to_pass():
    y = lg.randn(2, 3, requires_grad=True).exp()
    with pytest.raises(lg.BackwardError) as caught:
        y.backward()
    message = str(caught.value)
    assert "the output has shape (2, 3)" in message
    assert "out.sum()" in message and "backward(gradient=Tensor of shape (2, 3))" in message


def test_backward_with_a_gradient_of_the_wrong_shape():
    y = lg.randn(2, requires_grad=True).exp()
    with pytest.raises(
        lg.BackwardError, match=r"the gradient passed has shape \(3,\), but the output has shape \(2,\)"
    ):
        y.backward(np.ones(3))


def test_backward_of_something_that_does_not_require_grad():
    with pytest.raises(lg.BackwardError, match="does not require grad, so there is nothing to differentiate"):
        lg.randn(2).sum().backward()


@pytest.mark.parametrize("data", [[1, 2], [True, False], np.arange(3, dtype=np.int32)])
def test_an_integer_tensor_cannot_require_grad_and_says_why(data):
    with pytest.raises(lg.OpError) as caught:
        lg.tensor(data, requires_grad=True)
    message = str(caught.value)
    assert "only floating-point tensors can require gradients" in message
    assert "integers or booleans cannot change by a small amount" in message
    assert "astype('float32')" in message


class GradientOfTheWrongShape(Op):
    name = "sloppy_op"

    def forward(self, x):
        return 2 * x

    def backward(self, grad):
        return grad.sum()  # forgot to broadcast back


class TooManyGradients(Op):
    name = "greedy_op"

    def forward(self, x):
        return 2 * x

    def backward(self, grad):
        return grad, grad


def test_a_backward_returning_the_wrong_shape_names_the_op():
    x = lg.randn(2, 3, requires_grad=True)
    with pytest.raises(lg.BackwardError) as caught:
        GradientOfTheWrongShape.apply(x).sum().backward()
    assert str(caught.value).startswith(
        "sloppy_op.backward returned a gradient of shape () for input 0, which has shape (2, 3)"
    )


def test_a_backward_returning_too_many_gradients_names_the_op():
    with pytest.raises(lg.BackwardError, match="greedy_op.backward returned 2 gradients for 1 inputs"):
        TooManyGradients.apply(lg.randn(2, requires_grad=True)).sum().backward()


def test_a_hook_returning_the_wrong_shape_is_named():
    x = lg.randn(2, requires_grad=True)

    def squash(g):
        return g.sum()

    x.register_hook(squash)
    with pytest.raises(lg.BackwardError, match=r"hook 'squash': returned a gradient of \(\) float32 for a gradient of"):
        (x * 2).sum().backward()


def test_a_hook_changing_the_gradients_dtype_is_named():
    x = lg.randn(2, requires_grad=True)
    x.register_hook(lambda g: g.astype("float64"))  # (x.grad became float64; PyTorch refuses too)
    with pytest.raises(
        lg.BackwardError, match=r"returned a gradient of \(2,\) float64 for a gradient of \(2,\) float32"
    ):
        (x * 2).sum().backward()


def test_functional_grad_errors():
    x, unused = lg.randn(2, requires_grad=True), lg.randn(2, requires_grad=True)
    with pytest.raises(lg.BackwardError, match=r"input 1 \(shape \(2,\)\) is not used .* allow_unused=True"):
        lg.grad((x * 2).sum(), [x, unused])
    with pytest.raises(lg.BackwardError, match="grad: input 0 does not require grad"):
        lg.grad((x * 2).sum(), [lg.randn(2)])
    with pytest.raises(lg.BackwardError, match="grad: 1 outputs but 2 grad_outputs"):
        lg.grad([(x * 2).sum()], [x], grad_outputs=[None, None])


# Every other way in which the engine could be handed bad input: each must be a LeakygradError whose message
# names the op and what is wrong (the shapes, the axis, the index), not an error raised from inside NumPy.
BAD_CALLS = [
    ("reshape", lambda: lg.randn(2, 3).reshape(4, 2), "reshape: cannot reshape (2, 3) (6 elements) into (4, 2)"),
    ("reshape two -1", lambda: lg.randn(2, 3).reshape(-1, -1), "reshape: cannot reshape (2, 3)"),
    ("transpose", lambda: lg.randn(2, 3, 4).transpose(0, 1), "transpose: axes (0, 1) are not a permutation"),
    ("transpose axis", lambda: lg.randn(2, 3).transpose(0, 5), "transpose: axis 5 is out of bounds"),
    (
        "swapaxes",
        lambda: lg.randn(2, 3).swapaxes(0, 5),
        "swapaxes: axis 5 is out of range for a tensor of shape (2, 3)",
    ),
    ("mT of a vector", lambda: lg.randn(3).mT, "mT: needs a matrix or a batch of them, got a tensor of shape (3,)"),
    ("squeeze size", lambda: lg.randn(2, 3).squeeze(0), "squeeze: axis 0 of shape (2, 3) has size 2, not 1"),
    ("squeeze axis", lambda: lg.randn(2, 1).squeeze(5), "squeeze: axis 5 is out of range for a tensor of shape (2, 1)"),
    ("squeeze 0-d", lambda: lg.tensor(1.0).squeeze(0), "squeeze: axis 0 is out of range for a tensor of shape ()"),
    (
        "unsqueeze",
        lambda: lg.randn(2, 1).unsqueeze(10),
        "unsqueeze: axis 10 is out of range for a tensor of shape (2, 1)",
    ),
    ("unsqueeze neg", lambda: lg.randn(2, 1).unsqueeze(-4), "unsqueeze: axis -4 is out of range"),
    ("flatten", lambda: lg.randn(2, 3).flatten(5), "flatten: axis 5 is out of range for a tensor of shape (2, 3)"),
    ("flatten end", lambda: lg.randn(2, 3, 4).flatten(0, 3), "flatten: axis 3 is out of range"),
    ("flatten order", lambda: lg.randn(2, 3, 4).flatten(2, 1), "flatten: start axis 2 comes after end axis 1"),
    ("broadcast_to", lambda: lg.randn(2, 3).broadcast_to(3, 3), "broadcast_to: cannot broadcast (2, 3) to (3, 3)"),
    ("sum_to", lambda: lg.randn(2, 3).sum_to((4,)), "sum_to: (2, 3) cannot be summed down to (4,)"),
    (
        "concatenate shapes",
        lambda: F.concatenate([lg.randn(2, 3), lg.randn(3, 2)], axis=0),
        "concatenate: shapes (2, 3), (3, 2) must match in every dimension except axis 0",
    ),
    (
        "concatenate ndim",
        lambda: F.concatenate([lg.randn(2, 3), lg.randn(3)], axis=0),
        "concatenate: shapes (2, 3), (3,) must match",
    ),
    (
        "concatenate axis",
        lambda: F.concatenate([lg.randn(2, 3), lg.randn(2, 3)], axis=2),
        "concatenate: axis 2 is out of range for shapes (2, 3), (2, 3)",
    ),
    ("concatenate nothing", lambda: F.concatenate([]), "concatenate: needs at least one tensor"),
    (
        "stack",
        lambda: F.stack([lg.randn(2, 3), lg.randn(3, 2)]),
        "stack: all tensors need the same shape, got (2, 3), (3, 2)",
    ),
    (
        "stack axis",
        lambda: F.stack([lg.randn(2), lg.randn(2)], axis=3),
        "stack: axis 3 is out of range for shapes (2,), (2,)",
    ),
    (
        "index",
        lambda: lg.randn(2, 3)[5],
        "getitem: index 5 is out of bounds for axis 0 with size 2 (indexing a tensor of shape (2, 3))",
    ),
    ("index array", lambda: lg.randn(2, 3)[[0, 7]], "getitem: index 7 is out of bounds for axis 0 with size 2"),
    ("index too many", lambda: lg.randn(2, 3)[0, 0, 0], "getitem: too many indices"),
    ("index mask", lambda: lg.randn(2, 3)[np.ones(4, bool)], "getitem: boolean index did not match"),
    ("index float", lambda: lg.randn(2, 3)[1.5], "getitem: only integers, slices"),
    ("pad negative", lambda: F.pad(lg.randn(2), (-1, 1)), "pad: widths must be non-negative, got (-1, 1)"),
    (
        "pad axes",
        lambda: F.pad(lg.randn(2, 3), ((1, 1), (1, 1), (1, 1))),
        "pad: widths ((1, 1), (1, 1), (1, 1)) do not fit a tensor of shape (2, 3)",
    ),
    ("sum axis", lambda: lg.randn(2, 3).sum(axis=4), "sum: axis 4 is out of range for a tensor with 2 dimensions"),
    ("max axis", lambda: lg.randn(2, 3).max(axis=-3), "max: axis -3 is out of range"),
    ("sum same axis twice", lambda: lg.randn(2, 3).sum(axis=(0, -2)), "sum: axes (0, -2) name the same axis twice"),
    (
        "argmax axis",
        lambda: lg.randn(2, 3).argmax(axis=4),
        "argmax: axis 4 is out of range for a tensor of shape (2, 3)",
    ),
    ("argmin axis", lambda: lg.randn(2, 3).argmin(axis=-3), "argmin: axis -3 is out of range"),
    ("max empty", lambda: lg.zeros(0).max(), "max: cannot take the max over an axis of length 0"),
    ("softmax axis", lambda: lg.randn(2, 3).softmax(axis=4), "softmax: axis 4 is out of bounds"),
    ("clip", lambda: lg.randn(2).clip(), "clip needs at least one of min and max"),
    ("gelu", lambda: F.gelu(lg.randn(2), approximate="fast"), "gelu: approximate must be 'none' or 'tanh', got 'fast'"),
    ("not", lambda: ~lg.randn(2), "~ (not): needs a boolean or integer tensor, got (2,) float32"),
    ("string data", lambda: lg.randn(2) + "a", "Tensor: cannot hold a str"),
    ("None data", lambda: lg.randn(2) * None, "Tensor: cannot hold data of dtype object"),
    ("ragged data", lambda: lg.tensor([[1.0, 2.0], [3.0]]), "Tensor: cannot make an array of this data"),
    ("hook", lambda: lg.randn(2).register_hook(print), "register_hook: this tensor does not require grad"),
    ("retain_grad", lambda: lg.randn(2).retain_grad(), "retain_grad: this tensor does not require grad"),
    (
        "requires_grad=False on a result",
        lambda: setattr(lg.randn(2, requires_grad=True) * 2, "requires_grad", False),
        "Tensor: cannot set requires_grad=False on a tensor computed from others; use .detach()",
    ),
]


@pytest.mark.parametrize(("what", "call", "message"), BAD_CALLS, ids=[b[0] for b in BAD_CALLS])
def test_bad_input_is_a_named_leakygrad_error(what, call, message):
    with pytest.raises(lg.LeakygradError) as caught:
        call()
    assert str(caught.value).startswith(message), f"{what}: {caught.value}"


def test_op_errors_are_value_errors_and_backward_errors_runtime_errors():
    """So that code catching the usual Python exceptions keeps working."""
    assert issubclass(lg.OpError, ValueError) and issubclass(lg.BackwardError, RuntimeError)
    with pytest.raises(IndexError):
        lg.randn(2)[5]
