"""``qlb collect``: ask a model about every world of a dataset and store its answers
(COLLECT.md; paper Appendix A.1, E.1-E.3: every response collected once, saved, and every
release view derived from the saved response).

Dispatch (``qlb.collect.dispatch``): at most ``concurrency`` requests in flight (default one),
``interval`` seconds between dispatches, retries only when asked. Answers are validated and
stored by this process in small batches while the requests go on. A world that already has a stored response is
never asked again (``replace_invalid`` asks again exactly the worlds whose stored response is
invalid or unavailable). An HTTP 408/429/5xx, a timeout, a connection error or a Python target
that raised stops the collection once its retries are spent: the answers so far stay stored and
the same command resumes. So does a server that refuses the first ``REFUSED_FIRST`` answers with
the same 401, 403 or 404 (the key or the URL is wrong: every other world would get the same).

Several models are collected at once (``collect_many``): each is its own collection, dispatched
in a thread of its own with its own requests in flight and its own stop, and this process, the
only one holding the warehouse, stores every model's answers as they arrive.
"""
from __future__ import annotations

import difflib
import logging
import os
import queue
import re
import signal
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from typing import Any, Callable, Iterator, Sequence

import duckdb
import pandas as pd

from qlb.collect.answers import reason_kind
from qlb.collect.dispatch import DispatchPlan, dispatch
from qlb.collect.redact import redact
from qlb.collect.requests import PROBES, body_sha256, instruction_version, request_body
from qlb.collect.transports import (CHAT_PATH, REFUSED_FIRST, REFUSED_STATUSES, Reply, Transport, TransportSpec,
                                   base_url_problem, endpoint_url, refused_stop)
from warehouse import queries
from warehouse.answers import Answer, AnswerStore, Call, CollectionInfo, stored_worlds
from warehouse.ontologies import dataset_ontology

log = logging.getLogger(__name__)

TRANSPORTS: tuple[str, ...] = ("typed", "openai", "python")
BATCH_SIZE = 512             # answers per transaction at most ...
FLUSH_SECONDS = 0.5          # ... and a transaction at least this often (a kill loses at most this much)


class CollectError(ValueError):
    """Bad collection settings a user can fix (the message says which option)."""


INTERRUPTED = "interrupted (Ctrl+C)"


class Interrupted(KeyboardInterrupt):
    """A stop asked from outside while answers arrive (the command line raises it on SIGTERM):
    handled as Ctrl+C is, with ``reason`` recorded as why the collection stopped."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _interrupted(exc: KeyboardInterrupt) -> str:
    return getattr(exc, "reason", None) or INTERRUPTED


@contextmanager
def _uninterrupted() -> Iterator[None]:
    """A warehouse write that Ctrl+C or SIGTERM cannot cut: the signals that arrive meanwhile are
    held and raised again when the write is done. DuckDB turns a KeyboardInterrupt that lands while
    it reads a batch into its own error ("Query interrupted"), which had ended a collection with
    exit 1, no resume line and its row looking finished. Signal handlers belong to the main thread:
    elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, frame: held.append(signum))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        for sig in dict.fromkeys(held):
            signal.raise_signal(sig)          # the handler the command installed acts on it now


