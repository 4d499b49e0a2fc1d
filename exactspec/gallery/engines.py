"""Engine-shaped verification rules, written as the engines write them, and their bug classes.

Each rule below is one target call of a chain of ``gamma`` drafts, ``call(s, pair, ctx)`` (the
contract of :mod:`exactspec.sequences.multitoken`), written the way the engine's kernel reads:
all drafts first, one uniform per position, a noise tensor per request, a loop over the
positions, and the same samplers (exponential races, Gumbel-max, inverse CDF on unnormalised
sums).  The engine proves or refutes each on chains exactly; nothing is rewritten into its law
by hand.  Probabilities are lists indexed by token position in the vocabulary, as tensors are.

Sources (read for what each kernel computes; the code here is written from that reading):

- vLLM, ``vllm/v1/sample/rejection_sampler.py`` (``rejection_sample``,
  ``sample_recovered_tokens``, the Triton ``rejection_random_sample_kernel``): one float64
  uniform per draft position, accept iff ``q > 0`` and ``p / q >= u``; recovered tokens for
  *every* position by an exponential race ``argmax(max(p - q, 0) / E)`` with one ``Exp(1)``
  vector ``E`` per request, shared by all its positions; the bonus token from the ordinary
  sampler (itself an exponential race over the target) -> :func:`vllm_call`;
- vLLM Model Runner V2, ``vllm/v1/worker/gpu/spec_decode/rejection_sampler.py`` and
  ``vllm/v1/worker/gpu/sample/gumbel.py``: strict ``log p > log u + log q``, recovery by Gumbel-max over the
  residual with noise keyed by (request, position); vLLM issue 47386 / PR 54282: the
  drafter's Gumbel noise was the verifier's -> :func:`mrv2_call`,
  :func:`mrv2_shared_draft_noise_call`;
- FlashInfer, ``include/flashinfer/sampling.cuh`` (``ChainSpeculativeSampling``): accept iff
  ``u q < p`` (strict), uniforms drawn in order one per position (the later ones still drawn
  for the metrics), then one more uniform scaled by the unnormalised residual's sum and the
  first token whose inclusive cumulative sum exceeds it -> :func:`flashinfer_chain_call`;
- Hugging Face transformers, ``src/transformers/generation/utils.py``
  (``_speculative_sampling``): all ``gamma`` uniforms up front, ``r <= p / q``, the number of
  *leading* accepts, then ``multinomial`` of the clamped, normalised residual (or of the target
  at the bonus slot) -> :func:`hf_call`;
- SGLang, ``sgl-kernel/csrc/speculative/speculative_sampling.cuh``
  (``TreeSpeculativeSamplingTargetOnly``), on a chain: one coin per node compared with the
  cumulative target mass of the candidates (``coin <= acc``), the rejected candidate zeroed
  out of the target row, the final token by inverse CDF with one more coin ->
  :func:`sglang_chain_call`;
- block verification (Sun et al., ICLR 2025, arXiv:2403.10444) as vLLM's MRV2 kernel
  (PR 46781) writes it: running capped product of ratios ``p_i``, ``h_i = Z_i / (Z_i + 1 -
  p_i)``, every position scanned, the *last* ``i`` with ``u_i <= h_i`` wins, residual
  ``max(p_tau P - Q, 0)`` by Gumbel-max, bonus at full acceptance -> :func:`block_kernel_call`.

Bug classes, each of its engine's kind (refuted exactly by :func:`run_engine_gallery`):

- :func:`vllm_race_over_p_call`: the recovery race over ``p`` instead of the residual;
- :func:`mrv2_shared_draft_noise_call`: the drafter's Gumbel noise reused by the recovery;
- :func:`flashinfer_reused_uniform_call`: the rejecting position's uniform reused for the final
  token instead of a fresh one;
- :func:`hf_all_accepts_call`: ``accepted.sum()`` (every accept) instead of the leading accepts;
- :func:`sglang_untried_residual_call`: the rejected candidate left in the final row;
- :func:`product_uniform_chain_call`: a product of two uniforms where one uniform belongs.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

from ..core.dist import Dist
from ..engine.races import log
from ..sequences.chains import draft_chain
from ..sequences.context import ContextPair
from ..sequences.multitoken import Verifier, prove_sequence
from ..verdict import verdict_of

__all__ = ["EngineRule", "vllm_call", "vllm_race_over_p_call", "vllm_recovered_tokens",
           "mrv2_call", "mrv2_shared_draft_noise_call", "flashinfer_chain_call",
           "flashinfer_reused_uniform_call", "hf_call", "hf_all_accepts_call",
           "sglang_chain_call", "sglang_untried_residual_call", "block_kernel_call",
           "product_uniform_chain_call", "ENGINE_GALLERY", "ENGINE_RULES", "EngineGalleryRow",
           "run_engine_gallery", "relu_residual"]


def _rows(pair: ContextPair, ctx: tuple, drafts: list):
    """Target rows ``P[0..gamma]`` and draft rows ``Q[0..gamma-1]`` along the drafted chain,
    as lists over the vocabulary (what one verify pass computes)."""
    P, Q = [], []
    c = tuple(ctx)
    for x in drafts:
        P.append(list(pair.target(c).probs))
        Q.append(list(pair.draft(c).probs))
        c = c + (x,)
    P.append(list(pair.target(c).probs))
    return P, Q


def relu_residual(p: list, q: list) -> list:
    """The residual ``max(p - q, 0)`` entry by entry (not normalised)."""
    return [max(a - b, 0) for a, b in zip(p, q)]


# -- vLLM V1 --------------------------------------------------------------------------------

def vllm_call(s, pair: ContextPair, ctx, gamma: int, *, race_over_p: bool = False,
              noise_per_position: bool = False) -> tuple:
    """vLLM V1's random-sampling rejection path for one request (module docstring).

    ``noise_per_position=True`` draws a fresh ``E`` for every position instead of one per
    request (to compare the two: :mod:`exactspec.claims.races`)."""
    V = pair.labels
    n = len(V)
    index = {t: i for i, t in enumerate(V)}
    drafts = draft_chain(s, pair, ctx, gamma)
    P, Q = _rows(pair, ctx, drafts)
    bonus = s.race(P[gamma], s.exponentials(n), what="bonus")        # the ordinary sampler
    U = [s.uniform() for _ in range(gamma)]                           # one per position
    E = s.exponentials(n)                                             # one per request
    recovered = []
    for t in range(gamma):                                            # every position, eagerly
        r = P[t] if race_over_p else relu_residual(P[t], Q[t])
        if noise_per_position and t > 0:
            E = s.exponentials(n)
        if any(v > 0 for v in r):
            recovered.append(V[(r / E).argmax(what=f"recovered{t + 1}")])
        else:
            recovered.append(V[0])                                    # argmax of zeros
    out = []
    for t in range(gamma):
        x = drafts[t]
        p, q = P[t][index[x]], Q[t][index[x]]
        if q > 0 and p / q >= U[t]:                                   # non-strict
            out.append(x)
        else:
            out.append(recovered[t])
            return tuple(out)
    return tuple(out) + (bonus,)


def vllm_recovered_tokens(s, pair: ContextPair, ctx, gamma: int, *,
                          noise_per_position: bool = False) -> tuple:
    """The drafts and *all* recovered tokens vLLM computes in one call (before the accept loop
    picks at most one): their joint law shows the coupling the shared noise creates."""
    V = pair.labels
    n = len(V)
    drafts = draft_chain(s, pair, ctx, gamma)
    P, Q = _rows(pair, ctx, drafts)
    E = s.exponentials(n)
    recovered = []
    for t in range(gamma):
        if noise_per_position and t > 0:
            E = s.exponentials(n)
        r = relu_residual(P[t], Q[t])
        recovered.append(V[(r / E).argmax()] if any(v > 0 for v in r) else V[0])
    return tuple(drafts), tuple(recovered)


def vllm_race_over_p_call(s, pair, ctx, gamma):
    """BUG: the recovered token raced over ``p`` instead of ``max(p - q, 0)``."""
    return vllm_call(s, pair, ctx, gamma, race_over_p=True)


# -- vLLM Model Runner V2 -------------------------------------------------------------------

def mrv2_call(s, pair: ContextPair, ctx, gamma: int, *, shared: bool = False) -> tuple:
    """MRV2: a Gumbel-max drafter, strict ``log p > log u + log q``, Gumbel-max recovery and
    bonus; noise
    per (request, position).  ``shared=True`` is the bug of vLLM issue 47386: the recovery at
    position ``t`` reuses the noise that drew the draft at ``t``."""
    V = pair.labels
    n = len(V)
    index = {t: i for i, t in enumerate(V)}
    draft_noise, drafts, c = [], [], tuple(ctx)
    for t in range(gamma):                                            # the drafter
        G = s.gumbels(n)
        draft_noise.append(G)
        x = V[(log(list(pair.draft(c).probs)) + G).argmax(what=f"draft{t + 1}")]
        drafts.append(x)
        c = c + (x,)
    s.drafted.extend(drafts)
    P, Q = _rows(pair, ctx, drafts)
    out = []
    for t in range(gamma + 1):
        if t < gamma:
            u = s.uniform()
            x = drafts[t]
            if log(P[t][index[x]]) > log(u) + log(Q[t][index[x]]):   # strict, in log space
                out.append(x)
                continue
            row = relu_residual(P[t], Q[t])
        else:
            row = P[gamma]                                            # the bonus slot
        G = draft_noise[t] if (shared and t < gamma) else s.gumbels(n)
        out.append(V[(log(row) + G).argmax(what="resample")])
        return tuple(out)


def mrv2_shared_draft_noise_call(s, pair, ctx, gamma):
    """BUG (vLLM issue 47386): the drafter's Gumbel noise reused by the verifier's recovery."""
    return mrv2_call(s, pair, ctx, gamma, shared=True)


# -- FlashInfer -----------------------------------------------------------------------------

def _first_exceeding(V, R: list, threshold):
    """The first token with ``R > 0`` whose inclusive cumulative sum exceeds ``threshold``
    (strict), else the last such token: FlashInfer's ``DeviceSamplingFromProb``."""
    cum = 0
    last = None
    for i, r in enumerate(R):
        if r > 0:
            cum = cum + r
            last = i
            if threshold < cum:
                return V[i]
    return V[last]


