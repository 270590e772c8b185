"""The template decoder on releases that leave numbers out (a top-two release, an unavailable
response, a zero residual mass): a missing number is missing, not 0. Checked against scipy's
Gaussian on the observed coordinates, numpy's NaN-aware means, and a planted signal."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import multivariate_normal

from qlb.tuple.decoders import TemplateDecoder
from qlb.tuple.release_views import NUMERIC_PREFIXES

CLASSES = ("ADDRESS", "DAMAGE", "DELAY", "DELIVERY_RECORD")


def release(mech: str, shown: bool, rng: np.random.Generator) -> dict:
    """A DELAY world of mechanism ``mech`` (a or b). Its runner-up score p(ADDRESS) says which (0.3 for a,
    0.1 for b); ``shown`` False leaves ADDRESS out, as a top-two release does when another class is second, and
    then nothing released tells a from b."""
    p_address = (0.3 if mech == "a" else 0.1) + rng.normal(0, 0.02)
    probs = {"DELAY": 0.6 + rng.normal(0, 0.02), "DAMAGE": 0.05 + rng.normal(0, 0.01)}
    if shown:
        probs["ADDRESS"] = p_address
    return {"coarse": "DELAY", "hypothesis_0": "a", "hypothesis_1": "b", "mechanism": mech, "status": "ok",
            "choice": "DELAY", "confidence": np.nan, "probabilities": probs}


def frame(n: int, seed: int, shown_rate: float = 0.5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame([release(m, bool(rng.random() < shown_rate), rng) for m in "ab" * n])


def labels(f: pd.DataFrame) -> np.ndarray:
    return (f["mechanism"] == f["hypothesis_1"]).to_numpy().astype(int)


def observed(dec: TemplateDecoder, f: pd.DataFrame) -> np.ndarray:
    names = dec.vectorizer_.feature_names_
    numeric = np.array([n.startswith(NUMERIC_PREFIXES) for n in names])
    present = np.array([[n in d for n in names] for d in dec._dicts(f)])
    return present | ~numeric


@pytest.mark.parametrize("covariance,shrink", [("diag", 0.0), ("diag", 2.0), ("full", 2.0)])
def test_a_world_is_scored_by_the_gaussian_over_what_it_shows(covariance, shrink):
    train, test = frame(40, 0), frame(10, 1)
    dec = TemplateDecoder(covariance, shrink, "raw", CLASSES).fit(train, labels(train))
    z, seen = dec._features(test), observed(dec, test)
    assert not seen.all() and seen.any(axis=1).all()
    S = dec.covariances_["DELAY"]
    want = []
    for zi, o in zip(z, seen):
        cov = S[np.ix_(o, o)]
        lb, la = (multivariate_normal(dec.means_[m][o], cov).logpdf(zi[o]) for m in ("b", "a"))
        want.append(1.0 / (1.0 + np.exp(-(lb - la))))
    assert np.allclose(dec.predict_proba(test)[:, 1], want, rtol=0, atol=1e-9)


def test_templates_are_the_means_of_the_worlds_that_show_each_number():
    train = frame(40, 2)
    dec = TemplateDecoder("diag", 0.0, "raw", CLASSES).fit(train, labels(train))
    z = np.where(observed(dec, train), dec._features(train), np.nan)
    for m in ("a", "b"):
        assert np.allclose(dec.means_[m], np.nanmean(z[train["mechanism"].to_numpy() == m], axis=0), atol=1e-12)
    resid = z - np.array([dec.means_[m] for m in train["mechanism"]])
    want = np.nansum(resid ** 2, axis=0) / (np.sum(~np.isnan(resid), axis=0) - 1) + 0.05
    assert np.allclose(np.diag(dec.covariances_["DELAY"]), want, atol=1e-12)


def test_a_planted_signal_is_read_where_shown_and_no_guess_is_made_where_it_is_not():
    train, test = frame(60, 3), frame(30, 4)
    y = labels(test)
    shown = np.array(["ADDRESS" in p for p in test["probabilities"]])
    for covariance, shrink in (("diag", 0.0), ("full", 2.0)):
        p = TemplateDecoder(covariance, shrink, "raw", CLASSES).fit(train, labels(train)).predict_proba(test)[:, 1]
        assert ((p[shown] > 0.5) == y[shown]).mean() > 0.95
        # with ADDRESS left out nothing separates a from b: were the absent score read as 0, every such world
        # would look like b (0.1 is nearer 0 than 0.3) with near certainty
        assert np.abs(p[~shown] - 0.5).max() < 0.35, p[~shown]
