"""QuasiLeak detectors behind one small interface: ``detect(text, profile, policy) -> groups``.

* ``PatternDetector``: span-level patterns for explicit identifiers mapped to attributes, one
  single-span group per hit, policy ignored: the "existing detectors transfer poorly" reference.
* ``LexiconDetector``: a partial weak-cue lexicon; groups the cues it finds by attribute and
  reports only the attributes the policy labels hide.
* ``ChatEndpointDetector``: any OpenAI-compatible chat endpoint (llama.cpp, vLLM, Ollama ...),
  sent the sender's profile, the policy and the message (as the paper's detector sees them), with
  a published prompt naming the corpus's attributes, strict JSON parsing, a timeout and retries of
  what may be answered next time; an error reply or bad model output becomes a recorded failure
  (the server's own message quoted), never a crash.
* ``PythonDetector``: a local Python function (``module:function`` or ``FILE.py:function``, loaded as
  ``qlb collect --transport python`` loads its target), called once per document with the same
  profile, policy and message as the endpoint; cues as exact quotes or ``[start, end]`` offsets; an
  exception it raises is that document's recorded failure, naming the file, line and function.
* ``SimulatedDetector``: SIMULATED, derived from the gold groups with set miss, partial-group,
  binding-error and over-flag rates, for the demo leaderboard.
"""
from __future__ import annotations

import json
import numbers
import re
import time
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Mapping, Protocol, Sequence

import httpx
import numpy as np

