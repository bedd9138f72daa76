"""A review of the engine against PyTorch, on what the other files leave out.

- Python numbers mixed with integer tensors take the tensor's dtype (as in NumPy and PyTorch).
- inf and empty slices in softmax, log_softmax, mean and var give PyTorch's nan, with no NumPy warning.
- Ties drawn on purpose (test_ops.py keeps its inputs away from them): `maximum`/`minimum` with broadcasting,
  `max`/`min` over several axes, `clip` with tensor bounds; and `a ** b` on a grid holding 0, 1 and negatives.
- In-place changes: what is refused, and the one trap left (no version counters).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import leakygrad as lg
from leakygrad import functional as F

inf, nan = np.inf, np.nan


def _leaf(values) -> lg.Tensor:
    return lg.Tensor(np.asarray(values, dtype=np.float64), requires_grad=True, dtype=np.float64)


def _agree(leaky_fn, torch_fn, arrays, upstream=None):
    """The value and every input's gradient for the same upstream gradient, in leakygrad and in PyTorch, equal
    (NaN where PyTorch has NaN); no NumPy warning on the way."""
    xs = [_leaf(a) for a in arrays]
    ts = [torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = leaky_fn(*xs)
        expected = torch_fn(*ts)
        v = np.arange(1.0, expected.numel() + 1).reshape(tuple(expected.shape)) if upstream is None else upstream
        out.backward(lg.Tensor(np.asarray(v, dtype=np.float64), dtype=np.float64))
    expected.backward(torch.tensor(np.asarray(v, dtype=np.float64)))
    assert out.shape == tuple(expected.shape)
    np.testing.assert_allclose(out.data, expected.detach().numpy(), rtol=1e-12, atol=1e-14)
    for i, (x, t) in enumerate(zip(xs, ts)):
        np.testing.assert_allclose(x.grad.data, t.grad.numpy(), rtol=1e-12, atol=1e-14, err_msg=f"input {i}")


# ------------------------------------------------------------------------------------ numbers and dtypes


@pytest.mark.parametrize(
    ("dtype", "call", "expected"),
    [
        (np.int32, lambda i: i + 1, [2, 3]),
        (np.int32, lambda i: 2 * i, [2, 4]),
        (np.int16, lambda i: i - 1, [0, 1]),
        (np.int32, lambda i: 2**i, [2, 4]),
        (np.uint8, lambda i: i - 1, [0, 1]),
        (np.int8, lambda i: i * 3, [3, 6]),
    ],
)
def test_a_python_integer_keeps_an_integer_tensors_dtype_as_numpy_and_pytorch_do(dtype, call, expected):
    i = lg.Tensor(np.array([1, 2], dtype=dtype))
    result = call(i)
    assert result.dtype == dtype  # (was int64: the number was made an int64 array before NumPy saw it)
    np.testing.assert_array_equal(result.data, expected)
    theirs = call(torch.tensor(np.array([1, 2], dtype=dtype)))
    assert str(theirs.dtype) == f"torch.{np.dtype(dtype).name}"


def test_a_python_integer_wraps_in_a_small_unsigned_tensor_as_numpy_and_pytorch_do():
    assert (lg.Tensor(np.array([0], dtype=np.uint8)) - 1).data.tolist() == [255]
    assert (torch.tensor([0], dtype=torch.uint8) - 1).tolist() == [255]


def test_an_integer_too_large_for_any_tensor_is_refused_not_held_as_a_python_object():
    # (was a tensor of dtype object, which every op after it would have mishandled)
    with pytest.raises(lg.OpError, match=r"integer 1180591620717411303424 is too large"):
        lg.Tensor([1, 2]) + 2**70
    # one that fits int64 but not the tensor's own dtype takes int64 (NumPy refuses it; PyTorch wraps it)
    assert (lg.Tensor(np.array([1], dtype=np.int8)) + 300).data.tolist() == [301]


def test_float_tensors_keep_their_dtype_with_python_numbers_and_integer_tensors_do_not_get_gradients():
    x = lg.tensor([1.5, 2.5], requires_grad=True)
    assert (x + 1).dtype == np.float32 and (x * True).dtype == np.float32
    ints = lg.Tensor([3, 4])
    y = (x * ints).sum()  # int64 with float32 is float64, as in NumPy (PyTorch: float32); x's gradient stays float32
    y.backward()
    assert x.grad.dtype == np.float32 and ints.grad is None
    np.testing.assert_array_equal(x.grad.data, [3.0, 4.0])
    with pytest.raises(lg.OpError, match="only floating-point tensors can require gradients"):
        ints.requires_grad = True


# ------------------------------------------------------------------------------------ inf, nan, empty


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_of_slices_with_inf_is_nan_like_pytorch_without_a_warning(name, axis):
    # a slice of only -inf, and a slice holding +inf, are nan (inf - inf); a single -inf is a masked entry
    values = np.array([[-inf, -inf, 0.5], [inf, 1.0, -inf], [0.2, -inf, 1.5]])
    _agree(lambda x: getattr(x, name)(axis), lambda t: getattr(torch, name)(t, dim=axis), [values], np.ones((3, 3)))


@pytest.mark.parametrize(("shape", "axis"), [((2, 0), 1), ((0, 3), 0), ((0,), None), ((2, 0, 3), (0, 1))])
@pytest.mark.parametrize("keepdims", [False, True])
def test_mean_over_an_empty_axis_is_nan_like_pytorch_without_a_warning(shape, axis, keepdims):
    x = _leaf(np.zeros(shape))
    t = torch.zeros(shape, dtype=torch.float64, requires_grad=True)
    dims = tuple(range(len(shape))) if axis is None else axis
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (was "RuntimeWarning: Mean of empty slice")
        out = x.mean(axis=axis, keepdims=keepdims)
        out.sum().backward()
    expected = t.mean(dim=dims, keepdim=keepdims)
    expected.sum().backward()
    np.testing.assert_array_equal(out.data, expected.detach().numpy())
    assert x.grad.shape == shape


def test_mean_of_an_empty_integer_tensor_is_a_float_nan():
    out = lg.Tensor(np.zeros((0, 2), dtype=np.int64)).mean(axis=0)
    assert out.dtype == np.float64 and np.isnan(out.data).all()


def test_var_of_a_slice_holding_inf_is_nan_without_a_warning_like_pytorch():
    _agree(lambda x: x.var(axis=1, ddof=1), lambda t: t.var(dim=1, correction=1), [[[inf, 1.0, 2.0], [1.0, 2.0, 4.0]]])


def test_division_by_zero_and_log_of_zero_give_infinities_without_warnings():
    _agree(lambda a, b: a / b, lambda a, b: a / b, [[1.0, 0.0, -1.0], [0.0, 0.0, 0.0]])
    _agree(lambda x: x.log(), torch.log, [[0.0, 1.0]])
    _agree(lambda x: x**-1.0, lambda t: t**-1.0, [[0.0, 2.0]])


# ------------------------------------------------------------------------------------ ties, drawn on purpose

SMALL = st.integers(-2, 2).map(float)  # few values: ties are common


@st.composite
def broadcasting_arrays(draw, count: int, full_first: bool = False):
    drawn = draw(hnp.mutually_broadcastable_shapes(num_shapes=count, min_dims=0, max_dims=3, max_side=3))
    shapes = list(drawn.input_shapes)
    if full_first:  # (PyTorch's clamp backward fails when a bound is bigger than the input)
        shapes[0] = drawn.result_shape
    return [draw(hnp.arrays(np.float64, shape, elements=SMALL)) for shape in shapes]


@settings(max_examples=60, deadline=None)
@given(broadcasting_arrays(2))
def test_maximum_and_minimum_split_ties_half_half_and_sum_them_back_to_each_shape(arrays):
    _agree(F.maximum, torch.maximum, arrays)
    _agree(F.minimum, torch.minimum, arrays)


@st.composite
def array_and_axes(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=3))
    axes = draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=1, max_size=len(shape)))
    axes = tuple(dict.fromkeys(a % len(shape) for a in axes))  # distinct axes, in the drawn order
    return draw(hnp.arrays(np.float64, shape, elements=SMALL)), axes, draw(st.booleans())


@settings(max_examples=60, deadline=None)
@given(array_and_axes())
def test_max_and_min_over_several_axes_share_ties_like_amax_and_amin(case):
    values, axes, keepdims = case
    _agree(lambda x: x.max(axis=axes, keepdims=keepdims), lambda t: t.amax(axes, keepdim=keepdims), [values])
    _agree(lambda x: x.min(axis=axes, keepdims=keepdims), lambda t: t.amin(axes, keepdim=keepdims), [values])


@settings(max_examples=60, deadline=None)
@given(broadcasting_arrays(3, full_first=True))
def test_clip_with_tensor_bounds_on_ties_and_broadcasting_like_torch_clamp(arrays):
    x, low, high = np.broadcast_arrays(*arrays)
    # documented difference (elementwise.clip_to_tensors): low == high with x below them gives low the gradient
    if np.any((low == high) & (x < low)):
        return
    _agree(lambda a, lo, hi: a.clip(lo, hi), torch.clamp, arrays)


@settings(max_examples=60, deadline=None)
@given(broadcasting_arrays(2))
def test_pow_of_two_tensors_with_zeros_ones_and_negative_bases_like_torch(arrays):
    with np.errstate(all="ignore"):  # (the test's own 0 ** -1 below; the engine raises no warning)
        base, exponent = np.broadcast_arrays(*arrays)
        if np.any((base == 0) & (exponent < 0)):  # 0 ** negative: inf and nan, checked in test_kinks.py
            return
    _agree(lambda a, b: a**b, lambda a, b: a**b, arrays)


# ------------------------------------------------------------------------------------ in place


def test_assigning_to_elements_is_refused_and_says_what_to_do_instead():
    x = _leaf([1.0, 2.0])
    with pytest.raises(lg.OpError, match=r"does not support assignment to elements.*F\.where"):
        x[0] = 5.0
    np.testing.assert_array_equal(x.data, [1.0, 2.0])


def test_an_in_place_operator_while_recording_rebinds_and_keeps_the_old_graph_right():
    x = _leaf([1.0, 2.0])
    c = lg.Tensor([3.0, 4.0], dtype=np.float64)
    y = x * c
    c += 1  # recording: c is a new tensor; the product still holds the old one
    h = y.exp()
    h *= 2  # recording: a new tensor again, differentiated as written
    h.sum().backward()
    xt = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    ((xt * torch.tensor([3.0, 4.0], dtype=torch.float64)).exp() * 2).sum().backward()
    np.testing.assert_allclose(x.grad.data, xt.grad.numpy(), rtol=1e-12)
    np.testing.assert_array_equal(c.data, [4.0, 5.0])


def test_changing_a_tensor_in_place_between_forward_and_backward_is_caught():
    """Its backward would read values the forward never used: a wrong gradient, silently. PyTorch raises "modified by
    an inplace operation"; so does leakygrad, naming the op and what was changed."""
    x = _leaf([1.0, 2.0])
    y = x.exp()
    with lg.no_grad():
        y *= 2  # exp's backward reads its output, now doubled
    with pytest.raises(lg.LeakygradError, match=r"the output of `exp` .* was changed in place .*after `exp` used it"):
        y.sum().backward()
    assert x.grad is None

    w, c = _leaf([[1.0, 2.0], [3.0, 4.0]]), lg.Tensor([[1.0], [1.0]], dtype="float64")
    out = (w @ c).sum()
    with lg.no_grad():
        w -= 0.1  # a parameter stepped before the backward of the loss that used it
    with pytest.raises(lg.LeakygradError, match=r"input 0 of `matmul`"):
        out.backward()


