"""Every op, checked two ways on shapes and values drawn by hypothesis, in float64.

1. Against `torch.autograd` on identical inputs: the value, the gradient of every input for a random upstream
   gradient v, and the second derivatives (double backward: the gradient of sum(w * grad) with respect to the
   inputs and to v) agree to 1e-10 relative.
2. Against central differences: `leakygrad.gradcheck` for every op, and `gradgradcheck` for every op whose
   second derivative is not zero everywhere (`curved`).

The table below has one `OpSpec` per op: the leakygrad call, the same call in PyTorch, how to draw the
inputs' shapes (with any parameter that depends on them, like an axis or an index), and each input's domain.
Domains keep values away from kinks (relu at 0, clip at its bounds, ties in max): the gradient at the kinks
is pinned separately, in test_kinks.py.

Agreement with PyTorch: |leakygrad - torch| <= 1e-10 |torch| + 1e-12 max(1, max |torch|), elementwise. The
absolute floor only matters for an element at least 100 times smaller than the largest of its tensor: such
an element is usually the result of cancellation in a sum (softmax's backward, var's centring), where the
absolute rounding error is set by the size of the terms, not by the tiny result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import leakygrad as lg
from leakygrad import functional as F

RTOL = 1e-10
ATOL_FRACTION = 1e-12


# ---------------------------------------------------------------------------------------------- domains


@dataclass(frozen=True)
class Domain:
    """Where an input's values come from. `unique`: no two elements equal (max/min would tie)."""

    elements: st.SearchStrategy
    dtype: type = np.float64
    unique: bool = False

    @property
    def differentiable(self) -> bool:
        return np.dtype(self.dtype).kind == "f"


def _floats(low, high):
    return st.floats(low, high, allow_nan=False, allow_infinity=False)


def _push_away(value: float, kinks: tuple[float, ...], gap: float) -> float:
    for kink in kinks:
        if abs(value - kink) < gap:
            return kink + gap if value >= kink else kink - gap
    return value


def away_from(*kinks, low=-3.0, high=3.0, gap=0.1) -> Domain:
    """Values in [low, high] at least `gap` from every kink (kinks must be further apart than 2 gap)."""
    return Domain(_floats(low, high).map(lambda v: _push_away(v, kinks, gap)))


ANY = Domain(_floats(-3.0, 3.0))
POSITIVE = Domain(_floats(0.2, 3.0))
NONZERO = away_from(0.0)
# Distinct values on a 0.1 grid: no ties, and every pair further apart than gradcheck's eps.
DISTINCT = Domain(st.integers(-30, 30).map(lambda k: k / 10), unique=True)
# Two grids offset by 0.05: an element of one never equals an element of the other.
GRID = Domain(st.integers(-30, 30).map(lambda k: k / 10))
GRID_OFFSET = Domain(st.integers(-30, 30).map(lambda k: k / 10 + 0.05))
CONDITION = Domain(st.booleans(), dtype=np.bool_)


# ---------------------------------------------------------------------------------------------- layouts
# A layout strategy draws (shapes, params): one shape per input and the keyword arguments of the call.

SIDE = 3  # shapes up to 3 x 3 x 3 keep gradcheck's element-by-element loop quick


def shapes(min_dims=0, max_dims=3):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=1, max_side=SIDE)


def unary(min_dims=0, **params):
    return st.tuples(shapes(min_dims).map(lambda s: [s]), st.fixed_dictionaries(params))


def broadcasting(num_shapes=2, **params):
    """Shapes that broadcast together, as NumPy's rules allow (new leading axes, axes of size 1)."""
    drawn = hnp.mutually_broadcastable_shapes(num_shapes=num_shapes, min_dims=0, max_dims=3, max_side=SIDE)
    return st.tuples(drawn.map(lambda b: list(b.input_shapes)), st.fixed_dictionaries(params))


def matmul_shapes():
    """Batched matmul shapes, 1-D operands included, batch axes broadcasting: NumPy's gufunc signature."""
    drawn = hnp.mutually_broadcastable_shapes(signature=np.matmul.signature, max_dims=2, max_side=SIDE)
    return st.tuples(drawn.map(lambda b: list(b.input_shapes)), st.just({}))


