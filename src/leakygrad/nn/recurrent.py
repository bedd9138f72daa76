"""Recurrent layers: RNN (tanh or relu), LSTM and GRU over whole sequences, and their one-step cells.

Parameters are named, shaped, ordered and initialised as in PyTorch (`weight_ih_l0` of shape (gates*H, I),
`weight_hh_l0` (gates*H, H), `bias_ih_l0`, `bias_hh_l0`, gates in PyTorch's order; all uniform in
[-1/sqrt(H), 1/sqrt(H)]), so a `state_dict` copies 1:1 between the two.

Two ways to run a sequence, same numbers:

- `fused=True` (the default): one op per layer (`leakygrad.engine.ops.nn`) runs all time steps, forward and
  backpropagation through time, in NumPy. Fast: a training step costs about as much as hand-written NumPy.
- `fused=False`: the cell functions of `leakygrad.nn.functional` (`F.lstm_cell`, ...), applied step by step
  with Tensor operations. Every gate of every step is
  a tensor in the graph, which you can read, hook and draw; slower, by the Python overhead of a few dozen
  small ops per step.

Second derivatives work either way: the fused op differentiates the composed version when asked to.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from leakygrad.engine import Tensor
from leakygrad.engine.errors import OpError, what_is
from leakygrad.engine.ops.nn import GRUSequence, LSTMSequence, RNNSequence
from leakygrad.engine.tensor import as_tensor
from leakygrad.nn import functional as F
from leakygrad.nn import init
from leakygrad.nn.module import Module, Parameter

GATES = {"rnn": 1, "lstm": 4, "gru": 3}

# ---------------------------------------------------------------------------------------------------- composed


def rnn_sequence(x, h0, w_ih, w_hh, b_ih, b_hh, nonlinearity="tanh") -> Tensor:
    """All states (T, N, H) of an RNN layer over x (T, N, I), one `rnn_cell` per step."""
    h, states = h0, []
    for t in range(x.shape[0]):
        h = F.rnn_cell(x[t], h, w_ih, w_hh, b_ih, b_hh, nonlinearity)
        states.append(h)
    return F.stack(states)


def rnn_tanh_sequence(*inputs) -> Tensor:
    return rnn_sequence(*inputs, nonlinearity="tanh")


def rnn_relu_sequence(*inputs) -> Tensor:
    return rnn_sequence(*inputs, nonlinearity="relu")


def lstm_sequence(x, h0, c0, w_ih, w_hh, b_ih, b_hh) -> Tensor:
    """All states of an LSTM layer, stacked as (2, T, N, H): [0] the h_t, [1] the c_t (the fused op's layout)."""
    h, c, hs, cs = h0, c0, [], []
    for t in range(x.shape[0]):
        h, c = F.lstm_cell(x[t], h, c, w_ih, w_hh, b_ih, b_hh)
        hs.append(h)
        cs.append(c)
    return F.stack([F.stack(hs), F.stack(cs)])


def gru_sequence(x, h0, w_ih, w_hh, b_ih, b_hh) -> Tensor:
    """All states (T, N, H) of a GRU layer over x (T, N, I), one `gru_cell` per step."""
    h, states = h0, []
    for t in range(x.shape[0]):
        h = F.gru_cell(x[t], h, w_ih, w_hh, b_ih, b_hh)
        states.append(h)
    return F.stack(states)


# ---------------------------------------------------------------------------------------------------- layers


class _Recurrent(Module):
    """What RNN, LSTM and GRU share: parameters, shapes, layers, batch_first, initial states."""

    mode = ""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        *,
        fused: bool = True,
    ):
        super().__init__()
        name = type(self).__name__
        # PyTorch's arguments in PyTorch's positions; those not supported are refused by name, not ignored
        F._refuse_unsupported(name, bidirectional=(bidirectional, False), proj_size=(proj_size, 0))
        if num_layers < 1:
            raise OpError(f"{name}: num_layers must be at least 1, got {num_layers}")
        if hidden_size < 1:
            raise OpError(f"{name}: hidden_size must be at least 1, got {hidden_size}")
        if not 0 <= dropout <= 1:
            raise OpError(f"{name}: dropout must be between 0 and 1, got {dropout}")
        if dropout > 0 and num_layers == 1:  # (PyTorch warns too: there is no layer boundary to drop out at)
            warnings.warn(
                f"{name}: dropout={dropout} does nothing with num_layers=1: it is applied between layers, to the "
                "outputs of every layer but the last",
                stacklevel=2,
            )
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout, self.fused = bias, batch_first, dropout, fused
        rows = GATES[self.mode] * hidden_size
        for layer in range(num_layers):
            width = input_size if layer == 0 else hidden_size
            setattr(self, f"weight_ih_l{layer}", Parameter(np.empty((rows, width), dtype=np.float32)))
            setattr(self, f"weight_hh_l{layer}", Parameter(np.empty((rows, hidden_size), dtype=np.float32)))
            if bias:
                setattr(self, f"bias_ih_l{layer}", Parameter(np.empty(rows, dtype=np.float32)))
                setattr(self, f"bias_hh_l{layer}", Parameter(np.empty(rows, dtype=np.float32)))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.hidden_size)
        for parameter in self.parameters():
            init.uniform_(parameter, -bound, bound)

    def layer_parameters(self, layer: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """(w_ih, w_hh, b_ih, b_hh) of one layer; without bias, zero constants in place of the biases."""
        w_ih, w_hh = getattr(self, f"weight_ih_l{layer}"), getattr(self, f"weight_hh_l{layer}")
        if self.bias:
            return w_ih, w_hh, getattr(self, f"bias_ih_l{layer}"), getattr(self, f"bias_hh_l{layer}")
        zeros = Tensor(np.zeros(w_ih.shape[0], dtype=w_ih.dtype), dtype=w_ih.dtype)
        return w_ih, w_hh, zeros, zeros

    def _time_major(self, x: Tensor) -> tuple[Tensor, bool]:
        """x as (T, N, I); an unbatched (T, I) sequence becomes a batch of one."""
        name = type(self).__name__
        x = as_tensor(x)  # (a NumPy array is taken as a constant, as by the other layers)
        if x.ndim not in (2, 3) or x.shape[-1] != self.input_size:
            layout = "(N, T, input_size)" if self.batch_first else "(T, N, input_size)"
            raise OpError(f"{name}: expects a sequence {layout} with input_size {self.input_size}, got {x.shape}")
        if (x.shape[1] if x.ndim == 3 and self.batch_first else x.shape[0]) == 0:
            raise OpError(f"{name}: the sequence {x.shape} has no time steps")
        if x.ndim == 2:
            return x.unsqueeze(1), True
        return (x.transpose(1, 0, 2) if self.batch_first else x), False

    def _initial_state(self, state, batch: int, dtype, unbatched: bool, what: str = "h0") -> Tensor:
        expected = (self.num_layers, self.hidden_size) if unbatched else (self.num_layers, batch, self.hidden_size)
        if state is None:
            return Tensor(np.zeros((self.num_layers, batch, self.hidden_size), dtype=dtype), dtype=dtype)
        if not isinstance(state, Tensor):
            name = type(self).__name__
            raise OpError(f"{name}: {what} should be a Tensor of shape {expected}, got {type(state).__name__}")
        if state.shape != expected:
            axes = "(num_layers, hidden_size)" if unbatched else "(num_layers, batch, hidden_size)"
            raise OpError(f"{type(self).__name__}: {what} should have shape {expected} {axes}, got {state.shape}")
        _check_same_dtype(type(self).__name__, what, state, dtype)
        return state.unsqueeze(1) if unbatched else state

    def _between_layers(self, layer: int, sequence: Tensor) -> Tensor:
        last = layer == self.num_layers - 1
        return sequence if last else F.dropout(sequence, self.dropout, self.training)

    def _output(self, sequence: Tensor, unbatched: bool) -> Tensor:
        if unbatched:
            return sequence.squeeze(1)
        return sequence.transpose(1, 0, 2) if self.batch_first else sequence

    def extra_repr(self) -> str:
        defaults = (("num_layers", 1), ("nonlinearity", "tanh"), ("bias", True), ("batch_first", False), ("dropout", 0))
        extras = "".join(
            f", {name}={getattr(self, name)}" for name, default in defaults if getattr(self, name, default) != default
        )
        return f"{self.input_size}, {self.hidden_size}{extras}, fused={self.fused}"


class RNN(_Recurrent):
    """Elman RNN: h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), act = tanh (default) or relu.

    `forward(x, h0=None)` with x (T, N, I) (or (N, T, I) with batch_first, or unbatched (T, I)) and h0
    (num_layers, N, H) returns (output, h_n): output holds the last layer's state at every step (T, N, H),
    h_n every layer's final state (num_layers, N, H).
    """

    mode = "rnn"

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        *,
        fused: bool = True,
    ):
        F._check_nonlinearity("RNN", nonlinearity)
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, fused=fused)

    def forward(self, x: Tensor, h0: Tensor | None = None) -> tuple[Tensor, Tensor]:
        sequence, unbatched = self._time_major(x)
        h0 = self._initial_state(h0, sequence.shape[1], sequence.dtype, unbatched)
        composed = rnn_tanh_sequence if self.nonlinearity == "tanh" else rnn_relu_sequence
        finals = []
        for layer in range(self.num_layers):
            inputs = (sequence, h0[layer]) + self.layer_parameters(layer)
            if self.fused:
                sequence = RNNSequence.apply(*inputs, nonlinearity=self.nonlinearity, composed=composed)
            else:
                sequence = composed(*inputs)
            finals.append(sequence[-1])
            sequence = self._between_layers(layer, sequence)
        h_n = F.stack(finals)
        return self._output(sequence, unbatched), (h_n.squeeze(1) if unbatched else h_n)


