"""Dataset, IterableDataset, TensorDataset, Subset, ConcatDataset, ChainDataset, StackDataset."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import lucid_core as lc
from lucid_data import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
)

ALL_DEVICES = [d for b in lc.backends() if b.status == "ok" for d in lc.get_backend(b.name).devices.values()]


class Squares(Dataset):
    """A user dataset with its own __getitem__ (the seed's MyDataset pattern) and an extra attribute."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.classes = ["even", "odd"]
        self.len_calls = 0

    def __getitem__(self, idx: int) -> int:
        if not 0 <= idx < self.n:
            raise IndexError(idx)
        return idx * idx

    def __len__(self) -> int:
        self.len_calls += 1
        return self.n


class Count(IterableDataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        return iter(range(self.n))


# -- Dataset ----------------------------------------------------------------------------------------------
def test_dataset_is_abstract():
    with pytest.raises(TypeError, match="abstract"):
        Dataset()  # type: ignore[abstract]

    class OnlyGetitem(Dataset):
        def __getitem__(self, idx):
            return idx

    with pytest.raises(TypeError, match="__len__"):
        OnlyGetitem()  # type: ignore[abstract]


def test_user_getitem_is_not_wrapped_by_the_base():
    # regression (seed): a logging hook in the base clashed with user-defined __getitem__
    ds = Squares(4)
    assert ds[3] == 9
    assert list(ds) == [0, 1, 4, 9]


def test_dataset_iter_stops_at_len_even_if_getitem_accepts_more():
    class Lenient(Squares):
        def __getitem__(self, idx):
            return idx

    assert list(Lenient(3)) == [0, 1, 2]


def test_dataset_add_gives_concat():
    both = Squares(2) + Squares(3)
    assert isinstance(both, ConcatDataset)
    assert list(both) == [0, 1, 0, 1, 4]


# -- TensorDataset ----------------------------------------------------------------------------------------
def test_tensor_dataset_rows(device):
    x = lc.randn(5, 3, device=device)
    y = lc.arange(5, device=device)
    ds = TensorDataset(x, y)
    assert len(ds) == 5
    xi, yi = ds[2]
    np.testing.assert_array_equal(xi.numpy(), x.numpy()[2])
    assert yi.item() == 2
    assert xi.device == device and yi.device == device
    assert isinstance(ds[0], tuple)


def test_tensor_dataset_negative_index(device):
    ds = TensorDataset(lc.arange(5, device=device))
    assert ds[-1][0].item() == 4
    assert ds[-5][0].item() == 0


@pytest.mark.parametrize("idx", [5, -6, 100])
def test_tensor_dataset_index_out_of_range(device, idx):
    ds = TensorDataset(lc.arange(5, device=device))
    with pytest.raises(IndexError, match=rf"index {idx} is out of range for a dataset of size 5"):
        ds[idx]


def test_tensor_dataset_rejects_float_index(device):
    ds = TensorDataset(lc.arange(5, device=device))
    with pytest.raises(TypeError, match="indices must be integers, got float"):
        ds[1.0]


def test_tensor_dataset_needs_a_tensor():
    with pytest.raises(ValueError, match="at least one tensor"):
        TensorDataset()


def test_tensor_dataset_length_mismatch(device):
    # regression (seed): tensors of different lengths silently misaligned samples
    with pytest.raises(ValueError, match=r"same first dimension.*\[4, 3\]"):
        TensorDataset(lc.zeros(4, 2, device=device), lc.zeros(3, device=device))


def test_tensor_dataset_rejects_0d(device):
    with pytest.raises(ValueError, match="tensor 1 is 0-d"):
        TensorDataset(lc.zeros(3, device=device), lc.asarray(1.0, device=device))


def test_tensor_dataset_promotes_lists_and_native_arrays():
    ds = TensorDataset(np.arange(6, dtype=np.float64).reshape(3, 2), [1, 2, 3], [0.5, 1.5, 2.5])
    assert all(isinstance(t, lc.Tensor) for t in ds.tensors)
    assert ds.tensors[0].dtype == lc.float64  # the native array's dtype and backend are kept
    assert ds.tensors[0].device == "numpy"
    assert ds.tensors[1].dtype == lc.int64
    assert ds.tensors[2].dtype == lc.float32
    assert ds[1][1].item() == 2


@pytest.mark.parametrize("target", ALL_DEVICES, ids=str)
def test_tensor_dataset_to_moves_every_tensor(device, target):
    ds = TensorDataset(lc.randn(4, 2, device=device), lc.arange(4, device=device))
    before = ds.tensors[0].numpy()
    out = ds.to(target)
    assert out is ds
    assert isinstance(ds.tensors, tuple)
    assert all(t.device == target for t in ds.tensors)
    assert all(t.device == target for t in ds[0])
    np.testing.assert_array_equal(ds.tensors[0].numpy(), before)


def test_tensor_dataset_repr(device):
    ds = TensorDataset(lc.zeros(10, 3, device=device), lc.zeros(10, dtype=lc.int64, device=device))
    r = repr(ds)
    assert "size=10" in r
    assert "(10, 3) float32" in r and "(10,) int64" in r
    assert str(device) in r


# -- Subset -----------------------------------------------------------------------------------------------
def test_subset_maps_indices(device):
    base = TensorDataset(lc.arange(10, device=device))
    sub = Subset(base, [7, 2, 5])
    assert len(sub) == 3
    assert [s[0].item() for s in sub] == [7, 2, 5]
    assert sub[1][0].item() == 2


def test_subset_negative_index_counts_from_its_end():
    sub = Subset(Squares(10), [1, 2, 3])
    assert sub[-1] == 9
    assert sub[-3] == 1
    with pytest.raises(IndexError, match="index -4 is out of range for a dataset of size 3"):
        sub[-4]


def test_subset_negative_entries_refer_to_the_dataset_end():
    sub = Subset(Squares(10), [-1, 0])
    assert sub[0] == 81
    assert sub.indices == [9, 0]


def test_subset_rejects_out_of_range_indices_at_construction():
    with pytest.raises(IndexError, match="Subset: index 10 is out of range for a dataset of size 10"):
        Subset(Squares(10), [0, 10])


def test_subset_delegates_attributes():
    sub = Subset(Squares(5), [0, 1])
    assert sub.classes == ["even", "odd"]
    assert sub.n == 5


def test_subset_missing_attribute_is_attribute_error_not_recursion():
    # regression (seed): delegation recursed forever
    sub = Subset(Squares(5), [0])
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        sub.nope
    assert not hasattr(sub, "_private")


def test_subset_copy_and_pickle_do_not_recurse():
    # unpickling looks attributes up before `dataset` is set
    sub = Subset(Squares(5), [4, 1])
    for clone in (copy.copy(sub), copy.deepcopy(sub), pickle.loads(pickle.dumps(sub))):
        assert list(clone) == [16, 1]
        assert clone.classes == ["even", "odd"]
    bare = Subset.__new__(Subset)
    with pytest.raises(AttributeError):
        bare.anything


def test_subset_to_moves_the_base_and_stays_a_subset(device):
    base = TensorDataset(lc.arange(6, device=device))
    sub = Subset(base, [5, 0])
    assert sub.to(device) is sub
    assert sub[0][0].item() == 5 and sub[0][0].device == device
    with pytest.raises(AttributeError, match="has no .to"):
        Subset(Squares(3), [0]).to(device)


def test_subset_repr():
    r = repr(Subset(TensorDataset(lc.zeros(10, 2)), [1, 2, 3]))
    assert r.startswith("Subset(size=3") and "TensorDataset(size=10" in r


def test_subset_accepts_tensor_indices():
    sub = Subset(Squares(5), lc.asarray([3, 1]))
    assert list(sub) == [9, 1]


# -- ConcatDataset ----------------------------------------------------------------------------------------
def test_concat_indexing_and_cumulative_sizes():
    ds = ConcatDataset([Squares(2), Squares(3)])
    assert ds.cumulative_sizes == [2, 5]
    assert [ds[i] for i in range(5)] == [0, 1, 0, 1, 4]
    assert ds.locate(3) == (1, 1)


def test_concat_negative_indices_no_off_by_one():
    # regression (seed): off-by-one on negative indices
    ds = ConcatDataset([Squares(2), Squares(3)])
    assert ds[-1] == 4
    assert ds[-3] == 0
    assert ds[-5] == 0
    assert ds[-4] == 1
    with pytest.raises(IndexError, match="index -6 is out of range for a dataset of size 5"):
        ds[-6]
    with pytest.raises(IndexError, match="index 5 is out of range"):
        ds[5]


def test_concat_skips_empty_parts():
    empty = Subset(Squares(3), [])
    ds = ConcatDataset([empty, Squares(2), empty, empty, Squares(2), empty])
    assert len(ds) == 4
    assert [ds[i] for i in range(4)] == [0, 1, 0, 1]
    assert ds.locate(2) == (4, 0)


def test_concat_sizes_computed_once():
    # regression (seed): cumulative sizes were recomputed on every access (O(n) per item)
    parts = [Squares(3), Squares(4)]
    ds = ConcatDataset(parts)
    calls = [p.len_calls for p in parts]
    for i in range(len(ds)):
        ds[i]
    assert [p.len_calls for p in parts] == calls


def test_concat_errors():
    with pytest.raises(ValueError, match="at least one dataset"):
        ConcatDataset([])
    with pytest.raises(TypeError, match="IterableDataset; use ChainDataset"):
        ConcatDataset([Squares(1), Count(2)])


# -- IterableDataset / ChainDataset -----------------------------------------------------------------------
def test_iterable_dataset_cannot_be_indexed_and_has_no_len():
    ds = Count(3)
    assert list(ds) == [0, 1, 2]
    with pytest.raises(TypeError, match="cannot be indexed"):
        ds[0]
    with pytest.raises(TypeError, match="length is unknown"):
        len(ds)


def test_chain_dataset():
    ds = Count(2) + Count(3)
    assert isinstance(ds, ChainDataset)
    assert list(ds) == [0, 1, 0, 1, 2]
    assert len(ChainDataset([range(2), range(4)])) == 6


# -- StackDataset -----------------------------------------------------------------------------------------
def test_stack_dataset_tuple_and_dict(device):
    a = TensorDataset(lc.arange(3, device=device))
    b = Squares(3)
    assert StackDataset(a, b)[2][1] == 4
    d = StackDataset(x=a, y=b)[1]
    assert set(d) == {"x", "y"} and d["y"] == 1 and d["x"][0].item() == 1
    assert len(StackDataset(a, b)) == 3
    assert StackDataset(a, b)[-1][1] == 4


def test_stack_dataset_errors():
    with pytest.raises(ValueError, match=r"same length.*\{0: 2, 1: 3\}"):
        StackDataset(Squares(2), Squares(3))
    with pytest.raises(ValueError, match="either positionally or as keywords"):
        StackDataset(Squares(2), y=Squares(2))
    with pytest.raises(ValueError, match="at least one dataset"):
        StackDataset()
    with pytest.raises(IndexError):
        StackDataset(Squares(2))[2]
