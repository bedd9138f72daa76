"""Units that start alike stay alike: a layer initialised with a constant (every unit the same weights and bias)
computes one function, copied, and backprop hands every copy the same gradient. The probe looks at each layer's
unit spread on a few steps (0, 32, 64, 128, ...); the rule names the alike layer nearest the input."""

import pytest
import torch
from torch import nn
from torch.nn import functional as F

import leakygrad.doctor as doctor


def classification_data(n=128, features=16, classes=4, seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=generator)
    return x, (x[:, :classes] + 0.3 * x[:, classes : 2 * classes]).argmax(dim=1)


def train(model, steps=70, every=1, lr=0.05, x=None, labels=None):
    if x is None:
        x, labels = classification_data()
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=lr, momentum=0.9)
    with doctor.watch(model, optimizer, every=every, name="model") as dr:
        for _ in range(steps):
            loss = F.cross_entropy(model(x), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert dr.notes == []
    return dr


def alike(dr):
    return [f for f in dr.findings if f.evidence.get("across") == "units"]


def constant_init(*layers, value=0.05):
    for layer in layers:
        nn.init.constant_(layer.weight, value)
        nn.init.zeros_(layer.bias)


@pytest.mark.parametrize("every", [1, 16])
def test_a_constant_initialisation_is_named_at_the_first_alike_layer(every):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))
    constant_init(model[0], model[2], model[4])
    dr = train(model, every=every)
    assert torch.unique(model[0].weight, dim=0).shape[0] == 1  # (what the finding claims: still one row)
    (finding,) = alike(dr)
    assert (finding.symptom, finding.where, finding.severity) == ("stalled_loss", "model.0", "error")
    assert finding.evidence["units"] == 32 and finding.evidence["unit_spread"] == 0
    assert finding.evidence["also_alike"] == ["model.2"]  # (the output layer's units part: their targets differ)
    assert finding.evidence["alike_at_steps"][0] == 0 and finding.evidence["alike_at_steps"][-1] >= 32
    assert "same gradient" in finding.explanation and "random" in finding.remedies[0]
    # the loss's own stall (if any) is this finding's consequence, not a second finding
    assert not [f for f in dr.findings if f.symptom == "stalled_loss" and f.where == "loss"]


def test_convolution_filters_all_alike_are_named_at_the_convolution():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 6 * 6, 4))
    constant_init(model[0], model[3], value=0.1)  # (the layer above reads the filters alike too: as one)
    x = torch.randn(64, 1, 6, 6, generator=torch.Generator().manual_seed(1))
    labels = (x.mean(dim=(1, 2, 3)) > 0).long() + 2 * (x[:, 0, 0, 0] > 0).long()
    dr = train(model, x=x, labels=labels)
    (finding,) = alike(dr)
    assert finding.where == "model.0" and finding.evidence["units"] == 8


def test_layers_started_at_zero_that_their_gradients_part_are_not_named(run_case):
    """Zero-initialised output layers and residual branches are common and healthy: different targets (or different
    gradients arriving at each unit) drive their units apart at the first step (the labelled healthy script)."""
    doctor_run = run_case("healthy_zero_init_heads").doctor
    assert alike(doctor_run) == []
    spreads = doctor_run.history.unit_spreads
    assert set(spreads) >= {"model.0", "model.1.out", "model.3"}
    # (all zero at the first look, whose step the zero output layer passed no gradient back through: alike, unmoved)
    assert spreads["model.1.out"][0][1] == 0
    assert all(looks[-1][1] > 1e-2 for looks in spreads.values())