class LSTM(_Recurrent):
    """Long short-term memory (Hochreiter and Schmidhuber 1997), PyTorch's equations and gate order:

        i, f, g, o = x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh, split in four (input, forget, cell, output)
        c_t = sigmoid(f) c_{t-1} + sigmoid(i) tanh(g),    h_t = sigmoid(o) tanh(c_t)

    `forward(x, (h0, c0)=None)` returns (output, (h_n, c_n)): output (T, N, H) the last layer's h at every
    step, h_n and c_n (num_layers, N, H) the final states. The cell state c is the "constant error carousel":
    along it the gradient is multiplied only by the forget gates, which is why LSTMs remember longer.
    """

    mode = "lstm"

    def forward(self, x: Tensor, state: tuple[Tensor, Tensor] | None = None):
        sequence, unbatched = self._time_major(x)
        if state is not None and (not isinstance(state, (tuple, list)) or len(state) != 2):
            raise OpError(f"LSTM: the initial state should be a pair (h0, c0), got {what_is(state)}")
        h0, c0 = (None, None) if state is None else state
        h0 = self._initial_state(h0, sequence.shape[1], sequence.dtype, unbatched, "h0")
        c0 = self._initial_state(c0, sequence.shape[1], sequence.dtype, unbatched, "c0")
        final_h, final_c = [], []
        for layer in range(self.num_layers):
            inputs = (sequence, h0[layer], c0[layer]) + self.layer_parameters(layer)
            if self.fused:
                states = LSTMSequence.apply(*inputs, composed=lstm_sequence)
            else:
                states = lstm_sequence(*inputs)
            final_h.append(states[0, -1])
            final_c.append(states[1, -1])
            sequence = self._between_layers(layer, states[0])
        h_n, c_n = F.stack(final_h), F.stack(final_c)
        if unbatched:
            h_n, c_n = h_n.squeeze(1), c_n.squeeze(1)
        return self._output(sequence, unbatched), (h_n, c_n)


