"""A reviewer's walk of `qlb collect --transport openai` against a fake OpenAI-compatible server:
credentials in --base-url, a query in it, a URL without its scheme, the server's own error
messages and what to do about them, a SIGTERM, when each attempt was made, the letters prompt,
and the smaller readings (a fenced answer after a preamble, a letter that is not a candidate,
no logprobs, a 429 or a 5xx stop, counts of one)."""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time

import duckdb
import psutil
import pytest

from qlb.collect.answers import AnswerError, letters_answer
from qlb.collect.transports import OpenAITransport
from tests.collect.stubs import StubServer, chat, ok, slow, typed
from tests.collect.test_collect import collect, rows, stored, wh, world_ids  # noqa: F401 (wh: fixture)
from tests.conftest import ROOT

SECRET = "SuperSecretPw99"


def json_chat(body: dict) -> tuple[int, dict, str]:
    """A chat completion whose content is a valid JSON answer (native)."""
    user = json.loads(body["messages"][1]["content"])
    crit = list(user["criteria"])
    return chat(json.dumps({"choice": crit[0], "probabilities": {c: 1 / len(crit) for c in crit},
                            "confidence": 0.5}))


def openai(path, *extra: str, model: str = "m1") -> int:
    return collect(path, "native", "--model", model, "--transport", "openai", "--endpoint-model", "e", *extra)


def with_credential(url: str, how: str) -> str:
    """``url`` (http://127.0.0.1:PORT) with a credential in its user-info or in an api_key parameter."""
    if how == "userinfo":
        return url.replace("http://", f"http://alice:{SECRET}@") + "/v1"
    return f"{url}/v1?api_key={SECRET}"


# ------------------------------------------------------------------------ 1. credentials

@pytest.mark.parametrize("how", ["userinfo", "query"])
def test_a_credential_in_the_base_url_is_masked_in_the_resume_line_and_the_json(wh, capsys, how):  # noqa: F811
    with StubServer(lambda p, b, h, n: ok({"error": "slow down"}, status=429) if n == 3 else json_chat(b)) as stub:
        assert openai(wh, "--base-url", with_credential(stub.url, how), "--json") == 4
        paths = [p for p, _, _ in stub.requests]
    out, err = capsys.readouterr()
    assert SECRET not in out + err
    line = err.strip().splitlines()[-1]
    assert "resume with: qlb collect native" in line and "***" in line
    assert "put your credential back where *** is" in line and "--api-key-env" in line
    # the credential is still sent (the masking is only in what is shown and stored)
    assert (f"api_key={SECRET}" in paths[0]) == (how == "query")
    assert SECRET not in json.dumps(rows(wh, "SELECT * FROM collections", []), default=str)


def test_a_credential_in_the_base_url_is_not_logged_with_verbose(wh):  # noqa: F811
    """-v logs httpx's request lines: the URL in them is masked too."""
    with StubServer(lambda p, b, h, n: ok({}, status=503) if n == 2 else json_chat(b)) as stub:
        done = subprocess.run([sys.executable, "-m", "qlb", "-v", "collect", "native", "--dataset", "ds",
                               "--model", "m1", "--transport", "openai", "--endpoint-model", "e",
                               "--base-url", with_credential(stub.url, "query"), "--warehouse", str(wh)],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 4, done.stderr
    assert "HTTP Request: POST" in done.stderr and "api_key=***" in done.stderr
    assert SECRET not in done.stdout + done.stderr


# --------------------------------------------------------------------------- 2. the URL

def test_a_query_in_the_base_url_is_kept_after_the_path(wh, capsys):  # noqa: F811
    with StubServer(lambda p, b, h, n: json_chat(b)) as stub:
        assert openai(wh, "--base-url", stub.url + "/v1?api-version=2024-10-21", "--limit", "1") == 0
        assert openai(wh, "--base-url", f"{stub.url}/v1/?api_key={SECRET}&api-version=2024-10-21", "--limit", "1",
                      model="m2") == 0
        paths = [p for p, _, _ in stub.requests]
    assert paths == ["/v1/chat/completions?api-version=2024-10-21",
                     f"/v1/chat/completions?api_key={SECRET}&api-version=2024-10-21"]
    endpoints = dict(rows(wh, "SELECT model, endpoint FROM collections"))
    assert endpoints == {"m1": f"{stub.url}/v1/chat/completions?api-version=2024-10-21",
                         "m2": f"{stub.url}/v1/chat/completions?api_key=***&api-version=2024-10-21"}


def test_a_typed_path_is_appended_to_the_base_path_and_the_query_kept(wh, capsys):  # noqa: F811
    with StubServer(lambda p, b, h, n: typed(b)) as stub:
        assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url",
                       stub.url + "/api?tenant=7", "--path", "decide", "--limit", "1") == 0
        assert stub.requests[0][0] == "/api/decide?tenant=7"