@st.composite
def axis_and_keepdims(draw, min_dims=0):
    """A shape, and an axis argument: None, one axis (maybe negative) or several."""
    shape = draw(shapes(min_dims))
    ndim = len(shape)
    choices = [st.none()]
    if ndim:
        choices.append(st.integers(-ndim, ndim - 1))
        choices.append(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True).map(tuple))
    axis = draw(st.one_of(choices))
    return [shape], {"axis": axis, "keepdims": draw(st.booleans())}


@st.composite
def variance_layout(draw):
    [shape], params = draw(axis_and_keepdims())
    axis = params["axis"]
    axes = range(len(shape)) if axis is None else [axis] if isinstance(axis, int) else axis
    count = int(np.prod([shape[a] for a in axes]))
    params["ddof"] = draw(st.sampled_from([0, 1])) if count > 1 else 0  # ddof=1 needs two elements
    return [shape], params


@st.composite
def one_axis(draw, min_dims=1):
    shape = draw(shapes(min_dims))
    return [shape], {"axis": draw(st.integers(-len(shape), len(shape) - 1))}


@st.composite
def reshape_layout(draw):
    shape = draw(shapes())
    target = list(draw(st.permutations(shape)))
    if draw(st.booleans()):
        target.insert(draw(st.integers(0, len(target))), 1)
    if target and draw(st.booleans()):
        target[draw(st.integers(0, len(target) - 1))] = -1  # let reshape infer it
    return [shape], {"shape": tuple(target)}


@st.composite
def transpose_layout(draw):
    shape = draw(shapes())
    axes = draw(st.none() | st.permutations(range(len(shape))).map(tuple))
    return [shape], {"axes": axes}


@st.composite
def swapaxes_layout(draw):
    shape = draw(shapes(min_dims=1))
    ndim = len(shape)
    return [shape], {"axis1": draw(st.integers(-ndim, ndim - 1)), "axis2": draw(st.integers(-ndim, ndim - 1))}


def _smaller_shape(draw, shape):
    """A shape that broadcasts to `shape`: some leading axes dropped, some axes set to 1."""
    kept = shape[draw(st.integers(0, len(shape))) :]
    return tuple(n if draw(st.booleans()) else 1 for n in kept)


@st.composite
def broadcast_to_layout(draw):
    target = draw(shapes())
    return [_smaller_shape(draw, target)], {"shape": target}


@st.composite
def sum_to_layout(draw):
    shape = draw(shapes())
    return [shape], {"shape": _smaller_shape(draw, shape)}


@st.composite
def squeeze_layout(draw):
    shape = draw(shapes())
    ones = [i for i, n in enumerate(shape) if n == 1]
    axis = draw(st.none() | st.sampled_from(ones)) if ones else None
    return [shape], {"axis": axis}


@st.composite
def unsqueeze_layout(draw):
    shape = draw(shapes())
    return [shape], {"axis": draw(st.integers(-len(shape) - 1, len(shape)))}


@st.composite
def index_layout(draw):
    """Every kind of index NumPy takes: basic (ints, slices with any step, None, ...), boolean masks, integer
    arrays (repeats included: their gradients must add up), and a slice mixed with an integer array."""
    shape = draw(shapes())
    basic = hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True)
    kinds = [basic, hnp.arrays(np.bool_, shape)]
    if shape:
        kinds.append(hnp.integer_array_indices(shape, result_shape=hnp.array_shapes(min_dims=1, max_dims=2)))
        kinds.append(_positions(shape[0]))  # rows, maybe repeated
        if len(shape) >= 2:
            kinds.append(_positions(shape[1]).map(lambda columns: (slice(None), columns)))
    return [shape], {"index": draw(st.one_of(kinds))}


def _positions(size: int):
    """An integer array of positions along an axis of `size`, negative ones and repeats included."""
    return hnp.arrays(np.intp, st.integers(1, 4), elements=st.integers(-size, size - 1))


@st.composite
def concatenate_layout(draw):
    base = list(draw(shapes(min_dims=1)))
    axis = draw(st.integers(-len(base), len(base) - 1))
    sizes = draw(st.lists(st.integers(1, SIDE), min_size=1, max_size=3))
    result = []
    for n in sizes:
        shape = list(base)
        shape[axis] = n
        result.append(tuple(shape))
    return result, {"axis": axis}


