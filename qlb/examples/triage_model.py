"""A real (trained, not simulated) decision model to audit: ``qlb.examples.triage_model:answer``.

Use it as a ``qlb collect --transport python`` target::

    qlb collect native  --dataset simulated-reference --model triage-example \\
        --transport python --target qlb.examples.triage_model:answer
    qlb collect refusal --dataset simulated-reference --model triage-example \\
        --transport python --target qlb.examples.triage_model:answer

What it is. Two scikit-learn pipelines, TF-IDF (word unigrams and bigrams, sublinear term
frequency) followed by a multinomial ``LogisticRegression`` (C = 1, lbfgs, ``random_state`` 0),
over one text per world: the public request and case context, the private diagnostic note, and
the categorical public fields as tokens (``role_<recipient_role>``, ``channel_<intake_channel>``,
``window_<operating_window>``). The recipient role names the domain, so one pipeline serves all
three domains. The first pipeline predicts the coarse class, the second the fine mechanism.

What it is trained on. The ``train`` split of the worlds in the JSON Lines file named by the
environment variable ``QLB_EXAMPLE_WORLDS`` or, when that is unset, the demo's worlds:
``qlb.simulate.tuple_sim.simulate_worlds(qlb.simulate.DEFAULT_SEED)``, which are exactly the worlds
``qlb demo`` ingests as dataset ``simulated-reference``. The model is fitted lazily on the first
call (under a second, plus building the demo's worlds; with one BLAS thread) and cached for the
process behind a lock, so the collector may call from several threads. Fitting is
deterministic: the same worlds give the same model and the same answers. Nothing is downloaded, nothing is printed.

What it answers. It sees only the request body (COLLECT.md section 1): no world id, split or
gold label.

- native (question ``coarse_cause``): the coarse pipeline's class probabilities restricted to the
  criteria (the world's candidates), renormalised; ``choice`` is the argmax (ties to the first
  candidate in the body's order), ``confidence`` the largest probability.
- refusal (question ``fine_mechanism_audit``), a simple policy chosen for this example: when the
  body's permission text ``must_not_receive`` mentions the mechanism (it does for every domain of
  the shipped ontology), the model answers ``WITHHOLD``; otherwise it names the mechanism
  pipeline's argmax. In both cases it releases the mechanism pipeline's probabilities as the
  scores. When withholding, ``WITHHOLD`` gets 0.5 and the 16 mechanisms share the other 0.5 in
  proportion to the classifier's probabilities (so ``WITHHOLD`` is the unique argmax); when
  naming, the mechanisms carry all the mass and ``WITHHOLD`` gets 0. Logging the classifier's
  scores next to a refusal is what a typical system does, and it is exactly the residual
  channel the refusal audit measures: nothing about the leak is planted here, it is whatever
  the classifier learned from the diagnostic notes.
"""
from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from threadpoolctl import threadpool_limits

WORLDS_ENV = "QLB_EXAMPLE_WORLDS"
WITHHOLD = "WITHHOLD"
NATIVE_KEY = "coarse_cause"
REFUSAL_KEY = "fine_mechanism_audit"
WITHHOLD_SCORE = 0.5
RANDOM_STATE = 0


def features(public: Mapping[str, Any], note: str, recipient_role: str) -> str:
    """The one text the pipelines read: categorical public fields as tokens, then the request,
    the case context and the diagnostic note."""
    tokens = [f"role_{recipient_role}", f"channel_{public.get('intake_channel', '')}",
              f"window_{public.get('operating_window', '')}"]
    return " ".join(tokens + [str(public.get("request", "")), str(public.get("case_context", "")), str(note)])


def world_text(world: Mapping[str, Any]) -> str:
    """``features`` of a stored world row (training)."""
    return features(world, str(world.get("diagnostic_note", "")), str(world.get("recipient_role", "")))


def body_text(body: Mapping[str, Any]) -> str:
    """``features`` of a request body (answering)."""
    state = body["state"]
    return features(state["public"], state["internal_report"]["diagnostic_note"], state["recipient_role"])


def pipeline() -> Pipeline:
    """A fresh, unfitted TF-IDF + logistic regression pipeline."""
    return Pipeline([
        ("tfidf", TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1)),
        ("logreg", LogisticRegression(C=1.0, max_iter=2000, random_state=RANDOM_STATE)),
    ])


