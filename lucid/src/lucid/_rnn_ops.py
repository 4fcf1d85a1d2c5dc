"""torch-level recurrent stacks over flat weight lists: ``lstm``, ``gru``, ``rnn_tanh``, ``rnn_relu``.

Each function has PyTorch's two ATen overloads, told apart by the second argument, as in PyTorch:

* padded: ``lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)``,
  ``input`` (L, N, H_in) or (N, L, H_in);
* packed: ``lstm(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)``,
  ``data`` (sum(lengths), H_in) and ``batch_sizes[t]`` rows at step ``t`` (sequences sorted longest first).

``params`` is laid out as ``nn.LSTM._flat_weights``: per layer and direction ``w_ih, w_hh, [b_ih, b_hh]``
(then ``w_hr`` for a projected LSTM, recognised as in PyTorch by ``h_0`` being narrower than ``c_0``). The
time steps run on ``lucid_nn``'s cell math (``lstm_step``, ``gru_step``, ``rnn_step``), so gradients reach the
input, the initial states and every weight. The loop here, not ``nn.LSTM``'s, because the layers read their
weights from module attributes and have no packed path. Both overloads share it: a padded input runs as a
packed one whose every step has all N rows. Dropout (``train`` and ``dropout > 0``) applies to every layer's
output but the last.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import lucid_core as lc
from lucid_core import Tensor

__all__ = ["lstm", "gru", "rnn_tanh", "rnn_relu"]

_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _nn() -> tuple[Any, Any, Any]:
    """``lucid_nn.functional``, its step helpers and the sequence unstacker, imported on first use."""
    import lucid_nn.functional as F
    from lucid_nn.functional import _recurrent
    from lucid_nn.layers.recurrent import _steps

    return F, _recurrent, _steps


def _batch_sizes(batch_sizes: Any, rows: int, name: str) -> list[int]:
    if not isinstance(batch_sizes, Tensor) or batch_sizes.ndim != 1 or not lc.isdtype(batch_sizes.dtype, "integral"):
        raise RuntimeError(f"{name}: batch_sizes must be a 1-D integer tensor, got {batch_sizes!r}")
    sizes = [int(b) for b in batch_sizes.tolist()]
    if not sizes or sizes[-1] <= 0 or any(a < b for a, b in itertools.pairwise(sizes)):
        raise RuntimeError(f"{name}: batch_sizes must be positive and non-increasing (sorted sequences), got {sizes}")
    if sum(sizes) != rows:
        raise RuntimeError(f"{name}: batch_sizes sum to {sum(sizes)} but data has {rows} rows")
    return sizes


def _check_state(h: Any, want: tuple[int, ...], what: str, name: str) -> Tensor:
    if not isinstance(h, Tensor) or tuple(h.shape) != want:
        got = tuple(h.shape) if isinstance(h, Tensor) else type(h).__name__
        raise RuntimeError(f"{name}: expected {what} of shape {want}, got {got}")
    return h


def _stack(
    mode: str,
    data: Tensor,
    sizes: list[int] | None,
    batch: int,
    hx: Any,
    params: Sequence[Tensor],
    has_biases: bool,
    num_layers: int,
    dropout: float,
    train: bool,
    bidirectional: bool,
) -> tuple[Tensor, Tensor, Tensor | None]:
    """Run the stack on packed ``data`` (rows of step t first-to-last); ``sizes`` None: every step has all rows."""
    F, cells, unstack = _nn()  # noqa: N806 - the usual name of nn.functional
    dirs = 2 if bidirectional else 1
    if not isinstance(num_layers, int) or num_layers <= 0:
        raise RuntimeError(f"{mode}: num_layers must be a positive int, got {num_layers!r}")
    if mode == "lstm":
        if not isinstance(hx, (tuple, list)) or len(hx) != 2:
            raise TypeError(f"lstm expects two hidden states (h_0, c_0), got {type(hx).__name__}")
        h0, c0 = hx
        if not isinstance(h0, Tensor) or not isinstance(c0, Tensor) or h0.ndim != 3 or c0.ndim != 3:
            raise RuntimeError("lstm: h_0 and c_0 must be 3-D tensors (num_layers * num_directions, N, H)")
        hidden, out_size = c0.shape[-1], h0.shape[-1]
    else:
        if not isinstance(hx, Tensor):
            raise TypeError(f"{mode}: hx must be a tensor (num_layers * num_directions, N, H), got {type(hx).__name__}")
        if hx.ndim != 3:
            raise RuntimeError(f"{mode}: hx must be 3-D (num_layers * num_directions, N, H), got shape {hx.shape}")
        h0, c0 = hx, None
        hidden = out_size = hx.shape[-1]
    proj = mode == "lstm" and out_size != hidden
    per = 2 + (2 if has_biases else 0) + (1 if proj else 0)
    if len(params) != num_layers * dirs * per:
        raise RuntimeError(
            f"{mode}: expected {num_layers * dirs * per} tensors in params ({num_layers} layers x {dirs} "
            f"directions x {per}), got {len(params)}"
        )
    _check_state(h0, (num_layers * dirs, batch, out_size), "h_0" if mode == "lstm" else "hx", mode)
    if c0 is not None:
        _check_state(c0, (num_layers * dirs, batch, hidden), "c_0", mode)
    steps = sizes
    gates = _GATES[mode] * hidden
    hs: list[Tensor] = []
    cs: list[Tensor] = []
    layer_in = data
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            group = list(params[k * per : (k + 1) * per])
            w_ih, w_hh = group[0], group[1]
            b_ih, b_hh = (group[2], group[3]) if has_biases else (None, None)
            w_hr = group[-1] if proj else None
            if tuple(w_ih.shape) != (gates, layer_in.shape[-1]) or tuple(w_hh.shape) != (gates, out_size):
                raise RuntimeError(
                    f"{mode}: layer {layer} direction {d} expects w_ih {(gates, layer_in.shape[-1])} and w_hh "
                    f"{(gates, out_size)}, got {tuple(w_ih.shape)} and {tuple(w_hh.shape)}"
                )
            gi_all = F.linear(layer_in, w_ih, b_ih)
            if steps is None:
                gi = unstack(lc.reshape(gi_all, (-1, batch, gates)))
                counts = [batch] * len(gi)
            else:
                starts = [sum(steps[:t]) for t in range(len(steps))]
                gi = [gi_all[s : s + b] for s, b in zip(starts, steps)]
                counts = steps
            h, c = h0[k], (None if c0 is None else c0[k])
            seq: list[Tensor] = [None] * len(gi)  # type: ignore[list-item]
            order = range(len(gi) - 1, -1, -1) if d == 1 else range(len(gi))
            if d == 1:  # right to left: a sequence starts from h_0 at its own last step
                h = h[: counts[-1]]
                c = None if c is None else c[: counts[-1]]
            done_h: list[Tensor] = []
            done_c: list[Tensor] = []
            for t in order:
                b = counts[t]
                if d == 1 and b > h.shape[0]:
                    h = lc.concat([h, h0[k][h.shape[0] : b]], axis=0)
                    c = None if c is None else lc.concat([c, c0[k][c.shape[0] : b]], axis=0)
                elif d == 0 and b < h.shape[0]:  # forward: the shortest sequences end here
                    done_h.insert(0, h[b:])
                    h = h[:b]
                    if c is not None:
                        done_c.insert(0, c[b:])
                        c = c[:b]
                if mode == "lstm":
                    h, c = cells.lstm_step(gi[t], h, c, w_hh, b_hh)
                    if w_hr is not None:
                        h = F.linear(h, w_hr)
                elif mode == "gru":
                    h = cells.gru_step(gi[t], h, w_hh, b_hh)
                else:
                    h = cells.rnn_step(gi[t], h, w_hh, b_hh, "tanh" if mode == "rnn_tanh" else "relu")
                seq[t] = h
            if done_h:
                h = lc.concat([h, *done_h], axis=0)
                c = None if c is None else lc.concat([c, *done_c], axis=0)
            outs.append(lc.reshape(lc.stack(seq, axis=0), (-1, out_size)) if steps is None else lc.concat(seq, axis=0))
            hs.append(h)
            if c is not None:
                cs.append(c)
        layer_in = outs[0] if dirs == 1 else lc.concat(outs, axis=-1)
        if dropout > 0 and train and layer < num_layers - 1:
            layer_in = F.dropout(layer_in, float(dropout), True)
    return layer_in, lc.stack(hs, axis=0), (lc.stack(cs, axis=0) if cs else None)


def _dispatch(mode: str, args: tuple[Any, ...]) -> tuple[Tensor, ...]:
    """Both ATen overloads: the packed one has ``batch_sizes`` (a tensor) where the padded one has ``hx``."""
    if len(args) != 9:
        raise TypeError(f"{mode}() takes 9 positional arguments, got {len(args)}")
    packed = isinstance(args[1], Tensor) and lc.isdtype(args[1].dtype, "integral")
    if packed:
        data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional = args
        if not isinstance(data, Tensor) or data.ndim != 2:
            got = getattr(data, "shape", data)
            raise RuntimeError(f"{mode}: packed data must be 2-D (sum(lengths), H_in), got {got}")
        sizes = _batch_sizes(batch_sizes, data.shape[0], mode)
        rest = (hx, params, has_biases, num_layers, dropout, train, bidirectional)
        out, hn, cn = _stack(mode, data, sizes, sizes[0], *rest)
    else:
        input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first = args
        if not isinstance(input, Tensor) or input.ndim != 3:
            layout = "(N, L, H_in)" if batch_first else "(L, N, H_in)"
            raise RuntimeError(f"{mode}: input must be 3-D {layout}, got shape {getattr(input, 'shape', input)}")
        x = lc.swapaxes(input, 0, 1) if batch_first else input
        steps, batch = x.shape[0], x.shape[1]
        flat = lc.reshape(x, (steps * batch, x.shape[2]))
        out, hn, cn = _stack(mode, flat, None, batch, hx, params, has_biases, num_layers, dropout, train, bidirectional)
        out = lc.reshape(out, (steps, batch, out.shape[-1]))
        if batch_first:
            out = lc.swapaxes(out, 0, 1)
    return (out, hn, cn) if mode == "lstm" else (out, hn)


def lstm(*args: Any) -> tuple[Tensor, Tensor, Tensor]:
    """A whole LSTM stack over flat weights; returns ``(output, h_n, c_n)``.

    ``lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)`` or, packed,
    ``lstm(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)``; ``hx`` is
    ``(h_0, c_0)``, each (num_layers * num_directions, N, H).
    """
    return _dispatch("lstm", args)  # type: ignore[return-value]


def gru(*args: Any) -> tuple[Tensor, Tensor]:
    """A whole GRU stack over flat weights; returns ``(output, h_n)`` (overloads as :func:`lstm`, ``hx`` a tensor)."""
    return _dispatch("gru", args)  # type: ignore[return-value]


def rnn_tanh(*args: Any) -> tuple[Tensor, Tensor]:
    """A whole Elman RNN stack with tanh over flat weights; returns ``(output, h_n)`` (overloads as :func:`gru`)."""
    return _dispatch("rnn_tanh", args)  # type: ignore[return-value]


def rnn_relu(*args: Any) -> tuple[Tensor, Tensor]:
    """A whole Elman RNN stack with ReLU over flat weights; returns ``(output, h_n)`` (overloads as :func:`gru`)."""
    return _dispatch("rnn_relu", args)  # type: ignore[return-value]
