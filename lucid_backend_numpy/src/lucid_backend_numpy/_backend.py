"""The NumPy backend: ``array_api_compat.numpy`` for the generic kernels, plus native fast paths."""

from __future__ import annotations

import math
import types
from typing import Any

import lucid_core as lc
from lucid_core.backend import Backend, Device
from lucid_core.kernels import KERNELS, first_maxima, tile_keys

from . import _float8, _native, _parallel, _shared
from ._cnn import cnn_kernels
from ._malloc import tune_malloc
from ._native import compiled as _compiled
from ._native import ptr as _ptr
from ._parallel import parallel_batches
from ._special import special_kernels


class NumpyBackend(Backend):
    """CPU arrays with NumPy: float64 and complex supported, eager, data-dependent shapes allowed."""

    name = "numpy"
    device_types = ("cpu",)
    exact_seed = True  # manual_seed(s) seeds PyTorch's generator with s, as torch.manual_seed does

    def load(self) -> None:
        import array_api_compat.numpy as compat
        import numpy as np

        self.malloc = tune_malloc()  # before NumPy's first large buffers (see _malloc)
        self._threads_given = False
        self.np = np
        self.xp = _namespace(compat, np)
        self.array_types = (np.ndarray,)
        self._ndarray = np.ndarray
        self.dtypes = {d: np.dtype(d.name) for d in (
            lc.bool, lc.int8, lc.int16, lc.int32, lc.int64, lc.uint8, lc.uint16, lc.uint32, lc.uint64,
            lc.float16, lc.float32, lc.float64, lc.complex64, lc.complex128,
        )}  # fmt: skip
        self.dtypes[lc.bfloat16] = _bfloat16(np)
        self.dtypes.update({getattr(lc, n): d for n, d in _float8.native_dtypes(np).items()})
        self._float8 = frozenset(_float8.native_dtypes(np).values())
        from ._torch_random import TorchGenerator  # imports NumPy: here, not when the plugin loads

        self._rng = TorchGenerator()  # PyTorch's default seed until manual_seed
        self.kernels = _kernels(np)
        self._ufuncs = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide}

    def set_num_threads(self, n: int) -> None:
        """Split large kernels over ``n`` threads (see ``_parallel``); BLAS gets ``n`` outside a split."""
        _parallel.set_num_threads(n, first=not self._threads_given)
        self._threads_given = True

    def canonical(self, array: Any) -> Any:
        # NumPy returns scalars from 0-d operations; a Tensor always holds an ndarray
        if type(array) is self._ndarray:
            return array
        return self.np.asarray(array)

    def asarray(self, obj: Any, dtype: Any, device: Device, copy: bool | None = None) -> Any:
        native = None if dtype is None else self.native_dtype(dtype)
        if native in self._float8 and not (isinstance(obj, self._ndarray) and obj.dtype == native):
            obj = _float8.cast(self.np, self.np.asarray(obj), native)  # PyTorch's rounding (see _float8)
        if dtype is lc.bfloat16 and not (isinstance(obj, self._ndarray) and obj.dtype == native):
            # Python floats and float64 data round to float32 first, then to bfloat16, as PyTorch converts them
            if not (isinstance(obj, self._ndarray) and obj.dtype.kind != "f"):
                obj = _narrowed_to_float32(self.np, obj)
        if copy is False:
            out = self.np.asarray(obj, dtype=native)
            if isinstance(obj, self._ndarray) and out is not obj and not self.np.shares_memory(out, obj):
                raise ValueError("asarray: copy=False, but the data must be copied (dtype change)")
            return out
        return self.np.array(obj, dtype=native, copy=True) if copy else self.np.asarray(obj, dtype=native)

    views_alias = True

    def view_of(self, view: Any, base: Any) -> bool:
        # NumPy collapses a view's base to the array that owns the memory (or maps it: shared memory)
        return (
            view.base is base
            and (base.base is None or _shared.is_shared(base))
            and view.flags.writeable
            and base.flags.writeable
        )

    # shared memory (Tensor.share_memory_): memfd mappings, handed to other processes by descriptor
    def share_memory(self, array: Any) -> Any:
        return _shared.share(self.np, array)

    def shared_handle(self, array: Any) -> Any:
        return _shared.handle(self.np, array)

    def from_shared_handle(self, handle: Any) -> Any:
        return _shared.open_handle(self.np, handle)

    def inplace(self, op: str, target: Any, other: Any, alpha: Any = 1, into_view: bool = False) -> bool:
        """Write into ``target``'s memory (optimizer updates allocate nothing parameter-sized).

        Not into a NumPy view of another array (what some ops return) unless the core says the target
        is a Lucid view of that array (``into_view``, after :meth:`view_of`): otherwise that memory
        belongs to another tensor, which a Lucid write must leave alone, so the core rebinds instead.
        """
        if not (target.flags.writeable if into_view else _owned(self._ndarray, target)):
            return False
        if op == "copy":
            target[...] = other
            return True
        if alpha != 1:
            other = other * alpha
        try:
            self._ufuncs[op](target, other, out=target)
        except (TypeError, ValueError):  # not broadcastable to target, or an unsafe cast: rebind instead
            return False
        return True

    def to_numpy(self, array: Any) -> Any:
        return array

    def to_list(self, array: Any) -> Any:
        return array.tolist()

    def from_foreign(self, array: Any, source: Backend, device: Device) -> Any:
        try:
            return self.np.from_dlpack(array)
        except Exception:  # noqa: BLE001 - fall back to the source's host copy
            return self.np.asarray(source.to_numpy(array))

    # random numbers: PyTorch's CPU generator (mt19937 and its transforms, see _torch_random), so a seeded
    # program draws PyTorch's numbers; lucid_core.manual_seed(s) seeds it with s itself
    def seed(self, seed: int) -> None:
        self._rng.seed(seed)

    def get_rng_state(self) -> Any:
        return self._rng.get_state()

    def set_rng_state(self, state: Any) -> None:
        self._rng.set_state(state)

    def random_uniform(self, shape: tuple[int, ...], dtype: Any, device: Device) -> Any:
        return self._rng.uniform(shape, self.native_dtype(dtype))

    def random_uniform_range(self, shape: tuple[int, ...], dtype: Any, device: Device, low: float, high: float) -> Any:
        return self._rng.uniform(shape, self.native_dtype(dtype), low, high)

    def random_normal(self, shape: tuple[int, ...], dtype: Any, device: Device) -> Any:
        return self._rng.normal(shape, self.native_dtype(dtype))

    def random_normal_scaled(self, shape: tuple[int, ...], dtype: Any, device: Device, mean: float, std: float) -> Any:
        return self._rng.normal(shape, self.native_dtype(dtype), mean, std)

    def random_integers(self, low: int, high: int, shape: tuple[int, ...], dtype: Any, device: Device) -> Any:
        return self._rng.integers(low, high, shape, self.native_dtype(dtype))

    def random_permutation(self, n: int, dtype: Any, device: Device) -> Any:
        return self._rng.permutation(n, self.native_dtype(dtype))

    def random_multinomial(self, probs: Any, num_samples: int, replacement: bool, device: Device) -> Any:
        return self._rng.multinomial(probs, num_samples, replacement)


def _bfloat16(np: Any) -> Any:
    """NumPy's bfloat16 dtype, from ``ml_dtypes`` (JAX's dtype package): its casts round to nearest even,
    giving PyTorch's bits. Imported with NumPy, on first use."""
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


def _owned(ndarray: type, a: Any) -> bool:
    """Whether a write may go into ``a``'s memory: writeable, and its own (a NumPy view's memory belongs to
    another tensor, which a Lucid write must leave alone; the core rebinds instead)."""
    return a.flags.writeable and not isinstance(a.base, ndarray)


