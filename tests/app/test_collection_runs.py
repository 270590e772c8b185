"""The Collection page's runs after an auditor's walk-through: six native runs of one model looked alike (no start
time, transport or answer mode in the table), and a letters run whose answers came back without log-probabilities
(the CLI warned "no logprobs") was not flagged. Runs collected for real from a stub OpenAI-compatible server."""
from __future__ import annotations

import html
import json
import math
import re

import pandas as pd
import pytest

from dashboard.collection_runs import (RUNS_WIDTHS, md_code, no_logprobs_counts, no_logprobs_warning, run_labels,
                                       run_options, run_sentence, runs_table)
from tests.app.test_pages import frames, opened, texts
from tests.app.test_small_pages import TABLE_PX, grid_widths


@pytest.fixture(scope="module")
def letters_warehouse(tmp_path_factory):
    """Four worlds and three openai runs (newest last): ``plain`` in letters mode from a server that sends no
    logprobs (--limit 3), ``lp`` in letters mode with logprobs, ``js`` in JSON mode (read only by the tests)."""
    from qlb.runs.collect import CollectOptions, collect
    from tests.collect.stubs import StubServer, chat
    from tests.conftest import two_pairs, write_lines
    from warehouse.db import writer
    from warehouse.ingest import IngestRequest, ingest_file

    def json_chat(body: dict):
        crit = list(json.loads(body["messages"][1]["content"])["criteria"])
        return chat(json.dumps({"choice": crit[0], "probabilities": {c: 1 / len(crit) for c in crit},
                                "confidence": 0.5}))

    tmp_path = tmp_path_factory.mktemp("letters")
    path = tmp_path / "qlb.duckdb"
    ids = {}
    with writer(path) as con:
        ingest_file(con, IngestRequest("worlds", write_lines(tmp_path / "worlds.jsonl", two_pairs()), "ds"))
        for model, answer, respond, limit in (
                ("plain", "letters", lambda p, b, h, n: chat("A"), 3),
                ("lp", "letters", lambda p, b, h, n: chat("A", [{"token": "A", "logprob": math.log(0.8)},
                                                                 {"token": "B", "logprob": math.log(0.2)}]), None),
                ("js", "json", lambda p, b, h, n: json_chat(b), None)):
            with StubServer(respond) as stub:
                done = collect(con, CollectOptions(probe="native", dataset_id="ds", model=model, transport="openai",
                                                   base_url=stub.url + "/v1", endpoint_model="e", answer=answer,
                                                   limit=limit))
            assert done.stopped is None and done.valid == (limit or 4)
            ids[model] = done.collection_id
    return path, ids


def _stored(path):
    import duckdb
    from warehouse import queries
    con = duckdb.connect(str(path), read_only=True)
    try:
        return queries.fetch_df(con, "collections", ["ds"]), queries.fetch_df(con, "collection_no_logprobs", ["ds"])
    finally:
        con.close()


def test_the_warehouse_counts_letter_answers_that_came_without_logprobs(letters_warehouse):
    """The CLI's count is not stored: it is read back from the archived raw answers, letters runs only."""
    path, ids = letters_warehouse
    runs, counts = _stored(path)
    got = {r.collection_id: (r.answers, r.no_logprobs) for r in counts.itertuples(index=False)}
    assert got == {ids["plain"]: (3, 3), ids["lp"]: (4, 0)}                 # the JSON run is not a letters run
    lacking = no_logprobs_counts(runs, counts)
    assert dict(zip(runs["model"], lacking)) == {"plain": 3, "lp": 0, "js": 0}
    said = no_logprobs_warning(runs, counts)
    assert said.startswith("1 letters run got answers without log-probabilities (no logprobs under asked via): "
                           "plain (started 20")
    assert ": 3 of its 3 valid answers." in said and "--answer json" in said
    assert no_logprobs_warning(runs, counts[counts["no_logprobs"] == 0]) is None


