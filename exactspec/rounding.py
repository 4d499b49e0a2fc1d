"""Logic or rounding? A float run of a rule, paired with the same rule in exact arithmetic.

A float kernel of a lossless rule is almost never exactly lossless: its ratios and residuals are
rounded and its uniforms live on a grid, so its output law misses ``p`` by something like
``2**-25``.  A float kernel with a *logic* bug (a residual that loses mass, a wrong
normalisation) misses it too.  :func:`split_bias` tells the two apart: it runs the method with
its arithmetic in a float format (:mod:`exactspec.engine.float_sampler`), the same method in
exact arithmetic with ideal uniforms, and in exact arithmetic on the float run's uniform grid,
all three exactly, and says (:func:`exactspec.verify.verdict_of`)

- ``"lossless"``: the run asked for gives ``p`` exactly;
- ``"lossy-grid"``: exact arithmetic on the uniform grid is lossy but ideal uniforms are not,
  and the run asked for is lossy by the grid alone (``bias_grid_only``);
- ``"lossy-rounding"``: the float run is lossy beyond the grid while the exact-arithmetic run
  with ideal uniforms is lossless: the bias is rounding (``bias``, exact, and its tokens);
- ``"lossy-logic"``: the exact-arithmetic run with ideal uniforms is lossy too
  (``bias_exact_arith``).

A ``tolerance`` accepts a grid or rounding bias up to that size.  Without a float format but
with a grid, the run asked for is exact arithmetic on the grid, paired with ideal uniforms;
with neither, the verdict is ``"lossless"`` or ``"lossy-logic"``.  Probabilities may be given as logits: the
target is then their exact softmax (irrational, in sympy), and the float run computes the
softmax in the format (correctly rounded ``exp``, sum left to right, one division each).

>>> from exactspec import Dist
>>> p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
>>> split = split_bias("sps", p, q, arith="float32")
>>> split.verdict, split.bias, split.bias_exact_arith
('lossy-rounding', Fraction(37748737, 1407374883553280), Fraction(0, 1))
>>> split_bias("sps", p, q, arith="float32", tolerance=Fraction(1, 2**20)).ok
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .core.dist import Dist, exact_str, law_distance
from .core.integer_rows import fraction_of, integer_row, reduced_fraction
from .core.errors import InvalidInput, Undecided
from .engine.exact import DEFAULT_MAX_PATHS, gc_paused
from .methods import get_method
from .routes import plan, plan_pair
from .routes.forked import start_in_fork
from .verdict import (GRID_ABOVE_TOTAL, VERDICTS, ThreeRuns, Verdict, as_float,
                      exact_difference, exact_sign, grid_text, is_symbolic, short_figure,
                      split_line, tolerated, verdict_of)
from .verify import (Verification, checked, draft_law_lines, draft_law_of, request_of,
                     shipped_lines, shipped_of)

__all__ = ["BiasSplit", "split_bias", "softmax_exact", "VERDICTS", "exact_sign",
           "exact_difference", "verdict_of", "tolerated", "grid_text"]

def _tv(law: dict, target: Dist):
    """``TV(law, target) = sum max(law - target, 0)``, exactly, with the signed differences
    (the non-zero ones).

    Rows of rationals are compared as integer rows over one common denominator.

    >>> t = Dist([Fraction(1, 2), Fraction(1, 3), Fraction(1, 6)])
    >>> _tv(dict(zip(t.labels, [Fraction(1, 3), Fraction(1, 3), Fraction(1, 3)])), t)
    (Fraction(1, 6), {0: Fraction(-1, 6), 2: Fraction(1, 6)})
    """
    fast = _tv_rows(law, target)
    if fast is not None:
        return fast
    diffs = {t: exact_difference(law[t], target[t]) for t in target.labels}
    signs = {t: exact_sign(d) for t, d in diffs.items()}
    positive = [d for t, d in diffs.items() if signs[t] > 0]
    tv = Fraction(0)
    for d in positive:
        tv = tv + d
    if is_symbolic(tv):
        import sympy

        tv = sympy.together(tv) if len(positive) > 1 else tv
    return tv, {t: d for t, d in diffs.items() if signs[t] != 0}


def _with_tv(run: Verification, p: Dist, tv) -> Verification:
    """``run`` with its TV to ``p`` and differences (:func:`_tv`) when already known (a
    forked run computes them where it ran)."""
    if tv is not None:
        run.__dict__["_tv_to"] = (p, tv)
    return run


def _run_tv(run: Verification, p: Dist):
    """:func:`_tv` of ``run``'s law to ``p``, computed once per run."""
    known = run.__dict__.get("_tv_to")
    if known is not None and known[0] is p:
        return known[1]
    tv = _tv(run.law, p)
    run.__dict__["_tv_to"] = (p, tv)
    return tv


