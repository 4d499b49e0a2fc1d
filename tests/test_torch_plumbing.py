"""The engine plumbing around a sampler, in the exact tensor layer: TorchScript decorators, grad
modes, ``torch.nn.Module`` subclasses, ``torch`` names in annotations and ``isinstance``, CPU
devices accepted and CUDA refused, the module's spec, file and version, ``F.pad``; a
vLLM-0.6-style rejection sampler module (``tests/torch_fixtures/``) verified exactly through
the command line, its law by hand; where real torch is installed (skipped otherwise), the same
code beside torch's answers and the sampler module run under torch against its exact law."""

from __future__ import annotations

import importlib.util
import json
import math
import pickle
import sys
import textwrap
import typing
from fractions import Fraction as F
from pathlib import Path

import pytest

from exactspec import Dist, verify
from exactspec.cli import main
from exactspec.torch_layer import installed
from exactspec.torch_layer.module import MODELLED_VERSION, TorchVersion

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "torch_fixtures" / "vllm06_rejection_sampler.py"
GALLERY_VLLM = ROOT / "examples" / "engines" / "vllm_rejection_sampler.py"
P, Q = Dist.parse("1/2,1/3,1/6"), Dist.parse("1/3,1/3,1/3")
TINY = F(1, 2 ** 126)                      # torch.finfo(torch.float32).tiny


def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def rule_file(tmp_path, source: str, name: str = "rule.py") -> str:
    path = tmp_path / name
    path.write_text("import torch\n" + textwrap.dedent(source))
    return str(path)


# -- TorchScript and grad modes -----------------------------------------------------------------
def test_jit_decorators_return_the_function_itself():
    with installed() as torch:
        def double(x: torch.Tensor) -> torch.Tensor:
            return x * 2

        example = (torch.ones(2),)
        assert torch.jit.script(double) is double
        assert torch.jit.trace(double, example) is double
        for decorate in (torch.jit.ignore, torch.jit.ignore(drop=True), torch.jit.unused,
                         torch.jit.export):
            assert decorate(double) is double
        module = torch.nn.Identity()
        assert torch.jit.script(module) is module
        assert torch.jit.is_scripting() is False and torch.jit.is_tracing() is False
        assert torch.jit.annotate(typing.List[int], [1]) == [1]
        import torch.jit as jit
        assert jit is torch.jit and sys.modules["torch.jit"] is jit


@pytest.mark.parametrize("name", ["no_grad", "inference_mode", "enable_grad"])
def test_grad_modes_are_decorators_with_or_without_parentheses_and_contexts(name):
    with installed() as torch:
        mode = getattr(torch, name)

        def f(x):
            return x + 1

        assert mode(f) is f and mode()(f) is f
        with mode():
            assert f(1) == 2
        with torch.set_grad_enabled(False):
            assert torch.set_grad_enabled(True)(f) is f


def test_engine_plumbing_in_a_rule_file_runs_unedited(tmp_path):
    """A rule written as engine code: ``import torch.jit``, ``torch.nn as nn``, annotations
    with ``Optional``, a scripted helper, ``@torch.no_grad`` without parentheses, a device
    chosen by ``torch.cuda.is_available()``, tensors made and moved on it, ``isinstance``."""
    path = rule_file(tmp_path, """
        from typing import Optional
        import torch.jit
        import torch.nn as nn
        import torch.nn.functional as F

        DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")

        @torch.jit.script
        def capped(ratio: torch.Tensor, one: Optional[torch.Tensor] = None) -> torch.Tensor:
            return torch.minimum(ratio, torch.ones_like(ratio) if one is None else one)

        class Verifier(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.register_buffer("one", torch.ones(1, dtype=torch.float64, device=DEVICE))

            @torch.no_grad
            def forward(self, p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
                assert isinstance(p, torch.Tensor) and isinstance(p.dtype, torch.dtype)
                assert p.device == DEVICE and torch.cuda.device_count() == 0
                draft = torch.multinomial(q, num_samples=1)
                u = torch.rand(1, dtype=p.dtype, device=DEVICE)
                if u < capped(p[draft] / q[draft], self.one):
                    return draft
                residual = F.relu(p - q).to(DEVICE)
                return torch.multinomial(residual / residual.sum(), 1)

        VERIFIER = Verifier().to(DEVICE).eval()

        def rule(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
            return VERIFIER(p.to(DEVICE), q.cpu())
        """)
    result = verify(f"{path}:rule", P, Q)
    assert result.lossless and result.law == {0: F(1, 2), 1: F(1, 3), 2: F(1, 6)}
    assert result.acceptance == F(5, 6)


