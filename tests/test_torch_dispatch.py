"""The value types' rules looked up by type (``torch_layer.dispatch``) and the tensor written
in modules by concern: every kind of rule reached through the tensor's generic code gives the
scalar operation branch by branch (exact values), a token kept as its law outranks a branched
value, a type registered from outside takes part without a change to the generic code, the
generic modules test no value type themselves, a method defined in two modules is refused, and
``exactspec.torch_layer.tensor`` keeps every name it had.
"""

from __future__ import annotations

import operator
import re
from fractions import Fraction as F
from pathlib import Path

import pytest

from exactspec.core.signals import CannotProceed
from exactspec.torch_layer import dispatch
from exactspec.torch_layer import dtypes as D
from exactspec.torch_layer import functions as fn
from exactspec.torch_layer import tensor as T
from exactspec.torch_layer.branched import Branched, LawIndex, Mixture, Split
from exactspec.torch_layer.tensor import Tensor, read
from exactspec.torch_layer.tensor_core import tensor_methods
from exactspec.torch_layer.values import arith, cast

LAYER = Path(__file__).resolve().parent.parent / "exactspec" / "torch_layer"

#: Every module-level name of ``torch_layer/tensor.py`` before it was split by concern.
TENSOR_NAMES = [
    "SUM_TERMS", "STABLE_SORT_LANE", "MAX_ELEMENTS", "check_size", "PYTHON_DTYPES",
    "dtype_arg", "check_device", "OPS", "ValuesIndices", "Size", "Storage",
    "contiguous_strides", "broadcast_shapes", "scalar_dtype", "result_type", "as_tensor",
    "flattened", "numpy_dtype", "dtype_of_values", "index_value", "dim_index", "Tensor",
    "rebuilt_tensor", "read", "all_rationals", "python_value", "checked_index",
    "multi_indices", "index_tuples", "DECIDED_SIGNS", "decide", "law_token_decide",
    "same_value", "is_sympy", "truth", "is_inf", "tensor_extreme", "element_extreme",
    "lane_sum", "running_sum", "running_product", "running", "unpacked_double",
    "exact_element_power", "settled_float", "float_element_power", "check_int_range",
    "truncated_division", "cast_format", "arg_index", "TieOrder", "tie_ordered",
    "sorted_order"]

#: The generic modules: they ask the rules, never test a value type.
GENERIC = ["tensor.py", "tensor_core.py", "tensor_views.py", "tensor_indexing.py",
           "tensor_elementwise.py", "tensor_reductions.py", "tensor_elements.py", "values.py",
           "functions.py"]

TYPES = r"(Branched|LawIndex|Split|Mixture|Pair)"


def branched_tensor(values, dtype=D.float64):
    """A one-element tensor holding a value on every draft branch."""
    return Tensor.new([Branched(list(values))], (), dtype)


def only(t):
    return t._values()[0]


def test_the_tensor_module_keeps_every_name_and_method():
    missing = [name for name in TENSOR_NAMES if not hasattr(T, name)]
    assert missing == []
    assert T.OPS is dispatch.OPS
    for name in ("view", "expand", "__getitem__", "__setitem__", "scatter_", "__add__",
                 "pow", "clamp", "masked_fill_", "sum", "cumsum", "argmax", "sort", "topk",
                 "gather", "softmax", "_values", "new", "of", "_st", "_write"):
        assert hasattr(Tensor, name), name
    assert Tensor.type is not Tensor.to          # the later definition, as in one class body
    assert Tensor.__module__ == "torch" and hash(Tensor.new([1], (1,), D.int64))


def test_generic_modules_test_no_value_type():
    found = {}
    for name in GENERIC:
        text = (LAYER / name).read_text()
        hits = re.findall(rf"type\([^)]*\) is {TYPES}|isinstance\([^)]*{TYPES}", text)
        if hits:
            found[name] = hits
    assert found == {}


def test_branched_rules_through_the_tensor_equal_the_scalar_operations():
    xs = [F(1, 2), F(-3, 4), F(0), F(5)]
    t = branched_tensor(xs)
    assert only(t * 2 + F(1, 3)).values == [x * 2 + F(1, 3) for x in xs]          # arith
    assert only(t / 4).values == [x / 4 for x in xs]
    assert only(t < F(1, 3)).values == [x < F(1, 3) for x in xs]                 # decide
    assert only(t.maximum(Tensor.of(F(1, 4), D.float64))).values == \
        [max(x, F(1, 4)) for x in xs]                                             # extreme
    assert only(t.clamp(min=0)).values == [max(x, 0) for x in xs]
    assert only(t.pow(2)).values == [x ** 2 for x in xs]                          # power
    assert only(t.to(D.int64)).values == [int(x) for x in xs]                     # cast
    same = only(Tensor.new([Branched([F(1), F(2)])], (), D.float64) > 0)
    assert same is True                          # the same on every branch: a plain bool
    with pytest.raises(CannotProceed, match="read into Python"):
        t.item()                                                                  # python
    with pytest.raises(CannotProceed, match="tested for nan"):
        t.isnan()                                                                 # number test
    with pytest.raises(CannotProceed, match="tested for inf"):
        t.isinf()


def test_branched_positions_and_indices_read_every_branch():
    data = [F(1, 7), F(2, 7), F(4, 7)]
    assert read(data, Branched([2, 0, 1])).values == [F(4, 7), F(1, 7), F(2, 7)]
    row = Tensor.of(data, D.float64)
    picked = only(row[Tensor.new([Branched([2, 0, -1])], (1,), D.int64)])
    assert picked.values == [F(4, 7), F(1, 7), F(4, 7)]
    with pytest.raises(CannotProceed, match="^a branched index out of bounds"):
        row[Tensor.new([Branched([0, 3])], (1,), D.int64)]
    gathered = fn.gather(row, 0, Tensor.new([Branched([1, 2])], (1,), D.int64))
    assert only(gathered).values == [F(2, 7), F(4, 7)]
    with pytest.raises(CannotProceed, match="gather: a branched index out of bounds"):
        fn.gather(row, 0, Tensor.new([Branched([1, 5])], (1,), D.int64))


