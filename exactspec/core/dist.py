"""Exact finite distributions over labelled tokens.

A :class:`Dist` maps each token label to an exact probability: a ``Fraction`` in exact mode,
or a symbolic value when the symbolic engine runs a method.  Python and NumPy floats convert to
their exact binary value; strings and JSON numbers are read as the decimal rational of their
text (``"0.3"`` is ``3/10``).

>>> p = Dist.parse("1/2,3/10,1/5", labels="abc")
>>> p
Dist({'a': 1/2, 'b': 3/10, 'c': 1/5})
>>> overlap(p, Dist.parse("0.2,0.2,0.6", labels="abc"))
Fraction(3, 5)
"""

from __future__ import annotations

import json
import math
import re
import sys
import numbers
from collections.abc import Iterable, Mapping
from decimal import Decimal
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from . import integer_rows
from .budget import MAX_EXPONENT
from .errors import InvalidInput, NotExact, TooLarge
from .integer_rows import digit_ratio, float_fraction, fraction_of, integer_row, ratio_texts_row
from .row_files import read_npy_row, read_text_capped

__all__ = [
    "Dist",
    "exact",
    "exact_str",
    "parse_labels",
    "total_variation",
    "law_distance",
    "overlap",
    "positive_part",
    "residual",
]


def exact(value: Any, name: str = "value") -> Any:
    """Convert ``value`` to an exact number without loss.

    Integers and fractions stay as they are (as ``Fraction``), floats become their exact
    binary value, strings their decimal rational; sympy rationals become ``Fraction``; other
    sympy expressions and symbolic values are kept as they are, and so are the values of a
    float run (a row a kernel normalised in its format, drawn from as the kernel does).

    >>> exact("0.3"), exact(0.5), exact("1/3")
    (Fraction(3, 10), Fraction(1, 2), Fraction(1, 3))
    """
    if isinstance(value, bool):
        raise NotExact(f"{name}={value!r}: a probability must be a number, not a bool")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, numbers.Integral):
        return Fraction(int(value))
    if getattr(value, "is_format_value", False):   # a float run's value (engine/floats.py):
        return value                               # exact in its format, kept as it is
    if getattr(value, "is_Float", False):      # a sympy Float: its exact binary value
        if not value.is_finite:
            raise NotExact(f"{name}={value}: not a finite number")
        import sympy

        rational = sympy.Rational(value)
        return Fraction(int(rational.p), int(rational.q))
    ratio = getattr(value, "as_integer_ratio", None)
    if ratio is not None and not isinstance(value, Decimal) and not hasattr(value, "free_symbols"):
        try:      # Python and NumPy floats of every width: their exact binary value
            num, den = ratio()
            return Fraction(int(num), int(den))
        except (OverflowError, ValueError, TypeError):
            raise NotExact(f"{name}={value!r}: not a finite number") from None
    if isinstance(value, numbers.Real) and not isinstance(value, Decimal):
        try:
            return Fraction(value)
        except (OverflowError, ValueError, TypeError):
            raise NotExact(f"{name}={value!r}: not a finite number") from None
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise NotExact(f"{name}={value}: not a finite number")
        return Fraction(value)
    if isinstance(value, str):
        return parse_number(value, name)
    if hasattr(value, "is_Rational") and getattr(value, "is_Rational", False):
        return Fraction(int(value.p), int(value.q))
    if getattr(value, "is_number", False) and hasattr(value, "free_symbols"):
        if value.is_finite is not True or value.is_real is False:   # oo, nan, zoo, I
            raise NotExact(f"{name}={value}: not a finite real number")
        return value
    if getattr(value, "is_symbolic_value", False) or hasattr(value, "free_symbols"):
        return value
    raise NotExact(f"{name}={value!r}: cannot be read as an exact number")


_EXPONENT = re.compile(r"[eE]\s*([+-]?\d+)\s*$")
_RATIO = re.compile(r"\s*(\d+)\s*/\s*([1-9]\d*)\s*")


