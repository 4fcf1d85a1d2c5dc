"""A conformance kit for backend authors: subclass, name your backend, run pytest.

::

    # tests/test_my_backend.py
    from lucid_core.testing import BackendConformance

    class TestMine(BackendConformance):
        backend = "mine"
        # tests your backend cannot pass, with the reason (they are reported as skipped)
        known_failures = {"test_float64_gradients": "no float64 on this device"}

Each test checks one contract the core relies on: values of ops against Python's ``math``,
gradients against finite differences, agreement with the NumPy backend when it is installed,
device moves, random seeding, lazy evaluation and a small training loop. Lucid's own NumPy and
MLX backends run this same kit. Importing this module needs pytest (a test dependency only).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

import lucid_core as lc

__all__ = ["BackendConformance", "WritesConformance"]

_UNARY: dict[str, tuple[Callable[[Any], Any], Callable[[float], float], tuple[float, ...]]] = {
    "exp": (lc.exp, math.exp, (-1.5, 0.0, 0.7)),
    "log": (lc.log, math.log, (0.3, 1.0, 4.0)),
    "sqrt": (lc.sqrt, math.sqrt, (0.25, 1.0, 9.0)),
    "tanh": (lc.tanh, math.tanh, (-2.0, 0.1, 3.0)),
    "sin": (lc.sin, math.sin, (-1.0, 0.5, 2.0)),
    "cos": (lc.cos, math.cos, (-1.0, 0.5, 2.0)),
    "sigmoid": (lc.sigmoid, lambda v: 1 / (1 + math.exp(-v)), (-30.0, 0.0, 4.0)),
    "erf": (lc.erf, math.erf, (-1.0, 0.2, 2.0)),
    "abs": (lc.abs, abs, (-2.0, 0.0, 3.0)),
    "log1p": (lc.log1p, math.log1p, (1e-4, 0.5, 3.0)),
}


def _close(a: Any, b: Any, rel: float, abs_: float = 1e-6) -> bool:
    if isinstance(a, list):
        return len(a) == len(b) and all(_close(x, y, rel, abs_) for x, y in zip(a, b))
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


# -- writes, masks and indexing gradients (issue 13) ------------------------------------------------------
# A separate block so that each family of checks stays easy to read and to merge; BackendConformance
# inherits these. They use its helpers (``t``, ``device``, ``_gradcheck``) through ``self``.


class WritesConformance:
    """Checks that writes land and stay differentiable: masks as the standard allows them, ``x[key] = v``
    with its gradient, indexing gradients, the version counter, and detached views that write through."""

    t: Callable[..., lc.Tensor]
    _gradcheck: Callable[..., None]

    def test_boolean_masks_are_indexed_as_the_standard_allows(self) -> None:
        x = self.t([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]])
        assert x[x > 0].tolist() == [1.0, 3.0, 5.0]
        assert x[self.t([False, True])].tolist() == [[-4.0, 5.0, -6.0]]
        assert x[:, self.t([True, False, True])].tolist() == [[1.0, 3.0], [-4.0, -6.0]]
        y = self.t([1.0, -2.0, 3.0])
        y[y < 0] = 0.0
        assert y.tolist() == [1.0, 0.0, 3.0]

    def test_setitem_writes_in_place(self) -> None:
        x = lc.zeros(2, 3, device=self.device)
        alias = x
        x[0] = 1.0
        x[1, 1:] = self.t([5.0, 6.0])
        x[self.t([1]), self.t([0])] = self.t([7], dtype=lc.int64)  # cast to the tensor's dtype
        assert alias.tolist() == [[1.0, 1.0, 1.0], [7.0, 5.0, 6.0]] and x.dtype is lc.float32

    def test_setitem_gradients(self) -> None:
        mask = self.t([[True, False], [False, True], [True, True]])
        idx = self.t([2, 0])

        def fn(b: lc.Tensor, v: lc.Tensor) -> lc.Tensor:
            z = b * 2.0
            z[1:, 0] = v[:2] * v[:2]
            z[idx] = z[idx] + 1.0
            z[mask] = v * 3.0
            return z * b

        self._gradcheck(fn, [[0.5, -1.0], [2.0, 0.3], [-0.7, 1.1]], [0.2, -0.4, 0.9, 1.3])

    def test_setitem_of_a_graph_value_into_a_plain_tensor(self) -> None:
        x = self.t([1.0, 2.0], requires_grad=True)
        z = lc.zeros(3, device=self.device)
        z[1:] = x * 2.0
        assert z.requires_grad and not z.is_leaf
        (z.sum() + x.sum()).backward()
        assert x.grad.tolist() == [3.0, 3.0]

    def test_index_gradients_accumulate_repeats_and_masks(self) -> None:
        x = self.t([1.0, 2.0, 3.0], requires_grad=True)
        (x[self.t([0, 0, 2, 0])].sum() + x[x > 1.5].sum() * 2.0).backward()
        assert x.grad.tolist() == [3.0, 2.0, 3.0]
        self._gradcheck(lambda a: a[self.t([1, 1, 0]), 1:] * a[a > 0.0].sum(), [[0.5, -1.0, 2.0], [0.3, 0.8, -0.2]])

    def test_in_place_on_a_non_leaf_writes_and_differentiates(self) -> None:
        a = self.t([1.0, 2.0], requires_grad=True)
        y = a * 2.0
        assert y.add_(1.0) is y and y.tolist() == [3.0, 5.0]
        (y * y).sum().backward()
        assert a.grad.tolist() == [12.0, 20.0]
        with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
            a.mul_(2.0)

    def test_writing_a_tensor_saved_for_backward_raises(self) -> None:
        a = self.t([1.0, 2.0], requires_grad=True)
        y = lc.exp(a)  # exp keeps its output for backward
        z = y * y  # multiply keeps its inputs
        with lc.no_grad():
            y.add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an in-place operation"):
            z.sum().backward()

    def test_detached_views_and_copy_write_through(self) -> None:
        p = lc.Parameter(self.t([1.0, 2.0, 3.0]))
        view = p.detach()
        view.copy_(self.t([4.0, 5.0, 6.0]))
        assert p.tolist() == [4.0, 5.0, 6.0]
        view[0] = 0.0
        view.mul_(2.0)
        view += 1.0
        assert p.tolist() == [1.0, 11.0, 13.0]
        with lc.no_grad():
            p.sub_(self.t([1.0, 1.0, 1.0]))
        assert view.tolist() == [0.0, 10.0, 12.0]
        assert p.is_leaf and p.requires_grad


class BackendConformance(WritesConformance):
    """Abstract test class: set ``backend`` to your backend's name in a subclass.

    Attributes:
        backend: the registered backend name to test.
        device_type: which of its devices (default: the backend's default device).
        known_failures: ``{test name: reason}`` for documented exceptions; those tests skip.
    """

    backend: ClassVar[str] = ""
    device_type: ClassVar[str | None] = None
    known_failures: ClassVar[dict[str, str]] = {}

    # -- plumbing ------------------------------------------------------------------------------------
    @pytest.fixture(autouse=True)
    def _conformance_setup(self, request: pytest.FixtureRequest) -> None:
        if not self.backend:
            pytest.skip("BackendConformance is abstract: set `backend` in a subclass")
        reason = self.known_failures.get(request.node.originalname)
        if reason:
            pytest.skip(f"known failure of backend {self.backend!r}: {reason}")
        lc.manual_seed(1234)

    @property
    def device(self) -> lc.Device:
        """The device under test."""
        b = lc.get_backend(self.backend)
        return b.devices[self.device_type] if self.device_type else b.default_device

    @property
    def has_float64(self) -> bool:
        """Whether the backend supports float64 (finite-difference checks need it)."""
        return lc.float64 in lc.get_backend(self.backend).dtypes

    def t(self, values: Any, dtype: Any = None, requires_grad: bool = False) -> lc.Tensor:
        """A tensor of ``values`` on the device under test."""
        return lc.asarray(values, dtype=dtype, device=self.device, requires_grad=requires_grad)

    # -- registration and creation -------------------------------------------------------------------
    def test_backend_is_listed_and_working(self) -> None:
        rows = {b.name: b for b in lc.backends()}
        assert self.backend in rows, f"{self.backend!r} is not registered; found {sorted(rows)}"
        assert rows[self.backend].status == "ok", rows[self.backend].status
        assert str(self.device) in rows[self.backend].devices

    def test_creation_and_default_dtypes(self) -> None:
        assert lc.zeros(2, 3, device=self.device).shape == (2, 3)
        assert lc.ones(2, device=self.device).tolist() == [1.0, 1.0]
        assert lc.full((2,), 7.0, device=self.device).tolist() == [7.0, 7.0]
        assert lc.arange(4, device=self.device).tolist() == [0, 1, 2, 3]
        assert lc.arange(4, device=self.device).dtype is lc.int64
        assert lc.asarray(1.5, device=self.device).dtype is lc.float32
        assert lc.eye(2, device=self.device).tolist() == [[1.0, 0.0], [0.0, 1.0]]
        assert _close(lc.linspace(0.0, 1.0, 3, device=self.device).tolist(), [0.0, 0.5, 1.0], 1e-6)
        t = self.t([[1, 2], [3, 4]])
        assert t.device is self.device and t.tolist() == [[1, 2], [3, 4]]

    def test_bytes_round_trip(self) -> None:
        t = self.t([[1.5, -2.0], [0.25, 8.0]])
        back = lc.frombuffer(t.tobytes(), dtype=lc.float32, shape=(2, 2), device=self.device)
        assert back.tolist() == t.tolist()

    # -- values ----------------------------------------------------------------------------------------
    @pytest.mark.parametrize("name", sorted(_UNARY))
    def test_unary_values_match_math(self, name: str) -> None:
        op, ref, points = _UNARY[name]
        got = op(self.t(list(points))).tolist()
        assert _close(got, [ref(v) for v in points], 1e-5), f"{name}: {got}"

    def test_binary_ops_broadcast_and_promote(self) -> None:
        a = self.t([[1.0], [2.0]])
        b = self.t([10.0, 20.0, 30.0])
        assert (a + b).tolist() == [[11.0, 21.0, 31.0], [12.0, 22.0, 32.0]]
        assert (a * 2 - 1).tolist() == [[1.0], [3.0]]
        assert (self.t([1, 2]) * 0.5).dtype is lc.float32
        assert (self.t([1, 2]) / self.t([2, 4])).tolist() == [0.5, 0.5]
        assert (self.t([1.0, 5.0]) > 2.0).tolist() == [False, True]

    def test_reductions(self) -> None:
        x = self.t([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        assert x.sum().item() == 21.0
        assert x.sum(axis=0).tolist() == [5.0, 7.0, 9.0]
        assert x.mean(axis=1, keepdims=True).tolist() == [[2.0], [5.0]]
        assert lc.max(x, axis=1).tolist() == [3.0, 6.0]
        assert lc.prod(x, axis=1).tolist() == [6.0, 120.0]
        assert _close(lc.var(x, axis=1, correction=1).tolist(), [1.0, 1.0], 1e-6)
        assert _close(
            lc.logsumexp(x, axis=1).tolist(), [math.log(sum(math.exp(v) for v in r)) for r in x.tolist()], 1e-5
        )
        assert x.argmax(axis=1).tolist() == [2, 2]

    def test_matmul_and_manipulation(self) -> None:
        a = self.t([[1.0, 2.0], [3.0, 4.0]])
        assert (a @ a).tolist() == [[7.0, 10.0], [15.0, 22.0]]
        assert a.T.tolist() == [[1.0, 3.0], [2.0, 4.0]]
        assert lc.concat([a, a], axis=1).shape == (2, 4)
        assert lc.stack([a, a]).shape == (2, 2, 2)
        assert a.reshape(4).tolist() == [1.0, 2.0, 3.0, 4.0]
        assert [p.tolist() for p in lc.split(a, 2, axis=0)] == [[[1.0, 2.0]], [[3.0, 4.0]]]
        assert lc.einsum("ij,jk->ik", a, a).tolist() == [[7.0, 10.0], [15.0, 22.0]]

    def test_indexing(self) -> None:
        x = self.t([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        assert x[1].tolist() == [4.0, 5.0, 6.0]
        assert x[:, ::2].tolist() == [[1.0, 3.0], [4.0, 6.0]]
        assert x[self.t([1, 1, 0])].tolist() == [[4.0, 5.0, 6.0], [4.0, 5.0, 6.0], [1.0, 2.0, 3.0]]
        with pytest.raises(IndexError):
            x[5]

    # -- gradients ------------------------------------------------------------------------------------
    def _gradcheck(self, fn: Callable[..., Any], *values: Any) -> None:
        if self.has_float64:
            inputs = [self.t(v, dtype=lc.float64, requires_grad=True) for v in values]
            assert lc.gradcheck(fn, inputs)
        else:
            inputs = [self.t(v, dtype=lc.float32, requires_grad=True) for v in values]
            out = fn(*inputs)
            out = out if isinstance(out, lc.Tensor) else out[0]
            out.sum().backward()
            assert all(i.grad is not None and i.grad.shape == i.shape for i in inputs)

    def test_elementwise_gradients(self) -> None:
        self._gradcheck(lambda x, y: lc.tanh(x) * y + lc.exp(x / (y * y + 1.0)), [0.1, -0.5, 0.9], [1.2, 0.3, -0.8])

    def test_broadcast_and_reduction_gradients(self) -> None:
        self._gradcheck(
            lambda x, y: lc.logsumexp(x * y, axis=1) + lc.max(x - y, axis=0).sum(),
            [[0.1, 0.4], [-0.3, 0.9]],
            [0.5, -1.1],
        )

    def test_matmul_and_indexing_gradients(self) -> None:
        idx = self.t([0, 2, 0])
        self._gradcheck(
            lambda a, b: (a @ b)[idx, 1:], [[0.1, 0.2], [0.3, -0.4], [0.5, 0.6]], [[1.0, -1.0, 0.5], [0.2, 0.3, -0.7]]
        )

    def test_second_derivative(self) -> None:
        if not self.has_float64:
            pytest.skip("needs float64")
        x = self.t(0.3, dtype=lc.float64, requires_grad=True)
        (g,) = lc.grad(lc.tanh(x), x, create_graph=True)
        (gg,) = lc.grad(g, x)
        assert math.isclose(gg.item(), -2 * math.tanh(0.3) * (1 - math.tanh(0.3) ** 2), rel_tol=1e-9)

    # -- agreement with the reference backend ------------------------------------------------------------
    def test_agrees_with_numpy_backend(self) -> None:
        names = {b.name for b in lc.backends() if b.status == "ok"}
        if "numpy" not in names or self.backend == "numpy":
            pytest.skip("needs the numpy backend as a reference")

        def run(device: Any) -> tuple[list[Any], list[Any]]:
            x = lc.asarray([[0.5, -1.0, 2.0], [0.1, 0.2, -0.3]], device=device, requires_grad=True)
            w = lc.asarray([[1.0, 0.5], [-0.5, 0.25], [0.3, -0.2]], device=device, requires_grad=True)
            y = lc.sigmoid(x @ w).sum() + lc.logsumexp(x, axis=1).mean()
            y.backward()
            return [y.item()], [x.grad.tolist(), w.grad.tolist()]

        v_ref, g_ref = run("numpy")
        v, g = run(self.device)
        assert _close(v, v_ref, 1e-5) and _close(g, g_ref, 1e-5)

    def test_moves_to_and_from_numpy_keep_gradients(self) -> None:
        names = {b.name for b in lc.backends() if b.status == "ok"}
        if "numpy" not in names or self.backend == "numpy":
            pytest.skip("needs the numpy backend")
        x = lc.asarray([1.0, 2.0], device="numpy", requires_grad=True)
        y = x.to(self.device)
        assert y.device is self.device and y.requires_grad
        (y * 3.0).to("numpy").sum().backward()
        assert x.grad.tolist() == [3.0, 3.0]

    # -- random numbers, laziness, training ---------------------------------------------------------------
    def test_manual_seed_repeats_exactly(self) -> None:
        lc.manual_seed(7)
        a = lc.randn(5, device=self.device).tolist()
        lc.manual_seed(7)
        b = lc.randn(5, device=self.device).tolist()
        assert a == b
        assert lc.randn(5, device=self.device).tolist() != b
        r = lc.randint(0, 3, (50,), device=self.device).tolist()
        assert set(r) <= {0, 1, 2}

    def test_eval_forces_lazy_results(self) -> None:
        x = lc.ones(3, device=self.device) * 2.0
        lc.eval(x)
        assert x.eval() is x and x.tolist() == [2.0, 2.0, 2.0]

    def test_small_training_loop_converges(self) -> None:
        x = lc.randn(64, 3, device=self.device)
        true_w = self.t([[1.0], [-2.0], [0.5]])
        y = x @ true_w
        w = lc.zeros(3, 1, device=self.device, requires_grad=True)
        first = None
        for _ in range(150):
            loss = ((x @ w - y) ** 2).mean()
            first = loss.item() if first is None else first
            loss.backward()
            with lc.no_grad():
                w -= 0.1 * w.grad
            w.grad = None
        assert loss.item() < 1e-3 * first
