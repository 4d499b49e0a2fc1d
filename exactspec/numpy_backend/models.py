"""Realistic next-token distribution pairs, built here from text that ships with Python.

A *target* and a weaker *draft* language model over the same vocabulary of thousands of
word-level tokens, trained in a second or two on one of two corpora that every Python has:

- ``"docs"``: the documentation topics of ``pydoc_data.topics`` (the text of ``help()``);
- ``"code"``: the standard library's own ``.py`` sources (no tests, sorted file order).

The target is an interpolated Witten-Bell trigram on 90% of the tokens; the draft a Witten-Bell
bigram on the first quarter of those.  Both smooth down to a unigram with a Zipf prior over
the vocabulary (different exponents), so every token has positive probability and the ratios
``q/p`` of unseen tokens still vary.  :meth:`ModelPair.rows` gives ``(p, q)`` float64 rows for
contexts taken from the held-out last 10%, with temperature, top-k and top-p.  Nothing is
downloaded; results depend on the Python version's own files.

>>> pair = model_pair("docs", vocab_size=500)
>>> p, q = pair.rows(3, seed=0)
>>> p.shape, q.shape, bool(abs(p.sum(axis=1) - 1).max() < 1e-12)
((3, 500), (3, 500), True)
"""

from __future__ import annotations

import functools
import os
import re
import sysconfig
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from ..core.errors import InvalidInput

__all__ = [
    "CORPORA",
    "corpus_text",
    "tokenize",
    "Vocabulary",
    "NgramModel",
    "ModelPair",
    "model_pair",
    "shape_rows",
    "apply_temperature",
    "top_k_filter",
    "top_p_filter",
]

#: The corpora that ship with Python, by name.
CORPORA = ("docs", "code")

#: Default vocabulary size and number of corpus characters for each corpus.
DEFAULTS = {"docs": {"vocab_size": 4096, "max_chars": None},
            "code": {"vocab_size": 8192, "max_chars": 3_000_000}}

TOKEN_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+|\S")


# -- text ---------------------------------------------------------------------------------

def corpus_text(name: str, max_chars: int | None = None) -> str:
    """The text of a corpus that ships with Python: ``"docs"`` or ``"code"``.

    ``max_chars`` keeps the first characters only (whole files for ``"code"``).
    """
    if name == "docs":
        import pydoc_data.topics as topics

        text = "\n".join(topics.topics[key] for key in sorted(topics.topics))
        return text if max_chars is None else text[:max_chars]
    if name == "code":
        return "\n".join(_stdlib_sources(max_chars))
    raise InvalidInput(f"corpus {name!r}: choose one of {', '.join(CORPORA)}")


def _stdlib_sources(max_chars: int | None) -> Iterator[str]:
    root = sysconfig.get_paths()["stdlib"]
    skip = {"site-packages", "test", "tests", "idlelib", "__pycache__", "lib2to3"}
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in skip)
        for fname in sorted(filenames):
            if not fname.endswith(".py"):
                continue
            try:
                with open(os.path.join(dirpath, fname), encoding="utf-8", errors="replace") as f:
                    text = f.read()
            except OSError:
                continue
            yield text
            total += len(text)
            if max_chars is not None and total >= max_chars:
                return


def tokenize(text: str) -> list[str]:
    """Word-level tokens: identifiers, digit runs and single other characters.

    >>> tokenize("def f(x): return x+1")
    ['def', 'f', '(', 'x', ')', ':', 'return', 'x', '+', '1']
    """
    return TOKEN_PATTERN.findall(text)


