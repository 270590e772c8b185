"""What the decoding, utility and defense audits read from the warehouse: one model's release
over every planned world of a dataset."""
from __future__ import annotations

from typing import Sequence

import duckdb
import pandas as pd

from qlb.tuple.release_views import release_columns
from warehouse import queries


def decoding_frame(con: duckdb.DuckDBPyConnection, dataset_id: str, model: str) -> pd.DataFrame:
    """All planned worlds with this model's release (invalid or missing -> unavailable)."""
    return release_columns(queries.fetch_df(con, "decoding_input", [model, dataset_id]))


def chosen_models(con: duckdb.DuckDBPyConnection, dataset_id: str, models: Sequence[str] | None) -> list[str]:
    """The dataset's models with native responses, restricted to ``models`` when given."""
    stored = queries.fetch_df(con, "models_with_responses", [dataset_id])["model"].tolist()
    return [m for m in stored if not models or m in models]
