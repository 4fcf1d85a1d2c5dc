"""Train a small CNN (or an MLP) on scikit-learn's bundled handwritten digits: no download needed.

    python examples/train_digits.py                           # CNN on the default device (NumPy), ~1-2 min
    python examples/train_digits.py --model mlp --device mlx  # another model, another backend
    python examples/train_digits.py --stop-after 5            # stop early (or press Ctrl-C) ...
    python examples/train_digits.py --resume                  # ... and continue exactly where it stopped
    python examples/train_digits.py --amp bf16                # mixed precision: bfloat16 products (autocast)

Each epoch writes ``OUT/checkpoints/epoch_NNN.safetensors`` (the model's state dict: ``lucid_nn.load`` reads it,
and so does ``safetensors.torch.load_file``) next to ``epoch_NNN.train-state.safetensors`` (the optimizer's
tensors, plus the scheduler, random-number, data-order and history state as JSON metadata), and redraws
``OUT/curves.png`` (loss and accuracy per epoch). Ctrl-C finishes the current batch and saves a mid-epoch
checkpoint (``epoch_NNN_step_SSSS``: NNN whole epochs and SSSS batches) that ``--resume`` continues exactly;
a second Ctrl-C quits at once. ``--keep`` deletes older epochs (the log names them). Needs
``pip install -r examples/requirements.txt``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

import lucid_core as lc
import lucid_core.amp as amp
import lucid_data as data
import lucid_nn as nn
import lucid_nn.functional as F
import lucid_optim as optim

# the settings a checkpoint records; --resume takes them from the checkpoint, not the command line
TRAINING_SETTINGS = ("model", "epochs", "batch_size", "lr", "weight_decay", "seed", "limit")
STATE_SUFFIX = ".train-state.safetensors"


# -- data -----------------------------------------------------------------------------------------------
def load_digits_dataset(limit: int | None, device: Any, seed: int) -> tuple[data.Subset, data.Subset]:
    """scikit-learn's 1 797 8x8 digits as (N, 1, 8, 8) floats in [0, 1] and int64 labels, split 80/20."""
    from sklearn.datasets import load_digits  # example-only dependency, imported where it is needed

    digits = load_digits()
    images, labels = digits.images, digits.target
    if limit is not None:
        images, labels = images[:limit], labels[:limit]
    x = lc.asarray(images.reshape(-1, 1, 8, 8) / 16.0, dtype=lc.float32, device=device)
    y = lc.asarray(labels, dtype=lc.int64, device=device)
    train, test = data.random_split(data.TensorDataset(x, y), [0.8, 0.2], seed=seed)
    return train, test


# -- models ---------------------------------------------------------------------------------------------
def make_model(kind: str) -> nn.Module:
    """``cnn``: two conv blocks with batch norm, max pooling and dropout; ``mlp``: two hidden layers."""
    if kind == "mlp":
        return nn.Sequential(
            nn.Flatten(),
            nn.Linear(64, 256), nn.ReLU(), nn.Dropout(0.2),
            nn.Linear(256, 128), nn.ReLU(), nn.Dropout(0.2),
            nn.Linear(128, 10),
        )  # fmt: skip
    if kind == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.MaxPool2d(2),  # 8x8 -> 4x4
            nn.Flatten(), nn.Dropout(0.25),
            nn.Linear(64 * 4 * 4, 128), nn.ReLU(), nn.Dropout(0.5),
            nn.Linear(128, 10),
        )  # fmt: skip
    raise ValueError(f"unknown model {kind!r}; expected 'mlp' or 'cnn'")


# -- checkpoints ------------------------------------------------------------------------------------------
def _to_json(obj: Any) -> Any:
    """JSON-ready copy of ``obj``; tuples are tagged so they come back as tuples (``random.setstate`` needs it)."""
    if isinstance(obj, tuple):
        return {"__tuple__": [_to_json(v) for v in obj]}
    if isinstance(obj, list):
        return [_to_json(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): _to_json(v) for k, v in obj.items()}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(f"cannot store a {type(obj).__name__} in checkpoint metadata: {obj!r}")


