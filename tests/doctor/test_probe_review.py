"""PyTorch features a practitioner uses, under the doctor: the training is unchanged, the doctor notes no internal
error, and a healthy run gets no finding it does not deserve. Each test failed before the probe handled its case."""

import struct

import pytest
import torch
from torch import nn

import leakygrad.doctor as doctor


def train(make, step, steps, every):
    """(losses, final parameters, doctor or None): `make()` -> (model, optimiser); `step(model)` -> the loss."""
    runs = []
    for watched in (False, True):
        torch.manual_seed(0)
        model, optimizer = make()
        dr = doctor.watch(model, optimizer, every=every) if watched else None
        losses = []
        with dr if watched else torch.enable_grad():
            for _ in range(steps):
                optimizer.zero_grad()
                loss = step(model)
                loss.backward()
                optimizer.step()
                losses.append(struct.pack("d", loss.item()))  # (bit for bit, NaN included)
        runs.append((losses, [p.detach().clone() for p in model.parameters()], dr))
    (plain_losses, plain_params, _), (losses, params, dr) = runs
    assert losses == plain_losses and all(torch.equal(a, b) for a, b in zip(plain_params, params))
    return dr


def errors(dr):
    return [(f.symptom, f.where) for f in dr.findings if f.severity == "error"]


class GraphConvolution(nn.Module):
    def __init__(self, inputs, outputs):
        super().__init__()
        self.linear = nn.Linear(inputs, outputs)

    def forward(self, x, adjacency):
        return torch.sparse.mm(adjacency, self.linear(x))


class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2, self.head = GraphConvolution(8, 16), GraphConvolution(16, 16), nn.Linear(16, 1)

    def forward(self, x, adjacency):
        return self.head(torch.relu(self.conv2(torch.relu(self.conv1(x, adjacency)), adjacency)))


@pytest.mark.filterwarnings("ignore::UserWarning")  # (PyTorch: sparse CSR tensors are in beta)
@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("every", [1, 16])
def test_a_sparse_adjacency_matrix_given_to_each_layer_is_no_internal_error(layout, every):
    # The second layer's input was looked up among the earlier outputs' memory (is it a cut?): a sparse matrix has
    # no one block of memory, and every sampled step noted "forward pre-hook: NotImplementedError".
    generator = torch.Generator().manual_seed(1)
    nodes = 20
    x, y = torch.randn(nodes, 8, generator=generator), torch.randn(nodes, 1, generator=generator)
    adjacency = (torch.rand(nodes, nodes, generator=generator) < 0.2).float() + torch.eye(nodes)
    adjacency = adjacency / adjacency.sum(1, keepdim=True)
    adjacency = adjacency.to_sparse() if layout == "coo" else adjacency.to_sparse_csr()

    def make():
        model = GCN()
        return model, torch.optim.Adam(model.parameters(), 1e-2)

    dr = train(make, lambda model: nn.functional.mse_loss(model(x, adjacency), y), steps=20, every=every)
    assert dr.notes == [] and errors(dr) == []


class SparseOutput(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(16, 16)

    def forward(self, x):
        return torch.relu(self.linear(x)).to_sparse()


class NestedOutput(nn.Module):
    def __init__(self, layout):
        super().__init__()
        self.linear, self.layout = nn.Linear(16, 16), layout

    def forward(self, x):  # two sequences of different lengths, as one nested tensor
        return self.linear(torch.nested.as_nested_tensor([x[:10], x[10:]], layout=self.layout))


class Unpack(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner, self.head = inner, nn.Linear(16, 1)

    def forward(self, x):
        h = self.inner(x)
        if h.is_nested:  # a ReLU applied to the nested tensor itself, then its sequences joined
            h = torch.cat(list(torch.relu(h).unbind()))
        else:
            h = h.to_dense()
        return self.head(h)


@pytest.mark.filterwarnings("ignore::UserWarning")  # (PyTorch: nested and sparse tensors are in beta)
@pytest.mark.parametrize("inner", ["sparse", "nested", "jagged"])
def test_a_module_returning_a_sparse_or_nested_tensor_is_no_internal_error(inner):
    # Its output's memory, its gradient's norm, its ReLU's statistics: each raised on a sparse or nested tensor
    # ("forward hook: ... Cannot access storage", "output gradient hook: ... NestedTensorCPU", "before backward").
    x, y = torch.randn(32, 16, generator=torch.Generator().manual_seed(2)), torch.randn(32, 1)

    def make():
        module = SparseOutput() if inner == "sparse" else NestedOutput(torch.jagged if inner == "jagged" else None)
        model = Unpack(module)
        return model, torch.optim.SGD(model.parameters(), lr=0.01)

    dr = train(make, lambda model: nn.functional.mse_loss(model(x), y), steps=8, every=1)
    assert dr.notes == [] and errors(dr) == []


def test_a_compiled_models_relu_is_not_taken_for_the_hinge_of_a_margin_loss():
    # Inside compiled code the hooks name no layer's output, so the whole graph passed for the loss's: the model's
    # ReLU was "a relu on the loss" blocking half the gradient, a warning on a healthy run.
    x, y = torch.randn(64, 8, generator=torch.Generator().manual_seed(3)), torch.randn(64, 1)

    def make():
        model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
        model.compile(backend="eager")
        return model, torch.optim.Adam(model.parameters(), 1e-2)

    dr = train(make, lambda model: nn.functional.mse_loss(model(x), y), steps=12, every=1)
    assert dr.notes == [] and dr.findings == []
    assert "relu after input" in dr.history.records[-1].activations  # measured as a function call instead


@pytest.mark.parametrize("threshold", [0.0, 0.1])
def test_nn_threshold_acts_as_a_relu_and_is_no_blocked_gradient(threshold):
    # nn.Threshold(0, 0) is a ReLU: half its inputs below the knee is the usual sparsity, not a leak.
    x, y = torch.randn(32, 16, generator=torch.Generator().manual_seed(4)), torch.randn(32, 1)

    def make(knee=threshold):
        model = nn.Sequential(nn.Linear(16, 32), nn.Threshold(knee, 0.0), nn.Linear(32, 32), nn.Threshold(knee, 0.0))
        model.append(nn.Linear(32, 1))
        return model, torch.optim.SGD(model.parameters(), lr=0.01)

    dr = train(make, lambda model: nn.functional.mse_loss(model(x), y), steps=40, every=1)
    assert dr.notes == [] and dr.findings == []


def test_a_threshold_that_blocks_everything_is_still_an_error():
    x, y = torch.randn(32, 16, generator=torch.Generator().manual_seed(5)), torch.randn(32, 1)

    def make():
        model = nn.Sequential(nn.Linear(16, 32), nn.Threshold(100.0, 0.0), nn.Linear(32, 1))
        return model, torch.optim.SGD(model.parameters(), lr=0.01)

    dr = train(make, lambda model: nn.functional.mse_loss(model(x), y), steps=40, every=1)
    assert ("blocked_gradient", "threshold") in errors(dr)
