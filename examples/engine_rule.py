"""A multi-position rule as vLLM's rejection sampler writes it, and a tempting variant.

One target call over a chain of GAMMA = 2 drafts: all drafts first, one uniform per position,
ONE exponential noise vector for the whole request (shared by its positions), a recovered token
for every position by an exponential race over the residual, the bonus token by a race over
the target.  The first rejection emits its recovered token and ends the call.

    exactspec verify examples/engine_rule.py:vllm_rule --tokens 3 --p 1/2,1/3,1/6 --q 1/6,1/6,2/3
    exactspec verify examples/engine_rule.py:race_over_p --tokens 3 --p 1/2,1/3,1/6 --q 1/6,1/6,2/3

``--tokens M`` proves the first M generated tokens (calls repeat until M exist) against
``prod p(x_i | x_<i)``; here the pair is context-free, (p, q) at every context.
"""

GAMMA = 2


def _call(s, pair, ctx, over_p):
    vocab = pair.labels
    n = len(vocab)
    drafts, c = [], tuple(ctx)
    for _ in range(GAMMA):                                   # the drafter runs first
        x = s.draft(pair.draft(c))
        drafts.append(x)
        c = c + (x,)
    P = [list(pair.target(tuple(ctx) + tuple(drafts[:t])).probs) for t in range(GAMMA + 1)]
    Q = [list(pair.draft(tuple(ctx) + tuple(drafts[:t])).probs) for t in range(GAMMA)]
    bonus = vocab[(P[GAMMA] / s.exponentials(n)).argmax()]   # the ordinary sampler
    u = [s.uniform() for _ in range(GAMMA)]                  # one uniform per position
    E = s.exponentials(n)                                    # one noise vector per request
    recovered = []
    for t in range(GAMMA):
        r = P[t] if over_p else [max(a - b, 0) for a, b in zip(P[t], Q[t])]
        recovered.append(vocab[(r / E).argmax()] if any(r) else vocab[0])
    out = ()
    for t, x in enumerate(drafts):
        i = vocab.index(x)
        if Q[t][i] > 0 and P[t][i] / Q[t][i] >= u[t]:
            out += (x,)
        else:
            return out + (recovered[t],)
    return out + (bonus,)


def vllm_rule(s, pair, ctx):
    """vLLM's rejection path: the recovered token raced over max(p - q, 0) (lossless)."""
    return _call(s, pair, ctx, over_p=False)


def race_over_p(s, pair, ctx):
    """The race run over p instead of the residual (lossy)."""
    return _call(s, pair, ctx, over_p=True)
