"""Seed 001's "image classification mini loop", as written there, with Lucid's module names.

In the seed, ``lucid`` is ``lucid_core``, ``lucid.nn`` is ``lucid_nn``, ``lucid.data`` is ``lucid_data`` and
``lucid.optim`` is ``lucid_optim``. The seed moves everything to "gpu"; here that is used only when an
installed backend has a GPU, else "cpu". The data are random, so the accuracy stays near chance (0.1).
"""

import lucid_core as lucid
import lucid_nn as nn
import lucid_optim
from lucid_data import DataLoader, TensorDataset, random_split

lucid.optim = lucid_optim  # the seed writes lucid.optim.SGD

device = "gpu" if any(d.endswith("gpu") for b in lucid.backends() for d in b.devices) else "cpu"
lucid.manual_seed(0)

X = lucid.randn(1000, 3, 32, 32)
y = lucid.randint(0, 10, (1000,))

dataset = TensorDataset(X, y)
train_ds, val_ds = random_split(dataset, [0.8, 0.2], seed=123)

train_loader = DataLoader(train_ds, batch_size=64, shuffle=True)
val_loader = DataLoader(val_ds, batch_size=128, shuffle=False)

model = nn.Sequential(
    nn.Linear(3 * 32 * 32, 128),
    nn.ReLU(),
    nn.Linear(128, 10),
).to(device)

opt = lucid.optim.SGD(model.parameters(), defaults={"lr": 1e-2})

for epoch in range(5):
    model.train()
    for x, y in train_loader:
        x = x.to(device).reshape(x.shape[0], -1)
        y = y.to(device)
        opt.zero_grad()

        loss = nn.functional.cross_entropy(model(x), y)
        loss.eval()
        loss.backward()
        opt.step()

    model.eval()
    correct = total = 0
    for x, y in val_loader:
        x = x.to(device).reshape(x.shape[0], -1)
        y = y.to(device)

        preds = model(x).argmax(axis=1)
        correct += (preds == y).sum().item()
        total += y.size

    print(f"Epoch {epoch} acc={correct/total:.3f}")
