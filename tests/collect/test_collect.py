"""`qlb collect` against real servers on loopback (COLLECT.md): the transports, the error rules,
resumption, --replace-invalid, the archive, and what a request body may never contain."""
from __future__ import annotations

import copy
import functools
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from qlb.cli import main
from qlb.collect.answers import letters_answer
from qlb.collect.requests import evaluator_keys
from qlb.simulate.tuple_sim import simulate_worlds
from tests.collect.stubs import StubServer, chat, native_answer, ok, refusal_answer, slow, typed
from tests.conftest import ROOT, write_lines
from warehouse.db import writer
from warehouse.ingest import IngestRequest, ingest_file

N_PAIRS = 10


def small_worlds(n_pairs: int = N_PAIRS) -> list[dict]:
    """The first pairs of the simulated design (all three splits present), a fresh copy each call."""
    return copy.deepcopy(_first_pairs(n_pairs))


@functools.cache
def _first_pairs(n_pairs: int) -> list[dict]:
    worlds = simulate_worlds(7)
    pairs: list[str] = []
    for w in worlds:
        if w["pair_id"] not in pairs:
            pairs.append(w["pair_id"])
    keep = set(pairs[:n_pairs])
    return [w for w in worlds if w["pair_id"] in keep]


@pytest.fixture
def wh(tmp_path) -> Path:
    path = tmp_path / "wh.duckdb"
    worlds = write_lines(tmp_path / "worlds.jsonl", small_worlds())
    with writer(path) as con:
        ingest_file(con, IngestRequest("worlds", worlds, "ds"))
    return path


def collect(wh: Path, *args: str) -> int:
    return main(["collect", *args, "--dataset", "ds", "--warehouse", str(wh)])


def rows(wh: Path, sql: str, params=()) -> list[tuple]:
    con = duckdb.connect(str(wh), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def stored(wh: Path, table: str = "responses", model: str = "m1") -> dict[str, tuple]:
    out = rows(wh, f"SELECT world_id, status, choice, valid, invalid_reason FROM {table} WHERE model = ?", [model])
    return {r[0]: r[1:] for r in out}


def world_ids() -> list[str]:
    return sorted(w["world_id"] for w in small_worlds())


# ------------------------------------------------------------------------------------- typed

def test_typed_answers_nested_and_flat_are_stored_valid(wh, capsys):
    def respond(path, body, headers, n):
        answer = native_answer(body)
        return ok({"answers": {"coarse_cause": answer}} if n % 2 else answer)   # both shapes
    with StubServer(respond) as stub:
        assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url, "--json") == 0
        assert {p for p, _, _ in stub.requests} == {"/v1/decisions"}
    summary = json.loads(capsys.readouterr().out)
    n = len(world_ids())
    assert summary["asked"] == summary["stored"] == summary["valid"] == n and summary["stopped"] is None
    got = stored(wh)
    assert sorted(got) == world_ids() and all(v[0] == "ok" and v[2] for v in got.values())


def test_refusal_probe_asks_mechanisms_then_withhold(wh, capsys):
    with StubServer(lambda p, b, h, n: typed(b)) as stub:
        assert collect(wh, "refusal", "--model", "m1", "--transport", "typed", "--base-url", stub.url) == 0
        body = stub.bodies()[0]
    q = body["questions"][0]
    assert q["key"] == "fine_mechanism_audit"
    labels = list(q["criteria"])
    assert labels[-1] == "WITHHOLD" and labels[:-1] == sorted(labels[:-1]) and len(labels) == 17
    got = stored(wh, "refusal_responses")
    assert len(got) == len(world_ids()) and {v[1] for v in got.values()} == {"WITHHOLD"}


def test_invalid_probabilities_and_unreadable_bodies_are_stored_invalid(wh, capsys):
    def respond(path, body, headers, n):
        if n == 1:
            return ok(native_answer(body, probabilities={c: 0.9 for c in body["questions"][0]["criteria"]}))
        if n == 2:
            return 200, {}, "this is not json"
        if n == 3:
            return ok(native_answer(body, choice="NOT_A_CLASS"))
        return ok(native_answer(body))
    with StubServer(respond) as stub:
        assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url) == 0
    reasons = sorted(v[3] for v in stored(wh).values() if not v[2])
    assert len(reasons) == 3
    assert any("sum" in r for r in reasons) and any("not valid JSON" in r for r in reasons)
    assert any("NOT_A_CLASS" in r for r in reasons)
    raw = rows(wh, "SELECT raw_answer FROM collection_calls WHERE outcome = 'invalid' ORDER BY called_at")
    assert any(r[0] == "this is not json" for r in raw)              # the raw body is archived


