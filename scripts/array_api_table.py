"""Generate docs/array-api.md: every name of the Array API standard (2024.12) and its status per backend.

The status is found by calling each function on each installed backend with small inputs, not
written by hand; signatures are compared with array-api-strict's when it is installed. The totals of
the public test suite (data-apis/array-api-tests) come from docs/array-api-suite.json, which
``--record-suite`` writes from the suite's pytest-json-report output (see SUITE_STEPS for the run).

    python scripts/array_api_table.py            # writes docs/array-api.md
    python scripts/array_api_table.py --check    # exits 1 when the file is out of date
    # store the totals of a run of the public suite (its pytest-json-report), then write the page:
    python scripts/array_api_table.py --record-suite report.json --suite-checkout ../array-api-tests
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import inspect
import json
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lucid_core as lc

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "array-api.md"
SUITE = ROOT / "docs" / "array-api-suite.json"

# How the public suite is run (its checkout stays outside this repository). The totals in SUITE come
# from the last run of exactly this, on the numpy backend (lucid_core's default device).
SUITE_VERSION = "2025.12"


def suite_command(max_examples: int | None = None) -> str:
    """The suite's command line (``max_examples``: Hypothesis examples per test, its default 100 when None)."""
    examples = "" if max_examples is None else f" --max-examples={max_examples}"
    return (
        f"ARRAY_API_TESTS_MODULE=lucid_core ARRAY_API_TESTS_VERSION={SUITE_VERSION} "
        f"python -m pytest array_api_tests -q -p no:cacheprovider{examples} --disable-deadline "
        "--json-report --json-report-file=report.json"
    )


SUITE_COMMAND = suite_command()
SUITE_STEPS: list[tuple[str, str]] = [
    (
        "git clone --recurse-submodules https://github.com/data-apis/array-api-tests.git",
        "outside this repository; its `array-api` submodule is the spec it tests against; check out the "
        "commit named above to compare totals",
    ),
    ("pip install -r array-api-tests/requirements.txt", "into the environment where Lucid is installed"),
    (
        f"cd array-api-tests && {SUITE_COMMAND}",
        "Hypothesis's default 100 examples per test (`--max-examples=N` for a quicker run); no deadline, since "
        "timings on a loaded machine say nothing about conformance; `-k NAME` runs a part while fixing",
    ),
    (
        "python scripts/array_api_table.py --record-suite array-api-tests/report.json --suite-checkout array-api-tests",
        "from this repository, adding `--suite-max-examples N` if step 3 used it: writes "
        "docs/array-api-suite.json and regenerates this page",
    ),
]

# The 2024.12 standard, by section. Each probe gets (namespace, device) and calls the name.
F = "float64"


def _x(xp: Any, dev: Any, v: Any = (0.5, 1.5, -2.0), dtype: str = F) -> Any:
    return lc.asarray(list(v) if isinstance(v, tuple) else v, dtype=getattr(lc, dtype), device=dev)


def _m(xp: Any, dev: Any) -> Any:
    return lc.asarray([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]], dtype=lc.float64, device=dev)


def _i(xp: Any, dev: Any) -> Any:
    return lc.asarray([3, 1, 2, 3], dtype=lc.int64, device=dev)


UNARY_FLOAT = """abs acos acosh asin asinh atan atanh ceil conj cos cosh exp expm1 floor imag isfinite isinf isnan
log log1p log2 log10 negative positive real reciprocal round sign signbit sin sinh sqrt square tan tanh trunc""".split()
BINARY_FLOAT = """add atan2 copysign divide equal floor_divide greater greater_equal hypot less less_equal logaddexp
maximum minimum multiply nextafter not_equal pow remainder subtract""".split()
BINARY_INT = "bitwise_and bitwise_left_shift bitwise_or bitwise_right_shift bitwise_xor".split()
LOGICAL = "logical_and logical_or logical_xor".split()

_ACOSH_SAFE = {"acosh": (1.5, 2.0), "acos": (0.5, -0.5), "asin": (0.5, -0.5), "atanh": (0.5, -0.5)}

