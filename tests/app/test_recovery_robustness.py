"""The recovery page's robustness checks (paper Tables 29 and 30) under Streamlit's AppTest, on
the decoded demo warehouse (two models, the fast decoder families)."""
from __future__ import annotations

import re

import duckdb

from dashboard.widgets import md_plain
from qlb.present.names import TRACK_NAMES
from qlb.present.robustness import ALL_COLUMN, SUBSET_COLUMN
from tests.app.test_pages import frames, opened

CELL = re.compile(r"^(\d+\.\d)% \[(\d+\.\d), (\d+\.\d)\]$")


def test_recovery_page_shows_the_robustness_checks(decoded_warehouse, monkeypatch):
    with duckdb.connect(str(decoded_warehouse), read_only=True) as con:
        stored = dict(con.execute("SELECT model, accuracy FROM recovery_results WHERE view = 'full_native' "
                                  "AND scope = 'pooled'").fetchall())
    with opened(decoded_warehouse, "pages/recovery.py", monkeypatch, 120) as at:
        assert not at.exception, [e.value for e in at.exception]
        assert "Robustness checks (the TUPLE paper's Tables 29 and 30)" in [e.label for e in at.expander]
        assert not [m for m in at.markdown if m.value.startswith("**Coarse errors.**")]    # folded: not computed
        at.session_state["recovery_robustness"] = True                                     # the reader opens it
        at.run(timeout=120)
        assert not at.exception, [e.value for e in at.exception]
        sentences = [md_plain(m.value) for m in at.markdown
                     if m.value.startswith(("**Coarse errors.**", "**Attack selection.**"))]
        assert len(sentences) == 2
        assert "coarse answers are correct in both worlds" in sentences[0]
        assert "chosen on validation, not by its test value" in sentences[1]
        assert not [s for s in sentences if "full_native" in s or "ensemble of" in s]      # display names only

        both = next(f for f in frames(at) if SUBSET_COLUMN in f.columns)
        assert both["model"].tolist() == ["sim-alder", "sim-dogwood"]
        kept = both["pairs kept"].str.extract(r"^(\d+) of (\d+)$").astype(int)
        assert (kept[1] == 144).all() and (kept[0] < 144).all() and (kept[0] > 0).all()
        assert both[SUBSET_COLUMN].str.match(CELL).all()
        # the all-worlds column is the stored result, unchanged
        for model, cell in zip(both["model"], both[ALL_COLUMN]):
            assert cell.startswith(f"{100 * stored[model]:.1f}% [")

        # Table 30 one model at a time: the run fitted three families: their bests, the single best, the
        # averages and the stack
        for model in ("sim-alder", "sim-dogwood"):
            at.selectbox(key="tracks_model").set_value(model).run()
            tracks = next(f for f in frames(at) if "attack track" in f.columns).set_index("attack track")
            assert list(tracks.index) == [TRACK_NAMES[t] for t in (
                "selected", "best_configuration", "prior", "logistic", "template", "family_winners",
                "all_configurations", "stack")]
            assert tracks.loc[TRACK_NAMES["prior"], "kind"] == "one family's best"
            cell = tracks["recovery [95% CI]"]
            assert cell[TRACK_NAMES["selected"]].startswith(f"{100 * stored[model]:.1f}% [")   # the frozen selection
            assert cell[TRACK_NAMES["prior"]] == "50.0% [50.0, 50.0]"          # one answer per pair: a coin flip

        # picking one model narrows both tables and the sentences to it
        at.multiselect(key="recovery_models").set_value(["sim-dogwood"]).run()
        assert not at.exception, [e.value for e in at.exception]
        assert next(f for f in frames(at) if SUBSET_COLUMN in f.columns)["model"].tolist() == ["sim-dogwood"]
        assert at.selectbox(key="tracks_model").options == ["sim-dogwood"]
