"""`qlb collect --model A B C` (issue 18): several models collected at once, each its own
collection with one request in flight, every answer stored once by the collecting process; a
stop in one model leaves the others running, and rerunning the same command resumes it."""
from __future__ import annotations

import json
import threading
from collections import Counter

from tests.collect.stubs import StubServer, ok, slow, typed
from tests.collect.test_collect import collect, rows, stored, wh, world_ids  # noqa: F401 (wh: fixture)

MODELS = ["m1", "m2", "m3"]


class InFlight:
    """Counts requests in flight on a stub server, in all and per endpoint model."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now: Counter = Counter()
        self.peak_all, self.peak_each = 0, Counter()

    def __call__(self, path: str, body: dict, headers: dict, n: int):
        model = body["model"]
        with self.lock:
            self.now[model] += 1
            self.peak_each[model] = max(self.peak_each[model], self.now[model])
            self.peak_all = max(self.peak_all, sum(self.now.values()))
        slow(0.03)
        with self.lock:
            self.now[model] -= 1
        return typed(body)


def test_three_models_at_once_one_request_in_flight_each(wh, capsys):  # noqa: F811
    worlds = world_ids()
    flight = InFlight()
    with StubServer(flight) as stub:
        assert collect(wh, "native", "--model", *MODELS, "--transport", "typed", "--base-url", stub.url,
                       "--json") == 0
        assert len(stub.requests) == 3 * len(worlds)
    assert flight.peak_all == 3                               # the three models overlap ...
    assert dict(flight.peak_each) == {m: 1 for m in MODELS}   # ... one request in flight each
    out = json.loads(capsys.readouterr().out)
    assert [(r["model"], r["stored"], r["valid"], r["stopped"]) for r in out] == \
        [(m, len(worlds), len(worlds), None) for m in MODELS]
    for m in MODELS:
        assert sorted(stored(wh, model=m)) == worlds
    collections = rows(wh, "SELECT model, stored FROM collections ORDER BY model")
    assert collections == [(m, len(worlds)) for m in MODELS]


def test_a_stop_in_one_model_leaves_the_others_running_and_the_rerun_resumes_it(wh, capsys):  # noqa: F811
    worlds = world_ids()
    asked_m2 = [0]

    def respond(path, body, headers, n):
        if body["model"] == "m2":
            asked_m2[0] += 1
            if asked_m2[0] == 4:
                return ok({}, status=429)
        return typed(body)

    args = ["native", "--model", *MODELS, "--transport", "typed", "--base-url"]
    with StubServer(respond) as stub:
        assert collect(wh, *args, stub.url) == 4
    err = capsys.readouterr().err
    assert "HTTP 429" in err and "for 'm2'" in err and "resume with: qlb collect native --model m1 m2 m3" in err
    assert sorted(stored(wh, model="m1")) == sorted(stored(wh, model="m3")) == worlds
    assert len(stored(wh, model="m2")) == 3
    with StubServer(lambda p, b, h, n: typed(b)) as stub:
        assert collect(wh, *args, stub.url) == 0
        assert Counter(b["model"] for b in stub.bodies()) == {"m2": len(worlds) - 3}
    assert sorted(stored(wh, model="m2")) == worlds


def test_one_value_per_model_or_one_for_all(wh, capsys):  # noqa: F811
    with StubServer(lambda p, b, h, n: typed(b)) as one, StubServer(lambda p, b, h, n: typed(b)) as two:
        assert collect(wh, "native", "--model", "m1", "m2", "--transport", "typed", "--base-url", one.url, two.url,
                       "--endpoint-model", "served-1", "served-2", "--limit", "2") == 0
        assert {b["model"] for b in one.bodies()} == {"served-1"} and len(one.requests) == 2
        assert {b["model"] for b in two.bodies()} == {"served-2"} and len(two.requests) == 2
    assert len(stored(wh, model="m1")) == len(stored(wh, model="m2")) == 2
    capsys.readouterr()
    assert collect(wh, "native", "--model", "m1", "m2", "m3", "--transport", "typed",
                   "--base-url", "http://127.0.0.1:9", "http://127.0.0.1:9") == 2
    assert "--base-url: give one value for every model or one per --model (3 models, 2 values)" in \
        capsys.readouterr().err
    assert collect(wh, "native", "--model", "m1", "m1", "--transport", "typed", "--base-url", "http://x") == 2
    assert "names a model twice" in capsys.readouterr().err
    assert collect(wh, "native", "--model", "m" * 257, "--transport", "typed", "--base-url", "http://x") == 2
    assert "--model: a model name is 1 to 256 characters" in capsys.readouterr().err
    assert collect(wh, "native", "--model", "m1", "m2", "--transport", "typed", "--base-url", "http://x",
                   "--show-request") == 2
