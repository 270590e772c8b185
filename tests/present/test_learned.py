"""The learned-WCPQ presentation (qlb.present.learned) on hand-made tables: the numbers it shows
are the stored ones, and its sentence says what the rows say, including a broken budget, a
cheaper release and a model without costs."""
from __future__ import annotations

import numpy as np
import pandas as pd

from qlb.present.learned import learned_points, learned_sentence, table15, verification_table


def _res(rows):
    cols = ["model", "defense", "accuracy", "ci_low", "ci_high", "diff_vs_native", "diff_ci_low", "diff_ci_high",
            "coverage"]
    return pd.DataFrame([dict(zip(cols, r)) for r in rows], columns=cols)


def _costs(model, by_defense):
    return pd.DataFrame([{"model": model, "defense": d, "recipient": "frozen", "task": t, "profile": "authored",
                          "mean_cost": c} for d, cs in by_defense.items() for t, c in zip(
                              ("selective", "clarification", "asymmetric"), cs)])


RES = _res([("m", "native", 0.70, 0.65, 0.75, None, None, None, None),
            ("m", "wcpq", 0.55, 0.50, 0.60, -0.15, -0.2, -0.1, 1.0),
            ("m", "wcpq learned 0 no pair", 0.53, 0.49, 0.57, -0.17, -0.22, -0.12, 0.95),
            ("m", "wcpq learned 0.5 paired", 0.51, 0.47, 0.55, -0.19, -0.24, -0.14, 0.9)])
COSTS = _costs("m", {"native": (0.3, 0.1, 0.2), "wcpq": (0.3, 0.1, 0.2), "wcpq learned 0 no pair": (0.3, 0.1, 0.2),
                     "wcpq learned 0.5 paired": (0.3, 0.4, 0.2)})
INFO = pd.DataFrame([{"model": "m", "domain": d, "defense": ep, "budget": b, "js_weight": w, "seed": 19,
                      "proxy": '{"19": [0.55, 0.69], "71": [0.6, 0.68]}', "pool": 100, "deployed": 64, "guarded": 0,
                      "available": 90, "covered": 85, "max_cost_increase": inc}
                     for d in ("a", "b") for ep, b, w, inc in (("wcpq learned 0 no pair", 0.0, 0.0, 0.0),
                                                               ("wcpq learned 0.5 paired", 0.5, 2.0, 0.4))])


def test_points_table_and_sentence_from_the_rows():
    pts = learned_points(RES, COSTS)
    assert list(pts["defense"]) == ["wcpq", "wcpq learned 0 no pair", "wcpq learned 0.5 paired"]
    assert np.isclose(pts.loc[2, "cost_change"], 0.1) and np.isclose(pts.loc[2, "mean_cost"], 0.3)
    t = table15(pts)
    assert list(t.columns) == ["mapper", "m"]
    assert list(t["mapper"]) == ["WCPQ strict", "budget 0 · no pair loss", "budget 0.5 · pair loss"]
    assert t.set_index("mapper").loc["budget 0.5 · pair loss", "m"] == "51.0% [47.0, 55.0]"
    two = table15(pd.concat([pts, pts[pts["kind"] == "strict"].assign(model="a")]))
    assert list(two.columns) == ["mapper", "a", "m"] and list(two["a"]) == ["55.0% [50.0, 60.0]", "—", "—"]
    many = table15(pd.concat([pts.assign(model=m) for m in "abcd"]))           # more models than mappers
    assert list(many.columns) == ["model", *t["mapper"]] and list(many["model"]) == list("abcd")
    assert many.iloc[3]["budget 0.5 · pair loss"] == "51.0% [47.0, 55.0]"
    text = learned_sentence(pts, INFO)
    assert "secret recovery is 51.0% to 53.0% (WCPQ strict: 55.0%)" in text
    assert "At budget 0, the frozen recipients pay what they pay on the native release." in text
    assert "up to 0.100 cost units more per case" in text
    assert "0.00 review costs at budget 0, 0.40 review costs at budget 0.5" in text
    v = verification_table(INFO)
    assert np.isclose(v.loc[0, "coverage"], 170 / 180) and v.loc[1, "largest cost increase"] == 0.4


def test_the_sentence_names_a_broken_budget_a_cheaper_release_and_skips_missing_costs():
    broken = INFO.assign(max_cost_increase=np.where(INFO["budget"] == 0.5, 0.7, 0.0))
    cheaper = _costs("m", {"native": (0.3, 0.1, 0.2), "wcpq": (0.3, 0.1, 0.2),
                           "wcpq learned 0 no pair": (0.3, 0.07, 0.2), "wcpq learned 0.5 paired": (0.3, 0.1, 0.2)})
    text = learned_sentence(learned_points(RES, cheaper), broken)
    assert "A release BROKE its budget: 0.70 review costs at budget 0.5 (m, a)" in text
    assert "pay up to 0.010 cost units less per case" in text
    no_costs = learned_sentence(learned_points(RES, cheaper.iloc[:0]), INFO)
    assert "nan" not in no_costs and "At budget" not in no_costs


