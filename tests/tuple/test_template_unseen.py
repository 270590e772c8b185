"""The template decoder on a mechanism it never saw in training (issue 20, item 9c): the unseen
hypothesis is scored against its class's mean template, so it does not win by default."""
from __future__ import annotations

import numpy as np
import pandas as pd

from qlb.tuple.decoders import TemplateDecoder

CLASSES = ("ADDRESS", "DAMAGE", "DELAY", "DELIVERY_RECORD")


def worlds(rows: list[tuple[str, str, str, float]]) -> pd.DataFrame:
    """(hypothesis_0, hypothesis_1, mechanism, p(ADDRESS)) per world, all of class DELAY."""
    out = []
    for h0, h1, mech, p_address in rows:
        rest = (1.0 - p_address) / 3
        out.append({"coarse": "DELAY", "hypothesis_0": h0, "hypothesis_1": h1, "mechanism": mech, "status": "ok",
                    "choice": "DELAY", "confidence": np.nan,
                    "probabilities": {"ADDRESS": p_address, "DAMAGE": rest, "DELAY": rest, "DELIVERY_RECORD": rest}})
    return pd.DataFrame(out)


def labels(frame: pd.DataFrame) -> np.ndarray:
    return (frame["mechanism"] == frame["hypothesis_1"]).to_numpy().astype(int)


def test_an_unseen_mechanism_does_not_win_by_default():
    # training sees mechanisms "a" (p(ADDRESS) near 0.6) and "b" (near 0.1) only; "c" never
    rng = np.random.default_rng(0)
    train = worlds([("a", "b", m, (0.6 if m == "a" else 0.1) + rng.normal(0, 0.01)) for m in "ab" * 20])
    # test pairs (b, c): a world that looks exactly like b, and one unlike anything seen
    test = worlds([("b", "c", "b", 0.1), ("b", "c", "c", 0.9)])
    for covariance, shrink in (("diag", 0.0), ("diag", 2.0), ("full", 2.0)):
        dec = TemplateDecoder(covariance, shrink, "raw", CLASSES).fit(train, labels(train))
        p_c = dec.predict_proba(test)[:, 1]
        # before the fix, "c" had log-likelihood 0 (the maximum) and won both worlds
        assert p_c[0] < 0.01, (covariance, shrink, p_c)
        assert p_c[1] > 0.5, (covariance, shrink, p_c)
        # the unseen mechanism is scored exactly against the class mean template
        z = dec._features(test)
        mu = dec.class_means_["DELAY"]
        prec = dec.precisions_["DELAY"]
        delta = [-0.5 * (zi - mu) @ prec @ (zi - mu) + 0.5 * (zi - dec.means_["b"]) @ prec @ (zi - dec.means_["b"])
                 for zi in z]
        assert np.allclose(p_c, 1.0 / (1.0 + np.exp(-np.clip(delta, -50, 50))), rtol=0, atol=1e-12)


def test_both_hypotheses_unseen_or_an_unseen_class_is_even():
    rng = np.random.default_rng(1)
    train = worlds([("a", "b", m, (0.6 if m == "a" else 0.1) + rng.normal(0, 0.01)) for m in "ab" * 10])
    dec = TemplateDecoder("diag", 2.0, "raw", CLASSES).fit(train, labels(train))
    test = worlds([("c", "d", "c", 0.3)])
    assert dec.predict_proba(test)[:, 1].tolist() == [0.5]
    other = test.assign(coarse="DAMAGE")
    assert dec.predict_proba(other)[:, 1].tolist() == [0.5]
