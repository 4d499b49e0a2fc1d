"""Chain verifiers as an inference engine writes them: the engine drafts ``gamma`` tokens, calls
the target once, and the verifier gets the rows of every position.

    exactspec tree examples/chain_user.json                      # the stale-residual bug: REFUTED
    exactspec tree examples/chain_user.json --verifier examples/chain_user.py:chain   # PROVED

``drafts`` are the drafted tokens ``x_1..x_gamma``; ``p[i]`` is the target's row after
``x_1..x_i`` (``gamma + 1`` rows: the last one is for the bonus token) and ``q[i]`` the
draft's row (``gamma`` rows).  A call returns the tokens it emits.
"""

from exactspec import residual

_residuals = {}  # used by cached_residual_chain only


def chain(s, drafts, p, q):
    """Accept x_i while u < p_i(x_i) / q_i(x_i); at the first rejection emit a token of that
    position's residual; after gamma acceptances, a bonus token from the last row."""
    out = ()
    for i, x in enumerate(drafts):
        if s.uniform() < p[i][x] / q[i][x]:
            out += (x,)
            continue
        return out + (s.pick(residual(p[i], q[i]), s.uniform()),)
    return out + (s.pick(p[len(drafts)], s.uniform()),)


def stale_residual_chain(s, drafts, p, q):
    """The residual computed once, before the loop, from the first position's rows, and
    reused at every position (stale after the first acceptance)."""
    resid = residual(p[0], q[0])
    out = ()
    for i, x in enumerate(drafts):
        if s.uniform() < p[i][x] / q[i][x]:
            out += (x,)
            continue
        return out + (s.pick(resid, s.uniform()),)
    return out + (s.pick(p[len(drafts)], s.uniform()),)


def cached_residual_chain(s, drafts, p, q):
    """The residual of each position cached across calls in a module-level dict keyed by the
    position: hidden state (the cache of one context serves another)."""
    out = ()
    for i, x in enumerate(drafts):
        if s.uniform() < p[i][x] / q[i][x]:
            out += (x,)
            continue
        if i not in _residuals:
            _residuals[i] = residual(p[i], q[i])
        return out + (s.pick(_residuals[i], s.uniform()),)
    return out + (s.pick(p[len(drafts)], s.uniform()),)


def alternating_chain(s, drafts, p, q, state):
    """Declared state: every other call skips the bonus token (an engine saving a target
    row); the state, the parity of the call, is threaded by the engine.  Lossless."""
    parity = 0 if state is None else state
    out = ()
    for i, x in enumerate(drafts):
        if s.uniform() < p[i][x] / q[i][x]:
            out += (x,)
            continue
        return out + (s.pick(residual(p[i], q[i]), s.uniform()),), 1 - parity
    if parity == 1:
        return out, 0
    return out + (s.pick(p[len(drafts)], s.uniform()),), 1
