"""Collection: the ``qlb collect`` runs of the dataset: their settings, what the answers came to,
call latency, why answers were invalid or unavailable, and every call of one world (the request
body rebuilt from the stored world, the raw answer as text)."""
from __future__ import annotations

import json

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard import data_access as da
from dashboard.routing import page_entry
from dashboard.widgets import (audit_page_start, chart, column_widths, current_dataset, finding, md_text, own_dataset,
                               stat_row, table, warehouse_args)
from qlb.collect.transports import TARGET_RAISED, stop_causes, stopped_refused
from dashboard.replaced_answers import replaced_by_reason, replaced_sentence
from qlb.present.answers import collection_summary, runs_note, shell_command
from qlb.present.names import utc_second

INTRO = (
    "`qlb collect` asks a model about every world of the dataset, once, and stores each answer through "
    "the same validation as `qlb ingest`: an answer that cannot be read or validated is kept invalid "
    "(valid = false, with its reason) and enters the audits as unavailable; an HTTP 4xx is stored "
    "unavailable. Every call is archived with its latency, the sha256 of its request body and the raw "
    "answer (first 64 KiB)."
)
README_SECTION = "Collecting answers from your own model"
README_EXAMPLE_SECTION = "A real model to try: qlb.examples.triage_model"
EXAMPLE_TARGET = "qlb.examples.triage_model:answer"
# Okabe-Ito (colour-blind safe), as on the Overview page
OUTCOME_COLOURS = {"valid": "#009E73", "invalid": "#D55E00", "unavailable": "#999999"}
SECRET_WORDS = ("key", "token", "secret", "password")


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


def _ms(v) -> str:
    return "N/A" if v is None or pd.isna(v) else f"{v:,.0f} ms" if v >= 10 else f"{v:,.2f} ms"


def stopped_early(runs: pd.DataFrame) -> list[bool]:
    """Whether each run stopped early (a stored reason)."""
    return [isinstance(s, str) and bool(s) for s in runs["stopped"]]


def runs_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs as shown: whose, the counts, whether it stopped early. Eight columns that fit a 1,024 px
    screen (``RUNS_WIDTHS``); when each started, the transport, endpoint and settings are in
    ``provenance_table``."""
    out = runs[["model", "probe"]].copy()
    for c in ("stored", "valid", "invalid", "unavailable"):
        out[c] = runs[c].astype(int)
    out["skipped"] = runs["skipped_existing"].astype(int)
    out["stopped early"] = ["yes" if s else "" for s in stopped_early(runs)]
    return out


# pixels per column of the runs table: 548 in all, inside the 564 px a 1,024 px screen leaves a table
RUNS_WIDTHS = {"model": 96, "probe": 56, "stored": 56, "valid": 50, "invalid": 54, "unavailable": 82, "skipped": 60,
               "stopped early": 94}


def runs_columns() -> dict[str, object]:
    """``RUNS_WIDTHS`` as column configuration: counts whole with thousands separators."""
    return column_widths(RUNS_WIDTHS, numbers=[c for c in RUNS_WIDTHS if c not in ("model", "probe", "stopped early")])


def provenance_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Each run's full provenance: id, transport and endpoint, endpoint model, instruction version,
    times, readable settings."""
    out = runs[["collection_id", "model", "probe", "transport", "endpoint", "endpoint_model",
                "instruction_version"]].copy()
    out["endpoint_model"] = out["endpoint_model"].fillna("")
    out["started (UTC)"] = [utc_second(t) for t in runs["started_at"]]
    out["finished (UTC)"] = [utc_second(t) for t in runs["finished_at"]]
    out["asked"] = runs["asked"].astype(int)
    out["settings"] = [readable_settings(s) for s in runs["settings"]]
    return out


