"""The n-gram model pairs of :mod:`exactspec.numpy_backend.models` dumped to disk in the sweep's
layout, so the seed's experiment runs through ``exactspec sweep`` like any model pair.

>>> import tempfile, os
>>> path = dump_model_pair("docs", os.path.join(tempfile.mkdtemp(), "docs"), 3)
>>> from exactspec.sweep import open_dump
>>> d = open_dump(path)
>>> d.kind, d.positions, d.vocab, d.dtype
('npy-dir', 3, 4096, 'float64')
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..core.errors import InvalidInput
from ..numpy_backend.models import model_pair

__all__ = ["dump_model_pair"]


def dump_model_pair(name: str, path, positions: int, *, seed: int = 0,
                    temperature: float = 1.0, vocab_size: int | None = None,
                    batch: int = 500) -> str:
    """Write ``positions`` held-out next-token rows of the pair ``name`` (``docs`` or ``code``)
    as a directory of ``.npy`` files: ``target.npy`` and ``draft.npy`` (float64 probabilities,
    temperature applied), ``position.npy`` (row numbers).  Written ``batch`` rows at a time."""
    if positions < 1:
        raise InvalidInput(f"positions={positions}: need at least one")
    pair = model_pair(name, vocab_size)
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    shape = (positions, pair.vocab_size)
    target = np.lib.format.open_memmap(out / "target.npy", mode="w+", dtype=np.float64,
                                       shape=shape)
    draft = np.lib.format.open_memmap(out / "draft.npy", mode="w+", dtype=np.float64,
                                      shape=shape)
    done = 0
    for p, q in pair.iter_rows(positions, batch=batch, seed=seed, temperature=temperature):
        target[done:done + p.shape[0]] = p
        draft[done:done + p.shape[0]] = q
        done += p.shape[0]
    target.flush()
    draft.flush()
    del target, draft
    np.save(out / "position.npy", np.arange(positions, dtype=np.int64))
    return str(out)