def parse_number(text: str, name: str) -> Fraction:
    """One exact number of input text (``3/10``, ``0.3``, ``1e-6``), its decimal exponent
    bounded before the number is built.

    >>> parse_number("1e-3", "tolerance")
    Fraction(1, 1000)
    >>> parse_number("1e-100000000", "tolerance")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    exactspec.core.errors.TooLarge: tolerance='1e-100000000': the exponent -100,000,000 is over ...
    """
    parts = digit_ratio(text)            # the common "a/b": straight to the fraction
    if parts is not None:
        return fraction_of(*parts)
    ratio = _RATIO.fullmatch(text)        # the same with spaces
    if ratio is not None:
        return fraction_of(int(ratio.group(1)), int(ratio.group(2)))
    s = text.strip()
    if not s:
        raise InvalidInput(f"{name}: empty entry")
    if s.lower().lstrip("+-") in {"nan", "inf", "infinity"}:
        raise NotExact(f"{name}={s}: not a finite number")
    exponent = _EXPONENT.search(s)
    if exponent and abs(int(exponent.group(1))) > MAX_EXPONENT:
        raise TooLarge(f"{name}={s[:40]!r}: the exponent {int(exponent.group(1)):,} is over the "
                       f"budget of +-{MAX_EXPONENT:,} (its exact value would have that many "
                       "digits)", estimate=abs(int(exponent.group(1))), budget=MAX_EXPONENT)
    try:
        return Fraction(s)
    except (ValueError, ZeroDivisionError):
        raise InvalidInput(f"{name}={s!r}: not a number (use 1/2, 0.5 or 3)") from None


def exact_str(value: Any) -> str:
    """Lowest-terms text of an exact value: ``"3/5"``, ``"1"``, ``"0"``; sympy text otherwise.

    >>> exact_str(Fraction(6, 10)), exact_str(Fraction(1)), exact_str(0)
    ('3/5', '1', '0')
    """
    if type(value) is Fraction or isinstance(value, (int, Fraction)) and \
            not isinstance(value, bool):
        f = value if type(value) is Fraction else Fraction(value)   # a Fraction not copied
        if f.denominator == 1:
            return _int_text(f.numerator)
        return f"{_int_text(f.numerator)}/{_int_text(f.denominator)}"
    expr = getattr(value, "expr", value)
    if getattr(expr, "is_Rational", False):
        return exact_str(Fraction(int(expr.p), int(expr.q)))
    return str(expr)


def _ratio_text(n: int, d: int) -> str:
    """``exact_str(Fraction(n, d))`` of integers (``d > 0``), without the ``Fraction``."""
    g = math.gcd(n, d)
    n, d = n // g, d // g
    return _int_text(n) if d == 1 else f"{_int_text(n)}/{_int_text(d)}"


def _int_text(n: int) -> str:
    """Decimal text of any integer, past Python's default 4,300-digit limit on ``str(int)``."""
    try:
        return str(n)
    except ValueError:
        limit = sys.get_int_max_str_digits()
        sys.set_int_max_str_digits(0)
        try:
            return str(n)
        finally:
            sys.set_int_max_str_digits(limit)


def parse_labels(labels: Any, n: int | None = None, name: str = "labels") -> tuple:
    """Read token labels: ``"abc"``, ``"a,b,c"`` or a sequence; checks count and duplicates."""
    if isinstance(labels, str):
        text = labels.strip()
        items = [s.strip() for s in text.split(",")] if "," in text else list(text)
    else:
        items = list(labels)
    if any(isinstance(s, str) and not s for s in items):
        raise InvalidInput(f"{name}={labels!r}: empty label")
    seen = set()
    for s in items:
        try:
            hash(s)
        except TypeError:
            raise InvalidInput(f"{name}: label {s!r} is a {type(s).__name__}; a label must be a "
                               "string or a number") from None
        if isinstance(s, float) and s != s:
            raise InvalidInput(f"{name}: label {s!r} is not a usable label")
        if s in seen:
            raise InvalidInput(f"{name}: duplicate label {s!r}")
        seen.add(s)
    if n is not None and len(items) != n:
        raise InvalidInput(f"{name} has {len(items)} entries but the distribution has {n}")
    return tuple(items)


