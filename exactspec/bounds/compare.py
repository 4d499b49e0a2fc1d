"""Every method side by side against the optimum of its own draft law; the optimum report.

:func:`compare` gives the ``exactspec compare --json`` object (and
:func:`~exactspec.optimum.checks.optimal_report`, kept here by name, the ``exactspec optimal
--json`` object: docs/json.md#optimal).  :func:`exact_verification` proves one
method on one instance with the plain enumeration when it fits, and otherwise with the
merged-state interpreter (:mod:`exactspec.engine.merged`) when the method has a stepped form.

>>> from exactspec.core.dist import Dist
>>> p, q = Dist.parse("1/2,3/10,1/5", labels="abc"), Dist.parse("1/5,1/5,3/5", labels="abc")
>>> out = compare(p, q, 2, methods=["rrs", "optimal"])
>>> out["alpha_star"], out["a_star"]
('21/25', {'a': '9/25', 'b': '7/25', 'c': '1/5'})
>>> [(m["method"], m["acceptance"], m["optimum"], m["ratio_to_optimal"]) for m in out["methods"]]
[('rrs', '19/25', '21/25', '19/21'), ('optimal', '21/25', '21/25', '1')]
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..core.dist import exact_str
from ..routes.merged import PLAIN_PATHS
from ..core.errors import InvalidInput, NotExact, TooLarge, Undecided
from ..methods import METHODS, get_method
from ..optimum.alpha_star import law_pair, optimum
from ..optimum.checks import optimal_report

__all__ = ["compare", "optimal_report", "exact_verification", "draft_law_optimum",
           "PLAIN_PATHS", "COMPARE_MAX_PATHS", "COMPARE_MAX_SECONDS", "COMPARE_MAX_PLAN",
           "COMPARE_MAX_MERGED_PATHS"]


#: The largest enumeration ``compare`` runs per method (plain or merged transitions).
COMPARE_MAX_PATHS = 2_000_000

#: The largest number of estimated paths ``compare`` counts through merged states whose number
#: is not bounded in advance (``Stepped.paths_budget``: key, key-lazy; about 10 us per path).
COMPARE_MAX_MERGED_PATHS = 1_000_000

#: The most estimated seconds of one method's plain enumeration that ``compare`` runs
#: (estimated paths times the median seconds of one path).
COMPARE_MAX_SECONDS = 20.0

#: The largest work a method does once before its first path that ``compare`` runs
#: (:attr:`~exactspec.methods.base.Method.plan_size`: ``optimal``'s draft multisets, whose
#: exact max flow takes about a quarter of a millisecond each).
COMPARE_MAX_PLAN = 20_000


def exact_verification(method, p, q, k: int = 1, *, max_paths: int | None = 10**7,
                       plain_paths: int = PLAIN_PATHS, max_seconds: float | None = None,
                       max_merged_paths: int | None = None):
    """Prove ``method`` on ``(p, q, k)``: a :class:`~exactspec.verify.Verification`.

    The planner chooses the route (:mod:`exactspec.routes.merged`): the plain enumeration (the
    reference semantics) runs when its estimated number of paths is at most ``plain_paths``
    (or the stepped form's own smaller ``plain_paths``) and its estimated seconds at most
    ``max_seconds``, or the method declares no stepped form
    (:attr:`~exactspec.methods.base.Method.steps`); otherwise the merged-state interpreter
    runs the stepped form, which counts paths instead of listing them.
    Raises :class:`TooLarge` above ``max_paths`` (plain paths, or merged states), a plain
    enumeration estimated above ``max_seconds``, and merged states not bounded in advance
    (``paths_budget``) for more than ``max_merged_paths`` estimated paths.

    >>> from exactspec.core.dist import Dist
    >>> p = Dist([Fraction(1, 32)] * 16 + [Fraction(1, 16)] * 8)
    >>> q = Dist([Fraction(1, 24)] * 24)
    >>> r = exact_verification("rrs", p, q, 6)
    >>> r.lossless, r.enumeration.paths > 10**8, type(r.enumeration).__name__
    (True, True, 'MergedEnumeration')
    """
    from ..routes import plan
    from ..verify import Verification, as_k, checked, request_of

    k = as_k(k)
    m, p, q = checked(method, p, q, k)
    answer = plan(request_of(m, p, q, k, max_paths=max_paths, max_seconds=max_seconds,
                             merged_states=True, plain_paths=plain_paths,
                             max_merged_paths=max_merged_paths))
    return Verification(m, p, q, k, answer.enumeration, route=answer.route,
                        declined=answer.declined)


def draft_law_optimum(p, q, k: int, law: str) -> Fraction:
    """The optimum of a lossless verifier drafting ``k`` drafts from ``q`` under ``law``:
    ``alpha*`` (closed form) for ``"iid"``, SpecHub's closed form for ``"hub"``, and the
    brute-force cut (falling back to the exact max flow) for ``"wor"``.  At ``k = 1`` every
    law is one draft from ``q``."""
    from ..optimum.draft_laws import draft_law
    from ..optimum.alpha_star import alpha_star_max_flow

    if k == 1 or law == "iid":
        return optimum(p, q, k).alpha_star
    dl = draft_law(law)
    dl.check(q, k)
    if law == "hub":
        return dl.optimum(p, q, k)
    try:
        return dl.optimum(p, q, k)
    except TooLarge:
        return alpha_star_max_flow(p, q, k, law)


def _too_large(entry: dict, reason: str, estimate) -> dict:
    """A method over its budget of exact work: ``null`` values, the reason and the estimate
    (the engine's advice to insist names ``verify``: ``compare`` takes no ``--max-paths``)."""
    reason = reason.replace("--max-paths N to insist",
                            f"exactspec verify {entry['method']} --max-paths N to insist")
    entry.update({"lossless": None, "verdict": None, "acceptance": None,
                  "acceptance_float": None, "optimum": None, "ratio_to_optimal": None,
                  "skipped": reason, "estimate": estimate})
    return entry


def _method_entry(m, p, q, k, optima: dict, max_paths: int,
                  max_seconds: float | None = COMPARE_MAX_SECONDS,
                  max_plan: int | None = COMPARE_MAX_PLAN,
                  max_merged_paths: int | None = COMPARE_MAX_MERGED_PATHS) -> dict:
    entry: dict[str, Any] = {"method": m.name, "draft_law": m.draft_law,
                             "group": "lossless" if m.claimed_lossless else "lossy-by-design"}
    if m.plan_size is not None and max_plan is not None:
        size, what = m.plan_size(p, q, k)
        if size > max_plan:
            return _too_large(entry, f"too large to prove exactly: {m.name}: about {size:,} "
                              f"{what}, over the compare budget of {max_plan:,}", size)
    try:
        m.check(p, q, k)
    except TooLarge as err:
        return _too_large(entry, str(err), err.estimate)
    except (InvalidInput, NotExact) as err:
        entry["skipped"] = str(err)
        return entry
    try:
        result = exact_verification(m, p, q, k, max_paths=max_paths, max_seconds=max_seconds,
                                    max_merged_paths=max_merged_paths)
    except TooLarge as err:
        return _too_large(entry, f"too large to prove exactly: {err}", err.estimate)
    except Undecided as err:
        entry["skipped"] = f"undecided: {err}"
        return entry
    acceptance = result.acceptance
    entry["lossless"] = result.lossless
    entry["verdict"] = result.verdict   # exact arithmetic, ideal uniforms: lossy-logic if lossy
    entry["acceptance"] = exact_str(acceptance)
    entry["acceptance_float"] = float(acceptance)
    explicit = result.explicit_acceptance
    if result.enumeration.used_accept and explicit != acceptance:
        entry["explicit_acceptance"] = exact_str(explicit)
        entry["explicit_acceptance_float"] = float(explicit)
    law = m.draft_law if k > 1 else "iid"
    if law not in optima:
        try:
            optima[law] = draft_law_optimum(p, q, k, law)
        except (TooLarge, InvalidInput) as err:
            optima[law] = err
    best = optima[law]
    if isinstance(best, Exception):
        entry["optimum"] = None
        entry["optimum_skipped"] = str(best)
        entry["ratio_to_optimal"] = None
    else:
        entry["optimum"] = exact_str(best)
        entry["optimum_float"] = float(best)
        ratio = acceptance / best if best != 0 else None
        entry["ratio_to_optimal"] = None if ratio is None else exact_str(ratio)
        entry["ratio_to_optimal_float"] = None if ratio is None else float(ratio)
    entry["paths"] = result.paths
    if hasattr(result.enumeration, "states"):
        entry["engine"] = "merged"      # paths counted through merged states, not listed
        entry["states"] = result.enumeration.states
        entry["stepped_form"] = result.enumeration.form
    if m.name == "kseq":
        from ..methods.kseq import rho_star

        entry["rho"] = rho_star(p, q, k).to_json()
    if not result.lossless:
        entry["differs"] = [str(lab) for lab in result.differs]
    if not result.lossless or not m.claimed_lossless:
        entry["bias"] = exact_str(result.bias)
        entry["bias_float"] = float(result.bias)
    return entry


def compare(p, q, k: int = 1, methods=None, *, max_paths: int = COMPARE_MAX_PATHS,
            max_seconds: float | None = COMPARE_MAX_SECONDS,
            max_plan: int | None = COMPARE_MAX_PLAN,
            max_merged_paths: int | None = COMPARE_MAX_MERGED_PATHS) -> dict:
    """Every method (default: every registered one) on ``(p, q, k)``: verdict, ``P(Y in X)``
    (and the explicit acceptance where it differs), the optimum of the method's own draft law
    and the ratio to it; or ``skipped`` with the reason.  The ``compare --json`` object.

    Each method's exact work is sized up front: more than ``max_paths`` estimated paths (or
    merged states), more than ``max_merged_paths`` estimated paths counted through merged
    states not bounded in advance (key, key-lazy), a plain enumeration estimated at more
    than ``max_seconds`` (a method with merged states runs those instead), or one-time
    work (``Method.plan_size``, ``optimal``'s draft multisets) over ``max_plan``, and the
    entry has ``lossless``, ``acceptance``, ``optimum`` and ``ratio_to_optimal`` ``null``,
    ``skipped`` with the reason and ``estimate`` (the estimated size, a number, or ``null``
    where none was formed); the other methods are computed as usual.

    Each entry's ``verdict`` is ``"lossless"`` or ``"lossy-logic"`` (exact arithmetic, ideal
    uniforms; ``null`` where ``lossless`` is).  Each entry's ``group`` is ``"lossless"``
    (claimed lossless: the verdict tests the claim) or ``"lossy-by-design"``
    (``claimed_lossless=False``: typical acceptance, greedy, top-k, top-p, naive, top1); the
    latter always carry ``bias``, the exact ``TV(output law, p)``.

    Exact values are lowest-terms strings; floats only under keys ending ``_float``.
    """
    p, q = law_pair(p, q)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInput(f"k={k}: need at least one draft")
    opt = optimum(p, q, k)
    names = list(METHODS) if methods is None else list(methods)
    optima: dict = {"iid": opt.alpha_star}
    entries = [_method_entry(get_method(name), p, q, k, optima, max_paths, max_seconds,
                             max_plan, max_merged_paths) for name in names]
    return {
        "k": k,
        "labels": [str(lab) for lab in p.labels],
        "target": p.to_json(),
        "draft": q.to_json(),
        "alpha_star": exact_str(opt.alpha_star),
        "alpha_star_float": float(opt.alpha_star),
        "a_star": opt.a_star.to_json(),
        "methods": entries,
    }


