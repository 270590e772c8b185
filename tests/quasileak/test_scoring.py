"""QuasiLeak scoring against hand-computed cases (QUASILEAK.md section 3), the real TAB corpus,
the lift check and the bootstrap."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from qlb.cli import main
from qlb.quasileak.scoring import (
    corpus_metrics, detector_report, document_bootstrap, documents_from_records, explain_targets, iou, lift,
    match_cues, score_detector, score_document, verify_group,
)
from qlb.records.schemas import QLDocument
from tests.conftest import write_lines

TAB = Path(os.environ.get("QLB_SHARED", Path(__file__).resolve().parents[3] / "shared")) / "data" / \
    "tab144_quasileak_corpus.jsonl"
POLICY = {"age": "keep", "gender": "neutral", "nationality": "keep", "education": "keep", "occupation": "hide",
          "income": "keep", "relationship": "keep", "health": "hide"}


def test_iou_threshold_exactly_half_matches():
    assert iou((0, 10), (0, 5)) == 0.5
    assert match_cues([(0, 5)], [(0, 10)]) == (1, 0.5)          # exactly 0.5 matches
    assert iou((0, 10), (1, 6)) == 0.5                           # 5 / 10
    assert match_cues([(0, 4)], [(0, 9)])[0] == 0                 # 4/9 just below: no match
    assert match_cues([(0, 10)], [(20, 30)]) == (0, 0.0)


def test_one_to_one_matching_is_maximal():
    # pred A matches gold 1 and gold 2 (IoU exactly 0.5 each); pred B matches only gold 1:
    # greedy A->1 would leave B unmatched, the maximal matching pairs A->2 and B->1
    gold = [(0, 5), (5, 10)]
    pred = [(0, 10), (0, 6)]
    assert iou(pred[0], gold[0]) == 0.5 and iou(pred[0], gold[1]) == 0.5 and iou(pred[1], gold[0]) >= 0.5
    assert iou(pred[1], gold[1]) < 0.5
    assert match_cues(pred, gold)[0] == 2
    # ties in count broken by the larger total IoU
    n, total = match_cues([(0, 10)], [(0, 10), (0, 18)])
    assert n == 1 and total == 1.0


def test_credit_complete_partial_binding_and_over_flag():
    gold = [("health", ((0, 10), (20, 30), (40, 50))), ("occupation", ((60, 70), (80, 90))),
            ("age", ((100, 110), (120, 130)))]                               # age is keep: not a target
    predicted = [
        ("health", ((0, 10), (20, 30))),                                     # partial 2/3: lenient, not strict
        ("income", ((60, 70), (80, 90))),                                    # covers occupation under income
        ("age", ((100, 110), (120, 130))),                                   # over-flag (keep)
    ]
    d = score_document("d", "c", POLICY, gold, predicted)
    assert d.target_credit == [2 / 3, 0.0]
    assert d.target_binding_error == [False, True]
    assert d.pred_strict == [False, False, False]
    assert d.pred_lenient == [True, False, False]
    assert d.pred_over_flag == [False, True, True]                           # income is keep too
    m = corpus_metrics([d])
    assert m["targets"] == 2 and m["predicted_groups"] == 3
    assert m["complete_recall"] == 0.0
    assert m["graded_recall"] == pytest.approx((2 / 3 + 0) / 2)
    assert m["strict_precision"] == 0.0 and m["lenient_precision"] == pytest.approx(1 / 3)
    assert m["binding_error_rate"] == 0.5 and m["over_flag_rate"] == pytest.approx(2 / 3)
    assert m["document_flag_recall"] == 1.0                                  # one hide group reported
    why = explain_targets(POLICY, gold, predicted)
    assert why[0]["why"].startswith("partial") and "binding error" in why[1]["why"]


def test_complete_with_extra_cues_is_strict():
    gold = [("health", ((0, 10), (20, 30)))]
    d = score_document("d", "c", POLICY, gold, [("health", ((0, 10), (20, 30), (40, 45)))])
    assert d.target_credit == [1.0] and d.pred_strict == [True]
    assert corpus_metrics([d])["complete_f1"] == 1.0


def test_span_f1_ignores_groups():
    gold = [("health", ((0, 10), (20, 30)))]
    d = score_document("d", "c", POLICY, gold, [("income", ((0, 10),)), ("age", ((5, 25),))])
    # predicted union [0, 25) = 25 chars; gold union 20 chars; intersection [0,10) + [20,25) = 15
    m = corpus_metrics([d])
    p, r = 15 / 25, 15 / 20
    assert m["span_f1"] == pytest.approx(2 * p * r / (p + r))


def test_empty_denominators_are_null():
    no_targets = score_document("d", "c", POLICY, [("age", ((0, 5), (6, 9)))], [])
    m = corpus_metrics([no_targets])
    assert m["targets"] == 0 and m["complete_recall"] is None and m["graded_recall"] is None
    assert m["strict_precision"] is None and m["complete_f1"] is None and m["document_flag_recall"] is None
    assert m["binding_error_rate"] is None and m["over_flag_rate"] is None


def test_missing_document_counts_as_reported_nothing():
    docs = {"a": {"context_id": "c", "policy": POLICY, "groups": [("health", ((0, 5), (6, 9)))]}}
    scores = score_detector(docs, {})
    assert corpus_metrics(scores)["complete_recall"] == 0.0


@pytest.fixture(scope="module")
def tab_docs():
    if not TAB.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{TAB} is missing: CI must have shared/ beside the clone")
        pytest.skip(f"{TAB} not found (set QLB_SHARED to the shared/ folder)")
    return [QLDocument.model_validate_json(line) for line in TAB.read_text("utf-8").splitlines() if line.strip()]


def test_tab144_gold_targets_score_one(tab_docs):
    corpus = documents_from_records(tab_docs)
    gold_targets = {d: [(a, c) for a, c in doc["groups"] if doc["policy"][a] == "hide"] for d, doc in corpus.items()}
    m = corpus_metrics(score_detector(corpus, gold_targets))
    assert m["targets"] > 50
    for k in ("complete_recall", "graded_recall", "strict_precision", "lenient_precision", "complete_f1",
              "graded_f1", "document_flag_recall", "span_f1"):
        assert m[k] == pytest.approx(1.0), k
    assert m["binding_error_rate"] == 0.0 and m["over_flag_rate"] == 0.0


def test_tab144_through_the_cli(tab_docs, tmp_path, capsys):
    preds = [{"doc_id": d.doc_id, "detector": "gold", "groups": [
        {"attribute": g.attribute, "cues": [list(c) for c in g.cues]} for g in d.groups if d.policy[g.attribute] == "hide"]}
        for d in tab_docs]
    preds.append({"doc_id": "nope", "detector": "gold", "groups": []})
    preds.append({"doc_id": tab_docs[0].doc_id, "detector": "bad", "groups": [{"attribute": "age", "cues": [[5, 2]]}]})
    path = write_lines(tmp_path / "preds.jsonl", preds)
    code = main(["quasileak", "score", "--corpus", str(TAB), "--predictions", str(path), "--json"])
    out, err = capsys.readouterr()
    assert code == 3
    assert [l.split(": ")[0] for l in err.strip().splitlines()] == [f"{path}:145", f"{path}:146"]
    doc = json.loads(out)
    assert set(doc["detectors"]) == {"gold"}
    a = doc["detectors"]["gold"]["all"]
    assert a["complete_recall"] == 1.0 and a["strict_precision"] == 1.0
    assert set(a) == {"targets", "predicted_groups", "complete_recall", "graded_recall", "strict_precision",
                      "lenient_precision", "complete_f1", "graded_f1", "binding_error_rate", "over_flag_rate",
                      "document_flag_recall", "span_f1"}
    assert set(doc["detectors"]["gold"]["by_arity"]) <= {"2", "3", "4"}


def test_slice_precision_counts_bound_groups_only():
    gold = [("health", ((0, 10), (20, 30))), ("occupation", ((40, 50), (60, 70), (80, 90)))]
    predicted = [("health", ((0, 10), (20, 30))), ("occupation", ((40, 50),)), ("income", ((100, 105),))]
    rep = detector_report([score_document("d", "c", POLICY, gold, predicted)])
    assert rep["by_arity"]["2"]["predicted_groups"] == 1 and rep["by_arity"]["2"]["strict_precision"] == 1.0
    assert rep["by_arity"]["3"]["predicted_groups"] == 1 and rep["by_arity"]["3"]["strict_precision"] == 0.0
    assert rep["all"]["predicted_groups"] == 3


def test_lift_and_verification():
    assert lift(0.25, 4) == 0.0 and lift(1.0, 4) == 1.0 and lift(0.1, 4) == 0.0
    assert lift(0.625, 4) == pytest.approx(0.5)
    ok, why = verify_group([0.3, 0.35], 0.95, 4)
    assert ok, why
    ok, why = verify_group([0.8, 0.3], 0.95, 4)
    assert not ok and "single cue" in why
    ok, why = verify_group([0.3, 0.3], 0.5, 4)
    assert not ok and "does not reveal" in why


def test_bootstrap_matches_a_loop_and_scipy():
    from scipy import stats
    rng = np.random.default_rng(1)
    docs = []
    for i in range(60):
        k = int(rng.integers(2, 4))
        gold = [("health", tuple((10 * j, 10 * j + 5) for j in range(k)))]
        hit = int(rng.integers(0, k + 1))
        pred = [("health", tuple((10 * j, 10 * j + 5) for j in range(hit)))] if hit else []
        docs.append(score_document(f"d{i}", "c", POLICY, gold, pred))
    ci = document_bootstrap(docs, n_boot=4000, seed=3)["graded_recall"]
    est = corpus_metrics(docs)["graded_recall"]
    assert ci.estimate == pytest.approx(est) and ci.ci_low < est < ci.ci_high
    credit = np.array([d.target_credit[0] for d in docs])         # one target per document: a plain mean
    ref = stats.bootstrap((credit,), np.mean, n_resamples=4000, method="percentile", random_state=3)
    assert abs(ref.confidence_interval.low - ci.ci_low) < 0.02
    assert abs(ref.confidence_interval.high - ci.ci_high) < 0.02
