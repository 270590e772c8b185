"""The attacker's decoder library (TUPLE.md section 4), as scikit-learn-style estimators.

Each decoder takes a DataFrame of worlds with their (view-restricted) release and returns
P(S = s1) with ``predict_proba(X)[:, 1]``, where s1 is the second of the sorted hypotheses.
Parameters are stored verbatim in ``__init__``; learned state ends in an underscore; encoders
are fitted inside ``fit`` on training rows only, so ``sklearn.base.clone`` gives a fresh copy.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from sklearn.utils.validation import check_is_fitted

from qlb.tuple.forest import grow_forest
from qlb.tuple.release_views import (
    NUMERIC_PREFIXES, Vectorizer, column, condition_dicts, merge, public_dicts, quadratic, release_dicts,
)


def _pair_keys(X: pd.DataFrame) -> list[str]:
    return [f"H={a}|{b}" for a, b in zip(column(X, "hypothesis_0"), column(X, "hypothesis_1"))]


def _as_proba(p1: np.ndarray) -> np.ndarray:
    p1 = np.clip(np.asarray(p1, dtype=float), 0.0, 1.0)
    return np.column_stack([1 - p1, p1])


class _Decoder(ClassifierMixin, BaseEstimator):
    """A secret decoder: X is a frame of worlds (public fields, the hypothesis pair, the coarse
    class and the release), y is 1 where the world's mechanism is the pair's s1. ``classes_`` is
    always [0, 1] (s0, s1): a decoder fitted on one label still answers P(s1) for both."""

    def _fitted(self, y: np.ndarray) -> np.ndarray:
        """Record the label set (sklearn convention: learned state ends in ``_``)."""
        self.classes_ = np.array([0, 1])
        return np.asarray(y)

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        """s1 (1) when P(s1) > 0.5, else s0: an exact tie names s0, so a pair whose two worlds
        look identical gets one world right and one wrong."""
        return (self.predict_proba(X)[:, 1] > 0.5).astype(int)


class EmpiricalPrior(_Decoder):
    """P(S = s1 | T, H) from the training frequencies (overall rate for unseen (T, H))."""

    def __init__(self, coarse_classes: tuple[str, ...] = ()):
        self.coarse_classes = coarse_classes

    def fit(self, X: pd.DataFrame, y: np.ndarray) -> "EmpiricalPrior":
        """Learn the training rate of s1 per (coarse class T, hypothesis pair H), and the overall rate for unseen (T,
        H)."""
        y = self._fitted(y).astype(float)
        keys = [f"{t}|{k}" for t, k in zip(column(X, "coarse"), _pair_keys(X))]
        frame = pd.DataFrame({"k": keys, "y": y})
        self.rates_ = frame.groupby("k")["y"].mean().to_dict()
        self.overall_ = float(y.mean()) if len(y) else 0.5
        return self

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        """[P(s0), P(s1)] per world: the training rate of its (T, H), else the overall rate."""
        check_is_fitted(self)
        keys = [f"{t}|{k}" for t, k in zip(column(X, "coarse"), _pair_keys(X))]
        return _as_proba([self.rates_.get(k, self.overall_) for k in keys])


# The feature memo of the ``feature_memo`` block running in this context (None outside one):
# (release view, memo, the block's worlds or None). A context variable, not a module dict: every
# thread (a dashboard session refitting) and every asyncio task sees only its own block's memo,
# so concurrent audits never share features.
_FEATURE_MEMO: ContextVar[tuple[str, dict, pd.DataFrame | None] | None] = ContextVar("qlb_feature_memo", default=None)


@contextmanager
def feature_memo(release_view: str, worlds: pd.DataFrame | None = None) -> Iterator[None]:
    """Within this block, configurations that build the same features (same kind, same release
    view, same rows) share one fitted vectorizer and scaler and their matrices instead of
    rebuilding them: the library fits up to 27 configurations x 5 folds on the same worlds. The
    memo belongs to the current thread or task (a fresh one per block, dropped on exit; a nested
    block has its own), and its keys name ``release_view``. The caller guarantees that a world's
    release under ``release_view`` does not change inside the block (``fit_view`` does). Results
    are identical to unshared fitting.

    ``worlds`` (each world once, under ``release_view``): every world the block fits or scores,
    when the caller knows them. Each feature kind is then encoded once for all of them
    (``FeatureEncoding``), and every fit and transform on those worlds reads its matrix off that
    encoding instead of vectorizing again (the same vocabulary and values: see
    ``FeatureEncoding``)."""
    token = _FEATURE_MEMO.set((release_view, {}, worlds))
    try:
        yield
    finally:
        _FEATURE_MEMO.reset(token)


def _frame_ids(X: pd.DataFrame) -> tuple[tuple, np.ndarray | None]:
    """Inside a ``feature_memo`` block: the world ids of ``X`` and their rows among the block's
    worlds (None without them, or when one of ``X``'s is not among them), read once per frame:
    every configuration fits and scores the very same fold and split frames. The entry holds
    the frame, so its id cannot be reused by another frame while the block runs."""
    _, memo, worlds = _FEATURE_MEMO.get()
    hit = memo.get(("ids", id(X)))
    if hit is None or hit[0] is not X:
        ids = tuple(column(X, "world_id"))
        rows = None
        if worlds is not None:
            if "worlds" not in memo:
                memo["worlds"] = pd.Index(column(worlds, "world_id"), dtype=object)
            rows = memo["worlds"].get_indexer(pd.Index(ids, dtype=object))
            rows = None if (rows < 0).any() else rows
        hit = memo[("ids", id(X))] = (X, ids, rows)
    return hit[1], hit[2]


class FeatureEncoding:
    """One feature kind's dicts of a block's worlds as a dense matrix over every key they hold
    (sorted), with where each key is present. A fit on some of these worlds learns the keys its
    rows hold, sorted (``Vectorizer.fit_transform``): exactly the encoding's columns present in
    those rows, in the same order; its matrix, and a transform of any of these worlds with that
    vocabulary, are the encoding's values in those rows and columns (a key a world lacks is 0,
    a key outside the vocabulary is ignored, as in ``Vectorizer.transform``)."""

    def __init__(self, dicts: list[dict]):
        vec = Vectorizer()
        self.values = vec.fit_transform(dicts)
        self.present = vec.presence(dicts)
        self.names = vec.feature_names_
        self.index = vec.index_

    def fit(self, rows: np.ndarray) -> tuple[Vectorizer, np.ndarray]:
        """The vectorizer fitted on these rows' dicts and their matrix (``Vectorizer.fit_transform``)."""
        cols = np.flatnonzero(self.present[rows].any(axis=0))
        return Vectorizer.of([self.names[c] for c in cols]), self.values[np.ix_(rows, cols)]

    def columns(self, vectorizer: Vectorizer) -> np.ndarray | None:
        """The encoding's column of each of the vectorizer's keys (None when some key is not encoded)."""
        cols = self.index.get_indexer(vectorizer.index_)
        return None if (cols < 0).any() else cols


