"""Recipient policies: estimates of q(T | public, release) (TUPLE.md section 5).

Candidates, all fitted on training worlds of one (model, domain, view) only:

- ``empirical_prior``: the training frequency of each coarse class;
- ``logistic C=...``: multinomial logistic regression, standardized, C in {0.01, 0.1, 1, 10}, on
  the categorical public fields (recipient role, intake channel, operating window, candidate at
  each position) and the release fields the view shows (status, choice, confidence,
  probabilities, with availability indicators);
- ``native``: the released probability vector itself, only where the view releases the full
  vector for every available response.

The free-text ``request`` and ``case_context`` are not recipient features (a choice the spec
leaves open): in the simulated reference they are written per coarse class, so a text model
would route without the model's output and every release would look equally useful.

A fitted candidate is a ``Recipient``: a frozen, serializable linear map from feature dicts to q,
so a stored run's policies can be replayed exactly (what-if panels, WCPQ signatures).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd
from qlb.release_views import apply_view

CS: tuple[float, ...] = (0.01, 0.1, 1.0, 10.0)
MAX_ITER = 2000


def public_features(frame: pd.DataFrame) -> list[dict[str, float]]:
    out = []
    for role, chan, win, order in zip(frame["recipient_role"], frame["intake_channel"], frame["operating_window"],
                                      frame["candidate_order"]):
        d = {f"role={role}": 1.0, f"channel={chan}": 1.0, f"window={win}": 1.0}
        for i, c in enumerate(order):
            d[f"pos{i}={c}"] = 1.0
        out.append(d)
    return out


def release_features(frame: pd.DataFrame, classes: Sequence[str]) -> list[dict[str, float]]:
    """The fields the view releases (never the true class)."""
    out = []
    for status, choice, conf, probs in zip(frame["status"], frame["choice"], frame["confidence"],
                                           frame["probabilities"]):
        d: dict[str, float] = {"status_ok": 1.0 if status == "ok" else 0.0}
        if isinstance(choice, str):
            d[f"choice={choice}"] = 1.0
        if conf is not None and not (isinstance(conf, float) and math.isnan(conf)):
            d["has_confidence"] = 1.0
            d["confidence"] = float(conf)
        if isinstance(probs, dict):
            for c in classes:
                if c in probs and probs[c] is not None:
                    d[f"has_p={c}"] = 1.0
                    d[f"p={c}"] = float(probs[c])
        out.append(d)
    return out


def features(frame: pd.DataFrame, classes: Sequence[str]) -> list[dict[str, float]]:
    return [{**a, **b} for a, b in zip(public_features(frame), release_features(frame, classes))]


def candidate_ranks(frame: pd.DataFrame, classes: Sequence[str]) -> np.ndarray:
    """(n x k) position of each canonical class in the world's public candidate order."""
    pos = {c: i for i, c in enumerate(classes)}
    rank = np.empty((len(frame), len(classes)))
    for r, order in enumerate(frame["candidate_order"]):
        rank[r] = [list(order).index(c) if c in order else len(classes) + pos[c] for c in classes]
    return rank


def native_q(frame: pd.DataFrame, classes: Sequence[str]) -> np.ndarray | None:
    """The released vectors (canonical order) of available rows, or None when any available row
    lacks a complete vector (then the native candidate does not exist for this view)."""
    q = np.full((len(frame), len(classes)), 1.0 / len(classes))
    for r, (status, probs) in enumerate(zip(frame["status"], frame["probabilities"])):
        if status != "ok":
            continue
        if not isinstance(probs, dict) or any(probs.get(c) is None for c in classes):
            return None
        q[r] = [float(probs[c]) for c in classes]
    return q


