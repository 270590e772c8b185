"""Plotly figures shared by the pages and the HTML report: one visual language (a colour per
release view and per model, colour-blind safe palettes, hover values with intervals).

Plotly draws a subset of HTML in every label (axis ticks, legend, hover, annotations): ``<a href>``
becomes a link, ``<b>``, ``<br>`` format. Text from data (model, detector, mechanism, world names)
therefore goes through ``plot_text`` before it reaches a figure, and never into a hovertemplate,
where ``%{...}`` would be read as well."""
from __future__ import annotations

import html
import textwrap

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from qlb.tuple.costs import profile_order
from qlb.present.names import DEFENSE_NAMES, OUTCOME_NAMES, PROFILE_HELP, VIEW_NAMES, as_shown, chance_pct
from qlb.present.names import name as display_name
from qlb.present.learned import column_name
from qlb.present.palette import DIVERGING, VIEW_COLOURS, VIEW_SYMBOLS
from qlb.tuple.refusal import UNIFORM_REFERENCE
from qlb.tuple.release_views import VIEWS

ROUTE_COLOURS = {"direct_share": "#0072B2", "residual_share": "#E69F00"}
DEFENSE_ORDER = ["native", "quantize", "top2", "temperature", "noise", "wcpq grid", "wcpq"]


def plot_text(value: object) -> str:
    """Data text for a Plotly label: ``& < >`` as HTML entities, which Plotly shows as the
    characters themselves, so a name like ``<a href=...>`` is shown, not followed."""
    return html.escape(str(value), quote=False)


def plot_texts(values) -> list[str]:
    """``plot_text`` of each value (a column of names for an axis or a hover)."""
    return [plot_text(v) for v in values]


def reference_line(fig: go.Figure, y: float, label: str) -> None:
    """A dashed reference line at ``y`` across the plot, named in the legend (last) rather than by a label printed
    on the plot, where it would sit on the bars or markers near it. The line is a shape with a legend entry, not a
    trace, so it takes no slot among grouped markers."""
    fig.add_hline(y=y, line_dash="dash", line_color="#555555", layer="above", showlegend=True, name=label,
                  legendrank=2000)


def routes_figure(routes: pd.DataFrame, reference: float = UNIFORM_REFERENCE) -> go.Figure:
    """Paper Figure 12: per model, the direct and the residual recovery route stacked as shares of n, with the
    uniform-guess line at ``reference`` (1/M for M mechanisms per domain; 1/16 for TUPLE)."""
    fig = go.Figure()
    for col, outcome in (("direct_share", "direct_correct"), ("residual_share", "residual_unique_correct")):
        name = OUTCOME_NAMES[outcome]
        fig.add_bar(name=name, x=plot_texts(routes["model"]), y=routes[col], marker_color=ROUTE_COLOURS[col],
                    customdata=routes[["n", "direct_correct", "residual_unique_correct", "overall_recovery"]],
                    hovertemplate="%{x}<br>" + name + ": %{y:.1%} of %{customdata[0]} probes"
                                  "<br>recovered overall: %{customdata[3]:.1%}<extra></extra>")
    reference_line(fig, reference, f"uniform guess {chance_pct(reference)}")
    fig.update_layout(barmode="stack", height=380, margin=dict(l=10, r=10, t=30, b=10),
                      yaxis=dict(title="share of refusal probes (%)", tickformat=".0%", range=[0, 1.05]),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0))
    return fig


def recovery_figure(pooled: pd.DataFrame) -> go.Figure:
    """Paper Figure 4: pooled test recovery per model and release view with 95% intervals, and the 50% guessing line."""
    fig = go.Figure()
    for view in VIEWS:
        d = pooled[pooled["view"] == view]
        if d.empty:
            continue
        fig.add_trace(go.Scatter(
            name=VIEW_NAMES[view], x=plot_texts(d["model"]), y=d["accuracy"], mode="markers",
            marker=dict(color=VIEW_COLOURS[view], size=10),
            error_y=dict(type="data", symmetric=False, array=d["ci_high"] - d["accuracy"],
                         arrayminus=d["accuracy"] - d["ci_low"]),
            customdata=d[["ci_low", "ci_high", "n"]],
            hovertemplate="%{x} · " + VIEW_NAMES[view] + "<br>recovery %{y:.1%} [%{customdata[0]:.1%}, %{customdata[1]:.1%}]"
                          "<br>n = %{customdata[2]}<extra></extra>"))
    reference_line(fig, 0.5, "50%: guessing between two")
    fig.update_layout(height=420, margin=dict(l=10, r=10, t=30, b=10), scattermode="group",
                      yaxis=dict(title="secret recovery on test worlds (%)", tickformat=".0%", range=[0.3, 1.02]),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0,
                                  title=dict(text="release view", side="top")))
    return fig


