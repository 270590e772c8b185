"""Validated ingest of the five input kinds into the warehouse.

``validate_file`` reads and checks a file against the warehouse's current contents and writes
nothing (the Data page shows its report before anything is stored). ``ingest_file`` streams: it
validates a batch of lines, writes its accepted rows and its quarantine, drops it and reads on,
so the records held in Python do not grow with the file; the whole file is still one transaction
(an exception anywhere leaves the warehouse as it was), and DuckDB keeps that transaction's
uncommitted rows in memory until the commit (about 190 bytes a stored response). Duplicates
across batches are found by the tables' primary keys, not by keys held in memory. The same file
(same sha256) ingested twice into the same dataset and kind changes nothing.

A line whose key an earlier ingest stored is compared with the stored row in DuckDB, a batch at a
time (``_stored_verdicts``): the same values are skipped (already stored), other values are a
rejected line (the stored row is kept). The keys an ingest stores clear the quarantined lines
earlier ingests left for them (``_clear_resolved_rejects``).
"""
from __future__ import annotations

import gc
import hashlib
import heapq
import json
import logging
import re
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ValidationError
from pydantic_core import to_json

from qlb.records.readers import (
    LineBlock, Record, csv_cells, detect_format, file_sha256, has_lines, jsonl_blocks, read_records,
)
from qlb.records.schemas import (
    PAIR_SHARED_FIELDS, NativeResponse, QLDocument, QLPrediction, RefusalResponse, World,
    MAX_ID_LENGTH, describe_error, invalid_field, model_name_problem,
)
from qlb.records.ontology import Ontology, load_ontology
from warehouse import bulk, queries
from warehouse.db import memory_limited, threads_limited, threads_restored, transaction
from warehouse.ontologies import create_dataset, dataset_ontology

log = logging.getLogger(__name__)

KINDS: tuple[str, ...] = ("worlds", "responses", "refusal", "corpus", "predictions")
Progress = Callable[[int], None]

BATCH_LINES = 20_000       # lines validated, written and dropped together by ingest_file ...
BATCH_CHARS = 32 << 20     # ... or fewer, once their text passes this many characters
# DuckDB's buffer memory while a file is stored: the open transaction's rows go to the file as
# they fill row groups instead of staying in memory (1 GB of responses: peak RSS 380 MB, was 555)
INGEST_MEMORY = "128MB"
CHECKERS = 2               # threads that check native-response blocks in bulk (one per core here)
REPEATS_LISTED = 5         # a reject reason on more lines is said once, with this many of its other lines
INVALID_GROUPS_KEPT = 200  # an ingest's report locates invalid lines of this many distinct reasons ...
INVALID_LINES_KEPT = 50    # ... and this many lines of each (the responses table holds them all)
REJECTS_LOCATED = 100      # rejected lines an ingest's JSON report lists (the quarantine holds them all)


class _Restated(str):
    """What ``_Kind.check`` says of a record whose key an earlier ingest stored: whether it is
    that same record (skipped, already stored) or another (rejected) is for the warehouse to tell,
    a batch at a time (``_stored_verdicts``)."""


RESTATED = _Restated("restates a stored key")


class IngestError(ValueError):
    """Bad usage of ingest (unknown kind, unreadable file, missing dataset context)."""


@dataclass(frozen=True)
class Reject:
    line_no: int
    field: str | None
    reason: str
    raw: str


class StoredLines:
    """The accepted lines of an ingest: counted, not kept (they are in the warehouse, and a large
    file's records would not fit in memory). ``len()`` is their number."""

    def __init__(self) -> None:
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def __iter__(self):
        raise TypeError("an ingest keeps no accepted records (they are in the warehouse); "
                        "use validate_file for the records themselves")

    def __repr__(self) -> str:
        return f"StoredLines({self.count})"


@dataclass
class ValidationReport:
    """What a file would contribute (``validate_file``: the accepted records with their line
    numbers) or contributed (``ingest_file``: their number, see StoredLines), and its rejects.
    An ingest's rejects keep no raw text: that is in the quarantine table."""

    kind: str
    file_name: str
    file_format: str
    sha256: str
    dataset_id: str
    model: str | None
    accepted: list[tuple[int, BaseModel]] | StoredLines = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    already_stored: int = 0   # lines skipped: stored by an earlier ingest with the same values (or a retry's first)
    invalid_count: int = 0    # accepted native responses with valid = false
    # (field, reason) -> [lines with it, the first INVALID_LINES_KEPT of them] of the invalid responses
    invalid_lines: dict[tuple[str | None, str], list] = field(default_factory=dict)
    cleared_rejects: int = 0  # quarantined lines of earlier ingests cleared: this ingest stored their keys
    validator: "_Kind | None" = field(default=None, repr=False, compare=False)

    @property
    def n_lines(self) -> int:
        """Non-blank input lines: accepted, rejected, and already stored (by an earlier ingest, the same values)."""
        return len(self.accepted) + len(self.rejects) + self.already_stored

    @property
    def n_invalid(self) -> int:
        """Accepted native responses stored with valid = false."""
        return self.invalid_count

    def note_invalid(self, accepted: Iterable[tuple[int, BaseModel]]) -> None:
        """Count the accepted native responses that are invalid, and locate them (the first lines of
        each reason, for ``invalid_messages``; memory does not grow with the file)."""
        groups = self.invalid_lines
        for n, r in accepted:
            if type(r) is not NativeResponse or r.valid:
                continue
            self.invalid_count += 1
            key = (invalid_field(r.invalid_reason), r.invalid_reason)
            group = groups.get(key)
            if group is None:
                if len(groups) >= INVALID_GROUPS_KEPT:
                    continue
                group = groups[key] = [0, []]
            group[0] += 1
            if len(group[1]) < INVALID_LINES_KEPT:
                group[1].append(n)

    def invalid_located(self) -> list[dict[str, Any]]:
        """The invalid responses this report locates, in line order: line, field, reason (the first
        lines of each reason; ``n_invalid`` counts them all)."""
        rows = [{"line": n, "field": fld, "reason": reason}
                for (fld, reason), (_, lines) in self.invalid_lines.items() for n in lines]
        return sorted(rows, key=lambda row: row["line"])

    def rejects_located(self, limit: int | None = None) -> tuple[list[dict[str, Any]], int]:
        """The first ``limit`` (``REJECTS_LOCATED``) rejected lines in line order, each as file, line,
        field and reason (what ``messages`` says of it), and how many more there are."""
        first = heapq.nsmallest(REJECTS_LOCATED if limit is None else limit, self.rejects, key=lambda r: r.line_no)
        return ([{"file": self.file_name, "line": r.line_no, "field": r.field, "reason": r.reason} for r in first],
                len(self.rejects) - len(first))

    def invalid_messages(self, limit: int = 10) -> list[str]:
        """``FILE:LINE: field: invalid: reason`` for the first invalid responses, like ``messages``:
        a reason on more than ``REPEATS_LISTED`` lines is one message at its first line naming the
        others; at most ``limit`` messages, then one that says how many invalid lines it left out."""
        out: list[tuple[int, str, int]] = []        # (first line, message, invalid lines it covers)
        for (fld, reason), (count, lines) in self.invalid_lines.items():
            said = (f"{fld}: " if fld else "") + "invalid: " + reason
            if count <= REPEATS_LISTED:
                out += [(n, f"{self.file_name}:{n}: {said}", 1) for n in lines]
                continue
            listed = line_ranges(lines[1:]) + (", ..." if count > len(lines) else "")
            out.append((lines[0], f"{self.file_name}:{lines[0]}: {said} (the same on {count - 1:,} more lines: "
                                  f"{listed})", count))
        out.sort(key=lambda m: m[0])
        shown = out[:limit]
        messages = [m for _, m, _ in shown]
        left = self.invalid_count - sum(c for _, _, c in shown)
        if left > 0:
            messages.append(f"{self.file_name}: {left:,} more invalid {'line' if left == 1 else 'lines'} not listed "
                            "here (stored with valid = false and their reason)")
        return messages

    def messages(self, group_repeats: bool = False) -> list[str]:
        """``FILE:LINE: field: reason`` for every rejected line. With ``group_repeats``, a field and
        reason that more than ``REPEATS_LISTED`` lines share is one message, at its first line, that
        still names every other line, as ranges (``lines 2-40, 42``; CONTRACT.md: every rejected line
        is reported; each is also a reject of its own in the quarantine)."""
        if not group_repeats:
            return [f"{self.file_name}:{r.line_no}: " + (f"{r.field}: " if r.field else "") + r.reason
                    for r in self.rejects]
        return grouped_messages(self.file_name, [(r.line_no, r.field, r.reason) for r in self.rejects])

    @property
    def detectors(self) -> list[str]:
        """The detectors a predictions file's lines name (rejected lines too, where they name one), in
        file order."""
        return list(getattr(self.validator, "detectors", None) or ())

    @property
    def foreign_domains(self) -> dict[str, int]:
        """Domains the dataset's ontology lacks, named by rejected worlds, with their number of lines."""
        return dict(getattr(self.validator, "foreign_domains", None) or {})


