"""Plotly figures shared by the pages and the HTML report: one visual language (a colour per
release view and per model, colour-blind safe palettes, hover values with intervals).

Plotly draws a subset of HTML in every label (axis ticks, legend, hover, annotations): ``<a href>``
becomes a link, ``<b>``, ``<br>`` format. Text from data (model, detector, mechanism, world names)
therefore goes through ``plot_text`` before it reaches a figure, and never into a hovertemplate,
where ``%{...}`` would be read as well."""
from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from qlb.tuple.costs import profile_order
from qlb.present.palette import DIVERGING, VIEW_COLOURS, VIEW_SYMBOLS
from qlb.tuple.refusal import UNIFORM_REFERENCE
from qlb.tuple.release_views import VIEWS

ROUTE_COLOURS = {"direct_share": "#0072B2", "residual_share": "#E69F00"}
DEFENSE_ORDER = ["native", "quantize", "top2", "temperature", "noise", "wcpq grid", "wcpq"]
DEFENSE_LABELS = {"native": "native (control)", "quantize": "quantize 0.1", "top2": "top-two",
                  "temperature": "temperature τ=2", "noise": "noise σ=0.05 (3-seed mean)",
                  "wcpq grid": "WCPQ strict, grid only (control)", "wcpq": "WCPQ strict"}


def plot_text(value: object) -> str:
    """Data text for a Plotly label: ``& < >`` as HTML entities, which Plotly shows as the
    characters themselves, so a name like ``<a href=...>`` is shown, not followed."""
    return html.escape(str(value), quote=False)


def plot_texts(values) -> list[str]:
    """``plot_text`` of each value (a column of names for an axis or a hover)."""
    return [plot_text(v) for v in values]


def routes_figure(routes: pd.DataFrame, reference: float = UNIFORM_REFERENCE) -> go.Figure:
    """Paper Figure 12: per model, the direct and the residual recovery route stacked as shares of n, with the
    uniform-guess line at ``reference`` (1/M for M mechanisms per domain; 1/16 for TUPLE)."""
    fig = go.Figure()
    for col, name in (("direct_share", "direct correct / n"), ("residual_share", "residual unique correct / n")):
        fig.add_bar(name=name, x=plot_texts(routes["model"]), y=routes[col], marker_color=ROUTE_COLOURS[col],
                    customdata=routes[["n", "direct_correct", "residual_unique_correct", "overall_recovery"]],
                    hovertemplate="%{x}<br>" + name + ": %{y:.2%}<br>n = %{customdata[0]}"
                                  "<br>overall recovery: %{customdata[3]:.2%}<extra></extra>")
    fig.add_hline(y=reference, line_dash="dash", line_color="#555555",
                  annotation_text=f"uniform guess {reference:.2%}", annotation_position="top left")
    fig.update_layout(barmode="stack", height=380, margin=dict(l=10, r=10, t=30, b=10),
                      yaxis=dict(title="share of responses", tickformat=".0%", range=[0, 1.05]),
                      legend=dict(orientation="h", y=1.12))
    return fig


def recovery_figure(pooled: pd.DataFrame) -> go.Figure:
    """Paper Figure 4: pooled test recovery per model and release view with 95% intervals, and the 50% guessing line."""
    fig = go.Figure()
    for view in VIEWS:
        d = pooled[pooled["view"] == view]
        if d.empty:
            continue
        fig.add_trace(go.Scatter(
            name=view, x=plot_texts(d["model"]), y=d["accuracy"], mode="markers",
            marker=dict(color=VIEW_COLOURS[view], size=10),
            error_y=dict(type="data", symmetric=False, array=d["ci_high"] - d["accuracy"],
                         arrayminus=d["accuracy"] - d["ci_low"]),
            customdata=d[["ci_low", "ci_high", "n"]],
            hovertemplate="%{x} · " + view + "<br>recovery %{y:.1%} [%{customdata[0]:.1%}, %{customdata[1]:.1%}]"
                          "<br>n = %{customdata[2]}<extra></extra>"))
    fig.add_hline(y=0.5, line_dash="dash", line_color="#555555", annotation_text="50%: guessing between two",
                  annotation_position="bottom left")
    fig.update_layout(height=420, margin=dict(l=10, r=10, t=30, b=10), scattermode="group",
                      yaxis=dict(title="secret recovery (test)", tickformat=".0%", range=[0.3, 1.02]),
                      legend=dict(orientation="h", y=1.12))
    return fig


