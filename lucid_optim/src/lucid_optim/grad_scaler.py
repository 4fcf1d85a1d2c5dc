"""Loss scaling for mixed-precision training: ``GradScaler``, with PyTorch 2.13's ``torch.amp.GradScaler`` semantics.

float16 gradients underflow where float32 ones do not; multiplying the loss by a large scale before ``backward``
keeps them representable. The scaler then divides the gradients back (``unscale_``), skips the optimizer's step
when any gradient is inf or NaN (the scale was too large), and adapts the scale: ``backoff_factor`` times after a
skipped step, ``growth_factor`` times after ``growth_interval`` clean steps in a row.

Usage, as in PyTorch::

    scaler = GradScaler("cpu")
    for x, y in loader:
        with lucid_core.amp.autocast("cpu", dtype=lucid_core.float16):
            loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)  # unscales, and steps only if the gradients are finite
        scaler.update()
"""

from __future__ import annotations

__all__ = ["GradScaler", "OptState"]

import enum
import warnings
from collections import abc, defaultdict
from typing import Any

import lucid_core as lc
from lucid_core import Tensor
from lucid_core.amp import device_available

from .optimizer import Optimizer


class OptState(enum.Enum):
    """Where one optimizer is in the current iteration."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict[str, Any]:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    """Scale losses, unscale and check gradients, and adapt the scale (``torch.amp.GradScaler``).

    Args:
        device: the device type whose tensors are scaled (``"cpu"``; ``"cuda"`` needs a GPU backend, else the
            scaler warns and disables itself, as PyTorch's does without CUDA).
        init_scale: the first scale factor.
        growth_factor: the scale's factor after ``growth_interval`` steps in a row without inf/NaN gradients (> 1).
        backoff_factor: the scale's factor after a step with inf/NaN gradients (< 1).
        growth_interval: how many clean steps in a row make the scale grow.
        enabled: False makes every method a pass-through (``step`` just calls ``optimizer.step()``).
    """

    def __init__(
        self,
        device: str = "cpu",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled and not device_available("cuda"):
            warnings.warn("lucid.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.", stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale: Tensor | None = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker: Tensor | None = None
            self._per_optimizer_states: dict[int, dict[str, Any]] = defaultdict(_refresh_per_optimizer_state)

    # -- scale -------------------------------------------------------------------------------------------------------
    def _check_scale_growth_tracker(self, funcname: str) -> tuple[Tensor, Tensor]:
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, device: Any) -> None:
        self._scale = lc.full((), self._init_scale, dtype=lc.float32, device=device)
        self._growth_tracker = lc.full((), self._init_growth_tracker, dtype=lc.int32, device=device)

    def _scaled(self, t: Tensor) -> Tensor:
        if self._scale is None:
            self._lazy_init_scale_growth_tracker(t.device)
        assert self._scale is not None
        scale = self._scale if self._scale.device == t.device else self._scale.to(t.device)
        if t.ndim > 0 and t.dtype.kind == "f" and t.dtype is not scale.dtype:
            # PyTorch's 0-d scale does not widen a floating tensor of another precision
            scale = scale.astype(t.dtype)
        return t * scale

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor, or nested lists/tuples/iterables of tensors) times the scale factor.

        Returned unchanged when the scaler is disabled.
        """
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return self._scaled(outputs)

        def apply(val: Any) -> Any:
            if isinstance(val, Tensor):
                return self._scaled(val)
            if isinstance(val, abc.Iterable):
                out = map(apply, val)
                if isinstance(val, (list, tuple)):
                    return type(val)(out)
                return out
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply(outputs)

    # -- unscale and step -------------------------------------------------------------------------------------------
    def _unscale_grads_(self, optimizer: Optimizer, inv_scale: float, allow_fp16: bool) -> dict[str, Tensor]:
        """Multiply every gradient by ``inv_scale`` in place; per device, a float32 flag: 1.0 if any was inf/NaN."""
        found: dict[str, Any] = {}
        with lc.no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if not isinstance(param, Tensor):
                        raise AssertionError(f"expected param to be a Tensor, got {type(param).__name__}")
                    g = param.grad
                    if g is None:
                        continue
                    if not allow_fp16 and g.dtype is lc.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    key = str(g.device)
                    bad = lc.any(lc.logical_not(lc.isfinite(g)))
                    found[key] = bad if key not in found else lc.logical_or(found[key], bad)
                    if g.dtype is lc.float32:
                        g.mul_(lc.full((), inv_scale, dtype=lc.float32, device=g.device))
                    else:  # in float32 and rounded once, as PyTorch's kernel computes other float dtypes
                        g.copy_((g.astype(lc.float32) * inv_scale).astype(g.dtype))
        return {k: v.astype(lc.float32) for k, v in found.items()}

    @lc.compiler.opaque
    def unscale_(self, optimizer: Optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale, in place (once per optimizer per iteration).

        Optional: :meth:`step` does it when it has not been done. Call it to clip or inspect unscaled gradients.
        """
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        assert self._scale is not None
        inv_scale = float(lc.full((), 1.0 / self._scale.item(), dtype=lc.float32).item())  # float64, then float32
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, False)
        state["stage"] = OptState.UNSCALED

    @lc.compiler.opaque
    def step(self, optimizer: Optimizer, *args: Any, **kwargs: Any) -> Any:
        """Unscale (unless :meth:`unscale_` already did) and run ``optimizer.step()`` if every gradient is finite.

        Returns what ``optimizer.step`` returns, or None when the step is skipped.
        """
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    # -- update -----------------------------------------------------------------------------------------------------
    @lc.compiler.opaque
    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Adapt the scale for the next iteration (or set it to ``new_scale``), and start a new iteration."""
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                value = new_scale
            else:
                reason = "new_scale should be a float or a 1-element lucid.FloatTensor with requires_grad=False."
                if not isinstance(new_scale, Tensor) or new_scale.device.type != scale.device.type:
                    raise AssertionError(reason)
                if new_scale.size != 1 or new_scale.requires_grad:
                    raise AssertionError(reason)
                value = float(new_scale.reshape(()).item())
            self._store("_scale", value, lc.float32, scale.device)
        else:
            found = [f for s in self._per_optimizer_states.values() for f in s["found_inf_per_device"].values()]
            if len(found) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            found_inf = sum(f.item() for f in found)
            self._update_scale(scale, tracker, found_inf)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _update_scale(self, scale: Tensor, tracker: Tensor, found_inf: float) -> None:
        """PyTorch's ``_amp_update_scale_``: products in double, stored in float32."""
        s, n = float(scale.item()), int(tracker.item())
        if found_inf:
            s, n = s * self._backoff_factor, 0
        elif n + 1 == self._growth_interval:
            grown = float(lc.full((), s * self._growth_factor, dtype=lc.float32).item())
            if grown != float("inf"):
                s = grown
            n = 0
        else:
            n += 1
        self._store("_scale", s, lc.float32, scale.device)
        self._store("_growth_tracker", n, lc.int32, tracker.device)

    def _store(self, name: str, value: float, dtype: Any, device: Any) -> None:
        """Write a new scale (or tracker) into the tensor the scaler holds, in place: a compiled step that read it
        keeps reading the same tensor (lucid_core.compiler reads tensors from outside by identity)."""
        new = lc.full((), value, dtype=dtype, device=device)
        old = getattr(self, name, None)
        if isinstance(old, Tensor) and old.device == device and old.dtype is dtype:
            with lc.no_grad():
                old.copy_(new)
        else:
            setattr(self, name, new)

    # -- accessors and state ----------------------------------------------------------------------------------------
    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale.item())
        return 1.0

    def get_growth_factor(self) -> float:
        """The scale's growth factor."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Set the scale's growth factor."""
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        """The scale's backoff factor."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Set the scale's backoff factor."""
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        """How many clean steps in a row make the scale grow."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Set the growth interval."""
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())
        return 0

    def is_enabled(self) -> bool:
        """Whether the scaler scales (False: every method is a pass-through)."""
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval`` and ``_growth_tracker`` (empty when
        disabled), as PyTorch's."""
        if self._enabled:
            return {
                "scale": self.get_scale(),
                "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker(),
            }
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler."
            )
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale = lc.full((), self._init_scale, dtype=lc.float32, device=self._scale.device)
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker = lc.full(
                (), self._init_growth_tracker, dtype=lc.int32, device=self._growth_tracker.device
            )
