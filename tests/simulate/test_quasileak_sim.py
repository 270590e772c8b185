"""Invariants of the simulated QuasiLeak corpus (QUASILEAK.md sections 2 and 4)."""
from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from qlb.records.schemas import ATTRIBUTES, QLDocument
from qlb.simulate.ql_lexicon import CUES, DISTRACTORS
from qlb.simulate.quasileak_sim import simulate_contexts, simulate_corpus


@pytest.fixture(scope="module")
def corpus():
    return simulate_corpus(5)


def test_sizes(corpus):
    assert len(corpus) == 5000
    assert len({d["doc_id"] for d in corpus}) == 5000
    assert len({d["context_id"] for d in corpus}) == 20
    assert len({frozenset(d["profile"].items()) | {d["profile_id"]} for d in corpus}) == 500


def test_policies_cover_keep_and_hide(corpus):
    contexts = simulate_contexts()
    for a in ATTRIBUTES:
        labels = Counter(c["policy"][a] for c in contexts)
        assert labels["keep"] >= 4 and labels["hide"] >= 4


def test_splits_by_profile(corpus):
    split_of = defaultdict(set)
    for d in corpus:
        split_of[d["profile_id"]].add(d["split"])
    assert all(len(s) == 1 for s in split_of.values())
    assert Counter(next(iter(s)) for s in split_of.values()) == {"train": 350, "validation": 75, "test": 75}


def test_offsets_match_cue_text(corpus):
    for d in corpus[:1500]:
        QLDocument.model_validate(d)
        for g in d["groups"]:
            value = d["profile"][g["attribute"]]
            assert 2 <= len(g["cues"]) <= 4
            for s, e in g["cues"]:
                assert d["text"][s:e] in CUES[g["attribute"]][value]
        for s, e in d["distractors"]:
            assert d["text"][s:e] in DISTRACTORS


def test_groups_for_every_policy_label(corpus):
    labels = Counter(d["policy"][g["attribute"]] for d in corpus for g in d["groups"])
    assert labels["hide"] > 0 and labels["keep"] > 0 and labels["neutral"] > 0
    arities = Counter(len(g["cues"]) for d in corpus for g in d["groups"])
    assert set(arities) == {2, 3, 4}
    with_targets = sum(any(d["policy"][g["attribute"]] == "hide" for g in d["groups"]) for d in corpus)
    assert 0.85 < with_targets / len(corpus) < 0.97


def test_deterministic(corpus):
    assert simulate_corpus(5)[:50] == corpus[:50]
    assert simulate_corpus(6)[:50] != corpus[:50]
