"""Variable-length sequences for recurrent layers: padding, and PyTorch's ``PackedSequence``.

A packed sequence stores the time steps one after another, each holding only the sequences still running
(longest first): ``data`` is ``(sum(lengths), *)`` and ``batch_sizes[t]`` says how many rows step ``t`` has.
Everything is built from indexing, ``concat`` and ``stack``, so gradients flow through packing and padding.
"""

from __future__ import annotations

__all__ = [
    "PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
    "unpad_sequence", "pack_sequence", "unpack_sequence",
]  # fmt: skip

import itertools
from collections.abc import Sequence
from typing import Any, NamedTuple

import lucid_core as lc
from lucid_core import Tensor


def _lengths_list(lengths: Any) -> list[int]:
    if isinstance(lengths, Tensor):
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The permutation that undoes ``permutation`` (None stays None)."""
    if permutation is None:
        return None
    perm = [int(v) for v in permutation.tolist()]
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return lc.asarray(inv, dtype=lc.int64, device=permutation.device)


class PackedSequence(NamedTuple):
    """Sequences of different lengths packed time step by time step (see the module docstring).

    ``sorted_indices[i]`` is the batch position of the i-th longest sequence; ``unsorted_indices`` inverts it.
    """

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """The same packing with ``data`` moved or cast (``batch_sizes`` stays an int64 CPU tensor)."""
        data = self.data.to(*args, **kwargs)
        move = lambda t: None if t is None else t.to(data.device)  # noqa: E731
        return PackedSequence(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    @property
    def is_cuda(self) -> bool:
        """Whether ``data`` is on a GPU."""
        return bool(self.data.is_cuda)


def pad_sequence(
    sequences: Tensor | Sequence[Tensor],
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """Stack sequences of shape ``(L_i, *)`` into ``(max L, B, *)`` (``(B, max L, *)`` with ``batch_first``).

    Shorter ones are filled with ``padding_value`` on ``padding_side`` (``"right"`` or ``"left"``).
    """
    if padding_side not in ("right", "left"):
        raise ValueError(f"pad_sequence: padding_side must be 'left' or 'right', got {padding_side!r}")
    seqs = list(sequences.unbind(0)) if isinstance(sequences, Tensor) else list(sequences)
    if not seqs:
        raise RuntimeError("pad_sequence: received an empty list of sequences")
    longest = max(s.shape[0] for s in seqs)
    rows = []
    for s in seqs:
        short = longest - s.shape[0]
        if short:
            fill = lc.full((short, *s.shape[1:]), padding_value, dtype=s.dtype, device=s.device)
            s = lc.concat([s, fill] if padding_side == "right" else [fill, s], axis=0)
        rows.append(s)
    return lc.stack(rows, axis=0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Any, batch_first: bool = False) -> list[Tensor]:
    """The sequences of a padded batch, cut back to their ``lengths``."""
    padded = (
        padded_sequences if batch_first else lc.permute_dims(padded_sequences, (1, 0, *range(2, padded_sequences.ndim)))
    )
    return [padded[i, :n] for i, n in enumerate(_lengths_list(lengths))]


def pack_padded_sequence(
    input: Tensor, lengths: Any, batch_first: bool = False, enforce_sorted: bool = True
) -> PackedSequence:
    """Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) whose sequences have ``lengths``.

    With ``enforce_sorted`` the lengths must decrease; otherwise the batch is sorted here and the packing
    remembers how to put it back.
    """
    lens = _lengths_list(lengths)
    if not lens or min(lens) <= 0:
        raise RuntimeError("pack_padded_sequence: every length must be positive (and at least one is needed)")
    x = lc.permute_dims(input, (1, 0, *range(2, input.ndim))) if batch_first else input
    if len(lens) != x.shape[1]:
        raise ValueError(f"pack_padded_sequence: got {len(lens)} lengths for a batch of {x.shape[1]}")
    if enforce_sorted:
        if any(a < b for a, b in itertools.pairwise(lens)):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
                "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement "
                "if you do not need ONNX exportability."
            )
        order = list(range(len(lens)))
        sorted_indices = None
    else:
        order = sorted(range(len(lens)), key=lambda i: -lens[i])  # stable, as torch.sort(descending) here
        sorted_indices = lc.asarray(order, dtype=lc.int64, device=input.device)
        x = x[:, sorted_indices]
    lens_sorted = [lens[i] for i in order]
    if lens_sorted[0] > x.shape[0]:
        raise RuntimeError(f"pack_padded_sequence: a length ({lens_sorted[0]}) is longer than the input ({x.shape[0]})")
    batch_sizes = [sum(1 for n in lens_sorted if n > t) for t in range(lens_sorted[0])]
    data = lc.concat([x[t, :b] for t, b in enumerate(batch_sizes)], axis=0)
    return PackedSequence(
        data, lc.asarray(batch_sizes, dtype=lc.int64, device="cpu"), sorted_indices, invert_permutation(sorted_indices)
    )


def pad_packed_sequence(
    sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0, total_length: int | None = None
) -> tuple[Tensor, Tensor]:
    """Undo :func:`pack_padded_sequence`: the padded batch and the lengths (int64), in the original order."""
    data, batch_sizes = sequence.data, [int(b) for b in sequence.batch_sizes.tolist()]
    batch, steps = batch_sizes[0], len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                f"Expected total_length to be at least the length of the longest sequence in input, but got "
                f"total_length={total_length} and max sequence length being {steps}"
            )
    rows, offset = [], 0
    for b in batch_sizes:
        step = data[offset : offset + b]
        offset += b
        if b < batch:
            fill = lc.full((batch - b, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
            step = lc.concat([step, fill], axis=0)
        rows.append(step)
    for _ in range(steps, total_length or steps):
        rows.append(lc.full((batch, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device))
    out = lc.stack(rows, axis=0)  # (T, B, *) in sorted order
    lengths = [sum(1 for b in batch_sizes if b > i) for i in range(batch)]
    if sequence.unsorted_indices is not None:
        out = out[:, sequence.unsorted_indices]
        lengths = [lengths[int(i)] for i in sequence.unsorted_indices.tolist()]
    if batch_first:
        out = lc.permute_dims(out, (1, 0, *range(2, out.ndim)))
    return out, lc.asarray(lengths, dtype=lc.int64, device="cpu")


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences ``(L_i, *)`` (longest first unless ``enforce_sorted=False``)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences a :class:`PackedSequence` holds, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