def _tv_rows(law: dict, target: Dist):
    """:func:`_tv` on integer rows when every value is a rational; ``None`` otherwise: the
    rows over one denominator ``d``, their TV (:func:`~exactspec.core.dist.law_distance`,
    divided by ``d``) and their signed differences."""
    from .core.dist import integer_row_of

    labels = target.labels
    a = integer_row([law[t] for t in labels])
    b = (integer_row_of(target) or integer_row([target[t] for t in labels])) \
        if a is not None else None
    if b is None:
        return None
    (ia, da), (ib, db) = a, b
    d = da * db // math.gcd(da, db)
    fa, fb = d // da, d // db
    rows = [x * fa for x in ia], [y * fb for y in ib]
    tv = law_distance(*rows) / d
    return tv, {t: fraction_of(x - y, d) for t, x, y in zip(labels, *rows) if x != y}


def _same_law(a: dict, b: dict, labels) -> bool:
    """``a[t] == b[t]`` exactly for every label (rationals compared as they are)."""
    for t in labels:
        x, y = a[t], b[t]
        if type(x) is Fraction and type(y) is Fraction:
            if x != y:
                return False
        elif exact_sign(exact_difference(x, y)) != 0:
            return False
    return True


def softmax_exact(logits, labels=None, name: str = "p") -> Dist:
    """The exact softmax of rational logits (sympy numbers, labelled as ``labels``).

    >>> softmax_exact([0, 0]).probs
    (1/2, 1/2)
    """
    import sympy

    values = [sympy.Rational(Fraction(x).numerator, Fraction(x).denominator) for x in logits]
    if not values:
        raise InvalidInput(f"logits of {name}: empty")
    weights = [sympy.exp(v) for v in values]
    total = sympy.Add(*weights)
    probs = [sympy.simplify(w / total) for w in weights]
    return Dist(probs, labels, check=False, name=name)


def _float_softmax_dist(logits, labels, fmt, exact_dist: Dist, elementwise="correct"):
    from .engine.float_sampler import FloatDist
    from .engine.floats import FloatValue, softmax

    values = softmax([FloatValue.of(Fraction(x), fmt) for x in logits], library=elementwise)
    out = FloatDist.__new__(FloatDist)
    Dist.__init__(out, values, exact_dist.labels, check=False)
    object.__setattr__(out, "exact_dist", exact_dist)  # Dist is read-only
    object.__setattr__(out, "fmt", fmt)
    return out


