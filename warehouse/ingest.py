"""Validated ingest of the five input kinds into the warehouse.

``validate_file`` reads and checks a file against the warehouse's current contents and writes
nothing (the Data page shows its report before anything is stored). ``ingest_file`` validates,
then writes the accepted rows, the quarantine and the ``ingests`` record in one transaction:
an exception anywhere leaves the warehouse as it was. The same file (same sha256) ingested
twice into the same dataset and kind changes nothing.
"""
from __future__ import annotations

import gc
import json
import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

import duckdb
import pandas as pd
import pyarrow as pa
from pydantic import BaseModel, ValidationError
from pydantic_core import to_json

from qlb.records.readers import Record, detect_format, file_sha256, read_records
from qlb.records.schemas import (
    PAIR_SHARED_FIELDS, NativeResponse, QLDocument, QLPrediction, RefusalResponse, World, describe_error,
)
from qlb.records.ontology import Ontology, load_ontology
from warehouse import queries
from warehouse.ontologies import dataset_ontology

log = logging.getLogger(__name__)

KINDS: tuple[str, ...] = ("worlds", "responses", "refusal", "corpus", "predictions")
Progress = Callable[[int], None]


ALREADY_STORED = "already stored"


class IngestError(ValueError):
    """Bad usage of ingest (unknown kind, unreadable file, missing dataset context)."""


@dataclass(frozen=True)
class Reject:
    line_no: int
    field: str | None
    reason: str
    raw: str


@dataclass
class ValidationReport:
    """What a file would contribute: accepted records (with their line numbers) and rejects."""

    kind: str
    file_name: str
    file_format: str
    sha256: str
    dataset_id: str
    model: str | None
    accepted: list[tuple[int, BaseModel]] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    already_stored: int = 0   # lines a retry of the same file skipped (stored by its first ingest)
    validator: "_Kind | None" = field(default=None, repr=False, compare=False)  # writes the accepted rows

    @property
    def n_lines(self) -> int:
        """Non-blank input lines: accepted, rejected, and already stored by an earlier ingest of the file."""
        return len(self.accepted) + len(self.rejects) + self.already_stored

    @property
    def n_invalid(self) -> int:
        """Accepted native responses stored with valid = false."""
        return sum(1 for _, r in self.accepted if type(r) is NativeResponse and not r.valid)

    def lines(self) -> pd.DataFrame:
        """One row per non-blank input line: line, outcome (accepted/invalid/rejected), field,
        reason."""
        rows = [(n, "invalid", None, r.invalid_reason) if type(r) is NativeResponse and not r.valid
                else (n, "accepted", None, None) for n, r in self.accepted]
        rows += [(r.line_no, "rejected", r.field, r.reason) for r in self.rejects]
        df = pd.DataFrame(rows, columns=["line", "outcome", "field", "reason"])
        return df.sort_values("line", kind="stable").reset_index(drop=True)

    def messages(self) -> list[str]:
        """``FILE:LINE: field: reason`` for every rejected line."""
        return [f"{self.file_name}:{r.line_no}: " + (f"{r.field}: " if r.field else "") + r.reason
                for r in self.rejects]


@dataclass(frozen=True)
class IngestResult:
    """One ingest: its id, whether the file was already stored, and its validation report."""

    ingest_id: int
    duplicate: bool
    report: ValidationReport


@dataclass(frozen=True)
class DatasetInfo:
    """How a dataset is described when an ingest creates it (ignored when it exists)."""

    simulated: bool = False
    description: str | None = None
    seed: int | None = None
    model_descriptions: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class IngestRequest:
    """One file to validate or ingest: its kind, where it is, the dataset it goes into, the
    model its responses belong to (default: each line's own), the name the user knows it by
    (an upload's original name; default the file's) and the dataset's description."""

    kind: str
    path: Path
    dataset_id: str
    model: str | None = None
    display_name: str | None = None
    dataset: DatasetInfo = DatasetInfo()

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))

    @property
    def file_name(self) -> str:
        """The name rejects and reports use."""
        return self.display_name or self.path.name


