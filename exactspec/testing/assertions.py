"""Exact assertions for a test suite: a rule is lossless, an acceptance is what it should be.

Each assertion raises one :class:`AssertionError` whose message names the instance (the
smallest counterexample when a family was searched), the exact output law next to the target,
and the exact total-variation distance, as ``numpy.testing`` names the mismatched elements.

>>> from exactspec import Dist
>>> assert_lossless("sps", Dist.parse("1/2,1/2"), Dist.parse("1/3,2/3"))
>>> try:
...     assert_lossless("naive", Dist.parse("1/2,1/2"), Dist.parse("3/4,1/4"))
... except AssertionError as err:
...     print(err)
Not lossless: naive on p = Dist({0: 1/2, 1: 1/2}), q = Dist({0: 3/4, 1: 1/4}), k = 1
Verdict: lossy by logic (the rule is lossy in exact arithmetic)
TV(output law, target) = 1/4 (~0.25)
Mismatched tokens: 2 / 2
 token  target  output  output - target
 0      1/2     3/4     +1/4
 1      1/2     1/4     -1/4
"""

from __future__ import annotations

from fractions import Fraction
from ..core.dist import Dist, exact_str, parse_number
from ..core.errors import InvalidInput
from ..engine.exact import DEFAULT_MAX_PATHS
from ..rounding import exact_difference, exact_sign, split_bias
from ..verify import as_k, verify

__all__ = ["LosslessAssertionError", "assert_lossless", "assert_lossless_family",
           "assert_acceptance"]


class LosslessAssertionError(AssertionError):
    """A rule failed an exact assertion; the figures are kept as attributes.

    ``p``, ``q``, ``k``: the instance (the counterexample of a family); ``law``: the exact
    output law; ``bias``: the exact TV to ``p`` (``None`` for an acceptance); ``verdict``:
    ``"lossy-logic"``, ``"lossy-rounding"``, ``"lossy-grid"`` or ``"acceptance"``.
    """

    __module__ = "exactspec.testing"     # the name pytest shows: where users import it

    def __init__(self, message: str, *, p=None, q=None, k=1, law=None, bias=None,
                 verdict: str = "", acceptance=None, expected=None):
        super().__init__(message)
        self.p, self.q, self.k, self.law = p, q, k, law
        self.bias, self.verdict = bias, verdict
        self.acceptance, self.expected = acceptance, expected


def _float(x) -> float:
    return float(x.evalf(30)) if hasattr(x, "free_symbols") else float(x)


def _grid_text(grid: int) -> str:
    return f"2**{grid.bit_length() - 1}" if grid & (grid - 1) == 0 else str(grid)


def _table(p: Dist, law: dict) -> str:
    header = ["token", "target", "output", "output - target"]
    rows = []
    for t in p.labels:
        d = exact_difference(law[t], p[t])
        sign = "+" if exact_sign(d) > 0 else ""
        rows.append([str(t), exact_str(p[t]), exact_str(law[t]), sign + exact_str(d)])
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    return "\n".join(" " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
                     for r in [header] + rows)


def _instance_text(name: str, p: Dist, q: Dist, k: int, grid, arith) -> str:
    text = f"{name} on p = {p!r}, q = {q!r}, k = {k}"
    if arith:
        text += f", {arith} arithmetic"
    if grid:
        text += f", uniforms on a grid of {_grid_text(grid)}"
    return text


_VERDICT_LINE = {
    "lossy-logic": "lossy by logic (the rule is lossy in exact arithmetic)",
    "lossy-rounding": "lossy by rounding only (the rule is lossless in exact arithmetic)",
    "lossy-grid": "lossy by the grid only (the rule is lossless with ideal uniforms)",
}


def _failure(split, *, head: str = "", arith=None, grid=None, tolerance=None
             ) -> LosslessAssertionError:
    run = split.run
    p, law = split.p, run.law
    mismatched = sum(1 for t in p.labels if exact_sign(exact_difference(law[t], p[t])) != 0)
    lines = [f"Not lossless: {_instance_text(run.method.name, p, split.q, split.k, grid, arith)}"]
    if head:
        lines.append(head)
    verdict = _VERDICT_LINE[split.verdict]
    lines.append(f"Verdict: {verdict}")
    lines.append(f"TV(output law, target) = {exact_str(split.bias)} (~{_float(split.bias):.3g})")
    if arith and split.verdict == "lossy-logic":
        lines.append(f"TV(exact-arithmetic output law, target) = "
                     f"{exact_str(split.bias_exact_arith)}")
    if tolerance is not None:
        why = (" (it applies only to a grid or rounding bias)" if split.verdict == "lossy-logic"
               else " (the bias is above it)")
        lines.append(f"Tolerance: {exact_str(tolerance)}{why}")
    lines.append(f"Mismatched tokens: {mismatched} / {len(p)}")
    lines.append(_table(p, law))
    return LosslessAssertionError("\n".join(lines), p=p, q=split.q, k=split.k, law=dict(law),
                                  bias=split.bias, verdict=split.verdict)