@dataclass(frozen=True)
class Vocabulary:
    """The ``size`` most frequent tokens (id 0 is ``<unk>``); padded with ``<unused-i>``
    slots when the corpus has fewer distinct tokens."""

    tokens: tuple
    index: dict = field(repr=False, compare=False)

    @classmethod
    def build(cls, words: list[str], size: int) -> Vocabulary:
        if size < 2:
            raise InvalidInput(f"vocab_size={size}: need at least 2 tokens")
        common = [w for w, _ in sorted(Counter(words).items(), key=lambda kv: (-kv[1], kv[0]))]
        tokens = ["<unk>"] + common[: size - 1]
        tokens += [f"<unused-{i}>" for i in range(size - len(tokens))]
        return cls(tuple(tokens), {t: i for i, t in enumerate(tokens)})

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, words: list[str]) -> np.ndarray:
        get = self.index.get
        return np.fromiter((get(w, 0) for w in words), dtype=np.int64, count=len(words))


# -- the n-gram model ---------------------------------------------------------------------

class NgramModel:
    """An interpolated Witten-Bell n-gram model over token ids ``0..vocab_size-1``.

    ``P_1(w) = (c(w) + beta z(w)) / (N + beta)`` with a Zipf prior ``z(w) ~ (w + 10)^-s`` over
    the frequency rank ``w``; for ``m >= 2``,
    ``P_m(w | h) = (c(h, w) + T(h) P_{m-1}(w | h')) / (c(h) + T(h))`` where ``T(h)`` is the
    number of distinct tokens seen after ``h`` and ``h'`` drops the oldest token.

    Parameters
    ----------
    ids : array of int
        The training token ids.
    vocab_size, order : int
    prior_exponent : float
        ``s`` above.
    prior_weight : float
        ``beta`` above, in tokens (default ``vocab_size``).
    """

    def __init__(self, ids: np.ndarray, vocab_size: int, order: int, *,
                 prior_exponent: float = 1.0, prior_weight: float | None = None):
        if order < 1:
            raise InvalidInput(f"order={order}: need at least 1")
        ids = np.asarray(ids, dtype=np.int64)
        self.vocab_size = V = int(vocab_size)
        self.order = int(order)
        prior = (np.arange(V) + 10.0) ** -float(prior_exponent)
        prior /= prior.sum()
        beta = float(V if prior_weight is None else prior_weight)
        counts = np.bincount(ids, minlength=V).astype(np.float64)
        self.unigram = (counts + beta * prior) / (counts.sum() + beta)
        self.tables = []
        for m in range(2, self.order + 1):
            self.tables.append(_context_table(ids, V, m))

    def probs(self, contexts: np.ndarray) -> np.ndarray:
        """Next-token distributions, shape ``(batch, vocab_size)``, for ``contexts`` of shape
        ``(batch, L)`` (the last ``order - 1`` ids are used; earlier ones are ignored)."""
        contexts = np.asarray(contexts, dtype=np.int64)
        if contexts.ndim != 2:
            raise InvalidInput(f"contexts must have shape (batch, L), got {contexts.shape}")
        V = self.vocab_size
        batch = contexts.shape[0]
        rows = np.broadcast_to(self.unigram, (batch, V)).copy()
        for m, table in enumerate(self.tables, start=2):
            if contexts.shape[1] < m - 1:
                break
            key = np.zeros(batch, dtype=np.int64)
            for col in range(contexts.shape[1] - (m - 1), contexts.shape[1]):
                key = key * V + contexts[:, col]
            table.interpolate(rows, key)
        return rows


@dataclass
class _ContextTable:
    keys: np.ndarray          # sorted distinct context keys
    starts: np.ndarray        # entry range of each context: starts[i]:starts[i+1]
    total: np.ndarray         # c(h)
    distinct: np.ndarray      # T(h)
    words: np.ndarray         # follower ids, grouped by context
    counts: np.ndarray        # c(h, w)

    def interpolate(self, rows: np.ndarray, key: np.ndarray) -> None:
        pos = np.searchsorted(self.keys, key)
        pos_clip = np.minimum(pos, self.keys.size - 1)
        found = (pos < self.keys.size) & (self.keys[pos_clip] == key)
        r = np.flatnonzero(found)
        if r.size == 0:
            return
        c = pos_clip[r]
        denom = self.total[c] + self.distinct[c]
        rows[r] *= (self.distinct[c] / denom)[:, None]
        lengths = self.starts[c + 1] - self.starts[c]
        row_of = np.repeat(r, lengths)
        offsets = np.repeat(self.starts[c] - np.cumsum(lengths) + lengths, lengths)
        entry = offsets + np.arange(lengths.sum())
        rows[row_of, self.words[entry]] += self.counts[entry] / np.repeat(denom, lengths)


