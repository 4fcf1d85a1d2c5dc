"""Element-wise ops, each forward next to its gradient.

Unary ops are declared in one line each by :func:`_unary`: the kernel's name in the Array API
namespace and the gradient as a function of the input ``x``, the output ``y`` and the incoming
gradient ``gy`` (written in Lucid ops, so it is differentiable again).
"""

from __future__ import annotations

import cmath
import math
from collections.abc import Callable
from typing import Any

from .. import _dtypes as dt
from .. import kernels
from .._autograd import CROSSWISE, Function, apply_unary
from .._forward_ad import add_tangents
from .._tensor import Tensor, check_tensor
from . import _helpers as _h
from . import creation as _c
from . import manipulation as _m

__all__ = [
    "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "pow", "negative", "positive",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "conj", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "square", "abs", "sign",
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
    "atan2", "hypot", "maximum", "minimum", "clip", "where", "floor", "ceil", "round", "trunc",
    "logical_and", "logical_or", "logical_xor", "logical_not", "isnan", "isfinite", "isinf",
    "logaddexp", "sigmoid", "erf", "relu", "reciprocal", "copysign", "signbit",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_invert", "bitwise_left_shift", "bitwise_right_shift",
]  # fmt: skip


# -- binary arithmetic ---------------------------------------------------------------------------


class Add(Function):
    native = True
    saves_inputs = False  # the gradient needs shapes only

    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, gy):
        a, b = ctx.inputs
        return _h.unbroadcast(gy, a), _h.unbroadcast(gy, b)

    @staticmethod
    def backward_raw(ctx, gy):
        a, b = ctx.inputs
        if type(b) is float or type(b) is int:  # a tensor plus a number: inline, the common case
            return (gy if gy.shape == a._data.shape else _h.sum_to_raw(ctx.xp, gy, tuple(a._data.shape))), None
        return _h.unbroadcast_raw(ctx.xp, gy, a), _h.unbroadcast_raw(ctx.xp, gy, b)

    @staticmethod
    def jvp(ctx, ta, tb):
        return add_tangents(ta, tb)


class Subtract(Function):
    native = True
    saves_inputs = False  # the gradient needs shapes only

    @staticmethod
    def forward(ctx, a, b):
        return a - b

    @staticmethod
    def backward(ctx, gy):
        a, b = ctx.inputs
        gb = _h.unbroadcast(gy, b)
        return _h.unbroadcast(gy, a), (None if gb is None else -gb)

    @staticmethod
    def backward_raw(ctx, gy):
        a, b = ctx.inputs
        if not _h.real_float(ctx, gy):
            return NotImplemented
        gb = _h.unbroadcast_raw(ctx.xp, gy, b)
        return _h.unbroadcast_raw(ctx.xp, gy, a), (None if gb is None else _negative_raw(ctx, gb))

    @staticmethod
    def jvp(ctx, ta, tb):
        return add_tangents(ta, None if tb is None else -tb)


class Multiply(Function):
    native = True
    saves_inputs = CROSSWISE  # a's gradient reads b, b's reads a

    @staticmethod
    def forward(ctx, a, b):
        return a * b

    @staticmethod
    def backward(ctx, gy):
        a, b = ctx.inputs
        # PyTorch's convention for complex: gy * conj(b) and gy * conj(a)
        ca, cb = (conj_if_complex(a), conj_if_complex(b)) if is_complex(gy) else (a, b)
        need_a, need_b = ctx.needs_input_grad
        ga = _h.unbroadcast(gy * cb, a) if need_a else None
        gb = _h.unbroadcast(gy * ca, b) if need_b else None
        return ga, gb

    @staticmethod
    def backward_raw(ctx, gy):
        a, b = ctx.inputs
        if type(b) is float or type(b) is int:  # a tensor times a number: inline, the common case
            if gy.dtype not in ctx.device.real_natives or a._data.dtype != gy.dtype:
                return NotImplemented
            g = gy * b
            return (g if g.shape == a._data.shape else _h.sum_to_raw(ctx.xp, g, tuple(a._data.shape))), None
        if not _h.real_float(ctx, gy, a, b):
            return NotImplemented
        xp = ctx.xp
        ga = _h.unbroadcast_raw(xp, gy * _h.value(b), a) if isinstance(a, Tensor) and a._requires_grad else None
        gb = _h.unbroadcast_raw(xp, gy * _h.value(a), b) if isinstance(b, Tensor) and b._requires_grad else None
        return ga, gb

    @staticmethod
    def jvp(ctx, ta, tb):
        a, b = ctx.inputs
        return add_tangents(None if ta is None else ta * b, None if tb is None else a * tb)


class Divide(Function):
    native = True

    @staticmethod
    def forward(ctx, a, b):
        return a / b

    @staticmethod
    def backward(ctx, gy):
        a, b = ctx.inputs
        need_a, need_b = ctx.needs_input_grad
        if is_complex(gy):
            cb = conj_if_complex(b)
            ga = _h.unbroadcast(gy / cb, a) if need_a else None
            gb = _h.unbroadcast(-gy * conj(ctx.output()) / cb, b) if need_b else None
            return ga, gb
        ga = _h.unbroadcast(gy / b, a) if need_a else None
        gb = _h.unbroadcast(-gy * ctx.output() / b, b) if need_b else None
        return ga, gb

    @staticmethod
    def backward_raw(ctx, gy):
        a, b = ctx.inputs
        if not _h.real_float(ctx, gy, a, b):
            return NotImplemented
        xp = ctx.xp
        rb = _h.value(b)
        ga = _h.unbroadcast_raw(xp, gy / rb, a) if isinstance(a, Tensor) and a._requires_grad else None
        if isinstance(b, Tensor) and b._requires_grad:
            gb = _h.unbroadcast_raw(xp, _negative_raw(ctx, gy) * ctx.output()._data / rb, b)
        else:
            gb = None
        return ga, gb

    @staticmethod
    def jvp(ctx, ta, tb):
        b = ctx.inputs[1]
        return add_tangents(None if ta is None else ta / b, None if tb is None else -tb * ctx.output() / b)


