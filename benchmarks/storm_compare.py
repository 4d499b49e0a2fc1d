"""exactspec beside the Storm probabilistic model checker: CPU seconds by vocabulary size.

    python benchmarks/storm_compare.py [V ...] [--storm-python PY] [--cap S] [--float]
                                       [--tasks T ...] [--tools TOOL ...] [--json FILE]
        (default: V = 100 1000 10000 152064, PY = /tmp/stormenv/bin/python, S = 120,
         every task and tool)

Storm (stormpy) is no dependency of exactspec: it runs in a side environment, here made with
``python3 -m venv /tmp/stormenv && /tmp/stormenv/bin/pip install stormpy``; that interpreter
runs this file's Storm half, which imports neither exactspec nor numpy.

Four tasks on the same seeded rational rows (:func:`integer_rows`: integers over a common
denominator, the same on both sides):

- ``sps``: the one-draft rule (draft ``x ~ q``, accept with ``min(1, p(x)/q(x))``, else a
  token of the residual ``norm(max(p - q, 0))``); lossless;
- ``sps-bug``: the same rule drawing a rejected position's token from ``p`` (lossy);
- ``chain``: two draft positions of a context-free pair, each verified in turn, stopping at
  the first rejection (a residual token), a bonus token from ``p`` after two acceptances;
  the law of the first 3 tokens of the stream (``exactspec verify F --tokens 3``); lossless;
- ``rrs``: recursive rejection sampling with ``k = 2`` i.i.d. drafts; lossless.

Tools (each run in its own process, stopped at the cap in CPU seconds, or at four times it in
wall seconds; a tool's larger sizes of a task are skipped once a run fails or passes the cap):

- ``storm-prism``: a PRISM program (:func:`prism_program`, one command per token where the
  acceptance depends on it), parsed by ``stormpy.parse_prism_program`` and built by
  ``stormpy.build_model[stormpy.Rational]`` (exact rationals) with state valuations;
- ``storm-sparse``: the DTMC built directly (:func:`build_dtmc`: the reachable states of the
  task's successor function, ``SparseMatrixBuilder[Rational]``, ``SparseModelComponents``);
  ``--float`` adds ``storm-sparse-float``, the same in floating point;
- ``exactspec``: the rule written against the sampling interface (``verify("sps")``,
  :func:`resample_from_p` by ``verify("benchmarks/storm_compare.py:resample_from_p")``,
  ``examples/chain_user.py:chain`` by :func:`exactspec.sequences.user.user_report`, and
  ``rrs`` by :func:`exactspec.bounds.compare.exact_verification`, the route of ``exactspec
  verify rrs --k 2``);
- ``exactspec-torch``: the PyTorch rules of ``examples/engines/hf_speculative_sampling.py``
  (``sample``, ``sample_resample_from_p``, and ``speculative_sampling`` for the chain).

Every Storm model is a DTMC whose emitted tokens (one token, or the first 3 of the chain) are
states visited once on the way to one absorbing ``done`` state, so the law of the emitted
tokens is the expected number of visits of those states from the initial state: one call of
Storm's sparse engine (``compute_expected_visiting_times_with_sparse_engine``, exact in
rational arithmetic) gives the whole law, in place of one reachability property per token.
Storm's law is compared with the target law exactly (with ``1e-9`` in floating point), and,
for the one-position tasks, with exactspec's exact law entry by entry.

Prints one line per run and the table: task, V, the CPU seconds of each tool (model building
and check, its own process; ``>S`` over the cap, ``-`` not run) and whether the tools agree.
``--json FILE`` writes every run.  ``--model-lines`` prints the lines of model code of each
task and tool.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve()
SIZES = (100, 1000, 10000, 152064)
TASKS = ("sps", "sps-bug", "chain", "rrs")
TOOLS = ("storm-prism", "storm-sparse", "exactspec", "exactspec-torch")
CAP = 120.0
#: drafts of rrs; draft positions of the chain, whose first ``CHAIN_TOKENS`` tokens are checked
K_RRS, CHAIN_GAMMA, CHAIN_TOKENS = 2, 2, 3
#: the most states a Storm model may have before it is refused up front (memory)
MAX_STATES = 20_000_000
#: address-space limit of each run's process
MEMORY_BYTES = 6 * 2**30
#: a run is stopped at the cap in CPU seconds, or at this many times the cap in wall seconds
WALL_FACTOR = 4


# ---------------------------------------------------------------- the rows (both sides)

def integer_rows(vocab: int, seed: int = 1) -> tuple[list[int], list[int]]:
    """Seeded integer weights ``a`` (target) and ``b`` (draft): ``p = a / sum(a)``,
    ``q = b / sum(b)``; squares of integers up to 100, the draft's base perturbed by up to 20
    (integers only, so both interpreters draw the same rows)."""
    rng = random.Random(seed)
    base = [rng.randint(1, 100) for _ in range(vocab)]
    a = [x * x for x in base]
    b = [min(100, max(1, x + rng.randint(-20, 20))) ** 2 for x in base]
    return a, b


def fraction_rows(a: list[int], b: list[int]) -> tuple[list[Fraction], list[Fraction]]:
    """The rows ``p``, ``q`` as exact fractions."""
    sa, sb = sum(a), sum(b)
    return [Fraction(x, sa) for x in a], [Fraction(x, sb) for x in b]


def residual(r: list[Fraction], q: list[Fraction]) -> list[Fraction]:
    """``norm(max(r - q, 0))``."""
    plus = [max(x - y, 0) for x, y in zip(r, q)]
    total = sum(plus)
    return [x / total for x in plus] if total else plus


def law_digest(law: list[Fraction]) -> str:
    """A digest of an exact law (its entries in token order)."""
    return hashlib.sha256(",".join(f"{x.numerator}/{x.denominator}" for x in law)
                          .encode()).hexdigest()[:16]


# ---------------------------------------------------------------- Storm: the sparse models
# A state is a tuple; ("emit", tokens) is an emitted token (or the chain's first 3 tokens),
# visited once on the way to ("done",).  Each successor function is the task's model.

def sps_model(p, q, resample=None):
    """The one-draft rule: draft, accept or reject, resample (``resample`` = ``p`` for the bug)."""
    r = residual(p, q) if resample is None else resample
    accept = [min(Fraction(1), px / qx) for px, qx in zip(p, q)]

    def successors(state):
        if state == ("draft",):
            return [(qx, ("verify", x)) for x, qx in enumerate(q)]
        if state[0] == "verify":
            x = state[1]
            return [(accept[x], ("emit", (x,))), (1 - accept[x], ("resample",))]
        if state == ("resample",):
            return [(ry, ("emit", (y,))) for y, ry in enumerate(r)]
        return None
    return ("draft",), successors


def rrs_model(p, q, k):
    """Recursive rejection sampling, ``k`` i.i.d. drafts drawn one at a time (the draft after a
    rejection is independent of it): accept ``x_i`` with ``min(1, r_{i-1}(x)/q(x))``, else
    ``r_i = norm(max(r_{i-1} - q, 0))``; after ``k`` rejections a token of ``r_k``."""
    rs = [p]
    for _ in range(k):
        rs.append(residual(rs[-1], q))
    accept = [[min(Fraction(1), rx / qx) for rx, qx in zip(r, q)] for r in rs[:k]]

    def successors(state):
        if state[0] == "draft":
            i = state[1]
            if i == k:
                return [(ry, ("emit", (y,))) for y, ry in enumerate(rs[k])]
            return [(qx, ("verify", i, x)) for x, qx in enumerate(q)]
        if state[0] == "verify":
            i, x = state[1:]
            return [(accept[i][x], ("emit", (x,))), (1 - accept[i][x], ("draft", i + 1))]
        return None
    return ("draft", 0), successors


def chain_model(p, q, gamma=CHAIN_GAMMA, tokens=CHAIN_TOKENS):
    """The chain on a context-free pair, until ``tokens`` tokens are emitted: a state holds the
    tokens so far and the draft position ``j`` in the current call; a draft is drawn when it is
    verified (the pair is context-free: the drafts are i.i.d. from ``q``)."""
    r = residual(p, q)
    accept = [min(Fraction(1), px / qx) for px, qx in zip(p, q)]

    def emitted(out):
        return ("emit", out) if len(out) == tokens else ("draft", out, 0)

    def successors(state):
        if state[0] == "draft":
            out, j = state[1:]
            if j == gamma:      # every draft accepted: the bonus token, a new call
                return [(py, emitted(out + (y,))) for y, py in enumerate(p)]
            return [(qx, ("verify", out, j, x)) for x, qx in enumerate(q)]
        if state[0] == "verify":
            out, j, x = state[1:]
            after = emitted(out + (x,))
            if after[0] == "draft":
                after = ("draft", out + (x,), j + 1)
            return [(accept[x], after), (1 - accept[x], ("resample", out))]
        if state[0] == "resample":
            return [(ry, emitted(state[1] + (y,))) for y, ry in enumerate(r)]
        return None
    return ("draft", (), 0), successors


def storm_states_estimate(task: str, vocab: int) -> int:
    """About how many states the task's model has (refused up front above MAX_STATES)."""
    if task == "chain":
        return vocab ** CHAIN_TOKENS + 2 * vocab ** (CHAIN_TOKENS - 1) * (vocab + 2)
    return (K_RRS + 1) * vocab + 4


