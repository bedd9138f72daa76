"""The gradient where a function has no derivative: kinks, ties, bounds, zeros, NaN, and the `where` trap.

Every case is computed by leakygrad and by PyTorch on the same float64 input, and both must give the
gradient that docs/gradients.md lists (`expected`): the test pins the convention, and checks it is PyTorch's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
import torch

import leakygrad as lg
from leakygrad import functional as F

tF = torch.nn.functional
inf, nan = np.inf, np.nan


@dataclass(frozen=True)
class Kink:
    name: str
    leaky: Callable
    torch: Callable
    inputs: tuple  # one list of values per input
    expected: tuple  # the gradient of each input, as docs/gradients.md states it
    upstream: tuple | None = None  # d(final)/d(output); ones when None

    def __str__(self) -> str:
        return self.name


def gradients(kink: Kink, framework: str):
    """The value and each input's gradient, computed by `framework` ("leakygrad" or "torch")."""
    arrays = [np.array(values, dtype=np.float64) for values in kink.inputs]
    if framework == "leakygrad":
        xs = [lg.Tensor(a, requires_grad=True, dtype=np.float64) for a in arrays]
        out = kink.leaky(*xs)
        upstream = np.ones(out.shape) if kink.upstream is None else np.array(kink.upstream, dtype=np.float64)
        out.backward(lg.Tensor(upstream, dtype=np.float64))
        return out.data, [x.grad.data for x in xs]
    xs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = kink.torch(*xs)
    upstream = np.ones(tuple(out.shape)) if kink.upstream is None else np.array(kink.upstream, dtype=np.float64)
    out.backward(torch.tensor(upstream))
    return out.detach().numpy(), [x.grad.numpy() for x in xs]


def maximum_of(t, value):
    return torch.maximum(t, torch.tensor(value, dtype=torch.float64))