def test_a_400_is_stored_unavailable(wh, capsys):
    with StubServer(lambda p, b, h, n: ok({"error": "bad"}, status=400) if n <= 2 else typed(b)) as stub:
        assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url) == 0
    statuses = [v[0] for v in stored(wh).values()]
    assert statuses.count("unavailable") == 2 and len(statuses) == len(world_ids())
    assert rows(wh, "SELECT count(*) FROM collection_calls WHERE http_status = 400")[0][0] == 2


# --------------------------------------------------------------------------- stop and resume

def test_429_mid_run_stops_with_exit_4_and_resume_asks_only_the_rest(wh, capsys):
    n_worlds = len(world_ids())
    with StubServer(lambda p, b, h, n: ok({"error": "slow down"}, status=429, headers={"Retry-After": "0"})
                    if n == 6 else typed(b)) as stub:
        code = collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url)
        first = len(stub.requests)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 4
    assert len(err) == 1 and "429" in err[0] and "resume with: qlb collect native" in err[0]
    assert len(stored(wh)) == 5 and first == 6                        # the 429 world is not stored
    with StubServer(lambda p, b, h, n: typed(b)) as stub:
        assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url, "--json") == 0
        asked_again = len(stub.requests)
    summary = json.loads(capsys.readouterr().out)
    assert asked_again == n_worlds - 5 and summary["skipped_existing"] == 5
    assert sorted(stored(wh)) == world_ids()                          # every world exactly once (primary key)
    assert rows(wh, "SELECT count(*) FROM collection_calls WHERE outcome = 'stop'")[0][0] == 1


def test_retries_honour_retry_after_then_succeed(wh, capsys):
    with StubServer(lambda p, b, h, n: ok({}, status=503, headers={"Retry-After": "0.2"}) if n == 1
                    else typed(b)) as stub:
        t0 = time.monotonic()
        assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url,
                       "--retries", "2", "--limit", "1") == 0
        assert time.monotonic() - t0 >= 0.2
    assert rows(wh, "SELECT attempt, http_status, outcome FROM collection_calls ORDER BY attempt") == \
        [(1, 503, "stop"), (2, 200, "valid")]


@pytest.mark.parametrize("failure", ["500", "timeout"])
def test_server_errors_and_timeouts_stop(wh, capsys, failure):
    def respond(path, body, headers, n):
        if n == 3:
            if failure == "timeout":
                slow(1.5)
            else:
                return ok({"error": "boom"}, status=500)
        return typed(body)
    with StubServer(respond) as stub:
        code = collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url,
                       "--timeout", "0.5")
    err = capsys.readouterr().err
    assert code == 4 and len(stored(wh)) == 2
    assert ("HTTP 500" in err) if failure == "500" else ("timeout" in err)


def test_connection_refused_stops(wh, capsys):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]                                     # nothing listens once closed
    code = collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", f"http://127.0.0.1:{port}")
    assert code == 4 and "connection error" in capsys.readouterr().err and stored(wh) == {}


def test_replace_invalid_asks_only_invalid_and_unavailable_and_keeps_history(wh, capsys):
    def first(path, body, headers, n):
        if n in (2, 4):
            return ok(native_answer(body, confidence=7.0))             # invalid: confidence outside [0, 1]
        if n == 5:
            return ok({}, status=404)
        return typed(body)
    with StubServer(first) as stub:
        assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url) == 0
    before = stored(wh)
    bad = sorted(w for w, v in before.items() if v[0] != "ok" or not v[2])
    assert len(bad) == 3
    with StubServer(lambda p, b, h, n: typed(b)) as stub:
        assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url,
                       "--replace-invalid") == 0
        asked = len(stub.requests)
    after = stored(wh)
    assert asked == 3 and sorted(after) == world_ids() and all(v[0] == "ok" and v[2] for v in after.values())
    history = rows(wh, "SELECT world_id, valid, status, replaced_by FROM response_history ORDER BY world_id")
    assert [h[0] for h in history] == bad and all(h[3].startswith("col-") for h in history)


