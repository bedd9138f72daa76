import gc
import weakref

import torch

torch.manual_seed(0)


def main():
    X = torch.randn(128, 10)
    y = X.sum(1, keepdim=True)
    W1 = (torch.randn(10, 32) * 0.3).requires_grad_()
    W2 = (torch.randn(32, 1) * 0.2).requires_grad_()
    opt = torch.optim.SGD([W1, W2], lr=0.05)
    big = torch.zeros(1_000_000)  # a scratch tensor, freed after the first step
    ref = weakref.ref(big)
    for step in range(20):
        loss = ((torch.tanh(X @ W1) @ W2 - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == 0:
            del big
            gc.collect()
            print("scratch freed:", ref() is None)
    print("at end, freed:", ref() is None)


main()
