"""Recurrent layers: RNN, LSTM, GRU (multi-layer, bidirectional) and their cells, with PyTorch's parameter names.

Parameters are ``weight_ih_l{k}``, ``weight_hh_l{k}``, ``bias_ih_l{k}``, ``bias_hh_l{k}`` (``_reverse`` for the
backward direction, ``weight_hr_l{k}`` for a projected LSTM), gates stacked as (i, f, g, o) for the LSTM and
(r, z, n) for the GRU, so state dicts interchange with PyTorch's.
"""

from __future__ import annotations

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

import math
from typing import Any

import lucid_core as lc
from lucid_core import Parameter, Tensor

from .. import functional as F
from .. import init
from ..functional._recurrent import gru_step, lstm_step, rnn_step
from ..module import Module

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


class _Unstack(lc.Function):
    """The time steps of a sequence as separate tensors; backward stacks their gradients (no per-step scatter)."""

    native = True
    linear = True  # forward mode: the op itself on the tangents

    @staticmethod
    def forward(ctx, x):
        return tuple(x[i, ...] for i in range(x.shape[0]))  # the standard wants every axis covered

    @staticmethod
    def backward(ctx, *grads):
        x = ctx.inputs[0]
        zero = None
        parts = []
        for g in grads:
            if g is None:
                if zero is None:
                    zero = lc.zeros(x.shape[1:], dtype=x.dtype, device=x.device)
                g = zero
            parts.append(g)
        return lc.stack(parts, axis=0)


def _steps(x: Tensor) -> tuple[Tensor, ...]:
    if x.shape[0] == 1:
        return (x[0],)
    return _Unstack.apply(x)