class _FeatureDecoder(_Decoder):
    """Shared plumbing: build feature dicts, vectorize on train, optionally standardize."""

    standardize = True

    def _dicts(self, X: pd.DataFrame) -> list[dict]:
        raise NotImplementedError

    def _kind(self) -> tuple:
        """What determines this decoder's feature dicts (besides the rows)."""
        return (type(self).__name__, tuple(self.coarse_classes))

    def _row_dicts(self, X: pd.DataFrame) -> list[dict]:
        """``_dicts(X)``, each world's computed once per block: a world's features of one kind do
        not change inside a block (see ``feature_memo``), and the folds, the full fit and the
        validation and test rows ask for the same worlds again and again."""
        current = _FEATURE_MEMO.get()
        if current is None or "world_id" not in X.columns:
            return self._dicts(X)
        release_view, memo, _ = current
        known = memo.setdefault(("dicts", release_view, self._kind()), {})
        ids = _frame_ids(X)[0]
        new = [i for i, w in enumerate(ids) if w not in known]
        if new:
            known.update(zip((ids[i] for i in new), self._dicts(X.iloc[new])))
        return [known[w] for w in ids]

    def _memo(self, X: pd.DataFrame, *extra) -> tuple[dict | None, tuple | None]:
        """The current block's memo and this call's key in it: (step, the vectorizer it reads,
        release view, feature kind, world ids); (None, None) outside a block."""
        current = _FEATURE_MEMO.get()
        if current is None or "world_id" not in X.columns:
            return None, None
        release_view, memo, _ = current
        return memo, (*extra, release_view, self._kind(), _frame_ids(X)[0])

    def _encoded(self, X: pd.DataFrame) -> tuple[FeatureEncoding, np.ndarray] | None:
        """This kind's encoding of the block's worlds (built on first use) and the rows of ``X``
        in it; None outside a block that knows its worlds, or for a world it does not know."""
        current = _FEATURE_MEMO.get()
        if current is None or current[2] is None or "world_id" not in X.columns:
            return None
        release_view, memo, worlds = current
        rows = _frame_ids(X)[1]
        if rows is None:
            return None
        key = ("encoding", release_view, self._kind())
        if key not in memo:
            memo[key] = FeatureEncoding(self._row_dicts(worlds))
        return memo[key], rows

    def _fit_features(self, X: pd.DataFrame) -> np.ndarray:
        memo, key = self._memo(X, "fit")
        hit = memo.get(key) if memo is not None else None
        if hit is None:
            encoded = self._encoded(X)
            if encoded is None:
                vec = Vectorizer()
                Z = vec.fit_transform(self._row_dicts(X))
            else:
                vec, Z = encoded[0].fit(encoded[1])
            scaler = StandardScaler().fit(Z) if self.standardize else None
            hit = (vec, scaler, scaler.transform(Z) if scaler is not None else Z)
            if memo is not None:
                memo[key] = hit
        self.vectorizer_, scaler, Z = hit
        if scaler is not None:
            self.scaler_ = scaler
        return Z

    def _encoded_cells(self, X: pd.DataFrame, what: str) -> np.ndarray:
        """``values`` (the vectorizer's transform) or ``present`` (its presence) of ``X``'s rows,
        read off the block's encoding when it holds them, else computed from the dicts."""
        encoded = self._encoded(X)
        cols = encoded[0].columns(self.vectorizer_) if encoded is not None else None
        if cols is None:
            dicts = self._row_dicts(X)
            return self.vectorizer_.transform(dicts) if what == "values" else self.vectorizer_.presence(dicts)
        return getattr(encoded[0], what)[np.ix_(encoded[1], cols)]

    def _features(self, X: pd.DataFrame) -> np.ndarray:
        # the vectorizer object itself (identity hash) is in the key: it stays alive while its
        # entry does, so a later vectorizer can never reuse its id
        memo, key = self._memo(X, "transform", self.vectorizer_)
        hit = memo.get(key) if memo is not None else None
        if hit is None:
            Z = self._encoded_cells(X, "values")
            hit = self.scaler_.transform(Z) if self.standardize else Z
            if memo is not None:
                memo[key] = hit
        return hit