@dataclass(frozen=True, kw_only=True)
class CollectOptions(TransportSpec):
    """One ``qlb collect`` command (COLLECT.md section 4): the transport's settings (inherited
    from ``TransportSpec``: transport, base_url, path, endpoint_model, api_key_env, answer,
    schema, target, timeout) and what to ask, how fast, and what to do with stored answers."""

    probe: str
    dataset_id: str
    model: str
    splits: Sequence[str] | None = None
    limit: int | None = None
    interval: float = 0.0
    concurrency: int = 1
    retries: int = 0
    backoff: float = 1.0
    replace_invalid: bool = False

    def check(self, asking: bool = True) -> None:
        """Raise CollectError for settings that cannot work (before anything is asked). With
        ``asking`` False (``--show-request``: a request body is built, nothing is sent) the python
        target and the API key are not needed."""
        if self.probe not in PROBES:
            raise CollectError(f"unknown probe {self.probe!r}; expected native or refusal")
        if self.transport not in TRANSPORTS:
            raise CollectError(f"unknown transport {self.transport!r}; expected {', '.join(TRANSPORTS)}")
        if self.transport in ("typed", "openai") and not self.base_url:
            raise CollectError(f"--transport {self.transport} needs --base-url")
        if self.transport in ("typed", "openai"):
            problem = base_url_problem(str(self.base_url), "http://HOST:PORT/v1" if self.transport == "openai"
                                       else "http://HOST:PORT (the request goes to that plus --path)")
            if problem:
                raise CollectError(problem)
        if self.transport == "openai" and not self.endpoint_model:
            raise CollectError("--transport openai needs --endpoint-model (the server's model name)")
        if self.transport == "python" and not self.target and asking:
            raise CollectError("--transport python needs --target module:function")
        if self.concurrency < 1 or self.retries < 0 or self.interval < 0 or self.timeout <= 0:
            raise CollectError("--concurrency must be >= 1, --retries and --interval >= 0, --timeout > 0")
        if self.limit is not None and self.limit < 0:
            raise CollectError("--limit must be >= 0")
        if asking and self.api_key_env and os.environ.get(self.api_key_env) is None:
            raise CollectError(f"--api-key-env {self.api_key_env}: that environment variable is not set")

    @property
    def endpoint(self) -> str:
        """Where the answers come from (a URL or module:function)."""
        if self.transport == "python":
            return str(self.target)
        suffix = CHAT_PATH if self.transport == "openai" else self.path
        return redact(endpoint_url(str(self.base_url), suffix))      # never a key given inside the URL

    @property
    def instruction_version(self) -> str:
        """The version of the instruction texts this collection sends (letters has its own)."""
        return instruction_version(self.transport, self.answer)

    def transport_spec(self) -> TransportSpec:
        """The transport's settings alone (picklable, small: what a worker process needs)."""
        return TransportSpec(**{f.name: getattr(self, f.name) for f in fields(TransportSpec)})

    def settings(self) -> dict[str, Any]:
        """The settings stored with the collection (never the key itself, only its variable's name)."""
        out: dict[str, Any] = {"interval": self.interval, "timeout": self.timeout, "concurrency": self.concurrency,
                               "retries": self.retries, "replace_invalid": self.replace_invalid,
                               "splits": list(self.splits) if self.splits else None, "limit": self.limit,
                               "api_key_env": self.api_key_env}
        if self.transport == "openai":
            out.update(answer=self.answer, schema=self.schema if self.answer == "json" else None)
        return out


REASONS_IN_JSON = 10         # the most frequent reasons ``--json`` lists


@dataclass
class CollectResult:
    """The ``qlb collect --json`` summary. Of the worlds (of the chosen splits) not asked:
    ``skipped_existing`` had a stored answer this command does not ask again (with
    ``replace_invalid``: a valid one); ``skipped_unanswered`` had none, and ``replace_invalid``
    asks only invalid or unavailable answers again; ``left_for_later`` were left by ``limit``.
    ``not_reached``: worlds this command set out to ask that have no answer stored by it because
    the collection stopped first (the world whose reply stopped it, and those never sent); with
    ``stored`` they make up the worlds asked this time. ``reasons``: why the answers stored this time that are not valid are not
    (``{"outcome", "reason", "count", "example_world"}``, most frequent first)."""

    collection_id: str | None
    model: str
    probe: str
    asked: int = 0
    stored: int = 0
    valid: int = 0
    invalid: int = 0
    unavailable: int = 0
    skipped_existing: int = 0
    stopped: str | None = None
    skipped_unanswered: int = 0
    left_for_later: int = 0
    reasons: list[dict[str, Any]] = field(default_factory=list)
    no_logprobs: int = 0          # --answer letters: answers the server sent without logprobs
    not_reached: int = 0

    @property
    def none_valid(self) -> bool:
        """Answers were stored, and not one of them is valid (the model or its reading is broken)."""
        return self.stored > 0 and self.valid == 0

    def to_json(self) -> dict[str, Any]:
        """The keys COLLECT.md section 4 fixes, then ``skipped_unanswered``, ``left_for_later``,
        ``not_reached``, the most frequent ``reasons`` (at most ``REASONS_IN_JSON``) and ``no_logprobs``
        (letters-mode answers the server sent without log-probabilities)."""
        return {"collection_id": self.collection_id, "model": self.model, "probe": self.probe, "asked": self.asked,
                "stored": self.stored, "valid": self.valid, "invalid": self.invalid,
                "unavailable": self.unavailable, "skipped_existing": self.skipped_existing, "stopped": self.stopped,
                "skipped_unanswered": self.skipped_unanswered, "left_for_later": self.left_for_later,
                "not_reached": self.not_reached, "reasons": self.reasons[:REASONS_IN_JSON], "no_logprobs": self.no_logprobs}


