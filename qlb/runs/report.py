"""``qlb report`` and the sidebar download: load one stored audit run and render it
(qlb.present.report draws the HTML)."""
from __future__ import annotations

import duckdb
import pandas as pd

from qlb.present.report import RunData, render_report
from qlb.present.scope import run_parameters, stale_matters
from qlb.records.ontology import load_ontology
from qlb.runs.quasileak import detector_coverage
from qlb.runs.robustness import robustness_checks
from qlb.runs.staleness import run_changes
from qlb.tuple.refusal import uniform_reference
from warehouse import queries
from warehouse.ontologies import dataset_ontology


def default_run(runs: pd.DataFrame, dataset: str | None = None) -> pd.Series | None:
    """Of ``runs`` (``all_runs``), the run a report shows by default: the newest of the most complete runs (of
    ``dataset``, when named); None when there is none."""
    pool = runs if dataset is None else runs[runs["dataset_id"] == dataset]
    return None if pool.empty else pool.sort_values(["n_results", "started_at"], ascending=False).iloc[0]


def load_run(con: duckdb.DuckDBPyConnection, run_id: str | None = None, dataset: str | None = None) -> RunData:
    """The run (default: the newest audit run of the dataset with the most results) and its tables."""
    runs = queries.fetch_df(con, "all_runs", [])
    if runs.empty:
        raise ValueError("the warehouse holds no audit run yet (run `qlb demo` or `qlb audit`)")
    if run_id is None:
        best = default_run(runs, dataset)
        if best is None:
            raise ValueError(f"no audit run for dataset {dataset!r}")
        run_id = str(best["run_id"])
    match = runs[runs["run_id"] == run_id]
    if match.empty:
        raise ValueError(f"no run {run_id!r} in the warehouse")
    run = match.iloc[0]
    ds = queries.fetch_df(con, "datasets")
    ds = ds[ds["dataset_id"] == run["dataset_id"]].iloc[0]
    get = lambda name: queries.fetch_df(con, name, [run_id])   # noqa: E731
    models = queries.fetch_df(con, "models_with_responses", [run["dataset_id"]])["model"].tolist()
    ontology = dataset_ontology(con, str(run["dataset_id"]))
    since = run_changes(con, run)
    return RunData(run, ds, get("refusal_results"), get("recovery_results"), get("recovery_differences"),
                   get("utility_results"), get("utility_differences"), get("front_points"), get("defense_results"),
                   get("defense_costs"), get("ql_scores"), models, uniform_reference(ontology),
                   ontology.sha256 == load_ontology().sha256, get("coarse_accuracy"), learned=get("learned_wcpq"),
                   ontology=ontology, answers=run_answers(con, run),
                   data_changed=since.changed, changes=since.changes, audited=since.audited,
                   ql_coverage=detector_coverage(con, str(run["dataset_id"])))


def run_answers(con: duckdb.DuckDBPyConnection, run: pd.Series) -> pd.DataFrame:
    """The dataset's answers by source (``answer_sources``) of the models the run audited (all, unless the run
    names some)."""
    answers = queries.fetch_df(con, "answer_sources", [run["dataset_id"]] * 4)
    chosen = run_parameters(run).get("models")
    return answers[answers["model"].isin(chosen)].reset_index(drop=True) if chosen else answers


def build_report(con: duckdb.DuckDBPyConnection, run_id: str | None = None, dataset: str | None = None) -> str:
    """The self-contained HTML report of ``run_id`` (default: the dataset's most complete run), with
    the robustness checks of its decoding audit (computed here, not by ``load_run``: the pages that
    read a run's tables do not need them)."""
    d = load_run(con, run_id, dataset)
    if not d.recovery.empty:
        stale = d.data_changed and stale_matters(d.changes, d.audited)
        d.robustness = robustness_checks(con, str(d.run["run_id"]), stale)
    return render_report(d)
