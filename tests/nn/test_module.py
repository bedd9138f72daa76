"""Module bookkeeping: parameters, children, modes, gradients, state dicts, hooks, dtypes; and nn.init."""

import math

import numpy as np
import pytest
import torch

import leakygrad as lg
from leakygrad import nn
from leakygrad.nn import init


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.norm = nn.BatchNorm2d(2)
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.5), nn.Linear(8, 3))
        self.extra = nn.ModuleList([nn.Linear(3, 3), nn.Linear(3, 1)])
        self.scale = nn.Parameter(lg.ones(1))

    def forward(self, x):
        x = self.head(self.norm(self.conv(x)).relu())
        for layer in self.extra:
            x = layer(x)
        return x * self.scale


def test_parameters_are_found_by_name_in_assignment_order_like_pytorch():
    names = [name for name, _ in Net().named_parameters()]
    assert names == [
        "scale",
        "conv.weight",
        "conv.bias",
        "norm.weight",
        "norm.bias",
        "head.2.weight",
        "head.2.bias",
        "extra.0.weight",
        "extra.0.bias",
        "extra.1.weight",
        "extra.1.bias",
    ]
    # Parameters of the module itself come first, then its children's (PyTorch's order as well).
    torch_net = torch.nn.Module()
    torch_net.conv = torch.nn.Conv2d(1, 2, 3)
    torch_net.scale = torch.nn.Parameter(torch.ones(1))
    assert [n for n, _ in torch_net.named_parameters()] == ["scale", "conv.weight", "conv.bias"]


def test_shared_modules_and_parameters_are_listed_once_and_plain_lists_are_not_modules():
    net, twin = nn.Module(), torch.nn.Module()
    net.a = net.b = nn.Linear(2, 2)
    twin.a = twin.b = torch.nn.Linear(2, 2)
    net.hidden_in_a_list = [nn.Linear(2, 2)]  # not registered, in PyTorch either: use ModuleList
    assert len(list(net.parameters())) == 2
    assert [name for name, _ in net.named_modules()] == [name for name, _ in twin.named_modules()] == ["", "a"]
    # The state dict, like PyTorch's, has the shared parameters under both names; loading it back works.
    assert list(net.state_dict()) == list(twin.state_dict()) == ["a.weight", "a.bias", "b.weight", "b.bias"]
    net.load_state_dict({k: v.detach().numpy() for k, v in twin.state_dict().items()})
    np.testing.assert_array_equal(net.a.weight.data, twin.a.weight.detach().numpy())


def test_parameters_follow_every_change_of_structure_after_being_listed():
    """parameters() remembers its list: each way of changing a model must be seen by the next call."""
    net = Net()
    new_layers = nn.Linear(3, 3), nn.Linear(1, 2)  # built first: building a module is a change of its own

    def count():
        listed = list(net.parameters())
        assert [id(p) for p in listed] == [id(p) for _, p in net.named_parameters()]  # same objects, same order
        return len(listed)

    before = count()
    net.head.append(new_layers[0])  # a nested container grows
    assert count() == before + 2
    net.extra[0].weight = nn.Parameter(lg.ones(3, 3))  # a parameter of a nested layer is replaced
    assert any(p is net.extra[0].weight for p in net.parameters())
    net.extra[1].bias = None  # removed by assignment
    assert count() == before + 1
    del net.scale  # removed by deletion
    assert count() == before
    net.extra.append(new_layers[1])
    assert count() == before + 2
    net.norm.register_buffer("counter", nn.Parameter(lg.zeros(1)))  # a Parameter is a parameter wherever it is
    assert count() == before + 3
    assert list(net.extra.parameters(recurse=False)) == [] and list(net.parameters(recurse=False)) == []


def test_state_dict_order_is_pytorchs():
    ours = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Linear(2, 2))
    theirs = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2), torch.nn.Linear(2, 2))
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_children_modules_and_counts():
    net = Net()
    assert [name for name, _ in net.named_children()] == ["conv", "norm", "head", "extra"]
    assert "head.2" in dict(net.named_modules()) and "extra.1" in dict(net.named_modules())
    assert net.num_parameters() == 1 + 2 * 9 + 2 + 2 + 2 + 8 * 3 + 3 + 3 * 3 + 3 + 3 + 1
    assert [name for name, _ in net.named_buffers()] == [
        "norm.running_mean",
        "norm.running_var",
        "norm.num_batches_tracked",
    ]


