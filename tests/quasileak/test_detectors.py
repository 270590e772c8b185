"""Detectors: patterns, lexicon, the chat-endpoint adapter against a stub server on loopback,
simulated detectors; and the viewer's HTML escaping."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from dashboard.highlight import document_html, policy_chips
from qlb.quasileak.detectors import (
    ChatEndpointDetector, Detection, LexiconDetector, PatternDetector, SIMULATED_DETECTORS, parse_model_output,
)
from qlb.quasileak.scoring import corpus_metrics, score_detector

POLICY = {"age": "keep", "gender": "neutral", "nationality": "keep", "education": "keep", "occupation": "keep",
          "income": "keep", "relationship": "keep", "health": "hide"}
TEXT = "Please note: a juice box by the bed, and the fridge stays cold. I am 34 years old and diabetic."
PROFILE = {"age": 34, "gender": "female", "nationality": "Irish", "education": "Master's in nursing",
           "occupation": "nurse", "income": "middle", "relationship": "married", "health": "type 1 diabetes"}


def test_pattern_detector_finds_explicit_identifiers_only():
    groups = PatternDetector().detect(TEXT, {}, POLICY).groups
    found = {(a, TEXT[s:e]) for a, cues in groups for s, e in cues}
    assert ("age", "34 years old") in found and ("health", "diabetic") in found
    assert all(len(cues) == 1 for _, cues in groups)          # span-level: one span per group


def test_lexicon_detector_groups_by_attribute_and_applies_policy():
    groups = LexiconDetector().detect(TEXT, {}, POLICY).groups
    assert len(groups) == 1 and groups[0][0] == "health"
    assert {TEXT[s:e] for s, e in groups[0][1]} == {"a juice box by the bed", "the fridge stays cold"}
    assert LexiconDetector().detect(TEXT, {}, dict(POLICY, health="keep")).groups == ()


class _Stub(BaseHTTPRequestHandler):
    """Each reply: (200, the message content) for a chat completion; (status, the raw body) for any other
    status, or for a 200 whose raw body is given as bytes."""

    replies: list = []
    seen: list = []
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True          # headers and body in two writes: no 40 ms wait for the delayed ACK

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Stub.seen.append((self.path, self.headers.get("Authorization"), body))
        status, content, *headers = _Stub.replies.pop(0)          # optional: a dict of extra headers
        if isinstance(content, bytes):
            data = content
        else:
            data = (json.dumps({"choices": [{"message": {"content": content}}]}) if status == 200 else content).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers[0] if headers else {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def stub_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    _Stub.replies, _Stub.seen = [], []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def test_chat_endpoint_parses_quotes_into_spans(stub_server):
    good = json.dumps({"groups": [{"attribute": "health", "cues": ["a juice box by the bed", "the fridge stays cold"]}]})
    _Stub.replies = [(200, "```json\n" + good + "\n```")]
    det = ChatEndpointDetector(stub_server, "local-model", api_key="k", retries=0)
    result = det.detect(TEXT, {}, POLICY)
    assert result.failure is None
    (attr, cues), = result.groups
    assert attr == "health" and [TEXT[s:e] for s, e in cues] == ["a juice box by the bed", "the fridge stays cold"]
    path, auth, body = _Stub.seen[0]
    assert path == "/v1/chat/completions" and auth == "Bearer k" and body["model"] == "local-model"
    assert json.loads(body["messages"][1]["content"])["policy"] == POLICY
    det.close()


def test_chat_endpoint_sends_profile_policy_and_message(stub_server):
    """The detector sees what the paper's detector sees: D(x, p, pi), the message, the profile and the policy."""
    cues = ["a juice box by the bed", "the fridge stays cold"]
    _Stub.replies = [(200, json.dumps({"groups": [{"attribute": "health", "cues": cues}]})), (500, "")]
    det = ChatEndpointDetector(stub_server, "local-model", retries=0)
    result = det.detect(TEXT, PROFILE, POLICY)
    assert result.failure is None
    assert result.groups == (("health", tuple((TEXT.index(c), TEXT.index(c) + len(c)) for c in cues)),)
    path, auth, body = _Stub.seen[0]
    assert path == "/v1/chat/completions" and auth is None          # no key, no Authorization header
    system, user = body["messages"]
    assert system["role"] == "system" and "profile" in system["content"]
    assert user["role"] == "user" and json.loads(user["content"]) == {"profile": PROFILE, "policy": POLICY,
                                                                        "message": TEXT}
    failed = det.detect(TEXT, PROFILE, POLICY)                        # a 500 with no retries left
    assert failed.groups == () and failed.failure == "request failed: HTTP 500 Internal Server Error"
    assert len(_Stub.seen) == 2
    det.close()


