"""The gallery's Triton kernels under Triton's own interpreter, against the layer's exact law.

``examples/engines/triton_kernels.py`` runs on exactspec's Triton layer in the rest of the
suite.  Here, where real ``triton`` and ``torch`` are importable (skipped otherwise: neither is
a dependency of the project), the same file runs unedited under ``TRITON_INTERPRET=1`` in a
child process, its random draws taken over every value they can have: ``torch.rand`` on the
grid ``{0, 1/N, ..., (N-1)/N}`` and ``torch.multinomial`` over every index of positive weight,
each outcome weighted exactly (a small depth-first enumeration written in the child).  The
emitted tokens' law, summed over those outcomes, must equal, exactly, the law exactspec gives
for the same rule on the same grid (``grid=N``): the layer's semantics of each kernel
(loads, masks, tiles and the running best across them, ``tl.max`` with indices, ``cumsum``,
``tl.where``) checked against the interpreter's on every input the law depends on.

The rows are dyadic (a ``p = 0 < q`` token and a ``q = 0 < p`` token), so the interpreter's
float32 arithmetic is exact on them and exact arithmetic on the grid is the law to meet.
The race kernels draw exponential noise, which has no grid; they are not checked here (their
laws are derived by hand in ``tests/test_triton_gallery.py``).  A side environment::

    python3 -m venv /tmp/tritonenv && /tmp/tritonenv/bin/pip install torch==2.13.0 triton
    PYTHONPATH=/tmp/tritonenv/lib/python3.11/site-packages python -m pytest tests/test_triton_interpret.py
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from fractions import Fraction as F
from pathlib import Path

import pytest

from exactspec import Dist, verify

GALLERY = Path(__file__).resolve().parent.parent / "examples" / "engines" / "triton_kernels.py"
GRID = 8

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("triton") is None or importlib.util.find_spec("torch") is None,
    reason="real triton and torch are not installed (a side environment provides them)")

#: Each rule of the gallery with a grid law to meet, and its rows.
CASES = [
    ("cdf_recovery", "1/2,1/2,0,0", "1/4,3/4,0,0"),
    ("cdf_recovery_later_tile", "1/2,1/2,0,0", "1/4,3/4,0,0"),
    ("cdf_recovery_later_tile_guarded", "1/2,1/2,0,0", "1/4,3/4,0,0"),
    ("padded_guarded", "1/2,1/4,1/4,0", "1/4,1/4,0,1/2"),
    ("padded_reference", "1/2,1/4,1/4,0", "1/4,1/4,0,1/2"),
]

#: The child: the gallery file under real torch and Triton's interpreter, every outcome of its
#: draws enumerated depth first (the prefix of choices replayed, the next one advanced).
CHILD = r'''
import importlib.util, json, sys
from fractions import Fraction
import torch

path, name, p_text, q_text, grid = sys.argv[1:6]
grid = int(grid)
spec = importlib.util.spec_from_file_location("gallery", path)
gallery = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gallery)
rule = getattr(gallery, name)
p = torch.tensor([float(Fraction(v)) for v in p_text.split(",")], dtype=torch.float64)
q = torch.tensor([float(Fraction(v)) for v in q_text.split(",")], dtype=torch.float64)

prefix, arities, state = [], [], {"depth": 0, "weight": Fraction(1)}

def choose(options):
    """One of ``options`` (value, weight): the prefix's, or the first past its end."""
    d = state["depth"]
    if d == len(prefix):
        prefix.append(0)
        arities.append(len(options))
    value, weight = options[prefix[d]]
    state["depth"] = d + 1
    state["weight"] *= weight
    return value

real_rand, real_multinomial = torch.rand, torch.multinomial

def rand(*size, dtype=None, **kw):
    shape = size[0] if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    n = 1
    for s in shape:
        n *= int(s)
    values = [choose([(i / grid, Fraction(1, grid)) for i in range(grid)]) for _ in range(n)]
    return torch.tensor(values, dtype=dtype or torch.float32).reshape(shape)

def multinomial(weights, num_samples, *a, **kw):
    assert num_samples == 1 and weights.dim() == 1
    w = [Fraction(float(v)) for v in weights.tolist()]
    total = sum(w)
    options = [(i, v / total) for i, v in enumerate(w) if v > 0]
    return torch.tensor([choose(options)], dtype=torch.int64)

torch.rand, torch.multinomial = rand, multinomial
law = {}
while True:
    state["depth"], state["weight"] = 0, Fraction(1)
    token = int(rule(p, q))
    assert state["depth"] == len(prefix)
    law[token] = law.get(token, 0) + state["weight"]
    while prefix and prefix[-1] + 1 == arities[-1]:
        prefix.pop(); arities.pop()
    if not prefix:
        break
    prefix[-1] += 1
print(json.dumps({str(t): str(v) for t, v in sorted(law.items())}))
'''


def interpreter_law(name: str, p: str, q: str) -> dict:
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    out = subprocess.run([sys.executable, "-c", CHILD, str(GALLERY), name, p, q, str(GRID)],
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return {int(t): F(v) for t, v in json.loads(out.stdout.strip().splitlines()[-1]).items()}


@pytest.mark.parametrize("name,p,q", CASES, ids=[c[0] for c in CASES])
def test_the_interpreters_law_on_the_grid_is_the_layers(name, p, q):
    run = verify(f"{GALLERY}:{name}", Dist.parse(p), Dist.parse(q), grid=GRID)
    layer = {int(t): F(v) for t, v in run.law.items() if v != 0}
    assert interpreter_law(name, p, q) == layer


def test_the_check_can_fail():
    """The later-tile bug emits the padded token 2 on the interpreter too: its law is not the
    correct kernel's."""
    assert interpreter_law("cdf_recovery_later_tile", *CASES[1][1:]) != \
        interpreter_law("cdf_recovery", *CASES[0][1:])