LOG_COST_RATIO = 4.0      # a front whose costs span more than this factor gets a log cost axis
FRONT_GREY = "#666666"    # the release-view symbols in the legend


def _rgba(colour: str, alpha: float) -> str:
    """A ``#rrggbb`` colour with transparency, for the whiskers of dominated points."""
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def front_figure(points: pd.DataFrame, member: str, colours: dict[str, str], every_view: bool) -> go.Figure:
    """Test recovery (x, %) against mean cost per case (y, cost units) per (model, view) point with 95% intervals on
    both axes. Points where ``member`` is true are outlined, named beside the marker and joined by the dotted front;
    dominated points stay in full colour, smaller. The legend names each model (colour) and, with
    ``every_view``, each release view (symbol). When the costs span more than ``LOG_COST_RATIO`` the cost axis is
    logarithmic (``fig.layout.yaxis.type == "log"``), so a far costlier release does not squash the rest."""
    fig = go.Figure()
    for (model, view), d in points.groupby(["model", "view"], sort=True):
        fig.add_trace(_front_point(d, model, view, bool(d[member].iloc[0]), colours[model], every_view))
    front = points[points[member]].sort_values(["recovery", "mean_cost"])
    labels = front_labels(front, every_view)
    marks = (labels["number"].astype(str).tolist() if len(labels) > NAMED_FRONT_POINTS
             else plot_texts(labels["label"]))     # many points: numbers, named in front_key's list beside the chart
    fig.add_trace(go.Scatter(x=labels["recovery"], y=labels["mean_cost"], mode="text", showlegend=False,
                             text=["\u2003" + t for t in marks], hoverinfo="skip",   # clear of the marker
                             textfont=dict(size=12, color="#111111"),
                             textposition=["top right" if i % 2 == 0 else "bottom right" for i in range(len(labels))]))
    if len(front) > 1:
        fig.add_trace(go.Scatter(x=front["recovery"], y=front["mean_cost"], mode="lines",
                                 name="the front (non-dominated)", legendrank=1,
                                 line=dict(color="#333333", dash="dot", shape="hv"), hoverinfo="skip"))
    if every_view:
        legend_key(fig, points["model"], colours, "release view",
                   [(VIEW_NAMES.get(v, plot_text(v)), VIEW_SYMBOLS[v]) for v in VIEWS if v in set(points["view"])])
    costs = points["mean_cost"][points["mean_cost"] > 0]
    log = len(costs) > 1 and costs.max() > LOG_COST_RATIO * costs.min()
    if log:       # 1-2-5 ticks only: a log axis's minor digits would crowd the labels
        lo, hi = points["cost_ci_low"][points["cost_ci_low"] > 0].min(), points["cost_ci_high"].max()
        ticks = [m * 10.0 ** e for e in range(-3, 4) for m in (1, 2, 5) if lo / 2 <= m * 10.0 ** e <= hi * 2]
        fig.update_yaxes(tickvals=ticks, ticktext=[f"{t:g}" for t in ticks])
    fig.update_layout(height=560, margin=dict(l=10, r=10, t=30, b=10),
                      xaxis=dict(title="secret recovery on test worlds (%), lower = more private", tickformat=".0%"),
                      yaxis=dict(title="mean cost per case (cost units" + (", log scale" if log else "")
                                       + "), lower = more useful", type="log" if log else "linear"),
                      legend=dict(title=dict(text="" if every_view else "model (full native release)", side="top"),
                                  tracegroupgap=2, orientation="h", yanchor="bottom", y=1.02, x=0))
    return fig


NAMED_FRONT_POINTS = 4     # more distinct points on a front than this: the chart numbers them, front_key names them


def front_key(front: pd.DataFrame, every_view: bool) -> list[str]:
    """The front's points as the chart marks them: their names, or ``1 name``... when the chart numbers them."""
    labels = front_labels(front, every_view)
    if len(labels) > NAMED_FRONT_POINTS:
        return [f"{n} {label}" for n, label in zip(labels["number"], labels["label"])]
    return labels["label"].tolist()


