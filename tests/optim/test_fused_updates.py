"""The fused optimizer updates (``lucid_core.fused.adam_step_``, ``sgd_step_``, ``adadelta_step_``: one kernel per
parameter) give the per-op updates' numbers bit for bit, on every backend, and check what they are given."""

from __future__ import annotations

import numpy as np
import pytest

import lucid_core as lc
import lucid_optim as optim
from lucid_optim import adam, adaptive, sgd


def _trajectory(device, dtype, fused: bool, monkeypatch, **kw) -> list[np.ndarray]:
    if not fused:
        monkeypatch.setattr(adam, "fusable", lambda *a: False)
        monkeypatch.setattr(sgd, "fusable", lambda *a: False)
        monkeypatch.setattr(adaptive, "fusable", lambda *a: False)
    rng = np.random.default_rng(0)
    params = [lc.Parameter(lc.asarray(rng.standard_normal(s).astype(dtype), device=device)) for s in ((5, 7), (300,))]
    kind = kw.pop("kind", "adam")
    opt = {"adam": optim.Adam, "adamw": optim.AdamW, "sgd": optim.SGD, "adadelta": optim.Adadelta}[kind](params, **kw)
    out = []
    for _ in range(6):
        for p in params:
            p.grad = lc.asarray(rng.standard_normal(p.shape).astype(dtype), device=device)
        opt.step()
        out += [np.asarray(lc.to_device(p.detach(), "numpy")._data) if device.backend.name != "numpy" else
                np.asarray(p.detach()._data).copy() for p in params]  # fmt: skip
    monkeypatch.undo()
    return out


