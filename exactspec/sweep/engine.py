"""Running a sweep on Dask: one task per block of rows, on the local threaded scheduler by
default or on a cluster (``scheduler="tcp://host:port"`` or a ``distributed.Client``).

Each task reads its rows from the dump where it runs (:class:`~exactspec.sweep.dump.Dump` is a
small picklable description), turns them into float64 probabilities, and returns only the
per-position figures, so memory is bounded by the block size times the number of tasks that
run at once, whatever the size of the dump.  The exact spot checks are tasks too.

Dask (``pip install 'exactspec[sweep]'``) is imported only here, only when a sweep runs.
"""

from __future__ import annotations

import contextlib
import datetime
import math
import os
import struct
import sys
import time
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ..core.errors import InvalidInput, did_you_mean
from .dump import Dump, open_dump
from .exact_check import exact_figures
from .figures import METHODS, Workspace, block_figures, chunk_rows
from .rows import probabilities, sum_tolerance
from .summary import summarize

__all__ = ["SweepConfig", "SweepResult", "sweep", "sweep_arrays", "ArrayDump", "connect",
           "block_ranges", "estimate_seconds", "DEFAULT_BLOCK_MB", "LONG_SWEEP_SECONDS",
           "compute_local", "compute_on", "require_dask"]

#: Default size of one block's float64 array of rows, in MB (one of target or draft).
DEFAULT_BLOCK_MB = 32
#: A sweep estimated to take at least this many seconds says so on stderr before it starts.
LONG_SWEEP_SECONDS = 60


def require_dask():
    """Raise :class:`InvalidInput` when Dask is not installed."""
    try:
        import dask  # noqa: F401
    except ImportError:
        raise InvalidInput("sweeps run on Dask, which is not installed: "
                           "pip install 'exactspec[sweep]'") from None


@dataclass(frozen=True)
class SweepConfig:
    """What to compute per position (see :func:`sweep` for the meaning of each field)."""

    ks: tuple
    methods: tuple
    logits: bool = False
    temperature: float = 1.0
    top_p: float | None = None
    gamma: int = 4
    samples: int = 1000
    seed: int = 0
    skip_bad_rows: bool = False
    tolerance: float | None = None


@dataclass
class SweepResult:
    """A sweep's output.

    Attributes
    ----------
    table : dict of str -> numpy array
        One entry per ``(position, k)``: ``row`` (index in the dump), ``position`` (its name),
        ``k``, and the figures of :func:`exactspec.sweep.figures.block_figures`.
    summary : dict
        The JSON summary (``--json``), floats under keys ending ``_float``.
    bad_rows : list of (int, str)
        Positions skipped and why (only with ``skip_bad_rows``).
    exact_checks : dict
        ``rows`` checked, ``max_abs_diff_float``, and the largest difference per column.
    run : dict
        What ran: ``dump`` (its path, or the name of in-memory rows), ``options`` (the
        arguments of :func:`sweep`), ``exactspec_version``, ``started_utc`` (ISO 8601) and
        ``seconds_float``.
    """

    table: dict
    summary: dict
    bad_rows: list = field(default_factory=list)
    exact_checks: dict = field(default_factory=dict)
    run: dict = field(default_factory=dict)

    def to_dataframe(self, methods=None):
        """The per-position figures as a pandas DataFrame in long form, one row per
        position x method x ``k`` (:func:`exactspec.sweep.output.to_dataframe`).

        Parameters
        ----------
        methods : list of str, optional
            The methods to keep (default: every method swept).

        Returns
        -------
        pandas.DataFrame
            Columns ``position``, ``row``, ``k``, ``method``, ``acceptance``,
            ``tokens_per_call``, ``alpha_star``, ``alpha_one``.
        """
        from .output import to_dataframe

        return to_dataframe(self, methods)

    def to_dataset(self, methods=None):
        """The figures as an xarray Dataset over ``position``, ``method`` and ``k``
        (:func:`exactspec.sweep.output.to_dataset`).

        Parameters
        ----------
        methods : list of str, optional
            The methods to keep (default: every method swept).

        Returns
        -------
        xarray.Dataset
            ``acceptance`` and ``tokens_per_call`` over the three dimensions, ``alpha_star``
            over position x ``k``, ``alpha_one`` over position, the run in its attributes.
        """
        from .output import to_dataset

        return to_dataset(self, methods)


