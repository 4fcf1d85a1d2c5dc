"""L-BFGS with an optional strong-Wolfe line search, as ``torch.optim.LBFGS``."""

from __future__ import annotations

__all__ = ["LBFGS"]

import math
from collections.abc import Callable
from typing import Any

import lucid_core as lc
from lucid_core import Tensor

from .optimizer import Closure, Optimizer, ParamsT

# PyTorch keeps the line-search / two-loop scalars (ys, ro, alphas, H_diag, gtd, t, ...) as 0-d tensors
# of the parameters' dtype wherever they come out of a reduction, and as Python floats where they come
# from the loss or the hyperparameters; mixing both follows its weak-scalar rules (the float is cast to
# the tensor's dtype). We do the same, so float32 runs round where PyTorch's do.
Scalar = float | int | Tensor


def _dot(a: Tensor, b: Tensor) -> Tensor:
    return lc.sum(a * b)


def _absmax(a: Tensor) -> Tensor:
    return lc.max(lc.abs(a))


def _div(num: Scalar, den: Scalar) -> Scalar:
    """``num / den``; a Python number over a tensor is ``reciprocal(den) * num``, as PyTorch computes it."""
    if isinstance(den, Tensor) and not isinstance(num, Tensor):
        return lc.reciprocal(den) * num
    return num / den


def _sqrt(x: Scalar) -> Scalar:
    return lc.sqrt(x) if isinstance(x, Tensor) else math.sqrt(x)


def _cubic_interpolate(
    x1: Scalar, f1: Scalar, g1: Scalar, x2: Scalar, f2: Scalar, g2: Scalar, bounds: tuple[Scalar, Scalar] | None = None
) -> Scalar:
    """Minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clipped to ``bounds``."""
    lo, hi = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - _div(3 * (f1 - f2), x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square >= 0:
        d2 = _sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, lo), hi)
    return (lo + hi) / 2.0


def _strong_wolfe(
    obj_func: Callable[[Scalar], tuple[float, Tensor]],
    t: Scalar,
    d: Tensor,
    f: float,
    g: Tensor,
    gtd: Tensor,
    c1: float = 1e-4,
    c2: float = 0.9,
    tolerance_change: float = 1e-9,
    max_ls: int = 25,
) -> tuple[float, Tensor, Scalar, int]:
    """Bracketing + zoom line search for the strong Wolfe conditions (Nocedal & Wright, Alg. 3.5/3.6)."""
    d_norm = _absmax(d)
    f_new, g_new = obj_func(t)
    evals = 1
    gtd_new = _dot(g_new, d)
    t_prev: Scalar = 0
    f_prev, g_prev, gtd_prev = f, g, gtd
    done = False
    ls_iter = 0
    bracket: list[Scalar] = []
    bracket_f: list[float] = []
    bracket_g: list[Tensor] = []
    bracket_gtd: list[Tensor] = []
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new, gtd_new
        f_new, g_new = obj_func(t)
        evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    insuf_progress = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        # keep t away from the bracket's ends unless the last step already made too little progress
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) else min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(t)
        evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high], bracket_g[high], bracket_gtd[high] = t, f_new, g_new, gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low], bracket_g[low], bracket_gtd[low] = t, f_new, g_new, gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evals


