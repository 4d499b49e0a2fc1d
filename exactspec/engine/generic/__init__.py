"""The vocabulary-generic interpreter: one run of a method decides ``law(t) = p(t)`` for every
vocabulary size at once.

The vocabulary is a few *distinguished* tokens ``t`` (symbols ``p_t``, ``q_t``) and *the
rest*, an unknown number of further tokens.  The rest is never listed: it is cut into
*classes*, and a class is seen only through its aggregates ``P_c = sum_{x in c} p_x`` and
``Q_c = sum_{x in c} q_x``.  A class is defined by *class facts*: signs of forms
``a p_x + b q_x`` that hold for every token ``x`` of the class, where ``a``, ``b`` may involve
the aggregates (for example ``p_x - q_x > 0``, or ``p_x - q_x - S q_x < 0`` with ``S`` the
residual normaliser).  A case of the proof fixes the classes (each non-empty), their facts, and
the signs of the aggregate quantities the method compared.  When the method needs the sign of a
new form on a class, the class is split into the sub-classes where it is ``<``, ``=``, ``>``
(each of the seven non-empty combinations is a case) and the method is run again from the
start, as in :mod:`~exactspec.engine.symbolic`.

**Why the aggregates suffice (the soundness argument).**  Inside a class every per-token
comparison has the same outcome for every token, so the method takes the same branches for all
of them.  A path's weight is a product of branch probabilities; for each token ``x`` drawn from
the rest on that path, the engine requires the weight to be *linear and homogeneous* in
``(p_x, q_x)`` (``a p_x + b q_x``, with ``a``, ``b`` free of ``x``).  Then the sum of the weight
over all tokens of the class is the same expression at ``(P_c, Q_c)``, and over several draws
the sums factor because the weight is multilinear.  A class fact ``a p_x + b q_x > 0`` for every
token gives ``a P_c + b Q_c > 0`` for the class, and conversely any aggregates satisfying the
facts are realised by a single token (or by any number of proportional tokens), so every point
of a case is a real vocabulary: a refutation at a case's witness is a real counterexample, and
a case's closed form is exact for every vocabulary that falls in it.  Tokens with
``p_x = q_x = 0`` contribute nothing to any homogeneous quantity and are ignored.

**What the method may do, and what the engine checks.**  The method runs unchanged, against
the sampler ``s`` and :class:`~exactspec.core.dist.Dist` objects, but the values it sees are
instrumented:

- a distinguished token's entry is a symbol; any arithmetic and comparison on it is allowed;
- a class's entry in a vector (``p.probs``) is a :class:`~.values.ClassEntry`: the per-token
  expression of that class.  Entries of the same class combine elementwise; multiplying or
  dividing by a number is elementwise; adding entries of *different* tokens is a sum over
  tokens (:class:`~.values.PartialSum`), which needs the per-token expression to be linear and
  homogeneous; a partial sum is usable as a number only once it covers every class of the
  rest (sums over a subset of the rest, such as prefix sums in token order, are refused);
  comparing a class entry with another token's value, with a number when the entry is not
  scale-free, or using it as a number is refused;
- ``x[d]`` for a token ``d`` drawn from the rest (a :class:`~.values.DrawnToken`) is that
  token's own value, a symbol pair per draw; a comparison that mixes two drawn tokens, a
  comparison whose sign is not decided by linear homogeneous forms in the token's
  ``(p_x, q_x)``, a path weight that is not multilinear in the drawn tokens, testing two drawn
  tokens for equality, hashing a drawn token, drafting without replacement, explicit uniforms
  and inverse-CDF picks (which depend on the token order), and a method that returns a whole
  class are all refused with :class:`~.values.NotGeneric`;
- each case checks that its paths' weights add up to exactly 1.

**Identities used beyond the linear programme.**  A normaliser built after two rejections,
``sum_x (r_x - q_x)^+``, is a nonlinear expression of the aggregates, so the exact LP alone
cannot exclude its sign 0.  The *balance identity* does: when every token's entry ``d_x`` was
compared with 0 (as ``max(d, 0)`` does) and the entries sum to 0 over the vocabulary (checked
symbolically; true whenever ``d = a - b`` for two distributions), the positive-part sum equals
``sum_x (-d_x)^+``, so it is ``>= 0``, and ``> 0`` when some entry is strictly negative
(:meth:`~.cases.GenericCase.note_balance`).  Leaves pruned this way carry the identity in the
certificate, and :mod:`exactspec.generic_checker` re-checks its algebra.  Equalities that are
nonlinear in the aggregates (a class where ``r_x = q_x``) reduce a case's law and path total
through a Groebner basis (:func:`~.closed_forms._vanishes`): a numerator in the ideal of the case's
equalities is 0 in the case.  When a case has already fixed the sign of such a sum (an earlier
split) and the balance excludes it, the case is empty (an infeasible leaf carrying the
balance).  A variable the case fixes to 0 (``q_t = 0``) is substituted into the nonlinear
facts and atoms, which may then be linear and decided by the LP (the checker does the same).

**Keeping the algebra small (and what that changes in the certificate).**  A complete sum used
as a number (a normaliser ``S = sum_x (r_x - q_x)^+``) is named by a case-local symbol
(:meth:`~.cases.GenericCase.abbreviate`), so the method's later arithmetic stays in terms of
``S`` rather than an expanded quotient of the aggregates.  A name never decides anything: every
sign is taken, and every record, fact and certificate entry written, after
:meth:`~.cases.GenericCase.full` has put the sums back.  A case's ``law - target`` (and
acceptance, and path total) is tested for zero by :func:`~.closed_forms._zero_on_case`: in a
polynomial ring, the names are eliminated one by one (``b^d num`` with ``S = a / b``,
``b != 0``), the case's linear equalities substituted and the nonlinear ones reduced away; a
zero answer is a proof.  A value shown equal to its target is
then *reported as* the target (``law(t) = p_t``); the certificate also records the path sums
as the run built them, with the named sums' definitions, and the sympy checker re-derives each
identity from those by plain substitution and a common denominator (slower, independent of the
elimination), besides checking the case tree, the infeasible leaves and, at each witness, that
exact enumeration of the method's paths equals the closed form.  RRS with ``k = 2`` (12 cases,
27 infeasible leaves) is proved this way in under a minute.

Sums over part of the rest (a prefix in slot order) are caught by an order check: every case
with several classes is run a second time with its classes in reverse order and must give the
same law.  Not intercepted, and therefore covered by the cross-checks instead: a method that
uses the number of slots (``len(p)``) or a label's position as a number.  The cross-checks
evaluate the generic closed form on concrete instances of several sizes (with the
distinguished token at different positions) and compare with exact enumeration
(:meth:`~.interpreter.GenericProof.law_at`).

With one distinguished token ``t`` and the rest being every other token, ``law(t) = p(t)`` in
every case proves the method lossless for every vocabulary size and every ``p``, ``q`` (zeros
allowed): any token of any vocabulary can play ``t``.

>>> from exactspec.methods.naive import naive
>>> proof = prove_generic(naive)        # keeps the draft: law q_t at every token
>>> proof.verdict, proof.outside
('refuted', None)

(The one-draft rule's proof, ``prove_generic(sps)``, takes a few seconds; it runs in
``exactspec prove lossless-rule``; RRS with two drafts, ``prove_generic(rrs, 2)``, about 35 s
of CPU, in ``exactspec prove rrs-every-size``; both in ``tests/test_generic.py``.)

**The modules.**  :mod:`~.values` holds what the method sees (tokens, class entries, partial
sums, and the refusal :class:`~.values.NotGeneric`); :mod:`~.cases` the cases and their
splits (:class:`~.cases.GenericCase`); :mod:`~.interpreter` the sampler, one run of a case
through the engine's depth-first walk, and :func:`~.interpreter.prove_generic`;
:mod:`~.closed_forms` the judgement of a finished case (its closed forms tested for zero,
checked at witnesses); :mod:`~.replay` a proof's or a certificate's closed forms evaluated on
a concrete instance (:func:`~.replay.certificate_law_at`).  This package re-exports their
public names.
"""

from __future__ import annotations

from .cases import GenericCase
from .closed_forms import GenericCaseResult
from .interpreter import GenericProof, prove_generic
from .replay import certificate_law_at
from .values import (KAPPA, PI, ClassEntry, ClassLabel, DistinguishedEntry, DrawnToken,
                     NotGeneric, PartialSum, Token)

__all__ = ["NotGeneric", "Token", "ClassLabel", "DrawnToken", "ClassEntry", "DistinguishedEntry",
           "PartialSum", "GenericCase", "GenericCaseResult", "GenericProof", "prove_generic",
           "PI", "KAPPA", "certificate_law_at"]
