"""Generate ``torch_reference.json``: PyTorch's numbers for the data tests (run once; tests never import torch).

python tests/data/make_torch_reference.py
"""

from __future__ import annotations

import json
import pathlib

import torch
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler, SequentialSampler, random_split

OUT = pathlib.Path(__file__).with_name("torch_reference.json")

SPLIT_CASES = [
    (10, [0.8, 0.2]),
    (7, [0.5, 0.5]),
    (10, [0.1] * 10),
    (11, [0.3, 0.3, 0.4]),
    (5, [1 / 3, 1 / 3, 1 / 3]),
    (3, [0.25, 0.25, 0.25, 0.25]),
    (101, [0.7, 0.2, 0.1]),
    (2, [0.9, 0.05, 0.05]),
]
SHARD_CASES = [(n, r, drop) for n in (0, 1, 5, 10, 11) for r in (1, 2, 3, 4) for drop in (False, True)]
BATCH_CASES = [(n, b, drop) for n in (1, 7, 8, 10) for b in (1, 3, 4, 8, 11) for drop in (False, True)]


def main() -> None:
    torch.manual_seed(0)
    ref: dict[str, list] = {"random_split": [], "distributed": [], "batch_sampler": []}
    for n, fractions in SPLIT_CASES:
        parts = random_split(range(n), fractions, generator=torch.Generator().manual_seed(0))
        ref["random_split"].append({"n": n, "fractions": fractions, "lengths": [len(p) for p in parts]})
    for n, r, drop in SHARD_CASES:
        shards = [
            list(DistributedSampler(range(n), num_replicas=r, rank=k, shuffle=False, drop_last=drop)) for k in range(r)
        ]
        ref["distributed"].append({"n": n, "num_replicas": r, "drop_last": drop, "shards": shards})
    for n, b, drop in BATCH_CASES:
        batches = list(BatchSampler(SequentialSampler(range(n)), b, drop))
        loader_len = len(DataLoader(range(n), batch_size=b, drop_last=drop))
        ref["batch_sampler"].append({"n": n, "batch_size": b, "drop_last": drop, "batches": batches, "len": loader_len})
    OUT.write_text(json.dumps(ref, indent=1) + "\n")
    print(f"wrote {OUT} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
