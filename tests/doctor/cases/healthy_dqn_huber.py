"""Healthy: the same Q-learning as dqn_clipped_td.py with the Huber loss, which is what clipping the error was
meant to be: quadratic inside [-1, 1], linear outside, so large TD errors still give a gradient of +-1."""

import copy

import torch
from _common import parse
from torch import nn

args = parse(steps=160)
STATES, ACTIONS, GAMMA = 8, 4, 0.9

model = nn.Sequential(nn.Linear(STATES, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, ACTIONS))
target = copy.deepcopy(model)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
generator = torch.Generator().manual_seed(args.seed)
reward_weights = torch.randn(STATES, ACTIONS, generator=generator) * 4.0
losses = []
for step in range(args.steps):
    state = torch.randn(64, STATES, generator=generator)
    action = torch.randint(0, ACTIONS, (64,), generator=generator)
    reward = (state @ reward_weights).gather(1, action[:, None]).squeeze(1) + 10.0
    next_state = state + 0.1 * torch.randn(64, STATES, generator=generator)
    with torch.no_grad():
        td_target = reward + GAMMA * target(next_state).max(dim=1).values
    q = model(state).gather(1, action[:, None]).squeeze(1)
    loss = nn.functional.huber_loss(q, td_target, delta=1.0)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 20 == 19:
        target.load_state_dict(model.state_dict())
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
