"""Reading a certificate, bounded: the file read up to a byte budget and its nesting measured
before it is parsed (:func:`load_certificate`), and exact values read by a small grammar
(:func:`exact_number`), nothing evaluated.
"""

import json
import re
from fractions import Fraction

from .report import MAX_BYTES, MAX_DEPTH, MAX_DIGITS, CertificateError

__all__ = ["load_certificate", "parse_certificate", "exact_number", "short_repr"]

def load_certificate(path, max_bytes=MAX_BYTES, max_depth=MAX_DEPTH):
    """Read a certificate file: at most ``max_bytes`` (one more byte read tells a larger
    file, ``/dev/zero`` included, without reading it all), nested at most ``max_depth``
    deep, JSON.  Raises :class:`CertificateError` with a one-line reason.

    >>> import os, tempfile
    >>> name = os.path.join(tempfile.mkdtemp(), "deep.json")
    >>> _ = open(name, "w").write("[" * 100000 + "]" * 100000)
    >>> load_certificate(name)
    Traceback (most recent call last):
    ...
    exactspec.checker.CertificateError: nested more than 64 deep
    """
    import os
    import stat

    try:                                 # opened without blocking: a FIFO is refused, not read
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with open(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if stat.S_ISFIFO(info.st_mode) or stat.S_ISSOCK(info.st_mode):
                kind = "a FIFO (named pipe)" if stat.S_ISFIFO(info.st_mode) else "a socket"
                raise CertificateError(f"it is {kind}, not a file: save the certificate to a "
                                       "file first")
            too_large = stat.S_ISREG(info.st_mode) and info.st_size > max_bytes
            data = b"" if too_large else handle.read(max_bytes + 1)   # its size says so
            data = data if data is not None else b""
    except OSError as err:
        raise CertificateError(f"cannot read it: {err.strerror or err}") from None
    if too_large or len(data) > max_bytes:
        raise CertificateError(f"larger than {max_bytes} bytes (--max-bytes to allow more)")
    return parse_certificate(data, max_depth)


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def parse_certificate(data: bytes, max_depth=MAX_DEPTH):
    """JSON from bytes, its nesting measured before parsing (strings left out)."""
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKET)
    depth = deepest = 0
    for byte in brackets:
        depth += 1 if byte in (91, 123) else -1
        if depth > deepest:
            deepest = depth
            if deepest > max_depth:
                raise CertificateError(f"nested more than {max_depth} deep")
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise CertificateError("not UTF-8 text") from None
    except RecursionError:
        raise CertificateError(f"nested more than {max_depth} deep") from None
    except ValueError as err:            # JSON errors, integers of over 4300 digits
        raise CertificateError(f"not JSON: {str(err)[:120]}") from None


# -- exact values -------------------------------------------------------------------------
_NUMBER = re.compile(r"-?[0-9]+(?:/[0-9]+)?")


def exact_number(value, what="a value"):
    """An exact value of a certificate: a JSON integer, or a string ``-?N`` or ``-?N/D``
    (at most :data:`MAX_DIGITS` digits each, ``D`` not 0).  Nothing else is read: no
    exponents, no decimals, no expressions.

    >>> exact_number("-3/5"), exact_number(2)
    (Fraction(-3, 5), Fraction(2, 1))
    >>> exact_number("1e999999999")
    Traceback (most recent call last):
    ...
    exactspec.checker.CertificateError: a value: '1e999999999' is not an integer or a fraction N/D
    """
    if isinstance(value, int) and not isinstance(value, bool):
        if value.bit_length() > MAX_DIGITS * 4:
            raise CertificateError(f"{what}: an integer of more than {MAX_DIGITS} digits")
        return Fraction(value)
    if not isinstance(value, str):
        raise CertificateError(f"{what}: {short_repr(value)} is not an exact value "
                               "(a string N/D)")
    if len(value) > 2 * MAX_DIGITS + 2:
        raise CertificateError(f"{what}: more than {MAX_DIGITS} digits")
    if not _NUMBER.fullmatch(value):
        raise CertificateError(f"{what}: {short_repr(value)} is not an integer or a "
                               "fraction N/D")
    numerator, _, denominator = value.partition("/")
    if len(numerator.lstrip("-")) > MAX_DIGITS or len(denominator) > MAX_DIGITS:
        raise CertificateError(f"{what}: more than {MAX_DIGITS} digits")
    if denominator and int(denominator) == 0:
        raise CertificateError(f"{what}: {value!r} divides by 0")
    return Fraction(int(numerator), int(denominator or 1))


def short_repr(value, width=60) -> str:
    """``repr(value)``, cut to ``width`` characters with ``...`` when longer."""
    text = repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."