def front_labels(front: pd.DataFrame, every_view: bool) -> pd.DataFrame:
    """One label per distinct point of the front (recovery, mean_cost, label; plain text): releases that sit on the
    same spot share it, as ``view (k models)``, ``model · view, view`` or ``k releases``."""
    rows = []
    for (x, y), d in front.groupby(["recovery", "mean_cost"], sort=True):
        models = sorted(set(d["model"]))
        views = sorted(set(d["view"]), key=lambda v: (VIEWS.index(v) if v in VIEWS else len(VIEWS), v))
        shown = [VIEW_NAMES.get(v, v) for v in views]
        if len(models) == 1:
            label = models[0] + (f" · {', '.join(shown)}" if every_view else "")
        elif len(views) == 1:
            label = (f"{shown[0]} " if every_view else "") + f"({len(models)} models)"
        else:
            label = f"{len(d)} releases"
        rows.append({"recovery": x, "mean_cost": y, "label": label, "number": len(rows) + 1})
    return pd.DataFrame(rows, columns=["recovery", "mean_cost", "label", "number"])


def _front_point(d: pd.DataFrame, model: str, view: str, on: bool, colour: str, every_view: bool) -> go.Scatter:
    """One (model, view) point of the front chart, with its whiskers and hover."""
    label = plot_text(model) + (f" · {VIEW_NAMES.get(view, plot_text(view))}" if every_view else "")
    status = "on the front" if on else "dominated: another point is at least as good on both axes"
    return go.Scatter(
        x=d["recovery"], y=d["mean_cost"], mode="markers", name=label, legendgroup=plot_text(model),
        showlegend=not every_view,
        marker=dict(color=colour, size=14 if on else 10, symbol=VIEW_SYMBOLS[view],
                    line=dict(color="#000000" if on else "#444444", width=2 if on else 0.75)),
        error_x=dict(type="data", symmetric=False, array=d["recovery_ci_high"] - d["recovery"],
                     arrayminus=d["recovery"] - d["recovery_ci_low"], thickness=1.5 if on else 1,
                     color=_rgba(colour, 0.9 if on else 0.45)),
        error_y=dict(type="data", symmetric=False, array=d["cost_ci_high"] - d["mean_cost"],
                     arrayminus=d["mean_cost"] - d["cost_ci_low"], thickness=1.5 if on else 1,
                     color=_rgba(colour, 0.9 if on else 0.45)),
        customdata=d[["recovery_ci_low", "recovery_ci_high", "cost_ci_low", "cost_ci_high"]].assign(label=label),
        hovertemplate="<b>%{customdata[4]}</b><br>secret recovery %{x:.1%} [%{customdata[0]:.1%}, "
                      "%{customdata[1]:.1%}]<br>mean cost per case %{y:.3f} [%{customdata[2]:.3f}, "
                      f"%{{customdata[3]:.3f}}] cost units<br>{status}<extra></extra>")


def legend_key(fig: go.Figure, models, colours: dict[str, str], group: str, symbols: list[tuple[str, str]],
               title: str | None = None) -> None:
    """Legend-only entries: one per model (its colour; clicking hides all its points) and one per (name, symbol) of
    ``symbols`` in legend group ``group`` (titled ``title``, default "``group`` (symbol)"), so every point of a chart
    that crosses models with symbols can be read from a short legend."""
    for i, model in enumerate(sorted(set(models))):
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=plot_text(model),
                                 legendgroup=plot_text(model),
                                 legendgrouptitle_text="model (colour)" if i == 0 else None,
                                 marker=dict(color=colours[model], size=10, symbol="circle",
                                             line=dict(color="#444444", width=0.75)), hoverinfo="skip"))
    for i, (label, symbol) in enumerate(symbols):
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=label, legendgroup=group,
                                 legendgrouptitle_text=(title or f"{group} (symbol)") if i == 0 else None,
                                 marker=dict(color=FRONT_GREY, size=10, symbol=symbol), hoverinfo="skip"))


def wrapped(label: str, width: int = 14) -> str:
    """A display name broken into Plotly lines (``<br>``) of about ``width`` characters, for a category axis."""
    return "<br>".join(textwrap.wrap(label, width, break_long_words=False, break_on_hyphens=False)) or label


