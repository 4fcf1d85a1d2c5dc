"""Seed 001's example model, Sequential(Linear, ReLU, Linear), trains with a hand-written SGD step."""

from __future__ import annotations

import lucid_core as lc
import lucid_nn as nn
from lucid_nn import functional as F


def test_mlp_regression_loss_falls(device):
    lc.manual_seed(0)
    x = lc.randn(64, 3, device=device)
    w_true = lc.asarray([[1.5], [-2.0], [0.5]], device=device)
    y = lc.tanh(x @ w_true) + 0.1 * x[:, :1] ** 2
    model = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
    params = list(model.parameters())
    losses = []
    for _ in range(150):
        loss = F.mse_loss(model(x), y)
        model.zero_grad()
        loss.backward()
        with lc.no_grad():
            for p in params:
                p.sub_(p.grad, alpha=0.1)
        losses.append(loss.item())
    assert losses[-1] < 0.2 * losses[0]
    assert all(p is q for p, q in zip(params, model.parameters()))


def test_mlp_classification_with_cross_entropy(device):
    lc.manual_seed(1)
    x = lc.randn(90, 2, device=device)
    labels = lc.astype(x[:, 0] + x[:, 1] > 0, lc.int64) + lc.astype(x[:, 0] > 1.0, lc.int64)
    model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)
    first = None
    for _ in range(100):
        loss = nn.CrossEntropyLoss()(model(x), labels)
        first = first if first is not None else loss.item()
        model.zero_grad()
        loss.backward()
        with lc.no_grad():
            for p in model.parameters():
                p.sub_(p.grad, alpha=0.5)
    acc = (lc.argmax(model(x), axis=1) == labels).astype(lc.float32).mean().item()
    assert loss.item() < 0.5 * first and acc > 0.85
