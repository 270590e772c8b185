"""The three transports of COLLECT.md section 2 and the error rules of section 3.

A transport makes one call for one request body and classifies what came back:

- ``answer``: HTTP 200 (or a Python target's return value) that could be read; the fields then go
  through the ingest validation, which may still make the response invalid;
- ``invalid``: HTTP 200 whose body could not be read (stored invalid, with the reason and raw body);
- ``unavailable``: HTTP 4xx other than 408 and 429 (stored as ``unavailable``);
- ``stop``: HTTP 408, 429, 5xx, a timeout, a connection error, or a Python target that raised
  (the reason names its file, line and function): nothing is stored for that world and, once
  retries are spent, the collection stops.

HTTP goes through ``httpx`` with one client (and kept-alive connection) per dispatching thread.
An API key is only ever held in memory, in the clients' headers.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import logging
import os
import re
import socket
import sys
import sysconfig
import threading
import time
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Protocol
from urllib.parse import quote

import httpx

from qlb.collect.answers import (
    AnswerError, answer_fields, chat_content, content_json, has_logprobs, letters, letters_answer, parse_json_text,
    score_key, typed_answer,
)
from qlb.collect.redact import redact, redact_typed_url, without_key
from qlb.collect.requests import QUESTION_KEYS, letters_instruction

log = logging.getLogger(__name__)

RAW_LIMIT = 64 * 1024        # bytes of the raw answer kept in the call archive
RETRYABLE = frozenset({408, 429})
OUTCOMES = ("answer", "invalid", "unavailable", "stop")
MESSAGE_LIMIT = 200          # characters of a server's error message kept in a reason
CHAT_PATH = "/chat/completions"


def utc_now() -> datetime:
    """Now, in UTC without a zone (as the warehouse stores times)."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


@dataclass
class Reply:
    """What one call gave back, classified (see the module docstring)."""

    outcome: str
    status: int | None = None          # HTTP status; None for a Python target or a transport error
    latency_ms: float = 0.0
    raw: str = ""                      # the raw answer as received (truncated to RAW_LIMIT bytes)
    fields: dict[str, Any] | None = None
    reason: str | None = None
    retry_after: float | None = None   # seconds, from a Retry-After header
    called_at: datetime | None = None  # when the call was made (UTC; set by call_with_retries)
    no_logprobs: bool = False          # --answer letters: the server sent no top_logprobs with this answer


