"""Recurrent cell math (PyTorch's gate layouts): Elman RNN, LSTM (i, f, g, o) and GRU (r, z, n).

The ``*_step`` helpers take the input projection ``x @ w_ih.T + b_ih`` already computed, so a
sequence layer projects every time step in one matmul and loops only over the hidden part.
"""

from __future__ import annotations

import lucid_core as lc
from lucid_core import Tensor

from ._misc import linear

__all__ = ["rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell"]


def rnn_step(gi: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None, nonlinearity: str = "tanh") -> Tensor:
    """h' = act(gi + h @ w_hh.T + b_hh) for a precomputed input projection ``gi``."""
    pre = gi + linear(h, w_hh, b_hh)
    return lc.tanh(pre) if nonlinearity == "tanh" else lc.relu(pre)


def lstm_step(gi: Tensor, h: Tensor, c: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> tuple[Tensor, Tensor]:
    """One LSTM step from a precomputed input projection ``gi`` (..., 4 * hidden); returns (h', c')."""
    i, f, g, o = lc.split(gi + linear(h, w_hh, b_hh), 4, axis=-1)
    c = lc.sigmoid(f) * c + lc.sigmoid(i) * lc.tanh(g)
    return lc.sigmoid(o) * lc.tanh(c), c


def gru_step(gi: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    """One GRU step from a precomputed input projection ``gi`` (..., 3 * hidden); returns h'."""
    gh = linear(h, w_hh, b_hh)
    ir, iz, in_ = lc.split(gi, 3, axis=-1)
    hr, hz, hn = lc.split(gh, 3, axis=-1)
    r = lc.sigmoid(ir + hr)
    z = lc.sigmoid(iz + hz)
    n = lc.tanh(in_ + r * hn)
    return n + z * (h - n)


def _check_cell(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, gates: int, name: str) -> None:
    if not isinstance(x, Tensor) or x.ndim not in (1, 2):
        raise ValueError(
            f"{name}: expected input with 2 dimensions (N, input_size) or 1, got shape {getattr(x, 'shape', None)}"
        )
    if x.shape[-1] != w_ih.shape[1]:
        raise ValueError(f"{name}: input has {x.shape[-1]} features but weight_ih expects {w_ih.shape[1]}")
    hidden = w_hh.shape[1]
    if w_ih.shape[0] != gates * hidden or w_hh.shape[0] != gates * hidden:
        raise ValueError(f"{name}: weights should have {gates} * {hidden} rows, got {w_ih.shape} and {w_hh.shape}")
    if h.shape != (*x.shape[:-1], hidden):
        raise ValueError(f"{name}: hidden state should have shape {(*x.shape[:-1], hidden)}, got {h.shape}")


def _zeros_state(x: Tensor, w_hh: Tensor) -> Tensor:
    return lc.zeros((*x.shape[:-1], w_hh.shape[1]), dtype=x.dtype, device=x.device)


def rnn_tanh_cell(
    input: Tensor,
    hx: Tensor | None,
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None = None,
    b_hh: Tensor | None = None,
) -> Tensor:
    """h' = tanh(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh)."""
    hx = _zeros_state(input, w_hh) if hx is None else hx
    _check_cell(input, hx, w_ih, w_hh, 1, "rnn_tanh_cell")
    return rnn_step(linear(input, w_ih, b_ih), hx, w_hh, b_hh, "tanh")


def rnn_relu_cell(
    input: Tensor,
    hx: Tensor | None,
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None = None,
    b_hh: Tensor | None = None,
) -> Tensor:
    """h' = relu(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh)."""
    hx = _zeros_state(input, w_hh) if hx is None else hx
    _check_cell(input, hx, w_ih, w_hh, 1, "rnn_relu_cell")
    return rnn_step(linear(input, w_ih, b_ih), hx, w_hh, b_hh, "relu")


def lstm_cell(
    input: Tensor,
    hx: tuple[Tensor, Tensor] | None,
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None = None,
    b_hh: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """One LSTM step with gates (i, f, g, o) stacked in the weights' rows; returns (h', c')."""
    if hx is None:
        hx = (_zeros_state(input, w_hh), _zeros_state(input, w_hh))
    h, c = hx
    _check_cell(input, h, w_ih, w_hh, 4, "lstm_cell")
    if c.shape != h.shape:
        raise ValueError(f"lstm_cell: cell state should have shape {h.shape}, got {c.shape}")
    return lstm_step(linear(input, w_ih, b_ih), h, c, w_hh, b_hh)


def gru_cell(
    input: Tensor,
    hx: Tensor | None,
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None = None,
    b_hh: Tensor | None = None,
) -> Tensor:
    """One GRU step with gates (r, z, n) stacked in the weights' rows; returns h'."""
    hx = _zeros_state(input, w_hh) if hx is None else hx
    _check_cell(input, hx, w_ih, w_hh, 3, "gru_cell")
    return gru_step(linear(input, w_ih, b_ih), hx, w_hh, b_hh)