def _tolerance(tolerance):
    if tolerance is None:
        return None
    try:
        value = (parse_number(tolerance, "tolerance") if isinstance(tolerance, str)
                 else Fraction(tolerance))
    except (TypeError, ValueError, ZeroDivisionError):
        raise InvalidInput(f"tolerance={tolerance!r}: need a number >= 0 (a Fraction, an int, "
                           "'1/1048576'; a float is read at its exact value)") from None
    if value < 0:
        raise InvalidInput(f"tolerance={exact_str(value)}: need a number >= 0")
    return value


def assert_lossless(rule, p=None, q=None, *, k: int = 1, grid: int | None = None,
                    arith: str | None = None, tolerance=None,
                    max_paths: int | None = DEFAULT_MAX_PATHS, max_tokens: int = 3,
                    max_denominator: int = 4, seconds: float | None = None) -> None:
    """Assert that ``rule`` is lossless on ``(p, q, k)``, exactly.

    Parameters
    ----------
    rule : str, Method or callable
        A registered name (``"sps"``), ``"file.py:function"``, or ``f(s, p, q[, k])`` written
        against the sampling interface.
    p, q : Dist or sequence, optional
        The instance; when both are ``None``, the family of small instances is searched
        (:func:`assert_lossless_family`).
    grid : int, optional
        Explicit uniforms on ``{0, 1/N, ..., (N-1)/N}``.
    arith : str, optional
        Run the rule's arithmetic in a float format (``"float32"``, ...) and pair it with exact
        arithmetic (:func:`exactspec.rounding.split_bias`).
    tolerance : number, optional
        With ``arith`` or ``grid``: a grid or rounding bias at most this large passes.  A bias of the logic
        never passes.
    seconds : float, optional
        A wall-clock budget, kept by a watching process that the rule's code cannot catch,
        block or cancel (:func:`~exactspec.core.supervise.supervised`); over it the check
        raises :class:`~exactspec.core.errors.TooLarge`.

    Raises
    ------
    LosslessAssertionError
        An :class:`AssertionError` naming the instance, the exact output law against the
        target, the exact TV and the verdict (lossy by logic, or by rounding only).
    """
    __tracebackhide__ = True        # pytest shows the caller's line, not this function's
    if seconds is not None:
        return _within(seconds, rule, lambda: assert_lossless(
            rule, p, q, k=k, grid=grid, arith=arith, tolerance=tolerance, max_paths=max_paths,
            max_tokens=max_tokens, max_denominator=max_denominator))
    if p is None and q is None:
        return assert_lossless_family(rule, k=k, grid=grid, arith=arith, tolerance=tolerance,
                                      max_tokens=max_tokens, max_denominator=max_denominator,
                                      max_paths=max_paths)
    if p is None or q is None:
        raise InvalidInput("give both p and q, or neither (then small instances are searched)")
    tol = _tolerance(tolerance)
    split = split_bias(rule, p, q, as_k(k), arith=arith, grid=grid, tolerance=tol,
                       max_paths=max_paths)
    if split.ok:
        return
    raise _failure(split, arith=split.arith, grid=split.rounded_grid, tolerance=tol)


