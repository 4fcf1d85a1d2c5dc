"""Lucid in twenty lines: fit y = 3x - 1 with autograd on the default device."""

import lucid_core as lc

lc.manual_seed(0)
x = lc.randn(256, 1)
y = 3.0 * x - 1.0 + 0.05 * lc.randn(256, 1)

w = lc.zeros(1, 1, requires_grad=True)
b = lc.zeros(1, requires_grad=True)
for step in range(201):
    loss = ((x @ w + b - y) ** 2).mean()
    loss.backward()
    with lc.no_grad():
        w -= 0.1 * w.grad
        b -= 0.1 * b.grad
    w.grad = b.grad = None
    if step % 50 == 0:
        print(f"step {step:3d}  loss {loss.item():.4f}")
print(f"w = {w.item():.3f} (true 3), b = {b.item():.3f} (true -1), on {x.device}")
