"""The command line's input readers: the pair ``--p``/``--q`` (exact, or floats for
``--backend numpy``), exact numbers (``--tolerance``), logits, a spec's counts, and the file a
rule is named by, each bounded before it is built and refused in one line.
"""

from __future__ import annotations

import json
import os

from .process import UsageError


def read_pair(args):
    """The pair ``(p, q)`` of ``--p`` and ``--q`` as exact distributions on the same labels."""
    from ..core.dist import Dist

    if args.p is None or args.q is None:
        raise UsageError("both --p and --q are required")
    _check_entry_count(args.p, "p")
    _check_entry_count(args.q, "q")
    p = Dist.parse(args.p, labels=args.labels, normalize=args.normalize, name="p")
    q = Dist.parse(args.q, labels=args.labels, normalize=args.normalize, name="q")
    if p.labels != q.labels:
        from ..core.errors import InvalidInput

        if len(p) != len(q):
            raise InvalidInput(f"q has {len(q)} entries but p has {len(p)}")
        raise InvalidInput(f"p and q have different labels: {list(p.labels)} vs "
                           f"{list(q.labels)}")
    return p, q


def read_float_pair(args):
    """``--p``/``--q`` for the NumPy backend: lists of floats, or ``{label: float}``."""
    import numpy as np

    from ..core.dist import parse_labels
    from ..core.errors import InvalidInput

    def read(text, name):
        text = text.strip()
        if text.startswith("@") and text.lower().endswith(".npy"):
            from ..core.dist import read_npy_row

            row = read_npy_row(text[1:], name)
            if row.dtype.kind == "f" and not np.all(np.isfinite(row)):
                raise InvalidInput(f"{name}: {text[1:]} holds a value that is not finite")
            return [float(v) for v in row.tolist()]
        if text.startswith("@"):
            path = text[1:]
            from ..core.dist import read_text_capped

            try:
                data = json.loads(read_text_capped(path, name))
            except RecursionError:
                raise InvalidInput(f"{name}: {path} nests JSON too deeply") from None
            except ValueError as err:
                raise InvalidInput(f"{name}: {path} is not valid JSON ({err})") from None
            if not isinstance(data, (list, dict)) or not data:
                raise InvalidInput(f"{name}: {path} must hold a non-empty JSON list or object")
            values = list(data.values()) if isinstance(data, dict) else data
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
                values = _number_texts_as_floats(values, name, path)
                return dict(zip(data, values)) if isinstance(data, dict) else values
            for i, v in enumerate(values):               # 1e400 reads as inf, 10**400 as int
                _as_float(v, f"{name}: {path}: entry {i} ({str(v)[:40]})")
            return data
        from ..core.dist import parse_number

        values = []
        for i, part in enumerate(text.split(",")):
            try:
                value = parse_number(part.strip(), f"{name}[{i}]")   # its exponent bounded
            except InvalidInput:
                raise InvalidInput(f"{name}[{i}]={part.strip()!r}: not a number") from None
            values.append(_as_float(value, f"{name}[{i}]={part.strip()!r}"))
        return values

    p, q = read(args.p, "p"), read(args.q, "q")
    if args.labels and isinstance(p, list):
        labels = parse_labels(args.labels, len(p), name="labels")
        p = dict(zip(labels, p))
        q = dict(zip(labels, q)) if isinstance(q, list) and len(q) == len(labels) else q
    return p, q


def _number_texts_as_floats(values: list, name: str, path: str) -> list[float]:
    """A JSON file's entries holding texts of numbers (``"3/7"``, as the exact engine's files
    of long rows write them) beside plain numbers, each as its nearest float64 (each distinct
    entry read once: a long row repeats its values); one line for any other entry."""
    from ..core.dist import parse_number
    from ..core.errors import InvalidInput

    def refuse(i, v):
        raise InvalidInput(f"{name}: {path} must hold numbers or texts of numbers only "
                           f"(entry {i} is {type(v).__name__})")

    for i, v in enumerate(values):
        if type(v) not in (str, int, float):          # bool, null, lists, objects
            refuse(i, v)
    floats = dict.fromkeys(values)                    # 1 and 1.0 are one key, one float
    for v in floats:
        where = f"{name}: {path}: entry {values.index(v)} ({str(v)[:40]!r})"
        if type(v) is str:
            try:
                v_number = parse_number(v.strip(), where)
            except InvalidInput:
                raise InvalidInput(f"{where}: not a number") from None
        else:
            v_number = v
        floats[v] = _as_float(v_number, where)
    return list(map(floats.__getitem__, values))