# -- torch.nn.Module -----------------------------------------------------------------------------
def _module_scenario(torch):
    """Module plumbing an engine uses, as plain values (run on the layer and on real torch)."""
    nn = torch.nn

    class Head(nn.Module):
        def __init__(self, scale):
            super().__init__()
            self.register_buffer("scale", torch.tensor([scale], dtype=torch.float32))
            self.weight = nn.Parameter(torch.tensor([1.0, 2.0]))
            self.steps = 3

        def forward(self, x):
            return x * self.scale

    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.heads = nn.ModuleList([Head(2.0), Head(0.5)])
            self.last = Head(4.0)
            self.register_buffer("mask", torch.tensor([True, False]))

        def forward(self, x):
            for head in self.heads:
                x = head(x)
            return self.last(x)

    model = Stack()
    out = {"moved is self": model.to("cpu") is model and model.cpu() is model
           and model.to(torch.device("cpu")) is model and model.eval() is model}
    out["training"] = [m.training for m in model.modules()]
    out["train again"] = [m.training for m in model.train().modules()]
    out["modules"] = [name for name, _ in model.named_modules()]
    out["buffers"] = [name for name, _ in model.named_buffers()]
    out["parameters"] = [name for name, _ in model.named_parameters()]
    out["children"] = [type(c).__name__ for c in model.children()]
    out["len, index"] = (len(model.heads), type(model.heads[-1]).__name__)
    out["forward"] = model(torch.tensor([1.0, 3.0])).tolist()
    model.to(torch.float64)
    out["dtypes after to(float64)"] = [str(model.last.scale.dtype), str(model.mask.dtype),
                                       str(model.heads[0].weight.dtype)]
    out["parameter is a tensor"] = isinstance(model.last.weight, torch.Tensor) and \
        isinstance(model.last.weight, nn.Parameter)
    model.last.scale = torch.tensor([8.0], dtype=torch.float64)   # a buffer stays a buffer
    out["buffer reassigned"] = [name for name, _ in model.named_buffers()]
    out["plain attribute"] = model.last.steps

    class Early(nn.Module):
        def __init__(self):
            self.sub = nn.Identity()            # before super().__init__()

    class NoForward(nn.Module):
        pass

    errors = []
    for make in (Early, lambda: NoForward()(torch.ones(1))):
        try:
            make()
        except (AttributeError, NotImplementedError) as err:
            errors.append((type(err).__name__, str(err).split("(")[0].strip()))
    out["errors"] = errors
    try:
        model.no_such_attribute
    except AttributeError as err:
        out["missing attribute"] = str(err)
    return out


def test_nn_module_subclasses_as_engines_write_them():
    with installed() as torch:
        got = _module_scenario(torch)
    assert got["moved is self"] and got["training"] == [False] * 5
    assert got["train again"] == [True] * 5
    assert got["modules"] == ["", "heads", "heads.0", "heads.1", "last"]
    assert got["buffers"] == ["mask", "heads.0.scale", "heads.1.scale", "last.scale"]
    assert got["parameters"] == ["heads.0.weight", "heads.1.weight", "last.weight"]
    assert got["forward"] == [F(4), F(12)]                      # 2 * 0.5 * 4
    assert got["dtypes after to(float64)"] == ["torch.float64", "torch.bool", "torch.float64"]
    assert got["errors"] == [("AttributeError", "cannot assign module before Module.__init__"),
                             ("NotImplementedError",
                              'Module [NoForward] is missing the required "forward" function')]
    assert got["missing attribute"] == "'Stack' object has no attribute 'no_such_attribute'"


def test_nn_module_plumbing_matches_real_torch():
    real = pytest.importorskip("torch")
    expect = _module_scenario(real)
    with installed() as torch:
        got = _module_scenario(torch)
    got["forward"] = [float(x) for x in got["forward"]]
    assert got == expect