def front_figure(points: pd.DataFrame, member: str, colours: dict[str, str], every_view: bool) -> go.Figure:
    """Test recovery (x) against mean cost (y) per (model, view) point with 95% intervals on both axes; points where
    ``member`` is true are outlined and joined by the dotted front."""
    fig = go.Figure()
    for (model, view), d in points.groupby(["model", "view"], sort=True):
        on = bool(d[member].iloc[0])
        fig.add_trace(go.Scatter(
            x=d["recovery"], y=d["mean_cost"], mode="markers", name=plot_text(model),
            legendgroup=model, showlegend=not every_view or view == "full_native",
            marker=dict(color=colours[model], size=13 if on else 10, symbol=VIEW_SYMBOLS[view],
                        line=dict(color="#000000", width=1.5 if on else 0)),
            opacity=1.0 if on else 0.3,
            error_x=dict(type="data", symmetric=False, array=d["recovery_ci_high"] - d["recovery"],
                         arrayminus=d["recovery"] - d["recovery_ci_low"], thickness=1, color=colours[model]),
            error_y=dict(type="data", symmetric=False, array=d["cost_ci_high"] - d["mean_cost"],
                         arrayminus=d["mean_cost"] - d["cost_ci_low"], thickness=1, color=colours[model]),
            customdata=d[["model", "view", "recovery_ci_low", "recovery_ci_high", "cost_ci_low", "cost_ci_high"]]
            .assign(model=plot_texts(d["model"]), view=plot_texts(d["view"])),
            hovertemplate="<b>%{customdata[0]}</b> · %{customdata[1]}<br>recovery %{x:.2%} "
                          "[%{customdata[2]:.2%}, %{customdata[3]:.2%}]<br>mean cost %{y:.4f} "
                          "[%{customdata[4]:.4f}, %{customdata[5]:.4f}]"
                          + ("<br>on the front" if on else "<br>dominated") + "<extra></extra>"))
    front = points[points[member]].sort_values(["recovery", "mean_cost"])
    if len(front) > 1:
        fig.add_trace(go.Scatter(x=front["recovery"], y=front["mean_cost"], mode="lines", name="front",
                                 line=dict(color="#333333", dash="dot", shape="hv"), hoverinfo="skip"))
    fig.update_layout(height=480, margin=dict(l=10, r=10, t=30, b=10),
                      xaxis=dict(title="secret recovery on test (lower = more private)", tickformat=".0%"),
                      yaxis=dict(title="mean cost on test (lower = more useful)"),
                      legend=dict(title="model"))
    return fig


