"""An independent checker for exactspec certificates.

It shares no code with the engine and uses only the standard library (``fractions``, ``json``):
a certificate lists every path with its branch probabilities and its output; the checker
recomputes each path's probability as the product of its branches, checks that every
branching point's alternatives sum to 1, that the paths sum to 1, and recomputes the law and
``P(Y in X)``, comparing them with every recorded field (``law``, ``acceptance``, ``claim``).
Then it *replays* every path through the method the certificate names (imported by name; the
replay sampler below is written here, sharing no code with the engine): the method must meet
the recorded alternatives at every branching point (so ``target``, ``draft``, ``k`` and the
method itself are bound) and end with the recorded output and drafts.  Run it as
``python -m exactspec.checker CERT.json`` (``--no-replay``: the method-free check only).
"""

import json
import sys
from fractions import Fraction


def check_certificate(cert, replay=True):
    """Re-verify a certificate (a dict, or the path of a JSON file).

    ``replay=True`` also runs every path again through the method the certificate names
    (:func:`replay_paths`); ``False`` keeps the method-free check.  Parts of a claim whose
    method has no importable name are checked method-free.  Returns a list of problems; an
    empty list means the certificate checks out.
    """
    if isinstance(cert, str):
        with open(cert) as handle:
            cert = json.load(handle)
    return _check(cert, replay, top=True)


def _check(cert, replay, top):
    problems = []
    if not isinstance(cert, dict):
        return ["a certificate must be a JSON object"]
    if cert.get("kind") == "exactspec-claim-certificate":
        for number, part in enumerate(cert.get("parts", [])):
            problems += [f"part {number}: {msg}" for msg in _check(part, replay, False)]
        return problems
    if cert.get("kind") == "exactspec-generic-certificate":
        # proofs for every vocabulary size: sympy re-checks them (exactspec.generic_checker);
        # here, only their witness path certificates
        for case in cert.get("cases", []):
            for point in case.get("witnesses", []):
                problems += [f"generic case {case.get('path')}: {msg}"
                             for msg in check_certificate(point["certificate"])]
        return problems
    if cert.get("kind") == "exactspec-symbolic-certificate":
        for case in cert.get("cases", []):
            for point in case.get("witnesses", []):
                problems += [f"case {case.get('conditions')}: {msg}"
                             for msg in _check(point["certificate"], replay, False)]
        return problems
    if cert.get("kind") != "exactspec-certificate":
        return [f"unknown certificate kind {cert.get('kind')!r}"]
    target = {lab: Fraction(v) for lab, v in cert["target"].items()}
    law = {lab: Fraction(0) for lab in target}
    total = Fraction(0)
    in_drafts = Fraction(0)
    accepted = Fraction(0)
    any_drafts = False
    seen = set()
    for number, path in enumerate(cert["paths"]):
        product = Fraction(1)
        for _kind, _what, prob in path["branches"]:
            prob = Fraction(prob)
            if not 0 < prob <= 1:
                problems.append(f"path {number}: branch probability {prob} is not in (0, 1]")
            product *= prob
        recorded = Fraction(path["probability"])
        if product != recorded:
            problems.append(f"path {number}: branches multiply to {product}, "
                            f"recorded {recorded}")
        if "choices" in path:
            chosen = Fraction(1)
            for index, alternatives in path["choices"]:
                alternatives = [Fraction(a) for a in alternatives]
                if sum(alternatives) != 1:
                    problems.append(f"path {number}: a branching point's alternatives sum to "
                                    f"{sum(alternatives)}, not 1")
                if not 0 <= index < len(alternatives):
                    problems.append(f"path {number}: choice {index} is not an alternative")
                    continue
                chosen *= alternatives[index]
            if chosen != recorded:
                problems.append(f"path {number}: the chosen alternatives multiply to {chosen}, "
                                f"recorded {recorded}")
            key = tuple(index for index, _ in path["choices"])
            if key in seen:
                problems.append(f"path {number}: the same choices as an earlier path")
            seen.add(key)
        output = path["output"]
        if output not in law:
            problems.append(f"path {number}: output {output!r} is not a token of the target")
            continue
        law[output] += product
        total += product
        if path.get("drafts"):
            any_drafts = True
            if output in path["drafts"]:
                in_drafts += product
        if path.get("accepted"):
            accepted += product
    if total != 1:
        problems.append(f"the paths sum to {total}, not 1")
    lossless = all(law[lab] == target[lab] for lab in target)
    claim = cert.get("claim")
    if claim not in ("lossless", "law"):
        problems.append(f"claim {claim!r}: expected 'lossless' or 'law'")
    elif claim == "lossless" and not lossless:
        for lab in target:
            if law[lab] != target[lab]:
                problems.append(f"token {lab}: paths give {law[lab]}, target {target[lab]}")
    elif claim == "law" and lossless:
        problems.append("claim 'law' (lossy) but the paths give the target law exactly")
    recorded_law = cert.get("law")
    if not isinstance(recorded_law, dict) or set(recorded_law) != set(law):
        problems.append("the certificate's law is missing or names other tokens")
    else:
        for lab, value in recorded_law.items():
            if law[lab] != Fraction(value):
                problems.append(f"token {lab}: paths give {law[lab]}, certificate says "
                                f"{value}")
    versioned = cert.get("version", 1) >= 2
    if "acceptance" in cert or versioned:
        acceptance = in_drafts if any_drafts else accepted
        if "acceptance" not in cert or Fraction(cert["acceptance"]) != acceptance:
            problems.append(f"acceptance: paths give {acceptance}, certificate says "
                            f"{cert.get('acceptance')}")
    if replay:
        problems += replay_paths(cert, required=top)
    return problems


