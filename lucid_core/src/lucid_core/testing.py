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

from ._dtypes import FLOAT8_DTYPES

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

    def _needs_masks(self) -> None:
        if not lc.get_backend(self.backend).capabilities.get("data_dependent_shapes", True):
            pytest.skip(f"backend {self.backend!r} declares no data-dependent shapes (boolean masks)")

    def test_boolean_masks_are_indexed_as_the_standard_allows(self) -> None:
        self._needs_masks()
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
        self._needs_masks()
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
        self._needs_masks()
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


# == The backend contract: layers, training, dtypes, host transfer, lazy graphs ==========================
# A mixin of BackendConformance (kept apart from the class body so each block reads on its own). The layer
# and training checks need lucid_nn and lucid_optim: lucid_core does not depend on them, so they are
# imported when a test runs, and those tests skip where the frontends are not installed.


def _frontends() -> tuple[Any, Any]:
    return pytest.importorskip("lucid_nn"), pytest.importorskip("lucid_optim")


def _values(t: Any) -> Any:
    return t.detach().tolist() if isinstance(t, lc.Tensor) else t


def _near(a: Any, b: Any, rel: float, abs_: float, what: str) -> None:
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), f"{what}: shapes differ"
        for x, y in zip(a, b):
            _near(x, y, rel, abs_, what)
        return
    assert math.isclose(a, b, rel_tol=rel, abs_tol=abs_), f"{what}: {a} != {b} (the numpy backend's value)"


def _layer_cases(nn: Any) -> dict[str, tuple[Callable[[], Any], tuple[int, ...]]]:
    """name -> (a module factory, its input's shape)."""
    return {
        "conv2d": (lambda: nn.Conv2d(2, 4, 3, stride=2, padding=1, groups=2), (2, 2, 7, 6)),
        "conv1d_dilated": (lambda: nn.Conv1d(3, 2, 3, dilation=2, padding="same"), (2, 3, 9)),
        "conv_transpose2d": (lambda: nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, output_padding=1), (1, 2, 4, 3)),
        "max_pool2d": (lambda: nn.MaxPool2d(3, stride=2, padding=1), (2, 3, 7, 6)),
        "max_pool2d_tiles": (lambda: nn.MaxPool2d(2), (2, 3, 6, 4)),
        "avg_pool2d": (lambda: nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True), (1, 2, 6, 7)),
        "adaptive_avg_pool2d": (lambda: nn.AdaptiveAvgPool2d((2, 3)), (1, 2, 5, 7)),
        "layer_norm": (lambda: nn.LayerNorm(6), (3, 4, 6)),
        "group_norm": (lambda: nn.GroupNorm(2, 4), (2, 4, 3, 3)),
        "batch_norm2d": (lambda: nn.BatchNorm2d(3), (4, 3, 2, 2)),
        "rms_norm": (lambda: nn.RMSNorm(5), (2, 3, 5)),
        "attention": (lambda: nn.MultiheadAttention(8, 2, batch_first=True), (2, 5, 8)),
        "encoder_layer": (
            lambda: nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True),
            (2, 4, 8),
        ),
        "lstm": (lambda: nn.LSTM(3, 4, num_layers=2), (5, 2, 3)),
    }


def _run_layer(nn: Any, name: str, device: Any) -> tuple[Any, Any, dict[str, Any]]:
    """Output, input gradient and parameter gradients of one seeded layer case on ``device``."""
    factory, shape = _layer_cases(nn)[name]
    lc.manual_seed(7)
    module = factory()
    x_host = lc.randn(*shape, device="numpy")
    module.to(device)
    x = x_host.to(device).requires_grad_()
    out = module(x, x, x)[0] if name == "attention" else module(x)
    out = out[0] if isinstance(out, tuple) else out
    cot = lc.randn(*out.shape, device="numpy").to(device)  # an uneven cotangent: every gradient counts
    (out * cot).sum().backward()
    grads = {n: _values(p.grad) for n, p in module.named_parameters()}
    return _values(out), _values(x.grad), grads