@st.composite
def stack_layout(draw):
    shape = draw(shapes(max_dims=2))
    count = draw(st.integers(1, 3))
    return [shape] * count, {"axis": draw(st.integers(-len(shape) - 1, len(shape)))}


@st.composite
def pad_layout(draw):
    shape = draw(shapes(min_dims=1))
    widths = tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in shape)
    return [shape], {"pad_width": widths, "value": draw(st.sampled_from([0.0, -1.5]))}


# ---------------------------------------------------------------------------------------------- torch helpers


def torch_dims(x, axis):
    if axis is None:
        return tuple(range(x.dim()))
    return (axis,) if isinstance(axis, int) else tuple(axis)


def torch_reduction(fn):
    return lambda x, axis, keepdims: fn(x, dim=torch_dims(x, axis), keepdim=keepdims)


def torch_squeeze(x, axis):
    return x.squeeze() if axis is None else x.squeeze(axis)


def torch_sum_to(x, shape):
    lead = x.dim() - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and x.shape[lead + i] != 1)
    return (x.sum(dim=dims, keepdim=True) if dims else x).reshape(shape)


def torch_index(x, index):
    """x[index] in PyTorch, selecting exactly the elements NumPy's rule selects (PyTorch has no negative-step
    slices): gather by the flat positions NumPy picks. Its backward is PyTorch's scatter-add."""
    positions = np.arange(x.numel()).reshape(tuple(x.shape))[index]
    return torch.take(x, torch.from_numpy(np.array(positions)))


def torch_pad(x, pad_width, value):
    flat = [w for before_after in reversed(pad_width) for w in before_after]  # last axis first
    return torch.nn.functional.pad(x, flat, value=value)


def torch_transpose(x, axes):
    return x.permute(tuple(reversed(range(x.dim()))) if axes is None else axes)


# ---------------------------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class OpSpec:
    name: str
    leaky: Callable  # (*leakygrad tensors, **params) -> Tensor
    torch: Callable  # (*torch tensors, **params) -> torch.Tensor
    layout: st.SearchStrategy  # draws (shapes, params)
    domains: tuple[Domain, ...]  # one per input; the last one repeats for ops with any number of inputs
    curved: bool = True  # has a second derivative that is not zero everywhere: gradgradcheck it

    def __str__(self) -> str:
        return self.name

    def domain(self, position: int) -> Domain:
        return self.domains[min(position, len(self.domains) - 1)]


def spec(name, leaky, torch_fn, layout, *domains, curved=True):
    return OpSpec(name, leaky, torch_fn, layout, domains, curved)