class ArrayDump:
    """Target and draft rows held in memory, read like a :class:`~exactspec.sweep.dump.Dump`.

    Any object NumPy can turn into an array (``numpy.asarray``: NumPy arrays, a CPU torch
    tensor through its ``__array__``) of shape ``(positions, vocab)`` and a float type
    (float16, float32, float64); ``position`` optionally names the rows.  The rows are not
    copied; on a cluster each task carries its own block.

    >>> d = ArrayDump(np.eye(3, dtype=np.float32), np.full((3, 3), 1 / 3))
    >>> d.positions, d.vocab, d.dtype, d.draft_dtype, d.read(1, 2)[0].tolist()
    (3, 3, 'float32', 'float64', [[0.0, 1.0, 0.0]])
    """

    kind = "arrays"
    chunk_rows = 0

    def __init__(self, target, draft, position=None, name: str = "<arrays>"):
        arrays = []
        for what, x in (("target", target), ("draft", draft)):
            try:
                a = np.asarray(x)
            except (TypeError, ValueError, RuntimeError) as err:
                raise InvalidInput(f"{what}: not an array ({type(x).__name__}: "
                                   f"{str(err).splitlines()[0] if str(err) else 'no values'}"
                                   f"; a bfloat16 tensor: convert it to float32 first)") from None
            if a.ndim != 2 or 0 in a.shape:
                raise InvalidInput(f"{what}: need rows of shape (positions, vocab), "
                                   f"got {a.shape}")
            if a.dtype.name not in ("float16", "float32", "float64"):
                raise InvalidInput(f"{what}: element type {a.dtype.name}, need float16, "
                                   f"float32 or float64")
            arrays.append(a)
        if arrays[0].shape != arrays[1].shape:
            raise InvalidInput(f"target has shape {arrays[0].shape} but draft "
                               f"{arrays[1].shape}")
        self.target_rows, self.draft_rows = arrays
        self.positions, self.vocab = arrays[0].shape
        self.dtype, self.draft_dtype = arrays[0].dtype.name, arrays[1].dtype.name
        self.path = name
        self.has_position = position is not None
        if position is not None:
            ids = np.asarray(position)
            if ids.shape != (self.positions,) or ids.dtype.kind not in "iu":
                raise InvalidInput(f"position: need {self.positions} integers, got "
                                   f"{ids.dtype.name} of shape {ids.shape}")
            self.position = ids.astype(np.int64)

    def read(self, lo: int, hi: int):
        """Rows ``lo:hi`` of the target and the draft, as held."""
        return self.target_rows[lo:hi], self.draft_rows[lo:hi]

    def position_ids(self, lo: int, hi: int) -> np.ndarray:
        """The names of rows ``lo:hi`` (``position``), else ``lo..hi-1``."""
        if self.has_position:
            return self.position[lo:hi]
        return np.arange(lo, hi, dtype=np.int64)


def sweep_arrays(target, draft, k=(1, 2, 4, 8), *, position=None, name: str = "<arrays>",
                 **options) -> SweepResult:
    """:func:`sweep` over rows held in memory (see :class:`ArrayDump`); ``options`` are
    :func:`sweep`'s.  The same figures as the same rows written to a dump and swept.
    """
    return sweep(ArrayDump(target, draft, position, name), k, **options)