def test_chat_endpoint_retries_then_records_failures(stub_server):
    _Stub.replies = [(500, ""), (200, json.dumps({"groups": []}))]
    det = ChatEndpointDetector(stub_server, "m", retries=1, backoff=0.01)
    assert det.detect(TEXT, {}, POLICY).failure is None          # second attempt succeeds
    _Stub.replies = [(500, ""), (500, "")]
    failed = det.detect(TEXT, {}, POLICY)
    assert failed.groups == () and failed.failure.startswith("request failed")
    _Stub.replies = [(200, "I think it is health")]
    assert ChatEndpointDetector(stub_server, "m", retries=0).detect(TEXT, {}, POLICY).failure == (
        'model output: the answer is not valid JSON (Expecting value); it starts: "I think it is health"')
    unreachable = ChatEndpointDetector("http://127.0.0.1:9/v1", "m", retries=0, timeout=1)
    assert unreachable.detect(TEXT, {}, POLICY).failure.startswith("request failed")


@pytest.mark.parametrize("reply, failure", [
    ((400, json.dumps({"error": {"message": "context too long", "type": "invalid_request_error"}})),
     "request failed: HTTP 400 Bad Request: context too long"),
    ((404, '{"detail": "Not Found"}'), "request failed: HTTP 404 Not Found: Not Found"),
    ((200, b"<html>proxy error</html>"),
     'unreadable reply: the answer is not valid JSON (Expecting value); it starts: "<html>proxy error</html>"'),
    ((200, b'{"choices": []}'), "unreadable reply: not a chat completion: no choices[0].message.content"),
    ((200, "no JSON here"), 'model output: the answer is not valid JSON (Expecting value); it starts: "no JSON here"'),
])
def test_chat_endpoint_fails_at_once_on_what_a_retry_cannot_fix(stub_server, reply, failure):
    """A 4xx other than 408/429, a reply that is not a chat completion and model output that does not parse are
    asked once, the server's own words quoted."""
    _Stub.replies = [reply] * 3
    det = ChatEndpointDetector(stub_server, "m", retries=2, backoff=0.001)
    result = det.detect(TEXT, {}, POLICY)
    det.close()
    assert result.groups == () and result.failure == failure
    assert len(_Stub.seen) == 1


@pytest.mark.parametrize("status, body, said", [
    (503, '{"error": "busy"}', "HTTP 503 Service Unavailable: busy"),
    (429, '{"error": {"message": "slow down"}}', "HTTP 429 Too Many Requests: slow down"),
    (408, "", "HTTP 408 Request Timeout"),
])
def test_chat_endpoint_retries_what_may_be_answered_next_time(stub_server, status, body, said):
    _Stub.replies = [(status, body), (200, json.dumps({"groups": []}))]
    det = ChatEndpointDetector(stub_server, "m", retries=2, backoff=0.001)
    assert det.detect(TEXT, {}, POLICY) == Detection(())
    _Stub.replies = [(status, body)] * 3
    assert det.detect(TEXT, {}, POLICY).failure == f"request failed: {said} (after 2 retries)"
    det.close()
    assert len(_Stub.seen) == 2 + 3


def test_a_429_waits_as_long_as_its_retry_after_says(stub_server):
    """The server's Retry-After, when longer than the backoff, is the wait (as `qlb collect` honours it)."""
    _Stub.replies = [(429, '{"error": "slow down"}', {"Retry-After": "0.4"}), (200, json.dumps({"groups": []}))]
    det = ChatEndpointDetector(stub_server, "m", retries=2, backoff=0.001)
    started = time.monotonic()
    assert det.detect(TEXT, {}, POLICY) == Detection(())
    det.close()
    assert time.monotonic() - started >= 0.4 and len(_Stub.seen) == 2


def test_chat_endpoint_prompt_names_the_corpus_attributes(stub_server):
    """A corpus brings its own attribute set (its policies' keys): the prompt names those, not the default eight,
    and a group bound to another attribute is a failure."""
    policy = {"religion": "hide", "employer": "keep"}
    text = "She lights candles on Friday evening and skips the office party."
    _Stub.replies = [(200, json.dumps({"groups": [{"attribute": "health", "cues": ["lights candles"]}]}))]
    det = ChatEndpointDetector(stub_server, "m", retries=0)
    result = det.detect(text, {}, policy)
    det.close()
    system = _Stub.seen[0][2]["messages"][0]["content"]
    assert '"attribute": "<one of: religion, employer>"' in system
    assert "occupation" not in system and "nationality" not in system
    assert result.failure == ("model output: group attribute 'health': expected one of the document's attributes "
                              "(religion, employer)")


