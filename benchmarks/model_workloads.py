"""Two whole-model workloads of the performance issue, written once against PyTorch's API.

``mod`` is ``torch`` or ``lucid`` (Lucid's PyTorch face): the same code builds both frameworks' models.

GPT: a nanoGPT-shaped character model (2 layers, 64-dim embedding, 4 heads, context 64, vocabulary 65 as
   nanoGPT's shakespeare_char, tied input/output embeddings, pre-LayerNorm blocks, GELU MLP, causal
   ``scaled_dot_product_attention``, no dropout, no biases), batch 12, AdamW(lr=1e-3) train step.
MNIST: the net of pytorch/examples ``mnist/main.py`` (conv 1->32 3x3, ReLU, conv 32->64 3x3, ReLU, 2x2
   max-pool, dropout 0.25, linear 9216->128, ReLU, dropout 0.5, linear 128->10, log-softmax, NLL loss),
   batch 64, Adadelta(lr=1.0) train step, as that example trains it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

Step = Callable[[], None]

GPT_CONFIG = {"n_layer": 2, "n_embd": 64, "n_head": 4, "block_size": 64, "vocab_size": 65, "batch": 12}


def _gpt(mod: Any) -> Any:
    nn, F = mod.nn, mod.nn.functional
    c = GPT_CONFIG
    d, h = c["n_embd"], c["n_head"]

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln_1 = nn.LayerNorm(d, bias=False)
            self.c_attn = nn.Linear(d, 3 * d, bias=False)
            self.c_proj = nn.Linear(d, d, bias=False)
            self.ln_2 = nn.LayerNorm(d, bias=False)
            self.c_fc = nn.Linear(d, 4 * d, bias=False)
            self.mlp_proj = nn.Linear(4 * d, d, bias=False)

        def forward(self, x: Any) -> Any:
            b, t, _ = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
            q, k, v = (z.view(b, t, h, d // h).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.c_proj(y.transpose(1, 2).contiguous().view(b, t, d))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte = nn.Embedding(c["vocab_size"], d)
            self.wpe = nn.Embedding(c["block_size"], d)
            self.blocks = nn.ModuleList([Block() for _ in range(c["n_layer"])])
            self.ln_f = nn.LayerNorm(d, bias=False)
            self.lm_head = nn.Linear(d, c["vocab_size"], bias=False)
            self.wte.weight = self.lm_head.weight  # weight tying, as nanoGPT
            for name, p in self.named_parameters():  # nanoGPT's initialisation
                if name.endswith("c_proj.weight") or name.endswith("mlp_proj.weight"):
                    nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * c["n_layer"]))
                elif p.dim() == 2:
                    nn.init.normal_(p, mean=0.0, std=0.02)

        def forward(self, idx: Any, targets: Any) -> Any:
            _, t = idx.shape
            x = self.wte(idx) + self.wpe(mod.arange(t))
            for block in self.blocks:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))

    return GPT()


def _mnist_net(mod: Any) -> Any:
    nn, F = mod.nn, mod.nn.functional

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(1, 32, 3, 1)
            self.conv2 = nn.Conv2d(32, 64, 3, 1)
            self.dropout1 = nn.Dropout(0.25)
            self.dropout2 = nn.Dropout(0.5)
            self.fc1 = nn.Linear(9216, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x: Any) -> Any:
            x = F.relu(self.conv1(x))
            x = F.relu(self.conv2(x))
            x = self.dropout1(F.max_pool2d(x, 2))
            x = F.relu(self.fc1(mod.flatten(x, 1)))
            return F.log_softmax(self.fc2(self.dropout2(x)), dim=1)

    return Net()


def model_train_step(workload: str, mod: Any) -> Step:
    """The ``GPT`` or ``MNIST`` train step (zero_grad, forward, loss, backward, step) on ``mod``."""
    mod.manual_seed(0)
    if workload == "GPT":
        c = GPT_CONFIG
        model = _gpt(mod)
        x = mod.randint(0, c["vocab_size"], (c["batch"], c["block_size"]))
        y = mod.randint(0, c["vocab_size"], (c["batch"], c["block_size"]))
        opt = mod.optim.AdamW(model.parameters(), lr=1e-3)

        def loss_fn() -> Any:
            return model(x, y)
    elif workload == "MNIST":
        model = _mnist_net(mod)
        x = mod.randn(64, 1, 28, 28)
        y = mod.randint(0, 10, (64,))
        opt = mod.optim.Adadelta(model.parameters(), lr=1.0)

        def loss_fn() -> Any:
            return mod.nn.functional.nll_loss(model(x), y)
    else:
        raise ValueError(f"model_train_step: unknown workload {workload!r}; expected 'GPT' or 'MNIST'")
    model.train()

    def step() -> None:
        opt.zero_grad()
        loss_fn().backward()
        opt.step()

    return step