def build_dtmc(initial, successors, value):
    """The reachable states of ``successors`` from ``initial`` as a sparse Storm DTMC;
    ``(dtmc, emitted)``, ``emitted`` the index of each ``("emit", tokens)`` state.  Zero
    probabilities are left out; ``("emit", ...)`` goes to ``("done",)``, which loops."""
    from stormpy.developer import storage

    index, order = {initial: 0}, [initial]
    rows, cols, vals = [], [], []
    one = value(Fraction(1))
    converted = {}
    i = 0
    while i < len(order):
        state = order[i]
        out = successors(state)
        if out is None:
            out = [(Fraction(1), ("done",) if state[0] == "emit" else state)]
        row = []
        for prob, target in out:
            if prob == 0:
                continue
            j = index.get(target)
            if j is None:
                j = index[target] = len(order)
                order.append(target)
            v = converted.get(prob)
            if v is None:
                v = converted[prob] = one if prob == 1 else value(prob)
            row.append((j, v))
        row.sort(key=lambda e: e[0])
        for j, v in row:
            rows.append(i)
            cols.append(j)
            vals.append(v)
        i += 1
    n = len(order)
    kind = type(one)
    builder = storage.SparseMatrixBuilder[kind](rows=n, columns=n, entries=len(vals))
    builder.add_next_values(rows, cols, vals, [])
    labeling = storage.StateLabeling(n)
    labeling.add_label("init")
    labeling.add_label_to_state("init", 0)
    components = storage.SparseModelComponents(transition_matrix=builder.build(),
                                               state_labeling=labeling)
    emitted = {s[1]: j for s, j in index.items() if s[0] == "emit"}
    return storage.SparseDtmc(components), emitted


