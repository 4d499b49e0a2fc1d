"""An engine's Triton launch code as it ships: ``load(..., refuse="at-use")`` and vLLM's kernels.

The first tests use a fake engine written here (``kernelengine``, on ``sys.path`` in a
``site`` folder): its sampler's module reaches a platform detection that imports a package
that is not installed, and a Triton kernel.  ``load`` with ``refuse="at-use"`` loads what the
sampler needs, binds what cannot be loaded to a stand-in that refuses its use in one line, and
the default (``"at-load"``) still refuses the load.

The last tests run vLLM's ``rejection_sample`` (``vllm/v1/sample/rejection_sampler.py``) through
``examples/engines/vllm_triton_adapter.py`` where vLLM is installed (found as
``tests/test_torch_installed.py`` finds its engines, by ``importlib.util.find_spec``, which
imports nothing), skipped otherwise.  A side environment that is never a dependency of the
project provides it::

    python3 -m venv /tmp/vllm33 && /tmp/vllm33/bin/pip install --no-deps vllm==0.33.0
    PYTHONPATH=/tmp/vllm33/lib/python3.11/site-packages python -m pytest tests/test_triton_shipped.py
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from fractions import Fraction as F
from pathlib import Path

import pytest

import exactspec
from exactspec.cli import main
from exactspec.core.dist import Dist
from exactspec.core.errors import InvalidInput
from exactspec.rounding import split_bias
from exactspec.torch_layer import installed, load

GALLERY = Path(__file__).resolve().parent.parent / "examples" / "engines" / "triton_kernels.py"

FILES = {
    "kernelengine/__init__.py": """
        import not_installed_runtime
        """,
    "kernelengine/platforms.py": """
        import not_installed_regex


        def detect():
            return not_installed_regex.compile("cuda")


        current_platform = detect()
        """,
    "kernelengine/sampler.py": """
        import torch

        from kernelengine.platforms import current_platform

        SCALE = 2


        def scaled(t):
            '''What the sampling path runs: no platform needed.'''
            return t * SCALE


        def on_device(t):
            '''A path that asks the platform.'''
            if current_platform.is_cuda():
                return t
            return t * 0


        def swallowing(t):
            '''Shipped code that catches whatever the platform raises and goes on.'''
            try:
                current_platform.is_cuda()
            except Exception:
                pass
            return t * SCALE


        @current_platform.register
        def registered(t):
            '''A name read while the definition is made: needed at load.'''
            return t
        """,
}

MISSING = ("importing not_installed_regex failed: ModuleNotFoundError: No module named "
           "'not_installed_regex'")
#: the platform's statement ran at load (``refuse="at-use"``: ``detect``'s own missing import a
#: stand-in) and failed there, so the platform is a stand-in too
REFUSAL = ("kernelengine as shipped used 'current_platform' from kernelengine.platforms (its "
           "attribute 'is_cuda'), which could not be loaded: running the statement "
           "(platforms.py:8) failed: kernelengine as shipped used 'not_installed_regex' from "
           f"not_installed_regex (its attribute 'compile'), which could not be loaded: {MISSING}")


@pytest.fixture
def site(tmp_path, monkeypatch):
    root = tmp_path / "site"
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    yield root
    for name in [m for m in sys.modules if m.split(".")[0] == "kernelengine"]:
        del sys.modules[name]


def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def adapter(tmp_path, source: str) -> str:
    path = tmp_path / "adapter.py"
    path.write_text(textwrap.dedent(source).lstrip())
    return str(path)


def test_by_default_a_name_that_cannot_be_loaded_refuses_the_load(site):
    with pytest.raises(InvalidInput) as info:
        load("kernelengine.sampler:on_device")
    assert str(info.value) == (
        "kernelengine.sampler:on_device uses 'current_platform' from kernelengine.platforms, "
        "which could not be loaded: it uses 'detect' from kernelengine.platforms, which uses "
        f"'not_installed_regex' from not_installed_regex: {MISSING}")


def test_at_use_a_path_that_never_reaches_the_name_runs(site):
    on_device = load("kernelengine.sampler:on_device", refuse="at-use")
    scaled = load("kernelengine.sampler:scaled", refuse="at-use")
    with installed() as torch:
        assert scaled(torch.tensor([1, 3])).tolist() == [2, 6]
        with pytest.raises(InvalidInput) as info:
            on_device(torch.tensor([1]))
    assert str(info.value) == REFUSAL
    assert on_device.__exactspec_source__["unloaded"] == [
        f"'not_installed_regex' from not_installed_regex: {MISSING}",
        "'current_platform' from kernelengine.platforms: running the statement (platforms.py:8) "
        "failed: kernelengine as shipped used 'not_installed_regex' from not_installed_regex "
        f"(its attribute 'compile'), which could not be loaded: {MISSING}"]
    assert "kernelengine" not in sys.modules


def test_at_use_a_name_read_at_definition_is_still_refused_at_load(site):
    with pytest.raises(InvalidInput, match="^kernelengine.sampler:registered uses "
                                           "'current_platform' from kernelengine.platforms"):
        load("kernelengine.sampler:registered", refuse="at-use")


def test_the_refusal_of_a_use_is_one_line_on_the_command_line(site, tmp_path, capsys):
    path = adapter(tmp_path, """
        import torch
        from exactspec.torch_layer import load

        on_device = load("kernelengine.sampler:on_device", refuse="at-use")


        def rule(p, q):
            return on_device(torch.multinomial(q, 1))[0]
        """)
    code, out, err = cli(capsys, "verify", f"{path}:rule", "--p", "1/2,1/2", "--q", "1/2,1/2")
    assert code == 2 and out == "" and REFUSAL in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_shipped_code_that_catches_the_refusal_is_refused(site, tmp_path, capsys):
    path = adapter(tmp_path, """
        import torch
        from exactspec.torch_layer import load

        swallowing = load("kernelengine.sampler:swallowing", refuse="at-use")


        def rule(p, q):
            return swallowing(torch.multinomial(q, 1))[0] // 2
        """)
    code, out, err = cli(capsys, "verify", f"{path}:rule", "--p", "1/2,1/2", "--q", "1/2,1/2")
    assert code == 2 and out == "", err
    assert "caught exactspec's InvalidInput" in err and "sampler.py:" in err, err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("refuse", ["later", None, 1])
def test_a_bad_refuse_is_refused(site, refuse):
    with pytest.raises(InvalidInput, match="refuse is 'at-load' or 'at-use'"):
        load("kernelengine.sampler:scaled", refuse=refuse)


def test_the_stand_in_refuses_every_use_and_reads_as_itself(site):
    from exactspec.torch_layer.shipped_source import Unloaded

    stand_in = Unloaded("kernelengine", "why", [("name", "kernelengine.x"),
                                                ("other", "kernelengine.y")])
    assert stand_in.line == "'name' from kernelengine.x: it uses 'other' from kernelengine.y: why"
    assert "could not be loaded" in repr(stand_in)
    uses = {"a call": lambda: stand_in(), "an item": lambda: stand_in[0],
            "its items": lambda: list(stand_in), "its truth": lambda: bool(stand_in),
            "an isinstance test": lambda: isinstance(1, stand_in),
            "its attribute 'x'": lambda: stand_in.x}
    for how, use in uses.items():
        with pytest.raises(InvalidInput) as info:
            use()
        assert str(info.value) == (f"kernelengine as shipped used 'name' from kernelengine.x "
                                   f"({how}), which could not be loaded: it uses 'other' from "
                                   "kernelengine.y: why")


# -- vLLM's rejection_sample and its Triton kernels, as shipped --------------------------------
ADAPTER = Path(__file__).resolve().parent.parent / "examples" / "engines" / \
    "vllm_triton_adapter.py"
P, Q = Dist.parse("1/2,1/3,1/6,0"), Dist.parse("1/4,1/4,0,1/2")   # p = 0 < q at 3, q = 0 < p at 2


def _installed(package: str) -> bool:
    """Whether ``package`` is installed, found without importing it."""
    try:
        return importlib.util.find_spec(package) is not None    # a top-level name: no import
    except (ImportError, ValueError):
        return False


def _vllm_launches_triton() -> bool:
    """vLLM is installed and its second engine's rejection sampler launches Triton kernels."""
    if not _installed("vllm"):
        return False
    folders = importlib.util.find_spec("vllm").submodule_search_locations or []
    for folder in folders:
        path = Path(folder) / "v1" / "sample" / "rejection_sampler.py"
        if path.is_file() and "@triton.jit" in path.read_text():
            return True
    return False


