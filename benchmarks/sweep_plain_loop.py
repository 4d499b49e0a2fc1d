"""The loop a user would write for a sweep's figures, in plain NumPy, one row at a time.

Reads a dump (``.npz`` or a directory of ``.npy``: ``target``, ``draft``), takes a softmax of
logits, and per row and ``k`` computes ``alpha*`` (one sort of ``q/p`` per row), RRS's
acceptance (the residual recursion, once up to the largest ``k``), K-SEQ's (bisection on
``rho``), KEY's (``alpha*``, which it attains) and the one-draft acceptance, then the columns
``exactspec sweep`` writes beside them (RRS's gap and rejection ratio, tokens per target call
for chains of 4); writes them to ``--out`` (``.npz``, or ``.parquet`` through pyarrow), prints
the means with 95% intervals per method and ``k`` as JSON, and with ``--plot`` draws what the
sweep's plot shows (RRS's gap per ``k``, mean acceptance against ``k``) with pyplot, the CPU
seconds of the plot on stderr.  ``benchmarks/sweep_vs_loop.py`` runs it beside
``exactspec sweep``.

    python benchmarks/sweep_plain_loop.py DUMP --logits --k 1,2,4,8 --out loop.npz
"""
import argparse
import json
import os
import sys
import time

import numpy as np


def load(path):
    if os.path.isdir(path):
        return (np.load(os.path.join(path, "target.npy"), mmap_mode="r"),
                np.load(os.path.join(path, "draft.npy"), mmap_mode="r"))
    z = np.load(path)
    return z["target"], z["draft"]


def probs(x, logits):
    x = np.asarray(x, dtype=np.float64)
    if logits:
        x = np.exp(x - x.max())
    return x / x.sum()


def kseq(rs, Pc, Qc, k):               # 1 - (1 - beta(rho*))^k, beta(rho) = sum min(p/rho, q)
    def beta(rho):                     # tokens with q/p <= 1/rho give q, the others p/rho
        j = np.searchsorted(rs, 1 / rho, side="right")
        return min(1.0, (Qc[j - 1] if j else 0.0) + (1 - (Pc[j - 1] if j else 0.0)) / rho)

    lo, hi = 1.0, float(k)
    if k == 1 or 1 - (1 - beta(1.0)) ** k - beta(1.0) <= 0:
        return 1 - (1 - beta(1.0)) ** k
    for _ in range(60):
        mid = (lo + hi) / 2
        b = beta(mid)
        lo, hi = (lo, mid) if 1 - (1 - b) ** k <= mid * b else (mid, hi)
    return 1 - (1 - beta(hi)) ** k


def tokens_per_call(a, gamma=4):       # 1 + a + ... + a^gamma
    return sum(a ** i for i in range(gamma + 1))


def mean_ci(x):
    x = x[~np.isnan(x)]
    half = 1.96 * x.std(ddof=1) / np.sqrt(x.size) if x.size > 1 else 0.0
    return float(x.mean()), [float(x.mean() - half), float(x.mean() + half)]


def plot(cols, ks, methods, summary, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for k in ks:
        left.hist(cols["gap_rrs"][cols["k"] == k], bins=50, histtype="step", label=f"k = {k}")
    left.set_xlabel("alpha* - alpha_RRS")
    left.legend()
    for name in ["alpha_star"] + ["acc_" + m for m in methods]:
        means = [summary[name][str(k)][0] for k in ks]
        half = [summary[name][str(k)][0] - summary[name][str(k)][1][0] for k in ks]
        right.errorbar(ks, means, yerr=half, label=name, marker="o", capsize=3)
    right.set_xscale("log", base=2)
    right.set_xlabel("k")
    right.legend()
    fig.suptitle(path)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--logits", action="store_true")
    ap.add_argument("--k", default="1,2,4,8")
    ap.add_argument("--methods", default="rrs,kseq,key,optimal")
    ap.add_argument("--out")
    ap.add_argument("--plot")
    a = ap.parse_args()
    ks, methods = [int(k) for k in a.k.split(",")], a.methods.split(",")
    T, D = load(a.dump)
    out = {c: [] for c in ["row", "k", "alpha_one", "alpha_star"] + ["acc_" + m for m in methods]}
    for i in range(T.shape[0]):
        p, q = probs(T[i], a.logits), probs(D[i], a.logits)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(p > 0, q / p, np.inf)
        order = np.argsort(ratio)
        rs, Pc, Qc = ratio[order], np.cumsum(p[order]), np.cumsum(q[order])
        rej, r, reject = {0: 1.0}, p, 1.0      # RRS: P(all of i drafts rejected)
        for j in range(1, max(ks) + 1) if "rrs" in methods else ():
            d = np.maximum(r - q, 0.0)
            tv = d.sum()
            reject *= tv
            rej[j] = reject
            r = d / tv if tv > 0 else d
        for k in ks:
            alpha = 1 + min(0.0, (1 - (1 - np.minimum(Qc[:-1], 1)) ** k - Pc[:-1]).min(initial=0))
            fig = {"row": i, "k": k, "alpha_one": np.minimum(p, q).sum(), "alpha_star": alpha,
                   "acc_optimal": alpha, "acc_key": alpha}
            if "rrs" in methods:
                fig["acc_rrs"] = 1 - rej[k]
            if "kseq" in methods:
                fig["acc_kseq"] = kseq(rs, Pc, Qc, k)
            for c in out:
                out[c].append(fig[c])
    cols = {c: np.array(v) for c, v in out.items()}
    if "rrs" in methods:
        cols["gap_rrs"] = cols["alpha_star"] - cols["acc_rrs"]
        with np.errstate(divide="ignore", invalid="ignore"):
            cols["rejection_ratio_rrs"] = np.where(
                cols["alpha_star"] < 1, (1 - cols["acc_rrs"]) / (1 - cols["alpha_star"]), np.nan)
    for name in ["alpha_one"] + ["acc_" + m for m in methods]:
        cols["tokens_per_call_" + name.split("_")[1]] = tokens_per_call(cols[name])
    summary = {name: {str(k): mean_ci(cols[name][cols["k"] == k]) for k in ks}
               for name in ["alpha_star", "gap_rrs"] * ("rrs" in methods)
               + ["acc_" + m for m in methods] + ["tokens_per_call_" + m for m in methods]}
    print(json.dumps(summary))
    if a.plot:
        start = time.process_time()
        plot(cols, ks, methods, summary, a.plot)
        print(f"plot cpu {time.process_time() - start:.3f}", file=sys.stderr)
    if a.out and a.out.endswith(".parquet"):
        import pyarrow as pa
        import pyarrow.parquet as pq
        pq.write_table(pa.table(cols), a.out)
    elif a.out:
        np.savez(a.out, **cols)


if __name__ == "__main__":
    main()
