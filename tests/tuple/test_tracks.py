"""Paper Tables 29 and 30 (qlb.tuple.tracks): the both-worlds-correct subset and the attack tracks,
on hand-made worlds and planted attacker scores, against hand computations and independent
references (a loop bootstrap over the same pair draws, sklearn's logistic regression)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from qlb.stats.bootstrap import percentile_interval, resample_indices
from qlb.tuple.decoding import ViewFit, view_candidates
from qlb.tuple.recovery import recovery_tables
from qlb.tuple.tracks import (
    attack_tracks, both_correct_pairs, both_worlds_correct, coarse_correct, domain_tracks, family_bests,
    robustness_checks,
)

N_BOOT, SEED = 400, 7


def loop_interval(per_pair_correct: list[list[float]], n_boot: int = N_BOOT, seed: int = SEED) -> tuple[float, float]:
    """The pair-clustered percentile interval by a plain loop over the same pair draws."""
    draws = resample_indices(len(per_pair_correct), n_boot, seed)
    means = [np.mean([c for i in row for c in per_pair_correct[i]]) for row in draws]
    return percentile_interval(np.array(means))


def test_coarse_correct_needs_an_ok_status_and_the_true_class():
    worlds = pd.DataFrame({"status": ["ok", "ok", "unavailable", "ok"], "choice": ["A", "B", "A", None],
                           "coarse": ["A", "A", "A", "A"]})
    assert coarse_correct(worlds).tolist() == [True, False, False, False]


def test_both_correct_pairs_keeps_a_pair_only_when_both_worlds_are_right():
    worlds = pd.DataFrame({
        "pair_id": ["p1", "p1", "p2", "p2", "p3", "p3"],
        "status": ["ok", "ok", "ok", "unavailable", "ok", "ok"],
        "choice": ["A", "A", "A", "A", "A", "B"],          # p2: right choice but unavailable; p3: one wrong
        "coarse": ["A", "A", "A", "A", "A", "A"],
    })
    assert both_correct_pairs(worlds) == {"p1"}


def _selected(model: str, correct: list[list[int]]) -> pd.DataFrame:
    rows = []
    for p, pair in enumerate(correct):
        for w, c in enumerate(pair):
            rows.append((model, f"{model}-w{p}{w}", "delivery" if p % 2 else "it", f"p{p}", bool(c),
                         0.2 if c else 1.6))
    return pd.DataFrame(rows, columns=["model", "world_id", "domain", "pair_id", "correct", "log_loss"])


def _answers(model: str, right: list[list[bool]]) -> pd.DataFrame:
    rows = [(model, f"{model}-w{p}{w}", "ok", "A" if r else "B", "A")
            for p, pair in enumerate(right) for w, r in enumerate(pair)]
    return pd.DataFrame(rows, columns=["model", "world_id", "status", "choice", "coarse"])


def test_both_worlds_correct_scores_the_frozen_attacker_on_the_kept_pairs_only():
    # pairs 0, 2, 3 have both coarse answers right; the attacker is right in 2 + 1 + 2 of their 6 worlds
    selected = _selected("m", [[1, 1], [0, 0], [1, 0], [1, 1], [0, 1]])
    answers = _answers("m", [[True, True], [True, False], [True, True], [True, True], [False, False]])
    none_right = _answers("z", [[False, True], [True, False]])
    out = both_worlds_correct(pd.concat([selected, _selected("z", [[1, 1], [1, 1]])]),
                              pd.concat([answers, none_right]), N_BOOT, SEED).set_index("model")
    m = out.loc["m"]
    assert (m["pairs_kept"], m["pairs_total"], m["n"]) == (3, 5, 6)     # counts include both worlds
    assert m["accuracy"] == pytest.approx(5 / 6)
    assert m["log_loss"] == pytest.approx((5 * 0.2 + 1.6) / 6)
    assert (m["ci_low"], m["ci_high"]) == pytest.approx(loop_interval([[1, 1], [1, 0], [1, 1]]))
    z = out.loc["z"]                                                    # nothing kept: no recovery, not 0
    assert (z["pairs_kept"], z["n"]) == (0, 0) and np.isnan(z["accuracy"])


def _fit(oof: np.ndarray, val: np.ndarray, test: np.ndarray) -> ViewFit:
    return ViewFit("full_native", ["prior", "logistic a", "logistic b", "template x"],
                   ["prior", "logistic", "logistic", "template"], oof, val, test)


def test_family_bests_follow_the_main_selection_rule():
    y_val = np.array([1, 0, 1, 0])
    val = np.column_stack([
        np.full(4, 0.5),                      # prior: 50%
        [0.9, 0.1, 0.9, 0.1],                 # logistic a: 100%, confident
        [0.6, 0.4, 0.6, 0.4],                 # logistic b: 100%, larger log loss -> a wins the tie
        [0.4, 0.6, 0.9, 0.1],                 # template: 50%
    ])
    fit = _fit(np.zeros((2, 4)), val, np.zeros((2, 4)))
    cands = view_candidates(fit, np.array([0, 1]))
    best = {family: c.name for family, c in family_bests(cands, fit, y_val).items()}
    assert best == {"prior": "prior", "logistic": "logistic a", "template": "template x"}


def test_domain_tracks_planted_signal():
    rng = np.random.default_rng(0)
    y_train, y_val, y_test = (np.tile([0, 1], n) for n in (20, 6, 6))

    def planted(y: np.ndarray, strength: float) -> np.ndarray:
        return np.clip(0.5 + strength * (2 * y - 1) + rng.normal(0, 0.05, len(y)), 0.01, 0.99)

    cols = lambda y: np.column_stack([np.full(len(y), 0.5), planted(y, 0.0), planted(y, 0.3),  # noqa: E731
                                      planted(y, -0.2)])      # the template reads the signal backwards
    fit = _fit(cols(y_train), cols(y_val), cols(y_test))
    tracks = domain_tracks(fit, y_train, y_val)
    assert list(tracks) == ["best_configuration", "prior", "logistic", "template", "family_winners",
                            "all_configurations", "stack"]
    np.testing.assert_array_equal(tracks["best_configuration"], fit.test[:, 2])   # the planted logistic
    np.testing.assert_array_equal(tracks["logistic"], fit.test[:, 2])
    np.testing.assert_array_equal(tracks["all_configurations"], fit.test.mean(axis=1))
    logit = lambda p: np.log(np.clip(p, 1e-6, 1 - 1e-6) / (1 - np.clip(p, 1e-6, 1 - 1e-6)))  # noqa: E731
    ref = LogisticRegression(C=1.0, max_iter=2000).fit(logit(fit.oof), y_train)
    np.testing.assert_allclose(tracks["stack"], ref.predict_proba(logit(fit.test))[:, 1])
    # the stack learns to flip the backwards template: it recovers every test world
    assert ((tracks["stack"] > 0.5) == y_test).all()


def _stored_run(model: str = "m") -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """One model, one domain: 16 training, 6 validation and 6 test pairs; two stored configurations
    (a base rate and a planted attacker that is right on every world but one test world)."""
    rows, scores = [], []
    n = {"train": 16, "validation": 6, "test": 6}
    k = 0
    for split, pairs in n.items():
        for p in range(pairs):
            for w in range(2):
                wid = f"w{k:03d}"
                k += 1
                y = w                                   # the second world holds the pair's second hypothesis
                rows.append((model, wid, f"{split}-p{p}", "it", split, "A", f"s{y}", "s1", "ok", "A"))
                signal = 0.8 if y == 1 else 0.2
                if split == "test" and p == 0 and w == 0:
                    signal = 0.7                       # planted miss: names s1 for a world that holds s0
                scores.append((model, "it", "full_native", split, wid, [0.5, signal]))
    worlds = pd.DataFrame(rows, columns=["model", "world_id", "pair_id", "domain", "split", "coarse", "mechanism",
                                         "hypothesis_1", "status", "choice"])
    scores = pd.DataFrame(scores, columns=["model", "domain", "view", "split", "world_id", "p_s1"])
    configs = pd.DataFrame({"view": "full_native", "config": [0, 1], "family": ["prior", "template"],
                            "name": ["prior", "template raw diag shrink=0"]})
    test = worlds[worlds["split"] == "test"]
    selected = pd.DataFrame({"model": model, "world_id": test["world_id"], "domain": "it", "pair_id": test["pair_id"],
                             "correct": [w != "w044" for w in test["world_id"]], "log_loss": 0.3})
    return selected, scores, configs, worlds


def test_attack_tracks_from_stored_scores():
    selected, scores, configs, worlds = _stored_run()
    tracks = attack_tracks(selected, scores, configs, worlds, N_BOOT, SEED).set_index("track")
    assert tracks.index.tolist() == ["selected", "best_configuration", "prior", "template", "family_winners",
                                     "all_configurations", "stack"]
    assert (tracks["n"] == 12).all()
    assert tracks.loc["prior", "accuracy"] == 0.5                   # the same answer for both worlds of a pair
    assert tracks.loc["template", "accuracy"] == pytest.approx(11 / 12)
    assert tracks.loc["best_configuration", "accuracy"] == pytest.approx(11 / 12)
    # the average of 0.5 and the attacker keeps its side of 0.5: the same worlds right
    assert tracks.loc["all_configurations", "accuracy"] == pytest.approx(11 / 12)
    per_pair = [[0.0, 1.0]] + [[1.0, 1.0]] * 5                        # test pair 0 holds the planted miss
    assert (tracks.loc["template", "ci_low"], tracks.loc["template", "ci_high"]) == \
        pytest.approx(loop_interval(per_pair))
    # the selected track is the stored recovery's pooled row: same resamples, same numbers
    rec, _ = recovery_tables(selected.assign(view="full_native"), N_BOOT, SEED)
    pooled = rec[rec["scope"] == "pooled"].iloc[0]
    assert tuple(tracks.loc["selected", ["accuracy", "ci_low", "ci_high"]]) == \
        pytest.approx((pooled["accuracy"], pooled["ci_low"], pooled["ci_high"]))


def test_robustness_checks_without_configuration_scores_keeps_the_subset():
    selected, scores, configs, worlds = _stored_run()
    checks = robustness_checks(selected, scores.iloc[0:0], configs, worlds, N_BOOT, SEED)
    assert checks.tracks.empty
    assert checks.both_correct.set_index("model").loc["m", "pairs_kept"] == 6       # every choice is right
    assert checks.both_correct.set_index("model").loc["m", "accuracy"] == pytest.approx(11 / 12)