class Dist(Mapping):
    """An exact probability distribution over labelled tokens.

    Parameters
    ----------
    probs : sequence, mapping, string, NumPy array or Dist
        The probabilities.  A mapping gives labels and values together; a string is parsed
        as by :meth:`parse`.
    labels : sequence or str, optional
        Token labels (``"abc"``, ``"a,b,c"`` or a list).  Default ``0, 1, 2, ...``.
    normalize : bool
        Rescale to sum exactly 1 instead of requiring it.
    name : str
        The argument's name in error messages (``"p"``, ``"q"``).
    check : bool
        Validate entries and the sum (the symbolic engine passes ``False``).

    Examples
    --------
    >>> Dist([0.5, 0.25, 0.25])
    Dist({0: 1/2, 1: 1/4, 2: 1/4})
    >>> Dist({"x": 1, "y": 3}, normalize=True)["y"]
    Fraction(3, 4)
    """

    __slots__ = ("labels", "_probs", "_index_map", "_integer_row", "_base", "_exact", "_hash")

    def __init__(self, probs, labels=None, *, normalize: bool = False, name: str = "p",
                 check: bool = True):
        if isinstance(probs, Dist):
            given_labels, values = probs.labels, list(probs.probs)
        elif isinstance(probs, str):
            parsed = Dist.parse(probs, labels=labels, normalize=normalize, name=name)
            given_labels, values, labels, normalize = parsed.labels, list(parsed.probs), None, False
        elif isinstance(probs, Mapping):
            given_labels, values = tuple(probs.keys()), list(probs.values())
        elif (check and normalize and _is_float_array(probs)
              and probs.ndim == 1 and probs.shape[0] >= integer_rows.INTEGER_ROW_MIN):
            _check_array(probs, name)
            values, given_labels = None, None
        else:
            values = _as_list(probs, name)
            given_labels = None
        size = len(values) if values is not None else probs.shape[0]
        if labels is not None:
            given_labels = parse_labels(labels, size, name=f"labels of {name}")
        elif given_labels is None:
            given_labels = tuple(range(size))
        else:
            given_labels = parse_labels(given_labels, size, name=f"labels of {name}")
        if not size:
            raise InvalidInput(f"{name} is empty: a distribution needs at least one token")
        row = None
        if values is None:              # a NumPy float row, normalised: integers, lazily
            row = _normalized_float_array(probs, given_labels, name)
        elif (check and normalize and len(values) >= integer_rows.INTEGER_ROW_MIN
                and all(type(v) is float for v in values)):
            values, row = _normalized_floats(values, given_labels, name)
        elif check and len(values) >= integer_rows.INTEGER_ROW_MIN and \
                (row := ratio_texts_row(values)) is not None:   # "a/b" texts: integers only
            whole = sum(row[0])
            if normalize and whole == 0:
                raise InvalidInput(f"{name} sums to 0: nothing to normalize")
            if normalize:
                row = (row[0], whole)
            elif whole != row[1]:
                raise InvalidInput(f"{name} sums to {exact_str(Fraction(whole, row[1]))}, not 1 "
                                   "(use --normalize to rescale)")
            values = None                     # the Fractions made when first read
        elif check:
            values = [_exact_entry(v, name, lab) for lab, v in zip(given_labels, values)]
            for lab, v in zip(given_labels, values):
                if (v.numerator < 0 if type(v) is Fraction else
                        isinstance(v, Fraction) and v < 0):
                    raise InvalidInput(f"{name}[{lab}] = {exact_str(v)} is negative")
            _check_symbolic_numbers(values, given_labels, name, normalize)
            if all(isinstance(v, Fraction) for v in values):
                row = integer_row(values) if len(values) >= integer_rows.INTEGER_ROW_MIN \
                    else None
                total = Fraction(sum(row[0]), row[1]) if row else sum(values, Fraction(0))
                if normalize:
                    if total == 0:
                        raise InvalidInput(f"{name} sums to 0: nothing to normalize")
                    if row is None:
                        values = [v / total for v in values]
                    else:       # v / total = V / sum(V) with V = v D
                        whole = sum(row[0])
                        row = (row[0], whole)
                        values = [fraction_of(i, whole) for i in row[0]]
                elif total != 1:
                    raise InvalidInput(
                        f"{name} sums to {exact_str(total)}, not 1 (use --normalize to rescale)")
        elif normalize:
            total = sum(values[1:], values[0])
            values = [v / total for v in values]
        object.__setattr__(self, "labels", given_labels)
        object.__setattr__(self, "_probs", None if values is None else tuple(values))
        object.__setattr__(self, "_index_map", None)     # made when a label is first looked up
        object.__setattr__(self, "_integer_row", row)
        object.__setattr__(self, "_exact", None)   # exact values for user code (exact_values)

    @property
    def probs(self) -> tuple:
        """The probabilities in token order (a tuple).  A Dist built from an integer row
        (a NumPy float row normalised exactly, or an exact result over one common
        denominator) builds these ``Fraction``\\ s when they are first read."""
        probs = self._probs
        if probs is None:
            ints, denominator = self._integer_row
            base = getattr(self, "_base", None)
            if base is None:
                probs = tuple([fraction_of(i, denominator) for i in ints])
            else:                          # most entries are another Dist's: reuse them
                source, changed = base
                values = list(source.probs)
                for i in changed:
                    values[i] = fraction_of(ints[i], denominator)
                probs = tuple(values)
                object.__setattr__(self, "_base", None)
            object.__setattr__(self, "_probs", probs)
        return probs

    @classmethod
    def _over_row(cls, like: Dist, row: tuple[list[int], int], changed=None) -> Dist:
        """A Dist with ``like``'s labels and the probabilities ``row[0][i] / row[1]`` (no
        checks; the ``Fraction``\\ s are built when first read).  With ``changed`` (token
        positions), every other entry must equal ``like``'s, and is taken from it."""
        d = object.__new__(cls)
        object.__setattr__(d, "labels", like.labels)
        object.__setattr__(d, "_probs", None)
        object.__setattr__(d, "_index_map", like._index_map)
        object.__setattr__(d, "_integer_row", row)
        object.__setattr__(d, "_exact", None)
        if changed is not None:
            object.__setattr__(d, "_base", (like, changed))
        return d

    def __setattr__(self, name, value):
        raise AttributeError(f"a Dist is read-only: cannot set {name!r} (build a new Dist, or "
                             "copy it with dict(p))")

    def __delattr__(self, name):
        raise AttributeError(f"a Dist is read-only: cannot delete {name!r}")

    def __reduce__(self):
        return (_rebuild, (self.labels, self.probs))

    # -- construction -------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str, labels=None, *, normalize: bool = False, name: str = "p") -> Dist:
        """Read ``"1/2,3/10,1/5"`` (decimals are decimal rationals), ``"@file.json"`` or
        ``"@row.npy"`` (a 1-D NumPy array: floats are their exact binary values).

        >>> Dist.parse("0.5, 0.3, 0.2")
        Dist({0: 1/2, 1: 3/10, 2: 1/5})
        """
        if not isinstance(text, str):
            raise InvalidInput(f"{name}: expected text, got {type(text).__name__}")
        s = text.strip()
        if s.startswith("@"):
            if s.lower().endswith(".npy"):
                return cls.from_npy(s[1:], labels=labels, normalize=normalize, name=name)
            return cls.from_json(s[1:], labels=labels, normalize=normalize, name=name)
        if not s:
            raise InvalidInput(f"{name} is empty: give comma-separated probabilities")
        parts = s.split(",")
        values = [parse_number(part, f"{name}[{i}]") for i, part in enumerate(parts)]
        return cls(values, labels, normalize=normalize, name=name)

    @classmethod
    def from_json(cls, path, labels=None, *, normalize: bool = False, name: str = "p") -> Dist:
        """Read a JSON list or ``{label: prob}`` object; numbers are decimal rationals."""
        text = read_text_capped(path, name)
        try:
            data = json.loads(text, parse_float=lambda t: parse_number(t, name),
                              parse_int=lambda t: parse_number(t, name),
                              parse_constant=_reject_constant,
                              object_pairs_hook=_no_duplicates)
        except json.JSONDecodeError as err:
            raise InvalidInput(f"{name}: {path} is not valid JSON ({err.msg}, line {err.lineno})"
                               ) from None
        except RecursionError:
            raise InvalidInput(f"{name}: {path} nests JSON too deeply: expected a flat list or "
                               "object of probabilities") from None
        except NotExact as err:
            raise NotExact(f"{name}: {path}: {err}") from None
        except InvalidInput as err:
            raise InvalidInput(f"{name}: {path}: {err}") from None
        if isinstance(data, Mapping):
            if labels is not None:
                raise InvalidInput(f"{name}: {path} is an object, whose keys are the labels; "
                                   "drop --labels")
            return cls(data, normalize=normalize, name=name)
        if isinstance(data, list):
            return cls(data, labels, normalize=normalize, name=name)
        raise InvalidInput(f"{name}: {path} must hold a JSON list or object of probabilities")

    @classmethod
    def from_npy(cls, path, labels=None, *, normalize: bool = False, name: str = "p") -> Dist:
        """Read a 1-D ``.npy`` row (:func:`read_npy_row`): floats are their exact binary
        values, as for a NumPy array given in Python."""
        row = read_npy_row(path, name)
        try:
            return cls(row, labels, normalize=normalize, name=name)
        except NotExact as err:
            raise NotExact(f"{name}: {path}: {err}") from None
        except InvalidInput as err:
            raise InvalidInput(f"{name}: {path}: {err}") from None

    @classmethod
    def from_weights(cls, weights, labels) -> Dist:
        """Normalise non-negative exact weights (no validation; used inside methods)."""
        values = list(weights.values()) if isinstance(weights, Mapping) else list(weights)
        total = sum(values[1:], values[0])
        return cls([v / total for v in values], labels, check=False)

    @property
    def _index(self):
        """``{label: position}``, read-only, made when first looked up (a row of the full
        vocabulary that is only read in token order never makes it)."""
        index = self._index_map
        if index is None:
            index = MappingProxyType({lab: i for i, lab in enumerate(self.labels)})
            object.__setattr__(self, "_index_map", index)
        return index

    # -- mapping protocol ---------------------------------------------------------------
    def __getitem__(self, label):
        # a token of the vocabulary-generic engine reads its own entry (engine/generic/values.py)
        value_at = getattr(label, "value_at", None)
        if value_at is not None:
            return value_at(self)
        probs = self._probs
        if probs is None:
            probs = self.probs
        try:
            return probs[self._index[label]]
        except KeyError:
            raise KeyError(f"unknown token {label!r}; labels are {list(self.labels)}") from None

    def __iter__(self):
        return iter(self.labels)

    def __len__(self):
        return len(self.labels)

    def __hash__(self):
        try:                     # read-only: hashed once (a state key of merged states)
            return self._hash
        except AttributeError:
            object.__setattr__(self, "_hash", hash((self.labels, self.probs)))
            return self._hash

    def __eq__(self, other):
        if isinstance(other, Dist):
            return self.labels == other.labels and all(
                a == b for a, b in zip(self.probs, other.probs))
        return NotImplemented

    def __repr__(self):
        body = ", ".join(f"{lab!r}: {exact_str(v)}" for lab, v in zip(self.labels, self.probs))
        return f"Dist({{{body}}})"

    # -- queries ------------------------------------------------------------------------
    def index(self, label) -> int:
        """Position of ``label`` in the token order."""
        return self._index[label]

    @property
    def support(self) -> tuple:
        """Labels with non-zero probability, in token order."""
        return tuple(lab for lab, v in zip(self.labels, self.probs) if v != 0)

    def to_json(self) -> dict:
        """``{label: "3/5"}`` with labels as strings and exact values as lowest-terms text."""
        row = self._integer_row
        if self._probs is None and row is not None and getattr(self, "_base", None) is None:
            return {str(lab): _ratio_text(n, row[1]) for lab, n in zip(self.labels, row[0])}
        return {str(lab): exact_str(v) for lab, v in zip(self.labels, self.probs)}

    def to_floats(self) -> list[float]:
        """The probabilities as Python floats (for plots and sampling only)."""
        return [float(getattr(v, "expr", v)) for v in self.probs]