class GRU(_Recurrent):
    """Gated recurrent unit (Cho et al. 2014), PyTorch's equations and gate order (reset, update, new):

        r = sigmoid(x W_ir^T + b_ir + h W_hr^T + b_hr),   z = (the same with the z blocks)
        n = tanh(x W_in^T + b_in + r (h W_hn^T + b_hn)),  h_t = (1 - z) n + z h_{t-1}

    `forward(x, h0=None)` returns (output, h_n), as RNN.
    """

    mode = "gru"

    def forward(self, x: Tensor, h0: Tensor | None = None) -> tuple[Tensor, Tensor]:
        sequence, unbatched = self._time_major(x)
        h0 = self._initial_state(h0, sequence.shape[1], sequence.dtype, unbatched)
        finals = []
        for layer in range(self.num_layers):
            inputs = (sequence, h0[layer]) + self.layer_parameters(layer)
            sequence = GRUSequence.apply(*inputs, composed=gru_sequence) if self.fused else gru_sequence(*inputs)
            finals.append(sequence[-1])
            sequence = self._between_layers(layer, sequence)
        h_n = F.stack(finals)
        return self._output(sequence, unbatched), (h_n.squeeze(1) if unbatched else h_n)


def _check_same_dtype(owner: str, what: str, state: Tensor, dtype) -> None:
    """A state in another precision than the input is refused (as in PyTorch), not silently promoted."""
    if state.dtype != dtype:
        raise OpError(f"{owner}: {what} is {state.dtype} but the input is {dtype}; give both the same dtype")


