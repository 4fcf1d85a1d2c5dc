"""Tensor methods follow PyTorch (lucid_core/_tensor_methods.py): ``x.size`` as an int that can be called,
``dim=``/``axis=``, ``(values, indices)`` results, chunked ``split``, tiling ``repeat``, and the gradients of
the index ops against finite differences. PyTorch's own numbers are compared in tests/pytorch_face."""

from __future__ import annotations

import copy
import json
import pickle
import subprocess
import sys

import numpy as np
import pytest

import lucid_core as lc
from lucid_core._tensor_methods import Size, SizeInt


def t(device, data, dtype=lc.float64, requires_grad=False):
    return lc.asarray(np.asarray(data, dtype=np.float64), dtype=dtype, device=device).requires_grad_(requires_grad)


# -- x.size ------------------------------------------------------------------------------------------------------
def test_size_is_the_element_count_and_callable(device) -> None:
    x = lc.zeros((2, 3, 4), device=device)
    assert isinstance(x.size, int) and isinstance(x.size, SizeInt)
    assert x.size == 24 and x.size + 1 == 25 and x.size // 5 == 4 and -x.size == -24 and x.size * 1.5 == 36.0
    assert x.size() == (2, 3, 4) and isinstance(x.size(), Size) and x.size().numel() == 24
    assert x.size(0) == 2 and x.size(-1) == 4 and x.size()[1:] == (3, 4) and isinstance(x.size()[1:], Size)
    assert repr(x.size) == "24" and repr(x.size()) == "lucid.Size([2, 3, 4])"
    assert lc.zeros((), device=device).size == 1 and lc.zeros((), device=device).size() == ()


def test_size_serialises_as_a_plain_int(device) -> None:
    n = lc.zeros((2, 3), device=device).size
    assert json.dumps({"n": n}) == '{"n": 6}'
    assert type(pickle.loads(pickle.dumps(n))) is int and copy.deepcopy(n) == 6
    assert list(range(n)) == [0, 1, 2, 3, 4, 5] and [0] * n == [0] * 6


def test_size_of_a_bad_dim_says_what_is_wrong(device) -> None:
    x = lc.zeros((2, 3), device=device)
    with pytest.raises((IndexError, ValueError), match="size"):
        x.size(2)
    with pytest.raises(TypeError, match="dim must be an int"):
        x.size("0")


# -- dim= / axis= and PyTorch's results ----------------------------------------------------------------------------
def test_reductions_take_dim_or_axis_but_not_both(device) -> None:
    x = t(device, [[1.0, 2.0], [3.0, 4.0]])
    assert x.sum(1).tolist() == x.sum(dim=1).tolist() == x.sum(axis=1).tolist() == [3.0, 7.0]
    assert x.mean(dim=0, keepdim=True).tolist() == x.mean(axis=0, keepdims=True).tolist() == [[2.0, 3.0]]
    with pytest.raises(TypeError, match="dim= or axis="):
        x.sum(dim=0, axis=0)


def test_max_with_dim_returns_values_and_indices(device) -> None:
    x = t(device, [[1.0, 5.0, 5.0], [7.0, 0.0, 3.0]])
    r = x.max(1)
    assert r.values.tolist() == [5.0, 7.0] and r.indices.tolist() == [1, 0]
    values, indices = x.min(dim=0, keepdim=True)
    assert values.tolist() == [[1.0, 0.0, 3.0]] and indices.tolist() == [[0, 1, 1]]
    assert x.max().item() == 7.0 and x.max(t(device, [[9.0, 0, 0], [0, 0, 9.0]])).tolist() == [[9, 5, 5], [7, 0, 9]]


def test_max_with_dim_sends_the_gradient_to_the_chosen_index(device) -> None:
    x = t(device, [[1.0, 5.0, 5.0]], requires_grad=True)
    x.max(1).values.sum().backward()
    assert x.grad.tolist() == [[0.0, 1.0, 0.0]]  # PyTorch's max(dim): the first maximum, not shared


def test_var_and_std_are_unbiased_by_default(device) -> None:
    x = t(device, [1.0, 2.0, 3.0, 4.0])
    assert x.var().item() == pytest.approx(5 / 3) and x.var(unbiased=False).item() == pytest.approx(1.25)
    assert x.std(correction=0).item() == pytest.approx(1.25**0.5)


