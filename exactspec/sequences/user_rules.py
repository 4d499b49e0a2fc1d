"""A user's multi-position rule, ``f(s, pair, ctx) -> tuple of tokens``, proved on ``(p, q)``.

The command line's ``verify FILE.py:f --tokens M`` lands here: ``f`` is one target call
written against the sampling interface (drafts, uniforms, noise vectors and races), run over
the context-free pair that has ``p`` and ``q`` at every context; the first ``M`` generated
tokens are compared with ``prod_i p(x_i)`` exactly (:func:`.multitoken.prove_sequence`).

>>> from exactspec.core.dist import Dist
>>> def one(s, pair, ctx):
...     p, q = pair.target(ctx), pair.draft(ctx)
...     x = s.draft(q)
...     return (x,) if s.coin(min(1, p[x] / q[x])) else (s.draw(p),)
>>> report = prove_user_rule(one, Dist.parse("1/2,1/2"), Dist.parse("1/4,3/4"), 1)
>>> report["verdict"], report["tv"]
('REFUTED', '1/8')
"""

from __future__ import annotations

from fractions import Fraction

from ..core.dist import exact_str
from ..core.errors import InvalidInput
from ..engine.watch import watched
from .context import ContextPair, context_key
from .multitoken import FunctionVerifier, prove_sequence

__all__ = ["prove_user_rule", "user_rule_text"]


def _value(v) -> str:
    if isinstance(v, (int, Fraction)):
        return exact_str(v)
    return str(v)                       # an exact sympy value (logarithms of products)


def prove_user_rule(spec, p, q, m: int, *, max_paths: int | None = 10**7) -> dict:
    """Prove ``spec`` (``file.py:function``, ``module:function`` or a function
    ``f(s, pair, ctx)``) on the context-free pair ``(p, q)`` for the first ``m`` tokens;
    a JSON-ready report (exact values as strings, floats under ``*_float`` keys)."""
    from ..methods import get_method

    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise InvalidInput(f"--tokens {m!r}: need a number of tokens >= 1")
    method = get_method(spec)
    name = spec if isinstance(spec, str) else getattr(spec, "__name__", "rule")
    verifier = FunctionVerifier(lambda s, pair, ctx: method.run(s, pair, ctx, 1), name, m, 0)
    pair = ContextPair.context_free(p, q)
    with watched(method.run):           # hidden randomness refused; exact values handed out
        proof = prove_sequence(verifier, pair, m, max_paths=max_paths)
    report = {
        "kind": "exactspec-sequence-report",
        "rule": name,
        "m": m,
        "labels": [str(t) for t in pair.labels],
        "lossless": proof.lossless,
        "verdict": "PROVED" if proof.lossless else "REFUTED",
        "law": {context_key(t): _value(w) for t, w in proof.law.items() if w != 0},
        "target": {context_key(t): _value(w) for t, w in proof.target.items() if w != 0},
        "tokens_per_call": _value(proof.tokens_per_call),
        "tokens_per_call_float": float(proof.tokens_per_call),
        "paths": proof.paths,
        "calls_enumerated": proof.calls,
    }
    if not proof.lossless:
        report["differs"] = [context_key(t) for t in proof.differs]
        report["tv"] = _value(proof.tv)
        report["tv_float"] = float(proof.tv)
    return report


def user_rule_text(report: dict, max_rows: int = 27) -> str:
    """A short summary of :func:`prove_user_rule`'s report."""
    lines = [f"rule {report['rule']}: first {report['m']} tokens, {report['paths']} paths "
             f"enumerated over {report['calls_enumerated']} contexts"]
    rows = sorted(set(report["law"]) | set(report["target"]))
    for t in rows[:max_rows]:
        got, want = report["law"].get(t, "0"), report["target"].get(t, "0")
        lines.append(f"  {t:>12}  law {got:>12}  target {want:>12}"
                     + ("" if got == want else "  differs"))
    if len(rows) > max_rows:
        lines.append(f"  ... {len(rows) - max_rows} more")
    lines.append(f"tokens per call = {report['tokens_per_call']}")
    if report["lossless"]:
        lines.append("PROVED: the first tokens follow the target's joint law exactly")
    else:
        lines.append(f"REFUTED: TV(law, target) = {report['tv']}")
    return "\n".join(lines)
