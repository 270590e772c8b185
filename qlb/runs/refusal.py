"""The refusal audit of a stored dataset: load every model's refusal answers, score them, and
hand back the tables a run stores (TUPLE.md section 3)."""
from __future__ import annotations

from typing import Sequence

import duckdb
import pandas as pd

from qlb.records.ontology import Ontology
from qlb.tuple import refusal
from warehouse import queries

NO_REFUSAL = "no refusal responses in this dataset"


def load_refusal_input(con: duckdb.DuckDBPyConnection, dataset_id: str, models: Sequence[str] | None) -> pd.DataFrame:
    """Every stored refusal response of the dataset joined to its world (optionally some models)."""
    frame = queries.fetch_df(con, "refusal_audit_input", [dataset_id])
    if models:
        frame = frame[frame["model"].isin(models)]
    return frame


def refusal_tables(inputs: pd.DataFrame, ontology: Ontology | None = None
                   ) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """(the per-model and per-domain summary, the tables to store) for loaded refusal input,
    labelled by the dataset's ontology."""
    scored = refusal.score_responses(inputs, ontology)
    summary = refusal.summarize(scored)
    outcomes = scored.frame[["model", "world_id", "domain", "mechanism", "choice", "outcome", "residual_winner",
                             "choice_not_argmax"]]
    return summary, {"refusal_results": summary, "refusal_outcomes": outcomes}
