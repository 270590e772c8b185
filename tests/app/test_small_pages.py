"""The Collection, Data, Glossary and QuasiLeak pages after a privacy board's review: counts that reconcile with
the Data page, tables and commands that read whole at 1,024 px, runs that stopped early easy to find, plain words
for the kinds of file and an own ontology's notes, the terms the pages use in the Glossary, and no "Recompute now"
on a dataset without a QuasiLeak corpus."""
from __future__ import annotations

import html
import json
import re
import shutil

import duckdb

from tests.app.test_pages import collected_warehouse, frames, opened, texts  # noqa: F401  (a fixture)

TABLE_PX = 564          # the width a table gets on a 1,024 px screen with the sidebar open


def widths(at, grid_columns: list[str]) -> dict[str, int]:
    """The fixed widths in pixels (label -> px) of the grid showing exactly ``grid_columns``."""
    grid = next(df for df in at.dataframe if list(df.value.columns) == grid_columns)
    return {label: config["width"] for label, config in json.loads(grid.proto.columns or "{}").items()
            if isinstance(config.get("width"), int)}


def grid_widths(at, columns: list[str], grid_columns: list[str] | None = None) -> int:
    """The summed fixed widths of ``columns`` in the grid of ``grid_columns`` (default: those columns)."""
    px = widths(at, grid_columns or columns)
    assert all(c in px for c in columns), (columns, px)
    return sum(px[c] for c in columns)


def test_collection_counts_reconcile_and_its_tables_fit_a_small_screen(collected_warehouse, monkeypatch):
    path, first, second = collected_warehouse
    with opened(path, "pages/collection.py", monkeypatch) as at:
        assert not at.exception, [e.value for e in at.exception]
        summary = html.unescape(texts(at))
        assert ("Counted: every answer stored across all collection runs, including 2 earlier answers replaced by a "
                "later run (--replace-invalid). The current answers, which the audits read and the Data page lists: "
                "4 native (4 valid, 0 invalid, 0 unavailable).") in summary
        assert "2 runs, newest first. None stopped early." in summary
        assert not [t for t in at.toggle if t.key == "stopped_only"]           # nothing to filter
        runs = next(f for f in frames(at) if "stopped early" in f.columns)
        assert list(runs.columns) == ["started (UTC)", "model", "probe", "asked via", "valid", "not valid",
                                      "stopped early"]
        assert runs["asked via"].tolist() == ["python", "python"]
        assert grid_widths(at, list(runs.columns)) <= TABLE_PX
        calls = next(f for f in frames(at) if "request sha256" in f.columns)
        assert "called (UTC)" not in calls.columns
        assert grid_widths(at, list(calls.columns)) <= TABLE_PX
        assert any(re.fullmatch(r"Attempt 1, called 20\d\d-\d\d-\d\d \d\d:\d\d:\d\d UTC: valid", c.value)
                   for c in at.caption)
        reasons = next(f for f in frames(at) if list(f.columns) == ["outcome", "reason", "answers"])
        assert reasons["answers"].sum() == 2 and grid_widths(at, list(reasons.columns)) <= TABLE_PX
        said = next(m.value for m in at.markdown if "earlier answers of this dataset were replaced" in m.value)
        assert f"2 of m1 by run {second}" in said.replace("\\", "")
        every = next(e for e in at.expander if e.label.startswith("Every replaced answer (2)"))
        assert any("replaced by run" in d.value.columns for d in every.dataframe)


def test_runs_that_stopped_early_are_counted_opened_and_filtered(collected_warehouse, monkeypatch, tmp_path):
    path, first, second = collected_warehouse
    copy = tmp_path / "stopped.duckdb"
    shutil.copy(path, copy)
    con = duckdb.connect(str(copy))
    con.execute("UPDATE collections SET stopped = 'HTTP 429 Too Many Requests (world w3)' WHERE collection_id = ?",
                [first])
    con.close()
    with opened(copy, "pages/collection.py", monkeypatch) as at:
        assert not at.exception, [e.value for e in at.exception]
        assert "1 of them stopped early" in texts(at)
        assert "1 run stopped early" in html.unescape(texts(at))
        picker = at.selectbox(key="collection")
        assert picker.value == first                                    # the newest run that stopped early
        assert any(o.endswith("· stopped early") for o in picker.options)
        assert next(f for f in frames(at) if "stopped early" in f.columns)["stopped early"].tolist() == ["", "yes"]
        at.toggle(key="stopped_only").set_value(True).run()
        assert not at.exception, [e.value for e in at.exception]
        assert next(f for f in frames(at) if "stopped early" in f.columns)["stopped early"].tolist() == ["yes"]