def _context_table(ids: np.ndarray, V: int, m: int) -> _ContextTable:
    n = ids.size - (m - 1)
    key = np.zeros(n, dtype=np.int64)
    for j in range(m - 1):
        key = key * V + ids[j:j + n]
    code = key * V + ids[m - 1:m - 1 + n]
    codes, counts = np.unique(code, return_counts=True)
    ctx, words = codes // V, codes % V
    new = np.flatnonzero(np.concatenate(([True], ctx[1:] != ctx[:-1])))
    starts = np.concatenate((new, [codes.size]))
    total = np.add.reduceat(counts, new).astype(np.float64)
    return _ContextTable(keys=ctx[new], starts=starts, total=total,
                         distinct=np.diff(starts).astype(np.float64), words=words,
                         counts=counts.astype(np.float64))


# -- shaping: temperature, top-k, top-p ------------------------------------------------------

def apply_temperature(probs: np.ndarray, temperature: float) -> np.ndarray:
    """Rows ``p^(1/T)``, renormalised (computed in log space; zeros stay zero).

    >>> apply_temperature(np.array([[0.5, 0.25, 0.25]]), 0.5).round(4).tolist()
    [[0.6667, 0.1667, 0.1667]]
    """
    if not temperature > 0:
        raise InvalidInput(f"temperature={temperature}: must be positive (0 is greedy decoding)")
    probs = np.asarray(probs, dtype=np.float64)
    if temperature == 1:
        return probs / probs.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        logits = np.log(probs) / temperature
    logits -= logits.max(axis=-1, keepdims=True)
    out = np.exp(logits)
    return out / out.sum(axis=-1, keepdims=True)


def top_k_filter(probs: np.ndarray, top_k: int) -> np.ndarray:
    """Keep each row's ``top_k`` largest probabilities (ties at the threshold are kept too)
    and renormalise.

    >>> top_k_filter(np.array([[0.5, 0.3, 0.2]]), 2).round(4).tolist()
    [[0.625, 0.375, 0.0]]
    """
    probs = np.asarray(probs, dtype=np.float64)
    n = probs.shape[-1]
    if not 1 <= top_k:
        raise InvalidInput(f"top_k={top_k}: need at least 1")
    if top_k >= n:
        return probs / probs.sum(axis=-1, keepdims=True)
    threshold = -np.partition(-probs, top_k - 1, axis=-1)[..., top_k - 1:top_k]
    out = np.where(probs >= threshold, probs, 0.0)
    return out / out.sum(axis=-1, keepdims=True)


def top_p_filter(probs: np.ndarray, top_p: float) -> np.ndarray:
    """Keep the smallest set of most likely tokens whose mass reaches ``top_p`` (nucleus
    sampling; ties at the threshold are kept) and renormalise.

    >>> top_p_filter(np.array([[0.5, 0.3, 0.2]]), 0.7).round(4).tolist()
    [[0.625, 0.375, 0.0]]
    """
    if not 0 < top_p <= 1:
        raise InvalidInput(f"top_p={top_p}: must lie in (0, 1]")
    probs = np.asarray(probs, dtype=np.float64)
    probs = probs / probs.sum(axis=-1, keepdims=True)
    if top_p == 1:
        return probs
    desc = -np.sort(-probs, axis=-1)
    before = np.cumsum(desc, axis=-1) - desc
    kept = np.where(before < top_p, desc, np.inf).min(axis=-1, keepdims=True)
    out = np.where(probs >= kept, probs, 0.0)
    return out / out.sum(axis=-1, keepdims=True)


