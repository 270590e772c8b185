"""Running detectors over a stored corpus and scoring stored predictions (warehouse side)."""
from __future__ import annotations

import json
import logging
import re
from typing import Callable

import duckdb

from qlb.quasileak.detectors import Detector
from warehouse import queries
from warehouse.db import transaction
from warehouse.ingest import insert_rows

log = logging.getLogger(__name__)

REQUEST_FAILED = "request failed: "          # how an endpoint detector's failure after its retries begins
# the failures every other document would meet too: the endpoint unreachable or refusing the key or URL (httpx's
# transport errors, a timeout, HTTP 401/403/404/408/429/5xx); a reply that does not read (IndexError on an empty
# "choices", a JSON error) or a 400/413/422 is the document's own
STOPPING = re.compile(REQUEST_FAILED + r"(?:\w*Timeout\w*|ConnectError|ReadError|WriteError|CloseError|NetworkError|"
                      r"RemoteProtocolError|LocalProtocolError|ProxyError|UnsupportedProtocol|TransportError|InvalidURL|"
                      r"\w*ConnectionError|ConnectionRefusedError|OSError|"
                      r"HTTPStatusError: (?:Client|Server) error '(?:401|403|404|408|429|5\d\d) )")


class DetectorStopped(RuntimeError):
    """An endpoint detector's request failed after its retries in a way every other document would
    fail too (a connection error, a timeout, HTTP 401/403/404/408/429/5xx): the run stops and
    stores nothing (``qlb collect`` stops on the same errors)."""

    def __init__(self, detector: str, doc_id: str, done: int, total: int, failure: str) -> None:
        super().__init__(f"detector {detector} stopped at document {doc_id!r} ({done} of {total}): {failure}; "
                         "nothing stored (is the endpoint up, and --base-url right?)")
        self.failure = failure


def stops_the_run(failure: str | None) -> bool:
    """Whether a detection failure is a request failure that no other document would escape
    (``DetectorStopped``), rather than one document's own (an output that does not parse, a request
    the endpoint refused for its size or content)."""
    return bool(failure) and STOPPING.match(failure) is not None


def load_corpus(con: duckdb.DuckDBPyConnection, dataset_id: str) -> dict[str, dict]:
    """The scorer's document map for a stored corpus (text, split, context, sender profile, policy, gold groups)."""
    docs = queries.fetch_df(con, "ql_corpus", [dataset_id])
    groups = queries.fetch_df(con, "ql_gold_groups", [dataset_id])
    out = {d: {"context_id": c, "split": s, "text": t, "profile": json.loads(pr), "policy": json.loads(p), "groups": []}
           for d, s, c, t, pr, p in docs[["doc_id", "split", "context_id", "text", "profile",
                                          "policy"]].itertuples(index=False)}
    for doc_id, attr, cues in groups[["doc_id", "attribute", "cues"]].itertuples(index=False):
        out[doc_id]["groups"].append((attr, tuple(tuple(c) for c in json.loads(cues))))
    return out


def load_predictions(con: duckdb.DuckDBPyConnection, dataset_id: str) -> dict[str, dict[str, list]]:
    """Every detector's stored predictions: detector -> doc_id -> [(attribute, cue spans)]."""
    rows = queries.fetch_df(con, "ql_prediction_rows", [dataset_id])
    out: dict[str, dict[str, list]] = {}
    for det, doc, groups, _failure in rows.itertuples(index=False):
        out.setdefault(det, {})[doc] = [(g["attribute"], tuple(tuple(c) for c in g["cues"]))
                                        for g in json.loads(groups)]
    return out


def run_detector(con: duckdb.DuckDBPyConnection, dataset_id: str, detector: Detector, split: str | None = "test",
                 progress: Callable[[int, int], None] | None = None,
                 corpus: dict[str, dict] | None = None) -> dict[str, int]:
    """Run ``detector`` on the corpus (one split or all) and store its predictions, replacing
    that detector's earlier predictions for those documents, in one transaction. ``corpus``: the
    dataset's ``load_corpus`` map when the caller already holds it (several detectors in a row).
    A request failure that every document would meet (``stops_the_run``) raises ``DetectorStopped``
    and stores nothing."""
    corpus = load_corpus(con, dataset_id) if corpus is None else corpus
    ids = [d for d, doc in corpus.items() if split is None or doc["split"] == split]
    if not ids:
        raise ValueError(f"dataset {dataset_id!r} has no QuasiLeak documents" + (f" in split {split!r}" if split else ""))
    rows = {"dataset_id": dataset_id, "detector": detector.name, "doc_id": [], "groups": [], "n_groups": [],
            "ingest_id": 0, "line_no": [], "failure": []}
    failures = 0
    for i, doc_id in enumerate(ids, start=1):
        doc = corpus[doc_id]
        result = detector.detect(doc["text"], doc["profile"], doc["policy"], doc["groups"])
        if stops_the_run(result.failure):
            raise DetectorStopped(detector.name, doc_id, i - 1, len(ids), result.failure)
        failures += result.failure is not None
        rows["doc_id"].append(doc_id)
        rows["groups"].append(json.dumps([{"attribute": a, "cues": [list(c) for c in cues]} for a, cues in result.groups]))
        rows["n_groups"].append(len(result.groups))
        rows["line_no"].append(i)
        rows["failure"].append(result.failure)
        if progress and i % 100 == 0:
            progress(i, len(ids))
    with transaction(con):
        queries.execute(con, "ql_delete_detector_predictions", [dataset_id, detector.name, ids])
        insert_rows(con, "ql_predictions", rows)
        queries.execute(con, "ql_upsert_detector", [dataset_id, detector.name, bool(detector.simulated),
                                                    next(iter((type(detector).__doc__ or "").strip().splitlines()), "")])
    return {"documents": len(ids), "failures": failures}
