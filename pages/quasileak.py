"""QuasiLeak detectors: which detectors recover complete quasi-evidence groups, bound to the right
attribute, and only where the policy says hide? (QUASILEAK.md section 3)."""
from __future__ import annotations

import json

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard import data_access as da
from dashboard.highlight import document_html, legend_html, policy_chips
from dashboard.routing import page_entry
from dashboard.widgets import (audit_page_start, chart, finding, html_block, md_text, run_select, table,
                               warehouse_args)
from qlb.present.answers import shell_command
from qlb.present.coverage import COLUMN as COVERAGE_COLUMN
from qlb.present.coverage import HELP as COVERAGE_HELP
from qlb.present.coverage import coverage_column, coverage_on, coverage_sentence, unanswered
from qlb.present.figures import f1_figure, plot_text, plot_texts
from qlb.present.names import QL_METRIC_HELP, QL_METRIC_NAMES, pct, pct_interval, points_interval
from qlb.present.report import best_detector_sentence
from qlb.quasileak.scoring import HEADLINE, METRIC_KEYS, explain_targets, verify_group

DETECTOR_PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999"]
HATCHES = ["", "/", "x", "."]


INTRO = (
    "A separate audit of text detectors, not of your model's decision outputs: does a detector find the groups "
    "of individually weak text cues that together reveal a private attribute? "
    "Detectors must recover complete groups of individually weak cues, bind each group to the "
    "attribute it reveals, and report only attributes the policy labels hide. A predicted cue "
    "matches a gold cue at character IoU >= 0.5; intervals are 95% document-clustered bootstrap "
    "(2,000 resamples)."
)


# The leaderboard in two tables of at most four columns (each fits a 1,024 px screen): the
# headline metrics, then the errors the policy cares about; the rest folded.
MAIN_METRICS = ("complete_f1", "complete_recall")
ERROR_METRICS = ("strict_precision", "binding_error_rate", "over_flag_rate")
GRADED_METRICS = ("graded_f1", "graded_recall", "lenient_precision")
REFERENCE_METRICS = ("document_flag_recall", "span_f1")
INTERVAL_NOTE = "each cell is a percent with its 95% interval"


def leaderboard_frame(scores: pd.DataFrame) -> tuple[list[pd.DataFrame], pd.DataFrame]:
    """The leaderboard's tables (headline, errors, graded credit, reference scores; at most four
    columns each) and the numeric table, from the run's 'all' slice, best complete F1 first; rates
    as percent with their 95% intervals where the run has one."""
    a = scores[scores["slice_kind"] == "all"]
    numeric = a.pivot_table(index="detector", columns="metric", values="value", aggfunc="first")
    lo = a.pivot_table(index="detector", columns="metric", values="ci_low", aggfunc="first")
    hi = a.pivot_table(index="detector", columns="metric", values="ci_high", aggfunc="first")
    sim = a.groupby("detector")["simulated"].first()
    order = numeric.sort_values("complete_f1", ascending=False).index

    def cells(metrics: tuple[str, ...], det: str) -> dict[str, str]:
        return {QL_METRIC_NAMES[m]: pct_interval(numeric.loc[det, m],
                                                 *((lo.loc[det, m], hi.loc[det, m]) if m in HEADLINE else ()))
                for m in metrics}

    main = pd.DataFrame([{"detector": det, "simulated": bool(sim[det]), **cells(MAIN_METRICS, det)} for det in order])
    errors = pd.DataFrame([{"detector": det, **cells(ERROR_METRICS, det)} for det in order])
    graded = pd.DataFrame([{"detector": det, **cells(GRADED_METRICS, det)} for det in order])
    reference = pd.DataFrame([{"detector": det, "predicted groups": int(numeric.loc[det, "predicted_groups"]),
                               **cells(REFERENCE_METRICS, det)} for det in order])
    out = numeric.reset_index()
    out["simulated"] = out["detector"].map(sim).astype(bool)
    for m in HEADLINE:
        out[f"{m}_ci_low"] = out["detector"].map(lo[m])
        out[f"{m}_ci_high"] = out["detector"].map(hi[m])
    return [main, errors, graded, reference], out