def assert_lossless_family(rule, *, k: int = 1, grid: int | None = None,
                           arith: str | None = None, tolerance=None, max_tokens: int = 3,
                           max_denominator: int = 4,
                           max_paths: int | None = 10**6) -> None:
    """Assert that ``rule`` is lossless on every small rational instance.

    Instances are tried from the smallest up (1 to ``max_tokens`` tokens, entries multiples
    of ``1/d`` for ``d`` up to ``max_denominator``; zeros, point masses and ties first within
    each size, as :func:`exactspec.gallery.search.search_counterexample` does); the first
    lossy one is the smallest counterexample and is named in the message.  Passing is evidence
    on these instances, not a proof for all.

    >>> from exactspec.methods.naive import naive
    >>> try:
    ...     assert_lossless_family(naive)
    ... except AssertionError as err:
    ...     print(err)
    Not lossless: naive on p = Dist({0: 0, 1: 1}), q = Dist({0: 1, 1: 0}), k = 1
    Smallest counterexample: instance 3 of the small instances, tried from the smallest up
    Verdict: lossy by logic (the rule is lossy in exact arithmetic)
    TV(output law, target) = 1 (~1)
    Mismatched tokens: 2 / 2
     token  target  output  output - target
     0      0       1       +1
     1      1       0       -1
    """
    __tracebackhide__ = True
    from ..gallery.search import search_counterexample

    tol = _tolerance(tolerance)
    for name, value in (("max_tokens", max_tokens), ("max_denominator", max_denominator)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InvalidInput(f"{name}={value!r}: need a positive integer")
    found = search_counterexample(rule, as_k(k), max_tokens=max_tokens,
                                  max_denominator=max_denominator, grid=grid, arith=arith,
                                  tolerance=tol, max_paths=max_paths)
    if found.counterexample is None:
        return
    head = (f"Smallest counterexample: instance {found.instances} of the small instances, "
            "tried from the smallest up")
    split = found.split
    if split is None:
        r = found.counterexample
        split = split_bias(r.method, r.p, r.q, r.k, grid=grid, max_paths=max_paths)
    raise _failure(split, head=head, arith=split.arith, grid=split.rounded_grid,
                   tolerance=tol)


def _within(seconds, rule, work):
    """``work()`` in a watched child process stopped after ``seconds`` of wall-clock time."""
    from ..core.supervise import supervised

    if isinstance(seconds, bool) or not isinstance(seconds, (int, float, Fraction)) \
            or not 0 < seconds < 1e9:
        raise InvalidInput(f"seconds={seconds!r}: need a positive number of seconds")
    name = rule if isinstance(rule, str) else getattr(rule, "__name__", "the rule")
    return supervised(work, seconds=float(seconds), what=f"the check of {name}")


def _exact_value(x, name: str):
    if isinstance(x, str):
        try:
            return Fraction(x.strip())
        except (ValueError, ZeroDivisionError):
            raise InvalidInput(f"{name}={x!r}: not an exact number (give 3/5 or a Fraction)"
                               ) from None
    if isinstance(x, float):
        raise InvalidInput(f"{name}={x!r}: a float is not exact; give a Fraction or a string "
                           "such as '3/5'")
    if isinstance(x, (int, Fraction)) or hasattr(x, "free_symbols"):
        return x
    raise InvalidInput(f"{name}={x!r}: need an exact number (Fraction, int, sympy, '3/5')")


def assert_acceptance(rule, p, q, expected, *, k: int = 1, grid: int | None = None,
                      arith: str | None = None,
                      max_paths: int | None = DEFAULT_MAX_PATHS,
                      seconds: float | None = None) -> None:
    """Assert that the acceptance ``P(Y in X)`` of ``rule`` on ``(p, q, k)`` is ``expected``,
    exactly (a ``Fraction``, an int, a sympy number or a string such as ``"3/5"``).

    >>> from exactspec import Dist
    >>> assert_acceptance("sps", Dist.parse("1/2,1/2"), Dist.parse("1/3,2/3"), "5/6")
    >>> try:
    ...     assert_acceptance("sps", Dist.parse("1/2,1/2"), Dist.parse("1/3,2/3"), "4/5")
    ... except AssertionError as err:
    ...     print(err)
    Acceptance differs: sps on p = Dist({0: 1/2, 1: 1/2}), q = Dist({0: 1/3, 1: 2/3}), k = 1
    expected 4/5, got 5/6 (got - expected = 1/30, ~0.0333)
    """
    __tracebackhide__ = True
    if seconds is not None:         # a budget kept from outside, as assert_lossless's
        return _within(seconds, rule, lambda: assert_acceptance(
            rule, p, q, expected, k=k, grid=grid, arith=arith, max_paths=max_paths))
    want = _exact_value(expected, "expected")
    result = verify(rule, p, q, as_k(k), grid=grid, arith=arith, max_paths=max_paths)
    got = result.acceptance
    d = exact_difference(got, want)
    if exact_sign(d) == 0:
        return
    where = _instance_text(result.method.name, result.p, result.q, result.k, grid, arith)
    raise LosslessAssertionError(
        f"Acceptance differs: {where}\n"
        f"expected {exact_str(want)}, got {exact_str(got)} "
        f"(got - expected = {exact_str(d)}, ~{_float(d):.3g})",
        p=result.p, q=result.q, k=result.k, law=dict(result.law), verdict="acceptance",
        acceptance=got, expected=want)
