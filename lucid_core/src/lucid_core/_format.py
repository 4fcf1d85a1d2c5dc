"""How a tensor prints: PyTorch's layout, built from the values and the metadata (no NumPy needed).

``tensor([[...]], dtype=float32, device=numpy:cpu, grad_fn=<...>)``, with PyTorch's number format
(4 digits after the point; scientific notation when magnitudes span more than 1000x or leave
[1e-4, 1e8); whole floats as ``1.``), its line width of 80 and its indentation, and its summary of
tensors with more than 1000 elements (the first and last 3 along each axis around ``...``).
Unlike PyTorch, ``dtype=`` and ``device=`` are always shown: Lucid has several backends, and the same
values can live on any of them. Values reach the host through the backend's ``to_list`` (only the
summarised edges of a large tensor are transferred).
"""

from __future__ import annotations

import math
from typing import Any

PRECISION = 4
THRESHOLD: float = 1000
EDGEITEMS = 3
LINEWIDTH = 80
SCI_MODE: bool | None = None  # None: chosen per tensor by PyTorch's rule; True/False forces it

_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}

_ELIDED = object()  # marks where a summary leaves values or slices out


def tensor_repr(t: Any) -> str:
    """The text of ``repr(t)`` / ``str(t)`` for a :class:`~lucid_core.Tensor`."""
    prefix = "tensor("
    indent = len(prefix)
    shape = t.shape
    kind = t.dtype.kind
    suffixes = []
    if t.size == 0:
        body = "[]"
        if len(shape) != 1:
            suffixes.append(f"size={shape}")
    else:
        values = host_values(t._device.backend, t._data, shape, kind, summarize=t.size > THRESHOLD)
        body = format_values(values, len(shape), kind, indent)
    suffixes.append(f"dtype={t.dtype.name}")
    suffixes.append(f"device={t._device}")
    if t._node is not None:
        suffixes.append(f"grad_fn=<{type(t._node).__name__}Backward>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return add_suffixes(prefix + body, suffixes, indent)


def add_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    """Append ``, suffix`` items and the closing parenthesis, wrapping where a line would pass 80 columns."""
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1  # PyTorch's count, kept so lines break where its do
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


# -- values to the host ----------------------------------------------------------------------------------
def host_values(backend: Any, data: Any, shape: tuple[int, ...], kind: str, summarize: bool) -> Any:
    """Nested Python lists of the values (a scalar for 0-d); with ``summarize``, only the edges, around markers."""
    if not summarize or not shape:
        return _to_list(backend, data, kind)
    n = shape[0]
    if len(shape) == 1:
        if n > 2 * EDGEITEMS:
            head, tail = _to_list(backend, data[:EDGEITEMS], kind), _to_list(backend, data[n - EDGEITEMS :], kind)
            return [*head, _ELIDED, *tail]
        return _to_list(backend, data, kind)
    rows: list[Any] = list(range(n))
    if n > 2 * EDGEITEMS:
        rows = [*range(EDGEITEMS), _ELIDED, *range(n - EDGEITEMS, n)]
    return [r if r is _ELIDED else host_values(backend, data[r], shape[1:], kind, True) for r in rows]


def _to_list(backend: Any, data: Any, kind: str) -> Any:
    """The backend's host transfer; where it needs NumPy and NumPy is absent, the array's own API."""
    try:
        return backend.to_list(data)
    except ModuleNotFoundError as exc:
        if exc.name != "numpy":
            raise
    tolist = getattr(data, "tolist", None)
    if tolist is not None:
        return tolist()
    return _scalars(data, {"b": bool, "i": int, "u": int, "f": float, "c": complex}[kind])


def _scalars(data: Any, scalar: type) -> Any:
    """Nested lists through indexing and ``int()``/``float()``/...: every Array API array supports these."""
    if not data.shape:
        return scalar(data)
    return [_scalars(data[i], scalar) for i in range(data.shape[0])]


def _flat(values: Any) -> list[Any]:
    if not isinstance(values, list):
        return [values]
    out: list[Any] = []
    for v in values:
        if v is not _ELIDED:
            out.extend(_flat(v))
    return out


# -- values to text ------------------------------------------------------------------------------------
class _Formatter:
    """One width and one notation for every value of a tensor (PyTorch's rules)."""

    def __init__(self, values: list[Any], floating: bool) -> None:
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        if not floating:
            self.width = max([1, *(len(str(v)) for v in values)])
            return
        finite = [v for v in values if math.isfinite(v) and v != 0]
        if not finite:
            return
        lo, hi = min(abs(v) for v in finite), max(abs(v) for v in finite)
        self.int_mode = all(v == math.ceil(v) for v in finite)
        if self.int_mode:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8
        else:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        if SCI_MODE is not None:
            self.sci_mode = SCI_MODE
        if self.int_mode and not self.sci_mode:
            texts = [f"{v:.0f}." for v in finite]
        else:
            texts = [f"{v:.{PRECISION}e}" if self.sci_mode else f"{v:.{PRECISION}f}" for v in finite]
        self.width = max(self.width, *(len(s) for s in texts))

    def format(self, value: Any) -> str:
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:{self.width}.{PRECISION}e}"
        elif self.int_mode:
            text = f"{value:.0f}" + ("." if math.isfinite(value) else "")
        else:
            text = f"{value:.{PRECISION}f}"
        return " " * (self.width - len(text)) + text


