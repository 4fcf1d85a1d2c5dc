"""``vmap`` by batching rules: every op against a loop over the examples, pytrees, nesting, chunks, randomness,
errors, in-place writes, kernel counts and composition with reverse mode (per-sample gradients).

The op sweep reuses the OpInfo table (``tests/pytorch_face/opinfo.py``): each sample's tensors get a second
example (the same values in reverse order, so every op's domain still holds), ``vmap`` runs both at once and the
result must equal the two calls stacked. Each row's first sample runs by default; the others (broadcasting, 0-d,
empty) run under ``-m opinfo_full``.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import lucid
import lucid_core as lc
import lucid_nn.functional as F
from lucid_core import _autograd
from lucid_core.func import _batching_rules as rules
from lucid_core.func import vmap
from lucid_core.func._vmap import BatchedTensor, _rule_for
from tests.pytorch_face.opinfo import ROWS, OpInfo, Sample, flat_results, row_id

#: ops whose result depends on the values in a way vmap cannot batch (PyTorch raises for these too): output
#: shapes that depend on the data (nonzero, unique, bincount, histc, repeat_interleave by a tensor,
#: masked_scatter), Python values read from a tensor (allclose, equal, is_nonzero, quantile of a tensor q)
DATA_DEPENDENT = {
    "argwhere", "nonzero", "unique_consecutive", "bincount", "histc/0", "allclose", "equal", "is_nonzero",
    "repeat_interleave/2", "masked_scatter", "quantile/2", "nanquantile/2",
}  # fmt: skip
#: ops that return Python values, not tensors (vmap returns only tensors, as PyTorch's)
NOT_TENSORS = {"is_same_size", "numel", "is_signed", "is_conj", "is_neg", "get_device"}


def _second(a: np.ndarray) -> np.ndarray:
    """A second example with the same values (so the op's domain holds) in another order."""
    return a.reshape(-1)[::-1].reshape(a.shape).copy()


def _caller(row: OpInfo, sample: Sample, device: Any) -> tuple[Any, list[int]]:
    pos = [i for i, a in enumerate(sample.args) if isinstance(a, np.ndarray)]

    def conv(v: Any) -> Any:
        return lucid.tensor(v, device=device) if isinstance(v, np.ndarray) else v

    def f(*ts: Any) -> Any:
        args = list(sample.args)
        for i, t in zip(pos, ts):
            args[i] = t
        args = [a if isinstance(a, lc.Tensor) else conv(a) for a in args]
        kwargs = {k: conv(v) for k, v in sample.kwargs.items()}
        if row.call is not None:
            return row.call(lucid, *args, **kwargs)
        if row.function:
            return getattr(lucid, row.name)(*args, **kwargs)
        return getattr(args[0], row.name)(*args[1:], **kwargs)

    return f, pos


def _numpy(t: Any) -> np.ndarray:
    return np.asarray(t.detach().numpy())


def _cases(full: bool) -> list[Any]:
    """Each row's first sample by default; the other samples (and the table's ``full`` ones) when ``full``."""
    out = []
    for row in ROWS:
        for i, s in enumerate(row.samples):
            if (s.full or i > 0) == full and any(isinstance(a, np.ndarray) for a in s.args):
                out.append(pytest.param(row, i, id=f"{row_id(row)}/{i}"))
    return out


def _check_against_loop(row: OpInfo, i: int, device: Any) -> None:
    sample = row.samples[i]
    if not any(t in device.backend.dtypes for t in (lc.float64,)):
        pytest.skip("float64 samples")
    f, pos = _caller(row, sample, device)
    examples = [[sample.args[j] for j in pos], [_second(sample.args[j]) for j in pos]]
    try:
        refs = [flat_results(f(*[lucid.tensor(a, device=device) for a in ex]), _numpy) for ex in examples]
    except Exception:  # noqa: BLE001 - the op refuses this sample outside vmap too (its own tests say how)
        pytest.skip("the sample raises without vmap")
    batched = [lucid.tensor(np.stack([examples[0][k], examples[1][k]]), device=device) for k in range(len(pos))]
    rid = row_id(row)
    if rid in NOT_TENSORS or row.name in NOT_TENSORS:
        with pytest.raises(ValueError, match="must only return Tensors"):
            vmap(f)(*batched)
        return
    if rid in DATA_DEPENDENT or f"{rid}/{i}" in DATA_DEPENDENT:
        with pytest.raises(RuntimeError, match="vmap"):
            vmap(f)(*batched)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the loop fallback's performance warning (tested on its own below)
        got = flat_results(vmap(f)(*batched), _numpy)
    assert len(got) == len(refs[0])
    for g, r0, r1 in zip(got, refs[0], refs[1]):
        want = np.stack([r0, r1])
        assert g.dtype == want.dtype, f"{rid}/{i}: dtype {g.dtype}, the loop gives {want.dtype}"
        assert g.shape == want.shape, f"{rid}/{i}: shape {g.shape}, the loop gives {want.shape}"
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-9, equal_nan=True, err_msg=f"{rid}/{i}")