PROBES: dict[str, dict[str, Callable[[Any, Any], Any]]] = {
    "Constants": {n: (lambda xp, dev, n=n: getattr(xp, n)) for n in ("e", "inf", "nan", "newaxis", "pi")},
    "Data types": {
        n: (lambda xp, dev, n=n: xp.zeros(1, dtype=getattr(xp, n), device=dev))
        for n in "bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64 complex64 complex128".split()
    },
    "Data type functions": {
        "astype": lambda xp, dev: xp.astype(_x(xp, dev), xp.float32),
        "can_cast": lambda xp, dev: xp.can_cast(xp.int8, xp.int16),
        "finfo": lambda xp, dev: xp.finfo(xp.float32).eps,
        "iinfo": lambda xp, dev: xp.iinfo(xp.uint16).max,
        "isdtype": lambda xp, dev: xp.isdtype(xp.float32, "real floating"),
        "result_type": lambda xp, dev: xp.result_type(xp.int8, xp.uint8, 1),
    },
    "Creation functions": {
        "arange": lambda xp, dev: xp.arange(0, 5, 2, device=dev),
        "asarray": lambda xp, dev: xp.asarray([1, 2], device=dev),
        "empty": lambda xp, dev: xp.empty((2, 2), device=dev),
        "empty_like": lambda xp, dev: xp.empty_like(_x(xp, dev)),
        "eye": lambda xp, dev: xp.eye(2, 3, k=1, device=dev),
        "from_dlpack": lambda xp, dev: xp.from_dlpack(_x(xp, dev)),
        "full": lambda xp, dev: xp.full((2,), 3.0, device=dev),
        "full_like": lambda xp, dev: xp.full_like(_x(xp, dev), 1.0),
        "linspace": lambda xp, dev: xp.linspace(0.0, 1.0, 5, device=dev),
        "meshgrid": lambda xp, dev: xp.meshgrid(_x(xp, dev), _x(xp, dev), indexing="ij"),
        "ones": lambda xp, dev: xp.ones((2,), device=dev),
        "ones_like": lambda xp, dev: xp.ones_like(_x(xp, dev)),
        "tril": lambda xp, dev: xp.tril(_m(xp, dev), k=-1),
        "triu": lambda xp, dev: xp.triu(_m(xp, dev), k=1),
        "zeros": lambda xp, dev: xp.zeros((2,), device=dev),
        "zeros_like": lambda xp, dev: xp.zeros_like(_x(xp, dev)),
    },
    "Element-wise functions": {
        **{n: (lambda xp, dev, n=n: getattr(xp, n)(_x(xp, dev, _ACOSH_SAFE.get(n, (0.5, 1.5))))) for n in UNARY_FLOAT},
        **{n: (lambda xp, dev, n=n: getattr(xp, n)(_x(xp, dev), _x(xp, dev, (1.0, 2.0, 3.0)))) for n in BINARY_FLOAT},
        **{n: (lambda xp, dev, n=n: getattr(xp, n)(_i(xp, dev), _i(xp, dev))) for n in BINARY_INT},
        **{n: (lambda xp, dev, n=n: getattr(xp, n)(_i(xp, dev) > 1, _i(xp, dev) > 2)) for n in LOGICAL},
        "bitwise_invert": lambda xp, dev: xp.bitwise_invert(_i(xp, dev)),
        "logical_not": lambda xp, dev: xp.logical_not(_i(xp, dev) > 1),
        "clip": lambda xp, dev: xp.clip(_x(xp, dev), min=0.0, max=1.0),
    },
    "Indexing functions": {
        "take": lambda xp, dev: xp.take(_x(xp, dev), _i(xp, dev) - 1, axis=0),
        "take_along_axis": lambda xp, dev: xp.take_along_axis(_m(xp, dev), xp.argsort(_m(xp, dev), axis=1), axis=1),
    },
    "Inspection": {
        "__array_namespace_info__": lambda xp, dev: (
            xp.__array_namespace_info__().capabilities(),
            xp.__array_namespace_info__().default_dtypes(device=dev),
            xp.__array_namespace_info__().dtypes(device=dev, kind="numeric"),
            xp.__array_namespace_info__().devices(),
            xp.__array_namespace_info__().default_device(),
        ),
    },
    "Linear algebra functions": {
        "matmul": lambda xp, dev: xp.matmul(_m(xp, dev), _m(xp, dev)),
        "matrix_transpose": lambda xp, dev: xp.matrix_transpose(_m(xp, dev)),
        "tensordot": lambda xp, dev: xp.tensordot(_m(xp, dev), _m(xp, dev), axes=1),
        "vecdot": lambda xp, dev: xp.vecdot(_m(xp, dev), _m(xp, dev)),
    },
    "Manipulation functions": {
        "broadcast_arrays": lambda xp, dev: xp.broadcast_arrays(_x(xp, dev), _m(xp, dev)),
        "broadcast_to": lambda xp, dev: xp.broadcast_to(_x(xp, dev), (2, 3)),
        "concat": lambda xp, dev: xp.concat([_x(xp, dev), _x(xp, dev)], axis=0),
        "expand_dims": lambda xp, dev: xp.expand_dims(_x(xp, dev), axis=0),
        "flip": lambda xp, dev: xp.flip(_m(xp, dev), axis=1),
        "moveaxis": lambda xp, dev: xp.moveaxis(_m(xp, dev), 0, 1),
        "permute_dims": lambda xp, dev: xp.permute_dims(_m(xp, dev), (1, 0)),
        "repeat": lambda xp, dev: xp.repeat(_x(xp, dev), 2),
        "reshape": lambda xp, dev: xp.reshape(_m(xp, dev), (9,)),
        "roll": lambda xp, dev: xp.roll(_x(xp, dev), 1),
        "squeeze": lambda xp, dev: xp.squeeze(xp.expand_dims(_x(xp, dev), axis=0), axis=0),
        "stack": lambda xp, dev: xp.stack([_x(xp, dev), _x(xp, dev)], axis=1),
        "tile": lambda xp, dev: xp.tile(_x(xp, dev), (2,)),
        "unstack": lambda xp, dev: xp.unstack(_m(xp, dev), axis=1),
    },
    "Searching functions": {
        "argmax": lambda xp, dev: xp.argmax(_m(xp, dev), axis=0),
        "argmin": lambda xp, dev: xp.argmin(_m(xp, dev), axis=0, keepdims=True),
        "count_nonzero": lambda xp, dev: xp.count_nonzero(_i(xp, dev) - 1),
        "nonzero": lambda xp, dev: xp.nonzero(_i(xp, dev) - 1),
        "searchsorted": lambda xp, dev: xp.searchsorted(_x(xp, dev, (0.0, 1.0, 2.0)), _x(xp, dev), side="right"),
        "where": lambda xp, dev: xp.where(_x(xp, dev) > 0, _x(xp, dev), 0.0),
    },
    "Set functions": {
        n: (lambda xp, dev, n=n: getattr(xp, n)(_i(xp, dev)))
        for n in ("unique_all", "unique_counts", "unique_inverse", "unique_values")
    },
    "Sorting functions": {
        "argsort": lambda xp, dev: xp.argsort(_x(xp, dev), descending=True, stable=True),
        "sort": lambda xp, dev: xp.sort(_x(xp, dev), descending=True),
    },
    "Statistical functions": {
        "cumulative_prod": lambda xp, dev: xp.cumulative_prod(_x(xp, dev), include_initial=True),
        "cumulative_sum": lambda xp, dev: xp.cumulative_sum(_x(xp, dev), include_initial=True),
        "max": lambda xp, dev: xp.max(_m(xp, dev), axis=0),
        "mean": lambda xp, dev: xp.mean(_m(xp, dev), axis=(0, 1)),
        "min": lambda xp, dev: xp.min(_m(xp, dev), keepdims=True),
        "prod": lambda xp, dev: xp.prod(_i(xp, dev), dtype=xp.int64),
        "std": lambda xp, dev: xp.std(_m(xp, dev), correction=1),
        "sum": lambda xp, dev: xp.sum(_i(xp, dev), dtype=xp.float64),
        "var": lambda xp, dev: xp.var(_m(xp, dev), axis=1, correction=1),
    },
    "Utility functions": {
        "all": lambda xp, dev: xp.all(_x(xp, dev) > 0),
        "any": lambda xp, dev: xp.any(_x(xp, dev) > 0, axis=0),
        "diff": lambda xp, dev: xp.diff(_x(xp, dev), n=1),
    },
}

