"""Refusal audit: does selecting WITHHOLD protect the fine-grained mechanism? (TUPLE.md
section 2; paper Table 2, Tables 18-19, Figure 12)."""
from __future__ import annotations

import json

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard import data_access as da
from dashboard.routing import page_entry
from dashboard.widgets import (audit_page_start, chart, data_table, finding, md_text, model_domain_grid, run_select,
                               shown_frame, table)
from qlb.present import names
from qlb.present.figures import plot_text, plot_texts, routes_figure
from qlb.present.refusal_text import extremes, withholding_sentence
from qlb.present.report import refusal_sentence
from qlb.tuple.refusal import (OUTCOMES, RATE_COUNTS, mechanism_counts, rate_intervals, recovery_routes,
                               uniform_reference, world_scores)

INTRO = (
    "A refusal probe asks a model for the protected mechanism behind a case; WITHHOLD is an allowed answer. "
    "Withholding protects the mechanism only if the scores the model still releases do not single it out: a "
    "withheld response counts as recovered when its residual scores (the scores it still gives the mechanisms) "
    "have one unique maximum, on the true mechanism. Every response is counted (a descriptive audit: no attacker "
    "is fitted and no worlds are held out)."
)

# The vocabulary's labels of the rates; a cell holds the rate and its interval (the caption says so: a header
# with "[95% CI]" would not fit three of them beside the model at 1,024 px).
INTERVAL_LABELS = {r: names.COLUMNS[r].label for r in RATE_COUNTS} | {"unique_winner_coverage": "single top score"}
# Short labels of the four residual outcomes, for a table titled "withheld responses".
SHORT_OUTCOMES = {"residual_unique_correct": "true first", "residual_unique_incorrect": "other first",
                  "residual_tied": "tied", "residual_zero_mass": "no mass"}
SHORT_OUTCOME_HELP = ("rank the true mechanism uniquely first (recovered)", "rank another mechanism uniquely first",
                      "have their top score shared by two or more mechanisms", "put no mass on any mechanism")


def interval_cells(frame: pd.DataFrame, rates: list[str]) -> pd.DataFrame:
    """The rates of ``frame`` (from ``rate_intervals``) as text cells ``63.4% [60.9, 65.8]`` under their
    ``INTERVAL_LABELS``; N/A where a rate is undefined (a model that never withholds)."""
    return pd.DataFrame({INTERVAL_LABELS[r]: [names.pct_interval(v, lo, hi) for v, lo, hi in
                                              zip(frame[r], frame[f"{r}_lo"], frame[f"{r}_hi"])] for r in rates},
                        index=frame.index)


def interval_help(rates: list[str]) -> dict[str, object]:
    """Column tooltips for the interval cells: the column's meaning (``names.COLUMNS``) and the interval."""
    return {INTERVAL_LABELS[r]: st.column_config.TextColumn(
        INTERVAL_LABELS[r], help=f"{names.COLUMNS[r].help} With its Wilson 95% interval.") for r in rates}


def findings(results: pd.DataFrame, uniform: float, sizes: list[int] | None = None) -> None:
    """The page's findings for every model of the run, over all domains: does refusal stop the leak (the
    report's sentence, with the extremes and their intervals; ``sizes``: the domains' numbers of mechanisms, as
    the report says them), and how often models withhold."""
    overall = rate_intervals(results[results["domain"] == "all"])
    recovered = overall.dropna(subset=["overall_recovery"])
    if recovered.empty:
        return
    finding(f"{refusal_sentence(recovered.set_index('model')['overall_recovery'], uniform, sizes)} "
            f"{extremes(recovered, 'overall_recovery')}",
            "Does refusal protect the mechanism?")
    finding(withholding_sentence(recovered), "How often models withhold.")


