"""Complex parts: ``real`` and ``imag``, with PyTorch's conjugate convention for gradients."""

from __future__ import annotations

from .._autograd import Function
from .._tensor import Tensor, check_tensor
from . import creation as _c
from . import manipulation as _m

__all__ = ["real", "imag"]


class Real(Function):
    native = True
    linear = True  # forward mode: the op itself on the tangents

    @staticmethod
    def forward(ctx, x):
        return ctx.xp.real(x)

    @staticmethod
    def backward(ctx, gy):

        return _m.astype(gy, ctx.inputs[0].dtype)


class Imag(Function):
    native = True
    linear = True  # forward mode: the op itself on the tangents

    @staticmethod
    def forward(ctx, x):
        return ctx.xp.imag(x)

    @staticmethod
    def backward(ctx, gy):

        return _m.astype(gy, ctx.inputs[0].dtype) * 1j


def real(x: Tensor, /) -> Tensor:
    """The real part of each element (a real dtype of the same precision); real inputs come back as they are."""
    check_tensor(x, "real")
    if x.dtype.kind != "c":
        return x
    from .. import _views

    return _views.make_view(Real.apply(x), x, _views.Component(False))  # a view: writes land in x


def imag(x: Tensor, /) -> Tensor:
    """The imaginary part of each element (a real dtype of the same precision); zeros for real inputs."""
    check_tensor(x, "imag")
    if x.dtype.kind != "c":
        if x.dtype.kind not in "fc":
            raise TypeError(f"imag: expected a floating-point tensor, got {x.dtype.name}")
        return _c.zeros_like(x)
    from .. import _views

    return _views.make_view(Imag.apply(x), x, _views.Component(True))  # a view: writes land in x
