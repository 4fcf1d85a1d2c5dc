"""Array API compositions of what some libraries lack: einsum, scatter-add, several-array indexing.

Written once against a namespace ``xp``; :class:`~lucid_core.backend.ArrayAPIBackend` installs them as
kernels and the kernel table (:mod:`lucid_core.kernels`) uses them as composed defaults. They sit below
both, so neither imports the other for them.
"""

from __future__ import annotations

__all__ = ["generic_einsum", "generic_getitem", "generic_index_add", "take_along_axis_native"]

from typing import Any


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def generic_einsum(xp: Any, spec: str, *xs: Any) -> Any:
    """Einstein summation with Array API functions only: align every operand on the union of
    letters (permute, then insert size-1 axes), multiply with broadcasting, sum the contracted
    letters. Memory grows with the union's size; a native kernel is faster."""
    lhs, rhs = spec.split("->")
    parts = lhs.split(",")
    letters: list[str] = []
    for p in parts:
        letters.extend(c for c in p if c not in letters)
    sizes = {}
    for p, x in zip(parts, xs):
        sizes.update(zip(p, x.shape))
    prod = None
    for p, x in zip(parts, xs):
        order = sorted(range(len(p)), key=lambda i: letters.index(p[i]))
        if order != list(range(len(p))):
            x = xp.permute_dims(x, tuple(order))
        present = {p[i] for i in order}
        shape = tuple(sizes[c] if c in present else 1 for c in letters)
        x = xp.reshape(x, shape)
        prod = x if prod is None else prod * x
    assert prod is not None
    contracted = tuple(i for i, c in enumerate(letters) if c not in rhs)
    if contracted:
        prod = xp.sum(prod, axis=contracted)
    kept = [c for c in letters if c in rhs]
    perm = tuple(kept.index(c) for c in rhs)
    if perm != tuple(range(len(perm))):
        prod = xp.permute_dims(prod, perm)
    if not kept:
        prod = xp.reshape(prod, ())
    return prod


def _expand_ellipsis(key: Any, ndim: int) -> tuple[Any, ...]:
    """The key with ``...`` (or missing trailing axes) written out as full slices."""
    if not isinstance(key, tuple):
        key = (key,)
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    fill = (slice(None),) * (ndim - used)
    if any(k is Ellipsis for k in key):
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        return key[:i] + fill + key[i + 1 :]
    return key + fill


def generic_getitem(xp: Any, x: Any, key: Any) -> Any:
    """``x[key]``, also for one integer array among slices (the standard only promises arrays with ints)."""
    full = _expand_ellipsis(key, x.ndim)
    arrays = [i for i, k in enumerate(full) if hasattr(k, "dtype")]
    if len(arrays) != 1 or any(k is None or isinstance(k, int) for k in full) or full[arrays[0]].dtype == xp.bool:
        return x[key]
    pos = arrays[0]
    idx = full[pos]
    sliced = x[tuple(slice(None) if i == pos else k for i, k in enumerate(full))]
    flat = xp.reshape(idx, (-1,))
    flat = xp.where(flat < 0, flat + sliced.shape[pos], flat)
    taken = xp.take(sliced, flat, axis=pos)
    shape = sliced.shape[:pos] + tuple(idx.shape) + sliced.shape[pos + 1 :]
    return xp.reshape(taken, shape)


def take_along_axis_native(xp: Any, x: Any, indices: Any, axis: int) -> Any:
    """``xp.take_along_axis`` where the library has it, else the same gather with standard functions
    only (move ``axis`` last, flatten, one ``take`` by linear index): dask has no n-d fancy indexing."""
    if hasattr(xp, "take_along_axis"):
        return xp.take_along_axis(x, indices, axis=axis)
    perm = (*(d for d in range(x.ndim) if d != axis), axis)
    xt = xp.permute_dims(x, perm)
    it = xp.permute_dims(indices, perm)
    n = xt.shape[-1]
    rows = _numel(tuple(it.shape[:-1]))
    it = xp.where(it < 0, it + n, it)
    offsets = xp.reshape(xp.arange(rows, dtype=it.dtype) * n, (*it.shape[:-1], 1))
    flat = xp.take(xp.reshape(xt, (-1,)), xp.reshape(it + offsets, (-1,)))
    back = tuple(perm.index(d) for d in range(x.ndim))
    return xp.permute_dims(xp.reshape(flat, tuple(it.shape)), back)