def cost_difference_heatmap(diff: pd.DataFrame, task: str, view: str) -> go.Figure:
    """Mean test cost of ``view`` minus full native for ``task``, per model and cost profile, as a diverging heatmap;
    ✓ marks non-inferiority."""
    d = diff[(diff["task"] == task) & (diff["view_a"] == view)]
    models = sorted(d["model"].unique())
    profiles = profile_order(d["profile"])
    grid = d.set_index(["model", "profile"])
    z = np.array([[grid.loc[(m, p), "difference"] for p in profiles] for m in models])
    lo = np.array([[grid.loc[(m, p), "ci_low"] for p in profiles] for m in models])
    hi = np.array([[grid.loc[(m, p), "ci_high"] for p in profiles] for m in models])
    ni = np.array([[bool(grid.loc[(m, p), "noninferior"]) for p in profiles] for m in models])
    text = [[f"{z[i, j]:+.3f}{' ✓' if ni[i, j] else ''}" for j in range(len(profiles))] for i in range(len(models))]
    bound = float(np.nanmax(np.abs(z))) if z.size else 1.0
    fig = go.Figure(go.Heatmap(
        z=z, x=plot_texts(profiles), y=plot_texts(models), text=text, texttemplate="%{text}", meta=plot_text(view),
        colorscale=DIVERGING, zmid=0,
        zmin=-bound, zmax=bound, colorbar=dict(title="Δ cost"),
        customdata=np.dstack([lo, hi, np.where(ni, "yes", "no")]),
        hovertemplate="%{y} · %{x}<br>%{meta} − full_native: %{z:+.4f}<br>95% interval "
                      "[%{customdata[0]:+.4f}, %{customdata[1]:+.4f}]<br>non-inferior: %{customdata[2]}<extra></extra>"))
    fig.update_layout(height=max(220, 60 + 34 * len(models)), margin=dict(l=10, r=10, t=10, b=10),
                      yaxis=dict(autorange="reversed"))
    return fig


def defense_figure(res: pd.DataFrame, colours: dict[str, str]) -> go.Figure:
    """Paper Figure 10: defense-aware test recovery per model and defense with 95% intervals, and the 50% guessing
    line."""
    fig = go.Figure()
    for model, d in res.groupby("model", sort=True):
        d = d.set_index("defense").reindex([o for o in DEFENSE_ORDER if o in set(d["defense"])]).reset_index()
        fig.add_trace(go.Scatter(
            name=plot_text(model), x=[DEFENSE_LABELS[o] for o in d["defense"]], y=d["accuracy"],
            mode="markers", marker=dict(color=colours[model], size=11),     # defenses are categories: no lines
            error_y=dict(type="data", symmetric=False, array=d["ci_high"] - d["accuracy"],
                         arrayminus=d["accuracy"] - d["ci_low"]),
            customdata=np.column_stack([d["ci_low"], d["ci_high"], d["diff_vs_native"].fillna(0)]),
            hovertemplate="%{fullData.name} · %{x}<br>recovery %{y:.1%} [%{customdata[0]:.1%}, %{customdata[1]:.1%}]"
                                  "<br>vs native %{customdata[2]:+.1%}<extra></extra>"))
    fig.add_hline(y=0.5, line_dash="dash", line_color="#555555", annotation_text="50%: guessing",
                  annotation_position="bottom left")
    fig.update_layout(height=430, margin=dict(l=10, r=10, t=30, b=10), legend=dict(title="model"),
                      scattermode="group", scattergap=0.35,     # each model's point side by side per defense
                      yaxis=dict(title="defense-aware secret recovery (test)", tickformat=".0%", range=[0.4, 1.02]))
    return fig


def f1_figure(numeric: pd.DataFrame) -> go.Figure:
    """Complete and graded F1 per detector (best complete F1 first) as grouped bars with 95% bootstrap intervals."""
    d = numeric.sort_values("complete_f1", ascending=False)
    fig = go.Figure()
    for col, name, colour in (("complete_f1", "complete F1", "#0072B2"), ("graded_f1", "graded F1", "#E69F00")):
        err = {}
        if f"{col}_ci_low" in d:
            err = dict(type="data", symmetric=False, array=d[f"{col}_ci_high"] - d[col],
                       arrayminus=d[col] - d[f"{col}_ci_low"])
        fig.add_bar(name=name, x=plot_texts(d["detector"]), y=d[col], marker_color=colour, error_y=err,
                    customdata=d[[f"{col}_ci_low", f"{col}_ci_high"]],
                    hovertemplate="%{x}<br>" + name + ": %{y:.3f}<br>95% CI [%{customdata[0]:.3f}, "
                                  "%{customdata[1]:.3f}]<extra></extra>")
    fig.update_layout(barmode="group", height=340, margin=dict(l=10, r=10, t=30, b=10),
                      yaxis=dict(title="F1", range=[0, 1]), legend=dict(orientation="h", y=1.12))
    return fig
