"""PyTorch's CPU random numbers, bit for bit: its mt19937 stream and its transforms, in NumPy.

``lucid.manual_seed(s)`` followed by ``randn``/``rand``/``randint``/``randperm``/``normal_``/``uniform_`` gives
the numbers ``torch.manual_seed(s)`` gives on the CPU (PyTorch 2.x on an AVX2 x86 machine, the common build):

- the engine is mt19937 seeded with the low 32 bits of the seed (NumPy's ``MT19937`` with legacy seeding
  produces the same 32-bit words); ``random64`` joins two words, the first as the high half;
- a float32 uniform is 24 bits of one word times 2**-24, a float64 one 53 bits of a 64-bit word times 2**-53,
  then ``fma(x, to - from, from)`` in the dtype (PyTorch's kernel is compiled with FMA contraction), a value
  that rounds up to ``to`` becoming ``from``;
- ``normal_`` of a contiguous tensor of 16 or more elements fills it with uniforms, then runs Box-Muller in
  blocks of 16 (element j pairs with j + 8), the last 16 recomputed from fresh uniforms when the size is not
  a multiple of 16. For float32 this is PyTorch's AVX2 kernel: the Cephes ``log``/``sincos`` polynomials of
  its ``avx_mathfun.h`` with the multiply-adds GCC fuses into FMAs, emulated here exactly (each float32 FMA
  through float64 with a correction of double rounding). For float64 it is the scalar kernel with libm's
  ``log``/``cos``/``sin`` (NumPy's float64 ones call libm on builds without AVX-512 SVML);
- smaller (or non-contiguous) tensors draw element by element from ``normal_distribution<double>``, which
  makes two values at a time and keeps the second in the generator (saved with the state);
- ``randint`` is ``word % range + low`` (64-bit words when the range needs them); ``randperm`` is PyTorch's
  swap loop with ``word % (n - i)``;
- ``exponential_`` draws a float64 uniform per element (whatever the dtype) and returns ``-log1p(-u) / lambd``
  rounded to the dtype;
- ``multinomial`` without replacement (or for one sample) is ``argmax``/``topk`` of ``p / q`` with ``q`` an
  ``exponential_`` draw of ``p``'s shape; ``topk`` is libstdc++'s ``nth_element`` + ``sort`` (or
  ``partial_sort`` when ``k * 64 <= n``) on (value, index) pairs, emulated step for step so ties (the zero
  weights once the positive ones are used up) come out in PyTorch's order. With replacement each row's
  cumulative sums (in the dtype, left to right) are divided by their total, the last set to 1, and each sample
  is the first index whose cumulative sum is >= a float64 uniform (a binary search).

The same code runs on every machine, so the numbers do not depend on the CPU Lucid runs on.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["TorchGenerator", "DEFAULT_SEED"]

#: the seed of PyTorch's default CPU generator before any ``manual_seed``
DEFAULT_SEED = 67280421310721

_F32, _F64 = np.float32, np.float64
_U64 = np.uint64
_BLOCK = 1 << 16  # uniforms per chunk of the float32 Box-Muller: the temporaries stay in cache

# Cephes' float32 coefficients, as avx_mathfun.h rounds them
_LOG_P = [_F32(c) for c in (
    7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1, -1.6668057665e-1,
    2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1,
)]  # fmt: skip
_LOG_Q1, _LOG_Q2, _SQRTHF = _F32(-2.12194440e-4), _F32(0.693359375), _F32(0.707106781186547524)
_DP = (_F32(-0.78515625), _F32(-2.4187564849853515625e-4), _F32(-3.77489497744594108e-8))
_SIN_P = (_F32(-1.9515295891e-4), _F32(8.3321608736e-3), _F32(-1.6666654611e-1))
_COS_P = (_F32(2.443315711809948e-5), _F32(-1.388731625493765e-3), _F32(4.166664568298827e-2))
_FOPI = _F32(1.27323954473516)
_TWO_PI32 = _F32(2.0 * math.pi)
_MIN_NORM = np.array(0x00800000, np.int32).view(_F32)
_HALF_BITS = int(np.array(0.5, _F32).view(np.int32))


# -- exact fused multiply-adds ------------------------------------------------------------------------------
def _fma32(a: Any, b: Any, c: Any) -> Any:
    """float32 ``a * b + c`` with one rounding, as the FMA instruction gives it.

    The product of two float32 is exact in float64; the float64 sum then rounds once more, which can only
    change the float32 result when it lands exactly halfway between two float32 values: those rare elements
    are nudged towards the exact sum's side before the final rounding.
    """
    p = _as64(a) * _as64(b)  # exact (48 significant bits); astype then multiply beats multiply(dtype=)
    s = p + _as64(c)
    out = s.astype(_F32)
    halfway = (s.view(_U64) & _U64(0x1FFFFFFF)) == _U64(0x10000000)
    if halfway.any():
        i = np.nonzero(halfway)
        pi, si = p[i], s[i]
        ci = c[i] if np.ndim(c) else _F64(c)
        back = si - pi
        err = (pi - (si - back)) + (ci - back)
        out[i] = np.where(err != 0, np.nextafter(si, si + err), si).astype(_F32)
    return out


def _as64(x: Any) -> Any:
    return x.astype(_F64) if isinstance(x, np.ndarray) else _F64(x)


def _split(v: Any) -> tuple[Any, Any]:
    t = v * 134217729.0  # Veltkamp: 2**27 + 1
    hi = t - (t - v)
    return hi, v - hi


def _fma64(a: Any, b: float, c: float) -> Any:
    """float64 ``a * b + c`` with one rounding (Boldo and Melquiond: RN(hi + RO(lo terms)))."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(np.asarray(b, _F64))
    ep = ((ah * bh - p) + ah * bl + al * bh) + al * bl  # a * b == p + ep exactly
    th = p + c
    back = th - p
    tl = (p - (th - back)) + (c - back)  # p + c == th + tl exactly
    v = tl + ep
    back = v - tl
    err = (tl - (v - back)) + (ep - back)
    even = (v.view(_U64) & _U64(1)) == 0
    v = np.where((err != 0) & even, np.nextafter(v, v + err), v)  # round to odd
    return th + v


