"""The Collection page's table of replaced answers (``response_history``), worded for a reader.

Kept apart from the page and from Streamlit so that it is tested on frames alone. Two things the
stored rows do not say plainly: an unavailable answer is stored with ``valid = true`` (only an
``ok`` answer can be invalid), so a "valid" tick would mislead; and its reason is not in
``invalid_reason`` (which only an invalid answer has) but in the archived call that got it
(``collection_calls.reason``, "HTTP 401 Unauthorized: invalid api key"), in the collection run
that stored the answer, an earlier one than the run that replaced it.
"""
from __future__ import annotations

import pandas as pd

from qlb.present.names import utc_second

NO_REASON = "no reason recorded"


def answer_outcome(status: str, valid) -> str:
    """valid, invalid or unavailable: what a stored answer came to (the Outcomes section's words)."""
    if status != "ok":
        return "unavailable"
    return "valid" if bool(valid) else "invalid"


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def earlier_reasons(history: pd.DataFrame, runs: pd.DataFrame, calls: pd.DataFrame) -> list[str]:
    """Why each replaced answer (a row of ``history``) was not valid: an invalid answer's
    ``invalid_reason``; else the reason of the last call for that world in the newest collection
    run of the same model and probe that started before the run that replaced it (``runs``: the
    dataset's collection runs; ``calls``: their archived calls with ``collection_id``, ``world_id``,
    ``attempt``, ``reason``); ``NO_REASON`` when none is found (an answer loaded from a file)."""
    started = dict(zip(runs["collection_id"], runs["started_at"]))
    last_call: dict[tuple[str, str], str] = {}
    if not calls.empty:
        ordered = calls.sort_values(["collection_id", "world_id", "attempt"])
        for cid, world, reason in zip(ordered["collection_id"], ordered["world_id"], ordered["reason"]):
            last_call[(cid, world)] = _text(reason)
    newest_first = runs.sort_values(["started_at", "collection_id"], ascending=False)
    out = []
    for row in history.itertuples(index=False):
        reason = _text(row.invalid_reason)
        if not reason:
            before = started.get(row.replaced_by, row.replaced_at)
            earlier = newest_first[(newest_first["model"] == row.model) & (newest_first["probe"] == row.probe)
                                   & (newest_first["started_at"] < before)]
            reason = next((last_call[(cid, row.world_id)] for cid in earlier["collection_id"]
                           if (cid, row.world_id) in last_call), "")
        out.append(reason or NO_REASON)
    return out


def replaced_answers_table(history: pd.DataFrame, reasons: list[str]) -> pd.DataFrame:
    """The replaced answers as shown: model, probe, world, what the answer came to (``outcome``),
    its choice, why it was not valid (``reasons``, one per row), when it was replaced and by which
    run."""
    return pd.DataFrame({
        "model": history["model"].tolist(),
        "probe": history["probe"].tolist(),
        "world_id": history["world_id"].tolist(),
        "outcome": [answer_outcome(s, v) for s, v in zip(history["status"], history["valid"])],
        "choice": [_text(c) for c in history["choice"]],
        "reason": list(reasons),
        "replaced (UTC)": [utc_second(t) for t in history["replaced_at"]],
        "replaced by run": history["replaced_by"].tolist(),
    })
