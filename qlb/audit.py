"""Running the audits a dataset's data allows and storing them as one run in the warehouse.

Refusal (issue 3), QuasiLeak detector scores (issue 7), secret inference decoding (issue 4),
downstream utility and privacy-utility fronts (issue 5), output defenses and WCPQ (issue 6).
Whatever the data does not allow is skipped and named in ``skipped``.
"""
from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import duckdb
import pandas as pd

from qlb import refusal
from qlb.decoding_run import (
    config_rows, config_score_rows, decoding_frame, prediction_rows, recovery_json, recovery_tables, run_decoding,
    selection_rows,
)
from qlb.quasileak import METRIC_KEYS
from qlb.release_views import VIEWS
from qlb.quasileak_run import load_corpus, load_predictions, score_tables, scoring_split
from qlb.fronts import front_points
from qlb.utility import action_rows, policy_rows, result_tables, run_utility, utility_json
from qlb import defense_run
from qlb.wcpq import policies_from_selection
from warehouse import queries
from warehouse.results import dataset_fingerprint, now, store_run

log = logging.getLogger(__name__)


@dataclass
class AuditRun:
    run_id: str
    dataset_id: str
    reused: bool
    refusal_summary: pd.DataFrame | None = None
    ql_scores: pd.DataFrame | None = None
    recovery: pd.DataFrame | None = None
    differences: pd.DataFrame | None = None
    selections: pd.DataFrame | None = None
    utility: pd.DataFrame | None = None
    utility_differences: pd.DataFrame | None = None
    fronts: pd.DataFrame | None = None
    defenses: pd.DataFrame | None = None
    defense_costs: pd.DataFrame | None = None
    skipped: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"run_id": self.run_id, "dataset": self.dataset_id,
                               "test_used_for_selection": False, "reused_existing_run": self.reused}
        if self.recovery is not None:
            out["recovery"] = recovery_json(self.recovery)
        if self.utility is not None:
            out["utility"] = utility_json(self.utility)
        if self.defenses is not None:
            out["defenses"] = defense_run.defenses_json(self.defenses)
        if self.refusal_summary is not None:
            out["refusal"] = refusal.to_contract_json(self.refusal_summary)
        if self.ql_scores is not None:
            out["quasileak"] = quasileak_json(self.ql_scores)
        out["skipped"] = self.skipped
        return out


def load_refusal_input(con: duckdb.DuckDBPyConnection, dataset_id: str, models: Sequence[str] | None) -> pd.DataFrame:
    frame = queries.fetch_df(con, "refusal_audit_input", [dataset_id])
    if models:
        frame = frame[frame["model"].isin(models)]
    return frame