class Pow(Function):
    native = True

    @staticmethod
    def forward(ctx, a, b):
        return a**b

    @staticmethod
    def backward(ctx, gy):
        a, b = ctx.inputs
        need_a, need_b = ctx.needs_input_grad
        if is_complex(gy):
            return _complex_pow_grad(a, b, ctx.output(), gy, need_a, need_b)
        ga = gb = None
        if need_a:
            if not isinstance(b, Tensor):
                # d(a**b)/da = b * a**(b-1), and 0 for b == 0 (not 0 * inf at a == 0)
                if b == 0:
                    ga = gy * 0.0
                else:
                    ga = gy * 2 * a if b == 2 else gy * b * a ** (b - 1)
            else:
                # 0 at a == b == 0, where b * a**(b-1) would be 0 * inf
                ga = _h.unbroadcast(where(equal(a, 0) & equal(b, 0), 0.0, gy * b * a ** (b - 1)), a)
        if need_b:
            # d(a**b)/db = a**b * log(a), taken as 0 where a == 0 and b >= 0 (as PyTorch does)
            y = ctx.output()
            if isinstance(a, Tensor):
                # log(0) = -inf stays where b < 0 (y = inf there: the gradient is -inf, as in PyTorch)
                zero = equal(a, 0) & greater_equal(b, 0)
                safe = where(zero, 0.0, y * log(where(zero, 1.0, a)))
            else:
                safe = y * math.log(a) if a != 0 else where(greater_equal(b, 0), 0.0, y * -math.inf)
            gb = _h.unbroadcast(gy * safe, b)
        return ga, gb

    @staticmethod
    def jvp(ctx, ta, tb):
        a, b = ctx.inputs
        da = db = None
        if ta is not None:
            if not isinstance(b, Tensor):
                da = ta * 0.0 if b == 0 else (ta * 2 * a if b == 2 else ta * b * a ** (b - 1))
            else:
                da = where(equal(a, 0) & equal(b, 0), 0.0, ta * b * a ** (b - 1))
        if tb is not None:
            y = ctx.output()
            if isinstance(a, Tensor):
                zero = equal(a, 0) & greater_equal(b, 0)
                slope = where(zero, 0.0, y * log(where(zero, 1.0, a)))
            else:
                slope = y * math.log(a) if a != 0 else where(greater_equal(b, 0), 0.0, y * -math.inf)
            db = tb * slope
        return add_tangents(da, db)


def _complex_pow_grad(a: Any, b: Any, y: Tensor, gy: Tensor, need_a: bool, need_b: bool) -> tuple[Any, Any]:
    """Gradients of ``a ** b`` for complex operands: ``gy * conj(b a**(b-1))`` and ``gy * conj(y log a)``."""
    ga = gb = None
    if need_a:
        if isinstance(b, Tensor):
            ga = _h.unbroadcast(where(equal(a, 0) & equal(b, 0), 0.0, gy * conj(b * a ** (b - 1))), a)
        else:
            ga = gy * 0.0 if b == 0 else gy * conj_if_complex(b * a ** (b - 1))
    if need_b:
        if isinstance(a, Tensor):
            safe = where(equal(a, 0), 0.0, y * log(where(equal(a, 0), 1.0, a)))
        else:
            safe = y * cmath.log(a) if a != 0 else y * 0.0
        gb = _h.unbroadcast(gy * conj(safe), b)
    return ga, gb


def is_complex(t: Tensor) -> bool:
    """Whether ``t`` has a complex dtype (one dict look-up: cheap enough for every backward)."""
    return t._device.backend._from_native[t._data.dtype].kind == "c"


def conj_if_complex(x: Any) -> Any:
    """The conjugate of a complex Tensor or Python complex; anything else comes back as it is."""
    if isinstance(x, Tensor):
        return conj(x) if is_complex(x) else x
    if type(x) is complex:
        return x.conjugate()
    return x


class _NoGrad(Function):
    """Base of ops whose output has no gradient (comparisons, rounding to integers, bit ops)."""

    native = True
    differentiable = False
    kernel: Callable[..., Any]

    @staticmethod
    def backward(ctx, gy):
        return tuple(None for _ in ctx.inputs)


def _binary(cls: type[Function], a: Any, b: Any) -> Tensor:
    a, b = _h.binary_operands(a, b, cls.__name__.lower())
    return cls.apply(a, b)


def add(x1: Any, x2: Any, /) -> Tensor:
    """``x1 + x2``, broadcasting."""
    return _binary(Add, x1, x2)


def subtract(x1: Any, x2: Any, /) -> Tensor:
    """``x1 - x2``, broadcasting."""
    return _binary(Subtract, x1, x2)