SPECS = [
    # arithmetic, broadcasting
    spec("add", lambda a, b: a + b, lambda a, b: a + b, broadcasting(), ANY, ANY, curved=False),
    spec("sub", lambda a, b: a - b, lambda a, b: a - b, broadcasting(), ANY, ANY, curved=False),
    spec("mul", lambda a, b: a * b, lambda a, b: a * b, broadcasting(), ANY, ANY),
    spec("div", lambda a, b: a / b, lambda a, b: a / b, broadcasting(), ANY, NONZERO),
    spec("neg", lambda x: -x, lambda x: -x, unary(), ANY, curved=False),
    # exponent 0 is special-cased (the base's gradient is set to 0 there): see test_kinks.py
    spec("pow", lambda a, b: a**b, lambda a, b: a**b, broadcasting(), POSITIVE, NONZERO),
    # with a Python number on either side
    spec("add_scalar", lambda x: x + 2.5, lambda x: x + 2.5, unary(), ANY, curved=False),
    spec("rsub_scalar", lambda x: 2.5 - x, lambda x: 2.5 - x, unary(), ANY, curved=False),
    spec("mul_scalar", lambda x: 2.5 * x, lambda x: 2.5 * x, unary(), ANY, curved=False),
    spec("rdiv_scalar", lambda x: 2.5 / x, lambda x: 2.5 / x, unary(), NONZERO),
    spec("rpow_scalar", lambda x: 2.5**x, lambda x: 2.5**x, unary(), ANY),
    spec(
        "pow_scalar",
        lambda x, exponent: x**exponent,
        lambda x, exponent: x**exponent,
        unary(exponent=st.sampled_from([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0])),
        POSITIVE,
    ),
    spec(
        "pow_integer",
        lambda x, exponent: x**exponent,
        lambda x, exponent: x**exponent,
        unary(exponent=st.sampled_from([-1, 2, 3])),
        NONZERO,  # negative bases too: integer powers are defined there
    ),
    # elementwise functions
    spec("exp", lg.Tensor.exp, torch.exp, unary(), ANY),
    spec("log", lg.Tensor.log, torch.log, unary(), POSITIVE),
    spec("sqrt", lg.Tensor.sqrt, torch.sqrt, unary(), POSITIVE),
    spec("abs", lg.Tensor.abs, torch.abs, unary(), NONZERO, curved=False),
    spec("sign", lg.Tensor.sign, torch.sign, unary(), NONZERO, curved=False),
    spec("erf", F.erf, torch.erf, unary(), ANY),
    spec(
        "clip",
        lambda x, low, high: x.clip(low, high),
        lambda x, low, high: torch.clamp(x, low, high),
        unary(bounds=st.sampled_from([(-1.0, 1.0), (-0.5, 2.0), (None, 0.5), (-0.5, None)])).map(
            lambda layout: (layout[0], dict(zip(("low", "high"), layout[1]["bounds"])))
        ),
        away_from(-1.0, -0.5, 0.5, 1.0, 2.0),
        curved=False,
    ),
    spec("maximum", F.maximum, torch.maximum, broadcasting(), GRID, GRID_OFFSET, curved=False),
    spec("minimum", F.minimum, torch.minimum, broadcasting(), GRID, GRID_OFFSET, curved=False),
    spec("where", F.where, torch.where, broadcasting(3), CONDITION, ANY, ANY, curved=False),
    # activations
    spec("sigmoid", F.sigmoid, torch.sigmoid, unary(), ANY),
    spec("tanh", F.tanh, torch.tanh, unary(), ANY),
    spec("relu", F.relu, torch.relu, unary(), NONZERO, curved=False),
    spec(
        "leaky_relu",
        F.leaky_relu,
        torch.nn.functional.leaky_relu,
        unary(negative_slope=st.sampled_from([0.01, 0.2])),
        NONZERO,
        curved=False,
    ),
    spec("elu", F.elu, torch.nn.functional.elu, unary(alpha=st.sampled_from([1.0, 0.5])), NONZERO),
    spec("gelu", F.gelu, torch.nn.functional.gelu, unary(), ANY),
    spec("gelu_tanh", F.gelu, torch.nn.functional.gelu, unary(approximate=st.just("tanh")), ANY),
    spec("silu", F.silu, torch.nn.functional.silu, unary(), ANY),
    spec("selu", F.selu, torch.nn.functional.selu, unary(), NONZERO),
    spec("celu", F.celu, torch.nn.functional.celu, unary(alpha=st.sampled_from([1.0, 0.5, 2.0])), NONZERO),
    spec("mish", F.mish, torch.nn.functional.mish, unary(), ANY),
    # (torch has no double backward for hardsigmoid: compared with its formula; the module test compares
    # torch.nn.Hardsigmoid itself, values and gradients)
    spec(
        "hardsigmoid",
        F.hardsigmoid,
        lambda x: torch.clamp(x / 6 + 0.5, 0.0, 1.0),
        unary(),
        away_from(-3.0, 3.0),
        curved=False,
    ),
    spec("hardswish", F.hardswish, torch.nn.functional.hardswish, unary(), away_from(-3.0, 3.0)),
    spec(
        "threshold",
        F.threshold,
        torch.nn.functional.threshold,
        unary(threshold=st.sampled_from([0.0, 0.5]), value=st.sampled_from([0.0, -2.0])),
        away_from(0.0, 0.5),
        curved=False,
    ),
    spec("softplus", F.softplus, torch.nn.functional.softplus, unary(beta=st.sampled_from([1.0, 2.0])), ANY),
    spec(
        "hardtanh",
        F.hardtanh,
        torch.nn.functional.hardtanh,
        unary(min_val=st.just(-0.5), max_val=st.just(2.0)),
        away_from(-0.5, 2.0),
        curved=False,
    ),
    # reductions
    spec("sum", F.sum, torch_reduction(torch.sum), axis_and_keepdims(), ANY, curved=False),
    spec("mean", F.mean, torch_reduction(torch.mean), axis_and_keepdims(), ANY, curved=False),
    spec(
        "var",
        F.var,
        lambda x, axis, keepdims, ddof: torch.var(x, dim=torch_dims(x, axis), keepdim=keepdims, correction=ddof),
        variance_layout(),
        ANY,
    ),
    spec("max", F.max, torch_reduction(torch.amax), axis_and_keepdims(), DISTINCT, curved=False),
    spec("min", F.min, torch_reduction(torch.amin), axis_and_keepdims(), DISTINCT, curved=False),
    spec("logsumexp", F.logsumexp, torch_reduction(torch.logsumexp), axis_and_keepdims(), ANY),
    spec("softmax", F.softmax, lambda x, axis: torch.softmax(x, dim=axis), one_axis(), ANY),
    spec("log_softmax", F.log_softmax, lambda x, axis: torch.log_softmax(x, dim=axis), one_axis(), ANY),
    # matmul
    spec("matmul", lambda a, b: a @ b, torch.matmul, matmul_shapes(), ANY, ANY),
    # shape
    spec("clone", lg.Tensor.clone, torch.clone, unary(), ANY, curved=False),
    spec(
        "reshape",
        lambda x, shape: x.reshape(shape),
        lambda x, shape: x.reshape(shape),
        reshape_layout(),
        ANY,
        curved=False,
    ),
    spec(
        "transpose",
        lambda x, axes: x.transpose() if axes is None else x.transpose(axes),
        torch_transpose,
        transpose_layout(),
        ANY,
        curved=False,
    ),
    spec(
        "swapaxes",
        lg.Tensor.swapaxes,
        lambda x, axis1, axis2: torch.swapaxes(x, axis1, axis2),
        swapaxes_layout(),
        ANY,
        curved=False,
    ),
    spec("mT", lambda x: x.mT, lambda x: x.mT, unary(min_dims=2), ANY, curved=False),
    spec("flatten", lg.Tensor.flatten, torch.flatten, unary(), ANY, curved=False),
    spec(
        "broadcast_to",
        lambda x, shape: x.broadcast_to(shape),
        lambda x, shape: torch.broadcast_to(x, shape),
        broadcast_to_layout(),
        ANY,
        curved=False,
    ),
    spec("sum_to", lg.Tensor.sum_to, torch_sum_to, sum_to_layout(), ANY, curved=False),
    spec("squeeze", lg.Tensor.squeeze, torch_squeeze, squeeze_layout(), ANY, curved=False),
    spec("unsqueeze", lg.Tensor.unsqueeze, lambda x, axis: x.unsqueeze(axis), unsqueeze_layout(), ANY, curved=False),
    spec("getitem", lambda x, index: x[index], torch_index, index_layout(), ANY, curved=False),
    spec(
        "concatenate",
        lambda *xs, axis: F.concatenate(xs, axis=axis),
        lambda *xs, axis: torch.cat(xs, dim=axis),
        concatenate_layout(),
        ANY,
        curved=False,
    ),
    spec(
        "stack",
        lambda *xs, axis: F.stack(xs, axis=axis),
        lambda *xs, axis: torch.stack(xs, dim=axis),
        stack_layout(),
        ANY,
        curved=False,
    ),
    spec("pad", F.pad, torch_pad, pad_layout(), ANY, curved=False),
]


