"""The Release-view recovery page says which decisions leak: recovery per decision class of the picked
view, from the run's stored predictions, with a finding first (a walk-through's model leaked in two
classes only, which the per-domain table averaged away)."""
from __future__ import annotations

import re

from tests.app.test_pages import frames, opened


def test_the_recovery_page_shows_recovery_per_decision_class(decoded_warehouse, monkeypatch):
    with opened(decoded_warehouse, "pages/recovery.py", monkeypatch, 120) as at:
        assert not at.exception, [e.value for e in at.exception]
        said = [m.value for m in at.markdown if "Which decisions leak." in m.value]
        assert len(said) == 1 and "cells of model and decision class" in said[0]
        grid = next(f for f in frames(at) if f.columns[0] in ("decision class", "model") and
                    any(" / " in str(c) for c in [*f.columns, *f.iloc[:, 0]]))
    cells = grid.iloc[:, 1:].to_numpy().ravel()
    assert all(re.fullmatch(r"\d+\.\d% \[\d+\.\d, \d+\.\d\]|—", c) for c in cells)


def test_the_per_class_table_fits_a_small_screen(decoded_warehouse, monkeypatch):
    """At 1,024 px the per-class table was cut off (a model column hidden): its columns now have fixed widths
    that add up to what the screen gives a table."""
    from tests.app.test_small_pages import TABLE_PX, widths
    with opened(decoded_warehouse, "pages/recovery.py", monkeypatch, 120) as at:
        assert not at.exception, [e.value for e in at.exception]
        grids = [f for f in frames(at) if f.columns[0] in ("decision class", "model")
                 and any(" / " in str(c) for c in [*f.columns, *f.iloc[:, 0]])]
        assert len(grids) == 1                                          # two models: one table
        px = widths(at, list(grids[0].columns))
    assert set(px) == set(grids[0].columns) and sum(px.values()) <= TABLE_PX


def test_a_wide_per_class_grid_is_split_into_tables_that_each_fit():
    """Nine models (the demo) need three tables of three, each with the decision classes again; every model is in
    one of them, in order, and each cell's text fits its column."""
    import pandas as pd

    from dashboard.widgets import SHORT_GRID_PX, TABLE_PX, column_groups, fitted_grids, text_px
    models = [f"sim-{n}" for n in ("alder", "birch", "cedar", "dogwood", "elm", "fir", "ginkgo", "hazel", "juniper")]
    grid = pd.DataFrame({"decision class": ["delivery / ADDRESS", "it / STORAGE"],
                         **{m: ["87.5% [75.0, 100.0]", "50.0% [33.3, 66.7]"] for m in models}})
    parts = fitted_grids(grid)
    assert [list(p.columns[1:]) for p, _ in parts] == [models[:3], models[3:6], models[6:]]
    for part, px in parts:
        assert list(px) == list(part.columns) and sum(px.values()) <= SHORT_GRID_PX < TABLE_PX
        assert all(px[m] >= text_px("87.5% [75.0, 100.0]") for m in part.columns[1:])
        assert part["decision class"].tolist() == ["delivery / ADDRESS", "it / STORAGE"]
    two = fitted_grids(grid[["decision class", *models[:2]]])
    assert len(two) == 1 and list(two[0][0].columns) == ["decision class", *models[:2]]
    assert column_groups([120] * 4, 370) == [[0, 1], [2, 3]]          # even: 2 + 2, not 3 + 1
    assert column_groups([120] * 5, 370) == [[0, 1, 2], [3, 4]]
    assert text_px("100.0% [43.9, 100.0]") == 126                     # measured on the page: 126 px