class RNNBase(Module):
    """Shared machinery of RNN, LSTM and GRU: parameters, state checks and the layer/direction loops."""

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        if mode not in _GATES:
            raise ValueError(f"{name}: unknown mode {mode!r}; expected one of {sorted(_GATES)}")
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError(f"{name}: hidden_size must be a positive int, got {hidden_size!r}")
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError(f"{name}: num_layers must be a positive int, got {num_layers!r}")
        if not 0.0 <= float(dropout) <= 1.0 or isinstance(dropout, bool):
            raise ValueError(f"{name}: dropout must be a number in [0, 1], got {dropout!r}")
        if proj_size < 0 or (proj_size and mode != "LSTM"):
            raise ValueError(f"{name}: proj_size must be >= 0 and is only supported by LSTM, got {proj_size}")
        if proj_size >= hidden_size:
            raise ValueError(f"{name}: proj_size ({proj_size}) must be smaller than hidden_size ({hidden_size})")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        gates = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        directions = 2 if bidirectional else 1
        for layer in range(num_layers):
            layer_in = input_size if layer == 0 else real_hidden * directions
            for d in range(directions):
                sfx = f"_l{layer}" + ("_reverse" if d == 1 else "")
                setattr(self, "weight_ih" + sfx, Parameter(lc.empty((gates, layer_in), dtype=dtype, device=device)))
                setattr(self, "weight_hh" + sfx, Parameter(lc.empty((gates, real_hidden), dtype=dtype, device=device)))
                if bias:
                    setattr(self, "bias_ih" + sfx, Parameter(lc.empty((gates,), dtype=dtype, device=device)))
                    setattr(self, "bias_hh" + sfx, Parameter(lc.empty((gates,), dtype=dtype, device=device)))
                if proj_size > 0:
                    setattr(
                        self,
                        "weight_hr" + sfx,
                        Parameter(lc.empty((proj_size, hidden_size), dtype=dtype, device=device)),
                    )
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's init: every weight and bias ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for p in self.parameters():
            init.uniform_(p, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """A no-op kept for PyTorch compatibility (there is no cuDNN weight buffer here)."""

    def _layer_params(self, layer: int, reverse: bool) -> tuple[Any, ...]:
        sfx = f"_l{layer}" + ("_reverse" if reverse else "")
        get = self._parameters.get
        return (
            get("weight_ih" + sfx),
            get("weight_hh" + sfx),
            get("bias_ih" + sfx),
            get("bias_hh" + sfx),
            get("weight_hr" + sfx),
        )

    def _check_input(self, x: Any) -> bool:
        name = type(self).__name__
        if not isinstance(x, Tensor):
            raise TypeError(f"{name}: expected a Tensor input, got {type(x).__name__}")
        layout = "(N, L, H_in)" if self.batch_first else "(L, N, H_in)"
        if x.ndim not in (2, 3):
            raise ValueError(f"{name}: expected input with 3 dimensions {layout} or 2 (L, H_in), got shape {x.shape}")
        if x.shape[-1] != self.input_size:
            raise ValueError(f"{name}: input has {x.shape[-1]} features but input_size is {self.input_size}")
        return x.ndim == 2

    def _check_state(self, h: Any, batch: int, size: int, unbatched: bool, what: str) -> Tensor:
        name = type(self).__name__
        want = (self.num_layers * (2 if self.bidirectional else 1),) + (() if unbatched else (batch,)) + (size,)
        if not isinstance(h, Tensor) or h.shape != want:
            raise ValueError(f"{name}: expected {what} of shape {want}, got {getattr(h, 'shape', type(h).__name__)}")
        return h

    def _run(self, x: Tensor, h0: Tensor, c0: Tensor | None) -> tuple[Tensor, Tensor, Tensor | None]:
        """x (L, N, H_in), states (layers * dirs, N, H) -> output (L, N, dirs * H), h_n, c_n."""
        directions = 2 if self.bidirectional else 1
        hs, cs = [], []
        layer_in = x
        for layer in range(self.num_layers):
            outs = []
            for d in range(directions):
                w_ih, w_hh, b_ih, b_hh, w_hr = self._layer_params(layer, d == 1)
                k = layer * directions + d
                gi = _steps(F.linear(layer_in, w_ih, b_ih))
                h = h0[k]
                c = None if c0 is None else c0[k]
                order = range(len(gi) - 1, -1, -1) if d == 1 else range(len(gi))
                seq: list[Tensor] = [None] * len(gi)  # type: ignore[list-item]
                for t in order:
                    if self.mode == "LSTM":
                        h, c = lstm_step(gi[t], h, c, w_hh, b_hh)
                        if w_hr is not None:
                            h = F.linear(h, w_hr)
                    elif self.mode == "GRU":
                        h = gru_step(gi[t], h, w_hh, b_hh)
                    else:
                        h = rnn_step(gi[t], h, w_hh, b_hh, "tanh" if self.mode == "RNN_TANH" else "relu")
                    seq[t] = h
                outs.append(lc.stack(seq, axis=0))
                hs.append(h)
                cs.append(c)
            layer_in = outs[0] if directions == 1 else lc.concat(outs, axis=-1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                layer_in = F.dropout(layer_in, self.dropout, True)
        return layer_in, lc.stack(hs, axis=0), (lc.stack(cs, axis=0) if c0 is not None else None)

    def _forward(self, x: Tensor, hx: Any) -> tuple[Tensor, Any]:
        unbatched = self._check_input(x)
        if unbatched:
            x = lc.expand_dims(x, axis=1)
        elif self.batch_first:
            x = lc.swapaxes(x, 0, 1)
        batch = x.shape[1]
        layers = self.num_layers * (2 if self.bidirectional else 1)
        out_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        is_lstm = self.mode == "LSTM"
        if hx is None:
            h0 = lc.zeros((layers, batch, out_size), dtype=x.dtype, device=x.device)
            c0 = lc.zeros((layers, batch, self.hidden_size), dtype=x.dtype, device=x.device) if is_lstm else None
        elif is_lstm:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise ValueError(f"{type(self).__name__}: hx must be a tuple (h_0, c_0), got {type(hx).__name__}")
            h0 = self._check_state(hx[0], batch, out_size, unbatched, "h_0")
            c0 = self._check_state(hx[1], batch, self.hidden_size, unbatched, "c_0")
            if unbatched:
                h0, c0 = lc.expand_dims(h0, axis=1), lc.expand_dims(c0, axis=1)
        else:
            h0 = self._check_state(hx, batch, out_size, unbatched, "hx")
            c0 = None
            if unbatched:
                h0 = lc.expand_dims(h0, axis=1)
        out, hn, cn = self._run(x, h0, c0)
        if unbatched:
            out = lc.squeeze(out, axis=1)
            hn = lc.squeeze(hn, axis=1)
            cn = None if cn is None else lc.squeeze(cn, axis=1)
        elif self.batch_first:
            out = lc.swapaxes(out, 0, 1)
        return out, ((hn, cn) if is_lstm else hn)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    """Elman RNN: h_t = act(x_t @ W_ih.T + b_ih + h_{t-1} @ W_hh.T + b_hh), act = tanh or relu.

    Args:
        num_layers: stacked layers; ``dropout`` applies between them in training.
        batch_first: inputs and outputs are (N, L, H) instead of (L, N, H).
        bidirectional: also run right to left and concatenate both directions' outputs.

    ``forward(input, hx=None)`` returns ``(output, h_n)``.
    """

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
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
    ) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: unknown nonlinearity {nonlinearity!r}; expected 'tanh' or 'relu'")
        self.nonlinearity = nonlinearity
        super().__init__(
            "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, num_layers, bias,
            batch_first, dropout, bidirectional, device=device, dtype=dtype,
        )  # fmt: skip

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple[Tensor, Tensor]:
        return self._forward(input, hx)


class LSTM(RNNBase):
    """Long short-term memory with gates (i, f, g, o); ``forward(input, (h_0, c_0)=None)`` returns
    ``(output, (h_n, c_n))``.

    Args:
        proj_size: if > 0, project each hidden state to this size with ``weight_hr_l{k}``.
    """

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
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
    ) -> None:
        super().__init__(
            "LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, proj_size,
            device=device, dtype=dtype,
        )  # fmt: skip

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        return self._forward(input, hx)


