"""Data-parallel training of the digits CNN (or MLP): every process trains a replica on its share of the data.

    mpiexec -n 2 python examples/train_digits_distributed.py             # 2 processes over MPI
    lucid-run --nproc-per-node 2 examples/train_digits_distributed.py    # the same, torchrun-style
    python examples/train_digits_distributed.py                          # alone: a group of one process

Each rank sees its own half (third, ...) of every epoch through a ``DistributedSampler``;
``DistributedDataParallel`` averages the gradients during backward, so the replicas stay equal. Rank 0
alone prints the progress bar, evaluates, writes ``OUT/checkpoints/epoch_NNN.safetensors`` and redraws
``OUT/curves.png``. The model, data and plot come from ``train_digits.py``; see docs/distributed.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from train_digits import evaluate, load_digits_dataset, make_model, plot_curves

import lucid_core as lc
import lucid_data as data
import lucid_distributed as dist
import lucid_nn as nn
import lucid_nn.functional as F
import lucid_optim as optim


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=["cnn", "mlp"], default="cnn")
    p.add_argument("--device", default=None, help="numpy (default) or mlx; MLX tensors travel over MPI as host copies")
    p.add_argument("--backend", default=None, help="communicator: mpi, mlx, local (default: from the launcher)")
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=64, help="the global batch, split across the ranks")
    p.add_argument("--lr", type=float, default=1e-2, help="OneCycleLR's peak learning rate")
    p.add_argument("--weight-decay", type=float, default=1e-2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit", type=int, default=None, help="use only the first N samples (quick runs, CI)")
    p.add_argument("--out", type=Path, default=Path("runs/digits-distributed"))
    p.add_argument("--no-progress", action="store_true", help="no progress bar (logs, CI)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from tqdm import tqdm

    args = parse_args(argv)
    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch_size % world:
        sys.exit(f"--batch-size {args.batch_size} must be a multiple of the {world} processes")
    device = lc.resolve_device(args.device) if args.device else lc.get_default_device()

    lc.manual_seed(args.seed)  # the same split on every rank; the model's weights come from rank 0 anyway
    train_set, test_set = load_digits_dataset(args.limit, device, args.seed)
    sampler = data.DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True, seed=args.seed)
    loader = data.DataLoader(train_set, batch_size=args.batch_size // world, sampler=sampler)
    model = make_model(args.model).to(device)
    ddp = dist.DistributedDataParallel(model)
    opt = optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, epochs=args.epochs, steps_per_epoch=len(loader))
    lc.manual_seed(args.seed + rank)  # dropout masks differ per rank, as each rank's data does
    print(f"rank {rank} of {world}: {len(sampler)} of {len(train_set)} training images per epoch", flush=True)

    history: list[dict[str, float]] = []
    ckpt_dir, plot_path = args.out / "checkpoints", args.out / "curves.png"
    started = time.perf_counter()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)  # a new order each epoch, the same on every rank
        ddp.train()
        bar = tqdm(loader, desc=f"epoch {epoch + 1}/{args.epochs}", unit="batch", file=sys.stdout,
                   disable=args.no_progress or rank != 0)  # fmt: skip
        totals = lc.zeros(3, dtype=lc.float64, device=device)  # loss sum, correct, seen on this rank
        for x, y in bar:
            logits = ddp(x)
            loss = F.cross_entropy(logits, y)
            opt.zero_grad()
            loss.backward()  # gradients are averaged across the ranks inside backward
            opt.step()
            sched.step()
            n = y.shape[0]
            with lc.no_grad():
                step = [loss.item() * n, float((logits.argmax(axis=1) == y).sum().item()), float(n)]
                totals += lc.asarray(step, dtype=lc.float64, device=device)
            bar.set_postfix(loss=f"{loss.item():.4f}")
        dist.all_reduce(totals)  # every rank's share, for the epoch's numbers
        loss_sum, correct, seen = totals.tolist()
        if rank == 0:  # one writer: evaluation, checkpoints and the plot
            test_loss, test_acc = evaluate(model, data.DataLoader(test_set, batch_size=256))
            history.append({"epoch": epoch + 1, "train_loss": loss_sum / seen, "train_acc": correct / seen,
                            "test_loss": test_loss, "test_acc": test_acc})  # fmt: skip
            ckpt_dir.mkdir(parents=True, exist_ok=True)
            path = ckpt_dir / f"epoch_{epoch + 1:03d}.safetensors"
            nn.save(model, path, metadata={"epoch": str(epoch + 1), "world_size": str(world)})
            plot_curves(history, plot_path)
            print(f"epoch {epoch + 1}: train loss {loss_sum / seen:.4f} acc {correct / seen:.3f} on {int(seen)} "
                  f"images | test loss {test_loss:.4f} acc {test_acc:.3f} | saved {path}", flush=True)  # fmt: skip
    elapsed = time.perf_counter() - started
    if rank == 0 and history:
        print(f"test accuracy {100 * history[-1]['test_acc']:.2f}% after {args.epochs} epochs on {world} "
              f"processes ({elapsed:.1f} s); curves in {plot_path}", flush=True)  # fmt: skip
    dist.destroy_process_group()
    return {"history": history, "model": model, "seconds": elapsed}


if __name__ == "__main__":
    main()
