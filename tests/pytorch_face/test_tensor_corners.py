"""Small Tensor methods and properties PyTorch programs reach for (values written from PyTorch 2.13's):
casts, device and size queries, conjugates, ``sum_to_size``, ``split_with_sizes``, ``dim_order``,
``apply_``/``map_``."""

from __future__ import annotations

import pytest

import lucid


def test_casts_and_queries(device):
    x = lucid.tensor([[1.0, -2.0], [3.0, 4.0]], device=device)
    assert [x.byte().dtype, x.char().dtype, x.short().dtype] == [lucid.uint8, lucid.int8, lucid.int16]
    if device.backend.name != "mlx":  # MLX has no complex128
        assert x.cdouble().dtype is lucid.complex128
    assert x.cfloat().dtype is lucid.complex64 and x.char().tolist() == [[1, -2], [3, 4]]
    assert x.is_signed() and not x.byte().is_signed() and not x.bool().is_signed()
    assert (x.get_device(), x.is_cpu, x.nbytes, x.itemsize) == (-1, True, 16, 4)
    assert lucid.get_device(x) == -1 and lucid.is_signed(x)


def test_conjugates(device):
    x = lucid.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
    assert x.conj() is x and x.resolve_conj() is x and x.resolve_neg() is x
    assert not (x.is_conj() or x.is_neg())
    assert x.conj_physical() is not x and x.conj_physical().tolist() == x.tolist()
    assert x.H.tolist() == x.mH.tolist() == x.adjoint().tolist() == [[1.0, 3.0], [2.0, 4.0]]
    z = lucid.tensor([1 + 2j, 3 - 1j], device=device)
    assert z.conj().tolist() == [1 - 2j, 3 + 1j]
    z.conj_physical_()
    assert z.tolist() == [1 - 2j, 3 + 1j]
    with pytest.raises(RuntimeError, match="only supported on matrices"):
        lucid.ones(2, 2, 2, device=device).H


def test_sum_to_size_is_the_gradient_of_a_broadcast(device):
    w = lucid.ones(2, 3, 4, device=device, requires_grad=True)
    out = (w * 2).sum_to_size(3, 1)
    assert out.tolist() == [[16.0], [16.0], [16.0]]
    out.sum().backward()
    assert w.grad.tolist() == [[[2.0] * 4] * 3] * 2
    with pytest.raises(RuntimeError, match=r"size \{4\} is not expandable to size \(2, 3\)"):
        lucid.ones(2, 3, device=device).sum_to_size(4)


def test_split_with_sizes_and_dim_order(device):
    a, b = lucid.arange(5.0, device=device).split_with_sizes([2, 3])
    assert (a.tolist(), b.tolist()) == ([0.0, 1.0], [2.0, 3.0, 4.0]) and a._base is not None
    with pytest.raises(ValueError, match="must be non-negative and sum to 5"):
        lucid.arange(5.0, device=device).split_with_sizes([2, 2])
    x = lucid.ones(2, 3, 4, device=device)
    assert x.dim_order() == (0, 1, 2) and x.permute(2, 0, 1).dim_order() == (1, 2, 0)


def test_apply_and_map_write_in_place(device):
    y = lucid.tensor([1.0, 2.0, 3.0], device=device)
    assert y.apply_(lambda v: v * 10) is y and y.tolist() == [10.0, 20.0, 30.0]
    y.map_(lucid.tensor([1.0], device=device), lambda a, b: a + b)
    assert y.tolist() == [11.0, 21.0, 31.0]


def test_initial_seed_is_pytorchs_default_until_seeded():
    import subprocess
    import sys

    code = "import lucid; a = lucid.initial_seed(); lucid.manual_seed(5); print(a, lucid.initial_seed())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["67280421310721", "5"]
