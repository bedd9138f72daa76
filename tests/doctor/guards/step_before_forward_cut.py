# (with the first layer cut off by a detach: a real bug)
# Everything inside main(); an optimiser.step() before the first forward (to silence the scheduler's "step() before
# optimizer.step()" warning: with no gradients yet it changes nothing), then ordinary training.
import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, 50)
    opt.step()
    X = torch.randn(2048, 16)
    Y = X[:, :4].argmax(1)
    for step in range(150):
        i = (step * 64) % 2048
        loss = F.cross_entropy(model[2](model[1](model[0](X[i : i + 64])).detach()), Y[i : i + 64])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    print("loss", loss.item())


main()