def outcome_figure(outcomes: pd.DataFrame) -> go.Figure:
    """Bars: a collection run's stored answers per outcome, hover with the share and its 95% interval."""
    fig = go.Figure(go.Bar(
        x=outcomes["outcome"], y=outcomes["answers"],
        marker_color=[OUTCOME_COLOURS[o] for o in outcomes["outcome"]],
        customdata=outcomes[["share", "ci_low", "ci_high"]].fillna(0),
        hovertemplate="%{x}: %{y} answers<br>share %{customdata[0]:.1%} "
                      "[95%: %{customdata[1]:.1%}, %{customdata[2]:.1%}]<extra></extra>"))
    top = float(outcomes["answers"].max()) if len(outcomes) else 0.0
    fig.update_layout(height=300, margin=dict(l=10, r=10, t=30, b=10), xaxis_title="outcome", showlegend=False,
                      yaxis=dict(title="stored answers", rangemode="tozero",       # counts: never below zero, and a
                                 range=None if top > 0 else [0, 1], dtick=None if top > 0 else 1))  # run of none: 0-1
    return fig


def empty_state(path: str, dataset: str, simulated: bool) -> None:
    """No collection run yet: the exact commands that make one, for this warehouse. On a simulated
    dataset they collect into a dataset of the user's own (as the Data page loads files), and
    asking a real model about the simulated worlds is offered apart, with how it is labelled."""
    st.info("No collection runs in this dataset yet. Run `qlb collect` against your own model (one of the "
            "commands below); its runs, answers and calls then show here.", icon=":material/cloud_download:")
    where = warehouse_args(path)
    target = own_dataset(path) if simulated else dataset
    if simulated:
        st.caption(f"{md_text(dataset)} is SIMULATED: its responses were generated by qlb, not asked from a model. "
                   f"As on the Data page, your data and simulated data never mix: the commands below load your "
                   f"own worlds into a dataset of your own ({md_text(target)}; any name of yours will do) and "
                   "collect your model's answers there.")
        st.markdown("**Load your worlds first** (or on the Data page):")
        st.code(shell_command(["qlb", "ingest", "worlds", "my_worlds.jsonl", "--dataset", target] + where),
                language="bash")
    base = ["qlb", "collect", "native", "--dataset", target, "--model", "my-model"] + where
    st.markdown("**Collect native answers** (pick the transport that reaches your model):")
    st.code("\n".join([
        "# a typed decision endpoint (POST <base-url>/v1/decisions)",
        shell_command(base + ["--transport", "typed", "--base-url", "http://127.0.0.1:8000"]),
        "# an OpenAI-compatible chat server, serving --endpoint-model",
        shell_command(base + ["--transport", "openai", "--base-url", "http://127.0.0.1:8080/v1",
                              "--endpoint-model", "llama3"]),
        "# a Python function called with each request body",
        shell_command(base + ["--transport", "python", "--target", "my_module:answer"]),
    ]), language="bash")
    st.markdown("**Then the refusal probe, and the audits over the collected answers:**")
    st.code("\n".join([
        shell_command(["qlb", "collect", "refusal", "--dataset", target, "--model", "my-model"] + where
                      + ["--transport", "typed", "--base-url", "http://127.0.0.1:8000"]),
        shell_command(["qlb", "audit", "--dataset", target] + where),
    ]), language="bash")
    st.caption(f"Add `--show-request` to print the first request body without asking anything, and `--limit 5` "
               f"to try five worlds first. An API key is read from the environment variable named by "
               f"`--api-key-env` and never stored. Rerunning a command resumes: a world with a stored answer is "
               f"never asked again. The README section \"{README_SECTION}\" walks through it.")
    if simulated:
        simulated_worlds_note(dataset, where)


