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
_FENCED = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)\n?```", re.S)       # a fenced block anywhere
EXCERPT_MARK = "; it starts: "     # a reason quoting the start of an answer: reasons are counted without it
EXCERPT_CHARS = 80


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


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """The start of ``text`` in double quotes, its white space squeezed, cut at ``limit`` characters."""
    flat = " ".join(text.split())
    return json.dumps(flat if len(flat) <= limit else flat[:limit] + "...", ensure_ascii=False)


def reason_kind(reason: str) -> str:
    """A reason without the quoted start of the answer: the reasons of one kind, counted together."""
    return reason.split(EXCERPT_MARK)[0]


def parse_json_text(text: str) -> Any:
    """JSON from a body or message content; a Markdown code fence around it is accepted. The
    reason of an AnswerError quotes the start of what came instead."""
    if not text.strip():
        raise AnswerError("the answer is empty")
    m = _FENCE.match(text)
    try:
        return json.loads(m.group(1) if m else text)
    except json.JSONDecodeError as exc:
        raise AnswerError(f"the answer is not valid JSON ({exc.msg}){EXCERPT_MARK}{excerpt(text)}") from None


def content_json(text: str) -> Any:
    """JSON from a chat message's content: the whole content, or the one fenced block it holds
    (```json ... ```), with words before or after it ("Sure! Here is the answer: ...").
    Content with several fenced blocks is not read: which one is the answer is not ours to guess."""
    try:
        return parse_json_text(text)
    except AnswerError as whole:
        fences = text.count("```") // 2
        if fences > 1:
            raise AnswerError(f"the answer holds {fences} fenced blocks (expected one JSON object, alone or in "
                              f"one fenced block){EXCERPT_MARK}{excerpt(text)}") from None
        blocks = _FENCED.findall(text)
        if fences != 1 or len(blocks) != 1:
            raise whole from None
        try:
            return json.loads(blocks[0])
        except json.JSONDecodeError as exc:
            raise AnswerError(f"the fenced block is not valid JSON ({exc.msg}){EXCERPT_MARK}"
                              f"{excerpt(blocks[0])}") from None


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
    total; letters absent from the list get no key (missing, never 0); confidence missing. An
    answer that is not exactly a candidate letter cannot be read (AnswerError naming what the
    model answered and the candidate letters)."""
    labels = letters(len(candidates))
    letter_of = dict(zip(labels, candidates))
    content = chat_content(payload).strip()
    choice = letter_of.get(content)
    if choice is None:
        raise AnswerError(_not_a_letter(content, labels))
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
    out: dict[str, Any] = {"choice": choice}
    if probe == "native":
        out.update(probabilities=dist, confidence=None)
    else:
        out["scores"] = dist
    return out


def _not_a_letter(content: str, labels: Sequence[str]) -> str:
    """Why an answered ``content`` is none of the candidate ``labels`` (COLLECT.md: exactly a
    candidate letter, so "c" or "B." is not one)."""
    span = f"{labels[0]}-{labels[-1]}" if len(labels) > 1 else labels[0]
    if not content:
        return f"the model answered nothing; the candidates are {span}"
    if re.fullmatch(r"[A-Z]{1,3}", content):
        return f'the model answered letter "{content}"; the candidates are {span}'
    case = ", in upper case" if content.upper() in labels else ""
    return f"the model answered {excerpt(content, 40)}, not a candidate letter (the candidates are {span}{case})"


def has_logprobs(payload: Any) -> bool:
    """Whether a chat completion carries top_logprobs for its first generated token."""
    return bool(_top_logprobs(payload))


def _top_logprobs(payload: Any) -> list[Mapping[str, Any]]:
    try:
        first = payload["choices"][0]["logprobs"]["content"][0]
        alts = first.get("top_logprobs") or []
    except (KeyError, IndexError, TypeError, AttributeError):
        return []
    return [a for a in alts if isinstance(a, dict)]