# ---------------------------------------------------------------------------------------------- drawing a case


@dataclass
class Case:
    arrays: list[np.ndarray]
    params: dict
    rng: np.random.Generator  # for the upstream gradients v and w

    def differentiable(self, position: int) -> bool:
        return self.arrays[position].dtype.kind == "f"


@st.composite
def cases(draw, op: OpSpec) -> Case:
    input_shapes, params = draw(op.layout)
    arrays = []
    for i, shape in enumerate(input_shapes):
        domain = op.domain(i)
        arrays.append(draw(hnp.arrays(domain.dtype, shape, elements=domain.elements, unique=domain.unique)))
    return Case(arrays, params, np.random.default_rng(draw(st.integers(0, 2**32 - 1))))


def leaky_inputs(case: Case) -> list[lg.Tensor]:
    return [lg.Tensor(a, requires_grad=a.dtype.kind == "f", dtype=a.dtype) for a in case.arrays]


def torch_inputs(case: Case) -> list[torch.Tensor]:
    return [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in case.arrays]


# ---------------------------------------------------------------------------------------------- derivatives


def derivatives_leakygrad(op: OpSpec, case: Case, v: np.ndarray, ws: list[np.ndarray]):
    """The value, first derivatives (vector-Jacobian product with v) and second derivatives, as arrays."""
    xs = leaky_inputs(case)
    wrt = [x for x in xs if x.requires_grad]
    out = op.leaky(*xs, **case.params)
    upstream = lg.Tensor(v, requires_grad=True, dtype=np.float64)
    grads = lg.grad(out, wrt, grad_outputs=upstream, create_graph=True, allow_unused=True)
    terms = [(g * lg.Tensor(w, dtype=np.float64)).sum() for g, w in zip(grads, ws) if g is not None]
    terms = [t for t in terms if t.requires_grad]
    seconds = lg.grad(sum(terms), wrt + [upstream], allow_unused=True) if terms else [None] * (len(wrt) + 1)
    return out.data, _arrays(grads, wrt), _arrays(seconds, wrt + [upstream])


