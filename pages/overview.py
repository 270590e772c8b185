"""Overview: what the selected dataset holds: worlds, models, responses, corpus, splits, recent
ingests and the quarantine."""
from __future__ import annotations

import re

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard import data_access as da
from dashboard.routing import page_entry
from dashboard.widgets import chart, csv_bytes, current_dataset, finding, md_text, simulated_banner, stat_row, table
from qlb.present.names import utc_minute
from qlb.present.figures import plot_texts, recovery_figure
from qlb.present.paper import checks_frame, comparison_lead, comparison_sentence, paper_checks, tally
from qlb.present.report import headline
from qlb.present.left_out import findings_run
from qlb.present.scope import options, options_note, scope_sentence, stale_matters, stale_warning
from qlb.records.ontology import SPLITS

# the Models table: the counts first (narrow, all visible), the long description last; the names
# the outcome chart uses
# the Models tables: native responses (what the audits attack and price), then refusal responses
MODEL_COLUMNS = {"model": "model", "native_responses": "responses", "native_ok": "valid",
                 "native_unavailable": "unavailable", "native_invalid": "invalid (kept)",
                 "choice_not_argmax": "choice not top"}
REFUSAL_COLUMNS = {"model": "model", "refusal_responses": "responses", "refusal_unavailable": "unavailable"}
# the QuasiLeak and ingest tabs: the warehouse's columns under plain words ("targets" takes its tooltip
# from qlb.present.names)
CORPUS_COLUMNS = {"split": "split", "documents": "documents", "contexts": "contexts", "gold_groups": "gold groups",
                  "hide_targets": "targets"}
DETECTOR_COLUMNS = {"detector": "detector", "documents": "documents", "groups": "predicted groups"}
INGEST_COLUMNS = {"ingest_id": "ingest", "kind": "kind", "file_name": "file", "file_format": "format",
                  "model": "model", "n_lines": "lines", "n_accepted": "accepted", "n_invalid": "invalid (kept)",
                  "n_rejected": "rejected"}
QUARANTINE_COLUMNS = {"kind": "kind", "file_name": "file", "rejected_lines": "rejected lines",
                      "first_line": "first rejected line"}
INVALID_COLUMNS = {"model": "model", "invalid_reason": "reason", "responses": "responses"}
SHA_DIGITS = 12


def ingests_table(ingests: pd.DataFrame) -> pd.DataFrame:
    """The recent ingests as shown: plain-word columns, the finish time to the minute (UTC) and the
    file's digest shortened."""
    out = ingests[list(INGEST_COLUMNS)].rename(columns=INGEST_COLUMNS)
    out["finished"] = [utc_minute(t) for t in ingests["finished_at"]]
    out["file sha256"] = [f"{h[:SHA_DIGITS]}…" if isinstance(h, str) else "" for h in ingests["sha256"]]
    return out


def ingests_column_config() -> dict[str, object]:
    """The ingests table's tooltips: what each count and the shortened digest mean."""
    def count(label: str, helptext: str) -> object:
        return st.column_config.NumberColumn(label, format="localized", step=1, help=helptext)
    return {
        "ingest": st.column_config.NumberColumn("ingest", format="%d", help="The ingest's number, newest first."),
        "lines": count("lines", "Non-blank lines (rows) of the file."),
        "accepted": count("accepted", "Lines stored, invalid ones included."),
        "invalid (kept)": count("invalid (kept)", "Native responses stored with valid = false, never repaired: the "
                                                  "audits count them as unavailable."),
        "rejected": count("rejected", "Lines quarantined, not stored: browse them on the Data page."),
        "finished": st.column_config.TextColumn("finished", help="When the ingest was stored (UTC)."),
        "file sha256": st.column_config.TextColumn(
            "file sha256", help=f"The first {SHA_DIGITS} hex digits of the file's SHA-256 digest: a file whose "
                                "digest is already stored is not ingested again."),
    }


# Okabe-Ito colours (colour-blind safe)
OUTCOME_COLOURS = {"unavailable": "#999999", "invalid (kept)": "#D55E00", "choice not top": "#56B4E9"}