# a duplicate's reason: the record's key, then what was kept (``_Kind.duplicate``, ``_Kind.differs``)
_DUPLICATE = re.compile(r"^duplicate (.+?) (\(the first is kept\)|with other values than the one ingest #\d+ stored "
                        r"\(the stored one is kept[^()]*\))$")
# what a stored prediction's conflict adds (``_Predictions.differs``): no ingest replaces a stored record
PREDICTIONS_NOT_REPLACED = ("; qlb ingest never replaces a stored prediction: to store corrected predictions, give "
                            "them a new detector name in the file's detector field")


def grouped_messages(file_name: str, rejects: Iterable[tuple[int, str | None, str]]) -> list[str]:
    """``FILE:LINE: field: reason`` for (line, field, reason) rejects, in line order; a field and reason that
    more than ``REPEATS_LISTED`` lines share (duplicates of many keys count as one reason) is one message, at
    its first line, naming every other line as ranges and, for duplicates, how many keys they repeat (one
    key on every line is "the same"). `qlb ingest` and the stateless commands say them so."""
    groups: dict[tuple[str | None, str], list[tuple[int, str]]] = {}
    for line_no, fld, reason in rejects:
        dup = _DUPLICATE.match(reason)            # duplicates of many keys: one group, each line its key
        groups.setdefault((fld, dup.group(2) if dup else reason), []).append((line_no, reason))
    out = []
    for (fld, shared), lines in groups.items():
        lines.sort()
        if len(lines) <= REPEATS_LISTED:
            out += [(n, f"{file_name}:{n}: " + (f"{fld}: " if fld else "") + reason) for n, reason in lines]
            continue
        (first, reason), others = lines[0], [n for n, _ in lines[1:]]
        keys = len({r for _, r in lines})         # a duplicate's reason names its key
        same = ("the same" if keys == 1 else "the same, each for its own key," if keys == len(lines)
                else f"the same, for this key and {keys - 1:,} {'other' if keys == 2 else 'others'},")
        out.append((first, f"{file_name}:{first}: " + (f"{fld}: " if fld else "") + reason
                    + f" ({same} on {len(others):,} more lines: {line_ranges(others)})"))
    return [message for _, message in sorted(out, key=lambda m: m[0])]