def multiply(x1: Any, x2: Any, /) -> Tensor:
    """``x1 * x2``, broadcasting."""
    return _binary(Multiply, x1, x2)


def divide(x1: Any, x2: Any, /) -> Tensor:
    """True division; integer operands give the default float dtype (as in PyTorch)."""
    x1, x2 = _h.binary_operands(x1, x2, "divide")
    ref = x1 if isinstance(x1, Tensor) else x2
    if ref.dtype.kind not in "fc":
        if isinstance(x1, Tensor):
            x1 = _m.astype(x1, dt.default_float)
        if isinstance(x2, Tensor):
            x2 = _m.astype(x2, dt.default_float)
    return Divide.apply(x1, x2)


def pow(x1: Any, x2: Any, /) -> Tensor:  # noqa: A001 - the Array API name
    """``x1 ** x2``; the gradient flows to both the base and the exponent."""
    return _binary(Pow, x1, x2)


def negative(x: Tensor, /) -> Tensor:
    """``-x``."""
    if not isinstance(x, Tensor):
        check_tensor(x, "negative")
    return apply_unary(Negative, x)


def positive(x: Tensor, /) -> Tensor:
    """``+x`` (returns ``x``)."""
    return x


def reciprocal(x: Tensor, /) -> Tensor:
    """``1 / x``."""
    return divide(1.0, x)


def rsqrt(x: Tensor, /) -> Tensor:
    """``1 / sqrt(x)``."""
    return divide(1.0, sqrt(x))


# -- fused gradients: one op instead of three in the first backward, still differentiable ------------


class TanhGrad(Function):
    """``gy * (1 - y**2)`` for ``y = tanh(x)``."""

    native = True

    @staticmethod
    def forward(ctx, gy, y):
        return gy * (1 - y * y)

    @staticmethod
    def backward(ctx, g):
        gy, y = ctx.inputs
        if is_complex(g):
            gy, y = conj(gy), conj(y)
        return TanhGrad.apply(g, y), -2.0 * g * gy * y

    @staticmethod
    def jvp(ctx, tg, ty):
        gy, y = ctx.inputs
        return add_tangents(None if tg is None else TanhGrad.apply(tg, y), None if ty is None else -2.0 * gy * y * ty)


class SigmoidGrad(Function):
    """``gy * y * (1 - y)`` for ``y = sigmoid(x)``."""

    native = True

    @staticmethod
    def forward(ctx, gy, y):
        return gy * y * (1 - y)

    @staticmethod
    def backward(ctx, g):
        gy, y = ctx.inputs
        if is_complex(g):
            gy, y = conj(gy), conj(y)
        return SigmoidGrad.apply(g, y), g * gy * (1 - 2.0 * y)

    @staticmethod
    def jvp(ctx, tg, ty):
        gy, y = ctx.inputs
        return add_tangents(
            None if tg is None else SigmoidGrad.apply(tg, y), None if ty is None else gy * (1 - 2.0 * y) * ty
        )


class ReluGrad(Function):
    """``gy`` where ``x > 0``, else 0 (the mask itself has no gradient)."""

    native = True

    @staticmethod
    def forward(ctx, gy, x):
        return kernels.call(ctx.device, "relu_grad", gy, x)

    @staticmethod
    def backward(ctx, g):
        return ReluGrad.apply(g, ctx.inputs[1]), None

    @staticmethod
    def jvp(ctx, tg, tx):
        return None if tg is None else ReluGrad.apply(tg, ctx.inputs[1])


# -- unary ops, declared with their gradients -----------------------------------------------------

GradFn = Callable[[Tensor, Tensor, Tensor], Tensor]


def _unary(
    kernel: str,
    grad: GradFn | None,
    doc: str,
    holomorphic: bool = True,
    complex_special: Callable[[Any, Any, Any], Any] | None = None,
    raw: Callable[[Any, Any, Any], Any] | None = None,
) -> Callable[[Tensor], Tensor]:
    """Declare a unary op: ``xp.<kernel>`` forward, ``grad(x, y, gy)`` backward (None: not differentiable).

    For a complex ``gy`` a holomorphic op's ``grad`` sees ``conj(x)`` and ``conj(y)``: its derivative has
    real coefficients, so this gives ``gy * conj(f'(x))``, PyTorch's convention. Real tensors pay one check.
    ``complex_special(xp, x, out)`` puts the standard's special-case values into a complex result where
    libraries (NumPy's C99 kernels) disagree with the standard. ``raw(x, y, gy)``, where given, is ``grad``
    on native real arrays with the same operations in the same order (first-order backward's fast path).
    """

    assert kernel in kernels.UNARY, f"unary op {kernel!r} is not declared in lucid_core.kernels.UNARY"

    def forward(ctx: Any, x: Any) -> Any:
        # inline rather than kernels.call: this is every unary op's hot path
        k = ctx.device.backend.kernels.get(kernel)
        out = k(x) if k is not None else getattr(ctx.xp, kernel)(x)
        if complex_special is not None and ctx.device.backend.lucid_dtype(x.dtype).kind == "c":
            out = complex_special(ctx.xp, x, out)
        return out

    def backward(ctx: Any, gy: Tensor) -> Any:
        assert grad is not None
        x = ctx.inputs[0]
        if holomorphic and is_complex(gy):
            return grad(conj(x), conj(ctx.output()), gy)
        return grad(x, ctx.output(), gy)

    def backward_raw(ctx: Any, gy: Any) -> Any:
        assert raw is not None
        if gy.dtype not in ctx.device.real_natives:
            return NotImplemented
        y = ctx.outputs[0]()
        if y is None or y._box is not None:
            y = ctx.output()  # raises for a dead or rewritten output
        return raw(ctx.inputs[0]._data, y._data, gy)

    def jvp(ctx: Any, tx: Any) -> Any:
        # f'(x) tx: the gradient function with the tangent for gy (an element-wise slope, so the same product);
        # a holomorphic op's slope is not conjugated here. |z| is the one op whose complex slope differs.
        if tx is None:
            return None
        assert grad is not None
        if kernel == "abs" and is_complex(tx):
            x = ctx.inputs[0]
            y = ctx.output()
            zero = equal(y, 0)
            return where(zero, 0.0, _real_part(conj(x) * tx) / where(zero, 1.0, y))
        return grad(ctx.inputs[0], ctx.output(), tx)

    cls = type(
        kernel.capitalize(),
        (Function,),
        {
            "__slots__": (),
            "native": True,
            "differentiable": grad is not None,
            "forward": staticmethod(forward),
            "backward": staticmethod(backward),
            "backward_raw": None if raw is None else staticmethod(backward_raw),
            "jvp": staticmethod(jvp) if grad is not None else None,
            "__module__": __name__,
        },
    )

    def op(x: Tensor, /) -> Tensor:
        if not isinstance(x, Tensor):  # inline: the hot path pays no call
            check_tensor(x, kernel)
        return apply_unary(cls, x)

    op.__name__ = op.__qualname__ = kernel
    op.__doc__ = doc
    op.Function = cls  # type: ignore[attr-defined]
    return op


