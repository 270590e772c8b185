"""Running detectors over a stored corpus and scoring stored predictions (warehouse side)."""
from __future__ import annotations

import json
import logging
import re
from typing import Callable

import duckdb

from qlb.collect.answers import reason_kind
from qlb.collect.transports import REFUSED_FIRST, TARGET_RAISED
from qlb.quasileak.detectors import MODEL_OUTPUT, REQUEST_FAILED, TARGET_OUTPUT, UNREADABLE_REPLY, Detector
from warehouse import queries
from warehouse.answers import Reasons
from warehouse.db import transaction
from warehouse.ingest import coverage_frame, insert_rows

log = logging.getLogger(__name__)

FIRST_ALIKE = REFUSED_FIRST       # the first documents, that many, failing alike stop a run (qlb collect's rule)
# the failures every other document would meet too: the endpoint unreachable or refusing the key or URL (httpx's
# transport errors, a timeout, HTTP 401/403/404/408/429/5xx, the last four after the detector's retries); a reply that
# does not read, model output that does not parse, or a 400/413/422 is the document's own. (The HTTPStatusError
# form is httpx's raise_for_status wording, which the chat detector recorded before it quoted the server.)
STOPPING = re.compile(REQUEST_FAILED + r"(?:\w*Timeout\w*|ConnectError|ReadError|WriteError|CloseError|NetworkError|"
                      r"RemoteProtocolError|LocalProtocolError|ProxyError|UnsupportedProtocol|TransportError|InvalidURL|"
                      r"\w*ConnectionError|ConnectionRefusedError|OSError|"
                      r"HTTP (?:401|403|404|408|429|5\d\d)\b|"
                      r"HTTPStatusError: (?:Client|Server) error '(?:401|403|404|408|429|5\d\d) )")
# a repr or JSON string (a quoted cue, attribute or reply), not an apostrophe
_QUOTED = re.compile(r"(?<!\w)(?:'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")(?!\w)")
_NUMBER = re.compile(r"(?<!HTTP )(?<![\w.])\d+(?:\.\d+)?(?![\w.])")    # a number of its own, not an HTTP status
_HTTP_STATUS = re.compile(re.escape(REQUEST_FAILED) + r"HTTP (\d{3})\b")


def failure_kind(failure: str) -> str:
    """A detection failure without what is particular to its document (the quoted start of a reply,
    a quoted cue or attribute, a number such as a server's token count, but not the HTTP status): the
    failures counted together as one reason."""
    return _NUMBER.sub("N", _QUOTED.sub("...", reason_kind(failure)))


def failure_tally() -> Reasons:
    """An empty tally of why documents failed, counted by ``failure_kind`` (``qlb collect``'s tally
    of why answers are not valid); ``most_frequent()`` lists them, each with its first document."""
    return Reasons(kind=failure_kind)


def failure_advice(failure: str, answered: int = 0) -> str:
    """What to do about a detection failure, in words for the user; ``answered``: how many documents
    the endpoint had answered before it (an endpoint that answered, then failed, failed midway)."""
    status = _HTTP_STATUS.match(failure)
    code = int(status.group(1)) if status else None
    if code in (401, 403):
        return ("check the API key: --api-key-env VAR names the environment variable that holds it (sent as a "
                "bearer token)")
    if code == 404:
        return "check --base-url (OpenAI-compatible servers usually end in /v1) and --endpoint-model"
    if code == 429:
        return "the endpoint asks to slow down: run the command again later"
    if code is not None and 300 <= code < 400:
        return "the endpoint redirects elsewhere: check --base-url (https? the path up to /v1?)"
    if code is not None and code != 408 and code < 500:
        return ("the endpoint refuses the requests qlb sends (the server's words are quoted): check "
                "--endpoint-model and what the server accepts")
    if failure.startswith(REQUEST_FAILED):       # unreachable, a timeout, a 408 or a 5xx
        if answered:
            return (f"the endpoint failed midway, after answering {answered} documents: run the command again once "
                    "it is back (it asks every document again)")
        if code is not None and code >= 500:
            return "the endpoint answers with a server error: is the model behind it up, and --base-url right?"
        return "is the endpoint up, and --base-url right?"
    if failure.startswith(UNREADABLE_REPLY):
        return ("the endpoint does not answer with an OpenAI-compatible chat completion: check --base-url (usually "
                "ending in /v1)")
    if failure.startswith(MODEL_OUTPUT):
        return ("the model does not answer in the JSON form the prompt asks for (README, QuasiLeak scoring and "
                "detectors: what a detector endpoint receives and must send back)")
    if failure.startswith(TARGET_RAISED):
        return "fix the detector function where it raised (-v logs the whole traceback), then run the command again"
    if failure.startswith(TARGET_OUTPUT):
        return ("the function does not return the groups it must (README, QuasiLeak scoring and detectors: what a "
                "Python detector receives and returns)")
    return ""