KINKS = [
    # activations at 0
    Kink("relu at 0", F.relu, torch.relu, ([0.0, -0.0, 1.0],), ([0.0, 0.0, 1.0],)),
    Kink("abs at 0", F.abs, torch.abs, ([0.0, -0.0, -2.0],), ([0.0, 0.0, -1.0],)),
    Kink(
        "leaky_relu at 0 takes the negative slope",
        lambda x: F.leaky_relu(x, 0.2),
        lambda x: tF.leaky_relu(x, 0.2),
        ([0.0, 1.0],),
        ([0.2, 1.0],),
    ),
    Kink("elu at 0 takes alpha", lambda x: F.elu(x, 0.5), lambda x: tF.elu(x, 0.5), ([0.0],), ([0.5],)),
    Kink("sign has zero gradient", F.sign, torch.sign, ([0.0, 3.0, -3.0],), ([0.0, 0.0, 0.0],)),
    # bounds: clip includes them, hardtanh excludes them
    Kink(
        "clip at its bounds passes the gradient",
        lambda x: x.clip(-1.0, 1.0),
        lambda x: x.clamp(-1.0, 1.0),
        ([-1.0, 1.0, -1.5, 1.5, 0.5],),
        ([1.0, 1.0, 0.0, 0.0, 1.0],),
    ),
    Kink(
        "clip with min only", lambda x: x.clip(min=0.0), lambda x: x.clamp(min=0.0), ([-1.0, 0.0, 2.0],), ([0, 1, 1],)
    ),
    Kink(
        "clip with max only", lambda x: x.clip(max=0.0), lambda x: x.clamp(max=0.0), ([-1.0, 0.0, 2.0],), ([1, 1, 0],)
    ),
    Kink(
        "clip with min == max",
        lambda x: x.clip(1.0, 1.0),
        lambda x: x.clamp(1.0, 1.0),
        ([0.0, 1.0, 2.0],),
        ([0, 1, 0],),
    ),
    Kink(
        "hardtanh at its bounds blocks the gradient",
        F.hardtanh,
        tF.hardtanh,
        ([-1.0, 1.0, -1.5, 1.5, 0.5],),
        ([0.0, 0.0, 0.0, 0.0, 1.0],),
    ),
    Kink(
        "softplus above its threshold is the identity",
        lambda x: F.softplus(x, beta=1.0, threshold=20.0),
        lambda x: tF.softplus(x, beta=1.0, threshold=20.0),
        ([20.5, 30.0],),
        ([1.0, 1.0],),
    ),
    # ties
    Kink(
        "max over all: ties share equally", lambda x: x.max(), torch.amax, ([1.0, 3.0, 3.0, 2.0],), ([0, 0.5, 0.5, 0],)
    ),
    Kink(
        "max over an axis: ties share equally",
        lambda x: x.max(axis=1),
        lambda x: x.amax(dim=1),
        ([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]],),
        ([[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]],),
    ),
    Kink(
        "min over an axis: ties share equally",
        lambda x: x.min(axis=0),
        lambda x: x.amin(dim=0),
        ([[1.0, 3.0], [1.0, 2.0]],),
        ([[0.5, 0.0], [0.5, 1.0]],),
    ),
    Kink(
        "maximum: a tie splits the gradient in half",
        F.maximum,
        torch.maximum,
        ([1.0, 2.0, 3.0], [1.0, 1.0, 3.0]),
        ([0.5, 1.0, 0.5], [0.5, 0.0, 0.5]),
    ),
    Kink(
        "minimum: a tie splits the gradient in half",
        F.minimum,
        torch.minimum,
        ([1.0, 2.0, 3.0], [1.0, 1.0, 3.0]),
        ([0.5, 0.0, 0.5], [0.5, 1.0, 0.5]),
    ),
    Kink(
        "maximum with a broadcast input: its halves add up",
        F.maximum,
        torch.maximum,
        ([[1.0, 2.0], [1.0, 0.0]], [1.0]),
        ([[0.5, 1.0], [0.5, 0.0]], [2.0]),
    ),
    # zeros of sqrt, log, pow
    Kink("sqrt at 0 is infinite", F.sqrt, torch.sqrt, ([0.0, 4.0],), ([inf, 0.25],)),
    Kink("sqrt at 0 with zero upstream is NaN", F.sqrt, torch.sqrt, ([0.0],), ([nan],), upstream=([0.0])),
    Kink("log at 0 is infinite", F.log, torch.log, ([0.0],), ([inf],)),
    *[
        Kink(f"x ** {p} at 0", lambda x, p=p: x**p, lambda x, p=p: x**p, ([0.0],), ([g],))
        for p, g in [(0, 0.0), (0.5, inf), (1, 1.0), (1.5, 0.0), (2, 0.0), (3, 0.0), (-1, -inf), (-0.5, -inf)]
    ],
    *[
        Kink(f"0 ** b at b = {b}", lambda a, b: a**b, lambda a, b: a**b, ([0.0], [b]), ([ga], [gb]))
        for b, ga, gb in [(0.0, 0.0, 0.0), (0.5, inf, 0.0), (1.0, 1.0, 0.0), (2.0, 0.0, 0.0), (-1.0, -inf, -inf)]
    ],
    Kink("a ** 0 has zero gradient for a", lambda a, b: a**b, lambda a, b: a**b, ([2.0], [0.0]), ([0.0], [np.log(2)])),
    Kink("x ** 0.5 below 0 is NaN", lambda x: x**0.5, lambda x: x**0.5, ([-1.0],), ([nan],)),
    # NaN inputs: the gradient still flows where PyTorch lets it
    Kink("relu at NaN passes the gradient", F.relu, torch.relu, ([nan],), ([1.0],)),
    Kink("elu at NaN passes the gradient", F.elu, tF.elu, ([nan],), ([1.0],)),
    Kink("hardtanh at NaN passes the gradient", F.hardtanh, tF.hardtanh, ([nan],), ([1.0],)),
    Kink("leaky_relu at NaN takes the slope", F.leaky_relu, tF.leaky_relu, ([nan],), ([0.01],)),
    Kink("clip at NaN blocks the gradient", lambda x: x.clip(-1, 1), lambda x: x.clamp(-1, 1), ([nan],), ([0.0],)),
    Kink(
        "maximum with a NaN: both inputs get the gradient",
        lambda x: F.maximum(x, 0.0),
        lambda x: maximum_of(x, 0.0),
        ([nan],),
        ([1.0],),
    ),
    Kink(
        "max over an axis with a NaN: NaN across that slice",
        lambda x: x.max(axis=1),
        lambda x: x.amax(dim=1),
        ([[nan, 1.0], [1.0, 2.0]],),
        ([[nan, nan], [0.0, 1.0]],),
    ),
    Kink("max over all with a NaN: NaN everywhere", lambda x: x.max(), torch.amax, ([nan, 1.0],), ([nan, nan],)),
    # masked rows
    Kink(
        "softmax: an entry at -inf gets no gradient",
        lambda x: x.softmax(axis=1),
        lambda x: x.softmax(dim=1),
        ([[0.0, -inf], [1.0, 2.0]],),
        ([[0.0, 0.0], [0.7864477329659274, -0.7864477329659274]],),
        upstream=([[1.0, 2.0], [3.0, -1.0]]),
    ),
    Kink(
        "logsumexp of a row that is all -inf: NaN gradient",
        lambda x: x.logsumexp(axis=1),
        lambda x: x.logsumexp(dim=1),
        ([[-inf, -inf], [0.0, -inf]],),
        ([[nan, nan], [1.0, 0.0]],),
    ),
]

