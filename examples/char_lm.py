"""A character-level language model (embedding + LSTM) on a bundled public-domain text, then sampled.

    python examples/char_lm.py                       # Shakespeare's sonnets, ~1-2 min on the NumPy backend
    python examples/char_lm.py --device mlx --epochs 40 --prompt "Shall I"

Writes ``OUT/char_lm.safetensors`` (the model's state dict; the vocabulary and settings are in its metadata)
and prints text sampled from the trained model. Needs ``pip install -r examples/requirements.txt`` (tqdm).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import lucid_core as lc
import lucid_data as data
import lucid_nn as nn
import lucid_nn.functional as F
import lucid_optim as optim

DEFAULT_TEXT = Path(__file__).parent / "data" / "sonnets.txt"


class CharLSTM(nn.Module):
    """Embedding -> multi-layer LSTM -> linear head giving next-character logits."""

    def __init__(self, vocab_size: int, embed: int = 64, hidden: int = 256, layers: int = 1, dropout: float = 0.1):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=layers, batch_first=True, dropout=dropout if layers > 1 else 0.0)
        self.head = nn.Linear(hidden, vocab_size)

    def forward(self, x: lc.Tensor, state: Any = None) -> tuple[lc.Tensor, Any]:
        out, state = self.lstm(self.embed(x), state)
        return self.head(out), state


def make_sequences(ids: lc.Tensor, seq_len: int, stride: int) -> data.TensorDataset:
    """Windows every ``stride`` characters: inputs ``ids[i : i + seq_len]``, targets shifted by one character."""
    starts = list(range(0, ids.shape[0] - seq_len, stride))
    if not starts:
        raise ValueError(f"text of {ids.shape[0]} characters is too short for sequences of {seq_len}")
    positions = lc.asarray([[s + j for j in range(seq_len)] for s in starts], dtype=lc.int64, device=ids.device)
    return data.TensorDataset(ids[positions], ids[positions + 1])


def sample(model: CharLSTM, vocab: str, prompt: str, length: int, temperature: float, device: Any) -> str:
    """Feed ``prompt``, then draw ``length`` characters one at a time from the softmax at ``temperature``."""
    index = {c: i for i, c in enumerate(vocab)}
    ids = [index[c] for c in prompt if c in index] or [0]
    rng = lc.host_rng()  # seeded by lc.manual_seed: the same seed samples the same text
    model.eval()
    out = []
    with lc.no_grad():
        logits, state = model(lc.asarray([ids], dtype=lc.int64, device=device))
        for _ in range(length):
            probs = F.softmax(logits[0, -1] / temperature, dim=-1).tolist()
            nxt = rng.choices(range(len(vocab)), weights=probs)[0]
            out.append(vocab[nxt])
            logits, state = model(lc.asarray([[nxt]], dtype=lc.int64, device=device), state)
    return prompt + "".join(out)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--text", type=Path, default=DEFAULT_TEXT, help="a UTF-8 text file to learn")
    p.add_argument("--device", default=None, help="a Lucid device: numpy, mlx, ... (default: $LUCID_DEVICE or cpu)")
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--limit", type=int, default=None, help="use only the first N characters (quick runs, CI)")
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--lr", type=float, default=5e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--prompt", default="Shall I ")
    p.add_argument("--sample-length", type=int, default=400)
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--out", type=Path, default=Path("runs/char_lm"))
    p.add_argument("--no-progress", action="store_true", help="no progress bars (logs, CI)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from tqdm import tqdm

    args = parse_args(argv)
    device = lc.resolve_device(args.device) if args.device else lc.get_default_device()
    lc.manual_seed(args.seed)

    text = args.text.read_text(encoding="utf-8")[: args.limit]
    vocab = "".join(sorted(set(text)))
    index = {c: i for i, c in enumerate(vocab)}
    ids = lc.asarray([index[c] for c in text], dtype=lc.int64, device=device)
    seq_len = min(args.seq_len, max(4, len(text) // 4))  # tiny --limit runs still get a train and a test window
    n_val = max(seq_len + 1, len(text) // 10)  # the last 10% is held out
    train_set = make_sequences(ids[:-n_val], seq_len, stride=max(1, seq_len // 4))  # overlapping windows
    val_set = make_sequences(ids[-n_val:], seq_len, stride=seq_len)
    train_loader = data.DataLoader(train_set, batch_size=args.batch_size, shuffle=True, seed=args.seed)
    val_loader = data.DataLoader(val_set, batch_size=args.batch_size)

    model = CharLSTM(len(vocab), hidden=args.hidden, layers=args.layers).to(device)
    opt = optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs * len(train_loader))
    n_params = sum(p.size for p in model.parameters())
    print(f"{len(text):,} characters, vocabulary of {len(vocab)}; {len(train_set)} training windows of {seq_len}; "
          f"{n_params:,} parameters on {device}")  # fmt: skip

    started = time.perf_counter()
    history: list[dict[str, float]] = []
    for epoch in range(args.epochs):
        model.train()
        total, count = 0.0, 0
        bar = tqdm(train_loader, desc=f"epoch {epoch + 1}/{args.epochs}", unit="batch", disable=args.no_progress,
                   file=sys.stdout)  # fmt: skip
        for x, y in bar:
            logits, _ = model(x)
            loss = F.cross_entropy(lc.reshape(logits, (-1, len(vocab))), lc.reshape(y, (-1,)))
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            total, count = total + loss.item(), count + 1
            bar.set_postfix(loss=f"{total / count:.3f}")
        model.eval()
        with lc.no_grad():
            val = [F.cross_entropy(lc.reshape(model(x)[0], (-1, len(vocab))), lc.reshape(y, (-1,))).item()
                   for x, y in val_loader]  # fmt: skip
        val_loss = sum(val) / len(val)
        history.append({"epoch": epoch + 1, "train_loss": total / count, "val_loss": val_loss})
        print(f"epoch {epoch + 1}: train loss {total / count:.3f} | val loss {val_loss:.3f} "
              f"(perplexity {math.exp(val_loss):.1f})")  # fmt: skip

    args.out.mkdir(parents=True, exist_ok=True)
    ckpt = args.out / "char_lm.safetensors"
    settings = {"hidden": args.hidden, "layers": args.layers, "seq_len": seq_len}
    nn.save(model, ckpt, metadata={"vocab": json.dumps(vocab), "settings": json.dumps(settings)})
    text_out = sample(model, vocab, args.prompt, args.sample_length, args.temperature, device)
    print(f"trained in {time.perf_counter() - started:.1f} s; saved {ckpt}\n--- sample ---\n{text_out}\n--------------")
    return {"history": history, "sample": text_out, "checkpoint": ckpt}


if __name__ == "__main__":
    main()