def line_ranges(lines: list[int]) -> str:
    """Sorted line numbers as ranges: ``2-40, 42, 44-45``."""
    out: list[str] = []
    start = prev = lines[0]
    for n in [*lines[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(out)


@dataclass(frozen=True)
class IngestResult:
    """One ingest: its id, whether the file was already stored, and its validation report. A file
    that holds no lines (empty, blank, or a CSV header alone) is not recorded: its id is None."""

    ingest_id: int | None
    duplicate: bool
    report: ValidationReport

    @property
    def empty(self) -> bool:
        """The file held no lines: nothing was stored and no ingest recorded."""
        return self.ingest_id is None


@dataclass(frozen=True)
class DetectorCoverage:
    """Which of a dataset's corpus documents one detector has predictions for, per split: (documents
    with a prediction line that is not a recorded failure, documents of the split). A document without
    one counts as "reported nothing" when the detector is scored (QUASILEAK.md section 4), so a partial
    predictions file scores like a detector that missed everything in the rest."""

    detector: str
    by_split: dict[str, tuple[int, int]]

    @property
    def predicted(self) -> int:
        """Documents of the whole corpus with a prediction from the detector."""
        return sum(p for p, _ in self.by_split.values())

    @property
    def documents(self) -> int:
        """Documents of the whole corpus."""
        return sum(n for _, n in self.by_split.values())


def coverage_frame(con: duckdb.DuckDBPyConnection, dataset_id: str, detectors: Iterable[str] | None = None,
                   pending: Iterable[tuple[str, str]] = ()) -> pd.DataFrame:
    """Per detector and split of the dataset's corpus: documents, predicted (a prediction line) and
    failed (a line that records a failure), the ``coverage_of_detectors`` rows; ``detectors``: every
    detector with stored predictions when None. ``pending``: (detector, doc_id) pairs not stored yet
    that count as predicted (what a dry run would store)."""
    if detectors is None:
        detectors = queries.fetch_df(con, "ql_detector_predictions", [dataset_id])["detector"].tolist()
    pending = list(pending)
    return queries.fetch_df(con, "coverage_of_detectors", [list(detectors), dataset_id, [d for d, _ in pending],
                                                           [doc for _, doc in pending], dataset_id])


def coverage_of_detectors(con: duckdb.DuckDBPyConnection, dataset_id: str, detectors: Iterable[str],
                          pending: Iterable[tuple[str, str]] = ()) -> list[DetectorCoverage]:
    """Per detector (in the order given), how many of the dataset's corpus documents it has predictions
    for, per split (``coverage_frame``). No rows for a dataset without a corpus."""
    detectors = list(dict.fromkeys(detectors))
    if not detectors:
        return []
    rows = coverage_frame(con, dataset_id, detectors, pending)
    by_detector: dict[str, dict[str, tuple[int, int]]] = {}
    for r in rows.itertuples(index=False):
        by_detector.setdefault(r.detector, {})[r.split] = (int(r.predicted) - int(r.failed), int(r.documents))
    return [DetectorCoverage(d, by_detector[d]) for d in detectors if d in by_detector]


def detectors_of_ingest(con: duckdb.DuckDBPyConnection, ingest_id: int) -> list[str]:
    """The detectors whose predictions ingest ``ingest_id`` stored."""
    return queries.fetch_df(con, "detectors_of_ingest", [ingest_id])["detector"].tolist()


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


# -------------------------------------------------------------------------------------- kinds
class _Kind:
    """How one input kind is validated against the warehouse and turned into table rows."""

    model: type[BaseModel]
    json_columns: frozenset[str] = frozenset()
    ledger: str | None = None     # the table whose ``ledger_key`` columns are this kind's record key
    ledger_key: tuple[str, ...] = ()
    stored_table: str = ""        # the table that holds a record's key (queries restated_<it>)
    key_fields: tuple[str, ...] = ()   # the input fields of a record's key (a quarantined line's, resolved_rejects_<kind>)

    def __init__(self, con: duckdb.DuckDBPyConnection | None, dataset_id: str, model_name: str | None,
                 *, keys_in_warehouse: bool = False):
        self.dataset_id = dataset_id
        self.model_name = model_name
        # streamed ingest of a kind with a ledger table: its primary key finds duplicates across
        # batches and earlier ingests, so only the current batch's keys are held here
        self.keys_in_warehouse = keys_in_warehouse and self.ledger is not None
        self.context: dict[str, Any] = self.empty_context()
        self.seen: dict[Any, int | None] = {}   # record key -> ingest that stored it (None: this file)
        self.ontology: Ontology = load_ontology()   # the dataset's decision task (its own, or TUPLE's)
        if con is not None:
            self.ontology = dataset_ontology(con, dataset_id)
            self.load(con)

    def key(self, obj: BaseModel) -> Any:
        raise NotImplementedError

    def describe(self, obj: BaseModel) -> str:
        """The record as a duplicate's reason names it."""
        raise NotImplementedError

    def duplicate(self, obj: BaseModel) -> str:
        return f"duplicate {self.describe(obj)} (the first is kept)"

    @staticmethod
    def differs(described: str, stored_by: int) -> str:
        """The reason of a line whose key an earlier ingest stored with other values."""
        return f"duplicate {described} with other values than the one ingest #{stored_by} stored (the stored one is kept)"

    def use_ontology(self, ontology: Ontology) -> None:
        """Validate against ``ontology`` (the stateless commands' ``--ontology FILE``)."""
        self.ontology = ontology
        self.__dict__.pop("_label_sets", None)
        if "ontology" in self.context:
            self.context = {**self.context, "ontology": ontology}

    def claim(self, obj: BaseModel) -> str | None:
        """Register the record's key; a reason when it repeats an earlier line of the file,
        ``RESTATED`` when an earlier ingest stored it."""
        k = self.key(obj)
        if k in self.seen:
            return self.duplicate(obj) if self.seen[k] is None else RESTATED
        self.seen[k] = None
        return None

    def end_batch(self) -> None:
        """A batch is stored: forget keys the warehouse now holds."""
        if self.keys_in_warehouse:
            self.seen.clear()

    def empty_context(self) -> dict[str, Any]:
        """The validation context of a warehouse that holds nothing yet."""
        return {}

    def load(self, con: duckdb.DuckDBPyConnection) -> None:
        """Read what validation needs from the warehouse (known ids, worlds, documents)."""

    def check(self, obj: BaseModel) -> str | None:
        """Cross-record rules (duplicates, pairs); a reason when the record must be rejected (or
        ``_RecordRejected`` raised, when the rule is about one field)."""
        return None

    def validate(self, rec: Record) -> BaseModel:
        if rec.text is not None:
            return self.model.model_validate_json(rec.text, context=self.context or None)
        return self.model.model_validate(rec.obj, context=self.context or None)

    def frames(self, accepted: list[tuple[int, BaseModel]], ingest_id: int) -> list[tuple[str, Any]]:
        """(table, rows) to append for the accepted records."""
        raise NotImplementedError

    def write(self, con: duckdb.DuckDBPyConnection, accepted: list[tuple[int, BaseModel]], ingest_id: int) -> None:
        """Append the accepted records' rows (a key already stored is an error of the caller)."""
        for table, frame in self.frames(accepted, ingest_id):
            insert_rows(con, table, frame)

    def write_new(self, con: duckdb.DuckDBPyConnection, accepted: list[tuple[int, BaseModel]],
                  ingest_id: int) -> set[int]:
        """Append the accepted records' rows, except those whose key the ledger table already
        holds; the line numbers of those (none without a ledger table: keys are checked in memory)."""
        if self.ledger is None:
            self.write(con, accepted, ingest_id)
            return set()
        (table, frame), = self.frames(accepted, ingest_id)
        stored = insert_new_rows(con, table, frame, self.ledger_key)
        if len(stored) == len(accepted):
            return set()
        return {n for n, _ in accepted} - set(stored.tolist())


def _arrow(frame: pd.DataFrame | dict[str, list] | pa.Table) -> pa.Table | pd.DataFrame | None:
    """Rows as Arrow (column lists; a scalar is repeated on every row) or the DataFrame; None when
    there are none."""
    if isinstance(frame, dict):
        n = max((len(v) for v in frame.values() if isinstance(v, (list, pa.Array))), default=0)
        if n == 0:
            return None
        return pa.table({k: v if isinstance(v, (list, pa.Array)) else [v] * n for k, v in frame.items()})
    if isinstance(frame, pa.Table):
        return frame if frame.num_rows else None
    return None if frame.empty else frame


def insert_rows(con: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame | dict[str, list] | pa.Table) -> None:
    """Append rows to ``table`` (an internal table name, never user text). Column lists go
    through Arrow, which is several times faster than a DataFrame for plain lists."""
    _incoming = _arrow(frame)
    if _incoming is None:
        return
    cols = ", ".join(_incoming.column_names if isinstance(_incoming, pa.Table) else _incoming.columns)
    # DuckDB finds ``_incoming`` among this frame's variables (a replacement scan); a registered
    # view would keep every batch's Arrow table alive until the transaction ends
    con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM _incoming")  # table: internal name


def insert_new_rows(con: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame | dict[str, list] | pa.Table,
                    key: tuple[str, ...]) -> np.ndarray:
    """Append the rows whose ``key`` columns ``table`` does not hold yet, each key once (the row
    with the lowest ``line_no`` wins; a row's ``line_no`` is unique among them); the ``line_no`` of
    every row appended. The check is an anti-join, not a primary key: ``responses`` has none
    (migration 010). The lowest line of each key is found by grouping, several times faster than
    a window (``row_number() OVER (PARTITION BY ...)``) on a large batch.

    A ``key`` holding ``dataset_id`` compares the rows with the stored rows of the block's own
    datasets only: other datasets' rows never reach the join, and their row groups are skipped
    where the groups' min/max tell the datasets apart."""
    _incoming = frame if isinstance(frame, pa.Table) else _arrow(frame)
    if _incoming is None or not len(_incoming):
        return np.empty(0, dtype=np.int64)
    cols = ", ".join(_incoming.column_names if isinstance(_incoming, pa.Table) else _incoming.columns)
    keys = ", ".join(key)
    datasets = _block_datasets(_incoming) if "dataset_id" in key else []
    # bound constants, not a subquery on _incoming: only a constant filter reaches the table scan,
    # where the row groups' min/max skip other datasets (DuckDB builds its hash table on the block)
    stored = (f"(SELECT {keys} FROM {table} WHERE dataset_id IN ({', '.join('?' * len(datasets))}))"
              if datasets else table)
    result = con.execute(f"INSERT INTO {table} ({cols}) "        # table, cols, keys: internal names
                         f"SELECT {cols} FROM _incoming ANTI JOIN {stored} USING ({keys}) "
                         f"WHERE line_no IN (SELECT min(line_no) FROM _incoming GROUP BY {keys}) "
                         "RETURNING line_no", datasets)
    return result.fetchnumpy()["line_no"]


def _block_datasets(rows: pa.Table | pd.DataFrame) -> list[str]:
    """The distinct ``dataset_id`` values of a block's rows (one in practice: a block is one file's)."""
    if isinstance(rows, pa.Table):
        return pc.unique(rows.column("dataset_id")).to_pylist()
    return rows["dataset_id"].unique().tolist()



def _object_of(rec: Record) -> object:
    """The parsed JSON of a line (what a rejected line names: its domain, its detector), None when it
    is not JSON."""
    if rec.obj is not None or rec.text is None:
        return rec.obj
    try:
        return json.loads(rec.text)
    except ValueError:
        return None

class _Worlds(_Kind):
    model = World
    stored_table = "worlds"
    key_fields = ("world_id",)
    json_columns = frozenset({"hypotheses", "candidate_order"})

    def __init__(self, con, dataset_id, model_name, **options):
        # pair_id -> (mechanism, public fields) of its worlds; a complete pair keeps only its
        # mechanisms (a third world is rejected whatever its fields), so memory follows open pairs
        self.pairs: dict[str, list[tuple]] = {}
        self.foreign_domains: dict[str, int] = {}         # domain the ontology lacks -> rejected lines naming it
        super().__init__(con, dataset_id, model_name, **options)
        self.context = {"ontology": self.ontology}      # World checks its labels against it

    def validate(self, rec):
        try:
            return super().validate(rec)
        except ValidationError:
            self._note_foreign_domain(rec)
            raise

    def _note_foreign_domain(self, rec: Record) -> None:
        """Count the domain of a rejected line when the ontology lacks it: many such lines usually
        mean the dataset's ontology is not the one the worlds were written for."""
        obj = _object_of(rec)
        domain = obj.get("domain") if isinstance(obj, dict) else None
        if isinstance(domain, str) and domain and domain not in self.ontology.domains:
            self.foreign_domains[domain] = self.foreign_domains.get(domain, 0) + 1

    def load(self, con):
        for row in queries.fetch_df(con, "world_pairs", [self.dataset_id]).itertuples(index=False):
            self.seen[row.world_id] = row.ingest_id
            shared = (row.domain, row.split, row.coarse, (row.hypothesis_0, row.hypothesis_1),
                      row.recipient_role, tuple(row.candidate_order), row.request, row.intake_channel,
                      row.operating_window, row.case_context)
            self._join(row.pair_id, row.mechanism, shared)

    def _join(self, pair_id: str, mechanism: str, shared: tuple) -> None:
        members = self.pairs.setdefault(pair_id, [])
        members.append((mechanism, shared))
        if len(members) >= 2:
            self.pairs[pair_id] = [(m, None) for m, _ in members]

    def key(self, w: World) -> Any:
        return w.world_id

    def describe(self, w: World) -> str:
        return f"world_id {w.world_id!r}"

    def check(self, w: World) -> str | None:
        claimed = self.claim(w)
        if claimed is not None:
            return claimed
        shared = tuple(_hashable(getattr(w, f)) for f in PAIR_SHARED_FIELDS)
        members = self.pairs.get(w.pair_id, [])
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
        self._join(w.pair_id, w.mechanism, shared)
        return None

    def frames(self, accepted, ingest_id):
        rows = [dict(dataset_id=self.dataset_id, world_id=w.world_id, pair_id=w.pair_id, domain=w.domain,
                     split=w.split, coarse=w.coarse, mechanism=w.mechanism, hypothesis_0=w.hypotheses[0],
                     hypothesis_1=w.hypotheses[1], recipient_role=w.recipient_role,
                     candidate_order=list(w.candidate_order), request=w.request,
                     intake_channel=w.intake_channel, operating_window=w.operating_window,
                     case_context=w.case_context, diagnostic_note=w.diagnostic_note,
                     ingest_id=ingest_id, line_no=n) for n, w in accepted]
        return [("worlds", pd.DataFrame(rows))]


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
    key_fields = ("model", "world_id")

    def empty_context(self):
        return {"worlds": {}}

    def load(self, con):
        worlds = queries.fetch_df(con, "world_candidates", [self.dataset_id])
        shared: dict[Any, Any] = {}           # one object per distinct candidate set, not per world
        self.context = {"worlds": {r.world_id: shared.setdefault(k, k)
                                   for r in worlds.itertuples(index=False) for k in (self.world_key(r),)}}
        if not self.keys_in_warehouse:
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

    def describe(self, r) -> str:
        return self.describe_key(r.model, r.world_id)

    @staticmethod
    def describe_key(model: str, world_id: str) -> str:
        return f"response for model {model!r} and world {world_id!r}"

    def check(self, r) -> str | None:
        if self.keys_in_warehouse:             # the ledger table finds repeated keys (write_new)
            return None
        k = (r.model, r.world_id)
        if k not in self.seen:                 # the common case, without building a message
            self.seen[k] = None
            return None
        return self.duplicate(r) if self.seen[k] is None else RESTATED

    def models(self, accepted) -> list[str]:
        return sorted({r.model for _, r in accepted})


class _RecordRejected(Exception):
    def __init__(self, field: str | None, reason: str):
        super().__init__(reason)
        self.field, self.reason = field, reason


class _Responses(_ResponsesBase):
    model = NativeResponse
    table = ledger = stored_table = "responses"
    ledger_key = ("dataset_id", "model", "world_id")

    def world_key(self, row):
        return frozenset(row.candidate_order)

    def apply_world_rules(self, obj, candidates):
        return obj.assess(candidates)

    def frames(self, accepted, ingest_id):
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
        return [("responses", frame)]


class _Refusal(_ResponsesBase):
    model = RefusalResponse
    table = ledger = stored_table = "refusal_responses"
    ledger_key = ("dataset_id", "model", "world_id")

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

    def frames(self, accepted, ingest_id):
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
        return [("refusal_responses", frame)]


def cue_distance(cues: Iterable[tuple[int, int]]) -> int:
    """Characters from the first cue's start to the last cue's end (QUASILEAK.md section 3)."""
    cues = list(cues)
    return max(e for _, e in cues) - min(s for s, _ in cues)


class _Corpus(_Kind):
    model = QLDocument
    stored_table = "ql_documents"
    key_fields = ("doc_id",)
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

    def describe(self, d: QLDocument) -> str:
        return f"doc_id {d.doc_id!r}"

    def check(self, d: QLDocument) -> str | None:
        keys = frozenset(d.policy)
        if self.attributes is None:
            self.attributes = keys
        elif keys != self.attributes:
            raise _RecordRejected("policy", f"keys {', '.join(sorted(keys))} differ from the corpus's attribute set "
                                            f"{', '.join(sorted(self.attributes))} (every document labels the same "
                                            "attributes)")
        return self.claim(d)

    def frames(self, accepted, ingest_id):
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
                                   cue_distance=cue_distance(g.cues), line_no=n))
        return [("ql_documents", pd.DataFrame(docs)), ("ql_groups", pd.DataFrame(groups))]

    def write(self, con, accepted, ingest_id):
        for table, frame in self.frames(accepted, ingest_id):
            # a group's line_no tells restated documents' groups apart (``_stored_verdicts``); not stored
            insert_rows(con, table, frame.drop(columns=["line_no"]) if table == "ql_groups" and not frame.empty
                        else frame)


