"""The compiled float32 kernels of ``_ckernels.c``, reached through ``ctypes``, or None without them.

They are built at install time when a C compiler is at hand (``setup.py``: the extension is optional).
A call through ``ctypes.CDLL`` releases the GIL, so a kernel split over the pool costs one hand-off
per thread, not one per NumPy call. ``LUCID_NUMPY_CKERNELS``: unset uses them when built, ``0`` never
(the NumPy kernels, e.g. to compare), ``1`` requires them (an ImportError if they were not built).
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["compiled", "load", "ptr"]


def load() -> Any:
    """The loaded library with typed entry points, or None (not built, or turned off)."""
    choice = os.environ.get("LUCID_NUMPY_CKERNELS", "")
    if choice not in ("", "0", "1"):
        raise ValueError(
            f"LUCID_NUMPY_CKERNELS={choice!r}: expected '1' (require the compiled kernels), '0' (use NumPy's) "
            "or unset (compiled when built)"
        )
    if choice == "0":
        return None
    try:
        import ctypes

        from . import _ckernels

        lib = ctypes.CDLL(_ckernels.__file__)
    except (ImportError, OSError) as e:
        if choice == "1":
            raise ImportError(
                "LUCID_NUMPY_CKERNELS=1, but lucid_backend_numpy's compiled kernels are not built; reinstall "
                "it with a C compiler at hand (pip install --force-reinstall ./lucid_backend_numpy)"
            ) from e
        return None
    p, n, f = ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_float
    signatures = {  # pointers are C-contiguous float32 arrays' data (or None where the C side allows NULL)
        "lucid_gelu_f32": [p, p, p, n, p, f],  # x, g, out, size, constants, 1/sqrt(2 pi)
        "lucid_softmax_rows_f32": [p, n, n],  # matrix (in place), rows, columns
        "lucid_softmax_causal_f32": [p, n, n, n],  # (heads, L, S) scores (in place), heads, L, S
        "lucid_log_softmax_rows_f32": [p, n, n],
        "lucid_softmax_grad_rows_f32": [p, p, n, n, f],  # dw (in place), w, rows, columns, scale
        "lucid_layer_norm_f32": [p, p, p, p, p, p, n, n, f],  # x, w, b, y, mean, rstd, rows, columns, eps
        "lucid_layer_norm_grad_f32": [p, p, p, p, p, p, p, n, n],  # g, x, mean, rstd, w, gx, g*xhat, rows, columns
        "lucid_index_add_rows_f32": [p, p, p, n, n],  # z (in place), int64 row indices, values, rows, columns
        "lucid_relu_grad_f32": [p, p, p, n],  # g, x, out, size
        "lucid_relu_f32": [p, p, n],  # x, out, size
        "lucid_max_pool2_f32": [p, p, n, n, n, n, n, n, n],  # x, y, planes, h, w, k1, k2, o1, o2
        "lucid_max_pool2_grad_f32": [p, p, p, p, n, n, n, n, n, n, n],  # gy, x, y, out, then as above
        # x, cols, n, c, h, w, geometry (kh, kw, sh, sw, dh, dw, ph, pw, oh, ow as intp), groups, rows per group
        "lucid_im2col2_f32": [p, p, n, n, n, n, p, n, n],
        "lucid_col2im2_f32": [p, p, n, n, n, n, p],  # cols, z, n, c, h, w, geometry
        # q, k, v, out, w, scratch (E * (S + 4)), heads, L, S, E, Ev, scale, causal
        "lucid_attention_f32": [p, p, p, p, p, p, n, n, n, n, n, f, ctypes.c_int],
        # gy, q, k, v, w, gq, gk, gv, scratch ((Ev + L) * S + 4 Ev), heads, L, S, E, Ev, scale, causal
        "lucid_attention_grad_f32": [p, p, p, p, p, p, p, p, p, n, n, n, n, n, f, ctypes.c_int],
        "lucid_adam_step_f32": [p, p, p, p, n, p, ctypes.c_int],  # p, g, m, v (in place), size, constants, far
        "lucid_sgd_step_f32": [p, p, p, n, p, ctypes.c_int],  # p, g, buf (in place), size, constants, flags
        "lucid_adadelta_step_f32": [p, p, p, p, n, p, ctypes.c_int],  # p, g, v, u (in place), size, constants, lr != 1
    }
    i = ctypes.c_int
    # the same kernels split over the pool (_pool.c): the arguments above, the count read as the end of the items,
    # then the first item and the number of slices
    split = {
        "lucid_gelu_f32": "lucid_par_gelu_f32",
        "lucid_softmax_rows_f32": "lucid_par_softmax_rows_f32",
        "lucid_softmax_causal_f32": "lucid_par_softmax_causal_f32",
        "lucid_log_softmax_rows_f32": "lucid_par_log_softmax_rows_f32",
        "lucid_softmax_grad_rows_f32": "lucid_par_softmax_grad_rows_f32",
        "lucid_layer_norm_f32": "lucid_par_layer_norm_f32",
        "lucid_layer_norm_grad_f32": "lucid_par_layer_norm_grad_f32",
        "lucid_relu_grad_f32": "lucid_par_relu_grad_f32",
        "lucid_relu_f32": "lucid_par_relu_f32",
        "lucid_attention_f32": "lucid_par_attention_f32",  # scratch: slices * E * (S + 4)
        "lucid_attention_grad_f32": "lucid_par_attention_grad_f32",  # scratch: slices * ((Ev + L) * S + 4 Ev)
        "lucid_adam_step_f32": "lucid_par_adam_step_f32",
        "lucid_sgd_step_f32": "lucid_par_sgd_step_f32",
        "lucid_adadelta_step_f32": "lucid_par_adadelta_step_f32",
    }
    for name, argtypes in signatures.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = argtypes, None
        if name in split:
            fn = getattr(lib, split[name])
            fn.argtypes, fn.restype = [*argtypes, n, i], None
    # the pool: available (POSIX threads), threads (returns the previous count), park, BLAS calls
    lib.lucid_pool_available.argtypes, lib.lucid_pool_available.restype = [], i
    lib.lucid_pool_threads.argtypes, lib.lucid_pool_threads.restype = [i], i
    lib.lucid_pool_park.argtypes, lib.lucid_pool_park.restype = [], None
    lib.lucid_pool_blas_calls.argtypes, lib.lucid_pool_blas_calls.restype = [], ctypes.c_long
    # where OpenBLAS keeps its thread count, its MAX_THREADS: BLAS jobs run as thread indices past its own
    lib.lucid_pool_blas_info.argtypes, lib.lucid_pool_blas_info.restype = [p, i], None
    # the float32 product (_gemm.c), on AVX-512 or AVX2 + FMA: available returns 2, 1 or 0 (neither); set_isa takes
    # one of those (for tests: capped at what the CPU has) and returns the level now in use
    lib.lucid_gemm_available.argtypes, lib.lucid_gemm_available.restype = [], i
    lib.lucid_gemm_set_isa.argtypes, lib.lucid_gemm_set_isa.restype = [i], i
    # the largest C a chunk of panels may span for panels to be the outer loop (0: never); returns the last value
    lib.lucid_gemm_set_panel_outer.argtypes, lib.lucid_gemm_set_panel_outer.restype = [n], n
    # m, n, k, A (address, row and column strides), B (the same), C, its row stride, a bias added to every row
    # (or NULL), slices
    lib.lucid_gemm_f32.argtypes, lib.lucid_gemm_f32.restype = [n, n, n, p, n, n, p, n, n, p, n, p, i], i
    # a stack: batch, m, n, k, A (address, batch, row, column strides), B (the same), C, its batch and row strides
    lib.lucid_gemm_batch_f32.argtypes = [n, n, n, n, p, n, n, n, p, n, n, n, p, n, n, i]
    lib.lucid_gemm_batch_f32.restype = i
    # a sum of products: terms, m, n, k, A and B (address, term, row, column strides), C, its row stride, slices
    lib.lucid_gemm_sum_f32.argtypes = [n, n, n, n, p, n, n, n, p, n, n, n, p, n, i]
    lib.lucid_gemm_sum_f32.restype = i
    # the bfloat16 product (_gemm_bf16.c, AVX512_BF16): available 1 or 0; m, n, k, A, B (address, row and column
    # strides), C and its row stride, a float32 bias added to every row (or NULL), C float32 (1) or bfloat16 (0),
    # slices; the stack: batch, m, n, k, A and B (address, batch, row, column strides), C (address, batch and row
    # strides), C float32 or not, slices
    lib.lucid_gemm_bf16_available.argtypes, lib.lucid_gemm_bf16_available.restype = [], i
    lib.lucid_gemm_bf16.argtypes, lib.lucid_gemm_bf16.restype = [n, n, n, p, n, n, p, n, n, p, n, p, i, i], i
    lib.lucid_gemm_batch_bf16.argtypes = [n, n, n, n, p, n, n, n, p, n, n, n, p, n, n, i, i]
    lib.lucid_gemm_batch_bf16.restype = i
    # float32 <-> bfloat16 conversions (any CPU): source, destination, elements, slices
    lib.lucid_f32_to_bf16.argtypes = lib.lucid_bf16_to_f32.argtypes = [p, p, n, i]
    lib.lucid_f32_to_bf16.restype = lib.lucid_bf16_to_f32.restype = None
    lib.lucid_box_muller_f64.argtypes, lib.lucid_box_muller_f64.restype = [p, p, n], None  # uniforms, out, blocks
    # uniforms, out, blocks of 16, mean, std, plain (mean 0 and std 1)
    lib.lucid_box_muller_f32.argtypes, lib.lucid_box_muller_f32.restype = [p, p, n, f, f, i], None
    # uint64 engine words, out, count, low, high, plain ([0, 1))
    lib.lucid_uniform_f32.argtypes, lib.lucid_uniform_f32.restype = [p, p, n, f, f, i], None
    lib.lucid_simd_level.argtypes = []
    lib.lucid_set_simd_level.argtypes = [ctypes.c_int]
    lib.lucid_simd_level.restype = lib.lucid_set_simd_level.restype = ctypes.c_int
    return lib


def compiled(native: Any, np: Any, *arrays: Any) -> bool:
    """Whether the compiled kernels (``native``, from :func:`load`) take these arrays: all float32 and
    C-contiguous (None stands for an absent optional argument)."""
    return native is not None and all(a is None or (a.dtype == np.float32 and a.flags.c_contiguous) for a in arrays)


def _address_of() -> Any:
    """The extension's ``address(array, offset)`` (buffer protocol: 0.07 us, where ``array.ctypes.data`` takes
    1.3 us, and a step makes ~150 such calls), or NumPy's way where the extension is not built."""
    try:
        from ._ckernels import address

        return address
    except ImportError:
        return lambda a, offset=0: a.ctypes.data + offset * a.itemsize


_address = _address_of()


def ptr(a: Any, offset: int = 0) -> int | None:
    """The address of element ``offset`` of a C-contiguous array's data (None for None). Through the extension
    (the only case in which kernels are called) an array that is not C-contiguous raises ValueError, and an
    offset past the end IndexError: a kernel reading such memory would compute the wrong numbers."""
    return None if a is None else _address(a, offset)