@pytest.mark.parametrize(("row", "i"), _cases(full=False))
def test_op_under_vmap_equals_a_loop_over_examples(row: OpInfo, i: int, device: Any) -> None:
    _check_against_loop(row, i, device)


@pytest.mark.opinfo_full
@pytest.mark.parametrize(("row", "i"), _cases(full=True))
def test_op_under_vmap_equals_a_loop_full(row: OpInfo, i: int, device: Any, request: pytest.FixtureRequest) -> None:
    if "opinfo_full" not in (request.config.getoption("-m") or ""):
        pytest.skip("the other samples run with -m opinfo_full")
    _check_against_loop(row, i, device)


def _functions() -> list[type]:
    seen: set[type] = set()
    stack = [lc.Function]
    while stack:
        for c in stack.pop().__subclasses__():
            if c not in seen:
                seen.add(c)
                stack.append(c)
    return sorted(seen, key=lambda c: (c.__module__, c.__name__))


#: abstract bases (never applied themselves) and ops PyTorch refuses under vmap too
# CompiledBackward: the node of a compiled forward, never applied (compiled functions run eagerly under vmap)
_NO_RULE = {
    "_Triangle", "_NoGrad", "_Extremum", "_Logical", "_Index", "_Unary", "_CheckpointFunction", "CompiledBackward",
}  # fmt: skip


def test_every_op_of_lucid_core_and_lucid_nn_has_a_batching_rule() -> None:
    import lucid_nn  # noqa: F401  (its Functions join the registry)

    missing = [
        f"{c.__module__}.{c.__name__}"
        for c in _functions()
        if c.__module__.startswith(("lucid_core", "lucid_nn")) and c.__name__ not in _NO_RULE
        and _rule_for(c).kind == "none"
    ]  # fmt: skip
    assert not missing, f"ops without a batching rule: {missing}"


# -- in_dims / out_dims ------------------------------------------------------------------------------------------


def _t(a: Any, device: Any) -> lc.Tensor:
    return lc.asarray(np.asarray(a, dtype=np.float32), device=device)


def test_in_dims_none_negative_and_nested_trees(device: Any) -> None:
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    w = np.arange(3, dtype=np.float32)
    v = np.arange(4, dtype=np.float32) * 10

    def f(d: dict[str, Any], pair: tuple[Any, Any]) -> Any:
        return d["x"] * pair[0] + pair[1]

    out = vmap(f, in_dims=({"x": -1}, (None, 0)))({"x": _t(x, device)}, (_t(w, device), _t(v, device)))
    want = np.stack([x[..., i] * w + v[i] for i in range(4)])  # d["x"] batched on its last axis
    np.testing.assert_allclose(out.numpy(), want)


