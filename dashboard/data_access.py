"""The one app-side module that owns caching and warehouse access for the pages.

Pages never speak SQL or open connections: they call the functions here. Reads go through a
read-only DuckDB handle (a fresh cursor per query, values bound with ``?`` via
warehouse.queries); results are cached with st.cache_data (bounded, with a TTL).

The handle is held only while someone reads: the router holds it for one page run
(``reading``), every query outside a page run holds it for that query, and the last one out
closes it. So between page runs the file is free and ``qlb ingest`` / ``qlb audit`` in another
process can write (DuckDB allows one writing process or many reading ones, never both). A read
that meets such a write raises ``WarehouseBusy``, which the router shows as "being updated" and
retries. Writes from the app itself (the Data page's ingest) close the handle first, because
DuckDB refuses a read-write and a read-only handle on one file in the same process.
"""
from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import duckdb
import pandas as pd
import streamlit as st

from qlb.records.ontology import Ontology
from qlb.records.ontology import INSPECT, Domain, OntologyError, decode_ontology_bytes, load_ontology, parse_ontology
from qlb.records.schemas import dataset_name_problem
from qlb.tuple.release_views import DECODER_FAMILIES, release_columns
from warehouse import ontologies, queries
from warehouse.db import default_path, open_reader, writer
from warehouse.ingest import IngestRequest, IngestResult, ValidationReport, ingest_file, validate_file

_write_lock = threading.Lock()


def warehouse_path() -> str:
    """The warehouse the app shows: ``QLB_WAREHOUSE`` or the default ``warehouse/qlb.duckdb``."""
    return str(Path(default_path()).resolve())


def warehouse_exists(path: str) -> bool:
    """Whether a warehouse file exists at ``path``."""
    return os.path.exists(path)


class _Lease:
    """One read-only handle per warehouse file, open while at least one holder reads."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.holders: dict[str, int] = {}
        self.handles: dict[str, duckdb.DuckDBPyConnection] = {}

    def hold(self, path: str) -> None:
        with self.lock:
            self.holders[path] = self.holders.get(path, 0) + 1

    def release(self, path: str) -> None:
        with self.lock:
            self.holders[path] = self.holders.get(path, 1) - 1
            if self.holders[path] <= 0:
                del self.holders[path]
                self.close(path)

    def cursor(self, path: str) -> duckdb.DuckDBPyCursor:
        """A cursor on the handle, opened now if none is (WarehouseBusy while a write holds the file)."""
        with self.lock:
            con = self.handles.get(path)
            if con is None:
                con = self.handles[path] = open_reader(path)
            return con.cursor()

    def close(self, path: str | None = None) -> None:
        """Close the handle of ``path`` (every handle when None); holders reopen on their next read."""
        with self.lock:
            for p in ([path] if path is not None else list(self.handles)):
                con = self.handles.pop(p, None)
                if con is not None:
                    try:
                        con.close()
                    except duckdb.Error:
                        pass


_lease = _Lease()


@contextmanager
def reading(path: str) -> Iterator[None]:
    """Hold the read-only handle of ``path`` for a block (one page run): the queries inside share
    it, and it is closed when the last holder leaves."""
    _lease.hold(path)
    try:
        yield
    finally:
        _lease.release(path)


@contextmanager
def _cursor(path: str) -> Iterator[duckdb.DuckDBPyCursor]:
    """A read-only cursor for one batch of reads (a write of this process closes the handle and
    forgets it, so the next batch opens a fresh one)."""
    with reading(path):
        cur = _lease.cursor(path)
        try:
            yield cur
        finally:
            try:
                cur.close()
            except duckdb.Error:
                pass


def _query(path: str, name: str, params: tuple = ()) -> pd.DataFrame:
    with _cursor(path) as cur:
        return queries.fetch_df(cur, name, params)


@st.cache_data(ttl=300, max_entries=256, show_spinner=False)
def query(path: str, name: str, params: tuple = ()) -> pd.DataFrame:
    """A named query's rows (cached per warehouse, query and parameters)."""
    return _query(path, name, params)