def format_values(values: Any, ndim: int, kind: str, indent: int) -> str:
    """The bracketed values of a tensor of ``ndim`` axes (``values`` from :func:`host_values`)."""
    flat = _flat(values)
    if kind == "c":
        real = _Formatter([v.real for v in flat], True)
        imag = _Formatter([v.imag for v in flat], True)
        width = real.width + imag.width + 3

        def one(v: Any) -> str:
            im = (imag.format(v.imag) + "j").lstrip()
            return real.format(v.real) + ("" if im[0] in "+-" else "+") + im
    else:
        fmt = _Formatter(flat, kind == "f")
        width = fmt.width + 2
        one = fmt.format
    return _nested(values, ndim, indent, one, width)


def _nested(values: Any, ndim: int, indent: int, one: Any, width: int) -> str:
    if ndim == 0:
        return one(values)
    if ndim == 1:
        per_line = max(1, (LINEWIDTH - indent) // width)
        items = [" ..." if v is _ELIDED else one(v) for v in values]
        lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    slices = ["..." if v is _ELIDED else _nested(v, ndim - 1, indent + 1, one, width) for v in values]
    return "[" + ("," + "\n" * (ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """PyTorch's ``set_printoptions``: digits, summary threshold and edge items, line width, notation.

    ``profile`` (``"default"``, ``"short"`` or ``"full"``) sets all four numbers first; the others override it.
    ``sci_mode`` None lets each tensor choose (PyTorch's rule), True/False forces scientific or fixed notation.
    """
    global PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH, SCI_MODE
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: profile must be one of {sorted(_PROFILES)}, got {profile!r}")
        PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = _PROFILES[profile]
    if precision is not None:
        PRECISION = int(precision)
    if threshold is not None:
        THRESHOLD = threshold
    if edgeitems is not None:
        EDGEITEMS = int(edgeitems)
    if linewidth is not None:
        LINEWIDTH = int(linewidth)
    SCI_MODE = sci_mode


class Layout:
    """A tensor's memory layout (PyTorch's ``torch.layout``); Lucid's tensors are all ``strided``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"lucid.{self.name}"

    def __reduce__(self) -> str:
        return self.name


strided = Layout("strided")
# the layout of PyTorch's nested tensors (ragged batches); Lucid names it, but makes no nested tensors
jagged = Layout("jagged")


def _format(self: Any, format_spec: str) -> str:
    """``f"{loss:.4f}"``: a 0-d tensor formats its value (``item()``); any other takes only ``""`` (``str``)."""
    if not self.shape:
        return self.detach().item().__format__(format_spec)
    return object.__format__(self, format_spec)


def _false(self: Any) -> bool:
    return False


def attach(tensor_type: type) -> None:
    """Put ``__format__`` and PyTorch's layout questions on the Tensor class (called once by ``lucid_core``)."""
    tensor_type.__format__ = _format  # type: ignore[method-assign]
    for name, what in (("is_xpu", "Intel GPU"), ("is_sparse", "sparse"), ("is_quantized", "quantized"),
                       ("is_meta", "meta (shape-only)")):  # fmt: skip
        setattr(tensor_type, name, property(_false, doc=f"False: Lucid has no {what} tensors."))
    tensor_type.layout = property(lambda self: strided, doc="``lucid.strided``: every Lucid tensor is strided.")