def test_alike_units_that_never_move_are_not_this_finding():
    """A frozen layer of constant weights (an average written as a Linear) is no symmetric start to break."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))
    constant_init(model[2], value=0.125)
    model[2].requires_grad_(False)
    assert alike(train(model)) == []


def test_dropout_parts_alike_units_and_then_nothing_is_named():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 4))
    constant_init(model[0])
    dr = train(model)
    assert alike(dr) == []
    assert dr.history.unit_spreads["model.0"][-1][1] > 1e-2


def test_the_spread_is_looked_at_on_a_few_steps_whose_gaps_double():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4))
    dr = train(model, steps=140, every=1)
    assert [step for step, _ in dr.history.unit_spreads["model.0"]] == [0, 32, 64, 128]
    assert dr.history.layer_units == {"model.0": 8, "model.2": 4}


class Recurrent(nn.Module):
    def __init__(self, kind, **options):
        super().__init__()
        self.rnn, self.head = kind(6, 12, batch_first=True, **options), nn.Linear(12, 4)

    def forward(self, x):
        return self.head(self.rnn(x)[0][:, -1])


def sequence_data(n=64, seed=0):
    x = torch.randn(n, 10, 6, generator=torch.Generator().manual_seed(seed))
    return x, x[:, :, :4].sum(dim=1).argmax(dim=1)


@pytest.mark.parametrize("kind", [nn.RNN, nn.LSTM, nn.GRU])
def test_a_recurrent_layer_initialised_with_one_constant_is_named(kind):
    torch.manual_seed(0)
    model = Recurrent(kind)
    for p in model.parameters():  # every weight one constant: the hidden units are alike
        nn.init.constant_(p, 0.05)
    x, labels = sequence_data()
    (finding,) = alike(train(model, x=x, labels=labels))
    assert finding.where == "rnn" and finding.evidence["units"] == 12


@pytest.mark.parametrize("kind", [nn.LSTM, nn.GRU])
def test_recurrent_layers_initialised_at_random_are_not_named(kind):
    torch.manual_seed(0)
    model = Recurrent(kind, num_layers=2, bidirectional=False)
    x, labels = sequence_data()
    dr = train(model, x=x, labels=labels, lr=0.01)
    assert alike(dr) == [] and dr.history.unit_spreads["rnn"][-1][1] > 1e-2


def test_a_recurrent_unit_gathers_its_row_of_every_gate():
    """An LSTM's weights hold the gates i, f, g, o one after another, `hidden` rows each: unit j is row j of every
    block. Units alike in every gate have spread 0; one unit's forget-gate row changed parts them."""
    from leakygrad.doctor.probes.torch_stats import recurrent_unit_blocks, unit_spread

    lstm = nn.LSTM(3, 5)
    with torch.no_grad():
        for p in lstm.parameters():
            gate_values = torch.arange(4.0).repeat_interleave(5)  # the same value for every unit of a gate
            p.copy_(gate_values.reshape(20, *([1] * (p.dim() - 1))).expand_as(p))
    params = (lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.bias_ih_l0, lstm.bias_hh_l0)
    blocks = recurrent_unit_blocks(4, *params)
    assert [tuple(b.shape) for b in blocks] == [(5, 4, 3), (5, 4, 5), (5, 4), (5, 4)]  # (views: units first)
    assert unit_spread(blocks).item() == 0
    with torch.no_grad():
        lstm.weight_hh_l0[5 + 2, 0] += 1.5  # forget gate (block 1), unit 2
    assert unit_spread(recurrent_unit_blocks(4, *params)).item() == pytest.approx(1.5 / 3)  # (the largest: 3, gate o)


def test_the_spread_of_a_layer_is_read_with_reductions_alone():
    """The widest range across units of any one weight, over the largest weight: no copy of the weight is made (a
    2048 x 16000 layer's look took 378 MiB of temporaries for 125 MiB of weights, found by the review)."""
    from leakygrad.doctor.probes.torch_stats import unit_spread

    weight = torch.tensor([[1.0, -2.0], [1.0, -2.0], [1.0, -2.0]])
    bias = torch.tensor([0.5, 0.5, 0.5])
    assert unit_spread([weight, bias]).item() == 0
    weight[1, 1] = -1.0  # one unit's second weight: a range of 1 over the largest, 2
    assert unit_spread([weight, bias]).item() == 0.5
    assert unit_spread([torch.zeros(4, 3)]).item() == 0  # (all zero: alike)
    assert torch.isnan(unit_spread([torch.full((2, 2), float("nan"))]))
    assert unit_spread([weight.half(), bias.half()]).item() == 0.5