# -------------------------------------------------------------------- 3. the URL's scheme

@pytest.mark.parametrize("url", ["127.0.0.1:8765/v1", "localhost:8765/v1", f"ftp://alice:{SECRET}@h/v1", "http://"])
def test_a_base_url_without_http_or_https_is_bad_usage_before_anything_is_stored(wh, capsys, url):  # noqa: F811
    assert openai(wh, "--base-url", url) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--base-url" in err and "http://HOST:PORT/v1" in err and SECRET not in err
    assert rows(wh, "SELECT count(*) FROM collections") == [(0,)]


def test_a_base_url_without_its_scheme_suggests_it(wh, capsys):  # noqa: F811
    assert openai(wh, "--base-url", "127.0.0.1:8765/v1") == 2
    assert "did you mean http://127.0.0.1:8765/v1?" in capsys.readouterr().err


# ------------------------------------------------------------------ 4. the server's words

def test_error_message_reads_openai_errors_plain_text_and_html():
    from qlb.collect.transports import error_message
    assert error_message('{"error": {"message": "response_format json_schema is not supported", "type": "x"}}') \
        == "response_format json_schema is not supported"
    assert error_message('{"error": "gone"}') == "gone"
    assert error_message('{"detail": "Not Found"}') == "Not Found"
    assert error_message("model   llama9\n not loaded") == "model llama9 not loaded"
    assert error_message("<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>") \
        == "502 Bad Gateway"
    assert error_message("") is None and error_message("{}") is None
    long = error_message("x" * 500)
    assert len(long) <= 200 and long.endswith("...")


def test_a_4xx_stores_the_servers_message_and_the_summary_says_what_to_do(wh, capsys):  # noqa: F811
    message = "response_format json_schema is not supported"
    with StubServer(lambda p, b, h, n: ok({"error": {"message": message, "type": "invalid_request_error"}},
                                          status=400)) as stub:
        assert openai(wh, "--base-url", stub.url + "/v1", "--limit", "3") == 0
    out, err = capsys.readouterr()
    assert rows(wh, "SELECT DISTINCT reason FROM collection_calls") == [(f"HTTP 400 Bad Request: {message}",)]
    assert f"unavailable: HTTP 400 Bad Request: {message}" in out
    assert "--no-schema" in out and "--replace-invalid" in out
    assert "fix the model or what it returns" not in err and "--no-schema" in err


@pytest.mark.parametrize("status, advice", [(401, "--api-key-env"), (403, "--api-key-env"),
                                            (404, "OpenAI-compatible servers usually end in /v1")])
def test_auth_and_not_found_errors_point_at_the_key_or_the_url(wh, capsys, status, advice):  # noqa: F811
    with StubServer(lambda p, b, h, n: ok({"error": {"message": "nope"}}, status=status)) as stub:
        assert openai(wh, "--base-url", stub.url, "--limit", "2") == 0
    out, err = capsys.readouterr()
    assert advice in out and advice in err and "fix the model or what it returns" not in err
    assert f"HTTP {status}" in out and ": nope" in out


def test_a_server_message_that_echoes_the_key_is_masked(wh, capsys, monkeypatch):  # noqa: F811
    key = "sk-proj-4f1e0d9cA7b2Qx9ZLm3T8v"
    monkeypatch.setenv("QLB_WALK_KEY", key)
    with StubServer(lambda p, b, h, n: ok({"error": {"message": f"Incorrect API key provided: {key}."}},
                                          status=401)) as stub:
        assert openai(wh, "--base-url", stub.url, "--api-key-env", "QLB_WALK_KEY", "--limit", "1") == 0
    out, err = capsys.readouterr()
    assert key not in out + err and "Incorrect API key provided: ***" in out


# ------------------------------------------------------------------------------ 5. SIGTERM