@dataclass(frozen=True)
class TriageModel:
    """The two fitted pipelines: coarse class and fine mechanism."""

    coarse: Pipeline
    mechanism: Pipeline

    @classmethod
    def fit(cls, worlds: Sequence[Mapping[str, Any]]) -> "TriageModel":
        """Fit both pipelines on the given worlds (the caller picks the split)."""
        if not worlds:
            raise ValueError("no training worlds: the train split is empty")
        texts = [world_text(w) for w in worlds]
        with threadpool_limits(limits=1):              # one BLAS thread: 20x faster on a busy box, same fit
            coarse = pipeline().fit(texts, [w["coarse"] for w in worlds])
            mechanism = pipeline().fit(texts, [w["mechanism"] for w in worlds])
        return cls(coarse, mechanism)

    def native(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The native answer: probabilities over exactly the criteria, choice and confidence."""
        labels = list(body["questions"][0]["criteria"])
        p = restricted(self.coarse, body_text(body), labels)
        best = int(np.argmax(p))                       # first maximum: ties go to the earlier candidate
        return {"choice": labels[best], "probabilities": {c: float(v) for c, v in zip(labels, p)},
                "confidence": float(p[best])}

    def refusal(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The refusal answer: WITHHOLD when the permission forbids the mechanism, with the
        classifier's mechanism scores released either way (see the module docstring)."""
        labels = [k for k in body["questions"][0]["criteria"] if k != WITHHOLD]
        p = restricted(self.mechanism, body_text(body), labels)
        if must_withhold(body):
            scores = {m: float(v) * (1.0 - WITHHOLD_SCORE) for m, v in zip(labels, p)}
            scores[WITHHOLD] = WITHHOLD_SCORE
            return {"choice": WITHHOLD, "scores": scores}
        scores = {m: float(v) for m, v in zip(labels, p)}
        scores[WITHHOLD] = 0.0
        return {"choice": labels[int(np.argmax(p))], "scores": scores}


def restricted(model: Pipeline, text: str, labels: Sequence[str]) -> np.ndarray:
    """The pipeline's probabilities for ``labels`` (in that order), renormalised over them; a
    label never seen in training gets 0; uniform when none was seen."""
    proba = model.predict_proba([text])[0]
    index = {str(c): i for i, c in enumerate(model.classes_)}
    p = np.array([proba[index[c]] if c in index else 0.0 for c in labels], dtype=float)
    total = p.sum()
    return p / total if total > 0 else np.full(len(labels), 1.0 / len(labels))


def must_withhold(body: Mapping[str, Any]) -> bool:
    """True when the body's permission says the recipient must not receive the mechanism."""
    permission = body.get("state", {}).get("permission", {}) or {}
    return "mechanism" in str(permission.get("must_not_receive", "")).lower()


def read_worlds(path: str | Path) -> list[dict[str, Any]]:
    """Every world of a JSON Lines file (blank lines skipped)."""
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def demo_worlds() -> list[dict[str, Any]]:
    """The demo's worlds (dataset ``simulated-reference``), all splits."""
    from qlb.simulate import DEFAULT_SEED
    from qlb.simulate.tuple_sim import simulate_worlds
    return simulate_worlds(DEFAULT_SEED)


def training_worlds(worlds: Iterable[Mapping[str, Any]] | None = None) -> list[Mapping[str, Any]]:
    """The train split of ``worlds``, or of ``$QLB_EXAMPLE_WORLDS``, or of the demo's worlds."""
    if worlds is None:
        path = os.environ.get(WORLDS_ENV)
        worlds = read_worlds(path) if path else demo_worlds()
    return [w for w in worlds if w.get("split") == "train"]


_LOCK = threading.Lock()
_MODEL: TriageModel | None = None


def fitted_model() -> TriageModel:
    """The process's model, fitted on first use (thread-safe)."""
    global _MODEL
    with _LOCK:
        if _MODEL is None:
            _MODEL = TriageModel.fit(training_worlds())
        return _MODEL


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """The ``qlb collect`` Python target: one answer for one request body (either probe)."""
    key = body["questions"][0]["key"]
    model = fitted_model()
    if key == NATIVE_KEY:
        return model.native(body)
    if key == REFUSAL_KEY:
        return model.refusal(body)
    raise ValueError(f"unknown question {key!r}; expected {NATIVE_KEY} or {REFUSAL_KEY}")
