"""Named queries from ``queries.sql``, always run with bound parameters."""
from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from typing import Any, Sequence

import duckdb
import pandas as pd


@lru_cache(maxsize=1)
def named_queries() -> dict[str, str]:
    """Every ``-- name:`` query of ``queries.sql``, by name (read once per process)."""
    text = resources.files("warehouse").joinpath("queries.sql").read_text("utf-8")
    out: dict[str, str] = {}
    for block in re.split(r"^-- name: ", text, flags=re.M)[1:]:
        name, _, sql = block.partition("\n")
        out[name.strip()] = sql.strip()
    return out


def sql(name: str) -> str:
    """The SQL text of the named query (KeyError naming queries.sql when there is none)."""
    try:
        return named_queries()[name]
    except KeyError:
        raise KeyError(f"no query named {name!r} in warehouse/queries.sql") from None


def fetch_df(con: duckdb.DuckDBPyConnection, name: str, params: Sequence[Any] = ()) -> pd.DataFrame:
    """Run a named query and return its rows as a DataFrame. Pages pass their own cursor."""
    return con.execute(sql(name), list(params)).df()


def execute(con: duckdb.DuckDBPyConnection, name: str, params: Sequence[Any] = ()) -> None:
    """Run a named query with bound parameters, discarding any rows."""
    con.execute(sql(name), list(params))