@dataclass
class BiasSplit:
    """A float run next to the exact-arithmetic run of the same rule, and the verdict.

    ``rounded`` is the float run (``None`` without ``arith``); ``exact`` the exact-arithmetic
    run with ideal uniforms; ``grid_only`` the exact arithmetic on the run's uniform grid (the
    float run's generator grid, or ``grid``; without ``arith`` it is the run asked for; ``None``
    when there is no grid or it cannot be computed).  ``bias``, ``bias_exact_arith`` and
    ``bias_grid_only`` are exact TVs to ``p``.  ``pair_run``: ``exact`` and ``grid_only`` came
    from one run of a PyTorch rule's body (:func:`split_bias`'s Notes).
    """

    method: Any
    p: Dist
    q: Dist
    k: int
    arith: str | None
    grid: int | None
    exact: Verification
    rounded: Verification | None
    grid_only: Verification | None
    tolerance: Any = None
    logits: bool = False
    elementwise: str = "correct"
    sum_order: str | None = None
    pair_run: bool = False

    def __post_init__(self):
        self.bias_exact_arith, self.differences_exact_arith = _run_tv(self.exact, self.p)
        self.bias, self.differences = _run_tv(self.run, self.p)
        self.bias_grid_only = None if self.grid_only is None else _run_tv(self.grid_only,
                                                                           self.p)[0]

    @property
    def judged(self) -> Verdict:
        """The three runs' :class:`~exactspec.verdict.Verdict` (its word, tolerance, fields)."""
        if "_same_as_grid" not in self.__dict__:
            same = None
            if self.rounded is not None and self.grid_only is not None:
                same = _same_law(self.rounded.law, self.grid_only.law, self.p.labels)
            self.__dict__["_same_as_grid"] = same
        return Verdict(ThreeRuns.of(self.arith if self.rounded is not None else None,
                                    self.grid),
                       self.bias, self.bias_exact_arith, self.bias_grid_only,
                       same_as_grid=self.__dict__["_same_as_grid"], tolerance=self.tolerance)

    @property
    def verdict(self) -> str:
        """One word of :data:`~exactspec.verdict.VERDICTS`."""
        return self.judged.word

    @property
    def within_tolerance(self) -> bool:
        return self.judged.within_tolerance

    @property
    def ok(self) -> bool:
        """Exit 0: lossless, or a grid or rounding bias within the tolerance."""
        return self.judged.ok

    @property
    def run(self) -> Verification:
        """The run the verdict is about: the float run when there is one, else the run on the
        grid when there is one, else the exact-arithmetic run."""
        if self.rounded is not None:
            return self.rounded
        if self.grid is not None and self.grid_only is not None:
            return self.grid_only
        return self.exact

    def to_json(self) -> dict:
        """The ``verify --json`` object (the run's :meth:`Verification.to_json` keys), with
        ``arith``, ``grid``, ``verdict``, ``bias`` (the run asked for), ``bias_exact_arith``
        (exact arithmetic, ideal uniforms) and ``bias_grid_only`` (exact arithmetic on the
        grid; ``null`` without a grid), exact strings, and ``*_float`` twins."""
        run = self.run
        labels = self.p.labels
        judged = self.judged
        run.__dict__["_verdict"] = judged.word    # known here: no second pairing of the run
        out: dict[str, Any] = {k: v for k, v in run.to_json().items()
                               if k not in ("differs", "bias", "verdict")}
        out.update({
            "method": run.method.name,
            "k": self.k,
            "labels": [str(t) for t in labels],
            "target": {str(t): exact_str(self.p[t]) for t in labels},
            "output": {str(t): exact_str(run.law[t]) for t in labels},
            "lossless": judged.word == "lossless",
            "acceptance": exact_str(run.acceptance),
            "acceptance_float": as_float(run.acceptance),
            "paths": run.paths,
            **judged.fields(),
        })
        if self.differences:
            out["differs"] = [str(t) for t in self.differences]
            out["difference"] = {str(t): exact_str(d) for t, d in self.differences.items()}
        if self.rounded is not None:
            out["elementwise"] = self.elementwise
            out["sum_order"] = self.sum_order
        if run is not self.exact:
            out["exact_arith"] = {
                "output": {str(t): exact_str(self.exact.law[t]) for t in labels},
                "acceptance": exact_str(self.exact.acceptance),
                "differs": [str(t) for t in self.differences_exact_arith],
                "paths": self.exact.paths, "route": self.exact.route}
        out["floats_converted"] = self.exact.floats_converted   # taken exactly by that run
        shipped = shipped_of(self.run.method)
        if shipped:
            out["shipped"] = shipped
        if draft_law_of(self.run.method, self.arith if self.rounded is not None else None):
            out["draft_law"] = "exact"
        if self.logits:
            out["inputs"] = "logits"
        out.update(judged.tolerance_fields())
        return out

    @property
    def rounded_grid(self) -> int | None:
        """The uniform grid of the run asked for (:attr:`~exactspec.verdict.ThreeRuns.grid`)."""
        return ThreeRuns.of(self.arith if self.rounded is not None else None, self.grid).grid

    def text(self, exact: bool = False) -> str:
        """A table of the run asked for beside the exact-arithmetic run, the acceptance in
        words, the verdict (its TV's decimal figure first) and the three TVs side by side;
        ``exact``: every exact value in full (``verify --exact``), else a long one is shown
        by its decimal figure and a short exact form
        (:func:`~exactspec.core.text.figure`)."""
        from .core.text import CELL_NOTE, cell, figure, left_out_line, named_few, rows_shown

        labels, left_out = rows_shown(self.p.labels, self.differences.keys() |
                                      self.differences_exact_arith.keys())
        head = f"method {self.run.method.name}, k = {self.k}"
        run = self.run
        if run is not self.exact:
            name = self.arith or f"grid {grid_text(self.grid)}"
            lib = (" (exp/log correctly rounded)" if self.elementwise == "correct" else
                   f" (exp/log {self.elementwise}'s {self.arith}"
                   + ("; a Triton kernel's / and a * b + c as Triton's interpreter computes "
                      "them)" if self.elementwise == "numpy" else ")"))
            if self.rounded is not None and self.sum_order is not None:
                lib += f", long sums {self.sum_order}"
            what = (f"{self.arith} arithmetic{lib}, uniforms on a grid of "
                    f"{grid_text(self.rounded_grid)}" if self.rounded is not None else
                    f"exact arithmetic, uniforms on a grid of {grid_text(self.grid)}")
            head += (f": {what} ({run.paths} paths), paired with exact arithmetic and ideal "
                     f"uniforms ({self.exact.paths} paths)")
            header = ["token", "target p", name, "exact arith", f"{name} - p"]
            rows = [[t, cell(self.p[t], exact), cell(run.law[t], exact),
                     cell(self.exact.law[t], exact),
                     cell(self.differences.get(t, 0), exact)] for t in labels]
        else:
            head += f": exact arithmetic ({self.exact.paths} paths)"
            header = ["token", "target p", "output", "output - p"]
            rows = [[t, cell(self.p[t], exact), cell(self.exact.law[t], exact),
                     cell(self.differences.get(t, 0), exact)] for t in labels]
        widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
        table = "\n".join("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()
                          for r in [header] + rows)
        if left_out:
            table += "\n" + left_out_line(left_out)
        if any(str(c).startswith("~") for r in rows for c in r[1:]):
            table += "\n" + CELL_NOTE
        lines = [head, *shipped_lines(self.run.method),
                 *draft_law_lines(self.run.method,
                                  self.arith if self.rounded is not None else None), table,
                 f"acceptance P(Y in X) = {figure(run.acceptance, exact)}: the probability "
                 "that the emitted token is one of the drafts"]
        verdict = self.verdict

        def signed(d):
            shown = cell(d, exact)
            return shown if exact_sign(d) <= 0 else (
                "~+" + shown[1:] if shown.startswith("~") else "+" + shown)

        where = named_few(f"{t} ({signed(d)})" for t, d in self.differences.items())
        if verdict == "lossless":
            lines.append("LOSSLESS: the output law equals p exactly on this instance")
        elif verdict == "lossy-rounding":
            lines.append(f"LOSSY BY ROUNDING ONLY: TV({self.arith} output, p) "
                         f"{figure(self.bias, exact)}; the same rule in exact arithmetic is "
                         f"lossless; at {where}")
            if self.bias_grid_only is not None:
                lines.append("  the uniform grid alone (exact arithmetic on the grid) gives TV "
                             f"{figure(self.bias_grid_only, exact)}")
        elif verdict == "lossy-grid":
            lines.append(f"LOSSY BY THE GRID ONLY: TV(output on the grid of "
                         f"{grid_text(self.rounded_grid)}, p) {figure(self.bias, exact)}; the "
                         f"same rule with ideal uniforms is lossless; at {where}")
        elif run is not self.exact:      # the run asked for first, then exact arithmetic's
            name = f"{self.arith} output" if self.rounded is not None else \
                f"output on the grid of {grid_text(self.rounded_grid)}"
            lines.append(f"LOSSY BY LOGIC: TV({name}, p) {figure(self.bias, exact)}; the rule "
                         "is lossy in exact arithmetic too, TV(exact-arithmetic output, p) "
                         f"{short_figure(self.bias_exact_arith, exact)}, at "
                         + named_few(self.differences_exact_arith))
        else:
            lines.append(f"LOSSY BY LOGIC: TV(exact-arithmetic output, p) "
                         f"{figure(self.bias_exact_arith, exact)}; the rule is lossy in exact "
                         "arithmetic too; at " + named_few(self.differences_exact_arith))
        if run is not self.exact:
            lines.append(split_line(self.arith, self.rounded_grid, self.bias,
                                    self.bias_exact_arith, self.bias_grid_only, exact))
        if self.tolerance is not None and verdict in ("lossy-grid", "lossy-rounding"):
            lines.append(f"tolerance {exact_str(self.tolerance)}: the bias is "
                         + ("within it" if self.within_tolerance else "ABOVE it"))
        return "\n".join(lines)