def test_train_and_eval_reach_every_submodule():
    net = Net()
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())


def test_eval_changes_dropout_and_batch_norm_behaviour():
    lg.manual_seed(0)
    net = Net()
    x = lg.randn(4, 1, 4, 4)
    net.eval()
    a, b = net(x), net(x)
    np.testing.assert_array_equal(a.data, b.data)  # deterministic, running statistics untouched
    assert net.norm.num_batches_tracked.item() == 0
    net.train()
    net(x)
    assert net.norm.num_batches_tracked.item() == 1
    assert not np.allclose(net.norm.running_mean.data, 0)


def test_zero_grad_clears_every_parameter():
    net = Net()
    net(lg.randn(4, 1, 4, 4)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(np.all(p.grad.data == 0) for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_state_dict_round_trip_gives_identical_outputs():
    lg.manual_seed(1)
    a, b = Net(), Net()
    a.train()
    a(lg.randn(4, 1, 4, 4))  # move the running statistics away from their initial values
    state = a.state_dict()
    assert set(state) == {n for n, _ in a.named_parameters()} | {n for n, _ in a.named_buffers()}
    b.load_state_dict(state)
    a.eval(), b.eval()
    x = lg.randn(2, 1, 4, 4)
    np.testing.assert_array_equal(a(x).data, b(x).data)


def test_state_dict_is_a_snapshot_and_loading_keeps_the_parameter_objects():
    net = nn.Linear(2, 2)
    state = net.state_dict()
    weight = net.weight
    net.weight.data += 1
    assert not np.allclose(state["weight"], net.weight.data)
    net.load_state_dict(state)
    assert net.weight is weight  # an optimiser holding it still holds the live parameter
    np.testing.assert_array_equal(net.weight.data, state["weight"])


def test_state_dict_loads_from_pytorch():
    ours, theirs = nn.LSTM(3, 4, num_layers=2), torch.nn.LSTM(3, 4, num_layers=2)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 2, 3)).astype(np.float32)
    np.testing.assert_allclose(ours(lg.Tensor(x))[0].data, theirs(torch.from_numpy(x))[0].detach().numpy(), atol=1e-6)


def test_load_state_dict_mismatches_name_keys_and_shapes_and_change_nothing():
    net = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    before = net.state_dict()
    bad = nn.Sequential(nn.Linear(3, 5), nn.Linear(5, 2)).state_dict()
    del bad["1.bias"]
    bad["2.weight"] = np.zeros((1, 1))
    with pytest.raises(nn.StateDictError) as caught:
        net.load_state_dict(bad)
    message = str(caught.value)
    assert "0.weight: the file has shape (5, 3), the model has (4, 3)" in message
    assert "1.bias: missing" in message and "2.weight: unexpected" in message
    for key, value in net.state_dict().items():
        np.testing.assert_array_equal(value, before[key])
    # strict=False reports missing and unexpected keys instead, but shapes must still fit
    partial = {"0.weight": before["0.weight"] * 2, "x": np.zeros(1)}
    result = net.load_state_dict(partial, strict=False)
    assert result.unexpected_keys == ["x"] and "1.weight" in result.missing_keys
    np.testing.assert_array_equal(net[0].weight.data, before["0.weight"] * 2)


def test_forward_hooks_see_and_may_replace_inputs_and_outputs():
    layer = nn.Linear(2, 2)
    seen = []
    handle = layer.register_forward_hook(lambda module, args, out: seen.append((module, args[0].shape, out.shape)))
    pre = layer.register_forward_pre_hook(lambda module, args: (args[0] * 0,))
    replace = layer.register_forward_hook(lambda module, args, out: out + 100)
    out = layer(lg.ones(5, 2))
    assert seen == [(layer, (5, 2), (5, 2))]
    np.testing.assert_allclose(out.data, np.broadcast_to(layer.bias.data + 100, (5, 2)), rtol=1e-6)
    handle.remove(), pre.remove(), replace.remove()
    layer(lg.ones(1, 2))
    assert len(seen) == 1


