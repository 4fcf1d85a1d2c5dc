"""Local random streams for shuffles and splits: never the global ``random`` module's state."""

from __future__ import annotations

import random

import lucid_core as lc


def check_seed(seed: int | None, generator: random.Random | None, owner: str) -> None:
    """Validate a ``seed``/``generator`` pair: at most one, an int seed, a ``random.Random`` generator."""
    if seed is not None and generator is not None:
        raise ValueError(f"{owner}: pass either seed or generator, not both")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise TypeError(f"{owner}: seed must be an int, got {type(seed).__name__}")
    if generator is not None and not isinstance(generator, random.Random):
        raise TypeError(f"{owner}: generator must be a random.Random, got {type(generator).__name__}")


def local_rng(seed: int | None, generator: random.Random | None, epoch: int | None = None) -> random.Random:
    """The RNG for one shuffle.

    ``generator`` is used as is (and advances). A ``seed`` gives a fresh ``random.Random`` (mixed with
    ``epoch`` when given, so each epoch differs but a rerun repeats). With neither, a seed is drawn from
    ``lucid_core.host_rng()``, so ``lucid_core.manual_seed`` makes the run reproducible.
    """
    if generator is not None:
        return generator
    if seed is None:
        return random.Random(lc.host_rng().getrandbits(64))
    if epoch is None:
        return random.Random(seed)
    # a str seed is hashed with SHA-512: stable across runs and processes, unlike hash()
    return random.Random(f"{seed}:{epoch}")


def worker_base_seed(seed: int | None, generator: random.Random | None, epoch: int) -> int:
    """The base of one epoch's worker seeds (worker ``i`` gets ``base + i``), from the loader's own randomness.

    Drawn at every ``iter(loader)``, with or without workers, so the shuffle that follows sees the same
    stream either way (PyTorch does the same). A ``seed`` gives a value fixed by seed and epoch; otherwise
    one draw from ``generator`` or from ``lucid_core.host_rng()``.
    """
    if generator is not None:
        return generator.getrandbits(62)
    if seed is not None:
        return random.Random(f"{seed}:{epoch}:workers").getrandbits(62)
    return lc.host_rng().getrandbits(62)