class DetectorStopped(RuntimeError):
    """An endpoint detector's request failed in a way every other document would fail too (a
    connection error, a timeout, HTTP 401/403/404/408/429/5xx), or its first ``FIRST_ALIKE``
    documents all failed alike (``alike``): the run stops and stores nothing (``qlb collect``
    stops on the same errors, and on its first answers all refused alike)."""

    def __init__(self, detector: str, doc_id: str, done: int, total: int, failure: str, alike: int = 0) -> None:
        if alike:
            head = f"detector {detector} stopped: its first {alike} documents all failed alike: {failure}"
        else:
            head = f"detector {detector} stopped at document {doc_id!r} ({done} of {total}): {failure}"
        advice = failure_advice(failure, 0 if alike else done)
        super().__init__(f"{head}; nothing stored" + (f"; {advice}" if advice else ""))
        self.failure = failure


class DetectorFailed(RuntimeError):
    """Every document of a detector run failed: nothing is stored (a detector that never answered
    would otherwise be scored as one that found nothing). ``reasons``: ``most_frequent()`` of its tally."""

    def __init__(self, detector: str, total: int, reasons: list[dict]) -> None:
        top = reasons[0]
        often = "each time" if top["count"] == total else f"most often ({top['count']} of {total})"
        advice = failure_advice(top["reason"])
        super().__init__(f"detector {detector}: every one of its {total} documents failed, {often}: {top['reason']} "
                         f"(e.g. document {top['example_world']!r}); nothing stored"
                         + (f"; {advice}" if advice else ""))
        self.reasons = reasons


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
                 corpus: dict[str, dict] | None = None, tally: Reasons | None = None) -> dict[str, int]:
    """Run ``detector`` on the corpus (one split or all) and store its predictions, replacing
    that detector's earlier predictions for those documents, in one transaction; a document whose
    detection failed is stored with its reason and no groups (it reported nothing). ``corpus``: the
    dataset's ``load_corpus`` map when the caller already holds it (several detectors in a row).
    ``tally``: a ``failure_tally()`` to read afterwards (why documents failed). Nothing is stored
    when a request failure that every document would meet (``stops_the_run``) or the first
    ``FIRST_ALIKE`` documents failing alike raise ``DetectorStopped``, or when every document
    failed (``DetectorFailed``)."""
    corpus = load_corpus(con, dataset_id) if corpus is None else corpus
    ids = [d for d, doc in corpus.items() if split is None or doc["split"] == split]
    if not ids:
        raise ValueError(f"dataset {dataset_id!r} has no QuasiLeak documents" + (f" in split {split!r}" if split else ""))
    tally = failure_tally() if tally is None else tally
    rows = {"dataset_id": dataset_id, "detector": detector.name, "doc_id": [], "groups": [], "n_groups": [],
            "ingest_id": 0, "line_no": [], "failure": []}
    failures = 0
    for i, doc_id in enumerate(ids, start=1):
        doc = corpus[doc_id]
        result = detector.detect(doc["text"], doc["profile"], doc["policy"], doc["groups"])
        if stops_the_run(result.failure):
            raise DetectorStopped(detector.name, doc_id, i - 1, len(ids), result.failure)
        if result.failure is not None:
            failures += 1
            tally.add("failed", result.failure, doc_id)
            if i == failures == FIRST_ALIKE < len(ids) and len(tally.seen) == 1:
                raise DetectorStopped(detector.name, doc_id, i, len(ids), tally.most_frequent()[0]["reason"],
                                      alike=FIRST_ALIKE)
        rows["doc_id"].append(doc_id)
        rows["groups"].append(json.dumps([{"attribute": a, "cues": [list(c) for c in cues]} for a, cues in result.groups]))
        rows["n_groups"].append(len(result.groups))
        rows["line_no"].append(i)
        rows["failure"].append(result.failure)
        if progress and i % 100 == 0:
            progress(i, len(ids))
    if failures == len(ids):
        raise DetectorFailed(detector.name, len(ids), tally.most_frequent())
    with transaction(con):
        queries.execute(con, "ql_delete_detector_predictions", [dataset_id, detector.name, ids])
        insert_rows(con, "ql_predictions", rows)
        queries.execute(con, "ql_upsert_detector", [dataset_id, detector.name, bool(detector.simulated),
                                                    next(iter((type(detector).__doc__ or "").strip().splitlines()), "")])
    return {"documents": len(ids), "failures": failures}


def stored_scores(con: duckdb.DuckDBPyConnection, run_id: str):
    """A run's stored QuasiLeak scores (the ``ql_scores`` rows, each detector's ``simulated`` flag with them)."""
    return queries.fetch_df(con, "ql_scores", [run_id])


def detector_coverage(con: duckdb.DuckDBPyConnection, dataset_id: str):
    """Per detector and split of the dataset's corpus: its documents, those with a prediction line and those whose
    line records a failure (``coverage_frame``; ``qlb.present.coverage`` reads them)."""
    return coverage_frame(con, dataset_id)


def forget_detector(con: duckdb.DuckDBPyConnection, dataset_id: str, detector: str) -> int:
    """Remove ``detector``'s stored predictions from the dataset, in one transaction; how many lines
    it had (0: none, nothing changed). Runs already stored keep its scores (a run is a record of what it
    scored); the next scoring no longer sees it. Its registration (whether it is simulated) stays, so
    those runs still name it right."""
    counts = queries.fetch_df(con, "ql_detector_predictions", [dataset_id]).set_index("detector")["n"]
    n = int(counts.get(detector, 0))
    if n:
        with transaction(con):
            queries.execute(con, "ql_forget_detector", [dataset_id, detector])
    return n