# -- names, devices, dtypes, the module itself -----------------------------------------------------
def test_torch_names_in_annotations_and_isinstance():
    with installed() as torch:
        def f(p: torch.Tensor, g: typing.Optional[torch.Generator] = None,
              d: torch.dtype = torch.float32, dev: torch.device = torch.device("cpu"),
              s: torch.Size = torch.Size([2])) -> typing.Optional[torch.Tensor]:
            return p

        hints = typing.get_type_hints(f, localns={"torch": torch})   # (this file: strings)
        assert hints["p"] is torch.Tensor and hints["return"] == typing.Optional[torch.Tensor]
        t = torch.zeros(2, 3)
        assert isinstance(t, torch.Tensor) and isinstance(t.dtype, torch.dtype)
        assert isinstance(t.device, torch.device) and isinstance(t.shape, torch.Size)
        assert isinstance(torch.Generator(), torch.Generator)
        assert isinstance(torch.nn.Parameter(t), torch.Tensor)
        assert (type(t).__module__, type(t).__name__) == ("torch", "Tensor")
        assert str(t.device) == "cpu" and t.device.type == "cpu"
        assert str(torch.device(torch.device("cpu"), )) == "cpu"
        back = pickle.loads(pickle.dumps(t[1]))      # pickled without looking up torch.Tensor
        assert back.tolist() == [0, 0, 0] and type(back) is torch.Tensor
    before = sys.modules.get("torch")
    with installed() as torch:
        t = torch.ones(2)
    assert pickle.loads(pickle.dumps(t)).tolist() == [1, 1]    # outside the layer too,
    assert sys.modules.get("torch") is before                 # importing no torch


@pytest.mark.parametrize("device", ["cpu", "cpu:0", "torch.device('cpu')"])
@pytest.mark.parametrize("call", [
    "torch.tensor([1.0, 2.0], device={d})", "torch.zeros(2, device={d})",
    "torch.ones(2, device={d})", "torch.full((2,), 3.0, device={d})",
    "torch.empty(2, device={d}).fill_(1)", "torch.arange(2, device={d})",
    "torch.rand(2, device={d})", "torch.rand_like(p, device={d})",
    "torch.zeros_like(p, device={d})", "torch.as_tensor([1], device={d})",
    "p.to({d})", "p.to(device={d}, dtype=torch.float32)", "p.new_zeros(2, device={d})",
    "p.new_full((2,), 1, device={d})", "torch.nn.Identity().to({d})(p)",
    "torch.multinomial(q, 1, generator=torch.Generator(device={d}))",
])
def test_a_cpu_device_is_accepted_wherever_torch_takes_one(tmp_path, call, device):
    d = device if device.startswith("torch.") else repr(device)
    path = rule_file(tmp_path, f"""
        def f(p, q):
            made = {call.format(d=d)}
            return torch.multinomial(q, 1)
        """)
    assert verify(f"{path}:f", P, Q).law == {0: F(1, 3), 1: F(1, 3), 2: F(1, 3)}


@pytest.mark.parametrize("body, message", [
    ("torch.zeros(2, device='cuda')", "device 'cuda': exactspec runs a PyTorch rule on its own "
     "CPU tensor layer (rule.py:3)"),
    ("p.to(torch.device('cuda:0'))", "torch.device('cuda:0'): exactspec runs a PyTorch rule"),
    ("p.new_zeros(2, device='cuda')", "device 'cuda': exactspec runs"),
    ("torch.rand(1, device='cuda')", "device 'cuda': exactspec runs"),
    ("torch.nn.Identity().cuda()", "Identity.cuda(): exactspec runs a PyTorch rule"),
    ("torch.nn.Identity().to('cuda')", "device 'cuda': exactspec runs"),
    ("torch.cuda.synchronize()", "torch.cuda.synchronize is refused"),
    ("torch.zeros(2, dtype='float32')", "dtype 'float32' is not a dtype of exactspec's tensor "
     "layer"),
])
def test_a_cuda_device_is_refused_in_one_line(capsys, tmp_path, body, message):
    path = rule_file(tmp_path, f"def f(p, q):\n    {body}\n    return torch.multinomial(q, 1)\n")
    code, _, err = cli(capsys, "verify", f"{path}:f", "--p", "1/2,1/4,1/4", "--q",
                       "1/3,1/3,1/3")
    assert code == 2 and message in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def _python_dtypes(torch):
    return [str(torch.zeros(1, dtype=float).dtype), str(torch.zeros(1, dtype=int).dtype),
            str(torch.zeros(1, dtype=bool).dtype), str(torch.ones(1).to(float).dtype),
            str(torch.tensor([1], dtype=float).dtype), str(torch.arange(2, dtype=float).dtype),
            str(torch.ones(2).new_zeros(1, dtype=int).dtype),
            str(torch.zeros_like(torch.ones(1), dtype=None).dtype)]


