"""What `qlb ingest predictions` tells an ML platform team loading its own detector's file (the
QuasiLeak walk-through): how many of the corpus's documents each detector now has predictions for,
with a warning when a split it is scored on is covered in part; every rejected line under its field,
in one path notation; an unknown document said against the dataset's stored corpus; and how to
store corrected predictions, which no ingest replaces."""
from __future__ import annotations

import json

import duckdb
import pytest

from qlb.cli import main
from tests.conftest import two_pairs, write_lines
from warehouse.ingest import IngestRequest, ingest_file, validate_file

TEXT = "The juice box by the bed, and the fridge stays cold."        # 52 characters
CUES = [[TEXT.index("juice box"), TEXT.index("juice box") + 9], [TEXT.index("fridge"), TEXT.index("fridge") + 6]]
POLICY = {"health": "hide", "age": "keep"}


def document(doc_id: str, split: str = "test", **over) -> dict:
    return {"doc_id": doc_id, "split": split, "context_id": "c", "text": TEXT, "profile": {"health": "diabetes"},
            "policy": POLICY, "groups": [{"attribute": "health", "cues": CUES}]} | over


def prediction(doc_id: str, detector: str = "acme", **over) -> dict:
    return {"doc_id": doc_id, "detector": detector, "groups": [{"attribute": "health", "cues": CUES}]} | over


@pytest.fixture
def corpus_warehouse(tmp_path) -> str:
    """Dataset ``court``: a corpus of three test and two train documents."""
    wh = str(tmp_path / "w.duckdb")
    docs = [document(f"t{i}") for i in (1, 2, 3)] + [document(f"r{i}", "train") for i in (1, 2)]
    assert main(["ingest", "corpus", str(write_lines(tmp_path / "corpus.jsonl", docs)), "--dataset", "court",
                 "--warehouse", wh]) == 0
    return wh


def ingest(wh: str, path, *extra: str) -> int:
    return main(["ingest", "predictions", str(path), "--dataset", "court", "--warehouse", wh, *extra])


# ------------------------------------------------------------------- coverage of the corpus

def test_a_partial_predictions_file_says_its_coverage_and_warns_naming_the_split(corpus_warehouse, tmp_path, capsys):
    """Nine of 144 documents used to be scored as if the detector missed the other 135, and nothing
    said so. A document without a prediction still counts as "reported nothing"; the ingest now says
    how many documents the detector has, and warns (exit code unchanged) about the test split."""
    capsys.readouterr()
    part = write_lines(tmp_path / "part.jsonl", [prediction("t1"), prediction("t2")])
    assert ingest(corpus_warehouse, part) == 0                             # a warning, not an error
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == ("detector 'acme': predictions for 2 of the corpus's 5 documents "
                                   "(train 0 of 2, test 2 of 3)")
    assert out.splitlines()[1] == (f"score them: qlb audit --dataset court --warehouse {corpus_warehouse} (every "
                                   "detector of the dataset into a new run, its leaderboard printed), or Recompute "
                                   "now on the QuasiLeak page")
    assert f"{part}: 2 lines; stored 2; 0 rejected -> dataset 'court'" in out.splitlines()[-1]
    assert err.splitlines() == [
        "qlb ingest: warning: detector 'acme' has predictions for 2 of the 3 documents of split test of dataset "
        "'court': the other 1 count as reporting nothing when it is scored (their targets missed). If the "
        "detector ran on them, ingest their predictions under the same detector name."]
    # the rest of the test split: no warning (train is not scored, and the detector has none of it)
    rest = write_lines(tmp_path / "rest.jsonl", [prediction("t3")])
    assert ingest(corpus_warehouse, rest, "--json") == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["detector_coverage"] == [
        {"detector": "acme", "predicted": 3, "documents": 5, "partial_splits": [],
         "splits": {"train": {"predicted": 0, "documents": 2}, "test": {"predicted": 3, "documents": 3}}}]
    assert err == ""


