"""A graph that spans training steps: a recurrent state carried from batch to batch without `detach()`, and
`backward(retain_graph=True)` to silence PyTorch's error at the second backward through it.

Each backward then runs through every batch since the start (sweep 38: 22 s against 2.2 s for 186 steps, growing
with the square of the steps), adding terms computed with the weights as they were then. Named as a `wrong_gradient`
error at the recurrent layer whose earlier outputs the backward reached. Left alone: the same loop with the state
detached (truncated backprop through time, `retain_graph=True` left in), and a GAN step whose two backward passes
share one step's graph.
"""

import pytest
import torch
from torch import nn
from torch.nn import functional as F

import leakygrad.doctor as doctor


class CharModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed, self.lstm, self.head = nn.Embedding(10, 8), nn.LSTM(8, 16, batch_first=True), nn.Linear(16, 10)

    def forward(self, x, state):
        out, state = self.lstm(self.embed(x), state)
        return self.head(out), state


def train_carried(detach: bool, steps: int, every: int):
    torch.manual_seed(0)
    model = CharModel()
    stream = torch.randint(0, 10, (4, steps * 8 + 1), generator=torch.Generator().manual_seed(0))
    state = None
    with doctor.watch(model, every=every) as dr:
        for step in range(steps):
            x, y = stream[:, step * 8 : step * 8 + 8], stream[:, step * 8 + 1 : step * 8 + 9]
            if detach and state is not None:
                state = tuple(v.detach() for v in state)
            logits, state = model(x, state)
            loss = F.cross_entropy(logits.reshape(-1, 10), y.reshape(-1))
            model.zero_grad()
            loss.backward(retain_graph=True)
            # (PyTorch's word_language_model example updates through .data: an optimiser's in-place step would make
            # the next backward through the old graph fail its version check, and the bug would not run)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-0.1)
    assert dr.notes == []
    return dr


def spanning(dr):
    return [f for f in dr.findings if f.evidence.get("graph_from_earlier_step")]


@pytest.mark.parametrize("every", [1, 4])
def test_a_hidden_state_carried_with_retain_graph_is_an_error_at_the_recurrent_layer(every):
    dr = train_carried(detach=False, steps=48, every=every)
    found = spanning(dr)
    assert len(found) == 1
    (finding,) = found
    assert finding.severity == "error" and finding.symptom == "wrong_gradient"
    assert finding.where == "lstm" and finding.evidence["modules_reached"][0] == "lstm"
    assert finding.first_step == dr.history.records[1].step  # (the second sampled step reaches back into the first's)
    assert finding.evidence["reached_back_to_step"] < finding.evidence["at_step"]
    assert "retain_graph=True" in finding.explanation and "detach()" in finding.remedies[0]


def test_the_state_detached_at_each_batch_is_left_alone():
    dr = train_carried(detach=True, steps=48, every=1)
    assert spanning(dr) == []
    assert all(r.graph_from_earlier_step is None for r in dr.history.records)


def test_a_gan_whose_two_backward_passes_share_one_step_is_left_alone():
    torch.manual_seed(0)
    generator, critic = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)), nn.Linear(2, 1)
    g_opt = torch.optim.Adam(generator.parameters(), lr=1e-3)
    d_opt = torch.optim.Adam(critic.parameters(), lr=1e-3)
    with doctor.watch(generator, g_opt, every=1) as dr:
        for _ in range(20):
            fake = generator(torch.randn(16, 4))
            d_loss = F.softplus(critic(fake)).mean() + F.softplus(-critic(torch.randn(16, 2))).mean()
            d_opt.zero_grad()
            d_loss.backward(retain_graph=True)  # (the generator's graph is used again just below)
            d_opt.step()
            g_loss = F.softplus(-critic(fake)).mean()
            g_opt.zero_grad()
            g_loss.backward()
            g_opt.step()
    assert dr.notes == [] and spanning(dr) == []


def test_truncated_backprop_over_overlapping_windows_is_left_alone():
    """TBPTT with k1 < k2 (Sutskever's, as the PyTorch forum writes it): every k1 steps, backprop through the last k2
    states, each detached at its window's edge; retain_graph=True because the windows overlap. Each backward reaches a
    few steps back, never to the start (updated through .data: without an optimiser, each backward is a step)."""
    torch.manual_seed(0)
    k1, k2 = 4, 8
    cell, head = nn.RNNCell(3, 16), nn.Linear(16, 3)
    model = nn.ModuleDict({"cell": cell, "head": head})
    stream = torch.randn(240, 8, 3, generator=torch.Generator().manual_seed(0))
    with doctor.watch(model, every=1) as dr:
        states = [(None, torch.zeros(8, 16))]
        for t in range(1, 240):
            state = states[-1][1].detach().requires_grad_()
            states.append((state, cell(stream[t - 1], state)))
            del states[:-k2]  # (older than k2: its graph is let go)
            if t % k1 == 0:
                loss = F.mse_loss(head(states[-1][1]), stream[t])
                model.zero_grad()
                loss.backward(retain_graph=True)
                for i in range(k2 - 1):  # (the state's gradient carried back through the last k2 steps only)
                    if states[-i - 2][0] is None:
                        break
                    states[-i - 2][1].backward(states[-i - 1][0].grad, retain_graph=True)
                for p in model.parameters():
                    p.data.add_(p.grad, alpha=-0.05)
    assert dr.notes == [] and spanning(dr) == []
