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
