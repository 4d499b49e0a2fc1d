"""Reading logits dumps lazily, a block of rows at a time (layout: docs/sweep_format.md).

A dump holds two arrays of shape ``(positions, vocab)``, the target's rows and the draft's
(logits or probabilities), and optionally a 1-D integer array ``position`` naming each row.
Four containers are read, each without loading more than the rows asked for:

==========================  =================================================================
``DUMP``                    how rows are read
==========================  =================================================================
``file.npz``                the ``.npy`` members inside the zip: a stored member (``np.savez``)
                            by seeking in the file to the rows; a compressed one is
                            decompressed as a stream up to them
directory of ``.npy``       ``target.npy``, ``draft.npy``: memory-mapped
``file.safetensors``        the header (JSON) gives each tensor's offset; rows are read by
                            seeking (``F16``, ``BF16``, ``F32``, ``F64``; ``I64`` position)
Zarr store                  a group holding the arrays (Zarr 2 or 3); only the chunks that
                            hold the rows are read (needs the ``zarr`` package)
==========================  =================================================================

Values come back as stored (float16, float32 or float64), bfloat16 widened to float32 (exact).
A :class:`Dump` is a small picklable description, so the workers of a cluster can read the
rows where they run.

>>> import numpy as np, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "d.npz")
>>> np.savez(path, target=np.eye(3, dtype=np.float32), draft=np.full((3, 3), 1/3))
>>> dump = open_dump(path)
>>> dump.positions, dump.vocab, dump.kind
(3, 3, 'npz')
>>> dump.read(1, 3)[0].tolist()
[[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
"""

from __future__ import annotations

import json
import math
import os
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.errors import InvalidInput

__all__ = ["Dump", "open_dump", "FLOAT_DTYPES"]

#: The element types a dump may hold, by their names here.
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")

_SAFETENSORS_DTYPES = {"F16": "float16", "BF16": "bfloat16", "F32": "float32",
                       "F64": "float64", "I64": "int64", "I32": "int32"}
_ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int64": 8,
             "int32": 4}


@dataclass(frozen=True)
class _ArrayInfo:
    shape: tuple
    dtype: str
    offset: int = 0          # npz member / safetensors: byte offset of the data
    chunk_rows: int = 0      # Zarr: rows per stored chunk (0: any)