def test_python_number_types_as_dtypes():
    with installed() as torch:
        got = _python_dtypes(torch)
    assert got == ["torch.float64", "torch.int64", "torch.bool", "torch.float64",
                   "torch.float64", "torch.float64", "torch.int64", "torch.float32"]
    try:
        import torch as real
    except ImportError:
        return
    assert _python_dtypes(real) == got


def test_the_module_has_a_spec_a_file_and_a_version():
    before = sys.modules.get("torch")
    with installed() as torch:
        spec = importlib.util.find_spec("torch")
        assert spec is torch.__spec__ and spec.name == "torch"
        assert spec.submodule_search_locations == []
        assert importlib.util.find_spec("torch.nn").name == "torch.nn"
        assert importlib.util.find_spec("torch.nn.functional").parent == "torch.nn"
        assert Path(torch.__file__).is_file() and torch.__file__ == spec.origin
        assert torch.__version__ == MODELLED_VERSION == "2.14.0"
        assert torch.__version__ >= "2.5" and torch.__version__ < (2, 15)
        assert torch.__version__ > "2.13.1" and not torch.__version__ < "2.14"
        assert isinstance(torch.__version__, str)
        with pytest.raises(ModuleNotFoundError, match="torch.fft"):   # no submodule on disk
            import torch.fft  # noqa: F401
    assert sys.modules.get("torch") is before


def test_the_version_compares_as_torchs_version_does():
    real = pytest.importorskip("torch")
    from torch.torch_version import TorchVersion as RealVersion

    theirs, ours = RealVersion(MODELLED_VERSION), TorchVersion(MODELLED_VERSION)
    for other in ["2.5", "2.14", "2.14.0", "2.14.1", "2.13.9", "3.0", "10.0", (2, 14),
                  (2, 5, 1), (2, 15)]:
        for op in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__"):
            assert getattr(ours, op)(other) == getattr(theirs, op)(other), (op, other)
    assert isinstance(real.__version__, str)


PADS = [((1, 2), 0), ((0, 1, 2, 0), 0), ((2, 1), 7), ((-1, 1), 0), ((1, -2, 0, 1), 0.5)]


def _pads(torch):
    t = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    out = []
    for pad, value in PADS:
        r = torch.nn.functional.pad(t, pad, value=value)
        out.append((list(r.shape), [float(x) for x in r.reshape(-1).tolist()]))
    return out


def test_functional_pad_in_constant_mode():
    with installed() as torch:
        got = _pads(torch)
        assert torch.nn.functional.pad(torch.tensor([1, 2]), (1, 1)).tolist() == [0, 1, 2, 0]
        with pytest.raises(Exception, match="mode='reflect' is outside"):
            torch.nn.functional.pad(torch.ones(2, 2), (1, 1), mode="reflect")
    assert got[0] == ([2, 6], [0, 0, 1, 2, 0, 0, 0, 3, 4, 5, 0, 0])
    assert got[3] == ([2, 3], [1, 2, 0, 4, 5, 0])
    try:
        import torch as real
    except ImportError:
        return
    assert _pads(real) == got


# -- a vLLM-0.6-style rejection sampler module, verified exactly ------------------------------
def _one_position_law(p, q, t):
    """The first token's law of the sampler: accept ``x ~ q`` with ``min(1, p/q)``, else the
    residual ``clamp(p - q, min=t)`` normalised (by hand, Fractions)."""
    accept = [min(F(1), a / b) for a, b in zip(p, q)]
    reject = 1 - sum(b * a for b, a in zip(q, accept))
    residual = [max(a - b, t) for a, b in zip(p, q)]
    total = sum(residual)
    return {i: q[i] * accept[i] + reject * residual[i] / total for i in range(len(p))}


def test_vllm_06_style_sampler_module_verifies_exactly(capsys):
    """The module (``nn.Module`` subclasses, ``@torch.jit.script``, ``@torch.no_grad()``,
    annotations, ``cached_property``, ``.to(device).eval()``) through ``exactspec verify``:
    its law the hand law, lossy by the clamp at tiny only (TV ``2t / (1 + 12t)``)."""
    code, out, err = cli(capsys, "verify", f"{FIXTURE}:rule", "--p", "1/2,1/3,1/6", "--q",
                         "1/3,1/3,1/3", "--json")
    data = json.loads(out)
    law = {int(k): F(v) for k, v in data["output"].items()}
    assert code == 1 and err == "" and data["verdict"] == "lossy-logic"
    assert law == _one_position_law(list(P.probs), list(Q.probs), TINY)
    assert F(data["bias"]) == 2 * TINY / (1 + 12 * TINY)
    assert data["floats_converted"] == 1                   # tiny, once
    p2, q2 = Dist.parse("3/5,1/5,1/5"), Dist.parse("1/5,3/5,1/5")
    result = verify(f"{FIXTURE}:rule", p2, q2)
    assert result.law == _one_position_law(list(p2.probs), list(q2.probs), TINY)