@dataclass
class _Validated:
    """A validated file on its way into the warehouse."""

    request: IngestRequest
    report: ValidationReport
    retry_of: int | None
    started: datetime


# ------------------------------------------------------------------------------- error message
# -------------------------------------------------------------------------------------- kinds
class _Kind:
    """How one input kind is validated against the warehouse and turned into table rows."""

    model: type[BaseModel]
    json_columns: frozenset[str] = frozenset()

    def __init__(self, con: duckdb.DuckDBPyConnection | None, dataset_id: str, model_name: str | None):
        self.dataset_id = dataset_id
        self.model_name = model_name
        self.context: dict[str, Any] = self.empty_context()
        self.seen: dict[Any, int | None] = {}   # record key -> ingest that stored it (None: this file)
        self.retry_of: int | None = None        # re-ingest of a file whose earlier ingest had rejects
        self.ontology: Ontology = load_ontology()   # the dataset's decision task (its own, or TUPLE's)
        if con is not None:
            self.ontology = dataset_ontology(con, dataset_id)
            self.load(con)

    def key(self, obj: BaseModel) -> Any:
        raise NotImplementedError

    def use_ontology(self, ontology: Ontology) -> None:
        """Validate against ``ontology`` (the stateless commands' ``--ontology FILE``)."""
        self.ontology = ontology
        self.__dict__.pop("_label_sets", None)
        if "ontology" in self.context:
            self.context = {**self.context, "ontology": ontology}

    def claim(self, obj: BaseModel, what: str) -> str | None:
        """Register the record's key. A reason when it repeats an earlier record; ALREADY_STORED
        when a retry of the same file meets a line its earlier ingest already stored."""
        k = self.key(obj)
        if k in self.seen:
            if self.retry_of is not None and self.seen[k] == self.retry_of:
                self.seen[k] = None   # a second copy in this file is a duplicate again
                return ALREADY_STORED
            return f"duplicate {what} (the first is kept)"
        self.seen[k] = None
        return None

    def empty_context(self) -> dict[str, Any]:
        """The validation context of a warehouse that holds nothing yet."""
        return {}

    def load(self, con: duckdb.DuckDBPyConnection) -> None:
        """Read what validation needs from the warehouse (known ids, worlds, documents)."""

    def check(self, obj: BaseModel) -> str | None:
        """Cross-record rules (duplicates, pairs); a reason when the record must be rejected."""
        return None

    def validate(self, rec: Record) -> BaseModel:
        if rec.text is not None:
            return self.model.model_validate_json(rec.text, context=self.context or None)
        return self.model.model_validate(rec.obj, context=self.context or None)

    def write(self, con: duckdb.DuckDBPyConnection, accepted: list[tuple[int, BaseModel]], ingest_id: int) -> None:
        raise NotImplementedError


def insert_rows(con: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame | dict[str, list]) -> None:
    """Append rows to ``table`` (an internal table name, never user text). Column lists go
    through Arrow, which is several times faster than a DataFrame for plain lists."""
    if isinstance(frame, dict):
        n = max((len(v) for v in frame.values() if isinstance(v, (list, pa.Array))), default=0)
        if n == 0:
            return
        frame = pa.table({k: v if isinstance(v, (list, pa.Array)) else [v] * n for k, v in frame.items()})
        columns = frame.column_names
    else:
        if frame.empty:
            return
        columns = list(frame.columns)
    con.register("_incoming", frame)
    try:
        cols = ", ".join(columns)
        con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM _incoming")  # table: internal name
    finally:
        con.unregister("_incoming")


