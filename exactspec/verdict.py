"""The verdict, built once: the three runs a rule needs, their TVs to the target, the word.

A rule checked in a float format or on a uniform grid is run three times, each exactly: the
run asked for (the float run, or exact arithmetic on the grid), exact arithmetic with ideal
uniforms, and exact arithmetic on the run's grid.  Which of the three are runs of their own is
:class:`ThreeRuns`; what they say, :class:`Verdict`: its word (:func:`verdict_of`), whether a
bias is within a tolerance, the exit status, and the report's fields (``arith``, ``grid``,
``verdict``, the three TVs as exact strings with ``*_float`` twins, ``tolerance``,
``within_tolerance``).  Every report that carries a verdict (``verify`` of a one-position rule,
:func:`exactspec.rounding.split_bias`; a user's multi-position rule by the path or the factored
route, :mod:`exactspec.sequences.user`, :mod:`exactspec.sequences.factored`; token trees)
builds it here, so the three runs are planned, and the word and its fields written, in one place.

>>> from fractions import Fraction
>>> runs = ThreeRuns.of("float32", None)
>>> runs.grid, runs.ideal_is_asked, runs.grid_is_asked
(16777216, False, False)
>>> v = Verdict(runs, bias=Fraction(1, 2**26), bias_exact_arith=Fraction(0),
...             bias_grid_only=Fraction(1, 2**26), same_as_grid=True)
>>> v.word, v.ok
('lossy-grid', False)
>>> Verdict(runs, Fraction(1, 2**26), Fraction(0), None, tolerance=Fraction(1, 2**20)).ok
True
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .core.dist import exact_str
from .core.errors import Undecided

__all__ = ["GRID_ABOVE_TOTAL", "ThreeRuns", "VERDICTS", "Verdict",
           "as_float", "exact_difference", "exact_sign", "grid_text", "is_symbolic",
           "short_figure", "split_line", "tolerated", "verdict_of"]

#: The words of a verdict, best first.
VERDICTS = ("lossless", "lossy-grid", "lossy-rounding", "lossy-logic")


def verdict_of(lossless: bool, ideal_lossless: bool, *, rounded: bool = False,
               same_as_grid: bool | None = None) -> str:
    """The verdict of a run, one word of :data:`VERDICTS`, from exact comparisons.

    ``lossless``: the run asked for gives ``p`` exactly; ``ideal_lossless``: the same rule in
    exact arithmetic with ideal uniforms does; ``rounded``: the run asked for computes in a float
    format; ``same_as_grid``: its law equals that of exact arithmetic on its uniform grid
    (``None`` when that run is not available).  A lossy run whose ideal twin is lossless is
    ``"lossy-grid"`` when the grid alone makes the whole difference (always so without a float
    format), ``"lossy-rounding"`` when the float run is lossy beyond the grid.

    >>> verdict_of(False, True), verdict_of(False, True, rounded=True, same_as_grid=False)
    ('lossy-grid', 'lossy-rounding')
    >>> verdict_of(False, False, rounded=True), verdict_of(True, False)
    ('lossy-logic', 'lossless')
    """
    if lossless:
        return "lossless"
    if not ideal_lossless:
        return "lossy-logic"
    if not rounded or same_as_grid:
        return "lossy-grid"
    return "lossy-rounding"


def is_symbolic(x) -> bool:
    """Whether ``x`` is a sympy expression (an exact number that is not a Fraction)."""
    return hasattr(x, "free_symbols")


def as_float(x) -> float:
    """The float of an exact number (a sympy one evaluated at 30 digits first).

    >>> as_float(Fraction(1, 4))
    0.25
    """
    return float(x.evalf(30)) if is_symbolic(x) else float(x)


def exact_difference(a, b):
    """``a - b`` exactly: a Fraction, or a simplified sympy number (``0`` when it is zero).

    >>> import sympy
    >>> exact_difference(Fraction(1, 2), Fraction(1, 3))
    Fraction(1, 6)
    >>> exact_difference(sympy.exp(1) / (1 + sympy.exp(1)), 1 - 1 / (1 + sympy.exp(1)))
    Fraction(0, 1)
    """
    if not (is_symbolic(a) or is_symbolic(b)):
        return Fraction(a) - Fraction(b)
    import sympy

    d = sympy.sympify(a) - sympy.sympify(b)
    v = sympy.N(d, 60)
    if v.is_Number and v != 0 and abs(v) > sympy.Float(10) ** -50:
        return d           # clearly non-zero (exact_sign decides its sign): no simplification
    d = sympy.simplify(d)
    if d.is_Rational:
        return Fraction(int(d.p), int(d.q))
    return d


def exact_sign(d) -> int:
    """The sign of an exact number: exact for Fractions; for a sympy number, decided by
    evaluation at increasing precision (a non-zero number is eventually separated from 0)."""
    if not is_symbolic(d):
        return (d > 0) - (d < 0)
    import sympy

    if d.is_zero:
        return 0
    for digits in (30, 100, 400):
        v = sympy.N(d, digits)
        if v != 0 and abs(v) > sympy.Float(10) ** (-(digits - 10)):
            return 1 if v > 0 else -1
    if sympy.simplify(d) == 0:
        return 0
    raise Undecided(f"cannot decide the sign of {d}")


def tolerated(verdict: str, bias, tolerance) -> bool:
    """Whether a grid or rounding bias is within ``tolerance`` (exit 0); a logic bias never is.

    >>> tolerated("lossy-grid", Fraction(1, 8), Fraction(1, 8)), tolerated("lossy-logic", 0, 1)
    (True, False)
    """
    return (verdict in ("lossy-grid", "lossy-rounding") and tolerance is not None
            and exact_sign(exact_difference(bias, tolerance)) <= 0)


def grid_text(grid: int) -> str:
    """A grid size as printed: ``2**24`` for a power of two."""
    return f"2**{grid.bit_length() - 1}" if grid & (grid - 1) == 0 else str(grid)


def short_figure(x, exact: bool = False) -> str:
    """:func:`~exactspec.core.text.figure` of ``x``, or only its decimal to three digits
    when its exact value is too long for the line (``~2.00e-08``): the second figure of a
    line whose first gives the way to the digits.

    >>> short_figure(Fraction(1, 4)), short_figure(Fraction(10**30 + 1, 3 * 10**40))
    ('0.25 (exactly 1/4)', '~3.33e-11')
    """
    from .core.text import figure

    text = figure(x, exact)
    return text if ", --exact)" not in text else f"~{as_float(x):#.3g}"


#: The note under the three TVs when exact arithmetic on the grid is further from the target
#: than the run asked for.
GRID_ABOVE_TOTAL = ("note: the grid alone gives a larger TV than the {run}: its rounding "
                    "cancels part of the grid's bias (the three TVs are distances, they do "
                    "not add up)")


def split_line(arith, grid, bias, bias_exact_arith, bias_grid_only, exact=False) -> str:
    """The three TVs side by side: the run asked for, exact arithmetic with ideal uniforms,
    exact arithmetic on the grid (each its decimal figure first, :func:`short_figure`); a
    second line, :data:`GRID_ABOVE_TOTAL`, when
    the grid's TV is larger than the run's (rounding cancelled part of the grid's bias).

    >>> split_line("float32", 2**24, Fraction(3, 2**26), Fraction(0), Fraction(1, 2**26))
    'TV to the target: float32 run ~4.47e-08 (exactly 3/67108864); exact arithmetic, ideal uniforms 0; exact arithmetic on the grid of 2**24 ~1.49e-08 (exactly 1/67108864)'
    >>> print(split_line("float32", 2**24, Fraction(1, 2**26), 0, Fraction(3, 2**26)))
    ... # doctest: +NORMALIZE_WHITESPACE
    TV to the target: float32 run ~1.49e-08 (exactly 1/67108864); exact arithmetic, ideal
    uniforms 0; exact arithmetic on the grid of 2**24 ~4.47e-08 (exactly 3/67108864)
    note: the grid alone gives a larger TV than the float32 run: its rounding cancels part of
    the grid's bias (the three TVs are distances, they do not add up)
    """
    def shown(x):
        return "not computed" if x is None else short_figure(x, exact)

    name = f"{arith} run" if arith else f"grid {grid_text(grid)} run" if grid else "run"
    out = f"TV to the target: {name} {shown(bias)}; exact arithmetic, ideal uniforms " \
          f"{shown(bias_exact_arith)}"
    if grid is not None:
        out += f"; exact arithmetic on the grid of {grid_text(grid)} {shown(bias_grid_only)}"
        if arith and bias_grid_only is not None and bias is not None and \
                exact_sign(exact_difference(bias_grid_only, bias)) > 0:
            out += "\n" + GRID_ABOVE_TOTAL.format(run=name)
    return out


@dataclass(frozen=True)
class ThreeRuns:
    """Which of a verdict's three runs are runs of their own, for ``arith`` and ``grid``.

    ``format`` is the float format of the run asked for (``None``: exact arithmetic);
    ``asked_grid`` the grid asked for; :attr:`grid` the run's uniform grid (the one asked
    for, else the format's generator grid; ``None``: ideal uniforms).  Exact arithmetic
    with ideal uniforms is the run asked for when there is neither a format nor a grid
    (:attr:`ideal_is_asked`); exact arithmetic on the grid is the run asked for when there is
    a grid but no format (:attr:`grid_is_asked`), and is not run when there is no grid.

    >>> ThreeRuns.of(None, None).ideal_is_asked, ThreeRuns.of(None, 8).grid_is_asked
    (True, True)
    """

    format: Any
    asked_grid: int | None

    @classmethod
    def of(cls, arith: str | None, grid: int | None) -> "ThreeRuns":
        """The runs of ``arith`` (a float format's name, or ``None``) and ``grid``."""
        fmt = None
        if arith is not None:
            from .engine.floats import get_format

            fmt = get_format(arith)
        return cls(fmt, grid)

    @property
    def grid(self) -> int | None:
        """The uniform grid of the run asked for (``None``: ideal uniforms)."""
        if self.asked_grid is not None:
            return self.asked_grid
        return self.format.grid if self.format is not None else None

    @property
    def rounded(self) -> bool:
        """Whether the run asked for computes in a float format."""
        return self.format is not None

    @property
    def arith(self) -> str:
        """The run's arithmetic as a report names it: the format's name, or ``"exact"``."""
        return self.format.name if self.format is not None else "exact"

    @property
    def ideal_is_asked(self) -> bool:
        """Whether exact arithmetic with ideal uniforms is the run asked for."""
        return self.format is None and self.asked_grid is None

    @property
    def grid_is_asked(self) -> bool:
        """Whether exact arithmetic on the grid is the run asked for (a grid, no format)."""
        return self.format is None and self.grid is not None


@dataclass
class Verdict:
    """What the three runs say: the word, the tolerance's judgement, the report's fields.

    ``bias``, ``bias_exact_arith`` and ``bias_grid_only`` are the exact TVs to the target of
    the run asked for, of exact arithmetic with ideal uniforms and of exact arithmetic on the
    grid (``None``: not run or not computed); ``lossless`` and ``ideal_lossless`` whether the
    first two runs give the target exactly (default: their TV is exactly 0); ``same_as_grid``
    whether the float run's law equals the grid run's (``None`` when not compared).
    """

    runs: ThreeRuns
    bias: Any
    bias_exact_arith: Any
    bias_grid_only: Any = None
    same_as_grid: bool | None = None
    tolerance: Any = None
    lossless: bool | None = None
    ideal_lossless: bool | None = None

    def __post_init__(self):
        if self.lossless is None:
            self.lossless = exact_sign(self.bias) == 0
        if self.ideal_lossless is None:
            self.ideal_lossless = exact_sign(self.bias_exact_arith) == 0

    @property
    def word(self) -> str:
        """One word of :data:`VERDICTS` (:func:`verdict_of`)."""
        return verdict_of(self.lossless, self.ideal_lossless, rounded=self.runs.rounded,
                          same_as_grid=self.same_as_grid)

    @property
    def within_tolerance(self) -> bool:
        """Whether a grid or rounding bias is within the tolerance (:func:`tolerated`)."""
        return tolerated(self.word, self.bias, self.tolerance)

    @property
    def ok(self) -> bool:
        """Exit 0: lossless, or a grid or rounding bias within the tolerance."""
        return self.word == "lossless" or self.within_tolerance

    def fields(self) -> dict:
        """The report's fields of the verdict: ``arith``, ``grid``, ``verdict`` and the three
        TVs (exact strings, ``*_float`` twins; ``bias_grid_only`` ``null`` when not run)."""
        grid_only = self.bias_grid_only
        return {
            "arith": self.runs.arith,
            "grid": self.runs.grid,
            "verdict": self.word,
            "bias": exact_str(self.bias),
            "bias_float": as_float(self.bias),
            "bias_exact_arith": exact_str(self.bias_exact_arith),
            "bias_exact_arith_float": as_float(self.bias_exact_arith),
            "bias_grid_only": None if grid_only is None else exact_str(grid_only),
            "bias_grid_only_float": None if grid_only is None else as_float(grid_only),
        }

    def tolerance_fields(self) -> dict:
        """``tolerance`` and ``within_tolerance`` when a tolerance was given, else nothing."""
        if self.tolerance is None:
            return {}
        return {"tolerance": exact_str(self.tolerance),
                "within_tolerance": self.within_tolerance}