def _check_symbolic_numbers(values, labels, name: str, normalize: bool) -> None:
    """Exact irrational entries (``sqrt(2)/2``): each non-negative and, together, summing to 1
    (sympy must prove it).  Entries with free symbols are left to the symbolic engine."""
    numeric = [v for v in values if getattr(v, "is_number", False) and hasattr(v, "free_symbols")]
    if not numeric or any(getattr(v, "free_symbols", None) for v in values) or normalize:
        return
    import sympy

    for lab, v in zip(labels, values):
        if getattr(v, "is_negative", False):
            raise InvalidInput(f"{name}[{lab}] = {v} is negative")
    total = sympy.simplify(
        sum((sympy.Rational(v.numerator, v.denominator) if isinstance(v, Fraction) else v
             for v in values), sympy.Integer(0)))
    if total != 1:
        raise InvalidInput(f"{name} sums to {total}, not 1 (or sympy cannot prove it): entries "
                           "must sum to 1 exactly")


def _rebuild(labels, probs) -> Dist:
    return Dist(list(probs), labels, check=False)


def _no_duplicates(pairs):
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        dup = next(key for key in keys if keys.count(key) > 1)
        raise InvalidInput(f"duplicate key {dup!r} in a JSON object")
    return dict(pairs)


def _exact_entry(v, name: str, lab) -> Any:
    """:func:`exact` of one entry; floats (the bulk of a NumPy row) take the short way."""
    if type(v) is Fraction:
        return v
    if type(v) is float and math.isfinite(v):
        return float_fraction(v)
    if type(v) is str:            # "a/b" as a JSON file of a long row writes it
        return parse_number(v, f"{name}[{lab}]")
    return exact(v, f"{name}[{lab}]")


