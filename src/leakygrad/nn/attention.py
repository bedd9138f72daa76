"""Causal self-attention and the transformer block: enough for a tiny GPT.

    x (N, L, E) -> q, k, v = x W_qkv^T + b, split in three, each split into heads (N, heads, L, E/heads)
                -> softmax(q k^T / sqrt(E/heads), future masked) v -> heads joined -> x W_proj^T + b

The parameters match PyTorch's `nn.MultiheadAttention` (`qkv.weight` is its `in_proj_weight`, `proj` its
`out_proj`), and `Block` matches `nn.TransformerEncoderLayer(norm_first=True, activation="gelu")` with a causal
mask, so weights copy across.
"""

from __future__ import annotations

from leakygrad.engine import Tensor
from leakygrad.engine.errors import OpError
from leakygrad.nn import functional as F
from leakygrad.nn.activation import GELU
from leakygrad.nn.layers import Dropout, Linear
from leakygrad.nn.module import Module, Sequential
from leakygrad.nn.norm import LayerNorm


class CausalSelfAttention(Module):
    """Multi-head self-attention in which position i sees positions 0..i only (a language model's view)."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True):
        super().__init__()
        if num_heads < 1:
            raise OpError(f"CausalSelfAttention: num_heads must be at least 1, got {num_heads}")
        if embed_dim % num_heads:
            raise OpError(f"CausalSelfAttention: embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        if not 0 <= dropout <= 1:
            raise OpError(f"CausalSelfAttention: dropout must be between 0 and 1, got {dropout}")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.qkv = Linear(embed_dim, 3 * embed_dim, bias=bias)
        self.proj = Linear(embed_dim, embed_dim, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim != 3 or x.shape[-1] != self.embed_dim:
            raise OpError(f"CausalSelfAttention: expects (N, L, {self.embed_dim}), got {x.shape}")
        n, length, embed = x.shape
        head_dim = embed // self.num_heads
        qkv = self.qkv(x)

        def heads(part: int) -> Tensor:  # (N, L, E) slice -> (N, heads, L, head_dim)
            block = qkv[:, :, part * embed : (part + 1) * embed]
            return block.reshape(n, length, self.num_heads, head_dim).transpose(0, 2, 1, 3)

        dropout = self.dropout if self.training else 0.0
        out = F.scaled_dot_product_attention(heads(0), heads(1), heads(2), is_causal=True, dropout_p=dropout)
        return self.proj(out.transpose(0, 2, 1, 3).reshape(n, length, embed))

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, dropout={self.dropout}"


class Block(Module):
    """A pre-norm transformer block: x + attention(LayerNorm(x)), then x + MLP(LayerNorm(x)).

    The residual additions give the gradient a path around each sublayer, as in a ResNet. Dropout where
    PyTorch's encoder layer has it: on the attention weights, after the MLP's activation, and on each
    sublayer's output before it is added back.
    """

    def __init__(self, embed_dim: int, num_heads: int, mlp_ratio: int = 4, dropout: float = 0.0):
        super().__init__()
        self.ln1 = LayerNorm(embed_dim)
        self.attn = CausalSelfAttention(embed_dim, num_heads, dropout)
        self.ln2 = LayerNorm(embed_dim)
        self.mlp = Sequential(
            Linear(embed_dim, mlp_ratio * embed_dim),
            Sequential(GELU(), Dropout(dropout)),  # (one slot: the linear layers keep their names, mlp.0 and mlp.2)
            Linear(mlp_ratio * embed_dim, embed_dim),
        )
        self.dropout = Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.dropout(self.attn(self.ln1(x)))
        return x + self.dropout(self.mlp(self.ln2(x)))
