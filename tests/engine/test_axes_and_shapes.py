"""Axes and shapes of reductions and shape ops at the edges: 0-d tensors, axes that are not whole numbers."""

import numpy as np
import pytest
import torch

import leakygrad as lg


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_of_a_zero_dimensional_tensor_takes_axis_0_or_minus_1_like_pytorch(name):
    # (the reductions take axis 0 or -1 on a 0-d tensor; argmax refused them as out of range)
    for axis in (0, -1):
        ours = getattr(lg.tensor(2.5), name)(axis=axis)
        theirs = getattr(torch.tensor(2.5), name)(dim=axis)
        assert ours.shape == tuple(theirs.shape) == () and ours.item() == theirs.item() == 0
    with pytest.raises(lg.LeakygradError, match=rf"{name}: axis 1 is out of range for a tensor of shape \(\) "):
        getattr(lg.tensor(2.5), name)(axis=1)


def test_flattening_a_single_number_over_a_bad_axis_names_its_shape_not_another():
    # (the error said "out of range for a tensor of shape (1,)")
    assert lg.tensor(2.5).flatten(0, -1).shape == tuple(torch.tensor(2.5).flatten(0, -1).shape) == (1,)
    with pytest.raises(lg.LeakygradError, match=r"flatten: axis 1 is out of range for a tensor of shape \(\) "):
        lg.tensor(2.5).flatten(1)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_])
def test_logsumexp_of_an_empty_integer_tensor_is_a_float_minus_inf_like_pytorch(dtype):
    # (it was -inf cast to the integer dtype: -9223372036854775808 for int64, True for bool)
    for axis in (None, 0):
        ours = lg.Tensor(np.zeros((0, 3), dtype=dtype)).logsumexp(axis=axis)
        theirs = torch.zeros((0, 3), dtype=torch.int64).logsumexp(dim=(0, 1) if axis is None else axis)
        assert ours.dtype.kind == "f" and ours.shape == tuple(theirs.shape)
        assert np.all(ours.data == -np.inf) and torch.all(theirs == -torch.inf)
    # the same dtype as for a tensor that is not empty
    assert lg.zeros(0, 3).astype(np.int64).logsumexp().dtype == lg.ones(2, 3).astype(np.int64).logsumexp().dtype


@pytest.mark.parametrize("name", ["sum", "mean", "var", "max", "min", "logsumexp"])
@pytest.mark.parametrize("axis", [1.0, (0, 1.5), "rows"])
def test_a_reduction_over_an_axis_that_is_not_a_whole_number_says_so(name, axis):
    # (the errors were "'float' object is not iterable" and "'<=' not supported between 'int' and 'str'")
    x = lg.randn(2, 3)
    with pytest.raises(lg.LeakygradError, match=f"{name}: an axis must be a whole number, got"):
        getattr(x, name)(axis=axis)


def test_a_reduction_takes_a_zero_dimensional_integer_tensor_as_its_axis_like_pytorch():
    # (it failed with "len() of a 0-d tensor")
    values = np.arange(6.0).reshape(2, 3)
    ours = lg.Tensor(values, dtype="float64").sum(axis=lg.tensor(1))
    theirs = torch.tensor(values).sum(dim=torch.tensor(1))
    np.testing.assert_array_equal(ours.data, theirs.numpy())


def test_expand_with_minus_1_for_a_new_leading_axis_names_expand_and_the_axis():
    # (the error blamed broadcast_to, which the user never called, and a shape with -1 in it)
    x = lg.randn(2, 3)
    with pytest.raises(RuntimeError, match="leading, non-existing dimension"):
        torch.randn(2, 3).expand(-1, 2, 3)
    with pytest.raises(lg.LeakygradError, match=r"expand: size -1 .* new leading axis 0 .* \(2, 3\)"):
        x.expand(-1, 2, 3)