from qlb.collect.answers import EXCERPT_MARK, AnswerError, chat_content, content_json, excerpt, parse_json_text
from qlb.collect.redact import redact, without_key
from qlb.collect.transports import CHAT_PATH, call_target, endpoint_url, error_message, load_target, retry_after
from qlb.quasileak.scoring import Group, Span
from qlb.records.schemas import ATTRIBUTES, first_overlap


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
{{"groups": [{{"attribute": "<one of: {attributes}>", "cues": ["<exact quote>", "<exact quote>"]}}]}}
Report nothing for attributes labelled keep or neutral. If nothing is revealed, answer {{"groups": []}}."""

REQUEST_FAILED = "request failed: "     # how a failure of the request itself begins (no usable reply came back)
UNREADABLE_REPLY = "unreadable reply: "  # HTTP 200 whose body is not a chat completion
MODEL_OUTPUT = "model output: "          # a chat completion whose content is not the groups the prompt asks for
RETRY_STATUSES = frozenset({408, 429})   # and every 5xx: a later attempt may be answered


def system_prompt(attributes: Sequence[str]) -> str:
    """The published instruction, naming the attributes a group may be bound to (the corpus's: its
    policies' keys)."""
    return PROMPT.format(attributes=", ".join(attributes))


def _request_failure(exc: BaseException) -> str:
    """A request that got no reply, in words (httpx's may name the full URL: a credential in it is masked)."""
    return redact(f"{REQUEST_FAILED}{type(exc).__name__}: {str(exc) or 'no details'}")


MAX_RETRY_AFTER = 60.0        # seconds: a longer Retry-After (an hour) would freeze the run; the retry is then early


class _Failed(Exception):
    """One attempt that gave no model output: why, and whether asking again may be answered."""

    def __init__(self, reason: str, retry: bool, wait: float | None = None) -> None:
        super().__init__(reason)
        self.reason, self.retry, self.wait = reason, retry, wait      # wait: the server's Retry-After


class ChatEndpointDetector:
    """Any OpenAI-compatible ``/chat/completions`` endpoint, sent the profile, the policy and the message. Cues
    come back as exact quotes and are located in the text (first unused occurrence); anything else is a
    recorded failure. Only what a later attempt may fix is retried (a timeout, a connection error, HTTP
    408, 429 or 5xx); another 4xx, a reply that is not a chat completion and model output that does not
    parse fail at once."""

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

    def request_body(self, text: str, profile: Mapping[str, object], policy: Mapping[str, str]) -> dict:
        """What is POSTed for one document: the system prompt naming the policy's attributes, and the user turn."""
        return {"model": self.model, "temperature": 0,
                "messages": [{"role": "system", "content": system_prompt(tuple(policy))},
                             {"role": "user", "content": self.user_message(text, profile, policy)}]}

    def _ask(self, text: str, profile: Mapping[str, object], policy: Mapping[str, str]) -> str:
        """The model's message content for one document; ``_Failed`` when there is none."""
        url = endpoint_url(self.base_url, CHAT_PATH)
        try:
            resp = self._http().post(url, json=self.request_body(text, profile, policy))
        except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            raise _Failed(_request_failure(exc), retry=True) from None
        except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
            raise _Failed(_request_failure(exc), retry=False) from None
        if not resp.is_success:
            why = f"HTTP {resp.status_code} {resp.reason_phrase}".strip()
            message = error_message(redact(without_key(resp.text, self.api_key)))    # the server's own words
            raise _Failed(REQUEST_FAILED + why + (f": {message}" if message else ""),
                          retry=resp.status_code in RETRY_STATUSES or resp.status_code >= 500,
                          wait=retry_after(resp))
        try:
            return chat_content(parse_json_text(resp.text))
        except AnswerError as exc:
            raise _Failed(f"{UNREADABLE_REPLY}{exc}", retry=False) from None

    def detect(self, text, profile, policy, gold=()):
        """The endpoint's groups located in ``text``. A failure a later attempt may fix is retried
        (exponential backoff, or the server's Retry-After when it says longer); one that still fails, and every other, becomes a recorded failure."""
        attempt = 0
        while True:
            try:
                content = self._ask(text, profile, policy)
            except _Failed as exc:
                if exc.retry and attempt < self.retries:        # the server's Retry-After when it asks longer
                    time.sleep(max(self.backoff * (2 ** attempt), min(exc.wait or 0.0, MAX_RETRY_AFTER)))
                    attempt += 1
                    continue
                tries = f" (after {attempt} {'retry' if attempt == 1 else 'retries'})" if attempt else ""
                return Detection(failure=exc.reason + tries)
            return parse_model_output(content, text, tuple(policy))


def parse_model_output(content: str, text: str, attributes: Sequence[str] = ATTRIBUTES) -> Detection:
    """Strictly parse ``{"groups": [{"attribute", "cues": [quotes]}]}`` (alone, or in one fenced
    block); locate every quote at its first occurrence no earlier cue holds. Anything else fails
    the whole document, with the reason."""
    try:
        data = content_json(content)
    except AnswerError as exc:
        return Detection(failure=f"{MODEL_OUTPUT}{exc}")
    return located_groups(data, text, attributes, shown=content)


def located_groups(data: Any, text: str, attributes: Sequence[str], prefix: str = MODEL_OUTPUT,
                   offsets: bool = False, shown: str | None = None) -> Detection:
    """The groups of an answer already read (``{"groups": [{"attribute", "cues"}]}``) as character spans
    of ``text``. A quote is located at its first occurrence no earlier cue holds; with ``offsets`` a cue
    may also be ``[start, end]`` (end exclusive), inside the text and overlapping no other cue of its
    group (the predictions file's rules). Anything else fails the whole document: the reason begins
    with ``prefix`` and, when there is no groups list, quotes the start of the answer (``shown``, the
    answer as it came, or else ``data`` as JSON)."""
    if not isinstance(data, dict) or not isinstance(data.get("groups"), list):
        if shown is None:
            try:
                shown = json.dumps(data, ensure_ascii=False, default=repr)
            except (TypeError, ValueError):         # a circular structure
                shown = repr(data)
        return Detection(failure=f'{prefix}no "groups" list{EXCERPT_MARK}{excerpt(shown)}')
    kinds = "quotes or [start, end] offsets" if offsets else "quotes"
    groups: list[Group] = []
    used: list[Span] = []
    for g in data["groups"]:
        attr = g.get("attribute") if isinstance(g, dict) else None
        if attr not in attributes:
            named = "a group without an attribute" if attr is None else f"group attribute {attr!r}"
            return Detection(failure=f"{prefix}{named}: expected one of the document's attributes "
                                     f"({', '.join(attributes)})")
        cues = g.get("cues")
        if not isinstance(cues, list) or not cues or not all(
                (isinstance(c, str) and c) or (offsets and _offset_pair(c) is not None) for c in cues):
            return Detection(failure=f"{prefix}the {attr!r} group's cues are not a non-empty list of {kinds}")
        spans = []
        for cue in cues:
            span = _offset_pair(cue) if not isinstance(cue, str) else _first_unused(cue, text, used)
            if isinstance(span, str):           # a quote that could not be placed: why
                return Detection(failure=f"{prefix}cue {cue[:40]!r} of the {attr!r} group: {span}")
            start, end = span
            if start >= end or start < 0 or end > len(text):
                return Detection(failure=f"{prefix}cue {[start, end]} of the {attr!r} group: "
                                         + ("is empty or reversed" if start >= end
                                            else f"is outside the message (length {len(text)})"))
            spans.append(span)
            used.append(span)
        clash = first_overlap(spans)
        if clash:
            return Detection(failure=f"{prefix}cues {list(clash[0])} and {list(clash[1])} of the {attr!r} group "
                                     "overlap")
        groups.append((attr, tuple(sorted(spans))))
    return Detection(tuple(groups))


def _offset_pair(cue: Any) -> Span | None:
    """``[start, end]`` as a span when ``cue`` is two integers (numpy's too, not booleans), else None."""
    if isinstance(cue, (list, tuple)) and len(cue) == 2 and all(
            isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in cue):
        return int(cue[0]), int(cue[1])
    return None


def _first_unused(quote: str, text: str, used: Sequence[Span]) -> Span | str:
    """Where ``quote`` first occurs in ``text`` overlapping no span of ``used``; else why it cannot be placed."""
    start = text.find(quote)
    while start >= 0 and any(start < e and start + len(quote) > s for s, e in used):
        start = text.find(quote, start + 1)
    if start < 0:
        return ("every occurrence of it in the message is already an earlier cue's" if quote in text
                else "it is not in the message (a cue is an exact quote)")
    return start, start + len(quote)


# --------------------------------------------------------------------------------- python function
TARGET_OUTPUT = "target output: "       # what a Python detector returned is not the groups it must return


def target_name(target: str) -> str:
    """A Python detector's name, ``python:MODULE.FUNCTION`` as ``--target`` names them (a file's module is its
    name without .py: ``python:my_detector.detect`` for ``./my_detector.py:detect``)."""
    module, _, function = target.rpartition(":")
    if module.endswith(".py") or "/" in module or "\\" in module:
        module = PurePath(module.replace("\\", "/")).stem
    return f"python:{module}.{function}"


class PythonDetector:
    """A local Python function called once per document (``--target module:function`` or ``FILE.py:function``).
    It gets one dict: the sender's ``profile``, the ``policy`` and the ``message`` (what the chat endpoint's
    user turn carries), and returns ``{"groups": [{"attribute", "cues"}]}``, each cue an exact quote of the
    message or ``[start, end]`` character offsets. An exception it raises (``SystemExit`` included) is that
    document's recorded failure, naming the file, line and function of its own code where it was raised."""

    simulated = False

    def __init__(self, target: str, name: str | None = None) -> None:
        self.target = target
        self.function = load_target(target)      # qlb collect's loader: ValueError, in words, when it cannot
        self.name = name or target_name(target)

    @staticmethod
    def argument(text: str, profile: Mapping[str, object], policy: Mapping[str, str]) -> dict:
        """What the function is called with: a fresh copy of the profile, the policy and the message (the
        function may change it; the next document gets its own)."""
        return json.loads(ChatEndpointDetector.user_message(text, profile, policy))

    def detect(self, text, profile, policy, gold=()):
        """The function's groups located in ``text``; what it raised, or returned that is not groups, as the
        document's failure."""
        result, raised = call_target(self.function, self.argument(text, profile, policy), self.target)
        if raised is not None:
            return Detection(failure=raised)
        return located_groups(result, text, tuple(policy), TARGET_OUTPUT, offsets=True)


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
