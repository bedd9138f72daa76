"""`DataLoader`: arrays in, shuffled minibatches out.

    loader = DataLoader(X, y, batch_size=64, shuffle=True, seed=0)
    for epoch in range(10):
        for xb, yb in loader:          # leakygrad Tensors, a new order every epoch
            ...

With a seed, the sequence of orders over all epochs is the same every run; without one, the order is drawn
from leakygrad's generator, so `leakygrad.manual_seed(...)` makes it reproducible too.
"""

from __future__ import annotations

import math

import numpy as np

from leakygrad.engine.creation import generator
from leakygrad.engine.tensor import Tensor


class DataLoader:
    """Iterate over aligned arrays (same first axis) in minibatches.

    - `batch_size`: samples per batch; the last batch is smaller unless `drop_last=True` drops it.
    - `shuffle`: a new random order every pass (epoch); `seed` fixes the whole sequence of orders.
    - `as_tensor`: yield leakygrad Tensors (floating data becomes float32, as `Tensor(...)` does, unless
      `dtype` is given; integer labels stay integers); `False` yields NumPy arrays.

    With one array each batch is that array's batch; with several, a tuple of batches.
    """

    def __init__(
        self,
        *arrays,
        batch_size: int = 32,
        shuffle: bool = False,
        seed: int | None = None,
        drop_last: bool = False,
        as_tensor: bool = True,
        dtype=None,
    ):
        if not arrays:
            raise ValueError("DataLoader: give at least one array, e.g. DataLoader(X, y, batch_size=32)")
        self.arrays = [a.data if isinstance(a, Tensor) else np.asarray(a) for a in arrays]
        for i, array in enumerate(self.arrays):
            if array.ndim == 0:
                raise ValueError(
                    f"DataLoader: array {i} is a single value ({type(arrays[i]).__name__}), not an array of samples; "
                    "samples run along the first axis"
                )
            if len(array) != len(self.arrays[0]):
                raise ValueError(
                    "DataLoader: every array needs one entry per sample (the same first axis), but array 0 has "
                    f"{len(self.arrays[0])} samples and array {i} has {len(array)} (shapes "
                    f"{self.arrays[0].shape} and {array.shape})"
                )
        if len(self.arrays[0]) == 0:
            raise ValueError(f"DataLoader: the arrays hold no samples (shape {self.arrays[0].shape}): nothing to batch")
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"DataLoader: batch_size must be a positive integer, got {batch_size!r}")
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.as_tensor = as_tensor
        self.dtype = dtype
        self._rng = np.random.default_rng(seed) if seed is not None else None

    @property
    def n_samples(self) -> int:
        return len(self.arrays[0])

    def __len__(self) -> int:
        """The number of batches per pass."""
        if self.drop_last:
            return self.n_samples // self.batch_size
        return math.ceil(self.n_samples / self.batch_size)

    def __iter__(self):
        if self.shuffle:
            order = (self._rng or generator()).permutation(self.n_samples)
        else:
            order = np.arange(self.n_samples)
        for b in range(len(self)):
            index = order[b * self.batch_size : (b + 1) * self.batch_size]
            batch = tuple(self._convert(array[index]) for array in self.arrays)
            yield batch[0] if len(batch) == 1 else batch

    def _convert(self, batch: np.ndarray):
        if not self.as_tensor:
            return batch
        if self.dtype is not None and batch.dtype.kind == "f":
            return Tensor(batch, dtype=self.dtype)
        return Tensor(batch)