def test_a_hook_can_watch_the_gradient_at_a_layer_output():
    net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    grads = {}

    def watch(module, args, out):  # returns None: the output is left as it is
        out.register_hook(lambda g: grads.setdefault("tanh", g.data))

    net[1].register_forward_hook(watch)
    net(lg.randn(2, 3)).sum().backward()
    np.testing.assert_allclose(grads["tanh"], np.broadcast_to(net[2].weight.data, (2, 4)))


def test_forgetting_super_init_is_explained():
    class Broken(nn.Module):
        def __init__(self):
            self.layer = nn.Linear(2, 2)

        def forward(self, x):
            return self.layer(x)

    with pytest.raises(lg.LeakygradError, match=r"Call super\(\).__init__\(\)"):
        Broken()(lg.ones(1, 2))


def test_double_converts_parameters_and_buffers_in_place():
    net = Net()
    weight = net.conv.weight
    net.double()
    assert net.conv.weight is weight
    assert all(p.dtype == np.float64 for p in net.parameters())
    assert net.norm.running_mean.dtype == np.float64 and net.norm.num_batches_tracked.dtype == np.int64
    assert net(lg.randn(2, 1, 4, 4, dtype="float64")).dtype == np.float64


def test_repr_reads_like_pytorch():
    text = repr(nn.Sequential(nn.Linear(2, 3), nn.ReLU()))
    assert text == "Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n  (1): ReLU()\n)"


def test_layer_errors_name_the_layer_and_the_shapes():
    with pytest.raises(lg.OpError, match=r"Linear\(in_features=4.*last dimension is 4, got shape \(2, 3\)"):
        nn.Linear(4, 2)(lg.randn(2, 3))
    with pytest.raises(lg.OpError, match=r"Conv2d\(3, 8.*\(N, 3, H, W\), got \(2, 1, 8, 8\)"):
        nn.Conv2d(3, 8, 3)(lg.randn(2, 1, 8, 8))
    with pytest.raises(lg.OpError, match="does not fit in a 2x2 image"):
        nn.Conv2d(1, 1, 3)(lg.randn(1, 1, 2, 2))
    with pytest.raises(lg.OpError, match="index 7 is out of range for an embedding of 5 rows"):
        nn.Embedding(5, 2)(np.array([1, 7]))
    with pytest.raises(lg.OpError, match=r"BatchNorm2d\(3\).*got \(2, 4, 5, 5\)"):
        nn.BatchNorm2d(3)(lg.randn(2, 4, 5, 5))
    with pytest.raises(
        lg.OpError, match=r"conv2d: bias must hold one value per output channel, shape \(3,\); got \(4,\)"
    ):
        nn.functional.conv2d(lg.randn(1, 2, 4, 4), lg.randn(3, 2, 3, 3), lg.randn(4))


# ------------------------------------------------------------------------------------------- init


@pytest.mark.parametrize("shape", [(4, 3), (8, 2, 3, 3)])
def test_fans_and_gains_follow_pytorch(shape):
    ours = init.fan_in_and_fan_out(lg.zeros(*shape))
    theirs = torch.nn.init._calculate_fan_in_and_fan_out(torch.zeros(shape))
    assert ours == theirs
    for name, param in [
        ("linear", None),
        ("tanh", None),
        ("relu", None),
        ("leaky_relu", None),
        ("leaky_relu", 0.2),
        ("selu", None),
        ("sigmoid", None),
    ]:
        assert init.calculate_gain(name, param) == pytest.approx(torch.nn.init.calculate_gain(name, param))


def _std(fill, shape=(400, 300), **kwargs):
    tensor = lg.zeros(*shape, dtype="float64")
    fill(tensor, **kwargs)
    return tensor.data.std(), tensor.data


