"""Simulated QuasiLeak corpus: 500 profiles, 20 contexts, 5,000 documents written from
templates around a weak-cue lexicon, with exact cue offsets (QUASILEAK.md sections 2 and 4).

Policies: for context j and attribute index a, (j + 3a) mod 5 in {0, 1} -> hide, {2, 3} -> keep,
4 -> neutral, so over 20 contexts every attribute is hide in 8, keep in 8 and neutral in 4.
Each profile writes to 10 contexts (250 documents per context). A document carries 1-2 hide
groups (its targets; about 1 in 12 documents has none) and 1-2 keep or neutral groups, each of
2-4 cues drawn from the profile's value, plus 1-2 distractor spans. Splits are by profile
(350 / 75 / 75).
"""
from __future__ import annotations

import numpy as np

from qlb.records.schemas import ATTRIBUTES
from qlb.simulate.ql_lexicon import CLOSERS, CONTEXTS, CUE_FRAMES, CUES, DISTRACTORS, FILLERS, OPENERS

N_PROFILES = 500
DOCS_PER_PROFILE = 10
ARITY_WEIGHTS = {2: 0.4, 3: 0.35, 4: 0.25}


def policy_of(context_index: int) -> dict[str, str]:
    """The policy of context ``context_index`` (j): attribute a is hide when (j + 3a) mod 5 is 0 or 1, keep for 2 or
    3, neutral for 4."""
    labels = {}
    for a, attr in enumerate(ATTRIBUTES):
        r = (context_index + 3 * a) % 5
        labels[attr] = "hide" if r in (0, 1) else "keep" if r in (2, 3) else "neutral"
    return labels


def simulate_contexts() -> list[dict]:
    """The 20 simulated contexts: id, recipient, purpose and policy."""
    return [dict(context_id=f"ctx_{j + 1:02d}", recipient=rec, purpose=pur, policy=policy_of(j))
            for j, (rec, pur) in enumerate(CONTEXTS)]


def simulate_profiles(seed: int) -> list[dict]:
    """The 500 simulated profiles: one lexicon value per attribute and a split by profile (350 train / 75 validation
    / 75 test)."""
    rng = np.random.default_rng([seed, 10])
    order = rng.permutation(N_PROFILES)
    split_of = {}
    for rank, i in enumerate(order):
        split_of[int(i)] = "train" if rank < 350 else "validation" if rank < 425 else "test"
    profiles = []
    for i in range(N_PROFILES):
        values = {a: str(rng.choice(list(CUES[a]))) for a in ATTRIBUTES}
        profiles.append(dict(profile_id=f"u_{i + 1:03d}", split=split_of[i], values=values))
    return profiles


def _pick(rng: np.random.Generator, items: list):
    return items[int(rng.integers(len(items)))]


def _write_document(rng: np.random.Generator, profile: dict, context: dict) -> tuple[str, list[dict], list[list[int]]]:
    policy = context["policy"]
    hide = [a for a in ATTRIBUTES if policy[a] == "hide"]
    other = [a for a in ATTRIBUTES if policy[a] != "hide"]
    n_hide = 0 if rng.random() < 1 / 12 else int(rng.integers(1, 3))
    chosen = list(rng.choice(hide, n_hide, replace=False)) + list(rng.choice(other, int(rng.integers(1, 3)), replace=False))
    arities = list(ARITY_WEIGHTS)
    weights = np.array(list(ARITY_WEIGHTS.values()))
    planned = []  # (group index, cue phrase)
    groups = []
    for gi, attr in enumerate(chosen):
        k = int(rng.choice(arities, p=weights))
        phrases = list(rng.choice(CUES[attr][profile["values"][attr]], k, replace=False))
        groups.append({"attribute": str(attr), "cues": []})
        planned += [(gi, str(p)) for p in phrases]
    order = rng.permutation(len(planned))
    sentences: list[tuple[str, int | None, str | None]] = []  # (frame, group, phrase)
    for idx in order:
        gi, phrase = planned[idx]
        for _ in range(_pick(rng, [0, 0, 1, 1, 2, 4])):
            sentences.append((_pick(rng, FILLERS), None, None))
        sentences.append((_pick(rng, CUE_FRAMES), gi, phrase))
    for _ in range(int(rng.integers(1, 3))):
        pos = int(rng.integers(0, len(sentences) + 1))
        sentences.insert(pos, (_pick(rng, CUE_FRAMES), -1, _pick(rng, DISTRACTORS)))
    text = _pick(rng, OPENERS).format(recipient=context["recipient"], purpose=context["purpose"])
    distractors = []
    for frame, gi, phrase in sentences:
        text += " "
        if phrase is None:
            text += frame
            continue
        start = len(text) + frame.index("{cue}")
        text += frame.format(cue=phrase)
        span = [start, start + len(phrase)]
        if gi == -1:
            distractors.append(span)
        else:
            groups[gi]["cues"].append(span)
    text += " " + _pick(rng, CLOSERS)
    for g in groups:
        g["cues"].sort()
    return text, groups, distractors


def simulate_corpus(seed: int) -> list[dict]:
    """The 5,000 simulated documents (JSON-ready dicts in the QUASILEAK.md corpus format)."""
    rng = np.random.default_rng([seed, 11])
    contexts = simulate_contexts()
    profiles = simulate_profiles(seed)
    ctx_perm = rng.permutation(len(contexts))
    docs = []
    for i, profile in enumerate(profiles):
        for k in range(DOCS_PER_PROFILE):
            context = contexts[int(ctx_perm[(i + 2 * k) % len(contexts)])]
            text, groups, distractors = _write_document(rng, profile, context)
            docs.append(dict(doc_id=f"d_{len(docs) + 1:05d}", split=profile["split"],
                             context_id=context["context_id"], recipient=context["recipient"],
                             purpose=context["purpose"], text=text,
                             profile=dict(profile["values"]),
                             policy=dict(context["policy"]), groups=groups, distractors=distractors,
                             simulated=True, profile_id=profile["profile_id"]))
    return docs
