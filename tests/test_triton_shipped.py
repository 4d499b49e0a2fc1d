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
import json
import sys
import textwrap
from fractions import Fraction as F

import pytest

from exactspec.cli import main
from exactspec.core.errors import InvalidInput
from exactspec.torch_layer import installed, load

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
    from exactspec.torch_layer.shipped import _Unloaded

    stand_in = _Unloaded("kernelengine", "why", [("name", "kernelengine.x"),
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
