"""One stored audit run's tables, as the report, the paper comparison and the pages read them
(``qlb.runs.report.load_run`` fills it from the warehouse)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from qlb.records.ontology import Ontology
    from qlb.tuple.tracks import RobustnessChecks


@dataclass
class RunData:
    run: pd.Series
    dataset: pd.Series
    refusal: pd.DataFrame
    recovery: pd.DataFrame
    recovery_diff: pd.DataFrame
    utility: pd.DataFrame
    utility_diff: pd.DataFrame
    fronts: pd.DataFrame
    defenses: pd.DataFrame
    defense_costs: pd.DataFrame
    ql: pd.DataFrame
    models: list[str] = field(default_factory=list)
    uniform_reference: float = 1.0 / 16.0       # 1/M of the dataset's ontology (TUPLE: 16 mechanisms)
    tuple_task: bool = True                     # the dataset's ontology is TUPLE's (the paper's numbers apply)
    coarse: pd.DataFrame = field(default_factory=pd.DataFrame)    # test coarse accuracy (Tables 22, 24)
    robustness: RobustnessChecks | None = None                    # Tables 29, 30 (the report computes them)
    learned: pd.DataFrame = field(default_factory=pd.DataFrame)   # learned WCPQ variants (``learned_wcpq``, H.2)
    ontology: Ontology | None = None                              # the decision task the run audited
    answers: pd.DataFrame = field(default_factory=pd.DataFrame)   # the dataset's answers by source (``answer_sources``)
    data_changed: bool = False                                    # the dataset changed after the run (its fingerprint)
    changes: pd.DataFrame = field(default_factory=pd.DataFrame)   # loaded or collected after the run started
    audited: frozenset[str] | None = None                         # the models the run audited (``audited_models``)
    left_out: pd.DataFrame = field(default_factory=pd.DataFrame)  # models the findings leave out (``left_out``)
    ql_coverage: pd.DataFrame = field(default_factory=pd.DataFrame)  # documents each detector answered (``coverage``)
