"""`inplace=` on the functional activations (`F.relu(x, inplace=True)` and friends), as PyTorch takes it.

leakygrad computes out of place either way (see `leakygrad.engine.functional`): the values and gradients must be
PyTorch's for both settings, the input must be left unchanged, and the result must be a new tensor.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import leakygrad as lg
from leakygrad.nn import functional as F

tF = torch.nn.functional

# Values away from every kink (0, -1, 1, and hardtanh's -0.5 and 2.0), with NaN-free tails on both sides.
VALUES = np.array([[-3.0, -1.5, -0.7, -0.2, 0.3], [0.8, 1.2, 1.7, 2.5, 4.0]])

# (name, leakygrad call, torch call), each taking (x, inplace) with any other setting by position, as PyTorch
ACTIVATIONS = [
    ("relu", lambda x, inplace: F.relu(x, inplace), lambda x, inplace: tF.relu(x, inplace)),
    ("leaky_relu", lambda x, inplace: F.leaky_relu(x, 0.2, inplace), lambda x, inplace: tF.leaky_relu(x, 0.2, inplace)),
    ("elu", lambda x, inplace: F.elu(x, 0.5, inplace), lambda x, inplace: tF.elu(x, 0.5, inplace)),
    ("silu", lambda x, inplace: F.silu(x, inplace), lambda x, inplace: tF.silu(x, inplace)),
    (
        "hardtanh",
        lambda x, inplace: F.hardtanh(x, -0.5, 2.0, inplace),
        lambda x, inplace: tF.hardtanh(x, -0.5, 2.0, inplace),
    ),
]


def _torch(call, inplace: bool):
    """The value and the gradient in PyTorch. An in-place activation may not overwrite a leaf, so it acts on a
    copy (x * 1), as ported code would (on the output of a layer)."""
    leaf = torch.tensor(VALUES, requires_grad=True)
    out = call(leaf * 1, inplace)
    weights = torch.linspace(-1.0, 2.0, out.numel(), dtype=torch.float64).reshape(out.shape)
    (out * weights).sum().backward()
    return out.detach().numpy(), leaf.grad.numpy()


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize(("name", "leaky", "theirs"), ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_inplace_gives_pytorchs_values_and_gradients_and_leaves_the_input_unchanged(name, leaky, theirs, inplace):
    leaf = lg.Tensor(VALUES, requires_grad=True, dtype=np.float64)
    x = leaf * 1  # an intermediate, as the input of an activation usually is
    out = leaky(x, inplace)
    weights = np.linspace(-1.0, 2.0, out.size).reshape(out.shape)
    (out * lg.Tensor(weights, dtype=np.float64)).sum().backward()

    value, gradient = _torch(theirs, inplace)
    np.testing.assert_allclose(out.data, value, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(leaf.grad.data, gradient, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(x.data, VALUES)  # computed out of place: the input is as it was
    assert out is not x and not np.shares_memory(out.data, x.data)


@pytest.mark.parametrize(("name", "leaky", "theirs"), ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_inplace_by_keyword_on_a_leaf_that_requires_grad_works_and_leaves_it_unchanged(name, leaky, theirs):
    # (PyTorch refuses this: a leaf that requires grad cannot be overwritten. Out of place, nothing is overwritten.)
    x = lg.Tensor(VALUES, requires_grad=True, dtype=np.float64)
    by_position = leaky(x, True)
    by_name = getattr(F, name)(x, inplace=True) if name in ("relu", "silu") else by_position
    by_position.sum().backward()
    np.testing.assert_array_equal(by_name.data, by_position.data)
    np.testing.assert_array_equal(x.data, VALUES)
    assert x.grad is not None and x.grad.shape == x.shape


def test_inplace_functions_are_the_engines_and_the_modules_agree():
    # nn.functional takes the activations from the engine, so lg.functional has the same signatures
    assert F.relu is lg.functional.relu
    x = lg.Tensor(VALUES, dtype=np.float64)
    np.testing.assert_array_equal(lg.nn.ReLU(inplace=True)(x).data, F.relu(x, inplace=True).data)
    np.testing.assert_array_equal(lg.nn.Hardtanh(-0.5, 2.0, True)(x).data, F.hardtanh(x, -0.5, 2.0, True).data)
    np.testing.assert_array_equal(x.data, VALUES)


def test_inplace_inside_no_grad_also_leaves_the_input_unchanged():
    x = lg.Tensor(VALUES, dtype=np.float64)
    with lg.no_grad():
        out = F.relu(x, inplace=True)
    np.testing.assert_array_equal(out.data, np.maximum(VALUES, 0))
    np.testing.assert_array_equal(x.data, VALUES)
