# Neural ODE (Chen et al. 2018) with a hand-written fixed-step RK4 integrator, backprop through the solver
# (discretise-then-optimise, no torchdiffeq): fit dz/dt = f(z) to a 2-D spiral, z' = A^T z^3 style (the paper's demo).
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0); torch.set_num_threads(1)
A_true = torch.tensor([[-0.1, 2.0], [-2.0, -0.1]])
def f_true(z): return (z ** 3) @ A_true
def rk4(f, z0, ts):
    zs = [z0]; z = z0
    for i in range(len(ts) - 1):
        h = ts[i + 1] - ts[i]
        k1 = f(z); k2 = f(z + h / 2 * k1); k3 = f(z + h / 2 * k2); k4 = f(z + h * k3)
        z = z + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4); zs.append(z)
    return torch.stack(zs)
T = 400
ts = torch.linspace(0, 10, T)
with torch.no_grad():
    z0 = torch.tensor([[2.0, 0.0]])
    fine = torch.linspace(0, 10, 4 * (T - 1) + 1)
    traj = rk4(f_true, z0, fine)[::4]                       # ground truth on a 4x finer grid  (T, 1, 2)
class ODEFunc(nn.Module):
    def __init__(s):
        super().__init__(); s.net = nn.Sequential(nn.Linear(2, 50), nn.Tanh(), nn.Linear(50, 2))
        for m in s.net:
            if isinstance(m, nn.Linear): nn.init.normal_(m.weight, std=0.1); nn.init.zeros_(m.bias)
    def forward(s, z): return s.net(z ** 3)
func = ODEFunc(); opt = torch.optim.RMSprop(func.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(1); L = 10                # random windows of 10 time points, batch 20
for step in range(800):
    s0 = torch.randint(0, T - L, (20,), generator=g)
    bz0 = traj[s0, 0]                                       # (20, 2)
    bt = ts[:L]
    by = torch.stack([traj[s0 + i, 0] for i in range(L)])  # (L, 20, 2)
    pred = rk4(func, bz0, bt)
    loss = (pred - by).abs().mean()
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 200 == 0: print(f"step {step} loss {loss.item():.4f}")
with torch.no_grad():
    full = rk4(func, z0, ts)
    err = (full - traj).abs().mean().item(); base = (traj - traj.mean(0)).abs().mean().item()
print(f"whole-trajectory MAE from z0 {err:.4f} (predicting the trajectory's mean point: {base:.4f})")