def cost_difference_heatmap(diff: pd.DataFrame, task: str, view: str, bound: float | None = None,
                            described: dict[str, str] | None = None) -> go.Figure:
    """Mean test cost per case of ``view`` minus full native for ``task`` (cost units), per model (rows) and cost
    profile (columns, display names; the hover says what each profile changes), as a diverging heatmap: blue where
    the lower-information release is cheaper, red where it costs more; ✓ marks non-inferiority (``described``: what each
    profile changes, ``qlb.present.names.profile_descriptions``; default TUPLE's). The colour scale runs
    to ``bound`` either side of 0 (default: this task's largest difference), so heatmaps drawn side by side with one
    bound share one scale."""
    d = diff[(diff["task"] == task) & (diff["view_a"] == view)]
    models = sorted(d["model"].unique())
    profiles = profile_order(d["profile"])
    grid = d.set_index(["model", "profile"])
    z = as_shown(np.array([[grid.loc[(m, p), "difference"] for p in profiles] for m in models]), 3)
    lo = as_shown(np.array([[grid.loc[(m, p), "ci_low"] for p in profiles] for m in models]), 3)
    hi = as_shown(np.array([[grid.loc[(m, p), "ci_high"] for p in profiles] for m in models]), 3)
    ni = np.array([[bool(grid.loc[(m, p), "noninferior"]) for p in profiles] for m in models])
    text = [[f"{z[i, j]:+z.3f}{' ✓' if ni[i, j] else ''}" for j in range(len(profiles))] for i in range(len(models))]
    described = PROFILE_HELP if described is None else described
    explained = np.array([[plot_text(described.get(p, "")) for p in profiles] for _ in models], dtype=object)
    columns = [plot_text(display_name("profile", p)) for p in profiles]
    if bound is None:
        bound = max(float(np.nanmax(np.abs(z))), 1e-3) if z.size else 1.0      # all zero: a scale, not Plotly's auto
    fig = go.Figure(go.Heatmap(
        z=z, x=columns, y=plot_texts(models), text=text, texttemplate="%{text}",
        meta=plot_text(VIEW_NAMES.get(view, view)), colorscale=DIVERGING, zmid=0, zmin=-bound, zmax=bound,
        colorbar=dict(title=dict(text="extra cost<br>per case<br>(cost units)", side="top"), thickness=12),
        customdata=np.dstack([lo, hi, np.where(ni, "yes", "no"), explained]),
        hovertemplate="%{y} · %{x}<br>%{meta} − full native: %{z:+.3f} per case<br>95% interval "
                      "[%{customdata[0]:+.3f}, %{customdata[1]:+.3f}]<br>non-inferior: %{customdata[2]}"
                      "<br>%{customdata[3]}<extra></extra>"))
    fig.update_layout(height=max(260, 100 + 34 * len(models)), margin=dict(l=10, r=10, t=10, b=10),
                      xaxis=dict(title="cost profile", tickmode="array", tickvals=columns, tickangle=0,
                                 ticktext=[wrapped(c, 10) for c in columns], tickfont=dict(size=11)),
                      yaxis=dict(title="model", autorange="reversed"))
    return fig


def defense_figure(res: pd.DataFrame, colours: dict[str, str]) -> go.Figure:
    """Paper Figure 10: defense-aware test recovery (%) per model and defense with 95% intervals, and the 50% guessing
    line. The defenses are categories, so each model's points are markers side by side, never joined by lines."""
    fig = go.Figure()
    labels = [DEFENSE_NAMES[o] for o in DEFENSE_ORDER if o in set(res["defense"])]
    for model, d in res.groupby("model", sort=True):
        d = d.set_index("defense").reindex([o for o in DEFENSE_ORDER if o in set(d["defense"])]).reset_index()
        fig.add_trace(go.Scatter(
            name=plot_text(model), x=[DEFENSE_NAMES[o] for o in d["defense"]], y=d["accuracy"],
            mode="markers", marker=dict(color=colours[model], size=11, line=dict(color="#444444", width=0.75)),
            error_y=dict(type="data", symmetric=False, array=d["ci_high"] - d["accuracy"],
                         arrayminus=d["accuracy"] - d["ci_low"]),
            customdata=np.column_stack([d["ci_low"], d["ci_high"], as_shown(d["diff_vs_native"].fillna(0), 3)]),
            hovertemplate="%{fullData.name} · %{x}<br>recovery %{y:.1%} [%{customdata[0]:.1%}, %{customdata[1]:.1%}]"
                                  "<br>vs native %{customdata[2]:+.1%}<extra></extra>"))
    reference_line(fig, 0.5, "50%: guessing")
    fig.update_layout(height=470, margin=dict(l=10, r=10, t=40, b=10),
                      legend=dict(title=dict(text="model", side="top"), orientation="h", yanchor="bottom", y=1.02, x=0),
                      scattermode="group", scattergap=0.35,     # each model's point side by side per defense
                      xaxis=dict(title="defense", tickmode="array", tickvals=labels,
                                 ticktext=[wrapped(c, 11) for c in labels], tickangle=0, tickfont=dict(size=11)),
                      yaxis=dict(title="defense-aware secret recovery on test worlds (%)", tickformat=".0%",
                                 range=[0.4, 1.02]))
    return fig


