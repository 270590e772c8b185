"""The recipient candidates as scikit-learn estimators (TUPLE.md section 5), and fitting every
candidate of one (model, domain, view).

Each estimator follows scikit-learn's conventions (``__init__`` stores parameters verbatim,
``fit`` validates and stores learned state with a trailing underscore and returns self,
``predict_proba`` checks it is fitted), so ``clone`` and ``get_params`` work. ``frozen()``
turns a fitted estimator into the serializable ``Recipient`` a run stores and replays.
Labels ``y`` are class indices into ``coarse_classes`` (canonical order); ``predict_proba``
returns one column per coarse class, ``classes_`` = 0..k-1.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from sklearn.utils.validation import check_is_fitted

from qlb.tuple.recipients import CS, MAX_ITER, Recipient, features, native_q
from qlb.tuple.release_views import Vectorizer, apply_view


class _RecipientEstimator(ClassifierMixin, BaseEstimator):
    """q(T | public, release) over ``coarse_classes``."""

    def _labels(self, y: np.ndarray) -> np.ndarray:
        self.classes_ = np.arange(len(self.coarse_classes))
        return np.asarray(y, dtype=int)

    def frozen(self) -> Recipient:
        """The fitted candidate as a frozen, serializable ``Recipient``."""
        raise NotImplementedError

    def predict_proba(self, X) -> np.ndarray:
        """(n x k) q per row in canonical class order."""
        check_is_fitted(self)
        return self.frozen().q(X) if isinstance(X, pd.DataFrame) else self.frozen().q(pd.DataFrame(index=range(len(X))), X)


class PriorRecipient(_RecipientEstimator):
    """The empirical prior: the training frequency of each coarse class (X is not read)."""

    def __init__(self, coarse_classes: Sequence[str] = ()):
        self.coarse_classes = coarse_classes

    def fit(self, X, y) -> "PriorRecipient":
        """Class frequencies of ``y``; uniform when there are no training worlds."""
        y = self._labels(y)
        counts = np.bincount(y, minlength=len(self.coarse_classes)).astype(float)
        self.prior_ = counts / counts.sum() if counts.sum() else np.full(len(self.coarse_classes),
                                                                         1.0 / len(self.coarse_classes))
        return self

    def frozen(self) -> Recipient:
        """The fitted class frequencies as the frozen ``empirical_prior`` recipient."""
        check_is_fitted(self)
        return Recipient("empirical_prior", "prior", tuple(self.coarse_classes), self.prior_)


class LogisticRecipient(_RecipientEstimator):
    """Standardized multinomial logistic regression on feature dicts (``features``), folded back
    onto raw features so the frozen map needs no scaler. X: a list of feature dicts."""

    def __init__(self, coarse_classes: Sequence[str] = (), C: float = 1.0, max_iter: int = MAX_ITER):
        self.coarse_classes = coarse_classes
        self.C = C
        self.max_iter = max_iter

    def fit(self, X: list[dict[str, float]], y) -> "LogisticRecipient":
        """Fit on the available training worlds; raises ValueError when ``y`` has one class
        (no logistic candidate then)."""
        vec = Vectorizer()
        x = vec.fit_transform(X)
        return self.fit_standardized(vec.feature_names_, *standardized(x), y)

    def fit_standardized(self, names: Sequence[str], mean: np.ndarray, scale: np.ndarray, z: np.ndarray,
                         y) -> "LogisticRecipient":
        """``fit`` on features already vectorized (columns ``names``, sorted) and standardized
        (``standardized``): every C of a (model, domain, view) shares them."""
        y = self._labels(y)
        if len(np.unique(y)) < 2:
            raise ValueError("a logistic recipient needs at least two coarse classes among the training worlds")
        lr = LogisticRegression(C=self.C, max_iter=self.max_iter).fit(z, y)
        k = len(self.coarse_classes)
        coef = np.zeros((k, z.shape[1]))
        intercept = np.full(k, -30.0)                # classes never seen in training get ~0 mass
        w = lr.coef_ / scale
        b = lr.intercept_ - w @ mean
        if len(lr.classes_) == 2:                     # binary: sklearn keeps one row for class 1
            w = np.vstack([-w[0] / 2, w[0] / 2])
            b = np.array([-b[0] / 2, b[0] / 2])
        for row, cls in enumerate(lr.classes_):
            coef[int(cls)] = w[row]
            intercept[int(cls)] = b[row]
        self.feature_names_ = list(names)
        self.coef_, self.intercept_ = coef, intercept
        return self

    def frozen(self) -> Recipient:
        """The fitted weights on raw features as the frozen logistic recipient."""
        check_is_fitted(self)
        return Recipient(f"logistic C={self.C:g}", "logistic", tuple(self.coarse_classes), None,
                         self.feature_names_, self.coef_, self.intercept_)


class NativeRecipient(_RecipientEstimator):
    """The released probability vector itself (nothing to learn; X: a frame of worlds)."""

    def __init__(self, coarse_classes: Sequence[str] = ()):
        self.coarse_classes = coarse_classes

    def fit(self, X: pd.DataFrame, y=None) -> "NativeRecipient":
        """Check that every available world releases the full vector (else ValueError)."""
        self.classes_ = np.arange(len(self.coarse_classes))
        if native_q(X, self.coarse_classes) is None:
            raise ValueError("the native candidate needs the full probability vector")
        self.released_ = True
        return self

    def frozen(self) -> Recipient:
        """The frozen ``native`` recipient, which reads the released distribution itself."""
        check_is_fitted(self)
        return Recipient("native", "native", tuple(self.coarse_classes))


def standardized(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, scale, standardized x): scikit-learn's StandardScaler, a constant column scaled by 1."""
    scaler = StandardScaler().fit(x)
    scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
    return scaler.mean_, scale, (x - scaler.mean_) / scale


def fit_logistic(dicts: list[dict[str, float]], y: np.ndarray, classes: Sequence[str], C: float) -> Recipient | None:
    """The frozen logistic candidate, or None when the training worlds show one class."""
    fitted = fit_logistics(dicts, y, classes, (C,))
    return fitted[0] if fitted else None


def fit_logistics(dicts: list[dict[str, float]], y: np.ndarray, classes: Sequence[str],
                  cs: Sequence[float] = CS) -> list[Recipient]:
    """The frozen logistic candidate for each C of ``cs``, all on one vectorized and standardized
    matrix (the same columns and values as scikit-learn's DictVectorizer); none when the training
    worlds show one class."""
    if len(set(np.asarray(y).tolist())) < 2:
        return []
    vec = Vectorizer()
    std = standardized(vec.fit_transform(dicts))
    return [LogisticRecipient(tuple(classes), C).fit_standardized(vec.feature_names_, *std, y).frozen() for C in cs]


def fit_candidates(frame: pd.DataFrame, view: str, classes: Sequence[str]) -> list[Recipient]:
    """Every candidate for one (model, domain, view), fitted on the training split's available
    worlds (the prior on every training world), in the fixed candidate order."""
    released = apply_view(frame, view)
    train = released[released["split"] == "train"]
    index = {c: i for i, c in enumerate(classes)}
    out = [PriorRecipient(tuple(classes)).fit(None, train["coarse"].map(index).to_numpy()).frozen()]
    if native_q(released, classes) is not None and view in ("full_probabilities", "full_native"):
        out.append(NativeRecipient(tuple(classes)).fit(released).frozen())
    avail = train[train["status"] == "ok"]
    if len(avail):
        out += fit_logistics(features(avail, classes), avail["coarse"].map(index).to_numpy(), classes)
    return out