@dataclass
class Recipient:
    """A frozen q(T | features): prior, native, or a linear-softmax map on named features."""

    name: str
    kind: str                                   # prior | native | logistic
    classes: tuple[str, ...]
    prior: np.ndarray | None = None
    feature_names: list[str] = field(default_factory=list)
    coef: np.ndarray | None = None              # k x d on raw (unstandardized) features
    intercept: np.ndarray | None = None

    def q(self, frame: pd.DataFrame, dicts: list[dict[str, float]] | None = None) -> np.ndarray:
        n = len(frame)
        if self.kind == "prior":
            return np.tile(self.prior, (n, 1))
        if self.kind == "native":
            q = native_q(frame, self.classes)
            if q is None:
                raise ValueError("the native candidate needs the full probability vector")
            return q
        dicts = features(frame, self.classes) if dicts is None else dicts
        index = {f: i for i, f in enumerate(self.feature_names)}
        x = np.zeros((n, len(index)))
        for r, d in enumerate(dicts):
            for key, v in d.items():
                j = index.get(key)
                if j is not None:
                    x[r, j] = v
        z = x @ self.coef.T + self.intercept
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def to_json(self) -> str:
        body: dict = {"name": self.name, "kind": self.kind, "classes": list(self.classes)}
        if self.prior is not None:
            body["prior"] = self.prior.tolist()
        if self.kind == "logistic":
            body.update(features=self.feature_names, coef=self.coef.tolist(), intercept=self.intercept.tolist())
        return json.dumps(body)

    @classmethod
    def from_json(cls, text: str) -> "Recipient":
        b = json.loads(text)
        return cls(b["name"], b["kind"], tuple(b["classes"]),
                   np.array(b["prior"]) if "prior" in b else None, b.get("features", []),
                   np.array(b["coef"]) if "coef" in b else None,
                   np.array(b["intercept"]) if "intercept" in b else None)


def fit_prior(train: pd.DataFrame, classes: Sequence[str]) -> Recipient:
    counts = np.array([(train["coarse"] == c).sum() for c in classes], dtype=float)
    prior = counts / counts.sum() if counts.sum() else np.full(len(classes), 1.0 / len(classes))
    return Recipient("empirical_prior", "prior", tuple(classes), prior)


def fit_logistic(dicts: list[dict[str, float]], y: np.ndarray, classes: Sequence[str], C: float) -> Recipient | None:
    """Standardized multinomial logistic regression, folded back onto raw features."""
    # scikit-learn is imported here, not at module level: replaying frozen recipients (pages,
    # WCPQ) needs only numpy, and the dashboard's pages load faster without it
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler
    if len(set(y.tolist())) < 2:
        return None
    vec = DictVectorizer(sparse=False)
    x = vec.fit_transform(dicts)
    scaler = StandardScaler().fit(x)
    scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
    lr = LogisticRegression(C=C, max_iter=MAX_ITER).fit((x - scaler.mean_) / scale, y)
    k = len(classes)
    coef = np.zeros((k, x.shape[1]))
    intercept = np.full(k, -30.0)                # classes never seen in training get ~0 mass
    w = lr.coef_ / scale
    b = lr.intercept_ - w @ scaler.mean_
    if len(lr.classes_) == 2:                     # binary: sklearn keeps one row for class 1
        w = np.vstack([-w[0] / 2, w[0] / 2])
        b = np.array([-b[0] / 2, b[0] / 2])
    for row, cls in enumerate(lr.classes_):
        coef[int(cls)] = w[row]
        intercept[int(cls)] = b[row]
    return Recipient(f"logistic C={C:g}", "logistic", tuple(classes), None, list(vec.feature_names_), coef, intercept)


def fit_candidates(frame: pd.DataFrame, view: str, classes: Sequence[str]) -> list[Recipient]:
    """Every candidate for one (model, domain, view), fitted on the training split's available
    worlds (the prior on every training world), in the fixed candidate order."""
    released = apply_view(frame, view)
    train = released[released["split"] == "train"]
    out = [fit_prior(train, classes)]
    if native_q(released, classes) is not None and view in ("full_probabilities", "full_native"):
        out.append(Recipient("native", "native", tuple(classes)))
    avail = train[train["status"] == "ok"]
    if len(avail):
        y = avail["coarse"].map({c: i for i, c in enumerate(classes)}).to_numpy()
        dicts = features(avail, classes)
        for C in CS:
            r = fit_logistic(dicts, y, classes, C)
            if r is not None:
                out.append(r)
    return out