class _Predictions(_Kind):
    model = QLPrediction
    json_columns = frozenset({"groups"})
    ledger = stored_table = "ql_predictions"
    ledger_key = ("dataset_id", "detector", "doc_id")
    key_fields = ("detector", "doc_id")

    def __init__(self, con, dataset_id, model_name, **options):
        self.detectors: dict[str, None] = {}     # the detectors the file's lines name, in order (a set)
        super().__init__(con, dataset_id, model_name, **options)

    def empty_context(self):
        return {"documents": {}}

    attributes: frozenset[str] | None = None

    def load(self, con):
        docs = queries.fetch_df(con, "document_texts", [self.dataset_id])
        # QLPrediction checks a line against the stored corpus: its documents, and its attributes
        self.context = {"documents": {d: len(t) for d, t in zip(docs["doc_id"], docs["text"])},
                        "dataset": self.dataset_id}
        first = queries.fetch_df(con, "corpus_attributes", [self.dataset_id])
        if not first.empty:
            self.attributes = frozenset(json.loads(first["policy"][0]))
            self.context["attributes"] = self.attributes
        if not self.keys_in_warehouse:
            existing = queries.fetch_df(con, "existing_predictions", [self.dataset_id])
            self.seen = dict(zip(zip(existing["detector"], existing["doc_id"]), existing["ingest_id"]))

    def validate(self, rec):
        try:
            p = super().validate(rec)
        except ValidationError:
            self._note_detector(rec)
            raise
        self.detectors[p.detector] = None
        return p

    def _note_detector(self, rec: Record) -> None:
        """The detector a rejected line names, when it names one: its coverage is said after the ingest
        even when none of its lines was stored."""
        obj = _object_of(rec)
        name = obj.get("detector") if isinstance(obj, dict) else None
        if isinstance(name, str) and 0 < len(name) <= MAX_ID_LENGTH:
            self.detectors[name] = None

    def key(self, p: QLPrediction) -> Any:
        return (p.detector, p.doc_id)

    def describe(self, p: QLPrediction) -> str:
        return f"prediction for detector {p.detector!r} and doc {p.doc_id!r}"

    @staticmethod
    def differs(described: str, stored_by: int) -> str:
        """As ``_Kind.differs``, with the way to store corrected predictions: an ingest never replaces
        a stored prediction, so they go under a new detector name."""
        return (f"duplicate {described} with other values than the one ingest #{stored_by} stored (the stored one "
                f"is kept{PREDICTIONS_NOT_REPLACED})")

    def check(self, p: QLPrediction) -> str | None:
        # the corpus's attributes are checked by QLPrediction (context ``attributes``)
        return None if self.keys_in_warehouse else self.claim(p)

    def frames(self, accepted, ingest_id):
        frame = pd.DataFrame([dict(dataset_id=self.dataset_id, detector=p.detector, doc_id=p.doc_id,
                                   groups=json.dumps([{"attribute": g.attribute, "cues": [list(c) for c in g.cues]}
                                                      for g in p.groups]),
                                   n_groups=len(p.groups), ingest_id=ingest_id, line_no=n)
                              for n, p in accepted])
        return [("ql_predictions", frame)]


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