def _acosh_slope(x: Tensor) -> Tensor:
    # sqrt(x - 1) * sqrt(x + 1) picks acosh's principal branch for complex x; sqrt(x*x - 1) does not
    return sqrt(x - 1) * sqrt(x + 1) if is_complex(x) else sqrt(x * x - 1)


def _zero(x: Tensor, y: Tensor, gy: Tensor) -> Tensor:

    return _c.zeros_like(gy)


def _with_imag_sign(xp: Any, value: Any, im: Any) -> Any:
    """``value`` (whose imaginary part is +0) with the sign of ``im`` given to its imaginary zero."""
    return xp.where(xp.signbit(im), xp.conj(value), value)


def _expm1_special(xp: Any, z: Any, out: Any) -> Any:
    """The standard's complex expm1 on the real axis and at infinite real parts."""
    re, im = xp.real(z), xp.imag(z)
    # on the real axis the result is real (expm1(+inf + 0j) = +inf + 0j, expm1(NaN + 0j) = NaN + 0j); "+ 0.0"
    # turns expm1(-0) into +0, as exp(-0 + 0j) - 1 gives and the standard asks (0 + 0j for a = +-0, b = +0)
    out = xp.where(im == 0, _with_imag_sign(xp, xp.astype(xp.expm1(re) + 0.0, z.dtype), im), out)
    wild = ~xp.isfinite(im)  # exp(-inf) * cis(inf or NaN) is 0, not NaN; exp(+inf) * cis(...) is inf + NaN j
    out = xp.where((re == -math.inf) & wild, xp.asarray(complex(-1.0, 0.0), dtype=z.dtype), out)
    return xp.where((re == math.inf) & wild, xp.asarray(complex(math.inf, math.nan), dtype=z.dtype), out)


def _tanh_special(xp: Any, z: Any, out: Any) -> Any:
    """The standard's tanh(±inf + yj) = ±1 + 0j for finite y (the zero takes y's sign), not ±1 - 0j."""
    re, im = xp.real(z), xp.imag(z)
    limit = _with_imag_sign(xp, xp.astype(xp.sign(re), z.dtype), im)
    return xp.where(xp.isinf(re) & xp.isfinite(im), limit, out)