def _row_key(np: Any, z: Any, key: Any, values: Any) -> tuple[Any, Any] | None:
    """(in-range row indices, values as matching rows) when ``z[key]`` picks rows of ``z`` by one integer
    array (``key`` an array or ``(array, ...)``) and ``values`` has that shape; else None."""
    if isinstance(key, tuple):
        if len(key) == 2 and key[1] is Ellipsis:
            key = key[0]
        elif len(key) == 1:
            key = key[0]
        else:
            return None
    if (
        not isinstance(key, np.ndarray)
        or key.dtype.kind not in "iu"
        or z.ndim < 2
        or values.dtype != z.dtype
        or values.shape != key.shape + z.shape[1:]
        or key.size < 16
    ):
        return None
    index = key.reshape(-1).astype(np.intp, copy=True)
    length = z.shape[0]
    if index.min() < -length or index.max() >= length:
        return None  # np.add.at raises its IndexError
    index[index < 0] += length
    return index, values.reshape(index.size, *z.shape[1:])


def _cast(np: Any, x: Any, dtype: Any) -> Any:
    """``x.astype(dtype)``, between float32 and bfloat16 in one compiled pass where it applies (same bits)."""
    out = _parallel.convert_bf16(np, x, np.dtype(dtype))
    return x.astype(dtype) if out is None else out


def _namespace(compat: Any, np: Any) -> Any:
    """``array_api_compat.numpy`` with NumPy-specific fixes, as a plain namespace (no lookup overhead)."""
    ns = types.SimpleNamespace(**{k: getattr(compat, k) for k in dir(compat) if not k.startswith("__")})
    base_matmul = compat.matmul

    bf16 = _bfloat16(np)

    def matmul(a: Any, b: Any, /) -> Any:
        if a.dtype == bf16 or b.dtype == bf16:  # float32 products rounded once, as PyTorch's CPU bfloat16 GEMM
            if a.dtype == b.dtype:
                out = _parallel.gemm_bf16(np, a, b)  # AVX512_BF16, where the CPU has it
                if out is not None:
                    return out
            return _cast(np, matmul(_cast(np, a, np.float32), _cast(np, b, np.float32)), bf16)
        # batched matmul on a non-contiguous operand (a transposed view in backward) leaves BLAS
        # for a slow loop; one copy is far cheaper
        if a.ndim > 2 and not a.flags.c_contiguous:
            a = np.ascontiguousarray(a)
        if b.ndim > 2 and not b.flags.c_contiguous:
            b = np.ascontiguousarray(b)
        if a.ndim > 2 or b.ndim > 2:
            return _batched_matmul(np, base_matmul, a, b)
        if a.ndim == 2 and b.ndim == 2:
            return _split_matmul(np, base_matmul, a, b)
        return base_matmul(a, b)

    base_where = compat.where
    uint_of = {2: np.uint16, 4: np.uint32, 8: np.uint64}

    def where(cond: Any, x1: Any, x2: Any, /) -> Any:
        # np.where on a data-dependent mask mispredicts a branch per element (~10x slower than a
        # multiply); for same-shape float arrays select bits instead: exact for every value, nan and inf
        if (
            type(x1) is np.ndarray
            and type(x2) is np.ndarray
            and x1.size >= 1024
            and x1.dtype == x2.dtype
            and x1.dtype.kind == "f"
            and x1.shape == x2.shape == cond.shape
        ):
            itype = uint_of[x1.dtype.itemsize]
            mask = cond.astype(itype)
            np.negative(mask, out=mask)  # 0 or all ones
            a, b = x1.view(itype), x2.view(itype)
            out = np.bitwise_xor(a, b)
            out &= mask
            out ^= b
            return out.view(x1.dtype)
        return base_where(cond, x1, x2)

    base_astype = compat.astype
    f64 = np.dtype(np.float64)

    float8 = frozenset(_float8.native_dtypes(np).values())

    def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
        if dtype in float8 and x.dtype != dtype:
            return _float8.cast(np, x, dtype)
        if dtype == bf16 and x.dtype == f64:
            x = _narrowed_to_float32(np, x)  # PyTorch rounds float64 to float32, then to bfloat16
        if (dtype == bf16 or x.dtype == bf16) and x.dtype != dtype:
            out = _parallel.convert_bf16(np, x, np.dtype(dtype))
            if out is not None:
                return out
        return base_astype(x, dtype, copy=copy)

    ns.matmul = matmul
    ns.where = where
    ns.astype = astype
    return ns


def _narrowed_to_float32(np: Any, x: Any) -> Any:
    """``x`` (float64) as float32, out-of-range values becoming infinities without NumPy's overflow warning."""
    with np.errstate(over="ignore"):
        return np.asarray(x, dtype=np.float32)