def test_out_dims_tree_and_unbatched_output(device: Any) -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    c = _t(np.ones(3), device)
    res = vmap(lambda t: {"a": t * 2, "b": (c, t.sum())}, out_dims={"a": 1, "b": (None, 0)})(_t(x, device))
    np.testing.assert_allclose(res["a"].numpy(), (x * 2).T)
    assert res["b"][0] is c  # out_dims None: returned as it is
    np.testing.assert_allclose(res["b"][1].numpy(), x.sum(1))


def test_out_dims_none_for_a_batched_output_raises(device: Any) -> None:
    with pytest.raises(ValueError, match="out_dim is None"):
        vmap(lambda t: t * 2, out_dims=None)(_t(np.ones((2, 3)), device))


def test_wrong_in_dims_and_sizes_raise(device: Any) -> None:
    x = _t(np.ones((2, 3)), device)
    with pytest.raises(ValueError, match="in_dim to satisfy"):
        vmap(lambda t: t, in_dims=2)(x)
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        vmap(lambda a, b: a + b)(x, _t(np.ones((3, 3)), device))
    with pytest.raises(ValueError, match="in_dims is not compatible"):
        vmap(lambda a, b: a + b, in_dims=(0,))(x, x)
    with pytest.raises(ValueError, match="non-Tensor"):
        vmap(lambda a, n: a * n, in_dims=(0, 0))(x, 3)


def test_logical_shape_inside_vmap(device: Any) -> None:
    seen = {}

    def f(t: Any) -> Any:
        seen.update(shape=t.shape, ndim=t.ndim, len=len(t), dtype=t.dtype, device=t.device, size=t.size)
        assert isinstance(t, BatchedTensor)
        return t

    vmap(f, in_dims=1)(_t(np.ones((3, 5, 4)), device))
    assert seen == {"shape": (3, 4), "ndim": 2, "len": 3, "dtype": lc.float32, "device": device, "size": 12}


# -- nesting and chunks ------------------------------------------------------------------------------------------


def test_nested_vmap_is_an_outer_product(device: Any) -> None:
    a = np.arange(3, dtype=np.float32)
    b = np.arange(4, dtype=np.float32) + 1
    out = vmap(vmap(lambda x, y: x * y + lc.sin(x), in_dims=(None, 0)), in_dims=(0, None))(_t(a, device), _t(b, device))
    np.testing.assert_allclose(out.numpy(), a[:, None] * b[None, :] + np.sin(a)[:, None], rtol=1e-6)


def test_nested_vmap_matmul_over_two_batch_axes(device: Any) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    w = rng.standard_normal((5, 6)).astype(np.float32)
    out = vmap(vmap(lambda m: m @ _t(w, device)))(_t(x, device))
    np.testing.assert_allclose(out.numpy(), x @ w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("chunk", [1, 2, 3, 10])
def test_chunk_size_gives_the_same_result(chunk: int, device: Any) -> None:
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    res = vmap(lambda t: (t * t).sum(), chunk_size=chunk)(_t(x, device))
    np.testing.assert_allclose(res.numpy(), (x * x).sum(1))


def test_chunk_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="chunk_size"):
        vmap(lambda t: t, chunk_size=0)


# -- randomness ----------------------------------------------------------------------------------------------------


def test_randomness_error_raises(device: Any) -> None:
    x = _t(np.zeros((4, 3)), device)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(lambda t: t + lc.rand(3, device=device))(x)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(lambda t: F.dropout(t, 0.5))(x)


def test_randomness_same_draws_once(device: Any) -> None:
    out = vmap(lambda t: t + lc.randn(3, device=device), randomness="same")(_t(np.zeros((4, 3)), device)).numpy()
    assert np.all(out == out[0]) and np.any(out[0] != 0)