def test_the_collect_commands_keep_each_option_with_its_value(demo_warehouse, monkeypatch):
    """At 1,024 px a long one-line command broke "--" from "warehouse" and options from their values."""
    import shlex
    with opened(demo_warehouse, "pages/collection.py", monkeypatch) as at:
        assert not at.exception, [e.value for e in at.exception]
        blocks = [c.value for c in at.code]
    assert blocks
    assert all(any(line.startswith("  --") for line in b.splitlines()) for b in blocks if "qlb " in b)  # continued
    for block in blocks:
        for line in block.splitlines():
            if line.startswith("  "):                                   # a continued command: one option a line
                assert re.fullmatch(r"  --[\w-]+( \S+)? \\|  --[\w-]+( \S+)?", line), line
                assert len(line) <= 60 or line.startswith("  --warehouse "), line   # the path is the user's
    commands = [shlex.split(c.replace("\\\n", " ")) for b in blocks
                for c in re.split(r"\n(?!  )", b) if c.startswith("qlb")]
    typed = next(c for c in commands if c[:3] == ["qlb", "collect", "native"] and "typed" in c)
    assert typed[typed.index("--warehouse") + 1] == str(demo_warehouse.resolve())
    assert typed[typed.index("--base-url") + 1] == "http://127.0.0.1:8000"


def test_the_data_page_names_the_kinds_plainly_and_words_an_own_ontology_note(demo_warehouse, monkeypatch, tmp_path):
    """On an own-ontology dataset: no unexplained TUPLE under the kind of file, the ontology's note in an
    auditor's words under an expander (not an info box of dotted paths)."""
    from tests.records.ontologies import LENDING_PATH
    from warehouse.db import writer
    from warehouse.ontologies import store_ontology
    wh = tmp_path / "qlb.duckdb"
    shutil.copy(demo_warehouse, wh)
    onto = json.loads(LENDING_PATH.read_text("utf-8"))
    onto["cost_profiles"] = {"authored": {}, "counter_x3": {"asymmetric_column_class": "COUNTER_OFFER",
                                                            "asymmetric_column_x": 3.0}}
    with writer(wh) as con:
        store_ontology(con, "lending", json.dumps(onto), "lending_ontology.json")
    with opened(wh, "pages/data.py", monkeypatch, query={"dataset": "lending"}) as at:
        assert not at.exception, [e.value for e in at.exception]
        assert not any("TUPLE" in c.value for c in at.caption), [c.value for c in at.caption if "TUPLE" in c.value]
        assert any(c.value.startswith("Decision cases (worlds), one per line") for c in at.caption)
        assert not any("cost_profiles" in i.value for i in at.info)
        notes = next(e for e in at.expander if e.label.startswith("Notes on your ontology (1 note)"))
        worded = notes.markdown[0].value.replace("\\", "")
        assert "The cost profile counter_x3 scales the cost of mistakes whose true class is COUNTER_OFFER" in worded
        assert "domain consumer_loans has no class COUNTER_OFFER" in worded and "cost_profiles." not in worded
    with opened(wh, "pages/data.py", monkeypatch) as at:                 # the demo: TUPLE, explained once
        assert not at.exception, [e.value for e in at.exception]
        default = next(m.value for m in at.markdown if "uses the default **TUPLE** ontology" in m.value)
        assert "TUPLE is qlb\\'s built\\-in decision task" in default
        assert not [e for e in at.expander if e.label.startswith("Notes on your ontology")]


