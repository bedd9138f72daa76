"""Synthetic tasks, each small enough to train on in seconds and built to show one thing.

- `blobs`: Gaussian clusters, linearly separable when the clusters are apart; the first classifier.
- `spirals`: CS231n's interleaved spirals; a linear model fails, a small MLP succeeds.
- `teacher_regression`: targets from a random "teacher" network; a student of the same shape can reach
  zero loss, so any remaining loss is the optimiser's fault.
- `adding_problem`: Hochreiter & Schmidhuber's long-range memory test for recurrent nets.
- `copy_task`: remember a sequence over a long delay and repeat it (Arjovsky et al. 2016).

Every function takes a `seed` (an int for a fixed data set; None draws from leakygrad's generator, which
`leakygrad.manual_seed` seeds). Features are float32, class labels and symbols int64.
"""

from __future__ import annotations

import numpy as np

from leakygrad.engine.creation import generator


def _counts(task: str, **counts) -> None:
    """Refuse a count that is not a whole number, or is below its minimum: `counts` maps name -> (value, minimum)."""
    for name, (value, minimum) in counts.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{task}: {name} must be a whole number, got {value!r}")
        if value < minimum:
            raise ValueError(f"{task}: {name} must be at least {minimum}, got {value}")


def _rng(seed: int | None) -> np.random.Generator:
    return np.random.default_rng(seed) if seed is not None else generator()


def blobs(
    n_samples: int = 300, n_classes: int = 3, n_features: int = 2, std: float = 1.0, spread: float = 5.0, seed=None
):
    """Gaussian clusters: `(X, y)`, X of shape (n_samples, n_features), y the cluster of each point.

    The cluster centres are drawn uniformly from [-spread, spread] in each coordinate, the points around
    them with standard deviation `std`; classes are balanced and the samples shuffled.
    """
    _counts("blobs", n_samples=(n_samples, 1), n_classes=(n_classes, 1), n_features=(n_features, 1))
    if n_samples < n_classes:
        raise ValueError(f"blobs: need n_classes >= 1 and at least one sample per class, got {n_samples}, {n_classes}")
    rng = _rng(seed)
    centers = rng.uniform(-spread, spread, size=(n_classes, n_features))
    y = np.arange(n_samples) % n_classes
    rng.shuffle(y)
    X = centers[y] + std * rng.standard_normal((n_samples, n_features))
    return X.astype(np.float32), y.astype(np.int64)


def spirals(n_per_class: int = 100, n_classes: int = 3, noise: float = 0.2, seed=None):
    """CS231n's spirals: `(X, y)` with X of shape (n_per_class * n_classes, 2), classes in order.

    Class j's points have radii evenly spaced in [0, 1] and angles evenly spaced over [4j, 4(j + 1)]
    radians plus Gaussian noise of standard deviation `noise`: point = r * (sin t, cos t).
    """
    _counts("spirals", n_per_class=(n_per_class, 1), n_classes=(n_classes, 1))
    rng = _rng(seed)
    X = np.zeros((n_per_class * n_classes, 2))
    y = np.zeros(n_per_class * n_classes, dtype=np.int64)
    for j in range(n_classes):
        rows = slice(n_per_class * j, n_per_class * (j + 1))
        radius = np.linspace(0.0, 1.0, n_per_class)
        angle = np.linspace(4.0 * j, 4.0 * (j + 1), n_per_class) + noise * rng.standard_normal(n_per_class)
        X[rows] = np.stack([radius * np.sin(angle), radius * np.cos(angle)], axis=1)
        y[rows] = j
    return X.astype(np.float32), y


