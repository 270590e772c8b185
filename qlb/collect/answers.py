"""Reading a model's answer into a response line (COLLECT.md section 2).

Every reader returns the fields of one response line, ``{"choice", "probabilities"|"scores",
"confidence"}``, each possibly missing (None): what the model said, never repaired. Whether the
line is valid is decided afterwards by the same validation as ``qlb ingest``. A reader raises
``AnswerError`` when the answer cannot be read at all (not JSON, not an object).
"""
from __future__ import annotations

import json
import math
import re
from typing import Any, Mapping, Sequence

_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n?(.*?)\n?```\s*$", re.S)


class AnswerError(ValueError):
    """The answer could not be read (the reason is stored with the invalid response)."""


def score_key(probe: str) -> str:
    """The response field that carries the distribution: probabilities (native) or scores."""
    return "probabilities" if probe == "native" else "scores"


def answer_fields(answer: Any, probe: str) -> dict[str, Any]:
    """The response fields of an answer object: choice, probabilities (native) or scores
    (refusal; ``probabilities`` accepted when ``scores`` is absent), confidence (native)."""
    if not isinstance(answer, dict):
        raise AnswerError(f"the answer is not a JSON object (got {type(answer).__name__})")
    out: dict[str, Any] = {"choice": answer.get("choice")}
    if probe == "native":
        out["probabilities"] = answer.get("probabilities")
        out["confidence"] = answer.get("confidence")
    else:
        out["scores"] = answer["scores"] if "scores" in answer else answer.get("probabilities")
    return out


ANSWER_FIELDS: frozenset[str] = frozenset({"choice", "probabilities", "scores", "confidence"})


def typed_answer(payload: Any, question_key: str, probe: str) -> dict[str, Any]:
    """A typed endpoint's answer: ``answers.<question key>`` when present, else the top-level
    object. An ``answers`` object without that key and no answer field at the top level is an
    answer filed under another question (AnswerError naming the keys it has), not an empty answer."""
    if not isinstance(payload, dict):
        raise AnswerError(f"the response body is not a JSON object (got {type(payload).__name__})")
    answers = payload.get("answers")
    if isinstance(answers, dict) and question_key in answers:
        return answer_fields(answers[question_key], probe)
    if "answers" in payload and not ANSWER_FIELDS & set(payload):
        if isinstance(answers, dict):
            got = ", ".join(repr(k) for k in answers) if answers else "an empty object"
        else:
            got = "null" if answers is None else f"a {type(answers).__name__}, not an object keyed by question"
        raise AnswerError(f"no answer for question {question_key!r} under answers (got {got}; expected "
                          f"answers.{question_key}, or choice at the top level)")
    return answer_fields(payload, probe)


def parse_json_text(text: str) -> Any:
    """JSON from a body or message content; a Markdown code fence around it is accepted."""
    m = _FENCE.match(text)
    try:
        return json.loads(m.group(1) if m else text)
    except (json.JSONDecodeError, TypeError) as exc:
        raise AnswerError(f"the answer is not valid JSON: {exc}") from None


def chat_content(payload: Any) -> str:
    """The first choice's message content of a chat completion."""
    try:
        content = payload["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise AnswerError("not a chat completion: no choices[0].message.content") from None
    if not isinstance(content, str):
        raise AnswerError("the chat completion's message content is not text")
    return content


def letters(n: int) -> list[str]:
    """The candidate letters A, B, C, ... for ``n`` criteria (AA, AB, ... past Z)."""
    out = []
    for i in range(n):
        s, k = "", i
        while True:
            s = chr(ord("A") + k % 26) + s
            k = k // 26 - 1
            if k < 0:
                break
        out.append(s)
    return out


def letters_answer(payload: Any, candidates: Sequence[str], probe: str) -> dict[str, Any]:
    """The ``--answer letters`` reading of a chat completion: choice = the letter answered;
    the distribution = exp(logprob) of the first generated token's top alternatives whose text,
    stripped of spaces, is exactly a candidate letter, summed per letter and divided by their
    total; letters absent from the list get no key (missing, never 0); confidence missing."""
    letter_of = dict(zip(letters(len(candidates)), candidates))
    content = chat_content(payload).strip()
    choice = letter_of.get(content)
    mass: dict[str, float] = {}
    for alt in _top_logprobs(payload):
        token, logprob = alt.get("token"), alt.get("logprob")
        if not isinstance(token, str) or not isinstance(logprob, (int, float)) or not math.isfinite(logprob):
            continue
        label = letter_of.get(token.replace(" ", ""))
        if label is not None:
            mass[label] = mass.get(label, 0.0) + math.exp(logprob)
    total = sum(mass.values())
    dist = {label: mass[label] / total for label in candidates if label in mass} if total > 0 else None
    out: dict[str, Any] = {"choice": choice if choice is not None else (content or None)}
    if probe == "native":
        out.update(probabilities=dist, confidence=None)
    else:
        out["scores"] = dist
    return out


def _top_logprobs(payload: Any) -> list[Mapping[str, Any]]:
    try:
        first = payload["choices"][0]["logprobs"]["content"][0]
        alts = first.get("top_logprobs") or []
    except (KeyError, IndexError, TypeError, AttributeError):
        return []
    return [a for a in alts if isinstance(a, dict)]