class GRU(RNNBase):
    """Gated recurrent unit with gates (r, z, n); ``forward(input, hx=None)`` returns ``(output, h_n)``."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
    ) -> None:
        super().__init__(
            "GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
            device=device, dtype=dtype,
        )  # fmt: skip

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple[Tensor, Tensor]:
        return self._forward(input, hx)


class RNNCellBase(Module):
    """Parameters ``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh`` of one recurrent cell, PyTorch's init."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool,
        num_chunks: int,
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
    ) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(lc.empty((num_chunks * hidden_size, input_size), dtype=dtype, device=device))
        self.weight_hh = Parameter(lc.empty((num_chunks * hidden_size, hidden_size), dtype=dtype, device=device))
        if bias:
            self.bias_ih = Parameter(lc.empty((num_chunks * hidden_size,), dtype=dtype, device=device))
            self.bias_hh = Parameter(lc.empty((num_chunks * hidden_size,), dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for p in self.parameters():
            init.uniform_(p, -stdv, stdv)

    def _check(self, x: Any) -> None:
        name = type(self).__name__
        if not isinstance(x, Tensor) or x.ndim not in (1, 2):
            raise ValueError(
                f"{name}: expected input with 2 dimensions (N, H_in) or 1, got shape {getattr(x, 'shape', None)}"
            )
        if x.shape[-1] != self.input_size:
            raise ValueError(f"{name}: input has {x.shape[-1]} features but input_size is {self.input_size}")

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nl = getattr(self, "nonlinearity", "tanh")
        if nl != "tanh":
            s += f", nonlinearity={nl}"
        return s


class RNNCell(RNNCellBase):
    """One Elman step: h' = act(x @ W_ih.T + b_ih + h @ W_hh.T + b_hh); ``forward(input, hx=None)``."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
    ) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: unknown nonlinearity {nonlinearity!r}; expected 'tanh' or 'relu'")
        super().__init__(input_size, hidden_size, bias, 1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        self._check(input)
        fn = F.rnn_tanh_cell if self.nonlinearity == "tanh" else F.rnn_relu_cell
        return fn(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)


class LSTMCell(RNNCellBase):
    """One LSTM step with gates (i, f, g, o); ``forward(input, (h, c)=None)`` returns ``(h', c')``."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        self._check(input)
        return F.lstm_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)


class GRUCell(RNNCellBase):
    """One GRU step with gates (r, z, n); ``forward(input, hx=None)`` returns h'."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        self._check(input)
        return F.gru_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
