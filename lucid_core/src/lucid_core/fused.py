"""Fused in-place updates for optimizers: one kernel call where the per-op version makes a dozen.

An optimizer step is a chain of element-wise ops per parameter; on a CPU each is a pass over memory and a
Python call, which for Adam costs as much as a small model's forward. These functions run the chain as
one declared kernel (``lucid_core.kernels``: a backend may own it, the composed default runs the same ops
in the same order), so the numbers are those of the per-op update, and write the results into the
tensors as their in-place methods do (every detached view sees them, versions are counted).
"""

from __future__ import annotations

__all__ = ["adadelta_step_", "adam_step_", "fits", "sgd_step_"]

from . import kernels
from ._grad_mode import _mode
from ._tensor import Tensor


def fits(*ts: Tensor) -> bool:
    """Whether tensors share one device, one floating dtype and one shape: what every fused update takes (an
    optimizer asks before it fuses; the updates check it again and say what does not fit).

    Called for every parameter at every step, so it compares the native arrays' dtypes and shapes (one device is
    one backend, whose dtypes map one to one onto Lucid's) without building Lucid dtypes or shape tuples twice."""
    first = ts[0]
    if not isinstance(first, Tensor):
        return False
    device, data = first._device, first._data
    dtype, shape = data.dtype, tuple(data.shape)
    for t in ts[1:]:
        if not isinstance(t, Tensor):
            return False
        other = t._data
        if (t._device is not device and t._device != device) or other.dtype != dtype or tuple(other.shape) != shape:
            return False
    return device.backend.lucid_dtype(dtype).kind == "f"


def _check(opname: str, names: tuple[str, ...], ts: tuple[Tensor, ...]) -> None:
    """Same device, floating dtype and shape for every tensor (:func:`fits`; else the first misfit named);
    outside the graph."""
    if not fits(*ts):
        first = ts[0]
        for name, t in zip(names, ts):
            if not isinstance(t, Tensor):
                raise TypeError(f"{opname}: {name} is a {type(t).__name__}, expected a Tensor")
            if t.device != first.device or t.dtype != first.dtype or t.shape != first.shape:
                raise ValueError(
                    f"{opname}: {name} is {t.dtype.name} {t.shape} on {t.device}; expected the param's "
                    f"{first.dtype.name} {first.shape} on {first.device}"
                )
        raise TypeError(f"{opname}: expected floating tensors, got {first.dtype.name}")
    if _mode.enabled and any(t._requires_grad for t in ts):
        raise RuntimeError(
            f"{opname}: an in-place update of tensors that require grad must run under `lucid_core.no_grad()`"
        )


def _store(opname: str, pairs: tuple[tuple[Tensor, object], ...]) -> None:
    """Write each kernel result into its tensor, after checking that every one fits (a backend's kernel
    returning another dtype or shape must not change a parameter's dtype quietly)."""
    for t, data in pairs:
        if data is t._data:  # written in place
            continue
        if data.dtype != t._data.dtype or tuple(data.shape) != tuple(t._data.shape):
            raise TypeError(
                f"{opname}: the backend's kernel returned {data.dtype} {tuple(data.shape)} for a tensor of "
                f"{t._data.dtype} {tuple(t._data.shape)}"
            )
    for t, data in pairs:
        t._set_data(data)


def sgd_step_(
    param: Tensor,
    grad: Tensor,
    momentum_buffer: Tensor,
    *,
    momentum: float,
    dampening: float,
    lr: float,
    nesterov: bool,
) -> None:
    """SGD with momentum, in place (PyTorch's single-tensor SGD after its first step, op for op).

    ``buf = buf * momentum + (1 - dampening) * grad``, ``param -= lr * (grad + momentum * buf if nesterov
    else buf)``. All three tensors must share a device, a floating dtype and a shape.
    """
    ts = (param, grad, momentum_buffer)
    _check("sgd_step_", ("param", "grad", "momentum_buffer"), ts)
    p, buf = kernels.call(
        param._device, "sgd_step", param._data, grad._data, momentum_buffer._data, momentum, 1 - dampening, lr,
        bool(nesterov),
    )  # fmt: skip
    _store("sgd_step_", ((momentum_buffer, buf), (param, p)))


def adam_step_(
    param: Tensor,
    grad: Tensor,
    exp_avg: Tensor,
    exp_avg_sq: Tensor,
    *,
    lerp_weight: float,
    beta2: float,
    step_size: float,
    bias_correction2_sqrt: float,
    eps: float,
) -> None:
    """Adam's update of ``param`` and its moments, in place (PyTorch's single-tensor Adam, op for op).

    ``exp_avg = lerp(exp_avg, grad, lerp_weight)``, ``exp_avg_sq = exp_avg_sq * beta2 + grad * grad *
    (1 - beta2)``, ``param += exp_avg * -step_size / (sqrt(exp_avg_sq) / bias_correction2_sqrt + eps)``.
    All four tensors must share a device, a floating dtype and a shape.
    """
    _check("adam_step_", ("param", "grad", "exp_avg", "exp_avg_sq"), (param, grad, exp_avg, exp_avg_sq))
    p, m, v = kernels.call(
        param._device, "adam_step", param._data, grad._data, exp_avg._data, exp_avg_sq._data,
        lerp_weight, beta2, 1 - beta2, -step_size, bias_correction2_sqrt, eps,
    )  # fmt: skip
    _store("adam_step_", ((exp_avg, m), (exp_avg_sq, v), (param, p)))


def adadelta_step_(
    param: Tensor, grad: Tensor, square_avg: Tensor, acc_delta: Tensor, *, rho: float, eps: float, lr: float
) -> None:
    """Adadelta's update of ``param`` and its two averages, in place (Lucid's per-op Adadelta, op for op).

    ``square_avg = square_avg * rho + grad * grad * (1 - rho)``, ``delta = sqrt(acc_delta + eps) /
    sqrt(square_avg + eps) * grad``, ``acc_delta = acc_delta * rho + delta * delta * (1 - rho)``, ``param -=
    lr * delta``. All four tensors must share a device, a floating dtype and a shape.
    """
    ts = (param, grad, square_avg, acc_delta)
    _check("adadelta_step_", ("param", "grad", "square_avg", "acc_delta"), ts)
    p, v, u = kernels.call(
        param._device, "adadelta_step", param._data, grad._data, square_avg._data, acc_delta._data, rho, 1 - rho,
        eps, lr,
    )  # fmt: skip
    _store("adadelta_step_", ((square_avg, v), (acc_delta, u), (param, p)))