def response_outcome_figure(models: pd.DataFrame) -> tuple[go.Figure, pd.DataFrame]:
    """Grouped bars: per model, the native responses that are not a plain valid answer."""
    data = pd.DataFrame({
        "model": models["model"],
        "responses": models["native_responses"],
        "valid ok": models["native_ok"],
        "unavailable": models["native_unavailable"],
        "invalid (kept)": models["native_invalid"],
        "choice not top": models["choice_not_argmax"],
    })
    fig = go.Figure()
    for outcome, colour in OUTCOME_COLOURS.items():
        fig.add_bar(name=outcome, x=plot_texts(data["model"]), y=data[outcome], marker_color=colour,
                    customdata=data[["responses", "valid ok"]],
                    hovertemplate="%{x}<br>" + outcome + ": %{y} of %{customdata[0]} responses"
                                  "<br>valid ok: %{customdata[1]}<extra></extra>")
    fig.update_layout(barmode="group", height=320, margin=dict(l=10, r=10, t=30, b=10),
                      yaxis_title="native responses", legend_title_text="outcome")
    return fig, data


FINDING_PAGES = {"answers": "pages/data.py", "collection": "pages/collection.py", "refusal": "pages/refusal.py", "recovery": "pages/recovery.py", "utility": "pages/sensitivity.py",
                 "fronts": "pages/fronts.py", "defenses": "pages/defenses.py", "quasileak": "pages/quasileak.py"}
RUN_PAGES = {"refusal", "recovery", "utility", "fronts", "defenses", "quasileak"}   # their Details open on the run


def headline_findings(path: str, dataset: str) -> None:
    """The newest most complete audit run's headline findings (the report's sentences), each with
    a link to the page behind it; for a TUPLE dataset, how the run compares with the paper."""
    d = da.run_data(path, dataset)
    head, link = st.columns([5, 1], vertical_alignment="bottom")
    head.subheader("What the audit found")
    link.page_link("pages/glossary.py", label="Terms", icon=":material/menu_book:",
                   help="The Glossary explains every term the findings use.")
    if d is None:
        st.info("No audit run of this dataset yet: run `qlb audit` (or wait for the background audit above).")
        return
    if d.data_changed:
        shout = st.error if stale_matters(d.changes, d.audited) else st.warning
        shout(md_text(stale_warning(str(d.run["run_id"]), d.changes, d.audited)), icon=":material/history:")
    finding(scope_sentence(d), lead="Scope.")
    spoken = findings_run(d)              # a model with too few valid answers would speak for the rest
    for topic, sentence in headline(spoken):
        left, right = st.columns([4, 1], vertical_alignment="center")     # "Details" whole at 1,024 px
        left.markdown(f"- {md_text(sentence)}")
        right.page_link(FINDING_PAGES[topic], label="Details", icon=":material/arrow_forward:",
                        query_params={"run": str(d.run["run_id"])} if topic in RUN_PAGES else None)
    supported = options(spoken)
    if supported:
        st.subheader("What the numbers support")
        st.caption(md_text(options_note(spoken)))
        for sentence in supported:
            st.markdown(f"- {md_text(sentence)}")
    checks = paper_checks(spoken) if d.tuple_task else []      # the models the findings speak for
    against = comparison_sentence(checks)
    if against:
        lead, what = comparison_lead(bool(d.dataset["simulated"]))
        finding(against + what, lead=lead)
    key_chart(d)
    st.caption(f"From audit run {md_text(str(d.run['run_id']))}; the report in the sidebar says the same with "
               "its charts and tables.")
    if against:
        held, known = tally(checks)
        bad = known - held
        with st.expander(f"Compared with the TUPLE paper: {held} of {known} of its findings hold on this run"
                         + (f", {bad} do not" if bad > 1 else ", 1 does not" if bad else ""), expanded=bad > 0):
            st.caption("Each band is what a run must show to tell the paper's story: its direction and rough "
                       "size, not its exact numbers." + (" Like the findings, it leaves out the models with too few "
                                                         "valid answers." if not spoken.left_out.empty else ""))
            paper_comparison([c for c in checks if c.holds is not None])


