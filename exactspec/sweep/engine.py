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
import math
import os
import sys
import time
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ..core.errors import InvalidInput, did_you_mean
from .dump import Dump, open_dump
from .exact_check import exact_figures
from .figures import METHODS, block_figures
from .rows import probabilities, sum_tolerance
from .summary import summarize

__all__ = ["SweepConfig", "SweepResult", "sweep", "connect", "block_ranges",
           "DEFAULT_BLOCK_MB"]

#: Default size of one block's float64 array of rows, in MB (one of target or draft).
DEFAULT_BLOCK_MB = 32


def _require_dask():
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
    """

    table: dict
    summary: dict
    bad_rows: list = field(default_factory=list)
    exact_checks: dict = field(default_factory=dict)


def block_ranges(dump: Dump, block_mb: float = DEFAULT_BLOCK_MB) -> list[tuple[int, int]]:
    """Row ranges ``[lo, hi)`` of about ``block_mb`` MB of float64 each, aligned with the
    dump's stored chunks when it has them.

    >>> from exactspec.sweep.dump import Dump
    >>> d = Dump("x", "npz", "target", "draft", 10, 1000, "float32", "float32", 0, False)
    >>> block_ranges(d, 0.02)
    [(0, 2), (2, 4), (4, 6), (6, 8), (8, 10)]
    """
    if not block_mb > 0:
        raise InvalidInput(f"block size {block_mb} MB: need a positive size")
    rows = max(1, int(block_mb * 1e6 // (8 * dump.vocab)))
    if dump.chunk_rows:
        c = dump.chunk_rows
        rows = c * max(1, rows // c) if rows >= c else max(d for d in range(1, c + 1)
                                                           if c % d == 0 and d <= rows)
    return [(lo, min(lo + rows, dump.positions)) for lo in range(0, dump.positions, rows)]


def _probabilities(dump: Dump, lo: int, hi: int, config: SweepConfig):
    t, d = dump.read(lo, hi)
    P, bad_p = probabilities(t, logits=config.logits, temperature=config.temperature,
                             top_p=config.top_p, name="target",
                             tolerance=config.tolerance or sum_tolerance(dump.dtype))
    Q, bad_q = probabilities(d, logits=config.logits, temperature=config.temperature,
                             top_p=config.top_p, name="draft",
                             tolerance=config.tolerance or sum_tolerance(dump.draft_dtype))
    bad = dict(bad_q)
    bad.update(dict(bad_p))
    return P, Q, bad


def run_block(dump: Dump, lo: int, hi: int, config: SweepConfig) -> dict:
    """The figures of rows ``lo:hi``: a dict of columns, plus ``"bad"``, the skipped rows."""
    P, Q, bad = _probabilities(dump, lo, hi, config)
    names = dump.position_ids(lo, hi)
    if bad and not config.skip_bad_rows:
        i = min(bad)
        raise InvalidInput(f"dump {dump.path}: position {int(names[i])} (row {lo + i}): "
                           f"{bad[i]} (give --skip-bad-rows to skip such rows)")
    good = np.array([i for i in range(hi - lo) if i not in bad], dtype=np.intp)
    nk = len(config.ks)
    if good.size:
        cols = block_figures(P[good], Q[good], list(config.ks), list(config.methods),
                             gamma=config.gamma, samples=config.samples,
                             seed=config.seed * 1_000_003 + lo)
    else:
        cols = {}
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
    except socket.timeout:
        raise InvalidInput(f"scheduler {address}: accepted the connection but sent nothing "
                           f"within {timeout:g} s (not a Dask scheduler?)") from None
    except OSError as err:
        raise InvalidInput(f"scheduler {address}: cannot connect within {timeout:g} s "
                           f"({err.strerror or type(err).__name__})") from None
    if not first:
        raise InvalidInput(f"scheduler {address}: closed the connection without a word "
                           "(not a Dask scheduler?)")


def connect(address: str, timeout: float = 10.0):
    """A ``distributed.Client`` on the scheduler at ``address``, or one line of error."""
    _require_dask()
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
    _require_dask()
    import dask

    started = time.perf_counter()
    if not isinstance(dump, Dump):
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
    own_client = None
    if client is None and scheduler is not None:
        client = own_client = connect(scheduler, scheduler_timeout)
    try:
        if client is None:
            results = _compute_local(tasks, workers, progress)
            where = f"local threads ({workers or os.cpu_count()})"
        else:
            results = _compute_on(client, tasks, progress)
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
    return SweepResult(table=table, summary=summary, bad_rows=bad_rows, exact_checks=checks)


def _compute_local(tasks, workers, progress):
    import dask

    bar = contextlib.nullcontext()
    if progress:
        from dask.diagnostics import ProgressBar

        bar = ProgressBar(out=sys.stderr)
    with bar:
        return list(dask.compute(*tasks, scheduler="threads",
                                 num_workers=workers or os.cpu_count() or 1))


def _compute_on(client, tasks, progress):
    from distributed import as_completed

    futures = client.compute(tasks)
    if progress:
        done = 0
        for _ in as_completed(futures):
            done += 1
            filled = int(40 * done / len(futures))
            sys.stderr.write(f"\r[{'#' * filled}{' ' * (40 - filled)}] {done}/{len(futures)}")
            sys.stderr.flush()
        sys.stderr.write("\n")
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
