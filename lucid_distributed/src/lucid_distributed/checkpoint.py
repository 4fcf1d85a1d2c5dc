"""Sharded checkpoints: every rank writes its own piece, any number of ranks reads them back.

In the spirit of ``torch.distributed.checkpoint``: ``save(state_dict, checkpoint_id=folder)`` on every
rank of the job, ``load(state_dict, checkpoint_id=folder)`` on every rank of a later job of any size
(or in one process), loading *in place* into the tensors ``state_dict`` holds.

A state dict is a nesting of dicts (str or int keys), lists and tuples whose leaves are

- a :class:`Shard`: this rank's piece of a tensor split across ranks (ZeRO's or FSDP's), described by
  the global shape and where the piece sits in it: a flat range ``[offset, offset + local.size)`` of
  the global tensor's C-order elements (FSDP's flat parameters) or, as a special case, whole rows along
  dim 0 (:meth:`Shard.rows`, PyTorch's ``Shard(0)``);
- a plain ``Tensor``: the whole tensor, held by this rank (replicated tensors held by several ranks
  are written once, by the lowest of them);
- ``int``, ``float``, ``bool``, ``str`` or ``None`` (an optimizer's step counts, hyperparameters).

On disk, ``checkpoint_id`` is a folder holding one safetensors file per rank,
``shard-<rank>-of-<world>-<save id>.safetensors`` (the tensors that rank wrote, named by their dotted
path in the state dict, ``state.3.exp_avg``; a piece of a sharded tensor keeps its local shape), and
``metadata.json``, written by rank 0 once every rank's file is complete::

    {"format": "lucid-sharded-checkpoint", "version": 1, "world_size": 4, "save_id": "1f2e...",
     "files": {"0": "shard-0-of-4-1f2e....safetensors", ...},
     "tensors": {"fc.weight": {"path": [["d", "fc.weight"]], "dtype": "float32", "shape": [8, 3],
                 "chunks": [{"rank": 0, "file": "shard-0-...", "key": "fc.weight", "offset": 0,
                             "numel": 12, "shape": [4, 3], "rows": [0, 4], "crc32": 2961146218}, ...]}},
     "values": {"step": {"path": [["d", "step"]], "value": 10}}}

``chunks`` say which rank holds which flat range of each tensor (``rows`` too when the range is whole
rows), so a loader can cut any other partition out of them: saved on 4 ranks, resumed on 2 or on 1.
``path`` records the nesting (``"d"`` dict key, ``"l"`` list index, ``"u"`` tuple index), from which
:func:`load_full` rebuilds the whole state dict without a template. Every write goes through a
temporary file and ``os.replace``, and each save uses fresh file names that only the new
``metadata.json`` refers to, so a save that dies halfway leaves the previous checkpoint readable; the
next complete save removes the files no metadata names and the temporaries a killed save left. A damaged
or missing file raises :class:`CheckpointError` naming it (each chunk's CRC-32 is checked on read).
"""

from __future__ import annotations

__all__ = ["Shard", "save", "load", "load_full", "read_metadata", "CheckpointError", "METADATA_FILE"]

import json
import math
import os
import re
import secrets
import struct
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import lucid_core
from lucid_core import Tensor

from . import _group

METADATA_FILE = "metadata.json"
_FORMAT = "lucid-sharded-checkpoint"
_VERSION = 1
_SHARD_FILE = re.compile(r"^shard-\d+-of-\d+-[0-9a-f]+\.safetensors$")
_TEMPORARY = re.compile(r"^(shard-\d+-of-\d+-[0-9a-f]+\.safetensors|metadata\.json)\.tmp-\d+-[0-9a-f]+$")
_SCALARS = (bool, int, float, str, type(None))
# lucid dtype name -> safetensors code
_CODES = {
    "bool": "BOOL",
    "int8": "I8",
    "int16": "I16",
    "int32": "I32",
    "int64": "I64",
    "uint8": "U8",
    "uint16": "U16",
    "uint32": "U32",
    "uint64": "U64",
    "float16": "F16",
    "bfloat16": "BF16",
    "float32": "F32",
    "float64": "F64",
}
_NAMES = {c: n for n, c in _CODES.items()}


class CheckpointError(ValueError):
    """A sharded checkpoint that cannot be read: a file missing, damaged or inconsistent with the metadata.

    The message names the file and what is wrong with it.
    """


