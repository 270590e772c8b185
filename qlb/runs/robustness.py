"""What the robustness checks of a decoding run read from the warehouse (paper Tables 29 and 30):
its selected full-native test predictions, every configuration's stored scores of the full
native view, and the worlds' splits, labels and released choices; ``qlb.tuple.tracks`` computes."""
from __future__ import annotations

import duckdb

from qlb.present.scope import run_parameters
from qlb.runs.staleness import run_changes
from qlb.stats.bootstrap import N_BOOT, SEED
from qlb.tuple.tracks import VIEW, RobustnessChecks, robustness_checks as compute
from warehouse import queries


def robustness_checks(con: duckdb.DuckDBPyConnection, run_id: str, changed: bool | None = None) -> RobustnessChecks:
    """The both-worlds-correct subset and the attack tracks of ``run_id``, with the run's bootstrap
    resamples and seed (so they share the stored recovery's intervals). Empty tables for a run
    without a decoding audit; no tracks for a run that stored no configuration scores. ``changed``:
    whether the dataset changed after the run, when the caller knows already (the report's loaded
    run does); else it is computed from the fingerprints."""
    runs = queries.fetch_df(con, "all_runs", [])
    run = runs[runs["run_id"] == run_id]
    if run.empty:
        raise ValueError(f"no run {run_id!r} in the warehouse")
    run = run.iloc[0]
    params = run_parameters(run)
    if changed is None:
        changed = run_changes(con, run).matters
    return compute(queries.fetch_df(con, "decoder_predictions_of_view", [run_id, VIEW]),
                   queries.fetch_df(con, "decoder_config_scores_of_view", [run_id, VIEW]),
                   queries.fetch_df(con, "decoder_configs_for", [run_id]),
                   queries.fetch_df(con, "decoding_worlds", [run_id]),
                   int(params.get("n_boot") or N_BOOT), int(params.get("seed") or SEED), changed)
