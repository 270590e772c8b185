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

The candidates are fitted by the scikit-learn-style estimators of
``qlb.tuple.recipient_estimators``; a fitted candidate is frozen as a ``Recipient``: a
serializable linear map from feature dicts to q, so a stored run's policies can be replayed
exactly (what-if panels, WCPQ signatures) with numpy alone (this module does not import
scikit-learn, so pages that replay policies load quickly).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from qlb.tuple.release_views import Vectorizer

CS: tuple[float, ...] = (0.01, 0.1, 1.0, 10.0)
MAX_ITER = 2000


def public_features(frame: pd.DataFrame) -> list[dict[str, float]]:
    """The categorical public fields a recipient sees: role, channel, window, candidate order."""
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
    """A recipient's feature dict per world: public fields plus the released fields."""
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


class SharedQ:
    """q of recipients on one frame, each distinct recipient computed once: a domain's frozen
    policies (3 tasks x each cost profile) share their view's few fitted candidates, and the
    feature dicts are built once (``dicts`` when given). Called with a recipient ``r`` it gives
    ``r.q(frame, dicts)``: the same array for every policy of one recipient, to be read, never
    written into."""

    def __init__(self, frame: pd.DataFrame, dicts: list[dict[str, float]] | None = None):
        self.frame, self.dicts = frame, dicts
        self.built: dict[tuple[str, ...], list[dict[str, float]]] = {}      # features per class order, when not given
        self.done: dict[int, tuple[Recipient, np.ndarray]] = {}

    def __call__(self, recipient: "Recipient") -> np.ndarray:
        hit = self.done.get(id(recipient))
        if hit is None:
            dicts = self.dicts
            if dicts is None and recipient.kind == "logistic":
                key = tuple(recipient.classes)
                dicts = self.built[key] = self.built.get(key) or features(self.frame, key)
            hit = self.done[id(recipient)] = (recipient, recipient.q(self.frame, dicts))   # kept: ids stay unique
        return hit[1]


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
        """(n x k) q(T | public, release) per world in canonical class order; ``dicts`` are the
        worlds' precomputed ``features`` (computed from ``frame`` when omitted)."""
        n = len(frame)
        if self.kind == "prior":
            return np.tile(self.prior, (n, 1))
        if self.kind == "native":
            q = native_q(frame, self.classes)
            if q is None:
                raise ValueError("the native candidate needs the full probability vector")
            return q
        dicts = features(frame, self.classes) if dicts is None else dicts
        x = Vectorizer.of(self.feature_names).transform(dicts)        # features it never saw are ignored
        z = x @ self.coef.T + self.intercept
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def to_json(self) -> str:
        """The frozen map as JSON (stored with the run in ``recipient_models``)."""
        body: dict = {"name": self.name, "kind": self.kind, "classes": list(self.classes)}
        if self.prior is not None:
            body["prior"] = self.prior.tolist()
        if self.kind == "logistic":
            body.update(features=self.feature_names, coef=self.coef.tolist(), intercept=self.intercept.tolist())
        return json.dumps(body)

    @classmethod
    def from_json(cls, text: str) -> "Recipient":
        """The recipient stored by ``to_json``."""
        b = json.loads(text)
        return cls(b["name"], b["kind"], tuple(b["classes"]),
                   np.array(b["prior"]) if "prior" in b else None, b.get("features", []),
                   np.array(b["coef"]) if "coef" in b else None,
                   np.array(b["intercept"]) if "intercept" in b else None)
