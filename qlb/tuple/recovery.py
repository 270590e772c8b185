"""The decoding audit over a dataset: every (model, domain, view), in parallel, with
pair-clustered bootstrap intervals and paired view differences (TUPLE.md section 4)."""
from __future__ import annotations

import logging
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from qlb.records.ontology import Ontology
from qlb.stats.bootstrap import N_BOOT, SEED, PairResamples, pair_bootstrap, percentile_interval, resampled_means
from qlb.stats.parallel import Workers, domain_tasks, run_tasks
from qlb.stats.proportion import wilson
from qlb.tuple.decoding import (
    FOLDS, DomainDecoding, ViewFit, correct, decode_domain, log_loss_per_world, reselect, split_frames, with_subviews,
)
from qlb.tuple.release_views import VIEWS

log = logging.getLogger(__name__)

DIFFERENCES: tuple[tuple[str, str], ...] = (
    ("full_native", "choice"), ("choice_confidence", "choice"), ("full_probabilities", "choice"),
    ("full_native", "full_probabilities"), ("full_native", "choice_confidence"), ("choice", "no_output"),
    ("full_native", "no_output"),
)


def _decode_task(model: str, domain: str, frame: pd.DataFrame, views: tuple[str, ...],
                 families: set[str] | None, ontology: Ontology | None = None) -> DomainDecoding:
    return decode_domain(model, domain, frame, views, families, ontology=ontology)


def decodable(frame: pd.DataFrame) -> str | None:
    """Why one (model, domain) cannot be decoded (too few training pairs for 4 grouped folds, an
    empty validation or test split), or None."""
    train_pairs = frame.loc[frame["split"] == "train", "pair_id"].nunique()
    if train_pairs < FOLDS:
        return f"{train_pairs} training pairs; 4-fold grouped cross-fitting needs at least {FOLDS}"
    for split in ("validation", "test"):
        if not (frame["split"] == split).any():
            return f"no {split} worlds"
    return None


def run_decoding(frames: dict[str, pd.DataFrame], views: Sequence[str] = VIEWS, jobs: int | Workers = 1,
                 families: set[str] | None = None, progress: Callable[[int, int], None] | None = None,
                 skipped: dict[str, str] | None = None, ontology: Ontology | None = None) -> list[DomainDecoding]:
    """Decode every (model, domain) of ``frames`` (model -> worlds with that model's release).
    Domains that cannot be decoded are left out and named in ``skipped``."""
    tasks = domain_tasks(frames, decodable, "decoding", skipped)
    return run_tasks(_decode_task, [(m, d, f, tuple(views), families, ontology) for m, d, f in tasks], len(tasks),
                     jobs, progress)


def prediction_rows(results: list[DomainDecoding]) -> pd.DataFrame:
    """Per test world of every decoded (model, domain, view): P(s1), correct, log loss, candidate."""
    rows = []
    for r in results:
        for view, sel in r.selections.items():
            ok = correct(r.test_y, sel.test_p)
            ll = log_loss_per_world(r.test_y, sel.test_p)
            for wid, pid, p, c, l in zip(r.test_world_ids, r.test_pair_ids, sel.test_p, ok, ll):
                rows.append((r.model, view, "none", wid, r.domain, pid, float(p), bool(c), float(l),
                             f"{sel.candidate} [{sel.candidate_view}]"))
    return pd.DataFrame(rows, columns=["model", "view", "defense", "world_id", "domain", "pair_id", "p_s1",
                                       "correct", "log_loss", "candidate"])


def selection_rows(results: list[DomainDecoding]) -> pd.DataFrame:
    """Per (model, domain, view): the validation-selected candidate and its view, validation accuracy and log loss,
    and the number of candidates."""
    return pd.DataFrame([(r.model, r.domain, v, s.candidate, s.candidate_view, s.val_accuracy, s.val_log_loss,
                          s.n_candidates) for r in results for v, s in r.selections.items()],
                        columns=["model", "domain", "view", "candidate", "candidate_view", "val_accuracy",
                                 "val_log_loss", "n_candidates"])


def config_rows(results: list[DomainDecoding]) -> pd.DataFrame:
    """The library of each decoded view (``decoder_configs``): position, family, name."""
    seen: dict[str, ViewFit] = {}
    for r in results:
        for view, vf in r.fits.items():
            seen.setdefault(view, vf)
    return pd.DataFrame([(view, k, f, n) for view, vf in seen.items()
                         for k, (f, n) in enumerate(zip(vf.families, vf.names))],
                        columns=["view", "config", "family", "name"])


