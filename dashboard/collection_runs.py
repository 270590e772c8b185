"""The Collection page's list of ``qlb collect`` runs, kept apart from the page so that it is tested on frames
alone: which run is which (when it started, how the model was asked), what it stored, and the runs whose
letter answers came back without log-probabilities (the CLI's "no logprobs" warning, rebuilt from the archived
calls, since the warehouse keeps no count of it)."""
from __future__ import annotations

import json
from typing import Any

import pandas as pd

from dashboard.widgets import column_widths, md_code, md_text
from qlb.present.names import count_of, utc_second

SECRET_WORDS = ("key", "token", "secret", "password")
# Pixels per column of the runs table: 548 in all, inside the 564 px a 1,024 px screen with the sidebar open leaves
# a table (a long table's scroll bar takes the rest). Longer cells (a long model name, "openai · letters (no
# logprobs)") show in full on hover and in the CSV.
RUNS_WIDTHS = {"started (UTC)": 112, "model": 86, "probe": 52, "asked via": 108, "valid": 44, "not valid": 62,
               "stopped early": 84}
NO_LOGPROBS = "no logprobs"
# the options of ``qlb collect`` that tell two runs of one model apart, as the CLI spells them, in that order
OPTIONS = (("limit", "--limit"), ("splits", "--split"), ("retries", "--retries"), ("concurrency", "--concurrency"),
           ("interval", "--interval"), ("timeout", "--timeout"), ("replace_invalid", "--replace-invalid"),
           ("schema", "--schema"))
DEFAULTS: dict[str, Any] = {"limit": None, "splits": None, "retries": 0, "concurrency": 1, "interval": 0.0,
                            "timeout": 180.0, "replace_invalid": False, "schema": None}


def settings_of(settings: object) -> dict[str, Any]:
    """A run's stored settings JSON as a dict (empty when unreadable)."""
    try:
        parsed = json.loads(settings) if isinstance(settings, str) else None
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def readable_settings(settings: str) -> str:
    """The stored settings JSON as ``key=value`` pairs. Only an environment variable's name is
    ever stored for an API key; anything that looks like a secret value is hidden regardless."""
    try:
        parsed = json.loads(settings)
    except (TypeError, ValueError):
        return "(unreadable settings)"
    if not isinstance(parsed, dict):
        return "(unreadable settings)"
    out = []
    for k, v in sorted(parsed.items()):
        if any(w in k.lower() for w in SECRET_WORDS) and not k.lower().endswith("_env") and v is not None:
            v = "(hidden)"
        elif v is None:
            v = "none"
        elif isinstance(v, list):
            v = ",".join(str(x) for x in v)
        out.append(f"{k}={v}")
    return "; ".join(out)


def answer_mode(settings: object) -> str:
    """How an openai run asked for the answer, as stored (``json`` or ``letters``); empty when the run's
    settings hold none (the typed and python transports take the JSON answer itself)."""
    mode = settings_of(settings).get("answer")
    return mode if isinstance(mode, str) else ""


def asked_via(transport: str, settings: object, no_logprobs: int = 0) -> str:
    """The transport and, where stored, the answer mode: ``openai · letters``; ``(no logprobs)`` after a
    letters run whose answers came back without log-probabilities."""
    mode = answer_mode(settings)
    text = f"{transport} · {mode}" if mode else str(transport)
    return f"{text} ({NO_LOGPROBS})" if no_logprobs else text


def stopped_early(runs: pd.DataFrame) -> list[bool]:
    """Whether each run stopped early (a stored reason)."""
    return [isinstance(s, str) and bool(s) for s in runs["stopped"]]


def no_logprobs_counts(runs: pd.DataFrame, counts: pd.DataFrame) -> pd.Series:
    """Per run (aligned with ``runs``): its valid answers that came without log-probabilities
    (``counts``: the ``collection_no_logprobs`` rows, letters runs only); 0 for every other run."""
    by_run = dict(zip(counts["collection_id"], counts["no_logprobs"])) if len(counts) else {}
    return pd.Series([int(by_run.get(c, 0)) for c in runs["collection_id"]], index=runs.index, dtype=int)


def runs_table(runs: pd.DataFrame, no_logprobs: pd.Series | None = None) -> pd.DataFrame:
    """The runs as shown, one row each, newest first, in ``RUNS_WIDTHS``'s seven columns (a 1,024 px screen):
    when each started (UTC, to the minute), whose, which probe, how the model was asked (transport, answer
    mode, and whether letter answers came without log-probabilities), its valid answers and the others
    (invalid + unavailable), and whether it stopped early."""
    lacking = no_logprobs if no_logprobs is not None else pd.Series(0, index=runs.index)
    out = pd.DataFrame({"started (UTC)": [_minute(t) for t in runs["started_at"]],
                        "model": runs["model"].to_numpy(), "probe": runs["probe"].to_numpy(),
                        "asked via": [asked_via(t, s, n) for t, s, n in zip(runs["transport"], runs["settings"],
                                                                            lacking)]})
    out["valid"] = runs["valid"].astype(int).to_numpy()
    out["not valid"] = (runs["invalid"].astype(int) + runs["unavailable"].astype(int)).to_numpy()
    out["stopped early"] = ["yes" if s else "" for s in stopped_early(runs)]
    return out