Accepted = list[tuple[int, BaseModel, str]]           # (line, record, raw text) of one batch
Flush = Callable[..., None]       # (accepted, rejects, restated[, bulk rows, their LineBlock, key ledger])


def _validate_stream(kind: _Kind, records: Iterable[Record], report: ValidationReport, progress: Progress | None,
                     flush: Flush, stored_before: Callable[[int], bool] | None = None) -> None:
    """Validate ``records`` in file order and hand each batch of accepted lines, rejects and
    restated lines (valid, their key stored by an earlier ingest: ``RESTATED``) to ``flush``;
    ``stored_before(line)`` is True for a line an earlier ingest of the file stored."""
    validate, check = kind.validate, kind.check          # hot loop: bound once
    accepted: Accepted = []
    rejects: list[Reject] = []
    restated: Accepted = []
    accept, reject = accepted.append, rejects.append
    chars, batch_lines, batch_chars = 0, BATCH_LINES, BATCH_CHARS
    for i, rec in enumerate(records, start=1):
        if stored_before is not None and stored_before(rec.line_no):
            report.already_stored += 1
        elif rec.error is not None:
            reject(Reject(rec.line_no, rec.field, rec.error, rec.raw))
        else:
            try:
                obj = validate(rec)
                reason = check(obj)
            except ValidationError as exc:
                fld, reason = describe_error(exc)
                reject(Reject(rec.line_no, fld, reason, rec.raw))
            except _RecordRejected as exc:         # a rule of the record (or, from check, across records) on one field
                reject(Reject(rec.line_no, exc.field, exc.reason, rec.raw))
            else:
                if reason is None:
                    accept((rec.line_no, obj, rec.raw))
                elif reason is RESTATED:
                    restated.append((rec.line_no, obj, rec.raw))
                else:
                    reject(Reject(rec.line_no, None, reason, rec.raw))
        chars += len(rec.raw)
        if len(accepted) + len(rejects) + len(restated) >= batch_lines or chars >= batch_chars:
            flush(accepted, rejects, restated)
            accepted.clear()
            rejects.clear()
            restated.clear()
            chars = 0
            gc.collect(0)                  # the collector is paused: free any cycles the batch left
        if progress is not None and i % 2000 == 0:
            progress(i)
    flush(accepted, rejects, restated)


def _stored_verdicts(con: duckdb.DuckDBPyConnection, k: _Kind, frames: list[tuple[str, Any]],
                     dataset_id: str) -> dict[int, tuple[int, bool]]:
    """For rows (``frames``, as ``k.frames`` makes them) whose key the dataset already holds: line
    -> (the ingest that stored the key, whether the row equals the stored one). One query a batch
    (``restated_<table>``), compared in DuckDB."""
    tables = {table: _arrow(frame) for table, frame in frames}
    _restated = tables.get(k.stored_table)
    if _restated is None:
        return {}
    params = [dataset_id]
    if k.stored_table == "ql_documents":        # a document is its row and its groups
        _restated_groups = tables.get("ql_groups")
        if _restated_groups is None:
            _restated_groups = pa.table({"line_no": pa.array([], pa.int64()), "group_index": pa.array([], pa.int64()),
                                         "attribute": pa.array([], pa.string()), "cues": pa.array([], pa.string())})
        params = [dataset_id, dataset_id]
    # ``_restated`` (and ``_restated_groups``) are found among this frame's variables by DuckDB
    rows = con.execute(queries.sql(f"restated_{k.stored_table}"), params).fetchall()
    return {int(line): (int(stored_by), bool(identical)) for line, stored_by, identical in rows}