class _Worlds(_Kind):
    model = World
    json_columns = frozenset({"hypotheses", "candidate_order"})

    def __init__(self, con, dataset_id, model_name):
        self.pairs: dict[str, list[tuple]] = {}
        super().__init__(con, dataset_id, model_name)
        self.context = {"ontology": self.ontology}      # World checks its labels against it

    def load(self, con):
        for row in queries.fetch_df(con, "world_pairs", [self.dataset_id]).itertuples(index=False):
            self.seen[row.world_id] = row.ingest_id
            shared = (row.domain, row.split, row.coarse, (row.hypothesis_0, row.hypothesis_1),
                      row.recipient_role, tuple(row.candidate_order), row.request, row.intake_channel,
                      row.operating_window, row.case_context)
            self.pairs.setdefault(row.pair_id, []).append((row.mechanism, shared))

    def key(self, w: World) -> Any:
        return w.world_id

    def check(self, w: World) -> str | None:
        claimed = self.claim(w, f"world_id {w.world_id!r}")
        if claimed is not None:
            return claimed
        pairs = self.pairs
        shared = tuple(_hashable(getattr(w, f)) for f in PAIR_SHARED_FIELDS)
        members = pairs.get(w.pair_id, [])
        if len(members) >= 2:
            del self.seen[w.world_id]
            return f"pair {w.pair_id!r} already has two worlds"
        for mech, other_shared in members:
            if mech == w.mechanism:
                del self.seen[w.world_id]
                return f"pair {w.pair_id!r}: both worlds have mechanism {mech!r}; a pair differs in S"
            for name, a, b in zip(PAIR_SHARED_FIELDS, shared, other_shared):
                if a != b:
                    del self.seen[w.world_id]
                    return f"pair {w.pair_id!r}: field {name} differs from its paired world"
        members.append((w.mechanism, shared))
        pairs[w.pair_id] = members
        return None

    def write(self, con, accepted, ingest_id):
        rows = [dict(dataset_id=self.dataset_id, world_id=w.world_id, pair_id=w.pair_id, domain=w.domain,
                     split=w.split, coarse=w.coarse, mechanism=w.mechanism, hypothesis_0=w.hypotheses[0],
                     hypothesis_1=w.hypotheses[1], recipient_role=w.recipient_role,
                     candidate_order=list(w.candidate_order), request=w.request,
                     intake_channel=w.intake_channel, operating_window=w.operating_window,
                     case_context=w.case_context, diagnostic_note=w.diagnostic_note,
                     ingest_id=ingest_id, line_no=n) for n, w in accepted]
        insert_rows(con, "worlds", pd.DataFrame(rows))


def _json(value: Any) -> str | None:
    """Compact JSON text of a released map (None stays missing); NaN/inf written as JSON null
    would lose them, so they are written as the literals NaN/Infinity, as received."""
    if value is None:
        return None
    try:
        return to_json(value).decode()
    except Exception:  # non-finite floats: fall back to Python's NaN/Infinity literals
        return json.dumps(value)


def _hashable(v: Any) -> Any:
    return tuple(v) if isinstance(v, (list, tuple)) else v


class _ResponsesBase(_Kind):
    json_columns = frozenset({"probabilities", "confidence", "scores"})
    table = ""

    def empty_context(self):
        return {"worlds": {}}

    def load(self, con):
        worlds = queries.fetch_df(con, "world_candidates", [self.dataset_id])
        self.context = {"worlds": {r.world_id: self.world_key(r) for r in worlds.itertuples(index=False)}}
        existing = queries.fetch_df(con, f"existing_{self.table}", [self.dataset_id])
        self.seen = dict(zip(zip(existing["model"], existing["world_id"]), existing["ingest_id"]))

    def world_key(self, row) -> Any:
        raise NotImplementedError

    def validate(self, rec: Record) -> BaseModel:
        # hot path of the throughput budget: the JSON Lines case calls pydantic directly
        obj = (self.model.model_validate_json(rec.text) if rec.text is not None
               else self.model.model_validate(rec.obj))
        if obj.model is None:
            if self.model_name is None:
                raise _RecordRejected("model", "model is missing (add a model field or pass --model)")
            obj.model = self.model_name
        elif self.model_name is not None and obj.model != self.model_name:
            raise _RecordRejected("model", f"model {obj.model!r} differs from --model {self.model_name!r}")
        world = self.context["worlds"].get(obj.world_id)
        if world is None:
            raise _RecordRejected("world_id", f"unknown world_id {obj.world_id!r} (ingest its worlds first)")
        return self.apply_world_rules(obj, world)

    def apply_world_rules(self, obj, world):
        raise NotImplementedError

    def key(self, r) -> Any:
        return (r.model, r.world_id)

    def check(self, r) -> str | None:
        k = (r.model, r.world_id)
        if k not in self.seen:                 # the common case, without building a message
            self.seen[k] = None
            return None
        return self.claim(r, f"response for model {r.model!r} and world {r.world_id!r}")

    def models(self, accepted) -> list[str]:
        return sorted({r.model for _, r in accepted})