def test_a_change_through_a_detached_alias_or_a_view_of_the_same_memory_is_caught_too():
    x = _leaf([1.0, 2.0, 3.0, 4.0])
    y = x.exp()
    alias = y.detach()  # the same memory, cut from the graph
    with lg.no_grad():
        alias *= 0
    with pytest.raises(lg.LeakygradError, match=r"the output of `exp`"):
        y.sum().backward()
    w = _leaf([[1.0, 2.0], [3.0, 4.0]])
    out = (w * w).sum()
    view = lg.Tensor._wrap(w.data.reshape(4))  # a view of w's memory
    with lg.no_grad():
        view += 1
    with pytest.raises(lg.LeakygradError, match=r"input 0 of `mul`"):
        out.backward()


def test_changes_in_place_outside_a_forward_and_its_backward_are_fine():
    """The training loop's own update, after backward and before the next forward, is what no_grad() is for."""
    w = _leaf([0.5, -0.5])
    for _ in range(3):
        loss = (w * w).sum()
        loss.backward()
        with lg.no_grad():
            w -= 0.1 * w.grad
        w.grad = None
    np.testing.assert_allclose(w.data, [0.5 * 0.8**3, -0.5 * 0.8**3])
    z = w.exp()
    with lg.no_grad():
        unrelated = lg.Tensor([1.0])
        unrelated += 1  # changes nothing the graph holds
    z.sum().backward()
    np.testing.assert_allclose(w.grad.data, np.exp(w.data))


