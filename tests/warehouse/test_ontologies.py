"""The ontology each dataset uses: store, replace, no-op, refuse once the dataset has worlds, the
TUPLE default, read-only access, and `qlb ingest ontology` (exit codes, one stderr line per problem)."""
from __future__ import annotations

import json
from importlib import resources

import pytest

from qlb.cli import main
from qlb.records.ontology import OntologyError, load_ontology, ontology_sha256, parse_ontology, tuple_ontology_sha256
from tests.conftest import two_pairs, write_lines
from tests.records.ontologies import LENDING_PATH, as_text, five_by_two, three_by_three, write_ontology
from warehouse.db import open_reader, writer
from warehouse.ingest import IngestRequest, ingest_file
from warehouse.ontologies import (dataset_ontology, dataset_ontology_sha256, replace_problem, store_ontology,
                                  stored_ontology)


def rows(con, table: str) -> int:
    return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def snapshot(con) -> dict:
    return {t: con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall()
            for t in ("datasets", "ontologies", "dataset_ontologies")}


def add_worlds(con, tmp_path, dataset: str = "ds") -> None:
    path = write_lines(tmp_path / "worlds.jsonl", two_pairs())
    r = ingest_file(con, IngestRequest("worlds", path, dataset))
    assert len(r.report.accepted) == 4


def tuple_text() -> str:
    return resources.files("qlb.data").joinpath("ontology.json").read_text("utf-8")


def test_a_dataset_without_an_ontology_uses_tuple(wh):
    assert dataset_ontology(wh, "nobody") is load_ontology()
    assert dataset_ontology_sha256(wh, "nobody") == tuple_ontology_sha256()
    assert stored_ontology(wh, "nobody") is None


def test_store_creates_the_dataset_and_reads_back(wh):
    text = as_text(three_by_three())
    sha, changed = store_ontology(wh, "support", text, "support.json")
    assert changed and sha == ontology_sha256(text)
    assert wh.execute("SELECT dataset_id, simulated, description, seed FROM datasets").fetchall() == [
        ("support", False, None, None)]
    onto = dataset_ontology(wh, "support")
    assert onto == parse_ontology(text) and onto.sha256 == sha and onto.source == "support.json"
    assert dataset_ontology_sha256(wh, "support") == sha
    row = stored_ontology(wh, "support")
    assert row.body == onto.to_json() and row.source == "support.json" and row.ingested_at is not None
    assert dataset_ontology(wh, "support") is onto        # parsed once per version


def test_same_file_again_is_a_no_op_and_whitespace_does_not_matter(wh):
    doc = three_by_three()
    sha, _ = store_ontology(wh, "support", as_text(doc), "a.json")
    before = snapshot(wh)
    assert store_ontology(wh, "support", as_text(doc, indent=None), "b.json") == (sha, False)
    assert snapshot(wh) == before


def test_replace_while_the_dataset_has_no_worlds(wh):
    first, _ = store_ontology(wh, "ds", as_text(three_by_three()), "a.json")
    second, changed = store_ontology(wh, "ds", as_text(five_by_two()), "b.json")
    assert changed and second != first
    assert dataset_ontology_sha256(wh, "ds") == second
    assert list(dataset_ontology(wh, "ds").domains) == ["claims"]
    assert rows(wh, "ontologies") == 2 and rows(wh, "dataset_ontologies") == 1
    # two datasets share one stored version
    store_ontology(wh, "other", as_text(five_by_two()), "c.json")
    assert rows(wh, "ontologies") == 2 and rows(wh, "dataset_ontologies") == 2


def test_refused_once_the_dataset_has_worlds(wh, tmp_path):
    add_worlds(wh, tmp_path)                               # TUPLE worlds, no stored ontology
    before = snapshot(wh)
    with pytest.raises(OntologyError) as exc:
        store_ontology(wh, "ds", as_text(three_by_three()), "support.json")
    assert exc.value.problems == ["support.json: dataset 'ds' already has 4 worlds, validated against the ontology "
                                  "it uses, so that ontology stays; to use this one, load it into a new dataset "
                                  "with --dataset NAME (say --dataset ds-2), then ingest the worlds there"]
    assert snapshot(wh) == before
    assert dataset_ontology(wh, "ds") is load_ontology()
    assert replace_problem(wh, "ds", ontology_sha256(as_text(three_by_three())), "x.json").startswith("x.json: ")
    # the ontology in force (TUPLE) is no replacement: accepted, nothing changes in effect
    assert store_ontology(wh, "ds", tuple_text(), "tuple.json") == (tuple_ontology_sha256(), False)
    assert dataset_ontology_sha256(wh, "ds") == tuple_ontology_sha256()
    assert replace_problem(wh, "ds", tuple_ontology_sha256(), "x.json") is None