LEARNED_SYMBOLS = {"strict": "diamond", "no pair": "circle", "paired": "square"}
LEARNED_KINDS = {"strict": "WCPQ strict", "no pair": "learned, no pair loss", "paired": "learned, pair loss"}
STRICT_COLOUR = "#444444"
# the budgets, smallest to largest: an ordinal ramp (Paul Tol's YlOrBr without its lightest steps, readable on white)
BUDGET_RAMP = ("#FB9A29", "#EC7014", "#CC4C02", "#993404", "#662506")
LEARNED_COLUMNS = 3          # facets per row of Figure 11
# Marker size (px) and interval cap width (px) per mapper. Points are drawn at their exact cost, so mappers that
# cost the same share one vertical line; nested sizes (the strict diamond largest, underneath; the squares of the
# pair loss smallest, on top) and cap widths keep each one visible where they meet.
LEARNED_SIZES = {"strict": 14, "no pair": 10, "paired": 7}
LEARNED_CAPS = {"strict": 10, "no pair": 6, "paired": 3}


def budget_colours(budgets) -> dict[float, str]:
    """A colour per learned budget, light (small) to dark (large), spread over ``BUDGET_RAMP``."""
    ordered = sorted({float(b) for b in budgets})
    if len(ordered) == 1:
        return {ordered[0]: BUDGET_RAMP[2]}
    steps = np.linspace(0, len(BUDGET_RAMP) - 1, len(ordered))
    return {b: BUDGET_RAMP[int(round(i))] for b, i in zip(ordered, steps)}