def shape_rows(probs: np.ndarray, temperature: float = 1.0, top_k: int | None = None,
               top_p: float | None = None) -> np.ndarray:
    """Temperature, then top-k, then top-p, as samplers apply them."""
    out = apply_temperature(probs, temperature)
    if top_k is not None:
        out = top_k_filter(out, top_k)
    if top_p is not None:
        out = top_p_filter(out, top_p)
    return out


# -- pairs --------------------------------------------------------------------------------

@dataclass
class ModelPair:
    """A target and a draft model over one vocabulary, with held-out text for contexts."""

    name: str
    vocab: Vocabulary
    target: NgramModel
    draft: NgramModel
    heldout: np.ndarray = field(repr=False)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def contexts(self, n: int, seed: int = 0) -> np.ndarray:
        """``n`` contexts (rows of the preceding ids) at random held-out positions."""
        span = max(self.target.order, self.draft.order) - 1
        positions = np.arange(span, self.heldout.size)
        if n < 1:
            raise InvalidInput(f"n={n}: need at least one position")
        rng = np.random.default_rng(seed)
        chosen = rng.choice(positions, size=n, replace=n > positions.size)
        return np.stack([self.heldout[chosen - span + j] for j in range(span)], axis=1)

    def rows(self, n: int, seed: int = 0, *, temperature: float = 1.0,
             top_k: int | None = None, top_p: float | None = None,
             draft_temperature: float | None = None, draft_top_k: int | None = None,
             draft_top_p: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(p, q)``: target and draft next-token rows, shape ``(n, vocab_size)`` each.

        The draft takes the target's temperature, top-k and top-p unless given its own.
        """
        ctx = self.contexts(n, seed)
        p = shape_rows(self.target.probs(ctx), temperature, top_k, top_p)
        q = shape_rows(self.draft.probs(ctx),
                       temperature if draft_temperature is None else draft_temperature,
                       top_k if draft_top_k is None else draft_top_k,
                       top_p if draft_top_p is None else draft_top_p)
        return p, q

    def iter_rows(self, n: int, batch: int = 256, seed: int = 0, **shaping):
        """``rows`` in batches of at most ``batch`` (memory stays ``batch x vocab_size``)."""
        done = 0
        part = 0
        while done < n:
            m = min(batch, n - done)
            yield self.rows(m, seed=seed * 1_000_003 + part, **shaping)
            done += m
            part += 1


@functools.lru_cache(maxsize=8)
def model_pair(name: str = "docs", vocab_size: int | None = None,
               max_chars: int | None = None) -> ModelPair:
    """The target/draft pair for a corpus (cached).

    ``"docs"`` defaults to 4,096 tokens over all of ``pydoc_data.topics``; ``"code"`` to
    8,192 tokens over the first 3 million characters of the standard library (both build in
    about a second).  A ``vocab_size`` above the corpus's distinct tokens pads the vocabulary
    with never-seen slots, which get prior mass only (e.g. 152,064 for the benchmark).
    """
    if name not in CORPORA:
        raise InvalidInput(f"corpus {name!r}: choose one of {', '.join(CORPORA)}")
    vocab_size = DEFAULTS[name]["vocab_size"] if vocab_size is None else int(vocab_size)
    max_chars = DEFAULTS[name]["max_chars"] if max_chars is None else int(max_chars)
    words = tokenize(corpus_text(name, max_chars))
    cut = int(len(words) * 0.9)
    vocab = Vocabulary.build(words[:cut], vocab_size)
    ids = vocab.encode(words)
    train, heldout = ids[:cut], ids[cut:]
    target = NgramModel(train, vocab_size, 3, prior_exponent=1.0)
    draft = NgramModel(train[: cut // 4], vocab_size, 2, prior_exponent=1.2)
    return ModelPair(name, vocab, target, draft, heldout)
