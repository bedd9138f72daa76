"""The pieces together: a DataLoader, an MLP written with Tensors, Adam with warm-up and cosine decay, clipping."""

import numpy as np

import leakygrad as lg
from leakygrad import data, optim
from leakygrad.optim import lr_scheduler


def test_an_mlp_learns_the_spirals():
    X, y = data.spirals(100, n_classes=3, seed=0)
    rng = np.random.default_rng(0)
    w1 = lg.Tensor(rng.standard_normal((2, 64)), requires_grad=True)
    b1 = lg.Tensor(np.zeros(64), requires_grad=True)
    w2 = lg.Tensor(rng.standard_normal((64, 3)) * 0.1, requires_grad=True)
    b2 = lg.Tensor(np.zeros(3), requires_grad=True)
    params = [w1, b1, w2, b2]

    def logits(x):
        return (x @ w1 + b1).relu() @ w2 + b2

    opt = optim.Adam(params, lr=0.05)
    epochs = 60
    loader = data.DataLoader(X, y, batch_size=50, shuffle=True, seed=0)
    total = epochs * len(loader)
    warmup = lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=20)
    schedule = lr_scheduler.SequentialLR(opt, [warmup, lr_scheduler.CosineAnnealingLR(opt, T_max=total - 20)], [20])
    for _ in range(epochs):
        for xb, yb in loader:
            opt.zero_grad()
            loss = -logits(xb).log_softmax(axis=1)[np.arange(len(yb)), yb.data].mean()
            loss.backward()
            optim.clip_grad_norm_(params, 5.0)
            opt.step()
            schedule.step()
    accuracy = (logits(lg.Tensor(X)).data.argmax(axis=1) == y).mean()
    assert accuracy > 0.95