def teacher_regression(
    n_samples: int = 256,
    n_in: int = 10,
    n_hidden: int = 32,
    n_out: int = 1,
    noise: float = 0.0,
    seed=None,
):
    """Inputs, and targets computed by a random one-hidden-layer tanh network (the teacher).

    X ~ N(0, 1); the teacher's weights are Gaussian with variance 1 / fan-in (so its outputs are of order
    one), biases N(0, 0.1^2); y = tanh(X @ W1 + b1) @ W2 + b2 + noise * N(0, 1).
    Returns `(X, y, teacher)` with y of shape (n_samples, n_out) and `teacher` the dict of the arrays
    W1, b1, W2, b2, so a student's weights can be compared with the truth.
    """
    _counts("teacher_regression", n_samples=(n_samples, 1), n_in=(n_in, 1), n_hidden=(n_hidden, 1), n_out=(n_out, 1))
    rng = _rng(seed)
    teacher = {
        "W1": rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in),
        "b1": 0.1 * rng.standard_normal(n_hidden),
        "W2": rng.standard_normal((n_hidden, n_out)) / np.sqrt(n_hidden),
        "b2": 0.1 * rng.standard_normal(n_out),
    }
    X = rng.standard_normal((n_samples, n_in))
    y = np.tanh(X @ teacher["W1"] + teacher["b1"]) @ teacher["W2"] + teacher["b2"]
    y = y + noise * rng.standard_normal(y.shape)
    teacher = {name: w.astype(np.float32) for name, w in teacher.items()}
    return X.astype(np.float32), y.astype(np.float32), teacher


def adding_problem(n_samples: int = 1000, seq_len: int = 50, seed=None):
    """The adding problem: `(X, y)`, X of shape (n_samples, seq_len, 2), y of shape (n_samples, 1).

    Each step carries two numbers: a value drawn uniformly from [0, 1], and a marker, 1 at exactly two
    steps (one in the first half of the sequence, one in the second) and 0 elsewhere. The target is the sum
    of the two marked values. Predicting the mean, 1, scores a mean squared error of 1/6, the baseline a
    recurrent net must beat, and it can only do so by carrying the first marked value across the
    sequence. (Hochreiter & Schmidhuber 1997, experiment 4; this is the common form of Le et al. 2015.)
    """
    _counts("adding_problem", n_samples=(n_samples, 1), seq_len=(seq_len, 2))  # (seq_len: a marker in each half)
    rng = _rng(seed)
    values = rng.uniform(0.0, 1.0, size=(n_samples, seq_len))
    half = seq_len // 2
    first = rng.integers(0, half, size=n_samples)
    second = rng.integers(half, seq_len, size=n_samples)
    markers = np.zeros((n_samples, seq_len))
    rows = np.arange(n_samples)
    markers[rows, first] = 1.0
    markers[rows, second] = 1.0
    X = np.stack([values, markers], axis=-1)
    y = (values[rows, first] + values[rows, second])[:, None]
    return X.astype(np.float32), y.astype(np.float32)


BLANK = 0  # the copy task's "nothing to see" symbol


def copy_task(n_samples: int = 1000, delay: int = 20, n_symbols: int = 8, copy_length: int = 10, seed=None):
    """The copy task: `(inputs, targets)`, integer sequences of length delay + 2 * copy_length.

    Symbols: 0 is blank, 1..n_symbols are data, n_symbols + 1 is the delimiter (vocabulary size
    n_symbols + 2). The input is `copy_length` random data symbols, `delay - 1` blanks, the delimiter, and
    `copy_length` blanks; the target is blank until the last `copy_length` steps, which must repeat the
    data symbols. Guessing blanks and then random symbols gives a cross-entropy of
    copy_length * log(n_symbols) / (delay + 2 * copy_length), the memoryless baseline.
    (Hochreiter & Schmidhuber 1997; the setting of Arjovsky, Shah & Bengio 2016.)
    """
    _counts(
        "copy_task", n_samples=(n_samples, 1), delay=(delay, 1), n_symbols=(n_symbols, 1), copy_length=(copy_length, 1)
    )
    rng = _rng(seed)
    length = delay + 2 * copy_length
    data = rng.integers(1, n_symbols + 1, size=(n_samples, copy_length))
    inputs = np.full((n_samples, length), BLANK, dtype=np.int64)
    targets = np.full((n_samples, length), BLANK, dtype=np.int64)
    inputs[:, :copy_length] = data
    inputs[:, copy_length + delay - 1] = n_symbols + 1  # the delimiter: "now repeat"
    targets[:, -copy_length:] = data
    return inputs, targets
