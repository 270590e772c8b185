"""Secret inference decoding (TUPLE.md section 4; paper 5.4, D.1-D.7).

For each (model, domain, view): 4-fold grouped cross-fitting on train (groups = pairs) gives
out-of-fold P(s1) for every base configuration; every configuration is then refit on all of
train. Candidates on validation: every base configuration, the equal-weight ensemble of each
family's best configuration (by out-of-fold accuracy), the equal-weight ensemble of all
configurations, a learned stack (logistic regression on the configurations' out-of-fold
log-odds), and each of these on every permitted nested subview. Selection: validation accuracy,
then validation log loss, then the fixed candidate order. The selection is frozen before the
test split is scored (``test_used_for_selection = False``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold

from qlb.tuple.decoders import base_library, feature_memo
from qlb.records.ontology import Ontology, load_ontology
from qlb.tuple.release_views import SUBVIEWS, VIEWS, apply_view, with_public_features

FOLDS = 4
EPS = 1e-15


def log_loss_per_world(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Per-world log loss of P(s1) against the true secret label, in nats (P clipped to [EPS, 1 - EPS])."""
    p = np.clip(p, EPS, 1 - EPS)
    return -(y * np.log(p) + (1 - y) * np.log(1 - p))


def correct(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    """1 where the decoder names the true mechanism (P > 0.5 names s1; a tie names s0)."""
    return ((p > 0.5).astype(int) == y).astype(float)


@dataclass
class Candidate:
    name: str
    view: str                 # the (sub)view whose release the candidate reads
    val: np.ndarray
    test: np.ndarray


@dataclass
class ViewFit:
    view: str
    names: list[str]
    families: list[str]
    oof: np.ndarray
    val: np.ndarray
    test: np.ndarray
    # ``view_candidates`` of this fit per training labels (their bytes), made once: a defended
    # release's attacker reuses the native control's fits of the views it leaves unchanged, and
    # their candidates (the stack's fit among them) are the same
    candidates: dict[bytes, list] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class Selection:
    view: str
    candidate: str
    candidate_view: str
    val_accuracy: float
    val_log_loss: float
    n_candidates: int
    test_p: np.ndarray


@dataclass
class DomainDecoding:
    """Everything one (model, domain) produced: per view the frozen selection and its test
    predictions, and every base configuration's fit (``fits``; out-of-fold rows in the order of
    ``train_world_ids``, validation and test rows in the order of ``val_world_ids`` and
    ``test_world_ids``)."""

    model: str
    domain: str
    test_world_ids: np.ndarray
    test_pair_ids: np.ndarray
    test_y: np.ndarray
    selections: dict[str, Selection] = field(default_factory=dict)
    fits: dict[str, ViewFit] = field(default_factory=dict)
    train_world_ids: np.ndarray | None = None
    val_world_ids: np.ndarray | None = None


def fit_view(train: pd.DataFrame, y: np.ndarray, val: pd.DataFrame, test: pd.DataFrame, view: str,
             classes: tuple[str, ...], mechanisms: tuple[str, ...], folds: int = FOLDS,
             families: set[str] | None = None, configs: set[str] | None = None) -> ViewFit:
    """Out-of-fold, validation and test P(s1) of every base configuration for one view (of
    ``families`` and named in ``configs`` when given)."""
    tr, va, te = (apply_view(f, view) for f in (train, val, test))
    lib = [(fam, name, est) for fam, name, est in base_library(view, classes, mechanisms)
           if (families is None or fam in families) and (configs is None or name in configs)]
    splits = grouped_folds(train, folds)
    oof = np.zeros((len(tr), len(lib)))
    pv = np.zeros((len(va), len(lib)))
    pt = np.zeros((len(te), len(lib)))
    folds_tr = [(tr.iloc[fit_idx], y[fit_idx], tr.iloc[out_idx], out_idx) for fit_idx, out_idx in splits]
    worlds = pd.concat([tr, va, te], ignore_index=True).drop_duplicates("world_id")     # proxies score val twice
    with feature_memo(view, worlds):     # configurations with the same features share them, encoded once
        for k, (_, _, est) in enumerate(lib):
            for fit_rows, fit_y, out_rows, out_idx in folds_tr:
                m = clone(est).fit(fit_rows, fit_y)
                oof[out_idx, k] = m.predict_proba(out_rows)[:, 1]
            m = clone(est).fit(tr, y)
            pv[:, k] = m.predict_proba(va)[:, 1]
            pt[:, k] = m.predict_proba(te)[:, 1]
    return ViewFit(view, [n for _, n, _ in lib], [f for f, _, _ in lib], oof, pv, pt)


def grouped_folds(train: pd.DataFrame, folds: int = FOLDS) -> list[tuple[np.ndarray, np.ndarray]]:
    """4-fold cross-fitting splits of the training worlds, grouped by pair (a pair never
    straddles folds)."""
    return list(GroupKFold(n_splits=folds).split(train, groups=train["pair_id"].to_numpy()))


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


def view_candidates(vf: ViewFit, y: np.ndarray) -> list[Candidate]:
    """Base configurations, family-winner ensemble, all-configuration ensemble and the stack
    (computed once per fit and labels: see ``ViewFit.candidates``)."""
    key = np.asarray(y).tobytes()
    if key not in vf.candidates:
        vf.candidates[key] = _view_candidates(vf, y)
    return list(vf.candidates[key])


def _view_candidates(vf: ViewFit, y: np.ndarray) -> list[Candidate]:
    cands = [Candidate(n, vf.view, vf.val[:, k], vf.test[:, k]) for k, n in enumerate(vf.names)]
    oof_acc = np.array([correct(y, vf.oof[:, k]).mean() for k in range(len(vf.names))])
    oof_ll = np.array([log_loss_per_world(y, vf.oof[:, k]).mean() for k in range(len(vf.names))])
    winners = []
    for fam in dict.fromkeys(vf.families):
        ks = [k for k, f in enumerate(vf.families) if f == fam]
        winners.append(min(ks, key=lambda k: (-oof_acc[k], oof_ll[k], k)))
    cands.append(Candidate("ensemble of family winners", vf.view, vf.val[:, winners].mean(axis=1),
                           vf.test[:, winners].mean(axis=1)))
    cands.append(Candidate("ensemble of all configurations", vf.view, vf.val.mean(axis=1), vf.test.mean(axis=1)))
    if len(set(y)) == 2:
        stack = LogisticRegression(C=1.0, max_iter=2000).fit(_logit(vf.oof), y)
        cands.append(Candidate("stack", vf.view, stack.predict_proba(_logit(vf.val))[:, 1],
                               stack.predict_proba(_logit(vf.test))[:, 1]))
    return cands


def select(candidates: list[Candidate], y_val: np.ndarray) -> tuple[int, float, float]:
    """Index of the candidate with the best validation accuracy, then log loss, then order."""
    scored = [(-correct(y_val, c.val).mean(), log_loss_per_world(y_val, c.val).mean(), i)
              for i, c in enumerate(candidates)]
    best = min(scored)
    return best[2], -best[0], best[1]


def labels(frame: pd.DataFrame) -> np.ndarray:
    """The secret label per world: 1 where the true mechanism is the pair's s1, else 0."""
    return (frame["mechanism"] == frame["hypothesis_1"]).to_numpy().astype(int)


def restrict(vf: ViewFit, families: set[str] | None) -> ViewFit:
    """The fit as if only ``families`` had been in the library: configurations are fitted
    independently, so dropping columns is exactly what a refit with fewer families gives."""
    if families is None:
        return vf
    ks = [k for k, f in enumerate(vf.families) if f in families]
    return ViewFit(vf.view, [vf.names[k] for k in ks], [vf.families[k] for k in ks], vf.oof[:, ks],
                   vf.val[:, ks], vf.test[:, ks])


def with_subviews(views: tuple[str, ...]) -> list[str]:
    """The views and every subview they may fall back to, each once, in first-seen order."""
    return list(dict.fromkeys(v for view in views for v in (view, *SUBVIEWS[view])))


def select_views(out: DomainDecoding, fits: dict[str, ViewFit], y_train: np.ndarray, y_val: np.ndarray,
                 views: tuple[str, ...]) -> DomainDecoding:
    """Candidates from the base fits of each view and its permitted subviews, selection on
    validation only (the test labels are not read), the chosen candidate's test predictions."""
    needed = with_subviews(views)
    pools = {v: view_candidates(fits[v], y_train) for v in needed}
    for view in views:
        pool = pools[view] + [c for sub in SUBVIEWS[view] for c in pools[sub]]
        idx, acc, ll = select(pool, y_val)
        chosen = pool[idx]
        out.selections[view] = Selection(view, chosen.name, chosen.view, acc, ll, len(pool), chosen.test)
    out.fits = {v: fits[v] for v in needed}
    return out


def split_frames(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Train, validation and test worlds of one (model, domain), each in world-id order."""
    frame = frame.sort_values("world_id").reset_index(drop=True)
    return tuple(frame[frame["split"] == s].reset_index(drop=True) for s in ("train", "validation", "test"))


def _result(model: str, domain: str, train: pd.DataFrame, val: pd.DataFrame, test: pd.DataFrame) -> DomainDecoding:
    """An empty result for one (model, domain) with its worlds' ids and test labels."""
    return DomainDecoding(model, domain, test["world_id"].to_numpy(), test["pair_id"].to_numpy(), labels(test),
                          train_world_ids=train["world_id"].to_numpy(), val_world_ids=val["world_id"].to_numpy())


def decode_domain(model: str, domain: str, frame: pd.DataFrame, views: tuple[str, ...] = VIEWS,
                  families: set[str] | None = None, reuse: dict[str, ViewFit] | None = None,
                  ontology: Ontology | None = None) -> DomainDecoding:
    """Decode one model's releases in one domain for every requested view (and the subviews
    they may fall back to). ``frame`` holds the domain's worlds with the model's response.
    ``reuse`` hands in fits of views whose fields the caller knows are unchanged (defended
    releases keep choice and confidence) and receives every fit made here. ``ontology``: the
    dataset's decision task (default TUPLE)."""
    dom = (ontology or load_ontology()).domain(domain)
    train, val, test = split_frames(with_public_features(frame))
    y_train, y_val = labels(train), labels(val)
    needed = with_subviews(views)
    reuse = {} if reuse is None else reuse
    for v in needed:
        if v not in reuse:
            reuse[v] = fit_view(train, y_train, val, test, v, dom.classes, dom.mechanisms, families=families)
    return select_views(_result(model, domain, train, val, test), {v: reuse[v] for v in needed}, y_train, y_val,
                        views)


def proxy_recovery(frame: pd.DataFrame, domain: str, view: str, configs: set[str],
                   ontology: Ontology | None = None) -> tuple[float, float]:
    """A proxy attacker's validation recovery and log loss on one view of one (model, domain)'s
    releases: the library's configurations named in ``configs`` fitted with grouped out-of-fold
    predictions, the candidates of ``view_candidates`` (their blends and stack included),
    selected on validation. Only train and validation are read (no subview fallback: a quick,
    independent attacker, as the learned WCPQ's seed selection needs)."""
    dom = (ontology or load_ontology()).domain(domain)
    train, val, _ = split_frames(with_public_features(frame))
    y_train, y_val = labels(train), labels(val)
    vf = fit_view(train, y_train, val, val, view, dom.classes, dom.mechanisms, configs=configs)
    _, acc, ll = select(view_candidates(vf, y_train), y_val)
    return acc, ll


def reselect(model: str, domain: str, frame: pd.DataFrame, fits: dict[str, ViewFit], views: tuple[str, ...],
             families: set[str] | None = None) -> DomainDecoding:
    """``decode_domain`` without fitting: candidates, selection and test scoring from stored base
    fits (rows in world-id order within each split), restricted to ``families``."""
    train, val, test = split_frames(frame)
    return select_views(_result(model, domain, train, val, test), {v: restrict(f, families) for v, f in fits.items()},
                        labels(train), labels(val), views)
