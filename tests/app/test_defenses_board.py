"""The Defenses page as a privacy-board reader who has not read the TUPLE paper meets it (board review): a plain
two-sentence intro with the method in an expander (its policy count computed), this page's native figure labelled as
the defense-aware attacker's with the two native figures explained right after the findings, the learned WCPQ figure
one panel per model without labels on the markers, the codeword warning before the inspector's table, and a
one-sentence cost caption with the rest in an expander. One page render; the pure helpers on hand-made input."""
from __future__ import annotations

import re

import pandas as pd

from dashboard.widgets import md_plain

from qlb.present.defense_notes import (NATIVE_ATTACKED, codeword_note, control_sentence, method_points,
                                       release_column, restricted_sentence)
from qlb.tuple.workflows import TASKS, policy_count
from tests.app.test_pages import frames, opened, plotly_traces


def _in_order(node) -> list:
    """Every element under ``node`` in the order the page draws it."""
    children = getattr(node, "children", None)
    if not children:
        return [node]
    return [e for child in children.values() for e in _in_order(child)]


def _value(element) -> str:
    """An element's text (a markdown, caption or alert body, or an expander's label); "" for a table or chart."""
    for attr in ("value", "label"):
        v = getattr(element, attr, None)
        if isinstance(v, str) and v:
            return v
    return ""


def test_the_page_reads_for_a_board_reader(decoded_warehouse, monkeypatch):
    with opened(decoded_warehouse, "pages/defenses.py", monkeypatch, 120) as at:
        assert not at.exception, [e.value for e in at.exception]
        policies = policy_count()           # the demo's decision task is TUPLE's
        # 1. two plain sentences first; the method, with its computed count, in an expander
        intro = at.caption[0].value
        assert intro.startswith("This page tests ways of blurring the probabilities") and intro.count(". ") == 1
        assert "WCPQ" in intro and "decisions never change" in intro
        assert not any(w in intro for w in ("signature", "inverse", "midpoint", "3 x 6", "18"))
        method = next(e for e in at.expander if e.label == "How the defenses are evaluated")
        said = " ".join(m.value for m in method.markdown)
        assert f"all {policies} frozen recipient policies" in said
        assert f"{len(TASKS)} tasks × {policies // len(TASKS)} cost profiles" in said and "3 x 6" not in said
        # 2. the native figure named as the defense-aware attacker's, and why right after the findings
        order = _in_order(at.main)
        callout = next(i for i, e in enumerate(order) if "Two “full native” recovery figures" in _value(e))
        last_finding = max(i for i, e in enumerate(order) if "qlb-finding" in _value(e)
                           and "What WCPQ costs." in _value(e))
        assert any(order[callout] is e for e in at.info)                     # a callout, not grey small print
        shown = md_plain(_value(order[callout]))                              # as the reader sees it
        assert callout == last_finding + 1 and re.search(r"\(sim-alder: \d+\.\d% here, \d+\.\d% there\)", shown)
        assert NATIVE_ATTACKED in shown and f"{policies} public workflow" in shown
        assert any("restricted to base rate and Gaussian templates" in w.value for w in at.warning)
        fig10 = plotly_traces(at.get("plotly_chart")[0])
        assert NATIVE_ATTACKED in list(fig10[0]["x"]) and "native (control)" not in list(fig10[0]["x"])
        t3 = next(f for f in frames(at) if "vs native [95% CI]" in f.columns)
        assert t3.iloc[0]["defense"] == NATIVE_ATTACKED and t3.iloc[0]["vs native [95% CI]"] == "control"
        # 3. Figure 11: a panel per model, no text on the markers, the budget in the legend
        fig11 = next(c for c in at.get("plotly_chart") if "mapper" in c.proto.spec)
        traces = plotly_traces(fig11)
        assert all(t["mode"] == "markers" and "text" not in t for t in traces)
        assert {t["name"] for t in traces} == {"WCPQ strict", "budget 0.2 · pair loss"}
        # 4. the codeword warning before the inspector's table, and the column says what it holds
        side_at = next(i for i, e in enumerate(order) if isinstance(getattr(e, "value", None), pd.DataFrame)
                       and "class (public order)" in e.value.columns)
        warned = next(i for i, e in enumerate(order) if "hold codewords, not probabilities" in _value(e))
        assert warned < side_at and "WCPQ codeword" in order[side_at].value.columns
        assert not any("not a recalibrated probability" in c.value for c in at.caption)       # not below any more
        # 5. one sentence under the cost table; why a defended release can read cheaper in an expander
        cost = next(c.value for c in at.caption if c.value.startswith("Mean test cost per case"))
        assert "compare intervals, not point values" in cost and cost.count(". ") <= 1          # the sentence, the run
        why = next(e for e in at.expander if e.label == "Why a defended release can read cheaper")
        assert "compare like with like" in " ".join(m.value for m in why.markdown)


def test_method_points_count_the_datasets_own_policies():
    said = " ".join(method_points(10, 2))
    assert "all 10 frozen recipient policies" in said and "2 tasks × 5 cost profiles" in said
    assert "18" not in said and "3 x 6" not in said


def test_the_control_sentence_gives_both_figures_or_their_range():
    def frames_for(models: list[str], here: list[float], there: list[float]):
        recovery = pd.DataFrame({"model": models, "scope": "pooled", "view": "full_native", "accuracy": there})
        main = pd.DataFrame({"model": models, "defense": "native", "accuracy": here})
        return recovery, main
    few = control_sentence(*frames_for(["a", "<b>"], [0.667, 0.7], [0.64, 0.7]), 18, lambda s: f"[{s}]")
    assert "([<b>]: 70.0% here, 70.0% there; [a]: 66.7% here, 64.0% there)" in few         # by name
    assert few.startswith(f"This page's {NATIVE_ATTACKED} figure") and "18 public workflow signatures" in few
    models = [f"m{i}" for i in range(9)]
    many = control_sentence(*frames_for(models, [0.6 + i / 100 for i in range(9)], [0.6] * 8 + [0.55]), 12)
    assert "here minus there: +0.0 to +13.0 points over 9 models; the largest gap: m8, 68.0% here, 55.0% there" \
        in many
    assert control_sentence(*frames_for(["a"], [0.6], [0.6]), 18).count("here") == 2
    empty = pd.DataFrame(columns=["model", "scope", "view", "accuracy"])
    assert control_sentence(empty, frames_for(["a"], [0.6], [0.6])[1], 18) == ""


def test_restriction_codeword_labels_and_note():
    assert restricted_sentence(["prior"], ["prior", "logistic"]).startswith(
        "This run's defense-aware attacker is restricted to base rate")
    assert restricted_sentence(["prior", "logistic"], ["prior", "logistic"]) == ""
    assert restricted_sentence(None, ["prior"]) == ""
    assert release_column("wcpq") == "WCPQ codeword"
    assert release_column("wcpq grid").endswith("codeword")
    assert release_column("wcpq learned 0.2 paired").endswith("codeword")
    assert release_column("quantize") == "quantize 0.1" and release_column("native") == "native (control)"
    assert codeword_note(["native", "quantize"]) == ""
    assert "not probabilities" in codeword_note(["wcpq"]) and "budget" not in codeword_note(["wcpq"])
    assert "up to its budget" in codeword_note(["native", "wcpq learned 0.2 paired"])
