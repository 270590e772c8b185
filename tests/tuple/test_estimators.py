"""scikit-learn's estimator conventions for the decoders and the recipients: parameters stored
verbatim in ``__init__`` (so ``clone`` and ``get_params`` work), learned state set in ``fit``
with a trailing underscore, ``classes_`` from ``fit``, ``NotFittedError`` before ``fit``.

``check_estimator`` as a whole needs numeric X; the decoders read frames of worlds and the
recipients feature dicts, so the data-free checks of ``sklearn.utils.estimator_checks`` run here
and the fitted behaviour is checked on real worlds."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import (
    check_get_params_invariance, check_no_attributes_set_in_init, check_parameters_default_constructible,
    check_set_params,
)

from qlb.records.ontology import load_ontology
from qlb.tuple.decoders import base_library
from qlb.tuple.decoding import labels
from qlb.tuple.recipient_estimators import LogisticRecipient, NativeRecipient, PriorRecipient
from qlb.tuple.recipients import features
from qlb.tuple.release_views import apply_view, with_public_features
from tests.tuple.test_decoding import planted

DOM = load_ontology().domain("delivery")
DECODERS = [est for _, _, est in base_library("full_native", DOM.classes, DOM.mechanisms)]
UNIQUE_DECODERS = list({type(e).__name__: e for e in DECODERS}.values())
RECIPIENTS = [PriorRecipient(DOM.classes), LogisticRecipient(DOM.classes, C=0.1), NativeRecipient(DOM.classes)]
ESTIMATORS = UNIQUE_DECODERS + RECIPIENTS


def _id(est) -> str:
    return type(est).__name__


@pytest.mark.parametrize("est", ESTIMATORS, ids=_id)
@pytest.mark.parametrize("check", [check_no_attributes_set_in_init, check_get_params_invariance, check_set_params,
                                   check_parameters_default_constructible], ids=lambda c: c.__name__)
def test_scikit_learn_data_free_checks(est, check):
    check(type(est).__name__, est)


@pytest.fixture(scope="module")
def worlds():
    frame = with_public_features(planted("confidence", seed=5).sort_values("world_id").reset_index(drop=True))
    train = apply_view(frame[frame["split"] == "train"].reset_index(drop=True), "full_native")
    test = apply_view(frame[frame["split"] == "test"].reset_index(drop=True), "full_native")
    return train, test


@pytest.mark.parametrize("est", UNIQUE_DECODERS, ids=_id)
def test_decoders_follow_the_fit_conventions(est, worlds):
    train, test = worlds
    fresh = clone(est)
    assert not hasattr(fresh, "classes_")                     # a class attribute would show here
    with pytest.raises(NotFittedError):
        fresh.predict_proba(test)
    assert fresh.fit(train, labels(train)) is fresh
    assert list(fresh.classes_) == [0, 1]
    p = fresh.predict_proba(test)
    assert p.shape == (len(test), 2) and np.allclose(p.sum(axis=1), 1)
    assert set(np.unique(fresh.predict(test))) <= {0, 1}
    # clone keeps the parameters and drops the learned state
    again = clone(fresh)
    assert again.get_params() == fresh.get_params() and not hasattr(again, "classes_")


def test_recipients_follow_the_fit_conventions(worlds):
    train, test = worlds
    index = {c: i for i, c in enumerate(DOM.classes)}
    y = train["coarse"].map(index).to_numpy()
    dicts, test_dicts = features(train, DOM.classes), features(test, DOM.classes)
    for est, X, Xt in ((PriorRecipient(DOM.classes), dicts, test_dicts),
                       (LogisticRecipient(DOM.classes, C=0.1), dicts, test_dicts),
                       (NativeRecipient(DOM.classes), train, test)):
        fresh = clone(est)
        with pytest.raises(NotFittedError):
            fresh.predict_proba(Xt)
        assert fresh.fit(X, y) is fresh
        assert list(fresh.classes_) == list(range(len(DOM.classes)))
        q = fresh.predict_proba(Xt)
        assert q.shape == (len(test), len(DOM.classes)) and np.allclose(q.sum(axis=1), 1)
        # the frozen map replays the estimator exactly
        assert np.allclose(fresh.frozen().q(test, test_dicts if Xt is test_dicts else None), q)
    prior = PriorRecipient(DOM.classes).fit(dicts, y)
    assert np.allclose(prior.prior_, np.bincount(y, minlength=len(DOM.classes)) / len(y))


def test_a_logistic_recipient_needs_two_classes():
    with pytest.raises(ValueError, match="two coarse classes"):
        LogisticRecipient(DOM.classes).fit([{"a": 1.0}, {"a": 0.0}], np.array([1, 1]))
