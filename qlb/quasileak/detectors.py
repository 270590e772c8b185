"""QuasiLeak detectors behind one small interface: ``detect(text, profile, policy) -> groups``.

* ``PatternDetector``: span-level patterns for explicit identifiers mapped to attributes, one
  single-span group per hit, policy ignored: the "existing detectors transfer poorly" reference.
* ``LexiconDetector``: a partial weak-cue lexicon; groups the cues it finds by attribute and
  reports only the attributes the policy labels hide.
* ``ChatEndpointDetector``: any OpenAI-compatible chat endpoint (llama.cpp, vLLM, Ollama ...),
  sent the sender's profile, the policy and the message (as the paper's detector sees them), with
  a published prompt, strict JSON parsing, a timeout and retries; bad model output becomes a
  recorded failure, never a crash.
* ``SimulatedDetector``: SIMULATED, derived from the gold groups with set miss, partial-group,
  binding-error and over-flag rates, for the demo leaderboard.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Mapping, Protocol, Sequence

import httpx
import numpy as np

from qlb.collect.redact import redact
from qlb.quasileak.scoring import Group
from qlb.records.schemas import ATTRIBUTES


@dataclass(frozen=True)
class Detection:
    """A detector's answer for one document: its groups, or the reason it failed."""

    groups: tuple[Group, ...] = ()
    failure: str | None = None


class Detector(Protocol):
    name: str
    simulated: bool

    def detect(self, text: str, profile: Mapping[str, object], policy: Mapping[str, str],
               gold: Sequence[Group] = ()) -> Detection:
        """The groups flagged in ``text`` under ``policy`` (``gold`` is read only by simulated detectors), or
        the reason the detector failed."""
        ...


# ------------------------------------------------------------------------------ span patterns
EXPLICIT_PATTERNS: dict[str, str] = {
    "age": r"\b\d{1,3}[- ]years?[- ]old\b|\bage(?:d)? \d{1,3}\b|\bborn in \d{4}\b",
    "gender": r"\b(?:male|female|woman|man|non-binary|transgender)\b",
    "nationality": r"\b(?:Irish|Brazilian|Japanese|Nigerian|Cypriot|Turkish|British|French|German|Italian|Polish)\b",
    "education": r"\b(?:PhD|doctorate|master'?s degree|bachelor'?s degree|high school diploma)\b",
    "occupation": r"\b(?:nurse|engineer|teacher|electrician|lawyer|doctor|farmer|police officer)\b",
    "income": r"[$€£]\s?\d[\d,]*(?:\.\d+)?\b|\b\d[\d,]* (?:euros|dollars|pounds)\b",
    "relationship": r"\b(?:married|divorced|widowed|single|engaged)\b",
    "health": r"\b(?:diabetes|diabetic|asthma|pregnan\w*|depression|cancer|HIV|disabled|disability)\b",
}


class PatternDetector:
    """Explicit-identifier patterns (a PII-style span detector); reports every hit, policy-blind."""

    name = "pattern-pii"
    simulated = False

    def __init__(self) -> None:
        self._patterns = {a: re.compile(p, re.IGNORECASE) for a, p in EXPLICIT_PATTERNS.items()}

    def detect(self, text, profile, policy, gold=()):
        """One single-span group per explicit-identifier match, for every attribute; the policy is ignored."""
        groups = [(attr, ((m.start(), m.end()),)) for attr, rx in self._patterns.items() for m in rx.finditer(text)]
        return Detection(tuple(groups))


