# A backbone "frozen" by zeroing its gradients after backward (its optimiser's weight decay still moves it), then
# only the head's gradients clipped. CLIP=0 runs without the clip, for comparison.
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
backbone = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU())
head = nn.Linear(32, 4)
model = nn.Sequential(backbone, head)
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
X = torch.randn(2048, 16)
Y = X[:, :4].argmax(1)
for step in range(150):
    i = (step * 64) % 2048
    loss = F.cross_entropy(model(X[i : i + 64]), Y[i : i + 64])
    opt.zero_grad()
    loss.backward()
    for p in backbone.parameters():
        p.grad.zero_()
    if os.environ.get("CLIP", "1") == "1":
        torch.nn.utils.clip_grad_norm_(head.parameters(), 1.0)
    opt.step()
print("loss", loss.item())