def flashinfer_chain_call(s, pair: ContextPair, ctx, gamma: int, *,
                          reuse: bool = False) -> tuple:
    """FlashInfer's ``ChainSpeculativeSampling`` for one row (module docstring)."""
    V = pair.labels
    index = {t: i for i, t in enumerate(V)}
    drafts = draft_chain(s, pair, ctx, gamma)
    P, Q = _rows(pair, ctx, drafts)
    out, pos, u_reject = [], gamma, None
    for i in range(gamma):
        u = s.uniform()
        x = drafts[i]
        if u * Q[i][index[x]] < P[i][index[x]]:                       # strict, multiplied
            out.append(x)
        else:
            pos, u_reject = i, u
            break
    for _ in range(pos + 1, gamma):                                   # metric draws, unused
        s.uniform()
    R = relu_residual(P[pos], Q[pos]) if pos < gamma else P[gamma]
    total = sum(R)
    u_final = u_reject if (reuse and u_reject is not None) else s.uniform()
    out.append(_first_exceeding(V, R, u_final * total))
    return tuple(out)


def flashinfer_reused_uniform_call(s, pair, ctx, gamma):
    """BUG: the final token drawn with the uniform that rejected, not a fresh one."""
    return flashinfer_chain_call(s, pair, ctx, gamma, reuse=True)