def test_randomness_different_draws_per_example(device: Any) -> None:
    out = vmap(lambda t: F.dropout(t, 0.5), randomness="different")(_t(np.ones((8, 50)), device)).numpy()
    assert out.shape == (8, 50)
    assert set(np.unique(out)) <= {0.0, 2.0}
    assert len({row.tobytes() for row in out}) == 8  # each example its own mask


def test_randomness_different_in_place_normal_(device: Any) -> None:
    x = _t(np.zeros((4, 3)), device)
    out = vmap(lambda t: t.clone().normal_(), randomness="different")(x).numpy()
    assert len({row.tobytes() for row in out}) == 4


def test_randomness_mode_is_validated() -> None:
    with pytest.raises(RuntimeError, match="randomness"):
        vmap(lambda t: t, randomness="sometimes")


# -- errors ----------------------------------------------------------------------------------------------------


def test_data_dependent_control_flow_raises(device: Any) -> None:
    x = _t(np.ones((2, 3)), device)
    for fn in (lambda t: t.sum().item(), lambda t: t * (1 if t.sum() > 0 else 0), lambda t: float(t.sum()),
               lambda t: t.numpy(), lambda t: t.tolist()):  # fmt: skip
        with pytest.raises(RuntimeError, match="data-dependent control flow"):
            vmap(fn)(x)


def test_op_without_a_rule_names_it(device: Any) -> None:
    class Cube(lc.Function):
        @staticmethod
        def forward(ctx: Any, a: Any) -> Any:
            return a * a * a

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g

    x = _t(np.ones((2, 3)), device)
    assert np.all(Cube.apply(x).numpy() == 1)  # fine outside vmap
    with pytest.raises(RuntimeError, match="Cube has no batching rule"):
        vmap(Cube.apply)(x)


def test_data_dependent_output_shape_raises(device: Any) -> None:
    with pytest.raises(RuntimeError, match="Nonzero is not supported under vmap"):
        vmap(lc.nonzero)(_t(np.eye(3), device))


def test_loop_fallback_warns_as_pytorch(device: Any) -> None:
    a = np.array([[4.0, 1.0], [1.0, 3.0]], dtype=np.float32)
    b = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    with pytest.warns(UserWarning, match="performance drop.*batching rule for Solve"):
        out = vmap(lc.linalg.solve, in_dims=(None, 0))(_t(a, device), _t(b, device))
    np.testing.assert_allclose(out.numpy(), np.stack([np.linalg.solve(a, r) for r in b]), rtol=1e-5)


def test_backward_inside_vmap_raises(device: Any) -> None:
    w = _t(np.ones(3), device).requires_grad_()
    with pytest.raises(RuntimeError, match="backward\\(\\) called inside torch.vmap"):
        vmap(lambda t: (t * w).sum().backward())(_t(np.ones((2, 3)), device))


# -- in-place ----------------------------------------------------------------------------------------------------


def test_in_place_on_a_batched_tensor_writes_the_input(device: Any) -> None:
    x = _t(np.arange(6).reshape(2, 3), device)
    y = _t(np.array([1.0, 2.0, 3.0]), device)
    out = vmap(lambda t: t.add_(y).mul_(2))(x)
    want = (np.arange(6).reshape(2, 3) + np.array([1, 2, 3])) * 2
    np.testing.assert_allclose(out.numpy(), want)
    np.testing.assert_allclose(x.numpy(), want)  # the write landed in the caller's tensor, as PyTorch's does


def test_in_place_with_in_dims_one_writes_through_the_moved_axis(device: Any) -> None:
    x = _t(np.zeros((3, 2)), device)
    vmap(lambda t: t.add_(_t([1.0, 2.0, 3.0], device)), in_dims=1)(x)
    np.testing.assert_allclose(x.numpy(), [[1, 1], [2, 2], [3, 3]])


def test_writing_a_batched_value_into_an_unbatched_tensor_raises(device: Any) -> None:
    z = _t(np.zeros(3), device)
    with pytest.raises(RuntimeError, match="vmapped over but `self` not"):
        vmap(lambda t: z.add_(t))(_t(np.ones((2, 3)), device))
    np.testing.assert_allclose(z.numpy(), 0)  # untouched


