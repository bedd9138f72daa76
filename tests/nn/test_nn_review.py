"""Review of the module system and the layers against PyTorch: the bugs found (each test names what was wrong),
then the containers' list and dict operations, then layer settings the other files do not cover, compared in
float64 (outputs and every gradient) with the Twin of conftest.py."""

from collections import OrderedDict

import numpy as np
import pytest
import torch

import leakygrad as lg
from leakygrad import nn

# ------------------------------------------------------------------------------------------- bugs found


def test_repr_of_a_module_with_settings_and_children_is_laid_out_as_pytorchs():
    # It printed "CausalSelfAttention(embed_dim=8, num_heads=2, dropout=0.0" and then the children, the
    # settings glued to the name and never closed on their line; a multi-line extra_repr was not indented.
    class Ours(nn.Module):
        def __init__(self, extra):
            super().__init__()
            self.fc, self.extra = nn.Linear(1, 1), extra

        def extra_repr(self):
            return self.extra

    class Theirs(torch.nn.Module):
        def __init__(self, extra):
            super().__init__()
            self.fc, self.extra = torch.nn.Linear(1, 1), extra

        def extra_repr(self):
            return self.extra

    class Alone(nn.Module):
        def extra_repr(self):
            return "x=1\ny=2"

    class TheirsAlone(torch.nn.Module):
        def extra_repr(self):
            return "x=1\ny=2"

    for extra in ("x=1", "x=1\ny=2", ""):
        assert repr(Ours(extra)).replace("Ours", "A") == repr(Theirs(extra)).replace("Theirs", "A")
    assert repr(Alone()) == repr(TheirsAlone()).replace("TheirsAlone", "Alone")
    assert repr(nn.CausalSelfAttention(8, 2)).startswith(
        "CausalSelfAttention(\n  embed_dim=8, num_heads=2, dropout=0.0\n  (qkv): Linear("
    )
    assert repr(nn.Sequential()) == "Sequential()"


@pytest.mark.parametrize("kind", ["MaxPool2d", "AvgPool2d"])
def test_pooling_stride_defaults_to_the_kernel_size_in_the_attribute_and_repr_as_pytorch(kind):
    # `.stride` was None (and printed stride=None) when not given; PyTorch stores the stride used, the kernel size.
    ours, theirs = getattr(nn, kind)(3), getattr(torch.nn, kind)(3)
    assert ours.stride == theirs.stride == 3
    assert "stride=3" in repr(ours)
    assert getattr(nn, kind)((2, 3), stride=1).stride == 1


def test_buffers_take_recurse_as_in_pytorch():
    # named_buffers(recurse=False) and buffers(recurse=False) raised TypeError.
    def build(m):
        outer = m.Sequential(m.BatchNorm1d(2))
        outer.register_buffer("step", (lg if m is nn else torch).zeros(1))
        return outer

    ours, theirs = build(nn), build(torch.nn)
    for recurse in (True, False):
        assert [n for n, _ in ours.named_buffers(recurse=recurse)] == [
            n for n, _ in theirs.named_buffers(recurse=recurse)
        ]
        assert len(list(ours.buffers(recurse=recurse))) == len(list(theirs.buffers(recurse=recurse)))
    assert [n for n, _ in ours.named_buffers(prefix="net", recurse=False)] == ["net.step"]


# ------------------------------------------------------------------------------------------- containers


def _names(module):
    return [name for name, _ in module.named_children()]


def _kinds(module):
    return [type(child).__name__ for child in module]


def _both(build):
    return build(nn), build(torch.nn)


def test_sequential_from_an_ordered_dict_is_named_by_its_keys():
    # It raised "TypeError: Sequential holds modules, got OrderedDict".
    ours, theirs = _both(lambda m: m.Sequential(OrderedDict([("fc", m.Linear(2, 3)), ("act", m.ReLU())])))
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["fc.weight", "fc.bias"]
    assert repr(ours) == repr(theirs)
    assert ours(lg.randn(4, 2)).shape == (4, 3)
    with pytest.raises(lg.LeakygradError, match=r"Sequential: the name must be a non-empty string without '\.'"):
        nn.Sequential(OrderedDict([("a.b", nn.ReLU())]))