# -- Hugging Face transformers --------------------------------------------------------------

def hf_call(s, pair: ContextPair, ctx, gamma: int, *, all_accepts: bool = False) -> tuple:
    """transformers' ``_speculative_sampling`` (batch size 1, no end-of-sequence candidate)."""
    V = pair.labels
    index = {t: i for i, t in enumerate(V)}
    drafts = draft_chain(s, pair, ctx, gamma)
    P, Q = _rows(pair, ctx, drafts)
    r = [s.uniform() for _ in range(gamma)]                           # torch.rand_like(ratio)
    accepted = []
    for i, x in enumerate(drafts):
        p, q = P[i][index[x]], Q[i][index[x]]
        if q == 0:                                                    # inf accepts, NaN not
            accepted.append(p > 0)
        else:
            accepted.append(r[i] <= p / q)
    if all_accepts:
        n = sum(accepted)
    else:
        n = 0
        while n < gamma and accepted[n]:
            n += 1
    if n < gamma:
        row = relu_residual(P[n], Q[n])
        total = sum(row)
        row = [v / total for v in row]
    else:
        row = P[gamma]
    t = s.draw(Dist(row, V, check=False), "multinomial")
    return tuple(drafts[:n]) + (t,)


def hf_all_accepts_call(s, pair, ctx, gamma):
    """BUG: ``n = accepted.sum()`` counts every accept, not the leading ones."""
    return hf_call(s, pair, ctx, gamma, all_accepts=True)


