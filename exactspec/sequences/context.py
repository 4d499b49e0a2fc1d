"""Context-dependent model pairs: ``p(. | ctx)`` and ``q(. | ctx)`` for token tuples ``ctx``.

A :class:`ContextPair` gives the target ``p`` and the draft ``q`` of every context, exactly, over
a small vocabulary.  Three ways to make one:

- :meth:`ContextPair.from_functions`: two Python functions of the context tuple, each returning a
  :class:`~exactspec.core.dist.Dist` (or anything ``Dist`` reads: a list, a mapping, ``"1/2,1/2"``);
- :meth:`ContextPair.from_table`: a table (the JSON format of ``docs/tree_format.md``) mapping
  each context, its labels joined by commas (``""`` for the root, ``"a,b"``), to a
  distribution; a context missing from the table uses its longest suffix that is present
  (an n-gram back-off), so ``{"": ...}`` alone is a context-free model;
- :meth:`ContextPair.context_free`: the same ``p`` and ``q`` at every context.

>>> pair = ContextPair.from_table({"labels": "ab",
...                              "target": {"": "1/2,1/2", "a": "1/4,3/4"},
...                              "draft": {"": "2/3,1/3"}})
>>> pair.target(("a",)), pair.target(("b", "a")), pair.target(("a", "b"))
(Dist({'a': 1/4, 'b': 3/4}), Dist({'a': 1/4, 'b': 3/4}), Dist({'a': 1/2, 'b': 1/2}))
>>> pair.joint(2)[("a", "b")]
Fraction(3, 8)
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Callable

from ..core.dist import Dist, exact_str, overlap, parse_labels as _parse_labels
from ..core.errors import ExactspecError, InvalidInput, NotExact, TooLarge

__all__ = ["ContextPair", "context_key", "labels_json", "parse_context", "random_model_pair",
           "read_dist"]


def parse_labels(labels, n: int | None = None, name: str = "labels") -> tuple:
    """:func:`exactspec.core.dist.parse_labels` of a spec's ``labels``, its type checked
    first: a string (``"abc"``, ``"a,b,c"``) or a list of strings and integers.

    >>> parse_labels("ab"), parse_labels(["x", 1])
    (('a', 'b'), ('x', 1))
    >>> parse_labels(5)
    Traceback (most recent call last):
    ...
    exactspec.core.errors.InvalidInput: labels=5: give a string (abc or a,b,c) or a list of labels
    """
    if isinstance(labels, (list, tuple)):
        for item in labels:
            if isinstance(item, bool) or not isinstance(item, (str, int)):
                raise InvalidInput(f"{name}: the label {str(item)[:40]!r} is a "
                                   f"{type(item).__name__}: each label is a string or an "
                                   "integer")
    elif not isinstance(labels, str):
        raise InvalidInput(f"{name}={str(labels)[:40]}: give a string (abc or a,b,c) or a list "
                           "of labels")
    return tuple(_parse_labels(labels, n, name=name))


def context_key(ctx) -> str:
    """The table key of a context: its labels joined by commas, ``""`` for the root.

    >>> context_key(()), context_key(("a", "b")), context_key((0, 2))
    ('', 'a,b', '0,2')
    """
    return ",".join(str(t) for t in ctx)


def parse_context(text, labels) -> tuple:
    """The context tuple named by ``text`` (``"a,b"``, ``""``), or a tuple/list of labels.

    >>> parse_context("1,0", (0, 1)), parse_context("", "ab")
    ((1, 0), ())
    """
    labels = tuple(labels)
    if isinstance(text, (tuple, list)):
        ctx = tuple(text)
        for t in ctx:
            if t not in labels:
                raise InvalidInput(f"context {list(ctx)}: {t!r} is not a label "
                                   f"(labels {list(labels)})")
        return ctx
    if not isinstance(text, str):
        raise InvalidInput(f"context {text!r}: give labels joined by commas, \"\" for the root")
    by_text = {str(lab): lab for lab in labels}
    s = text.strip()
    if not s:
        return ()
    out = []
    for part in s.split(","):
        part = part.strip()
        if part not in by_text:
            raise InvalidInput(f"context {text!r}: {part!r} is not a label "
                               f"(labels {[str(lab) for lab in labels]})")
        out.append(by_text[part])
    return tuple(out)


class ContextPair:
    """A target model and a draft model over the same vocabulary, each a function of the
    context (a tuple of tokens).

    Parameters
    ----------
    target, draft : callable
        ``f(ctx) -> Dist`` (or a list, mapping or string that :class:`Dist` reads).
    labels : sequence
        The vocabulary; every distribution must have exactly these labels.
    name : str
        For reports.
    table : dict, optional
        The JSON-ready table the pair was read from, kept for :meth:`to_table`.

    Notes
    -----
    Distributions are validated (exact, summing to 1, the right labels) and cached per
    context.
    """

    def __init__(self, target: Callable, draft: Callable, labels, name: str = "",
                 table: dict | None = None):
        if not callable(target) or not callable(draft):
            raise InvalidInput("target and draft must be functions of the context; use "
                               "ContextPair.from_table for tables")
        self.labels = tuple(parse_labels(labels, name="labels"))
        if not self.labels:
            raise InvalidInput("labels: a vocabulary needs at least one token")
        self.name = name
        self._functions = {"target": target, "draft": draft}
        self._cache: dict = {}
        self._table = table
        self.context_free_rows = None

    # -- construction ----------------------------------------------------------------------
    @classmethod
    def from_functions(cls, target: Callable, draft: Callable, labels, name: str = ""
                       ) -> ContextPair:
        """A pair given as two Python functions of the context tuple.

        >>> pair = ContextPair.from_functions(lambda c: [1, 0] if len(c) % 2 else [0, 1],
        ...                                 lambda c: "1/2,1/2", labels=(0, 1))
        >>> pair.target((0,)), pair.draft(())
        (Dist({0: 1, 1: 0}), Dist({0: 1/2, 1: 1/2}))
        """
        return cls(target, draft, labels, name=name)

    @classmethod
    def context_free(cls, p, q, name: str = "") -> ContextPair:
        """The same ``p`` and ``q`` at every context."""
        p = p if isinstance(p, Dist) else Dist(p, name="p")
        q = q if isinstance(q, Dist) else Dist(q, name="q")
        if p.labels != q.labels:
            raise InvalidInput(f"p and q have different labels: {list(p.labels)} vs "
                               f"{list(q.labels)}")
        table = {"labels": labels_json(p.labels), "target": {"": _dist_text(p)},
                 "draft": {"": _dist_text(q)}}
        pair = cls(lambda ctx: p, lambda ctx: q, p.labels, name=name, table=table)
        pair.context_free_rows = (p, q)      # the same rows at every context
        return pair

    @classmethod
    def from_table(cls, table: Mapping, name: str = "") -> ContextPair:
        """A pair read from a table ``{"labels": ..., "target": {ctx: dist}, "draft": {...}}``.

        ``labels`` is optional (default ``0..n-1``, ``n`` the length of the root's
        distribution).  Each distribution is ``"1/2,1/2"``, a list, or a ``{label: prob}``
        object; numbers in strings are exact decimal rationals.  Every table needs the root
        ``""``; a missing context backs off to its longest suffix present in the table.
        """
        if not isinstance(table, Mapping):
            raise InvalidInput(f"model table: expected a JSON object, got {type(table).__name__}")
        for side in ("target", "draft"):
            if side not in table:
                raise InvalidInput(f"model table: missing {side!r} (a map from contexts to "
                                   "distributions)")
            if not isinstance(table[side], Mapping):
                raise InvalidInput(f"model table: {side!r} must map contexts to distributions")
            if "" not in table[side]:
                raise InvalidInput(f"model table: {side!r} has no root context \"\"")
        labels = table.get("labels")
        if labels is None:  # the default vocabulary 0..n-1
            root = table["target"][""]
            n = len(Dist(root, name="target[\"\"]")) if not isinstance(root, Mapping) else None
            labels = tuple(range(n)) if n is not None else tuple(root.keys())
        else:
            labels = parse_labels(labels, name="model table: labels")
        parsed: dict = {}
        for side in ("target", "draft"):
            entries = {}
            for key, value in table[side].items():
                ctx = parse_context(key, labels)
                where = f"{side}[{key!r}]"
                entries[ctx] = read_dist(value, labels, where)
            parsed[side] = entries

        def lookup(side):
            entries = parsed[side]

            def f(ctx):
                for start in range(len(ctx) + 1):
                    hit = entries.get(ctx[start:])
                    if hit is not None:
                        return hit
                raise AssertionError("the root context is always present")
            return f

        plain = {"labels": labels_json(labels),
                 "target": {k: _json_dist(v) for k, v in table["target"].items()},
                 "draft": {k: _json_dist(v) for k, v in table["draft"].items()}}
        return cls(lookup("target"), lookup("draft"), labels, name=name, table=plain)

    @classmethod
    def from_json(cls, path, name: str = "") -> ContextPair:
        """Read :meth:`from_table`'s table from a JSON file (numbers are exact decimals)."""
        return cls.from_table(read_json(path, "model table"), name=name or str(path))

    # -- queries ---------------------------------------------------------------------------
    def target(self, ctx=()) -> Dist:
        """``p(. | ctx)``."""
        return self._get("target", tuple(ctx))

    def draft(self, ctx=()) -> Dist:
        """``q(. | ctx)``."""
        return self._get("draft", tuple(ctx))

    def _get(self, side: str, ctx: tuple) -> Dist:
        key = (side, ctx)
        hit = self._cache.get(key)
        if hit is None:
            where = f"{side} at context {context_key(ctx)!r}"
            try:
                value = self._functions[side](ctx)
            except ExactspecError as err:
                raise type(err)(f"{where}: {err}") from None
            hit = read_dist(value, self.labels, where)
            self._cache[key] = hit
        return hit

    def acceptance(self, ctx=()) -> Fraction:
        """``sum_t min(p(t|ctx), q(t|ctx))``: the one-draft acceptance at ``ctx``."""
        return overlap(self.target(ctx), self.draft(ctx))

    def joint(self, m: int, ctx=(), side: str = "target") -> dict:
        """The joint law of the next ``m`` tokens, ``prod_i p(x_i | ctx, x_<i)``, over all
        ``|V|^m`` tuples (zeros included), or of the draft model with ``side="draft"``."""
        if not isinstance(m, int) or m < 0:
            raise InvalidInput(f"m={m!r}: need a number of tokens >= 0")
        get = self.target if side == "target" else self.draft
        ctx = tuple(ctx)
        law = {(): Fraction(1)}
        for _ in range(m):
            nxt = {}
            for prefix, w in law.items():
                d = get(ctx + prefix)
                for lab, pr in zip(d.labels, d.probs):
                    nxt[prefix + (lab,)] = w * pr
            law = nxt
        return law

    def contexts(self, depth: int, ctx=()) -> list:
        """Every context extending ``ctx`` by at most ``depth`` tokens."""
        ctx = tuple(ctx)
        return [ctx + tail for n in range(depth + 1)
                for tail in itertools.product(self.labels, repeat=n)]

    def to_table(self, depth: int | None = None) -> dict:
        """The JSON-ready table: the one read, or every context up to ``depth`` tokens."""
        if depth is None and self._table is not None:
            return json.loads(json.dumps(self._table))
        if depth is None:
            raise InvalidInput("a pair given by functions needs depth= to be written as a table")
        out = {"labels": labels_json(self.labels), "target": {}, "draft": {}}
        for ctx in self.contexts(depth):
            out["target"][context_key(ctx)] = _dist_text(self.target(ctx))
            out["draft"][context_key(ctx)] = _dist_text(self.draft(ctx))
        return out

    def recorded_table(self) -> dict:
        """The pair as a certificate records it: ``{"labels", "target", "draft"}`` with every
        row a list of exact values (``"1/3"``); the contexts of the table the pair was read
        from (a missing context backs off to its longest suffix, as in :meth:`from_table`),
        or per-position rows (lists, as :func:`exactspec.sequences.user.position_pair`
        reads them); a pair given by functions records the root and every context read so
        far (a generation then reads only those again).

        >>> ContextPair.context_free("1/4,3/4", "1/2,1/2").recorded_table()
        {'labels': None, 'target': {'': ['1/4', '3/4']}, 'draft': {'': ['1/2', '1/2']}}
        """
        out: dict = {"labels": labels_json(self.labels)}
        table = self._table
        for side in ("target", "draft"):
            if table is not None and isinstance(table.get(side), list):
                rows = [self._get(side, (self.labels[0],) * i)
                        for i in range(len(table[side]))]
                out[side] = [[exact_str(v) for v in row.probs] for row in rows]
                continue
            if table is not None:
                contexts = [parse_context(key, self.labels) for key in table[side]]
            else:
                read = {ctx for (where, ctx) in list(self._cache) if where == side}
                contexts = [()] + sorted(read - {()}, key=lambda c: (len(c), context_key(c)))
            out[side] = {context_key(ctx): [exact_str(v) for v in self._get(side, ctx).probs]
                         for ctx in contexts}
        return out

    def __repr__(self):
        return f"ContextPair({self.name or 'unnamed'}, labels={list(self.labels)})"