def _enumerate(m, p, q, k, *, grid, max_paths, arith=None, rows=None, keep_paths=False,
               elementwise="correct", sum_order=None, optional=False) -> Verification | None:
    """One run of ``m`` on the exact ``p``, ``q`` as the planner enumerates it (in ``arith``
    on ``p`` and ``q`` rounded into the format, or on the float ``rows`` of logits); sympy
    values of its law simplified.  ``optional``: ``None`` where no route takes it."""
    answer = plan(request_of(m, p, q, k, arith=arith, grid=grid, rows=rows,
                             keep_paths=keep_paths, max_paths=max_paths,
                             elementwise=elementwise, sum_order=sum_order), optional=optional)
    if answer is None:
        return None
    return _verification(m, p, q, k, answer, grid=grid, arith=arith, sum_order=sum_order)


def _verification(m, p, q, k, answer, *, grid, arith=None, sum_order=None) -> Verification:
    enumeration = answer.enumeration
    if any(is_symbolic(v) for v in enumeration.law.values()):
        import sympy

        enumeration.law = {t: sympy.simplify(v) for t, v in enumeration.law.items()}
    return Verification(m, p, q, k, enumeration, grid=grid, arith=arith, sum_order=sum_order,
                        route=answer.route, declined=answer.declined)


