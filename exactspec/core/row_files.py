"""Files of distributions read within a budget: JSON text and ``.npy`` rows.

Every read stops at :data:`~exactspec.core.budget.MAX_FILE_BYTES` (a FIFO or a device such as
``/dev/zero`` is refused in one line), text must be UTF-8, and an ``.npy`` file is never
unpickled.
"""

from __future__ import annotations

from .budget import MAX_FILE_BYTES
from .errors import InvalidInput

__all__ = ["read_text_capped", "read_npy_row"]


def _read_bytes_capped(path, name: str) -> bytes:
    """At most :data:`~exactspec.core.budget.MAX_FILE_BYTES` of the regular file ``path``,
    refused in one line (:func:`exactspec.core.files.read_bytes_capped`: a FIFO, a device
    such as ``/dev/zero`` or a file over the budget)."""
    from .files import read_bytes_capped

    return read_bytes_capped(path, name, MAX_FILE_BYTES, "a distribution file")


def read_text_capped(path, name: str = "file") -> str:
    """The text of ``path`` as UTF-8, refused past :data:`~exactspec.core.budget.MAX_FILE_BYTES`
    (``/dev/zero`` stops there) or when it is not UTF-8."""
    data = _read_bytes_capped(path, name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InvalidInput(f"{name}: {path} is not UTF-8 text (byte {err.start})") from None


def read_npy_row(path, name: str = "file"):
    """A one-dimensional ``.npy`` array of float16, float32, float64 or integers, read up to
    :data:`~exactspec.core.budget.MAX_FILE_BYTES` and never unpickled.

    >>> import numpy as np, tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "row.npy")
    >>> np.save(f, np.array([0.25, 0.75], dtype=np.float16))
    >>> from exactspec.core.dist import Dist
    >>> read_npy_row(f, "p").tolist(), Dist.parse("@" + f)
    ([0.25, 0.75], Dist({0: 1/4, 1: 3/4}))
    """
    import io

    import numpy as np

    data = _read_bytes_capped(path, name)
    try:
        row = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, EOFError, OSError, TypeError) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        if "pickle" in first:
            first = "not an array of numbers; pickled objects are never loaded"
        raise InvalidInput(f"{name}: {path} is not a readable .npy array ({first})") from None
    if not isinstance(row, np.ndarray):
        raise InvalidInput(f"{name}: {path} holds several arrays (an .npz?): give one 1-D .npy")
    if row.ndim != 1 or row.size == 0:
        raise InvalidInput(f"{name}: {path} holds an array of shape {row.shape}: need one "
                           "non-empty row (1-D)")
    kind, size = row.dtype.kind, row.dtype.itemsize
    if not (kind == "f" and size <= 8) and kind not in "iu":
        raise InvalidInput(f"{name}: {path} holds {row.dtype.name}: need float16, float32, "
                           "float64 or integers")
    return row.astype(row.dtype.newbyteorder("="), copy=False)