class Transport(Protocol):
    """Makes one call for one request body."""

    description: str

    def call(self, body: dict[str, Any], probe: str) -> Reply:
        """One call, classified."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


def truncate(text: str) -> str:
    """The first 64 KiB of a raw answer (whole characters)."""
    data = text.encode("utf-8", errors="replace")
    return text if len(data) <= RAW_LIMIT else data[:RAW_LIMIT].decode("utf-8", errors="ignore")


def endpoint_url(base_url: str, path: str) -> str:
    """Where requests go: ``path`` appended to the base URL's own path, the base URL's query
    (``?api-version=...``) and user-info kept (``http://h/v1?v=2`` + ``/chat/completions`` is
    ``http://h/v1/chat/completions?v=2``). A query in ``path`` joins the base URL's."""
    url = httpx.URL(base_url)
    path, _, query = path.partition("?")
    joined = url.path.rstrip("/") + "/" + path.lstrip("/") if path.strip("/") else url.path
    queries = [q for q in (url.query.decode("ascii"), quote(query, safe="=&%+/:,;@!$'()*~?")) if q]
    return str(url.copy_with(path=joined, query="&".join(queries).encode("ascii") if queries else None))


def base_url_problem(base_url: str, form: str) -> str | None:
    """Why ``base_url`` cannot be asked (not http or https, no host), in words naming the
    expected ``form``; None when it can. The URL in the words is redacted."""
    shown = redact_typed_url(base_url)
    try:
        url = httpx.URL(base_url)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        detail = type(exc).__name__ if "@" in base_url else redact(str(exc))     # its words may quote a password
        return f"--base-url {shown}: not a URL ({detail}); expected {form}"
    if url.scheme in ("http", "https") and url.host:
        return None
    if url.scheme in ("http", "https"):
        return f"--base-url {shown}: no host; expected {form}"
    if "://" not in base_url:
        try:
            fixed = httpx.URL("http://" + base_url)
        except (httpx.InvalidURL, ValueError):
            fixed = None
        hint = f"; did you mean {redact_typed_url('http://' + base_url)}?" if fixed is not None and fixed.host else ""
        return f"--base-url {shown}: no http:// or https:// in front; expected {form}{hint}"
    return f"--base-url {shown}: the scheme is {url.scheme!r}; qlb asks over http or https: expected {form}"


_HTML_TITLE = re.compile(r"<title[^>]*>(.*?)</title>|<h1[^>]*>(.*?)</h1>", re.I | re.S)
_HTML_TAG = re.compile(r"<[^>]+>")


def error_message(text: str) -> str | None:
    """The server's own words in an error body: an OpenAI-style ``{"error": {"message": ...}}``
    (or ``{"error": "..."}``, ``{"message"|"detail": "..."}``), an HTML page's title, or a
    plain-text body; white space squeezed, cut to ``MESSAGE_LIMIT`` characters. None when the
    body says nothing readable. Mask credentials in ``text`` first."""
    text = text.strip()
    if not text:
        return None
    try:
        message = _json_message(json.loads(text))
    except ValueError:
        if text.startswith("<"):
            titles = [t for m in _HTML_TITLE.finditer(text) for t in m.groups() if t and _HTML_TAG.sub("", t).strip()]
            message = _HTML_TAG.sub(" ", titles[0]) if titles else None     # the first title or heading with words
        else:
            message = text
    if not message or not message.strip():
        return None
    message = " ".join(message.split())
    return message if len(message) <= MESSAGE_LIMIT else message[:MESSAGE_LIMIT - 3].rstrip() + "..."


def _json_message(payload: Any) -> str | None:
    if isinstance(payload, str):
        return payload
    if not isinstance(payload, dict):
        return None
    error = payload.get("error")
    if isinstance(error, dict):
        payload = {**payload, **error}
    elif isinstance(error, str) and error.strip():
        return error
    for key in ("message", "detail", "msg", "error_description"):
        value = payload.get(key)
        if isinstance(value, str) and value.strip():
            return value
    detail = payload.get("detail")          # FastAPI's validation errors: a list of {"msg": ...}
    if isinstance(detail, list) and detail and isinstance(detail[0], dict) and isinstance(detail[0].get("msg"), str):
        return detail[0]["msg"]
    return None


def retry_after(response: httpx.Response) -> float | None:
    """The seconds a server's Retry-After header asks to wait (None: no header, or an HTTP date)."""
    value = response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:                  # an HTTP date: not honoured, the backoff applies
        return None


class _HTTPTransport:
    """Shared HTTP plumbing: POST JSON, time it, classify the status."""

    description = ""

    def __init__(self, url: str, api_key: str | None, timeout: float) -> None:
        self.url = url
        self._key = api_key
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._timeout = timeout
        self._local = threading.local()
        self._clients: list[httpx.Client] = []
        self._clients_lock = threading.Lock()

    @property
    def client(self) -> httpx.Client:
        """This thread's client. One per dispatching thread: a shared connection pool's lock is
        what limits several requests in flight (measured: most of the workers' time waiting on
        it at --concurrency 8), while each thread keeps its own connection alive anyway."""
        client = getattr(self._local, "client", None)
        if client is None:
            # TCP_NODELAY: a small request is sent at once instead of waiting on Nagle's algorithm
            transport = httpx.HTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
            client = httpx.Client(timeout=self._timeout, headers=self._headers, transport=transport)
            self._local.client = client
            with self._clients_lock:
                self._clients.append(client)
        return client

    def read(self, payload: Any, body: dict[str, Any], probe: str) -> dict[str, Any]:
        """The response fields of a 200 answer (AnswerError when unreadable)."""
        raise NotImplementedError

    def payload(self, body: dict[str, Any], probe: str) -> dict[str, Any]:
        """What is POSTed for one request body."""
        return body

    def lacks_logprobs(self, payload: Any) -> bool:
        """Whether a read answer should have carried logprobs and did not (openai letters)."""
        return False

    def call(self, body: dict[str, Any], probe: str) -> Reply:
        """POST one request and classify the answer (COLLECT.md section 3). The reason of an
        error status carries the server's own message, if its body has one (credentials masked)."""
        start = time.perf_counter()
        try:
            response = self.client.post(self.url, content=json.dumps(self.payload(body, probe)))
        except httpx.TimeoutException as exc:
            return Reply("stop", None, (time.perf_counter() - start) * 1000, "",
                         reason=f"timeout after {self._timeout}s ({type(exc).__name__})")
        except httpx.HTTPError as exc:
            return Reply("stop", None, (time.perf_counter() - start) * 1000, "",
                         reason=redact(f"connection error: {type(exc).__name__}: {exc}"))
        latency = (time.perf_counter() - start) * 1000
        text = response.text
        status = response.status_code
        if status == 200:
            try:
                payload = parse_json_text(text)
                fields = self.read(payload, body, probe)
            except AnswerError as exc:
                return Reply("invalid", status, latency, truncate(text), reason=str(exc))
            return Reply("answer", status, latency, truncate(text), fields, no_logprobs=self.lacks_logprobs(payload))
        text = redact(without_key(text, self._key))   # an error body may echo the key or the URL: never archived
        why = f"HTTP {status} {response.reason_phrase}".strip()
        message = error_message(text)
        if message:
            why = f"{why}: {message}"
        if status in RETRYABLE or status >= 500:
            return Reply("stop", status, latency, truncate(text), reason=why, retry_after=retry_after(response))
        if 400 <= status < 500:
            return Reply("unavailable", status, latency, truncate(text), reason=why)
        return Reply("invalid", status, latency, truncate(text), reason=f"unexpected {why}")

    def close(self) -> None:
        """Close every thread's connections."""
        with self._clients_lock:
            clients, self._clients = self._clients, []
        for client in clients:
            client.close()


class TypedTransport(_HTTPTransport):
    """``typed``: POST the body to a typed-decision endpoint (default path /v1/decisions)."""

    def __init__(self, base_url: str, path: str = "/v1/decisions", api_key: str | None = None,
                 timeout: float = 180.0) -> None:
        super().__init__(endpoint_url(base_url, path), api_key, timeout)
        self.description = f"typed {redact(self.url)}"

    def read(self, payload, body, probe):
        """``answers.<question key>``, or the top-level object."""
        return typed_answer(payload, QUESTION_KEYS[probe], probe)


def _criteria(body: dict[str, Any]) -> dict[str, str]:
    return body["questions"][0]["criteria"]


def answer_schema(body: dict[str, Any], probe: str) -> dict[str, Any]:
    """The JSON schema of the answer object (sent as ``response_format`` unless --no-schema)."""
    keys = list(_criteria(body))
    dist = {"type": "object", "properties": {k: {"type": "number"} for k in keys},
            "required": keys, "additionalProperties": False}
    props: dict[str, Any] = {"choice": {"type": "string", "enum": keys}, score_key(probe): dist}
    if probe == "native":
        props["confidence"] = {"type": "number"}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


class OpenAITransport(_HTTPTransport):
    """``openai``: any OpenAI-compatible ``/chat/completions`` server. ``answer="json"`` asks for a
    JSON answer object; ``answer="letters"`` asks for one letter and reads the probabilities from
    the first token's ``top_logprobs``."""

    def __init__(self, base_url: str, endpoint_model: str, answer: str = "json", schema: bool = True,
                 api_key: str | None = None, timeout: float = 180.0) -> None:
        super().__init__(endpoint_url(base_url, CHAT_PATH), api_key, timeout)
        if answer not in ("json", "letters"):
            raise ValueError(f"unknown answer format {answer!r}; expected json or letters")
        self.endpoint_model, self.answer, self.schema = endpoint_model, answer, schema
        self.description = f"openai {redact(self.url)} ({answer})"

    def messages(self, body: dict[str, Any], probe: str) -> list[dict[str, str]]:
        """The system message (instruction and answer rules) and the user message (state and
        criteria as JSON). ``letters``: an instruction of its own (choose one lettered candidate,
        answer its letter alone) and the criteria by letter, A, B, C, ... in their order
        (``"A": "<key>: <description>"``)."""
        question = body["questions"][0]
        criteria = question["criteria"]
        if self.answer == "letters":
            labels = letters(len(criteria))
            system = letters_instruction(probe, labels, list(criteria))
            user = {"state": body["state"],     # COLLECT.md: state and criteria, the criteria shown by their letters
                    "criteria": {letter: f"{key}: {criteria[key]}" for letter, key in zip(labels, criteria)}}
        else:
            fields = ('{"choice": <one criteria key>, "' + score_key(probe) + '": {<criteria key>: <number>, ...}'
                      + (', "confidence": <number from 0 to 1>}' if probe == "native" else "}"))
            system = f"{question['instruction']}\n\nAnswer with one JSON object and nothing else: {fields}."
            user = {"state": body["state"], "criteria": criteria}
        return [{"role": "system", "content": system},
                {"role": "user", "content": json.dumps(user, ensure_ascii=False)}]

    def payload(self, body, probe):
        """The chat-completions request."""
        out: dict[str, Any] = {"model": self.endpoint_model, "messages": self.messages(body, probe), "temperature": 0}
        if self.answer == "letters":
            out.update(logprobs=True, top_logprobs=20, max_tokens=1)
        elif self.schema:
            out["response_format"] = {"type": "json_schema",
                                      "json_schema": {"name": f"qlb_{probe}_answer", "strict": True,
                                                      "schema": answer_schema(body, probe)}}
        return out

    def read(self, payload, body, probe):
        """The JSON answer in the message content (alone, or in one fenced block), or the letters reading."""
        if self.answer == "letters":
            return letters_answer(payload, list(_criteria(body)), probe)
        return answer_fields(content_json(chat_content(payload)), probe)

    def lacks_logprobs(self, payload):
        """--answer letters: the completion has no top_logprobs (the distribution stays missing)."""
        return self.answer == "letters" and not has_logprobs(payload)


TARGET_RAISED = "the target raised"      # how a python target's exception starts its stop reason


def stop_causes(transport: str) -> str:
    """What makes a ``stop`` for ``transport``, in words for the user."""
    if transport == "python":
        return "the target function raised an exception (SystemExit included)"
    return "an HTTP 408/429/5xx, a timeout or a connection error"


REFUSED_STATUSES = frozenset({401, 403, 404})   # the key or the URL: every world would get the same
REFUSED_FIRST = 5                               # that many first answers, all refused alike, stop a collection
_REFUSED_STOP = f" on each of the first {REFUSED_FIRST} worlds: "


def refused_stop(status: int, api_key_env: str | None, transport: str, endpoint: str) -> str:
    """Why a collection stopped when its first ``REFUSED_FIRST`` answers were all refused with
    ``status`` (401/403: the key; 404: the URL the requests went to), naming the option to check.
    A choice of qlb's: COLLECT.md stores a 4xx as unavailable and goes on, and says nothing of
    stopping; but a wrong key or URL would have every world of the dataset asked for the same
    refusal, stored unavailable, and the command exit 0."""
    if status in (401, 403):
        what = ("the server refuses the key (check --api-key-env)" if api_key_env
                else "the server wants a key (give it with --api-key-env VAR)")
    elif transport == "openai":
        what = f"the server has nothing at {endpoint} (check --base-url, usually ending in /v1)"
    else:
        what = f"the server has nothing at {endpoint} (check --base-url and --path)"
    return f"HTTP {status}{_REFUSED_STOP}{what}"


def stopped_refused(stopped: str | None) -> bool:
    """Whether a collection stopped because its first answers were all refused (``refused_stop``)."""
    return bool(stopped) and _REFUSED_STOP in stopped


class PythonTransport:
    """``python``: ``module:function`` called with the body (a dict); it returns the same answer
    object as a typed endpoint, or ``{"status": "unavailable", "reason": ...}`` to decline a world
    (stored as unavailable, as an HTTP 4xx would be). An exception it raises (``SystemExit``
    included) stops the collection like a server error; the reason names the innermost frame of
    the target's own code (file:line, function), and the whole traceback is logged (``-v``)."""

    def __init__(self, target: str) -> None:
        self.description = f"python {target}"
        self.target = target
        self.function = load_target(target)

    def call(self, body: dict[str, Any], probe: str) -> Reply:
        """Call the function and read its answer."""
        start = time.perf_counter()
        fresh = json.loads(json.dumps(body))        # a copy of its own: the target may mutate it
        result, raised = call_target(self.function, fresh, self.target)
        if raised is not None:
            return Reply("stop", None, (time.perf_counter() - start) * 1000, "", reason=raised)
        latency = (time.perf_counter() - start) * 1000
        try:
            raw = json.dumps(result, allow_nan=True, default=str)
        except (TypeError, ValueError):
            raw = repr(result)
        if isinstance(result, dict) and result.get("status") == "unavailable":
            why = result.get("reason")
            return Reply("unavailable", None, latency, truncate(raw),
                         reason=f"the target declined: {why}" if why else "the target declined (status unavailable)")
        try:
            return Reply("answer", None, latency, truncate(raw), typed_answer(result, QUESTION_KEYS[probe], probe))
        except AnswerError as exc:
            return Reply("invalid", None, latency, truncate(raw), reason=str(exc))

    def close(self) -> None:
        """Nothing to release."""


def call_target(function: Callable[[Any], Any], argument: Any, target: str) -> tuple[Any, str | None]:
    """Call a loaded ``--target`` function with its one argument: (what it returned, None), or (None, why it
    raised: ``TARGET_RAISED``, the exception, and ``raised_where`` in the target's own code). The target is
    user code: any exception (``SystemExit`` included) is its failure, reported, never a crash of qlb; the
    whole traceback is logged (``-v``)."""
    try:
        return function(argument), None
    except (Exception, SystemExit) as exc:
        log.info("the target %s raised:\n%s", target, "".join(
            traceback.format_exception(type(exc), exc, exc.__traceback__.tb_next if exc.__traceback__ else None)
        ).rstrip())
        return None, f"{TARGET_RAISED} {type(exc).__name__}: {exc}{raised_where(exc)}"


def _library_folders() -> tuple[str, ...]:
    """Where the standard library and installed packages live: their frames are not the target's own code."""
    paths = sysconfig.get_paths()
    return tuple(os.path.realpath(paths[k]) + os.sep for k in ("stdlib", "platstdlib", "purelib", "platlib")
                 if paths.get(k))


def _shown_path(filename: str) -> str:
    """A frame's file as a user reads it: relative to the current folder when inside it."""
    try:
        rel = os.path.relpath(filename)
    except ValueError:                 # another drive (Windows)
        return filename
    return filename if rel.startswith("..") else rel


def raised_where(exc: BaseException) -> str:
    """", at FILE:LINE, in FUNCTION" for the innermost frame of the user's own code in the
    exception's traceback (not this module, the standard library, installed packages or the import
    machinery; the innermost frame of all when there is none); "" without a traceback. A
    SyntaxError is placed where the parser found it: ", at FILE:LINE: the line's text"."""
    if isinstance(exc, SyntaxError) and exc.filename:
        text = (exc.text or "").strip()
        return f", at {_shown_path(exc.filename)}:{exc.lineno}" + (f": {text}" if text else "")
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if os.path.realpath(f.filename) != os.path.realpath(__file__)]
    if not frames:
        return ""
    library = _library_folders()
    own = [f for f in frames if not f.filename.startswith("<")
           and not os.path.realpath(f.filename).startswith(library)]
    frame = own[-1] if own else frames[-1]
    return f", at {_shown_path(frame.filename)}:{frame.lineno}, in {frame.name}"