def run_audits(con: duckdb.DuckDBPyConnection, dataset_id: str, models: Sequence[str] | None = None,
               force: bool = False, decode: bool = True, views: Sequence[str] = VIEWS, jobs: int = 1,
               families: set[str] | None = None, progress: Callable[[str, int, int], None] | None = None,
               utility: bool = True, defenses: bool = True, defense_models: Sequence[str] | None = None,
               defense_families: set[str] | None = None) -> AuditRun:
    """Run every audit the dataset allows and store it as one run (read-write handle).

    Without ``force``, an earlier run over exactly the same data and parameters is reused.
    ``decode=False`` skips the (slow) decoding audit (and so the fronts); ``utility=False`` the
    downstream utility (and so the defenses, which need its frozen policies); ``defenses=False``
    the defense audit; ``defense_models`` restricts it to some models (default: all) and
    ``defense_families`` sets its decoder families (default: prior, logistic, template);
    ``families`` restricts the decoder library (default: all five families, as specified)."""
    if queries.fetch_df(con, "dataset_by_id", [dataset_id]).empty:
        raise ValueError(f"no dataset {dataset_id!r} in the warehouse")
    unknown = [v for v in views if v not in VIEWS]
    if unknown:
        raise ValueError(f"unknown view(s) {', '.join(unknown)}; expected {', '.join(VIEWS)}")
    run_defenses = defenses and decode and utility
    params = {"audits": ["refusal", "quasileak"] + (["decoding"] if decode else []) + (["utility"] if utility else [])
              + (["defenses"] if run_defenses else []),
              "defense_models": sorted(defense_models) if (run_defenses and defense_models) else None,
              "defense_families": sorted(defense_families or defense_run.DEFENSE_FAMILIES) if run_defenses else None,
              "models": sorted(models) if models else None, "quasileak_split": "test", "n_boot": 2000,
              "seed": 20261011, "views": list(views) if decode else None,
              "families": sorted(families) if (decode and families) else None}
    fingerprint = dataset_fingerprint(con, dataset_id)
    if not force:
        earlier = queries.fetch_df(con, "latest_run_of_fingerprint",
                                   [dataset_id, "audit", fingerprint, json.dumps(params, sort_keys=True)])
        if not earlier.empty:
            run_id = str(earlier["run_id"][0])
            summary = queries.fetch_df(con, "refusal_results", [run_id])
            ql = queries.fetch_df(con, "ql_scores", [run_id])
            rec = queries.fetch_df(con, "recovery_results", [run_id])
            util = queries.fetch_df(con, "utility_results", [run_id])
            dres = queries.fetch_df(con, "defense_results", [run_id])
            run = AuditRun(run_id, dataset_id, True, summary if not summary.empty else None,
                           ql if not ql.empty else None, rec if not rec.empty else None,
                           utility=util if not util.empty else None, defenses=dres if not dres.empty else None)
            if summary.empty:
                run.skipped["refusal"] = "no refusal responses in this dataset"
            if ql.empty:
                run.skipped["quasileak"] = "no QuasiLeak corpus with detector predictions in this dataset"
            return run
    started = now()
    run_id = f"run-{started:%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
    run = AuditRun(run_id, dataset_id, False)
    tables: dict[str, pd.DataFrame] = {}
    inputs = load_refusal_input(con, dataset_id, models)
    if inputs.empty:
        run.skipped["refusal"] = "no refusal responses in this dataset"
    else:
        scored = refusal.score_responses(inputs)
        run.refusal_summary = refusal.summarize(scored)
        tables["refusal_results"] = run.refusal_summary
        tables["refusal_outcomes"] = scored.frame[["model", "world_id", "domain", "mechanism", "choice",
                                                   "outcome", "residual_winner", "choice_not_argmax"]]
    corpus = load_corpus(con, dataset_id)
    predictions = load_predictions(con, dataset_id) if corpus else {}
    if not corpus:
        run.skipped["quasileak"] = "no QuasiLeak corpus in this dataset"
    elif not predictions:
        run.skipped["quasileak"] = "the corpus has no detector predictions (run `qlb quasileak run` or ingest some)"
    else:
        split = scoring_split(corpus, params["quasileak_split"])
        run.ql_scores = score_tables(corpus, predictions, split, params["n_boot"], params["seed"])
        tables["ql_scores"] = run.ql_scores
    all_models = queries.fetch_df(con, "models_with_responses", [dataset_id])["model"].tolist()
    chosen = [m for m in all_models if not models or m in models]
    frames = {m: decoding_frame(con, dataset_id, m) for m in chosen} if (decode or utility) else {}
    if not decode:
        run.skipped["decoding"] = "not requested (decode=False)"
    elif not chosen:
        run.skipped["decoding"] = "no native responses in this dataset"
    else:
        step = (lambda done, total: progress("decoding", done, total)) if progress else None
        results = run_decoding(frames, views, jobs, families, step, skipped=run.skipped)
        if results:
            preds = prediction_rows(results)
            run.recovery, run.differences = recovery_tables(preds, params["n_boot"], params["seed"])
            run.selections = selection_rows(results)
            tables.update({"decoder_predictions": preds, "decoder_selections": run.selections,
                           "decoder_configs": config_rows(results),
                           "decoder_config_scores": config_score_rows(results),
                           "recovery_results": run.recovery, "recovery_differences": run.differences})
    if not utility:
        run.skipped["utility"] = "not requested (utility=False)"
    elif not chosen:
        run.skipped["utility"] = "no native responses in this dataset"
    else:
        step = (lambda done, total: progress("utility", done, total)) if progress else None
        results_u = run_utility(frames, views, jobs, step, skipped=run.skipped)
        if results_u:
            actions = action_rows(results_u)
            run.utility, run.utility_differences = result_tables(actions, params["n_boot"], params["seed"])
            policies, recipients = policy_rows(results_u)
            tables.update({"policy_actions": actions, "utility_policies": policies, "recipient_models": recipients,
                           "utility_results": run.utility, "utility_differences": run.utility_differences})
    if run.recovery is not None and run.utility is not None:
        run.fronts = front_points(run.recovery, run.utility)
        tables["front_points"] = run.fronts
    else:
        run.skipped["fronts"] = "needs both the decoding audit and the utility audit in the same run"
    if not run_defenses:
        run.skipped["defenses"] = "needs both the decoding audit and the utility audit (and defenses=True)"
    elif run.utility is None:
        run.skipped["defenses"] = "no utility results to take the frozen full-native policies from"
    else:
        targets = [m for m in chosen if not defense_models or m in defense_models]
        policies = {m: policies_from_selection([s for r in results_u if r.model == m for s in r.selected])
                    for m in targets}
        step = (lambda done, total: progress("defenses", done, total)) if progress else None
        dres = defense_run.run_defenses({m: frames[m] for m in targets}, policies, jobs,
                                        frozenset(defense_families or defense_run.DEFENSE_FAMILIES),
                                        progress=step, skipped=run.skipped)
        if dres:
            dpreds = defense_run.prediction_rows(dres)
            run.defenses, run.defense_costs = defense_run.result_tables(dres, dpreds, params["n_boot"], params["seed"])
            tables["decoder_predictions"] = pd.concat([tables.get("decoder_predictions", pd.DataFrame()), dpreds],
                                                      ignore_index=True)
            tables.update({"defense_releases": defense_run.release_rows(dres), "defense_results": run.defenses,
                           "defense_costs": run.defense_costs})
    store_run(con, run_id=run_id, dataset_id=dataset_id, kind="audit", parameters=params,
              fingerprint=fingerprint, started=started, tables=tables)
    log.info("stored run %s for %s", run_id, dataset_id)
    return run


def quasileak_json(scores: pd.DataFrame) -> dict:
    """ql_scores rows -> the ``qlb quasileak score`` JSON shape (CONTRACT.md section 2)."""
    out: dict[str, Any] = {"detectors": {}}
    for det, sub in scores.groupby("detector", sort=True):
        entry: dict[str, Any] = {"all": {}, "by_arity": {}, "by_attribute": {}}
        for kind, key in (("all", None), ("arity", "by_arity"), ("attribute", "by_attribute")):
            part = sub[sub["slice_kind"] == kind]
            for name, rows in part.groupby("slice", sort=True):
                metrics = {m: _value(v, m) for m, v in zip(rows["metric"], rows["value"])}
                metrics = {k: metrics.get(k) for k in METRIC_KEYS}
                if key is None:
                    entry["all"] = metrics
                else:
                    entry[key][name] = metrics
        out["detectors"][det] = entry
    return out


def _value(v: Any, metric: str) -> Any:
    if v is None or pd.isna(v):
        return None
    return int(v) if metric in ("targets", "predicted_groups") else float(v)
