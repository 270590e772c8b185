"""The Compare runs page after a privacy board's review: it opens on the Overview's run and the closest earlier
run and says why, says how the runs' settings differ before the findings, names only the audits a run stored,
shows the run id's end first, keeps the Defenses table to four columns, and opens its tables on the cells the
findings cite."""
from __future__ import annotations

import json
import shutil

from dashboard.widgets import md_plain
from tests.app.test_pages import frames, opened, texts
from warehouse.db import writer

DATASET = "simulated-reference"
CLONE = "run-20991231-000000-c10e5b"          # an hour later, a copy of the decoded run, with one more decoder family


def _runs(con) -> list[tuple[str, str]]:
    """(run id, parameters) of the dataset's audit runs, oldest first."""
    return con.execute("SELECT run_id, parameters FROM runs WHERE dataset_id = ? AND kind = 'audit' "
                       "ORDER BY started_at", [DATASET]).fetchall()


def _with_a_stronger_rerun(decoded, tmp_path):
    """A copy of the decoded warehouse with a later copy of its complete run whose recovery attacker tried one
    more decoder family (random forest), whose choice-view recovery of sim-dogwood rose by 5.38 points (53.56% to
    58.94%: shown 5.3 apart) and whose one-step clarification cost of sim-alder under the choice + confidence view
    fell by 0.2. Returns the warehouse and the copied run's id."""
    wh = tmp_path / "qlb.duckdb"
    shutil.copy(decoded, wh)
    with writer(wh) as con:
        source, params = _runs(con)[-1]
        params = json.loads(params) | {"families": ["forest", "logistic", "prior", "template"]}
        con.execute("INSERT INTO runs SELECT * REPLACE (? AS run_id, ? AS parameters, "
                    "started_at + INTERVAL 1 HOUR AS started_at) FROM runs WHERE run_id = ?",
                    [CLONE, json.dumps(params), source])
        tables = [t for (t,) in con.execute("SELECT DISTINCT table_name FROM information_schema.columns "
                                            "WHERE column_name = 'run_id' AND table_name <> 'runs'").fetchall()]
        for table in tables:                           # names from the schema itself
            con.execute(f"INSERT INTO {table} SELECT * REPLACE (? AS run_id) FROM {table} WHERE run_id = ?",
                        [CLONE, source])
        con.execute("UPDATE recovery_results SET accuracy = 0.5356, ci_low = 0.48, ci_high = 0.59 WHERE run_id = ? "
                    "AND model = 'sim-dogwood' AND view = 'choice' AND scope = 'pooled'", [source])
        con.execute("UPDATE recovery_results SET accuracy = 0.5894, ci_low = 0.53, ci_high = 0.64 WHERE run_id = ? "
                    "AND model = 'sim-dogwood' AND view = 'choice' AND scope = 'pooled'", [CLONE])
        con.execute("UPDATE utility_results SET mean_cost = mean_cost - 0.2 WHERE run_id = ? AND model = 'sim-alder' "
                    "AND view = 'choice_confidence' AND task = 'clarification' AND scope = 'pooled' "
                    "AND profile = 'authored'", [CLONE])
    return wh, source


def test_the_page_opens_on_the_overviews_run_and_says_first_that_run_b_had_the_stronger_attacker(
        decoded_warehouse, tmp_path, monkeypatch):
    wh, source = _with_a_stronger_rerun(decoded_warehouse, tmp_path)
    with opened(wh, "pages/compare.py", monkeypatch, 120) as at:
        assert not at.exception, [e.value for e in at.exception]
        assert at.selectbox(key="run_b").value == CLONE and at.selectbox(key="run_a").value == source
        labels = at.selectbox(key="run_a").options
        assert all(x.startswith("run-…") for x in labels) and labels[0].startswith("run-…c10e5b · 20")
        shown = md_plain(texts(at))                       # as read: escapes and character references resolved
        assert "the run the Overview and the report show" in shown
        settings_said = shown.index("Run B's recovery attacker tried 4 families, run A's 3 (run B adds "
                                    "random forest): a change in recovery may come from the stronger attacker")
        assert settings_said < shown.index("Largest change.")                     # said before the findings
        assert "Not like for like." in shown and "the same code version" in shown
        assert ("Choice secret recovery of sim-dogwood went from 53.6% [48.0, 59.0] in run A to 58.9% [53.0, 64.0] "
                "in run B (+5.4 points, from the unrounded rates)") in shown
        assert "This counts values; it is not a test of change" in shown
        # the tables open on the cells the findings cite
        assert at.selectbox(key="compare_view").value == "choice"
        assert (at.selectbox(key="compare_cost_view").value, at.selectbox(key="compare_cost_task").value) == (
            "choice_confidence", "clarification")
        util = next(f for f in frames(at) if "B − A (cost units)" in f.columns)
        assert util.loc[util["model"] == "sim-alder", "B − A (cost units)"].round(3).tolist() == [-0.2]
        # Defenses: four columns (the model is picked above the table), whole at 1,024 px
        defended = next(f for f in frames(at) if "defense" in f.columns)
        assert list(defended.columns) == ["defense", "run A [95% CI]", "run B [95% CI]", "B − A (points)"]
        # Provenance: the differing setting, with both runs' values
        assert "What differs between the runs" in shown and "Run A: base rate, logistic regression and Gaussian templates; " \
            "run B: base rate, logistic regression, random forest and Gaussian templates" in shown


def test_a_newer_partial_run_does_not_replace_the_overviews_run_and_audits_without_results_are_not_listed(
        decoded_warehouse, tmp_path, monkeypatch):
    """The demo warehouse's shape: a newer run of refusal and QuasiLeak only after the complete one. Run B stays on
    the complete run (the Overview's), the caption names the newer one, and once the QuasiLeak scores are gone a
    run asking for QuasiLeak is not labelled with it."""
    wh = tmp_path / "qlb.duckdb"
    shutil.copy(decoded_warehouse, wh)
    with writer(wh) as con:
        (demo, _), (complete, params) = _runs(con)
        con.execute("INSERT INTO runs SELECT * REPLACE ('run-20991231-000000-0a1b2c' AS run_id, "
                    "started_at + INTERVAL 1 HOUR AS started_at) FROM runs WHERE run_id = ?", [complete])
        con.execute("INSERT INTO refusal_results SELECT * REPLACE ('run-20991231-000000-0a1b2c' AS run_id) "
                    "FROM refusal_results WHERE run_id = ?", [complete])
        con.execute("DELETE FROM ql_scores WHERE run_id = ?", [complete])       # asked for, stored none
    with opened(wh, "pages/compare.py", monkeypatch, 120) as at:
        assert not at.exception, [e.value for e in at.exception]
        assert (at.selectbox(key="run_a").value, at.selectbox(key="run_b").value) == (demo, complete)
        shown = md_plain(texts(at))
        assert "1 newer run holds results of refusal: pick it as run B to see what it changed." in shown
        label = next(x for x in at.selectbox(key="run_b").options if x.startswith(f"run-…{complete[-6:]}"))
        assert "QuasiLeak" not in label and "every audit" not in label and "quasileak" in json.loads(params)["audits"]
        assert "audits with results: refusal, recovery, utility and defenses;" in shown
    with opened(wh, "pages/compare.py", monkeypatch, 120, query={"run": demo}) as at:     # an Overview link
        assert not at.exception, [e.value for e in at.exception]
        assert at.selectbox(key="run_b").value == demo
        assert "the run the link names" in texts(at)