def findings(numeric: pd.DataFrame, on: pd.DataFrame, split: str) -> None:
    """The leaderboard in sentences: the best detector, the detectors that answered none or part of the
    documents, how far span-level scores overstate group detection, and over-flagging; every figure
    from the run. A detector that answered no document measures nothing and is left out of them."""
    numeric = numeric[~numeric["detector"].isin(unanswered(on))]
    if not numeric.empty:
        finding(best_detector_sentence(numeric), "Best detector.")
    if (said := coverage_sentence(on, split)) is not None:
        finding(said, "Unanswered documents.")
    if numeric.empty:
        return
    d = numeric.set_index("detector")
    # a detector that predicted no group has no precision or F1 (N/A): the counts below are of the others
    of = "of the {} detectors that predicted any group" if (d["predicted_groups"] == 0).any() else "of {} detectors"
    gap = (d["span_f1"] - d["complete_f1"]).dropna()
    if not gap.empty:
        over = gap[gap >= 0.10]
        worst = gap.idxmax()
        if len(over):
            finding(f"For {len(over)} {of.format(len(gap))} the usual span-level F1 is at least 10 points "
                    f"higher than the complete-group F1 (largest gap: {worst}, span F1 {pct(d.loc[worst, 'span_f1'])} "
                    f"against {pct(d.loc[worst, 'complete_f1'])}): finding the cues is not finding the groups.",
                    "Span scores overstate.")
        else:
            finding(f"No detector's span-level F1 exceeds its complete-group F1 by 10 points or more (largest gap "
                    f"{points_interval(gap.max())} points, {worst}).", "Span scores agree.")
    flags = d["over_flag_rate"].dropna()
    if not flags.empty:
        high = flags[flags > 0.10]
        top = flags.idxmax()
        finding(f"{len(high)} {of.format(len(flags))} report more than 10% of their groups for attributes the "
                f"policy keeps or leaves neutral (highest: {top}, "
                f"{pct_interval(flags[top], d.loc[top, 'over_flag_rate_ci_low'], d.loc[top, 'over_flag_rate_ci_high'])})."
                if len(high) else
                f"No detector reports more than 10% of its groups for attributes the policy keeps or leaves "
                f"neutral (highest: {top}, {pct(flags[top])}).", "Over-flagging.")


def metric_help(frame: pd.DataFrame) -> dict[str, object]:
    """Header tooltips for the leaderboard's metric columns (QUASILEAK.md section 3's definitions)."""
    by_label = {QL_METRIC_NAMES[m]: QL_METRIC_HELP[m] for m in QL_METRIC_HELP}
    return {c: st.column_config.TextColumn(c, help=by_label[c]) for c in frame.columns if c in by_label}


