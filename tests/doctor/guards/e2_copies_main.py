import torch

torch.manual_seed(0)


def main():
    X = torch.randn(128, 10)
    y = X.sum(1, keepdim=True)
    weights = [(torch.randn(10, 16) * 0.3).requires_grad_(), (torch.randn(16, 1) * 0.3).requires_grad_()]
    opt = torch.optim.Adam([w.detach().clone().requires_grad_() for w in weights], lr=1e-2)
    for step in range(100):
        loss = ((torch.tanh(X @ weights[0]) @ weights[1] - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            print(step, round(loss.item(), 4))


main()
