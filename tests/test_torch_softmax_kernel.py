"""A ``float32`` softmax under ``--arith`` as torch's AVX2 CPU kernel computes it.

The model (:mod:`exactspec.torch_layer.torch_softmax`): the maximum, SLEEF's vectorised
``exp`` of the rounded differences (fused multiply-adds rounded once), the kernel's 8-lane
``reduce_all`` sum, a multiplication by the rounded reciprocal.  Checked here without torch:
the fused multiply-add against Fractions, the ``exp`` within one ulp of the correctly rounded
one (and not equal to it everywhere), the lane order of the sum on rows where it shows,
pinned values; the layer computing the model only with ``--sum-order torch-avx2`` and
refusing the rest in one line that names what is not modelled and the ways out; a rule in
transformers' idiom on logits under ``--arith float32``, with its exact verdict and TVs.
Where real torch is importable (``/tmp/torchenv``, put at the end of ``sys.path`` in a
subprocess run with ``ATEN_CPU_CAPABILITY=avx2`` and one thread), ``torch.softmax`` equals
the model bit for bit on random rows of 1 to 400 logits (``-inf`` among them) and on one of
152,064.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from fractions import Fraction as F
from pathlib import Path

import numpy as np
import pytest

from exactspec import Dist
from exactspec.core.errors import ExactspecError
from exactspec.engine import floats
from exactspec.engine.floats import FORMATS, FloatValue
from exactspec.rounding import split_bias
from exactspec.torch_layer import installed
from exactspec.torch_layer.context import Run
from exactspec.torch_layer.torch_softmax import _fma, exp_avx2, reduce_sum_avx2, softmax_avx2

F32 = FORMATS["float32"]
TORCHENV = Path("/tmp/torchenv/lib/python3.11/site-packages")


def ulps(a: float, b: float) -> int:
    ia, ib = (int(np.array(x, np.float32).view(np.int32)) for x in (a, b))
    return abs(ia - ib)


def test_fused_multiply_add_rounds_once():
    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal(3000).astype(np.float32) for _ in range(3))
    c[:1000] = -(a[:1000].astype(np.float64) * b[:1000]).astype(np.float32)   # cancellations
    got = _fma(a, b, c)
    for i in range(len(a)):
        exact = F(float(a[i])) * F(float(b[i])) + F(float(c[i]))
        assert F(float(got[i])) == F(F32.round(exact)), i
    # a float32 midpoint that float64 reaches: 1 + 2**-24 + 2**-60 rounds up, not to even
    x = np.float32(1 + 2 ** -12)
    y = np.float32(1 + 2 ** -12)
    # x * y = 1 + 2**-11 + 2**-24: exactly a midpoint of float32 above 1 + 2**-11
    assert float(_fma(x, y, np.float32(0))) == float(F32.round(F(1 + 2 ** -12) ** 2))
    assert float(_fma(x, y, np.float32(2 ** -40))) == 1 + 2 ** -11 + 2 ** -23


def test_the_vectorised_exp_is_within_one_ulp_and_not_correctly_rounded():
    rng = np.random.default_rng(2)
    x = rng.uniform(-100, 0, 3000).astype(np.float32)
    got = exp_avx2(x)
    want = [floats.exp(FloatValue(float(v), F32)).value for v in x]
    far = [ulps(g, w) for g, w in zip(got, want)]
    assert max(far) <= 1 and sum(far) > 0          # SLEEF's 1 ulp, not correct rounding
    assert exp_avx2(np.array([0, -np.inf, -104.5], np.float32)).tolist() == [1.0, 0.0, 0.0]
    assert float(exp_avx2(np.array([-1], np.float32))[0]) == float(F(6171993, 2 ** 24))


def test_the_sum_folds_eight_lanes_in_the_kernels_order():
    big = np.float32(2 ** 24)
    row = np.array([big, 1, 0, 0, 0, 1, 0, 0], np.float32)     # lanes 0 and 1 meet last
    assert float(reduce_sum_avx2(row)) == 2 ** 24 + 2           # 2**24 + (1 + 1)
    assert float(sum(np.float32(v) for v in row)) == 2 ** 24    # left to right loses both
    tail = np.array([big, 0, 0, 0, 0, 1, 0, 0, 0, 1], np.float32)   # the tail into lane 1
    assert float(reduce_sum_avx2(tail)) == 2 ** 24 + 2
    assert float(reduce_sum_avx2(np.array([big, 1, 1], np.float32))) == 2 ** 24   # short row


def test_pinned_softmax_rows():
    """Values torch 2.14's AVX2 kernel gives (read off it once)."""
    assert [F(float(v)) for v in softmax_avx2([0.0, -1.0])] == \
        [F(1533141, 2 ** 21), F(9024177, 2 ** 25)]
    assert [F(float(v)) for v in softmax_avx2([0.0, -np.inf, 0.0])] == [F(1, 2), 0, F(1, 2)]


def val(v) -> F:
    return F(v.value if isinstance(v, FloatValue) else float(v))


def _run(order):
    return Run(types.SimpleNamespace(sum_order=order, floats=0), F32)


