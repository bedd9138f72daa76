"""Faulty: DQN-style Q-learning whose loss squares the TD error *clipped* to [-1, 1]. clamp's derivative is 0
outside the range, so every transition with a large TD error (nearly all, rewards here are ~10) gives zero
gradient. The fix is the Huber loss (see healthy_dqn_huber.py): blocked_gradient at clamp."""

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
reward_weights = torch.randn(STATES, ACTIONS, generator=generator) * 4.0  # a fixed random reward function
losses = []
for step in range(args.steps):
    state = torch.randn(64, STATES, generator=generator)
    action = torch.randint(0, ACTIONS, (64,), generator=generator)
    reward = (state @ reward_weights).gather(1, action[:, None]).squeeze(1) + 10.0
    next_state = state + 0.1 * torch.randn(64, STATES, generator=generator)
    with torch.no_grad():
        td_target = reward + GAMMA * target(next_state).max(dim=1).values
    q = model(state).gather(1, action[:, None]).squeeze(1)
    td_error = q - td_target
    loss = (td_error.clamp(-1.0, 1.0) ** 2).mean()  # the mistake: clip the error, not the gradient
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 20 == 19:
        target.load_state_dict(model.state_dict())
    losses.append(loss.item())
print(f"final loss {losses[-1]:.3f}")
