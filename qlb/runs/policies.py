"""The frozen full-native recipient policies of a stored utility run, read from the warehouse
(3 tasks x each cost profile per domain, 18 in TUPLE, that WCPQ maps against)."""
from __future__ import annotations

import duckdb
import pandas as pd

from qlb.tuple.costs import domain_costs
from qlb.tuple.recipients import Recipient
from qlb.tuple.wcpq import POLICY_VIEW, Policy, in_policy_order
from warehouse import queries
from warehouse.ontologies import dataset_ontology


def frozen_policies(con: duckdb.DuckDBPyConnection, run_id: str, model: str) -> dict[str, list[Policy]]:
    """{domain: the frozen full-native policies (18 in TUPLE)} of ``model`` in utility run ``run_id``."""
    pol = queries.fetch_df(con, "utility_policies", [run_id])
    pol = pol[(pol["model"] == model) & (pol["view"] == POLICY_VIEW)]
    dataset = queries.fetch_df(con, "run_dataset", [run_id])["dataset_id"]
    ontology = dataset_ontology(con, str(dataset.iloc[0])) if len(dataset) else None
    specs = queries.fetch_df(con, "recipient_models_for", [run_id, model])
    specs = specs[specs["view"] == POLICY_VIEW].set_index(["domain", "policy"])["spec"]
    out: dict[str, list[Policy]] = {}
    for row in pol.itertuples(index=False):
        rec = Recipient.from_json(specs.loc[(row.domain, row.policy)])
        factor = float(row.review_factor) if row.review_factor is not None and not pd.isna(row.review_factor) else 1.0
        out.setdefault(row.domain, []).append(
            Policy(row.task, row.profile, rec, factor, domain_costs(row.domain, row.profile, ontology=ontology)))
    return in_policy_order(out)
