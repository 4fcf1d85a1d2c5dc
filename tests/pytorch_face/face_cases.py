"""The face's functions and methods, each case written once in PyTorch spelling.

Every case takes the framework module as ``torch``: ``make_torch_fixtures.py`` runs them with PyTorch and
stores the results; ``test_face_functions.py`` runs them with ``lucid`` and compares. Results are NumPy
arrays (values, dtypes as strings, Python bools and ints).
"""

from __future__ import annotations

from typing import Any

import numpy as np

A = np.arange(24, dtype=np.float64).reshape(2, 3, 4) * 0.37 - 3.1
M = np.array([[3.0, -1.0, 2.0, 2.0], [0.5, 4.0, -2.0, 7.0], [1.0, 1.0, 1.0, -3.0]])
IDX = np.array([[0, 2, 1, 0], [2, 0, 0, 1], [1, 1, 2, 2]])
CASES: dict[str, Any] = {}


def case(fn: Any) -> Any:
    CASES[fn.__name__] = fn
    return fn


def _np(x: Any) -> Any:
    if isinstance(x, (tuple, list)) and x and hasattr(x[0], "detach"):
        return [_np(v) for v in x]
    if hasattr(x, "detach"):
        return x.detach().numpy()
    return np.asarray(x)


def _leaf(torch: Any, arr: np.ndarray) -> Any:
    return torch.tensor(arr, requires_grad=True)


# -- dtypes and conversions --------------------------------------------------------------------------------------
@case
def dtype_aliases(torch):
    x = torch.tensor(M)
    names = [x.long(), x.int(), x.float(), x.double(), x.half(), x.bool(), x.type_as(torch.tensor([1]))]
    names += [x.to(torch.long), x.to(torch.float32), torch.zeros(2, dtype=torch.int), torch.ones(2, dtype=torch.bool)]
    return np.array([t.numpy().dtype.name for t in names])


@case
def item_tolist_numel(torch):
    x = torch.tensor(M)
    return np.array([x[1, 3].item(), float(len(x.tolist())), float(x.numel()), float(torch.numel(x)), float(x.dim())])


@case
def size_and_shape(torch):
    x = torch.tensor(A)
    s = x.size()
    return np.array([*s, x.size(-1), x.size(0), len(s), s.numel(), *x.shape, *s[1:]])


@case
def from_numpy_and_is_tensor(torch):
    x = torch.from_numpy(M)
    return np.array([torch.is_tensor(x), torch.is_tensor(M), x.numpy().dtype.name == "float64"])


# -- shapes ------------------------------------------------------------------------------------------------------
@case
def cat_stack_chunk_split(torch):
    x = torch.tensor(A)
    out = [torch.cat([x, x], dim=1), torch.cat((x, x), 2), torch.stack([x, x], dim=1)]
    out += list(x.chunk(2, dim=2)) + list(torch.chunk(x, 3, 1)) + list(x.split(3, dim=2))
    out += list(torch.split(x, [1, 3], dim=2)) + list(x.split(1))
    return [_np(o) for o in out]


@case
def squeeze_unsqueeze_flatten(torch):
    x = torch.tensor(A).unsqueeze(1)
    return [_np(x), _np(x.squeeze(1)), _np(x.squeeze(0)), _np(x.squeeze()), _np(torch.unsqueeze(x, -1)),
            _np(x.flatten(1)), _np(torch.flatten(x, 2, 3)), _np(x.flatten())]  # fmt: skip


@case
def transpose_permute_view(torch):
    x = torch.tensor(A)
    y = torch.tensor(M)
    return [_np(x.transpose(0, 2)), _np(torch.transpose(x, 1, 2)), _np(x.permute(2, 0, 1)),
            _np(x.permute((1, 2, 0))), _np(x.view(6, 4)), _np(x.view(-1)), _np(x.contiguous().view(4, -1)),
            _np(y.view_as(torch.zeros(4, 3))), _np(y.reshape_as(torch.zeros(2, 6))), _np(y.t()), _np(y.T),
            _np(x.reshape(3, 8))]  # fmt: skip


@case
def expand_repeat(torch):
    x = torch.tensor(M[:1])
    return [_np(x.expand(3, 4)), _np(x.expand(2, -1, -1)), _np(x.expand_as(torch.zeros(5, 4))),
            _np(x.repeat(2, 3)), _np(x.repeat(2, 1, 1)), _np(torch.tile(x, (2,)))]  # fmt: skip


# -- element-wise, comparisons, where ------------------------------------------------------------------------------
@case
def comparisons(torch):
    x, y = torch.tensor(M), torch.tensor(M[::-1].copy())
    return [_np(x.eq(y)), _np(x.ne(y)), _np(x.lt(y)), _np(x.le(y)), _np(x.gt(1.0)), _np(x.ge(y)),
            _np(torch.eq(x, 2.0)), _np(torch.equal(x, x)), _np(torch.equal(x, y))]  # fmt: skip