def test_the_data_page_counts_one_line_singular_and_shows_whole_model_names(demo_warehouse, monkeypatch, tmp_path):
    from tests.conftest import two_pairs, write_lines
    from warehouse.db import writer
    from warehouse.ingest import IngestRequest, ingest_file
    wh = tmp_path / "qlb.duckdb"
    shutil.copy(demo_warehouse, wh)
    rows = two_pairs()
    rows[1]["mechanism"] = "author_is_minor"                     # one rejected line
    with writer(wh) as con:
        ingest_file(con, IngestRequest("worlds", write_lines(tmp_path / "mine.jsonl", rows), "mine"))
    with opened(wh, "pages/data.py", monkeypatch, query={"dataset": "mine"}) as at:
        assert not at.exception, [e.value for e in at.exception]
        assert any(c.value.startswith("1 rejected line (at most 2,000 shown)") for c in at.caption)
        assert not any("1 rejected lines" in c.value for c in at.caption)
    with opened(wh, "pages/data.py", monkeypatch) as at:                 # the demo's 9 invalid responses
        assert not at.exception, [e.value for e in at.exception]
        invalid = next(f for f in frames(at) if "response as stored" in f.columns)
        assert list(invalid.columns)[-1] == "source"                     # the long one last
        assert grid_widths(at, ["model", "world", "reason", "response as stored"], list(invalid.columns)) <= TABLE_PX
        assert widths(at, list(invalid.columns))["model"] >= 140         # modrouter-http-v2 whole
        by_source = next(f for f in frames(at) if list(f.columns) == ["model", "from", "responses"])
        assert by_source["responses"].sum() == len(invalid) == 9
        assert set(by_source["from"]) == {"native_responses.jsonl"}


def test_the_glossary_defines_the_pages_terms_in_plain_words(demo_warehouse, monkeypatch):
    with opened(demo_warehouse, "pages/glossary.py", monkeypatch) as at:
        assert not at.exception, [e.value for e in at.exception]
        lines = [line.replace("\\", "") for line in texts(at).splitlines() if line.startswith("- **")]
    terms = {re.match(r"- \*\*(.+?)\*\*", line)[1]: line for line in lines}
    for term in ("Data fingerprint", "Transport", "Latency p50 / p90 / p99", "Quarantine", "Micro average",
                 "Precision / recall / F1", "PII", "Cost units", "Collection run", "[95% CI]", "95% interval",
                 # the names the pages use for one thing each (tests/present/test_vocabulary.py)
                 "Attacker", "Attacker families", "Recovery audit", "Defense", "Defense-aware attacker",
                 "Audit run (run)", "Task", "Decision task", "Native response", "Refusal probe", "Residual scores",
                 "Release view", "Mapper", "Asked via", "Not valid"):
        assert term in terms, term
    assert "one of the recipient's downstream workflows" in terms["Decision task"]        # not a task
    assert "(the paper's output defense)" in terms["Defense"]
    assert not re.search(r"\{\w+(\[[^\]]*\])?\}", "\n".join(lines))   # every placeholder filled in ({s0, s1} stays)
    assert "test_used_for_selection" not in terms
    assert "the test worlds were not used to choose the attacker" in terms["Test worlds kept out of every choice"].lower()
    assert "0% or 100%" in terms["Wilson interval"] and "at all" not in terms["Wilson interval"]
    shown = "\n".join(lines)
    assert not re.search(r"paper (Table|H\.)", shown)                  # a reference follows its words
    assert terms["Both-worlds-correct subset"].endswith("(The TUPLE paper's Table 29.)")      # the pointer comes last
    assert terms["WCPQ learned (budget, pair loss)"].endswith("(The TUPLE paper's Appendix H.2.)")
    assert "(the TUPLE paper's Table 2)" in terms["The papers (TUPLE, QuasiLeak)"]           # the pattern, explained
    assert "6.25%" in terms["Uniform guess"]                             # 1/16 exactly; no 14.29%-style cells
    assert not re.search(r"\d\.\d\d%", terms["Uniform guess"].replace("6.25%", ""))


def test_quasileak_without_a_corpus_offers_no_recompute_and_says_what_to_load(collected_warehouse, monkeypatch):
    """On a dataset without a corpus, "Recompute now" stored a run with no QuasiLeak scores."""
    path, _, _ = collected_warehouse
    with opened(path, "pages/quasileak.py", monkeypatch) as at:
        assert not at.exception, [e.value for e in at.exception]
        assert not [b for b in at.button if b.key == "ql_recompute"]
        assert any("has no QuasiLeak corpus" in i.value and "kind: QuasiLeak documents" in i.value for i in at.info)
        assert at.code[0].value.startswith("qlb ingest corpus CORPUS.jsonl \\\n  --dataset ds \\\n")
        assert any(c.value.startswith("A separate audit of text detectors, not of your model's decision outputs")
                   for c in at.caption)