# -- kernel calls ----------------------------------------------------------------------------------------------------


@pytest.fixture
def kernel_calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count every op's forward (the backend kernel calls) by wrapping each Function's ``forward``."""
    counts: dict[str, int] = {}
    for cls in _functions():
        if "forward" not in cls.__dict__:
            continue
        fwd = cls.__dict__["forward"].__func__ if isinstance(cls.__dict__["forward"], staticmethod) else None
        if fwd is None:
            continue

        def counting(*a: Any, _f: Any = fwd, _n: str = cls.__name__, **k: Any) -> Any:
            counts[_n] = counts.get(_n, 0) + 1
            return _f(*a, **k)

        monkeypatch.setattr(cls, "forward", staticmethod(counting))
    return counts


_FREE_VIEWS = {"Reshape", "PermuteDims", "BroadcastTo"}  # layout only (views: no kernel on NumPy)


def _mlp(params: dict[str, Any], x: Any) -> Any:
    h = lc.tanh(F.linear(x, params["w1"], params["b1"]))
    h = F.relu(F.linear(h, params["w2"], params["b2"]))
    return lc.sum(lc.exp(F.log_softmax(h, dim=-1)) * 0.5)


def _params(device: Any, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    dt = np.float64 if lc.float64 in device.backend.dtypes else np.float32
    shapes = {"w1": (8, 5), "b1": (8,), "w2": (4, 8), "b2": (4,)}
    return {k: lc.asarray(rng.standard_normal(s).astype(dt), device=device) for k, s in shapes.items()}


def test_vmap_makes_as_many_kernel_calls_as_one_example(device: Any, kernel_calls: dict[str, int]) -> None:
    params = _params(device)
    xs = lc.asarray(np.random.default_rng(1).standard_normal((16, 5)), dtype=params["w1"].dtype, device=device)
    _mlp(params, xs[0])
    one = {k: v for k, v in kernel_calls.items() if k not in _FREE_VIEWS and k != "GetItem"}
    kernel_calls.clear()
    vmap(_mlp, in_dims=(None, 0))(params, xs)
    batched = {k: v for k, v in kernel_calls.items() if k not in _FREE_VIEWS}
    assert batched == one


# -- composition with reverse mode -------------------------------------------------------------------------------


def _grad(f: Any) -> Any:
    """A minimal ``grad`` over the first argument (a dict of tensors) on the engine's ``autograd.grad``."""

    def g(params: dict[str, Any], *rest: Any) -> dict[str, Any]:
        p = {k: v.detach().requires_grad_() for k, v in params.items()}
        out = f(p, *rest)
        gs = _autograd.grad(out, list(p.values()))
        return dict(zip(p, gs))

    return g


def _loss(params: dict[str, Any], x: Any, y: Any) -> Any:
    h = lc.tanh(F.linear(x[None], params["w1"], params["b1"]))
    logits = F.linear(h, params["w2"], params["b2"])
    return F.cross_entropy(logits, y[None])


def test_per_sample_gradients_of_an_mlp_equal_the_loop(device: Any) -> None:
    params = _params(device)
    rng = np.random.default_rng(2)
    xs = lc.asarray(rng.standard_normal((6, 5)), dtype=params["w1"].dtype, device=device)
    ys = lc.asarray(rng.integers(0, 4, 6), device=device)
    got = vmap(_grad(_loss), in_dims=(None, 0, 0))(params, xs, ys)
    tol = 1e-10 if params["w1"].dtype is lc.float64 else 1e-5
    for k in params:
        want = np.stack([_grad(_loss)(params, xs[i], ys[i])[k].numpy() for i in range(6)])
        assert got[k].shape == want.shape
        np.testing.assert_allclose(got[k].numpy(), want, rtol=tol, atol=tol, err_msg=k)