def block_ranges(dump: Dump, block_mb: float = DEFAULT_BLOCK_MB) -> list[tuple[int, int]]:
    """Row ranges ``[lo, hi)`` of about ``block_mb`` MB of float64 each, aligned with the
    dump's stored chunks when it has them.

    >>> from exactspec.sweep.dump import Dump
    >>> d = Dump("x", "npz", "target", "draft", 10, 1000, "float32", "float32", 0, False)
    >>> block_ranges(d, 0.02)
    [(0, 2), (2, 4), (4, 6), (6, 8), (8, 10)]
    """
    if not (block_mb > 0 and math.isfinite(block_mb)):
        raise InvalidInput(f"--block-mb {block_mb}: need a finite positive size in MB")
    rows = max(1, min(dump.positions, int(block_mb * 1e6 // (8 * dump.vocab))))
    if dump.chunk_rows:
        c = min(dump.chunk_rows, dump.positions)       # a chunk past the rows: the rows
        rows = c * max(1, rows // c) if rows >= c else next(d for d in range(rows, 0, -1)
                                                            if c % d == 0)
    return [(lo, min(lo + rows, dump.positions)) for lo in range(0, dump.positions, rows)]


def _probabilities(dump: Dump, lo: int, hi: int, config: SweepConfig):
    t, d = dump.read(lo, hi)
    return _rows_to_probabilities(t, d, dump, config)


def _rows_to_probabilities(t, d, dump: Dump, config: SweepConfig, workspace=None):
    def room(name, rows):
        return workspace.get(name, np.shape(rows)) if workspace is not None else None

    P, bad_p = probabilities(t, logits=config.logits, temperature=config.temperature,
                             top_p=config.top_p, name="target",
                             tolerance=config.tolerance or sum_tolerance(dump.dtype),
                             out=room("P", t))
    Q, bad_q = probabilities(d, logits=config.logits, temperature=config.temperature,
                             top_p=config.top_p, name="draft",
                             tolerance=config.tolerance or sum_tolerance(dump.draft_dtype),
                             out=room("Q", d))
    bad = dict(bad_q)
    bad.update(dict(bad_p))
    return P, Q, bad


def run_block(dump: Dump, lo: int, hi: int, config: SweepConfig) -> dict:
    """The figures of rows ``lo:hi``: a dict of columns, plus ``"bad"``, the skipped rows.

    The block is read as stored, then turned into float64 probabilities and figures
    :func:`~exactspec.sweep.figures.chunk_rows` rows at a time, so a task holds the block as
    stored plus the working arrays of one chunk (about 28 MiB,
    :func:`~exactspec.sweep.figures.shared_figures`), reused from chunk to chunk
    (:class:`~exactspec.sweep.figures.Workspace`); with ``rrs-wor`` (whose Monte Carlo
    draws follow one random stream per block) the chunk is the whole block.
    """
    t, d = dump.read(lo, hi)
    names = dump.position_ids(lo, hi)
    step = hi - lo if "rrs-wor" in config.methods else chunk_rows(dump.vocab)
    parts: dict[str, list] = {}
    bad: dict[int, str] = {}
    good_rows = []
    ws = Workspace()
    for s in range(0, hi - lo, step):
        e = min(hi - lo, s + step)
        P, Q, bad_chunk = _rows_to_probabilities(t[s:e], d[s:e], dump, config, ws)
        if bad_chunk and not config.skip_bad_rows:
            i = s + min(bad_chunk)
            raise InvalidInput(f"dump {dump.path}: position {int(names[i])} (row {lo + i}): "
                               f"{bad_chunk[i - s]} (give --skip-bad-rows to skip such rows)")
        bad.update({s + i: reason for i, reason in bad_chunk.items()})
        good = np.array([i for i in range(e - s) if i not in bad_chunk], dtype=np.intp)
        if good.size:
            Pg, Qg = (P, Q) if good.size == e - s else (P[good], Q[good])
            cols = block_figures(Pg, Qg, list(config.ks), list(config.methods),
                                 gamma=config.gamma, samples=config.samples,
                                 seed=config.seed * 1_000_003 + lo, workspace=ws)
            for name, values in cols.items():
                parts.setdefault(name, []).append(values)
            good_rows.append(s + good)
        del P, Q
    cols = {name: np.concatenate(values) for name, values in parts.items()}
    good = np.concatenate(good_rows) if good_rows else np.zeros(0, dtype=np.intp)
    nk = len(config.ks)
    cols["row"] = np.repeat(lo + good, nk).astype(np.int64)
    cols["position"] = np.repeat(names[good], nk).astype(np.int64)
    cols["bad"] = [(int(names[i]), bad[i]) for i in sorted(bad)]
    return cols


def exact_task(dump: Dump, row: int, config: SweepConfig):
    """``(row, exact figures per k)`` of one row, or ``(row, None)`` for a bad row."""
    P, Q, bad = _probabilities(dump, row, row + 1, config)
    if bad:
        return row, None
    return row, exact_figures(P[0], Q[0], list(config.ks), list(config.methods))


def _probe(address: str, timeout: float) -> None:
    """For a ``tcp://host:port`` address: connect and wait up to ``timeout`` seconds for the
    first byte, which a Dask scheduler sends as soon as it accepts (its handshake).  A port
    that accepts and never answers is refused here, in bounded time (the client's own
    handshake would wait on it without end)."""
    import socket

    if not address.startswith("tcp://"):
        return                                           # tls:// and others: the client's
    host, _, port = address[len("tcp://"):].rstrip("/").rpartition(":")
    host = host.strip("[]")
    try:
        port_number = int(port)
    except ValueError:
        raise InvalidInput(f"scheduler {address}: need tcp://host:port") from None
    try:
        with socket.create_connection((host, port_number), timeout=timeout) as conn:
            conn.settimeout(timeout)
            first = conn.recv(1)
            if first:
                _check_handshake(address, conn, first, timeout)
    except socket.timeout:
        raise InvalidInput(f"scheduler {address}: accepted the connection but sent nothing "
                           f"within {timeout:g} s (not a Dask scheduler?)") from None
    except OSError as err:
        raise InvalidInput(f"scheduler {address}: cannot connect within {timeout:g} s "
                           f"({err.strerror or type(err).__name__})") from None
    if not first:
        raise InvalidInput(f"scheduler {address}: closed the connection without a word "
                           "(not a Dask scheduler?)")


#: A Dask scheduler's first message (its handshake: compression and pickle protocol, a few
#: dozen bytes) is read whole by the probe, each length on the wire checked against this
#: before anything is read or allocated for it; the client's own reader allocates whatever
#: length the first 8 bytes say (3 EiB from a port that answers garbage).
MAX_HANDSHAKE_BYTES = 2**20
MAX_HANDSHAKE_FRAMES = 64


def _check_handshake(address: str, conn, first: bytes, timeout: float) -> None:
    """Read the scheduler's first message through ``conn`` (``first``: its first byte) and
    check its framing as ``distributed``'s TCP comm writes it: 8 bytes giving the length of
    a block (at most :data:`MAX_HANDSHAKE_BYTES`), which begins with the number of frames
    (at most :data:`MAX_HANDSHAKE_FRAMES`) and their 8-byte lengths (together within the
    block's bound).  A port that answers anything else is refused in one line, all within
    ``timeout`` seconds in all."""
    deadline = time.monotonic() + timeout

    def read(n: int, data: bytes = b"") -> bytes:
        chunks, have = [data], len(data)
        while have < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise InvalidInput(f"scheduler {address}: its first message did not arrive "
                                   f"whole within {timeout:g} s (not a Dask scheduler?)")
            conn.settimeout(left)
            chunk = conn.recv(min(n - have, 1 << 16))
            if not chunk:
                raise InvalidInput(f"scheduler {address}: closed the connection in the middle "
                                   "of its first message (not a Dask scheduler?)")
            chunks.append(chunk)
            have += len(chunk)
        return b"".join(chunks)

    def garbage(why: str) -> InvalidInput:
        return InvalidInput(f"scheduler {address}: answered with bytes that are not a Dask "
                            f"message ({why}): not a Dask scheduler?")

    (size,) = struct.unpack("<Q", read(8, first))
    if not 16 <= size <= MAX_HANDSHAKE_BYTES:
        raise garbage(f"a first block of {size:,} bytes declared, the bound is "
                      f"{MAX_HANDSHAKE_BYTES:,}")
    block = read(size)
    (frames,) = struct.unpack_from("<Q", block)
    if not 1 <= frames <= MAX_HANDSHAKE_FRAMES or 8 * (1 + frames) > size:
        raise garbage(f"{frames:,} frames declared in a block of {size:,} bytes")
    lengths = struct.unpack_from(f"<{frames}Q", block, 8)
    if sum(lengths) > MAX_HANDSHAKE_BYTES:
        raise garbage(f"frames of {sum(lengths):,} bytes declared, the bound is "
                      f"{MAX_HANDSHAKE_BYTES:,}")


def connect(address: str, timeout: float = 10.0):
    """A ``distributed.Client`` on the scheduler at ``address``, or one line of error."""
    require_dask()
    try:
        from distributed import Client
    except ImportError:
        raise InvalidInput("--scheduler needs dask.distributed: "
                           "pip install 'exactspec[sweep]'") from None
    _probe(address, timeout)
    try:
        return Client(address, timeout=timeout)
    except (OSError, TimeoutError, ValueError) as err:
        msg = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise InvalidInput(f"scheduler {address}: cannot connect within {timeout:g} s "
                           f"({msg})") from None


#: A sweep takes at most this many values of ``k`` ...
MAX_KS = 64
#: ... each at most this large (RRS's recursion and K-SEQ's search cost about ``k`` passes
#: over each row).
MAX_K = 2**16


def _parse_ks(ks) -> tuple:
    """``--k``: distinct positive integers, at most :data:`MAX_KS` of them, each at most
    :data:`MAX_K`; refused up front (the work per position grows with each)."""
    from ..core.errors import TooLarge

    if isinstance(ks, str):
        parts = [x for x in ks.split(",") if x.strip()]
        if len(parts) > MAX_KS:
            raise TooLarge(f"--k lists {len(parts):,} values, over the budget of {MAX_KS} "
                           "(each is a pass over the whole dump)", estimate=len(parts),
                           budget=MAX_KS)
        if any(len(x.strip()) > 12 for x in parts):
            raise TooLarge(f"--k {ks[:40]!r}: a value over the budget of k <= {MAX_K:,}",
                           budget=MAX_K)
        try:
            ks = [int(x) for x in parts]
        except ValueError:
            raise InvalidInput(f"--k {ks[:40]!r}: need integers such as 1,2,4,8") from None
    ks = tuple(int(k) for k in ks)
    if not ks or any(k < 1 for k in ks):
        raise InvalidInput(f"k={list(ks)[:8]}: need one or more positive integers")
    ks = tuple(dict.fromkeys(ks))
    if len(ks) > MAX_KS:
        raise TooLarge(f"--k lists {len(ks):,} values, over the budget of {MAX_KS} (each is a "
                       "pass over the whole dump)", estimate=len(ks), budget=MAX_KS)
    if max(ks) > MAX_K:
        raise TooLarge(f"--k {max(ks):,}: about {max(ks):,} passes over each row for RRS and "
                       f"K-SEQ, over the budget of k <= {MAX_K:,}: use a smaller k",
                       estimate=max(ks), budget=MAX_K)
    return ks


def _parse_methods(methods) -> tuple:
    if methods is None:
        return ("rrs", "kseq", "key", "optimal")
    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        hint = did_you_mean(unknown[0], METHODS) if unknown else ""
        raise InvalidInput(f"methods {', '.join(unknown) or '(none)'}{hint}: choose from "
                           f"{', '.join(METHODS)}")
    return tuple(m for m in METHODS if m in methods)


def sweep(dump, k=(1, 2, 4, 8), *, methods=None, logits: bool = False,
          temperature: float = 1.0, top_p: float | None = None, gamma: int = 4,
          samples: int = 1000, seed: int = 0, skip_bad_rows: bool = False,
          tolerance: float | None = None, exact_sample: int = 0,
          block_mb: float = DEFAULT_BLOCK_MB, client=None, scheduler: str | None = None,
          scheduler_timeout: float = 10.0, workers: int | None = None,
          progress: bool = False, target: str = "target", draft: str = "draft") -> SweepResult:
    """Per-position acceptance of each method over a dump, on Dask.

    Parameters
    ----------
    dump : str or Dump
        A dump (docs/sweep_format.md).
    k : str or list of int
        The numbers of drafts, e.g. ``"1,2,4,8"``.
    methods : str or list, optional
        Any of ``rrs, rrs-wor, kseq, key, optimal`` (default all but ``rrs-wor``, which is a
        Monte Carlo estimate with ``samples`` draws per position and ``k``).
    logits : bool
        The arrays hold logits (turned into ``softmax(x / temperature)`` in float64);
        otherwise probabilities, each row summing to 1 within ``tolerance`` (default by the
        stored type: :func:`~exactspec.sweep.rows.sum_tolerance`).
    top_p : float, optional
        Keep each row's nucleus of mass ``top_p`` (target and draft alike).
    gamma : int
        Chain length for the tokens-per-target-call figures.
    skip_bad_rows : bool
        Skip rows with NaN, infinities, negative values or a wrong sum (reported in
        ``bad_rows``); without it the first such row stops the sweep with its position.
    exact_sample : int
        Recompute this many random positions exactly (:mod:`exactspec.sweep.exact_check`).
    block_mb : float
        MB of float64 per block of rows (per array): the unit of work and of memory.
    client, scheduler : optional
        A ``distributed.Client``, or the address of a scheduler to connect to; default the
        local threaded scheduler with ``workers`` threads (default: the machine's cores).
    """
    require_dask()
    import dask

    started = time.perf_counter()
    started_utc = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    if not isinstance(dump, (Dump, ArrayDump)):
        dump = open_dump(dump, target=target, draft=draft)
    if not (isinstance(gamma, int) and gamma >= 1):
        raise InvalidInput(f"gamma={gamma!r}: need a positive integer")
    if not (isinstance(samples, int) and samples >= 1):
        raise InvalidInput(f"samples={samples!r}: need a positive integer")
    if not (isinstance(exact_sample, int) and exact_sample >= 0):
        raise InvalidInput(f"exact_sample={exact_sample!r}: need a non-negative integer")
    if logits and not (temperature > 0 and math.isfinite(temperature)):
        raise InvalidInput(f"temperature={temperature}: need a positive finite number")
    if top_p is not None and not 0 < top_p <= 1:
        raise InvalidInput(f"top_p={top_p}: need a number in (0, 1]")
    config = SweepConfig(ks=_parse_ks(k), methods=_parse_methods(methods), logits=logits,
                         temperature=float(temperature), top_p=top_p, gamma=gamma,
                         samples=samples, seed=seed, skip_bad_rows=skip_bad_rows,
                         tolerance=tolerance)
    blocks = block_ranges(dump, block_mb)
    rng = np.random.default_rng(seed)
    check_rows = sorted(rng.choice(dump.positions, size=min(exact_sample, dump.positions),
                                   replace=False).tolist()) if exact_sample else []
    tasks = [dask.delayed(run_block, pure=False)(dump, lo, hi, config) for lo, hi in blocks]
    tasks += [dask.delayed(exact_task, pure=False)(dump, r, config) for r in check_rows]
    sizes = [hi - lo for lo, hi in blocks] + [0] * len(check_rows)
    guess = estimate_seconds(dump.positions, dump.vocab, config.ks, config.methods,
                             workers=(workers or os.cpu_count() or 1) if client is None
                             and scheduler is None else 1, samples=samples,
                             exact_sample=len(check_rows))
    if progress or guess >= LONG_SWEEP_SECONDS:
        sys.stderr.write(f"sweep: {dump.positions:,} rows x {dump.vocab:,} tokens, "
                         f"{len(blocks)} blocks: about {guess:,.0f} s (estimate)\n")
        sys.stderr.flush()
    own_client = None
    if client is None and scheduler is not None:
        client = own_client = connect(scheduler, scheduler_timeout)
    try:
        if client is None:
            results = compute_local(tasks, workers, progress, sizes)
            where = f"local threads ({workers or os.cpu_count()})"
        else:
            results = compute_on(client, tasks, progress, sizes)
            where = str(getattr(client.scheduler, "address", client))
    finally:
        if own_client is not None:
            own_client.close()
    block_results, exact_results = results[:len(blocks)], results[len(blocks):]
    table, bad_rows = _assemble(block_results, config)
    if table["row"].size == 0:
        position, reason = bad_rows[0]
        raise InvalidInput(f"dump {dump.path}: every row is bad, nothing to sweep (first: "
                           f"position {position}: {reason})")
    checks = _compare(table, exact_results, config)
    summary = summarize(table, config.ks, config.methods, config.gamma)
    summary = {"positions": int(dump.positions), "vocab": int(dump.vocab),
               "k": list(config.ks), "dtype": dump.dtype, "logits": logits,
               "temperature_float": float(temperature), "top_p_float": top_p,
               "positions_swept": int(np.unique(table["row"]).size),
               "skipped_rows": [{"position": p, "reason": r} for p, r in bad_rows],
               **summary, "exact_checks": checks, "scheduler": where, "blocks": len(blocks),
               "seconds_float": time.perf_counter() - started}
    run = {"dump": str(dump.path),
           "options": {"k": list(config.ks), "methods": list(config.methods), "logits": logits,
                       "temperature_float": float(temperature), "top_p_float": top_p,
                       "gamma": gamma, "samples": samples, "seed": seed,
                       "skip_bad_rows": skip_bad_rows, "tolerance_float": tolerance,
                       "exact_sample": exact_sample, "block_mb_float": float(block_mb)},
           "exactspec_version": getattr(sys.modules.get("exactspec"), "__version__", None),
           "started_utc": started_utc, "seconds_float": summary["seconds_float"]}
    return SweepResult(table=table, summary=summary, bad_rows=bad_rows, exact_checks=checks,
                       run=run)


#: Rough CPU seconds per token of a row for the shared pass (softmax, sort, prefix sums), per
#: token and ``k`` (``alpha*``, RRS), and per token and ``k`` for K-SEQ; and per token and ``k``
#: of an exact spot check (measured on one core of a loaded two-core machine): the estimate
#: said before a long sweep.
_SECONDS_PER_TOKEN = 1.0e-7
_SECONDS_PER_TOKEN_K = 0.2e-7
_SECONDS_PER_TOKEN_K_KSEQ = 0.3e-7
_SECONDS_PER_EXACT_TOKEN_K = 5e-7


def estimate_seconds(positions: int, vocab: int, ks, methods, workers: int = 1,
                     samples: int = 1000, exact_sample: int = 0) -> float:
    """A rough run time of a sweep in seconds, from per-token costs on one core.

    >>> round(estimate_seconds(2000, 32_000, (1, 2, 4, 8), ("rrs", "optimal"), workers=2))
    6
    """
    per_token = _SECONDS_PER_TOKEN + len(ks) * (
        _SECONDS_PER_TOKEN_K + (_SECONDS_PER_TOKEN_K_KSEQ if "kseq" in methods else 0.0))
    seconds = positions * vocab * per_token
    if "rrs-wor" in methods:                             # the sampler, per draw and k
        seconds += positions * len(ks) * samples * 2e-5
    seconds += min(exact_sample, positions) * vocab * len(ks) * _SECONDS_PER_EXACT_TOKEN_K
    return seconds / max(1, workers)


class _Progress:
    """One line on stderr: rows done, rows per second, time left (at most twice a second)."""

    def __init__(self, total: int, stream=None):
        self.total, self.done = total, 0
        self.stream = stream or sys.stderr
        self.started = self.shown = time.perf_counter()

    def add(self, rows: int):
        self.done += rows
        now = time.perf_counter()
        if now - self.shown >= 0.5 or self.done >= self.total:
            self.shown = now
            rate = self.done / max(now - self.started, 1e-9)
            left = (self.total - self.done) / rate if rate > 0 else float("inf")
            self.stream.write(f"\r{self.done}/{self.total} rows  {rate:,.0f} rows/s  "
                              f"{left:,.0f} s left ")
            self.stream.flush()

    def close(self):
        self.stream.write("\n")
        self.stream.flush()


def _task_rows(tasks, sizes):
    return {t.key: n for t, n in zip(tasks, sizes)}


def compute_local(tasks, workers, progress, sizes=None):
    """Compute Dask ``tasks`` on local threads (``workers`` of them), with a progress line
    of ``sizes`` rows."""
    import dask

    bar = contextlib.nullcontext()
    if progress:
        from dask.callbacks import Callback

        rows = _task_rows(tasks, sizes or [0] * len(tasks))
        line = _Progress(sum(rows.values()))

        class _Rows(Callback):
            def _posttask(self, key, result, dsk, state, worker_id):
                if key in rows:
                    line.add(rows[key])

            def _finish(self, dsk, state, errored):
                line.close()

        bar = _Rows()
    import dask.threaded

    with bar:                                            # the callable: no distributed import
        return list(dask.compute(*tasks, scheduler=dask.threaded.get,
                                 num_workers=workers or os.cpu_count() or 1))


def compute_on(client, tasks, progress, sizes=None):
    """Compute Dask ``tasks`` on a distributed ``client``, with a progress line of ``sizes``
    rows."""
    from distributed import as_completed

    futures = client.compute(tasks)
    if progress:
        rows = dict(zip((f.key for f in futures), sizes or [0] * len(futures)))
        line = _Progress(sum(rows.values()))
        for future in as_completed(futures):
            line.add(rows.get(future.key, 0))
        line.close()
    return client.gather(futures)


def _assemble(block_results, config):
    bad_rows = []
    parts: dict[str, list] = {}
    for cols in block_results:
        bad_rows.extend(cols.pop("bad"))
        for name, values in cols.items():
            parts.setdefault(name, []).append(values)
    names = [n for n in parts if n in ("row", "position")] + \
        [n for n in parts if n not in ("row", "position")]
    table = {}
    for name in names:
        arrays = [a for a in parts[name] if a.size or name in ("row", "position")]
        table[name] = np.concatenate(arrays) if arrays else np.empty(0)
    n = table["row"].size
    for name in ("k", "alpha_one", "alpha_star"):          # present even with no good row
        table.setdefault(name, np.empty(n))
    table["k"] = table["k"].astype(np.int64)
    return table, bad_rows


def _compare(table, exact_results, config):
    diffs: dict[str, Fraction] = {}
    rows = 0
    for row, per_k in exact_results:
        if per_k is None:
            continue
        rows += 1
        at = np.flatnonzero(table["row"] == row)
        for i in at:
            exact = per_k[config.ks.index(int(table["k"][i]))]
            for name, value in exact.items():
                diff = abs(Fraction(float(table[name][i])) - value)
                if name not in diffs or diff > diffs[name]:
                    diffs[name] = diff
    worst = max(diffs.values()) if diffs else Fraction(0)
    return {"rows": rows, "max_abs_diff_float": float(worst),
            "columns_float": {name: float(v) for name, v in sorted(diffs.items())}}