def breakdown_figure(data: pd.DataFrame, metric: str, kind: str) -> go.Figure:
    """Grouped bars of ``metric`` per detector over the slices of one breakdown (arity, attribute, distance or
    context)."""
    fig = go.Figure()
    n = data["detector"].nunique()
    for i, (det, sub) in enumerate(data.groupby("detector", sort=True)):
        # past the palette's eight colours, a hatch tells two detectors of one colour apart
        fig.add_bar(name=plot_text(det), x=plot_texts(sub["slice"]), y=sub["value"],
                    marker=dict(color=DETECTOR_PALETTE[i % len(DETECTOR_PALETTE)],
                                pattern_shape=HATCHES[(i // len(DETECTOR_PALETTE)) % len(HATCHES)]),
                    hovertemplate="%{x}<br>%{fullData.name}: %{y:.1%}<extra></extra>")
    rows = -(-n // 4)                 # the legend below the plot, about four names a row: never over the bars
    fig.update_layout(barmode="group", height=340 + 22 * rows, margin=dict(l=10, r=10, t=10, b=10),
                      xaxis_title=kind, yaxis=dict(title=f"{QL_METRIC_NAMES.get(metric, metric)} (%)", tickformat=".0%",
                                                   range=[0, 1.02]),
                      legend=dict(orientation="h", yanchor="top", y=-0.22, x=0, title_text="detector"))
    return fig


def render() -> None:
    """The QuasiLeak page: a run's detector leaderboard and F1 chart, breakdowns by slice, and the document viewer."""
    start = audit_page_start("QuasiLeak detectors", INTRO)
    if start is None:
        return
    path, dataset = start
    runs = da.quasileak_runs(path, dataset)
    held = da.datasets(path).set_index("dataset_id")
    documents = int(held.loc[dataset, "documents"]) if dataset in held.index else 0
    predictions = int(held.loc[dataset, "prediction_lines"]) if dataset in held.index else 0
    where = warehouse_args(path)
    detect = shell_command(["qlb", "quasileak", "run", "--dataset", dataset, "--detector", "lexicon-cues"] + where)
    if documents == 0:           # nothing to score: no button that would store a run without QuasiLeak scores
        st.info("This dataset has no QuasiLeak corpus (the texts the detectors read), so there is nothing to score "
                "here. Load a corpus on the Data page (kind: QuasiLeak documents) or with the first command below, "
                "then run a built-in detector on it (the second) or load your detector's predictions on the Data "
                "page. This audit does not need your model's decision answers.", icon=":material/description:")
        st.code(shell_command(["qlb", "ingest", "corpus", "CORPUS.jsonl", "--dataset", dataset] + where) + "\n"
                + detect, language="bash")
        if runs.empty:
            return
    c1, c2 = st.columns([3, 1])
    if documents and c2.button(
            "Recompute now", key="ql_recompute", disabled=predictions == 0,
            help="Rescore every detector's stored predictions through the engine as a new run." if predictions
            else "No detector predictions to score yet: run a detector or load its predictions first."):
        with st.spinner("Scoring ..."):
            run = da.run_audit_now(path, dataset)
        st.session_state["ql_run"] = run.run_id          # the picker shows the new run
        st.toast(f"Stored run {md_text(run.run_id)}")
        st.rerun()
    if runs.empty:
        c1.info("No QuasiLeak scores yet. Run a built-in detector with the command below (it scores every detector "
                "into a new run), or load your detector's predictions on the Data page and press Recompute now.")
        st.code(detect, language="bash")
        return
    run_id = run_select(c1, runs, "ql_run", context=da.run_context(path, dataset))
    scores = da.query(path, "ql_scores", (run_id,))
    split = scores["split"].iloc[0]

    on = coverage_on(scores, da.detector_coverage(path, dataset))
    (main, errors, graded, reference), numeric = leaderboard_frame(scores)
    findings(numeric, on, split)
    chart(f1_figure(numeric), numeric, "quasileak_f1",
          f"Complete-group F1 (strict precision with complete recall) and graded F1 (lenient precision with graded "
          f"recall) per detector with 95% bootstrap intervals; split '{md_text(split)}', run {md_text(run_id)}.")

    st.subheader("Leaderboard")
    table(main, "quasileak_leaderboard",
          f"Micro over the {int(numeric['targets'].max()):,} target groups and each detector's predicted groups of "
          f"split '{md_text(split)}', best complete-group F1 first ({INTERVAL_NOTE}); run {md_text(run_id)}. "
          "Simulated detectors are derived from the gold groups. N/A: the detector predicted no group, so its "
          "precision and F1 are undefined. Hover a header for its definition (also in the Glossary).",
          column_config=metric_help(main))
    answered = coverage_column(main["detector"], on)
    if answered is not None:        # its own table: the leaderboard's stay at four columns, whole at 1,024 px
        partial = main["detector"].map(on["answered"] < on["documents"]).fillna(False).astype(bool).to_numpy()
        table(main[["detector"]].assign(**{COVERAGE_COLUMN: answered.to_numpy()})[partial], "quasileak_answered",
              f"The detectors that did not answer every document of split '{md_text(split)}', leaderboard order. "
              + md_text(COVERAGE_HELP), column_config={COVERAGE_COLUMN: st.column_config.TextColumn(
                  COVERAGE_COLUMN, help=COVERAGE_HELP)})
    table(errors, "quasileak_errors",
          f"The errors the policy cares about, same order ({INTERVAL_NOTE}): the share of predicted groups that "
          "complete a target (strict precision; the rest are errors), of targets found whole but under a wrong "
          "attribute (binding error), and of groups for attributes the policy keeps or leaves neutral (over-flag).",
          column_config=metric_help(errors))
    with st.expander("More metrics: graded credit, document flags and the span-level reference"):
        table(graded, "quasileak_graded_metrics",
              f"Graded recall gives partial credit for part of a group; lenient precision counts a predicted group "
              f"that overlaps a target of its attribute ({INTERVAL_NOTE}).", column_config=metric_help(graded))
        table(reference, "quasileak_reference_metrics",
              "Document flag recall asks only whether a document with a target got any group of a hide attribute; "
              "span F1 ignores groups and attributes (the span-level score the QuasiLeak paper says cannot measure "
              "this task).",
              column_config=metric_help(reference))

    st.subheader("Breakdowns")
    b1, b2 = st.columns(2)
    kind = b1.selectbox("By", ["arity", "attribute", "distance", "context"], key="ql_breakdown_kind",
                        help="distance: characters from the first cue's start to the last cue's end.")
    metric = b2.selectbox("Metric", [m for m in METRIC_KEYS if m not in ("targets", "predicted_groups")],
                          key="ql_breakdown_metric", format_func=lambda m: QL_METRIC_NAMES.get(m, m),
                          help="Hover the leaderboard's headers for each metric's definition.")
    data = scores[(scores["slice_kind"] == kind) & (scores["metric"] == metric)][["detector", "slice", "value"]]
    chart(breakdown_figure(data, metric, kind), data, f"quasileak_by_{kind}",
          f"{QL_METRIC_NAMES.get(metric, metric)} by {kind}; in a slice, precision counts only predicted groups bound to "
          f"the slice's targets. Split '{md_text(split)}', run {md_text(run_id)}. Missing bars: the metric is "
          "undefined (N/A).")
    document_viewer(path, dataset, scores, split)


def document_viewer(path: str, dataset: str, scores: pd.DataFrame, split: str) -> None:
    """One document under one detector: the policy, gold and predicted cues highlighted, each target's credit and the
    predicted groups."""
    st.subheader("Document viewer")
    v1, v2 = st.columns(2)
    detector = v1.selectbox("Detector", sorted(scores["detector"].unique()), key="ql_view_detector")
    s = None if split == "all" else split
    doc_ids = da.query(path, "ql_doc_ids", (dataset, s, s, 1000))["doc_id"].tolist()
    doc_id = v2.selectbox("Document", doc_ids, key="ql_view_doc", help="The first 1,000 of the scored split.")
    if not doc_id:
        return
    doc = da.query(path, "ql_document", (dataset, doc_id)).iloc[0]
    gold_rows = da.query(path, "ql_document_groups", (dataset, doc_id))
    gold = [(a, [tuple(c) for c in json.loads(c)]) for a, c in zip(gold_rows["attribute"], gold_rows["cues"])]
    pred_row = da.query(path, "ql_document_prediction", (dataset, detector, doc_id))
    predicted = []
    failed = not pred_row.empty and isinstance(pred_row["failure"].iloc[0], str)
    if pred_row.empty:
        st.warning(f"{md_text(detector)} has no prediction for this document: the scores count it as reporting "
                   "nothing.")
    else:
        predicted = [(g["attribute"], [tuple(c) for c in g["cues"]]) for g in json.loads(pred_row["groups"].iloc[0])]
        if isinstance(pred_row["failure"].iloc[0], str):
            st.error(f"The detector failed on this document: {md_text(pred_row['failure'].iloc[0])}. The scores "
                     "count it as reporting nothing.")
    policy = json.loads(doc["policy"])
    # HTML blocks (html_block): the text in them is html.escape'd and never read as Markdown
    st.markdown(html_block("<div><b>Policy</b> " + policy_chips(policy) + "</div>"), unsafe_allow_html=True)
    st.markdown(html_block(legend_html(list(policy))), unsafe_allow_html=True)
    st.markdown(html_block(document_html(doc["text"], gold, predicted, policy)), unsafe_allow_html=True)
    targets = explain_targets(policy, gold, predicted)
    if not targets:
        st.info("This document has no target (no gold group with a hide attribute).")
    else:
        # lists, not tables: the verdicts and cues are sentences that wrap at any screen width
        st.markdown(f"**Targets under {md_text(detector)}** (gold groups of a hide attribute): credit and why")
        st.markdown("\n".join(f"- **Gold group {t['gold group']}**, {md_text(t['attribute'])} ({t['arity']} cues): "
                               f"credit {t['credit']:.2f}; {md_text(t['why'])}" for t in targets))
    if predicted:
        st.markdown(f"**Groups {md_text(detector)} predicted** (a keep or neutral attribute is an over-flag)")
        st.markdown("\n".join(f"- **Predicted group {i + 1}**, {md_text(a)} ({md_text(policy.get(a, '?'))}): "
                               + "; ".join(f"\u201c{md_text(doc['text'][s_:e_])}\u201d" for s_, e_ in cues)
                               for i, (a, cues) in enumerate(predicted)))
    elif not failed and not pred_row.empty:      # a failure or a missing prediction is said above
        st.caption(f"{md_text(detector)} predicted no group in this document.")
    if gold:
        construction_check(doc["text"], gold)


def construction_check(text: str, gold: list[tuple[str, list[tuple[int, int]]]]) -> None:
    """The reverse-construction check (QUASILEAK.md section 2) for one gold group of the document:
    the auditor enters a verifier's confidence for the sender's true value from each cue alone and
    from the whole group; the engine's ``verify_group`` turns them into lift and says whether the
    group is weak cue by cue and revealing as a whole."""
    with st.expander("Construction check: is a gold group weak cue by cue, and revealing as a whole?"):
        st.caption("Lift L = (confidence - chance) / (1 - chance), chance = 1 / number of values of the attribute. "
                   "A group is verified when every single cue's lift is at most 0.35 and the whole group's is at "
                   "least 0.70. Enter your verifier's confidences (for a corpus built elsewhere, "
                   "`qlb quasileak verify --groups FILE` checks many groups at once).")
        labels = [f"group {i + 1}: {a} ({len(c)} cues)" for i, (a, c) in enumerate(gold)]
        g = st.selectbox("Gold group", range(len(gold)), format_func=lambda i: labels[i], key="ql_check_group")
        attribute, cues = gold[g]
        n_values = st.number_input(f"Number of values of {md_text(attribute)}", min_value=2, value=2, step=1,
                                   key="ql_check_values", help="At the granularity the verifier recovers it.")
        cols = st.columns(len(cues) + 1)
        singles = [cols[i].number_input(f"cue {i + 1} alone", 0.0, 1.0, value=None, step=0.05,
                                        key=f"ql_check_cue_{g}_{i}", help=md_text(text[s_:e_][:200]))
                   for i, (s_, e_) in enumerate(cues)]
        whole = cols[-1].number_input("whole group", 0.0, 1.0, value=None, step=0.05, key=f"ql_check_whole_{g}")
        if whole is None or any(v is None for v in singles):
            st.caption("Enter every confidence to run the check.")
            return
        ok, why = verify_group(singles, whole, int(n_values))
        (st.success if ok else st.warning)(md_text(why), icon=":material/check:" if ok else ":material/warning:")


page_entry(render)