def test_kill_9_mid_run_then_resume_stores_every_world_exactly_once(wh, tmp_path):
    n_worlds = len(world_ids())

    def respond(path, body, headers, n):
        slow(0.15)                    # answers arrive over ~3 s; batches are committed at least once a second
        return typed(body)
    with StubServer(respond) as stub:
        cmd = [sys.executable, "-m", "qlb", "collect", "native", "--dataset", "ds", "--model", "m1",
               "--transport", "typed", "--base-url", stub.url, "--warehouse", str(wh)]
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.time() + 60
        while len(stub.requests) < (2 * n_worlds) // 3 and time.time() < deadline:
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        partial = len(stored(wh))
        assert 0 < partial < n_worlds
        done = subprocess.run(cmd + ["--json"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(stored(wh)) == world_ids()
    summary = json.loads(done.stdout)
    assert summary["skipped_existing"] == partial and summary["stored"] == n_worlds - partial


# ----------------------------------------------------------------------------------- openai

def test_openai_json_with_fenced_content_and_a_schema(wh, capsys):
    def respond(path, body, headers, n):
        user = json.loads(body["messages"][1]["content"])
        answer = {"choice": list(user["criteria"])[0],
                  "probabilities": {c: 1 / len(user["criteria"]) for c in user["criteria"]}, "confidence": 0.4}
        text = json.dumps(answer)
        return chat(f"```json\n{text}\n```" if n % 2 else text)
    with StubServer(respond) as stub:
        assert collect(wh, "native", "--model", "m1", "--transport", "openai", "--base-url", stub.url + "/v1",
                       "--endpoint-model", "served-llm", "--limit", "4") == 0
        path, body, _ = stub.requests[0]
    assert path == "/v1/chat/completions" and body["model"] == "served-llm"
    assert body["response_format"]["type"] == "json_schema"
    schema = body["response_format"]["json_schema"]["schema"]
    assert set(schema["required"]) == {"choice", "probabilities", "confidence"}
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    got = stored(wh)
    assert len(got) == 4 and all(v[2] for v in got.values())


def test_openai_no_schema(wh, capsys):
    with StubServer(lambda p, b, h, n: chat(json.dumps({"choice": "x"}))) as stub:
        collect(wh, "native", "--model", "m1", "--transport", "openai", "--base-url", stub.url,
                "--endpoint-model", "e", "--no-schema", "--limit", "1")
        assert "response_format" not in stub.bodies()[0]


def test_letters_reads_top_logprobs_exactly_as_specified():
    cands = ["ADDRESS", "DAMAGE", "DELAY", "DELIVERY_RECORD"]
    lp = [{"token": " B", "logprob": math.log(0.5)},        # a leading space: counts for B
          {"token": "B", "logprob": math.log(0.1)},         # same letter again: summed
          {"token": "a", "logprob": math.log(0.2)},         # lower case: not a candidate letter
          {"token": "A.", "logprob": math.log(0.05)},       # punctuation: not a candidate letter
          {"token": "D", "logprob": math.log(0.15)},
          {"token": "Z", "logprob": math.log(0.01)}]        # not a candidate
    payload = json.loads(chat("B", lp)[2])
    got = letters_answer(payload, cands, "native")
    assert got["choice"] == "DAMAGE" and got["confidence"] is None
    total = 0.5 + 0.1 + 0.15
    assert got["probabilities"] == pytest.approx({"DAMAGE": 0.6 / total, "DELIVERY_RECORD": 0.15 / total})
    assert "ADDRESS" not in got["probabilities"] and "DELAY" not in got["probabilities"]   # missing, never 0


def test_openai_letters_end_to_end(wh, capsys):
    def respond(path, body, headers, n):
        return chat("A", [{"token": "A", "logprob": math.log(0.8)}, {"token": " C", "logprob": math.log(0.2)}])
    with StubServer(respond) as stub:
        assert collect(wh, "native", "--model", "m1", "--transport", "openai", "--base-url", stub.url,
                       "--endpoint-model", "e", "--answer", "letters", "--limit", "3") == 0
        body = stub.bodies()[0]
    assert body["logprobs"] is True and body["top_logprobs"] == 20 and "response_format" not in body
    probs = rows(wh, "SELECT probabilities, confidence, valid FROM responses")
    for p, conf, valid in probs:
        assert set(json.loads(p)) == {2 and k for k in json.loads(p)} and conf is None and valid


# ---------------------------------------------------------------------- what never leaves

def test_no_request_ever_carries_evaluator_fields_and_the_key_stays_secret(wh, capsys, monkeypatch):
    secret = "sk-test-5f1e0d9c-never-store-me"
    monkeypatch.setenv("QLB_TEST_KEY", secret)
    gold = {(w["world_id"]): (w["coarse"], w["mechanism"]) for w in small_worlds()}
    ids = {w["world_id"] for w in small_worlds()} | {w["pair_id"] for w in small_worlds()}
    with StubServer(lambda p, b, h, n: typed(b)) as stub:
        for probe in ("native", "refusal"):
            assert collect(wh, probe, "--model", "m1", "--transport", "typed", "--base-url", stub.url,
                           "--api-key-env", "QLB_TEST_KEY") == 0
        requests = list(stub.requests)
    out = capsys.readouterr()
    for _, body, headers in requests:
        assert evaluator_keys(body) == set()
        text = json.dumps(body)
        assert not any(f'"{i}"' in text for i in ids)                  # no world or pair id as a value
        assert headers["authorization"] == f"Bearer {secret}"
        state_values = json.dumps(body["state"])
        assert all(f'"{c}"' not in state_values and f'"{m}"' not in state_values for c, m in gold.values())
    assert secret not in out.out + out.err
    con = duckdb.connect(str(wh), read_only=True)
    try:
        for (table,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall():
            dump = con.execute(f'SELECT * FROM "{table}"').df().to_csv()
            assert secret not in dump, table
    finally:
        con.close()
    assert secret.encode() not in Path(wh).read_bytes()


def test_a_provider_that_echoes_the_key_in_an_error_body_never_gets_it_archived(wh, monkeypatch):
    """A 401 body that repeats the key sent, whole and in the providers' partial form, is archived with both
    masked (the rest of the message kept); the answers of 200s are archived as they came."""
    secret = "sk-proj-4f1e0d9cA7b2Qx9ZLm3T8v"
    monkeypatch.setenv("QLB_TEST_KEY", secret)

    def respond(p, b, h, n):
        if n <= 2:
            return ok({"error": {"message": f"Incorrect API key provided: {h['authorization'][7:]}; partial "
                                            f"{secret[:8]}****************{secret[-4:]}."}}, status=401)
        return typed(b)
    with StubServer(respond) as stub:
        assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url,
                       "--api-key-env", "QLB_TEST_KEY") == 0
    bodies = [r[0] for r in rows(wh, "SELECT raw_answer FROM collection_calls WHERE http_status = 401")]
    assert len(bodies) == 2
    for body in bodies:
        assert secret not in body and secret[:8] not in body and secret[-4:] not in body
        assert "Incorrect API key provided: ***; partial ***" in body
    assert secret.encode() not in Path(wh).read_bytes()


def test_show_request_prints_the_body_and_asks_nothing(wh, capsys):
    assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", "http://127.0.0.1:9",
                   "--show-request") == 0
    body = json.loads(capsys.readouterr().out)
    assert body["questions"][0]["key"] == "coarse_cause" and evaluator_keys(body) == set()
    assert stored(wh) == {}


def test_show_request_after_every_world_is_answered_shows_the_first_worlds(wh, capsys):
    shown = []
    for _ in range(2):
        assert collect(wh, "native", "--model", "m1", "--transport", "python", "--target",
                       "tests.collect.targets:answer", "--show-request") == 0
        out, err = capsys.readouterr()
        shown.append((json.loads(out), err))
        if not stored(wh):
            assert collect(wh, "native", "--model", "m1", "--transport", "python",
                           "--target", "tests.collect.targets:answer") == 0
            capsys.readouterr()
    (before, quiet), (after, said) = shown
    assert after == before and quiet == ""              # the first world's body, before and after it was answered
    assert "nothing to ask: every world already has a stored answer; this is the request its first world" in said
    # a later qlb whose instruction changed: the body shown is what a new call would send, and it says so
    import qlb.collect.requests as requests
    changed = {**requests.INSTRUCTIONS, "native": requests.INSTRUCTIONS["native"] + " Be brief."}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(requests, "INSTRUCTIONS", changed)
        assert collect(wh, "native", "--model", "m1", "--transport", "python", "--target",
                       "tests.collect.targets:answer", "--show-request") == 0
    assert capsys.readouterr().err.strip().endswith(
        "this is the request a new call would send; its first world was asked with another (instruction version "
        "qlb-collect-2)")
    assert collect(wh, "native", "--model", "m1", "--transport", "python", "--target",
                   "tests.collect.targets:answer", "--show-request", "--replace-invalid") == 0
    assert "nothing to ask: no stored answer is invalid or unavailable;" in capsys.readouterr().err


def test_bad_usage_exits_2(wh, capsys):
    assert collect(wh, "native", "--model", "m1", "--transport", "typed") == 2        # no --base-url
    assert "--base-url" in capsys.readouterr().err
    assert collect(wh, "native", "--model", "m1", "--transport", "python", "--target", "nomodule") == 2


def test_python_target_end_to_end_and_a_raising_target_stops(wh, capsys):
    assert collect(wh, "native", "--model", "m1", "--transport", "python",
                   "--target", "tests.collect.targets:answer") == 0
    assert len(stored(wh)) == len(world_ids())
    assert collect(wh, "refusal", "--model", "m1", "--transport", "python",
                   "--target", "tests.collect.targets:broken") == 4
    assert "the target raised RuntimeError" in capsys.readouterr().err


def test_a_python_target_declines_a_world_and_exiting_stops(wh, capsys):
    """{"status": "unavailable", "reason": ...} stores that world unavailable with the reason and
    goes on; a target calling sys.exit stops the collection with its cause named."""
    assert collect(wh, "native", "--model", "m1", "--transport", "python",
                   "--target", "tests.collect.targets:declines_some") == 0
    answers = stored(wh)
    declined = {w: v for w, v in answers.items() if v[0] == "unavailable"}
    assert len(answers) == len(world_ids()) and 0 < len(declined) < len(answers)
    reasons = rows(wh, "SELECT DISTINCT reason FROM collection_calls WHERE outcome = 'unavailable'")
    assert reasons == [("the target declined: outside my remit",)]
    assert collect(wh, "refusal", "--model", "m1", "--transport", "python", "--target", "tests.collect.targets:exits") == 4
    assert "the target raised SystemExit: bye" in capsys.readouterr().err


def test_a_python_target_in_the_current_folder_is_found(wh, tmp_path, monkeypatch, capsys):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "my_walk_model.py").write_text("from tests.collect.targets import answer as decide\n")
    monkeypatch.chdir(folder)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(folder))] + [str(ROOT)])
    assert collect(wh, "native", "--model", "m1", "--transport", "python", "--target", "my_walk_model:decide") == 0
    assert len(stored(wh)) == len(world_ids())
    assert collect(wh, "native", "--model", "m2", "--transport", "python", "--target", "not_here_model:decide") == 2
    assert "looked in the current folder" in capsys.readouterr().err


