"""The pytest plugin: exactspec's exact assertions as fixtures, a marker, exact failure figures.

Installed with exactspec (the ``pytest11`` entry point ``exactspec``); without installing,
load it with ``pytest -p exactspec.pytest_plugin``.

Fixtures (each a function; the marker's options are its defaults):

- ``exact_lossless(rule, p=None, q=None, **options)``:
  :func:`exactspec.testing.assert_lossless` (``p`` and ``q`` omitted: the family of small
  instances, smallest counterexample first);
- ``exact_acceptance(rule, p, q, expected, **options)``:
  :func:`exactspec.testing.assert_acceptance`;
- ``exact_probability(check, p, q, **options)``: :func:`exactspec.testing.probability`, the
  exact probability that a randomized check holds;
- ``exactspec_options``: the marker's validated options, a dict.

The marker ``@pytest.mark.exactspec(arith=..., grid=..., tolerance=..., max_paths=...,
seconds=...)`` sets those options for one test (or a class, or a module through
``pytestmark``).  A bad value is an error of that test alone, reported when the test is set
up (before its fixtures run): the rest of the session runs, and a test that is deselected
(``-k``, ``-m``) is never checked.

When an ``assert`` compares exact numbers (``assert exact_probability(...) == 1``), pytest's
report shows both values and their exact difference.

Nothing of exactspec's machinery is imported until a fixture is used: loading the plugin
costs a pytest session no more than importing the ``exactspec`` package.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

__all__ = ["OPTIONS", "validate_options"]

#: The marker's options, and what each takes.
OPTIONS = {
    "arith": "a float format: float32, bfloat16, float16 or float64",
    "grid": "a positive integer number of grid points",
    "tolerance": "an exact number >= 0 (a Fraction, an int, or text such as '1/1048576')",
    "max_paths": "a positive integer, or None to insist",
    "seconds": "a positive number of seconds",
    "k": "a positive integer number of drafts",
}
_FORMATS = ("float32", "bfloat16", "float16", "float64")


def _positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _check_one(name: str, value) -> bool:
    if name == "arith":
        return value is None or value in _FORMATS
    if name in ("grid", "k"):
        return _positive_int(value) if name == "k" else value is None or _positive_int(value)
    if name == "max_paths":
        return value is None or _positive_int(value)
    if name == "seconds":
        return (isinstance(value, (int, float, Fraction)) and not isinstance(value, bool)
                and 0 < value < math.inf)
    if name == "tolerance":
        if value is None:
            return True
        if isinstance(value, bool):
            return False
        from .core.dist import parse_number
        from .core.errors import ExactspecError

        try:
            number = (parse_number(value, "tolerance") if isinstance(value, str)
                      else Fraction(value))
        except (TypeError, ValueError, ZeroDivisionError, OverflowError, ExactspecError):
            return False
        return number >= 0
    return False


def validate_options(args: tuple, kwargs: dict, where: str = "") -> dict:
    """The marker's options, checked; raises :class:`pytest.UsageError` naming the bad one.

    >>> validate_options((), {"arith": "float32", "max_paths": 1000})
    {'arith': 'float32', 'max_paths': 1000}
    >>> try:
    ...     validate_options((), {"grid": 0})
    ... except pytest.UsageError as err:
    ...     print(err)
    @pytest.mark.exactspec(grid=0): need a positive integer number of grid points
    """
    at = f" on {where}" if where else ""
    if args:
        raise pytest.UsageError(f"@pytest.mark.exactspec{at}: give options by name "
                                f"({', '.join(OPTIONS)}), not {args!r}")
    for name, value in kwargs.items():
        if name not in OPTIONS:
            raise pytest.UsageError(f"@pytest.mark.exactspec({name}={value!r}){at}: unknown "
                                    f"option; the options are {', '.join(OPTIONS)}")
        if not _check_one(name, value):
            raise pytest.UsageError(f"@pytest.mark.exactspec({name}={value!r}){at}: need "
                                    f"{OPTIONS[name]}")
    return dict(kwargs)


def _merged_options(node) -> dict:
    """The options of every ``exactspec`` marker on the test, the closest one winning."""
    options: dict = {}
    for marker in reversed(list(node.iter_markers("exactspec"))):
        options.update(validate_options(marker.args, marker.kwargs, node.nodeid))
    return options


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "exactspec(arith=None, grid=None, tolerance=None, max_paths=None, "
        "seconds=None, k=None): defaults for exactspec's fixtures in this test "
        "(exact_lossless, exact_acceptance, exact_probability)")


def _options_or_fail(node) -> dict:
    """:func:`_merged_options`, a bad value failing the current test in one line."""
    __tracebackhide__ = True
    try:
        return _merged_options(node)
    except pytest.UsageError as err:
        message = str(err)
    pytest.fail(message, pytrace=False)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Check the test's ``exactspec`` markers as it is set up, before its fixtures.

    A bad value fails that test's setup (an error of that test, in one line); the other
    tests run, and a deselected test is not checked.
    """
    if any(True for _ in item.iter_markers("exactspec")):
        _options_or_fail(item)