def _fma64_scalar(x: float, b: float, c: float) -> float:
    return float(Fraction(x) * Fraction(b) + Fraction(c))


# -- the AVX2 float32 Box-Muller --------------------------------------------------------------------------
def _log32(x: Any) -> Any:
    """avx_mathfun's ``log256_ps`` (Cephes ``logf``), with GCC's FMA contractions."""
    x = np.maximum(x, _MIN_NORM)
    bits = x.view(np.int32)
    e = ((bits >> 23) - 0x7F).astype(_F32) + _F32(1)
    x = ((bits & ~0x7F800000) | _HALF_BITS).view(_F32)
    small = x < _SQRTHF  # then log(x) = log(2x) - log 2: x + x - 1, e - 1
    tmp = np.where(small, x, _F32(0))
    e = e - small.astype(_F32)
    x = (x - _F32(1)) + tmp
    z = x * x
    y = _fma32(_LOG_P[0], x, _LOG_P[1])
    for coef in _LOG_P[2:]:
        y = _fma32(y, x, coef)
    y = _fma32(y * x, z, e * _LOG_Q1)
    y = _fma32(-z, _F32(0.5), y)
    return _fma32(e, _LOG_Q2, x + y)


def _sincos32(x: Any) -> tuple[Any, Any]:
    """avx_mathfun's ``sincos256_ps`` (Cephes ``sinf``/``cosf``) for x >= 0, with GCC's FMA contractions."""
    j = (x * _FOPI).astype(np.int32)
    j = (j + 1) & ~1
    y = j.astype(_F32)
    for dp in _DP:
        x = _fma32(y, dp, x)
    z = x * x
    yc = _fma32(_COS_P[0], z, _COS_P[1])
    yc = _fma32(yc, z, _COS_P[2])
    yc = _fma32(yc * z, z, -(z * _F32(0.5))) + _F32(1)
    ys = _fma32(_SIN_P[0], z, _SIN_P[1])
    ys = _fma32(ys, z, _SIN_P[2])
    ys = _fma32(ys * z, x, x)
    poly = (j & 2) == 0
    s = np.where(poly, ys, yc)
    c = np.where(poly, yc, ys)
    s = np.where((j & 4) != 0, -s, s)
    c = np.where((~(j - 2) & 4) != 0, -c, c)
    return s, c


