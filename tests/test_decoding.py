"""Secret inference decoding: the no-output baseline, leakage safety, grouped folds, planted
signals, the decoder library's shape, and the pair bootstrap against references."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from qlb.bootstrap import pair_bootstrap, resample_indices
from qlb.decoders import base_library
from qlb.decoding import correct, decode_domain, grouped_folds
from qlb.decoding_run import prediction_rows, recovery_tables
from qlb.ontology import load_ontology
from qlb.release_views import VIEWS, apply_view
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
    for view in VIEWS:
        lib = base_library(view, DOM.classes, DOM.mechanisms)
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
    from qlb.release_views import Vectorizer
    rng = np.random.default_rng(0)
    keys = [f"k{i}" for i in range(30)]
    train = [{k: float(rng.normal()) for k in rng.choice(keys, 8, replace=False)} for _ in range(40)]
    train[0]["zero_valued"] = 0.0                      # a key seen with value 0 is still in the vocabulary
    test = [{k: float(rng.normal()) for k in rng.choice(keys + ["unseen"], 8, replace=False)} for _ in range(10)]
    ours, ref = Vectorizer(), DictVectorizer(sparse=False)
    assert np.array_equal(ours.fit_transform(train), ref.fit_transform(train))
    assert ours.feature_names_ == list(ref.feature_names_)
    assert np.array_equal(ours.transform(test), ref.transform(test))
