"""scikit-learn's random forest, grown without its per-forest machinery, through public API only.

The decoder library fits 100-tree forests on a few hundred worlds thousands of times per audit.
At that size ``RandomForestClassifier.fit`` spends much of its time on per-forest and per-tree
bookkeeping (parameter validation, cloning, input checks, a job pool), not in growing trees.
``grow_forest`` grows the same trees one by one as public ``DecisionTreeClassifier``s: the same
per-tree seeds (drawn from ``RandomState(random_state)`` as ``RandomForestClassifier`` does), the
same bootstrap counts as sample weights, Gini and the best splitter with ``max_features="sqrt"``,
inputs checked once per forest (``check_input=False`` per tree, parameter validation skipped in
``sklearn.config_context``), and the same averaging of per-tree leaf frequencies in the same
order. The result equals ``RandomForestClassifier``'s probabilities to the last bit
(tests/tuple/test_decoding.py checks it on real decoder features).

An earlier version grew the trees with scikit-learn's private tree builder (about 1.5 times
faster per forest on the demo's sizes); it was replaced because the project uses no private API
of a library.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sklearn
from sklearn.tree import DecisionTreeClassifier

MAX_INT = np.iinfo(np.int32).max


@dataclass
class Forest:
    """Binary-target forest: ``predict_p1(Z)`` is the mean over trees of the leaf's share of
    class 1 (or the only class seen in training)."""

    trees: list
    only_class: float | None = None

    def predict_p1(self, Z: np.ndarray) -> np.ndarray:
        """P(class 1) per row: the mean over trees of the leaf's class-1 share (``RandomForestClassifier``'s
        sum in tree order, then one division), or the only training class."""
        if self.only_class is not None:
            return np.full(len(Z), self.only_class)
        X = np.ascontiguousarray(Z, dtype=np.float32)
        total = np.zeros((len(X), 2))
        with sklearn.config_context(skip_parameter_validation=True, assume_finite=True):
            for tree in self.trees:
                total += tree.predict_proba(X, check_input=False)
        total /= len(self.trees)
        return total[:, 1]


def grow_forest(Z: np.ndarray, y: np.ndarray, n_estimators: int = 100, max_depth: int | None = None,
                min_samples_leaf: int = 1, random_state: int = 0) -> Forest:
    """Grow ``RandomForestClassifier(n_estimators, max_depth=max_depth,
    min_samples_leaf=min_samples_leaf, random_state=random_state)`` on ``Z`` and 0/1 ``y``."""
    y = np.asarray(y)
    classes = np.unique(y)
    if len(classes) < 2:
        return Forest([], only_class=float(classes[0]) if len(classes) else 0.5)
    X = np.ascontiguousarray(Z, dtype=np.float32)
    if not np.isfinite(X).all():
        raise ValueError("forest features must be finite")
    n = len(X)
    target = (y == classes[1]).astype(np.int64)      # 0/1 as integers: scikit-learn checks them fastest
    seeder = np.random.RandomState(random_state)
    seeds = [seeder.randint(MAX_INT) for _ in range(n_estimators)]
    trees = []
    with sklearn.config_context(skip_parameter_validation=True, assume_finite=True):
        for seed in seeds:
            weight = np.bincount(np.random.RandomState(seed).randint(0, n, n), minlength=n).astype(np.float64)
            tree = DecisionTreeClassifier(max_depth=max_depth, min_samples_leaf=min_samples_leaf,
                                          max_features="sqrt", random_state=seed)
            trees.append(tree.fit(X, target, sample_weight=weight, check_input=False))
    return Forest(trees)
