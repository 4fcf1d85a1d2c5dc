"""``lucid.save``/``lucid.load`` and ``lucid.utils.checkpoint`` as a PyTorch program uses them."""

from __future__ import annotations

import lucid
import lucid.nn as nn
from lucid.utils.checkpoint import checkpoint, checkpoint_sequential


def test_save_and_load_a_training_checkpoint(tmp_path):
    lucid.manual_seed(0)
    model = nn.Linear(3, 2)
    opt = lucid.optim.AdamW(model.parameters(), lr=0.1)
    model(lucid.randn(4, 3)).sum().backward()
    opt.step()
    path = tmp_path / "ckpt.pt"
    lucid.save({"epoch": 3, "model": model.state_dict(), "optimizer": opt.state_dict()}, path)
    ckpt = lucid.load(path, map_location="cpu", weights_only=True)
    assert ckpt["epoch"] == 3
    fresh = nn.Linear(3, 2)
    fresh.load_state_dict(ckpt["model"])
    assert lucid.equal(fresh.weight, model.weight) and lucid.equal(fresh.bias, model.bias)
    opt2 = lucid.optim.AdamW(fresh.parameters(), lr=0.1)
    opt2.load_state_dict(ckpt["optimizer"])
    assert opt2.state_dict()["state"][0]["step"] == opt.state_dict()["state"][0]["step"]


def test_checkpoint_gives_the_plain_gradients():
    lucid.manual_seed(0)
    block = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 4))
    x = lucid.randn(2, 4, requires_grad=True)
    block(x).sum().backward()
    want = [p.grad.clone() for p in block.parameters()] + [x.grad.clone()]
    for p in block.parameters():
        p.grad = None
    x.grad = None
    checkpoint(block, x, use_reentrant=False).sum().backward()
    got = [p.grad for p in block.parameters()] + [x.grad]
    assert all(lucid.allclose(a, b) for a, b in zip(got, want))
    assert checkpoint_sequential(block, 2, x, use_reentrant=False).shape == (2, 4)
