"""Hostile sizes and integers in the exact tensor layer: a tensor over the layer's budget of
elements is refused before it is made, with its size (``TooLarge`` carrying the estimate and
the budget, in one line naming the user's line); an integer torch cannot hold refused at
construction, as torch refuses it.  Every test here finishes in well under a second and
allocates nothing of the refused size."""

from __future__ import annotations

import resource
import textwrap

import pytest

from exactspec.core.errors import InvalidInput, TooLarge
from exactspec.torch_layer import installed
from exactspec.torch_layer.context import Run
from exactspec.torch_layer.tensor import MAX_ELEMENTS

V = 3


@pytest.fixture()
def torch():
    with installed() as t:
        yield t


def _refused(call, estimate):
    """``call()`` refused as over the budget, before making the tensor: the estimate, the
    budget, one line naming this file's line; and the process did not grow by the refused
    tensor (a few MB at most)."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(TooLarge) as info:
        call()
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    err = info.value
    assert err.estimate == estimate and err.budget == MAX_ELEMENTS == 2 ** 24
    message = str(err)
    assert "\n" not in message and f"{estimate:,}" in message and "test_torch_budget.py:" in message
    assert grown_mb < 64
    return message


def test_the_budget_is_a_named_constant_of_two_to_the_twenty_four():
    assert MAX_ELEMENTS == 16_777_216


def test_repeat_tile_and_repeat_interleave(torch):
    p = torch.tensor([0.5, 0.25, 0.25])
    _refused(lambda: p.repeat(10 ** 9), 3 * 10 ** 9)
    _refused(lambda: p.repeat(10 ** 5, 10 ** 3), 3 * 10 ** 8)
    _refused(lambda: p.tile(10 ** 9), 3 * 10 ** 9)
    _refused(lambda: torch.tile(p, (10 ** 4, 10 ** 4)), 3 * 10 ** 8)
    _refused(lambda: p.repeat_interleave(10 ** 9), 3 * 10 ** 9)
    _refused(lambda: torch.repeat_interleave(p, 10 ** 8), 3 * 10 ** 8)
    assert p.tile(2).tolist() == p.repeat(2).tolist() and len(p.repeat_interleave(2)) == 6


def test_an_expanded_view_is_free_until_its_elements_are_read(torch):
    p = torch.tensor([0.5, 0.25, 0.25])
    big = p.expand(10 ** 9, V)                     # a view, as in torch: nothing is made
    assert big.shape == (10 ** 9, V) and big[12345].tolist() == p.tolist()
    assert big[7:9].sum().item() == 2              # a slice of it is small
    _refused(lambda: big.sum(), 3 * 10 ** 9)
    _refused(lambda: big.sum(dim=0), 3 * 10 ** 9)
    _refused(lambda: big.clone(), 3 * 10 ** 9)
    _refused(lambda: big * 2, 3 * 10 ** 9)
    _refused(lambda: big[:, 0] + 1, 10 ** 9)


def test_constructors(torch):
    _refused(lambda: torch.zeros(10 ** 6, 10 ** 6), 10 ** 12)
    _refused(lambda: torch.ones(10 ** 9), 10 ** 9)
    _refused(lambda: torch.empty(10 ** 9), 10 ** 9)
    _refused(lambda: torch.empty((10 ** 5, 10 ** 5)), 10 ** 10)
    _refused(lambda: torch.full((10 ** 5, 10 ** 5), 0.5), 10 ** 10)
    _refused(lambda: torch.zeros_like(torch.tensor([1.0]).expand(10 ** 9)), 10 ** 9)
    _refused(lambda: torch.arange(10 ** 12), 10 ** 12)
    _refused(lambda: torch.arange(0, 10 ** 12, 3), -(-10 ** 12 // 3))
    _refused(lambda: torch.tensor([1.0]).new_full((10 ** 9,), 2.0), 10 ** 9)
    _refused(lambda: torch.tensor([1.0]).new_zeros(10 ** 9), 10 ** 9)
    _refused(lambda: torch.tensor([1.0]).new_empty((10 ** 5, 10 ** 5)), 10 ** 10)
    assert torch.zeros(2 ** 10).numel() == 1024 and torch.arange(5).tolist() == [0, 1, 2, 3, 4]


def test_random_constructors(torch):
    _refused(lambda: torch.rand(10 ** 9), 10 ** 9)
    _refused(lambda: torch.rand(10 ** 5, 10 ** 5), 10 ** 10)
    q = torch.tensor([0.25, 0.25, 0.5])
    _refused(lambda: torch.multinomial(q, 10 ** 9, replacement=True), 10 ** 9)


def test_joining_and_broadcasting(torch):
    p = torch.tensor([0.5, 0.25, 0.25])
    block = p.expand(10 ** 4, V)                   # views: the list of them is small
    _refused(lambda: torch.cat([block] * 1000), 3 * 10 ** 7)
    _refused(lambda: torch.stack([block] * 1000), 3 * 10 ** 7)
    a, b = torch.zeros(10 ** 5), torch.zeros(10 ** 5)
    _refused(lambda: torch.outer(a, b), 10 ** 10)
    _refused(lambda: a.reshape(-1, 1) + b.reshape(1, -1), 10 ** 10)
    _refused(lambda: a[:, None] * b, 10 ** 10)
    _refused(lambda: torch.where(a[:, None] > 0, b, 0.0), 10 ** 10)
    _refused(lambda: torch.maximum(a[:, None], b), 10 ** 10)
    _refused(lambda: a[:, None] < b, 10 ** 10)
    index = torch.zeros(10 ** 5, dtype=torch.int64)
    _refused(lambda: torch.zeros(4, 4)[index[:, None], index], 10 ** 10)   # advanced indexing
    _refused(lambda: torch.nn.functional.one_hot(torch.tensor([0, 1]), 10 ** 9), 2 * 10 ** 9)
    assert torch.outer(torch.tensor([1, 2]), torch.tensor([3, 4])).tolist() == [[3, 4], [6, 8]]


def test_a_rule_over_the_budget_is_refused_on_the_command_line(tmp_path, capsys):
    from exactspec.cli import main

    path = tmp_path / "rule.py"
    path.write_text("import torch\n" + textwrap.dedent("""
        def sample(p, q):
            rows = p.repeat(10 ** 9, 1)
            return torch.multinomial(rows[0], 1)
        """))
    code = main(["verify", f"{path}:sample", "--p", "1/2,1/3,1/6", "--q", "1/4,1/4,1/2"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "3,000,000,000 elements" in err and "rule.py:4" in err
    assert len(err.splitlines()) == 1


# -- integers torch cannot hold ----------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda t: t.tensor([2 ** 70]),
    lambda t: t.tensor([2 ** 63]),
    lambda t: t.tensor(2 ** 64, dtype=t.int64),
    lambda t: t.tensor([1, -2 ** 63 - 1]),
    lambda t: t.tensor([True, 2 ** 63]),
    lambda t: t.tensor([[1], [2 ** 63]]),
    lambda t: t.full((2,), 2 ** 63),
    lambda t: t.full((2,), 2 ** 31, dtype=t.int32),
    lambda t: t.tensor([2 ** 31], dtype=t.int32),
    lambda t: t.zeros(2, dtype=t.int64).fill_(2 ** 63),
    lambda t: t.tensor([1, 2]).new_full((2,), 2 ** 63),
    lambda t: t.arange(2 ** 63),
    lambda t: t.tensor([1.0, 2.0]) * 2 ** 64,          # OverflowError in torch
    lambda t: t.tensor([1.0]) < 2 ** 64,
    lambda t: t.tensor([1.0]).clamp(min=2 ** 70),
    lambda t: t.tensor([1e30]).long(),                   # outside int64 (torch: undefined)
])
def test_an_integer_torch_cannot_hold_is_refused_in_one_line(torch, call):
    with pytest.raises(InvalidInput) as info:
        call(torch)
    message = str(info.value)
    assert "\n" not in message and "test_torch_budget.py:" in message


def test_the_int64_boundaries_are_accepted(torch):
    assert torch.tensor([2 ** 63 - 1]).tolist() == [2 ** 63 - 1]
    assert torch.tensor([-2 ** 63]).tolist() == [-2 ** 63]
    assert torch.tensor(2 ** 63 - 1, dtype=torch.int64).item() == 2 ** 63 - 1
    assert torch.full((2,), -2 ** 63).tolist() == [-2 ** 63] * 2
    assert torch.tensor([2 ** 31 - 1], dtype=torch.int32).tolist() == [2 ** 31 - 1]
    assert torch.tensor([1.5, 2 ** 63]).dtype is torch.float32   # a float tensor holds it
    assert torch.tensor([2 ** 70], dtype=torch.float64).tolist() == [2 ** 70]
    with installed(Run(None, __import__("exactspec.engine.floats", fromlist=["FORMATS"])
                       .FORMATS["float32"])) as t:
        assert t.tensor([2 ** 63], dtype=t.float32).item().value == 2.0 ** 63
        assert (t.tensor([1.0]) * 2 ** 63).item().value == 2.0 ** 63   # a uint64 scalar


def test_integer_overflow_at_construction_matches_real_torch():
    """Where torch is installed: the same cases raise there and pass the same boundaries."""
    real = pytest.importorskip("torch")
    if not hasattr(real, "from_numpy"):
        pytest.skip("the torch importable here is not PyTorch")
    for build in (lambda t: t.tensor([2 ** 70]), lambda t: t.tensor([2 ** 63]),
                  lambda t: t.tensor(2 ** 64, dtype=t.int64), lambda t: t.full((2,), 2 ** 63),
                  lambda t: t.tensor([2 ** 31], dtype=t.int32), lambda t: t.arange(2 ** 63)):
        with pytest.raises((RuntimeError, ValueError, OverflowError)):
            build(real)
    for build in (lambda t: t.tensor([2 ** 63 - 1]), lambda t: t.tensor([-2 ** 63]),
                  lambda t: t.full((2,), -2 ** 63)):
        want = build(real).tolist()
        with installed() as layer:
            assert build(layer).tolist() == want
