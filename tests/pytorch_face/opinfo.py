"""The OpInfo table: one row per op of ``lucid_core._op_table``, each with sample inputs, written once.

As PyTorch's ``common_methods_invocations.py``: a row names the op, gives its samples (NumPy arrays stand for
tensors, with their dtypes; 0-d and empty shapes, broadcasting, integer and bool inputs where PyTorch
takes them) and says which forms to check (gradient, method, in-place ``name_``, ``out=``).
``fixtures/generate_opinfo.py`` runs every sample through PyTorch once; ``test_opinfo.py`` runs them through
``lucid`` and compares. Stdlib and NumPy only: neither torch nor lucid is imported here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

_rng = np.random.default_rng(1234)


def arr(*shape: int, lo: float = -2.0, hi: float = 2.0) -> np.ndarray:
    """Float64 values drawn once (seeded: the generator and the tests see the same inputs)."""
    return _rng.uniform(lo, hi, shape)


def ints(*shape: int, lo: int = -5, hi: int = 6) -> np.ndarray:
    return _rng.integers(lo, hi, shape).astype(np.int64)


A, B, C = arr(2, 3), arr(2, 3), arr(2, 3)
ROW = arr(3)  # broadcasts against A
S = np.array(0.7)  # 0-d
EMPTY = np.zeros((0, 3))
POS = arr(2, 3, lo=0.2, hi=3.0)
UNIT = arr(2, 3, lo=-0.9, hi=0.9)
OPEN01 = arr(2, 3, lo=0.05, hi=0.95)
I, J = ints(2, 3), ints(2, 3, lo=1, hi=6)
BOOL = np.array([[True, False, True], [False, False, True]])
NANS = np.array([[1.0, np.nan, -2.0, 0.5], [np.nan, np.nan, 3.0, -1.0], [0.25, 2.0, -0.5, 4.0]])
M34, M45, V4, V3 = arr(3, 4), arr(4, 5), arr(4), arr(3)
B234, B245 = arr(2, 3, 4), arr(2, 4, 5)
SORT = np.array([[0.3, -1.2, 2.5, 0.9, -0.4], [1.7, 0.2, -2.2, 0.6, 1.1]])  # distinct values: unique indices


@dataclass(frozen=True, eq=False)
class Sample:
    """One call: ``op(*args, **kwargs)``; ``full``: run only under the ``opinfo_full`` marker."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    full: bool = False


@dataclass(frozen=True, eq=False)
class OpInfo:
    """One op's row.

    Args:
        name: the op's PyTorch name (``torch.name`` / ``Tensor.name``).
        samples: the calls; the first one is used for the gradient, method, in-place and ``out=`` checks.
        grad: check float64 gradients against finite differences (an int: only that output).
        function: call ``torch.name`` (else the method ``args[0].name(*args[1:])``).
        method: check ``x.name(...)`` equals the function.
        inplace: check ``x.name_(...)``.
        out: check ``name(..., out=)``.
        rtol: relative tolerance against PyTorch.
        call: a custom call ``call(torch, *args, **kwargs)`` (for ops whose arguments are not tensors).
    """

    name: str
    samples: tuple[Sample, ...]
    grad: bool | int = True
    function: bool = True
    method: bool = True
    inplace: bool = False
    out: bool = False
    rtol: float = 1e-7
    call: Callable[..., Any] | None = None


def _s(*args: Any, full: bool = False, **kwargs: Any) -> Sample:
    return Sample(tuple(args), kwargs, full)


def unary(name: str, x: np.ndarray = A, *, grad: bool = True, inplace: bool = True, out: bool = True,
          extra: tuple[Sample, ...] = (), rtol: float = 1e-7, empty: bool = True) -> OpInfo:  # fmt: skip
    """An element-wise unary op: a 2-D sample, a 0-d one, an empty one (and ``extra``)."""
    samples = [_s(x), _s(np.array(x.flat[0])), *extra]
    if empty:
        samples.append(_s(EMPTY, full=True))
    return OpInfo(name, tuple(samples), grad=grad, inplace=inplace, out=out, rtol=rtol)


def binary(name: str, a: np.ndarray = A, b: np.ndarray = B, *, grad: bool = True, inplace: bool = True,
           out: bool = True, extra: tuple[Sample, ...] = (), rtol: float = 1e-7) -> OpInfo:  # fmt: skip
    """An element-wise binary op: same shapes, broadcasting a row, a 0-d operand."""
    samples = (
        _s(a, b),
        _s(a, b[0]),
        _s(a, np.array(b.flat[1])),
        _s(np.zeros((0, 3), a.dtype), np.zeros((0, 3), b.dtype), full=True),
        *extra,
    )
    return OpInfo(name, samples, grad=grad, inplace=inplace, out=out, rtol=rtol)