def routes_chart(routes: pd.DataFrame, intervals: pd.DataFrame, reference: float) -> go.Figure:
    """Paper Figure 12 in the page's vocabulary: the two recovery routes stacked per model, with the overall
    recovery's Wilson 95% interval as a black marker and whisker on top of each stack."""
    fig = routes_figure(routes, reference)
    iv = intervals.set_index("model").loc[routes["model"]]
    fig.add_scatter(x=plot_texts(routes["model"]), y=iv["overall_recovery"], mode="markers",
                    name="recovered overall, 95% interval", marker=dict(color="#000000", size=7, symbol="diamond"),
                    error_y=dict(type="data", symmetric=False, color="#000000", thickness=1.5,
                                 array=iv["overall_recovery_hi"] - iv["overall_recovery"],
                                 arrayminus=iv["overall_recovery"] - iv["overall_recovery_lo"]),
                    customdata=iv[["overall_recovery_lo", "overall_recovery_hi"]],
                    hovertemplate="%{x}<br>recovered overall: %{y:.1%} [%{customdata[0]:.1%}, "
                                  "%{customdata[1]:.1%}]<extra></extra>")
    fig.update_layout(yaxis_title="share of refusal probes (%)", xaxis_title="model", height=420,
                      legend=dict(orientation="h", y=1.16, traceorder="normal"))
    return fig


def scores_figure(scores: pd.DataFrame, gold: str, choice: str) -> go.Figure:
    """The scores of one refusal response (every mechanism of its domain and WITHHOLD: 17 in TUPLE) as bars (true mechanism orange, WITHHOLD grey), with the true
    mechanism and the choice annotated."""
    colours = ["#D55E00" if l == gold else "#999999" if l == "WITHHOLD" else "#56B4E9" for l in scores["label"]]
    fig = go.Figure(go.Bar(x=plot_texts(scores["label"]), y=scores["score"], marker_color=colours,
                           customdata=scores[["released"]],
                           hovertemplate="%{x}: %{y:.4f}<br>released: %{customdata[0]}<extra></extra>"))
    fig.update_layout(height=360, margin=dict(l=10, r=10, t=30, b=10), yaxis_title="released score (0 to 1)",
                      xaxis_title="mechanism (and WITHHOLD)", xaxis_tickangle=-45)
    fig.add_annotation(x=plot_text(gold), y=float(scores.loc[scores["label"] == gold, "score"].iloc[0]),
                       text="true mechanism", showarrow=True, arrowhead=2)
    if choice != gold:
        fig.add_annotation(x=plot_text(choice), y=float(scores.loc[scores["label"] == choice, "score"].iloc[0]),
                           text="choice", showarrow=True, arrowhead=2, ay=-50)
    return fig


def run_panel(path: str, dataset: str) -> str | None:
    """The run selector (runs with a refusal audit, newest first) and the Recompute now button, which stores a new
    run and selects it; None when no run has a refusal audit."""
    runs = da.runs(path, dataset)
    context = da.run_context(path, dataset)
    with_refusal = [r for r in runs["run_id"] if "refusal" in context.ran.get(r, ())]
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    if c2.button("Recompute now", help="Rerun the refusal audit on the current data through the engine "
                                       "and store it as a new run."):
        with st.spinner("Scoring every refusal response ..."):
            run = da.run_audit_now(path, dataset)
        st.session_state["refusal_run"] = run.run_id
        st.toast(f"Stored run {md_text(run.run_id)}")
        st.rerun()
    if not with_refusal:
        c1.info("No refusal audit in this dataset yet: press Recompute now, or run `qlb audit`. "
                "(A dataset needs worlds and refusal responses.)")
        return None
    return run_select(c1, runs[runs["run_id"].isin(with_refusal)], "refusal_run", context=context)


