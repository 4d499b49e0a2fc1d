"""Files a command reads and writes: inputs read up to a byte cap and only when they are
regular files, outputs that never name an input, written whole or not at all.

*Reading.*  :func:`read_bytes_capped` opens without blocking (a FIFO with no writer would
wait forever, a terminal for a line) and refuses whatever is not a regular file (a FIFO or
a pipe, ``/dev/stdin`` of a pipe included, which a command reading its input twice would
find empty; a device such as ``/dev/zero``; a socket; a folder).  It reads at most the cap,
and one byte more tells a file over it.

*Writing.*  :func:`check_outputs` refuses, before any work, an output path that is one of the
command's inputs (by name, through a symbolic link or a hard link: the same device and inode)
or lies inside an input folder, and two outputs that are one file.  :func:`output_file` and
:func:`output_path` write into a temporary file in the target's folder and rename it into
place (``os.replace``) once the whole file is written, so that a failed write (a full disk, an
error half-way) leaves the old file, or none, never half a file.  A target that exists and is
not a regular file (``/dev/null``, ``/dev/stdout``) is written in place: renaming over a
device would replace the device.

>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> out = os.path.join(folder, "out.txt")
>>> with output_file(out, "--out") as handle:
...     _ = handle.write("whole")
>>> read_bytes_capped(out, "out", 100), sorted(os.listdir(folder))
(b'whole', ['out.txt'])
>>> check_outputs([("--out", out)], [("the dump", out)])  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
exactspec.core.errors.InvalidInput: --out ... is the dump ...: an output never overwrites an input; choose another file
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile

from .errors import InvalidInput, TooLarge

__all__ = ["read_bytes_capped", "check_regular", "check_outputs", "output_file",
           "output_path"]


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a plain file"


def _not_regular(path, name: str, mode: int, max_bytes: int | None = None) -> InvalidInput:
    cap = f" of at most {max_bytes // 2**20} MiB" if max_bytes and max_bytes >= 2**20 else ""
    return InvalidInput(f"{name}: {path} is {_kind(mode)}, not a regular file: give a "
                        f"file{cap} (a FIFO, a pipe, a device or a socket is never read)")


def check_regular(path, name: str, max_bytes: int | None = None) -> None:
    """Refuse ``path`` unless it is a regular file (after symbolic links); a missing file is
    refused too.  Nothing is opened (a FIFO would block)."""
    try:
        info = os.stat(path)
    except OSError as err:
        raise InvalidInput(f"{name}: cannot read {path}: {err.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise _not_regular(path, name, info.st_mode, max_bytes)


def read_bytes_capped(path, name: str, max_bytes: int, what: str = "a file") -> bytes:
    """At most ``max_bytes`` of the regular file ``path``, refused in one line when it is
    larger (:class:`~exactspec.core.errors.TooLarge`), missing, unreadable or not a regular
    file (:class:`~exactspec.core.errors.InvalidInput`); never blocks on a FIFO.

    ``what`` names the budget in the refusal (``"a distribution file"``).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise InvalidInput(f"{name}: cannot read {path}: {err.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular(path, name, info.st_mode, max_bytes)
        chunks, size = [], 0
        if info.st_size > max_bytes:                     # its size says so: nothing read
            size = info.st_size
        while size <= max_bytes:                         # (a file that grows stops here too)
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as err:
        raise InvalidInput(f"{name}: cannot read {path}: {err.strerror}") from None
    finally:
        os.close(fd)
    if size > max_bytes:
        cap = f"{max_bytes // 2**20} MiB" if max_bytes >= 2**20 else f"{max_bytes:,} bytes"
        raise TooLarge(f"{name}: {path} is larger than {cap}, the budget for {what}",
                       budget=max_bytes)
    return b"".join(chunks)


# -- outputs ----------------------------------------------------------------------------------

def _identity(path):
    """``(realpath, (st_dev, st_ino) or None, whether it is a folder)`` of ``path``."""
    real = os.path.realpath(path)
    try:
        info = os.stat(real)
        return real, (info.st_dev, info.st_ino), stat.S_ISDIR(info.st_mode)
    except OSError:
        return real, None, False


def check_outputs(outputs, inputs) -> None:
    """Refuse, before any work, an output that would overwrite an input.

    An output is refused when it is an input (the same real path, or the same device and
    inode: a hard link), lies inside an input folder, or is the same file as another output.

    Parameters
    ----------
    outputs : iterable of pairs
        ``(flag, path)``: the paths a command writes (``("--html", "report.html")``);
        ``None`` paths are left out.
    inputs : iterable of pairs
        ``(what, path)``: the files and folders it reads (``("the dump", "d.npz")``);
        ``None`` paths are left out.
    """
    outputs = [(flag, path) for flag, path in outputs if path is not None and str(path) != ""]
    inputs = [(what, path) for what, path in inputs if path is not None and str(path) != ""]
    seen = []
    for flag, path in outputs:
        real, ident, _ = _identity(path)
        for what, source in inputs:
            source_real, source_ident, is_dir = _identity(source)
            if real == source_real or (ident is not None and ident == source_ident):
                raise InvalidInput(f"{flag} {path} is {what} {source}: an output never "
                                   "overwrites an input; choose another file")
            if is_dir and real.startswith(source_real.rstrip(os.sep) + os.sep):
                raise InvalidInput(f"{flag} {path} lies inside {what} {source}: an output "
                                   "never writes into an input; choose another folder")
        for other_flag, other_path, other_real, other_ident in seen:
            if real == other_real or (ident is not None and ident == other_ident):
                raise InvalidInput(f"{flag} {path} and {other_flag} {other_path} are the same "
                                   "file: give each output its own")
        seen.append((flag, path, real, ident))


def _in_place(path) -> bool:
    """Whether ``path`` exists and is not a regular file (a device, a FIFO): written in
    place, never renamed over."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _cannot_write(flag: str, path, err: OSError) -> InvalidInput:
    return InvalidInput(f"{flag} {path}: cannot write ({err.strerror or err})")


def _open_in_place(path, flag: str) -> int:
    """A descriptor for writing the existing non-regular ``path``; a FIFO nobody reads is
    refused instead of waited on."""
    try:
        fd = os.open(path, os.O_WRONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        if stat.S_ISFIFO(os.stat(path).st_mode):
            raise InvalidInput(f"{flag} {path}: a FIFO that nobody reads; give a file") \
                from None
        raise _cannot_write(flag, path, err) from None
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return fd


def _mode_for(real) -> int:
    try:
        return stat.S_IMODE(os.stat(real).st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


@contextlib.contextmanager
def output_path(path, flag: str):
    """A temporary path beside ``path`` for a writer that takes a file name (a plot, a
    Parquet table), renamed over ``path`` when the block ends without an error and removed
    when it fails; an existing non-regular ``path`` (``/dev/null``) is yielded as it is.
    An ``OSError`` of the block becomes one line naming ``path`` and ``flag``."""
    if _in_place(path):
        try:
            yield str(path)
        except OSError as err:
            raise _cannot_write(flag, path, err) from None
        return
    real = os.path.realpath(path)                      # a link: its target is rewritten
    folder, base = os.path.split(real)
    try:
        fd, temporary = tempfile.mkstemp(dir=folder or ".", prefix=f".{base}.", suffix=".tmp")
        os.close(fd)
    except OSError as err:
        raise _cannot_write(flag, path, err) from None
    try:
        yield temporary
        os.chmod(temporary, _mode_for(real))
        os.replace(temporary, real)
    except OSError as err:
        _remove(temporary)
        raise _cannot_write(flag, path, err) from None
    except BaseException:
        _remove(temporary)
        raise


@contextlib.contextmanager
def output_file(path, flag: str, mode: str = "w", **options):
    """:func:`output_path` opened: a file object to write the whole output into (``mode``
    ``"w"`` or ``"wb"``; ``options`` go to :func:`open`, e.g. ``encoding``, ``newline``)."""
    if _in_place(path):
        fd = _open_in_place(path, flag)
        try:
            with open(fd, mode, **options) as handle:
                yield handle
        except OSError as err:
            raise _cannot_write(flag, path, err) from None
        return
    with output_path(path, flag) as temporary:
        with open(temporary, mode, **options) as handle:
            yield handle


def _remove(path) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