# -- SGLang -----------------------------------------------------------------------------------

def sglang_chain_call(s, pair: ContextPair, ctx, gamma: int, *,
                      keep_tried: bool = False) -> tuple:
    """SGLang's target-only tree sampling on a chain (one candidate per depth)."""
    V = pair.labels
    index = {t: i for i, t in enumerate(V)}
    drafts = draft_chain(s, pair, ctx, gamma)
    P, _ = _rows(pair, ctx, drafts)
    coins = [s.uniform() for _ in range(gamma)]                       # one per node
    out = []
    row = P[0]
    tried = [0] * len(V)
    for depth in range(gamma):
        tok = index[drafts[depth]]
        acc = row[tok]                                                # acc over siblings
        if coins[depth] <= acc:                                       # non-strict
            out.append(drafts[depth])
            row = P[depth + 1]
            continue
        if not keep_tried:
            tried[tok] = row[tok]                                     # draft_probs[tok] = ps
        break
    R = [max(a - b, 0) for a, b in zip(row, tried)] if len(out) < gamma else row
    u = s.uniform()                                                   # coins_final
    out.append(_first_exceeding(V, R, u * sum(R)))
    return tuple(out)


def sglang_untried_residual_call(s, pair, ctx, gamma):
    """BUG: the rejected candidate is not zeroed out of the final row."""
    return sglang_chain_call(s, pair, ctx, gamma, keep_tried=True)


# -- block verification -----------------------------------------------------------------------

def block_kernel_call(s, pair: ContextPair, ctx, gamma: int) -> tuple:
    """Block verification as vLLM MRV2's kernel writes it (module docstring); ``h = 1`` on a
    zero denominator, as MRV2 does."""
    V = pair.labels
    n = len(V)
    index = {t: i for i, t in enumerate(V)}
    drafts = draft_chain(s, pair, ctx, gamma)
    P, Q = _rows(pair, ctx, drafts)
    ratio = [Fraction(1)]
    for i, x in enumerate(drafts):
        p, q = P[i][index[x]], Q[i][index[x]]
        ratio.append(min(ratio[-1] * p / q, 1) if q > 0 else Fraction(1))
    accepted_len = 0
    for t in range(gamma):                                            # no early stop
        u = s.uniform()
        pt = ratio[t + 1]
        if t < gamma - 1:
            Z = sum(max(pt * a - b, 0) for a, b in zip(P[t + 1], Q[t + 1]))
            denom = Z + 1 - pt
            h = Z / denom if denom > 0 else 1
        else:
            h = pt
        if u <= h:                                                    # the last pass wins
            accepted_len = t + 1
    tau = accepted_len
    if tau == gamma:
        row = P[gamma]
    else:
        row = [max(ratio[tau] * a - b, 0) for a, b in zip(P[tau], Q[tau])]
    y = V[(log(row) + s.gumbels(n)).argmax(what="resample")]
    return tuple(drafts[:tau]) + (y,)