# ------------------------------------------------------------------------------------ lexicon
class LexiconDetector:
    """A partial weak-cue lexicon: the first ``coverage`` share of each value's cues (by default
    the simulated corpus's lexicon). Cues found for one attribute form one group; only hide
    attributes are reported, and only with at least ``min_cues`` cues."""

    name = "lexicon-cues"
    simulated = False

    def __init__(self, lexicon: Mapping[str, Mapping[str, Sequence[str]]] | None = None, coverage: float = 0.6,
                 min_cues: int = 2) -> None:
        if lexicon is None:
            from qlb.simulate.ql_lexicon import CUES as lexicon
        self.coverage, self.min_cues = coverage, min_cues
        self._cues: dict[str, re.Pattern] = {}
        for attr, values in lexicon.items():
            phrases = [c for cues in values.values() for c in cues[: max(1, int(round(len(cues) * coverage)))]]
            # one alternation per attribute, longest phrases first so the longest cue wins
            self._cues[attr] = re.compile("|".join(re.escape(c) for c in sorted(phrases, key=len, reverse=True)),
                                          re.IGNORECASE)

    def detect(self, text, profile, policy, gold=()):
        """Lexicon cue spans grouped per hide attribute; only attributes with at least ``min_cues`` cues are
        reported."""
        found: dict[str, list[tuple[int, int]]] = {}
        for attr, rx in self._cues.items():
            if policy.get(attr) != "hide":
                continue
            for m in rx.finditer(text):
                found.setdefault(attr, []).append((m.start(), m.end()))
        groups = [(a, tuple(sorted(s))) for a, s in found.items() if len(s) >= self.min_cues]
        return Detection(tuple(groups))


# ------------------------------------------------------------------------- chat endpoint adapter
PROMPT = """You screen a message before it is sent. You receive one JSON object with three fields: \
"profile", the sender's true value for each personal attribute; "policy", the sender's disclosure \
policy, which labels each attribute keep, hide or neutral; and "message", the text to screen. Find \
groups of 2-4 short text spans (cues) in the message that are each weak on their own but together \
reveal the sender's value of an attribute the policy labels hide. Quote every cue exactly as it \
appears in the message. Answer with JSON only, in this form:
{"groups": [{"attribute": "<one of: age, gender, nationality, education, occupation, income, \
relationship, health>", "cues": ["<exact quote>", "<exact quote>"]}]}
Report nothing for attributes labelled keep or neutral. If nothing is revealed, answer {"groups": []}."""


class ChatEndpointDetector:
    """Any OpenAI-compatible ``/chat/completions`` endpoint, sent the profile, the policy and the message. Cues
    come back as exact quotes and are located in the text (first unused occurrence); anything else is a
    recorded failure."""

    simulated = False

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = 60.0,
                 retries: int = 2, backoff: float = 0.5, name: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout, self.retries, self.backoff = timeout, retries, backoff
        self.name = name or f"chat:{model}"
        self._client: httpx.Client | None = None

    def _http(self) -> httpx.Client:
        """The detector's one HTTP client, created on first use (connections are reused across documents)."""
        if self._client is None:
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            self._client = httpx.Client(timeout=self.timeout, headers=headers)
        return self._client

    def close(self) -> None:
        """Close the HTTP client, if one was opened (the next request opens a new one)."""
        if self._client is not None:
            self._client.close()
            self._client = None

    @staticmethod
    def user_message(text: str, profile: Mapping[str, object], policy: Mapping[str, str]) -> str:
        """The user turn: the sender's profile, the policy and the message as one JSON object."""
        return json.dumps({"profile": dict(profile), "policy": dict(policy), "message": text}, ensure_ascii=False)

    def _request(self, text: str, profile: Mapping[str, object], policy: Mapping[str, str]) -> str:
        body = {"model": self.model, "temperature": 0,
                "messages": [{"role": "system", "content": PROMPT},
                             {"role": "user", "content": self.user_message(text, profile, policy)}]}
        resp = self._http().post(f"{self.base_url}/chat/completions", json=body)
        resp.raise_for_status()
        return resp.json()["choices"][0]["message"]["content"]

    def detect(self, text, profile, policy, gold=()):
        """The endpoint's groups located in ``text``; a request that still fails after the retries (exponential
        backoff) becomes a recorded failure."""
        last = "no attempt"
        for attempt in range(self.retries + 1):
            try:
                content = self._request(text, profile, policy)
                break
            except (httpx.HTTPError, httpx.InvalidURL, OSError, ValueError, KeyError, IndexError, TypeError) as exc:
                last = redact(f"request failed: {type(exc).__name__}: {exc}")     # httpx names the full URL
                if attempt < self.retries:
                    time.sleep(self.backoff * (2 ** attempt))
        else:
            return Detection(failure=last)
        return parse_model_output(content, text, tuple(policy))