def test_initialisers_have_the_documented_scale():
    lg.manual_seed(0)
    fan_in, fan_out = 300, 400
    assert _std(init.xavier_uniform_)[0] == pytest.approx(math.sqrt(2 / (fan_in + fan_out)), rel=0.02)
    assert _std(init.xavier_normal_, gain=2.0)[0] == pytest.approx(2 * math.sqrt(2 / (fan_in + fan_out)), rel=0.02)
    assert _std(init.kaiming_uniform_, nonlinearity="relu")[0] == pytest.approx(math.sqrt(2 / fan_in), rel=0.02)
    assert _std(init.kaiming_normal_, mode="fan_out", nonlinearity="relu")[0] == pytest.approx(
        math.sqrt(2 / fan_out), rel=0.02
    )
    std, values = _std(init.uniform_, a=-2.0, b=2.0)
    assert values.min() >= -2 and values.max() < 2 and std == pytest.approx(4 / math.sqrt(12), rel=0.02)
    assert _std(init.normal_, mean=1.0, std=0.5)[1].mean() == pytest.approx(1.0, abs=0.01)
    assert np.all(_std(init.constant_, val=0.3)[1] == 0.3) and np.all(_std(init.zeros_)[1] == 0)
    assert init.he_normal_ is init.kaiming_normal_ and init.glorot_uniform_ is init.xavier_uniform_


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 2, 3)])
def test_orthogonal_init(shape):
    tensor = lg.zeros(*shape, dtype="float64")
    init.orthogonal_(tensor, gain=2.0)
    flat = tensor.data.reshape(shape[0], -1)
    small = flat.T @ flat if flat.shape[0] >= flat.shape[1] else flat @ flat.T
    np.testing.assert_allclose(small, 4 * np.eye(len(small)), atol=1e-12)


def test_initialisation_is_reproducible_and_keeps_dtype():
    lg.manual_seed(5)
    a = nn.Linear(3, 3).weight.data
    lg.manual_seed(5)
    b = nn.Linear(3, 3).weight.data
    np.testing.assert_array_equal(a, b)
    assert a.dtype == np.float32
    bound = 1 / math.sqrt(3)
    assert np.all(np.abs(a) <= bound)


# ---------------------------------------------------------------------------------------------------- found in review


def test_a_value_that_cannot_be_converted_leaves_the_module_unchanged_and_is_named():
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    before = {k: v.copy() for k, v in model.state_dict().items()}
    state = {k: np.full(v.shape, 7.0) for k, v in before.items()}
    state["1.weight"] = np.array([["x", "y"]])  # the right shape, but not numbers
    with pytest.raises(nn.StateDictError, match=r"1\.weight: cannot be read as an array of float32"):
        model.load_state_dict(state)
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(value, before[key])  # (0.weight and 0.bias had been overwritten)


def test_a_slice_of_a_sequential_keeps_its_modules_names_as_in_pytorch():
    ours = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    theirs = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    assert list(ours[1:].state_dict()) == list(theirs[1:].state_dict()) == ["2.weight", "2.bias"]
    ours[1:].load_state_dict({k: v.detach().numpy() for k, v in theirs[1:].state_dict().items()})
    np.testing.assert_array_equal(ours[2].weight.data, theirs[2].weight.detach().numpy())


def test_removing_a_hook_removes_its_own_registration_once():
    layer = nn.Identity()
    add_one = lambda module, args, out: out + 1  # noqa: E731
    first = layer.register_forward_hook(add_one)
    layer.register_forward_hook(lambda module, args, out: out * 2)
    layer.register_forward_hook(add_one)  # the same function again: (x + 1) * 2 + 1
    first.remove()
    first.remove()  # a second remove does nothing (it removed the third registration)
    assert layer(lg.tensor(1.0)).item() == 3.0  # 1 * 2 + 1 (it gave 4: the last add_one had gone instead)
    x = lg.tensor(1.0, requires_grad=True)
    y = x * 3
    double = lambda g: g * 2  # noqa: E731
    handle = y.register_hook(double)
    y.register_hook(double)
    handle.remove()
    y.backward()
    assert x.grad.item() == 6.0


def test_parameters_submodules_and_buffers_are_replaced_only_by_their_kind():
    conv = nn.Conv2d(1, 2, 3)
    with pytest.raises(TypeError, match="Conv2d.weight is a parameter: assign a Parameter or None, not Tensor"):
        conv.weight = lg.zeros(2, 1, 3, 3)  # (it silently stopped being trained and saved)
    conv.weight = nn.Parameter(lg.zeros(2, 1, 3, 3))
    assert conv.weight in list(conv.parameters())
    net = nn.Sequential(nn.Linear(2, 2))
    holder = nn.Module()
    holder.body = net
    with pytest.raises(TypeError, match="Module.body is a submodule"):
        holder.body = 3
    norm = nn.BatchNorm1d(2)
    with pytest.raises(TypeError, match="BatchNorm1d.running_mean is a buffer: assign a Tensor or None"):
        norm.running_mean = np.zeros(2)
    conv.bias = None  # None is always allowed, as in PyTorch
    assert [name for name, _ in conv.named_parameters()] == ["weight"]


