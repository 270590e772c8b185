"""scikit-learn's random forest, grown without its per-tree Python overhead.

The decoder library fits 100-tree forests on a few hundred worlds thousands of times per audit.
At that size ``RandomForestClassifier.fit`` spends most of its time in per-tree bookkeeping
(parameter introspection, cloning, target checks), not in growing trees. ``grow_forest`` grows
the same trees with scikit-learn's own tree builder: the same per-tree seeds (drawn from
``RandomState(random_state)`` as ``RandomForestClassifier`` does), the same bootstrap counts as
sample weights, the same Gini criterion and best splitter with ``max_features="sqrt"``, and the
same averaging of per-tree leaf frequencies. The result equals ``RandomForestClassifier``'s
probabilities exactly (tests/tuple/test_decoding.py checks it on real decoder features).

The builder's interface is private, so another scikit-learn version may move it (ImportError),
change its constructors' signatures (TypeError), drop an attribute (AttributeError) or grow
different trees without complaint. Before its first use in a process, ``fast_builder_works``
grows a small forest both ways: if the private path raises one of those errors or disagrees
with ``RandomForestClassifier`` by a single bit, every forest is grown by
``RandomForestClassifier`` itself (slower, same numbers) and a warning is logged once.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cache

import numpy as np

log = logging.getLogger(__name__)

MAX_INT = np.iinfo(np.int32).max
# what a changed private interface raises (the ImportError is caught where it is imported)
INTERFACE_ERRORS = (TypeError, AttributeError, ValueError)

try:   # the private tree-building interface of scikit-learn 1.9 (pinned in requirements.txt)
    from sklearn.tree._criterion import Gini
    from sklearn.tree._splitter import BestSplitter
    from sklearn.tree._tree import DepthFirstTreeBuilder, Tree
    _IMPORTED = True
except ImportError:   # pragma: no cover - depends on the installed scikit-learn
    _IMPORTED = False


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
    min_samples_leaf=min_samples_leaf, random_state=random_state)`` on ``Z`` and 0/1 ``y``
    (through the private builder when ``fast`` and ``fast_builder_works()``)."""
    y = np.asarray(y)
    classes = np.unique(y)
    if len(classes) < 2:
        return Forest([], only_class=float(classes[0]) if len(classes) else 0.5)
    if fast and fast_builder_works():
        return _grow_fast(Z, y, classes, n_estimators, max_depth, min_samples_leaf, random_state)
    return _grow_reference(Z, y, n_estimators, max_depth, min_samples_leaf, random_state)


def _grow_reference(Z: np.ndarray, y: np.ndarray, n_estimators: int, max_depth: int | None, min_samples_leaf: int,
                    random_state: int) -> Forest:
    """The forest grown by scikit-learn's public ``RandomForestClassifier``."""
    from sklearn.ensemble import RandomForestClassifier
    model = RandomForestClassifier(n_estimators=n_estimators, max_depth=max_depth, min_samples_leaf=min_samples_leaf,
                                   random_state=random_state, n_jobs=1).fit(Z, y)
    return Forest([], fallback=model)


def _grow_fast(Z: np.ndarray, y: np.ndarray, classes: np.ndarray, n_estimators: int, max_depth: int | None,
               min_samples_leaf: int, random_state: int) -> Forest:
    """The same forest grown tree by tree with scikit-learn's private builder."""
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


@cache
def fast_builder_works() -> bool:
    """Whether the private builder imports, runs and grows exactly ``RandomForestClassifier``'s
    forest on a small fixed problem (checked once per process; False logs a warning)."""
    if not _IMPORTED:
        log.warning("scikit-learn's private tree builder is not importable: forests use RandomForestClassifier")
        return False
    rng = np.random.RandomState(0)
    Z = rng.normal(size=(60, 5))
    y = (Z[:, 0] + 0.5 * rng.normal(size=60) > 0).astype(int)
    try:
        for depth, leaf in ((None, 1), (3, 5)):
            ours = _grow_fast(Z, y, np.array([0, 1]), 8, depth, leaf, 0).predict_p1(Z)
            ref = _grow_reference(Z, y, 8, depth, leaf, 0).predict_p1(Z)
            if not np.array_equal(ours, ref):
                log.warning("scikit-learn's private tree builder grows other trees than RandomForestClassifier: "
                            "forests use RandomForestClassifier")
                return False
    except INTERFACE_ERRORS as exc:
        log.warning("scikit-learn's private tree builder failed (%s: %s): forests use RandomForestClassifier",
                    type(exc).__name__, exc)
        return False
    return True
