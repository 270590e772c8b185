"""Storing answers that ``qlb collect`` asked from a model (COLLECT.md section 3).

Every answer goes through the validator ``qlb ingest`` uses for the same kind (one code path):
a valid answer is stored as it is; one the validation rejects, or one that could not be read,
is stored invalid with the reason (``valid = false``; the audits treat it as unavailable); an
HTTP 4xx is stored as ``unavailable``. Answers are written in batches, each in one transaction
with its call archive and the collection's counts, so a kill loses at most the batch in flight.
With ``replace`` (``--replace-invalid``) the earlier response of a world moves to
``response_history`` in the same transaction as its replacement is written.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Sequence

import duckdb
import pandas as pd
from pydantic import BaseModel

from qlb.records.readers import Record
from qlb.records.schemas import NativeResponse, RefusalResponse
from warehouse import queries
from warehouse.db import transaction
from warehouse.ingest import RecordRejected, insert_rows, make_validator, validate_record
from warehouse.results import now

COLLECTED = "collect:"       # an ingest of collected answers is filed under "collect:<collection id>"

KIND_OF_PROBE = {"native": "responses", "refusal": "refusal"}


@dataclass(frozen=True)
class CollectionInfo:
    """Provenance of one collection run (never an API key)."""

    dataset_id: str
    model: str
    probe: str
    transport: str
    endpoint: str
    endpoint_model: str | None
    settings: dict[str, Any]
    instruction_version: str


@dataclass
class Call:
    """One archived call (an attempt) for one world."""

    world_id: str
    attempt: int
    request_sha256: str
    http_status: int | None
    latency_ms: float
    raw_answer: str
    outcome: str            # valid | invalid | unavailable | stop
    reason: str | None
    called_at: datetime = field(default_factory=now)     # when the attempt was made (UTC)


@dataclass
class Answer:
    """What one world's calls came to: ``kind`` is answer (fields read), invalid (unreadable) or
    unavailable (HTTP 4xx); ``calls`` are every attempt for the archive."""

    world_id: str
    kind: str
    fields: dict[str, Any] | None
    reason: str | None
    calls: list[Call]


@dataclass
class Counts:
    """Outcome counts of stored answers."""

    asked: int = 0
    stored: int = 0
    valid: int = 0
    invalid: int = 0
    unavailable: int = 0

    def add(self, other: "Counts") -> None:
        """Add another batch's counts."""
        for k in ("asked", "stored", "valid", "invalid", "unavailable"):
            setattr(self, k, getattr(self, k) + getattr(other, k))


def stored_worlds(con: duckdb.DuckDBPyConnection, dataset_id: str, model: str, probe: str) -> pd.DataFrame:
    """The worlds that already have a stored response of ``model`` for ``probe``
    (world_id, replaceable = unavailable or invalid)."""
    return queries.fetch_df(con, f"collect_stored_{probe}", [dataset_id, model])


def _as_given(reason: str) -> str:
    return reason


@dataclass
class Reasons:
    """Why stored answers were not valid: per (outcome, kind of reason) how many answers, the
    first world that gave it and its reason as given, in the order first seen. ``kind`` says which
    reasons count as one (the collector's: a reason quoting the start of each answer counts with
    the others of its kind, the first one's quote shown); by default each reason is its own."""

    seen: dict[tuple[str, str], list] = field(default_factory=dict)     # -> [answers, first world, reason]
    kind: Callable[[str], str] = _as_given

    def add(self, outcome: str, reason: str, world_id: str) -> None:
        """Count one invalid or unavailable answer."""
        entry = self.seen.setdefault((outcome, self.kind(reason)), [0, world_id, reason])
        entry[0] += 1

    def most_frequent(self) -> list[dict[str, Any]]:
        """``{"outcome", "reason", "count", "example_world"}``, most frequent first (ties: first seen first)."""
        rows = [{"outcome": o, "reason": r, "count": n, "example_world": w}
                for (o, _), (n, w, r) in self.seen.items()]
        return sorted(rows, key=lambda row: -row["count"])