@case
def close(torch):
    x = torch.tensor([1.0, 2.0, float("nan"), float("inf")])
    y = torch.tensor([1.0 + 1e-9, 2.1, float("nan"), float("inf")])
    return [_np(torch.isclose(x, y)), _np(torch.isclose(x, y, equal_nan=True)), _np(torch.allclose(x[:1], y[:1])),
            _np(torch.allclose(x, y)), _np(torch.isclose(x, y, rtol=0.1))]  # fmt: skip


@case
def clamp_where_masked_fill(torch):
    x = torch.tensor(M)
    return [_np(x.clamp(min=0.0)), _np(torch.clamp(x, -1.0, 1.0)), _np(x.clamp(max=2.0)),
            _np(torch.where(x > 1, x, torch.zeros_like(x))), _np(torch.where(x > 1, x, -1.0)),
            [_np(i) for i in torch.where(x > 2)], _np(x.masked_fill(x < 0, float("-inf"))),
            _np(x.masked_fill(torch.tensor([True, False, True, False]), 9.0))]  # fmt: skip


# -- indexing with index tensors ---------------------------------------------------------------------------------
@case
def gather_scatter(torch):
    x = _leaf(torch, M)
    idx = torch.tensor(IDX)
    g = torch.gather(x, 0, idx)
    g2 = x.gather(1, idx[:, :2])
    (g * torch.tensor(M)).sum().backward()
    grad_gather = _np(x.grad)
    src = _leaf(torch, M * 10)
    s = torch.zeros(3, 4, dtype=torch.float64).scatter_add(0, idx, src)
    (s * torch.tensor(M)).sum().backward()
    base = _leaf(torch, M)
    sc = base.scatter(1, torch.tensor([[3], [0], [1]]), torch.tensor([[7.0], [8.0], [9.0]], dtype=torch.float64))
    (sc * torch.tensor(M)).sum().backward()
    sv = torch.tensor(M).scatter(1, torch.tensor([[3], [0], [1]]), value=-5.0)
    return [_np(g), _np(g2), grad_gather, _np(s), _np(src.grad), _np(sc), _np(base.grad), _np(sv)]


@case
def index_select_add(torch):
    x = _leaf(torch, M)
    sel = torch.index_select(x, 1, torch.tensor([3, 0, 3]))
    (sel * 2.0).sum().backward()
    src = _leaf(torch, np.ones((3, 3)))
    y = torch.tensor(M).index_add(1, torch.tensor([0, 2, 0]), src, alpha=2.0)
    (y * torch.tensor(M)).sum().backward()
    return [_np(sel), _np(x.grad), _np(y), _np(src.grad), _np(x.index_select(0, torch.tensor([2, 2])))]


# -- reductions, sorting -------------------------------------------------------------------------------------------
@case
def max_min_with_dim(torch):
    x = _leaf(torch, M)
    values, indices = torch.max(x, 1)
    m = x.max(dim=0)
    mk = torch.min(x, dim=1, keepdim=True)
    (values.sum() + m.values.sum() + mk[0].sum()).backward()
    return [_np(values), _np(indices), _np(m.values), _np(m.indices), _np(mk.values), _np(mk.indices),
            _np(x.grad), _np(torch.max(x)), _np(x.min()), _np(torch.max(x, torch.tensor(M[::-1].copy()))),
            _np(x.argmax()), _np(x.argmax(dim=1, keepdim=True)), _np(torch.argmin(x, 0))]  # fmt: skip


@case
def sums_and_moments(torch):
    x = torch.tensor(A)
    return [_np(torch.sum(x, 1)), _np(x.sum(dim=(0, 2))), _np(x.sum(2, keepdim=True)), _np(torch.mean(x, 0)),
            _np(x.mean(dim=-1, keepdim=True)), _np(x.var()), _np(x.std(dim=0)), _np(x.var(1, unbiased=False)),
            _np(torch.var(x, 2, keepdim=True)), _np(x.std(correction=0)), _np(x.prod(1)),
            _np(torch.cumsum(x, dim=1)), _np(x.cumsum(2)), _np(torch.logsumexp(x, 1)), _np(x.amax(dim=(1, 2))),
            _np(x.sum(axis=1)), _np(x.mean(axis=(0, 1), keepdims=True))]  # fmt: skip


@case
def norms(torch):
    x = _leaf(torch, M)
    n = x.norm()
    n.backward()
    return [_np(n), _np(x.grad), _np(torch.norm(x, dim=1)), _np(x.norm(p=1, dim=0)), _np(x.norm(2, 1, True)),
            _np(x.norm(float("inf")))]  # fmt: skip


