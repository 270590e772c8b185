"""The Data page's decision-task section after an auditor's walk-through: the ontology's source read
"from ../own/tenancy.json" (the path as typed in the shell that ingested it), and the "Load an ontology" form
proposed the current dataset although it had worlds, so the upload would have been refused."""
from __future__ import annotations

import html
import json
import shutil

import pandas as pd

from dashboard.quarantine import ontology_file_name, ontology_target
from tests.app.test_pages import collected_warehouse, opened  # noqa: F401  (a fixture)


def test_an_ontology_source_is_shown_by_its_file_name():
    assert ontology_file_name("../own/tenancy.json") == "tenancy.json"
    assert ontology_file_name("/home/a/tasks/lending.json") == "lending.json"
    assert ontology_file_name("C:\\Users\\a\\task.json") == "task.json"
    assert ontology_file_name("uploaded.json") == "uploaded.json"


def test_the_ontology_form_never_proposes_a_dataset_with_worlds():
    known = pd.DataFrame({"dataset_id": ["claims", "claims-2", "empty", "my-audit", "sim"],
                          "worlds": [288, 0, 0, 12, 300], "simulated": [False, False, False, False, True]})
    assert ontology_target(known, "empty", False, "my-audit") == ("empty", None)         # no worlds: itself
    name, why = ontology_target(known, "claims", False, "my-audit")
    assert name == "claims-3"                                    # claims-2 exists (without worlds, but not new)
    assert why.startswith("Proposed: claims-3, a new dataset. claims already has 288 worlds, validated against the "
                          "ontology it uses, so that ontology stays and an upload for it would be refused")
    assert ontology_target(known, "sim", True, "my-audit")[0] == "my-audit-2"            # simulated: one's own
    assert ontology_target(known, None, False, "my-audit-2") == ("my-audit-2", None)
    assert ontology_target(None, "new", False, "my-audit") == ("new", None)              # no warehouse yet


def test_the_data_page_names_the_ontology_file_and_proposes_a_dataset_that_can_take_one(collected_warehouse,
                                                                                         monkeypatch, tmp_path):
    from tests.records.ontologies import LENDING_PATH
    from warehouse.db import writer
    from warehouse.ontologies import store_ontology
    path, _, _ = collected_warehouse
    wh = tmp_path / "own.duckdb"
    shutil.copy(path, wh)
    with writer(wh) as con:
        store_ontology(con, "lending", json.dumps(json.loads(LENDING_PATH.read_text("utf-8"))),
                       "../own/lending_ontology.json")
    with opened(wh, "pages/data.py", monkeypatch, query={"dataset": "lending"}) as at:
        assert not at.exception, [e.value for e in at.exception]
        said = html.unescape(next(m.value for m in at.markdown if "uses its own ontology" in m.value))
        said = said.replace("\\", "")                                    # Markdown escapes, as a reader sees it
        assert "uses its own ontology, from the file **lending_ontology.json** (its name at ingest;" in said
        assert "../" not in said and "own/" not in said
        assert at.text_input(key="ontology_dataset").value == "lending"          # no worlds: it can take another
    with opened(wh, "pages/data.py", monkeypatch, query={"dataset": "ds"}) as at:
        assert not at.exception, [e.value for e in at.exception]
        assert at.text_input(key="ontology_dataset").value == "ds-2"
        why = [c.value.replace("\\", "") for c in at.caption if "already has" in c.value]
        assert why and why[0].startswith("Proposed: ds-2, a new dataset. ds already has 4 worlds")