_SPD = lambda xp, dev: _m(xp, dev)  # noqa: E731
LINALG: dict[str, Callable[[Any, Any], Any]] = {
    "cholesky": lambda la, dev: la.cholesky(_SPD(la, dev)),
    "cross": lambda la, dev: la.cross(_m(la, dev), _m(la, dev)),
    "det": lambda la, dev: la.det(_m(la, dev)),
    "diagonal": lambda la, dev: la.diagonal(_m(la, dev), offset=1),
    "eigh": lambda la, dev: la.eigh(_m(la, dev)),
    "eigvalsh": lambda la, dev: la.eigvalsh(_m(la, dev)),
    "inv": lambda la, dev: la.inv(_m(la, dev)),
    "matmul": lambda la, dev: la.matmul(_m(la, dev), _m(la, dev)),
    "matrix_norm": lambda la, dev: la.matrix_norm(_m(la, dev), ord="nuc"),
    "matrix_power": lambda la, dev: la.matrix_power(_m(la, dev), 3),
    "matrix_rank": lambda la, dev: la.matrix_rank(_m(la, dev)),
    "matrix_transpose": lambda la, dev: la.matrix_transpose(_m(la, dev)),
    "outer": lambda la, dev: la.outer(_x(la, dev), _x(la, dev)),
    "pinv": lambda la, dev: la.pinv(_m(la, dev)),
    "qr": lambda la, dev: la.qr(_m(la, dev)),
    "slogdet": lambda la, dev: la.slogdet(_m(la, dev)),
    "solve": lambda la, dev: la.solve(_m(la, dev), _x(la, dev)),
    "svd": lambda la, dev: la.svd(_m(la, dev), full_matrices=False),
    "svdvals": lambda la, dev: la.svdvals(_m(la, dev)),
    "tensordot": lambda la, dev: la.tensordot(_m(la, dev), _m(la, dev)),
    "trace": lambda la, dev: la.trace(_m(la, dev)),
    "vecdot": lambda la, dev: la.vecdot(_m(la, dev), _m(la, dev)),
    "vector_norm": lambda la, dev: la.vector_norm(_m(la, dev), ord=3),
}