# The where trap: the branch not taken still poisons the gradient (0 times an infinite local derivative).
WHERE_TRAP = [
    Kink(
        "where(x > 0, sqrt(x), 0) at x = 0",
        lambda x: F.where(x > 0, x.sqrt(), 0.0),
        lambda x: torch.where(x > 0, x.sqrt(), 0.0),
        ([0.0, 4.0],),
        ([nan, 0.25],),
    ),
    Kink(
        "where(x != 0, 1 / x, 0) at x = 0",
        lambda x: F.where(x != 0, 1 / x, 0.0),
        lambda x: torch.where(x != 0, 1 / x, 0.0),
        ([0.0, 2.0],),
        ([nan, -0.25],),
    ),
    Kink(
        "where(x > 0, x * log(x), 0) at x = 0",
        lambda x: F.where(x > 0, x * x.log(), 0.0),
        lambda x: torch.where(x > 0, x * x.log(), 0.0),
        ([0.0, 1.0],),
        ([nan, 1.0],),
    ),
    Kink(
        "where(x < 100, exp(x), 0) at x = 1000",
        lambda x: F.where(x < 100, x.exp(), 0.0),
        lambda x: torch.where(x < 100, x.exp(), 0.0),
        ([1000.0, 0.0],),
        ([nan, 1.0],),
    ),
]

# The double-where fix: make the unsafe input safe too, so no infinity is ever computed.
DOUBLE_WHERE = [
    Kink(
        "where(x > 0, sqrt(where(x > 0, x, 1)), 0)",
        lambda x: F.where(x > 0, F.where(x > 0, x, 1.0).sqrt(), 0.0),
        lambda x: torch.where(x > 0, torch.where(x > 0, x, 1.0).sqrt(), 0.0),
        ([0.0, 4.0],),
        ([0.0, 0.25],),
    ),
    Kink(
        "where(x != 0, 1 / where(x != 0, x, 1), 0)",
        lambda x: F.where(x != 0, 1 / F.where(x != 0, x, 1.0), 0.0),
        lambda x: torch.where(x != 0, 1 / torch.where(x != 0, x, 1.0), 0.0),
        ([0.0, 2.0],),
        ([0.0, -0.25],),
    ),
    Kink(
        "where(x < 100, exp(where(x < 100, x, 0)), 0)",
        lambda x: F.where(x < 100, F.where(x < 100, x, 0.0).exp(), 0.0),
        lambda x: torch.where(x < 100, torch.where(x < 100, x, 0.0).exp(), 0.0),
        ([1000.0, 0.0],),
        ([0.0, 1.0],),
    ),
]