class _RecordRejected(Exception):
    def __init__(self, field: str | None, reason: str):
        super().__init__(reason)
        self.field, self.reason = field, reason


class _Responses(_ResponsesBase):
    model = NativeResponse
    table = "responses"

    def world_key(self, row):
        return frozenset(row.candidate_order)

    def apply_world_rules(self, obj, candidates):
        return obj.assess(candidates)

    def write(self, con, accepted, ingest_id):
        frame = ({
            "dataset_id": self.dataset_id,
            "model": [r.model for _, r in accepted],
            "world_id": [r.world_id for _, r in accepted],
            "status": [r.status for _, r in accepted],
            "choice": [r.choice for _, r in accepted],
            "probabilities": [_json(r.probabilities) for _, r in accepted],
            "confidence": pa.array([r.confidence for _, r in accepted], type=pa.float64()),
            "valid": [r.valid for _, r in accepted],
            "invalid_reason": [r.invalid_reason for _, r in accepted],
            "choice_not_argmax": [r.choice_not_argmax for _, r in accepted],
            "ingest_id": ingest_id,
            "line_no": [n for n, _ in accepted],
        })
        insert_rows(con, "responses", frame)


class _Refusal(_ResponsesBase):
    model = RefusalResponse
    table = "refusal_responses"

    def world_key(self, row):
        return row.domain, self._labels(row.domain)

    def _labels(self, domain: str) -> frozenset[str]:
        """The domain's refusal labels in the dataset's ontology (one set per domain, not per world)."""
        cache = self.__dict__.setdefault("_label_sets", {})
        if domain not in cache:
            cache[domain] = (frozenset(self.ontology.domain(domain).refusal_labels)
                             if domain in self.ontology.domains else frozenset())
        return cache[domain]

    def apply_world_rules(self, obj, world):
        domain, labels = world
        problem = obj.label_problem(domain, labels)
        if problem is not None:
            raise _RecordRejected(*problem)
        obj.__dict__.update(valid=True, invalid_reason=None)     # validity is derived, never read from input
        return obj

    def write(self, con, accepted, ingest_id):
        frame = ({
            "dataset_id": self.dataset_id,
            "model": [r.model for _, r in accepted],
            "world_id": [r.world_id for _, r in accepted],
            "status": [r.status for _, r in accepted],
            "choice": [r.choice for _, r in accepted],
            "scores": [_json(r.scores) for _, r in accepted],
            "valid": [r.valid for _, r in accepted],
            "invalid_reason": [r.invalid_reason for _, r in accepted],
            "ingest_id": ingest_id,
            "line_no": [n for n, _ in accepted],
        })
        insert_rows(con, "refusal_responses", frame)


def cue_distance(cues: Iterable[tuple[int, int]]) -> int:
    """Characters from the first cue's start to the last cue's end (QUASILEAK.md section 3)."""
    cues = list(cues)
    return max(e for _, e in cues) - min(s for s, _ in cues)