def _judge_restated(k: _Kind, lines: Iterable[tuple[int, str, str]], verdicts: dict[int, tuple[int, bool]],
                    this_ingest: int | None) -> tuple[int, list[Reject]]:
    """The lines (line, the record as a reason names it, raw text) whose key the warehouse holds:
    how many equal the row an earlier ingest stored (skipped: already stored), and the rejects of
    the others: a key this file stored at an earlier line (the first is kept), or an earlier
    ingest's row with other values (the stored one is kept)."""
    same, rejects = 0, []
    for n, described, raw in lines:
        stored_by, identical = verdicts.get(n, (this_ingest, False))
        if stored_by == this_ingest:
            rejects.append(Reject(n, None, f"duplicate {described} (the first is kept)", raw))
        elif identical:
            same += 1
        else:
            rejects.append(Reject(n, None, k.differs(described, stored_by), raw))
    return same, rejects


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


def _make_kind(kind: str, con, dataset_id: str, model: str | None, *, keys_in_warehouse: bool = False) -> _Kind:
    if kind not in _KIND_CLASSES:
        raise IngestError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    problem = model_name_problem(model) if model is not None else None
    if problem:
        raise IngestError(f"--model: {problem}")
    return _KIND_CLASSES[kind](con, dataset_id, model, keys_in_warehouse=keys_in_warehouse)


def _file_format(request: IngestRequest) -> str:
    if request.path.is_dir():
        raise IngestError(f"{request.path}: is a directory, not a file")
    if not request.path.is_file():
        raise IngestError(f"{request.path}: no such file" if not request.path.exists()
                          else f"{request.path}: not a regular file")
    try:
        return detect_format(request.display_name or request.path)
    except ValueError as exc:
        raise IngestError(str(exc)) from exc


def _stored_lines(con: duckdb.DuckDBPyConnection, ingest_id: int) -> Callable[[int], bool]:
    """Whether a line of a file was stored by its ingest ``ingest_id`` (one bit per line)."""
    lines = queries.fetch_df(con, "stored_lines_of_ingest", [ingest_id] * 5)["line_no"].to_numpy(dtype=np.int64)
    bits = np.zeros(int(lines.max()) + 1 if len(lines) else 0, dtype=bool)
    bits[lines] = True
    packed, size = bytes(np.packbits(bits, bitorder="little")), len(bits)
    return lambda n: n < size and bool(packed[n >> 3] >> (n & 7) & 1)


def validate_file(con: duckdb.DuckDBPyConnection | None, request: IngestRequest, progress: Progress | None = None,
                  *, retry_of: int | None = None, worlds: dict[str, World] | None = None,
                  documents: dict[str, int] | None = None, attributes: frozenset[str] | None = None,
                  ontology: Ontology | None = None) -> ValidationReport:
    """Validate ``request.path`` as ``request.kind`` against the dataset's current contents;
    write nothing. The report holds every accepted record (memory grows with the file: use
    ``ingest_file`` to store a large one).

    ``con`` may be a read-only handle, or None for a warehouse that does not exist yet; the
    stateless commands pass ``worlds`` (validated from a file) or ``documents`` instead of a
    warehouse (with ``documents``, the corpus's ``attributes`` a prediction's group may name), and
    ``ontology`` (``--ontology FILE``) instead of the dataset's. ``retry_of`` names
    an earlier ingest of the same file whose stored lines are skipped."""
    fmt = _file_format(request)
    k = _make_kind(request.kind, con, request.dataset_id, request.model)
    if ontology is not None:
        k.use_ontology(ontology)
    if worlds is not None and isinstance(k, _ResponsesBase):
        k.context = {"worlds": {wid: k.world_key(w) for wid, w in worlds.items()}}
    if documents is not None and isinstance(k, _Predictions):
        k.context = {"documents": dict(documents)} | ({"attributes": attributes} if attributes else {})
    report = ValidationReport(kind=request.kind, file_name=request.file_name, file_format=fmt,
                              sha256=file_sha256(request.path), dataset_id=request.dataset_id, model=request.model,
                              validator=k)

    def keep(accepted: Accepted, rejects: list[Reject], restated: Accepted = ()) -> None:
        report.accepted.extend((n, obj) for n, obj, _ in accepted)
        report.note_invalid((n, obj) for n, obj, _ in accepted)
        if restated:              # keys the warehouse holds (so ``con`` is one): equal to the stored rows?
            verdicts = _stored_verdicts(con, k, k.frames([(n, obj) for n, obj, _ in restated], 0), request.dataset_id)
            same, differ = _judge_restated(k, ((n, k.describe(obj), raw) for n, obj, raw in restated), verdicts,
                                           retry_of)
            report.already_stored += same
            rejects = sorted([*rejects, *differ], key=lambda r: r.line_no)
        report.rejects.extend(rejects)

    stored_before = _stored_lines(con, retry_of) if retry_of is not None and con is not None else None
    with _collector_paused():
        _validate_stream(k, read_records(request.path, k.json_columns, fmt=fmt), report, progress, keep,
                         stored_before)
    return report


def ingest_file(con: duckdb.DuckDBPyConnection, request: IngestRequest, progress: Progress | None = None,
                *, bulk_validation: bool = True) -> IngestResult:
    """Validate and store one file in one transaction, in batches (see module docstring).

    The same file again (same dataset, kind and sha256) changes nothing when its first ingest
    rejected nothing. When it did reject lines (say, responses sent before their worlds), the
    same file can be ingested again: lines stored the first time are skipped, the others are
    tried again, and that file's quarantine is replaced by the new verdicts.

    Another file (a corrected copy, say) may restate records the dataset holds: a line equal to
    the stored record of its key is skipped and counted as already stored; one with other values
    is rejected (the stored one is kept). A key this ingest stores clears the quarantined lines
    earlier ingests left for it (their problem is fixed). A file without lines is not recorded.

    Native responses in JSON Lines are validated in bulk (``warehouse.bulk``: the same verdicts,
    several times faster); ``bulk_validation=False`` sends every line through pydantic instead."""
    fmt = _file_format(request)
    if not has_lines(request.path, fmt):
        report = ValidationReport(kind=request.kind, file_name=request.file_name, file_format=fmt,
                                  sha256=file_sha256(request.path), dataset_id=request.dataset_id,
                                  model=request.model, accepted=StoredLines())
        log.info("%s holds no lines: nothing stored, no ingest recorded", request.file_name)
        return IngestResult(None, False, report)
    in_bulk = bulk_validation and request.kind == "responses" and fmt == "jsonl"
    # a first file of its kind can be neither a repeat nor a retry: its sha256 is then computed
    # while the bulk path reads it, instead of in a pass of its own
    digest = hashlib.sha256() if in_bulk and _first_of_kind(con, request) else None
    sha = "" if digest is not None else file_sha256(request.path)
    report = ValidationReport(kind=request.kind, file_name=request.file_name, file_format=fmt, sha256=sha,
                              dataset_id=request.dataset_id, model=request.model, accepted=StoredLines())
    earlier = (pd.DataFrame() if digest is not None
               else queries.fetch_df(con, "ingest_by_sha", [request.dataset_id, request.kind, sha]))
    retry_of = None
    if not earlier.empty:
        if int(earlier["n_rejected"][0]) == 0:
            report.file_format = str(earlier["file_format"][0])
            return IngestResult(int(earlier["ingest_id"][0]), True, report)
        retry_of = int(earlier["ingest_id"][0])
    started = datetime.now(timezone.utc).replace(tzinfo=None)
    k = _make_kind(request.kind, con, request.dataset_id, request.model, keys_in_warehouse=True)
    report.validator = k
    stored_before = _stored_lines(con, retry_of) if retry_of is not None else None
    # DuckDB's settings are set back outside the transaction after an error: the error aborts
    # it, and a SET in an aborted transaction would fail in its place
    with _collector_paused(), memory_limited(con, INGEST_MEMORY), threads_restored(con):
        with transaction(con):
            ingest_id = _open_ingest(con, request, retry_of)
            flush = _batch_writer(con, k, report, request, ingest_id)
            if in_bulk and type(k) is _Responses and stored_before is None:
                _ingest_in_bulk(con, k, request, report, progress, flush, ingest_id, digest)
                if digest is not None:
                    report.sha256 = digest.hexdigest()
            else:
                _validate_stream(k, read_records(request.path, k.json_columns, fmt=fmt), report, progress, flush,
                                 stored_before)
            report.cleared_rejects = _clear_resolved_rejects(con, k, request, report, ingest_id)
            recorded = _close_ingest(con, request, report, ingest_id, retry_of, started)
    log.info("ingested %s %s: %d accepted, %d rejected", request.kind, report.file_name, len(report.accepted),
             len(report.rejects))
    return IngestResult(ingest_id if recorded else None, False, report)


