"""Small ``torch``-level names that adapt capabilities Lucid already has.

``rsub``, ``frobenius_norm`` and ``nuclear_norm`` are compositions of lucid_core ops (so they have gradients);
``poisson`` and ``binomial`` draw with :mod:`lucid.distributions`' samplers; ``cond`` and ``while_loop`` are
PyTorch's control-flow operators with their eager semantics (the branch or the loop runs in Python);
``GradScaler`` is ``lucid.amp.GradScaler``, as ``torch.GradScaler`` is ``torch.amp.GradScaler``.

Lucid has no anomaly detection: ``is_anomaly_enabled`` answers False and ``set_anomaly_enabled(True)`` raises,
rather than promising checks that would never run.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import lucid_core as lc
from lucid_core import Tensor

from ._generator import accepting_generator
from .amp import GradScaler

__all__ = [
    "GradScaler",
    "binomial",
    "cond",
    "frobenius_norm",
    "get_device_module",
    "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled",
    "nuclear_norm",
    "poisson",
    "rsub",
    "set_anomaly_enabled",
    "while_loop",
]


def rsub(input: Tensor, other: Any, *, alpha: float = 1) -> Tensor:
    """``other - alpha * input`` (subtraction with the operands reversed), as ``torch.rsub``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"rsub: input must be a Tensor, got {type(input).__name__}")
    scaled = input if alpha == 1 else input * alpha
    return other - scaled


def frobenius_norm(input: Tensor, dim: int | Sequence[int], keepdim: bool = False) -> Tensor:
    """The square root of the sum of squares over ``dim`` (one or two dimensions), as ``torch.frobenius_norm``."""
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if not 1 <= len(dims) <= 2:
        raise RuntimeError(f"frobenius_norm: Expected at most 2 dimensions, but got {len(dims)} dimensions instead.")
    return lc.sqrt(
        lc.sum(lc.abs(input) ** 2 if input.dtype.kind == "c" else input * input, axis=dims, keepdims=keepdim)
    )


def nuclear_norm(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """The sum of singular values over the last two dimensions, or over the pair ``dim``.

    As ``torch.nuclear_norm``, whose second positional argument is ``keepdim`` when it is a bool.
    """
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    from . import linalg

    if dim is None:
        dim = (-2, -1)  # the last two dimensions, a batch of matrices before them (as PyTorch)
    return linalg.matrix_norm(input, "nuc", dim=tuple(dim), keepdim=keepdim)


def _poisson(input: Tensor) -> Tensor:
    if input.dtype.kind != "f":
        raise NotImplementedError(f"poisson: expected a floating-point rate tensor, got {input.dtype.name}")
    if bool(lc.any(input < 0).item()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    from .distributions.poisson import poisson_sample

    with lc.no_grad():
        return poisson_sample(input.detach())


def _binomial(count: Tensor, prob: Tensor) -> Tensor:
    if count.dtype.kind != "f":
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: {count.dtype.name}")
    if prob.dtype.kind != "f":
        raise ValueError(f"binomial only supports floating-point dtypes for prob, got: {prob.dtype.name}")
    from .distributions import Binomial

    return Binomial(total_count=count.detach(), probs=prob.detach(), validate_args=False).sample()


poisson = accepting_generator(_poisson, from_input=True)
poisson.__name__ = poisson.__qualname__ = "poisson"
poisson.__doc__ = "Poisson(rate) counts elementwise, as floats of ``input``'s dtype (``torch.poisson``)."
binomial = accepting_generator(_binomial, from_input=True)
binomial.__name__ = binomial.__qualname__ = "binomial"
binomial.__doc__ = "Binomial(count, prob) successes elementwise, as floats (``torch.binomial``)."


def is_anomaly_enabled() -> bool:
    """Whether autograd anomaly detection is on: always False, Lucid has none (``torch.is_anomaly_enabled``)."""
    return False


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection would check for NaN gradients (PyTorch's default, True)."""
    return True


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection off (a no-op); turning it on raises: Lucid's autograd has no anomaly mode."""
    if enabled:
        raise NotImplementedError(
            "set_anomaly_enabled(True): Lucid's autograd has no anomaly detection (no forward traces, no NaN "
            "checks in backward); check gradients with lucid.isnan / lucid.autograd.gradcheck instead"
        )


def get_device_module(device: Any = None) -> ModuleType:
    """The ``lucid.<type>`` module of ``device`` (a device, a type string, or None for the current
    accelerator, else the CPU), as ``torch.get_device_module``."""
    from . import accelerator

    if device is None:
        current = accelerator.current_accelerator()
        kind = "cpu" if current is None else current.type
    elif isinstance(device, str):
        kind = device.split(":")[0]
    elif hasattr(device, "type"):
        kind = device.type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expected a device, a device type string or None")
    try:
        return importlib.import_module(f"lucid.{kind}")
    except ImportError:
        raise RuntimeError(
            f"Device '{kind}' does not have a corresponding module registered as 'lucid.{kind}'."
        ) from None


def _as_bool(pred: Any, where: str) -> bool:
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"{where}: expected the predicate to have one element, got shape {tuple(pred.shape)}")
        return bool(pred.item())
    if isinstance(pred, (bool, int)):
        return bool(pred)
    raise RuntimeError(
        f"{where}: expected the predicate to be a bool or a one-element tensor, got {type(pred).__name__}"
    )


def cond(pred: Any, true_fn: Callable[..., Any], false_fn: Callable[..., Any], operands: Any = ()) -> Any:
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)`` (``torch.cond``, run eagerly)."""
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("cond: expected true_fn and false_fn to be callable")
    if not isinstance(operands, (tuple, list)):
        raise RuntimeError(f"cond: expected operands to be a tuple or list, got {type(operands).__name__}")
    return (true_fn if _as_bool(pred, "cond") else false_fn)(*operands)


def while_loop(cond_fn: Callable[..., Any], body_fn: Callable[..., Any], carried_inputs: Any) -> tuple[Any, ...]:
    """Run ``carried = body_fn(*carried)`` while ``cond_fn(*carried)`` (``torch.while_loop``, run eagerly)."""
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(
            f"while_loop: expected carried_inputs to be a tuple or list, got {type(carried_inputs).__name__}"
        )
    carried = tuple(carried_inputs)
    while _as_bool(cond_fn(*carried), "while_loop"):
        out = body_fn(*carried)
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if len(out) != len(carried):
            raise RuntimeError(
                f"while_loop: body_fn returned {len(out)} values, expected {len(carried)} (one per carried input)"
            )
        carried = out
    return carried