def _kernels(np: Any) -> dict[str, Any]:
    """Native NumPy kernels that beat the generic Array API compositions."""
    import math

    native = _native.load()  # compiled float32 loops (``_ckernels.c``), or None: then NumPy's passes
    _parallel.attach_native(native)  # their thread pool, shared with OpenBLAS where it can be
    cparts, run_compiled = _parallel.compiled_parts, _parallel.run_compiled

    try:
        from scipy import special as _special  # optional: exact erf when SciPy is present

        erf = _special.erf
    except ImportError:  # pragma: no cover - depends on the environment
        _verf = np.vectorize(math.erf, otypes=[float])

        def erf(x: Any) -> Any:
            return _verf(x).astype(x.dtype)

    def index_add(z: Any, key: Any, values: Any) -> Any:
        rows = _row_key(np, z, key, values)
        if rows is None:
            np.add.at(z, key, values)
            return z
        # rows picked by one integer array (an embedding's gradient): ``np.add.at`` adds them one at a time
        # (1 ms for 768 rows of 64). Instead, in rounds: round r adds every index's r-th occurrence at once
        # (one fancy-index add; no index repeats within a round), so each row of z receives its values in
        # their original order, the same additions as ``np.add.at``, bit for bit (0.3 ms)
        index, flat = rows
        n = index.size
        if _compiled(native, np, z, flat) and index.dtype.itemsize == 8:  # the same additions, in one loop
            native.lucid_index_add_rows_f32(_ptr(z), _ptr(index), _ptr(flat), n, flat.size // max(n, 1))
            return z
        order = np.argsort(index, kind="stable")
        sorted_index = index[order]
        first = np.ones(n, dtype=bool)
        np.not_equal(sorted_index[1:], sorted_index[:-1], out=first[1:])
        positions = np.arange(n)
        rank = positions - np.maximum.accumulate(np.where(first, positions, 0))
        counts = np.bincount(rank)
        if counts.size > max(4, n // 8):  # a few indices repeated very often: rounds would be too many
            np.add.at(z, key, values)
            return z
        by_round = order[np.argsort(rank, kind="stable")]
        start = 0
        for c in counts.tolist():
            sel = by_round[start : start + c]
            z[index[sel]] += flat[sel]
            start += c
        return z

    def setitem(x: Any, key: Any, value: Any) -> Any:
        # slices and reshapes are NumPy views: write into a copy rather than another tensor's memory
        if not x.flags.writeable or isinstance(x.base, np.ndarray):
            x = x.copy()
        x[key] = value
        return x

    def einsum(spec: str, *xs: Any) -> Any:
        return np.einsum(spec, *xs, optimize=len(xs) > 2)

    def logsumexp(x: Any, axes: tuple[int, ...], keepdims: bool) -> Any:
        m = np.max(x, axis=axes, keepdims=True)
        m = np.where(np.isfinite(m), m, 0)
        out = np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True)) + m
        return out if keepdims else np.squeeze(out, axis=axes)

    def cumulative_prod(x: Any, axis: int, include_initial: bool) -> Any:
        out = np.cumprod(x, axis=axis)
        if include_initial:
            shape = list(x.shape)
            shape[axis] = 1
            out = np.concatenate([np.ones(shape, dtype=out.dtype), out], axis=axis)
        return out

    uint_of = {4: np.uint32, 8: np.uint64}

    def relu_grad(gy: Any, x: Any) -> Any:
        # gy's bits AND an all-ones/zeros mask: four passes and bit-identical to where(x > 0, gy, 0),
        # about 8x faster than np.where's data-dependent branch
        if gy.dtype == x.dtype == bf16 and gy.shape == x.shape:
            # x > 0 on bfloat16's patterns: 0x0001 (the smallest positive) to 0x7F80 (+inf), whose `bits - 1`
            # is below 0x7F80 (ml_dtypes' own comparison converts each element through float)
            keep = np.subtract(np.ascontiguousarray(x).view(np.uint16), np.uint16(1), dtype=np.uint16)
            np.less(keep, np.uint16(0x7F80), out=keep, casting="unsafe")
            np.multiply(keep, np.ascontiguousarray(gy).view(np.uint16), out=keep)
            return keep.view(bf16)
        if gy.dtype != x.dtype or gy.shape != x.shape or gy.ndim == 0 or gy.dtype.itemsize not in uint_of:
            return np.where(x > 0, gy, np.zeros_like(gy))
        g, xs = np.ascontiguousarray(gy).reshape(-1), np.ascontiguousarray(x).reshape(-1)
        if _compiled(native, np, g, xs):  # the same bits in one pass
            gx = np.empty_like(g)
            pg, px, po = _ptr(g), _ptr(xs), _ptr(gx)
            run_compiled(lambda lo, hi, k: native.lucid_par_relu_grad_f32(pg, px, po, hi, lo, k), g.size, g.size)
            return gx.reshape(gy.shape)
        itype = uint_of[gy.dtype.itemsize]
        bits = g.view(itype)
        out = np.empty(bits.shape, itype)

        def part(lo: int, hi: int) -> None:
            o = out[lo:hi]
            np.greater(xs[lo:hi], 0, out=o, casting="unsafe")  # 0 or 1
            np.negative(o, out=o)  # 0 or all ones
            np.bitwise_and(o, bits[lo:hi], out=o)

        parallel_batches(part, out.size, out.size)
        return out.view(gy.dtype).reshape(gy.shape)

    f32, ndarray = np.float32, np.ndarray

    def in_place(p: Any, g: Any, *state: Any) -> bool:
        """Whether a compiled optimizer update can write ``p`` and its ``state`` in place: float32, C-contiguous,
        one shape, and memory the arrays own (a view's write would not reach the tensor's other views). Once
        per parameter and step: plain loops (a third of the generator version's time)."""
        if native is None or g.dtype != f32 or g.shape != p.shape or not g.flags.c_contiguous:
            return False
        for a in (p, *state):
            flags = a.flags
            if a.dtype != f32 or a.shape != p.shape or not flags.c_contiguous or not flags.writeable:
                return False
            if isinstance(a.base, ndarray):
                return False
        return True

    constants: dict[str, tuple[tuple[float, ...], Any]] = {}

    def consts(name: str, *values: float) -> Any:
        """The float32 constants array of an update (the last one made for ``name`` when the values repeat,
        as they do step after step; an optimizer's arrays are read, never written, by the kernels)."""
        last = constants.get(name)
        if last is not None and last[0] == values:
            return last[1]
        c = np.array(values, dtype=np.float32)  # as NumPy casts them
        constants[name] = (values, c)
        return c

    def adam_step(p: Any, g: Any, m: Any, v: Any, w: float, *rest: float) -> tuple[Any, Any, Any]:
        if not in_place(p, g, m, v):
            return KERNELS["adam_step"].default(fallback, p, g, m, v, w, *rest)
        beta2, omb2, neg_step, bc2, eps = rest
        c = consts("adam", w, 1.0 - w, beta2, omb2, neg_step, bc2, eps)
        parts = cparts(p.size, 4 * p.size)  # the compiled pool: BLAS keeps its threads (_parallel)
        native.lucid_par_adam_step_f32(_ptr(p), _ptr(g), _ptr(m), _ptr(v), p.size, _ptr(c), w >= 0.5, 0, parts)
        return p, m, v

    def sgd_step(p: Any, g: Any, buf: Any, momentum: float, scale: float, lr: float, nesterov: bool) -> Any:
        if not in_place(p, g, buf):
            return KERNELS["sgd_step"].default(fallback, p, g, buf, momentum, scale, lr, nesterov)
        c = consts("sgd", momentum, scale, lr)
        flags = (scale != 1) | (2 if nesterov else 0) | (4 if lr != 1 else 0)
        parts = cparts(p.size, 3 * p.size)
        native.lucid_par_sgd_step_f32(_ptr(p), _ptr(g), _ptr(buf), p.size, _ptr(c), flags, 0, parts)
        return p, buf

    def adadelta_step(p: Any, g: Any, v: Any, u: Any, rho: float, omr: float, eps: float, lr: float) -> Any:
        if not in_place(p, g, v, u):
            return KERNELS["adadelta_step"].default(fallback, p, g, v, u, rho, omr, eps, lr)
        c = consts("adadelta", rho, omr, eps, lr)
        parts = cparts(p.size, 4 * p.size)
        native.lucid_par_adadelta_step_f32(_ptr(p), _ptr(g), _ptr(v), _ptr(u), p.size, _ptr(c), lr != 1, 0, parts)
        return p, v, u

    bf16 = _bfloat16(np)

    def linear(x: Any, w: Any, b: Any) -> Any:
        if x.dtype == bf16 or w.dtype == bf16:
            return linear_bf16(x, w, b)
        if b is not None and (b.dtype != x.dtype or b.shape != w.shape[:1]):
            return np.matmul(x, w.T) + b  # (not a case lucid_nn sends)
        return _split_matmul(np, np.matmul, x, w.T, b)

    def linear_bf16(x: Any, w: Any, b: Any) -> Any:
        # float32 sums of bfloat16 products plus the bias, rounded once: on the AVX512_BF16 product, or widened
        if x.dtype == w.dtype and (b is None or (b.dtype == x.dtype and b.shape == w.shape[:1])):
            out = _parallel.gemm_bf16(np, x, w.T, None if b is None else b.astype(np.float32))
            if out is not None:
                return out
        wide = [None if a is None else _cast(np, a, np.float32) if a.dtype == bf16 else a for a in (x, w, b)]
        out = linear(*wide)
        return _cast(np, out, bf16) if out.dtype == np.float32 else out

    fallback = _NumpyDevice()  # the composed defaults, for the cases the fused kernels leave to them
    table = {
        **_conv_kernels(np, native),
        **cnn_kernels(np, native),
        **special_kernels(np),
        **_nn_kernels(np, erf, fallback, native),
        "relu_grad": relu_grad,
        "linear": linear,
        "adam_step": adam_step,
        "sgd_step": sgd_step,
        "adadelta_step": adadelta_step,
        "erf": erf,
        "index_add": index_add,
        "setitem": setitem,
        "einsum": einsum,
        "logsumexp": logsumexp,
        "cumulative_prod": cumulative_prod,
    }
    fallback.backend.kernels = table
    return _bfloat16_kernels(np, table)


#: kernels that take bfloat16 arrays through float32: ml_dtypes' own bfloat16 loops are slow (a GEMM has none:
#: NumPy's object-like fallback) and PyTorch's CPU bfloat16 kernels compute in float32 and round once too
#: (``linear`` does its own: the AVX512_BF16 product where the CPU has one)
BF16_IN_FLOAT32 = (
    "einsum", "conv", "conv_bias", "conv_input_grad", "conv_weight_grad", "softmax", "log_softmax",
    "logsumexp", "sigmoid", "erf", "gelu", "gelu_grad", "layer_norm", "layer_norm_grad", "cross_entropy",
    "cross_entropy_grad", "scaled_dot_product_attention", "scaled_dot_product_attention_grad", "channel_sum",
)  # fmt: skip
#: of those, the kernels that run bfloat16 operands on the AVX512_BF16 product themselves where the CPU has it
BF16_OWN_PRODUCT = ("conv", "conv_bias", "conv_input_grad", "conv_weight_grad")
#: kernels that take float16 through float32 as well: SciPy's erf answers float16 in float64 (PyTorch's CPU
#: float16 erf and GELU compute in float32 and round once)
F16_IN_FLOAT32 = ("erf", "gelu", "gelu_grad")