vllm_triton = pytest.mark.skipif(not _vllm_launches_triton(),
                                 reason="vLLM with a Triton rejection sampler is not installed")


@vllm_triton
def test_vllm_rejection_sample_loads_naming_what_it_cannot():
    sample = load("vllm.v1.sample.rejection_sampler:rejection_sample", refuse="at-use")
    source = sample.__exactspec_source__
    assert source["package"] == "vllm" and source["file"].endswith(
        "vllm/v1/sample/rejection_sampler.py")
    # its bundled pynvml binds NVMLError only on a branch that did not run (vllm 0.33.0)
    assert source["unloaded"]
    assert all(line.startswith("'") and " from vllm." in line for line in source["unloaded"])
    assert "vllm" not in sys.modules        # logging.config's import of its formatter too


@vllm_triton
def test_vllm_kernels_as_shipped_are_lossless_exactly():
    # the one-draft rule: the law p, acceptance sum(min(p, q)) = 1/4 + 1/4 = 1/2; the same
    # law as this repository's own kernels of the algorithm (a race over the residual)
    r = exactspec.verify(f"{ADAPTER}:rule", P, Q, max_paths=None)     # the draft a tensor axis
    assert r.lossless and r.law == dict(enumerate(P.probs))
    assert r.acceptance == sum(min(a, b) for a, b in zip(P.probs, Q.probs)) == F(1, 2)
    own = exactspec.verify(f"{GALLERY}:race_recovery", P, Q)
    assert own.law == r.law and own.acceptance == r.acceptance