def test_the_layer_computes_the_model_only_with_the_avx2_order():
    logits = [0.5, -1.25, 3.0, -np.inf, 2.0, 0.0, 1.0, -2.0, 0.25]
    with installed(_run("torch-avx2")) as torch:
        got = torch.tensor(logits).softmax(-1).tolist()
        assert [val(v) for v in got] == [val(v) for v in softmax_avx2(logits)]
        two = torch.tensor([logits, logits]).softmax(dim=1).tolist()
        assert [[val(v) for v in r] for r in two] == [[val(v) for v in got]] * 2
        masked = torch.tensor([0.0, -np.inf, 0.0]).softmax(-1).tolist()
        assert [val(v) for v in masked] == [F(1, 2), 0, F(1, 2)]
        with pytest.raises(ExactspecError, match="dimension 0 .* not modelled"):
            torch.tensor([logits, logits]).softmax(dim=0)
        with pytest.raises(ExactspecError, match="float16 row .* libm's expf"):
            torch.tensor(logits, dtype=torch.float16).softmax(-1)
        with pytest.raises(ExactspecError, match="log_softmax .* SLEEF's vectorised log"):
            torch.log_softmax(torch.tensor(logits), -1)
    with installed(_run(None)) as torch:
        with pytest.raises(ExactspecError) as info:
            torch.tensor(logits).softmax(-1)
    message = str(info.value)
    assert "AVX2 CPU kernel" in message and "--sum-order torch-avx2" in message
    assert "give the rule probabilities" in message and "\n" not in message


RULE = '''
import torch


def rule(p, q):
    draft = torch.multinomial(q, num_samples=1).view(1, 1)
    q_all = q.log().view(1, 1, -1).softmax(dim=-1)
    p_all = torch.stack([p.log(), p.log()]).unsqueeze(0).softmax(dim=-1)
    p_i = p_all[:, torch.arange(1), draft].squeeze(0, 1)
    ratio = p_i / q_all[:, torch.arange(1), draft].squeeze(0, 1)
    if (torch.rand_like(ratio) <= ratio).all():
        return draft[0, 0]
    residual = torch.clamp(p_all[0, 0] - q_all[0, 0], min=0)
    residual.div_(residual.sum())
    return torch.multinomial(residual, num_samples=1)[0]
'''


def test_a_rule_on_logits_under_float32(tmp_path):
    """The float run's softmax of ``log p`` is not ``p``: lossy by rounding, the exact runs
    lossless (the logits stay rational there)."""
    path = tmp_path / "idiom.py"
    path.write_text(RULE)
    p, q = Dist([F(1, 2), F(1, 3), F(1, 6), F(0)]), Dist([F(1, 4)] * 4)
    split = split_bias(f"{path}:rule", p, q, arith="float32", sum_order="torch-avx2",
                       max_paths=None)
    assert split.verdict == "lossy-rounding"
    assert split.bias_exact_arith == 0
    assert split.bias > 0 and split.bias < F(1, 2 ** 24)
    assert split.rounded.paths <= 2 and split.exact.paths <= 2


# -- against real torch ------------------------------------------------------------------
PROBE = r'''
import json, sys
sys.path.append(sys.argv[1])
import numpy as np, torch
torch.set_num_threads(1)
rng = np.random.default_rng(11)
rows = []
for trial in range(300):
    n = int(rng.integers(1, 400))
    row = (rng.standard_normal(n) * rng.choice([1, 3, 10, 30])).astype(np.float32)
    if trial % 4 == 0:
        row[rng.integers(0, n, n // 3)] = -np.inf
        row[0] = 0
    rows.append(row)
rows.append((rng.standard_normal(152064) * 2).astype(np.float32))
out = [torch.softmax(torch.from_numpy(r), -1).numpy().view(np.uint32).tolist() for r in rows]
print(json.dumps({"capability": torch.backends.cpu.get_cpu_capability(),
                  "version": torch.__version__,
                  "rows": [r.view(np.uint32).tolist() for r in rows], "out": out}))
'''


@pytest.mark.skipif(not (TORCHENV / "torch").is_dir(), reason="torch is not installed")
def test_the_model_equals_torch_bit_for_bit_on_avx2():
    env = dict(os.environ, ATEN_CPU_CAPABILITY="avx2", OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", PROBE, str(TORCHENV)], env=env,
                          capture_output=True, text=True, timeout=300)
    if done.returncode:
        pytest.skip(f"torch did not run here: {done.stderr.strip().splitlines()[-1:]}")
    data = json.loads(done.stdout)
    assert data["capability"] == "AVX2", data["capability"]
    for bits, want in zip(data["rows"], data["out"]):
        row = np.array(bits, np.uint32).view(np.float32)
        got = np.array(softmax_avx2(row), np.float32).view(np.uint32).tolist()
        assert got == want, len(row)


def test_remembered_roundings_equal_fresh_ones(monkeypatch):
    """``exp``/``log`` rounded once and remembered give what a fresh certified rounding gives
    (a float run takes the log of one row twice)."""
    rng = np.random.default_rng(9)
    xs = [float(v) for v in rng.uniform(1e-6, 1, 50).astype(np.float32)]
    first = [floats.log(FloatValue(x, F32)).value for x in xs]
    again = [floats.log(FloatValue(x, F32)).value for x in xs]
    monkeypatch.setattr(floats, "ROUNDED", {})
    monkeypatch.setattr(floats, "ROUNDED_MAX", 0)
    fresh = [floats.log(FloatValue(x, F32)).value for x in xs]
    assert first == again == fresh
    assert floats.ROUNDED == {}
