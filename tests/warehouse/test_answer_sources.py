"""`answer_sources` against a real warehouse: each answer counted once as TUPLE.md section 1 defines it (valid,
invalid and kept, unavailable), collected refusal answers' own validity, and the worlds a model never answered."""
import duckdb

from qlb.cli import main
from qlb.present.answers import answers_sentence, answers_table
from tests.conftest import native, write_lines
from warehouse import queries


def test_answers_are_counted_as_the_audits_read_them(tmp_path, worlds_file):
    wh = str(tmp_path / "w.duckdb")
    answers = [native("m", "w1"),
               native("m", "w2", probabilities={"ADDRESS": 0.2, "DAMAGE": 0.1, "DELAY": 0.1, "DELIVERY_RECORD": 0.1}),
               native("m", "w3", status="unavailable", choice=None, probabilities=None, confidence=None)]  # w4: none
    refusals = [{"model": "m", "world_id": w, "status": s, "choice": c, "scores": None}
                for w, s, c in (("w1", "ok", "missed_transfer"), ("w2", "unavailable", None))]
    assert main(["ingest", "worlds", str(worlds_file), "--dataset", "d", "--warehouse", wh]) == 0
    assert main(["ingest", "responses", str(write_lines(tmp_path / "n.jsonl", answers)), "--dataset", "d",
                 "--warehouse", wh]) == 0
    assert main(["ingest", "refusal", str(write_lines(tmp_path / "r.jsonl", refusals)), "--dataset", "d",
                 "--warehouse", wh]) == 0
    con = duckdb.connect(wh)
    try:   # a collected refusal answer that could not be read is stored so (migration 008)
        con.execute("UPDATE refusal_responses SET valid = false, invalid_reason = 'not JSON' WHERE world_id = 'w1'")
        rows = queries.fetch_df(con, "answer_sources", ["d"] * 4)
    finally:
        con.close()
    table = answers_table(rows).set_index("question")
    counts = ["answers", "valid", "invalid (kept)", "unavailable", "no answer"]
    assert table.loc["decision", counts].tolist() == [3, 1, 1, 1, 1]
    assert table.loc["refusal probe", counts].tolist() == [2, 0, 1, 1, 2]
    assert table.loc["decision", "from"] == "qlb ingest of n.jsonl"
    assert answers_sentence(rows) == (
        "1 of the dataset's 4 worlds has a valid decision answer from m (25.0%); 1 invalid, 1 unavailable, 1 never "
        "answered; the others enter every audit as unavailable (no prediction field released; an invalid answer is "
        "kept, never repaired), so every world stays in every figure's denominator.")