def _described(exc: BaseException) -> str:
    """``Type: message`` of an exception; a SyntaxError's message without the ``(FILE, line N)``
    that ``raised_where`` says better."""
    message = exc.msg if isinstance(exc, SyntaxError) and exc.filename and exc.msg else exc
    return f"{type(exc).__name__}: {message}"


def _is_file_form(module: str) -> bool:
    """Whether ``--target``'s module part is a file path (./mymodel.py, models/mymodel.py) rather than a module name."""
    return module.endswith(".py") or "/" in module or os.sep in module or module.startswith(".")


def _module_name_for(path: Path, attr: str) -> str:
    """The module:function form of a file path: ``mymodel:decide`` for ./mymodel.py,
    ``models.mymodel:decide`` for models/mymodel.py (in backticks); a file outside the current
    folder needs its folder on PYTHONPATH."""
    full = Path(os.path.abspath(path))
    stem = full.with_suffix("") if full.suffix == ".py" else full
    rel = os.path.relpath(stem)
    if rel.startswith("..") or os.path.isabs(rel):
        return f"`{stem.name}:{attr}` with PYTHONPATH={stem.parent}"
    return f"`{rel.replace(os.sep, '.')}:{attr}`"


def _module_from_file(path: Path, target: str, attr: str) -> Any:
    """Import the module of an existing .py file (its folder joins the Python path, so the file's
    own imports of its neighbours work, as ``python FILE`` would find them)."""
    path = Path(os.path.abspath(path))
    name = path.stem
    loaded = sys.modules.get(name)
    if loaded is not None and getattr(loaded, "__file__", None) and os.path.realpath(loaded.__file__) == str(
            os.path.realpath(path)):
        return loaded
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.append(folder)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ValueError(f"--target {target!r}: {path} cannot be imported as a Python module; use a module "
                         f"name importable from the current folder (here {_module_name_for(path, attr)})")
    module = importlib.util.module_from_spec(spec)
    registered = name not in sys.modules        # never shadow a module of that name already imported
    if registered:
        sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        if registered:
            del sys.modules[name]
        raise ValueError(f"--target {target!r}: importing {_shown_path(str(path))} raised "
                         f"{_described(exc)}{raised_where(exc)}") from None
    return module


