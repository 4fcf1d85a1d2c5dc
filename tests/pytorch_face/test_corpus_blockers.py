"""What stopped public programs of the corpus (docs/corpus.md) on their first line, now PyTorch's behaviour:
``torch.autograd.Variable``, ``torch.backends.cuda.matmul``, ``x.flip(dims=...)``, ``dropout2d`` on 2-D and 3-D
input, indexing with a ``range``, ``import torch.onnx``."""

from __future__ import annotations

import warnings

import pytest

import lucid
import lucid.nn.functional as F


def test_variable_is_a_detached_alias_and_every_tensor_is_one():
    from lucid.autograd import Variable

    t = lucid.ones(3)
    v = Variable(t)
    assert v is not t and v.data_ptr() == t.data_ptr() and not v.requires_grad
    w = Variable(t, requires_grad=True)
    assert w.requires_grad and w.is_leaf
    assert isinstance(t, Variable) and not isinstance([1.0], Variable)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        Variable([1.0])


def test_backends_cuda_flags_can_be_set_and_read():
    lucid.backends.cuda.matmul.allow_tf32 = True
    assert lucid.backends.cuda.matmul.allow_tf32 is True
    assert lucid.backends.cuda.is_built() is False


def test_flip_takes_dims_by_keyword_or_position():
    x = lucid.arange(6).reshape(2, 3)
    assert x.flip(dims=(1,)).tolist() == x.flip(1).tolist() == [[2, 1, 0], [5, 4, 3]]
    assert x.flip([0, 1]).tolist() == [[5, 4, 3], [2, 1, 0]]
    with pytest.raises(TypeError, match="dims once"):
        x.flip(0, dims=(1,))


def test_dropout2d_drops_over_the_first_two_axes_as_pytorch_213():
    lucid.manual_seed(0)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        y3 = F.dropout2d(lucid.ones(8, 16, 5), 0.5, True)  # (N, C, L): one mask value per (n, c)
        y2 = F.dropout2d(lucid.ones(64, 64), 0.5, True)  # deprecated: element by element
    rows = y3.numpy()
    assert ((rows == rows[:, :, :1]).all()) and 0 < (rows[:, :, 0] == 0).mean() < 1
    cols = y2.numpy()
    assert not (cols == cols[:, :1]).all()  # not one value per row: each element on its own
    assert sorted({str(w.message)[:30] for w in seen}) == [
        "dropout2d: Received a 2-D inpu",
        "dropout2d: Received a 3D input",
    ]


def test_a_range_indexes_like_the_list_of_its_integers():
    x = lucid.zeros(3, 4)
    x[range(3), lucid.tensor([1, 0, 3])] = 1.0
    assert x.tolist() == [[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1]]
    assert x[range(1, 3)].tolist() == x[[1, 2]].tolist()
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        x[range(4)]


def test_onnx_imports_and_export_says_it_is_not_supported():
    import lucid.onnx

    assert lucid.onnx.is_in_onnx_export() is False
    with pytest.raises(NotImplementedError, match="cannot export ONNX"):
        lucid.onnx.export(lucid.nn.Linear(2, 2), lucid.ones(1, 2), "m.onnx")


@pytest.mark.parametrize(
    ("legacy", "reduction"),
    [({"size_average": False}, "sum"), ({"reduce": False}, "none"), ({"size_average": True, "reduce": True}, "mean")],
)
def test_losses_take_the_legacy_size_average_and_reduce(legacy, reduction):
    x, t = lucid.randn(4, 3), lucid.rand(4, 3)
    with pytest.warns(UserWarning, match=f"please use reduction='{reduction}' instead"):
        got = F.binary_cross_entropy_with_logits(x, t, **legacy)
    assert lucid.equal(got, F.binary_cross_entropy_with_logits(x, t, reduction=reduction))
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        assert lucid.nn.MSELoss(**legacy).reduction == reduction
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        assert lucid.nn.CrossEntropyLoss(**legacy).reduction == reduction


def test_module_cpu_moves_parameters_in_place():
    m = lucid.nn.Linear(2, 3)
    w = m.weight
    assert m.cpu() is m and m.weight is w and m.weight.device.type == "cpu"
