"""The ops, by family. Each op is a class with `forward` (NumPy) and `backward` (Tensors) side by side.

- `elementwise`: arithmetic, exp/log/sqrt, abs/sign, clip, maximum/minimum, where, erf, casts, comparisons
- `activations`: sigmoid, tanh, relu, leaky_relu, elu, gelu, silu, softplus, hardtanh
- `reductions`: sum, mean, var, max, min, logsumexp, softmax, log_softmax
- `linalg`: matmul
- `shape`: reshape, transpose, broadcast, sum_to, indexing, concatenate, stack, pad
- `nn`: the fused ops layers need (used by `leakygrad.nn`): conv2d and its two gradients, im2col/col2im,
  max pooling, cross-entropy from logits, and whole-sequence RNN/LSTM/GRU recurrences with NumPy BPTT
"""