def simulated_worlds_note(dataset: str, where: list[str]) -> None:
    """Asking a real model about the simulated worlds themselves (the README's example model does):
    its answers are stored in the simulated dataset, which keeps its SIMULATED banner and names
    the real model in it."""
    with st.expander("To try a real model on these simulated worlds instead"):
        st.markdown("Collecting into this dataset itself (the commands below) asks a real model about the "
                    "**simulated** worlds and stores its answers in this SIMULATED dataset, beside the simulated "
                    "models. The dataset keeps its SIMULATED badge, and the banner at the top of every page then "
                    "names each real model whose answers were collected on these simulated worlds. Their audits "
                    "describe a real model on simulated cases, not your data. The README section "
                    f"\"{README_EXAMPLE_SECTION}\" does this with a small trained model:")
        st.code("\n".join(
            [shell_command(["qlb", "collect", probe, "--dataset", dataset, "--model", "triage-example"] + where
                           + ["--transport", "python", "--target", EXAMPLE_TARGET]) for probe in ("native", "refusal")]
            + [shell_command(["qlb", "audit", "--dataset", dataset] + where + ["--models", "triage-example"])]),
            language="bash")


def outcomes_section(run: pd.Series, latency: pd.DataFrame) -> None:
    """The selected run: its answers by outcome (with intervals, a chart) and its call latency."""
    cid = run["collection_id"]
    outcomes = da.collection_answer_outcomes(run)
    stored = int(run["stored"])
    st.subheader("Outcomes")
    stat_row([("Worlds asked", f"{int(run['asked']):,}"), ("Answers stored", f"{stored:,}"),
              ("Valid", f"{int(run['valid']):,}"), ("Invalid", f"{int(run['invalid']):,}"),
              ("Unavailable", f"{int(run['unavailable']):,}"),
              ("Skipped (already answered)", f"{int(run['skipped_existing']):,}")])
    shown = outcomes[["outcome", "answers"]].copy()
    shown["share of stored answers [95% interval]"] = [
        "N/A" if pd.isna(s) else f"{100 * s:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"
        for s, lo, hi in zip(outcomes["share"], outcomes["ci_low"], outcomes["ci_high"])]
    chart(outcome_figure(outcomes), outcomes, f"collection_outcomes_{cid}",
          f"Stored answers of collection run {md_text(cid)} by outcome ({stored:,} answers; worlds skipped as already "
          f"answered are not asked). Hover: the share of the stored answers with its 95% Wilson interval. "
          f"Invalid answers are kept with valid = false and enter the audits as unavailable.")
    table(shown, f"collection_outcomes_table_{cid}",
          "Shares with 95% Wilson score intervals over the run's stored answers.")

    st.subheader("Latency")
    lat = latency[latency["collection_id"] == cid]
    if lat.empty:
        st.info("No calls archived for this run.")
        return
    row = lat.iloc[0]
    stat_row([("Calls", f"{int(row['calls']):,}"), ("p50", _ms(row["p50_ms"])), ("p90", _ms(row["p90_ms"])),
              ("p99", _ms(row["p99_ms"])), ("max", _ms(row["max_ms"]))])
    st.caption("Per call (every attempt of a retried world counts), from sending the request to reading the "
               "answer; for the python transport, the function's running time. Percentiles interpolate "
               "between calls.")


def stop_meaning(transport: str) -> str:
    """What a ``stop`` outcome is for the run's transport."""
    if transport == "python":
        return (f"stop: {stop_causes(transport)}, named in the reason with the file, line and function of your "
                "code where it was raised; the collection stopped there and the world stays unasked: fix the "
                "model, then rerun the same command to resume.")
    return (f"stop: {stop_causes(transport)}; the call was retried, or the collection stopped there and the world "
            "stays unasked.")


def reasons_section(path: str, run: pd.Series) -> None:
    """Why calls of the selected run gave no valid answer, with counts."""
    st.subheader("Invalid and unavailable reasons")
    cid = run["collection_id"]
    reasons = da.collection_reasons(path, cid)
    bad = reasons[reasons["outcome"] != "valid"]
    if bad.empty:
        st.success("Every call of this run gave a valid answer.")
        return
    table(bad[["outcome", "reason", "calls"]], f"collection_reasons_{cid}",
          "Calls that gave no valid answer, by outcome and reason (the validation's own words, shown as text). "
          + stop_meaning(run["transport"]))


