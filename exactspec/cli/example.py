"""``exactspec example``: the one-draft rule on a fixed pair, its table and its proof.
"""

from __future__ import annotations

from .output import emit, aligned_table
from .process import EXIT_OK, EXIT_REFUTED


def cmd_example(args) -> int:
    from ..core.dist import Dist, exact_str, overlap, residual
    from ..verify import verify

    p = Dist.parse("1/2,3/10,1/5", labels="abc", name="p")
    q = Dist.parse("1/5,1/5,3/5", labels="abc", name="q")
    r = residual(p, q)
    result = verify("sps", p, q)
    rows = []
    for t in p.labels:
        rows.append([t, exact_str(p[t]), exact_str(q[t]), exact_str(min(1, p[t] / q[t])),
                     exact_str(min(p[t], q[t])), exact_str(r[t]),
                     exact_str(result.law[t])])
    header = ["token", "p", "q", "min(1,p/q)", "kept", "residual", "output"]
    obj = {
        "labels": list(p.labels), "target": p.to_json(), "draft": q.to_json(),
        "ratio": {t: row[3] for t, row in zip(p.labels, rows)},
        "kept": {t: row[4] for t, row in zip(p.labels, rows)},
        "residual": r.to_json(),
        "output": {t: exact_str(result.law[t]) for t in p.labels},
        "acceptance": exact_str(result.acceptance),
        "acceptance_float": float(result.acceptance),
        "lossless": result.lossless, "paths": result.paths,
    }
    text = (
        "The one-draft rule on p = (1/2, 3/10, 1/5), q = (1/5, 1/5, 3/5): accept x ~ q with "
        "probability\nmin(1, p(x)/q(x)), otherwise resample from norm(max(0, p - q)).\n\n"
        + aligned_table(rows, header)
        + f"\n\nacceptance = sum min(p, q) = {exact_str(overlap(p, q))} "
        f"(enumerated: {exact_str(result.acceptance)})\n"
        f"output law {'= p exactly: PROVED' if result.lossless else '!= p: REFUTED'} "
        f"({result.paths} paths enumerated)")
    emit(obj, args.json, text)
    return EXIT_OK if result.lossless else EXIT_REFUTED