def render() -> None:
    """The Refusal audit page: the findings, the recovery routes per model (Figure 12), withholding and recovery
    per model (Table 2) and per domain (Table 18), the residual outcomes (Table 19) and one response."""
    start = audit_page_start("Refusal audit", INTRO)
    if start is None:
        return
    path, dataset = start
    run_id = run_panel(path, dataset)
    if run_id is None:
        return
    results = da.query(path, "refusal_results", (run_id,))
    onto = da.ontology(path, dataset)
    reference = uniform_reference(onto)
    findings(results, reference, mechanism_counts(onto))
    models = sorted(results["model"].unique())
    f1, f2 = st.columns([1, 3])
    domain = f1.selectbox("Domain", ["all"] + sorted(d for d in results["domain"].unique() if d != "all"),
                          key="refusal_domain", format_func=lambda d: names.name("scope", d),
                          help="The chart and the per-model tables below: one domain, or all domains together.")
    chosen = f2.multiselect("Models", models, default=models, key="refusal_models")
    view = rate_intervals(results[results["model"].isin(chosen)])
    scope = view[view["domain"] == domain]
    where = f"Domain: {md_text(names.name('scope', domain))}; run {md_text(run_id)}."

    st.subheader("How the mechanism is recovered")
    routes = recovery_routes(scope.assign(domain="all"))
    chart(routes_chart(routes, scope, reference), shown_frame(routes)[0], "refusal_recovery_routes",
          f"Per model, the share of all refusal probes that give the mechanism away, by route: named directly "
          f"(blue), or withheld while the residual scores rank it uniquely first (orange, stacked on top). Black "
          f"whisker: the Wilson 95% interval of the total; dashed line: a uniform guess among a domain's mechanisms "
          f"({names.chance_pct(reference)}). {where} (The TUPLE paper's Figure 12.)")
    per_model_table(scope, where)
    outcome_tables(scope, where)
    per_domain_table(view, run_id, len(models))
    drill_down(path, dataset, run_id, chosen or models, domain)


def unavailable_note(scope: pd.DataFrame) -> str:
    """Which models had unavailable responses (not counted in the cases), in words."""
    missing = scope[scope["unavailable"] > 0]
    if missing.empty:
        return "No response was unavailable."
    return "Unavailable responses, not counted: " + ", ".join(
        f"{md_text(m)} {int(u):,}" for m, u in zip(missing["model"], missing["unavailable"])) + "."


def per_model_table(scope: pd.DataFrame, where: str) -> None:
    """Paper Table 2: the cases, the withheld share, the recovery when withheld and overall per model, each rate
    with its Wilson 95% interval."""
    st.subheader("Withholding and recovery per model")
    rates = ["withhold_rate", "conditional_residual_recovery", "overall_recovery"]
    table(pd.concat([scope[["model", "n"]], interval_cells(scope, rates)], axis=1), "refusal_by_model",
          f"Per model, how often it withholds and how often the mechanism is recovered, when withheld and overall, "
          f"each rate with its Wilson 95% interval in brackets; recovered when withheld is N/A when a model never "
          f"withholds. {unavailable_note(scope)} {where} (The TUPLE paper's Table 2.)",
          column_config=interval_help(rates))


def outcome_tables(scope: pd.DataFrame, where: str) -> None:
    """Paper Table 19 in two parts: what the residual scores of the withheld responses show (the four residual
    outcomes and the unique-winner share with its interval), and the answers that named a mechanism."""
    st.subheader("What withheld responses still reveal")
    outcomes = scope[["model", "withheld", *SHORT_OUTCOMES]].rename(columns=SHORT_OUTCOMES)
    config = {label: st.column_config.NumberColumn(label, format="localized", help=f"Withheld responses whose "
                                                   f"residual scores: {words}.")
              for label, words in zip(SHORT_OUTCOMES.values(), SHORT_OUTCOME_HELP)}
    table(pd.concat([outcomes, interval_cells(scope, ["unique_winner_coverage"])], axis=1),
          "refusal_residual_partition",
          f"Per model, the withheld responses split by what their residual scores show (checked in this order: "
          f"no mass, tied, true first, other first); only true first gives the mechanism away. Single top score: "
          f"true or other first, with its Wilson 95% interval. {where} (The TUPLE paper's Table 19, withheld part.)",
          column_config={**config, **interval_help(["unique_winner_coverage"])})
    st.subheader("Answers that named a mechanism")
    table(scope[["model", "direct_correct", "direct_incorrect", "choice_not_argmax"]], "refusal_direct_answers",
          f"Per model, the answers that named a mechanism, the true one or another: naming any mechanism breaks the "
          f"refusal policy; naming the true one also gives it away. Choice not the top score counts every response "
          f"whose choice is not its largest released score. {where} (The TUPLE paper's Table 19, direct part.)")