exp = _unary("exp", lambda x, y, gy: gy * y, "e ** x, element-wise.", raw=lambda x, y, gy: gy * y)
expm1 = _unary(
    "expm1", lambda x, y, gy: gy * (y + 1), "exp(x) - 1, accurate near 0.", complex_special=_expm1_special,
    raw=lambda x, y, gy: gy * (y + 1),
)  # fmt: skip
log = _unary("log", lambda x, y, gy: gy / x, "Natural logarithm.", raw=lambda x, y, gy: gy / x)
log1p = _unary(
    "log1p", lambda x, y, gy: gy / (x + 1), "log(1 + x), accurate near 0.", raw=lambda x, y, gy: gy / (x + 1)
)
log2 = _unary("log2", lambda x, y, gy: gy / (x * math.log(2.0)), "Base-2 logarithm.")
log10 = _unary("log10", lambda x, y, gy: gy / (x * math.log(10.0)), "Base-10 logarithm.")
sqrt = _unary("sqrt", lambda x, y, gy: gy / (2 * y), "Square root.", raw=lambda x, y, gy: gy / (2 * y))
square = _unary("square", lambda x, y, gy: gy * 2 * x, "x * x.", raw=lambda x, y, gy: gy * 2 * x)
# |z| is not holomorphic: its gradient is gy * z / |z| (sign(z)), as in PyTorch
abs = _unary("abs", lambda x, y, gy: gy * sign(x), "Absolute value (gradient 0 at 0).", False)  # noqa: A001
sin = _unary("sin", lambda x, y, gy: gy * cos(x), "Sine.")
cos = _unary("cos", lambda x, y, gy: -gy * sin(x), "Cosine.")
tan = _unary("tan", lambda x, y, gy: gy * (1 + y * y), "Tangent.", raw=lambda x, y, gy: gy * (1 + y * y))
asin = _unary("asin", lambda x, y, gy: gy / sqrt(1 - x * x), "Inverse sine.")
acos = _unary("acos", lambda x, y, gy: -gy / sqrt(1 - x * x), "Inverse cosine.")
atan = _unary("atan", lambda x, y, gy: gy / (1 + x * x), "Inverse tangent.", raw=lambda x, y, gy: gy / (1 + x * x))
sinh = _unary("sinh", lambda x, y, gy: gy * cosh(x), "Hyperbolic sine.")
cosh = _unary("cosh", lambda x, y, gy: gy * sinh(x), "Hyperbolic cosine.")
tanh = _unary(
    "tanh", lambda x, y, gy: TanhGrad.apply(gy, y), "Hyperbolic tangent.", complex_special=_tanh_special,
    raw=lambda x, y, gy: gy * (1 - y * y),  # TanhGrad.forward
)  # fmt: skip
asinh = _unary("asinh", lambda x, y, gy: gy / sqrt(x * x + 1), "Inverse hyperbolic sine.")
acosh = _unary("acosh", lambda x, y, gy: gy / _acosh_slope(x), "Inverse hyperbolic cosine.")
atanh = _unary(
    "atanh", lambda x, y, gy: gy / (1 - x * x), "Inverse hyperbolic tangent.", raw=lambda x, y, gy: gy / (1 - x * x)
)
sign = _unary("sign", _zero, "-1, 0 or 1 by the sign of x (gradient 0).", False)
floor = _unary("floor", _zero, "Round down (gradient 0).", False)
ceil = _unary("ceil", _zero, "Round up (gradient 0).", False)
round = _unary("round", _zero, "Round half to even (gradient 0).", False)  # noqa: A001
trunc = _unary("trunc", _zero, "Round toward zero (gradient 0).", False)
Negative = _unary("negative", lambda x, y, gy: -gy, "", False).Function  # type: ignore[attr-defined]


def _negative_raw(ctx: Any, g: Any) -> Any:
    """``-g`` on a native array, by the kernel ``negative`` (as the op runs it)."""
    k = ctx.device.backend.kernels.get("negative")
    return k(g) if k is not None else ctx.xp.negative(g)


Negative.backward_raw = staticmethod(_negative_raw)
conj = _unary("conj", lambda x, y, gy: conj(gy), "Complex conjugate.", False)
isnan = _unary("isnan", None, "Whether each element is NaN.")
isinf = _unary("isinf", None, "Whether each element is +-inf.")
isfinite = _unary("isfinite", None, "Whether each element is finite.")
signbit = _unary("signbit", None, "Whether the sign bit is set.")
logical_not = _unary("logical_not", None, "Logical NOT.")
bitwise_invert = _unary("bitwise_invert", None, "Bit-wise NOT (logical NOT on bools).")


class Sigmoid(Function):
    native = True

    @staticmethod
    def forward(ctx, x):
        return kernels.call(ctx.device, "sigmoid", x)

    @staticmethod
    def backward(ctx, gy):
        y = ctx.output()
        return SigmoidGrad.apply(gy, conj(y) if is_complex(gy) else y)

    @staticmethod
    def backward_raw(ctx, gy):
        if gy.dtype not in ctx.device.real_natives:
            return NotImplemented
        y = ctx.output()._data
        return gy * y * (1 - y)  # SigmoidGrad.forward

    @staticmethod
    def jvp(ctx, tx):
        return SigmoidGrad.apply(tx, ctx.output())


def sigmoid(x: Tensor, /) -> Tensor:
    """The logistic function 1 / (1 + exp(-x)), stable for large |x|."""
    return Sigmoid.apply(x)


class Relu(Function):
    native = True

    @staticmethod
    def forward(ctx, x):
        return kernels.call(ctx.device, "relu", x)

    @staticmethod
    def backward(ctx, gy):
        return ReluGrad.apply(gy, ctx.inputs[0])

    @staticmethod
    def backward_raw(ctx, gy):
        return kernels.call(ctx.device, "relu_grad", gy, ctx.inputs[0]._data)  # ReluGrad.forward

    @staticmethod
    def jvp(ctx, tx):
        return ReluGrad.apply(tx, ctx.inputs[0])


def relu(x: Tensor, /) -> Tensor:
    """max(x, 0) (gradient 0 at 0, as in PyTorch)."""
    return Relu.apply(x)


class Erf(Function):
    native = True

    @staticmethod
    def forward(ctx, x):
        return kernels.call(ctx.device, "erf", x)

    @staticmethod
    def backward(ctx, gy):
        x = ctx.inputs[0]
        return gy * (2.0 / math.sqrt(math.pi)) * exp(-(x * x))

    jvp = backward  # an element-wise slope: the tangent takes gy's place


def erf(x: Tensor, /) -> Tensor:
    """The error function."""
    return Erf.apply(x)


# -- binary functions with gradients ----------------------------------------------------------------


