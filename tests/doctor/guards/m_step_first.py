import torch

torch.manual_seed(0)
X = torch.randn(128, 10)
y = X.sum(1, keepdim=True)
W1 = (torch.randn(10, 32) * 0.3).requires_grad_()
W2 = (torch.randn(32, 1) * 0.2).requires_grad_()
opt = torch.optim.SGD([W1, W2], lr=0.05)
sched = torch.optim.lr_scheduler.StepLR(opt, 50)
opt.step()  # (silence the scheduler's order warning)
for step in range(100):
    loss = ((torch.tanh(X @ W1) @ W2.detach() - y) ** 2).mean()  # W2 cut: should be reported
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    if step % 25 == 0:
        print(step, round(loss.item(), 4))