ROWS: tuple[OpInfo, ...] = (
    # -- element-wise, unary (new in the table, or new forms: in-place, out=) --------------------------------------
    unary("exp"),
    unary("expm1"),
    unary("log", POS),
    unary("log2", POS),
    unary("log10", POS),
    unary("log1p", POS),
    unary("sqrt", POS),
    unary("rsqrt", POS),
    unary("square"),
    unary("abs", extra=(_s(I),)),
    unary("absolute"),
    unary("sin"),
    unary("cos"),
    unary("tan", UNIT),
    unary("asin", UNIT),
    unary("arcsin", UNIT),
    unary("acos", UNIT),
    unary("arccos", UNIT),
    unary("atan"),
    unary("arctan"),
    unary("sinh"),
    unary("cosh"),
    unary("tanh"),
    unary("asinh"),
    unary("arcsinh"),
    unary("acosh", POS + 1),
    unary("arccosh", POS + 1),
    unary("atanh", UNIT),
    unary("arctanh", UNIT),
    unary("sigmoid"),
    unary("floor", grad=False),
    unary("ceil", grad=False),
    unary("round", grad=False),
    unary("trunc", grad=False),
    unary("fix", grad=False),
    unary("frac"),
    unary("reciprocal", POS),
    unary("neg", extra=(_s(I),)),
    unary("negative"),
    unary("sign", grad=False, extra=(_s(I),)),
    unary("sgn", grad=False),
    unary("erf"),
    unary("deg2rad", extra=(_s(I),)),
    unary("rad2deg"),
    unary("nan_to_num", NANS, grad=False),
    OpInfo(
        "nan_to_num",
        (_s(np.array([np.nan, np.inf, -np.inf, 1.0]), nan=2.0, posinf=9.0, neginf=-9.0),),
        grad=False,
        inplace=True,
        out=True,
    ),
    unary("positive", inplace=False, out=False),
    unary("angle", grad=False, inplace=False),
    unary("bitwise_not", I, grad=False, extra=(_s(BOOL),), empty=False),
    unary("logical_not", BOOL, grad=False, empty=False),
    unary("signbit", grad=False, inplace=False),
    unary("isposinf", np.array([np.inf, -np.inf, 1.0]), grad=False, inplace=False),
    unary("isneginf", np.array([np.inf, -np.inf, 1.0]), grad=False, inplace=False),
    unary("isreal", grad=False, inplace=False, out=False),
    unary("isnan", NANS, grad=False, inplace=False, out=False),
    unary("relu", out=False),
    # -- element-wise, binary --------------------------------------------------------------------------------------
    binary("add"),
    binary("sub"),
    binary("subtract"),
    binary("mul"),
    binary("multiply"),
    binary("div"),
    binary("divide"),
    binary("true_divide"),
    binary("floor_divide", grad=False),
    OpInfo("floor_divide", (_s(I, J),), grad=False, inplace=True, out=True),
    binary("pow", POS, B, extra=(_s(0.0, B), _s(2, J))),
    binary("float_power", POS, B),
    binary("remainder", A, POS, grad=False, extra=(_s(5.0, POS),)),
    binary("fmod", A, POS, grad=False),
    OpInfo("fmod", (_s(I, J), _s(-I, J)), grad=False, inplace=True, out=True),
    binary("atan2"),
    binary("arctan2"),
    binary("hypot"),
    binary("copysign", grad=False),
    OpInfo(
        "heaviside", (_s(np.array([-1.0, 0.0, 2.0]), np.array([0.5, 0.5, 0.5])),), grad=False, inplace=True, out=True
    ),
    binary("ldexp", A, np.array([[1.0, 2.0, 0.0], [-1.0, 3.0, 1.0]]), grad=False),
    binary("logaddexp", inplace=False),
    binary("logaddexp2", inplace=False),
    binary("maximum", inplace=False),
    binary("minimum", inplace=False),
    binary("fmax", NANS[:2, :3], B, inplace=False, grad=False),
    binary("fmin", NANS[:2, :3], B, inplace=False, grad=False),
    binary("eq", grad=False),
    binary("ne", grad=False),
    binary("not_equal", grad=False),
    binary("lt", grad=False),
    binary("less", grad=False),
    binary("le", grad=False),
    binary("less_equal", grad=False),
    binary("gt", grad=False),
    binary("greater", grad=False),
    binary("ge", grad=False),
    binary("greater_equal", grad=False),
    binary("logical_and", BOOL, BOOL[::-1].copy(), grad=False),
    binary("logical_or", BOOL, BOOL[::-1].copy(), grad=False),
    binary("logical_xor", BOOL, BOOL[::-1].copy(), grad=False),
    binary("bitwise_and", I, J, grad=False),
    binary("bitwise_or", I, J, grad=False),
    binary("bitwise_xor", I, J, grad=False),
    binary("bitwise_left_shift", J, np.array([[1, 2, 0], [3, 1, 2]]), grad=False),
    binary("bitwise_right_shift", J * 16, np.array([[1, 2, 0], [3, 1, 2]]), grad=False),
    OpInfo("clamp", (_s(A, -0.5, 0.5), _s(A, min=0.0), _s(A, max=0.1), _s(S, -1.0, 0.5)), inplace=True, out=True),
    OpInfo("clip", (_s(A, -0.5, 0.5),), inplace=True, out=True),
    OpInfo("clamp_min", (_s(A, 0.1), _s(A, ROW)), inplace=True, out=True),
    OpInfo("clamp_max", (_s(A, 0.1), _s(A, ROW)), inplace=True, out=True),
    OpInfo("lerp", (_s(A, B, 0.3), _s(A, B, C), _s(A, ROW, 0.5)), inplace=True, out=True),
    OpInfo("addcmul", (_s(A, B, C, value=0.5), _s(A, ROW, C), _s(S, B, C, full=True)), inplace=True, out=True),
    OpInfo("addcdiv", (_s(A, B, POS, value=-2.0), _s(A, ROW, POS)), inplace=True, out=True),
    # -- products ---------------------------------------------------------------------------------------------------
    OpInfo("mm", (_s(M34, M45),), out=True),
    OpInfo("matmul", (_s(B234, M45), _s(V4, M45)), out=True),
    OpInfo("bmm", (_s(B234, B245),), out=True),
    OpInfo("mv", (_s(M34, V4),), out=True),
    OpInfo("dot", (_s(V4, V4 * 2),), out=True),
    OpInfo("vdot", (_s(V3, V3 - 1),), out=True),
    OpInfo("inner", (_s(M34, arr(5, 4)), _s(V4, V4), _s(S, M34)), out=True),
    OpInfo("outer", (_s(V3, V4),), out=True),
    OpInfo("kron", (_s(arr(2, 2), arr(3, 2)), _s(V3, arr(2, 2))), out=True),
    OpInfo("addmm", (_s(arr(3, 5), M34, M45), _s(arr(5), M34, M45, beta=0.5, alpha=2.0)), inplace=True, out=True),
    OpInfo("addmv", (_s(V3, M34, V4, beta=2.0),), inplace=True, out=True),
    OpInfo("addbmm", (_s(arr(3, 5), B234, B245),), inplace=True, out=True),
    OpInfo("baddbmm", (_s(arr(2, 3, 5), B234, B245, alpha=0.5),), inplace=True, out=True),
    OpInfo("addr", (_s(M34, V3, V4),), inplace=True, out=True),
    OpInfo("tensordot", (_s(B234, arr(3, 4, 2)), _s(M34, M45, dims=([1], [0]))), method=False, out=True),
    # -- reductions ---------------------------------------------------------------------------------------------------
    OpInfo("sum", (_s(A), _s(A, 1), _s(A, (0, 1), keepdim=True), _s(S), _s(EMPTY, 0, full=True)), out=True),
    OpInfo("nansum", (_s(NANS), _s(NANS, 1), _s(NANS, 0, keepdim=True)), out=True),
    OpInfo("mean", (_s(A), _s(A, 0, True)), out=True),
    OpInfo("nanmean", (_s(NANS), _s(NANS, 1)), out=True, grad=False),
    OpInfo("prod", (_s(A), _s(A, 1)), out=True),
    OpInfo("var", (_s(A), _s(A, 1), _s(A, 1, correction=0))),
    OpInfo("std", (_s(A), _s(A, 0))),
    OpInfo("var_mean", method=False, samples=(_s(A), _s(A, 1), _s(A, 1, correction=0, keepdim=True))),
    OpInfo("std_mean", (_s(A), _s(A, 0)), method=False),
    OpInfo("logsumexp", (_s(A, 1), _s(A, (0, 1))), out=True),
    OpInfo("amax", (_s(A), _s(A, 1)), out=True),
    OpInfo("amin", (_s(A, 0),), out=True),
    OpInfo("aminmax", (_s(A), _s(A, dim=1), _s(A, dim=0, keepdim=True))),
    OpInfo("median", (_s(SORT), _s(SORT, 1), _s(SORT, 0, True), _s(np.array([1.0, np.nan, 0.5])), _s(NANS, 1)), grad=0),
    OpInfo("nanmedian", (_s(NANS), _s(NANS, 1), _s(NANS, 0)), grad=False),
    OpInfo("kthvalue", (_s(SORT, 2), _s(SORT, 1, 0), _s(SORT, 3, 1, True)), grad=0),
    OpInfo(
        "quantile",
        (
            _s(SORT, 0.3),
            _s(SORT, 0.5, 1),
            _s(SORT, np.array([0.1, 0.9]), 1, True),
            _s(SORT, 0.4, 0, interpolation="lower"),
            _s(SORT, 0.4, 1, interpolation="higher"),
            _s(SORT, 0.4, 1, interpolation="midpoint"),
            _s(SORT, 0.4, 1, interpolation="nearest"),
        ),
        out=True,
    ),
    OpInfo("nanquantile", (_s(NANS, 0.3), _s(NANS, 0.5, 1), _s(NANS, np.array([0.25, 0.75]), 0)), grad=False, out=True),
    OpInfo("cumsum", (_s(A, 1), _s(A, 0)), inplace=True, out=True),
    OpInfo("cumprod", (_s(A, 1),), inplace=True, out=True),
    OpInfo("cummax", (_s(SORT, 1), _s(np.array([1.0, 3.0, 3.0, 2.0, 5.0]), 0)), grad=0),
    OpInfo("cummin", (_s(SORT, 1), _s(SORT, 0)), grad=0),
    OpInfo("logcumsumexp", (_s(A, 1), _s(A, 0)), out=True),
    OpInfo("dist", (_s(A, B), _s(A, B, 1), _s(A, ROW, 3))),
    OpInfo("renorm", (_s(M34, 2, 0, 1.0), _s(M34, 1, 1, 0.5)), inplace=True),
    OpInfo("trace", (_s(M34),)),
    OpInfo("cov", (_s(M34), _s(M34, correction=0), _s(V4))),
    OpInfo("corrcoef", (_s(M34),)),
    OpInfo("trapezoid", (_s(A), _s(A, dx=0.5), _s(A, ROW), _s(A, dim=0)), method=False),
    OpInfo("trapz", (_s(A),), method=False),
    OpInfo("cumulative_trapezoid", (_s(A), _s(A, dx=0.5, dim=0), _s(A, ROW)), method=False),
    # -- sorting and searching --------------------------------------------------------------------------------------
    OpInfo("msort", (_s(SORT),), out=True),
    OpInfo("argwhere", (_s(I), _s(BOOL)), grad=False),
    OpInfo("nonzero", (_s(I), _s(BOOL), _s(I, as_tuple=True)), grad=False),
    OpInfo(
        "bincount",
        (
            _s(np.array([0, 3, 1, 3, 3])),
            _s(np.array([0, 2, 2]), np.array([0.5, 1.0, 2.0])),
            _s(np.array([1, 1]), minlength=4),
        ),
        grad=False,
    ),
    OpInfo("histc", (_s(A, 4), _s(A, 5, -1.0, 1.0)), grad=False, out=True),
    OpInfo(
        "bucketize",
        (_s(A, np.array([-1.0, 0.0, 1.0])), _s(A, np.array([-1.0, 0.0, 1.0]), right=True)),
        grad=False,
        method=False,
        out=True,
    ),
    OpInfo(
        "unique_consecutive",
        (
            _s(np.array([1, 1, 2, 2, 3, 1, 1, 2])),
            _s(np.array([1, 1, 2, 2, 3, 1]), return_inverse=True, return_counts=True),
        ),
        grad=False,
    ),
    OpInfo("isclose", (_s(A, A + 1e-9), _s(A, B, atol=1.0)), grad=False),
    OpInfo("allclose", (_s(A, A + 1e-9), _s(A, B)), grad=False),
    OpInfo("equal", (_s(A, A), _s(A, B)), grad=False),
    OpInfo("is_nonzero", (_s(np.array([2.0])), _s(np.array(0.0))), grad=False),
    OpInfo("is_same_size", (_s(A, B), _s(A, ROW)), grad=False),
    OpInfo("numel", (_s(A), _s(EMPTY)), grad=False, method=False),
    # -- shapes -----------------------------------------------------------------------------------------------------
    OpInfo("ravel", (_s(A), _s(S))),
    OpInfo("tile", (_s(A, (2,)), _s(A, (2, 1, 2)))),
    OpInfo("broadcast_to", (_s(ROW, (2, 3)), _s(A, (4, -1, 3)))),
    OpInfo("repeat_interleave", (_s(A, 2), _s(A, 2, 1), _s(A, np.array([1, 2]), 0))),
    OpInfo("take_along_dim", (_s(SORT, np.array([[0, 4], [1, 2]]), 1), _s(SORT, np.array([3, 7]))), out=True),
    OpInfo("vsplit", (_s(arr(4, 3), 2), _s(arr(4, 3), [1, 3]))),
    OpInfo("hsplit", (_s(arr(3, 4), 2), _s(V4, 2))),
    OpInfo("dsplit", (_s(arr(2, 2, 4), [1]),)),
    OpInfo("fliplr", (_s(A),)),
    OpInfo("flipud", (_s(A),)),
    OpInfo("rot90", (_s(A), _s(A, 2), _s(A, -1), _s(B234, 1, [1, 2]))),
    OpInfo("tril", (_s(M34), _s(M34, 1), _s(B234, -1)), inplace=True, out=True),
    OpInfo("triu", (_s(M34), _s(M34, -1)), inplace=True, out=True),
    OpInfo("diff", (_s(A), _s(A, 2, 0), _s(A, 1, -1, ROW[None, :1].repeat(2, 0)))),
    OpInfo("diag", (_s(V3), _s(V3, 1), _s(V3, -2), _s(M34), _s(M34, 1)), out=True),
    OpInfo("diag_embed", (_s(A), _s(A, 1), _s(A, -1, 0, 2))),
    OpInfo("diagflat", (_s(A), _s(V3, 1))),
    OpInfo("take", (_s(A, np.array([0, 5, -1])), _s(A, np.array([[1, 2], [3, 4]]))), out=True),
    OpInfo("atleast_1d", (_s(S), _s(A)), method=False),
    OpInfo("atleast_2d", (_s(S), _s(V3)), method=False),
    OpInfo("atleast_3d", (_s(S), _s(V3), _s(A)), method=False),
    OpInfo("column_stack", (_s([V3, V3]), _s([A.T, V3])), grad=False, method=False, out=True),
    OpInfo("row_stack", (_s([V3, V3]), _s([A, ROW])), grad=False, method=False, out=True),
    OpInfo("dstack", (_s([V3, V3]), _s([A, B])), grad=False, method=False, out=True),
    OpInfo("block_diag", (_s(A, V3, S),), method=False),
    OpInfo("cartesian_prod", (_s(V3, arr(2)),), method=False),
    OpInfo("combinations", (_s(V4), _s(V4, 3), _s(V3, 2, True)), method=False),
    OpInfo("broadcast_tensors", (_s(A, ROW, S),), method=False),
    OpInfo("broadcast_shapes", (_s((2, 1), (3,)), _s((1, 4), (5, 1, 1))), grad=False, method=False),
    OpInfo("tril_indices", (_s(3, 4), _s(4, 3, 1), _s(3, 3, -1)), grad=False, method=False),
    OpInfo("triu_indices", (_s(3, 4), _s(4, 3, 1)), grad=False, method=False),
    # -- indexing ---------------------------------------------------------------------------------------------------
    OpInfo("scatter", (_s(M34, 1, np.array([[0, 2], [1, 3], [3, 0]]), arr(3, 2)),), inplace=True, out=True),
    OpInfo("scatter_add", (_s(M34, 0, np.array([[0, 2, 1, 0]]), arr(1, 4)),), inplace=True, out=True),
    OpInfo(
        "scatter_reduce",
        (
            _s(V4, 0, np.array([0, 1, 0, 1, 2]), arr(5), "sum"),
            _s(V4, 0, np.array([0, 1, 0, 1, 2]), arr(5), "amax"),
            _s(V4, 0, np.array([0, 1, 0, 1, 2]), arr(5), "amin", include_self=False),
            _s(V4, 0, np.array([0, 1, 0, 1, 2]), arr(5), "prod"),
            _s(V4, 0, np.array([0, 1, 0, 1, 2]), arr(5), "mean", include_self=False),
        ),
        grad=False,
        inplace=True,
        out=True,
    ),
    OpInfo("index_add", (_s(M34, 0, np.array([0, 2]), arr(2, 4)),), inplace=True, out=True),
    OpInfo("index_fill", (_s(M34, 1, np.array([0, 2]), -1.0),), inplace=True),
    OpInfo("index_copy", (_s(M34, 0, np.array([2, 0]), arr(2, 4)),), inplace=True, out=True),
    OpInfo(
        "index_put",
        (
            _s(M34, (np.array([0, 2]), np.array([1, 3])), np.array([5.0, 6.0])),
            _s(M34, (np.array([0, 0]), np.array([1, 1])), np.array([5.0, 6.0]), True),
        ),
        inplace=True,
    ),
    OpInfo("masked_fill", (_s(A, BOOL, 0.5),), inplace=True),
    OpInfo("masked_scatter", (_s(A, BOOL, arr(6)),), inplace=True),
    # conjugates and queries (real inputs: PyTorch's conj of a real tensor is the tensor)
    OpInfo("conj", (_s(A), _s(S))),
    OpInfo("conj_physical", (_s(A), _s(EMPTY)), inplace=True, out=True),
    OpInfo("resolve_conj", (_s(A),)),
    OpInfo("resolve_neg", (_s(A),)),
    OpInfo("adjoint", (_s(M34), _s(B234))),
    OpInfo("split_with_sizes", (_s(M34, [1, 2]), _s(M34, [3, 1], 1))),
    OpInfo("is_signed", (_s(A), _s(BOOL)), grad=False),
    OpInfo("is_conj", (_s(A),), grad=False),
    OpInfo("is_neg", (_s(A),), grad=False),
    OpInfo("get_device", (_s(A),), grad=False),
)

