"""lucid.compile on whole training steps and modules: 20 steps compiled equal 20 steps eager, bit for bit.

Models: an MLP with dropout, the W2 CNN (conv, max-pool) with BatchNorm, a Transformer encoder block (W5), a
nanoGPT-shaped model (weight tying, causal attention, GELU, AdamW) and an LSTM; on every backend under test. The
step is PyTorch's ``zero_grad / forward / loss / backward / step`` with a scheduler, seeded, with dropout.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import lucid
import lucid.nn as nn
import lucid.nn.functional as F

STEPS = 20


class _LSTMHead(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(6, 8, batch_first=True)
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.fc(y[:, -1])


class _Block(nn.Module):  # nanoGPT's block, small
    def __init__(self, d: int = 16, h: int = 4) -> None:
        super().__init__()
        self.d, self.h = d, h
        self.ln_1 = nn.LayerNorm(d, bias=False)
        self.c_attn = nn.Linear(d, 3 * d, bias=False)
        self.c_proj = nn.Linear(d, d, bias=False)
        self.ln_2 = nn.LayerNorm(d, bias=False)
        self.c_fc = nn.Linear(d, 4 * d, bias=False)
        self.mlp_proj = nn.Linear(4 * d, d, bias=False)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.drop(self.c_proj(y.transpose(1, 2).contiguous().view(b, t, d)))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class _GPT(nn.Module):
    def __init__(self, vocab: int = 11, d: int = 16, block: int = 8) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(block, d)
        self.blocks = nn.ModuleList([_Block(d), _Block(d)])
        self.ln_f = nn.LayerNorm(d, bias=False)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.wte.weight = self.lm_head.weight
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(4))

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(lucid.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return self.lm_head(self.ln_f(x))


# name: (model factory, input maker, loss, optimizer)
def _cases():
    mlp = lambda: nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Dropout(0.2), nn.Linear(16, 3))  # noqa: E731
    cnn = lambda: nn.Sequential(  # noqa: E731
        nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 2 * 2, 3),
    )  # fmt: skip
    enc = lambda: nn.TransformerEncoderLayer(16, 4, 32, dropout=0.1, batch_first=True)  # noqa: E731
    return {
        "mlp": (mlp, lambda r: r.standard_normal((16, 8)), "cls", "adam"),
        "cnn_batchnorm": (cnn, lambda r: r.standard_normal((4, 1, 8, 8)), "cls", "sgd"),
        "encoder_block": (enc, lambda r: r.standard_normal((2, 6, 16)), "mse", "adam"),
        "nanogpt": (_GPT, lambda r: r.integers(0, 11, (3, 8)), "lm", "adamw"),
        "lstm": (_LSTMHead, lambda r: r.standard_normal((4, 5, 6)), "cls", "sgd"),
    }


def _train(name: str, device: str, compiled: bool):
    make, inputs, loss_kind, opt_kind = _cases()[name]
    lucid.manual_seed(0)
    model = make().to(device)
    if opt_kind == "adam":
        opt = lucid.optim.Adam(model.parameters(), lr=1e-2)
    elif opt_kind == "adamw":
        opt = lucid.optim.AdamW(model.parameters(), lr=1e-2)
    else:
        opt = lucid.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = lucid.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)

    def step(x, y):
        opt.zero_grad()
        out = model(x)
        if loss_kind == "cls":
            loss = F.cross_entropy(out, y)
        elif loss_kind == "lm":
            loss = F.cross_entropy(out.view(-1, out.shape[-1]), y.view(-1))
        else:
            loss = F.mse_loss(out, y)
        loss.backward()
        opt.step()
        sched.step()
        return loss.detach()

    fn = lucid.compile(step) if compiled else step
    rng = np.random.default_rng(0)
    lucid.manual_seed(7)
    losses = []
    for _ in range(STEPS):
        raw = inputs(rng)
        x = lucid.tensor(raw if raw.dtype.kind == "i" else raw.astype("float32"), device=device)
        if loss_kind == "cls":
            y = lucid.tensor(rng.integers(0, 3, x.shape[0]), device=device)
        elif loss_kind == "lm":
            y = lucid.tensor(rng.integers(0, 11, x.shape), device=device)
        else:
            y = lucid.tensor(rng.standard_normal(x.shape).astype("float32"), device=device)
        losses.append(fn(x, y).item())
    state = [t.detach().numpy().copy() for t in model.state_dict().values()]
    return losses, state, fn


@pytest.mark.parametrize("name", list(_cases()))
def test_twenty_compiled_training_steps_equal_eager_ones(name: str, backend: str) -> None:
    eager_losses, eager_state, _ = _train(name, backend, compiled=False)
    losses, state, fn = _train(name, backend, compiled=True)
    assert losses == eager_losses
    assert len(state) == len(eager_state)
    for a, b in zip(state, eager_state):  # parameters and buffers (BatchNorm's statistics, its step count)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert fn.stats["replays"] == STEPS - 2, fn.explain()  # recorded, confirmed, then replayed every step


def test_a_compiled_module_infers_as_eagerly_and_follows_train_and_eval(backend: str) -> None:
    def make():
        lucid.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.5), nn.Linear(8, 2)).to(backend)

    model, ref = make(), make()
    compiled = lucid.compile(model)
    assert isinstance(compiled, nn.Module) and compiled._orig_mod is model
    assert list(compiled.state_dict()) == list(model.state_dict())
    x = lucid.randn(5, 4, device=backend)
    with lucid.no_grad():
        for mode in ("train", "eval", "train"):
            for m in (model, ref):
                getattr(m, mode)()
            lucid.manual_seed(1)
            got = [compiled(x).numpy() for _ in range(4)]
            lucid.manual_seed(1)
            want = [ref(x).numpy() for _ in range(4)]
            assert all(g.tobytes() == w.tobytes() for g, w in zip(got, want)), mode  # dropout masks included
            for a, b in zip(model.buffers(), ref.buffers()):  # BatchNorm's running statistics moved alike
                assert a.numpy().tobytes() == b.numpy().tobytes(), mode
    assert compiled._compiled_call.stats["replays"] >= 6


def test_module_compile_in_place_keeps_the_module_and_its_results(backend: str) -> None:
    lucid.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.Tanh()).to(backend)
    ref = nn.Sequential(nn.Linear(4, 3), nn.Tanh()).to(backend)
    ref.load_state_dict(model.state_dict())
    model.compile()
    with lucid.no_grad():
        for _ in range(5):
            x = lucid.randn(2, 4, device=backend)
            assert model(x).numpy().tobytes() == ref(x).numpy().tobytes()
    assert model._compiled_call.stats["replays"] == 3
    assert "plan" in lucid.compiler.explain(model)


def test_a_decorated_function_and_fullgraph_errors_through_the_face(backend: str) -> None:
    @lucid.compile
    def f(x):
        return lucid.relu(x) * 2

    x = lucid.randn(3, device=backend)
    for _ in range(3):
        assert f(x).numpy().tobytes() == (lucid.relu(x) * 2).numpy().tobytes()

    @lucid.compile(fullgraph=True)
    def g(x):
        return x * 2 if x.sum() > 0 else x

    with pytest.raises(lucid.compiler.CompileError, match="graph break"):
        g(x)