def test_figure_11_one_trace_per_model_and_mapper_with_escaped_names():
    from qlb.present.figures import learned_figure

    res = RES.assign(model="<b>m</b>")
    pts = learned_points(res, COSTS.assign(model="<b>m</b>"))
    fig = learned_figure(pts)
    data = list(fig.data)                                            # a trace per model and mapper, nothing else
    assert [t.name for t in data] == ["WCPQ strict", "budget 0 · no pair loss", "budget 0.5 · pair loss"]
    assert all(t.meta[0] == "&lt;b&gt;m&lt;/b&gt;" for t in data)   # the model, escaped, named in the hover
    assert "<b>m</b>" not in str(fig.to_dict())                      # nowhere unescaped (panel title included)
    assert [a.text for a in fig.layout.annotations if a.text == "&lt;b&gt;m&lt;/b&gt;"]
    assert [t.marker.symbol for t in data] == ["diamond", "circle", "square"]
    assert list(data[2].y) == [0.51] and all(t.mode == "markers" and t.text is None for t in data)    # no labels
    assert [t.showlegend for t in data] == [True, True, True]
    assert [s.name for s in fig.layout.shapes] == ["50%: guessing"]
    assert "mapper" in fig.layout.legend.title.text


def test_figure_11_with_nine_models_is_one_panel_each_and_reads_without_labels():
    """The board review: nine models in one plot were nine colours by three symbols with budget labels piled on the
    markers. Now a panel per model (three to a row), each mapper once in the legend (shape: mapper, colour: budget,
    light to dark), no text on a marker, the exact cost in the hover, and the guessing line in every panel."""
    from qlb.present.figures import BUDGET_RAMP, STRICT_COLOUR, learned_figure

    res = _res([("m", "native", 0.70, 0.65, 0.75, None, None, None, None),
                ("m", "wcpq", 0.55, 0.50, 0.60, -0.15, -0.2, -0.1, 1.0)]
               + [("m", f"wcpq learned {b:g} {k}", 0.53, 0.49, 0.57, -0.17, -0.22, -0.12, 0.95)
                  for b in (0, 0.2, 0.5) for k in ("no pair", "paired")])
    costs = _costs("m", {d: (0.3, 0.1, 0.2) for d in res["defense"]})
    one = learned_points(res, costs)
    models = [f"sim-{i}" for i in range(9)]
    pts = pd.concat([one.assign(model=m) for m in models], ignore_index=True)
    fig = learned_figure(pts)
    assert len(fig.data) == 9 * 7 and all(t.mode == "markers" and t.text is None for t in fig.data)
    titles = [a.text for a in fig.layout.annotations]
    assert models == [t for t in titles if t.startswith("sim-")]                 # one panel each, in order
    axes = {t.xaxis for t in fig.data}
    assert len(axes) == 9 and fig.layout.xaxis9.domain[0] > 0.6 and fig.layout.yaxis7.domain[1] < 0.4  # 3 x 3
    legend = [t for t in fig.data if t.showlegend]
    assert [t.name for t in legend] == ["WCPQ strict", "budget 0 · no pair loss", "budget 0.2 · no pair loss",
                                        "budget 0.5 · no pair loss", "budget 0 · pair loss", "budget 0.2 · pair loss",
                                        "budget 0.5 · pair loss"]
    colour = {t.name: t.marker.color for t in legend}
    assert colour["WCPQ strict"] == STRICT_COLOUR
    assert [colour[f"budget {b} · pair loss"] for b in ("0", "0.2", "0.5")] == [BUDGET_RAMP[0], BUDGET_RAMP[2],
                                                                               BUDGET_RAMP[4]]
    assert colour["budget 0.2 · pair loss"] == colour["budget 0.2 · no pair loss"]        # colour: the budget only
    # equal costs are drawn at one position (the stored cost), told apart by nested sizes; the hover gives the cost
    first = [t for t in fig.data if t.xaxis == "x"]
    assert len({t.x[0] for t in first}) == 1 and np.isclose(first[0].x[0], 0.2)
    assert all(np.isclose(t.customdata[0][2], 0.2) for t in first) and "customdata[2]" in first[0].hovertemplate
    assert [s.name for s in fig.layout.shapes] == ["50%: guessing"] * 9
    assert [s.showlegend for s in fig.layout.shapes] == [True] + [False] * 8


def test_the_sentence_says_when_the_pair_loss_changes_nothing():
    def with_pair(paired: float, no_pair: float) -> str:
        res = _res([("m", "native", 0.70, 0.65, 0.75, None, None, None, None),
                    ("m", "wcpq learned 0.2 no pair", no_pair, 0.5, 0.6, -0.1, -0.2, -0.05, 0.95),
                    ("m", "wcpq learned 0.2 paired", paired, 0.5, 0.6, -0.1, -0.2, -0.05, 0.95)])
        return learned_sentence(learned_points(res, COSTS.iloc[:0]), INFO.iloc[:0])
    assert "The pair loss leaves recovery unchanged (within 0.05 points) over 1 model–budget pair." in with_pair(
        0.55, 0.5501)
    assert "The pair loss changes recovery by -2.0 points (1 model–budget pair)." in with_pair(0.53, 0.55)