def paper_comparison(checks: list) -> None:
    """The paper's findings the run can judge, one list item each (verdict first, then the finding, this run, the
    band and the paper): a list wraps at any width, where a table's long cells were cut at 1,024 px; the same
    rows as a CSV."""
    shown = checks_frame(checks).assign(holds=lambda f: f["holds"].map({True: "yes", False: "NO"}))[
        ["finding", "holds", "run", "band", "paper"]].rename(columns={"run": "this run"})
    st.markdown("\n".join(
        f"- **{'Holds' if r['holds'] == 'yes' else 'Does NOT hold'}**: {md_text(r['finding'])}. This run: "
        f"{md_text(r['this run'])}; band: {md_text(r['band'])}; paper: {md_text(r['paper'])}."
        for _, r in shown.iterrows()))
    cols = st.columns([4, 1])
    cols[0].caption("The paper's findings (TUPLE.md section 8, and its appendix H.2 for the learned WCPQ) against "
                    "this run.")
    cols[1].download_button("CSV", csv_bytes(shown), file_name="paper_comparison.csv", mime="text/csv",
                            key="dl_paper_comparison", icon=":material/download:",
                            help="Download this comparison as CSV (exactly the rows and columns shown).")


SIMULATED_PREFIX = re.compile(r"^\s*SIMULATED\b[^:]*:\s*")


def unlabelled(text: object) -> str:
    """A simulated item's stored description without its leading "SIMULATED ...:" label, for a
    page whose banner already says so once (the warehouse keeps the label)."""
    if not isinstance(text, str):
        return ""
    rest = SIMULATED_PREFIX.sub("", text, count=1)
    return rest[:1].upper() + rest[1:]


def model_descriptions(models: pd.DataFrame, simulated: bool) -> None:
    """Each model's description (from its manifest, or the simulator's), one line per model in an
    expander: long sentences read better as a list than as a table column."""
    models = models.assign(description=models["description"].map(unlabelled)) if simulated else models
    described = models[models["description"].fillna("").astype(str).str.strip() != ""]
    if described.empty:
        return
    with st.expander("What the model is" if len(described) == 1 else f"What each of the {len(described)} models is"):
        st.markdown("\n".join(f"- **{md_text(m)}**: {md_text(d)}"
                               for m, d in zip(described["model"], described["description"])))


def key_chart(d) -> None:
    """The one chart behind the headline: secret recovery per model and release view (pooled test
    worlds, 95% intervals), when the run holds the recovery audit."""
    pooled = d.recovery[d.recovery["scope"] == "pooled"] if not d.recovery.empty else d.recovery
    if pooled.empty:
        return
    chart(recovery_figure(pooled), pooled[["model", "view", "accuracy", "ci_low", "ci_high", "n"]],
          "overview_recovery",
          "How often an attacker recovers the protected mechanism from each release view (pooled test worlds, "
          "95% pair-clustered intervals); the dashed line is guessing between the two hypotheses (50%). "
          "Details on the Release-view recovery page.")