_C = lambda dev: lc.asarray([1 + 1j, 2.0, -1j, 0.5], dtype=lc.complex64, device=dev)  # noqa: E731
_R = lambda dev: lc.asarray([1.0, 2.0, -1.0, 0.5], dtype=lc.float32, device=dev)  # noqa: E731
FFT: dict[str, Callable[[Any, Any], Any]] = {
    "fft": lambda f, dev: f.fft(_C(dev), n=6),
    "ifft": lambda f, dev: f.ifft(_C(dev), norm="ortho"),
    "fftn": lambda f, dev: f.fftn(_C(dev)),
    "ifftn": lambda f, dev: f.ifftn(_C(dev), norm="forward"),
    "rfft": lambda f, dev: f.rfft(_R(dev)),
    "irfft": lambda f, dev: f.irfft(_C(dev)),
    "rfftn": lambda f, dev: f.rfftn(_R(dev)),
    "irfftn": lambda f, dev: f.irfftn(_C(dev)),
    "hfft": lambda f, dev: f.hfft(_C(dev)),
    "ihfft": lambda f, dev: f.ihfft(_R(dev)),
    "fftfreq": lambda f, dev: f.fftfreq(5, d=0.1, device=dev),
    "rfftfreq": lambda f, dev: f.rfftfreq(5, device=dev),
    "fftshift": lambda f, dev: f.fftshift(_R(dev)),
    "ifftshift": lambda f, dev: f.ifftshift(_R(dev)),
}

_ARR = lambda dev: lc.asarray([[1.0, 2.0], [3.0, 4.0]], dtype=lc.float64, device=dev)  # noqa: E731
_ARRI = lambda dev: lc.asarray([[1, 2], [3, 4]], dtype=lc.int64, device=dev)  # noqa: E731
_ONE = lambda dev: lc.asarray(2.0, dtype=lc.float64, device=dev)  # noqa: E731
_ARITH = "add sub mul truediv floordiv mod pow matmul".split()
_BITS = "and or xor lshift rshift".split()
_CMP = "eq ne lt le gt ge".split()