def _box_muller32(u: Any, mean: Any, std: Any) -> Any:
    """Blocks of 16 float32 uniforms (rows of ``u``, shape (m, 16)) to normals, as ``normal_fill_16_AVX2``."""
    lib = _libm_loops()
    if lib is not None and u.flags.c_contiguous:  # the same steps compiled (_ckernels.c), the same bits
        out = np.empty_like(u)
        plain = int((mean, std) == (_F32(0), _F32(1)))
        lib.lucid_box_muller_f32(u.ctypes.data, out.ctypes.data, u.shape[0], float(mean), float(std), plain)
        return out
    u1 = (_F32(1) - u[:, :8]).ravel()
    u2 = u[:, 8:].ravel()
    radius = np.sqrt(_F32(-2) * _log32(u1))
    s, c = _sincos32(_TWO_PI32 * u2)
    n1, n2 = radius * c, radius * s
    if (mean, std) == (_F32(0), _F32(1)):
        n1, n2 = n1 + _F32(0), n2 + _F32(0)  # fma(n, 1, 0): exact, -0 becomes +0
    else:
        n1, n2 = _fma32(n1, std, mean), _fma32(n2, std, mean)
    out = np.empty_like(u)
    out[:, :8] = n1.reshape(-1, 8)
    out[:, 8:] = n2.reshape(-1, 8)
    return out


def _box_muller64(u: Any, mean: float, std: float) -> Any:
    """Blocks of 16 float64 uniforms to normals, as PyTorch's scalar ``NormalFill16<double>``: libm's ``log``,
    ``cos`` and ``sin`` (the compiled loop; NumPy's ufuncs where it is not built, which use SVML instead of libm
    on AVX-512 machines and may then differ from PyTorch in the last bit)."""
    lib = _libm_loops()
    out = np.empty_like(u)
    if lib is not None and u.flags.c_contiguous:
        lib.lucid_box_muller_f64(u.ctypes.data, out.ctypes.data, u.shape[0])
    else:
        u1 = 1.0 - u[:, :8]
        radius = np.sqrt(-2.0 * np.log(u1))
        theta = (2.0 * math.pi) * u[:, 8:]
        out[:, :8] = radius * np.cos(theta)
        out[:, 8:] = radius * np.sin(theta)
    if (mean, std) != (0.0, 1.0):
        out = _fma64(out, std, mean)
    return out


@functools.cache
def _libm_loops() -> Any:
    from . import _native

    return _native.load()