def config_score_rows(results: list[DomainDecoding]) -> pd.DataFrame:
    """Every base configuration's P(s1) per world (``decoder_config_scores``, one list per world in
    ``config_rows`` order): out-of-fold on train, refit on validation and test."""
    parts = []
    for r in results:
        for view, vf in r.fits.items():
            for split, ids, P in (("train", r.train_world_ids, vf.oof), ("validation", r.val_world_ids, vf.val),
                                  ("test", r.test_world_ids, vf.test)):
                parts.append(pd.DataFrame({"model": r.model, "domain": r.domain, "view": view, "split": split,
                                           "world_id": ids, "p_s1": list(P)}))
    columns = ["model", "domain", "view", "split", "world_id", "p_s1"]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)


def fits_from_scores(scores: pd.DataFrame, configs: pd.DataFrame, frame: pd.DataFrame
                     ) -> dict[str, dict[str, ViewFit]]:
    """domain -> view -> ViewFit rebuilt from ``decoder_config_scores`` rows of one model and the
    run's ``decoder_configs``, rows aligned with ``frame``'s worlds in world-id order per split."""
    out: dict[str, dict[str, ViewFit]] = {}
    for (domain, view), sub in scores.groupby(["domain", "view"], sort=True):
        lib = configs[configs["view"] == view].sort_values("config")
        mats = {}
        for split, worlds in zip(("train", "validation", "test"), split_frames(frame[frame["domain"] == domain])):
            ids = worlds["world_id"].tolist()
            rows = sub[sub["split"] == split].set_index("world_id")["p_s1"].reindex(ids)
            if rows.isna().any():
                raise ValueError(f"stored configuration scores of {domain}/{view} do not cover the "
                                 f"{split} worlds of this dataset")
            # one list per world: stacked at once (a lookup per world costs seconds over nine models)
            mats[split] = np.array(rows.tolist(), dtype=float).reshape(len(ids), len(lib))
        out.setdefault(domain, {})[view] = ViewFit(view, lib["name"].tolist(), lib["family"].tolist(),
                                                   mats["train"], mats["validation"], mats["test"])
    return out


def reselect_from_scores(scores: pd.DataFrame, configs: pd.DataFrame, frame: pd.DataFrame, model: str,
                         view: str, families: set[str] | None = None) -> list[DomainDecoding]:
    """The decoding protocol for one (model, view) restricted to ``families``, from a run's stored
    base-configuration scores: candidates, validation selection and test scoring as a refit
    with those families would give (``decode_domain`` with ``families``), without fitting."""
    fits = fits_from_scores(scores, configs, frame)
    needed = with_subviews((view,))
    out = []
    for domain in sorted(fits):
        missing = [v for v in needed if v not in fits[domain]]
        if missing:
            raise ValueError(f"the run has no configuration scores for {domain}/{', '.join(missing)}")
        out.append(reselect(model, domain, frame[frame["domain"] == domain], {v: fits[domain][v] for v in needed},
                            (view,), families))
    return out