class LogisticDecoder(_FeatureDecoder):
    """Standardized logistic regression on public, conditioning and release features; the
    quadratic variant adds numeric squares and products and release x hypothesis-pair terms."""

    def __init__(self, C: float = 1.0, quadratic: bool = False, coarse_classes: tuple[str, ...] = (),
                 random_state: int = 0):
        self.C = C
        self.quadratic = quadratic
        self.coarse_classes = coarse_classes
        self.random_state = random_state

    def _kind(self):
        return (*super()._kind(), self.quadratic)

    def _dicts(self, X):
        rel = release_dicts(X, self.coarse_classes, "raw")
        if self.quadratic:
            rel = quadratic(rel, _pair_keys(X))
        return merge(public_dicts(X), condition_dicts(X), rel)

    def fit(self, X, y):
        """Fit the encoders and the logistic regression on the training worlds; with one label seen, P(s1) is that
        constant."""
        Z = self._fit_features(X)
        y = self._fitted(y)
        self.constant_ = float(y[0]) if len(set(y)) < 2 else None
        if self.constant_ is None:
            self.model_ = LogisticRegression(C=self.C, max_iter=3000, random_state=self.random_state).fit(Z, y)
        return self

    def predict_proba(self, X):
        """[P(s0), P(s1)] per world from the logistic regression (the constant when fitted on one label)."""
        check_is_fitted(self)
        if self.constant_ is not None:
            return _as_proba(np.full(len(X), self.constant_))
        return self.model_.predict_proba(self._features(X))