class _Corpus(_Kind):
    model = QLDocument
    json_columns = frozenset({"profile", "policy", "groups", "distractors"})

    attributes: frozenset[str] | None = None      # the corpus's attribute set, fixed by its first document

    def load(self, con):
        existing = queries.fetch_df(con, "existing_documents", [self.dataset_id])
        self.seen = dict(zip(existing["doc_id"], existing["ingest_id"]))
        first = queries.fetch_df(con, "corpus_attributes", [self.dataset_id])
        if not first.empty:
            self.attributes = frozenset(json.loads(first["policy"][0]))

    def key(self, d: QLDocument) -> Any:
        return d.doc_id

    def check(self, d: QLDocument) -> str | None:
        keys = frozenset(d.policy)
        if self.attributes is None:
            self.attributes = keys
        elif keys != self.attributes:
            return (f"policy keys {', '.join(sorted(keys))} differ from the corpus's attribute set "
                    f"{', '.join(sorted(self.attributes))} (every document labels the same attributes)")
        return self.claim(d, f"doc_id {d.doc_id!r}")

    def write(self, con, accepted, ingest_id):
        docs, groups = [], []
        for n, d in accepted:
            targets = sum(1 for g in d.groups if d.policy[g.attribute] == "hide")
            docs.append(dict(dataset_id=self.dataset_id, doc_id=d.doc_id, split=d.split,
                             context_id=d.context_id, recipient=d.recipient, purpose=d.purpose,
                             text=d.text, profile=json.dumps(d.profile, ensure_ascii=False),
                             policy=json.dumps(d.policy), distractors=json.dumps([list(s) for s in d.distractors]),
                             n_groups=len(d.groups), n_targets=targets, ingest_id=ingest_id, line_no=n))
            for gi, g in enumerate(d.groups):
                groups.append(dict(dataset_id=self.dataset_id, doc_id=d.doc_id, group_index=gi,
                                   attribute=g.attribute, policy_label=d.policy[g.attribute],
                                   arity=len(g.cues), cues=json.dumps([list(c) for c in g.cues]),
                                   cue_distance=cue_distance(g.cues)))
        insert_rows(con, "ql_documents", pd.DataFrame(docs))
        insert_rows(con, "ql_groups", pd.DataFrame(groups))


class _Predictions(_Kind):
    model = QLPrediction
    json_columns = frozenset({"groups"})

    def empty_context(self):
        return {"documents": {}}

    attributes: frozenset[str] | None = None

    def load(self, con):
        docs = queries.fetch_df(con, "document_texts", [self.dataset_id])
        self.context = {"documents": {d: len(t) for d, t in zip(docs["doc_id"], docs["text"])}}
        first = queries.fetch_df(con, "corpus_attributes", [self.dataset_id])
        if not first.empty:
            self.attributes = frozenset(json.loads(first["policy"][0]))
        existing = queries.fetch_df(con, "existing_predictions", [self.dataset_id])
        self.seen = dict(zip(zip(existing["detector"], existing["doc_id"]), existing["ingest_id"]))

    def key(self, p: QLPrediction) -> Any:
        return (p.detector, p.doc_id)

    def check(self, p: QLPrediction) -> str | None:
        if self.attributes is not None:
            bad = sorted({g.attribute for g in p.groups} - self.attributes)
            if bad:
                return f"group attribute {', '.join(bad)} is not one of the corpus's attributes"
        return self.claim(p, f"prediction for detector {p.detector!r} and doc {p.doc_id!r}")

    def write(self, con, accepted, ingest_id):
        frame = pd.DataFrame([dict(dataset_id=self.dataset_id, detector=p.detector, doc_id=p.doc_id,
                                   groups=json.dumps([{"attribute": g.attribute, "cues": [list(c) for c in g.cues]}
                                                      for g in p.groups]),
                                   n_groups=len(p.groups), ingest_id=ingest_id, line_no=n)
                              for n, p in accepted])
        insert_rows(con, "ql_predictions", frame)


_KIND_CLASSES: dict[str, type[_Kind]] = {
    "worlds": _Worlds, "responses": _Responses, "refusal": _Refusal,
    "corpus": _Corpus, "predictions": _Predictions,
}


