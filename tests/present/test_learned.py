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
    fig = learned_figure(pts, {"<b>m</b>": "#123456"})
    data = [t for t in fig.data if t.hovertemplate]                  # the points; the rest is the legend's key
    names = [t.name for t in data]
    assert names == ["&lt;b&gt;m&lt;/b&gt; · WCPQ strict", "&lt;b&gt;m&lt;/b&gt; · learned, no pair loss",
                     "&lt;b&gt;m&lt;/b&gt; · learned, pair loss"]
    assert [t.marker.symbol for t in data] == ["diamond", "circle", "square"]
    assert list(data[2].y) == [0.51] and list(data[2].text) == ["0.5"]
    assert all(t.mode == "markers+text" and t.showlegend is False for t in data)
    key = [t for t in fig.data if not t.hovertemplate]                # one entry per model, one per mapper
    assert [t.name for t in key] == ["&lt;b&gt;m&lt;/b&gt;", "WCPQ strict", "learned, no pair loss",
                                     "learned, pair loss"]
    assert [t.legendgroup for t in key] == ["&lt;b&gt;m&lt;/b&gt;", "mapper", "mapper", "mapper"]
    assert [s.name for s in fig.layout.shapes] == ["50%: guessing"]


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
    fig = learned_figure(pts, {"m": "#123456"})
    x0, x1 = fig.layout.xaxis.range
    y0, y1 = fig.layout.yaxis.range
    assert 0 <= x0 <= pts["mean_cost"].min() and x1 > pts["mean_cost"].max()
    assert 0 <= y0 <= min(pts["ci_low"].min(), 0.5) and max(pts["ci_high"].max(), 0.5) <= y1 <= 1
    one = learned_figure(pts.iloc[:1].assign(mean_cost=0.0), {"m": "#123456"})
    assert one.layout.xaxis.range[0] == 0 and one.layout.xaxis.range[1] > 0
    bare = pts.assign(ci_low=float("nan"), ci_high=float("nan"), accuracy=[0.92] + [0.55] * (len(pts) - 1))
    bare = learned_figure(bare, {"m": "#123456"})                   # no intervals: the points still fit
    assert bare.layout.yaxis.range[0] <= 0.5 and bare.layout.yaxis.range[1] >= 0.92


def test_an_unchanged_recovery_with_its_interval_reads_in_one_bracket():
    from qlb.present.report import recovery_change
    assert recovery_change(pd.Series([0.01]), interval=(-0.3, 0.4)) == (
        "leaves recovery unchanged (within 0.05 points; 95% interval -0.3 to +0.4)")