# x * log(x) at 0 computes 0 * -inf = nan in the forward pass, and NumPy says so: expected here.
@pytest.mark.filterwarnings("ignore:invalid value encountered in multiply:RuntimeWarning")
@pytest.mark.parametrize("kink", KINKS + WHERE_TRAP + DOUBLE_WHERE, ids=str)
def test_gradient_at_the_kink_is_pytorchs_and_the_documented_one(kink: Kink):
    value, grads = gradients(kink, "leakygrad")
    t_value, t_grads = gradients(kink, "torch")
    np.testing.assert_allclose(value, t_value, rtol=1e-12, atol=0, equal_nan=True, err_msg="value")
    for i, (g, t_g, expected) in enumerate(zip(grads, t_grads, kink.expected)):
        np.testing.assert_allclose(g, t_g, rtol=1e-12, atol=0, equal_nan=True, err_msg=f"input {i} vs PyTorch")
        np.testing.assert_allclose(g, expected, rtol=1e-12, atol=0, equal_nan=True, err_msg=f"input {i} vs docs")


def test_where_trap_poisons_even_the_gradient_of_the_branch_taken_elsewhere():
    """One element at the kink NaNs a shared parameter's gradient: the trap, seen from a weight."""
    w = lg.tensor(2.0, requires_grad=True, dtype="float64")
    x = lg.tensor([0.0, 1.0, 4.0], dtype="float64")
    F.where(x > 0, (w * x).sqrt(), 0.0).sum().backward()
    wt = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    xt = torch.tensor([0.0, 1.0, 4.0], dtype=torch.float64)
    torch.where(xt > 0, (wt * xt).sqrt(), 0.0).sum().backward()
    assert np.isnan(w.grad.item()) and np.isnan(wt.grad.item())


def test_comparisons_carry_no_gradient():
    x = lg.tensor([-1.0, 0.0, 2.0], requires_grad=True, dtype="float64")
    for mask in (x > 0, x >= 0, x < 0, x <= 0, x == 0, x != 0, (x > 0) & (x < 3), (x > 0) | (x < 0), ~(x > 0)):
        assert mask.dtype == np.bool_ and not mask.requires_grad and mask.op is None
    # A mask used as a number is a constant: the gradient is the mask itself, in both frameworks.
    (x * (x > 0)).sum().backward()
    xt = torch.tensor([-1.0, 0.0, 2.0], dtype=torch.float64, requires_grad=True)
    (xt * (xt > 0)).sum().backward()
    np.testing.assert_array_equal(x.grad.data, xt.grad.numpy())
    np.testing.assert_array_equal(x.grad.data, [0.0, 0.0, 1.0])


def test_max_over_an_axis_shares_ties_unlike_torch_max_with_dim():
    """torch.max(x, dim) returns indices and sends the whole gradient to one of them; leakygrad's max is
    torch.amax (and torch.max(x) over all elements), which shares it."""
    x = lg.tensor([[3.0, 3.0]], requires_grad=True, dtype="float64")
    x.max(axis=1).sum().backward()
    xt = torch.tensor([[3.0, 3.0]], dtype=torch.float64, requires_grad=True)
    torch.max(xt, dim=1).values.sum().backward()
    np.testing.assert_array_equal(x.grad.data, [[0.5, 0.5]])
    assert sorted(xt.grad.numpy().ravel()) == [0.0, 1.0]