def test_figure_11_axes_hold_the_points_and_never_go_negative():
    """One variant at the strict cost: the cost axis was -1 to 1 and recovery -50% to 150% (Plotly's range for a
    single value); now cost starts at zero or above and recovery stays in 0-100% around the points and guessing."""
    from qlb.present.figures import learned_figure

    pts = learned_points(RES, COSTS)
    fig = learned_figure(pts)
    x0, x1 = fig.layout.xaxis.range                                  # the one model's panel
    y0, y1 = fig.layout.yaxis.range
    assert 0 <= x0 <= pts["mean_cost"].min() and x1 > pts["mean_cost"].max()
    assert 0 <= y0 <= min(pts["ci_low"].min(), 0.5) and max(pts["ci_high"].max(), 0.5) <= y1 <= 1
    one = learned_figure(pts.iloc[:1].assign(mean_cost=0.0))
    assert one.layout.xaxis.range[0] == 0 and one.layout.xaxis.range[1] > 0
    bare = pts.assign(ci_low=float("nan"), ci_high=float("nan"), accuracy=[0.92] + [0.55] * (len(pts) - 1))
    bare = learned_figure(bare)                   # no intervals: the points still fit
    assert bare.layout.yaxis.range[0] <= 0.5 and bare.layout.yaxis.range[1] >= 0.92


def test_an_unchanged_recovery_with_its_interval_reads_in_one_bracket():
    from qlb.present.report import recovery_change
    assert recovery_change(pd.Series([0.01]), interval=(-0.3, 0.4)) == (
        "leaves recovery unchanged (within 0.05 points; 95% interval -0.3 to +0.4)")


def test_figure_11_draws_equal_costs_at_one_position_and_its_caption_says_so():
    """A walk-through: WCPQ strict was drawn at 0.6081 and budget 0 at 0.6085 on a cost axis zoomed to 0.60-0.61,
    although both cost 0.6083 (a nudge in cost units, so that the points would not hide one another). Every point
    now sits at its stored cost; mappers at one cost are told apart by nested marker sizes and cap widths (the
    strict diamond largest, drawn first; the pair loss's squares smallest, drawn last), and the caption says so."""
    from qlb.present.figures import learned_figure
    from qlb.present.learned import figure11_caption

    res = _res([("m", "native", 0.70, 0.65, 0.75, None, None, None, None),
                ("m", "wcpq", 0.688, 0.562, 0.812, -0.19, -0.31, -0.04, 0.96),
                ("m", "wcpq learned 0 no pair", 0.646, 0.521, 0.771, -0.23, -0.35, -0.1, 0.96),
                ("m", "wcpq learned 0 paired", 0.60, 0.5, 0.7, -0.2, -0.3, -0.1, 0.96),
                ("m", "wcpq learned 0.5 paired", 0.55, 0.45, 0.65, -0.25, -0.35, -0.15, 0.9)])
    same = (0.6083, 0.6083, 0.6083)
    costs = _costs("m", {"native": same, "wcpq": same, "wcpq learned 0 no pair": same, "wcpq learned 0 paired": same,
                         "wcpq learned 0.5 paired": (0.6083, 0.7, 0.6083)})
    pts = learned_points(res, costs)
    fig = learned_figure(pts)
    drawn = {t.name: t.x[0] for t in fig.data}
    stored = dict(zip(["WCPQ strict" if k == "strict" else n for k, n in zip(
        pts["kind"], ["budget 0 · no pair loss" if d.endswith("0 no pair") else "budget 0 · pair loss"
                      if d.endswith("0 paired") else "budget 0.5 · pair loss" for d in pts["defense"]])],
        pts["mean_cost"]))
    assert drawn == stored                                            # each at its stored cost, exactly
    assert drawn["WCPQ strict"] == drawn["budget 0 · no pair loss"] == drawn["budget 0 · pair loss"]
    assert drawn["budget 0.5 · pair loss"] > drawn["WCPQ strict"]
    sizes = [t.marker.size for t in fig.data]                         # drawn in this order: largest underneath
    assert sizes == sorted(sizes, reverse=True) and sizes[0] > sizes[1] > sizes[2]
    assert fig.data[0].error_y.width > fig.data[1].error_y.width > fig.data[2].error_y.width
    caption = figure11_caption("run-1")
    assert "side by side" not in caption and "exact cost" in caption and "one vertical line" in caption
    assert caption.startswith("Secret recovery") and caption.endswith("Run run-1. (The TUPLE paper's Figure 11.)")