class AnswerStore:
    """Validates and stores one collection's answers (read-write handle); ``reasons`` tallies why
    the stored answers that are not valid are not."""

    def __init__(self, con: duckdb.DuckDBPyConnection, info: CollectionInfo, collection_id: str,
                 skipped_existing: int, reason_kind: Callable[[str], str] = _as_given) -> None:
        self.con, self.info, self.collection_id = con, info, collection_id
        self.kind = KIND_OF_PROBE[info.probe]
        self.validator = make_validator(self.kind, con, info.dataset_id, info.model)
        self.response_type = NativeResponse if info.probe == "native" else RefusalResponse
        self.counts = Counts()
        self.reasons = Reasons(kind=reason_kind)
        self.line_no = 0
        started = now()
        with transaction(con):
            self.ingest_id = int(queries.fetch_df(con, "next_ingest_id", [])["next_id"][0])
            queries.execute(con, "insert_ingest", [self.ingest_id, info.dataset_id, self.kind,
                                                   f"{COLLECTED}{collection_id}", "collect", self._sha(0), info.model,
                                                   0, 0, 0, 0, started, started])
            queries.execute(con, "insert_model_if_absent",
                            [info.dataset_id, info.model, False, f"collected with qlb collect ({info.transport})",
                             info.dataset_id, info.model])
            queries.execute(con, "collect_insert_collection",
                            [collection_id, info.dataset_id, info.model, info.probe, info.transport, info.endpoint,
                             info.endpoint_model, json.dumps(info.settings, sort_keys=True),
                             info.instruction_version, self.ingest_id, started, skipped_existing])

    def _sha(self, stored: int) -> str:
        """The collection's ingest fingerprint after ``stored`` answers: changes with every
        stored batch, so an audit run over fewer answers is never reused for more."""
        return hashlib.sha256(f"{self.collection_id}:{stored}".encode()).hexdigest()

    def response(self, answer: Answer, line_no: int) -> BaseModel:
        """The response object to store: validated like an ingest line, or invalid/unavailable."""
        base = {"model": self.info.model, "world_id": answer.world_id}
        if answer.kind == "unavailable":
            return self.response_type(**base, status="unavailable")
        if answer.kind == "answer" and answer.fields is not None:
            line = {**base, "status": "ok", **answer.fields}
            try:
                raw = json.dumps(line, allow_nan=True, default=str)
            except (TypeError, ValueError):
                raw = repr(line)
            try:
                return validate_record(self.validator, Record(line_no, raw, obj=line))
            except RecordRejected as exc:
                reason = str(exc)
        else:
            reason = answer.reason or "the answer could not be read"
        return self.response_type(**base, status="ok", valid=False, invalid_reason=reason)

    def store(self, answers: Sequence[Answer], replace: bool = False, stopped: str | None = None) -> Counts:
        """Write one batch (responses, call archive, counts) in one transaction."""
        accepted: list[tuple[int, BaseModel]] = []
        batch = Counts(asked=len(answers))
        for a in answers:
            self.line_no += 1
            obj = self.response(a, self.line_no)
            accepted.append((self.line_no, obj))
            if obj.status != "ok":
                batch.unavailable += 1
            elif obj.valid:
                batch.valid += 1
            else:
                batch.invalid += 1
            final = "unavailable" if obj.status != "ok" else ("valid" if obj.valid else "invalid")
            if a.calls:
                a.calls[-1].outcome = final
                a.calls[-1].reason = a.calls[-1].reason or getattr(obj, "invalid_reason", None)
            if final != "valid":
                why = getattr(obj, "invalid_reason", None) or a.reason or (a.calls[-1].reason if a.calls else None)
                self.reasons.add(final, why or "no reason given", a.world_id)
        batch.stored = len(accepted)
        calls = [c for a in answers for c in a.calls]
        stamp = now()
        with transaction(self.con):
            if replace and accepted:
                ids = [obj.world_id for _, obj in accepted]
                queries.execute(self.con, f"collect_history_{self.info.probe}",
                                [stamp, self.collection_id, self.info.dataset_id, self.info.model, ids])
                queries.execute(self.con, f"collect_delete_{self.info.probe}",
                                [self.info.dataset_id, self.info.model, ids])
            self.validator.write(self.con, accepted, self.ingest_id)
            self._archive(calls)
            queries.execute(self.con, "collect_update_collection",
                            [batch.asked, batch.stored, batch.valid, batch.invalid, batch.unavailable, stamp, stopped,
                             self.collection_id])
            queries.execute(self.con, "collect_update_ingest",
                            [self._sha(self.counts.stored + batch.stored), batch.stored, batch.stored, batch.invalid,
                             stamp, self.ingest_id])
        self.counts.add(batch)
        return batch

    def archive_only(self, calls: Sequence[Call], stopped: str | None) -> None:
        """Archive calls that stored nothing (the world that stopped the collection) and the
        stop reason."""
        with transaction(self.con):
            self._archive(list(calls))
            queries.execute(self.con, "collect_update_collection", [0, 0, 0, 0, 0, now(), stopped,
                                                                     self.collection_id])

    def _archive(self, calls: list[Call]) -> None:
        if not calls:
            return
        insert_rows(self.con, "collection_calls", {
            "collection_id": self.collection_id, "dataset_id": self.info.dataset_id, "model": self.info.model,
            "probe": self.info.probe, "world_id": [c.world_id for c in calls], "attempt": [c.attempt for c in calls],
            "request_sha256": [c.request_sha256 for c in calls], "http_status": [c.http_status for c in calls],
            "latency_ms": [float(c.latency_ms) for c in calls], "raw_answer": [c.raw_answer for c in calls],
            "outcome": [c.outcome for c in calls], "reason": [c.reason for c in calls],
            "called_at": [c.called_at for c in calls]})