# -- replay through the method ------------------------------------------------------------
class _Mismatch(Exception):
    pass


class _Interval:
    """An explicit uniform: the values still possible, ``[lo, hi)``."""

    def __init__(self, sampler, number):
        self.sampler, self.number = sampler, number
        self.lo, self.hi = Fraction(0), Fraction(1)

    def view(self):
        return _View(self, Fraction(1), Fraction(0))


class _View:
    """``scale * u + shift`` (``scale > 0``), compared with thresholds."""

    def __init__(self, base, scale, shift):
        self.base, self.scale, self.shift = base, scale, shift

    def _cut(self, c):
        return (_exact(c) - self.shift) / self.scale

    def __lt__(self, c):
        return self.base.sampler._below(self.base, self._cut(c), True)

    def __le__(self, c):
        return self.base.sampler._below(self.base, self._cut(c), False)

    def __gt__(self, c):
        return not self.__le__(c)

    def __ge__(self, c):
        return not self.__lt__(c)

    def __mul__(self, a):
        return _View(self.base, self.scale * _exact(a), self.shift * _exact(a))

    __rmul__ = __mul__

    def __truediv__(self, a):
        return self.__mul__(1 / _exact(a))

    def __add__(self, b):
        return _View(self.base, self.scale, self.shift + _exact(b))

    __radd__ = __add__

    def __sub__(self, b):
        return _View(self.base, self.scale, self.shift - _exact(b))


def _exact(x):
    if isinstance(x, Fraction):
        return x
    if isinstance(x, int):
        return Fraction(x)
    ratio = getattr(x, "as_integer_ratio", None)
    if ratio is not None:
        return Fraction(*ratio())
    return Fraction(str(x))


def _grid_points(lo, hi, grid):
    def ceil_times(x):
        n = x * grid
        c = n.numerator // n.denominator + (n.numerator % n.denominator != 0)
        return min(grid, max(0, c))
    return max(0, ceil_times(hi) - ceil_times(lo))