@pytest.mark.parametrize("content,fragment", [
    ('{"groups": [{"attribute": "mood", "cues": ["x"]}]}', "attribute"),
    ('{"groups": [{"attribute": "health", "cues": []}]}', "non-empty"),
    ('{"groups": [{"attribute": "health", "cues": ["not in the text"]}]}', "not in the message"),
    ('{"flags": []}', "groups"),
    ('[1, 2]', "groups"),
])
def test_strict_parser_records_bad_output(content, fragment):
    result = parse_model_output(content, TEXT)
    assert result.groups == () and fragment in result.failure


def test_simulated_detectors_are_ordered_by_their_rates():
    from qlb.simulate.quasileak_sim import simulate_corpus
    corpus = {d["doc_id"]: {"context_id": d["context_id"], "policy": d["policy"], "text": d["text"],
                            "groups": [(g["attribute"], tuple(map(tuple, g["cues"]))) for g in d["groups"]]}
              for d in simulate_corpus(9)[:800]}
    m = {}
    for det in SIMULATED_DETECTORS:
        preds = {i: det.detect(doc["text"], {}, doc["policy"], doc["groups"]).groups for i, doc in corpus.items()}
        assert det.detect(corpus["d_00001"]["text"], {}, corpus["d_00001"]["policy"], corpus["d_00001"]["groups"]) \
            == det.detect(corpus["d_00001"]["text"], {}, corpus["d_00001"]["policy"], corpus["d_00001"]["groups"])
        m[det.name] = corpus_metrics(score_detector(corpus, preds))
    assert m["sim-det-strong"]["complete_recall"] > m["sim-det-binder"]["complete_recall"] > m["sim-det-local"]["complete_recall"]
    assert m["sim-det-binder"]["binding_error_rate"] > 3 * m["sim-det-strong"]["binding_error_rate"]


def test_viewer_escapes_document_text():
    text = 'Hi <script>alert("x")</script> & <b>bold</b> a juice box'
    start = text.index("a juice box")
    html = document_html(text, [("health", [(start, start + 11)])], [("health", [(0, 2)])], POLICY)
    assert "<script>" not in html and "&lt;script&gt;" in html and "<b>" not in html
    assert "&amp;" in html
    chips = policy_chips({"<img src=x onerror=alert(1)>": "hide"})
    assert "<img" not in chips and "&lt;img" in chips


def test_the_readme_example_is_what_the_chat_detector_sends_and_reads():
    """README, "What a detector endpoint receives and must send back": its request is the detector's own (the
    system prompt elided in the middle) and its answer parses into the quoted spans."""
    import re

    from tests.conftest import ROOT
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### What a detector endpoint receives and must send back"):]
    request, answer = (json.loads(block) for block in re.findall(r"```json\n(.*?)\n```", section, re.S)[:2])
    user = json.loads(request["messages"][1]["content"])
    sent = ChatEndpointDetector("http://127.0.0.1:8080/v1", "NAME").request_body(user["message"], user["profile"],
                                                                                  user["policy"])
    assert {k: v for k, v in sent.items() if k != "messages"} == {k: v for k, v in request.items() if k != "messages"}
    assert sent["messages"][1] == request["messages"][1]
    head, tail = request["messages"][0]["content"].split(" ... ")
    assert sent["messages"][0]["content"].startswith(head) and sent["messages"][0]["content"].endswith(tail)
    result = parse_model_output(json.dumps(answer), user["message"], tuple(user["policy"]))
    (attr, spans), = result.groups
    assert result.failure is None and attr == answer["groups"][0]["attribute"]
    assert [user["message"][s:e] for s, e in spans] == answer["groups"][0]["cues"]


def test_failures_that_differ_only_in_a_number_are_one_reason():
    """A server's "context too long: 4123 tokens" differed per document, so five such 400s were five reasons and
    the run never stopped early (it asked all 144 documents); the HTTP status still tells reasons apart."""
    from qlb.runs.quasileak import failure_kind
    said = "request failed: HTTP 400 Bad Request: context too long: {} tokens"
    assert failure_kind(said.format(4123)) == failure_kind(said.format(5000))
    assert failure_kind("request failed: HTTP 400 Bad Request") != failure_kind("request failed: HTTP 500 Bad Request")


def test_a_retry_after_of_an_hour_waits_at_most_a_minute(stub_server, monkeypatch):
    from qlb.quasileak import detectors
    waits = []
    monkeypatch.setattr(detectors.time, "sleep", waits.append)
    _Stub.replies = [(429, '{"error": "later"}', {"Retry-After": "3600"}), (200, json.dumps({"groups": []}))]
    det = ChatEndpointDetector(stub_server, "m", retries=2, backoff=0.001)
    assert det.detect(TEXT, {}, POLICY) == Detection(())
    det.close()
    assert waits == [detectors.MAX_RETRY_AFTER]
