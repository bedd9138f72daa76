"""Layers and losses built on the engine: every layer's forward is plain Tensor code, its gradients come from
the engine. Names, shapes, parameter layouts and defaults follow PyTorch, so knowledge (and weights) carry over.

- `Module`, `Parameter`, `Sequential`, `ModuleList`, `ModuleDict`: the containers (`module.py`)
- layers: `Linear`, `Embedding`, `Flatten`, `Dropout`, `Identity` (`layers.py`); `Conv2d`, `MaxPool2d`,
  `AvgPool2d` (`conv.py`); `BatchNorm1d`, `BatchNorm2d`, `LayerNorm` (`norm.py`); `RNN`, `LSTM`, `GRU` and
  their cells (`recurrent.py`); `CausalSelfAttention`, `Block` (`attention.py`); activations (`activation.py`)
- losses as modules (`loss.py`) and as functions (`functional.py`, with the layers' math)
- `init`: weight initialisation
"""

from leakygrad.nn import functional, init  # noqa: F401
from leakygrad.nn.activation import (  # noqa: F401
    CELU,
    ELU,
    GELU,
    SELU,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSoftmax,
    Mish,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
    Threshold,
)
from leakygrad.nn.attention import Block, CausalSelfAttention  # noqa: F401
from leakygrad.nn.conv import AvgPool2d, Conv2d, MaxPool2d  # noqa: F401
from leakygrad.nn.layers import Dropout, Embedding, Flatten, Identity, Linear  # noqa: F401
from leakygrad.nn.loss import (  # noqa: F401
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from leakygrad.nn.module import (  # noqa: F401
    IncompatibleKeys,
    Module,
    ModuleDict,
    ModuleList,
    Parameter,
    Sequential,
    StateDictError,
)
from leakygrad.nn.norm import BatchNorm1d, BatchNorm2d, LayerNorm  # noqa: F401
from leakygrad.nn.recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell  # noqa: F401
