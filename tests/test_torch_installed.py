"""``exactspec.torch_layer.load``: a function or class of an installed engine, taken from its
source as it ships, verified through an adapter file without importing the engine.

The engine here is a fake package written for these tests, installed in a ``site`` folder on
``sys.path`` with its ``dist-info``: its ``__init__`` and the modules around the sampler import
packages that do not exist, so any import of the package, or any run of an import the sampler
does not need, fails."""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap
from fractions import Fraction as F

import pytest

from exactspec.cli import main
from exactspec.core.errors import InvalidInput
from exactspec.torch_layer import installed, load

FILES = {
    "fakeengine/__init__.py": """
        '''A fake engine: importing the package pulls in what is not installed.'''
        import nonexistent_heavy_dep
        from .sampling.utils import speculative_step
        """,
    "fakeengine/config.py": """
        import nonexistent_config_backend

        NUM_SAMPLES = 1
        """,
    "fakeengine/envs.py": """
        import os

        _DEFAULTS = {"USE_FUSED_KERNEL": False}


        def __getattr__(name):
            if name in _DEFAULTS:
                return _DEFAULTS[name]
            raise AttributeError(name)
        """,
    "fakeengine/sampling/__init__.py": """
        import nonexistent_heavy_dep.kernels
        """,
    "fakeengine/sampling/helpers.py": """
        import torch
        import nonexistent_heavy_dep

        CLAMP_FLOOR = 0


        def normalised_residual(target_probs, draft_probs):
            '''The positive part of target minus draft, normalised.'''
            residual = torch.clamp(target_probs - draft_probs, min=CLAMP_FLOOR)
            return residual / residual.sum()


        def on_gpu():
            return nonexistent_heavy_dep.kernels.launch()


        @torch.jit.script
        def race(probs: torch.Tensor) -> torch.Tensor:
            '''An exponential race: the index of the largest probs / noise (in place).'''
            noise = torch.empty_like(probs)
            noise.exponential_(1.0)
            return probs.div_(noise).argmax(dim=-1)
        """,
    "fakeengine/sampling/base.py": """
        import abc

        import torch


        class VerifierBase(abc.ABC):
            '''What every verifier of the engine offers.'''

            def __init__(self, strict: bool = False):
                self.strict = strict

            @abc.abstractmethod
            def verify(self, target_probs, draft_probs, draft_token):
                ...

            def __call__(self, target_probs, draft_probs, draft_token):
                return self.verify(target_probs, draft_probs, draft_token)
        """,
    "fakeengine/sampling/utils.py": """
        import math
        from typing import Optional, Tuple

        import torch
        import torch.nn.functional as F
        import nonexistent_heavy_dep
        from nonexistent_heavy_dep.kernels import fused_verify
        from fakeengine.models import build_everything
        import fakeengine.envs as envs

        from ..config import NUM_SAMPLES
        from .base import VerifierBase
        from .helpers import normalised_residual

        _ACCEPT_EVERYTHING = False


        @torch.no_grad()
        def speculative_step(
            candidate_ids: torch.Tensor,
            draft_probs: torch.Tensor,
            target_probs: torch.Tensor,
            is_last: Optional[bool] = False,
        ) -> Tuple[torch.Tensor, int]:
            '''Accept the candidates left to right while u < p / q; at the first rejection
            emit a token of the residual, after k acceptances one of the next target row.'''
            k = candidate_ids.shape[-1]
            positions = torch.arange(k)
            q_i = draft_probs[:, positions, candidate_ids[0]].squeeze(0)
            p_i = target_probs[:, positions, candidate_ids[0]].squeeze(0)
            u = torch.rand_like(p_i)
            accepted = (u < p_i / q_i) | _ACCEPT_EVERYTHING
            n_matches = int(((~accepted).cumsum(dim=-1) < 1).sum())
            if n_matches < k:
                row = normalised_residual(target_probs[0, n_matches], draft_probs[0, n_matches])
            else:
                row = target_probs[0, n_matches]
            next_token = torch.multinomial(row, num_samples=NUM_SAMPLES)
            return torch.cat((candidate_ids[0, :n_matches], next_token)), n_matches


        def speculative_step_from_target(candidate_ids, draft_probs, target_probs):
            '''A rejected position's token drawn from the target row (lossy).'''
            from .helpers import normalised_residual as unused_here
            ratio = target_probs[0, 0, candidate_ids[0, 0]] / draft_probs[0, 0, candidate_ids[0, 0]]
            if torch.rand(1) < ratio:
                return candidate_ids[0, :1]
            return torch.multinomial(target_probs[0, 0], num_samples=NUM_SAMPLES)


        def step_with_fused_kernel(candidate_ids, draft_probs, target_probs):
            return fused_verify(candidate_ids, draft_probs, target_probs)


        def step_with_an_undefined_helper(candidate_ids, draft_probs, target_probs):
            return undefined_helper(candidate_ids)


        class RejectionVerifier(VerifierBase):
            '''One draft token accepted with probability min(1, p / q), else a residual token.'''

            num_samples = NUM_SAMPLES

            def verify(self, target_probs, draft_probs, draft_token):
                if envs.USE_FUSED_KERNEL:
                    raise NotImplementedError("the fused kernel runs on a GPU")
                ratio = target_probs[draft_token] / draft_probs[draft_token]
                if torch.rand(1) < ratio:
                    return draft_token
                residual = normalised_residual(target_probs, draft_probs)
                return torch.multinomial(residual, self.num_samples)
        """,
    "fakeengine/idioms.py": """
        from __future__ import annotations

        import dataclasses
        import functools
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from nonexistent_heavy_dep import HeavyType
        try:
            from nonexistent_heavy_dep import fast_path
        except ImportError:
            fast_path = None
        from .more import *
        from . import more as more_module
        import thirdparty_helper

        REGISTRY = {}
        REGISTRY["double"] = lambda x: 2 * x
        LIMIT = 3
        LIMIT += 1


        def factorial(n: HeavyType) -> HeavyType:
            return 1 if n <= 1 else n * factorial(n - 1)


        def plus_100(f):
            @functools.wraps(f)
            def wrapper(*args):
                return f(*args) + 100
            return wrapper


        def identity(x):
            return x


        identity = plus_100(identity)


        @functools.lru_cache(maxsize=None)
        def cached(x):
            return x + LIMIT


        @dataclasses.dataclass
        class Point:
            x: int
            y: HeavyType = 0

            def norm1(self):
                return abs(self.x) + abs(self.y) + from_more(0)


        def everything(x):
            return (factorial(x), identity(x), cached(x), REGISTRY["double"](x),
                    Point(x, 1).norm1(), fast_path is None, more_module.MORE, back_and_forth(x))


        def one_less(x):
            return x - 1


        def scale_of_another_package():
            return thirdparty_helper.SCALE
        """,
    "thirdparty_helper.py": """
        import torch

        SCALE = torch.tensor([3])
        """,
    "fakeengine/more.py": """
        import nonexistent_heavy_dep

        MORE = 7
        __all__ = ["from_more", "back_and_forth"]


        def from_more(x):
            return x + MORE


        def back_and_forth(x):
            from .idioms import one_less
            return one_less(x) * 10
        """,
    "fakeengine-1.2.3.dist-info/METADATA": """
        Metadata-Version: 2.1
        Name: fakeengine
        Version: 1.2.3
        """,
    "fakeengine-1.2.3.dist-info/top_level.txt": """
        fakeengine
        """,
}

