# Linear probing first, fine-tuning later: the fine-tuning optimiser is made up front and used only in phase 2
# (which this run, a short one, does not reach). The backbone is not frozen in phase 1 (its gradient is computed
# but only the head's optimiser steps) -- a waste, but no mistake about which optimiser steps.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
backbone = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU())
head = nn.Linear(32, 4)
probe_opt = torch.optim.SGD(head.parameters(), lr=0.05)
finetune_opt = torch.optim.SGD([*backbone.parameters(), *head.parameters()], lr=0.005)
X = torch.randn(2048, 16)
Y = (X[:, :4]).argmax(1)
PROBE_STEPS, TOTAL = 150, 150  # phase 2 would start at PROBE_STEPS
for step in range(TOTAL):
    i = (step * 64) % 2048
    loss = F.cross_entropy(head(backbone(X[i : i + 64])), Y[i : i + 64])
    opt = probe_opt if step < PROBE_STEPS else finetune_opt
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