def test_second_derivative_of_pow_at_exponent_0_follows_pytorch():
    """d(a^b)/da = b a^(b-1) is set to 0 where b = 0 (so 0 ** 0 has no NaN gradient); differentiating that
    again with respect to b then gives 0 at b = 0 too, where the smooth formula says 1/a. PyTorch agrees."""
    a = lg.tensor(2.0, requires_grad=True, dtype="float64")
    b = lg.tensor(0.0, requires_grad=True, dtype="float64")
    (ga,) = lg.grad(a**b, a, create_graph=True)
    (gab,) = lg.grad(ga, b)
    at = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    bt = torch.tensor(0.0, dtype=torch.float64, requires_grad=True)
    (gat,) = torch.autograd.grad(at**bt, at, create_graph=True)
    (gabt,) = torch.autograd.grad(gat, bt)
    assert gab.item() == gabt.item() == 0.0


def test_relu_second_derivative_is_zero_at_and_around_the_kink():
    x = lg.tensor([-1.0, 0.0, 1.0], requires_grad=True, dtype="float64")
    (g,) = lg.grad(F.relu(x).sum(), x, create_graph=True)
    (h,) = lg.grad((g * g).sum(), x, allow_unused=True)
    assert h is None or not h.data.any()


def test_variance_without_degrees_of_freedom_is_not_finite_like_pytorch():
    """var(ddof=1) of one element divides by zero: NaN value and gradient in NumPy and PyTorch alike, and no
    Python exception from inside backward."""
    x = lg.tensor([2.0], requires_grad=True, dtype="float64")
    xt = torch.tensor([2.0], dtype=torch.float64, requires_grad=True)
    with pytest.warns(RuntimeWarning):
        v = x.var(ddof=1)
    v.backward()
    with pytest.warns(UserWarning):
        vt = xt.var(correction=1)
    vt.backward()
    assert np.isnan(v.item()) and np.isnan(vt.item())
    assert np.isnan(x.grad.data).all() and np.isnan(xt.grad.numpy()).all()


def test_abs_and_sign_at_nan_follow_numpy_not_pytorch():
    """The one deliberate difference: PyTorch's sign(NaN) is 0, so its abs has gradient 0 at NaN. leakygrad
    keeps NumPy's sign(NaN) = NaN, which lets the NaN show in the gradient instead of hiding it."""
    x = lg.tensor([nan], requires_grad=True, dtype="float64")
    assert np.isnan(x.sign().item())
    x.abs().sum().backward()
    assert np.isnan(x.grad.item())
    xt = torch.tensor([nan], dtype=torch.float64, requires_grad=True)
    xt.abs().sum().backward()
    assert xt.sign().item() == 0.0 and xt.grad.item() == 0.0


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("layout", ["C", "channels-last", "mixed", "broadcast"])
def test_where_with_a_zero_branch_is_np_where_to_the_bit(dtype, layout):
    """where(mask, x, 0) and where(mask, 0, x) skip np.where (see elementwise._select): the result must still be
    np.where's to the bit (NaN, inf and the sign of zero included), laid out like the mask when shapes match."""
    rng = np.random.default_rng(1)
    values = rng.standard_normal((2, 3, 4, 5)).astype(dtype)
    values.flat[::7], values.flat[1::11], values.flat[2::13] = nan, -inf, -0.0
    mask = rng.random((2, 3, 4, 5)) < 0.5
    channels_last = lambda a: np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)  # noqa: E731
    if layout in ("channels-last", "mixed"):
        mask = channels_last(mask)
    if layout == "channels-last":
        values = channels_last(values)
    if layout == "broadcast":
        mask = mask[:, :1]
    x = lg.Tensor(values, dtype=dtype)
    for zero in (0.0, -0.0):
        for ours, expected in [
            (F.where(mask, x, zero), np.where(mask, values, dtype(zero))),
            (F.where(mask, zero, x), np.where(mask, dtype(zero), values)),
        ]:
            assert ours.dtype == dtype
            bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
            np.testing.assert_array_equal(ours.data.view(bits), expected.view(bits))
            if layout != "broadcast" and zero == 0 and not np.signbit(zero):  # -0.0: np.where's own layout
                assert np.argsort(ours.data.strides).tolist() == np.argsort(mask.strides).tolist()