def _normalized_floats(values: list, labels: tuple, name: str):
    """Floats rescaled to sum exactly 1, by integers: ``v_i = V_i / 2^e`` exactly, so
    ``v_i / sum(v) = V_i / sum(V)``.  Returns the ``Fraction``s and their integer row."""
    for lab, v in zip(labels, values):                     # the checks of the general path,
        if not math.isfinite(v):                            # in its order
            raise NotExact(f"{name}[{lab}]={v!r}: not a finite number")
    for lab, v in zip(labels, values):
        if v < 0:
            raise InvalidInput(f"{name}[{lab}] = {exact_str(float_fraction(v))} is negative")
    ratios = [v.as_integer_ratio() for v in values]
    bits = max(d for _, d in ratios).bit_length() - 1       # every d is a power of two
    ints = [n << (bits - d.bit_length() + 1) for n, d in ratios]
    whole = sum(ints)
    if whole == 0:
        raise InvalidInput(f"{name} sums to 0: nothing to normalize")
    return [fraction_of(i, whole) for i in ints], (ints, whole)


def _is_float_array(x) -> bool:
    """A NumPy array of float16, float32 or float64 (every value exact in float64)."""
    dtype = getattr(x, "dtype", None)
    return (dtype is not None and hasattr(x, "ndim") and getattr(dtype, "kind", "") == "f"
            and dtype.itemsize <= 8)


