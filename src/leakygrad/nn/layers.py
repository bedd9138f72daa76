"""The basic layers: Linear, Embedding, Flatten, Dropout, Identity."""

from __future__ import annotations

import math

import numpy as np

from leakygrad.engine import Tensor
from leakygrad.engine.errors import OpError
from leakygrad.nn import functional as F
from leakygrad.nn import init
from leakygrad.nn.module import Module, Parameter


class Linear(Module):
    """y = x W^T + b, with W of shape (out_features, in_features), as in PyTorch.

    Initialised as PyTorch does: W and b uniform in [-1/sqrt(in_features), 1/sqrt(in_features)].
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(np.empty((out_features, in_features), dtype=np.float32))
        self.bias = Parameter(np.empty(out_features, dtype=np.float32)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # kaiming_uniform_ with a = sqrt(5) gives the bound 1 / sqrt(fan_in): PyTorch's default, kept for parity
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim == 0 or x.shape[-1] != self.in_features:
            raise OpError(f"{self!r}: expects inputs whose last dimension is {self.in_features}, got shape {x.shape}")
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Embedding(Module):
    """A table of `num_embeddings` vectors of size `embedding_dim`; integer indices in, their rows out.

    Initialised N(0, 1), as in PyTorch. The row `padding_idx`, if given, starts at zero and gets no gradient.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None and not -num_embeddings <= padding_idx < num_embeddings:
            raise OpError(f"Embedding: padding_idx {padding_idx} is not a row of a table of {num_embeddings}")
        self.padding_idx = None if padding_idx is None else padding_idx % num_embeddings
        self.weight = Parameter(np.empty((num_embeddings, embedding_dim), dtype=np.float32))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight.data[self.padding_idx] = 0

    def forward(self, indices) -> Tensor:
        return F.embedding(indices, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        padding = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{padding}"


class Flatten(Module):
    """Merge the dimensions start_dim..end_dim into one: (N, C, H, W) -> (N, C*H*W) by default."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Tensor) -> Tensor:
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Dropout(Module):
    """In training, zero each element with probability p and scale the rest by 1/(1-p); in eval, pass through.

    `inplace=True` is accepted, for code ported from PyTorch, and computes out of place: the same values and
    gradients, but the input tensor is not overwritten as PyTorch's is. (leakygrad's tensors have no version
    counters, so overwriting an input that a graph still reads could not be caught.)"""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0 <= p <= 1:
            raise OpError(f"Dropout: p must be between 0 and 1, got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"  # (PyTorch shows inplace here even when it is False)


class Identity(Module):
    """Returns its input (a placeholder, e.g. to switch a layer off). As in PyTorch, it takes and ignores any
    arguments, so that it can stand in for the layer it replaces: `Identity(54, unused_argument=0.1)`."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x
