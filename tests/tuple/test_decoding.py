"""Secret inference decoding: the no-output baseline, leakage safety, grouped folds, planted
signals, the decoder library's shape, and the pair bootstrap against references."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from qlb.stats.bootstrap import pair_bootstrap, resample_indices
from qlb.tuple.decoders import base_library
from qlb.tuple.decoding import correct, decode_domain, grouped_folds
from qlb.tuple.recovery import prediction_rows, recovery_tables
from qlb.records.ontology import load_ontology
from qlb.tuple.release_views import VIEWS, apply_view
from qlb.simulate.tuple_sim import simulate_worlds

FAST = {"prior", "logistic", "template"}
DOM = load_ontology().domain("delivery")


def planted(kind: str, seed: int = 0) -> pd.DataFrame:
    """Delivery worlds of the reference design with a planted release: 'confidence' (only the
    confidence depends on S) or 'probabilities' (the probability vector encodes S exactly)."""
    rng = np.random.default_rng(seed)
    worlds = pd.DataFrame([w for w in simulate_worlds(11) if w["domain"] == "delivery"])
    worlds["hypothesis_0"] = worlds["hypotheses"].str[0]
    worlds["hypothesis_1"] = worlds["hypotheses"].str[1]
    rows = []
    for w in worlds.itertuples(index=False):
        others = [c for c in DOM.classes if c != w.coarse]
        s1 = w.mechanism == w.hypothesis_1
        probs = {w.coarse: 0.7, others[0]: 0.1, others[1]: 0.1, others[2]: 0.1}
        conf = 0.8
        if kind == "confidence":
            conf = round((0.9 if s1 else 0.6) + rng.normal(0, 0.02), 3)
        else:
            probs = {w.coarse: 0.7, others[0]: 0.25 if s1 else 0.025, others[1]: 0.025 if s1 else 0.25,
                     others[2]: 0.025}
        rows.append({"status": "ok", "choice": w.coarse, "probabilities": probs, "confidence": conf})
    out = pd.concat([worlds.drop(columns=["hypotheses"]).reset_index(drop=True), pd.DataFrame(rows)], axis=1)
    return out


@pytest.fixture(scope="module")
def confidence_run():
    frame = planted("confidence")
    return frame, decode_domain("m", "delivery", frame, families=FAST)


def accuracy(res, view):
    return correct(res.test_y, res.selections[view].test_p).mean()


def test_library_sizes_match_the_paper():
    from qlb.tuple.release_views import DECODER_FAMILIES
    for view in VIEWS:
        lib = base_library(view, DOM.classes, DOM.mechanisms)
        assert tuple(dict.fromkeys(f for f, _, _ in lib)) == DECODER_FAMILIES
        assert len(lib) == (27 if view in ("full_probabilities", "full_native") else 15)
        for _, _, est in lib:
            clone(est)          # scikit-learn conventions: parameters stored verbatim


def test_no_output_is_exactly_half(confidence_run):
    frame, res = confidence_run
    assert accuracy(res, "no_output") == 0.5
    # each pair got one prediction for both worlds
    p = pd.Series(res.selections["no_output"].test_p, index=res.test_pair_ids)
    assert p.groupby(level=0).nunique().max() == 1


def test_planted_confidence_signal(confidence_run):
    _, res = confidence_run
    assert accuracy(res, "choice_confidence") > 0.9
    assert accuracy(res, "full_native") > 0.9
    assert abs(accuracy(res, "choice") - 0.5) <= 0.05
    assert abs(accuracy(res, "full_probabilities") - 0.5) <= 0.1


def test_planted_probability_signal():
    res = decode_domain("m", "delivery", planted("probabilities"), families=FAST)
    assert accuracy(res, "full_probabilities") >= 0.97
    assert accuracy(res, "full_native") >= 0.97
    assert abs(accuracy(res, "choice_confidence") - 0.5) <= 0.05


def test_pairs_never_straddle_folds():
    frame = planted("confidence")
    train = frame[frame["split"] == "train"].reset_index(drop=True)
    seen = {}
    for k, (_, held) in enumerate(grouped_folds(train)):
        for pair in train.loc[held, "pair_id"]:
            assert seen.setdefault(pair, k) == k
    assert len(seen) == train["pair_id"].nunique()


def test_leakage_safety(confidence_run):
    frame, base = confidence_run
    views = ("choice_confidence",)
    ref = dict(zip(base.test_world_ids, base.selections["choice_confidence"].test_p))
    test_rows = frame["split"] == "test"
    changed = frame.copy()
    changed.loc[test_rows, "diagnostic_note"] = "a completely different private note"
    swapped = np.where(changed.loc[test_rows, "mechanism"] == changed.loc[test_rows, "hypothesis_0"],
                       changed.loc[test_rows, "hypothesis_1"], changed.loc[test_rows, "hypothesis_0"])
    changed.loc[test_rows, "mechanism"] = swapped                       # shuffled/flipped test labels
    rename = {w: f"zz_{w}" for w in changed.loc[test_rows, "world_id"]}
    changed["world_id"] = changed["world_id"].map(lambda w: rename.get(w, w))
    changed.loc[test_rows, "pair_id"] = "renamed_" + changed.loc[test_rows, "pair_id"]
    res = decode_domain("m", "delivery", changed, views=views, families=FAST)
    back = {v: k for k, v in rename.items()}
    got = {back[w]: p for w, p in zip(res.test_world_ids, res.selections["choice_confidence"].test_p)}
    assert got.keys() == ref.keys()
    assert max(abs(got[w] - ref[w]) for w in ref) < 1e-12
    assert res.selections["choice_confidence"].candidate == base.selections["choice_confidence"].candidate
    # the paired world's response does not move a test prediction
    first_pair = frame[test_rows].iloc[0]["pair_id"]
    a, b = frame.index[(frame["pair_id"] == first_pair)]
    other = frame.copy()
    other.at[b, "confidence"] = 0.01
    res2 = decode_domain("m", "delivery", other, views=views, families=FAST)
    p2 = dict(zip(res2.test_world_ids, res2.selections["choice_confidence"].test_p))
    assert abs(p2[frame.at[a, "world_id"]] - ref[frame.at[a, "world_id"]]) < 1e-12


def test_views_hide_fields():
    frame = planted("confidence").head(4)
    assert apply_view(frame, "choice")["confidence"].isna().all()
    assert apply_view(frame, "choice_confidence")["probabilities"].isna().all()
    assert apply_view(frame, "full_probabilities")["confidence"].isna().all()
    assert apply_view(frame, "no_output")["choice"].isna().all()
    assert (apply_view(frame, "no_output")["status"] == "ok").all()        # the status signal stays


def test_pair_bootstrap_matches_a_loop_and_scipy():
    from scipy import stats
    rng = np.random.default_rng(4)
    n_pairs = 144
    pair_index = np.repeat(np.arange(n_pairs), 2)
    values = (rng.random(2 * n_pairs) < 0.7).astype(float)
    est = pair_bootstrap(values, pair_index, n_boot=2000, seed=9)
    idx = resample_indices(n_pairs, 2000, 9)
    pair_sums = values.reshape(n_pairs, 2).sum(axis=1)
    loop = [pair_sums[row].sum() / (2 * n_pairs) for row in idx]
    assert est.ci_low == pytest.approx(np.quantile(loop, 0.025), abs=1e-12)
    assert est.ci_high == pytest.approx(np.quantile(loop, 0.975), abs=1e-12)
    ref = stats.bootstrap((pair_sums / 2,), np.mean, n_resamples=2000, method="percentile", random_state=9)
    assert abs(ref.confidence_interval.low - est.ci_low) < 0.01
    assert abs(ref.confidence_interval.high - est.ci_high) < 0.01


def test_recovery_tables_and_paired_differences(confidence_run):
    _, res = confidence_run
    rec, diff = recovery_tables(prediction_rows([res]), n_boot=500, seed=1)
    pooled = rec[rec["scope"] == "pooled"].set_index("view")
    assert pooled.loc["no_output", "accuracy"] == 0.5
    assert set(rec["scope"]) == {"pooled", "macro", "delivery"}
    d = diff.set_index(["view_a", "view_b"]).loc[("choice_confidence", "choice")]
    assert d["difference"] == pytest.approx(pooled.loc["choice_confidence", "accuracy"] - pooled.loc["choice", "accuracy"])
    assert d["ci_low"] > 0.3


def test_vectorizer_matches_scikit_learn_dictvectorizer():
    from sklearn.feature_extraction import DictVectorizer
    from qlb.tuple.release_views import Vectorizer
    rng = np.random.default_rng(0)
    keys = [f"k{i}" for i in range(30)]
    train = [{k: float(rng.normal()) for k in rng.choice(keys, 8, replace=False)} for _ in range(40)]
    train[0]["zero_valued"] = 0.0                      # a key seen with value 0 is still in the vocabulary
    test = [{k: float(rng.normal()) for k in rng.choice(keys + ["unseen"], 8, replace=False)} for _ in range(10)]
    ours, ref = Vectorizer(), DictVectorizer(sparse=False)
    assert np.array_equal(ours.fit_transform(train), ref.fit_transform(train))
    assert ours.feature_names_ == list(ref.feature_names_)
    assert np.array_equal(ours.transform(test), ref.transform(test))


def _decoder_features(view: str):
    """Real decoder features: the planted confidence worlds of the delivery domain."""
    from qlb.tuple.decoders import ForestDecoder
    from qlb.tuple.decoding import labels
    from qlb.tuple.release_views import with_public_features
    frame = with_public_features(planted("confidence", seed=3).sort_values("world_id").reset_index(drop=True))
    train = apply_view(frame[frame["split"] == "train"].reset_index(drop=True), view)
    test = apply_view(frame[frame["split"] == "test"].reset_index(drop=True), view)
    dec = ForestDecoder(coarse_classes=DOM.classes).fit(train, labels(train))
    return dec, train, labels(train), test


@pytest.mark.parametrize("depth,leaf", [(None, 1), (None, 5), (6, 1), (6, 5)])
def test_forest_equals_scikit_learn_random_forest(depth, leaf):
    """grow_forest grows scikit-learn's forest: the same probabilities to the last bit."""
    from sklearn.ensemble import RandomForestClassifier
    from qlb.tuple.forest import grow_forest
    dec, train, y, test = _decoder_features("choice_confidence")
    Z, Zt = dec.vectorizer_.transform(dec._dicts(train)), dec.vectorizer_.transform(dec._dicts(test))
    ref = RandomForestClassifier(100, max_depth=depth, min_samples_leaf=leaf, random_state=0, n_jobs=1).fit(Z, y)
    ours = grow_forest(Z, y, 100, depth, leaf, random_state=0)
    assert np.array_equal(ours.predict_p1(Zt), ref.predict_proba(Zt)[:, 1])
    assert np.array_equal(grow_forest(Z, np.ones_like(y), 10).predict_p1(Zt), np.ones(len(Zt)))


