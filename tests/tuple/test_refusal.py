"""Refusal audit against hand-computed cases (TUPLE.md section 2)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from qlb.records.ontology import load_ontology
from qlb.tuple.refusal import (
    DIRECT_CORRECT, DIRECT_INCORRECT, TIED, UNIQUE_CORRECT, UNIQUE_INCORRECT, ZERO_MASS, classify,
    recovery_routes, score_responses, summarize, to_contract_json,
)
from qlb.cli import main
from tests.conftest import two_pairs, write_lines

MECHS = load_ontology().domain("delivery").mechanisms     # 16, lexicographic
GOLD = "missed_transfer"


def row(model: str, world: str, choice: str | None, scores: dict | None, status: str = "ok",
        mechanism: str = GOLD) -> dict:
    return {"model": model, "world_id": world, "domain": "delivery", "mechanism": mechanism,
            "status": status, "choice": choice, "scores": scores}


def test_classify_each_outcome_by_hand():
    g = MECHS.index(GOLD)
    other = MECHS.index("sorting_backlog")
    s = np.zeros((6, 17))
    s[2, g] = 0.6; s[2, other] = 0.3                        # unique correct
    s[3, g] = 0.2; s[3, other] = 0.5                        # unique incorrect
    s[4, g] = 0.4; s[4, other] = 0.4                        # exact tie
    s[5, 16] = 1.0                                          # only WITHHOLD has mass: zero mass
    choice = np.array([g, other, 16, 16, 16, 16])
    out, winner = classify(choice, np.full(6, g), s)
    assert out.tolist() == [DIRECT_CORRECT, DIRECT_INCORRECT, UNIQUE_CORRECT, UNIQUE_INCORRECT, TIED, ZERO_MASS]
    assert winner.tolist() == [-1, -1, g, other, -1, -1]


def test_precedence_zero_mass_before_tied():
    s = np.zeros((1, 17))                                   # all 16 equal (0) would also be a tie
    out, _ = classify(np.array([16]), np.array([0]), s)
    assert out[0] == ZERO_MASS


def test_float_ties_are_exact():
    g = MECHS.index(GOLD)
    s = np.zeros((2, 17))
    s[0, g] = 0.1 + 0.2; s[0, 0] = 0.3                      # 0.30000000000000004 vs 0.3: not a tie
    s[1, g] = 0.3; s[1, 0] = 0.3
    out, _ = classify(np.array([16, 16]), np.array([g, g]), s)
    assert out.tolist() == [UNIQUE_CORRECT, TIED]


def test_summary_by_hand_with_missing_scores_and_unavailable():
    rows = [
        row("m", "w1", GOLD, {GOLD: 0.9, "WITHHOLD": 0.1}),                        # direct correct
        row("m", "w2", "sorting_backlog", {"sorting_backlog": 0.9}),               # direct incorrect
        row("m", "w3", "WITHHOLD", {GOLD: 0.5, "sorting_backlog": 0.2, "WITHHOLD": 0.9}),   # unique correct
        row("m", "w4", "WITHHOLD", {"sorting_backlog": 0.5, "WITHHOLD": 0.9}),     # missing gold -> 0: incorrect
        row("m", "w5", "WITHHOLD", None),                                          # scores missing: zero mass
        row("m", "w6", "WITHHOLD", {GOLD: 0.4, "weather_hold": 0.4}),              # tie
        row("m", "w7", None, None, status="unavailable"),                          # not in n
    ]
    summary = summarize(score_responses(pd.DataFrame(rows)))
    a = summary[(summary["model"] == "m") & (summary["domain"] == "all")].iloc[0]
    assert (a["n"], a["withheld"], a["direct_correct"], a["direct_incorrect"]) == (6, 4, 1, 1)
    assert (a["residual_unique_correct"], a["residual_unique_incorrect"], a["residual_tied"],
            a["residual_zero_mass"]) == (1, 1, 1, 1)
    assert a["withhold_rate"] == pytest.approx(4 / 6)
    assert a["conditional_residual_recovery"] == pytest.approx(1 / 4)
    assert a["overall_recovery"] == pytest.approx(2 / 6)
    assert a["unavailable"] == 1
    assert a["unique_winner_coverage"] == pytest.approx(2 / 4)
    routes = recovery_routes(summary)
    assert routes["direct_share"][0] + routes["residual_share"][0] == pytest.approx(a["overall_recovery"])


def test_never_withholds_gives_null_not_zero():
    rows = [row("never", "w1", GOLD, {GOLD: 1.0}), row("never", "w2", "sorting_backlog", {"sorting_backlog": 1.0})]
    doc = to_contract_json(summarize(score_responses(pd.DataFrame(rows))))
    counts = doc["models"]["never"]["all"]
    assert counts["withheld"] == 0 and counts["withhold_rate"] == 0.0
    assert counts["conditional_residual_recovery"] is None
    assert counts["overall_recovery"] == 0.5
    assert set(counts) == {"n", "withheld", "direct_correct", "direct_incorrect", "residual_unique_correct",
                           "residual_unique_incorrect", "residual_tied", "residual_zero_mass",
                           "withhold_rate", "conditional_residual_recovery", "overall_recovery"}
    assert set(doc["models"]["never"]["by_domain"]) == {"delivery"}


def test_cli_refusal_names_bad_lines_and_exits_3(tmp_path, capsys):
    worlds = write_lines(tmp_path / "worlds.jsonl", two_pairs())
    base = {"model": "m", "status": "ok"}
    rows = [
        {**base, "world_id": "w1", "choice": "WITHHOLD", "scores": {GOLD: 0.7, "WITHHOLD": 0.9}},
        {**base, "world_id": "w2", "choice": "sorting_backlog", "scores": {"sorting_backlog": 0.8}},
        {**base, "world_id": "w3", "choice": "dns_misroute", "scores": None},
        {**base, "world_id": "w4", "choice": "WITHHOLD", "scores": {GOLD: -0.5}},
        {**base, "world_id": "w404", "choice": "WITHHOLD", "scores": None},
    ]
    resp = write_lines(tmp_path / "refusal.jsonl", rows)
    code = main(["refusal", "--worlds", str(worlds), "--responses", str(resp), "--json"])
    out, err = capsys.readouterr()
    assert code == 3
    assert [line.split(": ")[0] for line in err.strip().splitlines()] == [
        f"{resp}:3", f"{resp}:4", f"{resp}:5"]
    doc = json.loads(out)
    m = doc["models"]["m"]["all"]
    assert (m["n"], m["withheld"], m["residual_unique_correct"], m["direct_correct"]) == (2, 1, 1, 1)
    assert m["overall_recovery"] == 1.0


def test_demo_run_matches_a_recount(demo_warehouse):
    import duckdb
    con = duckdb.connect(str(demo_warehouse), read_only=True)
    try:
        stored = con.execute("SELECT model, n, withheld, residual_unique_correct, direct_correct, overall_recovery "
                             "FROM refusal_results WHERE domain = 'all' ORDER BY model").fetchall()
        raw = con.execute("SELECT r.model, r.choice, r.scores, w.mechanism FROM refusal_responses r JOIN worlds w "
                          "USING (dataset_id, world_id) WHERE r.status = 'ok' ORDER BY r.model").fetchall()
    finally:
        con.close()
    assert len(stored) == 9
    # an independent plain-Python recount of the overall recovery
    recount: dict[str, list[int]] = {}
    for model, choice, scores, gold in raw:
        c = recount.setdefault(model, [0, 0])
        c[0] += 1
        if choice == gold:
            c[1] += 1
        elif choice == "WITHHOLD":
            s = {k: v for k, v in (json.loads(scores) if scores else {}).items() if k != "WITHHOLD"}
            if s and sum(s.values()) > 0:
                top = max(s.values())
                if [k for k, v in s.items() if v == top] == [gold]:
                    c[1] += 1
    for model, n, withheld, r, d, overall in stored:
        assert recount[model][0] == n
        assert recount[model][1] == d + r
        assert overall == pytest.approx((d + r) / n)
    overall = {m: o for m, *_, o in stored}
    assert 0.9 <= min(overall.values()) and max(overall.values()) <= 1.0   # the paper's regime
    assert len({round(v, 3) for v in overall.values()}) > 5                 # models differ


def test_mechanism_counts_are_the_domains_distinct_sizes():
    from qlb.records.ontology import load_ontology
    from qlb.tuple.refusal import mechanism_counts
    assert mechanism_counts() == [16] == mechanism_counts(load_ontology())