def _bfloat16_kernels(np: Any, table: dict[str, Any]) -> dict[str, Any]:
    """``table`` with each kernel of :data:`BF16_IN_FLOAT32` (and :data:`F16_IN_FLOAT32` for float16) widening
    those operands to float32 and rounding its float32 results back to their dtype (nearest even), once."""
    f32 = np.dtype(np.float32)
    ndarray = np.ndarray

    def widening(name: str, kernel: Any, narrow: tuple[Any, ...]) -> Any:
        own_bf16 = name in BF16_OWN_PRODUCT

        def run(*args: Any) -> Any:
            low = next((a.dtype for a in args if type(a) is ndarray and a.dtype in narrow), None)
            if low is None:
                return kernel(*args)
            if own_bf16 and _parallel.gemm_bf16_on() and all(a.dtype == low for a in args if type(a) is ndarray):
                return kernel(*args)  # the kernel's products run in bfloat16 (it widens where its product cannot)
            wide = [_cast(np, a, f32) if type(a) is ndarray and a.dtype == low else a for a in args]
            return rounded(kernel(*wide), low)

        run.__name__ = f"{name}_in_float32"
        return run

    def rounded(out: Any, low: Any) -> Any:
        if isinstance(out, tuple):
            return tuple(rounded(o, low) for o in out)
        if isinstance(out, ndarray) and out.dtype == f32:
            return _cast(np, out, low)
        return out

    bf16, f16 = _bfloat16(np), np.dtype(np.float16)
    out = dict(table)
    for name in BF16_IN_FLOAT32:
        if name in table:  # (the others' composed defaults run on ``xp``, whose matmul widens bfloat16 too)
            out[name] = widening(name, table[name], (bf16, f16) if name in F16_IN_FLOAT32 else (bf16,))
    return out


def _conv_kernels(np: Any, native: Any) -> dict[str, Any]:
    """im2col and its adjoint as one strided copy and K in-place adds (the composed versions stack K
    slices and rebuild the padded input), giving the same numbers bit for bit."""
    import itertools

    as_strided = np.lib.stride_tricks.as_strided

    def padded(x: Any, pads: Any, value: float) -> Any:
        if not any(b or a for b, a in pads):
            return x
        shape = tuple(x.shape[:2]) + tuple(s + b + a for s, (b, a) in zip(x.shape[2:], pads))
        z = np.empty(shape, dtype=x.dtype)
        inner = (slice(None), slice(None), *(slice(b, b + s) for s, (b, _) in zip(x.shape[2:], pads)))

        def part(lo: int, hi: int) -> None:
            z[lo:hi] = value
            z[lo:hi][inner] = x[lo:hi]

        parallel_batches(part, shape[0], z.size)
        return z

    def im2col(x: Any, kernel: Any, stride: Any, dilation: Any, pads: Any, out: Any, value: float) -> Any:
        z = padded(x, pads, value)
        sp = z.strides[2:]
        view = as_strided(
            z,
            tuple(z.shape[:2]) + tuple(kernel) + tuple(out),
            z.strides[:2] + tuple(s * d for s, d in zip(sp, dilation)) + tuple(s * t for s, t in zip(sp, stride)),
            writeable=False,
        )
        cols = np.empty(view.shape, dtype=z.dtype)

        def part(lo: int, hi: int) -> None:
            np.copyto(cols[lo:hi], view[lo:hi])

        parallel_batches(part, cols.shape[0], cols.size)
        k = 1
        for v in kernel:
            k *= v
        return cols.reshape((*tuple(z.shape[:2]), k, *tuple(out)))

    def col2im(cols: Any, kernel: Any, stride: Any, dilation: Any, pads: Any, size: Any) -> Any:
        out = tuple(cols.shape[3:])
        z = np.zeros(tuple(cols.shape[:2]) + tuple(s + b + a for s, (b, a) in zip(size, pads)), dtype=cols.dtype)
        keys = [
            (
                slice(None),
                slice(None),
                *tuple(slice(o * d, o * d + t * (n - 1) + 1, t) for o, t, d, n in zip(off, stride, dilation, out)),
            )
            for off in itertools.product(*(range(k) for k in kernel))
        ]

        def part(lo: int, hi: int) -> None:
            zs, cs = z[lo:hi], cols[lo:hi]
            for i, key in enumerate(keys):
                zs[key] += cs[:, :, i]

        parallel_batches(part, z.shape[0], cols.size)
        if any(b or a for b, a in pads):
            z = z[(slice(None), slice(None), *(slice(b, b + s) for s, (b, _) in zip(size, pads)))]
        return z

    def pool2_compiled(*arrays: Any) -> bool:
        """Whether the compiled 2-D tile loops take these (N, C, H, W) arrays."""
        return arrays[0].ndim == 4 and _compiled(native, np, *arrays)

    def max_pool_tiles(x: Any, kernel: Any, out: Any) -> Any:
        if pool2_compiled(x):  # one pass over x, in the composed default's order of maxima
            n, c, h, w = x.shape
            y = np.empty((n, c, *out), dtype=x.dtype)
            per = c * h * w  # elements of x per sample

            def part_compiled(lo: int, hi: int) -> None:
                native.lucid_max_pool2_f32(
                    _ptr(x, lo * per), _ptr(y, lo * c * out[0] * out[1]), (hi - lo) * c, h, w, *kernel, *out
                )

            parallel_batches(part_compiled, n, x.size)
            return y
        # the composed default's maximum over strided views, one slice of the batch per thread
        views = [x[key] for key in tile_keys(kernel, out)]
        y = np.empty(views[0].shape, dtype=x.dtype)

        def part(lo: int, hi: int) -> None:
            ys = y[lo:hi]
            if len(views) == 1:
                ys[...] = views[0][lo:hi]
                return
            np.maximum(views[0][lo:hi], views[1][lo:hi], out=ys)
            for v in views[2:]:
                np.maximum(ys, v[lo:hi], out=ys)

        parallel_batches(part, x.shape[0], x.size)
        return y

    def max_pool_tiles_grad(gy: Any, x: Any, y: Any, kernel: Any, out: Any) -> Any:
        if pool2_compiled(x, y) and gy.dtype == x.dtype:  # the arithmetic below, in one pass
            gy = np.ascontiguousarray(gy)  # a view of a conv's padded gradient: a copy of the small side
            n, c, h, w = x.shape
            gx = np.empty(x.shape, dtype=x.dtype)
            per, per_y = c * h * w, c * out[0] * out[1]

            def part_compiled(lo: int, hi: int) -> None:
                at, at_y = lo * per, lo * per_y
                native.lucid_max_pool2_grad_f32(
                    _ptr(gy, at_y), _ptr(x, at), _ptr(y, at_y), _ptr(gx, at), (hi - lo) * c, h, w, *kernel, *out
                )

            parallel_batches(part_compiled, n, 2 * x.size)
            return gx
        # per tile offset: the mask of tiles whose first maximum is there (first_maxima), then gy where it
        # is and 0 elsewhere written into an uninitialised (N, C, o1, k1, o2, k2, ...) buffer, every
        # element once (no zeros, no broadcast over tiny axes, both slow in NumPy)
        offsets = list(itertools.product(*(range(k) for k in kernel)))
        tiles = np.empty(tuple(x.shape[:2]) + tuple(v for o, k in zip(out, kernel) for v in (o, k)), dtype=gy.dtype)
        spots = [(slice(None), slice(None), *(v for i in off for v in (slice(None), i))) for off in offsets]
        zero = gy.dtype.type(0)

        def part(lo: int, hi: int) -> None:
            ts, g = tiles[lo:hi], gy[lo:hi]
            for spot, m in zip(spots, first_maxima(np, x[lo:hi], y[lo:hi], kernel, out)):
                np.copyto(ts[spot], np.where(m, g, zero))

        parallel_batches(part, x.shape[0], 2 * tiles.size)
        covered = tuple(x.shape[:2]) + tuple(o * k for o, k in zip(out, kernel))
        if covered == tuple(x.shape):
            return tiles.reshape(covered)
        z = np.zeros(x.shape, dtype=gy.dtype)  # a remainder the tiles do not reach gets no gradient
        z[(slice(None), slice(None), *(slice(0, c) for c in covered[2:]))] = tiles.reshape(covered)
        return z

    return {
        "im2col": im2col,
        "col2im": col2im,
        "max_pool_tiles": max_pool_tiles,
        "max_pool_tiles_grad": max_pool_tiles_grad,
    }


