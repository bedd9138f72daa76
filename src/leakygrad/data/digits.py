"""The 8x8 handwritten digits bundled with scikit-learn (1797 images, 10 classes; no download).

    split = load_digits()                       # scaled to [0, 1], 75% train / 25% test
    split.X_train.shape                         # (1347, 64); images=True gives (n, 1, 8, 8) for Conv2d

scikit-learn is an optional extra: `pip install 'leakygrad[digits]'`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class DigitsSplit(NamedTuple):
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray


def load_digits(test_fraction: float = 0.25, seed: int = 0, images: bool = False) -> DigitsSplit:
    """A deterministic, stratified train/test split of the digits, pixels scaled from 0..16 to [0, 1].

    Each class contributes `round(test_fraction * its size)` images to the test set, chosen with `seed`;
    both sets are then shuffled with the same seed. Pixels are float32, labels int64. With `images=True`
    the inputs have shape (n, 1, 8, 8) (channels first, for Conv2d), otherwise (n, 64).
    """
    try:
        from sklearn.datasets import load_digits as sklearn_load_digits
    except ImportError as error:
        raise ImportError(
            "load_digits needs scikit-learn, which ships the 8x8 digits data set (nothing is downloaded). "
            "Install it with: pip install 'leakygrad[digits]'   (or: pip install scikit-learn)"
        ) from error
    if not 0 < test_fraction < 1:
        raise ValueError(f"load_digits: test_fraction must be between 0 and 1, got {test_fraction}")

    digits = sklearn_load_digits()
    X = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)

    rng = np.random.default_rng(seed)
    test_rows = []
    for label in np.unique(y):
        rows = rng.permutation(np.flatnonzero(y == label))
        test_rows.extend(rows[: round(test_fraction * len(rows))])
    if not 0 < len(test_rows) < len(y):
        empty = "test" if not test_rows else "training"
        raise ValueError(
            f"load_digits: test_fraction {test_fraction} leaves the {empty} set empty (each class gives "
            "round(test_fraction x its size) images to the test set): use a fraction between 0.01 and 0.99"
        )
    is_test = np.zeros(len(y), dtype=bool)
    is_test[test_rows] = True
    train = rng.permutation(np.flatnonzero(~is_test))
    test = rng.permutation(np.flatnonzero(is_test))

    if images:
        X = X.reshape(-1, 1, 8, 8)
    return DigitsSplit(X[train], y[train], X[test], y[test])
