"""``fit_view`` encodes each feature kind once for all of a view's worlds and reads every fold's
vocabulary and matrix off that encoding (``decoders.FeatureEncoding``), and the template's
diagonal and full configurations share their moments. Both are speed-ups only: every
configuration must give bitwise the numbers it gives when fitted alone, outside any block, with
its own vectorizer."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

from qlb.tuple.decoders import base_library
from qlb.tuple.decoding import fit_view, grouped_folds, labels, split_frames
from qlb.tuple.release_views import apply_view, with_public_features
from tests.tuple.test_decoding import DOM, planted

VIEW = "full_native"
FAMILIES = {"prior", "logistic", "shared_scorer", "template"}


@pytest.fixture(scope="module")
def ragged():
    """Planted releases with ragged features: top-two releases (the other scores missing) and
    unavailable responses in every split, and keys that only some worlds hold (a choice seen in one
    training world, so some folds never learn it; one seen only in test, so no fit does)."""
    frame = planted("probabilities", seed=3)
    rng = np.random.default_rng(5)
    probs, status, choice, conf = [], [], [], []
    for p, ch, cf in zip(frame["probabilities"], frame["choice"], frame["confidence"]):
        u = rng.random()
        if u < 0.1:
            probs.append(None), status.append("unavailable"), choice.append(None), conf.append(np.nan)
            continue
        if u < 0.4:
            top = sorted(p, key=p.get, reverse=True)[:2]
            p = {c: p[c] for c in top}
        probs.append(p), status.append("ok"), choice.append(ch), conf.append(cf if u < 0.7 else np.nan)
    frame["probabilities"], frame["status"], frame["choice"], frame["confidence"] = probs, status, choice, conf
    train, val, test = split_frames(with_public_features(frame))
    train.loc[train.index[0], "choice"] = "RARE"
    test.loc[test.index[0], "choice"] = "UNSEEN"
    return train, labels(train), val, test


def one_by_one(train, y, val, test):
    """Every configuration fitted alone on the same folds, outside any feature block."""
    tr, va, te = (apply_view(f, VIEW) for f in (train, val, test))
    lib = [est for fam, _, est in base_library(VIEW, DOM.classes, DOM.mechanisms) if fam in FAMILIES]
    oof, pv, pt = np.zeros((len(tr), len(lib))), np.zeros((len(va), len(lib))), np.zeros((len(te), len(lib)))
    for k, est in enumerate(lib):
        for fit_idx, out_idx in grouped_folds(train):
            m = clone(est).fit(tr.iloc[fit_idx], y[fit_idx])
            oof[out_idx, k] = m.predict_proba(tr.iloc[out_idx])[:, 1]
        m = clone(est).fit(tr, y)
        pv[:, k], pt[:, k] = m.predict_proba(va)[:, 1], m.predict_proba(te)[:, 1]
    return oof, pv, pt


def test_the_shared_encoding_gives_each_configuration_its_own_numbers(ragged):
    train, y, val, test = ragged
    got = fit_view(train, y, val, test, VIEW, DOM.classes, DOM.mechanisms, families=FAMILIES)
    oof, pv, pt = one_by_one(train, y, val, test)
    assert got.oof.shape == oof.shape and len(set(got.families)) == len(FAMILIES)
    assert np.array_equal(got.oof, oof)
    assert np.array_equal(got.val, pv)
    assert np.array_equal(got.test, pt)
    # the planted scores carry the secret where they are shown: the configurations are not all constant
    assert np.ptp(got.test, axis=0).max() > 0.5