_MANTISSA_BITS = 52
_LOW_MASK = (1 << _MANTISSA_BITS) - 1


def _normalized_float_array(arr, labels: tuple, name: str) -> tuple[list[int], int]:
    """:func:`_normalized_floats` on a 1-D NumPy float row, vectorised: the integer row
    ``(V, sum V)`` of the row normalised exactly, the same integers (``v_i = V_i / 2^B``
    with ``2^B`` the largest denominator of the values in lowest terms).  The checks and
    their messages are those of the general path, in its order (non-finite values were
    refused by :func:`_check_array`)."""
    import numpy as np

    x = np.ascontiguousarray(arr, dtype=np.float64)       # float16/32 widen exactly
    negative = np.flatnonzero(x < 0)
    if negative.size:
        i = int(negative[0])
        raise InvalidInput(f"{name}[{labels[i]}] = {exact_str(float_fraction(float(x[i])))} "
                           "is negative")
    bits = x.view(np.int64)
    biased = bits >> _MANTISSA_BITS                        # non-negative: no sign bit
    mantissa = bits & _LOW_MASK
    normal = biased > 0
    mantissa[normal] |= 1 << _MANTISSA_BITS
    exponent = np.maximum(biased, 1) - (1023 + _MANTISSA_BITS)   # x = mantissa 2^exponent
    nonzero = mantissa != 0
    if not nonzero.any():
        raise InvalidInput(f"{name} sums to 0: nothing to normalize")
    lowest = mantissa & -mantissa                          # the lowest set bit, exactly
    zeros = (np.frexp(lowest.astype(np.float64))[1] - 1) * nonzero   # trailing zeros
    odd = mantissa >> zeros
    low_exponent = exponent + zeros                        # x = odd 2^low_exponent
    scale = max(0, -int(low_exponent[nonzero].min()))      # B
    shifts = (low_exponent + scale) * nonzero              # >= 0; 0 for the zeros
    ints = [o << s for o, s in zip(odd.tolist(), shifts.tolist())]
    return ints, sum(ints)


