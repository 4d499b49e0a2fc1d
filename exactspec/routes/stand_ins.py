"""What the two routes that hand a rule stand-in values share: the requests they take.

The draft axis (:mod:`exactspec.routes.draft_axis`) and law leaves
(:mod:`exactspec.routes.law_leaves`) run a rule written
with the sampler ``s`` with values that stand for many (the draft as every token at once, a
resample as its law).  Both take exact runs only, of rows of plain rationals, never a
PyTorch rule (its own axis routes take it) nor a request that lists its paths (a
certificate: one run stands for many paths), and never a rule whose code calls ``type()`` or
``id()``, which no stand-in can answer for (:mod:`exactspec.engine.identity_reads`).

>>> from exactspec.core.dist import Dist
>>> from exactspec.routes.request import Request
>>> r = Request(run=lambda s, p, q, k: s.draft(q), name="draft", p=Dist.parse("1/2,1/2"),
...             q=Dist.parse("1/3,2/3"), arith="float32")
>>> stand_in_run(r)
Traceback (most recent call last):
...
exactspec.core.signals.CannotProceed: a float run
"""

from __future__ import annotations

from fractions import Fraction

from ..core.signals import CannotProceed
from .paths import naming_user_lines
from .request import Request

__all__ = ["stand_in_run"]


def stand_in_run(request: Request):
    """The rule of ``request`` as the stand-in routes run it (a user's rule naming the
    user's lines in its errors), or :class:`~exactspec.core.signals.CannotProceed` with
    why they do not take it."""
    if request.tensor_rule is not None:
        raise CannotProceed("a PyTorch rule")
    if request.arith is not None:
        raise CannotProceed("a float run")
    if request.keep_paths or request.on_path is not None:
        raise CannotProceed("the paths are listed (a certificate)")
    if not all(type(v) is Fraction or type(v) is int
               for row in (request.p, request.q) for v in row.probs):
        raise CannotProceed("rows that are not plain rationals")
    if not request.user:
        return request.run
    from ..engine.identity_reads import identity_reads

    why = identity_reads(request.run)
    if why is not None:
        raise CannotProceed(f"the rule {why}, which no stand-in value can answer for")
    return naming_user_lines(request.run, request.name)