@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
def test_shared_scorer_solves_scikit_learns_pairwise_logistic_problem(C):
    """The Newton solver in the pairs' span reaches the optimum of LogisticRegression(C,
    fit_intercept=False) on the explicit pairwise design (solved to a tight tolerance)."""
    from scipy import sparse
    from sklearn.linear_model import LogisticRegression
    from qlb.tuple.decoders import SharedScorerDecoder
    _, train, y, test = _decoder_features("choice_confidence")
    dec = SharedScorerDecoder(C, "raw", DOM.classes, DOM.mechanisms).fit(train, y)

    def design(X):
        Zb, i1, i0 = dec._blocks(dec._features(X), X)
        n, d = Zb.shape
        rows = np.repeat(np.arange(n), 2 * d)
        cols = np.concatenate([i1[:, None] * d + np.arange(d), i0[:, None] * d + np.arange(d)], axis=1).ravel()
        vals = np.concatenate([Zb, -Zb], axis=1).ravel()
        return sparse.csr_matrix((vals, (rows, cols)), shape=(n, len(DOM.mechanisms) * d))

    ref = LogisticRegression(C=C, fit_intercept=False, tol=1e-12, max_iter=100_000).fit(design(train), y)
    assert np.abs(dec.coef_.ravel() - ref.coef_.ravel()).max() < 1e-4
    assert np.abs(dec.predict_proba(test)[:, 1] - ref.predict_proba(design(test))[:, 1]).max() < 1e-5