def test_the_runs_table_says_when_and_how_each_run_asked_and_fits_a_small_screen(letters_warehouse):
    path, ids = letters_warehouse
    runs, counts = _stored(path)
    shown = runs_table(runs, no_logprobs_counts(runs, counts))
    assert list(shown.columns) == list(RUNS_WIDTHS) == ["started (UTC)", "model", "probe", "asked via", "valid",
                                                        "not valid", "stopped early"]
    assert sum(RUNS_WIDTHS.values()) <= TABLE_PX - 16                   # room for a long table's scroll bar
    assert all(re.fullmatch(r"20\d\d-\d\d-\d\d \d\d:\d\d", t) for t in shown["started (UTC)"])
    assert dict(zip(shown["model"], shown["asked via"])) == {
        "plain": "openai · letters (no logprobs)", "lp": "openai · letters", "js": "openai · json"}
    assert dict(zip(shown["model"], shown["valid"])) == {"plain": 3, "lp": 4, "js": 4}


def test_runs_of_one_model_read_apart_in_the_picker_and_under_it():
    """Six runs of one model: the picker's lines carry the time, how it asked and the options set; two that would
    still read alike get their run id; the line under the picker names the endpoint as code (never a link)."""
    def run(cid, minute, settings, endpoint="http://127.0.0.1:8765/v1/chat/completions", stopped=None):
        return {"collection_id": cid, "model": "router-500", "probe": "native", "transport": "openai",
                "endpoint": endpoint, "endpoint_model": "claims-router", "settings": json.dumps(settings),
                "started_at": pd.Timestamp(f"2026-12-04 19:{minute}:07"), "stopped": stopped}
    base = {"answer": "json", "api_key_env": None, "concurrency": 1, "interval": 0.0, "limit": 30,
            "replace_invalid": False, "retries": 3, "schema": True, "splits": None, "timeout": 180.0}
    runs = pd.DataFrame([run("col-a", "55", base, stopped="HTTP 500 (world w_0019)"),
                         run("col-b", "55", base | {"retries": 0}),
                         run("col-c", "56", base | {"retries": 0, "splits": ["test"], "replace_invalid": True,
                                                    "schema": False, "timeout": 1.0}),
                         run("col-d", "57", base, endpoint="http://127.0.0.1:8799/v1/chat/completions"),
                         run("col-e", "57", base, endpoint="http://127.0.0.1:8765/chat/completions")])
    labels = run_labels(runs, pd.Series([0] * len(runs)))
    assert labels["col-a"] == ("2026-12-04 19:55 · router-500 · native · openai · json · --limit 30 "
                               "--retries 3 · stopped early")
    assert labels["col-b"] == "2026-12-04 19:55 · router-500 · native · openai · json · --limit 30"
    assert run_options(runs.loc[2, "settings"]) == ["--limit 30", "--split test", "--timeout 1", "--replace-invalid",
                                                    "--no-schema"]
    assert labels["col-d"].endswith(" · col-d") and labels["col-e"].endswith(" · col-e")     # alike but for the URL
    assert len(set(labels.values())) == len(runs)
    said = run_sentence(runs.loc[3])
    assert "asked via openai, json answers at ` http://127.0.0.1:8799/v1/chat/completions `" in said
    assert md_code("a `b` c") == "`` a `b` c ``"                        # a backtick in it cannot end the span
    assert "started 2026-12-04 19:57:07 UTC" in said and said.endswith("options \\-\\-limit 30 \\-\\-retries 3.")


def test_the_collection_page_flags_a_letters_run_without_logprobs(letters_warehouse, monkeypatch):
    path, ids = letters_warehouse
    with opened(path, "pages/collection.py", monkeypatch) as at:
        assert not at.exception, [e.value for e in at.exception]
        warned = [html.unescape(w.value).replace("\\", "") for w in at.warning]
        assert any(w.startswith("1 letters run got answers without log-probabilities") and "plain (started" in w
                   for w in warned), warned
        shown = next(f for f in frames(at) if "asked via" in f.columns)
        assert shown.loc[shown["model"] == "plain", "asked via"].tolist() == ["openai · letters (no logprobs)"]
        assert grid_widths(at, list(shown.columns)) <= TABLE_PX
        picker = at.selectbox(key="collection")
        assert picker.value == ids["js"]                                  # the newest
        at.selectbox(key="collection").select(ids["plain"]).run()
        assert not at.exception, [e.value for e in at.exception]
        said = html.unescape(texts(at)).replace("\\", "")
        assert "3 of this run's valid answers came without log-probabilities" in said
        assert any("letters answers at" in c.value for c in at.caption)