def _side_runs(m, p, q, k, runs):
    """Runs of a one-position PyTorch rule, each started in a forked process
    (:func:`exactspec.routes.forked.start_in_fork`); ``runs`` lists ``(grid, arith,
    sum_order[, rows, elementwise, keep_paths])``.  ``.result()`` gives, in that order, each
    run's answer and its TV to ``p`` (computed where it ran), or ``None`` where a fork is not
    used or a run did not complete there (then the caller runs them here)."""
    requests = []
    for run in runs:
        grid, arith, order, rows, elementwise, keep_paths = \
            tuple(run) + (None, "correct", False)[len(run) - 3:]
        requests.append(request_of(m, p, q, k, grid=grid, arith=arith, sum_order=order,
                                   rows=rows, elementwise=elementwise, keep_paths=keep_paths))
    forked = start_in_fork(requests, lambda answer: _packed(answer, p))
    return None if forked is None else _Unpacking(forked, p)


def _pair_run(m, p, q, k, on_grid, keep_paths=False):
    """Exact arithmetic with ideal uniforms and on the grid of ``on_grid`` points, the two
    :class:`Verification`\\ s of one run of a rule's body
    (:func:`exactspec.routes.plan_pair`), or ``None`` where no route gives both from one run
    (the caller runs the two apart)."""
    pair = plan_pair(request_of(m, p, q, k, keep_paths=keep_paths), on_grid)
    if pair is None:
        return None
    ideal, grid = pair
    return (_verification(m, p, q, k, ideal, grid=None),
            _verification(m, p, q, k, grid, grid=on_grid))


def _packed(answer, p: Dist) -> tuple:
    """A forked run's answer as it is sent back: its law in the order of ``p``'s labels
    as two lists of integers (numerators, denominators) rather than ``Fraction``\\ s, and
    its TV to ``p`` with the differences (:func:`_tv`, computed in the forked process), packed
    the same way; :func:`_unpacked` rebuilds both."""
    import dataclasses

    run = answer.enumeration
    labels = p.labels
    values = [run.law[t] for t in labels]
    if not all(type(v) is Fraction for v in values):
        return answer, None, None
    tv, differences = _tv(run.law, p)
    index = {t: i for i, t in enumerate(labels)}
    if type(tv) is not Fraction or \
            any(type(d) is not Fraction for d in differences.values()):
        return answer, None, None
    bare = dataclasses.replace(answer, enumeration=dataclasses.replace(run, law={}))
    law = ([v._numerator for v in values], [v._denominator for v in values])
    diffs = ([index[t] for t in differences], [d._numerator for d in differences.values()],
             [d._denominator for d in differences.values()])
    return bare, law, (tv, diffs)