# ---------------------------------------------------------------- Storm: PRISM programs

def _lit(x: Fraction) -> str:
    """A PRISM literal of ``x``: Storm's parser refuses integer literals over 64 bits, and
    reads ``N.0`` as an arbitrary-precision number (exact in rational builds)."""
    def integer(n):
        return f"{n}.0" if n >= 2**63 else str(n)
    if x.denominator == 1:
        return integer(x.numerator)
    return f"{integer(x.numerator)}/{integer(x.denominator)}"


def _sum(pairs) -> str:
    """A PRISM distribution ``p1:(u1) + p2:(u2)`` of the nonzero ``(prob, update)`` pairs."""
    return " + ".join(f"{_lit(pr)}:{u}" for pr, u in pairs if pr != 0)


def prism_program(task: str, p, q) -> str:
    """The task's PRISM DTMC: ``s`` the phase, ``x`` the draft, ``t1..tM`` the tokens, ``n``
    how many are emitted; an emitted token is a state ``s = EMIT`` with ``t1..``."""
    vocab, last = len(p), len(p) - 1
    if task in ("sps", "sps-bug", "rrs"):
        k = K_RRS if task == "rrs" else 1
        rs = [p]
        for _ in range(k):
            rs.append(residual(rs[-1], q))
        if task == "sps-bug":
            rs[1] = p
        emit, done = 2 * k + 1, 2 * k + 2
        lines = ["dtmc", "module rule", f"  s : [0..{done}] init 0;",
                 f"  x : [0..{last}] init 0;", f"  t1 : [0..{last}] init 0;"]
        for i in range(k):      # s = 2i: draw draft i+1; s = 2i+1: verify it against r_i
            lines.append(f"  [] s={2 * i} -> " +
                         _sum((qx, f"(s'={2 * i + 1})&(x'={x})") for x, qx in enumerate(q)) + ";")
            for x in range(vocab):
                a = min(Fraction(1), rs[i][x] / q[x])
                lines.append(f"  [] s={2 * i + 1} & x={x} -> " + _sum(
                    [(a, f"(s'={emit})&(t1'={x})&(x'=0)"), (1 - a, f"(s'={2 * i + 2})&(x'=0)")])
                    + ";")
        lines.append(f"  [] s={2 * k} -> " +
                     _sum((ry, f"(s'={emit})&(t1'={y})") for y, ry in enumerate(rs[k])) + ";")
        lines.append(f"  [] s={emit} -> 1:(s'={done})&(t1'=0);")
    else:
        r = residual(p, q)
        m, emit, done = CHAIN_TOKENS, 3, 4
        ts = [f"t{i + 1}" for i in range(m)]

        def put(y, j):   # token y written at position n, then n + 1; j the next position
            return "&".join(f"({t}'=(n={i})?{y}:{t})" for i, t in enumerate(ts)) + \
                f"&(n'=n+1)&(s'=(n={m - 1})?{emit}:0)&(j'=(n={m - 1})?0:{j})"
        lines = ["dtmc", "module chain", f"  s : [0..{done}] init 0;", f"  n : [0..{m}] init 0;",
                 f"  j : [0..{CHAIN_GAMMA}] init 0;", f"  x : [0..{last}] init 0;"] + \
            [f"  {t} : [0..{last}] init 0;" for t in ts]
        # s = 0: draw the draft at position j (the bonus token at j = gamma); s = 1: verify x;
        # s = 2: a token of the residual; the call ends after a residual or bonus token
        lines.append(f"  [] s=0 & j<{CHAIN_GAMMA} -> " +
                     _sum((qx, f"(s'=1)&(x'={x})") for x, qx in enumerate(q)) + ";")
        lines.append(f"  [] s=0 & j={CHAIN_GAMMA} -> " +
                     _sum((py, put(y, 0)) for y, py in enumerate(p)) + ";")
        for x in range(vocab):
            a = min(Fraction(1), p[x] / q[x])
            lines.append(f"  [] s=1 & x={x} -> " + _sum(
                [(a, f"{put(x, 'j+1')}&(x'=0)"), (1 - a, "(s'=2)&(x'=0)")]) + ";")
        lines.append("  [] s=2 -> " + _sum((ry, put(y, 0)) for y, ry in enumerate(r))
                     + ";")
        lines.append(f"  [] s={emit} -> 1:(s'={done})&" +
                     "&".join(f"({t}'=0)" for t in ts) + "&(n'=0)&(j'=0);")
    lines += [f"  [] s={done} -> true;", "endmodule", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- Storm: one run

def storm_run(tool: str, task: str, a: list[int], b: list[int]) -> dict:
    """Build the task's model with ``tool``, compute the law of the emitted tokens, compare
    it with the target law; CPU seconds of this process (building and check)."""
    import stormpy
    from stormpy import developer

    exact = tool != "storm-sparse-float"
    start = time.process_time()
    p, q = fraction_rows(a, b)
    vocab = len(p)
    if storm_states_estimate(task, vocab) > MAX_STATES:
        return {"error": f"about {storm_states_estimate(task, vocab):,} states, over "
                         f"{MAX_STATES:,} (refused up front)"}
    kind = stormpy.Rational if exact else float
    if tool == "storm-prism":
        text = prism_program(task, p, q)
        with tempfile.NamedTemporaryFile("w", suffix=".pm", delete=False) as handle:
            handle.write(text)
        program = stormpy.parse_prism_program(handle.name)
        os.unlink(handle.name)
        options = stormpy.BuilderOptions()
        options.set_build_state_valuations()
        model = stormpy.build_model[kind](program, options=options)
        variables = {v.name: v.expression_variable
                     for v in program.modules[0].integer_variables}
        m = CHAIN_TOKENS if task == "chain" else 1
        phase = model.state_valuations.get_int64_values(variables["s"])
        emit_phase = 3 if task == "chain" else 2 * (K_RRS if task == "rrs" else 1) + 1
        tokens = [model.state_valuations.get_int64_values(variables[f"t{i + 1}"])
                  for i in range(m)]
        emitted = {tuple(t[s] for t in tokens): s for s in range(model.nr_states)
                   if phase[s] == emit_phase}
    else:
        if task == "sps":
            initial, successors = sps_model(p, q)
        elif task == "sps-bug":
            initial, successors = sps_model(p, q, resample=p)
        elif task == "rrs":
            initial, successors = rrs_model(p, q, K_RRS)
        else:
            initial, successors = chain_model(p, q)
        value = (lambda x: stormpy.Rational(f"{x.numerator}/{x.denominator}")) if exact \
            else float
        model, emitted = build_dtmc(initial, successors, value)
    built = time.process_time() - start
    visits = developer.compute_expected_visiting_times_with_sparse_engine(
        stormpy.Environment(), model).get_value_vector()

    def number(v):
        return Fraction(int(str(v.numerator)), int(str(v.denominator))) if exact else v
    law = {seq: number(visits[s]) for seq, s in emitted.items()}
    # compare with the target law (p at one position, p x p x p for the chain's first 3)
    if task == "chain":
        target = {}
        for seq in law:
            pr = Fraction(1)
            for y in seq:
                pr *= p[y]
            target[seq] = pr
        lossless = all(law[s] == target[s] for s in law) if exact else \
            max(abs(law[s] - float(target[s])) for s in law) <= 1e-9
        lossless = lossless and len(law) == sum(1 for x in p if x) ** CHAIN_TOKENS
        row = None
    else:
        row = [law.get((y,), 0) for y in range(vocab)]
        lossless = row == p if exact else max(abs(x - float(y)) for x, y in zip(row, p)) <= 1e-9
    seconds = time.process_time() - start
    out = {"cpu": seconds, "build": built, "states": model.nr_states,
           "transitions": model.nr_transitions, "lossless": lossless, "exact": exact}
    if row is not None:
        out["law"] = [f"{x.numerator}/{x.denominator}" for x in row] if exact else row
        if exact:
            out["digest"] = law_digest(row)
    return out


# ---------------------------------------------------------------- exactspec: the rule of the bug

def resample_from_p(s, p, q):
    """The one-draft rule drawing a rejected position's token from ``p`` (lossy)."""
    x = s.draft(q)
    if s.uniform() < p[x] / q[x]:
        return s.accept(x)
    return s.pick(p, s.uniform())


# ---------------------------------------------------------------- exactspec: one run

HF = str(ROOT / "examples" / "engines" / "hf_speculative_sampling.py")
CHAIN_RULE = str(ROOT / "examples" / "chain_user.py") + ":chain"


def exactspec_run(tool: str, task: str, a: list[int], b: list[int]) -> dict:
    """The task proved by exactspec's public entry points; CPU seconds of this process."""
    sys.path.insert(0, str(ROOT))
    from exactspec import Dist, verify

    start = time.process_time()
    p, q = (Dist(row) for row in fraction_rows(a, b))
    torch = tool == "exactspec-torch"
    if task == "chain":
        from exactspec.sequences.context import ContextPair
        from exactspec.sequences.user import user_report

        pair = ContextPair.context_free(p, q)
        if torch:
            from exactspec.sequences.torch_rules import pytorch_whole_call
            from exactspec.torch_layer.rule import load_pytorch_rule

            call = pytorch_whole_call(load_pytorch_rule(HF + ":speculative_sampling"),
                                      CHAIN_TOKENS)
            report = user_report({"m": CHAIN_TOKENS}, call, pair=pair, m=CHAIN_TOKENS,
                                 max_paths=None, max_seconds=None)
        else:
            report = user_report({"m": CHAIN_TOKENS, "gamma": CHAIN_GAMMA}, CHAIN_RULE,
                                 pair=pair, m=CHAIN_TOKENS, gamma=CHAIN_GAMMA,
                                 max_paths=None, max_seconds=None)
        return {"cpu": time.process_time() - start, "lossless": report["lossless"],
                "route": report.get("route", "paths"), "verdict": report["verdict"]}
    if task == "rrs":
        if torch:
            return {"error": "no PyTorch rrs rule in examples/"}
        from exactspec.bounds.compare import exact_verification

        result = exact_verification("rrs", p, q, K_RRS, max_paths=None)
    else:
        rule = {("sps", False): "sps", ("sps-bug", False): f"{HERE}:resample_from_p",
                ("sps", True): f"{HF}:sample",
                ("sps-bug", True): f"{HF}:sample_resample_from_p"}[task, torch]
        result = verify(rule, p, q, max_paths=None)
    row = [result.law[y] for y in range(len(p))]
    seconds = time.process_time() - start
    return {"cpu": seconds, "lossless": result.lossless, "route": result.route,
            "verdict": result.verdict, "digest": law_digest(row),
            "law": [f"{x.numerator}/{x.denominator}" for x in row]}


# ---------------------------------------------------------------- the model code, in lines

def _code_lines(path, name: str) -> int:
    """Lines of the function ``name`` of the file ``path``, its docstring left out."""
    import ast

    tree = ast.parse(Path(path).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            doc = node.body[0] if isinstance(node.body[0], ast.Expr) and \
                isinstance(getattr(node.body[0], "value", None), ast.Constant) else None
            skipped = doc.end_lineno - doc.lineno + 1 if doc is not None else 0
            return node.end_lineno - node.lineno + 1 - skipped
    raise LookupError(name)


def model_lines() -> dict:
    """Lines of model code of each task and tool, docstrings left out: the Storm models above
    (the PRISM generator is shared by the tasks; the sparse models share :func:`build_dtmc`),
    the PRISM text at V = 3 (it grows with V: one command per token and draft), and the
    exactspec rules (a built-in method is named, not written)."""
    def here(*names):
        return sum(_code_lines(HERE, n) for n in names)
    text = {task: len(prism_program(task, *fraction_rows(*integer_rows(3))).splitlines()) - 1
            for task in TASKS}
    chain_file = ROOT / "examples" / "chain_user.py"
    return {
        "storm-prism generator (all tasks)": here("prism_program", "_lit", "_sum"),
        "storm-prism text at V=3": text,
        "storm-sparse build_dtmc (all tasks)": here("build_dtmc"),
        "storm-sparse model": {"sps": here("sps_model"), "sps-bug": here("sps_model"),
                               "chain": here("chain_model"), "rrs": here("rrs_model")},
        "exactspec rule": {"sps": "built-in sps", "sps-bug": here("resample_from_p"),
                           "chain": _code_lines(chain_file, "chain"), "rrs": "built-in rrs"},
        "exactspec-torch rule": {"sps": _code_lines(HF, "sample"),
                                 "sps-bug": _code_lines(HF, "sample_resample_from_p"),
                                 "chain": _code_lines(HF, "speculative_sampling")
                                 + _code_lines(HF, "_speculative_sampling")},
    }


# ---------------------------------------------------------------- driver

def child(tool: str, task: str, vocab: int, out: str) -> None:
    a, b = integer_rows(vocab)
    try:
        result = storm_run(tool, task, a, b) if tool.startswith("storm") else \
            exactspec_run(tool, task, a, b)
    except Exception as err:      # reported in the table, not a crash of the driver
        result = {"error": f"{type(err).__name__}: {str(err)[:300]}"}
    Path(out).write_text(json.dumps(result))


def run_one(python: str, tool: str, task: str, vocab: int, cap: float) -> dict:
    """One run in a child process, stopped at ``cap`` CPU seconds (``RLIMIT_CPU``: on a loaded
    machine the wall seconds run ahead of the CPU seconds) or ``WALL_FACTOR * cap`` wall
    seconds (a hang), in at most :data:`MEMORY_BYTES` of address space."""
    import resource
    import signal

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)

        def limit():
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
            seconds = max(1, int(cap + 0.999))
            resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 5))
        try:
            proc = subprocess.run([python, str(HERE), "--child", tool, task, str(vocab), out],
                                  timeout=WALL_FACTOR * cap, capture_output=True, text=True,
                                  preexec_fn=limit)
        except subprocess.TimeoutExpired:
            return {"timeout": True, "wall": True}
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        process = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        if proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL) and not os.path.exists(out):
            return {"timeout": True, "process_cpu": process}
        if not os.path.exists(out):
            return {"error": f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"}
        result = json.loads(Path(out).read_text())
        result["process_cpu"] = process      # with the interpreter's start and imports
        return result


def agree(results: dict) -> str:
    """Whether the runs of one task and size agree: verdicts, and exact laws entry by entry
    (a floating-point law within 1e-9 of an exact one)."""
    done = {t: r for t, r in results.items() if "cpu" in r}
    if len(done) < 2:
        return "-"
    if len({r["lossless"] for r in done.values()}) > 1:
        return "NO (verdicts)"
    exact = [r["law"] for r in done.values() if "law" in r and r.get("exact", True)]
    floats = [r["law"] for r in done.values() if "law" in r and not r.get("exact", True)]
    if len(exact) > 1 and any(law != exact[0] for law in exact[1:]):
        return "NO (laws)"
    if exact and floats:
        ref = [float(Fraction(x)) for x in exact[0]]
        if any(max(abs(x - y) for x, y in zip(law, ref)) > 1e-9 for law in floats):
            return "NO (float law)"
    return "yes (laws)" if len(exact) + len(floats) > 1 else "yes (verdicts)"


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        child(argv[1], argv[2], int(argv[3]), argv[4])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=list(SIZES))
    parser.add_argument("--storm-python", default="/tmp/stormenv/bin/python")
    parser.add_argument("--cap", type=float, default=CAP)
    parser.add_argument("--float", action="store_true")
    parser.add_argument("--tasks", nargs="+", default=list(TASKS))
    parser.add_argument("--tools", nargs="+", default=None)
    parser.add_argument("--json", default=None)
    parser.add_argument("--model-lines", action="store_true")
    args = parser.parse_args(argv)
    if args.model_lines:
        print(json.dumps(model_lines(), indent=1))
        return 0
    tools = args.tools or list(TOOLS) + (["storm-sparse-float"] if args.float else [])
    print(f"load average: {Path('/proc/loadavg').read_text().strip()}  cap {args.cap:g} s",
          flush=True)
    table = []
    for task in args.tasks:
        stopped = set()
        for vocab in args.sizes:
            results = {}
            for tool in tools:
                if tool in stopped:
                    continue
                if (tool, task) == ("exactspec-torch", "rrs"):
                    continue            # no PyTorch rrs rule in examples/
                python = args.storm_python if tool.startswith("storm") else sys.executable
                r = run_one(python, tool, task, vocab, args.cap)
                results[tool] = r
                if "cpu" not in r or r["cpu"] > args.cap:
                    stopped.add(tool)
                shown = {k: v for k, v in r.items() if k != "law"}
                print(f"{task:8s} V={vocab:6d} {tool:18s} {json.dumps(shown)}", flush=True)
            table.append((task, vocab, results, agree(results)))
    cell_tools = [t for t in tools]
    print("\n| task | V | " + " | ".join(cell_tools) + " | agree |")
    print("|---|---:|" + "---:|" * len(cell_tools) + "---|")
    for task, vocab, results, ok in table:
        cells = []
        for tool in cell_tools:
            r = results.get(tool)
            if r is None:
                cells.append("-")
            elif r.get("timeout"):
                cells.append(f">{args.cap:g}")
            elif "error" in r:
                cells.append("refused" if "refused" in r["error"] else "failed")
            elif r["cpu"] > args.cap:
                cells.append(f"{r['cpu']:.0f} (over the cap)")
            else:
                route = f" ({r['route']})" if "route" in r else ""
                cells.append(f"{r['cpu']:.2f}{route}")
        print(f"| {task} | {vocab:,} | " + " | ".join(cells) + f" | {ok} |")
    if args.json:
        Path(args.json).write_text(json.dumps(
            [{"task": t, "V": v, "agree": ok,
              "runs": {k: {x: y for x, y in r.items() if x != "law"} for k, r in rs.items()}}
             for t, v, rs, ok in table], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