def test_refused_after_worlds_keeps_the_stored_ontology(wh, tmp_path):
    sha, _ = store_ontology(wh, "ds", tuple_text(), "tuple.json")
    add_worlds(wh, tmp_path)
    with pytest.raises(OntologyError):
        store_ontology(wh, "ds", LENDING_PATH.read_text("utf-8"), "lending.json")
    assert dataset_ontology_sha256(wh, "ds") == sha
    assert store_ontology(wh, "ds", tuple_text(), "again.json") == (sha, False)


def test_a_broken_file_stores_nothing(wh):
    doc = three_by_three()
    doc["domains"]["support"]["classes"]["BILLING"] = ["card_expired"]
    before = snapshot(wh)
    with pytest.raises(OntologyError) as exc:
        store_ontology(wh, "new", json.dumps(doc), "bad.json")
    assert "bad.json: domains.support.classes.BILLING: 1 mechanism, need at least 2" in exc.value.problems
    assert snapshot(wh) == before


def test_read_only_connections(tmp_path):
    path = tmp_path / "wh.duckdb"
    with writer(path) as con:
        sha, _ = store_ontology(con, "lending", LENDING_PATH.read_text("utf-8"), "lending_ontology.json")
    con = open_reader(path)
    try:
        assert dataset_ontology(con, "lending").sha256 == sha
        assert dataset_ontology_sha256(con.cursor(), "lending") == sha
        assert dataset_ontology(con, "other") is load_ontology()
        assert replace_problem(con, "lending", sha, "x") is None
    finally:
        con.close()


