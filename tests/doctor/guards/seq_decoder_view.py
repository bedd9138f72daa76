# A batched seq2seq decoder step: (N, 1, E) viewed as (1, N, E) for a sequence-first GRU (legit: same memory order)
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
V, E, H, N = 20, 16, 32, 32
emb = nn.Embedding(V, E)
gru = nn.GRU(E, H)
out = nn.Linear(H, V)
opt = torch.optim.Adam([*emb.parameters(), *gru.parameters(), *out.parameters()], lr=1e-2)
for _ in range(120):
    tok = torch.randint(0, V, (N, 1))
    target = (tok[:, 0] + 1) % V
    h = torch.zeros(1, N, H)
    e = emb(tok)  # (N, 1, E)
    e = e.view(1, N, E)  # one time step, sequence-first: a no-op on memory
    o, h = gru(e, h)
    loss = F.cross_entropy(out(o[0]), target)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