def parse_model_output(content: str, text: str, attributes: Sequence[str] = ATTRIBUTES) -> Detection:
    """Strictly parse ``{"groups": [{"attribute", "cues": [quotes]}]}``; locate every quote."""
    cleaned = content.strip()
    if cleaned.startswith("```"):
        cleaned = re.sub(r"^```(?:json)?\s*|\s*```$", "", cleaned)
    try:
        data = json.loads(cleaned)
    except ValueError as exc:
        return Detection(failure=f"model output is not JSON: {exc}")
    if not isinstance(data, dict) or not isinstance(data.get("groups"), list):
        return Detection(failure="model output lacks a 'groups' list")
    groups: list[Group] = []
    used: list[tuple[int, int]] = []
    for i, g in enumerate(data["groups"]):
        if not isinstance(g, dict) or g.get("attribute") not in attributes:
            return Detection(failure=f"group {i}: unknown or missing attribute")
        cues = g.get("cues")
        if not isinstance(cues, list) or not cues or not all(isinstance(c, str) and c for c in cues):
            return Detection(failure=f"group {i}: cues must be a non-empty list of quotes")
        spans = []
        for quote in cues:
            start = text.find(quote)
            while start >= 0 and any(start < e and start + len(quote) > s for s, e in used):
                start = text.find(quote, start + 1)
            if start < 0:
                return Detection(failure=f"group {i}: cue {quote[:40]!r} is not in the message")
            spans.append((start, start + len(quote)))
            used.append(spans[-1])
        groups.append((g["attribute"], tuple(sorted(spans))))
    return Detection(tuple(groups))


# ---------------------------------------------------------------------------------- simulated
@dataclass(frozen=True)
class SimulatedDetector:
    """SIMULATED detector derived from the gold groups: misses a target entirely with ``miss``,
    drops cues (partial group) with ``partial``, binds to a wrong attribute with ``binding``, and
    over-flags a keep/neutral group with ``over_flag``. Deterministic per document and seed."""

    name: str
    miss: float
    partial: float
    binding: float
    over_flag: float
    seed: int = 7
    simulated: bool = True

    def detect(self, text, profile, policy, gold=()):
        """SIMULATED groups derived from ``gold``: hide targets missed, trimmed or bound to a wrong attribute at the
        set rates, keep/neutral groups over-flagged at ``over_flag``."""
        rng = np.random.default_rng([self.seed, len(text), sum(ord(c) for c in text[:64])])
        out: list[Group] = []
        for attr, cues in gold:
            if policy.get(attr) == "hide":
                if rng.random() < self.miss:
                    continue
                cues = tuple(cues)
                if rng.random() < self.partial and len(cues) > 1:
                    keep = int(rng.integers(1, len(cues)))
                    cues = tuple(sorted(cues[i] for i in rng.choice(len(cues), keep, replace=False)))
                if rng.random() < self.binding:
                    attr = str(rng.choice(other_attributes(policy, attr)))
                out.append((attr, cues))
            elif rng.random() < self.over_flag:
                out.append((attr, tuple(cues)))
        return Detection(tuple(out))


SIMULATED_DETECTORS: tuple[SimulatedDetector, ...] = (
    SimulatedDetector("sim-det-strong", miss=0.10, partial=0.15, binding=0.03, over_flag=0.05),
    SimulatedDetector("sim-det-local", miss=0.55, partial=0.35, binding=0.12, over_flag=0.10),
    SimulatedDetector("sim-det-binder", miss=0.20, partial=0.20, binding=0.35, over_flag=0.25),
)


def other_attributes(policy: Mapping[str, str], attr: str) -> list[str]:
    """The corpus's attributes other than ``attr`` (what a binding error names instead): the
    default corpus's in their fixed order, then any others sorted."""
    known = [a for a in ATTRIBUTES if a in policy and a != attr]
    return known + sorted(a for a in policy if a not in ATTRIBUTES and a != attr)


def builtin_detectors() -> dict[str, Detector]:
    """The detectors ``qlb quasileak run`` and the demo know by name."""
    dets: list[Detector] = [PatternDetector(), LexiconDetector(), *SIMULATED_DETECTORS]
    return {d.name: d for d in dets}