@case
def sort_topk(torch):
    x = _leaf(torch, M + np.arange(12).reshape(3, 4) * 1e-3)  # no ties: PyTorch's topk orders ties freely
    s = torch.sort(x, dim=1, descending=True)
    v, i = x.topk(2)
    t3 = torch.topk(x, 2, dim=0, largest=False)
    (s.values[:, 0].sum() + v.sum() * 2).backward()
    return [_np(s.values), _np(s.indices), _np(v), _np(i), _np(t3.values), _np(t3.indices), _np(x.grad),
            _np(torch.argsort(x, dim=0)), _np(x.sort()[0]), _np(x.argsort(descending=True))]  # fmt: skip


# -- creation and linear algebra -----------------------------------------------------------------------------------
@case
def creation(torch):
    x = torch.tensor(M)
    return [_np(torch.arange(0.0, 1.0, 0.25)), _np(torch.arange(5)), _np(torch.arange(1, 10, 3)),
            _np(torch.arange(0, 2, 0.5)), np.array(torch.arange(0.0, 1.0, 0.25).numpy().dtype.name),
            np.array(torch.arange(3).numpy().dtype.name), _np(torch.full_like(x, 7.0)), _np(torch.zeros_like(x)),
            _np(torch.ones(2, 3)), _np(torch.full((2, 2), 3)), _np(torch.eye(3)), _np(torch.linspace(0, 1, 5)),
            _np(x.new_zeros(2, 2)), _np(x.new_ones((1, 2))), _np(x.new_full((2,), 4.0))]  # fmt: skip


@case
def tri_outer_einsum(torch):
    x = torch.tensor(M)
    v = torch.tensor([1.0, 2.0, 3.0])
    return [_np(torch.tril(x)), _np(torch.tril(x, diagonal=-1)), _np(torch.triu(x, 1)), _np(torch.outer(v, v)),
            _np(torch.einsum("ij,kj->ik", x, x)), _np(torch.einsum("ij->j", [x])), _np(x @ x.t()),
            _np(torch.matmul(x, x.T)), _np(torch.mm(x, x.t()))]  # fmt: skip


# -- randomness (values differ between generators: shapes, dtypes and deterministic cases) ------------------------
@case
def random_shapes_and_deterministic_draws(torch):
    x = torch.tensor(M)
    r = torch.randn_like(x)
    probs = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    torch.manual_seed(3)
    a = torch.randn(4)
    torch.manual_seed(3)
    b = torch.randn(4)
    return [np.array(r.shape), np.array(r.numpy().dtype.name), _np(torch.multinomial(probs, 1)),
            _np(torch.multinomial(probs[0], 2, replacement=True)), _np(torch.bernoulli(torch.tensor([0.0, 1.0, 1.0]))),
            np.array(torch.multinomial(probs, 1).numpy().dtype.name), _np(torch.equal(a, b)),
            np.array(torch.rand_like(x).shape), np.array(torch.randint(5, (3,)).shape),
            np.array(torch.randint(0, 5, (2, 2)).numpy().dtype.name)]  # fmt: skip


# -- grad modes, devices, nn.utils ----------------------------------------------------------------------------------
@case
def grad_modes(torch):
    x = torch.tensor([1.0, 2.0], requires_grad=True)

    @torch.no_grad()
    def double(t):
        return t * 2

    with torch.no_grad():
        a = x * 2
    with torch.inference_mode():
        b = x * 2
    with torch.set_grad_enabled(False):
        c = x * 2
    d = x * 2
    torch.set_grad_enabled(False)
    e = x * 2
    torch.set_grad_enabled(True)
    f = x * 2
    with torch.enable_grad():
        g = x * 2
    return np.array([double(x).requires_grad, a.requires_grad, b.requires_grad, c.requires_grad, d.requires_grad,
                     e.requires_grad, f.requires_grad, g.requires_grad, torch.is_grad_enabled()])  # fmt: skip


@case
def devices(torch):
    x = torch.tensor(M)
    dev = torch.device("cpu")
    return np.array([dev.type, x.device.type, str(x.is_cuda), str(x.cpu().device.type),
                     str(isinstance(x.device, torch.device)), str(torch.cuda.is_available()),
                     str(torch.backends.mps.is_available()), str(x.to(dev).device.type)])  # fmt: skip


@case
def clip_grad_norm(torch):
    w1 = torch.nn.Parameter(torch.tensor(M))
    w2 = torch.nn.Parameter(torch.tensor([1.0, -2.0], dtype=torch.float64))
    ((w1**2).sum() + (w2**3).sum()).backward()
    total = torch.nn.utils.clip_grad_norm_([w1, w2], 1.5)
    return [_np(total), _np(w1.grad), _np(w2.grad)]


def run_all(torch: Any, only: str | None = None) -> dict[str, np.ndarray]:
    """Every case's result, flattened to ``name`` / ``name.i`` / ``name.i.j`` arrays."""
    out: dict[str, np.ndarray] = {}

    def put(key: str, value: Any) -> None:
        if isinstance(value, list):
            for i, v in enumerate(value):
                put(f"{key}.{i}", v)
        else:
            out[key] = np.asarray(value)

    for name, fn in CASES.items():
        if only is None or name == only:
            put(name, fn(torch))
    return out