def _method(name: str, make: Callable[[Any], Any], *args: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda dev: getattr(make(dev), name)(*(a(dev) for a in args))


ARRAY: dict[str, Callable[[Any], Any]] = {
    **{a: (lambda dev, a=a: getattr(_ARR(dev), a)) for a in ("dtype", "device", "mT", "ndim", "shape", "size", "T")},
    **{f"__{o}__": _method(f"__{o}__", _ARR, _ARR) for o in _ARITH + _CMP},
    **{f"__r{o}__": _method(f"__r{o}__", _ARR, _ARR) for o in _ARITH},
    **{f"__i{o}__": _method(f"__i{o}__", lambda d: _ARR(d) * 1, _ARR) for o in _ARITH},
    **{f"__{o}__": _method(f"__{o}__", _ARRI, _ARRI) for o in _BITS},
    **{f"__r{o}__": _method(f"__r{o}__", _ARRI, _ARRI) for o in _BITS},
    **{f"__i{o}__": _method(f"__i{o}__", lambda d: _ARRI(d) * 1, _ARRI) for o in _BITS},
    **{f"__{o}__": _method(f"__{o}__", _ARR) for o in ("abs", "neg", "pos")},
    "__invert__": _method("__invert__", _ARRI),
    **{f"__{o}__": _method(f"__{o}__", _ONE) for o in ("bool", "float", "complex")},
    "__int__": _method("__int__", lambda d: lc.asarray(2, device=d)),
    "__index__": _method("__index__", lambda d: lc.asarray(2, device=d)),
    "__array_namespace__": _method("__array_namespace__", _ARR),
    "__dlpack__": _method("__dlpack__", _ARR),
    "__dlpack_device__": _method("__dlpack_device__", _ARR),
    "__getitem__": lambda dev: _ARR(dev)[0, ...],
    "__setitem__": lambda dev: _ARR(dev).__setitem__((0, 1), 5.0),
    "to_device": lambda dev: _ARR(dev).to_device(dev),
}


def _status(call: Callable[[], Any]) -> str:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = call()
            for t in out if isinstance(out, (tuple, list)) else (out,):
                if isinstance(t, lc.Tensor):
                    lc.eval(t)
                    t.tolist()
    except NotImplementedError as e:
        return f"not supported ({_short(e)})"
    except AttributeError as e:
        return f"missing ({_short(e)})"
    except Exception as e:  # noqa: BLE001 - the table records every failure
        return f"error: {type(e).__name__}: {_short(e)}"
    return "ok"


def _short(e: BaseException) -> str:
    msg = str(e).splitlines()[0] if str(e) else type(e).__name__
    return (msg[:90] + "...") if len(msg) > 90 else msg.replace("|", "/")


def _signature_note(ours: Any, ref: Any) -> str:
    """Differences in parameter names and kinds (positional-only, keyword-only) from array-api-strict."""
    try:
        a, b = inspect.signature(ours), inspect.signature(ref)
    except (TypeError, ValueError):
        return ""
    pa = [(p.name, p.kind) for p in a.parameters.values()]
    pb = [(p.name, p.kind) for p in b.parameters.values()]
    if pa == pb:
        return ""
    return f"signature `{_fmt(a)}` (standard: `{_fmt(b)}`)"


def _fmt(sig: inspect.Signature) -> str:
    return str(
        sig.replace(
            return_annotation=inspect.Signature.empty,
            parameters=[
                p.replace(
                    annotation=inspect.Parameter.empty,
                    default=inspect.Parameter.empty if p.default is inspect.Parameter.empty else ...,
                )
                for p in sig.parameters.values()
            ],
        )
    ).replace("=Ellipsis", "=…")


def _reference() -> Any:
    try:
        return importlib.import_module("array_api_strict")
    except ImportError:
        return None


def _sub(ns: Any, name: str) -> Any:
    try:
        return importlib.import_module(f"{ns.__name__}.{name}")
    except ImportError:
        return getattr(ns, name, None)


def record_suite(report: Path, checkout: Path | None, max_examples: int | None = None) -> dict[str, Any]:
    """Totals and failures of a pytest-json-report run of array-api-tests, as stored in SUITE."""
    data = json.loads(report.read_text())
    summary = data["summary"]
    commit = None
    if checkout is not None:
        commit = subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    failed = sorted(t["nodeid"].split("array_api_tests/")[-1] for t in data["tests"] if t["outcome"] == "failed")
    when = datetime.datetime.fromtimestamp(data["created"], tz=datetime.timezone.utc)
    return {
        "suite": "data-apis/array-api-tests",
        "suite_commit": commit,
        "api_version": SUITE_VERSION,
        "module": "lucid_core",
        "backend": "numpy",
        "date": when.strftime("%Y-%m-%d %H:%M UTC"),
        "command": suite_command(max_examples),
        "passed": summary.get("passed", 0),
        "failed": summary.get("failed", 0),
        "skipped": summary.get("skipped", 0),
        "total": summary.get("total", 0),
        "failures": failed,
    }


def suite_section() -> list[str]:
    """The public suite's totals (from SUITE) and how to reproduce them."""
    lines = ["## Public test suite (data-apis/array-api-tests)", ""]
    if SUITE.exists():
        r = json.loads(SUITE.read_text())
        commit = f" at commit `{r['suite_commit'][:12]}`" if r.get("suite_commit") else ""
        lines += [
            f"**{r['passed']} passed, {r['failed']} failed, {r['skipped']} skipped** ({r['total']} tests) — "
            f"API {r['api_version']}, module `{r['module']}` on the {r['backend']} backend, {r['date']}, "
            f"{r['suite']}{commit}.",
            "",
            f"Command: `{r['command']}`",
            "",
        ]
        if r["failures"]:
            lines += ["Failing tests in that run:", ""] + [f"- `{f}`" for f in r["failures"]] + [""]
    else:
        lines += ["Not run yet (no docs/array-api-suite.json).", ""]
    lines += ["To reproduce (the suite is not vendored here):", ""]
    lines += [f"{i}. `{command}` ({note})" for i, (command, note) in enumerate(SUITE_STEPS, 1)]
    return [*lines, ""]


def build() -> str:
    """The Markdown table, computed from the installed backends."""
    backends = [b.name for b in lc.backends() if b.status == "ok"]
    devices = {b: lc.get_backend(b).default_device for b in backends}
    ref = _reference()
    lines = [
        "# Array API conformance (2024.12)",
        "",
        "Generated by `python scripts/array_api_table.py` from the namespace itself: each name is called on",
        "each installed backend with small inputs (`ok` = it ran and produced values). `not supported` is a",
        "clear `NotImplementedError` from a backend that lacks the feature; `missing` means `lucid_core` does not",
        "export the name. Signatures are compared with array-api-strict's (parameter names and kinds).",
        "",
        f"Backends: {', '.join(f'`{devices[b]}`' for b in backends)}.",
        "",
    ]
    header = "| name | " + " | ".join(backends) + " | notes |"
    sep = "|---|" + "---|" * len(backends) + "---|"
    counts = {b: [0, 0] for b in backends}

    def row(name: str, results: dict[str, str], note: str = "") -> str:
        for b, r in results.items():
            counts[b][0] += r == "ok"
            counts[b][1] += 1
        return f"| `{name}` | " + " | ".join(results[b] for b in backends) + f" | {note} |"

    def section(title: str, ns: Any, ref_ns: Any, probes: dict[str, Callable[[Any, Any], Any]]) -> None:
        lines.extend([f"## {title}", "", header, sep])
        for name, probe in sorted(probes.items()):
            results = {b: _status(lambda p=probe, d=devices[b]: p(ns, d)) for b in backends}
            note = ""
            if ns is not None and ref_ns is not None and callable(getattr(ns, name, None)):
                r = getattr(ref_ns, name, None)
                if callable(r) and not isinstance(r, type) and not isinstance(getattr(ns, name), lc.DType):
                    note = _signature_note(getattr(ns, name), r)
            lines.append(row(name, results, note))
        lines.append("")

    for title, probes in PROBES.items():
        section(title, lc, ref, probes)
    section("Extension: `linalg`", _sub(lc, "linalg"), getattr(ref, "linalg", None), LINALG)
    section("Extension: `fft`", _sub(lc, "fft"), getattr(ref, "fft", None), FFT)
    lines.extend(["## Array object (`lucid_core.Tensor`)", "", header, sep])
    for name, probe in sorted(ARRAY.items()):
        lines.append(row(name, {b: _status(lambda p=probe, d=devices[b]: p(d)) for b in backends}))
    lines.append("")
    summary = ", ".join(f"{b}: {ok}/{n} ok" for b, (ok, n) in counts.items())
    lines[8:8] = [f"Summary: {summary}.", "", *suite_section()]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if docs/array-api.md is out of date")
    parser.add_argument(
        "--record-suite",
        type=Path,
        metavar="REPORT",
        help="store the totals of an array-api-tests pytest-json-report in docs/array-api-suite.json",
    )
    parser.add_argument("--suite-checkout", type=Path, metavar="DIR", help="the array-api-tests checkout (its commit)")
    parser.add_argument("--suite-max-examples", type=int, metavar="N", help="the --max-examples the run used")
    args = parser.parse_args()
    if args.record_suite is not None:
        SUITE.write_text(
            json.dumps(record_suite(args.record_suite, args.suite_checkout, args.suite_max_examples), indent=1) + "\n"
        )
        print(f"wrote {SUITE}")
    text = build()
    if args.check:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT} is out of date; run python scripts/array_api_table.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