# ---------------------------------------------------------------------------------------------------- cells


class _Cell(Module):
    mode = ""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True):
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        rows = GATES[self.mode] * hidden_size
        self.weight_ih = Parameter(np.empty((rows, input_size), dtype=np.float32))
        self.weight_hh = Parameter(np.empty((rows, hidden_size), dtype=np.float32))
        self.bias_ih = Parameter(np.empty(rows, dtype=np.float32)) if bias else None
        self.bias_hh = Parameter(np.empty(rows, dtype=np.float32)) if bias else None
        bound = 1 / math.sqrt(hidden_size)
        for parameter in self.parameters():
            init.uniform_(parameter, -bound, bound)

    def _check_input(self, x: Tensor) -> None:
        if x.ndim not in (1, 2) or x.shape[-1] != self.input_size:
            size = self.input_size
            raise OpError(f"{type(self).__name__}: expects input (batch, {size}) or ({size},), got {x.shape}")

    def _state(self, x: Tensor, state, what: str = "h") -> Tensor:
        """The state to go with input x: zeros when none is given, else the one given, checked. (A state of
        another shape would broadcast silently: one (H,) state for a whole batch, or rows of h taken for c.)"""
        expected = x.shape[:-1] + (self.hidden_size,)
        if state is None:
            return Tensor(np.zeros(expected, dtype=x.dtype), dtype=x.dtype)
        name = type(self).__name__
        if not isinstance(state, Tensor):
            raise OpError(f"{name}: {what} should be a Tensor of shape {expected}, got {what_is(state)}")
        if state.shape != expected:
            raise OpError(
                f"{name}: {what} should have shape {expected} for an input of shape {x.shape}, got {state.shape}"
            )
        _check_same_dtype(name, what, state, x.dtype)
        return state

    def extra_repr(self) -> str:
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        extra = "" if nonlinearity == "tanh" else f", nonlinearity={nonlinearity}"
        return f"{self.input_size}, {self.hidden_size}, bias={self.bias_ih is not None}{extra}"


class RNNCell(_Cell):
    """One RNN step: `cell(x, h)` with x (N, I), h (N, H) returns h' (N, H)."""

    mode = "rnn"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh"):
        F._check_nonlinearity("RNNCell", nonlinearity)
        super().__init__(input_size, hidden_size, bias)
        self.nonlinearity = nonlinearity

    def forward(self, x: Tensor, h: Tensor | None = None) -> Tensor:
        self._check_input(x)
        h = self._state(x, h)
        return F.rnn_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh, self.nonlinearity)


class LSTMCell(_Cell):
    """One LSTM step: `cell(x, (h, c))` returns (h', c')."""

    mode = "lstm"

    def forward(self, x: Tensor, state: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        self._check_input(x)
        if state is not None and (not isinstance(state, (tuple, list)) or len(state) != 2):
            raise OpError(f"LSTMCell: the state should be a pair (h, c), got {what_is(state)}")
        h, c = (None, None) if state is None else state
        h, c = self._state(x, h, "h"), self._state(x, c, "c")
        return F.lstm_cell(x, h, c, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)


class GRUCell(_Cell):
    """One GRU step: `cell(x, h)` returns h'."""

    mode = "gru"

    def forward(self, x: Tensor, h: Tensor | None = None) -> Tensor:
        self._check_input(x)
        h = self._state(x, h)
        return F.gru_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
