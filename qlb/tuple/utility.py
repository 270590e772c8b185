"""Downstream utility over a dataset (TUPLE.md section 5): for every (model, domain, view) fit the
recipient candidates on train, select candidate (and, for selective routing, the review factor)
by validation mean cost under each (task, profile), freeze, then replay on test.

Results: per-world actions, mean cost with pair-clustered intervals (pooled and per domain),
automatic coverage and routed error (selective), clarification frequency, the oracle-T bound,
paired (view - full native) differences with the non-inferiority mark at delta = 0.1.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from qlb.stats.bootstrap import N_BOOT, SEED, PairResamples, percentile_interval, resampled_means
from qlb.tuple.costs import PROFILES, CostProfile, DomainCosts, domain_costs
from qlb.records.ontology import Ontology, load_ontology
from qlb.stats.parallel import Workers, domain_tasks, missing_splits, run_tasks
from qlb.tuple.recipients import Recipient, candidate_ranks, features
from qlb.tuple.release_views import VIEWS, apply_view
from qlb.tuple.workflows import FACTORS, TASKS, Outcome, action_labels, oracle_cost, run_task

DELTA = 0.1
REFERENCE_VIEW = "full_native"


@dataclass
class Selected:
    """The frozen policy of one (model, domain, view, task, profile) and its test outcome."""

    model: str
    domain: str
    view: str
    task: str
    profile: str
    recipient: Recipient
    factor: float | None
    val_cost: float
    n_candidates: int
    outcome: Outcome
    costs: DomainCosts


@dataclass
class DomainUtility:
    model: str
    domain: str
    test: pd.DataFrame                               # test worlds (world_id, pair_id, coarse, ...)
    t: np.ndarray
    available: np.ndarray
    selected: list[Selected] = field(default_factory=list)
    candidates: dict[str, list[Recipient]] = field(default_factory=dict)


@dataclass
class Split:
    frame: pd.DataFrame
    rank: np.ndarray
    available: np.ndarray
    t: np.ndarray


def _split(frame: pd.DataFrame, classes: Sequence[str]) -> Split:
    idx = {c: i for i, c in enumerate(classes)}
    return Split(frame, candidate_ranks(frame, classes), (frame["status"] == "ok").to_numpy(),
                 frame["coarse"].map(idx).to_numpy())


def profile_costs(domain: str, profiles: Iterable[CostProfile | str], **overrides) -> dict[str, DomainCosts]:
    """One domain's costs under each profile (a name or a CostProfile), keyed by profile name; ``overrides`` go to
    ``domain_costs``."""
    out = {}
    for p in profiles:
        prof = CostProfile.named(p, overrides.get("ontology")) if isinstance(p, str) else p
        out[prof.name] = domain_costs(domain, prof, **overrides)
    return out


def select_policy(candidates: list[tuple[Recipient, np.ndarray]], val: Split, task: str,
                  costs: DomainCosts) -> tuple[Recipient, float | None, float]:
    """Lowest validation mean cost; ties go to the earlier candidate (fixed order), then to the
    review factor closest to 1.0, then the smaller factor."""
    best: tuple[float, int, float, float] | None = None
    chosen: tuple[Recipient, float | None, float] | None = None
    factors = sorted(FACTORS, key=lambda f: (abs(f - 1.0), f)) if task == "selective" else [None]
    for order, (rec, q_val) in enumerate(candidates):
        for f_rank, f in enumerate(factors):
            cost = run_task(task, q_val, val.rank, val.available, val.t, costs, f or 1.0).cost.mean()
            key = (round(float(cost), 12), order, f_rank, 0.0)
            if best is None or key < best:
                best, chosen = key, (rec, f, float(cost))
    assert chosen is not None
    return chosen


@dataclass
class Prepared:
    """The cost-independent part of one (model, domain): fitted recipient candidates per view and
    their q on validation and test. Replaying costs needs no refit."""

    model: str
    domain: str
    val: Split
    test: Split
    test_ids: pd.DataFrame
    candidates: dict[str, tuple[list[tuple[Recipient, np.ndarray]], dict[str, np.ndarray]]]
    ontology: Ontology | None = None             # the dataset's decision task (None: TUPLE)


def prepare_domain(model: str, domain: str, frame: pd.DataFrame, views: Sequence[str] = VIEWS,
                   fitted: dict[str, list[Recipient]] | None = None, ontology: Ontology | None = None) -> Prepared:
    """Fit every candidate of every view on train (or take the frozen ``fitted`` candidates of a
    stored run: the fits never depend on costs); q on validation and test."""
    # scikit-learn only where candidates are fitted: the what-if panel replays frozen ones
    from qlb.tuple.recipient_estimators import fit_candidates
    classes = (ontology or load_ontology()).domain(domain).classes
    val_f = frame[frame["split"] == "validation"]
    test_f = frame[frame["split"] == "test"]
    prep = Prepared(model, domain, _split(val_f, classes), _split(test_f, classes),
                    test_f[["world_id", "pair_id", "domain", "coarse"]].reset_index(drop=True), {}, ontology)
    for view in views:
        recipients = fitted[view] if fitted is not None else fit_candidates(frame, view, classes)
        val_rel, test_rel = apply_view(val_f, view), apply_view(test_f, view)
        val_dicts, test_dicts = features(val_rel, classes), features(test_rel, classes)
        prep.candidates[view] = ([(r, r.q(val_rel, val_dicts)) for r in recipients],
                                 {r.name: r.q(test_rel, test_dicts) for r in recipients})
    return prep


def replay(prep: Prepared, profiles: Sequence[CostProfile | str] = PROFILES, tasks: Sequence[str] = TASKS,
           **overrides) -> DomainUtility:
    """Select (on validation) and replay (on test) every (view, task, profile) of a prepared domain."""
    overrides.setdefault("ontology", prep.ontology)
    costs = profile_costs(prep.domain, profiles, **overrides)
    test = prep.test
    result = DomainUtility(prep.model, prep.domain, prep.test_ids, test.t, test.available,
                           candidates={v: [r for r, _ in qv] for v, (qv, _) in prep.candidates.items()})
    for view, (q_val, q_test) in prep.candidates.items():
        for task in tasks:
            for pname, c in costs.items():
                rec, factor, vcost = select_policy(q_val, prep.val, task, c)
                out = run_task(task, q_test[rec.name], test.rank, test.available, test.t, c, factor or 1.0)
                result.selected.append(Selected(prep.model, prep.domain, view, task, pname, rec, factor, vcost,
                                                len(q_val), out, c))
    return result


def utility_domain(model: str, domain: str, frame: pd.DataFrame, views: Sequence[str] = VIEWS,
                   profiles: Sequence[CostProfile | str] = PROFILES, tasks: Sequence[str] = TASKS,
                   **overrides) -> DomainUtility:
    """Fit, select and replay every (view, task, profile) of one (model, domain); ``overrides``
    go to ``domain_costs`` (``ontology``: the dataset's decision task, default TUPLE)."""
    return replay(prepare_domain(model, domain, frame, views, ontology=overrides.get("ontology")), profiles, tasks,
                  **overrides)


def run_utility(frames: dict[str, pd.DataFrame], views: Sequence[str] = VIEWS, jobs: int | Workers = 1,
                progress: Callable[[int, int], None] | None = None, skipped: dict[str, str] | None = None,
                profiles: Sequence[CostProfile | str] = PROFILES, **overrides) -> list[DomainUtility]:
    """Every (model, domain) of ``frames`` (model -> that model's worlds, as for decoding)."""
    tasks = domain_tasks(frames, missing_splits, "utility", skipped)
    return run_tasks(partial(utility_domain, **overrides),
                     [(m, d, f, tuple(views), tuple(profiles), TASKS) for m, d, f in tasks], len(tasks), jobs, progress)


# ---------------------------------------------------------------- tables

ACTION_COLUMNS = ("model", "view", "task", "profile", "world_id", "domain", "pair_id", "available", "plan",
                  "check_name", "check_answer", "final_action", "routed", "route_correct", "cost", "oracle_cost",
                  "policy")


def action_rows(results: list[DomainUtility], ontology: Ontology | None = None) -> pd.DataFrame:
    """policy_actions: one row per test world x (model, view, task, profile). The columns are
    gathered as lists and arrays and the frame is built once (a frame per selection cost more
    than everything else here)."""
    ont = ontology or load_ontology()
    cols: dict[str, list] = {c: [] for c in ACTION_COLUMNS}
    for r in results:
        dom = ont.domain(r.domain)
        check_of = {cls: name for name, cls in dom.checks.items()}
        classes = dom.classes
        world_ids, pair_ids = r.test["world_id"].tolist(), r.test["pair_id"].tolist()
        n = len(world_ids)
        for s in r.selected:
            o = s.outcome
            final = o.final_route(r.t)
            routed = o.available & (final >= 0) & (final < len(classes))
            for c, v in (("model", s.model), ("view", s.view), ("task", s.task), ("profile", s.profile),
                         ("domain", r.domain), ("policy", s.recipient.name)):
                cols[c].append([v] * n)
            cols["world_id"].append(world_ids)
            cols["pair_id"].append(pair_ids)
            cols["available"].append(np.asarray(o.available, bool))
            cols["plan"].append(action_labels(o, classes, dict(dom.checks)))
            cols["check_name"].append([check_of[classes[f]] if c else None for f, c in zip(o.first, o.checked)])
            cols["check_answer"].append([bool(y == t) if c else None for y, t, c in zip(o.route_yes, r.t, o.checked)])
            cols["final_action"].append([_final_label(f, classes, s.task) for f in final])
            cols["routed"].append(np.asarray(routed, bool))
            cols["route_correct"].append(np.where(routed, final == r.t, False))
            cols["cost"].append(np.asarray(o.cost, float))
            cols["oracle_cost"].append(np.asarray(oracle_cost(s.task, o.available, r.t, s.costs), float))
    if not cols["model"]:
        return pd.DataFrame()
    return pd.DataFrame({c: np.concatenate(parts) if isinstance(parts[0], np.ndarray)
                         else pd.Series([v for part in parts for v in part],
                                        dtype=object if c in ("check_name", "check_answer") else None)
                         for c, parts in cols.items()})


def _final_label(f: int, classes: tuple[str, ...], task: str) -> str:
    if f == -2:
        return "trusted review (fallback)"
    if f == -1:
        return "trusted review"
    if f == len(classes):
        return "general inspection"
    return f"route {classes[f]}"


def policy_rows(results: list[DomainUtility]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """utility_policies (the frozen selection per (model, domain, view, task, profile)) and
    recipient_models (every fitted candidate, serialized once: what-if replays and WCPQ reuse them)."""
    rows, models = [], {}
    for r in results:
        for s in r.selected:
            rows.append((s.model, s.domain, s.view, s.task, s.profile, s.recipient.name, s.factor, s.val_cost,
                         s.n_candidates))
        for view, recipients in r.candidates.items():
            for rec in recipients:
                models[(r.model, r.domain, view, rec.name)] = rec.to_json()
    pol = pd.DataFrame(rows, columns=["model", "domain", "view", "task", "profile", "policy", "review_factor",
                                      "val_cost", "n_candidates"])
    rec = pd.DataFrame([(*k, v) for k, v in models.items()], columns=["model", "domain", "view", "policy", "spec"])
    return pol, rec


def result_tables(actions: pd.DataFrame, n_boot: int = N_BOOT, seed: int = SEED,
                  reference: str = REFERENCE_VIEW) -> tuple[pd.DataFrame, pd.DataFrame]:
    """utility_results (pooled and per domain, pair-clustered intervals) and utility_differences
    (each view minus ``reference`` on the same worlds and resamples, non-inferiority at DELTA)."""
    res_rows, diff_rows = [], []
    for model, sub in actions.groupby("model", sort=True):
        rs = PairResamples.of(sub, n_boot, seed)
        pair_costs: dict[tuple[str, str, str], tuple[np.ndarray, np.ndarray]] = {}
        for (view, task, profile), v in sub.groupby(["view", "task", "profile"], sort=True):
            sums, sizes = rs.totals(v["pair_id"], v["cost"])
            pair_costs[(view, task, profile)] = (sums, sizes)
            # numpy from here: selecting rows of the frame per scope cost more than the bootstrap
            cost, oracle = v["cost"].to_numpy(float), v["oracle_cost"].to_numpy(float)
            available = v["available"].to_numpy(bool)
            routed = v["routed"].to_numpy(bool)
            right = v["route_correct"].to_numpy(bool)
            checked = v["check_name"].notna().to_numpy()
            domain = v["domain"].to_numpy(object)
            for scope, mask, pm in (("pooled", np.ones(len(v), bool), None),
                                    *[(d, domain == d, m) for d, m in rs.domain_masks.items()]):
                n = int(mask.sum())
                lo, hi = percentile_interval(resampled_means(sums, sizes, rs.W, pm))
                n_routed = int(routed[mask].sum())
                res_rows.append((
                    model, view, task, profile, scope, float(cost[mask].mean()), lo, hi,
                    float(oracle[mask].mean()),
                    float(n_routed / n) if task == "selective" else None,
                    float(1 - right[mask & routed].mean()) if task == "selective" and n_routed else None,
                    float(checked[mask].mean()) if task == "clarification" else None,
                    float(1 - available[mask].mean()), n))
        for (view, task, profile), (sums, sizes) in pair_costs.items():
            ref = pair_costs.get((reference, task, profile))
            if view == reference or ref is None:
                continue
            d = sums - ref[0]
            lo, hi = percentile_interval(resampled_means(d, sizes, rs.W))
            diff_rows.append((model, view, reference, task, profile, float(d.sum() / sizes.sum()), lo, hi,
                              bool(hi <= DELTA), int(sizes.sum())))
    res = pd.DataFrame(res_rows, columns=["model", "view", "task", "profile", "scope", "mean_cost", "ci_low", "ci_high",
                                          "oracle_cost", "coverage", "routed_error", "clarification_rate",
                                          "fallback_rate", "n"])
    diff = pd.DataFrame(diff_rows, columns=["model", "view_a", "view_b", "task", "profile", "difference", "ci_low",
                                            "ci_high", "noninferior", "n"])
    return res, diff


def utility_json(res: pd.DataFrame) -> dict:
    """``utility`` of ``qlb audit --json`` (CONTRACT.md section 2): pooled mean cost per
    model, view, task, profile."""
    out: dict = {}
    pooled = res[res["scope"] == "pooled"]
    for row in pooled.itertuples(index=False):
        out.setdefault(row.model, {}).setdefault(row.view, {}).setdefault(row.task, {})[row.profile] = {
            "mean_cost": float(row.mean_cost), "ci_low": float(row.ci_low), "ci_high": float(row.ci_high)}
    return out


def noninferior_json(diff: pd.DataFrame) -> dict:
    """``noninferior`` of ``qlb audit --json``: per model, lower-information view, task and profile,
    whether the view is non-inferior to full native (upper 95% bound of the paired cost difference
    at most delta = 0.1)."""
    out: dict = {}
    for row in diff[diff["view_b"] == "full_native"].itertuples(index=False):
        out.setdefault(row.model, {}).setdefault(row.view_a, {}).setdefault(row.task, {})[row.profile] = \
            bool(row.noninferior)
    return out


def stored_candidates(rows: pd.DataFrame) -> dict[tuple[str, str], dict[str, list[Recipient]]]:
    """recipient_models rows -> {(model, domain): {view: [Recipient, ...] in candidate order}}."""
    order = {"empirical_prior": 0, "native": 1}
    out: dict[tuple[str, str], dict[str, list[Recipient]]] = {}
    for (model, domain, view), sub in rows.groupby(["model", "domain", "view"], sort=True):
        recs = [Recipient.from_json(spec) for spec in sub["spec"]]
        recs.sort(key=lambda r: (order.get(r.name, 2), r.prior is None, _c_of(r.name)))
        out.setdefault((model, domain), {})[view] = recs
    return out


def _c_of(name: str) -> float:
    return float(name.split("C=")[1]) if "C=" in name else 0.0


def whatif(prepared: Sequence[Prepared], *, wrong_route: float | None = None, review: float | None = None,
           check: float | None = None, columns: dict | None = None, n_boot: int = N_BOOT, seed: int = SEED,
           tasks: Sequence[str] = TASKS) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Re-select and replay prepared domains under edited authored costs (one custom profile,
    named ``what-if``); the same tables as the stored run."""
    profile = CostProfile("what-if")
    results = [replay(p, (profile,), tasks, wrong_route=wrong_route, review=review, check=check, columns=columns)
               for p in prepared]
    return result_tables(action_rows(results), n_boot, seed)
