"""Which ingests a stored run read (``warehouse.results.run_ingests``): the prefix of the dataset's ingests whose
fingerprint is the run's, even when they finished after the run started (the demo stores its run's start before
it loads its answers), else those finished by its start."""
from __future__ import annotations

import pandas as pd

from qlb.present.scope import audited_models, stale_matters
from tests.conftest import native, two_pairs, write_lines
from warehouse import queries
from warehouse.db import writer
from warehouse.ingest import IngestRequest, ingest_file
from warehouse.results import dataset_fingerprint, run_ingests


def test_the_ingests_a_run_read_are_found_by_its_fingerprint(tmp_path):
    path = tmp_path / "qlb.duckdb"
    with writer(path) as con:
        early = pd.Timestamp("2000-01-01")                      # a run started before anything was loaded
        ingest_file(con, IngestRequest("worlds", write_lines(tmp_path / "w.jsonl", two_pairs()), "d"))
        ingest_file(con, IngestRequest("responses", write_lines(tmp_path / "r.jsonl", [native("m", "w1")]), "d"))
        at_run = dataset_fingerprint(con, "d")
        ingest_file(con, IngestRequest("responses", write_lines(tmp_path / "r2.jsonl", [native("n", "w1")]), "d"))
        read, after, exact = run_ingests(con, "d", at_run, early)
        assert list(read["file_name"].str.rsplit("/", n=1).str[-1]) == ["w.jsonl", "r.jsonl"] and exact
        assert list(after["model"]) == ["n"]
        assert audited_models({}, read, exact) == {"m"} and not stale_matters(after, audited_models({}, read, exact))
        read, after, exact = run_ingests(con, "d", "no-such-fingerprint", early)  # no prefix matches: by time
        assert read.empty and len(after) == 3 and not exact
        assert audited_models({}, read, exact) is None and stale_matters(after, None)   # unknown: stays red
        both = write_lines(tmp_path / "r3.jsonl", [native("m", "w3"), native("n", "w3")])   # a file of two models
        ingest_file(con, IngestRequest("responses", both, "d"))
        read, after, exact = run_ingests(con, "d", dataset_fingerprint(con, "d"), early)
        assert exact and audited_models({}, read, exact) is None                # whose answers it read: unknown
        now = run_ingests(con, "d", dataset_fingerprint(con, "d"), early)
        assert len(now.read) == 4 and now.after.empty
        assert len(queries.fetch_df(con, "ingest_times", ["d"])) == 4