def test_worlds_left_unasked_are_a_stop_not_a_finish(wh, capsys, monkeypatch):
    """If the dispatch ends before every world was asked (its processes died), the collection
    says so and exits 4 with the resume line instead of reporting a finished collection."""
    import qlb.runs.collect as run_collect
    real = run_collect.dispatch

    def short(items, *args, **kwargs):
        yield from real(items[:3], *args, **kwargs)
    monkeypatch.setattr(run_collect, "dispatch", short)
    with StubServer(lambda p, b, h, n: typed(b)) as stub:
        assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url) == 4
    err = capsys.readouterr().err
    assert f"{len(world_ids()) - 3} of {len(world_ids())} worlds were not asked" in err and "resume with" in err
    assert len(stored(wh)) == 3


def test_several_requests_in_flight_over_worker_processes(wh, capsys):
    """--concurrency 4: the requests overlap (the server sees up to four at once), every world is
    stored once, and a 429 still stops the collection and the rerun completes it."""
    from qlb.collect.dispatch import worker_processes
    assert worker_processes(1) == 1 and worker_processes(4, cpus=2) == 2 and worker_processes(3, cpus=4) == 3
    in_flight, peak = [0], [0]
    import threading
    lock = threading.Lock()

    def respond(path, body, headers, n):
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        slow(0.05)
        with lock:
            in_flight[0] -= 1
        return ok({}, status=429) if n == 9 else typed(body)
    with StubServer(respond) as stub:
        assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url,
                       "--concurrency", "4") == 4
        assert 1 < peak[0] <= 4
        partial = len(stored(wh))
        assert 0 < partial < len(world_ids())
    with StubServer(lambda p, b, h, n: typed(b)) as stub:
        assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url,
                       "--concurrency", "4") == 0
        assert len(stub.requests) == len(world_ids()) - partial
    assert sorted(stored(wh)) == world_ids()


def test_the_withhold_label_is_the_ontologys():
    """qlb.collect.requests keeps its own copy of WITHHOLD (worker processes import it without
    the ontology's validators): the two must agree."""
    from qlb.collect import requests
    from qlb.records.ontology import WITHHOLD
    assert requests.WITHHOLD == WITHHOLD