def test_a_split_covered_in_part_is_warned_and_a_dry_run_counts_what_it_would_store(corpus_warehouse, tmp_path,
                                                                                     capsys):
    """A detector with some but not all documents of a split other than test is warned about it too;
    a dry run says what the detector would have, its lines counted in, and writes nothing."""
    capsys.readouterr()
    preds = write_lines(tmp_path / "p.jsonl", [prediction(d, "lex") for d in ("t1", "t2", "t3", "r1")])
    assert ingest(corpus_warehouse, preds, "--dry-run", "--json") == 0
    out, err = capsys.readouterr()
    coverage, = json.loads(out)["detector_coverage"]
    assert (coverage["predicted"], coverage["partial_splits"]) == (4, ["train"])
    assert "detector 'lex' would have predictions for 1 of the 2 documents of split train of dataset 'court'" in err
    with duckdb.connect(corpus_warehouse, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM ql_predictions").fetchone() == (0,)


def test_a_detector_whose_every_line_was_rejected_is_said_to_cover_nothing(corpus_warehouse, tmp_path, capsys):
    capsys.readouterr()
    bad = write_lines(tmp_path / "bad.jsonl", [prediction("t1", groups=[{"attribute": "health", "cues": [[5, 2]]}])])
    assert ingest(corpus_warehouse, bad, "--json") == 3
    out, err = capsys.readouterr()
    assert json.loads(out)["detector_coverage"][0]["partial_splits"] == ["test"]
    assert "detector 'acme' has predictions for 0 of the 3 documents of split test" in err


# ------------------------------------------------------------- every reject under its field

BUGGY = [
    prediction("nope"),                                                                     # 1: unknown document
    prediction("t1", groups=[{"attribute": "health", "cues": [[40, 60]]}]),                 # 2: past the text
    prediction("t2", groups=[{"attribute": "religion", "cues": CUES}]),                     # 3: not an attribute
    prediction("t3", groups=[{"attribute": "health", "cues": [[20, 10]]}]),                 # 4: reversed
    prediction("r1", groups=[{"attribute": "health", "cues": [[0, 20], [10, 30]]}]),        # 5: overlapping
    prediction("r2", groups=[{"attribute": "age", "cues": [[0, 3]]},
                             {"attribute": "health", "cues": [[0, 5], ["9", 12]]}]),        # 6: not integers
    prediction("r2", groups=[{"attribute": "health", "cues": []}]),                         # 7: no cue
    prediction("t1", groups=[{"attribute": "health", "cues": 7}]),                          # 8: not a list
]


def test_every_rejected_prediction_names_its_field_in_the_quarantine_and_on_stderr(corpus_warehouse, tmp_path,
                                                                                    capsys):
    """7 of 11 rejected lines used to have an empty field though their reason named one, and two
    notations were mixed (``groups.0.cues`` beside ``groups[0].cues[0]``)."""
    capsys.readouterr()
    assert ingest(corpus_warehouse, write_lines(tmp_path / "buggy.jsonl", BUGGY)) == 3
    expected = [
        (1, "doc_id", "unknown doc_id 'nope': not a document of the corpus of dataset 'court'"),
        (2, "groups[0].cues[0]", "[40, 60] is outside the text (length 52)"),
        (3, "groups[0].attribute", "'religion' is not one of the corpus's attributes (age, health)"),
        (4, "groups[0].cues[0]", "[20, 10] is empty or reversed"),
        (5, "groups[0].cues", "[0, 20] and [10, 30] overlap"),
        (6, "groups[1].cues[1]", "must be [start, end] with integer offsets (got ['9', 12])"),
        (7, "groups[0].cues", "a group needs at least 1 cue (got [])"),
        (8, "groups[0].cues", "must be a list of [start, end] pairs (got 7)"),
    ]
    with duckdb.connect(corpus_warehouse, read_only=True) as con:
        assert con.execute("SELECT line_no, field, reason FROM rejects ORDER BY line_no").fetchall() == expected
    err = capsys.readouterr().err.splitlines()
    assert err[:len(expected)] == [f"buggy.jsonl:{n}: {fld}: {reason}" for n, fld, reason in expected]


def test_corpus_lines_name_their_field_in_the_same_notation(wh, tmp_path):
    docs = [document("d1"),
            document("d2", policy={"health": "hide"}),                                              # other keys
            document("d3", groups=[{"attribute": "health", "cues": CUES},
                                   {"attribute": "age", "cues": [[0, 3], [CUES[1][0] + 1, CUES[1][1]]]}]),
            document("d4", distractors=[[0, 3], [50, 60]]),
            document("d5", groups=[{"attribute": "health", "cues": [CUES[0], [1.5, 3]]}]),
            document("d6", groups=[{"attribute": "zodiac", "cues": CUES}]),
            document("d7", groups=[{"attribute": "health", "cues": CUES[:1]}])]
    report = ingest_file(wh, IngestRequest("corpus", write_lines(tmp_path / "c.jsonl", docs), "ds")).report
    assert [(r.line_no, r.field, r.reason) for r in report.rejects] == [
        (2, "policy", "keys health differ from the corpus's attribute set age, health (every document labels "
                      "the same attributes)"),
        (3, "groups[1].cues[1]", f"[{CUES[1][0] + 1}, {CUES[1][1]}] overlaps the gold cue groups[0].cues[1] = "
                                 f"{CUES[1]}"),
        (4, "distractors[1]", "[50, 60] is outside the text (length 52)"),
        (5, "groups[0].cues[1]", "must be [start, end] with integer offsets (got [1.5, 3])"),
        (6, "groups[0].attribute", "'zodiac' is not one of the policy's attributes (health, age)"),
        (7, "groups[0].cues", "has 1 cues; gold groups have 2-4"),
    ]


def test_worlds_and_responses_fields_use_the_same_notation(wh, tmp_path):
    """A list position is in brackets for every kind (``hypotheses[1]``); a map key keeps its dot
    (``probabilities.DELAY``), as before."""
    worlds = two_pairs()
    worlds[1]["hypotheses"] = ["missed_transfer", 7]
    report = validate_file(wh, IngestRequest("worlds", write_lines(tmp_path / "w.jsonl", worlds), "ds"))
    assert [(r.line_no, r.field) for r in report.rejects][0] == (2, "hypotheses[1]")
    ingest_file(wh, IngestRequest("worlds", write_lines(tmp_path / "w2.jsonl", two_pairs()), "ds"))
    response = {"model": "m", "world_id": "w1", "status": "ok", "choice": "DELAY", "probabilities": {"DELAY": "1"}}
    report = validate_file(wh, IngestRequest("responses", write_lines(tmp_path / "r.jsonl", [response]), "ds"))
    assert [r.field for r in report.rejects] == ["probabilities.DELAY"]


# --------------------------------------------------------------------------- unknown documents

def test_an_unknown_document_is_said_against_the_stored_corpus_or_its_absence(wh, tmp_path):
    """"ingest the corpus first" used to be said with the corpus loaded."""
    ingest_file(wh, IngestRequest("worlds", write_lines(tmp_path / "w.jsonl", two_pairs()), "worlds-only"))
    preds = write_lines(tmp_path / "p.jsonl", [prediction("d9")])
    report = validate_file(wh, IngestRequest("predictions", preds, "worlds-only"))
    assert [(r.field, r.reason) for r in report.rejects] == [
        ("doc_id", "unknown doc_id 'd9' (dataset 'worlds-only' has no corpus: ingest the corpus first)")]
    ingest_file(wh, IngestRequest("corpus", write_lines(tmp_path / "c.jsonl", [document("d1")]), "court"))
    report = validate_file(wh, IngestRequest("predictions", preds, "court"))
    assert [(r.field, r.reason) for r in report.rejects] == [
        ("doc_id", "unknown doc_id 'd9': not a document of the corpus of dataset 'court'")]


# ---------------------------------------------------------------- corrected predictions again

def test_corrected_predictions_for_a_stored_detector_say_how_to_store_them(corpus_warehouse, tmp_path, capsys):
    """A corrected file under the same detector name was 62 duplicates "(the stored one is kept)" and
    nothing on what to do: an ingest never replaces a stored prediction, so the message says to give
    the corrected predictions a new detector name; doing so stores them."""
    more = write_lines(tmp_path / "more.jsonl", [document("t4"), document("t5")])
    assert main(["ingest", "corpus", str(more), "--dataset", "court", "--warehouse", corpus_warehouse]) == 0
    docs = ["t1", "t2", "t3", "t4", "t5", "r1", "r2"]
    assert ingest(corpus_warehouse, write_lines(tmp_path / "v1.jsonl", [prediction(d) for d in docs])) == 0
    fixed = [prediction(d, groups=[{"attribute": "health", "cues": CUES[:1]}]) for d in docs]
    capsys.readouterr()
    assert ingest(corpus_warehouse, write_lines(tmp_path / "v2.jsonl", fixed + [prediction("t1")])) == 3
    err = capsys.readouterr().err.splitlines()
    assert err == [             # one message for the seven lines, each a key of its own (grouped as duplicates)
        "v2.jsonl:1: duplicate prediction for detector 'acme' and doc 't1' with other values than the one ingest #3 "
        "stored (the stored one is kept; qlb ingest never replaces a stored prediction: to store corrected "
        "predictions, give them a new detector name in the file's detector field) (the same, each for its own "
        "key, on 6 more lines: 2-7)"]
    renamed = write_lines(tmp_path / "v2b.jsonl", [dict(p, detector="acme-v2") for p in fixed])
    assert ingest(corpus_warehouse, renamed) == 0
    with duckdb.connect(corpus_warehouse, read_only=True) as con:
        assert con.execute("SELECT detector, count(*) FROM ql_predictions GROUP BY 1 ORDER BY 1").fetchall() == [
            ("acme", 7), ("acme-v2", 7)]