def recovery_tables(predictions: pd.DataFrame, n_boot: int = N_BOOT, seed: int = SEED
                    ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Recovery per (model, view): pooled, domain macro-average and per domain, with pair-clustered
    percentile intervals; paired differences between views on the same worlds, same resamples."""
    rec_rows, diff_rows = [], []
    for model, sub in predictions.groupby("model", sort=True):
        rs = PairResamples.of(sub, n_boot, seed)                          # shared by every view
        domains = list(rs.domain_masks)
        per_view_pairs: dict[str, np.ndarray] = {}
        sizes = None
        for view, v in sub.groupby("view", sort=False):
            sums, sizes = rs.totals(v["pair_id"], v["correct"])
            per_view_pairs[view] = sums
            boot_pooled = resampled_means(sums, sizes, rs.W)
            # per domain: the same resamples restricted to the domain's pairs
            boot_dom = {d: resampled_means(sums, sizes, rs.W, m) for d, m in rs.domain_masks.items()}
            boot_macro = np.mean([boot_dom[d] for d in domains], axis=0)
            est_dom = {d: float((sums * m).sum() / (sizes * m).sum()) for d, m in rs.domain_masks.items()}
            ll = v.groupby("domain")["log_loss"].mean()
            for scope, est, boot, n, lloss in (
                ("pooled", float(sums.sum() / sizes.sum()), boot_pooled, len(v), float(v["log_loss"].mean())),
                ("macro", float(np.mean(list(est_dom.values()))), boot_macro, len(v), float(ll.mean())),
                *[(d, est_dom[d], boot_dom[d], int((v["domain"] == d).sum()), float(ll[d])) for d in domains],
            ):
                rec_rows.append((model, view, scope, est, *percentile_interval(boot), lloss, n))
        for a, b in DIFFERENCES:
            if a in per_view_pairs and b in per_view_pairs:
                d = per_view_pairs[a] - per_view_pairs[b]
                diff_rows.append((model, a, b, float(d.sum() / sizes.sum()),
                                  *percentile_interval(resampled_means(d, sizes, rs.W)), int(sizes.sum())))
    rec = pd.DataFrame(rec_rows, columns=["model", "view", "scope", "accuracy", "ci_low", "ci_high", "log_loss", "n"])
    diff = pd.DataFrame(diff_rows, columns=["model", "view_a", "view_b", "difference", "ci_low", "ci_high", "n"])
    return rec, diff


def recovery_by_class(predictions: pd.DataFrame, n_boot: int = N_BOOT, seed: int = SEED) -> pd.DataFrame:
    """Recovery per (model, domain, decision class) for one release view: which decisions leak. Both
    worlds of a pair share their class (they differ only in the mechanism), so each class's worlds
    are whole pairs and its interval is pair-clustered like every other (``pair_bootstrap``, the
    run's resample count and seed), widened to cover the Wilson score interval of the class's share
    over its number of pairs (the pair as one trial). A class holds few pairs: there the percentile
    bootstrap is too narrow, and at 0% or 100% (or when every pair has one world right) every
    resample gives the same share, "100.0% [100.0, 100.0]" from 4 pairs. The cover keeps the
    intervals in order (a perfect class's lower end never above a near-perfect one's) and counts a
    class as clear of guessing only where its pairs show it. ``predictions``: model, domain, class,
    pair_id, correct."""
    rows = []
    for (model, domain, cls), g in predictions.groupby(["model", "domain", "class"], sort=True):
        pairs, names = pd.factorize(g["pair_id"])
        est = pair_bootstrap(g["correct"].to_numpy(float), pairs, n_boot, seed)
        low, high = (float(b) for b in wilson(est.estimate * len(names), len(names)))
        rows.append((model, domain, cls, est.estimate, min(est.ci_low, low), max(est.ci_high, high), len(g)))
    return pd.DataFrame(rows, columns=["model", "domain", "class", "accuracy", "ci_low", "ci_high", "n"])


def coarse_correct(worlds: pd.DataFrame) -> np.ndarray:
    """Per world, whether the released choice is the world's true coarse class T (``status``,
    ``choice``, ``coarse``); an unavailable or invalid response (status not ``ok``) is not correct."""
    return ((worlds["status"] == "ok") & (worlds["choice"] == worlds["coarse"])).to_numpy(dtype=bool)


def coarse_accuracy(frames: dict[str, pd.DataFrame], predictions: pd.DataFrame, n_boot: int = N_BOOT,
                    seed: int = SEED) -> pd.DataFrame:
    """Test coarse accuracy per model (paper Tables 22, 24): on the decoding audit's test worlds
    (``predictions``), the share whose released choice is the true coarse class; an unavailable
    response counts as wrong. Pooled, macro and per domain, with the recovery intervals (the same
    pair resamples)."""
    rows = []
    for model, sub in predictions.groupby("model", sort=True):
        worlds = sub.drop_duplicates("world_id")[["world_id", "pair_id", "domain"]]
        f = frames[model].set_index("world_id").loc[worlds["world_id"]]
        rows.append(worlds.assign(model=model, view="coarse", correct=coarse_correct(f), log_loss=np.nan))
    if not rows:
        return pd.DataFrame(columns=["model", "scope", "accuracy", "ci_low", "ci_high", "n"])
    rec, _ = recovery_tables(pd.concat(rows, ignore_index=True), n_boot, seed)
    return rec.drop(columns=["view", "log_loss"])


def coarse_json(coarse: pd.DataFrame) -> dict:
    """``coarse_accuracy`` of ``qlb audit --json``: pooled, per model."""
    pooled = coarse[coarse["scope"] == "pooled"]
    return {r.model: {"accuracy": float(r.accuracy), "ci_low": float(r.ci_low), "ci_high": float(r.ci_high),
                      "n": int(r.n)} for r in pooled.itertuples(index=False)}


def recovery_json(rec: pd.DataFrame) -> dict:
    """``recovery`` of ``qlb audit --json`` (CONTRACT.md section 2)."""
    out: dict = {}
    for (model, view), sub in rec.groupby(["model", "view"], sort=True):
        s = sub.set_index("scope")
        pooled = s.loc["pooled"]
        out.setdefault(model, {})[view] = {
            "accuracy": float(pooled["accuracy"]), "ci_low": float(pooled["ci_low"]),
            "ci_high": float(pooled["ci_high"]), "log_loss": float(pooled["log_loss"]), "n": int(pooled["n"]),
            "by_domain": {d: {"accuracy": float(s.loc[d, "accuracy"]), "n": int(s.loc[d, "n"])}
                          for d in s.index if d not in ("pooled", "macro")},
        }
    return out