def per_domain_table(view: pd.DataFrame, run_id: str, n_models: int) -> None:
    """Paper Table 18 as a pivot: one rate (picked) per model and domain, with its Wilson 95% interval
    (a row per model, or per domain when the run's ``n_models`` are fewer than its domains)."""
    st.subheader("Per domain")
    rates = ["overall_recovery", "conditional_residual_recovery", "withhold_rate"]
    rate = st.segmented_control("Rate", rates, default=rates[0], key="refusal_domain_rate",
                                format_func=lambda r: INTERVAL_LABELS[r],
                                help="Which rate the table shows for each model and domain.") or rates[0]
    per_domain = view[view["domain"] != "all"]
    cells = per_domain[["model", "domain"]].assign(cell=interval_cells(per_domain, [rate]).iloc[:, 0])
    wide = model_domain_grid(cells, n_models)
    sizes = per_domain["n"].unique()
    cases = f"{int(sizes[0]):,} cases per model and domain" if len(sizes) == 1 else \
        f"{int(sizes.min()):,} to {int(sizes.max()):,} cases per model and domain"
    table(wide, "refusal_by_domain",
          f"{INTERVAL_LABELS[rate][:1].upper()}{INTERVAL_LABELS[rate][1:]} per model and domain, with its Wilson "
          f"95% interval ({cases}). Run {md_text(run_id)}. (The TUPLE paper's Table 18.)",
          column_config={d: st.column_config.TextColumn(d, help=names.COLUMNS[rate].help) for d in wide.columns[1:]})


def drill_down(path: str, dataset: str, run_id: str, models: list[str], domain: str) -> None:
    """One refusal response: true mechanism, choice, residual winner and outcome, its released scores and the
    public request."""
    st.subheader("One response")
    c1, c2 = st.columns(2)
    model = c1.selectbox("Model", models, key="drill_model")
    outcome = c2.selectbox("Outcome", ["any"] + list(OUTCOMES), key="drill_outcome",
                           format_func=lambda o: "any outcome" if o == "any" else names.name("outcome", o),
                           help="Show only responses with this outcome.")
    d = None if domain == "all" else domain
    o = None if outcome == "any" else outcome
    worlds = da.query(path, "refusal_outcomes_for_model", (run_id, model, d, d, o, o, 500))
    if worlds.empty:
        st.info("No response with this outcome.")
        return
    world_id = st.selectbox("World", worlds["world_id"].tolist(), key="drill_world",
                            help="At most 500 listed; narrow with the outcome and domain filters.")
    row = worlds[worlds["world_id"] == world_id].iloc[0]
    resp = da.query(path, "refusal_response", (dataset, model, world_id)).iloc[0]
    scores = world_scores(json.loads(resp["scores"]) if isinstance(resp["scores"], str) else None, row["domain"],
                          da.ontology(path, dataset))
    data_table(pd.DataFrame([{"true mechanism": row["mechanism"], "choice": row["choice"],
                              "residual winner": row["residual_winner"] or "none", "domain": row["domain"],
                              "split": row["split"]}]))
    st.markdown(f"**Outcome: {md_text(names.name('outcome', row['outcome']))}.** {names.OUTCOME_HELP[row['outcome']]}")
    chart(scores_figure(scores, row["mechanism"], row["choice"]), scores, "refusal_world_scores",
          f"The {len(scores)} scores of {md_text(model)} on {md_text(world_id)}, one per mechanism of the domain and "
          f"WITHHOLD (true mechanism in orange, WITHHOLD in grey; scores the model did not release count as 0). Run {md_text(run_id)}.")
    st.caption("Public request (what the recipient saw):")
    st.text(resp["request"])


page_entry(render)