class Maximum(Function):
    """``maximum(a, b)``; where ``a`` and ``b`` tie, each gets half the gradient (as PyTorch does).

    Where either is NaN (the result is NaN), both get the whole gradient, as in PyTorch: an operand loses
    only where it compares strictly worse. :class:`Minimum` is the same op with the comparison turned round.
    """

    native = True
    xp_name = "maximum"  # the namespace function of the forward
    # where ``a`` is not picked (a lambda: the comparisons are defined further down this module)
    loses: Callable[[Any, Any], Tensor] = staticmethod(lambda a, b: less(a, b))

    @staticmethod
    def forward(ctx, a, b):
        return getattr(ctx.xp, ctx.xp_name)(a, b)

    @staticmethod
    def backward(ctx, gy):
        a, b = ctx.inputs
        need_a, need_b = ctx.needs_input_grad
        share = where(equal(a, b), 0.5, 1.0)
        ga = _h.unbroadcast(gy * where(ctx.loses(a, b), 0.0, share), a) if need_a else None
        gb = _h.unbroadcast(gy * where(ctx.loses(b, a), 0.0, share), b) if need_b else None
        return ga, gb

    @staticmethod
    def jvp(ctx, ta, tb):
        a, b = ctx.inputs
        share = where(equal(a, b), 0.5, 1.0)
        da = None if ta is None else ta * where(ctx.loses(a, b), 0.0, share)
        return add_tangents(da, None if tb is None else tb * where(ctx.loses(b, a), 0.0, share))


class Minimum(Maximum):
    """``minimum(a, b)``: :class:`Maximum` with ``greater`` losing."""

    xp_name = "minimum"
    loses = staticmethod(lambda a, b: greater(a, b))


class Atan2(Function):
    native = True

    @staticmethod
    def forward(ctx, a, b):
        return ctx.xp.atan2(*_arrays(ctx, a, b))

    @staticmethod
    def backward(ctx, gy):
        a, b = ctx.inputs
        denom = a * a + b * b
        # at the origin atan2 has no derivative; PyTorch's gradient there is 0 (not 0 / 0)
        origin = equal(denom, 0)
        scale = where(origin, 0.0, gy / where(origin, 1.0, denom))
        need_a, need_b = ctx.needs_input_grad
        ga = _h.unbroadcast(scale * b, a) if need_a else None
        gb = _h.unbroadcast(-scale * a, b) if need_b else None
        return ga, gb

    @staticmethod
    def jvp(ctx, ta, tb):
        a, b = ctx.inputs
        denom = a * a + b * b
        origin = equal(denom, 0)
        scale = where(origin, 0.0, 1.0 / where(origin, 1.0, denom))
        return add_tangents(None if ta is None else ta * b * scale, None if tb is None else -tb * a * scale)


class Hypot(Function):
    native = True

    @staticmethod
    def forward(ctx, a, b):
        return ctx.xp.hypot(*_arrays(ctx, a, b))

    @staticmethod
    def backward(ctx, gy):
        a, b = ctx.inputs
        y = ctx.output()
        return _h.unbroadcast(gy * a / y, a), _h.unbroadcast(gy * b / y, b)

    @staticmethod
    def jvp(ctx, ta, tb):
        a, b = ctx.inputs
        y = ctx.output()
        return add_tangents(None if ta is None else ta * a / y, None if tb is None else tb * b / y)


class Logaddexp(Function):
    native = True

    @staticmethod
    def forward(ctx, a, b):
        return ctx.xp.logaddexp(*_arrays(ctx, a, b))

    @staticmethod
    def backward(ctx, gy):
        a, b = ctx.inputs
        # PyTorch's form gy / (1 + exp(b - a)): 0 and 1 (not exp(inf - inf) = NaN) where one operand is +inf
        need_a, need_b = ctx.needs_input_grad
        ga = _h.unbroadcast(gy / (1.0 + exp(b - a)), a) if need_a else None
        gb = _h.unbroadcast(gy / (1.0 + exp(a - b)), b) if need_b else None
        return ga, gb

    @staticmethod
    def jvp(ctx, ta, tb):
        a, b = ctx.inputs
        return add_tangents(
            None if ta is None else ta / (1.0 + exp(b - a)), None if tb is None else tb / (1.0 + exp(a - b))
        )


class Copysign(Function):
    native = True

    @staticmethod
    def forward(ctx, a, b):
        return ctx.xp.copysign(*_arrays(ctx, a, b))

    @staticmethod
    def backward(ctx, gy):
        a, b = ctx.inputs
        need_a, need_b = ctx.needs_input_grad
        # the sign source x2 gets a zero gradient (as in PyTorch), not None
        gb = _h.unbroadcast(_c.zeros_like(gy), b) if need_b else None
        if not need_a:
            return None, gb
        y = ctx.output()
        ga = _h.unbroadcast(gy * where(equal(a, 0), 0.0, y / where(equal(a, 0), 1.0, a)), a)
        return ga, gb

    @staticmethod
    def jvp(ctx, ta, tb):
        if ta is None:
            return None
        a = ctx.inputs[0]
        return ta * where(equal(a, 0), 0.0, ctx.output() / where(equal(a, 0), 1.0, a))


def _arrays(ctx: Any, a: Any, b: Any) -> tuple[Any, Any]:
    """Array API functions (unlike operators) may not take Python scalars: make them 0-d arrays."""
    if not hasattr(a, "shape"):
        a = ctx.xp.asarray(a, dtype=b.dtype)
    if not hasattr(b, "shape"):
        b = ctx.xp.asarray(b, dtype=a.dtype)
    return a, b


