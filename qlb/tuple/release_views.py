"""Release views (TUPLE.md section 3) and the attacker's feature encoders (section 4).

Every view is derived from the one saved native response, without new calls; every view keeps
the status signal. Invalid responses enter as ``unavailable`` (no prediction field released).
"""
from __future__ import annotations

import json
import math
import re
from itertools import chain
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

VIEWS: tuple[str, ...] = ("no_output", "choice", "choice_confidence", "full_probabilities", "full_native")
# The decoder library's families, in library order (TUPLE.md section 4; qlb.tuple.decoders.base_library).
DECODER_FAMILIES: tuple[str, ...] = ("prior", "logistic", "forest", "shared_scorer", "template")
VIEW_FIELDS: dict[str, frozenset[str]] = {
    "no_output": frozenset(),
    "choice": frozenset({"choice"}),
    "choice_confidence": frozenset({"choice", "confidence"}),
    "full_probabilities": frozenset({"choice", "probabilities"}),
    "full_native": frozenset({"choice", "probabilities", "confidence"}),
}
# Nested subviews a view may fall back to in selection (TUPLE.md section 3), largest first.
SUBVIEWS: dict[str, tuple[str, ...]] = {
    "no_output": (),
    "choice": ("no_output",),
    "choice_confidence": ("choice", "no_output"),
    "full_probabilities": ("choice", "no_output"),
    "full_native": ("full_probabilities", "choice_confidence", "choice", "no_output"),
}
PROBABILITY_VIEWS = ("full_probabilities", "full_native")
REPRESENTATIONS = ("raw", "logratio", "residual")
TOKEN = re.compile(r"[a-z0-9]+")
CLIP = 1e-6


def release_columns(f: pd.DataFrame) -> pd.DataFrame:
    """Warehouse rows of worlds with a release -> the engine's types: candidate order as a list,
    probabilities as a map (missing stays None), choice None when missing, confidence float."""
    f = f.copy()
    f["candidate_order"] = f["candidate_order"].apply(list)
    f["probabilities"] = [json.loads(p) if isinstance(p, str) else None for p in f["probabilities"]]
    f["choice"] = f["choice"].astype(object).where(f["choice"].notna(), None)
    f["confidence"] = f["confidence"].astype(float)
    return f


def column(frame: pd.DataFrame, name: str) -> list:
    """A column's values as a list: iterating a list is several times faster than iterating a
    pandas column backed by Arrow (pandas' default for text) value by value."""
    return frame[name].tolist()


def apply_view(frame: pd.DataFrame, view: str) -> pd.DataFrame:
    """The release a recipient of ``view`` sees: fields outside the view are withheld (missing)."""
    fields = VIEW_FIELDS[view]
    out = frame.copy()
    if "choice" not in fields:
        out["choice"] = None
    if "confidence" not in fields:
        out["confidence"] = np.nan
    if "probabilities" not in fields:
        out["probabilities"] = None
    return out


def public_dicts(frame: pd.DataFrame) -> list[dict[str, float]]:
    """Field-prefixed raw unigram counts of request and case context, categorical public fields,
    candidate identity at each position. (Precomputed once per frame by ``with_public_features``.)"""
    if "_public" in frame.columns:
        return list(frame["_public"])
    out = []
    for req, ctx, role, chan, win, order in zip(*(column(frame, c) for c in (
            "request", "case_context", "recipient_role", "intake_channel", "operating_window", "candidate_order"))):
        d: dict[str, float] = {}
        for prefix, text in (("req", req), ("ctx", ctx)):
            for tok in TOKEN.findall(str(text).lower()):
                key = f"{prefix}:{tok}"
                d[key] = d.get(key, 0.0) + 1.0
        d[f"role={role}"] = 1.0
        d[f"channel={chan}"] = 1.0
        d[f"window={win}"] = 1.0
        for i, c in enumerate(order):
            d[f"pos{i}={c}"] = 1.0
        out.append(d)
    return out