def inspector(path: str, dataset: str, run: pd.Series) -> None:
    """Every call of one world in the selected run: attempts, the rebuilt request body, the raw answers."""
    st.subheader("Call inspector")
    cid = run["collection_id"]
    worlds = da.collection_worlds(path, cid)
    if worlds.empty:
        st.info("No calls archived for this run.")
        return
    ids = worlds["world_id"].tolist()
    outcome_of = dict(zip(worlds["world_id"], worlds["outcome"]))
    not_valid = [w for w in ids if outcome_of[w] != "valid"]
    world_id = st.selectbox("World", ids, index=ids.index(not_valid[0]) if not_valid else 0, key="world",
                            bind="query-params", format_func=lambda w: f"{w} · {outcome_of.get(w, '?')}",
                            help="Every world this run asked about, with the outcome of its last call; the first "
                                 "one without a valid answer is shown first. Kept in the URL.")
    attempts = da.collection_attempts(path, cid, world_id)
    if attempts.empty:
        st.info("No calls archived for this world in this run.")
        return
    calls = pd.DataFrame({
        "attempt": attempts["attempt"].astype(int),
        "outcome": attempts["outcome"],
        "HTTP": [("" if pd.isna(s) else str(int(s))) for s in attempts["http_status"]],
        "latency (ms)": attempts["latency_ms"].round(2),
        "request sha256": [f"{h[:12]}…" if isinstance(h, str) else "" for h in attempts["request_sha256"]],
        "reason": attempts["reason"].fillna(""),
    })
    table(calls, f"collection_calls_{cid}",
          "Every attempt for this world; the last one decided the stored answer. HTTP: the status code (empty for "
          "the python transport). The request's sha256 is shortened here; the check below compares it in full. "
          "When each call was made and its whole reason are above its raw answer.",
          column_config=column_widths({"attempt": 62, "outcome": 80, "HTTP": 52, "latency (ms)": 92,
                                       "request sha256": 120, "reason": 140}, numbers=("attempt", "latency (ms)")))

    left, right = st.columns(2)
    with left:
        st.markdown("**Request body** (rebuilt from the stored world)")
        endpoint_model = run["endpoint_model"] if isinstance(run["endpoint_model"], str) else run["model"]
        rebuilt = da.rebuilt_request(path, dataset, world_id, run["probe"], endpoint_model)
        if rebuilt is None:
            st.warning("This world is no longer in the dataset: its request body cannot be rebuilt.")
        else:
            body, sha = rebuilt
            archived = set(attempts["request_sha256"])
            if archived == {sha}:
                st.success(f"Matches the archived sha256 ({sha[:16]}…): this is the body that was sent.",
                           icon=":material/verified:")
            else:
                st.warning("Does not match the archived sha256: the world or the request format changed after "
                           "this run (instruction version of the run and of this qlb differ, or the worlds were "
                           "re-ingested). The body below is what qlb would send now.")
                st.code("archived: " + ", ".join(sorted(str(a) for a in archived)) + "\nrebuilt:  " + sha,
                        language="text")
            st.code(json.dumps(body, indent=2, ensure_ascii=False), language="json", wrap_lines=True)
    with right:
        st.markdown("**Raw answer** (as received, first 64 KiB, shown as text)")
        for _, a in attempts.iterrows():
            reason = a["reason"] if isinstance(a["reason"], str) and a["reason"] else ""
            st.caption(f"Attempt {int(a['attempt'])}, called {utc_second(a['called_at'])} UTC: "
                       f"{md_text(a['outcome'])}"
                       + (f" ({md_text(reason)})" if reason else ""))
            raw = a["raw_answer"]
            try:
                json.loads(raw)
                language = "json"
            except (TypeError, ValueError):
                language = "text"
            st.code(raw if raw else "(empty)", language=language, wrap_lines=True)


