"""The forest's fallback (issue 20, item 9d): when scikit-learn's private tree builder is
missing, has another signature or grows other trees, forests come from RandomForestClassifier
with the same numbers instead of an error or silently different ones."""
from __future__ import annotations

import logging

import numpy as np
import pytest
from sklearn.ensemble import RandomForestClassifier

from qlb.tuple import forest


@pytest.fixture
def fresh_probe():
    forest.fast_builder_works.cache_clear()
    yield
    forest.fast_builder_works.cache_clear()


def problem():
    rng = np.random.RandomState(3)
    Z = rng.normal(size=(80, 6))
    y = (Z[:, 1] - Z[:, 2] + 0.3 * rng.normal(size=80) > 0).astype(int)
    return Z, y


def reference(Z, y, depth=None, leaf=1):
    return RandomForestClassifier(20, max_depth=depth, min_samples_leaf=leaf, random_state=0,
                                  n_jobs=1).fit(Z, y).predict_proba(Z)[:, 1]


def test_the_pinned_builder_is_used(fresh_probe):
    Z, y = problem()
    assert forest.fast_builder_works()
    grown = forest.grow_forest(Z, y, 20)
    assert grown.fallback is None and len(grown.trees) == 20
    assert np.array_equal(grown.predict_p1(Z), reference(Z, y))


def test_a_changed_signature_falls_back_to_random_forest(fresh_probe, monkeypatch, caplog):
    def splitter_with_another_signature(*args):
        raise TypeError("__cinit__() takes exactly 7 positional arguments (6 given)")

    monkeypatch.setattr(forest, "BestSplitter", splitter_with_another_signature)
    Z, y = problem()
    with caplog.at_level(logging.WARNING, logger="qlb.tuple.forest"):
        grown = forest.grow_forest(Z, y, 20, max_depth=6, min_samples_leaf=5)
    assert grown.fallback is not None
    assert np.array_equal(grown.predict_p1(Z), reference(Z, y, 6, 5))
    assert "TypeError" in caplog.text


def test_a_builder_growing_other_trees_falls_back(fresh_probe, monkeypatch):
    real = forest.DepthFirstTreeBuilder

    def stump_builder(splitter, min_split, leaf, min_weight, depth, min_impurity):
        return real(splitter, min_split, leaf, min_weight, 1, min_impurity)       # ignores the depth

    monkeypatch.setattr(forest, "DepthFirstTreeBuilder", stump_builder)
    Z, y = problem()
    grown = forest.grow_forest(Z, y, 20)
    assert grown.fallback is not None
    assert np.array_equal(grown.predict_p1(Z), reference(Z, y))


def test_a_missing_builder_falls_back(fresh_probe, monkeypatch):
    monkeypatch.setattr(forest, "_IMPORTED", False)
    Z, y = problem()
    grown = forest.grow_forest(Z, y, 20)
    assert grown.fallback is not None
    assert np.array_equal(grown.predict_p1(Z), reference(Z, y))
