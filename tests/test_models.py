"""Realistic target/draft pairs built from text that ships with Python: sizes, smoothing,
temperature, top-k, top-p, and that the draft is the weaker model."""

from __future__ import annotations

import numpy as np
import pytest

from exactspec.core.errors import InvalidInput
from exactspec.numpy_backend.models import (NgramModel, Vocabulary, apply_temperature, corpus_text,
                              model_pair, shape_rows, tokenize, top_k_filter, top_p_filter)


def test_tokenizer_and_vocabulary_padding():
    words = tokenize("a b a c a b (x)")
    assert words == ["a", "b", "a", "c", "a", "b", "(", "x", ")"]
    vocab = Vocabulary.build(words, 8)
    assert vocab.tokens[:3] == ("<unk>", "a", "b") and len(vocab) == 8
    assert vocab.tokens[-1].startswith("<unused-")
    assert vocab.encode(["a", "zzz"]).tolist() == [1, 0]


def test_witten_bell_by_hand():
    ids = np.array([1, 2, 1, 2, 1, 3])                     # vocabulary of 4
    model = NgramModel(ids, 4, 2, prior_exponent=1.0, prior_weight=4)
    prior = (np.arange(4) + 10.0) ** -1.0
    prior /= prior.sum()
    unigram = (np.bincount(ids, minlength=4) + 4 * prior) / (6 + 4)
    np.testing.assert_allclose(model.unigram, unigram)
    # after token 1: c(1) = 3, followers {2: 2, 3: 1}, T = 2
    row = model.probs(np.array([[1]]))[0]
    expected = 2 / 5 * unigram
    expected[2] += 2 / 5
    expected[3] += 1 / 5
    np.testing.assert_allclose(row, expected)
    # an unseen context backs off to the unigram
    np.testing.assert_allclose(model.probs(np.array([[0]]))[0], unigram)


@pytest.mark.parametrize("name", ["docs", "code"])
def test_default_pairs_build_from_a_bounded_corpus_and_give_positive_rows(name, monkeypatch):
    """The default pairs are small (they build in about a second, not asserted here): one
    read of a bounded corpus (all of ``pydoc_data.topics``; whole standard-library files up
    to the first to pass 3 million characters), a trigram target on 90% of its words, a
    bigram draft on a quarter of that, over the default vocabulary."""
    from exactspec.numpy_backend import models

    read, real = [], models.corpus_text

    def counted(corpus, max_chars=None):
        read.append((corpus, max_chars, real(corpus, max_chars)))
        return read[-1][2]

    monkeypatch.setattr(models, "corpus_text", counted)
    model_pair.cache_clear()
    pair = model_pair(name)
    model_pair.cache_clear()                   # the next use builds from the real reader
    limit = models.DEFAULTS[name]["max_chars"]
    assert [(corpus, chars) for corpus, chars, _ in read] == [(name, limit)]
    if limit is not None:                      # whole files, the last one passing the limit
        files = list(models._stdlib_sources(limit))
        assert sum(map(len, files[:-1])) < limit <= sum(map(len, files))
    words = len(tokenize(read[0][2]))
    assert pair.vocab_size == models.DEFAULTS[name]["vocab_size"]
    assert (pair.target.order, pair.draft.order) == (3, 2)
    assert len(pair.heldout) == words - int(words * 0.9)
    p, q = pair.rows(32, seed=0)
    assert p.shape == q.shape == (32, pair.vocab_size) and pair.vocab_size >= 4096
    for rows in (p, q):
        assert np.all(rows > 0)
        np.testing.assert_allclose(rows.sum(axis=1), 1.0, atol=1e-12)
    again = pair.rows(32, seed=0)
    np.testing.assert_array_equal(again[0], p)


def test_draft_is_weaker_on_held_out_text():
    pair = model_pair("docs")
    ctx = pair.contexts(400, seed=3)
    span = ctx.shape[1]
    # the token after each context: find it in the held-out stream
    positions = np.random.default_rng(3).choice(np.arange(span, pair.heldout.size), 400,
                                                replace=False)
    nxt = pair.heldout[positions]
    rows = np.arange(400)
    target_ll = np.log(pair.target.probs(ctx)[rows, nxt]).mean()
    draft_ll = np.log(pair.draft.probs(ctx)[rows, nxt]).mean()
    assert target_ll > draft_ll


def test_padding_to_a_large_vocabulary():
    pair = model_pair("docs", vocab_size=20_000)
    p, q = pair.rows(2, seed=1)
    assert p.shape == (2, 20_000) and np.all(p > 0) and np.all(q > 0)
    unused = np.array([t.startswith("<unused-") for t in pair.vocab.tokens])
    assert unused.sum() > 10_000
    ratios = q[0, unused] / p[0, unused]
    assert np.unique(ratios).size > 100                   # unseen slots still differ


def test_temperature_top_k_top_p():
    row = np.array([[0.5, 0.25, 0.125, 0.125]])
    np.testing.assert_allclose(apply_temperature(row, 1.0), row)
    sharp = apply_temperature(row, 0.5)
    np.testing.assert_allclose(sharp, np.array([[16, 4, 1, 1]]) / 22)
    np.testing.assert_allclose(top_k_filter(row, 1), [[1, 0, 0, 0]])
    np.testing.assert_allclose(top_k_filter(row, 3), row)     # the tie at the threshold stays
    np.testing.assert_allclose(top_p_filter(row, 0.7), [[2 / 3, 1 / 3, 0, 0]])
    np.testing.assert_allclose(top_p_filter(row, 0.75), [[2 / 3, 1 / 3, 0, 0]])
    np.testing.assert_allclose(top_p_filter(row, 0.76), row)   # tie at 0.125 kept
    shaped = shape_rows(row, 2.0, top_k=2)
    assert shaped[0, 2] == 0 and shaped.sum() == pytest.approx(1.0)
    p, q = model_pair("code").rows(4, seed=2, temperature=0.8, top_k=40, top_p=0.95)
    assert np.all((p > 0).sum(axis=1) <= 40) and np.all((q > 0).sum(axis=1) <= 40)


def test_corpora_ship_with_python():
    assert "def" in tokenize(corpus_text("code", max_chars=10_000))
    assert len(corpus_text("docs")) > 100_000


@pytest.mark.parametrize("call,match", [
    (lambda: model_pair("wiki"), "corpus"),
    (lambda: apply_temperature(np.ones((1, 2)), 0.0), "temperature"),
    (lambda: top_p_filter(np.ones((1, 2)), 1.5), "top_p"),
    (lambda: top_k_filter(np.ones((1, 2)), 0), "top_k"),
    (lambda: Vocabulary.build(["a"], 1), "vocab_size"),
    (lambda: model_pair("docs").contexts(0), "position"),
])
def test_invalid_inputs(call, match):
    with pytest.raises(InvalidInput, match=match):
        call()
