"""NumPy kernels of a CNN step: convolutions as batched GEMMs (the bias a ones row of the GEMM input),
window sums for average pooling, a channel sum as matrix-vector products, and ReLU.

Each convolution kernel is a ``*_rows(..., lo, hi)`` function that fills batch entries ``lo:hi`` of a
preallocated output, so a thread pool can hand out batch slices; the public kernels call it once for
the whole batch. Without a bias, ``conv``, ``conv_input_grad`` and ``conv_weight_grad`` make the same
BLAS calls as the composed defaults (same numbers, bit for bit); the bias row changes the summation
order of ``conv_bias`` only within float rounding.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

from lucid_core.kernels import conv_out

from ._native import compiled, ptr
from ._parallel import convert_bf16, gemm_bf16, gemm_into, gemm_on, gemm_sum_into, parallel_batches, run_compiled

Pads = tuple[tuple[int, int], ...]

#: output rows shorter than this take the padded grid (benchmarks/bench_cnn_kernels.py: W2's 14-wide rows
#: gain 1.2-1.4x, MNIST's 24-wide ones nothing, and the grid's copy of ``gy`` costs more than the
#: 28-wide single-channel im2col it speeds up)
GRID_BELOW = 20


def _work(product: Any, cols: Any) -> int:
    """Elements a conv call touches, for ``parallel_batches``: the column buffer plus the GEMM's
    multiply-adds counted as 1/16 element each (BLAS's SIMD), as the backend's batched matmul does."""
    return _work_of(product.size, cols.size, cols.shape[-2])


def _work_of(product_size: int, cols_size: int, rows: int) -> int:
    """:func:`_work` from sizes: ``cols_size`` elements of columns with ``rows`` rows, a ``product_size`` output."""
    return cols_size + product_size * rows // 16


#: how many bytes of im2col columns a convolution's gradient makes at a time (a few samples; L2 holds them)
COLS_CHUNK_BYTES = 1 << 20


def _chunk(per_sample_bytes: int) -> int:
    """Samples per chunk: as many as COLS_CHUNK_BYTES of columns hold, at least one."""
    return max(1, COLS_CHUNK_BYTES // max(1, per_sample_bytes))


def cnn_kernels(np: Any, native: Any = None) -> dict[str, Callable[..., Any]]:
    """The kernels, closed over the NumPy module (imported when the backend loads) and the compiled loops
    (``_native.load()``; None: NumPy only)."""
    as_strided = np.lib.stride_tricks.as_strided

    def c_geometry(
        a: Any, kernel: Any, stride: Any, dilation: Any, pads: Pads, out: Any, read: bool = True, f32: bool = False
    ) -> Any:
        """For a 2-D float32 convolution with (N, C, ...) operand ``a`` (C-contiguous when the compiled loop
        ``read``s it; ``f32``: the loop's arrays are float32 whatever ``a``'s dtype): the compiled im2col and
        col2im's geometry (kh, kw, sh, sw, dh, dw, ph, pw, oh, ow); else None (NumPy's copies)."""
        if a.ndim != 4 or len(kernel) != 2 or native is None or (a.dtype != np.float32 and not f32):
            return None
        if read and not a.flags.c_contiguous:
            return None
        return np.array([*kernel, *stride, *dilation, pads[0][0], pads[1][0], *out], dtype=np.intp)

    def view_as(a: Any, shape: tuple[int, ...]) -> Any:
        """``a`` reshaped without copying (raises instead of copying, so writes always land)."""
        v = a.view()
        v.shape = shape
        return v

    def windows(x: Any, kernel: Any, stride: Any, dilation: Any, pads: Pads, out: Any, value: float) -> Any:
        """Read-only (N, C, *kernel, *out) view of ``x`` padded with ``value``: every window at once."""
        if any(b or a for b, a in pads):
            z = np.full(
                tuple(x.shape[:2]) + tuple(s + b + a for s, (b, a) in zip(x.shape[2:], pads)), value, dtype=x.dtype
            )
            z[(slice(None), slice(None), *(slice(b, b + s) for s, (b, _) in zip(x.shape[2:], pads)))] = x
            x = z
        sp = x.strides[2:]
        return as_strided(
            x,
            tuple(x.shape[:2]) + tuple(kernel) + tuple(out),
            x.strides[:2] + tuple(s * d for s, d in zip(sp, dilation)) + tuple(s * t for s, t in zip(sp, stride)),
            writeable=False,
        )

    # With stride 1 along the last axis, a window's rows are runs of the padded input's rows: short rows'
    # positions are taken on the padded grid (the last axis at its padded width, the extra d * (k - 1) columns per row
    # computed and dropped), so im2col and col2im move long contiguous runs instead of ``out[-1]``-element
    # ones (~4x faster at 14x14); the GEMMs see the same dot products.
    def grid_out(size: Any, kernel: Any, stride: Any, dilation: Any, pads: Pads, out: Any) -> tuple[int, ...] | None:
        """The output positions on the padded grid, or None when the last axis is strided (no grid)."""
        if stride[-1] != 1 or out[-1] >= GRID_BELOW:
            return None
        return (*tuple(out[:-1]), size[-1] + pads[-1][0] + pads[-1][1])

    def grid_zeros(lead: tuple[int, ...], padded: tuple[int, ...], spill: int, dtype: Any) -> Any:
        """(*lead, *padded) zeros, each (n, c) plane followed by ``spill`` elements of its own: the last
        windows' dropped columns run past their plane into them, never into another plane."""
        plane = math.prod(padded)
        flat = np.zeros((*lead, plane + spill), dtype=dtype)
        strides = flat.strides[:-1] + tuple(math.prod(padded[i + 1 :]) * flat.itemsize for i in range(len(padded)))
        return as_strided(flat, (*lead, *padded), strides)

    def grid_input(x: Any, pads: Pads, spill: int) -> Any:
        """``x`` zero-padded on the grid (see ``grid_zeros``)."""
        padded = tuple(s + b + a for s, (b, a) in zip(x.shape[2:], pads))
        z = grid_zeros(tuple(x.shape[:2]), padded, spill, x.dtype)
        z[(slice(None), slice(None), *(slice(b, b + s) for s, (b, _) in zip(x.shape[2:], pads)))] = x
        return z

    def grid_windows(z: Any, kernel: Any, stride: Any, dilation: Any, gout: Any) -> Any:
        """(N, C, *kernel, *gout) view of the grid-padded ``z`` (read-only)."""
        sp = z.strides[2:]
        return as_strided(
            z,
            tuple(z.shape[:2]) + tuple(kernel) + tuple(gout),
            z.strides[:2] + tuple(s * d for s, d in zip(sp, dilation)) + tuple(s * t for s, t in zip(sp, stride)),
            writeable=False,
        )

    def on_grid(g: Any, gout: tuple[int, ...]) -> Any:
        """(N, O, *out) -> (N, O, *gout): zeros in the dropped columns, so they add nothing to any product."""
        z = np.zeros((*g.shape[:2], *gout), dtype=g.dtype)
        z[..., : g.shape[-1]] = g
        return z

    def im2col_rows(x: Any, geo: tuple[Any, ...], groups: int, cols: Any, lo: int, hi: int, at: int = 0) -> None:
        """Windows of ``x[lo:hi]`` into ``cols[at : at + hi - lo]``, a (n, G, >= C/G * K, P) buffer (extra rows
        kept); ``geo`` = (kernel, stride, dilation, pads, out, gout, cgeo): positions on the grid ``gout`` unless
        it is None; with ``cgeo`` (``c_geometry``'s array) the compiled loop fills the exact positions instead."""
        kernel, stride, dilation, pads, out, gout, cgeo = geo
        m, c = hi - lo, x.shape[1]
        if cgeo is not None:  # one compiled pass, positions as they are (no grid)
            per, per_cols = math.prod(x.shape[1:]), math.prod(cols.shape[1:])
            native.lucid_im2col2_f32(
                ptr(x, lo * per), ptr(cols, at * per_cols), m, c, *x.shape[2:], ptr(cgeo), groups, cols.shape[2]
            )
            return
        cgk = c // groups * math.prod(kernel)
        if gout is None:
            src = windows(x[lo:hi], kernel, stride, dilation, pads, out, 0.0)
        else:
            z = grid_input(x[lo:hi], pads, dilation[-1] * (kernel[-1] - 1))
            src = grid_windows(z, kernel, stride, dilation, gout)
            out = gout
        dst = view_as(cols[at : at + m, :, :cgk], (m, groups, c // groups, *kernel, *out))
        dst[...] = view_as(src, (m, groups, c // groups, *kernel, *out))

    # -- convolution: B(x, w) and its two gradient products ---------------------------------------------
    def in_chunks(rows: Callable[[int, int], None], per_sample: int) -> Callable[[int, int], None]:
        """``rows(lo, hi)`` run a few samples at a time (COLS_CHUNK_BYTES of im2col columns): each chunk's columns
        meet their product while still in cache (MNIST's second convolution makes 663 KB a sample, 42 MB a
        batch; measured in RESULTS.md). Every sample's numbers are its own: the same bits for any chunking."""
        step = _chunk(per_sample)

        def chunked(lo: int, hi: int) -> None:
            for s in range(lo, hi, step):
                rows(s, min(hi, s + step))

        return chunked

    def with_columns(
        run: Callable[[int, int, Any], None], per: tuple[int, ...], dtype: Any, ones_row: int | None = None
    ) -> Callable[[int, int], None]:
        """``run(lo, hi, cols)`` over a slice's samples a chunk at a time (COLS_CHUNK_BYTES of columns), ``cols``
        a (hi - lo, *per) buffer of the slice's own, reused chunk after chunk, so columns stay in cache: a
        batch-sized buffer wrote fresh memory every chunk (MNIST's second convolution's im2col 5.9 ms a batch
        against 1.9 in a reused one). ``ones_row``: a row of ones (a bias) kept in every chunk."""
        step = _chunk(math.prod(per) * np.dtype(dtype).itemsize)

        def chunked(lo: int, hi: int) -> None:
            cols = np.empty((min(step, hi - lo), *per), dtype=dtype)
            if ones_row is not None:
                cols[:, :, ones_row] = 1
            for s in range(lo, hi, step):
                e = min(hi, s + step)
                run(s, e, cols[: e - s])

        return chunked

    def conv_rows(x: Any, wm: Any, geo: tuple[Any, ...], groups: int, cols: Any, y: Any, lo: int, hi: int) -> None:
        """y[lo:hi] = wm @ im2col(x[lo:hi]): ``wm`` (G, O/G, rows), ``cols`` (hi - lo, G, rows, P), ``y`` (N, G,
        O/G, P)."""
        im2col_rows(x, geo, groups, cols, lo, hi)
        if cols.dtype.name == "bfloat16":  # (an autocast convolution) on the bfloat16 product, one thread
            if groups > 1 or gemm_bf16(np, wm[0], cols[:, 0], out=y[lo:hi, 0], parts=1) is None:
                wide = np.matmul(widened(wm if groups > 1 else wm[0]), widened(cols))
                y[lo:hi] = convert_bf16(np, wide, y.dtype) if wide.size >= 2048 else wide.astype(y.dtype)
            return
        if groups > 1 or not gemm_into(np, wm[0], cols, y[lo:hi]):
            np.matmul(wm if groups > 1 else wm[0], cols, out=y[lo:hi])

    def widened(a: Any) -> Any:
        """A bfloat16 array as float32 (exact)."""
        out = convert_bf16(np, np.ascontiguousarray(a), np.dtype(np.float32))
        return a.astype(np.float32) if out is None else out

    def rounded_to(a: Any, low: Any) -> Any:
        """A float32 array rounded to bfloat16 (nearest even) once."""
        out = convert_bf16(np, np.ascontiguousarray(a), low)
        return a.astype(low) if out is None else out

    def conv_bias(x: Any, w: Any, b: Any, stride: Any, dilation: Any, pads: Pads, groups: int) -> Any:
        n, o, cg, kernel = x.shape[0], w.shape[0], w.shape[1], tuple(w.shape[2:])
        out = conv_out(x.shape[2:], kernel, stride, pads, dilation)
        cgeo = c_geometry(x, kernel, stride, dilation, pads, out) if w.dtype == x.dtype else None
        gout = None if cgeo is not None else grid_out(x.shape[2:], kernel, stride, dilation, pads, out)
        geo = (kernel, stride, dilation, pads, out, gout, cgeo)
        cgk, p, og = cg * math.prod(kernel), math.prod(out if gout is None else gout), o // groups
        dtype = np.result_type(x, w)
        wm = w.reshape(groups, og, cgk)
        rows = cgk + (b is not None)
        if b is not None:  # the bias as a ones row: one GEMM adds it, no pass over the output
            wm = np.concatenate([wm, b.reshape(groups, og, 1).astype(dtype, copy=False)], axis=2)
        y = np.empty((n, groups, og, p), dtype=dtype)
        # each slice of the batch fills its own columns and outputs: bit-identical to one call
        run = with_columns(
            lambda lo, hi, cols: conv_rows(x, wm, geo, groups, cols, y, lo, hi),
            (groups, rows, p),
            dtype,
            cgk if b is not None else None,
        )
        parallel_batches(run, n, _work_of(y.size, n * groups * rows * p, rows))
        if gout is None:
            return y.reshape((n, o, *out))
        return view_as(y, (n, o, *gout))[..., : out[-1]]  # the grid's dropped columns are never copied

    def conv(x: Any, w: Any, stride: Any, dilation: Any, pads: Pads, groups: int) -> Any:
        return conv_bias(x, w, None, stride, dilation, pads, groups)

    def weight_grad_rows(
        x: Any, gy: Any, geo: tuple[Any, ...], groups: int, cols: Any, lo: int, hi: int, out: Any
    ) -> None:
        """out[lo:hi] = gy[n] @ im2col(x[n]).T for n in lo:hi, (hi - lo, G, O/G, C/G * K); ``gy`` is (N, G, O/G, P),
        ``cols`` the (hi - lo, G, C/G * K, P) buffer."""
        im2col_rows(x, geo, groups, cols, lo, hi)
        # the transposed view goes to BLAS as a transposed operand: no copy of the columns
        cols_t = np.swapaxes(cols, -1, -2)
        if cols.dtype.name == "bfloat16":  # float32 products of the bfloat16 operands, summed later in float32
            if groups > 1 or gemm_bf16(np, gy[lo:hi, 0], cols_t[:, 0], out=out[lo:hi, 0], parts=1) is None:
                out[lo:hi] = np.matmul(widened(gy[lo:hi]), widened(cols_t))
            return
        if groups > 1 or not gemm_into(np, gy[lo:hi], cols_t, out[lo:hi]):
            out[lo:hi] = np.matmul(gy[lo:hi], cols_t)

    def conv_weight_grad(
        x: Any, gy: Any, kernel: tuple[int, ...], stride: Any, dilation: Any, pads: Pads, groups: int
    ) -> Any:
        n, c, o = x.shape[0], x.shape[1], gy.shape[1]
        out = tuple(gy.shape[2:])
        cg = c // groups
        cgeo = c_geometry(x, kernel, stride, dilation, pads, out)
        gout = None if cgeo is not None else grid_out(x.shape[2:], kernel, stride, dilation, pads, out)
        if gout is not None:
            gy = on_grid(gy, gout)
        p = math.prod(gy.shape[2:])
        ck = cg * math.prod(kernel)
        g4 = gy.reshape(n, groups, o // groups, p)
        geo = (kernel, stride, dilation, pads, out, gout, cgeo)
        summed = weight_grad_summed(x, g4, geo, ck, p)
        if summed is not None:
            return summed.reshape((o, cg, *kernel))
        low = np.result_type(x, gy)
        bf16 = low.name == "bfloat16"  # an autocast convolution: float32 sums of bfloat16 products, rounded once
        prods = np.empty((n, groups, o // groups, ck), dtype=np.float32 if bf16 else low)
        run = with_columns(
            lambda lo, hi, cols: weight_grad_rows(x, g4, geo, groups, cols, lo, hi, prods), (groups, ck, p), x.dtype
        )
        parallel_batches(run, n, _work_of(prods.size, n * groups * ck * p, ck))
        # the sum over the batch on one thread, in the order one call takes: the same bits for any split
        total = np.sum(prods, axis=0).reshape((o, cg, *kernel))
        return rounded_to(total, low) if bf16 else total

    def weight_grad_summed(x: Any, g4: Any, geo: tuple[Any, ...], ck: int, p: int) -> Any:
        """The weight gradient (O, C K) of one group as sums over chunks of samples on the compiled product, or
        None where it does not apply. Each chunk (COLS_CHUNK_BYTES of columns, boundaries fixed by the sizes, not
        the threads) sums its samples' products in one long product, transposed, cols @ gy.T (C K rows, O
        columns: whole 12 x 32 tiles for 144 x 32, where O x C K wasted a fifth); the chunks' sums then add in
        order: the same bits for any thread count (W2's second convolution, one thread: 2.64 -> 1.62 ms)."""
        n, groups, o = g4.shape[:3]
        if groups != 1 or not gemm_on() or x.dtype != np.float32 or g4.dtype != np.float32:
            return None
        gy = np.ascontiguousarray(g4[:, 0])  # (N, O, P)
        step = _chunk(ck * p * 4)
        chunks = -(-n // step)
        sums = np.empty((chunks, ck, o), dtype=np.float32)

        def part(lo: int, hi: int) -> None:
            cols = np.empty((min(step, n), 1, ck, p), dtype=np.float32)  # this slice's, reused chunk to chunk
            for c in range(lo, hi):
                s, e = c * step, min(n, (c + 1) * step)
                im2col_rows(x, geo, 1, cols, s, e)
                a, gy_t = cols[: e - s, 0], np.swapaxes(gy[s:e], -1, -2)
                if not gemm_sum_into(np, a, gy_t, sums[c]):  # a small sum: BLAS, sample by sample
                    sums[c] = np.sum(np.matmul(a, gy_t), axis=0)

        parallel_batches(part, chunks, _work_of(sums.size, n * ck * p, ck))
        return np.ascontiguousarray(np.sum(sums, axis=0).T)

    def col2im_rows(cols: Any, geo: tuple[Any, ...], z: Any, lo: int, hi: int) -> None:
        """Add each kernel offset's values of ``cols`` (hi - lo, C, K, *out: the slice's own columns) into the
        padded ``z[lo:hi]``."""
        kernel, stride, dilation, _, out, _, _ = geo
        for i, off in enumerate(itertools.product(*(range(k) for k in kernel))):
            key = (
                slice(lo, hi),
                slice(None),
                *(slice(q * d, q * d + t * (m - 1) + 1, t) for q, t, d, m in zip(off, stride, dilation, out)),
            )
            z[key] += cols[:, :, i]

    def input_grad_rows(gy: Any, wt: Any, geo: tuple[Any, ...], c: int, z: Any, lo: int, hi: int) -> None:
        """z[lo:hi] (padded; on the grid when ``geo``'s gout is set) gets col2im(wt @ gy[lo:hi]); ``wt``
        (G, C/G * K, O/G), ``gy`` (N, G, O/G, P) with P on the grid when gout is set."""
        kernel, stride, dilation, _, out, gout, cgeo = geo
        if wt.dtype.name == "bfloat16":  # float32 products (col2im adds them up in float32), rounded at the end
            cols = np.empty((hi - lo, 1, wt.shape[1], gy.shape[-1]), dtype=np.float32)
            if wt.shape[0] > 1 or gemm_bf16(np, wt[0], gy[lo:hi, 0], out=cols[:, 0], parts=1) is None:
                cols = np.matmul(widened(wt), widened(gy[lo:hi]))
        elif wt.shape[0] > 1:
            cols = np.matmul(wt, gy[lo:hi])
        else:
            cols = np.empty((hi - lo, 1, wt.shape[1], gy.shape[-1]), dtype=np.result_type(wt, gy))
            if not gemm_into(np, wt[0], gy[lo:hi], cols):
                np.matmul(wt[0], gy[lo:hi], out=cols)
        if cgeo is not None:  # one compiled pass into the unpadded z
            per = math.prod(z.shape[1:])
            native.lucid_col2im2_f32(ptr(cols), ptr(z, lo * per), hi - lo, c, *z.shape[2:], ptr(cgeo))
            return
        if gout is None:
            col2im_rows(view_as(cols, (hi - lo, c, math.prod(kernel), *out)), geo, z, lo, hi)
            return
        cols = view_as(cols, (hi - lo, c, *kernel, *gout))
        zb = z[lo:hi]
        sp = zb.strides[2:]
        dst = as_strided(
            zb,
            tuple(zb.shape[:2]) + tuple(kernel) + tuple(gout),
            zb.strides[:2] + tuple(s * d for s, d in zip(sp, dilation)) + tuple(s * t for s, t in zip(sp, stride)),
        )  # one window position per element: no two elements of one offset's view share memory
        for off in itertools.product(*(range(k) for k in kernel)):
            key = (slice(None), slice(None), *off)
            dst[key] += cols[key]

    def conv_input_grad(
        gy: Any, w: Any, size: tuple[int, ...], stride: Any, dilation: Any, pads: Pads, groups: int
    ) -> Any:
        n, o, cg, kernel = gy.shape[0], w.shape[0], w.shape[1], tuple(w.shape[2:])
        out = tuple(gy.shape[2:])
        # a C-ordered copy of the (small) transposed weight: BLAS's transposed-A path is slower here
        wt = np.ascontiguousarray(np.swapaxes(w.reshape(groups, o // groups, cg * math.prod(kernel)), -1, -2))
        padded = tuple(s + b + a for s, (b, a) in zip(size, pads))
        low = np.result_type(gy, w)
        bf16 = low.name == "bfloat16"  # an autocast convolution: the input gradient summed in float32, rounded once
        dtype = np.dtype(np.float32) if bf16 else low
        same = w.dtype == gy.dtype
        cgeo = c_geometry(gy, kernel, stride, dilation, pads, out, read=False, f32=bf16) if same else None
        gout = None if cgeo is not None else grid_out(size, kernel, stride, dilation, pads, out)
        if cgeo is not None:
            z = np.empty((n, groups * cg, *size), dtype=dtype)  # unpadded: the compiled col2im fills it
        elif gout is None:
            z = np.zeros((n, groups * cg, *padded), dtype=dtype)
        else:
            z = grid_zeros((n, groups * cg), padded, dilation[-1] * (kernel[-1] - 1), dtype)
            gy = on_grid(gy, gout)
        g4 = gy.reshape(n, groups, o // groups, math.prod(gy.shape[2:]))
        geo = (kernel, stride, dilation, pads, out, gout, cgeo)
        per = wt.shape[0] * wt.shape[1] * g4.shape[-1] * g4.itemsize  # one sample's columns
        rows = in_chunks(lambda lo, hi: input_grad_rows(g4, wt, geo, groups * cg, z, lo, hi), per)
        parallel_batches(rows, n, _work(g4, z))
        if cgeo is None and any(b or a for b, a in pads):
            z = z[(slice(None), slice(None), *(slice(b, b + s) for s, (b, _) in zip(size, pads)))]
        return rounded_to(z, low) if bf16 else z

    # -- reductions, pooling, ReLU ----------------------------------------------------------------------
    def channel_sum(g: Any) -> Any:
        if g.dtype.kind != "f" or g.ndim < 2:
            return np.sum(g, axis=(0, *range(2, g.ndim)))
        n, c = g.shape[:2]
        g3 = g.reshape(n, c, -1)
        # two matrix-vector products: BLAS sums rows far faster than NumPy's multi-axis reduction
        return np.ones(n, dtype=g.dtype) @ (g3 @ np.ones(g3.shape[2], dtype=g.dtype))

    def avg_pool(x: Any, kernel: Any, stride: Any, pads: Pads, out: Any, divisor: Any) -> Any:
        # the composed default's sum over im2col's offset axis, without the (N, C, K, *out) copy:
        # the same additions in the same order, into one accumulator
        v = windows(x, kernel, stride, (1,) * len(kernel), pads, out, 0.0)
        offsets = list(itertools.product(*(range(k) for k in kernel)))
        y = np.array(v[(slice(None), slice(None), *offsets[0])], copy=True)
        for off in offsets[1:]:
            y += v[(slice(None), slice(None), *off)]
        if isinstance(divisor, np.ndarray) and (
            divisor.dtype != y.dtype or np.broadcast_shapes(divisor.shape, y.shape) != y.shape
        ):
            return y / divisor  # a result of another dtype or shape, as the composed default gives
        y /= divisor
        return y

    zeros_cache: dict[tuple[Any, ...], Any] = {}

    def relu(x: Any) -> Any:
        if x.dtype.name == "bfloat16":
            return relu_bf16(x)
        if x.dtype.kind != "f" or x.size < 4096:
            return np.maximum(x, 0)
        y = np.empty(x.shape, dtype=x.dtype)
        if compiled(native, np, x):  # NumPy's bits in one compiled pass (no zeros array)
            px, py = ptr(x), ptr(y)
            run_compiled(lambda lo, hi, k: native.lucid_par_relu_f32(px, py, hi, lo, k), x.size, 2 * x.size)
            return y
        key = (x.shape, x.dtype.str)
        zeros = zeros_cache.get(key)
        if zeros is None:
            if len(zeros_cache) >= 8:  # a few shapes per model; varying batches must not grow it
                zeros_cache.clear()
            zeros = np.zeros(x.shape, dtype=x.dtype)
            zeros.flags.writeable = False
            zeros_cache[key] = zeros
        # an array operand takes NumPy's vectorised loop; the scalar 0 a ~2.5x slower one
        if x.flags.c_contiguous:  # split anywhere
            x, zeros, out = x.reshape(-1), zeros.reshape(-1), y.reshape(-1)
        else:  # a view (a conv's output on its padded grid): split along the batch
            out = y

        def part(lo: int, hi: int) -> None:
            np.maximum(x[lo:hi], zeros[lo:hi], out=out[lo:hi])

        parallel_batches(part, x.shape[0], x.size)
        return y

    def relu_bf16(x: Any) -> Any:
        # np.maximum(x, 0)'s bits (NaN and -0 kept) on the 16-bit patterns: ml_dtypes' own maximum converts
        # each element through float (~4 ns an element); here the numbers below zero, 0x8001 (the smallest
        # negative) to 0xFF80 (-inf), are the patterns whose `bits - 0x8001` wraps to at most 0x7F7F
        bits = np.ascontiguousarray(x).view(np.uint16)
        keep = np.subtract(bits, np.uint16(0x8001), dtype=np.uint16)
        np.greater(keep, np.uint16(0x7F7F), out=keep, casting="unsafe")
        np.multiply(keep, bits, out=keep)
        return keep.view(x.dtype)

    return {
        "conv": conv,
        "conv_bias": conv_bias,
        "conv_weight_grad": conv_weight_grad,
        "conv_input_grad": conv_input_grad,
        "channel_sum": channel_sum,
        "avg_pool": avg_pool,
        "relu": relu,
    }