def random_model_pair(rng, n: int, depth: int, *, zeros: bool = True, denominator: int = 6,
                      name: str = "") -> ContextPair:
    """A random context-dependent pair: an independent random rational ``p`` and ``q`` at
    every context of at most ``depth`` tokens (deeper contexts back off to their last
    ``depth`` tokens).  ``rng`` is a ``random.Random``."""
    from ..core.random_dists import random_dist

    labels = tuple(range(n))
    table = {"labels": None, "target": {}, "draft": {}}
    for k in range(depth + 1):
        for ctx in itertools.product(labels, repeat=k):
            for side in ("target", "draft"):
                d = random_dist(rng, n, zeros=zeros, denominator=denominator)
                table[side][context_key(ctx)] = _dist_text(d)
    return ContextPair.from_table(table, name=name)


# -- helpers -------------------------------------------------------------------------------

def read_json(path, what: str):
    """Read a JSON file with exact numbers (decimals become decimal rationals): a regular
    file of at most :data:`~exactspec.core.budget.MAX_FILE_BYTES` in UTF-8
    (:func:`~exactspec.core.files.read_bytes_capped`), each number at most
    :data:`~exactspec.core.budget.MAX_NUMBER_CHARS` characters and its decimal exponent
    within :data:`~exactspec.core.budget.MAX_EXPONENT`, checked before it is built; every
    refusal one line naming the file."""
    from ..core.budget import MAX_FILE_BYTES
    from ..core.files import read_bytes_capped

    data = read_bytes_capped(path, what, MAX_FILE_BYTES, "a spec or model file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InvalidInput(f"{what}: {path} is not UTF-8 text (byte {err.start})") from None

    def number(token):
        return _json_number(token, f"{what}: {path}: number")

    try:
        return json.loads(text, parse_float=number, parse_int=number,
                          parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise InvalidInput(f"{what}: {path} is not valid JSON ({err.msg}, line {err.lineno})"
                           ) from None
    except RecursionError:
        raise InvalidInput(f"{what}: {path} nests JSON too deeply") from None


def _json_number(token: str, name: str):
    """A JSON number of a spec, exact: an ``int`` for an integer, else a ``Fraction``; its
    length and exponent bounded first."""
    from ..core.budget import MAX_NUMBER_CHARS
    from ..core.dist import parse_number

    if len(token) > MAX_NUMBER_CHARS:
        raise TooLarge(f"{name} {token[:20]}... has {len(token):,} characters, over the budget "
                       f"of {MAX_NUMBER_CHARS:,} for one number", estimate=len(token),
                       budget=MAX_NUMBER_CHARS)
    if token.lstrip("-").isdigit():
        return int(token)
    return parse_number(token, name)


def _reject_constant(name: str):
    raise NotExact(f"{name} is not a finite number")


def labels_json(labels):
    """Labels for a JSON table: ``None`` for the default ``0..n-1`` (kept as integers)."""
    if tuple(labels) == tuple(range(len(labels))):
        return None
    return [str(lab) for lab in labels]


def read_dist(value, labels, where: str) -> Dist:
    """A table entry (a Dist, a mapping, a text or a sequence) as a Dist on ``labels``."""
    if isinstance(value, Dist):
        d = value
    elif isinstance(value, Mapping):
        by_text = {str(lab): lab for lab in labels}
        unknown = [k for k in value if str(k) not in by_text]
        if unknown:
            raise InvalidInput(f"{where}: unknown token {unknown[0]!r} (labels "
                               f"{[str(lab) for lab in labels]})")
        d = Dist([value.get(str(lab), value.get(lab, 0)) for lab in labels], labels, name=where)
    elif isinstance(value, str):
        d = Dist.parse(value, name=where)
        if len(d) != len(labels):
            raise InvalidInput(f"{where} has {len(d)} entries but the vocabulary has "
                               f"{len(labels)}")
        d = Dist(list(d.probs), labels, name=where)
    else:
        try:
            values = list(value)
        except TypeError:
            raise InvalidInput(f"{where}: expected a distribution, got {value!r}") from None
        if len(values) != len(labels):
            raise InvalidInput(f"{where} has {len(values)} entries but the vocabulary has "
                               f"{len(labels)}")
        d = Dist(values, labels, name=where)
    if d.labels != tuple(labels):
        if len(d) != len(labels):
            raise InvalidInput(f"{where} has {len(d)} entries but the vocabulary has "
                               f"{len(labels)}")
        raise InvalidInput(f"{where} has labels {list(d.labels)}, not {list(labels)}")
    for lab, v in zip(d.labels, d.probs):
        if not isinstance(v, Fraction):
            raise NotExact(f"{where}[{lab}] = {v}: context models must be exact rationals")
    return d


def _dist_text(d: Dist) -> str:
    return ",".join(exact_str(v) for v in d.probs)


def _json_dist(value):
    if isinstance(value, Dist):
        return _dist_text(value)
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items()}
    if isinstance(value, str):
        return value
    return [exact_str(v) if isinstance(v, (int, Fraction)) else str(v) for v in value]


def read_spec(spec, what: str, keys) -> tuple[dict, Path | None]:
    """A spec given as a dict or a JSON file's path, checked to be an object with only the
    ``keys`` it may hold; returns it with the folder that relative paths in it start from."""
    base = None
    if isinstance(spec, (str, Path)):
        base = Path(spec).parent
        spec = read_json(spec, what)
    if not isinstance(spec, dict):
        raise InvalidInput(f"{what}: expected a JSON object, got {type(spec).__name__}")
    unknown = sorted(set(spec) - keys)
    if unknown:
        raise InvalidInput(f"{what}: unknown key {unknown[0]!r} (known: "
                           f"{', '.join(sorted(keys))})")
    return spec, base