def _from_json(obj: Any) -> Any:
    if isinstance(obj, dict):
        if set(obj) == {"__tuple__"}:
            return tuple(_from_json(v) for v in obj["__tuple__"])
        return {k: _from_json(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_from_json(v) for v in obj]
    return obj


def _split_optimizer_state(state_dict: dict[str, Any]) -> tuple[dict[str, lc.Tensor], dict[str, Any]]:
    """Optimizer tensors (saved as tensors, keyed ``state.<param index>.<name>``) and everything else (JSON)."""
    tensors: dict[str, lc.Tensor] = {}
    rest: dict[str, Any] = {}
    for index, param_state in state_dict["state"].items():
        rest[str(index)] = {}
        for name, value in param_state.items():
            if isinstance(value, lc.Tensor):
                tensors[f"state.{index}.{name}"] = value
            else:
                rest[str(index)][name] = value
    return tensors, {"state": rest, "param_groups": state_dict["param_groups"]}


def _join_optimizer_state(tensors: dict[str, lc.Tensor], rest: dict[str, Any]) -> dict[str, Any]:
    state: dict[int, dict[str, Any]] = {int(i): dict(s) for i, s in rest["state"].items()}
    for key, t in tensors.items():
        _, index, name = key.split(".", 2)
        state.setdefault(int(index), {})[name] = t
    return {"state": state, "param_groups": rest["param_groups"]}


def save_checkpoint(
    directory: Path, epoch: int, model: nn.Module, opt: optim.Optimizer, sched: Any, settings: dict[str, Any],
    history: list[dict[str, float]], keep: int, step: int = 0, partial: dict[str, float] | None = None,
) -> Path:  # fmt: skip
    """Write the two files of ``epoch`` whole epochs plus ``step`` batches (training state first, so a complete
    pair always has both), then delete what it supersedes: older mid-epoch checkpoints, and whole epochs
    beyond the newest ``keep`` (each deletion is logged)."""
    directory.mkdir(parents=True, exist_ok=True)
    stem = directory / (f"epoch_{epoch:03d}" + (f"_step_{step:04d}" if step else ""))
    opt_tensors, opt_rest = _split_optimizer_state(opt.state_dict())
    meta = {
        "epoch": epoch, "step": step, "partial": partial or {}, "settings": settings, "history": history,
        "optimizer": opt_rest, "scheduler": sched.state_dict(), "rng": lc.get_rng_state(),
    }  # fmt: skip
    nn.save(opt_tensors, f"{stem}{STATE_SUFFIX}", metadata={"lucid_train_state": json.dumps(_to_json(meta))})
    model_path = Path(f"{stem}.safetensors")
    nn.save(model, model_path, metadata={"epoch": str(epoch), "step": str(step), "settings": json.dumps(settings)})
    saved = sorted(directory.glob("epoch_*[0-9].safetensors"))
    whole = [p for p in saved if "_step_" not in p.name]
    stale = [p for p in saved if "_step_" in p.name and p != model_path] + whole[:-keep]
    for old in stale:
        old.unlink()
        Path(str(old).replace(".safetensors", STATE_SUFFIX)).unlink(missing_ok=True)
    if stale:
        print(f"--keep {keep}: deleted older checkpoints {', '.join(p.stem for p in sorted(stale))}")
    return model_path


def latest_checkpoint(directory: Path) -> Path | None:
    """The newest epoch whose model and training-state files both exist."""
    for path in sorted(directory.glob("epoch_*[0-9].safetensors"), reverse=True):
        if Path(str(path).replace(".safetensors", STATE_SUFFIX)).exists():
            return path
    return None


def read_training_state(model_path: Path) -> dict[str, Any]:
    """The JSON state and optimizer tensors saved next to a model checkpoint."""
    state_path = str(model_path).replace(".safetensors", STATE_SUFFIX)
    meta = nn.load_metadata(state_path)
    if "lucid_train_state" not in meta:
        raise ValueError(f"{state_path} holds no training state; was it written by train_digits.py?")
    state = _from_json(json.loads(meta["lucid_train_state"]))
    state["optimizer_tensors"] = nn.load(state_path)
    return state


# -- training ---------------------------------------------------------------------------------------------
def autocast(device: Any, mode: str) -> amp.autocast:
    """The forward pass's mixed-precision region: ``--amp bf16`` runs the products (linear, conv) in bfloat16,
    losses and the float32 parameters' gradients stay float32; ``off`` is a disabled region."""
    return amp.autocast(device.type, dtype=lc.bfloat16, enabled=mode == "bf16")


def evaluate(model: nn.Module, loader: data.DataLoader, mode: str = "off") -> tuple[float, float]:
    """Mean cross-entropy and accuracy over ``loader``, in eval mode and without a graph."""
    model.eval()
    total_loss, correct, count = 0.0, 0, 0
    with lc.no_grad():
        for x, y in loader:
            with autocast(x.device, mode):
                logits = model(x)
            total_loss += F.cross_entropy(logits, y, reduction="sum").item()
            correct += int((logits.argmax(axis=1) == y).sum().item())
            count += y.shape[0]
    return total_loss / count, correct / count


def plot_curves(history: list[dict[str, float]], path: Path) -> None:
    """Loss and accuracy per epoch, train and test, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    epochs = [h["epoch"] for h in history]
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    for split in ("train", "test"):
        ax_loss.plot(epochs, [h[f"{split}_loss"] for h in history], marker="o", label=split)
        ax_acc.plot(epochs, [100 * h[f"{split}_acc"] for h in history], marker="o", label=split)
    ax_loss.set(xlabel="epoch", ylabel="cross-entropy", title="loss")
    ax_acc.set(xlabel="epoch", ylabel="accuracy (%)", title="accuracy")
    for ax in (ax_loss, ax_acc):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=["cnn", "mlp"], default="cnn")
    p.add_argument("--device", default=None, help="a Lucid device: numpy, mlx, mlx:cpu, gpu, ... (default: "
                   "$LUCID_DEVICE or cpu, i.e. NumPy)")  # fmt: skip
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-2, help="OneCycleLR's peak learning rate")
    p.add_argument("--weight-decay", type=float, default=1e-2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit", type=int, default=None, help="use only the first N samples (quick runs, CI)")
    p.add_argument("--out", type=Path, default=Path("runs/digits"), help="checkpoints and curves.png go here")
    p.add_argument("--resume", nargs="?", const="latest", default=None, metavar="CHECKPOINT",
                   help="continue from CHECKPOINT (default: the newest in OUT/checkpoints)")  # fmt: skip
    p.add_argument("--stop-after", type=int, default=None, metavar="N",
                   help="stop after epoch N, as an interruption would (resume with --resume)")  # fmt: skip
    p.add_argument("--keep", type=int, default=2, help="whole-epoch checkpoints to keep; older ones are deleted")
    p.add_argument("--no-progress", action="store_true", help="no progress bars (logs, CI)")
    p.add_argument("--amp", choices=["off", "bf16"], default="off",
                   help="mixed precision: bf16 runs forward and loss under autocast (bfloat16 products)")  # fmt: skip
    args = p.parse_args(argv)
    if args.limit is not None and args.limit < 10:
        p.error(f"--limit must be at least 10 (a train and a test split), got {args.limit}")
    if args.keep < 1:
        p.error(f"--keep must be at least 1, got {args.keep}")
    return args


class CtrlC:
    """While active, the first Ctrl-C only sets ``requested`` (the loop saves and stops at the next batch
    boundary, where the state is consistent); a second one interrupts at once."""

    def __init__(self) -> None:
        self.requested = False

    def _handle(self, signum: int, frame: Any) -> None:
        self.requested = True
        signal.signal(signal.SIGINT, signal.default_int_handler)
        print("\nCtrl-C: saving after this batch (press Ctrl-C again to quit without saving)", flush=True)

    def __enter__(self) -> CtrlC:
        self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        signal.signal(signal.SIGINT, self._previous)


def resume_command(args: argparse.Namespace) -> str:
    """The command line that continues this run."""
    cmd = ["python", sys.argv[0] if sys.argv and sys.argv[0].endswith(".py") else "examples/train_digits.py"]
    cmd.append("--resume")
    if args.out != Path("runs/digits"):
        cmd += ["--out", str(args.out)]
    if args.device:
        cmd += ["--device", args.device]
    return " ".join(cmd)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from tqdm import tqdm

    args = parse_args(argv)
    resume_from: Path | None = None
    saved: dict[str, Any] | None = None
    if args.resume is not None:
        resume_from = latest_checkpoint(args.out / "checkpoints") if args.resume == "latest" else Path(args.resume)
        if resume_from is None:
            sys.exit(f"--resume: no checkpoint in {args.out / 'checkpoints'}; train without --resume first")
        saved = read_training_state(resume_from)
        for name in TRAINING_SETTINGS:  # a resumed run is the same run: take its settings
            setattr(args, name, saved["settings"][name])
    settings = {name: getattr(args, name) for name in TRAINING_SETTINGS}
    device = lc.resolve_device(args.device) if args.device else lc.get_default_device()

    lc.manual_seed(args.seed)
    train_set, test_set = load_digits_dataset(args.limit, device, args.seed)
    # seed= makes the shuffle depend only on (seed, epoch): set_epoch() below is all a resume needs
    train_loader = data.DataLoader(train_set, batch_size=args.batch_size, shuffle=True, seed=args.seed)
    test_loader = data.DataLoader(test_set, batch_size=256)
    model = make_model(args.model).to(device)
    opt = optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, epochs=args.epochs, steps_per_epoch=len(train_loader))

    start_epoch, start_step, partial, history = 0, 0, {}, []
    if saved is not None:
        model.load_state_dict(nn.load(resume_from, device=device))
        opt.load_state_dict(_join_optimizer_state(saved["optimizer_tensors"], saved["optimizer"]))
        sched.load_state_dict(saved["scheduler"])
        lc.set_rng_state(saved["rng"])
        start_epoch, history = saved["epoch"], saved["history"]
        start_step, partial = saved.get("step", 0), saved.get("partial", {})
        where = f" and {start_step} batches" if start_step else ""
        print(f"resumed from {resume_from} (epoch {start_epoch}{where} of {args.epochs})")
    n_params = sum(p.size for p in model.parameters())
    print(f"{args.model}: {n_params:,} parameters on {device}; {len(train_set)} train / {len(test_set)} test images")

    ckpt_dir, plot_path = args.out / "checkpoints", args.out / "curves.png"
    last_epoch = args.epochs if args.stop_after is None else min(args.epochs, args.stop_after)
    started = time.perf_counter()
    with CtrlC() as ctrl_c:
        for epoch in range(start_epoch, last_epoch):
            train_loader.sampler.set_epoch(epoch)  # the same order as before an interruption: skip what was done
            model.train()
            seen, correct, loss_sum = partial.get("seen", 0), partial.get("correct", 0), partial.get("loss_sum", 0.0)
            step, batches = start_step, len(train_loader)
            bar = tqdm(itertools.islice(train_loader, start_step, None), initial=start_step, total=batches,
                       desc=f"epoch {epoch + 1}/{args.epochs}", unit="batch", leave=True,
                       disable=args.no_progress, file=sys.stdout)  # fmt: skip
            start_step, partial = 0, {}
            for x, y in bar:
                with autocast(x.device, args.amp):  # forward and loss; backward runs outside, as PyTorch advises
                    logits = model(x)
                    loss = F.cross_entropy(logits, y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
                n = y.shape[0]
                step += 1
                seen += n
                loss_sum += loss.item() * n
                correct += int((logits.argmax(axis=1) == y).sum().item())
                bar.set_postfix(loss=f"{loss_sum / seen:.4f}", acc=f"{correct / seen:.3f}")
                if ctrl_c.requested and step < batches:
                    bar.n = step  # tqdm counts a batch when the next is fetched; show the one just done
                    bar.close()
                    path = save_checkpoint(ckpt_dir, epoch, model, opt, sched, settings, history, args.keep,
                                           step, {"seen": seen, "correct": correct, "loss_sum": loss_sum})  # fmt: skip
                    stop(f"saved {path} (epoch {epoch + 1}, after batch {step} of {batches})", args)
            test_loss, test_acc = evaluate(model, test_loader, args.amp)
            history.append({
                "epoch": epoch + 1, "train_loss": loss_sum / seen, "train_acc": correct / seen,
                "test_loss": test_loss, "test_acc": test_acc, "lr": sched.get_last_lr()[0],
            })  # fmt: skip
            path = save_checkpoint(ckpt_dir, epoch + 1, model, opt, sched, settings, history, args.keep)
            plot_curves(history, plot_path)
            print(f"epoch {epoch + 1}: train loss {loss_sum / seen:.4f} acc {correct / seen:.3f} | "
                  f"test loss {test_loss:.4f} acc {test_acc:.3f} | saved {path}")  # fmt: skip
            if ctrl_c.requested and epoch + 1 < last_epoch:
                stop(f"saved {path} (epoch {epoch + 1} complete)", args)
    elapsed = time.perf_counter() - started
    if history:
        print(f"test accuracy {100 * history[-1]['test_acc']:.2f}% after {history[-1]['epoch']} epochs "
              f"({elapsed:.1f} s this run); curves in {plot_path}")  # fmt: skip
    return {"history": history, "model": model, "seconds": elapsed}


def stop(saved: str, args: argparse.Namespace) -> None:
    """End an interrupted run: say what was saved and how to continue, and exit with Ctrl-C's status."""
    print(f"interrupted: {saved}\ncontinue with: {resume_command(args)}", flush=True)
    raise SystemExit(130)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:  # a second Ctrl-C, or one before training started
        print("\ninterrupted: stopped without saving; the newest checkpoint in the output folder is intact "
              "(continue with --resume if there is one)", file=sys.stderr)  # fmt: skip
        raise SystemExit(130) from None
