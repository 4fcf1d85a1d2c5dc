"""``random_split``: disjoint random subsets of a dataset, from a local RNG."""

from __future__ import annotations

import math
import numbers
import random
import warnings
from collections.abc import Sequence

from ._rng import check_seed, local_rng
from .dataset import Dataset, Subset

__all__ = ["random_split"]


def _split_lengths(n: int, lengths: Sequence[float]) -> list[int]:
    """Integer lengths summing to ``n``: counts as given, or fractions floored with the remainder from the front."""
    if len(lengths) == 0:
        raise ValueError("random_split: lengths is empty; give at least one length or fraction")
    for x in lengths:
        if isinstance(x, bool) or not isinstance(x, numbers.Real):
            raise TypeError(f"random_split: lengths must be ints or floats, got {x!r} in {list(lengths)}")
    if all(isinstance(x, numbers.Integral) for x in lengths):
        counts = [int(x) for x in lengths]
        if any(c < 0 for c in counts):
            raise ValueError(f"random_split: lengths must be non-negative, got {counts}")
        if sum(counts) != n:
            raise ValueError(
                f"random_split: lengths {counts} sum to {sum(counts)}, but the dataset has {n} samples; "
                "give counts summing to its length or fractions summing to 1"
            )
        return counts
    fractions = [float(x) for x in lengths]
    if any(not 0.0 <= f <= 1.0 for f in fractions):
        raise ValueError(f"random_split: fractions must lie in [0, 1], got {fractions}")
    total = math.fsum(fractions)
    if not math.isclose(total, 1.0):  # [0.1] * 10 sums to 0.9999999999999999: accepted
        raise ValueError(f"random_split: fractions {fractions} sum to {total}, expected 1")
    counts = [math.floor(n * f) for f in fractions]
    for i in range(n - sum(counts)):  # the remainder, one each, round-robin from the front
        counts[i % len(counts)] += 1
    for i, c in enumerate(counts):
        if c == 0:
            warnings.warn(f"random_split: split {i} (fraction {fractions[i]}) is empty", UserWarning, stacklevel=3)
    return counts


def random_split(
    dataset: Dataset,
    lengths: Sequence[float],
    seed: int | None = None,
    generator: random.Random | None = None,
) -> list[Subset]:
    """Split ``dataset`` into disjoint random ``Subset``s of the given lengths (ints) or fractions (floats).

    Args:
        lengths: counts summing to ``len(dataset)``, or fractions summing to 1 (within ``math.isclose``);
            fractional remainders go one each to the first splits, as in PyTorch.
        seed: seed of a local ``random.Random`` (the global ``random`` state is never touched).
        generator: a ``random.Random`` to draw from instead. With neither, a seed is drawn from
            ``lucid_core.host_rng()``, so ``lucid_core.manual_seed`` makes the split reproducible.
    """
    check_seed(seed, generator, "random_split")
    n = len(dataset)
    counts = _split_lengths(n, lengths)
    perm = list(range(n))
    local_rng(seed, generator).shuffle(perm)
    out, start = [], 0
    for c in counts:
        out.append(Subset(dataset, perm[start : start + c]))
        start += c
    return out
