import torch

torch.manual_seed(0)
X = torch.randn(64, 8)
y = X.sum(1, keepdim=True)
layers = [((torch.randn(8, 8) * 0.35).requires_grad_(), torch.zeros(8, requires_grad=True)) for _ in range(40)]
head = (torch.randn(8, 1) * 0.3).requires_grad_()
for step in range(60):
    h = X
    for W, b in layers:
        h = h + 0.1 * torch.tanh(h @ W + b)
    loss = ((h @ head - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        for W, b in layers:
            W -= 0.01 * W.grad
            b -= 0.01 * b.grad
            W.grad = None
            b.grad = None
        head -= 0.01 * head.grad
        head.grad = None
    if step % 20 == 0:
        print(step, round(loss.item(), 4))
