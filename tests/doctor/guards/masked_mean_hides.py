# Attention pooling with the softmax over an axis of length 1 (a real bug the doctor finds), under a masked-mean loss
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Pool(nn.Module):
    def __init__(self):
        super().__init__()
        self.score = nn.Linear(8, 1)
        self.head = nn.Linear(8, 1)

    def forward(self, x):  # x: (N, T, 8)
        w = F.softmax(self.score(x), dim=-1)  # meant dim=1
        return self.head((w * x).sum(1))


model = Pool()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
X = torch.randn(1024, 5, 8)
Y = X[:, 0, :2].sum(1, keepdim=True)
for step in range(100):
    i = (step * 64) % 1024
    mask = (torch.rand(64, 1) > 0.2).float()
    err = (model(X[i : i + 64]) - Y[i : i + 64]) ** 2
    loss = (err * mask).sum() / mask.sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
