"""The seeds' examples (tests/integration/seeds, the design documents) run as written, with ``import lucid``.

Each test extracts the examples' code from the seed text verbatim (by their first and last lines) and runs
it in a fresh interpreter. Where a seed's snippet uses a name the seed leaves to the reader (``MyModel``,
``loader``, ``full_ds``), a short preamble defines it; the seed's own lines are never edited.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SEEDS = Path(__file__).resolve().parent / "seeds"  # the seed texts, kept with the tests


def seed_text(prefix: str) -> str:
    (path,) = SEEDS.glob(f"{prefix}_*.txt")
    return path.read_text(encoding="utf-8")


def block(text: str, first: str, last: str) -> str:
    """The seed's lines from the first line that starts with ``first`` through the next that starts with ``last``.

    Lines are compared with runs of blanks collapsed, so the arguments fit in this file's line length.
    """
    lines = [line.rstrip() for line in text.splitlines()]
    flat = [" ".join(line.split()) for line in lines]

    def find(prefix: str, start: int) -> int:
        want = " ".join(prefix.split())
        return next(i for i in range(start, len(flat)) if flat[i].startswith(want))

    start = find(first, 0)
    end = find(last, start)
    return textwrap.dedent("\n".join(lines[start : end + 1])) + "\n"


def run(code: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "seed_example.py"
    script.write_text(code, encoding="utf-8")
    full_env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", **env}
    full_env.pop("LUCID_STRICT_DEVICE", None) if "LUCID_STRICT_DEVICE" not in env else None
    return subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=full_env, capture_output=True, text=True, timeout=600
    )


def _has_gpu() -> bool:
    import lucid

    return lucid.accelerator.is_available()


# -- seed 001: Dataset / DataLoader ---------------------------------------------------------------------------------
def test_seed_001_image_classification_loop_runs_as_written(tmp_path: Path) -> None:
    code = block(seed_text("001"), "import lucid", 'print(f"Epoch {epoch} acc={correct/total:.3f}")')
    assert code.startswith("import lucid\nimport lucid.nn as nn\nfrom lucid.data import")
    assert '.to("gpu")' in code and "loss.eval()" in code
    proc = run(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split(" acc=")[0] for line in lines] == [f"Epoch {i}" for i in range(5)]
    assert all(0.0 <= float(line.split("acc=")[1]) <= 0.3 for line in lines)  # random labels: near chance
    if not _has_gpu():  # "gpu" falls back to the CPU with exactly one warning
        assert proc.stderr.count("no installed backend offers a 'gpu' device") == 1


def test_seed_001_gpu_without_a_gpu_is_an_error_when_strict(tmp_path: Path) -> None:
    if _has_gpu():
        pytest.skip("this machine has a GPU")
    code = block(
        seed_text("001"),
        "X = lucid.randn(100, 32); y = lucid.randint(0, 10, (100,))",
        'ds = TensorDataset(X, y).to("gpu")',
    )
    proc = run("import lucid\nfrom lucid.data import TensorDataset\n" + code, tmp_path, LUCID_STRICT_DEVICE="1")
    assert proc.returncode != 0
    assert "LUCID_STRICT_DEVICE is set" in proc.stderr


def test_seed_001_dataset_snippets_run_as_written(tmp_path: Path) -> None:
    text = seed_text("001")
    parts = [
        "import lucid\n",
        "from lucid.data import ConcatDataset, DataLoader, Dataset, Subset, TensorDataset, random_split\n",
        block(text, "class MyDataset(Dataset):", "        return len(self.X)"),
        "full_ds = MyDataset(lucid.randn(1000, 4), lucid.arange(1000))  # the reader's data\n",
        block(text, "train_ds = Subset(full_ds, list(range(0, 800)))", "val_ds = Subset(full_ds,"),
        block(text, "X = lucid.randn(100, 32);", 'ds = TensorDataset(X, y).to("gpu")'),
        "extra_ds = MyDataset(lucid.randn(5, 4), lucid.arange(5) + 1000)  # the reader's data\n",
        block(text, "full = ConcatDataset([train_ds, extra_ds])", "last = full[-1]"),
        block(text, "loader = DataLoader(ds, batch_size=32, shuffle=True)", "    ..."),
        block(text, "def my_collate(batch):", "loader = DataLoader(ds, batch_size=16, collate_fn=my_collate)"),
        block(text, "train_ds, val_ds = random_split(ds, [0.8, 0.2], seed=42)", "train_ds, val_ds = random_split("),
        "xb, yb = next(iter(loader))\n"
        "print(len(full), int(last[1]), tuple(xb.shape), tuple(yb.shape), len(train_ds), len(val_ds))\n",
    ]  # fmt: skip
    proc = run("".join(parts), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["805", "1004", "(16,", "32)", "(16,)", "80", "20"]


# -- seed 000: Optimizer / LRScheduler ----------------------------------------------------------------------------
SEED_000_PREAMBLE = """
import lucid
import lucid.nn as nn
import lucid.nn.functional as F
from lucid.optim import Optimizer
from lucid.optim.lr_scheduler import LRScheduler


