"""``rho_K`` for large ``K``, answered from the closed form instead of a fresh derivation.

For ``K`` above :data:`DERIVE_MAX_K` the per-``K`` derivation (sympy solving
``K = (2K-1) a^(K-1)``) and the engine run of the tight instance grow with ``K``; the closed
form of :func:`~exactspec.bounds.rho.closed_form.rho_closed_form`, proved once for every real
``k > 1``, is evaluated at ``k = K`` instead:
``rho_K = 1 - ((K-1)/(2K-1)) (K/(2K-1))^(K/(K-1))`` with maximiser
``a_K = (K/(2K-1))^(1/(K-1))``.

>>> r = rho_large_report(1000)
>>> r["rho"]
'-999000*10**(1/333)*1999**(998/999)/7988005999 + 1'
>>> round(r["rho_float"], 12), r["source"]
(0.750173337542, 'closed form')
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from .closed_form import check_k, rho_closed_form

__all__ = ["DERIVE_MAX_K", "rho_large_report", "rho_large_text"]

DERIVE_MAX_K = 64
#: ``K`` is read up to this many digits: sympy's 30-digit evaluation of the closed form takes
#: about a second at 1,000 digits and grows with them (16 s at 5,000), while ``rho_K`` is
#: within ``1/K`` of its limit ``3/4`` already at 100.
MAX_K_DIGITS = 1000


def _values(k: int):
    from ...core.budget import digits_of_bits
    from ...core.errors import TooLarge

    k = check_k(k)
    if k >= 10**MAX_K_DIGITS:
        digits = digits_of_bits(k.bit_length())
        raise TooLarge(f"rho: k has about {digits:,} digits, over the budget of {MAX_K_DIGITS:,} "
                       "(the closed form's exact value grows with them; rho_k is within 1/k "
                       "of its limit 3/4)", estimate=digits, budget=MAX_K_DIGITS)
    closed = rho_closed_form()
    value = closed.rho.subs(closed.k, k)
    argmax = closed.argmax.subs(closed.k, k)
    return k, value, argmax, closed


def rho_large_report(k: int) -> dict:
    """The ``exactspec rho K --json`` object for large ``K``: ``k``, ``rho``, ``rho_float``,
    ``argmax``, ``argmax_float``; ``tight_instance`` is ``None`` (not re-run) and ``source``
    says where the value comes from."""
    k, value, argmax, _ = _values(k)
    out: dict[str, Any] = {
        "k": k,
        "rho": str(value),
        "rho_float": float(sp.N(value, 30)),
        "argmax": str(argmax),
        "argmax_float": float(sp.N(argmax, 30)),
        "tight_instance": None,
        "source": "closed form",
    }
    return out


def rho_large_text(k: int) -> str:
    """The human output of ``exactspec rho K`` for large ``K``."""
    k, value, argmax, closed = _values(k)
    lines = [f"rho_{k} = {value} ({float(sp.N(value, 30)):.15g})",
             f"  RRS with {k} i.i.d. drafts reaches at least rho_{k} * alpha* on every p, q",
             f"from the closed form, proved once for every real k > 1 (K = {k} is above "
             f"{DERIVE_MAX_K}, where the per-K derivation and the engine run of the tight "
             "instance are skipped):"]
    lines += [f"  {line}" for line in closed.derivation]
    lines.append(f"maximiser: a_{k} = {argmax} ({float(sp.N(argmax, 30)):.15g})")
    return "\n".join(lines)