def test_register_buffer_checks_its_tensor_and_name():
    module = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="register_buffer: buffer 'stats' must be a Tensor or None, got ndarray"):
        module.register_buffer("stats", np.ones(3))
    with pytest.raises(nn.module.NameTakenError, match="already has an attribute 'weight'"):
        module.register_buffer("weight", lg.ones(3))  # (it turned the parameter into a buffer)
    with pytest.raises(nn.module.NameTakenError, match="without '.'"):
        module.register_buffer("a.b", lg.ones(3))
    module.register_buffer("stats", lg.ones(3))
    module.register_buffer("stats", lg.zeros(3))  # registering again replaces it
    assert list(module.state_dict()) == ["weight", "bias", "stats"]


def test_deleting_a_buffer_forgets_it():
    module = nn.Module()
    module.register_buffer("a", lg.ones(2))
    module.register_buffer("b", lg.ones(3))
    del module.a
    assert list(module.state_dict()) == ["b"]  # (it raised AttributeError)
    assert [name for name, _ in module.named_buffers()] == ["b"]
    module.double()


def test_a_module_held_twice_is_one_child_but_saved_under_both_names_as_in_pytorch():
    shared = nn.Linear(1, 1, bias=False)
    shared.weight.data[:] = 1.0
    holder = nn.Module()
    holder.a, holder.b = shared, shared
    assert list(holder.children()) == [shared]
    holder.apply(lambda m: m.weight.data.__imul__(0.5) if isinstance(m, nn.Linear) else None)
    assert shared.weight.item() == 0.5  # (halved twice: 0.25)
    assert list(holder.state_dict()) == ["a.weight", "b.weight"]
    sequence = nn.Sequential(shared, shared)
    assert len(list(sequence.children())) == 1 and len(sequence) == 2
    assert "(1): Linear" in repr(sequence)  # printed in both places, as PyTorch prints it
    twice = torch.nn.Linear(1, 1, bias=False)
    assert list(sequence.state_dict()) == list(torch.nn.Sequential(twice, twice).state_dict())


def test_an_attribute_that_becomes_a_module_is_listed_in_pytorchs_order():
    class Late(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = None
            self.body = nn.Linear(2, 2)
            self.head = nn.Linear(2, 1)

    assert list(Late().state_dict()) == ["body.weight", "body.bias", "head.weight", "head.bias"]


def test_small_checks_found_in_review():
    with pytest.raises(lg.OpError, match=r"embedding: the weight must be a table of shape \(rows, features\)"):
        nn.functional.embedding(np.array([0, 2]), lg.Tensor(np.arange(3.0)))
    with pytest.raises(lg.OpError, match="flatten"):
        nn.Flatten()(lg.tensor(1.0))  # start_dim 1 of a single number (it gave shape (1,)); PyTorch refuses too
    assert lg.tensor(1.0).flatten().shape == (1,)
    for name in ("conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
        assert init.calculate_gain(name) == torch.nn.init.calculate_gain(name) == 1


def test_a_parameter_or_submodule_set_to_none_and_back_keeps_its_place():
    layer = nn.Linear(2, 2)
    weight = layer.weight
    layer.weight = None
    layer.weight = weight
    assert list(layer.state_dict()) == ["weight", "bias"]  # (it moved to the end)
    holder = nn.Module()
    holder.a, holder.b = nn.Linear(1, 1), nn.Linear(1, 1)
    first = holder.a
    holder.a = None
    holder.a = first
    assert [name for name, _ in holder.named_children()] == ["a", "b"]


def test_appending_to_a_slice_takes_a_free_name():
    part = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2))[1:]  # names "1", "2"
    part.append(nn.Linear(2, 2))
    assert len(part.state_dict()) == 6  # (a second "2" hid one layer from the state dict)
    with pytest.raises(ValueError, match="the name '1' is taken"):
        part.append(nn.Linear(2, 2), name="1")


def test_a_container_that_lists_its_own_children_is_saved_and_printed():
    class Bag(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = [nn.Linear(1, 1), nn.Linear(1, 1)]  # kept in a plain list, listed below

        def named_children(self):
            yield from ((str(i), layer) for i, layer in enumerate(self.layers))

    bag = Bag()
    assert list(bag.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]  # (it was empty)
    assert "(1): Linear" in repr(bag)