def release_readers() -> None:
    """Close the read-only handles and forget cached results (before and after a write)."""
    _lease.close()
    forget_cached_reads()


def forget_cached_reads() -> None:
    """Forget every cached read of this module (each page recomputes from the warehouse)."""
    for cached in (query, run_data, report_html, report_pdf, detector_coverage, robustness_checks, decoding_frame,
                   recovery_by_class, prepared_utility, frozen_policies):
        cached.clear()


_seen_versions: dict[str, tuple] = {}
_seen_lock = threading.Lock()


def warehouse_version(path: str) -> tuple:
    """What any write to the warehouse changes, by any process: the size and modification time
    of its file and of its write-ahead log (a reader changes neither)."""
    version = []
    for part in (path, path + ".wal"):
        try:
            stat = os.stat(part)
            version.append((stat.st_size, stat.st_mtime_ns))
        except OSError:
            version.append(None)
    return tuple(version)


def forget_if_written(path: str) -> bool:
    """At the start of a page run: forget the cached reads when the warehouse changed since the
    last page run (a `qlb collect`, `qlb ingest` or `qlb audit` in another process), so no page
    shows an older run or count than the file holds; whether it did. The cache's TTL alone would
    have kept them for up to ten minutes. Read handles need no closing: none can be open across
    another process's write (DuckDB lets a writing process in only when no reader holds the file)."""
    version = warehouse_version(path)
    with _seen_lock:           # forgotten before another page run can see the new version as seen
        before = _seen_versions.get(path)
        if before is None or before == version:
            _seen_versions[path] = version
            return False
        forget_cached_reads()
        _seen_versions[path] = version
    return True


def datasets(path: str) -> pd.DataFrame:
    """Every dataset with its counts of worlds, models, responses, documents and prediction lines, oldest first."""
    return query(path, "datasets")