def test_sequential_insert_pop_setitem_delitem_and_extend_as_pytorch():
    def build(m):
        return m.Sequential(m.Linear(1, 2), m.ReLU(), m.Linear(2, 3), m.Tanh())

    ours, theirs = _both(build)
    for model, m in ((ours, nn), (theirs, torch.nn)):
        model.insert(1, m.Sigmoid())
        model.insert(-1, m.Identity())
        model.insert(len(model), m.GELU())
        model[0] = m.Linear(1, 2)
        del model[2]
        popped = model.pop(1)
        assert type(popped).__name__ == "Sigmoid"
        model.extend([m.Softplus()])
        del model[-2:]
    assert _kinds(ours) == _kinds(theirs)
    assert _names(ours) == _names(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert len(ours) == len(theirs)


def test_sequential_positions_out_of_range_and_non_modules_are_refused_by_name():
    model = nn.Sequential(nn.ReLU(), nn.Tanh())
    with pytest.raises(IndexError, match="Sequential: index 2 is out of range for 2 modules"):
        model[2]
    with pytest.raises(IndexError, match="Sequential.insert: index 3 is out of range for 2 modules"):
        model.insert(3, nn.ReLU())
    with pytest.raises(TypeError, match="Sequential: indices must be integers or slices, got str"):
        model["0"]
    with pytest.raises(TypeError, match="Sequential holds modules, got int"):
        model[0] = 3
    assert model[-2] is model[0]


def test_a_module_replaced_in_a_sequential_is_trained_and_saved():
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    list(model.parameters())  # (the list of parameters is remembered: it must follow the change)
    new = nn.Linear(2, 2)
    model[0] = new
    assert [id(p) for p in model.parameters()] == [id(new.weight), id(new.bias)]
    model.insert(0, nn.Linear(2, 2))
    assert list(model.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert model(lg.randn(3, 2)).shape == (3, 2)


def test_module_list_insert_pop_setitem_delitem_and_add_as_pytorch():
    ours, theirs = _both(lambda m: m.ModuleList([m.Linear(1, 1), m.ReLU(), m.Tanh()]))
    for model, m in ((ours, nn), (theirs, torch.nn)):
        del model[0]
        model.insert(0, m.ELU())
        model += [m.Linear(2, 2)]
        model[1] = m.Sigmoid()
        assert type(model.pop(2)).__name__ == "Tanh"
    assert _kinds(ours) == _kinds(theirs)
    assert _names(ours) == _names(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert _kinds(ours + nn.ModuleList([nn.ReLU()])) == _kinds(theirs) + ["ReLU"]
    with pytest.raises(IndexError, match="ModuleList: index 10 is out of range for 3 modules"):
        ours[10] = nn.ReLU()


def test_module_dict_holds_modules_by_key_as_pytorch():
    def build(m):
        return m.ModuleDict({"encoder": m.Linear(2, 3), "act": m.ReLU()})

    ours, theirs = _both(build)
    for model, m in ((ours, nn), (theirs, torch.nn)):
        model["decoder"] = m.Linear(3, 2)
        model.update([("norm", m.Linear(3, 3))])
        del model["act"]
    assert list(ours) == list(theirs) == ["encoder", "decoder", "norm"]
    assert list(ours.keys()) == list(theirs.keys())
    assert [type(v).__name__ for v in ours.values()] == [type(v).__name__ for v in theirs.values()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    assert "encoder" in ours and "act" not in ours and len(ours) == 3
    assert ours.pop("norm") is not None and len(ours) == 2

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.heads = nn.ModuleDict({"a": nn.Linear(2, 3)})

        def forward(self, x):
            return self.heads["a"](x)

    net = Net()
    assert [n for n, _ in net.named_parameters()] == ["heads.a.weight", "heads.a.bias"]
    net(lg.randn(4, 2)).sum().backward()
    assert net.heads["a"].weight.grad is not None
    net.eval()
    assert not net.heads["a"].training


def test_module_dict_names_a_bad_key_or_value():
    modules = nn.ModuleDict()
    with pytest.raises(lg.LeakygradError, match=r"ModuleDict: a key must be a non-empty string without '\.'"):
        modules["a.b"] = nn.ReLU()
    with pytest.raises(TypeError, match="ModuleDict: keys must be strings, got int"):
        modules[3] = nn.ReLU()
    with pytest.raises(TypeError, match="ModuleDict holds modules, got int for key 'z'"):
        modules["z"] = 3
    with pytest.raises(KeyError, match=r"ModuleDict has no module 'q' \(keys: \[\]\)"):
        modules["q"]


def test_add_module_register_parameter_and_requires_grad_as_pytorch():
    def build(m, tensor):
        model = m.Module()
        model.add_module("fc", m.Linear(2, 2))
        model.register_module("act", m.ReLU())
        model.register_parameter("scale", m.Parameter(tensor))
        model.register_parameter("shift", None)
        return model

    ours, theirs = build(nn, lg.ones(2)), build(torch.nn, torch.ones(2))
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["scale", "fc.weight", "fc.bias"]
    assert _names(ours) == _names(theirs)
    ours.requires_grad_(False)
    assert not any(p.requires_grad for p in ours.parameters())
    assert ours.requires_grad_() is ours and all(p.requires_grad for p in ours.parameters())
    with pytest.raises(lg.LeakygradError, match="add_module: Module already has an attribute 'training'"):
        ours.add_module("training", nn.ReLU())
    with pytest.raises(lg.LeakygradError, match=r"add_module: the name must be a non-empty string without '\.'"):
        ours.add_module("a.b", nn.ReLU())
    with pytest.raises(TypeError, match="register_parameter: 'w' must be a Parameter or None, got Tensor"):
        ours.register_parameter("w", lg.ones(2))


# ------------------------------------------------------------------------------------------- layers vs torch


@pytest.mark.parametrize(
    "kernel, options, shape",
    [
        ((1, 1), dict(stride=2), (2, 3, 7, 5)),
        ((3, 2), dict(stride=(2, 1), padding=(1, 0)), (2, 3, 7, 5)),
        ((2, 3), dict(stride=2, padding=0, bias=False), (1, 3, 5, 9)),
        ((3, 1), dict(stride=(1, 3)), (1, 3, 5, 9)),
        (4, dict(stride=3, padding=2), (2, 3, 7, 5)),
    ],
)
def test_conv2d_with_non_square_kernels_strides_and_images(twin, kernel, options, shape):
    twin.compare(nn.Conv2d(3, 4, kernel, **options), torch.nn.Conv2d(3, 4, kernel, **options), [twin.normal(*shape)])


@pytest.mark.parametrize(
    "options",
    [
        dict(kernel_size=3, stride=1, padding=1),
        dict(kernel_size=(3, 2), stride=(1, 2), padding=(1, 0)),
        dict(kernel_size=(2, 3), stride=(3, 1), padding=(1, 1)),
    ],
)
@pytest.mark.parametrize("shape", [(2, 2, 7, 5), (1, 1, 4, 9)])
def test_pooling_with_padding_and_a_stride_other_than_the_kernel(twin, options, shape):
    x = twin.normal(*shape)
    twin.compare(nn.MaxPool2d(**options), torch.nn.MaxPool2d(**options), [x])
    for include in (True, False):
        twin.compare(
            nn.AvgPool2d(**options, count_include_pad=include),
            torch.nn.AvgPool2d(**options, count_include_pad=include),
            [x],
        )


@pytest.mark.parametrize("normalized_shape, shape", [((3, 4), (2, 3, 4)), ((2, 3, 4), (5, 2, 3, 4))])
@pytest.mark.parametrize("options", [dict(elementwise_affine=False), dict(bias=False), {}])
def test_layer_norm_over_several_dimensions(twin, normalized_shape, shape, options):
    twin.compare(
        nn.LayerNorm(normalized_shape, **options),
        torch.nn.LayerNorm(normalized_shape, **options),
        [twin.normal(*shape)],
    )


@pytest.mark.parametrize("options", [dict(momentum=None), dict(track_running_stats=False), dict(momentum=0.3)])
@pytest.mark.parametrize(
    "kind, shape", [("BatchNorm1d", (4, 3)), ("BatchNorm1d", (4, 3, 5)), ("BatchNorm2d", (2, 3, 4, 5))]
)
def test_batch_norm_trained_on_two_batches_then_evaluated_on_one_example(twin, kind, shape, options):
    def call(module, x):
        module.train()
        module(x * 2 + 1)
        module(x - 1)
        module.eval()
        return module(x if not module.track_running_stats else x[:1])

    twin.compare(
        getattr(nn, kind)(3, **options), getattr(torch.nn, kind)(3, **options), [twin.normal(*shape)], call=call
    )


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("batch_first", [False, True])
def test_two_layer_recurrences_with_initial_states(twin, kind, fused, batch_first):
    batch, steps = 3, 5
    x = twin.normal(batch, steps, 4) if batch_first else twin.normal(steps, batch, 4)
    h0 = twin.normal(2, batch, 6)
    options = dict(batch_first=batch_first)
    if kind == "RNN":
        options["nonlinearity"] = "relu"
    ours = getattr(nn, kind)(4, 6, 2, fused=fused, **options)
    theirs = getattr(torch.nn, kind)(4, 6, 2, **options)
    if kind == "LSTM":
        twin.compare(ours, theirs, [x, h0, twin.normal(2, batch, 6)], call=lambda m, x, h, c: m(x, (h, c)))
    else:
        twin.compare(ours, theirs, [x, h0])


@pytest.mark.parametrize("embed_dim, num_heads, length, bias", [(8, 1, 5, True), (8, 4, 1, True), (6, 3, 4, False)])
def test_causal_self_attention_with_one_head_one_position_or_no_bias(twin, embed_dim, num_heads, length, bias):
    ours = nn.CausalSelfAttention(embed_dim, num_heads, bias=bias)
    theirs = torch.nn.MultiheadAttention(embed_dim, num_heads, batch_first=True, bias=bias)
    names = {"qkv.weight": "in_proj_weight", "qkv.bias": "in_proj_bias"}
    names |= {"proj.weight": "out_proj.weight", "proj.bias": "out_proj.bias"}
    mask = torch.triu(torch.full((length, length), float("-inf"), dtype=torch.float64), 1)

    def call(module, x):
        return module(x) if isinstance(module, nn.Module) else module(x, x, x, attn_mask=mask, need_weights=False)[0]

    twin.compare(ours, theirs, [twin.normal(2, length, embed_dim)], call=call, name_map=names)


def test_load_state_dict_copies_into_the_parameters_own_arrays(tmp_path):
    """As PyTorch's copy_: an array shared with the parameter (made with from_numpy, held by a user or an optimiser)
    sees the loaded values; it was replaced, and the old array kept the old values."""
    from leakygrad import io

    source, model = nn.Linear(3, 2), nn.Linear(3, 2)
    held = [p.data for p in model.parameters()]
    model.load_state_dict(source.state_dict())
    assert all(p.data is array for p, array in zip(model.parameters(), held))
    assert np.array_equal(held[0], source.weight.data) and np.array_equal(held[1], source.bias.data)
    io.save_model(source, tmp_path / "m.npz")
    model.weight.data[...] = 0
    io.load_model(model, tmp_path / "m.npz")
    assert model.weight.data is held[0] and np.array_equal(held[0], source.weight.data)


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")  # (PyTorch's note on its own copy)
@pytest.mark.parametrize("kernel", [(3, 3), (2, 2), (4, 3), (1, 5)])
@pytest.mark.parametrize("padding", ["same", "valid"])
def test_conv2d_padding_by_name_matches_pytorch(kernel, padding):
    """padding="same" (stride 1: an even kernel pads one more zero after, as PyTorch) and "valid" (none)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 7, 6))
    ours = nn.Conv2d(3, 4, kernel, padding=padding).double()
    theirs = torch.nn.Conv2d(3, 4, kernel, padding=padding).double()
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in ours.state_dict().items()})
    x_lg, x_t = lg.Tensor(x, requires_grad=True, dtype="float64"), torch.tensor(x, requires_grad=True)
    y_lg, y_t = ours(x_lg), theirs(x_t)
    assert y_lg.shape == tuple(y_t.shape)
    if padding == "same":
        assert y_lg.shape[2:] == x.shape[2:]
    np.testing.assert_allclose(y_lg.data, y_t.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = rng.standard_normal(y_lg.shape)
    (y_lg * lg.Tensor(g, dtype="float64")).sum().backward()
    (y_t * torch.from_numpy(g)).sum().backward()
    np.testing.assert_allclose(x_lg.grad.data, x_t.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.weight.grad.data, theirs.weight.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert repr(ours).count(f"padding={padding}") == 1


def test_conv2d_padding_names_that_cannot_work_are_refused_by_name():
    with pytest.raises(lg.LeakygradError, match="padding='same' needs stride 1"):
        nn.Conv2d(3, 4, 3, stride=2, padding="same")
    with pytest.raises(lg.LeakygradError, match="padding must be a number, a pair, 'same' or 'valid', got 'full'"):
        nn.Conv2d(3, 4, 3, padding="full")
    with pytest.raises(lg.LeakygradError, match="conv2d: padding='same' needs stride 1"):
        nn.functional.conv2d(lg.randn(1, 3, 5, 5), lg.randn(4, 3, 3, 3), stride=2, padding="same")


def test_get_submodule_and_get_parameter_as_pytorch():
    model = nn.Sequential(OrderedDict(encoder=nn.Sequential(nn.Linear(2, 3), nn.ReLU()), head=nn.Linear(3, 1)))
    assert model.get_submodule("") is model
    assert model.encoder is model[0] and model.head is model[1]  # a dict's keys as attributes, as in PyTorch
    assert model.get_submodule("encoder.0") is model.encoder[0]
    assert model.get_parameter("encoder.0.weight") is model.encoder[0].weight
    assert model.get_parameter("head.bias") is model.head.bias
    with pytest.raises(AttributeError, match=r"get_submodule: encoder has no submodule '5' \(it has: 0, 1\)"):
        model.get_submodule("encoder.5")
    with pytest.raises(AttributeError, match=r"get_parameter: head has no parameter 'gain'"):
        model.get_parameter("head.gain")