class MyOptimizer(Optimizer):  # the seed's "OptimizerSubclass": SGD with momentum and weight decay
    def __init__(self, params, defaults):
        super().__init__(params, {"momentum": 0.9, "weight_decay": 0.0, **defaults})

    def init_single(self, param, state, group):
        state["momentum_buffer"] = lucid.zeros_like(param)

    def apply_single(self, param, grad, state, group):
        grad = grad + group["weight_decay"] * param
        state["momentum_buffer"].mul_(group["momentum"]).add_(grad)
        param.sub_(state["momentum_buffer"], alpha=group["lr"])


class MyScheduler(LRScheduler):  # halves the learning rates every epoch; the seed's "..." is left to the reader
    def __init__(self, optimizer, *unspecified, last_epoch=-1, verbose=False):
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        return [base * 0.5 ** self.last_epoch for base in self.base_lrs]


class MyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(4, 16), nn.ReLU())
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.backbone(x))


lucid.manual_seed(0)
X = lucid.randn(64, 4)
Y = (X[:, 0] > 0).long() + (X[:, 1] > 0).long()
loader = [(X[i : i + 16], Y[i : i + 16]) for i in range(0, 64, 16)]
criterion = F.cross_entropy
"""


def test_seed_000_optimizer_and_scheduler_examples_run_as_written(tmp_path: Path) -> None:
    text = seed_text("000")
    parts = [
        SEED_000_PREAMBLE,
        "model = MyModel()\n",
        block(text, "params = [", 'opt = MyOptimizer(params, defaults={"lr": 1e-3, "weight_decay": 0.0})'),
        "print('groups', [g['lr'] for g in opt.param_groups], [g['weight_decay'] for g in opt.param_groups])\n",
        "first = criterion(model(X), Y).item()\n",
        block(text, "model = MyModel()", "    sched.step()  # epoch 단위 스텝"),
        "print('lr', sched.last_lr, 'loss fell', criterion(model(X), Y).item() < first)\n",
        block(text, 'backbone = {"params": model.backbone.parameters(), "lr": 1e-4}', "sched = MyScheduler(opt, ...)"),
        "for x, y in loader:\n    opt.zero_grad(); criterion(model(x), y).backward(); opt.step()\nsched.step()\n",
        block(text, "opt_state = opt.state_dict()", "sched.load_state_dict(sched_state)"),
        "print('state', sorted(opt_state['state']), [g['params'] for g in opt_state['param_groups']], sched.last_lr)\n",
    ]
    proc = run("".join(parts), tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0] == "groups [0.001, 0.01] [0.0, 0.0001]"
    assert out[1] == "lr [9.765625e-07] loss fell True"  # 1e-3 halved at each of the 10 epochs
    assert out[2] == "state [0, 1, 2, 3] [[0, 1], [2, 3]] [5e-05, 0.0005]"


# -- seed 003: DeZero steps 6-9 (NumPy code, no Lucid) ---------------------------------------------------------------
def test_seed_003_dezero_cells_run_as_written(tmp_path: Path) -> None:
    text = seed_text("003")
    cells = []
    lines = [line.replace("\xa0", " ") for line in text.splitlines()]
    # a cell ends at a bullet, a heading, the next cell, an output line or a traceback
    prose = re.compile(r"^(•|In \[\d+\]:|\d+(\.\d+)*\.? \S|-?\d+(\.\d+)?$|-{10,}|<class )")
    for i, line in enumerate(lines):  # the notebook's "In [n]:" cells, each up to the next prose line
        if re.match(r"In \[\d+\]:$", line.strip()):
            body = []
            for nxt in lines[i + 1 :]:
                if prose.match(nxt.strip()):
                    break
                body.append(nxt)
            cells.append("\n".join(body).strip("\n") + "\n")
    assert len(cells) >= 15
    # one namespace, cell after cell, as the notebook ran; a cell that raised there (the seed prints the
    # traceback) must raise here too
    driver = (
        "import json, sys\n"
        "cells = json.load(open(sys.argv[1]))\n"
        "ns = {}\n"
        "for i, cell in enumerate(cells):\n"
        "    try:\n"
        "        exec(compile(cell, f'<seed 003 cell {i}>', 'exec'), ns)\n"
        "    except Exception as exc:\n"
        "        print('raised', type(exc).__name__)\n"
    )
    import json

    (tmp_path / "cells.json").write_text(json.dumps(cells), encoding="utf-8")
    proc = run(driver.replace("sys.argv[1]", repr(str(tmp_path / "cells.json"))), tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out.count("3.297442541400256") >= 3
    assert [line for line in out if line.startswith("raised")] == ["raised TypeError"]  # In [23], as in the seed