class TorchGenerator:
    """PyTorch's CPU generator: an mt19937 engine plus the cached second normal of ``normal_distribution``."""

    def __init__(self, seed: int = DEFAULT_SEED) -> None:
        self.seed(seed)

    def seed(self, seed: int) -> None:
        """Reset the engine from ``seed`` (its low 32 bits, as PyTorch's mt19937) and drop the cached normal."""
        self._engine = np.random.MT19937(0)
        self._engine._legacy_seeding(int(seed) & 0xFFFFFFFF)
        self._cached_normal: float | None = None

    # -- state -------------------------------------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        """A snapshot of plain Python values (picklable, and JSON-ready as the seeds' checkpoints need): the
        engine's words and position, and the cached normal sample."""
        st = self._engine.state
        engine = {"bit_generator": st["bit_generator"], "state": {"key": [int(k) for k in st["state"]["key"]],
                                                                  "pos": int(st["state"]["pos"])}}  # fmt: skip
        return {"generator": "torch-mt19937", "engine": engine, "cached_normal": self._cached_normal}

    def set_state(self, state: Any) -> None:
        """Restore a snapshot from :meth:`get_state`."""
        if not isinstance(state, dict) or state.get("generator") != "torch-mt19937":
            raise ValueError(
                "set_rng_state: the numpy backend expected the dict its get_rng_state() makes "
                f"(generator 'torch-mt19937'), got {_describe(state)}"
            )
        engine = np.random.MT19937(0)
        st = state["engine"]
        engine.state = {
            "bit_generator": st["bit_generator"],
            "state": {"key": np.asarray(st["state"]["key"], dtype=np.uint32), "pos": int(st["state"]["pos"])},
        }
        self._engine = engine
        cached = state.get("cached_normal")
        self._cached_normal = None if cached is None else float(cached)

    # -- raw words ---------------------------------------------------------------------------------------
    def words32(self, n: int) -> Any:
        """``n`` 32-bit words of the engine (PyTorch's ``random()``), as uint64."""
        return self._engine.random_raw(n)

    def words64(self, n: int) -> Any:
        """``n`` 64-bit words (PyTorch's ``random64()``: two words, the first the high half)."""
        w = self._engine.random_raw(2 * n)
        return (w[0::2] << _U64(32)) | w[1::2]

    def _unit(self, n: int, double: bool) -> Any:
        """``n`` uniforms in [0, 1) as PyTorch's ``uniform_real_distribution(0, 1)`` draws them."""
        if double:
            return (self.words64(n) & _U64((1 << 53) - 1)).astype(_F64) * 2.0**-53
        return self._uniform32(n, 0.0, 1.0, plain=True)

    def _uniform32(self, n: int, low: float, high: float, plain: bool) -> Any:
        """``n`` float32 uniforms in [low, high) (``plain``: [0, 1), no multiply-add)."""
        words = self.words32(n)
        lib = _libm_loops()
        if lib is not None:  # the same steps compiled (_ckernels.c: lucid_uniform_f32), the same bits
            out = np.empty(n, _F32)
            lib.lucid_uniform_f32(words.ctypes.data, out.ctypes.data, n, float(_F32(low)), float(_F32(high)), plain)
            return out
        x = (words & _U64(0xFFFFFF)).astype(_F32) * _F32(2.0**-24)
        if plain:
            return x
        lo32, hi32 = _F32(low), _F32(high)
        out = _fma32(x, hi32 - lo32, lo32)
        return np.where(out == hi32, lo32, out)

    # -- distributions -----------------------------------------------------------------------------------
    def uniform(self, shape: tuple[int, ...], dtype: Any, low: float = 0.0, high: float = 1.0) -> Any:
        """``torch.empty(shape, dtype).uniform_(low, high)``."""
        if not low <= high:
            raise ValueError(f"uniform_: expects to return a [from, to) range, but found from={low} > to={high}")
        dtype = np.dtype(dtype)
        n = math.prod(shape)
        if dtype == _F32:
            return self._uniform32(n, low, high, plain=(low, high) == (0.0, 1.0)).reshape(shape)
        double = dtype == _F64
        x = self._unit(n, double)
        if double:
            lo, hi = float(low), float(high)
            out = x if (lo, hi) == (0.0, 1.0) else _fma64(x, hi - lo, lo)
            out = np.where(out == hi, lo, out)
        else:
            lo32, hi32 = _F32(low), _F32(high)
            out = x if (low, high) == (0.0, 1.0) else _fma32(x, hi32 - lo32, lo32)
            narrow = out.astype(dtype)
            lo_d, hi_d = np.asarray(low, dtype), np.asarray(high, dtype)
            out = np.where(narrow == hi_d, lo_d, narrow)
        return np.ascontiguousarray(out, dtype=dtype).reshape(shape)

    def normal(self, shape: tuple[int, ...], dtype: Any, mean: float = 0.0, std: float = 1.0) -> Any:
        """``torch.empty(shape, dtype).normal_(mean, std)`` of a contiguous tensor."""
        if std < 0:
            raise ValueError(f"normal_: expects std >= 0.0, but found std {std}")
        dtype = np.dtype(dtype)
        n = math.prod(shape)
        if n < 16:
            return self._normal_small(n, dtype, mean, std).reshape(shape)
        if dtype == _F64:
            out = self._normal_blocks64(n, float(mean), float(std))
        else:
            out = self._normal_blocks32(n, _F32(mean), _F32(std)).astype(dtype, copy=False)
        return out.reshape(shape)

    def _normal_blocks32(self, n: int, mean: Any, std: Any) -> Any:
        u = self._unit(n, double=False)
        out = np.empty(n, _F32)
        full = n // 16 * 16
        step = full if _libm_loops() is not None else _BLOCK  # C: one call; NumPy: chunks that stay in cache
        for lo in range(0, full, step):
            hi = min(lo + step, full)
            out[lo:hi] = _box_muller32(u[lo:hi].reshape(-1, 16), mean, std).ravel()
        if n % 16:
            out[n - 16 :] = _box_muller32(self._unit(16, double=False).reshape(1, 16), mean, std).ravel()
        return out

    def _normal_blocks64(self, n: int, mean: float, std: float) -> Any:
        u = self._unit(n, double=True)
        out = np.empty(n, _F64)
        full = n // 16 * 16
        out[:full] = _box_muller64(u[:full].reshape(-1, 16), mean, std).ravel()
        if n % 16:
            out[n - 16 :] = _box_muller64(self._unit(16, double=True).reshape(1, 16), mean, std).ravel()
        return out

    def _normal_small(self, n: int, dtype: Any, mean: float, std: float) -> Any:
        """Element by element from ``normal_distribution<double>`` (cached second sample included)."""
        mean, std = float(mean), float(std)
        values = []
        for _ in range(n):
            if self._cached_normal is not None:
                z, self._cached_normal = self._cached_normal, None
            else:
                u1, u2 = self._unit(2, double=True)
                radius = math.sqrt(-2.0 * math.log1p(-float(u2)))
                theta = 2.0 * math.pi * float(u1)
                self._cached_normal = radius * math.sin(theta)
                z = radius * math.cos(theta)
            values.append(_fma64_scalar(z, std, mean))
        return np.array(values, _F64).astype(dtype)

    def integers(self, low: int, high: int, shape: tuple[int, ...], dtype: Any) -> Any:
        """``torch.randint(low, high, shape)``: ``word % (high - low) + low``."""
        span = high - low
        if span <= 0:
            raise ValueError(f"random_: expects 'from' to be less than 'to', but got from={low} >= to={high}")
        n = math.prod(shape)
        dtype = np.dtype(dtype)
        wide = span >= 1 << 32 and dtype in (np.dtype(np.int64), np.dtype(_F64), np.dtype(_F32))
        words = self.words64(n) if wide else self.words32(n)
        # unsigned 64-bit arithmetic that wraps, then read as int64, as PyTorch's casts do
        vals = ((words % _U64(span)) + _U64(low % (1 << 64))).view(np.int64)
        return vals.astype(dtype).reshape(shape)

    def exponential(self, shape: tuple[int, ...], dtype: Any, lambd: float = 1.0) -> Any:
        """``torch.empty(shape, dtype).exponential_(lambd)``: ``-1 / lambd * log1p(-u)`` of float64 uniforms."""
        u = self._unit(math.prod(shape), double=True)
        return ((-1.0 / float(lambd)) * np.log1p(-u)).astype(dtype).reshape(shape)

    def multinomial(self, probs: Any, num_samples: int, replacement: bool) -> Any:
        """``torch.multinomial(probs, num_samples, replacement)`` of a 2-D float array whose rows PyTorch's
        checks have passed (non-negative, finite, each row's sum > 0): int64 indices, one row per row."""
        rows = probs.shape[0]
        if not replacement or num_samples == 1:
            q = self.exponential(probs.shape, probs.dtype)
            keys = probs / q
            if num_samples == 1:
                return np.argmax(keys, axis=1).astype(np.int64).reshape(rows, 1)
            return np.array([_topk_indices(row.astype(_F64).tolist(), num_samples) for row in keys], np.int64)
        out = np.empty((rows, num_samples), np.int64)
        acc = _F32 if probs.dtype != _F64 else _F64
        for i in range(rows):
            cum = np.cumsum(probs[i].astype(acc))  # sequential, as PyTorch's loop
            cum = cum / cum[-1]
            cum[-1] = 1
            u = self._unit(num_samples, double=True)
            out[i] = np.searchsorted(cum.astype(_F64), u, side="left")
        return out

    def permutation(self, n: int, dtype: Any) -> Any:
        """``torch.randperm(n)``: PyTorch's swap loop, ``swap(p[i], p[i + word % (n - i)])``."""
        perm = list(range(n))
        if n > 1:
            offsets = (self.words32(n - 1) % np.arange(n, 1, -1, dtype=_U64)).tolist()
            for i, z in enumerate(offsets):
                j = i + z
                perm[i], perm[j] = perm[j], perm[i]
        return np.array(perm, dtype=dtype)