def load_target(target: str) -> Callable[[dict[str, Any]], Any]:
    """The function ``--target`` names: ``module:function`` with the module importable from the
    current folder or the Python path (``mymodel:decide`` for ./mymodel.py, ``pkg.mod:decide``),
    or ``FILE.py:function`` for a .py file that exists (./mymodel.py:decide). ValueError with a
    plain message otherwise, suggesting the module form."""
    module_name, sep, attr = target.rpartition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"--target {target!r}: expected module:function (e.g. mymodel:decide for ./mymodel.py)")
    here = os.getcwd()
    if _is_file_form(module_name):
        path = Path(module_name)
        if path.suffix != ".py" and path.with_suffix(".py").is_file():
            path = path.with_suffix(".py")
        if not path.is_file():
            raise ValueError(f"--target {target!r}: no file {path} (looked from the current folder {here}); "
                             f"use a module name importable from the current folder (here "
                             f"{_module_name_for(path, attr)}) or the path of an existing .py file")
        module = _module_from_file(path, target, attr)
    else:
        if here not in sys.path:        # a module in the current folder is found, as `python -m` finds it
            sys.path.append(here)
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            if exc.name and exc.name != module_name and not module_name.startswith(exc.name + "."):
                # the module was found; something it imports was not
                raise ValueError(f"--target {target!r}: importing {module_name!r} failed: {exc}"
                                 f"{raised_where(exc)}") from None
            raise ValueError(f"--target {target!r}: cannot import {module_name!r}: {exc} (looked in the current "
                             f"folder {here} and on the Python path; use a module name importable from the "
                             f"current folder, as `mymodel:decide` for ./mymodel.py, or add the module's folder "
                             f"to PYTHONPATH)") from None
        except Exception as exc:        # the user's module failed while it was imported
            raise ValueError(f"--target {target!r}: importing {module_name!r} raised {_described(exc)}"
                             f"{raised_where(exc)}") from None
    function = getattr(module, attr, None)
    if not callable(function):
        raise ValueError(f"--target {target!r}: {module_name} has no function {attr!r}")
    return function


