"""The answers an audit read, for a reader who was not there when they were gathered: per model
where they came from (a file loaded with ``qlb ingest``, or ``qlb collect`` runs: transport,
endpoint, endpoint model, answer mode, when), how many are valid answers, and what the
benchmark does with the others (TUPLE.md section 1: an invalid answer is kept, never repaired,
and enters the audits as unavailable, so every world stays in every denominator). Also the
finding a board must not miss when the status itself leaks: the no-output view releases only
whether a model answered, and recovers the mechanism above 50% when the answers that fail
differ between the two worlds of a pair.

Pure: reads the warehouse's ``answer_sources`` rows (``qlb.runs.report.load_run`` fills
``RunData.answers``) and a run's pooled recovery.
"""
from __future__ import annotations

import json
import shlex

import pandas as pd

from qlb.present.names import count_of, how_many, listing, pct_interval, utc_minute

PROBE_NAMES = {"native": "decision", "refusal": "refusal probe"}
ANSWER_MODES = {"json": "JSON answers", "letters": "letter answers with log-probabilities"}
COUNTS = ("answers", "valid", "invalid", "unavailable")


def _settings(value: object) -> dict:
    try:
        parsed = json.loads(value) if isinstance(value, str) else {}
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def share(k: int, n: int) -> str:
    """``k`` of ``n`` as a percent that never rounds to a whole or to nothing it is not: 2,499 of 2,500
    is "99.9%", not "100.0%"."""
    if n <= 0:
        return "N/A"
    value = 100 * k / n
    if 0 < k < n:
        value = min(max(value, 0.1), 99.9)
    return f"{value:.1f}%"


def answer_source(rows: pd.DataFrame) -> str:
    """Where one model's answers to one probe came from, in words: each ``qlb collect`` setting (transport
    and answer mode, endpoint, endpoint model, how many runs, when) and each file loaded with ``qlb ingest``;
    "simulated by qlb" first for a simulated model."""
    parts = []
    collected = rows[rows["transport"].notna()]
    if not collected.empty:
        keys = collected.assign(mode=[_settings(s).get("answer") for s in collected["settings"]])
        for (transport, endpoint, model, mode), runs in keys.groupby(
                ["transport", "endpoint", "endpoint_model", "mode"], dropna=False, sort=False):
            how = str(transport) + (f", {ANSWER_MODES.get(mode, mode)}" if isinstance(mode, str) else "")
            where = (f" from {endpoint}" if isinstance(endpoint, str) and endpoint else "") + (
                f" as {model}" if isinstance(model, str) and model else "")
            when = _period(runs["started_at"].min(), runs["finished_at"].max())
            parts.append(f"qlb collect ({how}){where}; {count_of(len(runs), 'run')}, {when}")
    files = [str(f) for f in rows.loc[rows["transport"].isna(), "file_name"].dropna()]
    if files:
        parts.append("qlb ingest of " + ", ".join(files))
    said = "; ".join(parts) or "no record of its source"
    simulated = rows["simulated"].fillna(False).astype(bool)
    return f"simulated by qlb ({said})" if simulated.any() else said


def _period(start: object, end: object) -> str:
    """``2026-12-04 19:56 UTC``, ``2026-12-04 19:56 to 19:58 UTC`` or, over days, both in full."""
    first, last = utc_minute(start, "?"), utc_minute(end, "?")
    if first == last or last == "?":
        return first
    if first[:10] == last[:10]:
        return f"{first[:-4]} to {last[11:]}"
    return f"{first} to {last}"


def _totals(answers: pd.DataFrame, probe: str) -> pd.DataFrame:
    """Per model, its answers to ``probe`` summed over their sources, and ``no answer``: the dataset's
    worlds it has no stored answer for (they enter the audits as unavailable)."""
    rows = answers[answers["probe"] == probe]
    per = rows.groupby("model", sort=False)[list(COUNTS)].sum().astype(int)
    worlds = rows.groupby("model", sort=False)["worlds"].max() if "worlds" in rows else per["answers"]
    return per.assign(worlds=worlds.astype(int), no_answer=(worlds - per["answers"]).clip(lower=0).astype(int))