def _describe(state: Any) -> str:
    if isinstance(state, dict):
        kind = state.get("generator", state.get("bit_generator"))
        return f"a dict for generator {kind!r}" if kind else f"a dict with keys {sorted(map(str, state))}"
    return type(state).__name__


# -- libstdc++'s selection and sorting, for topk's order among equal values ----------------------------------
# PyTorch's CPU topk fills a vector of (value, index) pairs and calls std::nth_element then std::sort on the
# first k - 1 (or std::partial_sort when k * 64 <= n) with "greater, NaN first". Equal values keep whatever
# order these algorithms leave, so they are reproduced here as libstdc++ writes them.
def _greater(x: tuple[float, int], y: tuple[float, int]) -> bool:
    return (x[0] != x[0] and y[0] == y[0]) or x[0] > y[0]


def _topk_indices(values: list[float], k: int) -> list[int]:
    """The indices ``torch.topk(values, k)`` returns (largest, sorted) on the CPU."""
    a = [(v, j) for j, v in enumerate(values)]
    n = len(a)
    if k * 64 <= n:
        _heap_select(a, 0, k, n)
        _sort_heap(a, 0, k)
    else:
        _introselect(a, 0, k - 1, n, 2 * _lg(n))
        _sort(a, 0, k - 1)
    return [j for _, j in a[:k]]