def test_per_sample_gradients_through_a_conv_net_equal_the_loop(device: Any) -> None:
    rng = np.random.default_rng(3)
    dt = np.float64 if lc.float64 in device.backend.dtypes else np.float32
    params = {
        "w": lc.asarray(rng.standard_normal((4, 2, 3, 3)).astype(dt), device=device),
        "b": lc.asarray(rng.standard_normal(4).astype(dt), device=device),
        "fc": lc.asarray(rng.standard_normal((3, 16)).astype(dt), device=device),
    }

    def loss(p: dict[str, Any], x: Any, y: Any) -> Any:
        h = F.max_pool2d(F.relu(F.conv2d(x[None], p["w"], p["b"], padding=1)), 2)
        return F.cross_entropy(F.linear(lc.reshape(h, (1, -1)), p["fc"]), y[None])

    xs = lc.asarray(rng.standard_normal((5, 2, 4, 4)).astype(dt), device=device)
    ys = lc.asarray(rng.integers(0, 3, 5), device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no loop fallback on the way
        got = vmap(_grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
    tol = 1e-10 if dt is np.float64 else 1e-4
    for k in params:
        want = np.stack([_grad(loss)(params, xs[i], ys[i])[k].numpy() for i in range(5)])
        np.testing.assert_allclose(got[k].numpy(), want, rtol=tol, atol=tol, err_msg=k)


def test_grad_of_vmap_follows_the_physical_graph(device: Any) -> None:
    w = _t([1.0, 2.0, 3.0], device).requires_grad_()
    x = _t(np.arange(6).reshape(2, 3), device)
    out = vmap(lambda t: lc.sum(lc.sin(t * w)))(x)
    (g,) = _autograd.grad(lc.sum(out), [w])
    xn, wn = np.arange(6).reshape(2, 3), np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(g.numpy(), (np.cos(xn * wn) * xn).sum(0), rtol=1e-5)


def test_per_example_gradient_of_a_batched_input(device: Any) -> None:
    def g(t: Any) -> Any:
        t = t.detach().requires_grad_()
        (gt,) = _autograd.grad(lc.sum(t * t * t), [t])
        return gt

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(vmap(g)(_t(x, device)).numpy(), 3 * x * x)


def test_no_vmap_no_dispatch_hook() -> None:
    assert _autograd._vmap_dispatch is None
    vmap(lambda t: t + 1)(lc.ones((2, 2)))
    assert _autograd._vmap_dispatch is None  # the one check each op pays is back to None


def test_rules_are_declared_by_category() -> None:
    assert rules.RULES["Add"] is rules.ELEMENTWISE
    assert rules.RULES["Solve"] is rules.LOOP
    assert rules.RULES["Nonzero"] is rules.NOT_BATCHABLE


# -- torch.func fixtures -------------------------------------------------------------------------------------------

from tests.pytorch_face.fixtures.vmap_cases import CASES, INPUTS, flatten  # noqa: E402

_FIXTURES = Path(__file__).resolve().parents[1] / "pytorch_face" / "fixtures" / "vmap.npz"


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch_func(name: str, device: Any) -> None:
    f64 = lc.float64 in device.backend.dtypes
    tensors = {
        k: lucid.tensor(v if f64 or v.dtype.kind != "f" else v.astype(np.float32), device=device)
        for k, v in INPUTS.items()
    }
    with np.load(_FIXTURES) as want:
        got = flatten(CASES[name](lucid, tensors))
        assert sorted(f"{name}/{k}" for k in got) == sorted(k for k in want.files if k.startswith(f"{name}/"))
        tol = 1e-10 if f64 else 1e-4
        for k, v in got.items():
            np.testing.assert_allclose(_numpy(v), want[f"{name}/{k}"], rtol=tol, atol=tol, err_msg=f"{name}/{k}")