def product_uniform_chain_call(s, pair: ContextPair, ctx, gamma: int) -> tuple:
    """BUG: the acceptance test multiplies two uniforms (``u * v * q < p``) where one uniform
    belongs (a kernel that folded a second random draw into the test); otherwise
    FlashInfer's chain."""
    V = pair.labels
    index = {t: i for i, t in enumerate(V)}
    drafts = draft_chain(s, pair, ctx, gamma)
    P, Q = _rows(pair, ctx, drafts)
    out, pos = [], gamma
    for i in range(gamma):
        u, v = s.uniform(), s.uniform()
        x = drafts[i]
        if u * v < P[i][index[x]] / Q[i][index[x]]:
            out.append(x)
        else:
            pos = i
            break
    R = relu_residual(P[pos], Q[pos]) if pos < gamma else P[gamma]
    out.append(_first_exceeding(V, R, s.uniform() * sum(R)))
    return tuple(out)


# -- the catalogue --------------------------------------------------------------------------

class EngineRule(Verifier):
    """A ``call(s, pair, ctx, gamma)`` of this module as a multi-token verifier."""

    def __init__(self, call: Callable, gamma: int, name: str | None = None):
        self.function = call
        self.gamma = gamma
        self.name = name or call.__name__.removesuffix("_call")
        self.max_tokens = gamma + 1
        self.drafted = gamma

    def call(self, s, pair, ctx):
        return self.function(s, pair, ctx, self.gamma)

    def describe(self):
        return {**super().describe(), "gamma": self.gamma}

    def identity(self):
        """A rule of :data:`ENGINE_GALLERY` under its own name (rebuilt by the registry of
        sequence verifiers); ``None`` for any other function."""
        if self.function in ENGINE_RULES and self.name == _rule_name(self.function):
            return self.name, self.gamma, {}
        return None


#: ``(correct rule, its bug classes)`` per engine.
ENGINE_GALLERY = (
    (vllm_call, (vllm_race_over_p_call,)),
    (mrv2_call, (mrv2_shared_draft_noise_call,)),
    (flashinfer_chain_call, (flashinfer_reused_uniform_call, product_uniform_chain_call)),
    (hf_call, (hf_all_accepts_call,)),
    (sglang_chain_call, (sglang_untried_residual_call,)),
    (block_kernel_call, ()),
)


def _rule_name(call) -> str:
    return call.__name__.removesuffix("_call")


#: Every rule of the gallery (correct versions and bug classes) by name.
ENGINE_RULES = {call: _rule_name(call) for correct, bugs in ENGINE_GALLERY
                for call in (correct,) + tuple(bugs)}


@dataclass
class EngineGalleryRow:
    """One rule on one pair: ``verdict`` is ``"lossless"`` or ``"lossy-logic"`` (exact
    arithmetic, ideal uniforms); ``tv`` exact (0 when lossless)."""

    name: str
    gamma: int
    correct: bool
    verdict: str
    tv: object
    paths: int
    seconds: float


def _simplified(value):
    """Exact values with logarithms (products of uniforms) in a short sympy form."""
    if isinstance(value, (int, Fraction)):
        return value
    import sympy

    return sympy.nsimplify(sympy.expand(value))


def run_engine_gallery(pair: ContextPair, gammas=(1, 2), *, rules=None) -> list:
    """Prove every correct rule and refute every bug class of :data:`ENGINE_GALLERY` on
    ``pair`` for each ``gamma`` (the first ``gamma + 1`` tokens of generation)."""
    rows = []
    for correct, bugs in ENGINE_GALLERY:
        for call in (correct,) + tuple(bugs):
            if rules is not None and call not in rules:
                continue
            for gamma in gammas:
                proof = prove_sequence(EngineRule(call, gamma), pair, gamma + 1)
                rows.append(EngineGalleryRow(call.__name__.removesuffix("_call"), gamma,
                                             call is correct,
                                             verdict_of(proof.lossless, proof.lossless),
                                             _simplified(proof.tv), proof.paths,
                                             proof.seconds))
    return rows
