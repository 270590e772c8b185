"""scikit-learn's random forest, grown without its per-tree Python overhead.

The decoder library fits 100-tree forests on a few hundred worlds thousands of times per audit.
At that size ``RandomForestClassifier.fit`` spends most of its time in per-tree bookkeeping
(parameter introspection, cloning, target checks), not in growing trees. ``grow_forest`` grows
the same trees with scikit-learn's own tree builder: the same per-tree seeds (drawn from
``RandomState(random_state)`` as ``RandomForestClassifier`` does), the same bootstrap counts as
sample weights, the same Gini criterion and best splitter with ``max_features="sqrt"``, and the
same averaging of per-tree leaf frequencies. The result equals ``RandomForestClassifier``'s
probabilities exactly (tests/test_decoding.py checks it on real decoder features); if the
builder's private interface is missing (another scikit-learn version), it falls back to
``RandomForestClassifier`` itself.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_INT = np.iinfo(np.int32).max

try:   # the private tree-building interface of scikit-learn 1.9 (pinned in requirements.txt)
    from sklearn.tree._criterion import Gini
    from sklearn.tree._splitter import BestSplitter
    from sklearn.tree._tree import DepthFirstTreeBuilder, Tree
    _FAST = True
except ImportError:   # pragma: no cover - depends on the installed scikit-learn
    _FAST = False


@dataclass
class Forest:
    """Binary-target forest: ``predict_p1(Z)`` is the mean over trees of the leaf's share of
    class 1 (or the only class seen in training)."""

    trees: list
    only_class: float | None = None
    fallback: object | None = None

    def predict_p1(self, Z: np.ndarray) -> np.ndarray:
        """P(class 1) per row: the mean over trees of the leaf's class-1 share (the only training class, or the
        fallback's answer)."""
        if self.only_class is not None:
            return np.full(len(Z), self.only_class)
        if self.fallback is not None:
            return self.fallback.predict_proba(Z)[:, 1]
        X = np.ascontiguousarray(Z, dtype=np.float32)
        total = np.zeros((len(X), 2))
        for tree in self.trees:
            total += tree.predict(X)[:, :2]
        total /= len(self.trees)
        return total[:, 1]


def grow_forest(Z: np.ndarray, y: np.ndarray, n_estimators: int = 100, max_depth: int | None = None,
                min_samples_leaf: int = 1, random_state: int = 0, fast: bool = True) -> Forest:
    """Grow ``RandomForestClassifier(n_estimators, max_depth=max_depth,
    min_samples_leaf=min_samples_leaf, random_state=random_state)`` on ``Z`` and 0/1 ``y``."""
    y = np.asarray(y)
    classes = np.unique(y)
    if len(classes) < 2:
        return Forest([], only_class=float(classes[0]) if len(classes) else 0.5)
    if not (fast and _FAST):
        from sklearn.ensemble import RandomForestClassifier
        model = RandomForestClassifier(n_estimators=n_estimators, max_depth=max_depth,
                                       min_samples_leaf=min_samples_leaf, random_state=random_state,
                                       n_jobs=1).fit(Z, y)
        return Forest([], fallback=model)
    X = np.ascontiguousarray(Z, dtype=np.float32)
    n, d = X.shape
    target = np.ascontiguousarray((y == classes[1]).astype(np.float64).reshape(-1, 1))
    n_classes = np.array([2], dtype=np.intp)
    max_features = max(1, int(np.sqrt(d)))
    depth = MAX_INT if max_depth is None else max_depth
    min_split = max(2, 2 * min_samples_leaf)
    seeder = np.random.RandomState(random_state)
    seeds = [seeder.randint(MAX_INT) for _ in range(n_estimators)]
    trees = []
    for seed in seeds:
        draws = np.random.RandomState(seed).randint(0, n, n).astype(np.int32)
        weight = np.bincount(draws, minlength=n).astype(np.float64)
        splitter = BestSplitter(Gini(1, n_classes), max_features, min_samples_leaf, 0.0,
                                np.random.RandomState(seed), None)
        tree = Tree(d, n_classes, 1)
        DepthFirstTreeBuilder(splitter, min_split, min_samples_leaf, 0.0, depth, 0.0).build(tree, X, target, weight, None)
        trees.append(tree)
    return Forest(trees)