def native_totals(answers: pd.DataFrame) -> pd.DataFrame:
    """Per model, its native answers summed over their sources (valid, invalid, unavailable, no
    answer) and the dataset's worlds; empty without native answers."""
    native = answers[answers["probe"] == "native"] if not answers.empty else answers
    return _totals(native, "native") if not native.empty else pd.DataFrame(columns=["valid", "worlds"])


def answers_table(answers: pd.DataFrame) -> pd.DataFrame:
    """One row per model and question: answers stored, valid answers, invalid (kept), unavailable, the
    dataset's worlds it has no answer for, and where the answers came from (``answer_source``)."""
    rows = []
    for probe in ("native", "refusal"):
        totals = _totals(answers, probe)
        for model, t in totals.iterrows():
            rows.append({"model": model, "question": PROBE_NAMES.get(probe, probe), "answers": t["answers"],
                         "valid": t["valid"], "invalid (kept)": t["invalid"], "unavailable": t["unavailable"],
                         "no answer": t["no_answer"],
                         "from": answer_source(answers[(answers["model"] == model) & (answers["probe"] == probe)])})
    table = pd.DataFrame(rows, columns=["model", "question", "answers", "valid", "invalid (kept)", "unavailable",
                                        "no answer", "from"])
    return table.sort_values(["model", "question"], kind="stable").reset_index(drop=True)


def answers_sentence(answers: pd.DataFrame, changed: bool = False) -> str | None:
    """How many of the dataset's worlds have a valid decision answer from each model, and what happens to
    the others (invalid, unavailable or never answered: the audits read them as unavailable); None without
    answers. ``changed``: the dataset's answers changed after the run, said so (they are today's)."""
    native = answers[answers["probe"] == "native"] if not answers.empty else answers
    if native.empty:
        return None
    per = _totals(native, "native")
    per = per.assign(rate=per["valid"] / per["worlds"].where(per["worlds"] > 0))
    rest = ("; the others enter every audit as unavailable (no prediction field released; an invalid answer is "
            "kept, never repaired), so every world stays in every figure's denominator")
    now = " (the answers as stored now: they changed after this run)" if changed else ""
    if len(per) == 1:
        model, r = per.index[0], per.drop(columns="rate").iloc[0].astype(int)
        head = (f"{r['valid']:,} of the dataset's {r['worlds']:,} worlds {'has' if r['valid'] == 1 else 'have'} a "
                f"valid decision answer from {model} "
                f"({share(r['valid'], r['worlds'])}){now}")
        if r["valid"] == r["worlds"]:
            return head + "."
        parts = [f"{r['invalid']:,} invalid" if r["invalid"] else "", f"{r['unavailable']:,} unavailable"
                 if r["unavailable"] else "", f"{r['no_answer']:,} never answered" if r["no_answer"] else ""]
        return f"{head}; {', '.join(p for p in parts if p)}{rest}."
    if (per["valid"] == per["worlds"]).all():
        return f"Every world of the dataset has a valid decision answer from each of the {count_of(len(per))}{now}."
    ordered = per.sort_values(["rate"]).reset_index()
    lo, hi = ordered.iloc[0], ordered.iloc[-1]
    cells = [share(r["valid"], r["worlds"]) for r in (lo, hi)]
    span = cells[0] if cells[0] == cells[1] else f"{cells[0]} ({lo['model']}) to {cells[1]} ({hi['model']})"
    return f"{span} of the dataset's worlds have a valid decision answer from each model{now}{rest}."