def maximum(x1: Any, x2: Any, /) -> Tensor:
    """Element-wise maximum (ties split the gradient)."""
    return _binary(Maximum, x1, x2)


def minimum(x1: Any, x2: Any, /) -> Tensor:
    """Element-wise minimum (ties split the gradient)."""
    return _binary(Minimum, x1, x2)


def atan2(x1: Any, x2: Any, /) -> Tensor:
    """The angle of the point (x2, x1)."""
    return _binary(Atan2, x1, x2)


def hypot(x1: Any, x2: Any, /) -> Tensor:
    """sqrt(x1**2 + x2**2) without overflow."""
    return _binary(Hypot, x1, x2)


def logaddexp(x1: Any, x2: Any, /) -> Tensor:
    """log(exp(x1) + exp(x2)), stable."""
    return _binary(Logaddexp, x1, x2)


def copysign(x1: Any, x2: Any, /) -> Tensor:
    """|x1| with the sign of x2."""
    return _binary(Copysign, x1, x2)


class Clip(Function):
    native = True

    @staticmethod
    def forward(ctx, x, lo, hi):
        xp = ctx.xp
        if lo is not None:
            x = xp.maximum(x, lo if hasattr(lo, "shape") else xp.asarray(lo, dtype=x.dtype))
        if hi is not None:
            x = xp.minimum(x, hi if hasattr(hi, "shape") else xp.asarray(hi, dtype=x.dtype))
        return x

    @staticmethod
    def backward(ctx, gy):
        x, lo, hi = ctx.inputs
        inside = None
        if lo is not None:
            inside = greater_equal(x, lo)
        if hi is not None:
            m = less_equal(x, hi)
            inside = m if inside is None else logical_and(inside, m)
        gx = gy if inside is None else where(inside, gy, 0.0)
        glo = _h.unbroadcast(where(less(x, lo), gy, 0.0), lo) if isinstance(lo, Tensor) else None
        ghi = _h.unbroadcast(where(greater(x, hi), gy, 0.0), hi) if isinstance(hi, Tensor) else None
        return _h.unbroadcast(gx, x), glo, ghi

    @staticmethod
    def jvp(ctx, tx, tlo, thi):
        x, lo, hi = ctx.inputs
        inside = None
        if lo is not None:
            inside = greater_equal(x, lo)
        if hi is not None:
            m = less_equal(x, hi)
            inside = m if inside is None else logical_and(inside, m)
        dx = None if tx is None else (tx if inside is None else where(inside, tx, 0.0))
        dlo = None if tlo is None else where(less(x, lo), tlo, 0.0)
        return add_tangents(dx, dlo, None if thi is None else where(greater(x, hi), thi, 0.0))


