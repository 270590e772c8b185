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


SHOWN_RUNS = 4          # the sentence names this many replacing runs, then counts the rest


def replaced_sentence(table: pd.DataFrame) -> str:
    """The replaced answers in one sentence (``table``: ``replaced_answers_table``): how many, and per run
    that replaced them (a run asks one model), how many of which model, so the long run ids need no table
    column. Plain text: show it through ``md_text``."""
    n = len(table)
    if n == 0:
        return "No answer of this dataset was replaced."
    groups = (table.groupby(["replaced by run", "model"], sort=False).size().reset_index(name="answers")
              .sort_values(["answers", "replaced by run", "model"], ascending=[False, True, True]))
    said = [f"{int(g['answers']):,} of {g['model']} by run {g['replaced by run']}"
            for _, g in groups.head(SHOWN_RUNS).iterrows()]
    rest = len(groups) - SHOWN_RUNS
    if rest > 0:
        said.append(f"{int(groups['answers'].iloc[SHOWN_RUNS:].sum()):,} more by {rest} other "
                    f"run{'' if rest == 1 else 's'}")
    return (f"{n:,} earlier answer{'' if n == 1 else 's'} of this dataset {'was' if n == 1 else 'were'} replaced "
            f"by qlb collect --replace-invalid, which asks again the worlds whose stored answer is not valid; the "
            f"audits use the replacement: " + "; ".join(said) + ".")


def replaced_by_reason(table: pd.DataFrame) -> pd.DataFrame:
    """Why the replaced answers were not valid, one row per outcome and reason with how many answers, most
    first: three columns, so the reason is read whole on a 1,024 px screen."""
    if table.empty:
        return pd.DataFrame(columns=["outcome", "reason", "answers"])
    out = table.groupby(["outcome", "reason"], sort=False).size().reset_index(name="answers")
    return out.sort_values(["answers", "outcome", "reason"], ascending=[False, True, True]).reset_index(drop=True)
