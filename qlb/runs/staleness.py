"""Whether a stored run is older than its dataset, what changed since, and whether that can move its
numbers: one reading of the warehouse for the report, the Overview and the robustness checks (the
dashboard's run pickers read every run of a dataset at once, ``dashboard.data_access.run_context``)."""
from __future__ import annotations

from dataclasses import dataclass, field

import duckdb
import pandas as pd

from qlb.present.scope import audited_models, run_parameters, stale_matters
from warehouse.results import dataset_fingerprint, run_ingests


@dataclass(frozen=True)
class RunChanges:
    """``changed``: the dataset's fingerprint is not the run's; ``changes``: what was loaded or collected after
    it (``warehouse.results.run_ingests``); ``audited``: the models it audited (None: unknown)."""
    changed: bool
    changes: pd.DataFrame = field(default_factory=pd.DataFrame)
    audited: frozenset[str] | None = None

    @property
    def matters(self) -> bool:
        """Whether the change can move the run's numbers (``qlb.present.scope.stale_matters``)."""
        return self.changed and stale_matters(self.changes, self.audited)


def run_changes(con: duckdb.DuckDBPyConnection, run: pd.Series) -> RunChanges:
    """What changed in the run's dataset after it; the ingests are read only when the fingerprint differs."""
    if dataset_fingerprint(con, str(run["dataset_id"])) == run["dataset_fingerprint"]:
        return RunChanges(False)
    read, after, exact = run_ingests(con, str(run["dataset_id"]), str(run["dataset_fingerprint"]), run["started_at"])
    return RunChanges(True, after, audited_models(run_parameters(run), read, exact))