def with_public_features(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with its public feature dicts computed once (they never depend on the view)."""
    out = frame.copy()
    out["_public"] = public_dicts(frame)
    return out


def condition_dicts(frame: pd.DataFrame) -> list[dict[str, float]]:
    """Authorized class T and the sorted hypothesis identities."""
    return [{f"T={t}": 1.0, f"H={h0}|{h1}": 1.0, f"h0={h0}": 1.0, f"h1={h1}": 1.0}
            for t, h0, h1 in zip(column(frame, "coarse"), column(frame, "hypothesis_0"), column(frame, "hypothesis_1"))]


def release_dicts(frame: pd.DataFrame, classes: Sequence[str], representation: str = "raw") -> list[dict[str, float]]:
    """Release-field features: status, selected label, availability indicators, observed numbers;
    log-ratio and residual representations add their transforms (never modifying the response).
    A ``_signature`` column (the public workflow signatures of a WCPQ release) adds one indicator
    per policy plan where the view shows the scores."""
    signatures = column(frame, "_signature") if "_signature" in frame.columns else [None] * len(frame)
    return [_release_features(status, choice, conf, probs, t, sig, classes, representation)
            for status, choice, conf, probs, t, sig in zip(*(column(frame, c) for c in (
                "status", "choice", "confidence", "probabilities", "coarse")), signatures)]


def _release_features(status: str, choice, conf, probs, t: str, sig, classes: Sequence[str],
                      representation: str) -> dict[str, float]:
    """One world's release-field features (see ``release_dicts``)."""
    d: dict[str, float] = {"status_ok": 1.0 if status == "ok" else 0.0}
    if isinstance(choice, str):
        d[f"choice={choice}"] = 1.0
        d["choice_is_T"] = 1.0 if choice == t else 0.0
    if conf is not None and not (isinstance(conf, float) and math.isnan(conf)):
        d["has_confidence"] = 1.0
        d["confidence"] = float(conf)
    if not isinstance(probs, dict):
        return d
    d["has_probabilities"] = 1.0
    for key in sig or ():                 # public workflow signatures (defense-aware WCPQ attacker)
        d[f"sig:{key}"] = 1.0
    for c in classes:
        if c in probs:
            d[f"has_p={c}"] = 1.0
            d[f"p={c}"] = float(probs[c])
    if representation == "logratio":
        d.update(_log_ratios(probs, classes))
    elif representation == "residual":
        d.update(_residual_shares(probs, classes, t))
    return d


def _log_ratios(probs: dict, classes: Sequence[str]) -> dict[str, float]:
    """log(p_c / p_ref) for every observed class against the first (reference) class."""
    ref = classes[0]
    if ref not in probs:
        return {}
    return {f"lr={c}": math.log(max(probs[c], CLIP) / max(probs[ref], CLIP)) for c in classes[1:] if c in probs}


def _residual_shares(probs: dict, classes: Sequence[str], t: str) -> dict[str, float]:
    """The residual mass 1 - p_T and each other class's share of it (TUPLE.md section 4)."""
    if t not in probs:
        return {}
    mass = max(0.0, 1.0 - float(probs[t]))
    d = {"resid_mass": mass, "resid_observed": 1.0, "resid_zero": 1.0 if mass <= 0 else 0.0}
    if mass > 0:
        d.update({f"prop={c}": float(probs[c]) / mass for c in classes if c != t and c in probs})
    return d


NUMERIC_PREFIXES = ("confidence", "p=", "lr=", "resid_mass", "prop=")


def quadratic(dicts: list[dict[str, float]], pair_keys: Iterable[str]) -> list[dict[str, float]]:
    """Squares and pairwise products of the numeric release features, and every release feature
    crossed with the hypothesis pair."""
    out = []
    for d, pair in zip(dicts, pair_keys):
        q = dict(d)
        nums = sorted(k for k in d if k.startswith(NUMERIC_PREFIXES))
        for i, a in enumerate(nums):
            for b in nums[i:]:
                q[f"{a}*{b}"] = d[a] * d[b]
        for k, v in d.items():
            q[f"{pair}:{k}"] = v
        out.append(q)
    return out


def merge(*parts: list[dict[str, float]]) -> list[dict[str, float]]:
    """Per row, the union of the feature dicts of ``parts`` (a later part wins on a shared key)."""
    return [{k: v for p in row for k, v in p.items()} for row in zip(*parts)]


class Vectorizer:
    """Dict features -> dense matrix, fitted on training rows only: the vocabulary is every key
    seen in training (sorted, as scikit-learn's DictVectorizer does); unseen keys are ignored at
    transform. Numeric values only; many times faster than DictVectorizer on these dicts (one
    vectorised lookup of every key instead of a Python step per value)."""

    @classmethod
    def of(cls, feature_names: Sequence[str]) -> "Vectorizer":
        """A vectorizer with a given vocabulary, in the given column order (a frozen model's)."""
        v = cls()
        v.feature_names_ = list(feature_names)
        v.index_ = pd.Index(v.feature_names_, dtype=object)
        return v

    def fit_transform(self, dicts: list[dict]) -> np.ndarray:
        """Learn the vocabulary (every key of ``dicts``, sorted) and return their dense matrix."""
        self.feature_names_ = sorted(set(chain.from_iterable(dicts)))
        self.index_ = pd.Index(self.feature_names_, dtype=object)      # object keys: no Arrow conversion per lookup
        return self.transform(dicts)

    def transform(self, dicts: list[dict]) -> np.ndarray:
        """The dense (rows x vocabulary) matrix of ``dicts``: absent keys are 0, keys outside the vocabulary are
        ignored."""
        rows, cols, known = self._cells(dicts)
        vals = np.fromiter(chain.from_iterable(d.values() for d in dicts), dtype=float, count=len(cols))
        out = np.zeros((len(dicts), len(self.index_)))
        out[rows[known], cols[known]] = vals[known]
        return out

    def presence(self, dicts: list[dict]) -> np.ndarray:
        """(rows x vocabulary) True where the row's dict holds the key (``transform`` writes 0 both for a key
        that is absent and for one whose value is 0)."""
        rows, cols, known = self._cells(dicts)
        out = np.zeros((len(dicts), len(self.index_)), dtype=bool)
        out[rows[known], cols[known]] = True
        return out

    def _cells(self, dicts: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each key of each dict in order: its row, its column (-1: not in the vocabulary) and whether it is known."""
        sizes = np.fromiter(map(len, dicts), dtype=np.int64, count=len(dicts))
        keys = pd.Index(list(chain.from_iterable(dicts)), dtype=object)   # as the vocabulary: a list would be
        cols = self.index_.get_indexer(keys)                               # made Arrow strings first (2x slower)
        return np.repeat(np.arange(len(dicts)), sizes), cols, cols >= 0