def learned_figure(points: pd.DataFrame) -> go.Figure:
    """Paper Figure 11, one small panel per model (``LEARNED_COLUMNS`` to a row, the model named above its panel):
    WCPQ strict and each learned variant as (mean authored cost of the frozen recipients over the three tasks,
    secret recovery with its 95% interval). The marker's shape is the mapper (diamond strict, circle without the
    pair loss, square with it) and its colour the budget (light to dark as the budget grows); the legend lists each
    mapper once, exactly as drawn, and a click hides it in every panel. No text sits on the markers: the budget is
    in the legend and the hover. Every point sits at its exact cost: mappers at the same cost (the strict mapper
    and the small budgets usually cost what the native release costs) share one vertical line, never nudged apart
    (a nudge on a cost axis zoomed to a few thousandths reads as a cost difference). Nested marker sizes and cap
    widths (``LEARNED_SIZES``, ``LEARNED_CAPS``: the strict diamond largest and underneath, the pair loss's
    squares smallest and on top) keep each mapper visible where points meet, and the hover lists every mapper
    at the hovered cost. Recovery shares one axis (and the 50% guessing line) across panels; each panel's
    cost axis fits its model's points, which sit close together. The panel titles name the models."""
    models = sorted(points["model"].unique())
    n = max(len(models), 1)
    cols = min(LEARNED_COLUMNS, n)
    rows = int(np.ceil(n / cols))
    fig = make_subplots(rows=rows, cols=cols, shared_yaxes=True, horizontal_spacing=0.035 if cols > 1 else 0.02,
                        vertical_spacing=min(0.28 / rows, 0.12) if rows > 1 else 0.0,
                        subplot_titles=[plot_text(m) for m in models] or None,
                        x_title="mean cost per case of the frozen recipients (authored costs, mean of the three tasks)",
                        y_title="defense-aware secret recovery on test worlds (%)")
    shades = budget_colours(points.loc[points["kind"] != "strict", "budget"])
    order = list(LEARNED_KINDS)
    mappers = points.assign(o=points["kind"].map(order.index))[["budget", "o", "kind", "defense"]] \
        .drop_duplicates("defense").sort_values(["o", "budget"])        # strict, then no pair, then pair loss
    mappers = mappers.assign(rank=range(len(mappers)))
    shown: set[str] = set()
    for i, model in enumerate(models):
        row, col = i // cols + 1, i % cols + 1
        d = points[points["model"] == model]
        _learned_cost_axis(fig, d["mean_cost"], row, col)
        for m in mappers.itertuples(index=False):
            p = d[d["defense"] == m.defense]
            if p.empty:
                continue
            label = LEARNED_KINDS["strict"] if m.kind == "strict" else column_name(m.defense)
            colour = STRICT_COLOUR if m.kind == "strict" else shades[float(m.budget)]
            fig.add_trace(go.Scatter(
                name=label, legendgroup=m.defense, showlegend=m.defense not in shown, legendrank=100 + m.rank,
                x=p["mean_cost"], y=p["accuracy"], mode="markers", meta=[plot_text(model), label],
                marker=dict(color=colour, size=LEARNED_SIZES[m.kind], symbol=LEARNED_SYMBOLS[m.kind],
                            line=dict(color="#222222", width=0.75)),
                error_y=dict(type="data", symmetric=False, array=p["ci_high"] - p["accuracy"],
                             arrayminus=p["accuracy"] - p["ci_low"], thickness=1, width=LEARNED_CAPS[m.kind],
                             color=colour),
                customdata=np.column_stack([p["ci_low"], p["ci_high"], p["mean_cost"]]),
                hovertemplate="<b>%{meta[0]}</b> · %{meta[1]}<br>recovery %{y:.1%} [%{customdata[0]:.1%}, "
                              "%{customdata[1]:.1%}]<br>mean cost %{customdata[2]:.3f} per case<extra></extra>"),
                row=row, col=col)
            shown.add(m.defense)
        fig.add_hline(y=0.5, row=row, col=col, line_dash="dash", line_color="#555555", line_width=1, layer="below",
                      showlegend=i == 0, name="50%: guessing", legendgroup="guessing", legendrank=2000)
    low = float(np.nanmin([*points["accuracy"], *points["ci_low"], 0.5]))      # a point without an interval too
    high = float(np.nanmax([*points["accuracy"], *points["ci_high"], 0.5]))
    fig.update_yaxes(tickformat=".0%", range=[max(0.0, low - 0.03), min(1.0, high + 0.03)], nticks=5)
    fig.update_annotations(font_size=12)                     # the panel titles and the shared axis titles
    top, bottom = 150, 60                     # the legend's lines above the panel titles; the cost title below
    height = top + bottom + rows * (300 if rows == 1 else 230)
    fig.update_layout(height=height, margin=dict(l=70, r=10, t=top, b=bottom),
                      hovermode="x",          # every mapper at the hovered cost, those on one line included
                      legend=dict(title=dict(text="mapper (shape) · budget in review costs (colour)", side="top"),
                                  orientation="h", yanchor="bottom", x=0, tracegroupgap=0,
                                  y=1 + 28 / (height - top - bottom)))        # clear of the panel titles
    return fig


def _learned_cost_axis(fig: go.Figure, cost: pd.Series, row: int, col: int) -> None:
    """A panel's cost axis: its model's points with a margin, never below zero (one point is not a ±1 axis)."""
    cost = cost.dropna()
    if cost.empty:
        return
    pad = max(0.08 * float(cost.max() - cost.min()), 0.01)
    low, high = max(0.0, float(cost.min()) - pad), float(cost.max()) + pad
    fig.update_xaxes(range=[low, high], nticks=4, row=row, col=col)


def f1_figure(numeric: pd.DataFrame) -> go.Figure:
    """Complete and graded F1 per detector (best complete F1 first) as grouped bars with 95% bootstrap intervals."""
    d = numeric.sort_values("complete_f1", ascending=False)
    fig = go.Figure()
    for col, name, colour in (("complete_f1", "complete-group F1", "#0072B2"), ("graded_f1", "graded F1", "#E69F00")):
        err = {}
        if f"{col}_ci_low" in d:
            err = dict(type="data", symmetric=False, array=d[f"{col}_ci_high"] - d[col],
                       arrayminus=d[col] - d[f"{col}_ci_low"])
        fig.add_bar(name=name, x=plot_texts(d["detector"]), y=d[col], marker_color=colour, error_y=err,
                    customdata=d[[f"{col}_ci_low", f"{col}_ci_high"]],
                    hovertemplate="%{x}<br>" + name + ": %{y:.1%}<br>95% CI [%{customdata[0]:.1%}, "
                                  "%{customdata[1]:.1%}]<extra></extra>")
    fig.update_layout(barmode="group", height=340, margin=dict(l=10, r=10, t=30, b=10),
                      yaxis=dict(title="F1 (%)", range=[0, 1], tickformat=".0%"), legend=dict(orientation="h", y=1.12))
    return fig
