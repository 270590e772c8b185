"""What `qlb ingest` tells its user: a repeated reject reason said once (every line still in the
quarantine), worlds of another decision task sent into a new dataset, which warehouse was
written, and the counts in plain words."""
from __future__ import annotations

import json

import duckdb

from qlb.cli import main
from qlb.simulate.tuple_sim import simulate_worlds
from qlb.records.ontology import parse_ontology
from tests.conftest import native, two_pairs, write_lines
from tests.records.ontologies import as_text, three_by_three
from warehouse.ingest import Reject, ValidationReport, grouped_messages


def own_task_files(tmp_path):
    """An own ontology (one domain, ``support``) and 24 worlds written for it."""
    onto_file = tmp_path / "support.json"
    onto_file.write_text(as_text(three_by_three()))
    worlds = simulate_worlds(3, parse_ontology(onto_file.read_text(), "support.json"), pairs_per_class=4)
    return onto_file, write_lines(tmp_path / "support_worlds.jsonl", worlds), len(worlds)


def test_a_reason_on_many_lines_is_said_once_naming_every_line():
    report = ValidationReport("worlds", "w.jsonl", "jsonl", "", "d", None)
    report.rejects = ([Reject(n, None, "domain 'x' is not a domain", "") for n in range(1, 9)]
                      + [Reject(n, "split", "bad split", "") for n in (4, 20)])
    assert report.messages(group_repeats=True) == [
        "w.jsonl:1: domain 'x' is not a domain (the same on 7 more lines: 2-8)",      # every line, as ranges
        "w.jsonl:4: split: bad split",              # a reason on a few lines: each line, as before
        "w.jsonl:20: split: bad split",
    ]
    assert len(report.messages()) == 10                             # the plain list keeps every line


def test_duplicates_say_whether_they_repeat_one_key_or_many():
    """Seven lines of one key are "the same"; seven of seven keys "each for its own key"; seven lines
    of three keys name how many, so none of the three misstates which lines share a key."""
    def said(keys: list[str]) -> str:
        dup = "duplicate response for model 'm' and world '{}' (the first is kept)"
        message, = grouped_messages("r.jsonl", [(n, None, dup.format(k)) for n, k in enumerate(keys, start=2)])
        return message.split(" (the first is kept) ", 1)[1]

    assert said(["w1"] * 7) == "(the same on 6 more lines: 3-8)"
    assert said([f"w{i}" for i in range(7)]) == "(the same, each for its own key, on 6 more lines: 3-8)"
    assert said(["w1", "w2", "w1", "w3", "w1", "w2", "w1"]) == "(the same, for this key and 2 others, on 6 more lines: 3-8)"
    assert said(["w1"] * 4 + ["w2"] * 3) == "(the same, for this key and 1 other, on 6 more lines: 3-8)"