def _unpacked(sent, p: Dist):
    """The answer :func:`_packed` sent, and its ``(tv, differences)`` to ``p`` (or ``None``
    where it was sent as it is)."""
    answer, law, tv = sent
    if law is None:
        return answer, None
    labels = p.labels
    answer.enumeration.law = dict(zip(labels, map(reduced_fraction, *law)))
    value, (where, nums, dens) = tv
    return answer, (value, {labels[i]: reduced_fraction(n, d)
                            for i, n, d in zip(where, nums, dens)})


class _Unpacking:
    """The forked runs of :func:`_side_runs`, unpacked when their results are read."""

    def __init__(self, forked, p: Dist):
        self.forked, self.p = forked, p

    def result(self):
        """Each run's ``(answer, tv)`` in the order started, or ``None``."""
        sent = self.forked.result()
        return None if sent is None else tuple(_unpacked(one, self.p) for one in sent)

    def stop(self):
        self.forked.stop()


@gc_paused
def split_bias(method, p=None, q=None, k: int = 1, *, arith: str | None = None,
               grid: int | None = None, tolerance=None, logits_p=None, logits_q=None,
               labels=None, max_paths: int | None = DEFAULT_MAX_PATHS,
               keep_paths: bool = False, elementwise: str = "correct",
               sum_order: str | None = None) -> BiasSplit:
    """Run ``method`` with its arithmetic in ``arith`` and in exact arithmetic; the verdict.

    Parameters
    ----------
    p, q : Dist
        Target and draft (or give ``logits_p`` and ``logits_q``: rational logits whose exact
        softmax is the target and draft, and whose float softmax the float run receives).
    arith : str, optional
        ``"float32"``, ``"bfloat16"``, ``"float16"`` or ``"float64"``; without it, the exact
        run (on ``grid`` if given, then paired with ideal uniforms).
    grid : int, optional
        The uniform grid of the run asked for (with ``arith``, default: the format's
        generator, ``2**24`` for ``float32``).  The exact-arithmetic twin always uses ideal
        uniforms; a third run, exact arithmetic on the grid, tells the grid from rounding.
    tolerance : number, optional
        A grid or rounding bias at most this large counts as accepted (:attr:`BiasSplit.ok`).
    keep_paths : bool
        Keep the paths of the run the verdict is about (for its certificate).
    elementwise : str
        With ``arith``: where the float run's ``exp`` and ``log`` come from, ``"correct"``
        (correctly rounded), ``"numpy"`` or ``"torch"`` (the library's function on the exact
        float input, :func:`~exactspec.engine.floats.elementwise`).
    sum_order : str, optional
        With ``arith``: the declared order of a PyTorch rule's float sums of more than a
        few terms, ``"sequential"``, ``"correctly-rounded"`` or ``"torch-avx2"`` (see
        the module :mod:`exactspec.engine.float_sums`); without it such sums are refused.

    Notes
    -----
    A one-position PyTorch rule runs its runs with its draft as a tensor axis where it can
    (:mod:`exactspec.torch_layer.branched`), the float run too unless the rows are logits.
    Exact arithmetic with ideal uniforms and exact arithmetic on the grid compute the same
    values and differ only in the law of a uniform; where the rule reads a uniform's law
    only in comparisons ``u < c[draft]`` of a fresh uniform (its draws, races and drafts do
    not read one), the two come from one run of the body carrying both weights
    (:class:`~exactspec.torch_layer.branched.PairSampler`, :attr:`BiasSplit.pair_run`);
    otherwise they are two runs.  On rows of at least :data:`~exactspec.routes.forked.PARALLEL_MIN_TOKENS` tokens the
    float run (and the exact run on the grid when it is a run of its own) runs in a forked
    process beside this one, which sends its law and its TV to ``p`` back as integers
    (:func:`_side_runs`; where that cannot be done, or a forked run does not complete, it
    runs here).
    """
    if tolerance is not None:
        tolerance = Fraction(tolerance) if not isinstance(tolerance, str) else \
            Fraction(tolerance)
        if tolerance < 0:
            raise InvalidInput(f"tolerance={exact_str(tolerance)}: need a number >= 0")
    runs = ThreeRuns.of(arith, grid)
    fmt = runs.format
    if elementwise != "correct" and fmt is None:
        raise InvalidInput(f"elementwise={elementwise!r} applies to a float run: give arith "
                           "(--arith float32, ...)")
    if fmt is not None:
        from .engine.floats import check_elementwise
        from .engine.float_sums import check_sum_order

        check_elementwise(elementwise, fmt)
        check_sum_order(sum_order)
    elif sum_order is not None:
        raise InvalidInput(f"sum_order={sum_order!r} applies to a float run: give arith "
                           "(--arith float32, ...)")
    use_logits = logits_p is not None or logits_q is not None
    if use_logits:
        if logits_p is None or logits_q is None:
            raise InvalidInput("give both logits (target and draft), or neither")
        if len(logits_p) != len(logits_q):
            raise InvalidInput(f"logits of q have {len(logits_q)} entries but those of p "
                               f"have {len(logits_p)}")
        if p is not None or q is not None:
            raise InvalidInput("give probabilities or logits, not both")
        p = softmax_exact(logits_p, labels, "p")
        q = softmax_exact(logits_q, labels, "q")
        m = get_method(method)
        m.check(p, q, k)
    else:
        if p is None or q is None:
            raise InvalidInput("give p and q (or logits_p and logits_q)")
        m, p, q = checked(method, p, q, k)
    on_grid = runs.grid
    rows = None
    if use_logits and fmt is not None:
        rows = (_float_softmax_dist(logits_p, labels, fmt, p, elementwise),
                _float_softmax_dist(logits_q, labels, fmt, q, elementwise))
    side = side_grid = None
    if fmt is not None:
        side = _side_runs(m, p, q, k, [(grid, fmt.name, sum_order, rows, elementwise,
                                        keep_paths)])
    rounded = grid_only = pair = None
    try:
        if on_grid is not None:
            pair = _pair_run(m, p, q, k, on_grid, keep_paths)   # ideal and grid, one run
        if pair is not None:
            exact, grid_only = pair
        else:
            if fmt is not None:
                side_grid = _side_runs(m, p, q, k, [(on_grid, None, None, rows, elementwise,
                                                     keep_paths)])
            exact = _enumerate(m, p, q, k, grid=None, max_paths=max_paths,
                               keep_paths=keep_paths and fmt is None and grid is None)
    except BaseException:
        for forked in (side, side_grid):
            if forked is not None:
                forked.stop()
        raise
    done = side.result() if side is not None else None
    if side_grid is not None:
        done_grid = side_grid.result()
        if done_grid is not None:     # the exact run on the grid, from a forked process
            answer, tv = done_grid[0]
            grid_only = _with_tv(_verification(m, p, q, k, answer, grid=on_grid), p, tv)
    if done is not None:        # the float run, from a forked process
        answer, tv = done[0]
        rounded = _with_tv(_verification(m, p, q, k, answer, grid=grid, arith=fmt.name,
                                         sum_order=sum_order), p, tv)
    elif fmt is not None:
        rounded = _enumerate(m, p, q, k, grid=grid, max_paths=max_paths, arith=fmt.name,
                             rows=rows, keep_paths=keep_paths, elementwise=elementwise,
                             sum_order=sum_order)
    if grid_only is None and (grid is not None or (fmt is not None and not use_logits)):
        grid_only = _enumerate(m, p, q, k, grid=on_grid, max_paths=max_paths,
                               keep_paths=keep_paths and fmt is None,
                               optional=fmt is not None)   # irrational thresholds: no grid run
    return BiasSplit(m, p, q, k, fmt.name if fmt else None, grid, exact, rounded, grid_only,
                     tolerance, use_logits, elementwise, sum_order, pair is not None)