def test_split_takes_chunk_sizes_and_checks_section_sizes(device) -> None:
    x = lc.reshape(lc.arange(10, device=device), (2, 5))
    assert [p.shape for p in x.split(2, dim=1)] == [(2, 2), (2, 2), (2, 1)]
    assert [p.shape for p in x.split([1, 4], dim=1)] == [(2, 1), (2, 4)]
    assert [p.shape for p in x.chunk(2, dim=1)] == [(2, 3), (2, 2)]
    with pytest.raises(ValueError, match=r"sizes \[1, 1\] add up to 2 but dimension 1 has 5"):
        x.split([1, 1], dim=1)


def test_repeat_tiles_and_needs_one_count_per_dim(device) -> None:
    x = lc.asarray([[1, 2]], device=device)
    assert x.repeat(2, 2).tolist() == [[1, 2, 1, 2], [1, 2, 1, 2]]
    assert x.repeat(2, 1, 1).shape == (2, 1, 2)
    with pytest.raises(ValueError, match="at least one per dimension"):
        x.repeat(2)


def test_squeeze_leaves_dims_that_are_not_one(device) -> None:
    x = lc.zeros((1, 3, 1), device=device)
    assert x.squeeze().shape == (3,) and x.squeeze(1).shape == (1, 3, 1) and x.squeeze(-1).shape == (1, 3)


def test_view_expand_and_contiguous(device) -> None:
    x = lc.arange(6, device=device)
    assert x.view(2, 3).shape == (2, 3) and x.view((3, -1)).shape == (3, 2) and x.contiguous() is x
    assert lc.zeros((1, 3), device=device).expand(4, -1).shape == (4, 3)
    with pytest.raises(ValueError, match="only 1 sizes"):
        lc.zeros((2, 3), device=device).expand(3)


def test_index_tensor_errors_name_the_problem(device) -> None:
    x = t(device, [[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(TypeError, match="index must be an integer tensor"):
        x.gather(0, x)
    with pytest.raises(ValueError, match="index has 1 dimensions but the tensor has 2"):
        x.gather(0, lc.asarray([0], device=device))


# -- gradients of the index ops against finite differences ---------------------------------------------------------
def test_index_op_gradients_match_finite_differences(device) -> None:
    if not lc.get_backend(device.backend.name).capabilities.get("float64", True):
        pytest.skip("no float64")
    idx = lc.asarray([[0, 2, 1], [2, 0, 0]], device=device)
    x = t(device, np.random.default_rng(0).normal(size=(3, 3)), requires_grad=True)
    src = t(device, np.random.default_rng(1).normal(size=(2, 3)), requires_grad=True)
    assert lc.gradcheck(lambda a: a.gather(0, idx), [x])
    assert lc.gradcheck(lambda a, s: a.scatter_add(0, idx, s), [x, src])
    assert lc.gradcheck(lambda a, s: a.scatter(1, lc.asarray([[2], [0]], device=device), s[:, :1]), [x, src])
    assert lc.gradcheck(lambda a, s: a.index_add(0, lc.asarray([1, 1], device=device), s, alpha=2.0), [x, src])
    assert lc.gradcheck(lambda a: a.masked_fill(a > 0, 0.5), [x])
    assert lc.gradcheck(lambda a: a.sort(1).values * lc.arange(3, device=device), [x])
    assert lc.gradcheck(lambda a: a.topk(2).values, [x])
    assert lc.gradcheck(lambda a: a.norm(dim=1), [x])


def test_cuda_and_cpu_methods(device) -> None:
    x = lc.zeros(2, device=device)
    if x.device.type == "cpu":
        assert x.cpu() is x and x.is_cuda is False


# -- "gpu" on a machine without one ------------------------------------------------------------------------------
def _no_gpu() -> bool:
    return not any(d.endswith(":gpu") for b in lc.backends() for d in b.devices)


@pytest.mark.skipif(not _no_gpu(), reason="this machine has a GPU")
def test_gpu_falls_back_to_the_cpu_with_one_warning() -> None:
    code = (
        "import warnings, lucid_core as lc\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    a = lc.zeros(2).to('gpu'); b = lc.zeros(2, device='cuda'); c = lc.zeros(2).to('mps')\n"
        "print(a.device, b.device, c.device, len(w), str(w[0].message))\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "LUCID_STRICT_DEVICE"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("numpy:cpu numpy:cpu numpy:cpu 1 no installed backend offers a 'gpu' device")


@pytest.mark.skipif(not _no_gpu(), reason="this machine has a GPU")
def test_gpu_without_a_gpu_is_an_error_when_strict() -> None:
    code = "import lucid_core as lc\nlc.zeros(2).to('gpu')\n"
    env = {**__import__("os").environ, "LUCID_STRICT_DEVICE": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode != 0 and "LUCID_STRICT_DEVICE is set" in out.stderr