@dataclass(frozen=True)
class Dump:
    """A dump on disk: where it is, which arrays are target and draft, their shape and type.

    Attributes
    ----------
    path : str
    kind : str
        ``"npz"``, ``"npy-dir"``, ``"safetensors"`` or ``"zarr"``.
    target, draft : str
        The array names.
    positions, vocab : int
    dtype : str
        The target's element type (one of :data:`FLOAT_DTYPES`).
    chunk_rows : int
        Rows per stored chunk (Zarr), 0 when any block of rows reads equally well.
    has_position : bool
        Whether the dump names its rows (array ``position``).
    """

    path: str
    kind: str
    target: str
    draft: str
    positions: int
    vocab: int
    dtype: str
    draft_dtype: str
    chunk_rows: int
    has_position: bool
    infos: tuple = ()

    # -- reading rows ---------------------------------------------------------------------
    def read(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows ``lo:hi`` of the target and the draft, as stored (bfloat16 as float32)."""
        return self._rows(self.target, lo, hi), self._rows(self.draft, lo, hi)

    def position_ids(self, lo: int, hi: int) -> np.ndarray:
        """The names of rows ``lo:hi`` (array ``position``), else ``lo..hi-1``."""
        if not self.has_position:
            return np.arange(lo, hi, dtype=np.int64)
        return np.asarray(self._rows("position", lo, hi)).astype(np.int64).reshape(-1)

    def _info(self, name: str) -> _ArrayInfo:
        return dict(self.infos)[name]

    def _rows(self, name: str, lo: int, hi: int) -> np.ndarray:
        from ..core.errors import ExactspecError

        try:
            return self._stored_rows(name, lo, hi)
        except (ExactspecError, MemoryError):
            raise
        except Exception as err:  # noqa: BLE001 - a codec, zip or store error: one line
            raise InvalidInput(f"dump {self.path}: array {name!r}: rows {lo}..{hi - 1} cannot "
                               f"be read ({type(err).__name__}: {_first_line(err)}): the file "
                               "or a chunk of it is corrupt") from None

    def _stored_rows(self, name: str, lo: int, hi: int) -> np.ndarray:
        info = self._info(name)
        if self.kind == "npy-dir":
            arr = np.load(os.path.join(self.path, name + ".npy"), mmap_mode="r")
            return np.array(arr[lo:hi])
        if self.kind == "zarr":
            import zarr

            return np.asarray(zarr.open_group(self.path, mode="r")[name][lo:hi])
        row_items = int(np.prod(info.shape[1:], dtype=np.int64)) if len(info.shape) > 1 else 1
        row_bytes = row_items * _ITEMSIZE[info.dtype]
        count = hi - lo
        if self.kind == "npz":
            with zipfile.ZipFile(self.path) as zf:
                start = _stored_start(zf, name + ".npy")
                if start is not None:                    # a plain seek in the file
                    zf.fp.seek(start + info.offset + lo * row_bytes)
                    raw = zf.fp.read(min(count * row_bytes,
                                         zf.getinfo(name + ".npy").file_size
                                         - info.offset - lo * row_bytes))
                else:                                    # decompressed up to the rows
                    with zf.open(name + ".npy") as f:
                        f.seek(info.offset + lo * row_bytes)
                        raw = f.read(count * row_bytes)
        else:                                            # safetensors
            with open(self.path, "rb") as f:
                f.seek(info.offset + lo * row_bytes)
                raw = f.read(count * row_bytes)
        if len(raw) != count * row_bytes:
            raise InvalidInput(f"dump {self.path}: array {name!r} is truncated "
                               f"(rows {lo}..{hi - 1} are not all there)")
        shape = (count,) + tuple(info.shape[1:])
        return _decode(raw, info.dtype, shape)


def _stored_start(zf: zipfile.ZipFile, member: str) -> int | None:
    """Where a stored (uncompressed, unencrypted) member's bytes begin in the zip file, from
    its local header (30 bytes, then the name and the extra field); ``None`` for any other
    member.  Reading there costs only the rows read, where ``ZipExtFile.seek`` (before
    Python 3.12) reads and checksums every byte before them."""
    zinfo = zf.getinfo(member)
    if zinfo.compress_type != zipfile.ZIP_STORED or zinfo.flag_bits & 0x1:
        return None
    zf.fp.seek(zinfo.header_offset)
    header = zf.fp.read(30)
    if len(header) != 30 or header[:4] != b"PK\x03\x04":
        return None
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    return zinfo.header_offset + 30 + name_len + extra_len


def _decode(raw: bytes, dtype: str, shape: tuple) -> np.ndarray:
    if dtype == "bfloat16":                              # the top half of a float32: exact
        bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return bits.view(np.float32).reshape(shape)
    return np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<")).reshape(shape)


# -- opening ----------------------------------------------------------------------------

def open_dump(path, *, target: str = "target", draft: str = "draft") -> Dump:
    """Open a dump and check its layout (no rows are read).

    Raises :class:`~exactspec.core.errors.InvalidInput` with one line naming the problem: a
    missing file or array, arrays that are not 2-D, shapes that differ, a type that is not
    float16/bfloat16/float32/float64, a ``position`` array of the wrong length.
    """
    from ..core.files import check_regular

    p = Path(path)
    if not p.exists():
        raise InvalidInput(f"dump {path}: no such file or directory")
    if not p.is_dir():
        check_regular(p, "dump")                         # a FIFO would block, a device run on
    if p.is_dir():
        if (p / "zarr.json").exists() or (p / ".zgroup").exists() or (p / ".zattrs").exists():
            kind, infos = "zarr", _zarr_infos(p)
        elif any(p.glob("*.npy")):
            kind, infos = "npy-dir", _npy_dir_infos(p)
        else:
            raise InvalidInput(f"dump {path}: a directory must be a Zarr store or hold "
                               f"{target}.npy and {draft}.npy")
    elif p.suffix == ".npz":
        kind, infos = "npz", _npz_infos(p)
    elif p.suffix == ".safetensors":
        kind, infos = "safetensors", _safetensors_infos(p)
    else:
        raise InvalidInput(f"dump {path}: unknown format (use .npz, .safetensors, a Zarr "
                           "store or a directory of .npy files)")
    for name in (target, draft):
        if name not in infos:
            found = ", ".join(sorted(infos)) or "nothing"
            raise InvalidInput(f"dump {path}: no array {name!r} (found: {found})")
    t, d = infos[target], infos[draft]
    for name, info in ((target, t), (draft, d)):
        if len(info.shape) != 2:
            raise InvalidInput(f"dump {path}: array {name!r} has shape {info.shape}; "
                               "need (positions, vocab)")
        if info.dtype not in FLOAT_DTYPES:
            raise InvalidInput(f"dump {path}: array {name!r} holds {info.dtype}; need one "
                               f"of {', '.join(FLOAT_DTYPES)}")
    if t.shape != d.shape:
        raise InvalidInput(f"dump {path}: target has shape {t.shape} but draft has {d.shape}")
    if t.shape[0] == 0 or t.shape[1] == 0:
        raise InvalidInput(f"dump {path}: shape {t.shape} holds no rows to sweep")
    has_position = "position" in infos and "position" not in (target, draft)
    if has_position:
        pos = infos["position"]
        if pos.shape not in ((t.shape[0],), (t.shape[0], 1)) or pos.dtype.startswith("float"):
            raise InvalidInput(f"dump {path}: array 'position' has shape {pos.shape} and type "
                               f"{pos.dtype}; need {t.shape[0]} integers")
    chunk_rows = max(t.chunk_rows, d.chunk_rows)
    keep = {n: infos[n] for n in (target, draft) + (("position",) if has_position else ())}
    return Dump(path=str(p), kind=kind, target=target, draft=draft, positions=t.shape[0],
                vocab=t.shape[1], dtype=t.dtype, draft_dtype=d.dtype, chunk_rows=chunk_rows,
                has_position=has_position, infos=tuple(sorted(keep.items())))


#: One row of a dump, widened to float64, may take at most this many bytes (a block of
#: rows is the unit of memory; a row alone over it could not be swept within the budget).
MAX_ROW_BYTES = 2**28
MISSING_CHUNK_BYTES = 2**28   # Zarr: chunks not stored (read as the fill value), as float64


def _check_declared(p, name: str, shape, dtype: str, available: int | None) -> None:
    """Refuse, before reading, a declared shape that the file cannot hold (``available``:
    the bytes there are for the data, None when unknown) or whose rows are over
    :data:`MAX_ROW_BYTES`; one line naming the file and the field."""
    from ..core.errors import TooLarge

    if not isinstance(shape, tuple) or len(shape) > 8 or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise InvalidInput(f"dump {p}: array {name!r}: shape {str(shape)[:80]} is not a "
                           "list of at most 8 non-negative integers")
    if dtype not in _ITEMSIZE:
        return                                           # refused by type in open_dump
    items = 1
    for d in shape:
        items *= d
    need = items * _ITEMSIZE[dtype]
    if available is not None and need > available:
        raise InvalidInput(f"dump {p}: array {name!r}: shape {shape} of {dtype} declares "
                           f"{need:,} bytes but the file holds {max(available, 0):,}: the "
                           "header does not match the data")
    if len(shape) > 1:
        row = 8
        for d in shape[1:]:
            row *= d
        if row > MAX_ROW_BYTES:
            raise TooLarge(f"dump {p}: array {name!r}: shape {shape}: one row is {row:,} bytes "
                           f"as float64, over the budget of {MAX_ROW_BYTES:,}",
                           estimate=row, budget=MAX_ROW_BYTES)


def _dtype_name(dtype) -> str:
    dtype = np.dtype(dtype)
    if dtype.kind in "fiu":
        return dtype.name
    if dtype.kind == "V" and dtype.itemsize == 2:
        return "void16"
    return str(dtype)


def _npy_header(f) -> tuple[tuple, str, bool]:
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
    else:
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
    if np.dtype(dtype).byteorder == ">":
        raise InvalidInput("big-endian arrays are not supported: save little-endian")
    return tuple(shape), _dtype_name(dtype), fortran


def _npz_infos(p: Path) -> dict:
    try:
        zf = zipfile.ZipFile(p)
    except (zipfile.BadZipFile, OSError) as err:
        raise InvalidInput(f"dump {p}: not a readable .npz ({err})") from None
    infos = {}
    with zf:
        for member in zf.namelist():
            if not member.endswith(".npy"):
                continue
            with zf.open(member) as f:
                try:
                    shape, dtype, fortran = _npy_header(f)
                except (ValueError, SyntaxError, zipfile.BadZipFile, OSError, EOFError) as err:
                    raise InvalidInput(f"dump {p}: member {member!r} is not an array "
                                       f"({_first_line(err)})") from None
                if fortran and len(shape) > 1:
                    raise InvalidInput(f"dump {p}: array {member[:-4]!r} is stored in "
                                       "Fortran order; save it C-contiguous")
                offset = f.tell()
                # the zip's own record of the member's size (a compressed member that holds
                # less than it says is caught as truncated when its rows are read)
                _check_declared(p, member[:-4], shape, dtype,
                                zf.getinfo(member).file_size - offset)
                infos[member[:-4]] = _ArrayInfo(shape, dtype, offset=offset)
    return infos


def _npy_dir_infos(p: Path) -> dict:
    from ..core.files import check_regular

    infos = {}
    for file in sorted(p.glob("*.npy")):
        check_regular(file, f"dump {p}")
        with open(file, "rb") as f:
            try:
                shape, dtype, fortran = _npy_header(f)
            except (ValueError, SyntaxError, OSError, EOFError) as err:
                raise InvalidInput(f"dump {p}: {file.name} is not an array "
                                   f"({_first_line(err)})") from None
            _check_declared(f"{p}/{file.name}", file.stem, shape, dtype,
                            os.fstat(f.fileno()).st_size - f.tell())
        infos[file.stem] = _ArrayInfo(shape, dtype)
    return infos


def _safetensors_infos(p: Path) -> dict:
    """The tensors of a safetensors file from its header, each field checked against the
    format and the file's size (one line naming the file and the field)."""
    size = p.stat().st_size
    with open(p, "rb") as f:
        head = f.read(8)
        if len(head) != 8:
            raise InvalidInput(f"dump {p}: not a safetensors file (too short)")
        (n,) = struct.unpack("<Q", head)
        if n > min(100_000_000, size - 8):
            raise InvalidInput(f"dump {p}: not a safetensors file (a header of {n:,} bytes in "
                               f"a file of {size:,})")
        try:
            header = json.loads(f.read(n))
        except RecursionError:
            raise InvalidInput(f"dump {p}: the safetensors header nests too deeply") from None
        except (ValueError, UnicodeDecodeError) as err:
            raise InvalidInput(f"dump {p}: not a safetensors file ({_first_line(err)})"
                               ) from None
    if not isinstance(header, dict):
        raise InvalidInput(f"dump {p}: the safetensors header is a JSON "
                           f"{type(header).__name__}, not an object of tensors")
    data_bytes = size - 8 - n
    infos = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        where = f"dump {p}: tensor {name!r}"
        if not isinstance(entry, dict):
            raise InvalidInput(f"{where}: its entry is a JSON {type(entry).__name__}, not an "
                               "object with dtype, shape and data_offsets")
        raw_dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), \
            entry.get("data_offsets")
        if not isinstance(raw_dtype, str):
            raise InvalidInput(f"{where}: field 'dtype' is {str(raw_dtype)[:40]!r}, not a "
                               "type name such as F32")
        if not isinstance(shape, list) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape) \
                or len(shape) > 8:
            raise InvalidInput(f"{where}: field 'shape' is {str(shape)[:60]}, not a list of "
                               "at most 8 non-negative integers")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(
                isinstance(o, int) and not isinstance(o, bool) for o in offsets)
                and 0 <= offsets[0] <= offsets[1]):
            raise InvalidInput(f"{where}: field 'data_offsets' is {str(offsets)[:60]}, not "
                               "[begin, end] with 0 <= begin <= end")
        if offsets[1] > data_bytes:
            raise InvalidInput(f"{where}: field 'data_offsets' ends at byte {offsets[1]:,} "
                               f"but the file holds {data_bytes:,} bytes of data")
        dtype = _SAFETENSORS_DTYPES.get(raw_dtype, raw_dtype.lower())
        shape = tuple(shape)
        _check_declared(p, name, shape, dtype, offsets[1] - offsets[0])
        infos[name] = _ArrayInfo(shape, dtype, offset=8 + n + offsets[0])
    return infos