def test_reselecting_from_stored_configuration_scores_equals_a_refit():
    """The recompute panel's path: candidates and selection rebuilt from a run's stored
    per-configuration scores, for a subset of families, equal a refit with that subset."""
    from qlb.tuple.recovery import config_rows, config_score_rows, reselect_from_scores
    frame = planted("confidence", seed=5)
    full = decode_domain("m", "delivery", frame, ("choice_confidence",), {"prior", "logistic", "template", "shared_scorer"})
    scores, configs = config_score_rows([full]), config_rows([full])
    assert set(scores["view"]) == {"choice_confidence", "choice", "no_output"}
    assert len(scores) == len(frame) * 3 and len(configs) == (4 + 1 + 3 + 3) * 3
    assert scores["p_s1"].map(len).eq(11).all()
    for families in ({"prior", "logistic", "template", "shared_scorer"}, {"prior", "template"}, {"shared_scorer"}):
        refit = full if len(families) == 4 else decode_domain("m", "delivery", frame, ("choice_confidence",), families)
        again = reselect_from_scores(scores, configs, frame, "m", "choice_confidence", families)[0]
        a, b = refit.selections["choice_confidence"], again.selections["choice_confidence"]
        assert (a.candidate, a.candidate_view, a.n_candidates) == (b.candidate, b.candidate_view, b.n_candidates)
        assert np.abs(a.test_p - b.test_p).max() < 1e-9     # the stack refits on the same numbers (BLAS order)
        assert np.array_equal(refit.test_world_ids, again.test_world_ids)


def test_reselecting_needs_scores_for_every_world():
    """Stored scores of a run that predates new worlds cannot be reused: a clear error, no guess."""
    from qlb.tuple.recovery import config_rows, config_score_rows, reselect_from_scores
    frame = planted("confidence", seed=6)
    fit = decode_domain("m", "delivery", frame, ("choice",), {"prior", "template"})
    scores, configs = config_score_rows([fit]), config_rows([fit])
    dropped = scores[scores["world_id"] != scores.loc[scores["split"] == "test", "world_id"].iloc[0]]
    with pytest.raises(ValueError, match="do not cover the test worlds"):
        reselect_from_scores(dropped, configs, frame, "m", "choice", {"prior"})