@pytest.mark.parametrize(
    "kw",
    [
        {"lr": 1e-2},
        {"lr": 3e-3, "betas": (0.3, 0.9), "eps": 1e-6},  # lerp weight 0.7: PyTorch's other rounding order
        {"lr": 1e-2, "weight_decay": 0.1},
        {"lr": 1e-2, "weight_decay": 0.1, "kind": "adamw"},
        {"lr": 1e-2, "maximize": True},
        {"kind": "sgd", "lr": 0.01, "momentum": 0.9},
        {"kind": "sgd", "lr": 1.0, "momentum": 0.5, "dampening": 0.3, "weight_decay": 1e-2},  # lr 1: no multiply
        {"kind": "sgd", "lr": 0.05, "momentum": 0.9, "nesterov": True, "maximize": True},
        {"kind": "adadelta"},  # lr 1: no multiply
        {"kind": "adadelta", "lr": 0.5, "rho": 0.8, "eps": 1e-4, "weight_decay": 0.01, "maximize": True},
    ],
    ids=[
        "adam",
        "adam-beta1<0.5",
        "adam-l2",
        "adamw",
        "adam-maximize",
        "sgd",
        "sgd-dampening",
        "sgd-nesterov",
        "adadelta",
        "adadelta-options",
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_updates_are_the_per_op_updates_bit_for_bit(device, dtype, kw, monkeypatch):
    if lc.float64 not in device.backend.dtypes and dtype == "float64":
        pytest.skip(f"{device} has no float64")
    fused = _trajectory(device, dtype, True, monkeypatch, **dict(kw))
    per_op = _trajectory(device, dtype, False, monkeypatch, **dict(kw))
    for a, b in zip(fused, per_op):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_the_fused_path_is_taken(monkeypatch):
    calls = []
    real = lc.fused.adam_step_
    monkeypatch.setattr(lc.fused, "adam_step_", lambda *a, **k: (calls.append(1), real(*a, **k)))
    p = lc.Parameter(lc.ones(3))
    p.grad = lc.ones(3)
    optim.Adam([p]).step()
    optim.Adam([p], amsgrad=True).step()  # AMSGrad keeps the per-op update
    assert calls == [1]
    seen = []
    real_sgd = lc.fused.sgd_step_
    monkeypatch.setattr(lc.fused, "sgd_step_", lambda *a, **k: (seen.append(1), real_sgd(*a, **k)))
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    opt.step()  # the first step only copies the gradient into the buffer
    opt.step()
    optim.SGD([p], lr=0.1).step()  # no momentum: one op, nothing to fuse
    assert seen == [1]
    fused = []
    real_adadelta = lc.fused.adadelta_step_
    monkeypatch.setattr(lc.fused, "adadelta_step_", lambda *a, **k: (fused.append(1), real_adadelta(*a, **k)))
    optim.Adadelta([p]).step()
    optim.Adadelta([p], lr=lc.asarray(0.5)).step()  # a tensor lr keeps the per-op update
    assert fused == [1]


def test_adam_step_checks_its_tensors():
    p, g = lc.ones(3, requires_grad=True), lc.ones(3)
    m, v = lc.zeros(3), lc.zeros(3)
    hyper = dict(lerp_weight=0.1, beta2=0.999, step_size=1e-3, bias_correction2_sqrt=0.03, eps=1e-8)
    with pytest.raises(RuntimeError, match="must run under `lucid_core.no_grad"):
        lc.fused.adam_step_(p, g, m, v, **hyper)
    with lc.no_grad():
        with pytest.raises(ValueError, match=r"exp_avg is float64 \(3,\)"):
            lc.fused.adam_step_(p, g, lc.zeros(3, dtype=lc.float64), v, **hyper)
        with pytest.raises(ValueError, match=r"grad is float32 \(4,\)"):
            lc.fused.adam_step_(p, lc.ones(4), m, v, **hyper)
        with pytest.raises(TypeError, match="expected floating tensors"):
            lc.fused.adam_step_(*(lc.ones(3, dtype=lc.int32) for _ in range(4)), **hyper)
        view = p.detach()
        version = p._version
        lc.fused.adam_step_(p, g, m, v, **hyper)
        assert p._version == version + 1 and view.tolist() == p.tolist() != [1.0, 1.0, 1.0]  # views see the write


def test_adadelta_step_checks_its_tensors_and_writes_in_place():
    p, g = lc.ones(3, requires_grad=True), lc.ones(3)
    v, u = lc.zeros(3), lc.zeros(3)
    hyper = dict(rho=0.9, eps=1e-6, lr=1.0)
    with pytest.raises(RuntimeError, match="must run under `lucid_core.no_grad"):
        lc.fused.adadelta_step_(p, g, v, u, **hyper)
    with lc.no_grad():
        with pytest.raises(ValueError, match=r"acc_delta is float32 \(4,\)"):
            lc.fused.adadelta_step_(p, g, v, lc.zeros(4), **hyper)
        views = (p.detach(), v.detach(), u.detach())
        lc.fused.adadelta_step_(p, g, v, u, **hyper)
        assert [t.tolist() for t in views] == [p.tolist(), v.tolist(), u.tolist()]  # every write landed
        assert p.tolist() != [1.0] * 3 and v.tolist() != [0.0] * 3 and u.tolist() != [0.0] * 3


def test_a_kernel_result_that_does_not_fit_raises_and_writes_nothing(monkeypatch):
    """A backend's ``sgd_step`` returning another dtype must not change a parameter's dtype quietly."""
    from lucid_core import kernels

    dev = lc.ones(1).device
    monkeypatch.setitem(dev.backend.kernels, "sgd_step", lambda p, g, b, *rest: (p.astype("float64"), b))
    p, g, buf = lc.ones(3), lc.ones(3), lc.ones(3)
    with lc.no_grad(), pytest.raises(TypeError, match=r"sgd_step_: the backend's kernel returned float64 \(3,\)"):
        lc.fused.sgd_step_(p, g, buf, momentum=0.9, dampening=0.0, lr=0.1, nesterov=False)
    assert p.dtype == lc.float32 and p.tolist() == buf.tolist() == [1.0, 1.0, 1.0]
    assert "sgd_step" in kernels.KERNELS


def test_fusable_takes_only_number_hyperparameters_and_one_device_dtype_and_shape():
    from lucid_optim.optimizer import fusable

    p, g = lc.ones(3), lc.ones(3)
    assert fusable((0.1, 2), p, g, lc.zeros(3))
    assert not fusable((lc.asarray(0.1), 2), p, g)  # a tensor lr keeps the per-op update
    assert not fusable((True,), p, g)  # neither int nor float
    assert not fusable((0.1,), p, lc.ones(4))
    assert not fusable((0.1,), p, lc.ones(3, dtype=lc.float64))
    assert not fusable((0.1,), lc.ones(3, dtype=lc.int32), lc.ones(3, dtype=lc.int32))
    assert lc.fused.fits(p, g) and not lc.fused.fits(p, g.tolist()) and not lc.fused.fits(p.tolist(), g)
    loaded = {b.name for b in lc.backends() if b.status == "ok"}
    other = next((d for d in ("mlx", "numpy") if d != p.device.backend.name and d in loaded), None)
    if other is not None:
        assert not fusable((0.1,), p, lc.ones(3, device=other))


def test_a_tensor_other_than_the_parameter_that_requires_grad_is_refused_outside_no_grad():
    p, g, buf = lc.ones(3), lc.ones(3, requires_grad=True), lc.zeros(3)
    with pytest.raises(RuntimeError, match="must run under `lucid_core.no_grad"):
        lc.fused.sgd_step_(p, g, buf, momentum=0.9, dampening=0.0, lr=0.1, nesterov=False)
    assert p.tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("kind", ["sgd", "adam", "adadelta"])
def test_hyperparameters_changed_between_steps_reach_the_fused_kernel(device, monkeypatch, kind):
    # the backend may reuse the constants it made for the last step: a scheduler's new lr must still count
    def run(fused: bool) -> list[list[float]]:
        if not fused:
            for mod in (adam, sgd, adaptive):
                monkeypatch.setattr(mod, "fusable", lambda *a: False)
        p = lc.Parameter(lc.asarray(np.linspace(-1, 1, 40, dtype="float32"), device=device))
        opt = {"sgd": lambda: optim.SGD([p], lr=0.1, momentum=0.9), "adam": lambda: optim.Adam([p], lr=0.1),
               "adadelta": lambda: optim.Adadelta([p], lr=0.5)}[kind]()  # fmt: skip
        out = []
        for step in range(5):
            p.grad = lc.asarray(np.cos(np.arange(40, dtype="float32") + step), device=device)
            opt.param_groups[0]["lr"] = [0.1, 0.02, 0.3, 0.3, 0.05][step]
            opt.step()
            out.append(p.tolist())
        monkeypatch.undo()
        return out

    assert run(True) == run(False)