@pytest.mark.parametrize("models", [["m1"], ["m1", "m2"]])
def test_sigterm_stops_cleanly_leaves_no_process_and_records_why(wh, models):  # noqa: F811
    """SIGTERM (`timeout`, a CI cancel) is a stop like Ctrl+C: exit 4 with the resume line, the
    worker processes (and the fork server, the resource tracker) gone, the stop recorded."""
    def respond(path, body, headers, n):
        slow(0.6)
        return typed(body)
    with StubServer(respond) as stub:
        cmd = [sys.executable, "-m", "qlb", "collect", "native", "--dataset", "ds", "--model", *models,
               "--transport", "typed", "--base-url", stub.url, "--concurrency", "4", "--warehouse", str(wh)]
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        parent = psutil.Process(proc.pid)
        deadline = time.time() + 60
        while len(stub.requests) < 6 * len(models) and time.time() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)                                          # answers stored, requests in flight
        children = parent.children(recursive=True)
        assert len(children) >= 2                                # the fork server, its workers, the tracker
        os.kill(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 4, err
    assert "stopped: terminated (SIGTERM)" in err and "resume with: qlb collect native" in err
    assert "Traceback" not in err and "leaked" not in err
    gone = time.time() + 15
    left = children
    while left and time.time() < gone:
        left = [c for c in left if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
        time.sleep(0.1)
    assert left == []
    assert rows(wh, "SELECT stopped FROM collections") == [("terminated (SIGTERM)",)] * len(models)
    assert 0 < len(stored(wh)) < len(world_ids())


# ---------------------------------------------------------------------------- 6. called_at

def test_each_attempt_is_stamped_when_it_was_made(wh, capsys):  # noqa: F811
    with StubServer(lambda p, b, h, n: ok({}, status=503, headers={"Retry-After": "0.6"}) if n == 1
                    else typed(b)) as stub:
        assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url,
                       "--retries", "1", "--limit", "1") == 0
    (first,), (second,) = rows(wh, "SELECT called_at FROM collection_calls ORDER BY attempt")
    assert (second - first).total_seconds() >= 0.55


# ------------------------------------------------------------------------ 7. letters prompt

def _body(probe: str = "native") -> dict:
    crit = ({"DELAY": "The parcel is late", "ADDRESS": "The address is wrong", "DAMAGE": "It arrived broken"}
            if probe == "native" else {"m_a": "Mechanism a", "m_b": "Mechanism b", "WITHHOLD": "Withhold it"})
    from qlb.collect.requests import INSTRUCTIONS, QUESTION_KEYS
    return {"model": "e", "state": {"recipient_role": "r"},
            "questions": [{"key": QUESTION_KEYS[probe], "type": "choice", "instruction": INSTRUCTIONS[probe],
                           "criteria": crit}]}


@pytest.mark.parametrize("probe", ["native", "refusal"])
def test_the_letters_prompt_asks_for_one_letter_only(probe):
    system, user = OpenAITransport("http://h/v1", "e", answer="letters").messages(_body(probe), probe)
    text = system["content"].lower()
    for word in ("probabilit", "confidence", "score", "criteria key", "json"):
        assert word not in text, word
    assert "single letter" in text and "nothing else" in text
    shown = json.loads(user["content"])
    assert set(shown) == {"state", "criteria"} and list(shown["criteria"]) == ["A", "B", "C"]
    if probe == "refusal":
        assert "choose C (WITHHOLD) when" in system["content"]
        assert shown["criteria"]["C"] == "WITHHOLD: Withhold it"


def test_the_json_prompt_is_unchanged_and_letters_has_its_own_instruction_version(wh, capsys):  # noqa: F811
    from qlb.collect.requests import INSTRUCTION_VERSION, INSTRUCTIONS
    system, user = OpenAITransport("http://h/v1", "e").messages(_body(), "native")
    assert system["content"] == (INSTRUCTIONS["native"] + '\n\nAnswer with one JSON object and nothing else: '
                                 '{"choice": <one criteria key>, "probabilities": {<criteria key>: <number>, ...}, '
                                 '"confidence": <number from 0 to 1>}.')
    assert set(json.loads(user["content"])) == {"state", "criteria"}
    with StubServer(lambda p, b, h, n: chat("A", [{"token": "A", "logprob": -0.1}]) if "logprobs" in b
                    else json_chat(b)) as stub:
        assert openai(wh, "--base-url", stub.url, "--limit", "1") == 0
        assert openai(wh, "--base-url", stub.url, "--limit", "1", "--answer", "letters", model="m2") == 0
    versions = dict(rows(wh, "SELECT model, instruction_version FROM collections"))
    assert versions["m1"] == INSTRUCTION_VERSION and versions["m2"] not in (INSTRUCTION_VERSION, None)


# ------------------------------------------------------------------------------- 8. polish

def test_a_fenced_answer_after_a_preamble_is_read(wh, capsys):  # noqa: F811
    def respond(path, body, headers, n):
        content = json.loads(json_chat(body)[2])["choices"][0]["message"]["content"]
        return chat(f"Sure! Here is the answer:\n\n```json {content}```\nHope this helps.")
    with StubServer(respond) as stub:
        assert openai(wh, "--base-url", stub.url, "--limit", "2") == 0
    assert [v[2] for v in stored(wh).values()] == [True, True]


def test_content_json_takes_one_fenced_block_only_and_quotes_what_is_not_json():
    from qlb.collect.answers import content_json
    assert content_json('```json\n{"a": 1}\n```') == {"a": 1}
    assert content_json('Here:\n```\n{"a": 1}\n```') == {"a": 1}
    with pytest.raises(AnswerError, match="two fenced blocks|2 fenced blocks"):
        content_json('```json\n{"a": 1}\n```\nor\n```json\n{"a": 2}\n```')
    with pytest.raises(AnswerError) as exc:
        content_json("I think the answer is DELAY because the parcel left late " + "and so on " * 20)
    reason = str(exc.value)
    assert "not valid JSON" in reason and 'starts: "I think the answer is DELAY because' in reason
    assert len(reason) < 200


def test_a_letter_that_is_not_a_candidate_says_which_letters_are():
    cands = ["DELAY", "ADDRESS", "DAMAGE"]
    for content, expected in (("E", 'the model answered letter "E"; the candidates are A-C'),
                              ("c", 'the model answered "c", not a candidate letter (the candidates are A-C, '
                                    'in upper case)'),
                              ("", "the model answered nothing; the candidates are A-C"),
                              ("B.", 'the model answered "B.", not a candidate letter (the candidates are A-C)')):
        with pytest.raises(AnswerError) as exc:
            letters_answer(json.loads(chat(content)[2]), cands, "native")
        assert str(exc.value) == expected
    assert letters_answer(json.loads(chat(" B\n")[2]), cands, "native")["choice"] == "ADDRESS"


def test_letters_without_logprobs_are_valid_and_warned_about_once(wh, capsys):  # noqa: F811
    with StubServer(lambda p, b, h, n: chat("A")) as stub:
        assert openai(wh, "--base-url", stub.url, "--answer", "letters", "--limit", "3") == 0
    out, err = capsys.readouterr()
    assert all(v[2] for v in stored(wh).values()) and len(stored(wh)) == 3
    assert err.count("no logprobs") == 1
    assert "the server returned no logprobs for 3 answers: the probability views of this model will be empty; " \
           "does it support logprobs?" in err
    assert rows(wh, "SELECT count(*) FROM responses WHERE probabilities IS NULL") == [(3,)]
    with StubServer(lambda p, b, h, n: chat("B")) as stub:       # --json counts them too
        assert openai(wh, "--base-url", stub.url, "--answer", "letters", "--limit", "2", "--json", model="m2") == 0
    assert json.loads(capsys.readouterr().out)["no_logprobs"] == 2


def test_letters_with_logprobs_give_no_such_warning(wh, capsys):  # noqa: F811
    with StubServer(lambda p, b, h, n: chat("A", [{"token": "A", "logprob": math.log(0.9)}])) as stub:
        assert openai(wh, "--base-url", stub.url, "--answer", "letters", "--limit", "2") == 0
    assert "logprobs" not in capsys.readouterr().err


def test_a_429_stop_suggests_retries_and_a_5xx_stop_quotes_the_body(wh, capsys):  # noqa: F811
    with StubServer(lambda p, b, h, n: ok({"error": {"message": "Rate limit reached"}}, status=429)
                    if n == 2 else typed(b)) as stub:
        assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url) == 4
    err = capsys.readouterr().err.strip()
    assert "HTTP 429 Too Many Requests: Rate limit reached" in err and "--retries N" in err
    assert "Retry-After" in err and err.count("\n") == 0
    with StubServer(lambda p, b, h, n: (500, {}, "upstream model crashed: CUDA out of memory")) as stub:
        assert collect(wh, "native", "--model", "m2", "--transport", "typed", "--base-url", stub.url) == 4
    err = capsys.readouterr().err
    assert "HTTP 500 Internal Server Error: upstream model crashed: CUDA out of memory" in err