def clip(x: Tensor, /, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    """Clamp ``x`` to [min, max]; the gradient passes where min <= x <= max."""
    check_tensor(x, "clip")
    if min is not None and not isinstance(min, (Tensor, int, float)):
        raise TypeError(f"clip: min must be a number or a Tensor, got {type(min).__name__}")
    if max is not None and not isinstance(max, (Tensor, int, float)):
        raise TypeError(f"clip: max must be a number or a Tensor, got {type(max).__name__}")
    if x.dtype.kind not in "fc" and (type(min) is float or type(max) is float):
        x = _m.astype(x, dt.default_float)
    if min is None and max is None:
        return _m.clone(x)  # a new tensor, never one sharing x's memory (NumPy's clip returns its input)
    return Clip.apply(x, min, max)


class Where(Function):
    native = True

    @staticmethod
    def forward(ctx, cond, a, b):
        return ctx.xp.where(cond, *_arrays(ctx, a, b))

    @staticmethod
    def backward(ctx, gy):
        cond, a, b = ctx.inputs
        _, need_a, need_b = ctx.needs_input_grad
        ga = _h.unbroadcast(where(cond, gy, 0.0), a) if need_a else None
        gb = _h.unbroadcast(where(cond, 0.0, gy), b) if need_b else None
        return None, ga, gb

    @staticmethod
    def jvp(ctx, tc, ta, tb):
        cond = ctx.inputs[0]
        if ta is None and tb is None:
            return None
        return where(cond, 0.0 if ta is None else ta, 0.0 if tb is None else tb)


def where(condition: Tensor, x1: Any, x2: Any, /) -> Tensor:
    """``x1`` where ``condition`` holds, else ``x2`` (broadcasting); gradients go to the chosen side."""
    if not isinstance(condition, Tensor):
        raise TypeError(f"where: condition must be a bool Tensor, got {type(condition).__name__}")
    if condition.dtype is not dt.bool:
        raise TypeError(f"where: condition must be a bool tensor, got {condition.dtype.name}")
    if isinstance(x1, Tensor) or isinstance(x2, Tensor):
        x1, x2 = _h.binary_operands(x1, x2, "where")
    else:
        x1 = _c.asarray(x1, device=condition.device)
        x1, x2 = _h.binary_operands(x1, x2, "where")
    return Where.apply(condition, x1, x2)


# -- comparisons, logic and bit ops (no gradient) -----------------------------------------------------


def _nograd_binary(name: str, doc: str, operator: Callable[[Any, Any], Any] | None = None) -> Callable[..., Tensor]:
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        if operator is not None:
            return operator(a, b)
        return getattr(ctx.xp, name)(*_arrays(ctx, a, b))

    cls = type(
        "".join(p.capitalize() for p in name.split("_")),
        (_NoGrad,),
        {"__slots__": (), "forward": staticmethod(forward), "__module__": __name__},
    )

    def op(x1: Any, x2: Any, /) -> Tensor:
        return _binary(cls, x1, x2)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


equal = _nograd_binary("equal", "Element-wise ``x1 == x2`` (bool).", lambda a, b: a == b)
not_equal = _nograd_binary("not_equal", "Element-wise ``x1 != x2`` (bool).", lambda a, b: a != b)
less = _nograd_binary("less", "Element-wise ``x1 < x2`` (bool).", lambda a, b: a < b)
less_equal = _nograd_binary("less_equal", "Element-wise ``x1 <= x2`` (bool).", lambda a, b: a <= b)
greater = _nograd_binary("greater", "Element-wise ``x1 > x2`` (bool).", lambda a, b: a > b)
greater_equal = _nograd_binary("greater_equal", "Element-wise ``x1 >= x2`` (bool).", lambda a, b: a >= b)
logical_and = _nograd_binary("logical_and", "Element-wise logical AND.")
logical_or = _nograd_binary("logical_or", "Element-wise logical OR.")
logical_xor = _nograd_binary("logical_xor", "Element-wise logical XOR.")
bitwise_and = _nograd_binary("bitwise_and", "Bit-wise AND (logical on bools).", lambda a, b: a & b)
bitwise_or = _nograd_binary("bitwise_or", "Bit-wise OR (logical on bools).", lambda a, b: a | b)
bitwise_xor = _nograd_binary("bitwise_xor", "Bit-wise XOR (logical on bools).", lambda a, b: a ^ b)
bitwise_left_shift = _nograd_binary("bitwise_left_shift", "Shift bits left.", lambda a, b: a << b)
bitwise_right_shift = _nograd_binary("bitwise_right_shift", "Shift bits right.", lambda a, b: a >> b)


class FloorDivide(_NoGrad):
    __slots__ = ()
    jvp = staticmethod(lambda ctx, ta, tb: None)  # piecewise constant: a zero tangent, as its zero gradient

    @staticmethod
    def forward(ctx, a, b):
        q = a // b
        if getattr(q, "dtype", None) in ctx.device.float_natives:
            # NumPy's a // b is NaN for inf // finite and -1 for 1 // -inf; the standard gives
            # floor(a / b) wherever an operand is infinite (+-inf, or a signed zero)
            xp = ctx.xp
            a, b = _arrays(ctx, a, b)
            q = xp.where(xp.isinf(a) | xp.isinf(b), xp.floor(a / b), q)
        return q


class IntegerDivisionByZeroError(ZeroDivisionError, RuntimeError):
    """An integer tensor divided by zero: Python's ``ZeroDivisionError``, and the ``RuntimeError`` PyTorch raises."""


def check_integer_divisor(x1: Any, x2: Any, name: str) -> None:
    """Raise :class:`IntegerDivisionByZeroError` where integer operands have a zero divisor, as PyTorch does (float
    division by zero stays inf/NaN). One reduction over ``x2``, and only for integer dtypes."""
    ref = x1 if isinstance(x1, Tensor) else x2
    if not isinstance(ref, Tensor) or ref.dtype.kind not in "iu":
        return
    if isinstance(x2, Tensor):
        if x2.dtype.kind not in "iu" or x2.size == 0:
            return
        from . import reduction as _r  # reduction imports this module

        while hasattr(x2, "_phys"):  # under vmap: every example's divisor at once
            x2 = x2._phys
        zero = bool(_r.any(equal(x2, 0)).item())
    else:
        zero = type(x2) is int and x2 == 0
    if zero:
        raise IntegerDivisionByZeroError(
            f"{name}: integer division by zero (a divisor of the {ref.dtype.name} operands is 0); "
            "integer tensors cannot hold inf or NaN: make the divisor nonzero or divide float tensors"
        )


def floor_divide(x1: Any, x2: Any, /) -> Tensor:
    """Floor division, ``floor(x1 / x2)`` (gradient 0); infinite operands follow the standard's special cases.

    An integer divisor of 0 raises :class:`IntegerDivisionByZeroError`, as in PyTorch."""
    x1, x2 = _h.binary_operands(x1, x2, "floor_divide")
    check_integer_divisor(x1, x2, "floor_divide")
    return FloorDivide.apply(x1, x2)


class Remainder(Function):
    native = True

    @staticmethod
    def forward(ctx, a, b):
        return a % b

    @staticmethod
    def backward(ctx, gy):
        a, b = ctx.inputs
        gb = None
        if ctx.needs_input_grad[1]:
            gb = _h.unbroadcast(-gy * floor(a / b), b)
        return _h.unbroadcast(gy, a), gb

    @staticmethod
    def jvp(ctx, ta, tb):
        a, b = ctx.inputs
        return add_tangents(ta, None if tb is None else -tb * floor(a / b))


def remainder(x1: Any, x2: Any, /) -> Tensor:
    """``x1 % x2`` with the sign of ``x2`` (Python's convention); an integer divisor of 0 raises, as in PyTorch."""
    x1, x2 = _h.binary_operands(x1, x2, "remainder")
    check_integer_divisor(x1, x2, "remainder")
    return Remainder.apply(x1, x2)


def _real_part(z: Tensor) -> Tensor:
    from .complex import real  # complex imports this module

    return real(z)
