"""The replay of a path certificate through the method the caller hands over.

:class:`_ReplaySampler` follows one path's recorded choices through the method's code (a
sampler written here, sharing no code with the engine): at every branching point it works
out the alternatives itself and insists they are the recorded ones, and explicit uniforms
are intervals cut by the thresholds the method compares them with (on a grid when the
certificate names one).  :func:`replay_paths` runs every path so and compares the output,
drafts, acceptance and probability with the record.
"""

from fractions import Fraction

from .reading import exact_number, short_repr
from .report import (RAISED_SIGNALS, CertificateError, Deadline, OutOfTime, ReplaySignal,
                     Unreplayable)

__all__ = ["replay_paths"]

class _Mismatch(ReplaySignal):
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
        a = _exact(a)
        if a <= 0:
            raise _Mismatch("a uniform scaled by a non-positive number")
        return _View(self.base, self.scale * a, self.shift * a)

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
    raise _Mismatch(f"the method computed {short_repr(x)}, not an exact rational")


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

    def __init__(self, choices, grid, deadline):
        self._choices = list(choices)
        self._next = 0
        self.grid = grid
        self.weight = Fraction(1)
        self.drafted = []
        self.accepted_token = None
        self.did_accept = False
        self._uniforms = 0
        self._deadline = deadline

    def _take(self, kind, options):
        self._deadline.check()
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
        if list(recorded) != mine:
            raise _Mismatch(f"{kind}: the method's alternatives {[str(m) for m in mine]} are "
                            f"not the recorded {[str(r) for r in recorded]}")
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


def replay_paths(cert, run, dist_class, deadline=None, name=None):
    """Run every path of the path certificate ``cert`` again through ``run(s, p, q, k)``
    (``p``, ``q`` built with ``dist_class(probs, labels)``), feeding back the recorded
    choices.  Each path must make the same branching points with the same alternatives, end
    with the recorded output and drafts, and nothing may be left over.  Returns a list of
    problems.  The caller chose ``run``; this function never looks a method up."""
    deadline = deadline if isinstance(deadline, Deadline) else Deadline(deadline)
    name = name or cert["method"]
    labels = cert["labels"]
    names = [str(lab) for lab in labels]
    try:
        p = dist_class([exact_number(cert["target"][n]) for n in names], labels)
        q = dist_class([exact_number(cert["draft"][n]) for n in names], labels)
    except (OutOfTime, CertificateError):
        raise
    except Exception as err:  # noqa: BLE001 - the method's distributions refuse these rows
        return [f"the target and draft are not distributions the method takes: "
                f"{str(err)[:200]}"]
    k, grid = cert["k"], cert["grid"]
    problems = []
    for number, path in enumerate(cert["paths"]):
        choices = [(index, [exact_number(a) for a in alternatives])
                   for index, alternatives in path["choices"]]
        sampler = _ReplaySampler(choices, grid, deadline)
        del RAISED_SIGNALS[:]
        try:
            output = run(sampler, p, q, k)
        except (OutOfTime, Unreplayable):
            raise
        except _Mismatch as err:
            problems.append(f"path {number}: replay through {name}: {err}")
            continue
        except Exception as err:  # noqa: BLE001 - a method failing on the replay is a finding
            problems.append(f"path {number}: replay through {name} raised "
                            f"{type(err).__name__}: {str(err)[:200]}")
            continue
        if RAISED_SIGNALS:              # the method caught the replay's signal and went on
            caught = RAISED_SIGNALS[0]
            if isinstance(caught, (OutOfTime, Unreplayable)):
                raise type(caught)(f"{caught} (caught by {name}, which went on)")
            problems.append(f"path {number}: replay through {name}: {caught} (the method "
                            "caught the replay's signal and went on)")
            continue
        if sampler._next != len(choices):
            problems.append(f"path {number}: replay through {name} ended after "
                            f"{sampler._next} of {len(choices)} recorded choices")
        if str(output) != path["output"]:
            problems.append(f"path {number}: replay through {name} outputs {output}, "
                            f"recorded {path['output']}")
        if [str(x) for x in sampler.drafted] != list(path["drafts"]):
            problems.append(f"path {number}: replay drafts {sampler.drafted}, recorded "
                            f"{path['drafts']}")
        accepted = bool(sampler.did_accept and sampler.accepted_token == output)
        if accepted != path["accepted"]:
            problems.append(f"path {number}: replay through {name} "
                            f"{'accepts' if accepted else 'does not accept'} its output, "
                            f"recorded accepted = {str(path['accepted']).lower()}")
        if sampler.weight != exact_number(path["probability"]):
            problems.append(f"path {number}: replay gives probability {sampler.weight}, "
                            f"recorded {path['probability']}")
        if len(problems) > 20:
            problems.append("... (stopped after 20 problems)")
            break
    return problems