@dataclass(frozen=True)
class Shard:
    """This rank's piece of a tensor of ``global_shape`` split across ranks.

    ``local``'s elements are the global tensor's C-order elements ``[offset, offset + local.size)``
    (``local`` may have any shape of that size: a 1-D slice of a flat parameter, or a block of rows).
    Zero-sized pieces are allowed (a rank holding nothing of this tensor).
    """

    local: Tensor
    global_shape: tuple[int, ...]
    offset: int = 0

    def __post_init__(self) -> None:
        shape = tuple(int(s) for s in self.global_shape)
        object.__setattr__(self, "global_shape", shape)
        total = math.prod(shape)
        if not isinstance(self.local, Tensor):
            raise TypeError(f"Shard: local must be a lucid Tensor, got {type(self.local).__name__}")
        if not 0 <= self.offset <= self.offset + self.local.size <= total:
            raise ValueError(
                f"Shard: elements [{self.offset}, {self.offset + self.local.size}) do not fit in a tensor of "
                f"shape {shape} ({total} elements)"
            )

    @classmethod
    def rows(cls, local: Tensor, global_shape: tuple[int, ...], start: int) -> Shard:
        """The piece holding rows ``start ... start + local.shape[0] - 1`` (dim 0) of the global tensor."""
        shape = tuple(int(s) for s in global_shape)
        if not shape or tuple(local.shape[1:]) != shape[1:]:
            raise ValueError(
                f"Shard.rows: a block of rows of a {shape} tensor needs shape (k, *{shape[1:]}), "
                f"got {tuple(local.shape)}"
            )
        return cls(local, shape, start * math.prod(shape[1:]))


# -- walking a state dict ------------------------------------------------------------------------------------
Path = tuple[tuple[str, Any], ...]  # (("d", key) | ("l", index) | ("u", index), ...)


