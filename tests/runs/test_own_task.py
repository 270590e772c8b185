"""An auditor's own decision task end to end (issue 14): two own ontologies (3 classes x 3
mechanisms; 5 classes x 2 mechanisms) through ingest -> every audit -> every page -> report,
with refusal counts recomputed by hand, WCPQ verified on K = 3 and K = 5 classes, and the run
recording the ontology's sha256."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dashboard.routing import PAGES
from qlb.records.ontology import parse_ontology
from qlb.runs.audit import AuditOptions, run_audits
from qlb.runs.report import build_report
from qlb.simulate.tuple_sim import SIM_MODELS, simulate_native, simulate_refusal, simulate_worlds
from tests.conftest import ROOT, write_lines
from tests.records.ontologies import as_text, five_by_two, three_by_three
from warehouse.db import reader, writer
from warehouse.ingest import IngestRequest, ingest_file
from warehouse.ontologies import store_ontology

MODELS = SIM_MODELS[:2]


def build(tmp: Path, doc: dict, dataset: str) -> tuple[Path, str]:
    """A small simulated dataset for the ontology, audited (fast decoder families; defenses on
    one model, attacked with two families as in the decoded warehouse). Returns the warehouse and
    the ontology's sha256."""
    text = as_text(doc)
    onto = parse_ontology(text, "own.json")
    worlds = simulate_worlds(5, onto, pairs_per_class=10)
    files = {"worlds": write_lines(tmp / "worlds.jsonl", worlds),
             "responses": write_lines(tmp / "native.jsonl", [r for m in MODELS for r in simulate_native(worlds, m, 5, onto)]),
             "refusal": write_lines(tmp / "refusal.jsonl", [r for m in MODELS for r in simulate_refusal(worlds, m, 5, onto)])}
    path = tmp / "wh.duckdb"
    with writer(path) as con:
        sha, _ = store_ontology(con, dataset, text, "own.json")
        for kind, f in files.items():
            report = ingest_file(con, IngestRequest(kind, f, dataset)).report
            assert not report.rejects, report.messages()[:3]
        run_audits(con, dataset, AuditOptions(families={"prior", "logistic", "template"}, jobs=1,
                                              defense_models=[MODELS[0].name], defense_families={"prior", "template"},
                                              learned_wcpq=["wcpq learned 0.2 paired"]))
    return path, sha


@pytest.fixture(scope="module", params=["3x3", "5x2"])
def own(request, tmp_path_factory):
    doc = three_by_three() if request.param == "3x3" else five_by_two()
    path, sha = build(tmp_path_factory.mktemp(f"own{request.param}"), doc, f"own-{request.param}")
    return request.param, path, sha, parse_ontology(as_text(doc), "own.json")


def q(path: Path, sql: str, params=()) -> pd.DataFrame:
    with reader(path) as con:
        return con.execute(sql, list(params)).df()


def test_the_run_records_the_ontology_and_every_audit_ran(own):
    name, path, sha, onto = own
    run = q(path, "SELECT run_id, parameters FROM runs ORDER BY started_at DESC LIMIT 1").iloc[0]
    assert json.loads(run["parameters"])["ontology_sha256"] == sha
    for table in ("refusal_results", "recovery_results", "utility_results", "front_points", "defense_results"):
        assert int(q(path, f"SELECT count(*) AS n FROM {table} WHERE run_id = ?", [run["run_id"]])["n"][0]) > 0, table
    rec = q(path, "SELECT view, accuracy FROM recovery_results WHERE run_id = ? AND scope = 'pooled'", [run["run_id"]])
    assert (rec[rec["view"] == "no_output"]["accuracy"] == 0.5).all()          # no output: exactly a coin flip


def test_refusal_counts_by_hand(own):
    """withheld, direct correct and unique residual winners recomputed from the stored answers."""
    name, path, sha, onto = own
    answers = q(path, "SELECT r.model, r.choice, r.scores, w.mechanism, w.domain FROM refusal_responses r "
                      "JOIN worlds w USING (dataset_id, world_id) WHERE r.status = 'ok' AND r.valid")
    model = MODELS[0].name
    mine = answers[answers["model"] == model]
    withheld = mine[mine["choice"] == "WITHHOLD"]
    residual = 0
    for scores, gold, domain in zip(withheld["scores"], withheld["mechanism"], withheld["domain"]):
        s = {k: v for k, v in (json.loads(scores) if isinstance(scores, str) else {}).items() if k != "WITHHOLD"}
        if sum(s.values()) > 0:
            top = max(s.values())
            winners = [m for m in onto.domain(domain).mechanisms if s.get(m, 0.0) == top]
            residual += winners == [gold]
    row = q(path, "SELECT * FROM refusal_results WHERE model = ? AND domain = 'all' "
                  "AND run_id = (SELECT run_id FROM runs ORDER BY started_at DESC LIMIT 1)", [model]).iloc[0]
    assert (row["n"], row["withheld"], row["direct_correct"], row["residual_unique_correct"]) == (
        len(mine), len(withheld), int((mine["choice"] == mine["mechanism"]).sum()), residual)


