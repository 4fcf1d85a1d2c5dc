"""Small deterministic stand-ins of the corpus programs' data files (text, names, Cora, token bins, ...).

Each maker takes the folder to write into and writes what the program expects there; the same bytes in
both runs (seeded NumPy). ``MAKERS`` names them for the manifest's ``data`` field.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path

import numpy as np

_WORDS = (
    "the of and to in a is that for it as was with be by on not he i this are or his from at which but have "
    "an had they you were their one all we can her has there been if more when will would who so no king "
    "lord love night day heart time death life sweet fair good"
).split()


def text(n_words: int = 6000, seed: int = 0) -> str:
    """Pseudo-English lines of words drawn from a small vocabulary."""
    rng = np.random.RandomState(seed)
    words = rng.choice(_WORDS, size=n_words)
    lines, i = [], 0
    while i < n_words:
        k = int(rng.randint(4, 12))
        lines.append(" ".join(words[i : i + k]).capitalize() + ".")
        i += k
    # the characters chargpt's sampling prompt needs ("O God, O God!")
    return "O God, O God! Where art thou?\n" + "\n".join(lines) + "\n"


def names(n: int = 800, seed: int = 0) -> str:
    """Made-up lowercase names, one a line."""
    rng = np.random.RandomState(seed)
    syll = ["an", "na", "el", "la", "mi", "ri", "so", "ka", "jo", "ly", "ne", "th", "ar", "em", "is", "o", "a"]
    out = ["".join(rng.choice(syll, size=int(rng.randint(2, 4)))) for _ in range(n)]
    return "\n".join(out) + "\n"


def cora_files(nodes: int = 1700, features: int = 64, classes: int = 7, edges: int = 4000) -> dict[str, str]:
    """Cora's two files: ``cora.content`` (id, binary features, class) and ``cora.cites`` (id pairs)."""
    rng = np.random.RandomState(0)
    ids = rng.choice(np.arange(10, 10 * nodes + 10), size=nodes, replace=False)
    labels = rng.randint(0, classes, size=nodes)
    feats = (rng.rand(nodes, features) < 0.08).astype(np.int64)
    feats[np.arange(nodes), labels] = 1  # no node without a feature
    content = "\n".join(f"{i}\t" + "\t".join(map(str, row)) + f"\tclass_{c}" for i, row, c in zip(ids, feats, labels))
    pairs = rng.randint(0, nodes, size=(edges, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    cites = "\n".join(f"{ids[a]}\t{ids[b]}" for a, b in pairs)
    return {"cora.content": content + "\n", "cora.cites": cites + "\n"}


def write_text(folder: Path, name: str = "input.txt") -> None:
    """``input.txt``: character-level training text."""
    (folder / name).write_text(text(), encoding="utf-8")


def write_names(folder: Path) -> None:
    """``names.txt`` for makemore."""
    (folder / "names.txt").write_text(names(), encoding="utf-8")


def write_wikitext(folder: Path) -> None:
    """``data/wikitext-2/{train,valid,test}.txt`` (word-level)."""
    d = folder / "data" / "wikitext-2"
    d.mkdir(parents=True, exist_ok=True)
    for split, (n, seed) in {"train": (4000, 0), "valid": (800, 1), "test": (800, 2)}.items():
        (d / f"{split}.txt").write_text(text(n, seed), encoding="utf-8")


def write_cora(folder: Path) -> None:
    """``cora/cora.content`` and ``cora/cora.cites``."""
    d = folder / "cora"
    d.mkdir(exist_ok=True)
    for name, body in cora_files().items():
        (d / name).write_text(body, encoding="utf-8")


def write_shakespeare_char(folder: Path) -> None:
    """nanoGPT's ``data/shakespeare_char/{train,val}.bin`` (uint16 ids) and ``meta.pkl`` (the vocabulary)."""
    d = folder / "data" / "shakespeare_char"
    d.mkdir(parents=True, exist_ok=True)
    body = text(20000)
    chars = sorted(set(body))
    stoi = {c: i for i, c in enumerate(chars)}
    ids = np.array([stoi[c] for c in body], dtype=np.uint16)
    cut = int(0.9 * len(ids))
    ids[:cut].tofile(d / "train.bin")
    ids[cut:].tofile(d / "val.bin")
    meta = {"vocab_size": len(chars), "itos": dict(enumerate(chars)), "stoi": stoi}
    with open(d / "meta.pkl", "wb") as f:
        pickle.dump(meta, f)


def write_binarized_mnist(folder: Path) -> None:
    """``binarized_mnist.npz`` for MADE: ``train_data``/``valid_data``/``test_data`` (float32 0/1, 784 wide)."""
    rng = np.random.RandomState(0)
    arrays = {k: (rng.rand(n, 784) < 0.2).astype(np.float32) for k, n in {"train_data": 300, "valid_data": 100}.items()}
    np.savez(folder / "binarized_mnist.npz", test_data=arrays["valid_data"], **arrays)


def write_fineweb(folder: Path) -> None:
    """build-nanogpt's ``edu_fineweb10B/edufineweb_{train,val}_000000.npy`` (uint16 GPT-2 token ids)."""
    d = folder / "edu_fineweb10B"
    d.mkdir(exist_ok=True)
    rng = np.random.RandomState(0)
    for split in ("train", "val"):
        np.save(d / f"edufineweb_{split}_000000.npy", rng.randint(0, 50257, size=20000).astype(np.uint16))


MAKERS: dict[str, Callable[[Path], None]] = {
    "input_txt": write_text,
    "names_txt": write_names,
    "wikitext2": write_wikitext,
    "cora": write_cora,
    "shakespeare_char": write_shakespeare_char,
    "binarized_mnist": write_binarized_mnist,
    "fineweb": write_fineweb,
}