def make_transport(opts: CollectOptions) -> Transport:
    """The transport the options name (the API key read from its environment variable there)."""
    try:
        return opts.transport_spec().build()
    except ValueError as exc:
        raise CollectError(str(exc)) from None


@dataclass(frozen=True)
class Plan:
    """The worlds one command asks (in world_id order) and why the others of the chosen splits are
    not asked (see ``CollectResult``)."""

    rows: list[dict[str, Any]]
    skipped_existing: int = 0
    skipped_unanswered: int = 0
    left_for_later: int = 0


def unknown_dataset(con: duckdb.DuckDBPyConnection, dataset_id: str) -> str | None:
    """Why ``dataset_id`` cannot be collected into (it is not in the warehouse: the datasets that
    are, and the nearest name), or None when it is there."""
    if not queries.fetch_df(con, "dataset_by_id", [dataset_id]).empty:
        return None
    names = queries.fetch_df(con, "datasets")["dataset_id"].tolist()
    near = difflib.get_close_matches(dataset_id, names, n=1)
    return (f"no dataset {dataset_id!r} in the warehouse (have: {', '.join(names) or 'none'})"
            + (f"; did you mean {near[0]!r}?" if near else "; ingest its worlds first"))


def planned_worlds(con: duckdb.DuckDBPyConnection, opts: CollectOptions) -> Plan:
    """The worlds to ask, and how many of the others were skipped and why."""
    problem = unknown_dataset(con, opts.dataset_id)
    if problem:
        raise CollectError(problem)
    worlds = _worlds(con, opts)
    stored = stored_worlds(con, opts.dataset_id, opts.model, opts.probe)
    answered = worlds["world_id"].isin(set(stored["world_id"]))
    if opts.replace_invalid:
        todo = worlds[worlds["world_id"].isin(set(stored.loc[stored["replaceable"], "world_id"]))]
        unanswered = int((~answered).sum())          # nothing to replace: --replace-invalid does not ask them
    else:
        todo = worlds[~answered]
        unanswered = 0
    rows = todo.to_dict("records")
    if opts.limit is not None:
        rows = rows[: opts.limit]
    return Plan(rows, skipped_existing=len(worlds) - len(todo) - unanswered, skipped_unanswered=unanswered,
                left_for_later=len(todo) - len(rows))


def _worlds(con: duckdb.DuckDBPyConnection, opts: CollectOptions) -> pd.DataFrame:
    """The dataset's worlds in the order they are asked, those of ``opts.splits`` when given
    (CollectError when the dataset has none at all)."""
    worlds = queries.fetch_df(con, "collect_worlds", [opts.dataset_id])
    if worlds.empty:
        raise CollectError(f"dataset {opts.dataset_id!r} has no worlds (ingest them first)")
    return worlds[worlds["split"].isin(list(opts.splits))] if opts.splits else worlds


def first_request(con: duckdb.DuckDBPyConnection, opts: CollectOptions) -> tuple[dict[str, Any], str | None]:
    """``--show-request``: the request body of the first world the command would ask, and None; when it
    would ask none, the body a new call for the first world would send, and what to say of it: whether
    that world was asked with this very body (its archived request sha256), with another (an older
    instruction version), or never asked by ``qlb collect`` (its answer was loaded from a file)."""
    plan = planned_worlds(con, opts)
    if plan.rows:
        world = plan.rows[0]
        return _body(con, opts, world), None
    worlds = _worlds(con, opts)
    if worlds.empty:
        raise CollectError(f"dataset {opts.dataset_id!r} has no worlds in split {', '.join(opts.splits)}")
    world = worlds.iloc[0].to_dict()
    body = _body(con, opts, world)
    why = ("no stored answer is invalid or unavailable" if opts.replace_invalid else
           "every world already has a stored answer")
    last = queries.fetch_df(con, "last_request_of_world", [opts.dataset_id, opts.model, opts.probe, world["world_id"]])
    if last.empty:
        said = ("its first world's answer was loaded from a file, not asked by qlb collect: this is the request a "
                "new call would send")
    elif str(last["request_sha256"][0]) == body_sha256(body):
        said = "this is the request its first world was asked with"
    else:
        said = (f"this is the request a new call would send; its first world was asked with another (instruction "
                f"version {last['instruction_version'][0]})")
    return body, f"nothing to ask: {why}; {said}"