class LBFGS(Optimizer):
    """Limited-memory BFGS, as ``torch.optim.LBFGS``; ``step`` needs a closure returning the loss.

    One parameter group only. ``line_search_fn="strong_wolfe"`` enables the line search.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1.0,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
        *,
        defaults: dict[str, Any] | None = None,
    ) -> None:
        hyper = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                     tolerance_change=tolerance_change, history_size=history_size,
                     line_search_fn=line_search_fn)  # fmt: skip
        super().__init__(params, hyper, overrides=defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        if group["line_search_fn"] not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got {group['line_search_fn']!r}")
        if group["history_size"] < 1 or group["max_iter"] < 1:
            raise ValueError("LBFGS: history_size and max_iter must be >= 1")

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        if self.param_groups:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        if self.defaults["max_eval"] is None:  # PyTorch's default, from the (merged) max_iter
            self.defaults["max_eval"] = self.defaults["max_iter"] * 5 // 4
        super().add_param_group(param_group)

    # -- flat views of all parameters ---------------------------------------------------------
    def _gather_flat_grad(self) -> Tensor:
        return lc.concat([lc.reshape(lc.zeros_like(p) if p.grad is None else p.grad, (-1,)) for p in self._params])

    def _add_grad(self, step_size: Scalar, update: Tensor) -> None:
        offset = 0
        for p in self._params:
            n = p.size
            p.add_(lc.reshape(update[offset : offset + n], p.shape) * step_size)
            offset += n

    def _directional_evaluate(self, closure: Closure, x: list[Tensor], t: Scalar, d: Tensor) -> tuple[float, Tensor]:
        self._add_grad(t, d)
        with lc.enable_grad():
            loss = float(closure())
        flat_grad = self._gather_flat_grad()
        for p, saved in zip(self._params, x):
            p.copy_(saved)
        return loss, flat_grad

    def step(self, closure: Closure | None = None) -> Tensor | float:
        """Run up to ``max_iter`` L-BFGS iterations; returns the loss from the first closure call."""
        if closure is None:
            raise ValueError("LBFGS.step needs a closure that re-evaluates the model and returns the loss")
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size = group["history_size"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with lc.enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        with lc.no_grad():
            flat_grad = self._gather_flat_grad()
            if _absmax(flat_grad) <= tolerance_grad:
                return orig_loss
            d, t = state.get("d"), state.get("t")
            old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
            h_diag, prev_flat_grad, prev_loss = state.get("H_diag"), state.get("prev_flat_grad"), state.get("prev_loss")
            n_iter = 0
            while n_iter < max_iter:
                n_iter += 1
                state["n_iter"] += 1
                if state["n_iter"] == 1:
                    d = -flat_grad
                    old_dirs, old_stps, ro = [], [], []
                    h_diag = 1
                else:
                    y = flat_grad - prev_flat_grad
                    s = d * t
                    ys = _dot(y, s)
                    if ys > 1e-10:  # update the memory only where curvature is positive
                        if len(old_dirs) == history_size:
                            old_dirs.pop(0)
                            old_stps.pop(0)
                            ro.pop(0)
                        old_dirs.append(y)
                        old_stps.append(s)
                        ro.append(1.0 / ys)
                        h_diag = ys / _dot(y, y)
                    # two-loop recursion: d = -H g
                    al: list[Scalar] = [0.0] * len(old_dirs)
                    q = -flat_grad
                    for i in range(len(old_dirs) - 1, -1, -1):
                        al[i] = _dot(old_stps[i], q) * ro[i]
                        q = q - old_dirs[i] * al[i]
                    d = r = q * h_diag
                    for i in range(len(old_dirs)):
                        be_i = _dot(old_dirs[i], r) * ro[i]
                        r = r + old_stps[i] * (al[i] - be_i)
                    d = r
                prev_flat_grad = lc.clone(flat_grad)
                prev_loss = loss
                if state["n_iter"] == 1:
                    t = min(1.0, 1.0 / lc.sum(lc.abs(flat_grad))) * lr
                else:
                    t = lr
                gtd = _dot(flat_grad, d)
                if gtd > -tolerance_change:
                    break
                ls_func_evals = 0
                if group["line_search_fn"] == "strong_wolfe":
                    x_init = [lc.clone(p.detach()) for p in self._params]

                    def obj_func(step: Scalar, x: list[Tensor] = x_init, direction: Tensor = d) -> tuple[float, Tensor]:
                        return self._directional_evaluate(closure, x, step, direction)

                    loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                        obj_func, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals
                    )
                    self._add_grad(t, d)
                    opt_cond = _absmax(flat_grad) <= tolerance_grad
                else:
                    self._add_grad(t, d)
                    opt_cond = False
                    if n_iter != max_iter:
                        with lc.enable_grad():
                            loss = float(closure())
                        flat_grad = self._gather_flat_grad()
                        opt_cond = _absmax(flat_grad) <= tolerance_grad
                        ls_func_evals = 1
                current_evals += ls_func_evals
                state["func_evals"] += ls_func_evals
                if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                    break
                if _absmax(d * t) <= tolerance_change or abs(loss - prev_loss) < tolerance_change:
                    break
            state.update({"d": d, "t": t, "old_dirs": old_dirs, "old_stps": old_stps, "ro": ro, "H_diag": h_diag,
                          "prev_flat_grad": prev_flat_grad, "prev_loss": prev_loss})  # fmt: skip
        lc.eval(*self._params)
        return orig_loss