def test_wcpq_plans_agree_on_every_world_and_policy(own):
    name, path, sha, onto = own
    k = len(next(iter(onto.domains.values())).classes)
    assert k == (3 if name == "3x3" else 5)
    w = q(path, "SELECT coverage, plan_agreement, plan_comparisons, max_abs_cost_diff FROM defense_results "
                "WHERE defense = 'wcpq'").iloc[0]
    assert w["plan_comparisons"] > 0 and w["plan_agreement"] == w["plan_comparisons"]
    assert w["max_abs_cost_diff"] == pytest.approx(0.0, abs=1e-12)
    # the learned variant trains and verifies on any number of classes, within its budget
    lw = q(path, "SELECT budget, max_cost_increase, covered, available, deployed FROM learned_wcpq")
    assert len(lw) == len(onto.domains) and (lw["budget"] == 0.2).all()
    assert (lw["max_cost_increase"] <= 0.2 + 1e-9).all() and (lw["covered"] <= lw["available"]).all()
    assert (lw["deployed"] > 0).all()


def test_every_page_and_the_report(own, monkeypatch):
    """Every page renders on the own task, and the pages that depend on the task give its own numbers (``PAGE_CHECKS``,
    on the same walk: one app per dataset); the report says what the run audited and that the worlds are generated."""
    name, path, sha, onto = own
    monkeypatch.setenv("QLB_WAREHOUSE", str(path))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    checked = set()
    try:
        for page_path, title, _, _ in PAGES:
            at.switch_page(page_path).run()
            assert not at.exception, (page_path, [e.value for e in at.exception])
            if page_path in PAGE_CHECKS:
                PAGE_CHECKS[page_path](at, name, path, onto)
                checked.add(page_path)
    finally:
        from dashboard.data_access import release_readers
        release_readers()
    assert checked == set(PAGE_CHECKS)
    with reader(path) as con:
        html = build_report(con)
    assert "<html" in html and all(m.name in html for m in MODELS)
    assert "Does withholding stop the leak?" in html and "What each release view reveals" in html
    # real answers on generated worlds: the dataset is ingested (not simulated), its worlds come from the simulator
    assert "Every world of this dataset was generated by qlb from the decision task (SIMULATED test cases" in html
    import html as markup
    import re
    worlds = int(q(path, "SELECT count(*) AS n FROM worlds")["n"].iloc[0])
    shown = markup.unescape(html)
    assert re.search(rf'"simulated_worlds": {worlds},', shown) and '"simulated": false' in shown


def _shown(at) -> str:
    from dashboard.widgets import md_plain
    from tests.app.test_pages import texts
    return md_plain(texts(at))


def _authored(name: str) -> str:
    return ("a wrong route 8, trusted review 1.5, one check 0.3" if name == "5x2"
            else "a wrong route 10, trusted review 2, one check 0.4")


def _sensitivity(at, name, path, onto) -> None:
    """The own task's authored costs and profiles, never TUPLE's (the intro had said "wrong route 10, trusted review
    2, check 0.4" whatever the dataset)."""
    shown = _shown(at)
    assert _authored(name) in shown
    if name == "5x2":
        assert "wrong route 10" not in shown
        what = next(d.value for d in at.dataframe if "what changes" in d.value.columns)
        assert dict(zip(what.iloc[:, 0], what["what changes"]))["fraud double"] == (
            "In the asymmetric-cost matrix, the costs when the true class is Fraud are multiplied by 2.")


def _glossary(at, name, path, onto) -> None:
    """The mechanism count, WCPQ grid size, costs and profiles of the own task (it had said "16 mechanisms: 6.25%")."""
    shown = _shown(at)
    sizes = {"5x2": ("10 mechanisms at random: 10.0%", "1,001 vectors for 5 classes"),
             "3x3": ("9 mechanisms at random: 11.1%", "66 vectors for 3 classes")}[name]
    assert all(s in shown for s in sizes), shown[:2000]
    assert _authored(name) in shown and "16 mechanisms" not in shown and "286 vectors" not in shown
    if name == "5x2":
        assert ("Cost profile: fraud double**: In the asymmetric-cost matrix, the costs when the true class is "
                "Fraud are multiplied by 2.") in shown
        assert "review at half cost**: Trusted review and general inspection cost half (review 0.75)." in shown


def _defenses(at, name, path, onto) -> None:
    """3 workflows x the task's cost profiles frozen policies, not TUPLE's 18."""
    assert f"any of the {3 * len(onto.cost_profiles)} frozen policies" in _shown(at)


def _quasileak(at, name, path, onto) -> None:
    """A dataset with no corpus is told to load one first (a detector run fails without documents), with both
    commands for this warehouse."""
    assert any("has no QuasiLeak corpus" in i.value for i in at.info)
    assert at.code[0].value.replace(" \\\n  ", " ").splitlines() == [     # this warehouse, where the page reads
        f"qlb ingest corpus CORPUS.jsonl --dataset own-{name} --warehouse {path}",
        f"qlb quasileak run --dataset own-{name} --detector lexicon-cues --warehouse {path}"]
    assert not any(b.key == "ql_recompute" for b in at.button)      # nothing to recompute without a corpus


def _recovery(at, name, path, onto) -> None:
    """Real answers on worlds qlb generated: the page says the worlds are simulated test cases."""
    assert any("Every world of this dataset was generated by qlb" in i.value for i in at.info)


PAGE_CHECKS = {"pages/sensitivity.py": _sensitivity, "pages/glossary.py": _glossary, "pages/defenses.py": _defenses,
               "pages/quasileak.py": _quasileak, "pages/recovery.py": _recovery}
