"""Seed 001's full example: TensorDataset -> random_split -> two DataLoaders -> Sequential -> SGD loop.

Smaller than the seed (200 samples of 3x8x8 instead of 1000 of 3x32x32) so it runs in seconds; the classes
are separable, so the accuracy computed with ``argmax`` and ``item()`` must rise well above chance.
"""

from __future__ import annotations

import pytest

import lucid_core as lc
from lucid_data import DataLoader, TensorDataset, random_split


def _frontends():
    import lucid_nn
    import lucid_optim

    return lucid_nn, lucid_optim


def _synthetic_images(n: int, num_classes: int, device: lc.Device) -> tuple[lc.Tensor, lc.Tensor]:
    centers = lc.randn(num_classes, 3 * 8 * 8, device=device)
    y = lc.randint(0, num_classes, (n,), device=device)
    x = centers[y] + 1.5 * lc.randn(n, 3 * 8 * 8, device=device)
    return x.reshape(n, 3, 8, 8), y


def _run_seed_example(device: lc.Device, num_workers: int) -> tuple[list[float], list[float]]:
    """The seed's loop, as written there (``.to``, ``reshape``, ``loss.eval()``, ``argmax``, ``item()``)."""
    nn, optim = _frontends()
    X, y = _synthetic_images(200, 4, device)
    dataset = TensorDataset(X, y)
    train_ds, val_ds = random_split(dataset, [0.8, 0.2], seed=123)
    assert (len(train_ds), len(val_ds)) == (160, 40)

    train_loader = DataLoader(train_ds, batch_size=16, shuffle=True, seed=0, num_workers=num_workers)
    val_loader = DataLoader(val_ds, batch_size=32, shuffle=False, num_workers=num_workers)
    assert (len(train_loader), len(val_loader)) == (10, 2)

    model = nn.Sequential(
        nn.Linear(3 * 8 * 8, 32),
        nn.ReLU(),
        nn.Linear(32, 4),
    ).to(device)
    opt = optim.SGD(model.parameters(), defaults={"lr": 1e-2})

    epoch_losses, accuracies = [], []
    for _epoch in range(5):
        model.train()
        total_loss = 0.0
        for x, yb in train_loader:
            x = x.to(device).reshape(x.shape[0], -1)
            yb = yb.to(device)
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), yb)
            loss.eval()
            loss.backward()
            opt.step()
            total_loss += loss.item()
        epoch_losses.append(total_loss / len(train_loader))

        model.eval()
        correct = total = 0
        for x, yb in val_loader:
            x = x.to(device).reshape(x.shape[0], -1)
            yb = yb.to(device)
            preds = model(x).argmax(axis=1)
            correct += (preds == yb).sum().item()
            total += yb.size
        assert total == 40
        accuracies.append(correct / total)
    return epoch_losses, accuracies


@pytest.mark.parametrize("num_workers", [0, 2])
def test_seed_001_training_loop(device, num_workers):
    losses, accuracies = _run_seed_example(device, num_workers)
    assert losses[-1] < 0.5 * losses[0], losses
    assert accuracies[-1] >= 0.8, accuracies  # chance is 0.25


def test_seed_001_worker_threads_do_not_change_the_run(device):
    lc.manual_seed(7)
    single = _run_seed_example(device, 0)
    lc.manual_seed(7)
    threaded = _run_seed_example(device, 3)
    assert threaded == single