def history_section(path: str, dataset: str) -> None:
    """Answers replaced by ``qlb collect --replace-invalid`` (shown only when there are any)."""
    history = da.response_history(path, dataset)
    if history.empty:
        return
    st.subheader("Replaced answers")
    replaced = da.replaced_answers(path, dataset)
    st.markdown(md_text(replaced_sentence(replaced)))
    table(replaced_by_reason(replaced), "response_history_reasons",
          "Why the earlier answers were not valid, most first. outcome: what the earlier answer came to (invalid: "
          "read but not valid; unavailable: no answer, an HTTP 4xx or a declined world); reason: the validation's "
          "words, or for an unavailable answer the reason of the call that got it.",
          column_config=column_widths({"outcome": 90, "reason": 380, "answers": 80}, numbers=("answers",)))
    with st.expander(f"Every replaced answer ({len(replaced):,}): model, world, choice, when and by which run"):
        table(replaced, "response_history",
              "One row per replaced answer; replaced by run: the collection run that asked again.",
              column_config=column_widths({"model": 100, "probe": 56, "world": 62, "outcome": 86, "choice": 60,
                                           "reason": 180}))


def render() -> None:
    """The Collection page: the dataset's ``qlb collect`` runs, then one run's outcomes, latency,
    invalid reasons and call inspector, and the replaced answers."""
    start = audit_page_start("Collection", INTRO)
    if start is None:
        return
    path, dataset = start
    runs = da.collections(path, dataset)
    if runs.empty:
        empty_state(path, dataset, current_dataset()[2])
        return

    totals = da.collection_totals(path, dataset)
    median = da.collection_median_latency(path, dataset)
    replaced = len(da.response_history(path, dataset))
    current = da.query(path, "answer_sources", (dataset,) * 4)
    finding(collection_summary(len(runs), totals, _ms(median) if median is not None else None, replaced, current))

    st.subheader("Collection runs")
    stopped = stopped_early(runs)
    st.markdown(runs_note(len(runs), sum(stopped)))
    only_stopped = sum(stopped) > 0 and st.toggle(f"Only the runs that stopped early ({sum(stopped):,})",
                                                  key="stopped_only")
    shown = runs[stopped] if only_stopped else runs
    table(runs_table(shown), "collections",
          "stored = valid + invalid + unavailable; skipped: worlds that already had a stored "
          "answer and were not asked again (under --replace-invalid, a valid one); worlds that --limit left for "
          "a later run, or that had no answer for --replace-invalid to replace, are not counted. Why a run "
          "stopped early is shown when you select it below; when each run started, in the provenance below.",
          column_config=runs_columns())
    with st.expander("Provenance of every run (ids, transport and endpoint, instruction version, settings)"):
        table(provenance_table(runs), "collection_provenance",
              "asked: worlds asked this run. settings never hold an API key, only its environment variable's "
              "name (api_key_env).")

    ids = runs["collection_id"].tolist()
    label = {r["collection_id"]: f"{r['collection_id']} · {r['model']} · {r['probe']}"
                                 + (" · stopped early" if s else "") for (_, r), s in zip(runs.iterrows(), stopped)}
    first_stopped = stopped.index(True) if any(stopped) else 0
    cid = st.selectbox("Collection run", ids, index=first_stopped, key="collection", bind="query-params",
                       format_func=lambda c: label.get(c, c),
                       help="Newest first; opens on the newest run that stopped early, if any. Kept in the URL.")
    run = runs[runs["collection_id"] == cid].iloc[0]
    if isinstance(run["stopped"], str) and run["stopped"]:
        fix = ("The target function raised: fix the model where the reason below points, then rerun"
               if run["transport"] == "python" and run["stopped"].startswith(TARGET_RAISED) else "Rerun")
        refused = (" The server refused its first answers alike: fix the key or the URL first, and add "
                   "`--replace-invalid` afterwards to ask the worlds it refused again."
                   if stopped_refused(run["stopped"]) else "")
        st.warning(f"This run stopped early (reason below). {fix} the same `qlb collect` command to resume: "
                   f"worlds with a stored answer are never asked again.{refused}", icon=":material/pause_circle:")
        st.code(run["stopped"], language="text", wrap_lines=True)
    outcomes_section(run, da.collection_latency(path, dataset))
    reasons_section(path, run)
    inspector(path, dataset, run)
    history_section(path, dataset)


page_entry(render)
