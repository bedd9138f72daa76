# A mixture density network run with K=1 component (a configuration: K is a command-line option, 1 the unimodal
# baseline). Mixture weights normalised by their sum (NORM=sum) or by a softmax (NORM=softmax).
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
K = int(os.environ.get("K", "1"))
NORM = os.environ.get("NORM", "sum")


class MDN(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(1, 64), nn.Tanh())
        self.pi = nn.Linear(64, K)
        self.mu = nn.Linear(64, K)
        self.log_sigma = nn.Linear(64, K)

    def forward(self, x):
        h = self.body(x)
        if NORM == "sum":
            w = F.softplus(self.pi(h))
            w = w / w.sum(-1, keepdim=True)
        else:
            w = F.softmax(self.pi(h), -1)
        return w, self.mu(h), self.log_sigma(h).clamp(-5, 3)


model = MDN()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
X = torch.rand(4096, 1) * 2 - 1
Y = torch.sin(3 * X) + 0.1 * torch.randn_like(X)
for step in range(200):
    i = (step * 128) % 4096
    w, mu, ls = model(X[i : i + 128])
    logp = -0.5 * ((Y[i : i + 128] - mu) / ls.exp()) ** 2 - ls - 0.5 * math.log(2 * math.pi)
    loss = -torch.logsumexp(torch.log(w + 1e-8) + logp, -1).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