def _leaves(obj: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Every leaf of a nesting of dicts, lists and tuples, with its path."""
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise TypeError(f"checkpoint: dict keys must be str or int, got {k!r} at {_name(path) or 'the top'}")
            yield from _leaves(v, (*path, ("d", k)))
    elif isinstance(obj, (list, tuple)):
        kind = "u" if isinstance(obj, tuple) else "l"
        for i, v in enumerate(obj):
            yield from _leaves(v, (*path, (kind, i)))
    elif isinstance(obj, (Tensor, Shard, *_SCALARS)):
        yield path, obj
    else:
        raise TypeError(
            f"checkpoint: cannot store a {type(obj).__name__} at {_name(path) or 'the top'}; a state dict holds "
            "Tensors, Shards, int, float, bool, str and None in dicts, lists and tuples"
        )


def _name(path: Path) -> str:
    return ".".join(str(k) for _, k in path)


def _names(obj: Any) -> dict[str, tuple[Path, Any]]:
    """Leaves by dotted name (two paths with one name, ``{"a.b": x}`` beside ``{"a": {"b": y}}``, raise)."""
    out: dict[str, tuple[Path, Any]] = {}
    for path, leaf in _leaves(obj):
        name = _name(path)
        if name in out:
            raise ValueError(f"checkpoint: two entries of the state dict are both named {name!r}; rename one")
        out[name] = (path, leaf)
    return out


def _dtype(name: str) -> lucid_core.DType:
    d = getattr(lucid_core, name, None)
    if not isinstance(d, lucid_core.DType):
        raise CheckpointError(f"checkpoint: dtype {name!r} is not one this lucid_core has")
    return d


# -- saving ------------------------------------------------------------------------------------------------------
def _rank_world() -> tuple[int, int]:
    if _group.is_initialized():
        return _group.get_rank(), _group.get_world_size()
    return 0, 1


def _gather(obj: Any, world: int) -> list[Any]:
    if world == 1:
        return [obj]
    out: list[Any] = [None] * world
    _group.all_gather_object(out, obj)
    return out


def save(state_dict: Mapping[str, Any], *, checkpoint_id: str | os.PathLike[str]) -> None:
    """Write this rank's part of ``state_dict`` into the folder ``checkpoint_id`` (call it on every rank).

    Each rank writes its :class:`Shard` pieces and the plain tensors no lower rank also holds into its
    own safetensors file; rank 0 then writes ``metadata.json`` (global shapes, dtypes, who holds which
    range, the non-tensor values) and removes files of earlier saves. The folder is created if needed;
    it must be shared by all ranks (one file system). Collective: every rank must call it.
    """
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"save: state_dict must be a dict, got {type(state_dict).__name__}")
    folder = os.fspath(checkpoint_id)
    rank, world = _rank_world()
    mine = _names(state_dict)
    plan: dict[str, Any] = {"tensors": {}, "values": {}, "token": secrets.token_hex(8)}
    for name, (path, leaf) in mine.items():
        if isinstance(leaf, (Tensor, Shard)):
            t = leaf.local if isinstance(leaf, Shard) else leaf
            if t.dtype.name not in _CODES:
                raise TypeError(f"save: tensor {name!r} has dtype {t.dtype.name}, which safetensors cannot hold")
            whole = tuple(leaf.global_shape) if isinstance(leaf, Shard) else tuple(t.shape)
            offset = leaf.offset if isinstance(leaf, Shard) else 0
            plan["tensors"][name] = (
                _plain_path(path),
                t.dtype.name,
                whole,
                offset,
                t.size,
                tuple(t.shape),
                isinstance(leaf, Shard),
            )
        else:
            plan["values"][name] = (_plain_path(path), leaf)
    plans = _gather(plan, world)  # every rank learns the whole plan, so all agree on who writes what
    token = plans[0]["token"]
    writers = _assign_writers(plans)
    os.makedirs(folder, exist_ok=True)
    file = f"shard-{rank}-of-{world}-{token}.safetensors"
    error = None
    crcs: dict[str, int] = {}
    try:
        tensors = {
            n: (l.local if isinstance(l, Shard) else l) for n, (_, l) in mine.items() if writers.get(n, {}).get(rank)
        }
        crcs = _write_safetensors(os.path.join(folder, file), tensors)
    except OSError as exc:
        error = f"rank {rank} could not write {os.path.join(folder, file)}: {exc}"
    outcomes = _gather((error, crcs), world)
    failed = [e for e, _ in outcomes if e]
    if failed:
        raise OSError(
            f"save: the checkpoint in {folder} was not written ({'; '.join(failed)}); the previous one, "
            "if any, is unchanged"
        )
    if rank == 0:
        meta = _metadata(plans, writers, [c for _, c in outcomes], token, world)
        _write_atomic(os.path.join(folder, METADATA_FILE), json.dumps(meta, indent=1).encode())
        keep = set(meta["files"].values())
        for old in os.listdir(folder):
            # every rank's writes of this save are done: other shards and temporaries are from earlier saves
            if (_SHARD_FILE.match(old) and old not in keep) or _TEMPORARY.match(old):
                try:
                    os.unlink(os.path.join(folder, old))
                except OSError:
                    pass
    if world > 1:
        _group.barrier()  # on return the checkpoint is complete, on every rank


def _plain_path(path: Path) -> list[list[Any]]:
    return [[kind, key] for kind, key in path]


def _assign_writers(plans: list[dict[str, Any]]) -> dict[str, dict[int, bool]]:
    """Which ranks write each tensor: every rank its shard pieces, the lowest holder a whole tensor."""
    writers: dict[str, dict[int, bool]] = {}
    for r, plan in enumerate(plans):
        for name, spec in plan["tensors"].items():
            who = writers.setdefault(name, {})
            sharded = spec[6]
            if sharded:
                who[r] = spec[4] > 0
            elif not any(who.values()):
                who[r] = True
    return writers


def _metadata(
    plans: list[dict[str, Any]], writers: dict[str, dict[int, bool]], crcs: list[dict[str, int]], token: str, world: int
) -> dict[str, Any]:
    files = {str(r): f"shard-{r}-of-{world}-{token}.safetensors" for r in range(world)}
    tensors: dict[str, Any] = {}
    values: dict[str, Any] = {}
    for r, plan in enumerate(plans):
        for name, (path, value) in plan["values"].items():
            values.setdefault(name, {"path": path, "value": value})
        for name, (path, dtype, whole, offset, numel, shape, _) in plan["tensors"].items():
            entry = tensors.setdefault(name, {"path": path, "dtype": dtype, "shape": list(whole), "chunks": []})
            if (entry["dtype"], entry["shape"]) != (dtype, list(whole)):
                raise ValueError(
                    f"save: the ranks hold tensor {name!r} with different global shapes or dtypes "
                    f"({entry['shape']} {entry['dtype']} and {list(whole)} {dtype})"
                )
            if not writers[name].get(r):
                continue
            row = math.prod(whole[1:]) if whole else 1
            rows = [offset // row, (offset + numel) // row] if row and offset % row == 0 and numel % row == 0 else None
            entry["chunks"].append(
                {
                    "rank": r,
                    "file": files[str(r)],
                    "key": name,
                    "offset": offset,
                    "numel": numel,
                    "shape": list(shape),
                    "rows": rows,
                    "crc32": crcs[r][name],
                }
            )
    for name, entry in tensors.items():
        covered = sum(c["numel"] for c in entry["chunks"])
        if covered != math.prod(entry["shape"]):
            raise ValueError(
                f"save: the ranks' pieces of tensor {name!r} cover {covered} of its "
                f"{math.prod(entry['shape'])} elements; every element must be held by one rank"
            )
    return {
        "format": _FORMAT,
        "version": _VERSION,
        "world_size": world,
        "save_id": token,
        "files": files,
        "tensors": tensors,
        "values": values,
    }


def _write_safetensors(path: str, tensors: Mapping[str, Tensor]) -> dict[str, int]:
    """Write ``tensors`` as one safetensors file (atomically); each tensor's CRC-32."""
    header: dict[str, Any] = {"__metadata__": {"format": _FORMAT}}
    offset = 0
    blobs = []
    crcs = {}
    for name, t in tensors.items():
        data = t.detach().tobytes()
        crcs[name] = zlib.crc32(data)
        header[name] = {
            "dtype": _CODES[t.dtype.name],
            "shape": list(t.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        offset += len(data)
        blobs.append(data)
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    _write_atomic(path, struct.pack("<Q", len(raw)) + raw, *blobs)
    return crcs


def _write_atomic(path: str, *pieces: bytes) -> None:
    """Write ``pieces`` to ``path`` through a temporary file, fsync it, then ``os.replace`` (all or nothing)."""
    tmp = f"{path}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        with open(tmp, "wb") as fh:
            for p in pieces:
                fh.write(p)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# -- loading ----------------------------------------------------------------------------------------------------
def read_metadata(checkpoint_id: str | os.PathLike[str]) -> dict[str, Any]:
    """The checkpoint's ``metadata.json`` (checked): global shapes, dtypes, chunks and values."""
    folder = os.fspath(checkpoint_id)
    path = os.path.join(folder, METADATA_FILE)
    try:
        with open(path, "rb") as fh:
            meta = json.loads(fh.read().decode())
    except FileNotFoundError:
        hint = " (a save may have been interrupted before rank 0 wrote it)" if os.path.isdir(folder) else ""
        raise CheckpointError(f"load: {path} does not exist: {folder} is not a sharded checkpoint{hint}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise CheckpointError(f"load: {path} is damaged: {exc}") from None
    if not (
        isinstance(meta, dict)
        and meta.get("format") == _FORMAT
        and isinstance(meta.get("tensors"), dict)
        and isinstance(meta.get("values"), dict)
        and isinstance(meta.get("files"), dict)
    ):
        raise CheckpointError(f"load: {path} is not the metadata of a Lucid sharded checkpoint (format {_FORMAT!r})")
    if meta.get("version") != _VERSION:
        raise CheckpointError(f"load: {path} has format version {meta.get('version')!r}; this Lucid reads {_VERSION}")
    return meta


class _Reader:
    """Reads chunks out of a checkpoint's shard files, checking each against the metadata."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.headers: dict[str, tuple[dict[str, Any], int, int]] = {}  # file -> (header, data start, size)
        self.last: tuple[str, str, bytes] | None = None  # the last chunk read (the next piece often needs it)

    def header(self, file: str) -> tuple[dict[str, Any], int, int]:
        if file not in self.headers:
            path = os.path.join(self.folder, file)
            try:
                with open(path, "rb") as fh:
                    size = os.fstat(fh.fileno()).st_size
                    head = fh.read(8)
                    if len(head) < 8:
                        raise CheckpointError(
                            f"load: {path} is damaged: {size} bytes, too short for a safetensors file"
                        )
                    (n,) = struct.unpack("<Q", head)
                    if 8 + n > size:
                        raise CheckpointError(
                            f"load: {path} is truncated: its header needs {n} bytes, {size - 8} follow"
                        )
                    header = json.loads(fh.read(n).decode())
            except FileNotFoundError:
                raise CheckpointError(f"load: the shard file {path} is missing (the metadata lists it)") from None
            except (UnicodeDecodeError, ValueError) as exc:
                raise CheckpointError(
                    f"load: {path} is damaged: its safetensors header does not parse ({exc})"
                ) from None
            if not isinstance(header, dict):
                raise CheckpointError(f"load: {path} is damaged: its safetensors header is not an object")
            self.headers[file] = (header, 8 + n, size)
        return self.headers[file]

    def chunk(self, chunk: Mapping[str, Any], dtype: str) -> bytes:
        """The raw bytes of one saved chunk, checked (shape, size, CRC-32)."""
        file, key = chunk["file"], chunk["key"]
        if self.last is not None and self.last[:2] == (file, key):
            return self.last[2]
        path = os.path.join(self.folder, file)
        header, start, size = self.header(file)
        spec = header.get(key)
        itemsize = _dtype(dtype).itemsize
        if not isinstance(spec, dict) or spec.get("dtype") != _CODES.get(dtype) or spec.get("shape") != chunk["shape"]:
            raise CheckpointError(
                f"load: {path} is damaged: it has no {dtype} tensor {key!r} of shape {chunk['shape']} "
                "as the metadata says"
            )
        begin, end = spec.get("data_offsets", (0, -1))
        if end - begin != chunk["numel"] * itemsize:
            raise CheckpointError(
                f"load: {path} is damaged: tensor {key!r} spans {end - begin} bytes, "
                f"expected {chunk['numel'] * itemsize}"
            )
        if start + end > size:
            raise CheckpointError(
                f"load: {path} is truncated: tensor {key!r} ends at byte {start + end}, the file has {size}"
            )
        with open(path, "rb") as fh:
            fh.seek(start + begin)
            data = fh.read(end - begin)
        if len(data) != end - begin or zlib.crc32(data) != chunk["crc32"]:
            raise CheckpointError(f"load: {path} is damaged: the bytes of tensor {key!r} do not match their CRC-32")
        self.last = (file, key, data)
        return data

    def piece(self, name: str, entry: Mapping[str, Any], offset: int, numel: int) -> bytes:
        """Elements ``[offset, offset + numel)`` of saved tensor ``name``, cut from the chunks that hold them."""
        itemsize = _dtype(entry["dtype"]).itemsize
        out = bytearray(numel * itemsize)
        got = 0
        for c in entry["chunks"]:
            lo, hi = max(offset, c["offset"]), min(offset + numel, c["offset"] + c["numel"])
            if lo >= hi:
                continue
            data = self.chunk(c, entry["dtype"])
            out[(lo - offset) * itemsize : (hi - offset) * itemsize] = data[
                (lo - c["offset"]) * itemsize : (hi - c["offset"]) * itemsize
            ]
            got += hi - lo
        if got != numel:
            raise CheckpointError(
                f"load: the metadata in {self.folder} covers {got} of elements [{offset}, "
                f"{offset + numel}) of tensor {name!r}"
            )
        return bytes(out)


def load(state_dict: dict[str, Any], *, checkpoint_id: str | os.PathLike[str], strict: bool = True) -> None:
    """Fill ``state_dict`` in place from the checkpoint in ``checkpoint_id``, on any number of ranks.

    Each plain tensor receives the whole saved tensor, each :class:`Shard` the elements of its range
    (cut from whichever ranks saved them), each non-tensor leaf the saved value; tensors keep their
    device and dtype (values are converted). Entries the checkpoint lacks raise a KeyError naming them
    (``strict=False`` leaves them as they are); entries only the checkpoint has are ignored. Needs no
    process group: every rank reads the files it needs itself.
    """
    folder = os.fspath(checkpoint_id)
    meta = read_metadata(folder)
    reader = _Reader(folder)
    missing = []
    for name, (path, leaf) in _names(state_dict).items():
        if isinstance(leaf, (Tensor, Shard)):
            entry = meta["tensors"].get(name)
            if entry is None:
                missing.append(name)
                continue
            t = leaf.local if isinstance(leaf, Shard) else leaf
            whole = tuple(leaf.global_shape) if isinstance(leaf, Shard) else tuple(t.shape)
            if tuple(entry["shape"]) != whole:
                raise ValueError(
                    f"load: tensor {name!r} has shape {tuple(entry['shape'])} in {folder}, but the state "
                    f"dict wants {whole}"
                )
            offset = leaf.offset if isinstance(leaf, Shard) else 0
            data = reader.piece(name, entry, offset, t.size)
            value = lucid_core.frombuffer(data, dtype=_dtype(entry["dtype"]), shape=tuple(t.shape), device=t.device)
            with lucid_core.no_grad():
                t.copy_(value if value.dtype is t.dtype else value.astype(t.dtype))
        else:
            saved = meta["values"].get(name)
            if saved is None:
                missing.append(name)
                continue
            _set(state_dict, path, saved["value"])
    if missing and strict:
        raise KeyError(f"load: {folder} holds no entry for {missing[:10]}" + (" ..." if len(missing) > 10 else ""))


def _set(root: Any, path: Path, value: Any) -> None:
    """Put ``value`` at ``path``; a tuple on the way is rebuilt (Adam's ``betas``) and put back in its parent."""
    nodes = [root]
    for _, key in path[:-1]:
        nodes.append(nodes[-1][key])
    for depth in range(len(path) - 1, -1, -1):
        kind, key = path[depth]
        node = nodes[depth]
        if kind != "u":
            node[key] = value
            return
        value = (*node[:key], value, *node[key + 1 :])
    raise TypeError("load: the state dict itself cannot be a tuple")  # save and load take a dict at the top


def load_full(
    checkpoint_id: str | os.PathLike[str], *, device: Any = None, names: Iterable[str] | None = None
) -> dict[str, Any]:
    """The whole state dict the checkpoint holds, every sharded tensor reassembled, in one process.

    No template is needed: the nesting comes from the metadata. ``device``: where the tensors go
    (default: the default device). ``names``: only these entries (dotted names, as in the metadata),
    in the same nesting (an optimizer's state for some parameter indices, say).
    """
    folder = os.fspath(checkpoint_id)
    meta = read_metadata(folder)
    wanted = None if names is None else set(names)
    unknown = set() if wanted is None else wanted - set(meta["tensors"]) - set(meta["values"])
    if unknown:
        raise KeyError(f"load_full: {folder} holds no entry for {sorted(unknown)[:10]}")
    reader = _Reader(folder)
    leaves: list[tuple[list[list[Any]], Any]] = []
    for name, entry in meta["tensors"].items():
        if wanted is not None and name not in wanted:
            continue
        data = reader.piece(name, entry, 0, math.prod(entry["shape"]))
        t = lucid_core.frombuffer(data, dtype=_dtype(entry["dtype"]), shape=tuple(entry["shape"]), device=device)
        leaves.append((entry["path"], t))
    leaves += [(v["path"], v["value"]) for n, v in meta["values"].items() if wanted is None or n in wanted]
    root: dict[str, Any] = {}
    tuples: set[tuple[tuple[str, Any], ...]] = set()
    for path, value in leaves:
        node: Any = root
        for i, (kind, key) in enumerate(path):
            last = i == len(path) - 1
            nxt = None if last else path[i + 1][0]
            if kind != "d":
                while len(node) <= key:
                    node.append(None)
            if last:
                node[key] = value
                break
            if kind == "d":
                node = node.setdefault(key, {} if nxt == "d" else [])
            else:
                if node[key] is None:
                    node[key] = {} if nxt == "d" else []
                node = node[key]
            if nxt == "u":
                tuples.add(tuple((k, x) for k, x in path[: i + 1]))
    return _tuples(root, tuples)


def _tuples(root: dict[str, Any], paths: set[tuple[tuple[str, Any], ...]]) -> dict[str, Any]:
    """Turn the lists the metadata marks as tuples back into tuples (deepest first)."""
    for p in sorted(paths, key=len, reverse=True):
        parent: Any = root
        for _, key in p[:-1]:
            parent = parent[key]
        parent[p[-1][1]] = tuple(parent[p[-1][1]])
    return root