# ------------------------------------------------------------------------------------ driving
@contextmanager
def _collector_paused() -> Iterator[None]:
    """Bulk loads allocate many small objects that all stay alive; the cyclic collector would
    rescan them again and again (it more than doubled ingest time), so it pauses meanwhile."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _validate_records(kind: _Kind, records: Iterable[Record], report: ValidationReport,
                      progress: Progress | None) -> None:
    with _collector_paused():
        _validate_loop(kind, records, report, progress)


def _validate_loop(kind: _Kind, records: Iterable[Record], report: ValidationReport,
                   progress: Progress | None) -> None:
    validate, check = kind.validate, kind.check          # hot loop: bound once
    accept, reject = report.accepted.append, report.rejects.append
    for i, rec in enumerate(records, start=1):
        if rec.error is not None:
            reject(Reject(rec.line_no, None, rec.error, rec.raw))
        else:
            try:
                obj = validate(rec)
            except ValidationError as exc:
                fld, reason = describe_error(exc)
                reject(Reject(rec.line_no, fld, reason, rec.raw))
            except _RecordRejected as exc:
                reject(Reject(rec.line_no, exc.field, exc.reason, rec.raw))
            else:
                reason = check(obj)
                if reason is None:
                    accept((rec.line_no, obj))
                elif reason is ALREADY_STORED:
                    report.already_stored += 1
                else:
                    reject(Reject(rec.line_no, None, reason, rec.raw))
        if progress is not None and i % 2000 == 0:
            progress(i)


def make_validator(kind: str, con, dataset_id: str, model: str | None) -> _Kind:
    """The validator ``qlb ingest`` uses for ``kind`` (reads what it needs from ``con``)."""
    return _make_kind(kind, con, dataset_id, model)


def validate_record(validator: _Kind, rec: Record) -> BaseModel:
    """One record through the ingest validation (``validate_file``'s per-line path without
    the file-level duplicate rule): the validated object, or RecordRejected naming the field."""
    try:
        return validator.validate(rec)
    except ValidationError as exc:
        raise RecordRejected(*describe_error(exc)) from None
    except _RecordRejected as exc:
        raise RecordRejected(exc.field, exc.reason) from None


class RecordRejected(ValueError):
    """A record the ingest validation rejects: the field (or None) and the reason."""

    def __init__(self, field: str | None, reason: str):
        super().__init__(f"{field}: {reason}" if field else reason)
        self.field, self.reason = field, reason


def _make_kind(kind: str, con, dataset_id: str, model: str | None) -> _Kind:
    if kind not in _KIND_CLASSES:
        raise IngestError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    return _KIND_CLASSES[kind](con, dataset_id, model)


def validate_file(con: duckdb.DuckDBPyConnection | None, request: IngestRequest, progress: Progress | None = None,
                  *, retry_of: int | None = None, worlds: dict[str, World] | None = None,
                  documents: dict[str, int] | None = None, ontology: Ontology | None = None) -> ValidationReport:
    """Validate ``request.path`` as ``request.kind`` against the dataset's current contents;
    write nothing.

    ``con`` may be a read-only handle, or None for a warehouse that does not exist yet; the
    stateless commands pass ``worlds`` (validated from a file) or ``documents`` instead of a
    warehouse, and ``ontology`` (``--ontology FILE``) instead of the dataset's. ``retry_of`` names
    an earlier ingest of the same file whose stored lines are skipped."""
    path = request.path
    if not path.is_file():
        raise IngestError(f"{path}: no such file")
    try:
        fmt = detect_format(request.display_name or path)
    except ValueError as exc:
        raise IngestError(str(exc)) from exc
    k = _make_kind(request.kind, con, request.dataset_id, request.model)
    k.retry_of = retry_of
    if ontology is not None:
        k.use_ontology(ontology)
    if worlds is not None and isinstance(k, _ResponsesBase):
        k.context = {"worlds": {wid: k.world_key(w) for wid, w in worlds.items()}}
    if documents is not None and isinstance(k, _Predictions):
        k.context = {"documents": dict(documents)}
    report = ValidationReport(kind=request.kind, file_name=request.file_name, file_format=fmt,
                              sha256=file_sha256(path), dataset_id=request.dataset_id, model=request.model)
    reader = read_records(path, k.json_columns, fmt=fmt)
    _validate_records(k, reader, report, progress)
    report.validator = k
    return report


def ingest_file(con: duckdb.DuckDBPyConnection, request: IngestRequest, progress: Progress | None = None
                ) -> IngestResult:
    """Validate and store one file in one transaction (see module docstring).

    The same file again (same dataset, kind and sha256) changes nothing when its first ingest
    rejected nothing. When it did reject lines (say, responses sent before their worlds), the
    same file can be ingested again: lines stored the first time are skipped, the rejected ones
    are tried again, and that file's quarantine is replaced by the new verdicts."""
    if not request.path.is_file():
        raise IngestError(f"{request.path}: no such file")
    sha = file_sha256(request.path)
    earlier = queries.fetch_df(con, "ingest_by_sha", [request.dataset_id, request.kind, sha])
    retry_of = None
    if not earlier.empty:
        if int(earlier["n_rejected"][0]) == 0:
            report = ValidationReport(kind=request.kind, file_name=request.file_name,
                                      file_format=str(earlier["file_format"][0]), sha256=sha,
                                      dataset_id=request.dataset_id, model=request.model)
            return IngestResult(int(earlier["ingest_id"][0]), True, report)
        retry_of = int(earlier["ingest_id"][0])
    started = datetime.now(timezone.utc).replace(tzinfo=None)
    report = validate_file(con, request, progress, retry_of=retry_of)
    with _collector_paused():
        return _store(con, _Validated(request, report, retry_of, started))