def generic_index_add(xp: Any, z: Any, key: tuple[Any, ...], values: Any) -> Any:
    """``z`` with ``values`` added at ``key``, repeated positions accumulating, in Array API terms.

    Handles the keys indexing gradients meet: integer arrays (or boolean masks) on adjacent axes,
    with full slices elsewhere; the scatter is a one-hot matrix product. Other keys are refused.
    """
    key = _expand_ellipsis(key, z.ndim)
    if any(k is None or isinstance(k, int) for k in key):
        raise NotImplementedError("generic index_add: only integer/boolean arrays and full slices are supported")
    expanded: list[Any] = []
    for k in key:
        if isinstance(k, slice) or not hasattr(k, "dtype") or k.dtype != xp.bool:
            expanded.append(k)
        else:
            expanded.extend(xp.nonzero(k))
    adv = [i for i, k in enumerate(expanded) if not isinstance(k, slice)]
    if not adv:
        z[key] = z[key] + values
        return z
    if adv != list(range(adv[0], adv[-1] + 1)):
        raise NotImplementedError("generic index_add: advanced indices must be on adjacent axes")
    if any(k != slice(None) for k in expanded if isinstance(k, slice)):
        # scatter into the sliced region, then add that region back with a basic setitem
        basic = tuple(k if isinstance(k, slice) else slice(None) for k in expanded)
        region = z[basic]
        full = tuple(slice(None) if isinstance(k, slice) else k for k in expanded)
        z[basic] = region + generic_index_add(xp, xp.zeros_like(region), full, values)
        return z
    p, q = adv[0], adv[-1] + 1
    shape = z.shape
    sub = shape[p:q]
    idx = xp.broadcast_arrays(*[expanded[i] for i in adv])
    lin = None
    for i, (k, n) in enumerate(zip(idx, sub)):
        k = xp.astype(k, xp.int64) % n
        stride = 1
        for m in sub[i + 1 :]:
            stride *= m
        lin = k * stride if lin is None else lin + k * stride
    assert lin is not None
    n_pos = 1
    for n in sub:
        n_pos *= n
    lin = xp.reshape(lin, (-1,))
    nb = lin.shape[0]
    if nb == 0:
        return z  # nothing to scatter (and (0, -1) is no shape to reshape into)
    onehot = xp.astype(xp.reshape(lin, (nb, 1)) == xp.reshape(xp.arange(n_pos), (1, n_pos)), values.dtype)
    pre, post = shape[:p], shape[q:]
    # values have shape pre + B + post: bring B to the front and flatten the rest
    nd_b = values.ndim - len(pre) - len(post)
    order = (
        tuple(range(len(pre), len(pre) + nd_b)) + tuple(range(len(pre))) + tuple(range(len(pre) + nd_b, values.ndim))
    )
    v = xp.reshape(xp.permute_dims(values, order), (nb, -1))
    scattered = xp.matmul(xp.permute_dims(onehot, (1, 0)), v)  # (n_pos, prod(pre + post))
    scattered = xp.reshape(scattered, tuple(sub) + tuple(pre) + tuple(post))
    back = (
        tuple(range(len(sub), len(sub) + len(pre)))
        + tuple(range(len(sub)))
        + tuple(range(len(sub) + len(pre), len(sub) + len(pre) + len(post)))
    )
    return z + xp.permute_dims(scattered, back)