def _as_float(value, where: str) -> float:
    """``value`` as a finite float64, or one line: the NumPy backend's numbers are floats."""
    import math

    from ..core.errors import InvalidInput

    try:
        result = float(value)
    except OverflowError:
        result = math.inf
    if not math.isfinite(result):
        raise InvalidInput(f"{where}: outside the float64 range of --backend numpy (the exact "
                           "engine reads any rational)")
    return result


def read_exact_number(text, name, *, nonnegative=False):
    """An exact number: ``1/3``, ``1e-6`` (the decimal rational), ``2**-20``, ``-2**-20``
    (the minus applies to the power, as in Python), ``3/4**2`` (``3/16``, as in Python).  Decimal exponents are bounded by
    :data:`~exactspec.core.budget.MAX_EXPONENT` and powers by
    :data:`~exactspec.core.budget.MAX_EXACT_DIGITS` before the number is built; with
    ``nonnegative`` a negative number is refused."""
    from fractions import Fraction

    from ..core.budget import MAX_EXACT_DIGITS, digits_of_bits, power_bits
    from ..core.dist import parse_number as _parse_number
    from ..core.errors import TooLarge

    t = text.strip()
    usage = f"{name}={text!r}: not a number (use 1/1000000, 1e-6 or 2**-20)"
    sign = 1
    if "**" in t:
        base_text, _, power_text = t.partition("**")
        base_text, power_text = base_text.strip(), power_text.strip()
        if base_text.startswith("-"):                    # -2**-20 is -(2**-20)
            sign, base_text = -1, base_text[1:].strip()
        numerator = None
        if "/" in base_text:                             # 3/4**2 is 3/(4**2), as in Python
            numerator_text, _, base_text = base_text.rpartition("/")
            try:
                numerator = Fraction(_parse_number(numerator_text.strip(), name))
            except ValueError:
                raise UsageError(usage) from None
            base_text = base_text.strip()
        if power_text.startswith("(") and power_text.endswith(")"):
            power_text = power_text[1:-1].strip()
        if len(power_text) > 12:
            raise TooLarge(f"{name}={text[:40]!r}: the power {power_text[:20]}... is over the "
                           f"budget of {MAX_EXACT_DIGITS:,} digits exactly",
                           budget=MAX_EXACT_DIGITS)
        try:
            base, power = Fraction(_parse_number(base_text, name)), int(power_text)
        except ValueError:
            raise UsageError(usage) from None
        digits = digits_of_bits(power_bits(base, abs(power)))
        if digits > MAX_EXACT_DIGITS:
            raise TooLarge(f"{name}={text[:40]!r}: ({base})**{power} has about {digits:,} digits "
                           f"exactly, over the budget of {MAX_EXACT_DIGITS:,} digits",
                           estimate=digits, budget=MAX_EXACT_DIGITS)
        try:
            value = sign * (base ** power if numerator is None else numerator / base ** power)
        except ZeroDivisionError:
            raise UsageError(usage) from None
    else:
        try:
            value = _parse_number(t, name)
        except TooLarge:
            raise
        except Exception:                                # noqa: BLE001 - one line, our words
            raise UsageError(usage) from None
    if nonnegative and value < 0:
        raise UsageError(f"{name}={text!r}: must be at least 0 (a bias at most T)")
    return value


#: Logits are read up to this many characters each and this magnitude: the exact softmax of a
#: spread of 10,000 is still decided in seconds; past it sympy's sign decisions of
#: ``exp(L)`` grow without bound (and every float format saturates long before).
MAX_LOGIT = 10**4
MAX_LOGIT_CHARS = 400


def _logit(text, name):
    """One logit from its text, within :data:`MAX_LOGIT_CHARS` characters and
    :data:`MAX_LOGIT` in magnitude."""
    from ..core.dist import parse_number as _parse_number
    from ..core.errors import TooLarge

    text = text.strip()
    if len(text) > MAX_LOGIT_CHARS:
        raise TooLarge(f"{name}={text[:20]}...: {len(text):,} characters, over the budget of "
                       f"{MAX_LOGIT_CHARS} for one logit", estimate=len(text),
                       budget=MAX_LOGIT_CHARS)
    value = _parse_number(text, name)
    if abs(value) > MAX_LOGIT:
        raise TooLarge(f"{name}={text}: |logit| over the budget of {MAX_LOGIT:,} (the exact "
                       "softmax could not be decided; every float format saturates far below)",
                       estimate=abs(value), budget=MAX_LOGIT)
    return value