STEP = """
    import torch
    from exactspec.torch_layer import load

    step = load("fakeengine.sampling.utils:{name}")


    def rule(p, q):
        candidate = torch.multinomial(q, num_samples=1).view(1, 1)
        tokens = step(candidate, q.view(1, 1, -1), torch.stack([p, p]).unsqueeze(0))
        return (tokens[0] if isinstance(tokens, tuple) else tokens)[0]
    """

P, Q = "1/2,1/3,1/6", "1/3,1/3,1/3"


@pytest.fixture
def site(tmp_path, monkeypatch):
    """The fake engine installed in ``tmp_path/site``, first on ``sys.path``."""
    root = tmp_path / "site"
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    yield root
    for name in [m for m in sys.modules if m.split(".")[0] in
                 ("fakeengine", "nonexistent_heavy_dep", "thirdparty_helper")]:
        del sys.modules[name]


def adapter(tmp_path, source: str, name: str = "adapter.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source).lstrip())
    return str(path)


def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def law_of_residual_drawn_from_target(p, q):
    """The law of one position when a rejected draft is replaced by a draw from ``p``:
    ``min(p, q) + P(reject) p``."""
    reject = sum(max(b - a, 0) for a, b in zip(p, q))
    return [min(a, b) + reject * a for a, b in zip(p, q)]


def test_the_shipped_function_is_lossless_without_importing_the_package(site, tmp_path, capsys):
    path = adapter(tmp_path, STEP.format(name="speculative_step"))
    code, out, err = cli(capsys, "verify", f"{path}:rule", "--p", P, "--q", Q, "--json")
    data = json.loads(out)
    assert code == 0, err
    assert data["lossless"] and data["verdict"] == "lossless"
    assert {k: F(v) for k, v in data["output"].items()} == {"0": F(1, 2), "1": F(1, 3),
                                                           "2": F(1, 6)}
    assert F(data["acceptance"]) == sum(min(F(a), F(b)) for a, b in zip(P.split(","),
                                                                       Q.split(",")))
    assert not any(m.split(".")[0] in ("fakeengine", "nonexistent_heavy_dep") for m in sys.modules)
    (shipped,) = data["shipped"]
    assert (shipped["package"], shipped["module"], shipped["name"]) == \
        ("fakeengine", "fakeengine.sampling.utils", "speculative_step")
    code, out, err = cli(capsys, "verify", f"{path}:rule", "--p", P, "--q", Q)
    assert code == 0 and f"runs fakeengine.sampling.utils:speculative_step of fakeengine " \
        f"{shipped['version']} as shipped ({shipped['file']})" in out.splitlines(), out
    code, out, err = cli(capsys, "verify", f"{path}:rule", "--p", P, "--q", Q, "--arith",
                         "float32", "--json")
    assert json.loads(out)["shipped"] == [shipped], err


def test_a_zero_of_the_target_under_a_positive_draft(site, tmp_path, capsys):
    path = adapter(tmp_path, STEP.format(name="speculative_step"))
    code, out, _ = cli(capsys, "verify", f"{path}:rule", "--p", "1/2,1/3,1/6,0", "--q",
                       "1/4,1/4,1/4,1/4", "--json")
    data = json.loads(out)
    assert code == 0 and data["output"] == {"0": "1/2", "1": "1/3", "2": "1/6", "3": "0"}
    assert F(data["acceptance"]) == F(1, 4) + F(1, 4) + F(1, 6) + 0      # sum of min(p, q)


def test_a_lossy_function_of_the_package_gets_its_exact_law(site, tmp_path, capsys):
    path = adapter(tmp_path, STEP.format(name="speculative_step_from_target"))
    code, out, _ = cli(capsys, "verify", f"{path}:rule", "--p", P, "--q", Q, "--json")
    data = json.loads(out)
    p, q = [F(v) for v in P.split(",")], [F(v) for v in Q.split(",")]
    expected = law_of_residual_drawn_from_target(p, q)
    assert code == 1 and data["verdict"] == "lossy-logic"
    assert [F(data["output"][str(i)]) for i in range(3)] == expected == \
        [F(5, 12), F(7, 18), F(7, 36)]
    assert F(data["bias"]) == sum(abs(a - b) for a, b in zip(expected, p)) / 2 == F(1, 12)


def test_a_class_of_the_package_loaded_with_its_base_class_from_another_module(site, tmp_path,
                                                                              capsys):
    path = adapter(tmp_path, """
        import torch
        from exactspec.torch_layer import load

        RejectionVerifier = load("fakeengine.sampling.utils:RejectionVerifier")


        def rule(p, q):
            return RejectionVerifier(strict=True)(p, q, torch.multinomial(q, 1))
        """)
    code, out, err = cli(capsys, "verify", f"{path}:rule", "--p", P, "--q", "1/4,1/4,1/2",
                         "--json")
    assert code == 0 and json.loads(out)["output"] == {"0": "1/2", "1": "1/3", "2": "1/6"}, err
    verifier = load("fakeengine.sampling.utils:RejectionVerifier")
    assert [c.__name__ for c in verifier.__mro__] == ["RejectionVerifier", "VerifierBase",
                                                      "ABC", "object"]
    assert verifier.num_samples == 1 and verifier.__module__ == "fakeengine.sampling.utils"
    with pytest.raises(TypeError):                  # the abstract base stays abstract
        verifier.__mro__[1]()


def test_a_scripted_function_runs_eagerly_under_the_layer(site, tmp_path, capsys):
    with installed() as torch:
        try:
            torch.jit.script
        except InvalidInput:
            pytest.xfail("the layer has no torch.jit yet")
    path = adapter(tmp_path, """
        import torch
        from exactspec.torch_layer import load

        race = load("fakeengine.sampling.helpers:race")


        def rule(p, q):
            draft = torch.multinomial(q, 1)
            if torch.rand(1) < p[draft] / q[draft]:
                return draft
            residual = torch.clamp(p - q, min=0)
            return race(residual / residual.sum())
        """)
    code, out, err = cli(capsys, "verify", f"{path}:rule", "--p", P, "--q", Q, "--json")
    assert code == 0 and json.loads(out)["output"] == {"0": "1/2", "1": "1/3", "2": "1/6"}, err


def test_the_source_the_function_came_from(site):
    step = load("fakeengine.sampling.utils:speculative_step")
    assert step.__exactspec_source__ == {
        "package": "fakeengine", "version": "1.2.3", "module": "fakeengine.sampling.utils",
        "name": "speculative_step",
        "file": str(site / "fakeengine" / "sampling" / "utils.py")}
    code = getattr(step, "__wrapped__", step).__code__      # under its @torch.no_grad()
    assert code.co_filename == str(site / "fakeengine" / "sampling" / "utils.py")
    assert code.co_firstlineno == 18                 # the def's line in the shipped file
    method = load("fakeengine.sampling.utils:RejectionVerifier.verify")
    assert method.__qualname__ == "RejectionVerifier.verify"
    assert method.__exactspec_source__["name"] == "RejectionVerifier.verify"


def test_only_what_the_definition_uses_is_run(site):
    step = load("fakeengine.sampling.utils:speculative_step")
    module = getattr(step, "__wrapped__", step).__globals__
    assert {"torch", "normalised_residual", "NUM_SAMPLES", "_ACCEPT_EVERYTHING"} <= set(module)
    assert not {"math", "F", "nonexistent_heavy_dep", "fused_verify", "build_everything",
                "envs", "VerifierBase"} & set(module)
    helpers = module["normalised_residual"].__globals__
    assert "CLAMP_FLOOR" in helpers and "on_gpu" not in helpers
    assert "fakeengine" not in sys.modules and "nonexistent_heavy_dep" not in sys.modules
    with installed() as torch:
        residual = module["normalised_residual"](torch.tensor([F(1, 2), F(1, 3), F(1, 6)]),
                                                 torch.tensor([F(1, 4), F(1, 4), F(1, 2)]))
    assert residual.tolist() == [F(3, 4), F(1, 4), 0]      # (1/4, 1/12, 0) over 1/3


def test_two_loads_while_one_adapter_is_imported_share_the_package(site):
    with installed():
        verifier = load("fakeengine.sampling.utils:RejectionVerifier")
        base = load("fakeengine.sampling.base:VerifierBase")
    assert verifier.__mro__[1] is base
    assert load("fakeengine.sampling.base:VerifierBase") is not base     # read afresh


def test_a_load_outside_a_rule_file_installs_the_layer_for_itself(site):
    import exactspec.torch_layer as layer

    before = sys.modules.get("torch")
    step = load("fakeengine.sampling.utils:speculative_step")
    torch = getattr(step, "__wrapped__", step).__globals__["torch"]
    assert sys.modules.get("torch") is before and torch is not before
    assert torch.__name__ == "torch" and torch.clamp is not None          # the layer's
    assert layer.installed.__module__ == "exactspec.torch_layer.module"   # still the function


def test_module_idioms_of_an_engine(site):
    """A fallback in ``try``/``except ImportError``, an import under ``TYPE_CHECKING`` used
    only in annotations, ``from .more import *``, a dict filled after it is made, ``+=``, a
    recursive function, a name bound again (``f = deco(f)``), ``lru_cache``, a dataclass, a
    relative import inside a function that comes back to the module."""
    everything = load("fakeengine.idioms:everything")
    assert everything(5) == (120, 105, 9, 10, 13, True, 7, 40)
    assert "HeavyType" not in everything.__globals__
    assert "fakeengine" not in sys.modules and "nonexistent_heavy_dep" not in sys.modules


def test_another_package_imported_under_the_layer_is_not_kept(site):
    """A module outside the package is imported as written, under the layer; one that holds
    the layer's torch is dropped from ``sys.modules`` afterwards, so that later code does not
    get the stand-in from it."""
    scale = load("fakeengine.idioms:scale_of_another_package")
    assert scale().tolist() == [3]
    assert "thirdparty_helper" not in sys.modules


def test_annotations_are_not_evaluated(site):
    step = load("fakeengine.sampling.utils:speculative_step")
    step = getattr(step, "__wrapped__", step)
    assert step.__annotations__["candidate_ids"] == "torch.Tensor"
    assert step.__annotations__["is_last"] == "Optional[bool]"


@pytest.mark.parametrize("name, message", [
    ("step_with_fused_kernel",
     "fakeengine.sampling.utils:step_with_fused_kernel uses 'fused_verify' from "
     "nonexistent_heavy_dep.kernels, which could not be loaded: importing "
     "nonexistent_heavy_dep.kernels failed: ModuleNotFoundError: No module named "
     "'nonexistent_heavy_dep'"),
    ("step_with_an_undefined_helper",
     "fakeengine.sampling.utils:step_with_an_undefined_helper uses 'undefined_helper' from "
     "fakeengine.sampling.utils, which could not be loaded: fakeengine.sampling.utils does "
     "not define 'undefined_helper'"),
    ("no_such_function",
     "fakeengine.sampling.utils:no_such_function: fakeengine.sampling.utils does not define "
     "'no_such_function'"),
])
def test_a_name_that_cannot_be_loaded_is_refused_in_one_line(site, tmp_path, capsys, name,
                                                             message):
    path = adapter(tmp_path, STEP.format(name=name))
    code, out, err = cli(capsys, "verify", f"{path}:rule", "--p", P, "--q", Q)
    assert code == 2 and out == "" and message in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    with pytest.raises(InvalidInput) as info:
        load(f"fakeengine.sampling.utils:{name}")
    assert str(info.value) == message


def test_a_chain_of_names_is_named_to_the_one_that_failed(site):
    (site / "fakeengine" / "sampling" / "helpers.py").write_text(textwrap.dedent("""
        from nonexistent_heavy_dep import clamp_kernel


        def normalised_residual(target_probs, draft_probs):
            return clamp_kernel(target_probs - draft_probs)
        """))
    with pytest.raises(InvalidInput) as info:
        load("fakeengine.sampling.utils:speculative_step")
    assert str(info.value) == (
        "fakeengine.sampling.utils:speculative_step uses 'normalised_residual' from "
        "fakeengine.sampling.helpers, which could not be loaded: it uses 'clamp_kernel' from "
        "nonexistent_heavy_dep: importing nonexistent_heavy_dep failed: ModuleNotFoundError: "
        "No module named 'nonexistent_heavy_dep'")


@pytest.mark.parametrize("target, message", [
    ("fakeengine.sampling.utils", "expected 'package.module:name'"),
    ("fakeengine.sampling.utils:", "expected 'package.module:name'"),
    ("fake-engine:f", "expected 'package.module:name'"),
    ("no_such_engine.utils:f", "no_such_engine.utils:f: no module no_such_engine found on "
     "sys.path"),
    ("fakeengine.nothing:f", "fakeengine.nothing:f: no module fakeengine.nothing found in "
     "fakeengine"),
    ("torch.nn.functional:softmax", "torch is not an engine's package"),
])
def test_bad_targets_are_refused_in_one_line(site, target, message):
    with pytest.raises(InvalidInput) as info:
        load(target)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_built_in_module_is_refused(site):
    with pytest.raises(InvalidInput, match="sys:exit: sys is not Python source"):
        load("sys:exit")


def test_a_compiled_module_is_refused(site):
    (site / "fakeengine" / "fast.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    importlib.invalidate_caches()
    with pytest.raises(InvalidInput, match="not Python source"):
        load("fakeengine.fast:f")


def test_the_package_directory_is_found_without_importing_it(site):
    spec = importlib.util.find_spec("fakeengine")
    assert spec.submodule_search_locations == [str(site / "fakeengine")]
    assert "fakeengine" not in sys.modules


def test_find_spec_of_torch_under_the_layer():
    """Code of an engine that asks ``importlib.util.find_spec("torch")`` (an availability
    check) gets an answer under the layer."""
    with installed():
        try:
            spec = importlib.util.find_spec("torch")
        except ValueError:
            pytest.xfail("the layer's torch has no __spec__ yet")
    assert spec is not None


def _installed(package: str, module: str | None = None) -> bool:
    """Whether ``package`` is installed, found without importing it, and holds the source of
    ``module`` (a dotted path inside it; releases move their modules)."""
    try:
        spec = importlib.util.find_spec(package)    # a top-level name: no import
    except (ImportError, ValueError):
        return False
    if spec is None or module is None:
        return spec is not None
    import os

    root = os.path.dirname(spec.origin or "")
    return os.path.exists(os.path.join(root, *module.split(".")[1:]) + ".py")


@pytest.mark.skipif(not _installed("transformers"), reason="transformers is not installed")
def test_transformers_speculative_sampling_as_shipped_is_lossless(tmp_path, capsys):
    path = adapter(tmp_path, """
        import inspect

        import torch
        from exactspec.torch_layer import load

        _speculative_sampling = load("transformers.generation.utils:_speculative_sampling")
        # releases before 5 take is_done_candidate fifth; 5.x takes an optional ensemble
        # weight there (None: the standard rule)
        EXTRA = (False,) if "is_done_candidate" in inspect.signature(
            _speculative_sampling).parameters else ()


        def rule(p, q):
            candidate = torch.multinomial(q, num_samples=1).view(1, 1)
            new_logits = torch.stack([p.log(), p.log()]).unsqueeze(0)
            tokens, _ = _speculative_sampling(candidate, q.log().view(1, 1, -1), 1, new_logits,
                                              *EXTRA)
            return tokens[0, 0]
        """)
    code, out, err = cli(capsys, "verify", f"{path}:rule", "--p", "1/2,1/3,1/6,0", "--q",
                         "1/4,1/4,1/4,1/4", "--json")
    data = json.loads(out)
    assert code == 0 and data["lossless"], err
    assert data["output"] == {"0": "1/2", "1": "1/3", "2": "1/6", "3": "0"}
    assert F(data["acceptance"]) == F(2, 3)
    assert "transformers" not in sys.modules


@pytest.mark.skipif(not _installed("vllm", "vllm.model_executor.layers.rejection_sampler"),
                    reason="a vllm with model_executor/layers/rejection_sampler.py is not installed")
def test_vllm_rejection_sampler_as_shipped_is_lossy_by_its_clamp_at_tiny(tmp_path, capsys):
    """The class vLLM ships clamps the residual at float32's smallest normal ``t`` before it
    normalises it: on a rejection every token of ``p <= q`` gets ``t`` over the residual's
    mass, so here (rejection ``1/3``, two such tokens) ``TV = (1/3) 2t / (1/3 + 2t)``."""
    path = adapter(tmp_path, """
        import torch
        from exactspec.torch_layer import load

        RejectionSampler = load("vllm.model_executor.layers.rejection_sampler:RejectionSampler")


        def rule(p, q):
            sampler = RejectionSampler(use_flashinfer=False)
            sampler.init_gpu_tensors("cpu")
            draft = torch.multinomial(q, 1).view(1, 1)
            bonus = torch.multinomial(p, 1).view(1, 1)
            out = sampler(torch.stack([p, p]).unsqueeze(0), bonus, q.view(1, 1, -1), draft)
            return out[0, 0]
        """)
    code, out, err = cli(capsys, "verify", f"{path}:rule", "--p", "1/2,1/3,1/6,0", "--q",
                         "1/4,1/4,1/4,1/4", "--json")
    data = json.loads(out)
    t = F(2) ** -126
    assert code == 1 and data["verdict"] == "lossy-logic", err
    assert F(data["bias"]) == F(1, 3) * 2 * t / (F(1, 3) + 2 * t) == 2 * t / (1 + 6 * t)
    assert "vllm" not in sys.modules


def test_a_module_that_does_not_parse_is_refused_in_one_line(site):
    (site / "fakeengine" / "broken.py").write_text("def f(:\n    pass\n")
    with pytest.raises(InvalidInput) as info:
        load("fakeengine.broken:f")
    assert str(info.value).startswith("fakeengine.broken:f: fakeengine.broken does not parse: "
                                      "SyntaxError: ")
    assert "\n" not in str(info.value)