def test_counts_of_one_are_singular(wh, capsys):  # noqa: F811
    with StubServer(lambda p, b, h, n: ok({}, status=503) if n == 2 else typed(b)) as stub:
        assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url) == 4
    err = capsys.readouterr().err
    assert "; 1 answer stored;" in err and "1 answers" not in err


def test_prose_answers_are_counted_as_one_reason_quoting_the_first(wh, capsys):  # noqa: F811
    """The reason quotes each answer's start, but the summary counts them as one reason."""
    with StubServer(lambda p, b, h, n: chat(f"I would say DELAY, answer number {n}")) as stub:
        assert openai(wh, "--base-url", stub.url, "--limit", "3", "--no-schema", "--json") == 0
    reasons = json.loads(capsys.readouterr().out)["reasons"]
    assert [(r["count"], r["reason"]) for r in reasons] == [
        (3, 'the answer is not valid JSON (Expecting value); it starts: "I would say DELAY, answer number 1"')]
    stored_reasons = sorted(v[3] for v in stored(wh).values())
    assert stored_reasons[2].endswith('"I would say DELAY, answer number 3"')          # each its own start, stored


def test_a_sigterm_before_any_answer_says_so_in_one_line(monkeypatch, capsys):
    """SIGTERM before the first request (while the warehouse opens, say) ends the command with its reason, not a
    bare "interrupted"."""
    import qlb.cli as cli
    from qlb.runs.collect import Interrupted

    def terminated(args, argv):
        raise Interrupted("terminated (SIGTERM)")

    monkeypatch.setattr(cli, "_cmd_collect", terminated)
    assert cli.main(["collect", "native", "--dataset", "d", "--model", "m", "--transport", "python",
                     "--target", "x:y"]) == 1
    assert capsys.readouterr().err == "qlb collect: terminated (SIGTERM)\n"