def test_vllm_06_style_sampler_module_on_three_tokens_equals_the_gallerys(capsys):
    """``rule_k`` over ``[1, k, vocab]`` (two drafts): the call's law equals that of the
    gallery's vLLM-style sampler, the same algorithm written without a module."""
    laws = []
    for spec in (f"{FIXTURE}:rule_k", f"{GALLERY_VLLM}:rejection_sample"):
        code, out, _ = cli(capsys, "verify", spec, "--p", "1/2,1/3,1/6", "--q", "1/4,1/4,1/2",
                           "--tokens", "3", "--json")
        data = json.loads(out)
        assert code == 1 and data["verdict"] == "lossy-logic"
        laws.append(data["call_law"])
    assert laws[0] == laws[1]
    # a rejection at the first position (1/3) recovering token 2 (weight t / (1/3 + t))
    assert F(laws[0]["2"]) == F(1, 3) * TINY / (F(1, 3) + TINY)


def test_vllm_06_style_sampler_module_under_float32_runs_eagerly(capsys):
    """TorchScript runs the CPU kernels of eager mode: under ``--arith`` the scripted helper
    runs too (a ``torch.compile``d one is refused)."""
    code, out, err = cli(capsys, "verify", f"{FIXTURE}:rule", "--p", "1/2,1/3,1/6", "--q",
                         "1/3,1/3,1/3", "--arith", "float32", "--json")
    data = json.loads(out)
    assert code == 1 and data["arith"] == "float32" and data["verdict"] == "lossy-logic"


def _real_fixture(real):
    spec = importlib.util.spec_from_file_location("_real_vllm06", FIXTURE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_scripted_helper_equals_the_layers_eager_run_under_real_torch():
    real = pytest.importorskip("torch")
    module = _real_fixture(real)
    assert type(module.first_rejection).__name__ == "ScriptFunction"     # really compiled
    rows = [[(i >> j) & 1 for j in range(3)] for i in range(8)]
    expect = module.first_rejection(real.tensor(rows, dtype=real.bool), 3).tolist()
    from exactspec.torch_layer.rule import load_pytorch_rule
    layer_module = load_pytorch_rule(f"{FIXTURE}:rule").function.__globals__
    with installed() as torch:
        got = layer_module["first_rejection"](torch.tensor(rows, dtype=torch.bool), 3).tolist()
    assert got == expect == [0, 1, 0, 2, 0, 1, 0, 3]


def test_the_sampler_module_under_real_torch_follows_its_exact_law():
    """20,000 requests in one batched call of the module under torch: the first token's
    counts pass a chi-square test (level 1e-6) against the exact law, and fail it against a
    law that accepts every draft."""
    real = pytest.importorskip("torch")
    import mpmath

    module = _real_fixture(real)
    n = 20_000
    real.manual_seed(2024)
    p = real.tensor([1 / 2, 1 / 3, 1 / 6]).expand(n, 2, 3).contiguous()
    q = real.tensor([1 / 3, 1 / 3, 1 / 3]).expand(n, 1, 3).contiguous()
    drafts = real.multinomial(q[:, 0], 1)
    bonus = real.multinomial(p[:, 1], 1)
    out = module.SAMPLER(p, bonus, q, drafts)[:, 0].tolist()
    counts = {i: out.count(i) for i in range(3)}

    def p_value(law):
        stat = sum((counts[k] - n * float(w)) ** 2 / (n * float(w)) for k, w in law.items())
        return float(mpmath.gammainc((len(law) - 1) / 2, stat / 2, regularized=True))

    assert sum(counts.values()) == n
    assert p_value(_one_position_law(list(P.probs), list(Q.probs), TINY)) > 1e-6
    assert p_value({0: F(1, 3), 1: F(1, 3), 2: F(1, 3)}) < 1e-6      # q's law: refuted