def test_worlds_of_another_task_into_a_new_dataset_say_why_once(tmp_path, capsys):
    """A mistyped --dataset (or a forgotten `qlb ingest ontology`): the worlds' domain is not in the
    built-in TUPLE ontology. One line for the repeated reason, one hint naming the ontology step and
    the nearest dataset; every line kept in the quarantine."""
    wh = str(tmp_path / "w.duckdb")
    onto_file, worlds_file, n = own_task_files(tmp_path)
    assert main(["ingest", "ontology", str(onto_file), "--dataset", "support-audit", "--warehouse", wh]) == 0
    capsys.readouterr()
    assert main(["ingest", "worlds", str(worlds_file), "--dataset", "support-adit", "--warehouse", wh]) == 3
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert len(lines) == 2, err
    assert lines[0].startswith("support_worlds.jsonl:1: domain: 'support' is not a domain of the dataset's ontology")
    assert lines[0].endswith(f"(the same on {n - 1} more lines: 2-{n})")
    assert lines[1] == (
        "qlb ingest: dataset 'support-adit' is new, so it uses the built-in TUPLE ontology (domains delivery, "
        f"equipment, it), which lacks the domain these worlds name: support ({n} lines). If they are your own "
        "decision task, attach its ontology first, then ingest this file again: `qlb ingest ontology FILE "
        "--dataset support-adit`. Or did you mean dataset 'support-audit'?")
    assert f"stored 0; {n} rejected (kept in the quarantine with their text) -> new dataset 'support-adit'" in out
    with duckdb.connect(wh, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM rejects WHERE dataset_id = 'support-adit'").fetchone() == (n,)
    # the advice works: attach the ontology, ingest the same file again
    assert main(["ingest", "ontology", str(onto_file), "--dataset", "support-adit", "--warehouse", wh]) == 0
    assert main(["ingest", "worlds", str(worlds_file), "--dataset", "support-adit", "--warehouse", wh]) == 0
    out, err = capsys.readouterr()
    assert err == "" and f"stored {n}; 0 rejected -> dataset 'support-adit'" in out


def test_the_success_line_names_the_warehouse_and_a_new_one(tmp_path, worlds_file, capsys):
    wh = str(tmp_path / "typo" / "w.duckdb")
    assert main(["ingest", "worlds", str(worlds_file), "--dataset", "d", "--warehouse", wh]) == 0
    assert capsys.readouterr().out == (f"{worlds_file}: 4 lines; stored 4; 0 rejected -> new dataset 'd', ingest #1, "
                                       f"warehouse {wh} (new warehouse)\n")
    resp = write_lines(tmp_path / "r.jsonl", [native("m", "w1"), native("m", "w2", confidence=3.0)])
    assert main(["ingest", "responses", str(resp), "--dataset", "d", "--warehouse", wh]) == 0
    assert capsys.readouterr().out == (f"{resp}: 2 lines; stored 2 (1 of them invalid: kept with valid = false, the "
                                       f"audits read them as unavailable); 0 rejected -> dataset 'd', ingest #2, "
                                       f"warehouse {wh}\n")
    assert main(["ingest", "worlds", str(worlds_file), "--dataset", "d", "--warehouse", wh, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["warehouse"], report["new_warehouse"], report["already_ingested"]) == (wh, False, True)
    assert main(["ingest", "worlds", str(worlds_file), "--dataset", "d", "--warehouse", wh]) == 0
    assert capsys.readouterr().out.endswith(f"(same sha256); nothing changed (warehouse {wh})\n")


def test_line_ranges_name_every_line():
    from warehouse.ingest import line_ranges
    assert line_ranges([2, 3, 4, 5, 7, 9, 10]) == "2-5, 7, 9-10"
    assert line_ranges([5]) == "5" and line_ranges([1, 2]) == "1-2"


def test_ingest_into_an_empty_database_file_sets_it_up(tmp_path, worlds_file, capsys):
    """The lookup before an ingest had opened a read-only handle, which refuses a file not at the current schema
    (an empty DuckDB file, an older warehouse) that the writer brings up to date: it now runs on the writer."""
    wh = tmp_path / "empty.duckdb"
    duckdb.connect(str(wh)).close()
    assert main(["ingest", "worlds", str(worlds_file), "--dataset", "d", "--warehouse", str(wh)]) == 0
    assert "stored 4" in capsys.readouterr().out


def test_the_ontology_hint_after_some_worlds_were_stored_says_to_use_a_new_dataset(tmp_path, capsys):
    """Foreign worlds next to TUPLE ones: those stored make the dataset one with worlds, whose ontology cannot be
    attached any more; the hint says to use a new dataset (it advised attaching the ontology, which is refused)."""
    onto_file, worlds_file, n = own_task_files(tmp_path)
    mixed = tmp_path / "mixed.jsonl"
    write_lines(mixed, [json.loads(line) for line in worlds_file.read_text().splitlines()] + two_pairs())
    assert main(["ingest", "worlds", str(mixed), "--dataset", "my set", "--warehouse", str(tmp_path / "w.duckdb")]) == 3
    err = capsys.readouterr().err
    assert "A dataset with worlds keeps its ontology: ingest them into a new dataset" in err
    assert "attach its ontology first" not in err


def test_a_json_array_file_gets_one_hint_after_its_lines(tmp_path, capsys):
    """Every line of a pretty-printed JSON array is rejected (each a line of its own, CONTRACT.md);
    one hint says why, so the user is not left with a hundred JSON errors."""
    path = tmp_path / "worlds.json"
    path.write_text(json.dumps(two_pairs(), indent=2))
    assert main(["ingest", "worlds", str(path), "--dataset", "d", "--warehouse", str(tmp_path / "w.duckdb")]) == 3
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("worlds.json:1: line is not valid JSON")
    assert err[-1] == ("qlb ingest: hint: the file starts with '[': it looks like one JSON array, and a JSON Lines "
                       "file holds one object a line (`jq -c '.[]' FILE > NEW.jsonl` converts it)")
    assert sum("hint" in line for line in err) == 1
    good = write_lines(tmp_path / "w.jsonl", [*two_pairs(), {"world_id": "w9"}])
    assert main(["ingest", "worlds", str(good), "--dataset", "d", "--warehouse", str(tmp_path / "w.duckdb")]) == 3
    assert "hint" not in capsys.readouterr().err                      # a file fine as a whole gets none
