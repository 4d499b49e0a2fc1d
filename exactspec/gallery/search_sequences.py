"""Search small instances for a counterexample to a user's multi-position rule.

The instances are those of ``verify --search`` (:func:`exactspec.gallery.search.small_instances`:
vocabulary sizes 1 to ``tokens``, rows of denominator at most ``max_denominator``, point masses
first, each size with its own budget), in the same order; each instance is proved by the same
report as every other route (:func:`exactspec.sequences.user.user_report`).  Two shapes of
instance:

- **per-position rows** (``exactspec tree --search``): position ``i`` has its own target row
  ``p_i`` and draft row ``q_i`` (the bonus row ``p_gamma`` too).  Different rows at different
  positions are where sequence-level bugs show (a residual of the wrong position, a bonus token
  from the wrong row, a rejection followed by an acceptance at the last position); every pair
  of ``verify --search`` at every position, in its order, is where a bug of one node shows (a
  residual over three tokens): :func:`exactspec.gallery.search.position_instances` merges the
  two by level;
- **context-free** (``exactspec verify F --tokens M --search``): one pair ``(p, q)`` at every
  context, the model ``verify --tokens`` proves on.

The first lossy instance is returned with its exact report: lossy by logic; with a grid alone,
any bias beyond the tolerance; under a float format, a bias beyond the tolerance when one is
given.  An instance on which the user's code raises an error of its own (a residual of equal
rows) is skipped.  Finding nothing is evidence, not a proof.

>>> from exactspec.core.dist import residual
>>> def stale(s, drafts, p, q):
...     resid = residual(p[0], q[0])
...     out = ()
...     for i, x in enumerate(drafts):
...         if not s.coin(min(1, p[i][x] / q[i][x])):
...             return out + (s.draw(resid),)
...         out += (x,)
...     return out + (s.draw(p[len(drafts)]),)
>>> found = search_sequence_counterexample(stale, gamma=2, m=2)
>>> found.report["verdict"], found.report["tv"], found.rows
('lossy-logic', '1/2', {'target': ['0,1', '1,0', '0,1'], 'draft': ['1/2,1/2', '0,1']})
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..core.dist import exact_str
from ..core.errors import InvalidInput, TooLarge
from ..engine.watch import HiddenRandomness
from ..sequences.context import ContextPair
from ..sequences.user import (HiddenState, UserVerifier, load_user_function, position_pair,
                              user_report)
from .search import PER_SIZE, position_instances, small_instances

__all__ = ["SequenceSearch", "search_sequence_counterexample"]


@dataclass
class SequenceSearch:
    """The first lossy instance (its report and rows), or ``None``, and the instances tried."""

    report: dict | None
    rows: dict | None
    instances: int


def search_sequence_counterexample(function, *, gamma: int | None = None,
                                   m: int | None = None, tokens: int = 3,
                                   max_denominator: int = 4, context_free: bool = False,
                                   arith: str | None = None, grid: int | None = None,
                                   tolerance=None, max_paths: int | None = 10**5,
                                   per_size: int | None = PER_SIZE,
                                   name: str | None = None) -> SequenceSearch:
    """Try instances on 1 to ``tokens`` tokens with entries of denominator at most
    ``max_denominator``, smallest first; stop at the first lossy one.

    ``context_free`` searches pairs ``(p, q)`` used at every context; otherwise per-position
    rows: ``gamma + 1`` target rows and ``gamma`` draft rows for a rule given the rows of every
    position (``m`` of each for a whole-call rule without ``gamma``).
    """
    if isinstance(function, str):
        name, function = name or function, load_user_function(function)
    verifier = UserVerifier(function, gamma, name)  # the shape, and gamma when it needs one
    m = m if m is not None else verifier.max_tokens
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise InvalidInput(f"m={m!r}: need a number of tokens >= 1")
    if context_free:
        n_target, n_draft = 1, 1
    elif gamma is not None:
        n_target, n_draft = gamma + 1, gamma
    else:
        n_target, n_draft = m, m
    tried = 0
    if context_free:        # one pair at every context: verify --search's pairs themselves
        instances = ((n, rows[:1], rows[1:]) for n, rows in small_instances(
            2, max_tokens=tokens, max_denominator=max_denominator, per_size=per_size))
    else:
        instances = position_instances(n_target, n_draft, max_tokens=tokens,
                                       max_denominator=max_denominator, per_size=per_size)
    for _, target, draft in instances:
        if context_free:
            pair = ContextPair.context_free(target[0], draft[0])
        else:
            pair = position_pair({"target": [list(r.probs) for r in target],
                                  "draft": [list(r.probs) for r in draft]})
        tried += 1
        try:
            report = user_report({"m": m}, verifier, pair=pair, gamma=gamma, arith=arith,
                                 grid=grid, tolerance=tolerance, max_paths=max_paths)
        except (HiddenState, HiddenRandomness):
            raise
        except (InvalidInput, TooLarge):
            continue
        verdict = report["verdict"]
        if verdict == "lossy-logic" or (not report["ok"] and (tolerance is not None
                                                              or arith is None)):
            shown = {side: [",".join(exact_str(Fraction(v)) for v in r.probs) for r in rows_]
                     for side, rows_ in (("target", target), ("draft", draft))}
            if context_free:
                shown = {"p": shown["target"][0], "q": shown["draft"][0]}
            return SequenceSearch(report, shown, tried)
    return SequenceSearch(None, None, tried)
