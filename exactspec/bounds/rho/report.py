"""What ``exactspec rho K`` reports: ``rho_k``, its maximiser, and the tight instance, checked.

:func:`rho_report` is the ``rho --json`` object (docs/json.md#rho; keys ``k``, ``rho``,
``rho_float``, ``argmax``, ``tight_instance``); :func:`rho_text` the human output.  Both run
the tight instance through the engine first (:func:`exactspec.bounds.rho.engine_checks.engine_tight_instance`:
RRS's exact acceptance, losslessness and ``alpha* = 1``, in rationals for ``k = 2`` and in
the number field ``Q(a_k)`` for ``k >= 3``), and refuse to report an instance that does not
check.

>>> report = rho_report(2)
>>> report["rho"], report["argmax"], report["tight_instance"]["alpha_rrs"]
('23/27', '2/3', '23/27')
>>> report["tight_instance"]["p"], report["tight_instance"]["q"]
({'0': '5/9', '1': '4/9'}, {'0': '1/3', '1': '2/3'})
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import Any

import sympy as sp

from .closed_form import rho, tight_instance
from ...core.dist import exact_str

__all__ = ["rho_report", "rho_text"]


def _text(x: Any) -> str:
    """Exact text: lowest-terms rationals (``"3/5"``, ``"1"``), sympy strings otherwise."""
    if isinstance(x, sp.Basic) and x.is_Rational:
        return exact_str(Fraction(int(x.p), int(x.q)))
    return exact_str(x)


@functools.lru_cache(maxsize=16)
def _checked(k: int):
    """The engine's run of the tight instance; raises if it does not check.  Kept per ``k``:
    ``exactspec rho K`` builds the JSON object and the text from one run."""
    from .engine_checks import engine_tight_instance

    inst = engine_tight_instance(k)
    if not inst.checked:
        failed = [name for name, ok in inst.checks.items() if not ok]
        raise AssertionError(f"internal: the tight instance for k={k} did not check: {failed}")
    return inst


def rho_report(k: int) -> dict:
    """The ``exactspec rho K --json`` object.

    ``rho`` and ``argmax`` are exact text (``"23/27"``; sympy strings such as
    ``"1 - 6*sqrt(15)/125"`` when irrational), ``rho_float`` a float, ``argmax`` ``None``
    for ``k = 1`` (every ``a`` maximises ``a - a``), and ``tight_instance`` the two-token
    instance at the maximiser (``p``, ``q`` as ``{label: value}``, ``alpha_rrs``,
    ``alpha_star``), ``None`` for ``k = 1``.

    Raises :class:`~exactspec.core.errors.InvalidInput` for a ``k`` that is not a positive integer.

    >>> r = rho_report(3)
    >>> r["rho"], r["argmax"], round(r["rho_float"], 6)
    ('1 - 6*sqrt(15)/125', 'sqrt(15)/5', 0.814097)
    >>> r["tight_instance"]["q"], r["tight_instance"]["alpha_star"]
    ({'0': '1 - sqrt(15)/5', '1': 'sqrt(15)/5'}, '1')
    >>> rho_report(1)["tight_instance"] is None
    True
    """
    r = rho(k)
    out: dict[str, Any] = {
        "k": r.k,
        "rho": _text(r.rho),
        "rho_float": float(r.rho.evalf(30)),
        "argmax": None if r.argmax is None else _text(r.argmax),
        "tight_instance": None,
    }
    if r.argmax is not None:
        _checked(r.k)
        inst = tight_instance(r.k)
        out["tight_instance"] = {
            "p": {str(i): _text(v) for i, v in enumerate(inst.p)},
            "q": {str(i): _text(v) for i, v in enumerate(inst.q)},
            "alpha_rrs": _text(inst.rrs),
            "alpha_star": _text(inst.alpha_star),
        }
    return out


def rho_text(k: int) -> str:
    """The human output of ``exactspec rho K``: value, derivation, maximiser, tight instance
    and how it was checked.

    >>> print(rho_text(2))
    rho_2 = 23/27 (0.851851851851852)
      RRS with 2 i.i.d. drafts reaches at least rho_2 * alpha* on every p, q (Baliga et al.)
    derivation:
      f(a) = -a**3 + a**2
      f'(a) = -3*a**2 + 2*a = a*(2 - 3*a)
      f'(a) = 0 in (0, 1): 2 - 3*a = 0, so a = 2/3
      candidates: f(0) = 0, f(1) = 0, f(2/3) = 4/27
      f''(2/3) = -2 < 0: a strict maximum
      rho_2 = 1 - f(2/3) = 23/27
    maximiser: a_2 = 2/3 (0.666666666666667)
    tight instance: q = (1 - a, a), p = (1 - a^2, a^2) at a = a_2
      q = (1/3, 2/3)
      p = (5/9, 4/9)
      RRS acceptance = 23/27 (engine: exact enumeration of 6 paths, lossless)
      alpha* = 1 (closed form, brute force, max flow; a lossless coupling with acceptance 1)
      ratio = 23/27 = rho_2: checked
    """
    r = rho(k)
    k = r.k
    lines = [f"rho_{k} = {_text(r.rho)} ({float(r.rho.evalf(30)):.15g})",
             f"  RRS with {k} i.i.d. draft{'s' if k > 1 else ''} reaches at least rho_{k} * "
             "alpha* on every p, q (Baliga et al.)",
             "derivation:"]
    lines += [f"  {line}" for line in r.derivation]
    if r.argmax is None:
        lines.append("maximiser: every a in [0, 1] (f = 0); no tight instance is needed: "
                     "one draft's RRS is the optimal one-draft rule")
        return "\n".join(lines)
    inst_engine = _checked(k)
    inst = tight_instance(k)
    in_field = "" if isinstance(inst_engine.a, Fraction) else f" in Q(a_{k})"
    if inst_engine.interpreter == "paths":
        how = f"exact enumeration{in_field} of {inst_engine.paths} paths"
    else:
        how = f"merged-state enumeration{in_field}, {inst_engine.paths} histories"
    optimum_how = ("closed form, brute force, max flow; a lossless coupling with acceptance 1"
                   if isinstance(inst_engine.a, Fraction)
                   else f"a lossless coupling with acceptance 1; min-cut formula in Q(a_{k})")
    lines += [
        f"maximiser: a_{k} = {_text(r.argmax)} ({float(r.argmax.evalf(30)):.15g})",
        f"tight instance: q = (1 - a, a), p = (1 - a^{k}, a^{k}) at a = a_{k}",
        f"  q = ({_text(inst.q[0])}, {_text(inst.q[1])})",
        f"  p = ({_text(inst.p[0])}, {_text(inst.p[1])})",
        f"  RRS acceptance = {_text(inst.rrs)} (engine: {how}, "
        f"{'lossless' if inst_engine.lossless else 'LOSSY'})",
        f"  alpha* = {_text(inst.alpha_star)} ({optimum_how})",
        f"  ratio = {_text(inst.ratio)} = rho_{k}: checked",
    ]
    return "\n".join(lines)