#: table ops checked against PyTorch elsewhere (tests/pytorch_face/fixtures/face_cases.py and the core suite)
COVERED_ELSEWHERE = frozenset(
    "max min argmax argmin all any norm count_nonzero sort argsort topk split chunk unbind flatten unflatten "
    "permute transpose swapdims swapaxes t squeeze unsqueeze gather index_select masked_select softmax log_softmax "
    "is_floating_point is_complex narrow select diagonal as_strided tensor_split movedim moveaxis isinf isfinite "
    "clip clamp".split()
)


def rows_by_name() -> dict[str, list[OpInfo]]:
    """The rows, grouped by op name (an op may have several rows)."""
    out: dict[str, list[OpInfo]] = {}
    for row in ROWS:
        out.setdefault(row.name, []).append(row)
    return out


def row_id(row: OpInfo) -> str:
    """A stable id for a row: its name, numbered when the op has several rows."""
    same = [r for r in ROWS if r.name == row.name]
    return row.name if len(same) == 1 else f"{row.name}#{next(i for i, r in enumerate(same) if r is row)}"


def convert(value: Any, tensor: Callable[[np.ndarray], Any]) -> Any:
    """A sample's argument for a framework: arrays become tensors (``tensor(array)``), inside lists too."""
    if isinstance(value, np.ndarray):
        return tensor(value)
    if isinstance(value, list) and any(isinstance(v, np.ndarray) for v in value):
        return [convert(v, tensor) for v in value]
    if isinstance(value, tuple) and any(isinstance(v, np.ndarray) for v in value):
        return tuple(convert(v, tensor) for v in value)
    return value


def invoke(torch: Any, row: OpInfo, sample: Sample, tensor: Callable[[np.ndarray], Any]) -> Any:
    """Run ``sample`` through ``torch`` (PyTorch or lucid): the function, else the method."""
    args = [convert(a, tensor) for a in sample.args]
    kwargs = {k: convert(v, tensor) for k, v in sample.kwargs.items()}
    if row.call is not None:
        return row.call(torch, *args, **kwargs)
    if row.function:
        return getattr(torch, row.name)(*args, **kwargs)
    return getattr(args[0], row.name)(*args[1:], **kwargs)


def flat_results(value: Any, to_numpy: Callable[[Any], np.ndarray]) -> list[np.ndarray]:
    """A result as a list of arrays (tuples and named tuples flattened; numbers and shapes as arrays)."""
    if isinstance(value, (tuple, list)) and value and not all(isinstance(v, int) for v in value):
        return [a for v in value for a in flat_results(v, to_numpy)]
    if isinstance(value, (bool, int, float)) or (isinstance(value, tuple) and not value):
        return [np.asarray(value)]
    if isinstance(value, tuple) or isinstance(value, list):
        return [np.asarray(value, dtype=np.int64)]
    return [to_numpy(value)]
