"""Stub model servers for the collection tests: real HTTP on 127.0.0.1 (stdlib http.server),
each request recorded, each answer decided by a function of (path, body, headers, n)."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

Respond = Callable[[str, dict, dict, int], tuple[int, dict, str]]   # -> (status, headers, body text)


class StubServer:
    """A real HTTP server in a daemon thread; use as a context manager."""

    def __init__(self, respond: Respond) -> None:
        self.respond = respond
        self.requests: list[tuple[str, Any, dict]] = []
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body leave in two writes: with Nagle's algorithm on, the body waits for the
            # client's delayed ACK of the headers (40 ms a request on Linux loopback)
            disable_nagle_algorithm = True

            def do_POST(self) -> None:     # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                headers = {k.lower(): v for k, v in self.headers.items()}
                with stub.lock:
                    stub.requests.append((self.path, body, headers))
                    n = len(stub.requests)
                status, extra, text = stub.respond(self.path, body, headers, n)
                data = text.encode("utf-8")
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in extra.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):     # the client gave up (timeout test)
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "StubServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def bodies(self) -> list[Any]:
        """Every request body received, in order."""
        with self.lock:
            return [b for _, b, _ in self.requests]


def ok(payload: Any, status: int = 200, headers: dict | None = None) -> tuple[int, dict, str]:
    """A JSON answer."""
    return status, headers or {}, json.dumps(payload)


def native_answer(body: dict, **over: Any) -> dict:
    """A valid native answer: the first criterion, probabilities 0.7 / rest shared."""
    crit = list(body["questions"][0]["criteria"])
    probs = {c: (0.7 if i == 0 else 0.3 / (len(crit) - 1)) for i, c in enumerate(crit)}
    out = {"choice": crit[0], "probabilities": probs, "confidence": 0.7}
    out.update(over)
    return out


def refusal_answer(body: dict) -> dict:
    """A valid refusal answer: WITHHOLD with the first mechanism on top of the residual."""
    crit = list(body["questions"][0]["criteria"])
    return {"choice": "WITHHOLD", "scores": {crit[0]: 0.6, crit[1]: 0.3, "WITHHOLD": 0.1}}


def typed(body: dict) -> tuple[int, dict, str]:
    """A typed endpoint answering under answers.<question key>."""
    key = body["questions"][0]["key"]
    answer = native_answer(body) if key == "coarse_cause" else refusal_answer(body)
    return ok({"answers": {key: answer}})


def chat(content: str, top_logprobs: list[dict] | None = None) -> tuple[int, dict, str]:
    """An OpenAI-compatible chat completion with ``content`` (and logprobs of its first token)."""
    choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": content},
                              "finish_reason": "stop"}
    if top_logprobs is not None:
        choice["logprobs"] = {"content": [{"token": content, "logprob": -0.1, "top_logprobs": top_logprobs}]}
    return ok({"id": "x", "object": "chat.completion", "choices": [choice]})


def slow(seconds: float) -> None:
    """Sleep inside a handler (the timeout test)."""
    time.sleep(seconds)
