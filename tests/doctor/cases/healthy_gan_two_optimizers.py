"""Healthy: a small GAN on 2-D data, two optimisers stepping in turn (the discriminator on a detached fake, then
the generator through the discriminator). Its losses hover by design: neither falls, and that is not a stall."""

import torch
from _common import parse
from torch import nn

args = parse(steps=300)

generator = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
discriminator = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
model = nn.ModuleDict({"generator": generator, "discriminator": discriminator})
opt_g = torch.optim.Adam(generator.parameters(), lr=1e-3, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(discriminator.parameters(), lr=1e-3, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()
real_centre = torch.tensor([2.0, -1.0])
ones, zeros = torch.ones(64, 1), torch.zeros(64, 1)
losses = []
for _ in range(args.steps):
    real = real_centre + 0.3 * torch.randn(64, 2)
    fake = generator(torch.randn(64, 4))
    d_loss = bce(discriminator(real), ones) + bce(discriminator(fake.detach()), zeros)
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    g_loss = bce(discriminator(fake), ones)
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
    losses.append(g_loss.item())
centre = generator(torch.randn(1000, 4)).mean(0)
print(f"final generator loss {losses[-1]:.3f}, fake centre {centre[0]:.2f} {centre[1]:.2f} (real: 2.00 -1.00)")