def _sequence_report(spec: str, p, q, m: int) -> dict:
    from exactspec.sequences.context import ContextPair
    from exactspec.sequences.torch_rules import pytorch_whole_call
    from exactspec.sequences.user import user_report
    from exactspec.torch_layer.rule import load_pytorch_rule

    whole = pytorch_whole_call(load_pytorch_rule(spec), m)
    return user_report({"m": m}, whole, pair=ContextPair.context_free(p, q), m=m)


@vllm_triton
def test_vllm_kernels_with_several_drafts_take_the_factored_route():
    # two drafts in one launch, the request's one noise row raced by both positions: the
    # call's law is the gallery's kernels' (the same algorithm, our own code), and lossless
    r = _sequence_report(f"{ADAPTER}:rule_tokens", P, Q, 3)
    own = _sequence_report(f"{GALLERY}:chain_tokens_one_tile", P, Q, 3)
    assert r["route"] == "factored" and r["factored"]["draft_axes"] == 2
    assert r["verdict"] == "lossless" and r["call_law"] == own["call_law"]


@vllm_triton
@pytest.mark.slow
def test_vllm_kernels_over_two_tiles_of_8192():
    # 9,000 tokens: the recovered token's running maximum across two tiles of BLOCK_SIZE 8192,
    # selected without a branch; tokens per call 1 + sum(min(p, q)) exactly
    import random

    rng = random.Random(5)
    wp = [rng.randint(0, 9) for _ in range(9000)]
    wq = [rng.randint(0, 9) for _ in range(9000)]
    p = Dist([F(w, sum(wp)) for w in wp])
    q = Dist([F(w, sum(wq)) for w in wq])
    r = _sequence_report(f"{ADAPTER}:rule_tokens", p, q, 2)
    assert r["route"] == "factored" and r["verdict"] == "lossless"
    assert F(r["tokens_per_call"]) == 1 + sum(min(a, b) for a, b in zip(p.probs, q.probs))


@vllm_triton
@pytest.mark.slow
def test_vllm_kernels_under_float32_are_refused_at_their_gpu_division():
    # float32 rows beside a float64 uniform, accepted when p / q >= u: Triton's / on float32
    # is the GPU's approximate div.full.f32, which the layer does not model: refused in one
    # line naming vLLM's line (the next test checks the kernels as Triton's interpreter runs
    # them).
    with pytest.raises(InvalidInput) as info:
        split_bias(f"{ADAPTER}:rule", P, Q, arith="float32", sum_order="torch-avx2",
                   max_paths=None)
    assert "division under --arith" in str(info.value) and "div.full.f32" in str(info.value)
    assert "rejection_random_sample_kernel, rejection_sampler.py:" in str(info.value)