def _body(con: duckdb.DuckDBPyConnection, opts: CollectOptions, world: dict[str, Any]) -> dict[str, Any]:
    return request_body(world, dataset_ontology(con, opts.dataset_id).domain(world["domain"]), opts.probe,
                        opts.endpoint_model or opts.model)


Progress = Callable[[int, int], None]       # (answers stored so far, worlds to ask)


def collect(con: duckdb.DuckDBPyConnection, opts: CollectOptions, transport: Transport | None = None,
            progress: Progress | None = None, sleep: Callable[[float], None] = time.sleep) -> CollectResult:
    """Ask every planned world once and store the answers (read-write handle). Returns the
    counts; ``stopped`` says why the collection ended early (None when it finished)."""
    return collect_many(con, [opts], [transport], progress, sleep)[0]


def collect_many(con: duckdb.DuckDBPyConnection, options: Sequence[CollectOptions],
                 transports: Sequence[Transport | None] | None = None, progress: Progress | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> list[CollectResult]:
    """Collect several models at once: each option set is one model's collection, with its own
    ``concurrency`` requests in flight (default one per model) and its own stop; every answer is
    validated and stored by this process (one handle) as it arrives. ``progress`` gets the
    answers stored and the worlds to ask over every model. Results in the order of ``options``."""
    for opts in options:
        opts.check()
    names = [(o.dataset_id, o.model, o.probe) for o in options]
    twice = sorted({f"{m} ({p})" for d, m, p in names if names.count((d, m, p)) > 1})
    if twice:
        raise CollectError(f"model {', '.join(twice)} given twice: one collection per model and probe")
    transports = list(transports) if transports is not None else [None] * len(options)
    runs: list[_Collection] = []
    opened: list[_Collection] = []
    try:
        for opts, transport in zip(options, transports):      # plans and transports first: nothing
            runs.append(_Collection(con, opts, transport))    # is written if one of them fails
        active: list[_Collection] = []

        def report() -> None:
            if progress:
                progress(sum(r.store.counts.stored for r in active), sum(len(r.items) for r in active))

        try:
            for run in runs:
                run.open(con)
                opened.append(run)
            active = [r for r in runs if r.items]
            if len(active) == 1:
                _receive_here(active[0], report, sleep)
            elif active:
                _receive_from_threads(active, report, sleep)
        except KeyboardInterrupt as exc:      # before a dispatch took its answers: every opened collection says why
            for run in opened:
                run.result.stopped = run.result.stopped or _interrupted(exc)
            active = [r for r in opened if r.items]
        for run in active:
            run.finish()
        if active:
            report()
    finally:
        for run in runs:
            run.close()
    return [r.result for r in runs]


class _Collection:
    """One model's collection while it runs: the request bodies to send, its answer store, and
    the batch of answers not yet stored."""

    def __init__(self, con: duckdb.DuckDBPyConnection, opts: CollectOptions, transport: Transport | None) -> None:
        plan = planned_worlds(con, opts)
        rows = plan.rows
        self.opts, self.rows = opts, rows
        self.result = CollectResult(None, opts.model, opts.probe, skipped_existing=plan.skipped_existing,
                                    skipped_unanswered=plan.skipped_unanswered, left_for_later=plan.left_for_later)
        self.own_transport = transport is None
        self.transport = transport if (transport is not None or not rows) else make_transport(opts)
        self.items: list[tuple[str, str, dict[str, Any]]] = []
        self.store: AnswerStore | None = None
        self.batch: list[Answer] = []
        self.stop_calls: list[Call] = []
        self.received = 0
        self.last_flush = time.monotonic()
        self.refused: tuple[int, int] | None = (0, 0)   # (status, how many) while the first answers are the same
                                                        # 401/403/404; None once one is not
        self.halt = threading.Event()             # set to end dispatching as a stop reply does

    def open(self, con: duckdb.DuckDBPyConnection) -> None:
        """Record the collection and build its request bodies (with the dataset's ontology: its
        classes, mechanisms and descriptions); nothing to do when no world is left to ask."""
        if not self.rows:
            return
        opts = self.opts
        collection_id = f"col-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
        info = CollectionInfo(opts.dataset_id, opts.model, opts.probe, opts.transport, opts.endpoint,
                              opts.endpoint_model, opts.settings(), opts.instruction_version)
        with _uninterrupted():
            self.store = AnswerStore(con, info, collection_id, self.result.skipped_existing, reason_kind)
        self.result.collection_id = collection_id
        ontology = dataset_ontology(con, opts.dataset_id)
        endpoint_model = opts.endpoint_model or opts.model
        for world in self.rows:
            body = request_body(world, ontology.domain(world["domain"]), opts.probe, endpoint_model)
            self.items.append((world["world_id"], body_sha256(body), body))

    def dispatch(self, sleep: Callable[[float], None],
                 cancel: threading.Event | None = None) -> Iterator[tuple[str, str, list[Reply]]]:
        """Ask (``qlb.collect.dispatch``; ``cancel`` ends it from another thread). A transport
        handed in (tests) stays in this process; HTTP transports of our own may be spread over
        worker processes when several requests are in flight."""
        opts = self.opts
        plan = DispatchPlan(opts.probe, opts.concurrency, opts.interval, opts.retries, opts.backoff)
        spread = self.own_transport and opts.transport != "python"
        return dispatch(self.items, plan, self.transport, opts.transport_spec().build if spread else None, sleep,
                        cancel, self.halt)

    def receive(self, world_id: str, sha: str, replies: list[Reply]) -> bool:
        """One world's replies; True when a batch was stored."""
        self.received += 1
        calls = [_call(world_id, i, sha, r) for i, r in enumerate(replies, start=1)]
        last = replies[-1]
        if last.outcome == "stop":
            self.stop_calls += calls
            self.result.stopped = self.result.stopped or f"{last.reason} (world {world_id})"
        else:
            self.batch.append(Answer(world_id, last.outcome, last.fields, last.reason, calls))
            if last.outcome == "answer" and last.no_logprobs:
                self.result.no_logprobs += 1
            self._watch_refusals(last)
        if self.batch and (len(self.batch) >= BATCH_SIZE or time.monotonic() - self.last_flush >= FLUSH_SECONDS):
            with _uninterrupted():
                self.store.store(self.batch, self.opts.replace_invalid)
                self.batch, self.last_flush = [], time.monotonic()
            return True
        return False

    def _watch_refusals(self, answer: Reply) -> None:
        """Stop when the first ``REFUSED_FIRST`` answers (as they arrive) are all the same HTTP 401,
        403 or 404: a wrong key or URL would otherwise have every world of the dataset asked and
        stored unavailable, with exit 0. Those answers stay stored (COLLECT.md: a 4xx is an
        unavailable answer); once one answer is anything else, the server does answer, and its
        later 4xx are the worlds' own."""
        if self.refused is None:
            return
        status, count = self.refused
        if answer.outcome != "unavailable" or answer.status not in REFUSED_STATUSES or (
                count and answer.status != status):
            self.refused = None
            return
        self.refused = (answer.status, count + 1)
        if count + 1 == REFUSED_FIRST:
            self.result.stopped = self.result.stopped or refused_stop(answer.status, self.opts.api_key_env,
                                                                      self.opts.transport, self.opts.endpoint)
            self.halt.set()
            self.refused = None

    def finish(self) -> None:
        """Store what is left, archive the calls of a stop, and count."""
        result, store = self.result, self.store
        if self.received < len(self.items) and not result.stopped:
            left = len(self.items) - self.received
            result.stopped = (f"{left} of {len(self.items)} worlds {'was' if left == 1 else 'were'} not asked "
                              "(the dispatching processes ended early)")
        with _uninterrupted():
            if self.batch:
                store.store(self.batch, self.opts.replace_invalid, result.stopped)
                self.batch = []
            if self.stop_calls or result.stopped:
                store.archive_only(self.stop_calls, result.stopped)
            for k in ("asked", "stored", "valid", "invalid", "unavailable"):
                setattr(result, k, getattr(store.counts, k))
            result.not_reached = max(0, len(self.items) - result.stored)
            result.reasons = store.reasons.most_frequent()
        log.info("collection %s: %d stored (%d valid, %d invalid, %d unavailable)%s", result.collection_id,
                 result.stored, result.valid, result.invalid, result.unavailable,
                 f"; stopped: {result.stopped}" if result.stopped else "")

    def close(self) -> None:
        if self.own_transport and self.transport is not None:
            self.transport.close()


def _receive_here(run: _Collection, report: Callable[[], None], sleep: Callable[[float], None]) -> None:
    """One model: take its replies in this thread as they arrive."""
    results = run.dispatch(sleep)
    try:
        for world_id, sha, replies in results:
            if run.receive(world_id, sha, replies):
                report()
    except KeyboardInterrupt as exc:
        run.result.stopped = _interrupted(exc)
    finally:
        results.close()


def _receive_from_threads(runs: list[_Collection], report: Callable[[], None],
                          sleep: Callable[[float], None]) -> None:
    """Several models: each model's dispatch runs in a thread of its own and hands its replies
    to this thread, the only one that touches the warehouse."""
    arrivals: queue.SimpleQueue = queue.SimpleQueue()
    stop = threading.Event()

    def pump(i: int) -> None:
        results = runs[i].dispatch(sleep, stop)
        try:
            for reply in results:
                arrivals.put((i, reply))
                if stop.is_set():
                    break
        except BaseException as exc:       # noqa: BLE001 -- handed to the storing thread, raised there
            arrivals.put((i, exc))
        finally:
            results.close()
            arrivals.put((i, None))

    threads = [threading.Thread(target=pump, args=(i,), daemon=True, name=f"collect {r.opts.model}")
               for i, r in enumerate(runs)]
    for t in threads:
        t.start()
    running = len(threads)
    try:
        while running:
            try:
                i, item = arrivals.get(timeout=0.1)
            except queue.Empty:
                continue
            if item is None:
                running -= 1
            elif isinstance(item, BaseException):
                raise item
            elif runs[i].receive(*item):
                report()
    except KeyboardInterrupt as exc:
        for run in runs:
            run.result.stopped = run.result.stopped or _interrupted(exc)
    finally:
        stop.set()                       # every dispatch ends, its worker processes shut down
        for t in threads:
            t.join(timeout=10)


def _call(world_id: str, attempt: int, sha: str, reply: Reply) -> Call:
    """One attempt for the archive, stamped when it was made (not when its reply was stored)."""
    call = Call(world_id, attempt, sha, reply.status, reply.latency_ms, reply.raw, reply.outcome, reply.reason)
    if reply.called_at is not None:
        call.called_at = reply.called_at
    return call


_STATUS = re.compile(r"HTTP (\d{3})\b")


def reason_advice(reason: str, opts: CollectOptions) -> str | None:
    """What to do about one stored reason, when its HTTP status says (401/403: the key; 404: the
    URL; 400 about the JSON schema or logprobs: the answer format); None otherwise."""
    m = _STATUS.match(reason)
    if not m:
        return None
    status, words = int(m.group(1)), reason.lower()
    if status in (401, 403):
        return ("check the API key: --api-key-env VAR names the environment variable that holds it (sent as a "
                "bearer token)" + ("" if opts.api_key_env else "; none was given"))
    if status == 404:
        if opts.transport == "openai":
            return ("check --base-url (OpenAI-compatible servers usually end in /v1: http://HOST:PORT/v1) and "
                    "--endpoint-model (the model name the server knows)")
        return f"check --base-url and --path (the requests went to {opts.endpoint})"
    if status == 400 and opts.transport == "openai":
        if opts.answer == "json" and opts.schema and ("response_format" in words or "schema" in words):
            return "the server does not take the JSON schema qlb sends: try --no-schema"
        if opts.answer == "letters" and "logprob" in words:
            return "the server does not give logprobs: try --answer json"
    return None
