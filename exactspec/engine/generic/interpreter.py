"""The vocabulary-generic interpreter's run and proof: the sampler, one run of a case, and
the loop over cases.

:class:`GenericSampler` draws from the rest one branch per class (the drawn token a
:class:`~.values.DrawnToken` with symbols of its own); :func:`_run`
goes through every path of the method in one case by the engine's depth-first walk
(:func:`exactspec.engine.driver.depth_first`, the method called as user code), summing each
path's weight over the drawn rest tokens (:func:`_aggregate_weight`).  :func:`prove_generic`
runs the cases, splitting one when a run needs a sign the case leaves open, and judges each
finished one (:mod:`exactspec.engine.generic.closed_forms`) into a :class:`GenericProof`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import sympy

from ...core.errors import InvalidInput, NotExact
from ..driver import depth_first
from ..exact import ExactSampler
from ..symbolic import CURRENT, NeedCase, SymbolicValue, InfeasibleCase, as_sympy, overall_verdict
from .cases import GenericCase, cone_signs
from .closed_forms import judge, ring_fraction, zero_on_case
from .replay import evaluate
from .values import (TOKEN, KAPPA, PI, ClassEntry, ClassLabel, DistinguishedEntry, DrawnToken,
                     NeedClassSplit, NotGeneric, Token, draw_symbols, is_zero_constant, plain)

__all__ = ["GenericSampler", "GenericProof", "prove_generic"]


# -- the sampler ------------------------------------------------------------------------------
class GenericSampler(ExactSampler):
    """The exact sampler over a generic vocabulary: a draw from the rest is one branch per
    class, whose token is a :class:`DrawnToken` with its own symbols."""

    def __init__(self, case: GenericCase):
        super().__init__()
        self.case = case

    def _reset(self):
        super()._reset()
        self._draws = 0
        if hasattr(self, "case"):
            self.case.draw_class = {}

    def draw(self, dist, what: str = "draw"):
        case = self.case
        options = []
        for lab, pr in zip(dist.labels, dist.probs):
            if isinstance(lab, ClassLabel):
                if is_zero_constant(pr):
                    continue
                if not isinstance(pr, ClassEntry) or pr.owner != lab:
                    raise NotGeneric(f"{what}: the entry of class {lab.name} is not a per-token "
                                     "expression")
                s = case.class_sign(lab, pr.expr)
                if s < 0:
                    raise InvalidInput(f"{what}: negative probability {pr.expr} on class "
                                       f"{lab.name}")
                if s == 0:
                    continue
                token = DrawnToken(lab, self._draws)
                weight = SymbolicValue(pr.expr.xreplace({PI: token.p_sym, KAPPA: token.q_sym}))
                options.append((token, weight, f"{what} {token}"))
            elif isinstance(lab, DrawnToken):
                raise NotGeneric("a vector indexed by a drawn rest token")
            else:
                value = plain(pr)
                if value < 0:
                    raise InvalidInput(f"{what}: negative probability {value} on token {lab}")
                if value != 0:
                    options.append((lab, value, f"{what} {lab}"))
        token = self._choose(what, options)
        if isinstance(token, DrawnToken):
            case.draw_class[self._draws] = token.cls
            for z in self.drafted:
                if isinstance(z, DrawnToken) and z.cls == token.cls and dist[z] == 0:
                    token.excluded.add(z.ident)
        self._draws += 1
        return token

    def drafts(self, q, k: int, replace: bool = True) -> tuple:
        if not replace:
            raise NotGeneric("drafts without replacement: the law of a later draft depends on "
                             "which rest token was drawn before (q(x) / (1 - q(x_1))), which no "
                             "aggregate of the rest determines")
        return tuple(self.draft(q, f"draft{i + 1}") for i in range(k))

    def coin(self, prob, what: str = "coin") -> bool:
        return super().coin(plain(prob), what)

    def uniform(self):
        raise NotGeneric("explicit uniforms and inverse-CDF picks depend on the order of the "
                         "tokens of the rest")

    def pick(self, dist, u, what: str = "pick"):
        raise NotGeneric("inverse-CDF picks depend on the order of the tokens of the rest")


def _aggregate_weight(weight, draw_class: dict, case: GenericCase):
    """The path weight summed over the rest tokens drawn on the path (multilinear check)."""
    weight = as_sympy(weight)
    key = (weight, tuple(sorted((i, c.name) for i, c in draw_class.items())))
    known = case._weights.get(key)
    if known is None:
        known = case._weights[key] = _aggregate_weight_of(weight, draw_class, case)
    return known


def _aggregate_weight_of(weight, draw_class: dict, case: GenericCase):
    if weight.is_Number:
        return weight
    gens = sorted(weight.free_symbols, key=str)
    ring = sympy.polys.rings.ring(gens, sympy.QQ)[0]
    num, den = ring_fraction(weight, ring, {})
    num, den = num.cancel(den)
    for i, cls in draw_class.items():
        p_sym, q_sym = draw_symbols(i)
        for sym in (p_sym, q_sym):
            if sym in weight.free_symbols and den.degree(gens.index(sym)) > 0:
                raise NotGeneric(f"a path weight {weight} is not linear in the drawn rest "
                                 f"token x{i}: the sum over the rest is not an aggregate")
        indices = [gens.index(sym) for sym in (p_sym, q_sym) if sym in weight.free_symbols]
        if any(sum(m[j] for j in indices) != 1 for m in num.monoms()):
            raise NotGeneric(f"a path weight {weight} is not linear in the drawn rest token "
                             f"x{i}: the sum over the rest is not an aggregate")
    expr = num.as_expr() / den.as_expr()
    if expr.free_symbols & TOKEN:
        raise NotGeneric(f"a class entry's expression reached a path weight: {expr}")
    substitution = {}
    for i, cls in draw_class.items():
        p_sym, q_sym = draw_symbols(i)
        P, Q = case.aggregates(cls)
        substitution.update({p_sym: P, q_sym: Q})
    return expr.xreplace(substitution)


@dataclass
class _Run:
    law: dict
    rest: Any
    explicit: Any
    total: Any
    in_drafts: Any        # P(Y in X), or None when the engine cannot tell
    paths: int


def _run(method, case: GenericCase, k: int, reverse: bool = False) -> _Run:
    p, q = _vectors(case, reverse)
    s = GenericSampler(case)
    law = {t: sympy.Integer(0) for t in case.names}
    sums = {"rest": sympy.Integer(0), "explicit": sympy.Integer(0),
            "total": sympy.Integer(0), "in_drafts": sympy.Integer(0)}

    def leaf(s, y):
        w = _aggregate_weight(s.weight, s.case.draw_class, case)
        sums["total"] += w
        if isinstance(y, DrawnToken):
            sums["rest"] += w
        elif isinstance(y, str) and y in case.names:
            law[str(y)] += w
        else:
            raise NotGeneric(f"the method returned {y!r}, which is neither a distinguished "
                             "token nor a token drawn from the rest")
        if s.did_accept and s.accepted_token is y:
            sums["explicit"] += w
        if sums["in_drafts"] is not None:
            hit = _in_drafts(y, s.drafted)
            if hit is None:
                sums["in_drafts"] = None
            elif hit:
                sums["in_drafts"] += w

    count = depth_first(s, lambda s: method(s, p, q, k), leaf, differs=_replay_differs)
    rest, explicit, total, in_drafts = (sums[key] for key in
                                        ("rest", "explicit", "total", "in_drafts"))
    return _Run(law, rest, explicit, total, in_drafts, count)


def _replay_differs(s) -> InvalidInput:
    return InvalidInput("the method made different random choices on a replay")


def _in_drafts(y, drafted):
    """Whether ``y`` is one of the drafts: True, False, or None (undetermined)."""
    for z in drafted:
        if z is y:
            return True
    for z in drafted:
        if isinstance(y, DrawnToken) and isinstance(z, DrawnToken) and z.cls == y.cls \
                and z.ident not in y.excluded:
            return None
        if not isinstance(y, DrawnToken) and not isinstance(z, DrawnToken) and str(z) == str(y):
            return True
    return False


# -- the driver -------------------------------------------------------------------------------
@dataclass
class _Stub:
    """A combination of sub-classes contradicted outright by an earlier numeric fact."""

    path: tuple
    parent: Any

    def conditions(self):
        return self.parent.conditions() + ["a sub-class combination contradicting a fact"]



@dataclass
class GenericProof:
    """The verdict for every vocabulary size.

    ``outside`` is the reason the method left the abstraction (:class:`~.values.NotGeneric`),
    or None.
    ``proved`` means ``law(t) = target(t)`` (and the acceptance, when asked) in every case.
    """

    method: str
    k: int
    names: tuple
    cases: list
    infeasible: list
    outside: str | None = None
    runs: int = 0
    seconds: float = 0.0
    stuck: str | None = None
    reference: str | None = None    # ``module:function``, for the checker's replay

    @property
    def verdict(self) -> str:
        if self.outside is not None:
            return "outside"
        if self.stuck is not None:
            return "undecided"
        return overall_verdict(self.cases)

    def law_at(self, p, q, t, positions=None):
        """The generic closed form of ``law(t)`` evaluated on a concrete instance.

        The rest (every token but ``t``) is classified by replaying the splits of the proof;
        returns ``(case_result, law_value, acceptance_value)`` with exact ``Fraction`` values.
        """
        return evaluate(self, p, q, t)


def prove_generic(method, k: int = 1, *, names=("t",), expected_law: Callable | None = None,
                  expected_acceptance: Callable | None = None, witnesses: int = 2,
                  max_cases: int = 4000, name: str | None = None) -> GenericProof:
    """Prove ``law(t) = p(t)`` for every vocabulary size, or refute it, case by case.

    ``expected_law(p, q, k)`` (default ``p``) and ``expected_acceptance(p, q, k)`` run inside
    each case over the same instrumented vectors.  A method that leaves the abstraction gives
    a proof with ``verdict == "outside"`` and the reason in ``outside``.

    >>> from exactspec.methods.naive import naive
    >>> proof = prove_generic(naive)
    >>> proof.verdict, sorted({str(c.law["t"]) for c in proof.cases})
    ('refuted', ['0', 'q_t'])
    """
    import time

    run = getattr(method, "run", method)
    label = name or getattr(method, "name", None) or getattr(method, "__name__", "method")
    names = tuple(str(t) for t in names)
    start = time.perf_counter()
    pending = [GenericCase(names, (("R", ()),), {}, ())]
    done, infeasible = [], []
    runs = 0
    while pending:
        case = pending.pop()
        runs += 1
        if runs > max_cases:
            raise InvalidInput(f"more than {max_cases} generic cases: too large to prove")
        if not case.inner.feasible_with():
            infeasible.append(case)
            continue
        token = CURRENT.set(case)
        try:
            result = _run(run, case, k)
            if len(case.classes) > 1:
                # the order check: the classes in reverse order must give the same laws (a
                # sum over part of the rest, a prefix in slot order, would not)
                again = _run(run, case, k, reverse=True)
                for t in names:
                    if not zero_on_case(case, again.law[t] - result.law[t], {}):
                        raise NotGeneric("the law changes with the order of the classes of "
                                         "the rest: the method depends on token order (for "
                                         "example a sum over part of the rest)")
            target = _target(expected_law, case, k)
            want = _expected_acceptance(expected_acceptance, case, k)
        except NeedCase as need:
            for s in (-1, 0, 1):
                child = case.with_fact(need.atom, s)
                if s in need.signs:
                    pending.append(child)
                else:
                    child.pruned_by = [b for b in case.balances if b["atom"] == str(need.atom)]
                    infeasible.append(child)
            continue
        except NeedClassSplit as need:
            feasible = cone_signs(dict(need_facts(case, need.cls)), need.atom)
            signs = (-1, 0, 1) if feasible is None else tuple(feasible)
            pending.append(case.split(need.cls.name, need.atom, signs))
            continue
        except InfeasibleCase:
            infeasible.append(case)
            continue
        except (NotGeneric, NotExact) as err:
            return GenericProof(label, k, names, [], [], outside=str(err), runs=runs,
                                seconds=time.perf_counter() - start)
        except (InvalidInput, ZeroDivisionError):
            # The path may exist only for tokens of a class that is empty here: split on
            # the emptiness of the classes drawn on it; a real error recurs when all are
            # non-empty.
            maybe_empty = [c.name for c in case.draw_class.values()
                           if c.name not in case.nonempty]
            if not maybe_empty:
                import sys as _sys
                err = _sys.exc_info()[1]
                return GenericProof(label, k, names, done, infeasible, runs=runs,
                                    seconds=time.perf_counter() - start,
                                    stuck=f"a case the linear pruning cannot rule out ends in "
                                          f"an error of the method ({err}); conditions: "
                                          f"{case.conditions()}")
            for empty in (True, False):
                try:
                    pending.append(case.with_emptiness(maybe_empty[0], empty))
                except InfeasibleCase:
                    infeasible.append(_Stub(case.path + (("empty", maybe_empty[0], empty),),
                                            case))
            continue
        finally:
            CURRENT.reset(token)
        done.append(judge(case, result, target, want, run, k, witnesses))
    return GenericProof(label, k, names, done, infeasible, runs=runs,
                        seconds=time.perf_counter() - start, reference=_reference(method))


def _reference(method) -> str | None:
    """``module:qualname`` of a module-level function (a registered method is named by its
    registry name instead), so that the checker can import it to replay the witnesses."""
    if hasattr(method, "name") or not callable(method):
        return None
    module, qualname = getattr(method, "__module__", None), getattr(method, "__qualname__", "")
    if module and qualname and "<" not in qualname and module != "__main__":
        return f"{module}:{qualname}"
    return None


def need_facts(case, cls):
    return dict(case.classes)[cls.name]


def _vectors(case, reverse: bool = False):
    from ...core.dist import Dist

    classes = case.class_labels[::-1] if reverse else case.class_labels
    labels = tuple(Token(t) for t in case.names) + classes
    pv = [DistinguishedEntry(labels[i], case.token_symbols[t][0])
          for i, t in enumerate(case.names)] + [ClassEntry(c, PI) for c in classes]
    qv = [DistinguishedEntry(labels[i], case.token_symbols[t][1])
          for i, t in enumerate(case.names)] + [ClassEntry(c, KAPPA) for c in classes]
    return Dist(pv, labels, check=False, name="p"), Dist(qv, labels, check=False, name="q")


def _target(expected_law, case, k):
    p, q = _vectors(case)
    dist = expected_law(p, q, k) if expected_law else p
    return {t: as_sympy(plain(dist[Token(t)])) for t in case.names}


def _expected_acceptance(expected_acceptance, case, k):
    if expected_acceptance is None:
        return None
    p, q = _vectors(case)
    return as_sympy(plain(expected_acceptance(p, q, k)))