def missing_fields_sentence(answers: pd.DataFrame) -> str | None:
    """The models whose valid decision answers never carry a confidence, or never class probabilities (a
    letters-mode collection has no confidence; a server without log-probabilities gives none), and what that
    makes of their release views; None when every model gives both with some answer."""
    native = answers[answers["probe"] == "native"] if not answers.empty else answers
    if native.empty or "with_confidence" not in native:
        return None
    per = native.groupby("model")[["valid", "with_probabilities", "with_confidence"]].sum()
    per = per[per["valid"] > 0]
    said = []
    for column, what, view in (("with_confidence", "a confidence", "choice + confidence releases what the choice "
                                                                     "does"),
                               ("with_probabilities", "class probabilities", "full probabilities releases what the "
                                                                             "choice does")):
        none = sorted(per.index[per[column] == 0])
        if none:
            said.append(f"no valid answer of {listing(none, 'or')} carries {what}, so for "
                        f"{'it' if len(none) == 1 else 'them'} {view}")
    return ("; ".join(said) + ".") if said else None


def status_sentence(pooled: pd.DataFrame) -> str | None:
    """When releasing no output but the answer's status recovers the mechanism above 50% (the 95% interval
    above it) for some model: that finding, and how to read the other views against it. None otherwise (the
    demo's no-output view is exactly 50%)."""
    none = pooled[pooled["view"] == "no_output"] if not pooled.empty else pooled
    leak = none[none["ci_low"] > 0.5]
    if leak.empty:
        return None
    ordered = leak.sort_values(["accuracy", "model"])      # each end named even alone: 1 of 2 models, which one
    cells = [f"{pct_interval(r['accuracy'], r['ci_low'], r['ci_high'])} ({r['model']})"
             for r in (ordered.iloc[0], ordered.iloc[-1])]
    shown = cells[0] if len(ordered) == 1 else f"{cells[0]} to {cells[1]}"
    return (f"Whether a model answers at all reveals the mechanism: releasing nothing but the answer's status (a "
            f"valid answer or none), an attacker recovers it in {shown} of test worlds, above 50% for "
            f"{how_many(len(leak), len(none))}. The answers that are invalid or unavailable differ between the two "
            f"worlds of a pair; read the other views against this figure, not against 50%.")


LEADS_BELOW = 0.95            # a model with a valid decision answer for fewer worlds than this: the answers lead


def answers_lead(answers: pd.DataFrame) -> bool:
    """Whether the finding on the answers leads the headline findings: some model has a valid
    decision answer for fewer than 95% of the dataset's worlds, or never gives a confidence or class
    probabilities. Otherwise it is housekeeping, and comes after the findings on the leak."""
    native = answers[answers["probe"] == "native"] if not answers.empty else answers
    if native.empty:
        return False
    per = _totals(native, "native")
    low = (per["valid"] < LEADS_BELOW * per["worlds"]).any()
    return bool(low) or missing_fields_sentence(answers) is not None


def answers_finding(answers: pd.DataFrame, changed: bool = False) -> str | None:
    """The headline finding on the answers: ``answers_sentence``, then ``missing_fields_sentence`` capitalised."""
    parts = [p for p in (answers_sentence(answers, changed), missing_fields_sentence(answers)) if p]
    return " ".join(p[0].upper() + p[1:] for p in parts) or None


PER_MODEL_PARTS = 3        # a collection summary names each (model, probe) up to this many, then sums per probe
OUTCOMES = ("valid", "invalid", "unavailable")


def _outcome_counts(t) -> str:
    return ", ".join(f"{int(t[o]):,} {o}" for o in OUTCOMES)


def current_collected(answers: pd.DataFrame) -> pd.DataFrame:
    """Per probe, the answers ``qlb collect`` stored that are current now (``answer_sources`` rows of a collection
    run: an answer replaced by a later run is no longer among them): answers and their outcomes."""
    columns = ["answers", *OUTCOMES]
    if answers.empty or "transport" not in answers:
        return pd.DataFrame(columns=columns)
    collected = answers[answers["transport"].notna()]
    return collected.groupby("probe", sort=True)[columns].sum().astype(int)