def derivatives_torch(op: OpSpec, case: Case, v: np.ndarray, ws: list[np.ndarray]):
    xs = torch_inputs(case)
    wrt = [x for x in xs if x.requires_grad]
    out = op.torch(*xs, **case.params)
    upstream = torch.tensor(v, requires_grad=True)
    grads = torch.autograd.grad(out, wrt, grad_outputs=upstream, create_graph=True, allow_unused=True)
    terms = [(g * torch.tensor(w)).sum() for g, w in zip(grads, ws) if g is not None]
    terms = [t for t in terms if t.requires_grad]
    seconds = torch.autograd.grad(sum(terms), wrt + [upstream], allow_unused=True) if terms else [None] * (len(wrt) + 1)
    return out.detach().numpy(), _arrays(grads, wrt), _arrays(seconds, wrt + [upstream])


def _arrays(grads, wrt) -> list[np.ndarray]:
    """Gradients as float64 arrays; None (not connected) is a gradient of zeros."""
    result = []
    for g, x in zip(grads, wrt):
        if g is None:
            result.append(np.zeros(tuple(x.shape)))
        else:
            result.append(np.asarray(g.detach().numpy(force=True) if isinstance(g, torch.Tensor) else g.data))
    return result


def assert_agrees(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape}, PyTorch {expected.shape}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype}, PyTorch {expected.dtype}"
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL_FRACTION * scale, err_msg=what)


# ---------------------------------------------------------------------------------------------- the tests


def test_the_table_covers_every_core_op():
    """A new op in the core op modules must get a row here (or a reason to be tested elsewhere). The layer
    ops of leakygrad.nn are checked in tests/nn."""
    from leakygrad.engine.op import Op
    from leakygrad.engine.ops import activations, elementwise, linalg, reductions
    from leakygrad.engine.ops import shape as shape_ops

    core = [activations, elementwise, linalg, reductions, shape_ops]
    engine_ops = {
        value.name
        for module in core
        for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, Op) and value.__module__ == module.__name__
    }
    tested_elsewhere = {
        "cast": "test_dtypes.py (float32 <-> float64)",
        "scatter_add": "the backward of getitem, differentiated again by the getitem row's second derivatives",
    }
    covered = {s.name.removesuffix("_tanh") for s in SPECS} | {"pow"} | set(tested_elsewhere)
    assert len(engine_ops) > 30
    assert engine_ops <= covered, f"ops without a row in SPECS: {sorted(engine_ops - covered)}"


@pytest.mark.parametrize("op", SPECS, ids=str)
@given(data=st.data())
def test_value_gradient_and_second_derivatives_agree_with_torch(op: OpSpec, data):
    case = data.draw(cases(op))
    expected_value = op.torch(*torch_inputs(case), **case.params).detach().numpy()
    v = case.rng.standard_normal(expected_value.shape)
    ws = [case.rng.standard_normal(a.shape) for a in case.arrays if a.dtype.kind == "f"]

    value, grads, seconds = derivatives_leakygrad(op, case, v, ws)
    t_value, t_grads, t_seconds = derivatives_torch(op, case, v, ws)

    assert_agrees(value, t_value, f"{op.name}: value")
    for i, (g, t_g) in enumerate(zip(grads, t_grads)):
        assert_agrees(g, t_g, f"{op.name}: gradient of input {i}")
    for i, (h, t_h) in enumerate(zip(seconds, t_seconds)):
        what = "the upstream gradient" if i == len(seconds) - 1 else f"input {i}"
        assert_agrees(h, t_h, f"{op.name}: second derivative with respect to {what}")