class _ReplaySampler:
    """Follows one path's recorded choices; at every branching point it works out the
    alternatives itself and insists they are the recorded ones."""

    exact = True
    symbolic = False
    replays_exact_engine = True   # methods that draw differently on the exact engine do so here

    def __init__(self, choices, grid):
        self._choices = list(choices)
        self._next = 0
        self.grid = grid
        self.weight = Fraction(1)
        self.drafted = []
        self.accepted_token = None
        self.did_accept = False
        self._uniforms = 0

    def _take(self, kind, options):
        options = [(value, prob) for value, prob in options if prob != 0]
        if not options:
            raise _Mismatch(f"{kind}: no alternative has positive probability")
        if len(options) == 1:
            self.weight *= options[0][1]
            return options[0][0]
        if self._next >= len(self._choices):
            raise _Mismatch(f"{kind}: the method branches here, the path records no choice")
        index, recorded = self._choices[self._next]
        self._next += 1
        mine = [prob for _, prob in options]
        if [Fraction(r) for r in recorded] != mine:
            raise _Mismatch(f"{kind}: the method's alternatives {[str(m) for m in mine]} are "
                            f"not the recorded {recorded}")
        value, prob = options[index]
        self.weight *= prob
        return value

    def _probs(self, dist, kind):
        probs = [_exact(v) for v in dist.probs]
        if sum(probs) != 1 or any(v < 0 for v in probs):
            raise _Mismatch(f"{kind}: a law that does not sum to 1")
        return probs

    def draw(self, dist, what="draw"):
        return self._take(what, list(zip(dist.labels, self._probs(dist, what))))

    def coin(self, prob, what="coin"):
        prob = _exact(prob)
        return self._take(what, [(True, prob), (False, 1 - prob)])

    def draft(self, q, what="draft"):
        x = self.draw(q, what)
        self.drafted.append(x)
        return x

    def drafts(self, q, k, replace=True):
        if replace:
            return tuple(self.draft(q) for _ in range(k))
        chosen = []
        probs = self._probs(q, "drafts")
        for i in range(k):
            rest = [0 if lab in chosen else v for lab, v in zip(q.labels, probs)]
            total = sum(rest)
            x = self._take("draft", [(lab, v / total) for lab, v in zip(q.labels, rest)])
            self.drafted.append(x)
            chosen.append(x)
        return tuple(chosen)

    def accept(self, x):
        self.did_accept, self.accepted_token = True, x
        return x

    def uniform(self):
        self._uniforms += 1
        return _Interval(self, self._uniforms).view()

    def _length(self, u, lo, hi):
        if not lo < hi:
            return Fraction(0)
        if self.grid is None:
            return (hi - lo) / (u.hi - u.lo)
        return Fraction(_grid_points(lo, hi, self.grid), _grid_points(u.lo, u.hi, self.grid))

    def _below(self, u, c, strict):
        cut = c
        if self.grid is not None:
            n = c * self.grid
            floor = n.numerator // n.denominator
            ceil = floor + (n.numerator % n.denominator != 0)
            cut = Fraction(ceil if strict else floor + 1, self.grid)
        if not u.lo < cut:
            return False
        if not cut < u.hi:
            return True
        below = self._length(u, u.lo, cut)
        above = self._length(u, cut, u.hi)
        if self._take("uniform", [(True, below), (False, above)]):
            u.hi = cut
            return True
        u.lo = cut
        return False

    def pick(self, dist, u, what="pick"):
        base = u.base
        options = []
        cum = Fraction(0)
        for lab, pr in zip(dist.labels, self._probs(dist, what)):
            a, b = cum, cum + pr
            cum = b
            if pr == 0:
                continue
            lo = max(base.lo, (a - u.shift) / u.scale)
            hi = min(base.hi, (b - u.shift) / u.scale)
            options.append(((lab, lo, hi), self._length(base, lo, hi)))
        lab, lo, hi = self._take(what, options)
        base.lo, base.hi = lo, hi
        return lab