# ------------------------------------------------------------------------------------- the CLI
def test_cli_ingest_ontology(tmp_path, capsys):
    wh = str(tmp_path / "w.duckdb")
    args = ["ingest", "ontology", str(LENDING_PATH), "--dataset", "lending", "--warehouse", wh]
    assert main(args) == 0
    out = capsys.readouterr()
    sha = ontology_sha256(LENDING_PATH.read_text("utf-8"))
    assert out.out.strip() == (f"{LENDING_PATH}: ontology {sha} (2 domains, 7 classes, 19 mechanisms) -> "
                               f"dataset 'lending', warehouse {wh} (new warehouse)")      # the file written, and new
    assert out.err == ""
    assert main(args) == 0
    assert capsys.readouterr().out.strip().endswith(f"unchanged: dataset 'lending' already uses it (warehouse {wh})")
    assert main(args + ["--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["sha256"] == sha and report["changed"] is False and report["problems"] == []
    con = open_reader(wh)
    try:
        assert dataset_ontology_sha256(con, "lending") == sha
    finally:
        con.close()


def test_cli_rejects_a_broken_file_with_one_line_per_problem(tmp_path, capsys):
    doc = three_by_three()
    d = doc["domains"]["support"]
    d["classes"]["BILLING"] = ["card_expired"]
    del d["descriptions"]["double_charge"], d["descriptions"]["refund_delay"]
    d["asymmetric_costs"]["OUTAGE"]["OUTAGE"] = 1.0
    del d["checks"]["check_account"]
    bad = write_ontology(tmp_path / "bad.json", doc)
    wh = tmp_path / "w.duckdb"
    code = main(["ingest", "ontology", str(bad), "--dataset", "ds", "--warehouse", str(wh)])
    out = capsys.readouterr()
    assert code == 3 and out.out == ""
    assert out.err.splitlines() == [
        f"{bad}: domains.support.classes.BILLING: 1 mechanism, need at least 2 (line 17)",
        f"{bad}: domains.support.checks: no check for class 'ACCOUNT' (need exactly one per class) (line 31)",
        f"{bad}: domains.support.asymmetric_costs.OUTAGE.OUTAGE: the diagonal must be 0 (got 1.0) (line 49)",
    ]
    rows_of = bad.read_text().splitlines()          # the lines named are the ones that hold the fields
    assert '"BILLING"' in rows_of[16] and '"checks"' in rows_of[30] and '"OUTAGE": 1.0' in rows_of[48]
    with writer(wh) as con:            # the writer was opened (schema created) but nothing stored
        assert rows(con, "datasets") == 0 and rows(con, "ontologies") == 0


def test_cli_invalid_json_and_refusal_after_worlds(tmp_path, capsys):
    wh = tmp_path / "w.duckdb"
    broken = tmp_path / "broken.json"
    broken.write_text('{"domains": {', encoding="utf-8")
    assert main(["ingest", "ontology", str(broken), "--dataset", "ds", "--warehouse", str(wh)]) == 3
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"{broken}: not valid JSON: ") and "(line 1, column 14)" in err[0]
    with writer(wh) as con:
        add_worlds(con, tmp_path)
    small = write_ontology(tmp_path / "small.json", three_by_three())
    assert main(["ingest", "ontology", str(small), "--dataset", "ds", "--warehouse", str(wh)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"qlb ingest: error: {small}: dataset 'ds' already has 4 worlds, validated against the ontology it uses, so "
        "that ontology stays; to use this one, load it into a new dataset with --dataset NAME (say --dataset "
        "ds-2), then ingest the worlds there"]
    # --dry-run says the same and writes nothing; for a new dataset it validates only
    assert main(["ingest", "ontology", str(small), "--dataset", "ds", "--dry-run", "--warehouse", str(wh)]) == 2
    capsys.readouterr()
    assert main(["ingest", "ontology", str(small), "--dataset", "fresh", "--dry-run", "--warehouse", str(wh)]) == 0
    assert "nothing written" in capsys.readouterr().out
    con = open_reader(wh)
    try:
        assert stored_ontology(con, "fresh") is None and stored_ontology(con, "ds") is None
    finally:
        con.close()


def test_cli_notes_and_usage(tmp_path, capsys):
    wide = write_ontology(tmp_path / "wide.json", five_by_two())
    wh = str(tmp_path / "w.duckdb")
    assert main(["ingest", "ontology", str(wide), "--dataset", "claims", "--warehouse", wh]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [f"note: {wide}: cost_profiles.missing_double: class 'NOT_A_CLASS' is not a class of domain "
                   "'claims'; there the profile scales no asymmetric column"]
    assert main(["ingest", "ontology", str(wide), "--dataset", "claims", "--model", "m", "--warehouse", wh]) == 2
    assert main(["ingest", "ontology", str(tmp_path / "missing.json"), "--dataset", "x", "--warehouse", wh]) == 1
    assert "no such file" in capsys.readouterr().err


def test_an_ontology_for_a_dataset_with_worlds_is_bad_usage_that_names_a_new_dataset(tmp_path, capsys):
    """Walk-through: the refusal exited 3 (meant for rejected lines) and did not say what to do. It is
    now exit 2 (a --dataset that cannot be used here), naming --dataset with an unused name, which works."""
    wh = tmp_path / "w.duckdb"
    with writer(wh) as con:
        add_worlds(con, tmp_path, "modroute")
        add_worlds(con, tmp_path, "modroute-2")                  # the suggestion skips a name in use
    small = write_ontology(tmp_path / "small.json", three_by_three())
    assert main(["ingest", "ontology", str(small), "--dataset", "modroute", "--warehouse", str(wh), "--json"]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["problems"] == [err.strip().removeprefix("qlb ingest: error: ")]
    assert err.startswith(f"qlb ingest: error: {small}: dataset 'modroute' already has 4 worlds")
    assert "load it into a new dataset with --dataset NAME (say --dataset modroute-3)" in err
    assert main(["ingest", "ontology", str(small), "--dataset", "modroute-3", "--warehouse", str(wh)]) == 0


def test_every_way_to_create_a_dataset_applies_the_name_rule(tmp_path):
    """The command line's ingest refused a padded name; an ontology stored by the library, the Data page's check
    and the simulated demo for an own task had let ' x' in."""
    from dashboard.data_access import check_ontology_upload
    from qlb.demo import build_demo
    path = tmp_path / "w.duckdb"
    with writer(path) as con:
        with pytest.raises(ValueError, match="a dataset name has no space at either end"):
            store_ontology(con, " x", as_text(three_by_three()), "own.json")
        assert rows(con, "datasets") == 0 and rows(con, "ontologies") == 0
    check = check_ontology_upload(str(path), " x", as_text(three_by_three()).encode(), "own.json")
    assert not check.ok and "a dataset name has no space at either end" in check.problems[0]
    assert check_ontology_upload(str(path), "x", as_text(three_by_three()).encode(), "own.json").ok
    onto = write_ontology(tmp_path / "own.json", three_by_three())
    with pytest.raises(ValueError, match="no space at either end"):
        build_demo(tmp_path / "demo.duckdb", ontology_path=onto, dataset="x ")