def test_a_sigterm_between_opening_and_dispatching_records_why(wh, monkeypatch, capsys):  # noqa: F811
    """The signal (delivered to the main thread) lands after the collection's row is written and before its
    answers are dispatched: the row records why it stopped (it would otherwise look unfinished), and the command
    exits 4 with the resume line, as for a stop mid-run."""
    from qlb.runs import collect as runs_collect

    def terminated(self, sleep):
        raise runs_collect.Interrupted("terminated (SIGTERM)")

    monkeypatch.setattr(runs_collect._Collection, "dispatch", terminated)
    with StubServer(lambda p, b, h, n: typed(b)) as stub:
        assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url) == 4
    err = capsys.readouterr().err
    assert "resume with: qlb collect native --model m1" in err
    assert rows(wh, "SELECT model, stopped, finished_at IS NOT NULL, stored FROM collections") == [
        ("m1", "terminated (SIGTERM)", True, 0)]


@pytest.mark.parametrize("sig, reason", [(signal.SIGINT, "interrupted (Ctrl+C)"), (signal.SIGTERM, "terminated (SIGTERM)")])
def test_a_signal_while_a_batch_is_written_stops_cleanly(wh, monkeypatch, capsys, sig, reason):  # noqa: F811
    """Ctrl+C or SIGTERM landing while DuckDB writes a batch: DuckDB turns the KeyboardInterrupt into its own
    error ("Query interrupted"), which had ended the command with exit 1, no resume line and a row that looked
    finished. The write is now held whole; the stop comes after it: exit 4, the reason recorded, every answer
    that arrived stored, and the same command resumes."""
    from warehouse.answers import AnswerStore
    original = AnswerStore.store
    fired = []

    def store(self, *args, **kwargs):
        if not fired:                                    # the signal lands inside the first batch's write ...
            fired.append(sig)
            try:
                signal.raise_signal(sig)
            except KeyboardInterrupt:                    # ... and DuckDB makes its own error of it
                raise duckdb.InterruptException("Query interrupted") from None
        return original(self, *args, **kwargs)

    monkeypatch.setattr(AnswerStore, "store", store)
    monkeypatch.setattr("qlb.runs.collect.BATCH_SIZE", 2)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)    # as in a terminal (xdist's workers ignore it)
    try:
        _collect_with_a_signal(wh, capsys, reason)
    finally:
        signal.signal(signal.SIGINT, before)


def _collect_with_a_signal(wh, capsys, reason):  # noqa: F811
    with StubServer(lambda p, b, h, n: typed(b)) as stub:
        assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url) == 4
    err = capsys.readouterr().err
    assert "resume with: qlb collect native --model m1" in err and "Query interrupted" not in err
    [(stopped, finished, n)] = rows(wh, "SELECT stopped, finished_at IS NOT NULL, stored FROM collections")
    assert (stopped, finished) == (reason, True) and n >= 2
    assert len(stored(wh)) == n                                              # the held batch was written whole
    with StubServer(lambda p, b, h, n: typed(b)) as stub:                    # the same command resumes
        assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url) == 0
    assert len(stored(wh)) == len(world_ids())