def integer_row_of(d: Dist) -> tuple[list[int], int] | None:
    """``d``'s probabilities as integers over one common denominator ``D`` (``p_i = P_i / D``),
    or ``None`` when they are not all rational or ``D`` would be huge
    (:func:`~exactspec.core.integer_rows.integer_row`); kept with ``d`` once computed.

    Rows shorter than :data:`~exactspec.core.integer_rows.INTEGER_ROW_MIN` give ``None``
    (``Fraction`` arithmetic is faster there).

    >>> integer_row_of(Dist.parse(",".join(["1/128"] * 128)))[1]
    128
    >>> integer_row_of(Dist.parse("1/2,3/10,1/5")) is None
    True
    """
    row = d._integer_row
    if row is None:
        if len(d.probs) < integer_rows.INTEGER_ROW_MIN:
            return None
        row = integer_row(d.probs)
        if row is not None:
            object.__setattr__(d, "_integer_row", row)       # a cache of d's own values
    return row


def _reject_constant(name: str):
    raise NotExact(f"{name} is not a finite number")


def _check_array(probs, name: str):
    """A NumPy row: one-dimensional, and (floats) every value finite."""
    import numpy as np

    arr = np.asarray(probs)
    if arr.ndim != 1:
        raise InvalidInput(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise NotExact(f"{name}[{bad}]={arr[bad]!r}: not a finite number")
    return arr


def _as_list(probs, name: str) -> list:
    if hasattr(probs, "tolist") and hasattr(probs, "dtype"):
        return list(_check_array(probs, name).tolist())
    if isinstance(probs, Iterable):
        return list(probs)
    raise InvalidInput(f"{name}: expected a list, mapping or string, got {type(probs).__name__}")


def _same_labels(p: Dist, q: Dist) -> None:
    if len(p) != len(q):
        raise InvalidInput(f"q has {len(q)} entries but p has {len(p)}")
    if p.labels != q.labels:
        raise InvalidInput(f"p and q have different labels: {list(p.labels)} vs {list(q.labels)}")


def overlap(p: Dist, q: Dist):
    """``sum_t min(p(t), q(t))``: the one-draft rule's acceptance.

    Equivalent to ``1 - total_variation(p, q)``.

    >>> overlap(Dist.parse("1/2,1/2"), Dist.parse("1/3,2/3"))
    Fraction(5, 6)
    """
    _same_labels(p, q)
    rows = integer_row_of(p), integer_row_of(q)
    if rows[0] is not None and rows[1] is not None:
        (pp, d_p), (qq, d_q) = rows
        return fraction_of(sum(map(min, (a * d_q for a in pp), (b * d_p for b in qq))),
                           d_p * d_q)
    terms = [min(a, b) for a, b in zip(p.probs, q.probs)]
    return sum(terms[1:], terms[0])


def total_variation(p: Dist, q: Dist):
    """Total-variation distance between two finite distributions (:func:`law_distance`).

    Equivalent to ``sum(abs(p[t] - q[t]) for t in p) / 2``.

    >>> total_variation(Dist.parse("1/2,1/2"), Dist.parse("1/3,2/3"))
    Fraction(1, 6)
    """
    _same_labels(p, q)
    return law_distance(p, q)


def law_distance(law, target) -> Fraction:
    """The total variation distance ``sum_t max(law(t) - target(t), 0)``, exactly: half of
    ``sum_t |law(t) - target(t)|`` over the union of the supports, for laws of one mass.

    Parameters
    ----------
    law, target : Dist, mapping or sequence
        Probabilities by label (a key missing from one is 0 there) or by index (a list or a
        tuple); two :class:`Dist` of rationals on the same labels as integer rows.

    Examples
    --------
    >>> law_distance({"a": Fraction(1, 2), "b": Fraction(1, 2)}, {"a": Fraction(1)})
    Fraction(1, 2)
    >>> law_distance([Fraction(1, 3), Fraction(2, 3)], [Fraction(1, 2), Fraction(1, 2)])
    Fraction(1, 6)
    """
    if isinstance(law, Dist) and isinstance(target, Dist) and law.labels == target.labels:
        rows = integer_row_of(law), integer_row_of(target)
        if rows[0] is not None and rows[1] is not None:
            (pp, d_p), (qq, d_q) = rows
            excess = (a * d_q - b * d_p for a, b in zip(pp, qq))
            return fraction_of(sum(x for x in excess if x > 0), d_p * d_q)
        terms = [max(a - b, 0) for a, b in zip(law.probs, target.probs)]
        return sum(terms[1:], terms[0])
    if isinstance(law, (list, tuple)) and isinstance(target, (list, tuple)) and \
            len(law) == len(target):   # by index, max(a - b, 0) as the engines compare
        ints = all(type(v) is int for row in (law, target) for v in row)  # summed as ints
        total = sum((max(a - b, 0) for a, b in zip(law, target)), 0 if ints else Fraction(0))
        return Fraction(total) if ints else total
    law, target = (dict(enumerate(x)) if isinstance(x, (list, tuple)) else x
                   for x in (law, target))
    keys = list(target) + [k for k in law if k not in target]
    return sum((max(law.get(k, 0) - target.get(k, 0), 0) for k in keys), Fraction(0))


def positive_part(p: Dist, q: Dist) -> list:
    """The unnormalised residual masses ``max(0, p(t) - q(t))`` in token order."""
    _same_labels(p, q)
    return [max(a - b, 0) for a, b in zip(p.probs, q.probs)]


def residual(p: Dist, q: Dist) -> Dist:
    """``norm(max(0, p - q))``: where the one-draft rule resamples after a rejection.

    >>> residual(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"))
    Dist({0: 3/4, 1: 1/4, 2: 0})

    Raises :class:`InvalidInput` when ``p <= q`` everywhere (then ``p = q`` and the rule never
    rejects, so the residual is never formed).

    A ``Dist`` is read-only, so the residual of two rows of rationals is computed once per
    pair (on their integer rows) and remembered for the last :data:`RESIDUALS_KEPT` pairs (by
    the objects themselves, held while remembered; symbolic rows are not remembered): a
    rule forming it on every path pays ``O(V)`` once.
    Its entries are the stored exact values (plain ``Fraction``\\ s inside
    :func:`~exactspec.core.exact_values.exact_values` too).
    """
    memo = isinstance(p, Dist) and isinstance(q, Dist)
    if memo:
        for pair in reversed(_Residuals.pairs):
            if pair[0] is p and pair[1] is q:
                return pair[2]
    _same_labels(p, q)
    rows = (integer_row_of(p), integer_row_of(q)) if memo else (None,)
    if (exact := None not in rows):      # rationals: max(0, P dq - Q dp) over one denominator
        (ps, dp), (qs, dq) = rows
        masses = [max(a * dq - b * dp, 0) for a, b in zip(ps, qs)]
        total = sum(masses)
    else:
        masses = [max(a - b, 0) for a, b in zip(_STORED_PROBS(p), _STORED_PROBS(q))] if memo \
            else positive_part(p, q)
        total = sum(masses[1:], masses[0])
    if total == 0:
        raise InvalidInput("the residual max(0, p - q) is empty: p <= q everywhere")
    law = Dist._over_row(p, (masses, total)) if exact else \
        Dist([m / total for m in masses], p.labels, check=False)
    if memo and (exact or _rational(_STORED_PROBS(p)) and _rational(_STORED_PROBS(q))):
        _Residuals.pairs.append((p, q, law))
        del _Residuals.pairs[:-RESIDUALS_KEPT]
    return law


def _rational(values) -> bool:
    """Every value a plain rational (a symbolic entry's sign is decided per case: such a
    residual is never remembered)."""
    return all(type(v) is Fraction or type(v) is int for v in values)


#: How many ``(p, q)`` pairs :func:`residual` remembers (most recent last).
RESIDUALS_KEPT = 4


class _Residuals:
    """The pairs :func:`residual` remembers, ``(p, q, residual)``, most recent last: a cache
    no rule sees change, so the hidden-state check does not count it (a class is no rule's
    state)."""

    pairs: list = []


#: A Dist's stored values (``Dist.probs`` as defined here, before
#: :func:`~exactspec.core.exact_values.exact_values` stands in for it).
_STORED_PROBS = Dist.__dict__["probs"].fget
