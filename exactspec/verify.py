"""Prove or refute a method on one instance: exact output law, verdict, acceptance.

>>> from exactspec import Dist
>>> p, q = Dist.parse("1/2,1/2"), Dist.parse("3/4,1/4")
>>> r = verify("naive", p, q)
>>> r.lossless, r.law_dist()
(False, Dist({0: 3/4, 1: 1/4}))
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from .core.dist import Dist, exact_str, total_variation
from .engine.exact import DEFAULT_MAX_PATHS, Enumeration
from .core.errors import InvalidInput
from .methods import Method, get_method
from .routes import Request, plan
from .verdict import VERDICTS, verdict_of

__all__ = ["Verification", "verify", "simulate", "certificate_of", "certificate_paths",
           "verify_to_certificate", "VERDICTS", "verdict_of", "request_of", "checked",
           "is_user_method", "as_k"]

@dataclass
class Verification:
    """The exact verdict of one method on one instance ``(p, q, k)``.

    ``lossless`` is True when the output law equals ``p`` exactly.  ``acceptance`` is
    ``P(Y in X)``; ``explicit_acceptance`` the probability of an explicit accept.  ``differs``
    lists the labels where the output law differs from ``p``.  ``verdict`` is one word of
    :data:`VERDICTS`: a lossy run on a grid or in a float format is compared with the same
    method in exact arithmetic with ideal uniforms (and on the grid alone), run on demand.
    """

    method: Method
    p: Dist
    q: Dist
    k: int
    enumeration: Enumeration
    grid: int | None = None
    arith: str | None = None        # the float format the method's arithmetic ran in
    sum_order: str | None = None    # the declared order of its long float sums (under arith)
    route: str = "paths"            # the route that enumerated it (exactspec.routes.planner)
    declined: dict = field(default_factory=dict)   # the routes tried before, and why not

    @property
    def law(self) -> dict:
        return self.enumeration.law

    def law_dist(self) -> Dist:
        """The output law as a :class:`Dist`."""
        return Dist([self.law[lab] for lab in self.p.labels], self.p.labels, check=False)

    @property
    def lossless(self) -> bool:
        return not self.differs

    @property
    def differs(self) -> list:
        """The labels where the output law differs from ``p`` (computed once per law)."""
        law = self.law
        cached = self.__dict__.get("_differs")
        if cached is None or cached[0] is not law:
            cached = self.__dict__["_differs"] = (
                law, [lab for lab, target in zip(self.p.labels, self.p.probs)
                      if not _equal(law[lab], target)])
        return list(cached[1])

    @property
    def acceptance(self):
        return self.enumeration.acceptance

    @property
    def explicit_acceptance(self):
        return self.enumeration.explicit_acceptance

    @property
    def paths(self) -> int:
        return self.enumeration.paths

    @property
    def floats_converted(self) -> int:
        """Float values the method's exact arithmetic met and took at their exact binary value
        (float literals mixed with probabilities, floats handed to the sampler), over every
        path: the verdict is about the program with those exact values."""
        return getattr(self.enumeration, "floats", 0)

    @property
    def bias(self):
        """``TV(output law, p)``: 0 exactly when lossless."""
        return total_variation(self.law_dist(), self.p)

    @property
    def verdict(self) -> str:
        """``"lossless"``, ``"lossy-grid"``, ``"lossy-rounding"`` or ``"lossy-logic"``
        (:func:`verdict_of`); a lossy run with a grid or a float format runs its ideal twin."""
        if self.lossless:
            return "lossless"
        if self.grid is None and self.arith is None:
            return "lossy-logic"
        cached = self.__dict__.get("_verdict")
        if cached is None:
            ideal = verify(self.method, self.p, self.q, self.k, max_paths=None)
            same = None
            if self.arith is not None and ideal.lossless:
                from .engine.floats import get_format

                grid = self.grid if self.grid is not None else get_format(self.arith).grid
                try:
                    on_grid = verify(self.method, self.p, self.q, self.k, grid=grid,
                                     max_paths=None)
                    same = all(_equal(self.law[t], on_grid.law[t]) for t in self.p.labels)
                except TypeError:       # irrational thresholds on a grid
                    same = None
            cached = self.__dict__["_verdict"] = verdict_of(
                False, ideal.lossless, rounded=self.arith is not None, same_as_grid=same)
        return cached

    def to_json(self) -> dict:
        """The ``verify --json`` object (docs/json.md#verify)."""
        target = self.p.to_json()
        out: dict[str, Any] = {
            "method": self.method.name,
            "k": self.k,
            "labels": [str(lab) for lab in self.p.labels],
            "target": target,
            "output": self._output_json(target),
            "lossless": self.lossless,
            "verdict": self.verdict,
            "acceptance": exact_str(self.acceptance),
            "acceptance_float": float(self.acceptance),
        }
        if self.enumeration.used_accept and self.explicit_acceptance != self.acceptance:
            out["explicit_acceptance"] = exact_str(self.explicit_acceptance)
        out["paths"] = self.paths
        out["route"] = self.route
        form = getattr(self.enumeration, "form", "")
        if form:                        # merged states: the stepped form that ran
            out["stepped_form"] = form
        out["declined"] = dict(self.declined)
        out["floats_converted"] = self.floats_converted
        shipped = shipped_of(self.method)
        if shipped:
            out["shipped"] = shipped
        if not self.lossless:
            out["differs"] = [str(lab) for lab in self.differs]
        out["bias"] = "0" if self.lossless else exact_str(self.bias)
        if self.grid is None and self.arith is None:   # this run is the ideal one
            out["bias_exact_arith"] = out["bias"]
            out["bias_grid_only"] = None
        return out

    def _output_json(self, target: dict) -> dict:
        """The output law as text: the target's (``target``) when lossless in rationals."""
        law = self.law
        if self.lossless and all(type(v) is Fraction for v in law.values()):
            return dict(target)
        return {str(lab): exact_str(law[lab]) for lab in self.p.labels}

    def certificate(self) -> dict:
        """Every path with its branch probabilities and output, for the independent checker."""
        return certificate_of(self)


def certificate_of(result: Verification) -> dict:
    """The certificate of a :class:`Verification` made with ``keep_paths=True``."""
    return certificate_paths(result.enumeration, result.p, result.q,
                             method=method_reference(result.method), k=result.k,
                             grid=result.grid, arith=result.arith,
                             sum_order=result.sum_order)


def method_reference(method: Method) -> str:
    """A name the independent checker can import the method by, to replay the paths: the
    registry name, ``file.py:function`` / ``module:function``, or the module-level function's
    ``module:qualname``; the bare name when none of these exists."""
    from .methods import METHODS

    if METHODS.get(method.name) is method or ":" in method.name:
        return method.name
    run = method.run
    target = getattr(run, "__defaults__", None) and run.__defaults__[-1]
    function = target if callable(target) and getattr(run, "__name__", "") == "run" else run
    module, qualname = getattr(function, "__module__", None), getattr(function, "__qualname__", "")
    if module and qualname and "<" not in qualname and module != "__main__":
        return f"{module}:{qualname}"
    return method.name


def _path_json(path) -> dict:
    return {"branches": [[kind, what, exact_str(prob)] for kind, what, prob in path.branches],
            "probability": exact_str(path.weight),
            "output": str(path.output),
            "drafts": [str(x) for x in path.drafts],
            "accepted": bool(path.accepted),
            "choices": [[i, [exact_str(a) for a in alts]] for i, alts in path.choices]}


def _summary_json(enumeration, p: Dist) -> dict:
    lossless = all(enumeration.law[lab] == p[lab] for lab in p.labels)
    return {"claim": "lossless" if lossless else "law",
            "law": {str(lab): exact_str(v) for lab, v in enumeration.law.items()},
            "acceptance": exact_str(enumeration.acceptance)}


def _header_json(p: Dist, q: Dist, method: str, k: int, grid, arith=None,
                 sum_order=None) -> dict:
    labels = [lab if isinstance(lab, (int, str)) and not isinstance(lab, bool) else str(lab)
              for lab in p.labels]
    header = {"kind": "exactspec-certificate", "version": 2, "method": method, "k": k,
              "grid": grid, "labels": labels, "target": p.to_json(), "draft": q.to_json()}
    if arith is not None:
        header["arith"] = arith
        if sum_order is not None:      # the order of its long float sums, for the replay
            header["sum_order"] = sum_order
    return header


def certificate_paths(enumeration: Enumeration, p: Dist, q: Dist, *, method: str = "",
                      k: int = 1, grid: int | None = None, arith: str | None = None,
                      sum_order: str | None = None) -> dict:
    """Every path of an exact enumeration, with its branch probabilities and output, and at
    each branching point the index taken among the alternatives (version 2: enough for the
    checker to replay the path through the method)."""
    paths = enumeration.path_list
    if paths is None:
        raise InvalidInput("a certificate needs the paths: verify(..., keep_paths=True)")
    cert = _header_json(p, q, method, k, grid, arith, sum_order)
    cert.update(_summary_json(enumeration, p))
    cert["paths"] = [_path_json(path) for path in paths]
    return cert


def verify_to_certificate(method, p: Dist, q: Dist, k: int, path, *, grid: int | None = None,
                          max_paths: int | None = DEFAULT_MAX_PATHS,
                          progress: bool | None = None) -> Verification:
    """:func:`verify`, writing the certificate to the file ``path`` path by path as the paths
    are enumerated (memory stays flat however many paths there are).

    >>> import json, os, tempfile
    >>> from exactspec import Dist
    >>> name = os.path.join(tempfile.mkdtemp(), "c.json")
    >>> r = verify_to_certificate("sps", Dist.parse("1/2,1/2"), Dist.parse("1/3,2/3"), 1, name)
    >>> cert = json.load(open(name))
    >>> cert["claim"], cert["acceptance"], len(cert["paths"]) == r.paths
    ('lossless', '5/6', True)
    """
    import json

    k = as_k(k)
    m, p, q = checked(method, p, q, k)
    header = _header_json(p, q, method_reference(m), k, grid)
    try:
        handle = open(path, "w")
    except OSError as err:
        raise InvalidInput(f"cannot write {path}: {err.strerror}") from None
    import os

    try:
        enumeration = _stream_certificate(handle, header, m, p, q, k, grid, max_paths, progress)
    except BaseException:
        handle.close()
        if os.path.isfile(path):
            os.remove(path)      # never leave half a certificate behind
        raise
    return Verification(m, p, q, k, enumeration, grid)


def shipped_of(method: Method) -> list:
    """The functions of installed packages a PyTorch rule runs as shipped (taken by
    ``exactspec.torch_layer.load``): ``[{package, version, module, name, file}, ...]``."""
    rule = method.tensor_rule
    return list(rule.shipped or []) if rule is not None else []


def shipped_lines(method) -> list:
    """One line per function a rule runs as shipped: ``runs transformers.generation.utils:
    _speculative_sampling of transformers 4.46.3 as shipped (.../utils.py)``."""
    return [f"runs {one['module']}:{one['name']} of {one['package']} {one['version']} as "
            f"shipped ({one['file']})" for one in shipped_of(method)]


def draft_law_of(method, arith) -> str | None:
    """``"exact"`` for a PyTorch rule in a float run (``arith``): its draft, the token that
    ``torch.multinomial`` draws from the draft row as the rule received it, has the exact law
    ``q``, while the rows the rule computes with are ``p`` and ``q`` rounded into the format;
    ``None`` otherwise (an exact run, or a rule that draws its draft with ``s.draft``)."""
    if arith is None:
        return None
    return "exact" if method.tensor_rule is not None else None


def draft_law_lines(method, arith) -> list:
    """``["draft law: the exact q (the rows rounded to float32 are what the rule computes
    with)"]`` where :func:`draft_law_of` says so, else ``[]``."""
    if draft_law_of(method, arith) is None:
        return []
    return [f"draft law: the exact q (the rows rounded to {arith} are what the rule computes "
            "with)"]


def _stream_certificate(handle, header, m, p, q, k, grid, max_paths, progress):
    import json

    with handle:
        handle.write(json.dumps(header)[:-1] + ', "paths": [\n')
        first = [True]

        def write(one):
            handle.write(("" if first[0] else ",\n") + json.dumps(_path_json(one)))
            first[0] = False

        request = Request(run=m.run, name=m.name, p=p, q=q, k=k, grid=grid,
                          max_paths=max_paths, progress=progress, user=m.user, on_path=write,
                          tensor_rule=m.tensor_rule)
        enumeration = plan(request).enumeration
        handle.write("\n], " + json.dumps(_summary_json(enumeration, p))[1:] + "\n")
    return enumeration


def verify(method, p: Dist, q: Dist, k: int = 1, *, grid: int | None = None,
           keep_paths: bool = False, max_paths: int | None = DEFAULT_MAX_PATHS,
           progress: bool | None = None, arith: str | None = None,
           max_seconds: float | None = None, sum_order: str | None = None) -> Verification:
    """Run ``method`` exactly on ``(p, q, k)``: output law, verdict and acceptance.

    Parameters
    ----------
    method : str, Method or callable
        A registered name (``"sps"``), ``"file.py:function"``, or a function
        ``f(s, p, q[, k])`` written against the sampling interface.
    grid : int, optional
        Explicit uniforms on the grid ``{0, 1/N, ..., (N-1)/N}`` (a float generator).
    keep_paths : bool
        Keep every path (for :meth:`Verification.certificate` and the tree of paths).
    max_paths : int or None
        Refuse work estimated above this many paths; ``None`` to insist.  A method with a
        stepped form (rrs, rrs-wor, kseq, spechub, key) whose paths are too many to list is
        run with merged states instead (:mod:`exactspec.routes.merged`: the same law,
        acceptances and number of paths), unless ``keep_paths``, ``grid`` or ``arith`` asks
        for the paths themselves, or ``max_paths=None`` insists on the plain enumeration.
    arith : str, optional
        Run the method's arithmetic in a float format (``"float32"``, ``"bfloat16"``,
        ``"float16"``, ``"float64"``; see :mod:`exactspec.engine.float_sampler`): ``p`` and
        ``q`` reach it rounded into the format, uniforms come from the format's generator grid
        (unless ``grid`` says otherwise), and the output law, computed exactly, is compared
        with the exact ``p``.  :func:`exactspec.rounding.split_bias` pairs such a run with
        the exact-arithmetic one.
    max_seconds : float, optional
        Also refuse work estimated above this many seconds (estimated paths times the
        seconds of one path; :func:`~exactspec.engine.exact.enumerate_paths`).
    sum_order : str, optional
        With ``arith``: the order of a PyTorch rule's float sums of more than a few terms
        (``"sequential"``, ``"correctly-rounded"``, ``"torch-avx2"``;
        :mod:`exactspec.engine.float_sums`); without it such sums are refused.

    Examples
    --------
    >>> from exactspec import Dist
    >>> verify("sps", Dist.parse("1/2,1/2"), Dist.parse("1/3,2/3")).acceptance
    Fraction(5, 6)
    >>> r = verify("sps", Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"), arith="float32")
    >>> r.bias
    Fraction(37748737, 1407374883553280)
    """
    k = as_k(k)
    m, p, q = checked(method, p, q, k)
    if sum_order is not None and arith is None:
        raise InvalidInput(f"sum_order={sum_order!r} applies to a float run: give arith "
                           "(--arith float32, ...)")
    if arith is not None:
        from .engine.float_sums import check_sum_order
        from .engine.floats import get_format

        get_format(arith)
        check_sum_order(sum_order)
    # merged states (a stepped method's paths counted, not listed: rrs, kseq, ... at real
    # vocabulary) wherever no path is kept, the uniforms are ideal and no caller insists on
    # the plain enumeration, as on the command line
    merged = not keep_paths and grid is None and arith is None and max_paths is not None
    answer = plan(request_of(m, p, q, k, grid=grid, arith=arith, sum_order=sum_order,
                             keep_paths=keep_paths, max_paths=max_paths, progress=progress,
                             max_seconds=max_seconds, merged_states=merged))
    return Verification(m, p, q, k, answer.enumeration, grid, arith, sum_order,
                        answer.route, answer.declined)


def request_of(m: Method, p: Dist, q: Dist, k: int = 1, **options) -> Request:
    """The planner's :class:`~exactspec.routes.request.Request` for method ``m`` on
    ``(p, q, k)``: its path form, the capabilities it declares (a PyTorch rule's tensor form,
    a stepped form) and whether it is user code; ``options`` are the request's other fields
    (``arith``, ``grid``, ``keep_paths``, budgets)."""
    return Request(run=m.run, name=m.name, p=p, q=q, k=k, user=is_user_method(m),
                   tensor_rule=m.tensor_rule, steps=m.steps, sorted_sums=m.sorted_sums,
                   **options)


def is_user_method(m: Method) -> bool:
    """A user's verifier: not a registered method, nor a function of exactspec itself (whose
    module-level caches, such as KEY's count laws, are memos of pure functions, not state)."""
    from .methods import METHODS

    return m.user and METHODS.get(m.name) is not m


def as_k(k):
    """``k`` as a Python int when it is any integer type (a NumPy ``int64`` too)."""
    if isinstance(k, numbers.Integral) and not isinstance(k, bool):
        return int(k)
    return k


def _equal(a, b) -> bool:
    """Exact equality; for sympy numbers (a user's ``sympy.exp``, ``sqrt``) the difference is
    simplified, so that equal numbers written differently compare equal."""
    if type(a) is Fraction and type(b) is Fraction or \
            not (hasattr(a, "free_symbols") or hasattr(b, "free_symbols")):
        return a == b
    import sympy

    return sympy.simplify(sympy.sympify(a) - sympy.sympify(b)) == 0


def checked(method, p, q, k):
    """The :class:`~exactspec.methods.base.Method` of ``method``, and ``p`` and ``q`` as
    distributions, checked against each other and the method's
    contract at ``k`` (:class:`~exactspec.core.errors.InvalidInput` otherwise)."""
    m = get_method(method)
    p = p if isinstance(p, Dist) else Dist(p, name="p")
    q = q if isinstance(q, Dist) else Dist(q, name="q")
    if p.labels != q.labels:
        if len(p) != len(q):
            raise InvalidInput(f"q has {len(q)} entries but p has {len(p)}")
        raise InvalidInput(f"p and q have different labels: {list(p.labels)} vs {list(q.labels)}")
    m.check(p, q, k)
    return m, p, q


def simulate(method, p, q, k: int = 1, n: int = 10_000, *, seed: int | None = 0,
             grid: int | None = None, rng=None, callback=None):
    """Sample ``method`` ``n`` times with a seeded NumPy generator (never a proof).

    >>> from exactspec import Dist
    >>> sim = simulate("sps", Dist.parse("1/2,1/2"), Dist.parse("1/2,1/2"), n=100, seed=1)
    >>> sim.acceptance
    1.0
    """
    from .engine.sampling import simulate_method

    k = as_k(k)
    m, p, q = checked(method, p, q, k)
    return simulate_method(m.run, p, q, k, n, seed=seed, grid=grid, rng=rng, callback=callback)
