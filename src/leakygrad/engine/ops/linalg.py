"""Matrix multiplication, with NumPy's rules: batched over leading axes (which broadcast), and 1-D operands
treated as a row (on the left) or a column (on the right) vector.

For C = A @ B, with G = dL/dC:   dL/dA = G @ B^T   and   dL/dB = A^T @ G.
(Each entry C[i, j] = sum_k A[i, k] B[k, j]: A[i, k] meets every B[k, j] in row i of C, and so on.)
"""

from __future__ import annotations

import math

import numpy as np

from leakygrad.engine.errors import OpError
from leakygrad.engine.op import Op


def as_rows(a):
    """(..., features) -> (rows, features), the leading axes flattened into rows (an array or a Tensor; the row
    count is spelled out, as -1 cannot be inferred when there are no features)."""
    return a if a.ndim == 2 else a.reshape(math.prod(a.shape[:-1]), a.shape[-1])


class MatMul(Op):
    name = "matmul"

    def forward(self, a, b):
        if a.ndim == 0 or b.ndim == 0:
            raise OpError(f"matmul: {a.shape} @ {b.shape}: both operands need at least one dimension; use * to scale")
        inner_a = a.shape[-1]
        inner_b = b.shape[0] if b.ndim == 1 else b.shape[-2]
        if inner_a != inner_b:
            raise OpError(f"matmul: {a.shape} @ {b.shape}: inner dimensions {inner_a} and {inner_b} differ")
        try:
            if a.ndim > 2 and b.ndim > 2:  # batches of matrices on both sides: their batch axes must broadcast
                np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ValueError:
            raise OpError(
                f"matmul: {a.shape} @ {b.shape}: batch dimensions {a.shape[:-2]} and {b.shape[:-2]} "
                "cannot be broadcast together"
            ) from None
        if a.ndim > 2 and b.ndim == 2:
            # A batch of rows times one matrix is one big matrix product: NumPy's batched matmul would loop
            # over the batch (some 20x slower at transformer sizes).
            return (as_rows(a) @ b).reshape(a.shape[:-1] + (b.shape[1],))
        return np.matmul(a, b)

    def backward(self, grad):
        a, b = self.inputs
        want_a, want_b = self.needs_input_grad
        if a.ndim == 1 and b.ndim == 1:  # dot product: a scalar
            return (grad * b if want_a else None), (grad * a if want_b else None)
        if a.ndim == 1:  # (k,) @ (..., k, m): a is a row vector
            grad_a = (grad.unsqueeze(-2) @ b.mT).squeeze(-2).sum_to(a.shape) if want_a else None
            grad_b = (a.unsqueeze(-1) * grad.unsqueeze(-2)).sum_to(b.shape) if want_b else None
            return grad_a, grad_b
        if b.ndim == 1:  # (..., n, k) @ (k,): b is a column vector
            grad_a = (grad.unsqueeze(-1) * b).sum_to(a.shape) if want_a else None
            grad_b = (a.mT @ grad.unsqueeze(-1)).squeeze(-1).sum_to(b.shape) if want_b else None
            return grad_a, grad_b
        grad_a = (grad @ b.mT).sum_to(a.shape) if want_a else None
        if not want_b:
            grad_b = None
        elif b.ndim == 2 and a.ndim > 2:
            # A batch of inputs times one weight matrix: the batch sum of A_i^T G_i is one big matmul.
            grad_b = as_rows(a).T @ as_rows(grad)
        else:
            grad_b = (a.mT @ grad).sum_to(b.shape)
        return grad_a, grad_b
