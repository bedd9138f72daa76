# A cosine classifier whose scoring (batch norm, normalisation, learnt scale) is checkpointed without reentrancy, to
# save memory. Prints the batch norm's running mean: the doctor must not change it.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
C, D = 10, 32
body = nn.Linear(D, 32)
bn = nn.BatchNorm1d(32)
proto = nn.Parameter(torch.randn(C, 32))
scale = nn.Parameter(torch.tensor(10.0))


def scores(x):
    z = F.normalize(bn(body(x)), dim=-1)
    return scale * (z @ F.normalize(proto, dim=-1).T)


opt = torch.optim.SGD([*body.parameters(), *bn.parameters(), proto, scale], lr=0.05, momentum=0.9)
X = torch.randn(2048, D)
Y = (X @ torch.randn(D, C)).argmax(1)
for step in range(60):
    i = (step * 64) % 2048
    loss = F.cross_entropy(checkpoint(scores, X[i : i + 64], use_reentrant=False), Y[i : i + 64])
    opt.zero_grad()
    loss.backward()
    opt.step()
print(
    "loss %.6f" % loss.item(),
    "bn batches",
    bn.num_batches_tracked.item(),
    "running_mean[:3]",
    bn.running_mean[:3].tolist(),
)