def render() -> None:
    """The Overview page: the dataset's headline counts, then its worlds and models, its QuasiLeak corpus, or its
    ingests and quarantine."""
    st.title("Overview")
    path, dataset, simulated = current_dataset()
    if dataset is None:
        st.info("Nothing to show yet. Build the simulated reference dataset with `qlb demo`, or load your own "
                "exports on the Data page.")
        return
    simulated_banner(simulated, path, dataset)
    ds = da.datasets(path)
    row = ds[ds["dataset_id"] == dataset].iloc[0]
    st.subheader(f"Dataset: {md_text(dataset)}")
    description = unlabelled(row["description"]) if simulated else row["description"]
    if isinstance(description, str) and description:
        st.caption(md_text(description))
    headline_findings(path, dataset)
    st.subheader("What the dataset holds")

    splits = da.query(path, "split_counts", (dataset,))
    corpus_only = int(row["worlds"]) == 0 and int(row["documents"]) > 0       # detectors, no decision task
    stat_row([("QuasiLeak documents", f"{int(row['documents']):,}"),
              ("Prediction lines", f"{int(row['prediction_lines']):,}")] if corpus_only else
             [("Worlds", f"{int(row['worlds']):,}"),
              ("Pairs", f"{int(splits['pairs'].sum()) if not splits.empty else 0:,}"),
              ("Models", f"{int(row['models']):,}"),
              ("Native responses", f"{int(row['responses']):,}"),
              ("Refusal responses", f"{int(row['refusal_responses']):,}"),
              ("QuasiLeak documents", f"{int(row['documents']):,}")])

    sections = ["TUPLE worlds and models", "QuasiLeak corpus", "Ingests and quarantine"]
    first = sections[1] if corpus_only else sections[0]
    section = st.segmented_control("Section", sections, default=first, key="overview_section",
                                   label_visibility="collapsed") or first
    if section == sections[0]:
        if splits.empty:
            st.info("No TUPLE worlds in this dataset.")
        else:
            st.markdown("**Worlds by domain and split**")
            pivot = splits.pivot_table(index="domain", columns="split", values="worlds", aggfunc="sum",
                                       fill_value=0)
            pivot = pivot[[c for c in SPLITS if c in pivot.columns] + [c for c in pivot.columns if c not in SPLITS]]
            pivot = pivot.reset_index()
            pivot.columns.name = None
            table(pivot, "worlds_by_domain_split",
                  "Worlds per domain and split (a pair never straddles splits).")
        every = da.query(path, "model_summary", (dataset,))
        answered = (every["native_responses"] + every["refusal_responses"]) > 0
        models = every[answered]                              # the models the figure above counts
        if not models.empty:
            st.markdown("**Models**")
            if st.toggle("Chart of the response outcomes", key="overview_chart",
                         help="Off by default: the first view stays quick to draw."):
                fig, data = response_outcome_figure(models)
                chart(fig, data, "native_response_outcomes",
                      f"Native responses per model that are unavailable, invalid, or whose choice is not "
                      f"the unique argmax; all splits of dataset {md_text(dataset)} (ingested data, no audit run). "
                      "Invalid responses are kept with valid = false and enter the audits as unavailable.")
            table(models[list(MODEL_COLUMNS)].rename(columns=MODEL_COLUMNS), "models",
                  "Native responses per model: valid answers, unavailable, invalid (kept as delivered, never "
                  "repaired), and choices that are not the unique top score of the released probabilities.")
            table(models[list(REFUSAL_COLUMNS)].rename(columns=REFUSAL_COLUMNS), "models_refusal",
                  "Refusal responses per model (the refusal audit's input) and how many were unavailable.")
            model_descriptions(models, simulated)
        if (~answered).any():
            silent = every.loc[~answered, "model"].tolist()
            st.caption(f"Registered without any stored answer, so not counted: {md_text(', '.join(silent))} "
                       "(a collection that stopped before its first answer; the Collection page says why).")
    elif section == sections[1]:
        corpus = da.query(path, "corpus_summary", (dataset,))
        if corpus.empty:
            st.info("No QuasiLeak corpus in this dataset.")
        else:
            table(corpus[list(CORPUS_COLUMNS)].rename(columns=CORPUS_COLUMNS), "corpus_by_split",
                  "Documents, contexts, gold groups and targets (gold groups of a hide attribute) per split "
                  "(split by sender profile: no sender is in two splits).")
            groups = da.query(path, "group_summary", (dataset,))
            by_attr = groups.pivot_table(index="attribute", columns="policy_label", values="groups",
                                         aggfunc="sum", fill_value=0).reset_index()
            by_attr.columns.name = None
            table(by_attr, "gold_groups_by_attribute_policy",
                  "Gold groups per attribute under each policy label; only hide groups are targets.")
            detectors = da.query(path, "detector_summary", (dataset,))
            if not detectors.empty:
                table(detectors[list(DETECTOR_COLUMNS)].rename(columns=DETECTOR_COLUMNS), "detector_predictions",
                      "Detector prediction lines ingested: documents and the groups each detector reported.")
    else:
        ingests = da.query(path, "recent_ingests", (dataset, 20))
        table(ingests_table(ingests), "recent_ingests", "The last 20 ingests (same file twice is stored once).",
              column_config=ingests_column_config())
        q = da.query(path, "quarantine_summary", (dataset,))
        inv = da.query(path, "invalid_summary", (dataset,))
        c1, c2 = st.columns(2)
        with c1:
            st.markdown("**Quarantined lines (rejected)**")
            if q.empty:
                st.success("No rejected lines.")
            else:
                table(q[list(QUARANTINE_COLUMNS)].rename(columns=QUARANTINE_COLUMNS), "quarantine_summary",
                      f"{int(q['rejected_lines'].sum()):,} rejected lines; browse them on the Data page.",
                      column_config={"first rejected line": st.column_config.NumberColumn(
                          "first rejected line", format="localized", step=1,
                          help="The file's first rejected line (line numbers start at 1).")})
        with c2:
            st.markdown("**Invalid responses (kept, valid = false)**")
            if inv.empty:
                st.success("No invalid responses.")
            else:
                table(inv[list(INVALID_COLUMNS)].rename(columns=INVALID_COLUMNS), "invalid_summary",
                      f"{int(inv['responses'].sum()):,} invalid native responses, by model and reason.")


page_entry(render)
