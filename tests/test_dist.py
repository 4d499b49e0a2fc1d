"""Exact distributions: construction, parsing, validation and the basic quantities."""

import json
from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from exactspec import Dist, InvalidInput, NotExact, overlap, residual, total_variation
from exactspec.core.dist import exact, exact_str, positive_part


def test_parse_fractions_and_decimals():
    p = Dist.parse("1/2, 0.3, 1/5", labels="abc")
    assert p.probs == (F(1, 2), F(3, 10), F(1, 5))
    assert p.labels == ("a", "b", "c")
    assert Dist.parse("0.1,0.9")[0] == F(1, 10)


def test_labels_forms():
    assert Dist.parse("1/2,1/2", labels="x,y").labels == ("x", "y")
    assert Dist.parse("1/2,1/2", labels=["x", "y"]).labels == ("x", "y")
    assert Dist.parse("1/2,1/2").labels == (0, 1)


def test_floats_convert_to_their_exact_binary_value():
    p = Dist([0.1, 0.9], normalize=True)
    assert sum(p.probs) == 1
    assert Dist([0.5, 0.25, 0.25]).probs == (F(1, 2), F(1, 4), F(1, 4))
    assert exact(0.1) == F(3602879701896397, 36028797018963968)


def test_numpy_arrays():
    p = Dist(np.array([0.5, 0.5]))
    assert p.probs == (F(1, 2), F(1, 2))
    q = Dist(np.array([1, 3]), normalize=True)
    assert q.probs == (F(1, 4), F(3, 4))


def test_mapping_and_json_file(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"a": 0.1, "b": 0.9}))
    p = Dist.parse(f"@{path}")
    assert p.labels == ("a", "b") and p["a"] == F(1, 10)
    path.write_text("[0.25, 0.75]")
    assert Dist.parse(f"@{path}", labels="xy")["y"] == F(3, 4)


def test_normalize():
    assert Dist.parse("1,1,2", normalize=True).probs == (F(1, 4), F(1, 4), F(1, 2))


@pytest.mark.parametrize("make, message", [
    (lambda: Dist.parse("1/2,1/3"), "p sums to 5/6, not 1"),
    (lambda: Dist.parse("1/2,-1/2,1"), "p[1] = -1/2 is negative"),
    (lambda: Dist.parse("nan,1"), "not a finite number"),
    (lambda: Dist.parse("inf,1"), "not a finite number"),
    (lambda: Dist([float("nan"), 1.0]), "not a finite number"),
    (lambda: Dist(np.array([np.inf, 1.0])), "not a finite number"),
    (lambda: Dist.parse(""), "p is empty"),
    (lambda: Dist([]), "p is empty"),
    (lambda: Dist.parse("1/2,1/2", labels="aa"), "duplicate label 'a'"),
    (lambda: Dist.parse("1/2,1/2", labels="abc"), "labels of p has 3 entries"),
    (lambda: Dist.parse("1/2,abc"), "p[1]='abc': not a number"),
    (lambda: Dist.parse("1/2,,1/2"), "p[1]: empty entry"),
    (lambda: Dist.parse("1/0,1"), "not a number"),
    (lambda: Dist.parse("0,0", normalize=True), "sums to 0"),
    (lambda: Dist([True, False]), "not a bool"),
    (lambda: Dist.parse("@/nonexistent/p.json"), "cannot read"),
    (lambda: overlap(Dist.parse("1/2,1/2"), Dist.parse("1"),), "q has 1 entries but p has 2"),
    (lambda: residual(Dist.parse("1/2,1/2"), Dist.parse("1/2,1/2")), "residual"),
])
def test_invalid_inputs_name_the_argument(make, message):
    with pytest.raises((InvalidInput, NotExact)) as info:
        make()
    assert message in str(info.value)


def test_bad_json_file(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    with pytest.raises(InvalidInput, match="not valid JSON"):
        Dist.parse(f"@{path}", name="q")
    path.write_text('"text"')
    with pytest.raises(InvalidInput, match="must hold a JSON list or object"):
        Dist.parse(f"@{path}")
    path.write_text("[NaN, 1]")
    with pytest.raises(NotExact):
        Dist.parse(f"@{path}")


def test_seed_example_quantities():
    p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
    assert overlap(p, q) == F(3, 5)
    assert total_variation(p, q) == F(2, 5)
    assert residual(p, q).probs == (F(3, 4), F(1, 4), 0)
    assert positive_part(p, q) == [F(3, 10), F(1, 10), 0]


def test_exact_str():
    assert [exact_str(v) for v in (F(3, 5), F(1), 0, F(-1, 2))] == ["3/5", "1", "0", "-1/2"]


def rational_dists(n):
    return st.lists(st.integers(0, 12), min_size=n, max_size=n).filter(any).map(
        lambda w: Dist([F(x, sum(w)) for x in w]))


@settings(max_examples=60, deadline=None)   # 1 - TV = sum min on 300 pairs: acceptance-1-tv
@given(st.integers(1, 6).flatmap(lambda n: st.tuples(rational_dists(n), rational_dists(n))))
def test_tv_is_one_minus_overlap_and_symmetric(pq):
    p, q = pq
    assert total_variation(p, q) == 1 - overlap(p, q)
    assert total_variation(p, q) == total_variation(q, p)
    assert total_variation(p, q) == sum(abs(a - b) for a, b in zip(p.probs, q.probs)) / 2


def test_a_long_row_of_ratio_texts_is_read_to_integers():
    """A long row of ``"a/b"`` texts (as JSON files of long rows hold them) is read straight
    to integers over a common denominator: the same Dist, the same refusals, the same text
    as the general path, whose Fractions are built only when read."""
    import random

    from exactspec.core import integer_rows
    from exactspec.core.errors import InvalidInput

    rng = random.Random(5)
    n = integer_rows.INTEGER_ROW_MIN + 3
    weights = [rng.randint(0, 9) for _ in range(n)]
    weights[0] += 1
    total = sum(weights)
    texts = [f"{w}/{total}" if w else "0" for w in weights]
    fast = Dist(texts)
    general = Dist([F(w, total) for w in weights])
    assert fast == general and fast.probs == general.probs
    assert fast.to_json() == {str(i): str(F(w, total)) for i, w in enumerate(weights)}
    assert Dist([f"{w}/1" for w in weights], normalize=True) == general
    with pytest.raises(InvalidInput, match=r"sums to 2, not 1 \(use --normalize"):
        Dist([f"{2 * w}/{total}" for w in weights])
    assert Dist([t.replace("/", " / ") for t in texts]) == general       # the general path
    with pytest.raises(InvalidInput, match="sums to 0"):
        Dist(["0"] * n, normalize=True)