def upload_folder() -> Path:
    """A fresh private folder (mode 0700, this user's) for this server's uploads, removed with
    everything in it when the process exits: uploaded answers are copied into the warehouse at
    ingest and never stay behind in the temporary directory."""
    folder = Path(tempfile.mkdtemp(prefix="qlb_uploads_"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def validate_upload(path: str, kind: str, file_path: str, dataset: str, model: str | None,
                    display_name: str) -> ValidationReport:
    """Validate an uploaded file against the warehouse (read-only); nothing is written."""
    request = IngestRequest(kind, file_path, dataset, model=model or None, display_name=display_name)
    if not warehouse_exists(path):
        return validate_file(None, request)
    with _cursor(path) as cur:
        return validate_file(cur, request)


@contextmanager
def _writing(path: str) -> Iterator[duckdb.DuckDBPyConnection]:
    """The read-write handle for one write from the app: one writer at a time, with the cached
    read-only handle released before (DuckDB refuses both in one process) and caches after."""
    with _write_lock:
        release_readers()
        try:
            with writer(path) as con:
                yield con
        finally:
            release_readers()


def ingest_upload(path: str, kind: str, file_path: str, dataset: str, model: str | None,
                  display_name: str) -> IngestResult:
    """Ingest an uploaded file through the same ingest API as ``qlb ingest`` (one transaction)."""
    with _writing(path) as con:
        return ingest_file(con, IngestRequest(kind, file_path, dataset, model=model or None, display_name=display_name))


# ------------------------------------------------------------- ontologies (``qlb ingest ontology``)

@dataclass(frozen=True)
class OntologyCheck:
    """An uploaded ontology file checked before anything is written: the ontology when the file is
    valid, every problem line (the file's, or why the dataset cannot take it), the file's notes."""

    ontology: Ontology | None
    problems: tuple[str, ...]
    text: str | None

    @property
    def ok(self) -> bool:
        return self.ontology is not None and not self.problems


def dataset_ontology(path: str, dataset: str) -> tuple[Ontology, dict | None]:
    """The ontology ``dataset`` uses, and its stored row (sha256, source, ingested_at) or None when
    it uses the default TUPLE ontology."""
    rows = query(path, "dataset_ontology", (dataset,))
    if rows.empty:
        return load_ontology(), None
    row = rows.iloc[0]
    info = {"sha256": row["sha256"], "source": row["source"], "ingested_at": row["ingested_at"]}
    return ontologies.parse_stored(row["body"], row["source"]), info


def asymmetric_cost_table(domain: Domain) -> pd.DataFrame:
    """A domain's asymmetric costs as a table: one row per action (the classes in canonical order,
    then INSPECT), one column per true class."""
    actions = list(domain.classes) + [INSPECT]
    table = pd.DataFrame({col: [float(domain.asymmetric_costs[a][col]) for a in actions] for col in domain.classes},
                         index=pd.Index(actions, name="action"))
    return table


def check_ontology_upload(path: str, dataset: str, data: bytes, display_name: str) -> OntologyCheck:
    """Validate an uploaded ontology file (every rule) and whether ``dataset`` may take it
    (read-only; nothing is written)."""
    try:
        text = decode_ontology_bytes(data, display_name)
        onto = parse_ontology(text, display_name)
    except OntologyError as exc:
        return OntologyCheck(None, tuple(exc.problems), None)
    refused = None
    if warehouse_exists(path):
        with _cursor(path) as cur:
            refused = ontologies.replace_problem(cur, dataset, onto.sha256, display_name)
            if refused is None and queries.fetch_df(cur, "dataset_by_id", [dataset]).empty:
                named = dataset_name_problem(dataset)          # a new dataset: the name rule
                refused = f"{display_name}: {named}" if named else None
    elif (named := dataset_name_problem(dataset)) is not None:
        refused = f"{display_name}: {named}"
    return OntologyCheck(onto, (refused,) if refused else (), text)


def ingest_ontology_upload(path: str, dataset: str, text: str, display_name: str) -> tuple[str, bool]:
    """Make the uploaded ontology the dataset's, through the same API as ``qlb ingest ontology``
    (one transaction; OntologyError and nothing written when it cannot). (sha256, changed)."""
    with _writing(path) as con:
        return ontologies.store_ontology(con, dataset, text, display_name)


def runs(path: str, dataset: str) -> pd.DataFrame:
    """Audit runs of the dataset, newest first."""
    return query(path, "runs", (dataset, "audit", "audit"))


def run_audit_now(path: str, dataset: str):
    """Recompute the refusal audit and the QuasiLeak scores on demand through the engine (a new
    run). The decoding audit takes minutes and has its own per-(model, view) recompute panel."""
    from qlb.runs.audit import run_audits
    with _writing(path) as con:
        return run_audits(con, dataset, force=True, decode=False, utility=False)


def quasileak_runs(path: str, dataset: str) -> pd.DataFrame:
    """Runs of the dataset that hold QuasiLeak scores, newest first."""
    return query(path, "ql_runs", (dataset,))


def decoding_runs(path: str, dataset: str) -> pd.DataFrame:
    """Runs of the dataset that hold recovery results (the decoding audit), newest first."""
    return query(path, "decoding_runs", (dataset,))


@st.cache_data(ttl=300, max_entries=16, show_spinner=False)
def decoding_frame(path: str, dataset: str, model: str) -> pd.DataFrame:
    """The worlds with one model's release, as the decoding audit reads them (for recomputes)."""
    from qlb.runs.decoding import decoding_frame as build
    with _cursor(path) as cur:
        return build(cur, dataset, model)


def run_parameters(path: str, dataset: str, run_id: str) -> dict:
    """The parameters an audit run was stored with ({} for an unknown run)."""
    runs_ = runs(path, dataset)
    row = runs_[runs_["run_id"] == run_id]
    return json.loads(row["parameters"].iloc[0]) if not row.empty else {}


def run_decoder_families(path: str, dataset: str, run_id: str) -> list[str]:
    """The decoder families a run's decoding audit used (all five unless it was restricted)."""
    chosen = run_parameters(path, dataset, run_id).get("families")
    return [f for f in DECODER_FAMILIES if not chosen or f in chosen]


@st.cache_data(ttl=600, max_entries=16, show_spinner=False)
def recovery_by_class(path: str, dataset: str, run_id: str, view: str) -> pd.DataFrame:
    """Recovery per model, domain and decision class for one view of a run, from its stored test
    predictions, with the run's own resample count and seed (``qlb.tuple.recovery.recovery_by_class``)."""
    from qlb.stats.bootstrap import N_BOOT, SEED
    from qlb.tuple.recovery import recovery_by_class as per_class
    params = run_parameters(path, dataset, run_id)
    predictions = query(path, "decoder_predictions_by_class", (run_id, view))
    return per_class(predictions, int(params.get("n_boot", N_BOOT)), int(params.get("seed", SEED)))


def has_config_scores(path: str, dataset: str, run_id: str) -> bool:
    """Whether the run stored every base configuration's scores (runs from migration 007 on)."""
    return run_id in set(query(path, "runs_with_config_scores", (dataset,))["run_id"])


def recompute_recovery(path: str, dataset: str, run_id: str, model: str, view: str, families: list[str],
                       refit: bool, n_boot: int, seed: int, progress: Callable[[float, str], None]
                       ) -> tuple[pd.Series, str]:
    """Pooled recovery of one (model, view) under the decoding protocol restricted to
    ``families``, with a new bootstrap (``n_boot``, ``seed``): refitted, or rebuilt from the run's
    stored configuration scores. Returns the pooled row and the selected candidate per domain."""
    from qlb.tuple.decoding import with_subviews
    from qlb.tuple.recovery import prediction_rows, recovery_tables, reselect_from_scores, run_decoding
    frame = decoding_frame(path, dataset, model)
    if refit:
        results = run_decoding({model: frame}, views=[view], families=set(families),
                               progress=lambda done, total: progress(done / total, f"domain {done}/{total}"))
    else:
        progress(0.2, "reading the run's configuration scores ...")
        scores = query(path, "decoder_config_scores_for", (run_id, model, with_subviews((view,))))
        configs = query(path, "decoder_configs_for", (run_id,))
        progress(0.6, "building candidates and selecting on validation ...")
        results = reselect_from_scores(scores, configs, frame, model, view, set(families))
    rec, _ = recovery_tables(prediction_rows(results), n_boot, seed)
    chosen = "; ".join(f"{r.domain}: {r.selections[view].candidate} [{r.selections[view].candidate_view}]"
                       for r in results)
    return rec[rec["scope"] == "pooled"].iloc[0], chosen


@st.cache_data(ttl=3600, max_entries=8, show_spinner=False)
def robustness_checks(path: str, run_id: str):
    """Paper Tables 29 and 30 of a decoding run (``qlb.tuple.tracks.RobustnessChecks``), computed
    from its stored scores on first use (2 to 3 s for nine models) and cached: a stored run does
    not change."""
    from qlb.runs.robustness import robustness_checks as compute
    with _cursor(path) as cur:
        return compute(cur, run_id)


def utility_runs(path: str, dataset: str) -> pd.DataFrame:
    """Runs of the dataset that hold utility results, newest first."""
    return query(path, "utility_runs", (dataset,))


def front_runs(path: str, dataset: str) -> pd.DataFrame:
    """Runs of the dataset that hold privacy-utility front points, newest first."""
    return query(path, "front_runs", (dataset,))


@st.cache_data(ttl=600, max_entries=32, show_spinner=False)
def prepared_utility(path: str, dataset: str, run_id: str, model: str, views: tuple[str, ...]) -> list:
    """One model's recipient candidates as frozen in ``run_id`` (their fits never depend on costs)
    with q on validation and test, every domain: what a what-if replay re-selects from."""
    from qlb.tuple.utility import prepare_domain, stored_candidates
    frame = decoding_frame(path, dataset, model)
    stored = stored_candidates(query(path, "recipient_models_for", (run_id, model)))
    out = []
    for (m, domain), by_view in sorted(stored.items()):
        fitted = {v: by_view[v] for v in views if v in by_view}
        out.append(prepare_domain(m, domain, frame[frame["domain"] == domain], tuple(fitted), fitted,
                                  ontology=ontology(path, dataset)))
    return out


def defense_runs(path: str, dataset: str) -> pd.DataFrame:
    """Runs of the dataset that hold defense results, newest first."""
    return query(path, "defense_runs", (dataset,))


@st.cache_data(ttl=600, max_entries=32, show_spinner=False)
def frozen_policies(path: str, run_id: str, model: str) -> dict:
    """{domain: the frozen full-native policies (18 in TUPLE)} of one model in a stored run."""
    from qlb.runs.policies import frozen_policies as load
    with _cursor(path) as cur:
        return load(cur, run_id, model)


def world_release(path: str, dataset: str, model: str, world_id: str) -> pd.DataFrame:
    """One world with this model's native release, as the audits read it."""
    return release_columns(query(path, "native_response_of", (model, dataset, world_id)))


@st.cache_data(ttl=600, max_entries=8, show_spinner=False)
def run_data(path: str, dataset: str):
    """The dataset's newest most complete audit run, loaded as the report reads it (None: no run)."""
    from qlb.runs.report import load_run
    with _cursor(path) as cur:
        try:
            return load_run(cur, None, dataset)
        except ValueError:
            return None


@dataclass(frozen=True)
class RunContext:
    """What an audit page's run picker needs to know about the dataset's runs: the run the
    Overview's findings and the report show by default (the newest most complete; None: no run),
    and the runs whose dataset changed after them (their fingerprint is not today's), with what was
    loaded or collected after each of them started."""
    headline: str | None
    changed: frozenset[str]
    ran: dict[str, frozenset[str]] = field(default_factory=dict)   # run id -> the audits that stored results
    changes: dict[str, pd.DataFrame] = field(default_factory=dict)  # changed run id -> what was ingested after its start
    audited: dict[str, frozenset[str] | None] = field(default_factory=dict)  # changed run id -> models it audited


def run_context(path: str, dataset: str) -> RunContext:
    from qlb.present.scope import audited_models, run_parameters
    from qlb.runs.report import default_run
    from warehouse.results import dataset_fingerprint, run_ingests
    runs = all_runs(path, dataset)
    best = default_run(runs)
    if runs.empty:
        return RunContext(None, frozenset())
    with _cursor(path) as cur:
        now = dataset_fingerprint(cur, dataset)
        stale = runs[runs["dataset_fingerprint"] != now]
        ingests = queries.fetch_df(cur, "ingest_times", [dataset]) if not stale.empty else None
        split = {str(r.run_id): run_ingests(cur, dataset, str(r.dataset_fingerprint), r.started_at, ingests)
                 for r in stale.itertuples()}
    kinds = query(path, "run_result_kinds", (dataset,))
    return RunContext(None if best is None else str(best["run_id"]), frozenset(split),
                      {str(r): frozenset(k["kind"]) for r, k in kinds.groupby("run_id")},
                      {r: part.after for r, part in split.items()},
                      {str(r.run_id): audited_models(run_parameters(r._asdict()), split[str(r.run_id)].read,
                                                     split[str(r.run_id)].exact) for r in stale.itertuples()})


@st.cache_data(ttl=600, max_entries=8, show_spinner=False)
def report_html(path: str, dataset: str, run_id: str | None = None) -> str:
    """The self-contained HTML report of a run (default: the dataset's newest most complete)."""
    from qlb.runs.report import build_report
    with _cursor(path) as cur:
        return build_report(cur, run_id, dataset)


@st.cache_data(ttl=600, max_entries=4, show_spinner=False)
def report_pdf(path: str, dataset: str, run_id: str | None = None) -> bytes:
    """``report_html`` printed to an A4 PDF by the local Chromium (``qlb.export.pdf``)."""
    from qlb.export.pdf import pdf_bytes
    return pdf_bytes(report_html(path, dataset, run_id))


@st.cache_data(ttl=300, max_entries=16, show_spinner=False)
def detector_coverage(path: str, dataset: str) -> pd.DataFrame:
    """Per detector and split: documents, predicted and failed (``warehouse.ingest.coverage_frame``)."""
    from warehouse.ingest import coverage_frame
    with _cursor(path) as cur:
        return coverage_frame(cur, dataset)


def pdf_printer() -> str | None:
    """The browser that prints the report to PDF, or None when the machine has none."""
    from qlb.export.pdf import NoBrowser, find_browser
    try:
        return find_browser()
    except NoBrowser:
        return None


def all_runs(path: str, dataset: str) -> pd.DataFrame:
    """The dataset's audit runs with the number of result kinds each holds, newest first."""
    runs = query(path, "all_runs", ())
    return runs[runs["dataset_id"] == dataset].reset_index(drop=True)


# ------------------------------------------------------------------ collection (``qlb collect`` runs)

def collections(path: str, dataset: str) -> pd.DataFrame:
    """The dataset's ``qlb collect`` runs (settings as stored JSON, answer counts), newest first."""
    return query(path, "collections", (dataset,))


def collection_totals(path: str, dataset: str) -> pd.DataFrame:
    """Per (probe, model): the dataset's collection runs, answers asked and stored by outcome, and
    how many runs stopped early."""
    return query(path, "collection_totals", (dataset,))


def collection_no_logprobs(path: str, dataset: str) -> pd.DataFrame:
    """Per letters-mode collection run of the dataset: its valid answers and those the server sent without
    log-probabilities (read from the archived raw answers)."""
    return query(path, "collection_no_logprobs", (dataset,))


def collection_latency(path: str, dataset: str) -> pd.DataFrame:
    """Per collection run of the dataset: calls and their latency percentiles (p50, p90, p99, max; ms)."""
    return query(path, "collection_latency", (dataset,))


def collection_median_latency(path: str, dataset: str) -> float | None:
    """The median latency (ms) over every archived call of the dataset's collection runs (None without calls)."""
    row = query(path, "collection_dataset_latency", (dataset,)).iloc[0]
    return None if int(row["calls"]) == 0 else float(row["p50_ms"])


def wilson_interval(k: int, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval of the proportion k / n (NaN, NaN when n = 0): the engine's
    ``qlb.stats.proportion.wilson`` for one share."""
    from qlb.stats.proportion import wilson
    low, high = wilson(k, n)
    return float(low), float(high)


def collection_answer_outcomes(run: pd.Series) -> pd.DataFrame:
    """One collection run's stored answers by outcome (valid, invalid, unavailable): answers, share
    of the stored answers and its 95% Wilson interval (``run`` is a row of ``collections``)."""
    stored = int(run["stored"])
    rows = []
    for outcome in ("valid", "invalid", "unavailable"):
        k = int(run[outcome])
        low, high = wilson_interval(k, stored)
        rows.append({"outcome": outcome, "answers": k, "share": k / stored if stored else float("nan"),
                     "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows)


def collection_reasons(path: str, collection_id: str) -> pd.DataFrame:
    """One collection run's calls by outcome and reason (every attempt counted once)."""
    return query(path, "collection_outcomes", (collection_id,))


def collection_worlds(path: str, collection_id: str) -> pd.DataFrame:
    """The worlds one collection run asked about: attempts and the outcome of the last attempt."""
    return query(path, "collection_worlds_of", (collection_id,))


def collection_attempts(path: str, collection_id: str, world_id: str) -> pd.DataFrame:
    """Every archived call (attempt) of one world in one collection run, with its raw answer."""
    return query(path, "collection_call", (collection_id, world_id))


def rebuilt_request(path: str, dataset: str, world_id: str, probe: str, endpoint_model: str
                    ) -> tuple[dict, str] | None:
    """The request body ``qlb collect`` sent for one world, rebuilt from the stored world (the body
    itself is not archived, only its sha256), and that body's sha256; None when the world is no
    longer in the dataset."""
    from qlb.collect.requests import body_sha256, request_body
    world = query(path, "collection_world", (dataset, world_id))
    if world.empty:
        return None
    row = world.iloc[0].to_dict()
    body = request_body(row, ontology(path, dataset).domain(row["domain"]), probe, endpoint_model)
    return body, body_sha256(body)


def ontology(path: str, dataset: str) -> Ontology:
    """The dataset's decision task: its own ontology, or the TUPLE ontology when it has none."""
    return dataset_ontology(path, dataset)[0]


def response_history(path: str, dataset: str) -> pd.DataFrame:
    """Responses of the dataset replaced by ``qlb collect --replace-invalid``, newest first."""
    return query(path, "response_history", (dataset,))


def replaced_answers(path: str, dataset: str) -> pd.DataFrame:
    """The replaced answers as the Collection page shows them (``dashboard.replaced_answers``):
    each with its outcome and the reason it was not valid, an unavailable answer's read from the
    calls of the collection runs of its model and probe (the history keeps no reason for it)."""
    from dashboard.replaced_answers import earlier_reasons, replaced_answers_table
    history = response_history(path, dataset)
    runs = collections(path, dataset)
    unexplained = history[history["invalid_reason"].isna()]
    wanted = set(zip(unexplained["model"], unexplained["probe"]))
    ids = [cid for cid, m, p in zip(runs["collection_id"], runs["model"], runs["probe"]) if (m, p) in wanted]
    calls = [query(path, "collection_calls_of", (cid,)).assign(collection_id=cid) for cid in ids]
    calls_frame = pd.concat(calls, ignore_index=True) if calls else pd.DataFrame(
        columns=["collection_id", "world_id", "attempt", "reason"])
    return replaced_answers_table(history, earlier_reasons(history, runs, calls_frame))


# ------------------------------------------------------------- every problem of an uploaded file

class _OneError:
    """One error of a pydantic ValidationError, shaped for ``describe_error`` (which words the
    first error it is given), so every error of a line is worded the way the ingest words one."""

    def __init__(self, error: dict) -> None:
        self.error = error

    def errors(self, include_url: bool = False) -> list[dict]:
        return [self.error]


def line_problems(report: ValidationReport, file_path: str) -> pd.DataFrame:
    """Every problem of a validated file, one row each (file, line, outcome, field, problem): each
    rejected line with all the errors its validation finds (the report keeps the first), a line
    rejected for a reason beyond its own fields (a duplicate, an unknown world) with that reason,
    and each line kept with valid = false with its reason. Nothing is written."""
    from pydantic import ValidationError

    from qlb.records.readers import read_records
    from qlb.records.schemas import NativeResponse, describe_error
    found: dict[int, list[tuple[str | None, str]]] = {}
    wanted = {r.line_no for r in report.rejects}
    if wanted and report.validator is not None:
        for rec in read_records(file_path, report.validator.json_columns, fmt=report.file_format):
            if rec.line_no not in wanted or rec.error is not None:
                continue
            try:
                report.validator.validate(rec)
            except ValidationError as exc:
                found[rec.line_no] = [describe_error(_OneError(e)) for e in exc.errors(include_url=False)]
            except Exception:       # a reason beyond the line's fields: the report's own wording stands
                pass
            if len(found) == len(wanted):
                break
    rows = [(r.line_no, "rejected", fld, reason)
            for r in report.rejects for fld, reason in found.get(r.line_no, [(r.field, r.reason)])]
    kept = report.accepted if isinstance(report.accepted, list) else []
    rows += [(n, "invalid", None, rec.invalid_reason) for n, rec in kept
             if type(rec) is NativeResponse and not rec.valid]
    df = pd.DataFrame(rows, columns=["line", "outcome", "field", "problem"])
    df.insert(0, "file", report.file_name)
    return df.sort_values("line", kind="stable").reset_index(drop=True)