def _load_method(reference):
    """The function a certificate's ``method`` names, or ``None`` when it names none."""
    import importlib
    import importlib.util
    import inspect
    import os

    if not reference:
        return None
    if ":" not in reference:
        registry = importlib.import_module("exactspec.methods").METHODS
        method = registry.get(reference)
        return None if method is None else method.run
    where, _, name = reference.rpartition(":")
    if where.endswith(".py") or os.sep in where:
        spec = importlib.util.spec_from_file_location("_exactspec_checked_method", where)
        if spec is None or not os.path.isfile(where):
            return None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    function = module
    for part in name.split("."):
        function = getattr(function, part, None)
    if function is None or not callable(function):
        return None
    run = getattr(function, "run", None)
    if callable(run) and not inspect.isfunction(function):
        function = run
    try:
        positional = [p for p in inspect.signature(function).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        positional = [None] * 4
    if len(positional) == 3:
        return lambda s, p, q, k, _f=function: _f(s, p, q)
    return function


def replay_paths(cert, required=True):
    """Run every path of ``cert`` again through its method, feeding back the recorded choices.

    Each path must make the same branching points with the same alternatives, end with the
    recorded output and drafts, and nothing may be left over.  Returns a list of problems.
    """
    if "context" in cert and "m" in cert and "draft" not in cert:
        return []   # a sequence certificate (chains, trees): its paths are checked method-free
    if cert.get("arith"):
        return []   # a float run (--arith): replaying the format's rounding would take the
        #             engine's float emulation, which this checker does not share; method-free
    reference = cert.get("method", "")
    try:
        run = _load_method(reference)
    except Exception as err:  # noqa: BLE001 - an unimportable method is a finding, not a crash
        run = None
        why = f"{type(err).__name__}: {err}"
    else:
        why = "no method of that name"
    if run is None or any("choices" not in path for path in cert["paths"]):
        if not required:
            return []
        if run is None:
            return [f"method {reference!r} cannot be imported to replay the paths ({why}); "
                    "check with --no-replay for the method-free check"]
        return ["the paths record no branch choices (a version-1 certificate): check with "
                "--no-replay for the method-free check"]
    dist_class = importlib_dist()
    names = list(cert["target"])
    labels = cert.get("labels", names)
    if [str(lab) for lab in labels] != names:
        return ["the labels are not the target's tokens"]
    try:
        p = dist_class([Fraction(cert["target"][name]) for name in names], labels)
        q = dist_class([Fraction(cert["draft"][name]) for name in names], labels)
    except KeyError:
        return ["the draft names other tokens than the target"]
    k = cert.get("k", 1)
    grid = cert.get("grid")
    problems = []
    for number, path in enumerate(cert["paths"]):
        sampler = _ReplaySampler(path["choices"], grid)
        try:
            output = run(sampler, p, q, k)
        except _Mismatch as err:
            problems.append(f"path {number}: replay through {reference}: {err}")
            continue
        except Exception as err:  # noqa: BLE001
            problems.append(f"path {number}: replay through {reference} raised "
                            f"{type(err).__name__}: {err}")
            continue
        if sampler._next != len(path["choices"]):
            problems.append(f"path {number}: replay through {reference} ended after "
                            f"{sampler._next} of {len(path['choices'])} recorded choices")
        if str(output) != path["output"]:
            problems.append(f"path {number}: replay through {reference} outputs {output}, "
                            f"recorded {path['output']}")
        if [str(x) for x in sampler.drafted] != list(path.get("drafts", [])):
            problems.append(f"path {number}: replay drafts {sampler.drafted}, recorded "
                            f"{path.get('drafts')}")
        if sampler.weight != Fraction(path["probability"]):
            problems.append(f"path {number}: replay gives probability {sampler.weight}, "
                            f"recorded {path['probability']}")
        if len(problems) > 20:
            problems.append("... (stopped after 20 problems)")
            break
    return problems


def importlib_dist():
    """The distribution class the methods take (``exactspec.core.dist.Dist``)."""
    import importlib

    return importlib.import_module("exactspec.core.dist").Dist


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    replay = "--no-replay" not in argv
    argv = [a for a in argv if a != "--no-replay"]
    if len(argv) != 1:
        print("usage: python -m exactspec.checker [--no-replay] CERTIFICATE.json",
              file=sys.stderr)
        return 2
    try:
        problems = check_certificate(argv[0], replay=replay)
    except (OSError, ValueError, KeyError, TypeError) as err:
        print(f"error: cannot read certificate {argv[0]}: {err}", file=sys.stderr)
        return 2
    for problem in problems:
        print(problem)
    print("CERTIFICATE OK" if not problems else "CERTIFICATE REJECTED")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