def runs_columns() -> dict[str, object]:
    """``RUNS_WIDTHS`` as column configuration: counts whole with thousands separators."""
    return column_widths(RUNS_WIDTHS, numbers=("valid", "not valid"))


def _minute(value: object) -> str:
    """``2026-12-04 19:52``: a stored UTC timestamp to the minute (the column's label says UTC)."""
    return utc_second(value)[:16]


def run_options(settings: object) -> list[str]:
    """The options a run was asked with that differ from ``qlb collect``'s defaults, as typed
    (``--limit 20``, ``--replace-invalid``): what tells two runs of one model apart besides the time."""
    parsed = settings_of(settings)
    out = []
    for key, flag in OPTIONS:
        value = parsed.get(key, DEFAULTS[key])
        if value == DEFAULTS[key] or (key == "schema" and value is True):
            continue
        if value is True:
            out.append(flag)
        elif value is False:
            out.append(f"--no-{flag[2:]}")
        elif isinstance(value, list):
            out.append(f"{flag} {' '.join(str(v) for v in value)}")
        else:
            out.append(f"{flag} {value:g}" if isinstance(value, float) else f"{flag} {value}")
    return out


def run_label(run: pd.Series, no_logprobs: int = 0) -> str:
    """The run picker's line for a run: ``2026-12-04 19:55 · router-500 · native · openai · json · --limit 30
    --retries 3 · stopped early``, so that runs of one model read apart in the list too."""
    parts = [_minute(run["started_at"]), str(run["model"]), str(run["probe"]),
             asked_via(run["transport"], run["settings"], no_logprobs)]
    options = run_options(run["settings"])
    if options:
        parts.append(" ".join(options))
    if isinstance(run["stopped"], str) and run["stopped"]:
        parts.append("stopped early")
    return " · ".join(parts)


def run_labels(runs: pd.DataFrame, no_logprobs: pd.Series) -> dict[str, str]:
    """The picker's line per run id (``run_label``), each one unique: runs whose lines would read alike (same
    minute, model and options) get their run id after it. The picker keeps the line in the URL."""
    lines = [run_label(r, int(n)) for (_, r), n in zip(runs.iterrows(), no_logprobs)]
    seen = pd.Series(lines).value_counts()
    return {cid: line if seen[line] == 1 else f"{line} · {cid}" for cid, line in zip(runs["collection_id"], lines)}


def run_sentence(run: pd.Series) -> str:
    """How the picked run asked, as Markdown (data text inert, ``md_text``; the endpoint as code, which no
    renderer turns into a link): its id, when it started, the transport and answer mode, the endpoint (and the
    model name sent to it), and the options that differ from the defaults."""
    mode = answer_mode(run["settings"])
    via = md_text(run["transport"]) + (f", {md_text(mode)} answers" if mode else "")
    served = run["endpoint_model"] if isinstance(run["endpoint_model"], str) and run["endpoint_model"] else ""
    text = (f"Run {md_text(run['collection_id'])}, started {utc_second(run['started_at'])} UTC: asked via {via} at "
            f"{md_code(run['endpoint'])}" + (f" (model {md_text(served)})" if served else ""))
    options = run_options(run["settings"])
    return text + (f"; options {md_text(' '.join(options))}." if options else "; default options.")


def no_logprobs_warning(runs: pd.DataFrame, counts: pd.DataFrame) -> str | None:
    """What to say about the letters runs whose answers came back without log-probabilities (the CLI warned
    "no logprobs"): which runs (model, start), how many of their valid answers, and what it means for the
    audits. None when there is none. Plain text."""
    lacking = counts[counts["no_logprobs"] > 0] if len(counts) else counts
    if lacking.empty:
        return None
    started = dict(zip(runs["collection_id"], runs["started_at"]))
    model = dict(zip(runs["collection_id"], runs["model"]))
    named = [f"{model.get(r.collection_id, '?')} (started {_minute(started.get(r.collection_id))} UTC): "
             f"{int(r.no_logprobs):,} of its {int(r.answers):,} valid answers"
             for r in lacking.itertuples(index=False)]
    n = len(named)
    return (f"{count_of(n, 'letters run')} got answers without log-probabilities ({NO_LOGPROBS} under asked via): "
            + "; ".join(named) + ". Such an answer keeps its letter (the choice) but no probabilities, so the "
            "probability views of that model (full probabilities, full native) read it as missing. Does the "
            "server give logprobs? If not, collect with --answer json.")