def _first_of_kind(con: duckdb.DuckDBPyConnection, request: IngestRequest) -> bool:
    """Whether the dataset has no ingest of the request's kind yet."""
    return int(queries.fetch_df(con, "ingests_of_kind", [request.dataset_id, request.kind])["n"][0]) == 0


def _open_ingest(con: duckdb.DuckDBPyConnection, request: IngestRequest, retry_of: int | None) -> int:
    """Create the dataset when it is new; the ingest id (a retry keeps its first ingest's and
    forgets that ingest's quarantine, which the retry writes anew)."""
    info = request.dataset
    if queries.fetch_df(con, "dataset_by_id", [request.dataset_id]).empty:
        try:
            create_dataset(con, request.dataset_id, info.simulated, info.description, info.seed)
        except ValueError as exc:              # the name rule
            raise IngestError(str(exc)) from None
    if retry_of is not None:
        queries.execute(con, "retry_ingest_forget_rejects", [retry_of])
        return retry_of
    return int(queries.fetch_df(con, "next_ingest_id", [])["next_id"][0])


def _batch_writer(con: duckdb.DuckDBPyConnection, k: _Kind, report: ValidationReport, request: IngestRequest,
                  ingest_id: int) -> Flush:
    """The flush of ``ingest_file``: write a batch's rows, models and quarantine; count it."""
    info = request.dataset

    def store(accepted: Accepted, rejects: list[Reject], restated: Accepted = (), plain: pa.Table | None = None,
              block: LineBlock | None = None, ledger: bulk.KeyLedger | None = None) -> None:
        restated = list(restated)                  # lines whose key an earlier ingest stored (worlds, corpus)
        if plain is not None and plain.num_rows:
            rejects = _store_with_plain(accepted, rejects, plain, block, ledger)
        elif accepted:
            records = [(n, obj) for n, obj, _ in accepted]
            taken = k.write_new(con, records, ingest_id)
            if taken:                          # keys stored by an earlier line, batch or ingest
                restated += [a for a in accepted if a[0] in taken]
                records = [(n, obj) for n, obj in records if n not in taken]
            report.accepted.count += len(records)
            report.note_invalid(records)
            if isinstance(k, _ResponsesBase):
                add_models(k.models(records))
            if ledger is not None and records:     # the bulk path's later blocks must know these keys
                ledger.claim(pa.table({"model": [r.model for _, r in records],
                                       "world_id": [r.world_id for _, r in records],
                                       "line_no": [n for n, _ in records]}))
        if restated:
            verdicts = _stored_verdicts(con, k, k.frames([(n, obj) for n, obj, _ in restated], ingest_id),
                                        request.dataset_id)
            same, differ = _judge_restated(k, ((n, k.describe(obj), raw) for n, obj, raw in restated), verdicts,
                                           ingest_id)
            report.already_stored += same
            rejects = sorted([*rejects, *differ], key=lambda r: r.line_no)
        if rejects:
            insert_rows(con, "rejects", {"ingest_id": ingest_id, "dataset_id": request.dataset_id,
                                         "kind": request.kind, "file_name": report.file_name,
                                         "line_no": [r.line_no for r in rejects],
                                         "field": [r.field for r in rejects],
                                         "reason": [r.reason for r in rejects],
                                         "raw_text": [r.raw for r in rejects]})
            report.rejects.extend(Reject(r.line_no, r.field, r.reason, "") for r in rejects)
        k.end_batch()

    def _store_with_plain(accepted: Accepted, rejects: list[Reject], plain: pa.Table,
                          block: LineBlock, ledger: bulk.KeyLedger) -> list[Reject]:
        """Store the bulk path's rows and the pydantic path's accepted records of one block in
        line order, each key's first row only (``ledger``); the block's rejects with its
        duplicates added."""
        records = [(n, obj) for n, obj, _ in accepted]
        slow = _arrow(k.frames(records, ingest_id)[0][1]) if records else None
        parts = [plain] if slow is None else [plain, slow.select(plain.schema.names).cast(plain.schema)]
        masks = ledger.claim(*parts)
        for part, new in zip(parts, masks):            # a block's plain rows, then the rows pydantic judged
            insert_rows(con, "responses", part if new.all() else part.filter(new))
        rows, new = pa.concat_tables(parts), np.concatenate(masks)
        stored = rows.column("line_no").to_numpy()[new]
        report.accepted.count += len(stored)
        if len(stored) < rows.num_rows:                # keys stored by an earlier line, block or ingest
            lost = rows.filter(pa.array(~new))
            before = ledger.stored_before(lost)        # only these are compared with the stored rows
            verdicts = (_stored_verdicts(con, k, [("responses", lost.filter(pa.array(before)))], request.dataset_id)
                        if before.any() else {})
            same = [n for n, (by, identical) in verdicts.items() if identical and by != ingest_id]
            if same:                                   # skipped: no text or message needed
                lost = lost.filter(pc.invert(pc.is_in(lost.column("line_no"), pa.array(same, pa.int64()))))
            raw = {n: r for n, _, r in accepted}
            lines = lost.column("line_no").to_pylist()
            raw.update((r.line_no, r.raw) for r in block.records_at(n - block.first for n in lines if n not in raw))
            _, differ = _judge_restated(
                k, ((n, k.describe_key(m, w), raw[n])
                    for n, m, w in zip(lines, lost.column("model").to_pylist(), lost.column("world_id").to_pylist())),
                verdicts, ingest_id)
            report.already_stored += len(same)
            rejects = sorted(rejects + differ, key=lambda r: r.line_no)
        if records:
            kept = set(stored.tolist())
            report.note_invalid((n, obj) for n, obj in records if n in kept)
        add_models(pc.unique(rows.column("model")).to_pylist())
        return rejects

    def add_models(models: list[str]) -> None:
        """The batch's models the dataset lacks, in one statement."""
        if models:
            queries.execute(con, "insert_models_if_absent", [request.dataset_id, info.simulated, models,
                                                             [info.model_descriptions.get(m) for m in models],
                                                             request.dataset_id])

    return store