class _ContractConformance:
    """Checks of the contract beyond single ops (see the block comment above)."""

    backend: ClassVar[str]
    device: Any
    has_float64: bool

    def _needs_numpy_reference(self) -> None:
        if "numpy" not in {b.name for b in lc.backends() if b.status == "ok"}:
            pytest.skip("needs the numpy backend as a reference")

    @pytest.mark.parametrize(
        "name",
        [
            "conv2d", "conv1d_dilated", "conv_transpose2d", "max_pool2d", "max_pool2d_tiles", "avg_pool2d",
            "adaptive_avg_pool2d", "layer_norm", "group_norm", "batch_norm2d", "rms_norm", "attention",
            "encoder_layer", "lstm",
        ],
    )  # fmt: skip
    def test_layer_forward_and_backward_match_numpy_backend(self, name: str) -> None:
        nn, _ = _frontends()
        self._needs_numpy_reference()
        want = _run_layer(nn, name, "numpy")
        got = _run_layer(nn, name, self.device)
        for what, a, b in (("output", got[0], want[0]), ("input gradient", got[1], want[1])):
            _near(a, b, 1e-4, 1e-5, f"{name} {what}")
        assert sorted(got[2]) == sorted(want[2])
        for k in want[2]:
            assert got[2][k] is not None, f"{name}: parameter {k} got no gradient"
            _near(got[2][k], want[2][k], 1e-4, 1e-5, f"{name} gradient of {k}")

    def test_training_steps_match_numpy_backend(self) -> None:
        nn, optim = _frontends()
        self._needs_numpy_reference()

        def train(device: Any) -> tuple[list[float], dict[str, Any]]:
            lc.manual_seed(3)
            model = nn.Sequential(
                nn.Conv2d(1, 3, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(3 * 3 * 3, 4)
            )
            x = lc.randn(8, 1, 6, 6, device="numpy").to(device)
            y = lc.asarray([0, 1, 2, 3, 3, 2, 1, 0], device="numpy").to(device)
            model.to(device)
            opt = optim.Adam(model.parameters(), lr=0.05)
            losses = []
            for _ in range(4):
                loss = nn.functional.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
            return losses, {k: _values(v) for k, v in model.state_dict().items()}

        want_losses, want_state = train("numpy")
        losses, state = train(self.device)
        _near(losses, want_losses, 1e-4, 1e-5, "losses")
        assert losses[-1] < losses[0], f"the loss did not decrease: {losses}"
        for k in want_state:
            _near(state[k], want_state[k], 1e-3, 1e-4, f"parameter {k} after training")

    def test_sort_and_its_gradient(self) -> None:
        x = self.t([[3.0, 1.0, 2.0, 1.0], [0.0, 5.0, 4.0, -1.0]], requires_grad=True)
        y = lc.sort(x, axis=1, descending=True)
        assert y.tolist() == [[3.0, 2.0, 1.0, 1.0], [5.0, 4.0, 0.0, -1.0]]
        (y * self.t([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])).sum().backward()
        assert x.grad.tolist() == [[1.0, 3.0, 2.0, 4.0], [7.0, 5.0, 6.0, 8.0]]  # ties keep their order
        assert lc.argsort(self.t([2.0, -1.0, 0.5])).tolist() == [1, 2, 0]

    def test_every_advertised_dtype_round_trips(self) -> None:
        b = lc.get_backend(self.backend)
        if b.capabilities.get("float64", False):
            assert lc.float64 in b.dtypes, "the float64 capability is claimed but float64 is not among the dtypes"
        for d in b.dtypes:
            storage_only = d in FLOAT8_DTYPES  # cast dtypes (powers of two only in e8m0fnu), no arithmetic
            values = [True, False] if d is lc.bool else [1, 2, 4] if storage_only else [1, 0, 3]
            t = self.t(values, dtype=d)
            assert t.dtype is d, f"asked for {d.name}, got {t.dtype.name}"
            assert b.lucid_dtype(t._data.dtype) is d, f"{d.name}: the native array reports {t._data.dtype!r}"
            host = t.numpy()
            assert host.dtype.name == d.name, f"{d.name} came to the host as {host.dtype.name}"
            assert t.tolist() == values, f"{d.name}: {t.tolist()}"
            if d.kind in "iufc" and not storage_only:
                assert (t + t).dtype is d and lc.sum(t, dtype=d).dtype is d, f"{d.name}: arithmetic changed the dtype"
                assert lc.sum(t, dtype=d).item() == sum(values), f"{d.name}: the sum is {lc.sum(t, dtype=d).item()}"
        if lc.float64 in b.dtypes:  # a float64 that is really float32 loses this bit
            tiny = self.t([1.0 + 2.0**-40], dtype=lc.float64)
            assert (tiny - 1.0).item() == 2.0**-40, "float64 is advertised but does not hold float64 values"
            assert lc.exp(self.t([0.0], dtype=lc.float64)).dtype is lc.float64
        big = self.t([2**40 + 1], dtype=lc.int64)
        assert (big + 1).item() == 2**40 + 2, "int64 does not hold 2**40"

    def test_an_unsupported_dtype_is_a_clear_error(self) -> None:
        b = lc.get_backend(self.backend)
        missing = [d for d in (lc.float64, lc.complex128, lc.uint64, lc.float16) if d not in b.dtypes]
        if not missing:
            pytest.skip("the backend holds every dtype")
        with pytest.raises(TypeError, match=f"backend {self.backend!r} does not support dtype {missing[0].name}"):
            self.t([1], dtype=missing[0])

    def test_host_transfer(self) -> None:
        x = self.t([[1.5, -2.0], [0.25, 8.0]])
        host = x.numpy()
        assert type(host).__module__ == "numpy" and host.dtype.name == "float32"
        assert host.shape == (2, 2) and host.tolist() == [[1.5, -2.0], [0.25, 8.0]]
        s = x.sum().item()
        assert type(s) is float and s == 7.75
        assert type(self.t([3]).sum().item()) is int and type((x > 0).any().item()) is bool
        assert x.T.numpy().tolist() == [[1.5, 0.25], [-2.0, 8.0]]  # a transposed layout comes over in order
        if self.backend != "numpy" and "numpy" in {b.name for b in lc.backends() if b.status == "ok"}:
            back = x.to("numpy").to(self.device)
            assert back.device is self.device and back.tolist() == x.tolist()

    def test_lazy_graphs_stay_bounded_over_training(self) -> None:
        b = lc.get_backend(self.backend)
        if not b.capabilities.get("lazy", False):
            pytest.skip("not a lazy backend")
        nn, optim = _frontends()
        lc.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).to(self.device)
        opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        x = lc.randn(16, 4, device=self.device)
        y = lc.randn(16, 2, device=self.device)

        def sizes() -> list[int | None]:
            tensors = [t for p in model.parameters() for t in (p, *opt.state[p].values()) if isinstance(t, lc.Tensor)]
            return [b.graph_size(t._data) for t in tensors]

        history = []
        for _ in range(12):
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            history.append(sizes())
        if any(s is None for s in history[-1]):
            pytest.skip(f"backend {self.backend!r} does not report graph sizes (Backend.graph_size)")
        assert history[-1] == history[2], (
            f"a parameter's pending graph grew over training ({history[2]} after 3 steps, {history[-1]} after 12): "
            "Backend.eval should hand back evaluated arrays (e.g. dask's persist) for the core to rebind"
        )


class BackendConformance(WritesConformance, _ContractConformance):
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