_SQRT1_2 = 1.0 / math.sqrt(2.0)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)

ROWS = 64
"""Row alignment of split row-wise kernels: their row sums are BLAS products (see ``parallel_batches``)."""


def _nn_kernels(np: Any, erf: Any, fallback: Any, native: Any) -> dict[str, Any]:
    """Fused nn kernels: layer norm, GELU, attention, softmax and cross entropy over the last axis.

    Row sums are matrix-vector products with a ones vector (BLAS: about 3x faster than ``np.sum`` over a
    short last axis); temporaries are reused in place. Every row is computed on its own, so a slice of
    the leading (batch) axes gives that slice of the result. ``exp2`` with log2(e) folded in was measured
    and not taken: NumPy's float32 ``exp2`` is slower here than ``exp`` (2.5 against 2.1 ms per 512k).
    """
    from lucid_core.kernels import ERF_A, ERF_P

    ones_cache: dict[tuple[int, Any], Any] = {}
    run_compiled = _parallel.run_compiled  # compiled kernels split in C over the compiled pool

    def compiled(*arrays: Any) -> bool:
        return _compiled(native, np, *arrays)

    causal_cache: dict[tuple[int, int, Any], Any] = {}

    def ones(n: int, dtype: Any) -> Any:
        key = (n, dtype)
        o = ones_cache.get(key)
        if o is None:
            o = ones_cache[key] = np.ones(n, dtype=dtype)
        return o

    def rows(x: Any) -> Any:
        """``x`` as a C-contiguous (rows, last axis) matrix."""
        return np.ascontiguousarray(x).reshape(-1, x.shape[-1]) if x.ndim else x.reshape(1, 1)

    def row_sums(m: Any) -> Any:
        """(n, d) -> (n, 1) sums over the last axis, as one matrix-vector product."""
        if m.dtype.kind != "f" or m.shape[1] == 0:
            return np.sum(m, axis=1, keepdims=True)
        return np.matmul(m, ones(m.shape[1], m.dtype))[:, None]

    def col_sums(m: Any) -> Any:
        """(n, d) -> (d,) sums over the rows."""
        if m.dtype.kind != "f" or m.shape[0] == 0:
            return np.sum(m, axis=0)
        return np.matmul(ones(m.shape[0], m.dtype), m)

    def finite_max(m: Any) -> Any:
        mx = np.max(m, axis=1, keepdims=True)
        if not np.isfinite(mx).all():
            mx = np.where(np.isfinite(mx), mx, 0)
        return mx

    def softmax_rows(e: Any) -> Any:
        """Row-wise softmax of a fresh (n, d) float matrix, in place."""
        if compiled(e):
            pe, d = _ptr(e), e.shape[1]
            run_compiled(lambda lo, hi, k: native.lucid_par_softmax_rows_f32(pe, hi, d, lo, k), e.shape[0], e.size)
            return e
        np.subtract(e, finite_max(e), out=e)
        np.exp(e, out=e)
        np.divide(e, row_sums(e), out=e)
        return e

    def last_axis(fn: Any, name: str) -> Any:
        default = KERNELS[name].default

        def kernel(x: Any, axis: int) -> Any:
            if x.dtype.kind != "f" or x.ndim == 0 or x.size == 0 or axis % x.ndim != x.ndim - 1:
                return default(fallback, x, axis)
            m = np.array(x, copy=True).reshape(-1, x.shape[-1])
            if compiled(m):  # split in C over the compiled pool
                return fn(m).reshape(x.shape)
            parallel_batches(lambda lo, hi: fn(m[lo:hi]), m.shape[0], m.size, align=ROWS)
            return m.reshape(x.shape)

        return kernel

    def log_softmax_rows(s: Any) -> Any:
        if compiled(s):
            ps, d = _ptr(s), s.shape[1]
            run_compiled(lambda lo, hi, k: native.lucid_par_log_softmax_rows_f32(ps, hi, d, lo, k), s.shape[0], s.size)
            return s
        np.subtract(s, finite_max(s), out=s)
        lse = np.log(row_sums(np.exp(s)))
        np.subtract(s, lse, out=s)
        return s

    def layer_norm(x: Any, weight: Any, bias: Any, eps: float) -> tuple[Any, Any, Any]:
        if x.dtype.kind != "f" or x.ndim == 0 or x.size == 0:
            return KERNELS["layer_norm"].default(fallback, x, weight, bias, eps)
        d = x.shape[-1]
        m = rows(x)
        y = np.empty_like(m)
        mean = np.empty((m.shape[0], 1), dtype=m.dtype)
        rstd = np.empty_like(mean)
        lead = (*x.shape[:-1], 1)
        if compiled(m, weight, bias) and all(a is None or a.shape == (d,) for a in (weight, bias)):
            n = m.shape[0]
            ptrs = (_ptr(m), _ptr(weight), _ptr(bias), _ptr(y), _ptr(mean), _ptr(rstd))
            run_compiled(lambda lo, hi, k: native.lucid_par_layer_norm_f32(*ptrs, hi, d, eps, lo, k), n, 2 * m.size)
            return y.reshape(x.shape), mean.reshape(lead), rstd.reshape(lead)

        def part(lo: int, hi: int) -> None:  # rows lo..hi
            mu = row_sums(m[lo:hi])
            mu /= d
            mean[lo:hi] = mu
            xc = np.subtract(m[lo:hi], mu, out=y[lo:hi])
            var = row_sums(np.square(xc))
            var /= d
            var += eps
            np.divide(1.0, np.sqrt(var, out=var), out=rstd[lo:hi])
            xc *= rstd[lo:hi]
            if weight is not None:
                xc *= weight
            if bias is not None:
                xc += bias

        parallel_batches(part, m.shape[0], m.size, align=ROWS)
        return y.reshape(x.shape), mean.reshape(lead), rstd.reshape(lead)

    def layer_norm_grad(gy: Any, x: Any, mean: Any, rstd: Any, weight: Any) -> tuple[Any, Any, Any]:
        if x.dtype.kind != "f" or x.ndim == 0 or x.size == 0:
            return KERNELS["layer_norm_grad"].default(fallback, gy, x, mean, rstd, weight)
        d = x.shape[-1]
        g = rows(gy)
        r = rstd.reshape(-1, 1)
        xm, mu = rows(x), mean.reshape(-1, 1)
        gxh = np.empty_like(xm)
        gx = np.empty_like(xm)
        if compiled(g, xm, mu, r, weight) and (weight is None or weight.shape == (d,)):
            n = g.shape[0]
            ptrs = (_ptr(g), _ptr(xm), _ptr(mu), _ptr(r), _ptr(weight), _ptr(gx), _ptr(gxh))
            run_compiled(lambda lo, hi, k: native.lucid_par_layer_norm_grad_f32(*ptrs, hi, d, lo, k), n, 4 * g.size)
            return gx.reshape(x.shape), col_sums(gxh), col_sums(g)
        xhat = np.empty_like(xm)  # the NumPy path's scratch

        def part(lo: int, hi: int) -> None:  # rows lo..hi; the column sums over all rows come after
            gs, xh, gh, out = g[lo:hi], xhat[lo:hi], gxh[lo:hi], gx[lo:hi]
            np.subtract(xm[lo:hi], mu[lo:hi], out=xh)
            xh *= r[lo:hi]
            np.multiply(gs, xh, out=gh)
            if weight is not None:  # row sums of g * weight and of g * weight * xhat: products with weight
                a = np.matmul(gs, weight)[:, None]
                b = np.matmul(gh, weight)[:, None]
                np.multiply(gs, weight, out=out)
            else:
                a, b = row_sums(gs), row_sums(gh)
                out[...] = gs
            a /= d
            b /= d
            out -= a
            np.multiply(xh, b, out=xh)
            out -= xh
            out *= r[lo:hi]

        parallel_batches(part, g.shape[0], g.size, align=ROWS)
        return gx.reshape(x.shape), col_sums(gxh), col_sums(g)

    half_a = tuple(np.float32(0.5 * c) for c in ERF_A)  # 0.5 erfc(a) = Phi(-|x|) directly
    p_scaled = np.float32(ERF_P * _SQRT1_2)  # t = 1 / (1 + p |x| / sqrt(2))
    block = 16384  # elements per block: a block's ten temporaries stay in the L2 cache
    gelu_coefs = np.array([*half_a, p_scaled], dtype=np.float32)  # the compiled loop's constants

    def gelu32_native(flat: Any, g: Any, out: Any) -> None:
        """The same arithmetic in one compiled pass (``_ckernels.c``), split over the compiled pool."""
        xp, op, cp, gp = _ptr(flat), _ptr(out), _ptr(gelu_coefs), _ptr(g)
        inv = float(np.float32(_INV_SQRT_2PI))
        run_compiled(
            lambda lo, hi, k: native.lucid_par_gelu_f32(xp, gp, op, hi, cp, inv, lo, k), flat.size, 3 * flat.size
        )

    def gelu32(x: Any, gy: Any) -> Any:
        """Exact GELU (``gy`` None) or ``gy`` times its derivative, for float32, block by block.

        Phi(-|x|) = erfc(a) / 2 with erfc(a) = t P(t) exp(-a^2), a = |x| / sqrt(2), t = 1 / (1 + p a)
        (Abramowitz and Stegun 7.1.26, |error| < 1.5e-7); with P evaluated in float32, Phi is within
        3e-7 (measured; SciPy's float32 erf gives 1e-7), so GELU within 3e-7 |x| plus rounding.
        SciPy's erf took 8 ms per 262k float32 elements here, this 1.2 ms (most of it the one ``exp``);
        float64 keeps SciPy's erf (the composed numbers bit for bit). Blocks are split over the pool.
        """
        flat = np.ascontiguousarray(x).reshape(-1)
        g = None if gy is None else np.ascontiguousarray(gy).reshape(-1)
        out = np.empty_like(flat)
        if native is not None:
            gelu32_native(flat, g, out)
            return out.reshape(x.shape)
        # split: one block per thread (a worker's every NumPy call re-takes the GIL, and a thread that
        # waits for it sleeps; few long calls beat cache-sized ones there); serial: L2-sized blocks
        work = flat.size  # not more: GPT's 196k-element GELU split made its step slower (RESULTS.md)
        k = _parallel.chunks(flat.size, work)
        c = max(1, min(block, flat.size) if k == 1 else -(-flat.size // k))

        def part(lo: int, hi: int) -> None:  # blocks lo..hi, with this thread's own temporaries
            a, t, h, e = (np.empty(c, np.float32) for _ in range(4))
            zeros = np.zeros(c, np.float32)
            for s in range(lo * c, min(hi * c, flat.size), c):
                xs = flat[s : s + c]
                m = xs.size
                a_, t_, h_, e_, o = a[:m], t[:m], h[:m], e[:m], out[s : s + m]
                np.abs(xs, out=a_)
                np.multiply(a_, p_scaled, out=t_)
                t_ += 1.0
                np.divide(1.0, t_, out=t_)
                np.multiply(t_, half_a[4], out=h_)
                for coef in half_a[3::-1]:
                    h_ += coef
                    h_ *= t_
                np.multiply(xs, -0.5, out=e_)
                e_ *= xs
                np.exp(e_, out=e_)
                h_ *= e_  # h = Phi(-|x|)
                if g is None:  # x Phi(x) = max(x, 0) - |x| h
                    h_ *= a_
                    np.maximum(xs, zeros[:m], out=o)
                    o -= h_
                    continue
                # Phi(x) + x phi(x), Phi(x) = 1/2 + sign(x) (1/2 - h)
                np.subtract(0.5, h_, out=o)
                np.copysign(o, xs, out=o)
                o += 0.5
                e_ *= xs
                e_ *= _INV_SQRT_2PI
                o += e_
                o *= g[s : s + m]

        parallel_batches(part, -(-flat.size // c), work)
        if g is None:  # at +inf, max(x, 0) - |x| h is inf - inf * 0: GELU(inf) is inf, as PyTorch's
            inf = np.isposinf(flat)
            if inf.any():
                out[inf] = np.inf
        return out.reshape(x.shape)

    def gelu(x: Any, approximate: str) -> Any:
        if approximate == "tanh":
            if x.dtype.kind != "f":
                return KERNELS["gelu"].default(fallback, x, approximate)
            inner = x * x
            inner *= 0.044715
            inner *= x
            inner += x
            inner *= _SQRT_2_PI
            np.tanh(inner, out=inner)
            inner += 1.0
            y = x * 0.5
            y *= inner
            return y
        if x.dtype != np.float32:  # float64 (and others): SciPy's erf, the composed arithmetic bit for bit
            return x * 0.5 * (1.0 + erf(x * _SQRT1_2))
        return gelu32(x, None)

    def gelu_grad(gy: Any, x: Any, approximate: str) -> Any:
        if approximate == "tanh" or x.dtype != np.float32 or gy.dtype != x.dtype or gy.shape != x.shape:
            return KERNELS["gelu_grad"].default(fallback, gy, x, approximate)
        return gelu32(x, gy)

    def causal_add(length: int, source: int, dtype: Any) -> Any:
        key = (length, source, dtype)
        m = causal_cache.get(key)
        if m is None:
            keep = np.arange(source)[None, :] <= np.arange(length)[:, None]
            m = causal_cache[key] = np.where(keep, 0.0, -np.inf).astype(dtype)
        return m

    def head_stacks(xs: tuple[Any, ...]) -> tuple[Any, ...]:
        """(..., L, E) arrays with the same leading axes as C-contiguous (H, L, E) stacks of heads."""
        return tuple(np.ascontiguousarray(x).reshape(-1, *x.shape[-2:]) for x in xs)

    def heads(*xs: Any) -> tuple[Any, ...] | None:
        """(..., L, E) arrays with the same leading axes as C-contiguous (H, L, E) stacks, to split over the
        pool; None when one call does (leading axes that broadcast, or too little work to split). NumPy's
        matmul hands strided and transposed views to BLAS as they are (a head of q from a (B, L, 3 H, E)
        projection, k transposed), as fast as contiguous copies, so one call needs no copy."""
        lead = xs[0].shape[:-2]
        if xs[0].ndim < 3 or any(x.shape[:-2] != lead for x in xs):
            return None
        h = math.prod(lead)
        if _parallel.chunks(h, h * xs[-1].shape[-2] * xs[-1].shape[-1]) == 1:  # the last is k or w: (L or S) x S
            return None
        return head_stacks(xs)

    def head_align(length: int) -> int:
        """Heads per slice unit so that every slice starts at a multiple of ``ROWS`` rows of scores."""
        return ROWS // math.gcd(length, ROWS)

    def fused_heads(causal: bool, *xs: Any) -> tuple[Any, ...] | None:
        """(q, k, v) or (gy, w, q, k, v) as C-contiguous (H, L, E) stacks for the compiled attention
        (``_ckernels.c``), or None: it takes float32 with the same leading axes, shapes that fit one another
        (the C loops read exactly those), E, Ev and S multiples of 8, and heads small enough that it beats
        BLAS's products (measured, benchmarks/RESULTS.md: E, Ev <= 32 causal, <= 16 otherwise)."""
        q, k, v = xs[-3:]
        lead = q.shape[:-2]
        (length, e), (source, ev) = q.shape[-2:], v.shape[-2:]
        if not (
            native is not None
            and q.ndim >= 3
            and q.size > 0
            and k.size > 0
            and all(x.dtype == np.float32 and x.shape[:-2] == lead for x in xs)
            and k.shape[-2:] == (source, e)
            and (len(xs) == 3 or (xs[0].shape[-2:] == (length, ev) and xs[1].shape[-2:] == (length, source)))
            and e % 8 == 0
            and ev % 8 == 0
            and source % 8 == 0
            and max(e, ev) <= 32
        ):
            return None
        return head_stacks(xs)

    def sdpa_fused(q3: Any, k3: Any, v3: Any, scale: float, causal: bool) -> tuple[Any, Any]:
        """Every head's product, softmax and weighted sum in one compiled call per slice of heads."""
        h, length, e = q3.shape
        source, ev = k3.shape[1], v3.shape[2]
        out = np.empty((h, length, ev), dtype=np.float32)
        w = np.empty((h, length, source), dtype=np.float32)
        ptrs = (_ptr(q3), _ptr(k3), _ptr(v3), _ptr(out), _ptr(w))

        def call(lo: int, hi: int, parts: int) -> None:
            scratch = np.empty(parts * e * (source + 4), dtype=np.float32)  # each slice's own
            native.lucid_par_attention_f32(*ptrs, _ptr(scratch), hi, length, source, e, ev, scale, causal, lo, parts)

        run_compiled(call, h, h * length * source)
        return out, w

    def sdpa(q: Any, k: Any, v: Any, scale: float, causal: bool) -> tuple[Any, Any]:
        if q.dtype.kind != "f" or q.size == 0 or k.size == 0:
            return KERNELS["scaled_dot_product_attention"].default(fallback, q, k, v, scale, causal)
        fused = fused_heads(causal, q, k, v)
        if fused is not None:
            out, w = sdpa_fused(*fused, scale, causal)
            lead = q.shape[:-2]
            return out.reshape(*lead, *out.shape[1:]), w.reshape(*lead, *w.shape[1:])
        stacks = heads(q, v, k)  # the work is L x S per head: k last
        if stacks is None:  # one whole-stack call
            return sdpa_heads(q, k, v, scale, causal, None, None)
        q3, v3, k3 = stacks
        h, length, source = q3.shape[0], q3.shape[1], k3.shape[1]
        out = np.empty((h, length, v3.shape[2]), dtype=q.dtype)
        w = np.empty((h, length, source), dtype=q.dtype)

        def part(lo: int, hi: int) -> None:
            sdpa_heads(q3[lo:hi], k3[lo:hi], v3[lo:hi], scale, causal, out[lo:hi], w[lo:hi])

        parallel_batches(part, h, h * length * source, align=head_align(length))
        lead = q.shape[:-2]
        return out.reshape(*lead, length, v3.shape[2]), w.reshape(*lead, length, source)

    def sdpa_heads(q: Any, k: Any, v: Any, scale: float, causal: bool, out: Any, w: Any) -> tuple[Any, Any]:
        # the scale on q (L x E), not on the (L x S) scores: one pass fewer, the same within rounding
        s = np.matmul(np.multiply(q, scale, dtype=q.dtype, order="C"), np.swapaxes(k, -1, -2), out=w)
        if causal and compiled(s):  # the mask in the loop: masked scores are not exponentiated
            heads, (rows, cols), ps = s.size // (s.shape[-2] * s.shape[-1]), s.shape[-2:], _ptr(s)
            run_compiled(
                lambda lo, hi, k: native.lucid_par_softmax_causal_f32(ps, hi, rows, cols, lo, k), heads, s.size
            )
            return np.matmul(s, v, out=out), s
        if causal:
            s += causal_add(s.shape[-2], s.shape[-1], s.dtype)
        w = softmax_rows(s.reshape(-1, s.shape[-1])).reshape(s.shape)
        return np.matmul(w, v, out=out), w

    def sdpa_grad_fused(g3: Any, q3: Any, k3: Any, v3: Any, w3: Any, scale: float, causal: bool) -> tuple[Any, ...]:
        """(gq, gk, gv) of ``sdpa_fused`` from its weights, one compiled call per slice of heads."""
        h, length, e = q3.shape
        source, ev = k3.shape[1], v3.shape[2]
        grads = (np.empty_like(q3), np.empty_like(k3), np.empty_like(v3))
        gq, gk, gv = grads
        ptrs = (_ptr(g3), _ptr(q3), _ptr(k3), _ptr(v3), _ptr(w3), _ptr(gq), _ptr(gk), _ptr(gv))

        def call(lo: int, hi: int, parts: int) -> None:
            scratch = np.empty(parts * ((ev + length) * source + 4 * ev), dtype=np.float32)  # each slice's own
            native.lucid_par_attention_grad_f32(
                *ptrs, _ptr(scratch), hi, length, source, e, ev, scale, causal, lo, parts
            )

        run_compiled(call, h, 2 * h * length * source)
        return grads

    def sdpa_grad(gy: Any, q: Any, k: Any, v: Any, w: Any, scale: float, causal: bool = False) -> tuple[Any, Any, Any]:
        if w.size == 0 or q.size == 0:
            return KERNELS["scaled_dot_product_attention_grad"].default(fallback, gy, q, k, v, w, scale, causal)
        fused = fused_heads(causal, gy, w, q, k, v)
        if fused is not None:
            g3, w3, q3, k3, v3 = fused
            grads = sdpa_grad_fused(g3, q3, k3, v3, w3, scale, causal)
            return tuple(a.reshape(x.shape) for a, x in zip(grads, (q, k, v)))
        stacks = heads(gy, q, k, v, w)  # the work is L x S per head: w last
        if stacks is None:
            return sdpa_grad_heads(gy, q, k, v, w, scale, None)
        g3, q3, k3, v3, w3 = stacks
        h, length, source = w3.shape
        grads = (np.empty_like(q3), np.empty_like(k3), np.empty_like(v3))

        def part(lo: int, hi: int) -> None:
            sdpa_grad_heads(g3[lo:hi], q3[lo:hi], k3[lo:hi], v3[lo:hi], w3[lo:hi], scale, [a[lo:hi] for a in grads])

        parallel_batches(part, h, h * length * source, align=head_align(length))
        return tuple(a.reshape(x.shape) for a, x in zip(grads, (q, k, v)))

    def sdpa_grad_heads(gy: Any, q: Any, k: Any, v: Any, w: Any, scale: float, outs: Any) -> tuple[Any, Any, Any]:
        gq_out, gk_out, gv_out = (None, None, None) if outs is None else outs
        gv = np.matmul(np.swapaxes(w, -1, -2), gy, out=gv_out)
        dw = np.matmul(gy, np.swapaxes(v, -1, -2))
        if compiled(dw, w) and dw.shape == w.shape:
            n, d, pd, pw = dw.size // dw.shape[-1], dw.shape[-1], _ptr(dw), _ptr(w)
            run_compiled(
                lambda lo, hi, k: native.lucid_par_softmax_grad_rows_f32(pd, pw, hi, d, scale, lo, k), n, 2 * dw.size
            )
        else:
            ds = (dw * w).reshape(-1, w.shape[-1])
            dw -= row_sums(ds).reshape((*w.shape[:-1], 1))
            dw *= w
            dw *= scale
        return np.matmul(dw, k, out=gq_out), np.matmul(np.swapaxes(dw, -1, -2), q, out=gk_out), gv

    def cross_entropy(x: Any, target: Any, ignore_index: int, smoothing: float) -> tuple[Any, Any]:
        if x.dtype.kind != "f" or x.ndim != 2 or x.shape[1] == 0:
            return KERNELS["cross_entropy"].default(fallback, x, target, ignore_index, smoothing)
        logp = log_softmax_rows(np.array(x, copy=True))
        valid = target != ignore_index
        safe = np.where(valid, target, 0)
        loss = -logp[np.arange(logp.shape[0]), safe]  # each row's pick (take_along_axis costs 20 us more)
        if smoothing:
            loss = loss * (1.0 - smoothing) + (-row_sums(logp)[:, 0]) * (smoothing / x.shape[1])
        loss[~valid] = 0  # ignored rows add 0 even when the logit they stand in for is -inf
        return loss, logp

    def cross_entropy_grad(g: Any, logp: Any, target: Any, ignore_index: int, smoothing: float) -> Any:
        # exp(logp) * g - g at the target: the composed ``gl - exp(logp) * sum(gl)`` bit for bit
        if logp.ndim != 2 or logp.shape[0] == 0:
            return KERNELS["cross_entropy_grad"].default(fallback, g, logp, target, ignore_index, smoothing)
        c = logp.shape[1]
        v = -g[:, None]
        gx = np.exp(logp)
        gx *= v
        np.negative(gx, out=gx)
        if smoothing:
            gx += v * (smoothing / c)
            v = v * (1.0 - smoothing)
        valid = target != ignore_index
        idx = np.nonzero(valid)[0]
        gx[idx, target[idx]] += v[idx, 0]
        return gx

    return {
        "softmax": last_axis(softmax_rows, "softmax"),
        "log_softmax": last_axis(log_softmax_rows, "log_softmax"),
        "layer_norm": layer_norm,
        "layer_norm_grad": layer_norm_grad,
        "gelu": gelu,
        "gelu_grad": gelu_grad,
        "scaled_dot_product_attention": sdpa,
        "scaled_dot_product_attention_grad": sdpa_grad,
        "cross_entropy": cross_entropy,
        "cross_entropy_grad": cross_entropy_grad,
    }


class _NumpyDevice:
    """What a composed default needs of a device (its namespace and this backend's kernels)."""

    def __init__(self) -> None:
        import array_api_compat.numpy as compat

        self.xp = compat
        self.backend = types.SimpleNamespace(kernels={})


def _split_matmul(np: Any, matmul: Any, a: Any, b: Any, bias: Any = None) -> Any:
    """A 2-D product (plus ``bias``, a vector of ``b``'s columns and the operands' dtype, added in place to the
    fresh product, or inside the compiled product as it writes its rows), split over the thread pool along its
    longer side while the pool is busy.

    While kernels have been split over the pool lately (``_parallel.pool_busy``: a CNN step), the product is
    split too, rows of ``a`` or columns of ``b``, each slice its own BLAS call on a view at one BLAS thread:
    waking BLAS's own threads there would leave them spinning on the cores the next split needs. Otherwise
    (an MLP or a transformer, whose work is products) BLAS threads it, which costs less per call than this
    pool's hand-off. Every output element is one dot product over the whole K axis either way.
    """
    if _parallel.DETERMINISTIC and a.dtype == b.dtype and a.dtype.kind in "fc":
        return _fixed_split_matmul(np, matmul, a, b, bias)
    if a.dtype != b.dtype or a.dtype.kind not in "fc" or not _parallel.pool_busy():
        out = _parallel.gemm(np, a, b, bias)
        if out is not None:
            return out
        _parallel.settle_blas()
        return _plus(np, matmul(a, b), bias)
    m, k = a.shape
    n = b.shape[1]
    if k != b.shape[0]:
        return _plus(np, matmul(a, b), bias)
    work = m * n * k // 16  # one multiply-add costs about an element-wise element / 16 (BLAS's SIMD)
    rows = m >= n
    if _parallel.chunks(m if rows else n, work) == 1:
        return _plus(np, matmul(a, b), bias)  # small: one BLAS call
    out = np.empty((m, n), dtype=a.dtype)
    if rows:

        def part(lo: int, hi: int) -> None:
            np.matmul(a[lo:hi], b, out=out[lo:hi])

    else:

        def part(lo: int, hi: int) -> None:
            np.matmul(a, b[:, lo:hi], out=out[:, lo:hi])

    parallel_batches(part, m if rows else n, work, busy=False)
    return _plus(np, out, bias)


def _fixed_split_matmul(np: Any, matmul: Any, a: Any, b: Any, bias: Any = None) -> Any:
    """A 2-D product whose bits do not depend on the thread count or on timing (``_parallel.DETERMINISTIC``).

    OpenBLAS's result depends on its thread count and on the shape of each call, so BLAS runs at one thread
    on blocks of :data:`_parallel.DETERMINISTIC_ROWS` rows of ``a``, a partition fixed by the shape alone,
    and the pool takes blocks: one thread or eight compute every block with the same call.
    """
    out = _parallel.gemm(np, a, b, bias)  # the compiled product sums in one order whatever the split
    if out is not None:
        return out
    m, k = a.shape
    n = b.shape[1]
    rows = _parallel.DETERMINISTIC_ROWS
    blocks = -(-m // rows)
    if k != b.shape[0] or blocks <= 1:
        return _plus(np, matmul(a, b), bias)
    out = np.empty((m, n), dtype=np.result_type(a, b))

    def part(lo: int, hi: int) -> None:
        for i in range(lo, hi):
            np.matmul(a[i * rows : (i + 1) * rows], b, out=out[i * rows : (i + 1) * rows])

    parallel_batches(part, blocks, m * n * k // 16, busy=False)
    return _plus(np, out, bias)


def _plus(np: Any, y: Any, bias: Any) -> Any:
    """A fresh product ``y`` plus ``bias`` (None: y), in place: the composed ``linear``'s bits."""
    return y if bias is None else np.add(y, bias, out=y)


def _batched_matmul(np: Any, matmul: Any, a: Any, b: Any) -> Any:
    """A stack of products split along the leading batch axis over the thread pool (``_parallel``).

    NumPy multiplies a stack one matrix at a time, each its own BLAS call; a slice of the stack makes
    the same calls, so the result is bit-identical. Other broadcasts run in one call.
    """
    if a.dtype != b.dtype or a.dtype.kind not in "fc" or a.ndim < 2 or b.ndim < 2:
        return matmul(a, b)
    if a.ndim == b.ndim and a.shape[:-2] == b.shape[:-2]:
        pa, pb = True, True
    elif b.ndim == 2:
        pa, pb = True, False
    elif a.ndim == 2:
        pa, pb = False, True
    else:
        return matmul(a, b)
    m, k = a.shape[-2:]
    n = b.shape[-1]
    lead = (a if pa else b).shape[:-2]
    if k != b.shape[-2] or lead[0] < 2:
        return matmul(a, b)
    out = np.empty((*lead, m, n), dtype=a.dtype)

    def part(lo: int, hi: int) -> None:
        np.matmul(a[lo:hi] if pa else a, b[lo:hi] if pb else b, out=out[lo:hi])

    # one multiply-add costs about what one element of an element-wise kernel does / 16 (BLAS's SIMD)
    parallel_batches(part, lead[0], out.size * k // 16)
    return out