def _store(con: duckdb.DuckDBPyConnection, v: _Validated) -> IngestResult:
    """Write one validated file in one transaction (rolled back on any exception)."""
    req, report, retry_of, k = v.request, v.report, v.retry_of, v.report.validator
    dataset_id, info = req.dataset_id, req.dataset
    con.begin()
    try:
        if queries.fetch_df(con, "dataset_by_id", [dataset_id]).empty:
            queries.execute(con, "insert_dataset", [dataset_id, info.simulated, info.description, info.seed])
        ingest_id = retry_of or int(queries.fetch_df(con, "next_ingest_id", [])["next_id"][0])
        k.write(con, report.accepted, ingest_id)
        if isinstance(k, _ResponsesBase):
            for m in k.models(report.accepted):
                queries.execute(con, "insert_model_if_absent",
                                [dataset_id, m, info.simulated, info.model_descriptions.get(m), dataset_id, m])
        if retry_of is not None:
            queries.execute(con, "retry_ingest_forget_rejects", [retry_of])
        insert_rows(con, "rejects", {"ingest_id": [ingest_id] * len(report.rejects), "dataset_id": dataset_id,
                                     "kind": req.kind, "file_name": report.file_name,
                                     "line_no": [r.line_no for r in report.rejects],
                                     "field": [r.field for r in report.rejects],
                                     "reason": [r.reason for r in report.rejects],
                                     "raw_text": [r.raw for r in report.rejects]})
        finished = datetime.now(timezone.utc).replace(tzinfo=None)
        if retry_of is None:
            queries.execute(con, "insert_ingest", [ingest_id, dataset_id, req.kind, report.file_name,
                                                   report.file_format, report.sha256, req.model, report.n_lines,
                                                   len(report.accepted), report.n_invalid, len(report.rejects),
                                                   v.started, finished])
        else:
            queries.execute(con, "retry_ingest_update", [report.n_lines, len(report.accepted), report.n_invalid,
                                                         len(report.rejects), finished, retry_of])
        con.commit()
    except Exception:
        con.rollback()
        raise
    log.info("ingested %s %s: %d accepted, %d rejected", req.kind, report.file_name, len(report.accepted),
             len(report.rejects))
    return IngestResult(ingest_id, False, report)