@pytest.mark.parametrize("op", SPECS, ids=str)
@given(data=st.data())
def test_gradcheck_passes(op: OpSpec, data):
    case = data.draw(cases(op))
    report = lg.gradcheck(lambda *xs: op.leaky(*xs, **case.params), *leaky_inputs(case))
    assert report.passed
    assert len(report.inputs) == sum(case.differentiable(i) for i in range(len(case.arrays)))


@pytest.mark.parametrize("op", [s for s in SPECS if s.curved], ids=str)
@given(data=st.data())
def test_gradgradcheck_passes(op: OpSpec, data):
    case = data.draw(cases(op))
    assert lg.gradgradcheck(lambda *xs: op.leaky(*xs, **case.params), *leaky_inputs(case)).passed


@pytest.mark.parametrize("op", SPECS, ids=str)
@given(data=st.data())
def test_float32_stays_float32(op: OpSpec, data):
    """Value, gradients and second derivatives keep float32, Python numbers in the call included."""
    case = data.draw(cases(op))
    xs = [
        lg.Tensor(a, requires_grad=a.dtype.kind == "f", dtype=np.float32 if a.dtype.kind == "f" else a.dtype)
        for a in case.arrays
    ]
    wrt = [x for x in xs if x.requires_grad]
    out = op.leaky(*xs, **case.params)
    assert out.dtype == np.float32, f"{op.name}: value is {out.dtype}"
    # The walk casts each gradient to its input's dtype; the op's own backward should not need that.
    with lg.no_grad():
        direct = () if out.op is None else out.op.backward(lg.ones(out.shape))  # no op: returned the input
    for i, g in enumerate(direct if isinstance(direct, tuple) else (direct,)):
        assert g is None or np.asarray(g.data).dtype == np.float32, f"{op.name}.backward: input {i} gets {g.dtype}"
    grads = lg.grad(out, wrt, grad_outputs=lg.ones(out.shape), create_graph=True, allow_unused=True)
    for i, g in enumerate(grads):
        assert g is None or g.dtype == np.float32, f"{op.name}: gradient of input {i} is {g.dtype}"
    terms = [(g * g).sum() for g in grads if g is not None and g.requires_grad]
    if terms:
        for i, h in enumerate(lg.grad(sum(terms), wrt, allow_unused=True)):
            assert h is None or h.dtype == np.float32, f"{op.name}: second derivative of input {i} is {h.dtype}"


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "logsumexp"])
def test_reducing_a_zero_dimensional_tensor_over_axis_0_or_minus_1_returns_it_like_pytorch(name):
    for axis in (0, -1):
        ours = lg.Tensor(np.array(2.5), requires_grad=True, dtype="float64")
        theirs = torch.tensor(2.5, dtype=torch.float64, requires_grad=True)
        out = getattr(ours, name)(axis=axis)
        expected = getattr(theirs, name)(dim=axis)
        expected = expected[0] if isinstance(expected, tuple) else expected  # max, min: (values, indices)
        assert out.shape == () and out.item() == expected.item()
        out.backward()
        expected.backward()
        assert ours.grad.item() == theirs.grad.item()


def test_an_empty_list_index_selects_nothing_and_an_empty_logsumexp_is_minus_inf_like_pytorch():
    x = lg.Tensor(np.arange(12.0).reshape(3, 4), requires_grad=True, dtype="float64")
    picked = x[[]]
    assert picked.shape == tuple(torch.zeros(3, 4)[[]].shape) == (0, 4)
    picked.sum().backward()
    assert np.all(x.grad.data == 0)
    for keepdims in (False, True):
        ours = lg.zeros(0, 3).logsumexp(axis=0, keepdims=keepdims)
        theirs = torch.zeros(0, 3).logsumexp(dim=0, keepdim=keepdims)
        assert ours.shape == tuple(theirs.shape) and np.all(ours.data == -np.inf)