@vllm_triton
@pytest.mark.slow
def test_vllm_kernels_as_the_interpreter_runs_them_are_lossy_by_rounding_only():
    # --elementwise numpy: / correctly rounded (Triton's interpreter, NumPy's IEEE division).
    # Derived by hand: the draft 3 of q = 1/2, p = 0, is accepted where 0 / q >= u, at u = 0,
    # 2**-53 of the float64 uniforms, so token 3 gets 2**-54, taken from the rejection, whose
    # residual gives token 2 a third: 1/6 - 2**-54 / 3; tokens 0 and 1 take fl(1/3)'s rounding.
    s = split_bias(f"{ADAPTER}:rule", P, Q, arith="float32", sum_order="torch-avx2",
                   elementwise="numpy", max_paths=None)
    law = s.rounded.law
    assert s.verdict == "lossy-rounding" and s.bias_exact_arith == 0
    assert law[3] == F(1, 2 ** 54)
    assert law[2] == F(1, 6) - F(1, 2 ** 54) / 3
    assert sum(law.values()) == 1


# -- SGLang's chain sampler, as shipped --------------------------------------------------------
SGLANG = Path(__file__).resolve().parent.parent / "examples" / "engines" / \
    "triton_sglang_adapter.py"


def _sglang_launches_triton() -> bool:
    if not _installed("sglang"):
        return False
    folders = importlib.util.find_spec("sglang").submodule_search_locations or []
    return any((Path(f) / "kernels" / "ops" / "speculative" / "reject_sampling.py").is_file()
               for f in folders)


sglang_triton = pytest.mark.skipif(not _sglang_launches_triton(),
                                   reason="SGLang with a Triton chain sampler is not installed")


@sglang_triton
def test_sglang_chain_kernel_as_shipped_is_lossless_exactly():
    # accept while coin * q < p, else the residual's inverse CDF: law p, acceptance 1/2, as
    # this repository's own race kernel of the same rule
    r = exactspec.verify(f"{SGLANG}:rule", P, Q, max_paths=None)
    assert r.lossless and r.law == dict(enumerate(P.probs)) and r.acceptance == F(1, 2)
    own = exactspec.verify(f"{GALLERY}:race_recovery", P, Q)
    assert own.law == r.law and own.acceptance == r.acceptance
    assert "sglang" not in sys.modules


@sglang_triton
def test_sglang_chain_kernel_with_several_drafts_takes_the_factored_route():
    # three drafts in one launch: every draft a tensor axis, the final token's inverse CDF in
    # one tile its law; the call's law of the gallery's chain of the same rule (our own code)
    r = _sequence_report(f"{SGLANG}:rule_tokens", P, Q, 4)
    own = _sequence_report(f"{GALLERY}:cdf_chain_tokens", P, Q, 4)
    assert r["route"] == "factored" and r["factored"]["draft_axes"] == 3
    assert r["verdict"] == "lossless" and r["call_law"] == own["call_law"]
    assert F(r["tokens_per_call"]) == 1 + F(1, 2) + F(1, 4) + F(1, 8)


@sglang_triton
def test_sglang_chain_kernel_under_float32_is_refused_at_its_fusable_product():
    # its tl.sum over 4096 lanes needs a declared order; with one declared, its
    # residual_scale * p_val - q_val may be one fused multiply-add on the GPU: refused
    with pytest.raises(InvalidInput) as info:
        split_bias(f"{SGLANG}:rule", P, Q, arith="float32", sum_order="sequential",
                   max_paths=None)
    assert "a * b + c" in str(info.value)
    assert "speculative_sampling_classic_kernel, reject_sampling.py:" in str(info.value)


@sglang_triton
@pytest.mark.slow
def test_sglang_chain_kernel_as_the_interpreter_runs_it_is_lossy_by_its_grid_only():
    # --elementwise numpy: no compiler fuses the multiply-add.  The draft of p = 0 is never
    # accepted (coin * q < 0 is false, even at coin = 0); the float32 run's law is the law of
    # the same rule in exact arithmetic on the uniforms' grid of 2**24 (a second run, exact)
    s = split_bias(f"{SGLANG}:rule", P, Q, arith="float32", sum_order="sequential",
                   elementwise="numpy", max_paths=None)
    assert s.verdict == "lossy-grid" and s.bias_exact_arith == 0
    assert s.bias == s.bias_grid_only == F(1, 100663296)
    assert s.rounded.law[3] == 0 and s.rounded.law[1] == F(1, 3) + F(1, 100663296)