def collection_summary(runs: int, totals: pd.DataFrame, latency: str | None = None, replaced: int = 0,
                       current: pd.DataFrame | None = None) -> str:
    """The Collection page's finding: how many ``qlb collect`` runs, the answers they stored per model and
    probe (``collection_totals``) with their outcomes, or, beyond ``PER_MODEL_PARTS`` of them, per probe
    over the models (only models with a stored answer are counted; runs that stored none are named apart);
    the median ``latency`` (as shown) and the runs that stopped early. Then what was counted: every answer
    stored across all runs, ``replaced`` of them later replaced, and, from ``current`` (``answer_sources``
    rows), the answers that are current now, the ones the audits read and the Data page lists."""
    def answers(n: int, probe: str) -> str:
        return f"{n:,} {probe} answer{'' if n == 1 else 's'}"

    stored = totals[totals["stored"] > 0]
    empty = totals[totals["stored"] <= 0]
    if len(stored) <= PER_MODEL_PARTS:
        parts = [f"{answers(int(t['stored']), t['probe'])} from {t['model']} ({_outcome_counts(t)})"
                 for _, t in stored.iterrows()]
    else:
        per_probe = stored.groupby("probe", sort=True).agg(
            stored=("stored", "sum"), valid=("valid", "sum"), invalid=("invalid", "sum"),
            unavailable=("unavailable", "sum"), models=("model", "nunique"))
        parts = [f"{answers(int(t['stored']), probe)} from {count_of(int(t['models']))} ({_outcome_counts(t)})"
                 for probe, t in per_probe.iterrows()]
    stopped = int(totals["stopped_runs"].sum()) if "stopped_runs" in totals else 0
    text = (f"{runs:,} collection run{'' if runs == 1 else 's'} for this dataset: "
            + ("; ".join(parts) or "no answer stored")
            + (f", median latency {latency}" if latency else "")
            + (f"; {count_of(stopped, 'run')} stopped early" if stopped else "") + ".")
    if not empty.empty and "runs" in empty:
        idle = int(empty["runs"].sum())
        text += (f" {count_of(idle, 'run')} of {listing(sorted(set(empty['model'])))} stored no answer, so "
                 f"{'that model is' if empty['model'].nunique() == 1 else 'those models are'} not counted.")
    if parts:
        text += (" Counted: every answer stored across all collection runs"
                 + (f", including {replaced:,} earlier answer{'' if replaced == 1 else 's'} replaced by a later run "
                    "(--replace-invalid)" if replaced else ""))
        now = current_collected(current) if current is not None else None
        if now is not None and not now.empty:
            said = [f"{int(t['answers']):,} {probe} ({_outcome_counts(t)})" for probe, t in now.iterrows()]
            text += (f". The current answers, which the audits read and the Data page lists: {listing(said)}")
        text += "."
    return text + (" Each model's runs are in the table below." if len(stored) > PER_MODEL_PARTS else "")


def runs_note(runs: int, stopped: int) -> str:
    """The line above the Collection page's runs table: how many runs (newest first, and that a long table
    scrolls) and how many stopped early, so none is missed."""
    head = f"{count_of(runs, 'run')}, newest first" + ("; the table scrolls" if runs > 30 else "")
    if not stopped:
        return head + ". None stopped early."
    return (f"{head}. {stopped:,} of them stopped early (yes under stopped early); the picker below opens on the "
            f"newest of {'it' if stopped == 1 else 'them'}, and the switch lists only "
            f"{'it' if stopped == 1 else 'them'}.")


def shell_command(args: list[str]) -> str:
    """A command for a code block, each option on its own line with its value (``--warehouse PATH``) and a
    line continuation, so a narrow screen never breaks an option from its value; pasted into a shell it is
    the same command. Arguments are quoted as ``shlex.join`` quotes them."""
    lines: list[list[str]] = [[]]
    for arg in args:
        if arg.startswith("--"):
            lines.append([])
        lines[-1].append(shlex.quote(arg))
    return " \\\n  ".join(" ".join(line) for line in lines if line)