class ForestDecoder(_FeatureDecoder):
    """Random forest (100 trees, seed 0) on unstandardized public, conditioning and release
    features: scikit-learn's RandomForestClassifier, grown by ``qlb.tuple.forest.grow_forest`` (equal
    probabilities, a fraction of the per-tree overhead)."""

    standardize = False

    def __init__(self, max_depth: int | None = None, min_samples_leaf: int = 1, coarse_classes: tuple[str, ...] = (),
                 n_estimators: int = 100, random_state: int = 0):
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.coarse_classes = coarse_classes
        self.n_estimators = n_estimators
        self.random_state = random_state

    def _dicts(self, X):
        return merge(public_dicts(X), condition_dicts(X), release_dicts(X, self.coarse_classes, "raw"))

    def fit(self, X, y):
        """Grow the forest on the training worlds' unstandardized features."""
        self.forest_ = grow_forest(self._fit_features(X), self._fitted(y), self.n_estimators, self.max_depth,
                                   self.min_samples_leaf, self.random_state)
        return self

    def predict_proba(self, X):
        """[P(s0), P(s1)] per world: the mean over trees of the leaf's share of s1."""
        check_is_fitted(self)
        return _as_proba(self.forest_.predict_p1(self._features(X)))


def _sigmoid(t: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * t))


def fit_pairwise_scorer(Zb: np.ndarray, i1: np.ndarray, i0: np.ndarray, y: np.ndarray, C: float,
                        n_mechanisms: int, tol: float = 1e-10, max_iter: int = 100) -> np.ndarray:
    """Scorer weights W (one row w_s per mechanism) minimizing
    C * sum_i log(1 + exp(-y~_i (w_s1(i) - w_s0(i)) . zb_i)) + 1/2 sum_s |w_s|^2, y~ = 2y - 1:
    the L2 logistic regression without intercept on the pairwise design (row i is +zb_i in the
    block of s1, -zb_i in the block of s0) that scikit-learn's LogisticRegression(C,
    fit_intercept=False) solves.

    The minimizer lies in the row space of the design, W = sum_i alpha_i (e_s1 - e_s0) zb_i^T, and
    the design's Gram matrix is K = (M M^T) * (Zb Zb^T) with M the +1/-1 mechanism indicators, so
    Newton's method runs on n coefficients instead of n_mechanisms x (features + 1); it converges
    in a handful of steps to a far tighter tolerance than L-BFGS's default."""
    n = len(y)
    M = np.zeros((n, n_mechanisms))
    M[np.arange(n), i1] += 1.0
    M[np.arange(n), i0] -= 1.0
    K = (M @ M.T) * (Zb @ Zb.T)
    ys = 2.0 * np.asarray(y, dtype=float) - 1.0

    def objective(a: np.ndarray, t: np.ndarray) -> float:
        return C * float(np.logaddexp(0.0, -ys * t).sum()) + 0.5 * float(a @ t)

    a = np.zeros(n)
    t = np.zeros(n)
    f = objective(a, t)
    for _ in range(max_iter):
        wrong = _sigmoid(-ys * t)                 # P(the other mechanism) per row
        r = a - C * ys * wrong                    # gradient = K r
        D = C * wrong * (1.0 - wrong)
        step = np.linalg.solve(np.eye(n) + D[:, None] * K, r)
        decrement = float((K @ r) @ step)         # Newton decrement squared
        if decrement <= tol * max(1.0, abs(f)):
            break
        eta = 1.0
        while True:                               # backtracking (Armijo) line search
            a_new = a - eta * step
            t_new = K @ a_new
            f_new = objective(a_new, t_new)
            if f_new <= f - 0.25 * eta * decrement or eta < 1e-8:
                break
            eta *= 0.5
        a, t, f = a_new, t_new, f_new
    return M.T @ (a[:, None] * Zb)