def read_logits(text, name, labels_arg):
    """Logits: ``2,1,0`` (exact numbers, any sign), ``@file.json`` (a list, or an object
    ``{label: logit}``) or ``@row.npy`` (a 1-D array; floats are their exact binary values);
    the file is read up to the size cap of a distribution file and each logit up to
    :data:`MAX_LOGIT`."""
    from fractions import Fraction

    from ..core.dist import exact, parse_labels, read_npy_row, read_text_capped
    from ..core.errors import ExactspecError, InvalidInput, TooLarge

    t = text.strip()
    labels = None
    if t.startswith("@") and t.lower().endswith(".npy"):
        values = []
        for i, v in enumerate(read_npy_row(t[1:], name).tolist()):
            value = exact(v, f"{name}: {t[1:]}: {name}[{i}]")
            if abs(value) > MAX_LOGIT:
                raise TooLarge(f"{name}: {t[1:]}: {name}[{i}]={v!r}: |logit| over the budget "
                               f"of {MAX_LOGIT:,}", estimate=abs(value), budget=MAX_LOGIT)
            values.append(value)
    elif t.startswith("@"):
        path = t[1:]
        count = [0]

        def number(token):
            count[0] += 1
            return _logit(token, f"{name}[{count[0] - 1}]")

        def constant(token):
            raise InvalidInput(f"{name}: {path} holds {token}: logits must be finite numbers")

        try:
            data = json.loads(read_text_capped(path, name), parse_float=number,
                              parse_int=number, parse_constant=constant)
        except ExactspecError:
            raise
        except RecursionError:
            raise InvalidInput(f"{name}: {path} nests JSON too deeply") from None
        except ValueError as err:
            raise InvalidInput(f"{name}: {path} is not valid JSON ({err})") from None
        if isinstance(data, dict) and "logits" in data:
            data = data["logits"]
        if isinstance(data, dict):
            labels, values = tuple(data), list(data.values())
        elif isinstance(data, list):
            values = data
        else:
            raise InvalidInput(f"{name}: {path} must hold a list or an object of logits")
        if not values or not all(isinstance(v, Fraction) for v in values):
            raise InvalidInput(f"{name}: {path} must hold finite numbers only")
    else:
        values = [_logit(part, f"{name}[{i}]") for i, part in enumerate(t.split(","))]
    if labels_arg:
        labels = parse_labels(labels_arg, len(values), name="labels")
    return values, labels


def read_tolerance(args):
    """``--tolerance`` as an exact nonnegative number, or ``None`` when not given."""
    return None if args.tolerance is None else read_exact_number(args.tolerance, "--tolerance",
                                                                 nonnegative=True)


def whole(value, name):
    """A spec's count (``gamma``, ``m``) as an int, or ``None``."""
    from fractions import Fraction

    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, Fraction) and value.denominator == 1:
        return int(value)
    raise UsageError(f"spec: {name}={value!r}: need a whole number")


#: Exact commands read distributions of at most this many entries (reading, the optimum and
#: its table take about 60 microseconds of CPU per exact entry: 12 s at 200,000).
MAX_EXACT_ENTRIES = 250_000


def _check_entry_count(text, name) -> None:
    """Refuse, before parsing, a distribution with more than :data:`MAX_EXACT_ENTRIES`
    entries (counted by their separators, file size capped as for every distribution)."""
    from ..core.dist import read_text_capped
    from ..core.errors import TooLarge

    text = text.strip()
    if text.startswith("@") and text.lower().endswith(".npy"):
        from ..core.dist import read_npy_row

        entries = read_npy_row(text[1:], name).size
    else:
        body = read_text_capped(text[1:], name) if text.startswith("@") else text
        entries = body.count(",") + 1
    if entries > MAX_EXACT_ENTRIES:
        raise TooLarge(f"{name}: about {entries:,} entries, over the budget of "
                       f"{MAX_EXACT_ENTRIES:,} for exact arithmetic (about {entries * 6e-5:,.0f} "
                       "s of CPU): use --backend numpy (float64 estimates)",
                       estimate=entries, budget=MAX_EXACT_ENTRIES)


def spec_names_function(spec_path) -> bool:
    """Whether the spec's ``verifier`` names a user's function (``file.py:function``)."""
    spec = spec_or_none(spec_path)
    return isinstance(spec, dict) and ":" in str(spec.get("verifier", ""))


def spec_or_none(spec_path):
    """The spec file's JSON by the spec reader (a regular file, capped, numbers bounded), or
    ``None`` when it cannot be read: the command's own reading then says why."""
    from ..core.errors import ExactspecError
    from ..sequences.context import read_json

    try:
        return read_json(spec_path, "spec")
    except ExactspecError:
        return None


def rule_file(named, base=None) -> list:
    """The file of a rule named ``file.py:function`` (and its place relative to ``base``, a
    spec's folder), or nothing for a registered name or ``module:function``."""
    if not isinstance(named, str) or ":" not in named:
        return []
    where = named.rpartition(":")[0]
    if not (where.endswith(".py") or "/" in where):
        return []
    found = [where]
    if base is not None and not os.path.isabs(where):
        found.append(os.path.join(base, where))
    return found
