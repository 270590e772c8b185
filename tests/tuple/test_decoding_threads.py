"""Concurrent refits (two dashboard sessions at once): the decoders' feature memo belongs to one
fit, so threads fitting different release views of the same worlds get exactly the numbers a
single thread gets (issue 20, item 8)."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from qlb.tuple.decoding import fit_view, labels, split_frames
from qlb.tuple.release_views import with_public_features
from tests.tuple.test_decoding import DOM, planted

VIEWS = ("choice", "full_probabilities")      # same worlds, different release features
FAMILIES = {"template"}                       # memoized features, quick to fit
ROUNDS = 4


@pytest.fixture(scope="module")
def splits():
    train, val, test = split_frames(with_public_features(planted("probabilities")))
    return train, labels(train), val, test


def _fit(splits, view):
    train, y, val, test = splits
    return fit_view(train, y, val, test, view, DOM.classes, DOM.mechanisms, families=FAMILIES)


def test_two_threads_refitting_different_views_get_the_single_thread_numbers(splits):
    alone = {v: _fit(splits, v) for v in VIEWS}
    # the planted probabilities carry the secret, the choice does not: mixing the two views'
    # features would move the test probabilities
    assert np.abs(alone["choice"].test[:, 0] - alone["full_probabilities"].test[:, 0]).max() > 0.1
    for _ in range(ROUNDS):
        start = threading.Barrier(len(VIEWS))
        got, errors = {}, []

        def refit(view):
            try:
                start.wait()
                got[view] = _fit(splits, view)
            except Exception as exc:        # surfaced below: a thread's exception is otherwise lost
                errors.append(exc)

        threads = [threading.Thread(target=refit, args=(v,)) for v in VIEWS]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        for v in VIEWS:
            assert np.array_equal(got[v].oof, alone[v].oof), v
            assert np.array_equal(got[v].val, alone[v].val), v
            assert np.array_equal(got[v].test, alone[v].test), v


def test_the_memo_is_per_block_and_reused_inside_one(splits, monkeypatch):
    """Inside one fit the configurations share features (the speed-up stays); outside a block
    nothing is memoized, and a new block starts empty."""
    from qlb.tuple import decoders
    train, y, _, _ = splits
    fitted = []
    original = decoders.Vectorizer.fit_transform

    def counting(self, dicts):
        fitted.append(self)
        return original(self, dicts)

    monkeypatch.setattr(decoders.Vectorizer, "fit_transform", counting)
    with decoders.feature_memo("choice"):
        a = decoders.TemplateDecoder("diag", 0.0, "raw", DOM.classes).fit(train, y)
        b = decoders.TemplateDecoder("diag", 2.0, "raw", DOM.classes).fit(train, y)
    assert a.vectorizer_ is b.vectorizer_ and len(fitted) == 1
    decoders.TemplateDecoder("diag", 2.0, "raw", DOM.classes).fit(train, y)
    assert len(fitted) == 2
    with decoders.feature_memo("choice"):
        decoders.TemplateDecoder("diag", 2.0, "raw", DOM.classes).fit(train, y)
    assert len(fitted) == 3