@dataclass(frozen=True)
class TransportSpec:
    """Everything needed to build a transport again in another process (picklable; the API key
    is read there from the environment variable it names, never carried)."""

    transport: str
    base_url: str | None = None
    path: str = "/v1/decisions"
    endpoint_model: str | None = None
    api_key_env: str | None = None
    answer: str = "json"
    schema: bool = True
    target: str | None = None
    timeout: float = 180.0

    def build(self) -> Transport:
        """The transport (ValueError for a python target that cannot be loaded)."""
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if self.transport == "typed":
            return TypedTransport(str(self.base_url), self.path, key, self.timeout)
        if self.transport == "openai":
            return OpenAITransport(str(self.base_url), str(self.endpoint_model), self.answer, self.schema, key,
                                   self.timeout)
        if self.transport == "python":
            return PythonTransport(str(self.target))
        raise ValueError(f"unknown transport {self.transport!r}; expected typed, openai or python")


def call_with_retries(transport: Transport, body: dict[str, Any], probe: str, retries: int = 0,
                      backoff: float = 1.0, sleep: Callable[[float], None] = time.sleep) -> list[Reply]:
    """Every attempt for one body: a ``stop`` reply is retried up to ``retries`` times with
    exponential backoff (``backoff`` x 2^attempt seconds, or the server's Retry-After when it
    says longer). The last reply decides; each is stamped with the time its call was made."""
    replies = [_attempt(transport, body, probe)]
    for attempt in range(retries):
        if replies[-1].outcome != "stop":
            break
        wait = backoff * (2 ** attempt)
        if replies[-1].retry_after is not None:
            wait = max(wait, replies[-1].retry_after)
        sleep(wait)
        replies.append(_attempt(transport, body, probe))
    return replies


def _attempt(transport: Transport, body: dict[str, Any], probe: str) -> Reply:
    called_at = utc_now()
    reply = transport.call(body, probe)
    if reply.called_at is None:
        reply.called_at = called_at
    return reply