def test_a_token_kept_as_its_law_outranks_a_branched_value():
    token = LawIndex([F(1, 4), F(3, 4), F(0)], "drawn")
    branch = Branched([F(1), F(2), F(3)])
    with pytest.raises(CannotProceed, match="the drawn token used in a computation"):
        arith(operator.add, branch, token)       # the token's rule, not the branched one
    assert dispatch.binary_rule(dispatch.ARITH, branch, token) is \
        dispatch.ARITH[LawIndex]
    assert arith(operator.mul, token, 1) is token and arith(operator.mul, 0, token) == 0
    assert T.decide(operator.ne, token, -1) is True
    with pytest.raises(CannotProceed, match="compared where the answer depends on it"):
        T.decide(operator.eq, token, 1)
    assert cast(token, D.int64) is token
    with pytest.raises(CannotProceed, match="converted to a non-integer dtype"):
        cast(token, D.float32)


def test_a_mixture_tokens_bounds_and_comparisons_come_from_its_parts_spans():
    """A tile's winner moved up by its offset and mixed with another (the running argmax
    across a kernel's tiles): ``minimum``/``maximum`` with a constant and the comparisons are
    decided from the parts' support spans, the mixture's law never made; where the answer
    depends on the token they decline, and (in)equality inside the span reads the support,
    which may have a hole at the constant."""
    from exactspec.torch_layer.axis_values import mixed_token

    first = LawIndex([F(1, 2), F(0), F(1, 2), F(0)], "tile")          # support {0, 2}
    second = LawIndex([F(0), F(1), F(0), F(0)], "tile").shifted(4)     # support {5}
    token = mixed_token(first, F(1, 3), second, "winner")
    assert token.support_span() == (0, 5) and token._probs is None
    minimum = dispatch.EXTREME[LawIndex]
    assert minimum(token, 5, False, D.int64, None) is token            # min(t, 5): t
    assert minimum(token, 7, True, D.int64, None) == 7                 # max(t, 7): 7
    assert minimum(0, token, True, D.int64, None) is token
    assert T.decide(operator.lt, token, 6) is True and T.decide(operator.ge, token, 0)
    assert T.decide(operator.ne, token, -1) is True and T.decide(operator.eq, 9, token) is False
    assert token._probs is None                                        # never made
    with pytest.raises(CannotProceed, match="maximum or minimum that depends on it"):
        minimum(token, 3, False, D.int64, None)
    with pytest.raises(CannotProceed, match="compared where the answer depends on it"):
        T.decide(operator.lt, token, 3)
    assert T.decide(operator.ne, token, 1) is True                     # the hole at 1
    assert T.decide(operator.eq, token, 3) is False
    with pytest.raises(CannotProceed, match="compared where the answer depends on it"):
        T.decide(operator.eq, token, 2)
    assert token.probs == [F(1, 6), F(0), F(1, 6), F(0), F(0), F(2, 3), F(0), F(0)]


class _Sampler:
    """Decides every split it is asked about as True (a path's outcome)."""

    def __init__(self):
        self.asked = 0

    def _choose_split(self, below, what):
        self.asked += 1
        return True


def test_a_split_stays_a_value_until_read_and_selects_a_mixture():
    sampler = _Sampler()
    split = Split(sampler, [F(1, 3), F(1)], "u < c[draft]")
    condition = Tensor.new([split], (), D.bool_)
    chosen = only(fn.where(condition, Tensor.of(4), Tensor.of(7)))
    assert type(chosen) is Mixture and (chosen.a, chosen.b) == (4, 7)
    assert sampler.asked == 0 and cast(split, D.bool_) is split                  # select, cast
    assert T.truth(split) is split                                               # truth
    assert cast(chosen, D.int64) is chosen
    with pytest.raises(CannotProceed, match="selected by a split converted"):
        cast(chosen, D.float64)
    assert condition.item() is True and sampler.asked == 1                        # python
    assert only(fn.where(condition, Tensor.of(4), Tensor.of(7))) == 4  # decided: a choice


class _Tagged:
    """A value type of a test: it reads into Python as its tag and adds its tags."""

    def __init__(self, tag):
        self.tag = tag


def test_a_type_registered_from_outside_takes_part_in_the_generic_code():
    dispatch.register(_Tagged, rank=0, python=lambda v, what: f"tag {v.tag}",
                      cast=lambda v, dtype, cast: v,
                      arith=lambda op, a, b, scalar: _Tagged(scalar(op, a.tag, b.tag)))
    try:
        t = Tensor.new([_Tagged(3)], (), D.int64)
        assert t.item() == "tag 3"
        assert (t + Tensor.new([_Tagged(4)], (), D.int64)).item() == "tag 7"
    finally:
        dispatch.unregister(_Tagged)
    assert _Tagged not in dispatch.ARITH and _Tagged not in dispatch.RANK
    with pytest.raises(ValueError, match="unknown kinds of rule: sorting"):
        dispatch.register(_Tagged, sorting=len)
    assert _Tagged not in dispatch.RANK


def test_a_tensor_method_defined_in_two_modules_is_refused():
    before = Tensor.sum

    class Twice:
        def sum(self):
            return 0

    with pytest.raises(TypeError, match=r"Tensor\.sum is defined twice \(Twice\)"):
        tensor_methods(Twice)
    assert Tensor.sum is before
