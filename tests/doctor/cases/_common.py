"""Shared by the labelled training scripts: arguments, data (generated, or scikit-learn's bundled digits), batches.

Each script in this folder is an ordinary PyTorch training script: `python SCRIPT.py [--steps N] [--seed S]`.
It keeps `model` and `losses` as globals so the tests can compare runs with and without the doctor.
"""

import argparse

import numpy as np
import torch


def parse(steps: int, description: str = ""):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--steps", type=int, default=steps)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    return args


def digits():
    """scikit-learn's 8x8 digits (1797 images, bundled: no download), standardised; X (N, 64) float32, y (N,)."""
    from sklearn.datasets import load_digits

    data = load_digits()
    x = data.data.astype(np.float32)
    x = (x - x.mean(0)) / (x.std(0) + 1e-6)
    return torch.from_numpy(x), torch.from_numpy(data.target.astype(np.int64))


def batches(x, y, size, seed, count=None):
    """Shuffled minibatches, epoch after epoch: `count` of them (endless when None)."""
    generator = torch.Generator().manual_seed(seed)
    served = 0
    while count is None or served < count:
        order = torch.randperm(len(x), generator=generator)
        for start in range(0, len(x) - size + 1, size):
            if count is not None and served >= count:
                return
            index = order[start : start + size]
            served += 1
            yield x[index], y[index]