def _first_line(err) -> str:
    text = str(err).strip()
    return text.splitlines()[0][:200] if text else type(err).__name__


def _zarr_infos(p: Path) -> dict:
    try:
        import zarr
    except ImportError:
        raise InvalidInput("reading a Zarr store needs the zarr package: "
                           "pip install 'exactspec[sweep]'") from None
    try:
        group = zarr.open_group(str(p), mode="r")
    except Exception as err:  # noqa: BLE001 - zarr raises many kinds; one line for each
        raise InvalidInput(f"dump {p}: not a readable Zarr group ({err})") from None
    infos = {}
    try:
        arrays = list(group.arrays())
    except Exception as err:  # noqa: BLE001 - zarr raises many kinds; one line for each
        raise InvalidInput(f"dump {p}: not a readable Zarr group ({_first_line(err)})") from None
    files = _store_files(p)
    for name, arr in arrays:
        dtype = _dtype_name(arr.dtype)
        chunks = getattr(arr, "chunks", None) or (0,)
        shape = tuple(int(d) for d in arr.shape)
        _check_declared(p, name, shape, dtype, None)
        # chunks never written read as the fill value (Zarr 3 leaves out a chunk that is all
        # fill value): a few are data; more missing chunks than MISSING_CHUNK_BYTES of rows is a
        # header that lies about the data, not rows to sweep.  The chunks are counted from the
        # files of the store (zarr's own count visits every key of the grid: 10**9 of them for
        # 10**12 rows declared)
        grid = getattr(arr, "shards", None) or chunks
        try:
            needed = math.prod(-(-d // int(c)) for d, c in zip(shape, grid)) if grid != (0,) \
                else 0
        except (TypeError, ValueError, ZeroDivisionError):
            needed = 0
        stored = files.get(str(getattr(arr, "path", name)).strip("/"), 0)
        chunk_bytes = 8 * math.prod(int(c) for c in grid) if grid != (0,) else 0
        if stored < needed and (needed - stored) * chunk_bytes > MISSING_CHUNK_BYTES:
            raise InvalidInput(f"dump {p}: array {name!r}: shape {shape} needs {needed:,} "
                               f"chunks but the store holds {stored:,}: the metadata does not "
                               "match the data")
        infos[name] = _ArrayInfo(shape, dtype, chunk_rows=int(chunks[0]))
    return infos


_ZARR_METADATA = {"zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"}


def _store_files(p: Path) -> dict:
    """The number of data files (chunks or shards) under each folder of the Zarr store ``p``
    (keyed by the folder's path in the store: an array's path), every entry checked to be a
    regular file or a folder first (a FIFO among the chunks would block the read)."""
    from ..core.files import check_regular

    counts: dict = {}
    root = str(p)
    for folder, dirs, names in os.walk(root):
        relative = os.path.relpath(folder, root)
        parts = [] if relative == "." else relative.split(os.sep)
        for entry in names:
            full = os.path.join(folder, entry)
            check_regular(full, f"dump {p}")
            if entry in _ZARR_METADATA:
                continue
            for depth in range(len(parts) + 1):          # counted for every folder above it
                key = "/".join(parts[:depth])
                counts[key] = counts.get(key, 0) + 1
        for entry in dirs:
            full = os.path.join(folder, entry)
            if os.path.islink(full) and not os.path.isdir(full):
                check_regular(full, f"dump {p}")
    return counts