def _lg(n: int) -> int:
    return n.bit_length() - 1


def _introselect(a: list[Any], first: int, nth: int, last: int, depth: int) -> None:
    while last - first > 3:
        if depth == 0:
            _heap_select(a, first, nth + 1, last)
            a[first], a[nth] = a[nth], a[first]
            return
        depth -= 1
        cut = _partition_pivot(a, first, last)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(a, first, last)


def _sort(a: list[Any], first: int, last: int) -> None:
    if last - first > 1:
        _introsort_loop(a, first, last, 2 * _lg(last - first))
        if last - first > 16:
            _insertion_sort(a, first, first + 16)
            for i in range(first + 16, last):
                _linear_insert(a, i)
        else:
            _insertion_sort(a, first, last)


def _introsort_loop(a: list[Any], first: int, last: int, depth: int) -> None:
    while last - first > 16:
        if depth == 0:
            _heap_select(a, first, last, last)
            _sort_heap(a, first, last)
            return
        depth -= 1
        cut = _partition_pivot(a, first, last)
        _introsort_loop(a, cut, last, depth)
        last = cut


def _partition_pivot(a: list[Any], first: int, last: int) -> int:
    mid = first + (last - first) // 2
    x, y, z = first + 1, mid, last - 1  # median of three moved to first
    if _greater(a[x], a[y]):
        m = y if _greater(a[y], a[z]) else (z if _greater(a[x], a[z]) else x)
    else:
        m = x if _greater(a[x], a[z]) else (z if _greater(a[y], a[z]) else y)
    a[first], a[m] = a[m], a[first]
    pivot, lo, hi = a[first], first + 1, last
    while True:
        while _greater(a[lo], pivot):
            lo += 1
        hi -= 1
        while _greater(pivot, a[hi]):
            hi -= 1
        if not lo < hi:
            return lo
        a[lo], a[hi] = a[hi], a[lo]
        lo += 1


def _insertion_sort(a: list[Any], first: int, last: int) -> None:
    for i in range(first + 1, last):
        if _greater(a[i], a[first]):
            a[first : i + 1] = [a[i], *a[first:i]]
        else:
            _linear_insert(a, i)


def _linear_insert(a: list[Any], last: int) -> None:
    val = a[last]
    while _greater(val, a[last - 1]):
        a[last] = a[last - 1]
        last -= 1
    a[last] = val


def _heap_select(a: list[Any], first: int, middle: int, last: int) -> None:
    _make_heap(a, first, middle)
    for i in range(middle, last):
        if _greater(a[i], a[first]):
            val, a[i] = a[i], a[first]
            _adjust_heap(a, first, 0, middle - first, val)


def _make_heap(a: list[Any], first: int, last: int) -> None:
    length = last - first
    if length < 2:
        return
    for parent in range((length - 2) // 2, -1, -1):
        _adjust_heap(a, first, parent, length, a[first + parent])


def _sort_heap(a: list[Any], first: int, last: int) -> None:
    while last - first > 1:
        last -= 1
        val, a[last] = a[last], a[first]
        _adjust_heap(a, first, 0, last - first, val)


def _adjust_heap(a: list[Any], first: int, hole: int, length: int, val: Any) -> None:
    top, child = hole, hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if _greater(a[first + child], a[first + child - 1]):
            child -= 1
        a[first + hole] = a[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and _greater(a[first + parent], val):
        a[first + hole] = a[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[first + hole] = val