def _ingest_in_bulk(con: duckdb.DuckDBPyConnection, k: "_Responses", request: IngestRequest, report: ValidationReport,
                    progress: Progress | None, flush: "Flush", ingest_id: int,
                    digest: "hashlib._Hash | None" = None) -> None:
    """``ingest_file``'s path for native responses in JSON Lines: each block's plainly valid lines
    are found at once (``warehouse.bulk``), its other lines go through pydantic as in
    ``_validate_stream``; both are stored together in line order. ``digest`` (a hashlib object),
    when given, is fed the file's bytes as they are read.

    Checking a block is most of the work: ``CHECKERS`` threads check the next blocks, each on a
    DuckDB cursor of its own (it reads only its block), while this thread stores the blocks in
    line order and reads on; at most ``CHECKERS + 1`` blocks wait for a check. DuckDB, Arrow and
    numpy release the GIL, so the threads share the cores; DuckDB runs each query on one thread
    meanwhile, so that its own workers do not compete with them."""
    in_flight = CHECKERS + 1
    candidates = bulk.Candidates(k.context["worlds"])
    ledger = bulk.KeyLedger(candidates.world_ids)
    for batch in con.sql(queries.sql("stored_response_keys"), params=[request.dataset_id]).to_arrow_reader(1 << 16):
        ledger.mark(batch.column(0), batch.column(1))     # the dataset's stored keys, a batch at a time

    def check(block: LineBlock | list[Record] | Callable[[], LineBlock | list[Record]],
              cursor: duckdb.DuckDBPyConnection) -> tuple[LineBlock | list[Record], pa.Table | None, list[Record]]:
        if callable(block):
            block = block()
        if not isinstance(block, LineBlock):
            return block, None, block
        return block, *bulk.plain_native_responses(cursor, block, candidates, request.dataset_id, request.model,
                                                   ingest_id)

    def store(block: LineBlock | list[Record], plain: pa.Table | None, records: list[Record]) -> None:
        accepted: Accepted = []
        rejects: list[Reject] = []
        restated: Accepted = []

        def keep(acc: Accepted, rej: list[Reject], res: Accepted) -> None:
            accepted.extend(acc)
            rejects.extend(rej)
            restated.extend(res)

        _validate_stream(k, records, report, None, keep)
        flush(accepted, rejects, restated, plain, block, ledger)
        # Arrow's allocator (mimalloc) keeps the checking threads' freed blocks for reuse: a 1 GB
        # file peaked at 505 MB against 481 MB with them given back here, for ~4% of the speed
        pa.default_memory_pool().release_unused()
        if progress is not None and (records or (plain is not None and plain.num_rows)):
            progress(block.first + len(block) - 1 if isinstance(block, LineBlock) and len(block)
                     else records[-1].line_no)

    with ExitStack() as stack:
        stack.enter_context(threads_limited(con, 1))   # measured in one run: 366k lines/s against 305k with 2 a query
        cursors = [stack.enter_context(con.cursor()) for _ in range(in_flight)]   # a block in flight never shares one
        checker = stack.enter_context(ThreadPoolExecutor(max_workers=CHECKERS))
        pending: deque[Future] = deque()
        stack.callback(lambda: [f.cancel() for f in pending])     # on an error, no check waits to start
        for i, block in enumerate(jsonl_blocks(request.path, digest=digest, deferred=True)):
            if len(pending) == in_flight:
                store(*pending.popleft().result())
            pending.append(checker.submit(check, block, cursors[i % in_flight]))
        while pending:
            store(*pending.popleft().result())


def _clear_resolved_rejects(con: duckdb.DuckDBPyConnection, k: _Kind, request: IngestRequest,
                            report: ValidationReport, ingest_id: int) -> int:
    """Delete the quarantined lines of the dataset's earlier ingests of this kind whose record key
    this ingest stored (``quarantined_records``, then ``resolved_rejects_<kind>`` by the kind's key):
    the quarantine holds open problems only.
    Their ingests keep their counts (what each found). How many were cleared.

    A line's key is read from its text as a JSON object, whatever its file's format: a JSON Lines
    line and a Parquet row are one already; a CSV row's key cells, read from its text (its header
    line first, see ``readers.csv_cells``), are made one here (``quarantined_csv_keys``)."""
    if not len(report.accepted):
        return 0
    if int(queries.fetch_df(con, "open_rejects_of_kind", [request.dataset_id, request.kind, ingest_id])["n"][0]) == 0:
        return 0
    con.register("quarantined_csv_keys", _quarantined_csv_keys(con, k, request, ingest_id))
    try:
        queries.execute(con, "quarantined_records", [request.dataset_id, request.kind, ingest_id])
        cleared = con.execute(queries.sql(f"resolved_rejects_{request.kind}"), [ingest_id]).fetchall()
    finally:
        queries.execute(con, "drop_quarantined_records", [])
        con.unregister("quarantined_csv_keys")
    return len(cleared)


def _quarantined_csv_keys(con: duckdb.DuckDBPyConnection, k: _Kind, request: IngestRequest,
                          ingest_id: int) -> pa.Table:
    """The keys of the CSV rows earlier ingests of the kind quarantined (``quarantined_csv_rows``),
    each as the JSON object of its ``key_fields`` cells: ingest_id, line_no, record (a row whose
    text cannot be read as a header and a row has none)."""
    ingests, lines, records = [], [], []
    rows = con.execute(queries.sql("quarantined_csv_rows"), [request.dataset_id, request.kind, ingest_id])
    while batch := rows.fetchmany(10_000):
        for quarantined_by, line_no, raw in batch:
            cells = csv_cells(raw)
            if cells is not None:
                ingests.append(quarantined_by)
                lines.append(line_no)
                records.append(json.dumps({f: cells.get(f) for f in k.key_fields}))
    return pa.table({"ingest_id": pa.array(ingests, pa.int32()), "line_no": pa.array(lines, pa.int32()),
                     "record": pa.array(records, pa.string())})


def _close_ingest(con: duckdb.DuckDBPyConnection, request: IngestRequest, report: ValidationReport,
                  ingest_id: int, retry_of: int | None, started: datetime) -> bool:
    """The ``ingests`` row: what the file contributed. A new file whose every line was already stored with the
    same values (the same data exported again, say) contributed nothing and is not recorded, so the dataset's
    fingerprint, and every run's freshness, stays as it was; whether a row was written or updated."""
    finished = datetime.now(timezone.utc).replace(tzinfo=None)
    if retry_of is None and not report.accepted and not report.rejects and not report.cleared_rejects:
        return False
    if retry_of is None:
        queries.execute(con, "insert_ingest", [ingest_id, request.dataset_id, request.kind, report.file_name,
                                               report.file_format, report.sha256, request.model, report.n_lines,
                                               len(report.accepted), report.n_invalid, len(report.rejects),
                                               started, finished])
    else:
        queries.execute(con, "retry_ingest_update", [report.n_lines, len(report.accepted), report.n_invalid,
                                                     len(report.rejects), finished, retry_of])
    return True
