"""``lucid.testing``: PyTorch's ``assert_close`` and ``make_tensor``.

``assert_close`` compares tensors, Python numbers, and sequences and mappings of them, with PyTorch's
default tolerances per dtype and its failure messages (mismatched elements, greatest absolute and relative
difference and where, and which item of a container failed).
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import lucid_core as lc
from lucid_core import Tensor
from lucid_core._tensor_methods import Size

__all__ = ["assert_close", "make_tensor"]

#: PyTorch's default (rtol, atol) per dtype; every other dtype (integers, bool) is compared for equality
_TOLERANCES: dict[str, tuple[float, float]] = {
    "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7),
    "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7),
}  # fmt: skip

Msg = str | Callable[[str], str] | None


def _default_tolerances(*dtypes: lc.DType) -> tuple[float, float]:
    pairs = [_TOLERANCES.get(d.name, (0.0, 0.0)) for d in dtypes]
    return max(r for r, _ in pairs), max(a for _, a in pairs)


def _mismatch_msg(
    identifier: str, extra: str, abs_diff: float, abs_idx: Any, atol: float, rel_diff: float, rel_idx: Any,
    rtol: float,
) -> str:  # fmt: skip
    equality = rtol == 0 and atol == 0

    def diff_msg(kind: str, diff: float, idx: Any, tol: float) -> str:
        msg = (
            f"{kind.title()} difference: {diff}"
            if idx is None
            else f"Greatest {kind} difference: {diff} at index {idx}"
        )
        return msg + ("" if equality else f" (up to {tol} allowed)") + "\n"

    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n{extra.strip()}\n"
    msg += diff_msg("absolute", abs_diff, abs_idx, atol) + diff_msg("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _fail(default: str, msg: Msg, where: str) -> None:
    text = default if msg is None else (msg(default) if callable(msg) else msg)
    if where and msg is None:
        text += f"\n\nThe failure occurred for item {where}"
    raise AssertionError(text)


def _attr_mismatch(attr: str, a: Any, e: Any) -> str:
    return f"The values for attribute '{attr}' do not match: {a} != {e}."


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for size in reversed(shape):
        flat, mod = divmod(flat, size)
        out.append(mod)
    return tuple(reversed(out))


def _compare_tensors(
    actual: Tensor, expected: Tensor, rtol: float | None, atol: float | None, equal_nan: bool,
    check_device: bool, check_dtype: bool, msg: Msg, where: str,
) -> None:  # fmt: skip
    if tuple(actual.shape) != tuple(expected.shape):
        _fail(_attr_mismatch("shape", Size(actual.shape), Size(expected.shape)), msg, where)
    if check_device and actual.device != expected.device:
        _fail(_attr_mismatch("device", actual.device, expected.device), msg, where)
    if check_dtype and actual.dtype is not expected.dtype:
        _fail(_attr_mismatch("dtype", actual.dtype, expected.dtype), msg, where)
    if rtol is None:
        rtol, atol = _default_tolerances(actual.dtype, expected.dtype)
    a, e = actual.detach(), expected.detach().to(actual.device)
    common = lc.result_type(a.dtype, e.dtype)
    a, e = lc.astype(a, common), lc.astype(e, common)
    if a.size == 0:
        return
    if common.kind in "fc":
        same = a == e  # infinities of one sign match; subtracting them would give NaN (and a warning)
        diff = lc.abs(lc.where(same, 0.0, a) - lc.where(same, 0.0, e))
        matches = same | (diff <= atol + rtol * lc.abs(e))
        if equal_nan:
            matches = matches | (lc.isnan(a) & lc.isnan(e))
    else:
        matches = a == e
    total = a.size
    mismatches = total - int(lc.sum(lc.astype(matches, lc.int64)).item())
    if mismatches == 0:
        return
    if a.ndim == 0:  # PyTorch reports a 0-d tensor as a pair of scalars
        x, y = a.item(), e.item()
        diff0 = abs(x - y)
        rel0 = float("inf") if y == 0 else diff0 / abs(y)
        _fail(_mismatch_msg("Scalars", f"Expected {y} but got {x}.", diff0, None, atol, rel0, None, rtol), msg, where)
    flat_a, flat_e, flat_m = a.reshape(-1), e.reshape(-1), matches.reshape(-1)
    if common.kind not in "fc":
        flat_a, flat_e = lc.astype(flat_a, lc.int64), lc.astype(flat_e, lc.int64)
    abs_diff = lc.where(flat_m, lc.zeros_like(flat_a), lc.abs(flat_a - flat_e))
    rel_diff = lc.where(flat_m, 0.0, abs_diff / lc.abs(flat_e))
    abs_values, rel_values = abs_diff.tolist(), rel_diff.tolist()
    extra = f"Mismatched elements: {mismatches} / {total} ({mismatches / total:.1%})"
    shape = tuple(a.shape)
    abs_i, rel_i = _argmax(abs_values), _argmax(rel_values)
    text = _mismatch_msg("Tensor-likes", extra, abs_values[abs_i], _unravel(abs_i, shape), atol,
                         rel_values[rel_i], _unravel(rel_i, shape), rtol)  # fmt: skip
    _fail(text, msg, where)


def _argmax(values: list[Any]) -> int:
    """Index of the largest value, a NaN winning (as ``torch.max`` propagates it)."""
    best = 0
    for i, v in enumerate(values):
        v = abs(v) if isinstance(v, complex) else v
        if isinstance(v, float) and math.isnan(v):
            return i
        b = values[best]
        if v > (abs(b) if isinstance(b, complex) else b):
            best = i
    return best


def _compare_scalars(
    actual: Any, expected: Any, rtol: float | None, atol: float | None, equal_nan: bool, check_dtype: bool,
    msg: Msg, where: str,
) -> None:  # fmt: skip
    if check_dtype and type(actual) is not type(expected):
        _fail(f"The (d)types do not match: {type(actual)} != {type(expected)}.", msg, where)
    if rtol is None:
        floating = any(isinstance(v, (float, complex)) for v in (actual, expected))
        rtol, atol = (1e-7, 1e-7) if floating else (0.0, 0.0)
    if actual == expected:
        return
    if equal_nan and all(isinstance(v, float) and math.isnan(v) for v in (actual, expected)):
        return
    diff = abs(actual - expected)
    if diff <= atol + rtol * abs(expected):
        return
    rel = float("inf") if expected == 0 else diff / abs(expected)
    text = _mismatch_msg("Scalars", f"Expected {expected} but got {actual}.", diff, None, atol, rel, None, rtol)
    _fail(text, msg, where)


def _compare(actual: Any, expected: Any, where: list[Any], options: dict[str, Any]) -> None:
    here = "".join(f"[{k!r}]" for k in where)
    if isinstance(actual, Tensor) and isinstance(expected, Tensor):
        _compare_tensors(actual, expected, options["rtol"], options["atol"], options["equal_nan"],
                         options["check_device"], options["check_dtype"], options["msg"], here)  # fmt: skip
        return
    numbers = (builtins.bool, int, float, complex)
    if isinstance(actual, numbers) and isinstance(expected, numbers):
        _compare_scalars(actual, expected, options["rtol"], options["atol"], options["equal_nan"],
                         options["check_dtype"], options["msg"], here)  # fmt: skip
        return
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if set(actual) != set(expected):
            raise AssertionError(
                f"The keys of the mappings do not match:\nMissing keys in the actual mapping: "
                f"{sorted(map(repr, set(expected) - set(actual)))}\nExtra keys in the actual mapping: "
                f"{sorted(map(repr, set(actual) - set(expected)))}"
            )
        for k in expected:
            _compare(actual[k], expected[k], [*where, k], options)
        return
    seq = (list, tuple)
    if isinstance(actual, seq) and isinstance(expected, seq):
        if len(actual) != len(expected):
            raise AssertionError(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, [*where, i], options)
        return
    raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.")


def assert_close(
    actual: Any,
    expected: Any,
    *,
    allow_subclasses: bool = True,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    check_device: bool = True,
    check_dtype: bool = True,
    check_layout: bool = True,
    check_stride: bool = False,
    msg: Msg = None,
) -> None:
    """Raise AssertionError unless ``actual`` and ``expected`` are close: ``|a - e| <= atol + rtol * |e|``.

    Tolerances default by dtype as PyTorch's (float32: rtol 1.3e-6, atol 1e-5; float64: 1e-7 and 1e-7;
    integers and bools: equality); give both or neither. Shapes must match, and dtypes and devices unless
    ``check_dtype``/``check_device`` are False. NaNs match only with ``equal_nan``. ``msg`` replaces the
    message (a callable receives the default one). Sequences and mappings are compared item by item.
    """
    if (rtol is None) != (atol is None):
        missing = "rtol" if rtol is None else "atol"
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}.")
    options = {"rtol": rtol, "atol": atol, "equal_nan": equal_nan, "check_device": check_device,
               "check_dtype": check_dtype, "msg": msg}  # fmt: skip
    _compare(actual, expected, [], options)


def make_tensor(
    *shape: int | Sequence[int],
    dtype: lc.DType,
    device: lc.DeviceLike,
    low: float | None = None,
    high: float | None = None,
    requires_grad: bool = False,
    noncontiguous: bool = False,
    exclude_zero: bool = False,
    memory_format: Any = None,
) -> Tensor:
    """A random tensor for tests: floats uniform in ``[low, high)`` (default ``[-9, 9)``), integers in
    ``[low, high)`` (default ``[-9, 10)``, ``[0, 10)`` unsigned), bools evenly; ``exclude_zero`` moves zeros."""
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = tuple(shape[0])
    size = tuple(int(s) for s in shape)  # type: ignore[arg-type]
    if dtype is lc.bool:
        out = lc.rand(*size, device=device) < 0.5
    elif dtype.kind in "iu":
        lo = (0 if dtype.kind == "u" else -9) if low is None else math.ceil(low)
        hi = 10 if high is None else math.ceil(high)
        if hi <= lo:
            raise ValueError(f"make_tensor: low ({low}) must be less than high ({high})")
        out = lc.randint(lo, hi, size, dtype=dtype, device=device)
        if exclude_zero:
            out = lc.where(out == 0, lc.ones_like(out), out)
    else:
        lo, hi = -9.0 if low is None else float(low), 9.0 if high is None else float(high)
        if hi < lo:
            raise ValueError(f"make_tensor: low ({low}) must not be greater than high ({high})")
        real = lc.float64 if dtype is lc.complex128 else (lc.float32 if dtype.kind == "c" else dtype)
        out = lc.uniform(lo, hi, size, dtype=real, device=device)
        if dtype.kind == "c":
            out = lc.astype(out, dtype) + 1j * lc.astype(lc.uniform(lo, hi, size, dtype=real, device=device), dtype)
        if exclude_zero:
            tiny = lc.finfo(real).eps
            out = lc.where(out == 0, tiny, out)
    if requires_grad:
        out.requires_grad_(True)
    return out