class SharedScorerDecoder(_FeatureDecoder):
    """Shared mechanism scorer: u_s(z) = w_s.z + b_s per mechanism, parameters reused across
    hypothesis pairs, fitted with a pairwise logistic loss on u_s1 - u_s0 (L2, strength C, the
    bias b_s penalized like the weights); solved exactly by ``fit_pairwise_scorer``."""

    def __init__(self, C: float = 1.0, representation: str = "raw", coarse_classes: tuple[str, ...] = (),
                 mechanisms: tuple[str, ...] = (), random_state: int = 0):
        self.C = C
        self.representation = representation
        self.coarse_classes = coarse_classes
        self.mechanisms = mechanisms
        self.random_state = random_state

    def _kind(self):
        return (*super()._kind(), self.representation)

    def _dicts(self, X):
        return merge(public_dicts(X), release_dicts(X, self.coarse_classes, self.representation))

    def _blocks(self, Z: np.ndarray, X: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """[z, 1] per row and the mechanism indices of s1 and s0."""
        index = {m: i for i, m in enumerate(self.mechanisms)}
        Zb = np.hstack([Z, np.ones((Z.shape[0], 1))])
        i1 = np.array([index[s] for s in column(X, "hypothesis_1")], dtype=int)
        i0 = np.array([index[s] for s in column(X, "hypothesis_0")], dtype=int)
        return Zb, i1, i0

    def fit(self, X, y):
        """Fit the per-mechanism scorer weights with the pairwise logistic loss; with one label seen, P(s1) is that
        constant."""
        Z = self._fit_features(X)
        y = self._fitted(y)
        self.constant_ = float(y[0]) if len(set(y)) < 2 else None
        if self.constant_ is None:
            Zb, i1, i0 = self._blocks(Z, X)
            self.coef_ = fit_pairwise_scorer(Zb, i1, i0, y, self.C, len(self.mechanisms))
        return self

    def decision_function(self, X) -> np.ndarray:
        """u_s1(z) - u_s0(z) per row."""
        check_is_fitted(self)
        Zb, i1, i0 = self._blocks(self._features(X), X)
        return ((self.coef_[i1] - self.coef_[i0]) * Zb).sum(axis=1)

    def predict_proba(self, X):
        """[P(s0), P(s1)] per world: the sigmoid of u_s1 - u_s0 (the constant when fitted on one label)."""
        check_is_fitted(self)
        if self.constant_ is not None:
            return _as_proba(np.full(len(X), self.constant_))
        return _as_proba(_sigmoid(self.decision_function(X)))


class TemplateDecoder(_FeatureDecoder):
    """Shrinkage template decoder: a Gaussian per mechanism over T and release features (no public
    text), covariance shared within the coarse class; means shrunk toward the class mean with
    strength ``shrink``; 'full' covariance keeps 25% of the off-diagonal (75% diagonal
    shrinkage); all add 0.05 I. P(s1) from the log-likelihood difference of the two hypotheses.
    A mechanism with no training worlds of its class gets the class mean as its template (the
    shrunk mean with nothing of its own), so it is scored like every other mechanism, never
    favoured.

    A numeric release feature a world does not show (a top-two release's other scores, the
    proportions when the residual mass is 0, every number of an unavailable response) is
    *missing*, not 0: means and covariances are estimated from the worlds that observe each
    feature (pairwise for a covariance entry), and a world is scored by the Gaussian's marginal
    over the features it observes. Indicators are always observed. With nothing missing this is
    the plain Gaussian template."""

    def __init__(self, covariance: str = "diag", shrink: float = 0.0, representation: str = "raw",
                 coarse_classes: tuple[str, ...] = ()):
        self.covariance = covariance
        self.shrink = shrink
        self.representation = representation
        self.coarse_classes = coarse_classes

    def _kind(self):
        return (*super()._kind(), self.representation)

    def _dicts(self, X):
        return merge([{f"T={t}": 1.0} for t in column(X, "coarse")], release_dicts(X, self.coarse_classes, self.representation))

    def _observed(self, X) -> np.ndarray | None:
        """(worlds x features) True where the world observes the feature; None when every world observes every one.
        Memoized like the features: every configuration of a kind asks for the same worlds."""
        return self._missingness(X)[0]

    def _missingness(self, X) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
        """``_observed(X)``, its distinct rows (the patterns of what worlds observe) and each world's pattern
        (None, None, None when every world observes every feature); memoized per rows and vectorizer."""
        memo, key = self._memo(X, "observed", self.vectorizer_)
        if memo is not None and key in memo:
            return memo[key]
        numeric = np.array([n.startswith(NUMERIC_PREFIXES) for n in self.vectorizer_.feature_names_], dtype=bool)
        hit = (None, None, None)
        if numeric.any():
            seen = self._encoded_cells(X, "present") | ~numeric
            if not seen.all():
                packed = np.packbits(seen, axis=1)          # a pattern's bits, 8 features a byte
                _, first, which = np.unique(packed, axis=0, return_index=True, return_inverse=True)
                hit = (seen, seen[first], which.reshape(-1))
        if memo is not None:
            memo[key] = hit
        return hit

    def fit(self, X, y):
        """Learn the shrunk mean per mechanism and one regularized covariance per coarse class (and its precision);
        the log-determinant is never needed, as both hypotheses of a world are scored under the same class and the
        same observed features. A diagonal covariance's precision is its reciprocal diagonal.

        Per class, the worlds are taken grouped by mechanism (sorted, each group in row order), and the residuals
        stack in that order."""
        Z = self._fit_features(X)
        y = self._fitted(y)
        self.means_, self.precisions_, self.covariances_ = {}, {}, {}
        self.mech_class_, self.class_means_ = {}, {}
        self.marginals_: dict = {}
        dim = Z.shape[1]
        for c, class_mean, names, MU, S in self._class_moments(X, y, Z):
            self.class_means_[c] = class_mean
            for m, mu in zip(names, MU):
                self.means_[m] = mu
                self.mech_class_[m] = c
            if self.covariance == "diag":
                S = np.diag(np.diag(S) + 0.05)
                self.precisions_[c] = np.diag(1.0 / np.diag(S))
            else:
                S = 0.25 * S + 0.75 * np.diag(np.diag(S)) + 0.05 * np.eye(dim)
                self.precisions_[c] = np.linalg.inv(S)
            self.covariances_[c] = S
        return self

    def _class_moments(self, X, y: np.ndarray, Z: np.ndarray) -> list[tuple]:
        """Per coarse class c: (c, the class mean, its mechanisms, their shrunk means, the pairwise residual
        covariance before regularization). They depend on the rows, the labels, the features and ``shrink``, not
        on the covariance form: inside a ``feature_memo`` block the diagonal and the full configuration of one
        shrinkage share them (memoized per labels too, so refitting other labels recomputes)."""
        memo, key = self._memo(X, "moments", self.shrink, np.asarray(y).tobytes())
        if memo is not None and key in memo:
            return memo[key]
        seen = self._observed(X)
        O = np.ones(Z.shape) if seen is None else seen.astype(float)
        ZO = Z * O
        mech = np.where(y == 1, X["hypothesis_1"].to_numpy(), X["hypothesis_0"].to_numpy())
        coarse = X["coarse"].to_numpy()
        out = []
        for c in np.unique(coarse):
            rows = np.flatnonzero(coarse == c)
            n_seen = O[rows].sum(axis=0)
            class_mean = np.where(n_seen > 0, ZO[rows].sum(axis=0) / np.maximum(n_seen, 1), 0.0)
            names, which = np.unique(mech[rows], return_inverse=True)
            which = which.reshape(-1)
            rows = rows[np.argsort(which, kind="stable")]          # grouped by mechanism, row order kept
            bounds = np.concatenate(([0], np.cumsum(np.bincount(which, minlength=len(names)))))
            B, ZB = O[rows], ZO[rows]
            groups = list(zip(bounds[:-1], bounds[1:]))
            weight = np.array([B[a:b].sum(axis=0) for a, b in groups]) + self.shrink
            total = np.array([ZB[a:b].sum(axis=0) for a, b in groups]) + self.shrink * class_mean
            MU = np.where(weight > 0, total / np.where(weight > 0, weight, 1.0), class_mean)
            R = (Z[rows] - np.repeat(MU, np.diff(bounds), axis=0)) * B
            S = (R.T @ R) / np.maximum(B.T @ B - 1, 1)          # pairwise: the worlds that observe both features
            out.append((c, class_mean, names, MU, S))
        if memo is not None:
            memo[key] = out
        return out

    def _templates(self, mechanisms: np.ndarray, c: str) -> np.ndarray:
        """The template of each mechanism in class c: its shrunk mean when it was seen in c, else the class mean."""
        names, which = np.unique(mechanisms, return_inverse=True)
        table = np.array([self.means_[m] if self.mech_class_.get(m) == c else self.class_means_[c] for m in names])
        return table[which.reshape(-1)]

    def _marginal(self, c: str, pattern: np.ndarray) -> np.ndarray:
        """Class c's precision of the Gaussian's marginal over the features ``pattern`` observes (zero elsewhere),
        computed once per fitted decoder."""
        key = (c, pattern.tobytes())
        if key not in self.marginals_:
            p = np.zeros_like(self.precisions_[c])
            p[np.ix_(pattern, pattern)] = np.linalg.inv(self.covariances_[c][np.ix_(pattern, pattern)])
            self.marginals_[key] = p
        return self.marginals_[key]

    def predict_proba(self, X):
        """[P(s0), P(s1)] per world from the log-likelihood difference of s1 and s0 (log N(z; template, class c's
        covariance), marginal over the world's observed features, up to the class's constant); 0.5 when the class
        or both hypotheses are unseen."""
        check_is_fitted(self)
        Z = self._features(X)
        seen, patterns, pattern_of = self._missingness(X)
        coarse, h0, h1 = (np.array(column(X, name), dtype=object) for name in ("coarse", "hypothesis_0", "hypothesis_1"))
        known = np.array([a in self.means_ or b in self.means_ for a, b in zip(h0, h1)], dtype=bool)
        out = np.full(len(X), 0.5)
        for c, precision in self.precisions_.items():
            rows = np.flatnonzero((coarse == c) & known)
            if not len(rows):
                continue
            d1 = Z[rows] - self._templates(h1[rows], c)
            d0 = Z[rows] - self._templates(h0[rows], c)
            if seen is None or self.covariance == "diag":       # diagonal: the marginal drops the unseen terms
                O = 1.0 if seen is None else seen[rows]
                out[rows] = _log_odds_to_p(_half_difference(d1 * O, d0 * O, precision))
                continue
            which = pattern_of[rows]
            for k in np.unique(which):
                at = np.flatnonzero(which == k)
                pattern = patterns[k]
                p = precision if pattern.all() else self._marginal(c, pattern)
                out[rows[at]] = _log_odds_to_p(_half_difference(d1[at], d0[at], p))
        return _as_proba(out)


def _half_difference(d1: np.ndarray, d0: np.ndarray, precision: np.ndarray) -> np.ndarray:
    """-1/2 d1' P d1 - (-1/2 d0' P d0) per row: the log-likelihood difference of two Gaussian templates."""
    return -0.5 * ((d1 @ precision) * d1).sum(axis=1) - -0.5 * ((d0 @ precision) * d0).sum(axis=1)


def _log_odds_to_p(delta: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(delta, -50, 50)))