@pytest.fixture
def exactspec_options(request) -> dict:
    """The test's ``@pytest.mark.exactspec(...)`` options (validated), as a dict."""
    return _options_or_fail(request.node)


def _with(options: dict, allowed: tuple, given: dict) -> dict:
    merged = {name: value for name, value in options.items() if name in allowed}
    merged.update(given)
    return merged


@pytest.fixture
def exact_lossless(exactspec_options):
    """``exact_lossless(rule, p=None, q=None, **options)``: assert the rule is lossless."""
    from .testing import assert_lossless

    def check(rule, p=None, q=None, **given):
        kwargs = _with(exactspec_options, ("arith", "grid", "tolerance", "max_paths", "k",
                                           "seconds"), given)
        __tracebackhide__ = True
        assert_lossless(rule, p, q, **kwargs)

    return check


@pytest.fixture
def exact_acceptance(exactspec_options):
    """``exact_acceptance(rule, p, q, expected, **options)``: assert the exact acceptance."""
    from .testing import assert_acceptance

    def check(rule, p, q, expected, **given):
        kwargs = _with(exactspec_options, ("arith", "grid", "max_paths", "k", "seconds"),
                       given)
        __tracebackhide__ = True
        assert_acceptance(rule, p, q, expected, **kwargs)

    return check


@pytest.fixture
def exact_probability(exactspec_options):
    """``exact_probability(check, p, q, **options)``: the exact probability that ``check``
    holds (a ``Fraction``, or an exact sympy number)."""
    from .testing import probability

    def compute(check, p, q, **given):
        kwargs = _with(exactspec_options, ("arith", "grid", "max_paths", "seconds", "k"),
                       given)
        return probability(check, p, q, **kwargs)

    return compute


def _exact_number(x) -> bool:
    if isinstance(x, bool):
        return False
    return isinstance(x, (int, Fraction)) or getattr(x, "is_Rational", False) is True


def pytest_assertrepr_compare(config, op, left, right):
    """``assert a == b`` on exact numbers, one of them a ``Fraction``: both values in lowest
    terms and their exact difference (``1 - 16777215/16777216 = 1/16777216``)."""
    if op != "==" or not (isinstance(left, Fraction) or isinstance(right, Fraction)):
        return None
    if not (_exact_number(left) and _exact_number(right)):
        return None
    a, b = (Fraction(int(x.p), int(x.q)) if hasattr(x, "is_Rational") else Fraction(x)
            for x in (left, right))
    d = a - b
    lines = [f"{_text(a)} == {_text(b)}",
             f"exact difference: left - right = {_text(d)} (~{float(d):.3g})"]
    if b == 1 and 0 <= a < 1:
        lines.append(f"the left side misses 1 by exactly {_text(1 - a)}"
                     + (f" = 2**-{(1 - a).denominator.bit_length() - 1}"
                        if (1 - a).numerator == 1 and _power_of_two((1 - a).denominator)
                        else ""))
    return lines


def _power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _text(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"