@pytest.mark.parametrize(
    "how, axis", [(2, 0), (3, 1), ([1, 4, 0, 2], 1), ([3, 2], -3), ("chunk 3", 0), ("chunk 4", 1), ("chunk 9", 1)]
)
def test_split_and_chunk_match_pytorch_with_their_gradients(how, axis):
    rng = np.random.default_rng(0)
    values = rng.standard_normal((5, 7, 2))
    x, xt = _leaf(values), torch.tensor(values, requires_grad=True)
    if isinstance(how, str):
        n = int(how.split()[1])
        ours, theirs = x.chunk(n, axis), torch.chunk(xt, n, axis)
    else:
        ours, theirs = x.split(how, axis), torch.split(xt, how, axis)
    assert [p.shape for p in ours] == [tuple(p.shape) for p in theirs]
    weights = [rng.standard_normal(p.shape) for p in ours]
    sum((p * lg.Tensor(w, dtype="float64")).sum() for p, w in zip(ours, weights)).backward()
    sum((p * torch.from_numpy(w)).sum() for p, w in zip(theirs, weights)).backward()
    for p, q in zip(ours, theirs):
        np.testing.assert_array_equal(p.data, q.detach().numpy())
    np.testing.assert_allclose(x.grad.data, xt.grad.numpy(), rtol=1e-12)


def test_split_and_chunk_refuse_what_cannot_be_cut():
    x = lg.Tensor(np.zeros((4, 3)))
    with pytest.raises(lg.LeakygradError, match=r"split: sizes \[1, 2\] must be non-negative and add up to 4"):
        x.split([1, 2])
    with pytest.raises(lg.LeakygradError, match="split: the size of each piece must be at least 1, got 0"):
        x.split(0)
    with pytest.raises(lg.LeakygradError, match=r"split: axis 2 is out of range for a tensor of shape \(4, 3\)"):
        x.split(1, 2)
    with pytest.raises(lg.LeakygradError, match="chunk: the number of chunks must be a whole number of at least 1"):
        x.chunk(0)