def base_library(view: str, classes: tuple[str, ...], mechanisms: tuple[str, ...]) -> list[tuple[str, str, BaseEstimator]]:
    """(family, config name, estimator) in the fixed library order: 15 configurations for the
    first three views, 27 for the probability views."""
    from qlb.tuple.release_views import PROBABILITY_VIEWS
    reps = ("raw", "logratio", "residual") if view in PROBABILITY_VIEWS else ("raw",)
    lib: list[tuple[str, str, BaseEstimator]] = [("prior", "prior", EmpiricalPrior(classes))]
    for q in (False, True):
        for C in (0.1, 1.0):
            lib.append(("logistic", f"logistic C={C} {'quadratic' if q else 'linear'}",
                        LogisticDecoder(C, q, classes)))
    for depth, leaf in ((None, 1), (None, 5), (6, 1), (6, 5)):
        lib.append(("forest", f"forest depth={depth} leaf={leaf}", ForestDecoder(depth, leaf, classes)))
    for rep in reps:
        for C in (0.1, 1.0, 10.0):
            lib.append(("shared_scorer", f"shared scorer {rep} C={C}", SharedScorerDecoder(C, rep, classes, mechanisms)))
    for rep in reps:
        for cov, shrink in (("diag", 0.0), ("diag", 2.0), ("full", 2.0)):
            lib.append(("template", f"template {rep} {cov} shrink={shrink:g}", TemplateDecoder(cov, shrink, rep, classes)))
    return lib
