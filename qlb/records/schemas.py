"""Validated records at the edge: worlds, native and refusal responses, QuasiLeak documents and
predictions (pydantic).

Two outcomes are distinguished, as the spec requires:

* a *rejected* line fails a rule that makes it unusable (wrong type, unknown world, a label
  outside the domain); validation raises and the ingest keeps the raw text in quarantine;
* an *invalid* native response is well formed but breaks a response rule (probabilities that
  do not sum to 1, a choice that is not a candidate, ...). It validates, is stored with
  ``valid = False`` and the reason, is never repaired, and enters the audits as unavailable.

Rules that need other records (the world a response belongs to, the text a span points into)
read them from the validation context: ``Model.model_validate(obj, context={...})``.
"""
from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any, Iterable, Literal, Mapping

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationInfo, field_validator, model_validator, ValidationError

from qlb.records.ontology import SPLITS, WITHHOLD, _format_loc, load_ontology

ATTRIBUTES: tuple[str, ...] = (
    "age", "gender", "nationality", "education", "occupation", "income", "relationship", "health",
)
POLICY_LABELS: tuple[str, ...] = ("keep", "hide", "neutral")
STATUSES: tuple[str, ...] = ("ok", "unavailable")
PROBABILITY_TOLERANCE = 1e-3
# An identifier the warehouse keys rows by (a world, pair, model, document, detector): at most
# this many characters. DuckDB indexes keys whole, and a few multi-megabyte names exhausted the
# ingest's memory cap; a name that long is a mistake in the file, rejected with its line.
MAX_ID_LENGTH = 256


def model_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a model (1 to ``MAX_ID_LENGTH`` characters, as every identifier),
    or None: one rule for ``qlb collect --model`` and ``qlb ingest --model``."""
    return None if 0 < len(name) <= MAX_ID_LENGTH else \
        f"a model name is 1 to {MAX_ID_LENGTH} characters (got {len(name)})"


def dataset_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a new dataset (1 to ``MAX_ID_LENGTH`` characters, no space at
    either end: an empty or padded name is a slip that would make a dataset no one finds), or None."""
    if not 0 < len(name) <= MAX_ID_LENGTH:
        return f"a dataset name is 1 to {MAX_ID_LENGTH} characters (got {len(name)})"
    if name != name.strip():
        return f"a dataset name has no space at either end (got {name!r})"
    return None

_config = ConfigDict(extra="ignore", frozen=True, str_strip_whitespace=False)
_mutable_config = ConfigDict(extra="ignore", frozen=False)

# A JSON number: int or float, never text or a boolean. Checked in pydantic's core (fast path).
Number = Annotated[float, Strict()]
Score = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]
Label = Annotated[str, Strict()]


def _context(info: ValidationInfo, key: str) -> Any:
    return (info.context or {}).get(key)


def field_path(loc: Iterable[str | int]) -> str:
    """Where in a record a problem lies, as every reject names it: keys joined by dots, list
    positions in brackets (``groups[0].cues[1]``, ``probabilities.DELAY``), the notation of an
    ontology file's problems too. ``""`` for the record as a whole."""
    return _format_loc(tuple(loc))


def _joined_path(outer: str, inner: str) -> str:
    """``inner`` (a path below ``outer``: ``cues``, ``[2]``, ``groups[0].attribute``) written from the record."""
    if not outer or not inner:
        return outer or inner
    return outer + inner if inner.startswith("[") else f"{outer}.{inner}"


class FieldProblem(ValueError):
    """A rule broken by one field, found by a check of the whole record or of a part of it (a model
    validator, which pydantic reports at the part, or a list item's check): ``describe_error`` reads
    the field from here, below where pydantic reports the error (``[0]`` under ``groups[0].cues`` is
    ``groups[0].cues[0]``), so a rejected line reads ``FILE:LINE: field: reason``. The reason does
    not repeat the field's name; the exception's own text is ``field: reason`` (pydantic shows that
    one, without a field)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field, self.reason = field, reason


# --------------------------------------------------------------------------------------- TUPLE
class World(BaseModel):
    """One synthetic case (TUPLE.md section 1). Every label is checked against the ontology."""

    model_config = _config

    world_id: str = Field(min_length=1, max_length=MAX_ID_LENGTH)
    pair_id: str = Field(min_length=1, max_length=MAX_ID_LENGTH)
    domain: str = Field(min_length=1)     # a domain of the dataset's ontology (checked below)
    split: Literal[SPLITS]  # type: ignore[valid-type]
    coarse: str
    mechanism: str
    hypotheses: tuple[str, str]
    recipient_role: str
    candidate_order: tuple[str, ...]
    request: str
    intake_channel: str
    operating_window: str
    case_context: str
    diagnostic_note: str = ""

    @model_validator(mode="after")
    def _labels_belong_to_domain(self, info: ValidationInfo) -> "World":
        ontology = _context(info, "ontology") or load_ontology()
        if self.domain not in ontology.domains:
            raise FieldProblem("domain", f"{self.domain!r} is not a domain of the dataset's ontology "
                                         f"(expected one of {', '.join(ontology.domains)})")
        dom = ontology.domain(self.domain)
        if self.coarse not in dom.classes:
            raise FieldProblem("coarse", f"{self.coarse!r} is not a class of domain {self.domain} "
                                         f"(expected one of {', '.join(dom.classes)})")
        allowed = dom.mechanisms_by_class[self.coarse]
        if self.mechanism not in allowed:
            raise FieldProblem("mechanism", f"{self.mechanism!r} is not a mechanism of "
                                            f"{self.domain}/{self.coarse} (expected one of {', '.join(allowed)})")
        s0, s1 = self.hypotheses
        if s0 == s1 or list(self.hypotheses) != sorted(self.hypotheses):
            raise FieldProblem("hypotheses", "must be two distinct mechanisms in sorted order")
        for h in self.hypotheses:
            if h not in allowed:
                raise FieldProblem("hypotheses", f"{h!r} is not a mechanism of {self.domain}/{self.coarse}")
        if self.mechanism not in self.hypotheses:
            raise FieldProblem("mechanism", f"{self.mechanism!r} is not one of the hypotheses")
        if sorted(self.candidate_order) != list(dom.classes):
            raise FieldProblem("candidate_order", f"must be a permutation of {', '.join(dom.classes)}")
        if self.recipient_role != dom.recipient_role:
            raise FieldProblem("recipient_role", f"must be {dom.recipient_role!r} for domain {self.domain}")
        # the ontology declares each domain's channels and windows: a value outside them (a typo, "Phone"
        # for "phone") would be a category of its own in the attacker's features
        for field, value, allowed, what in (
                ("intake_channel", self.intake_channel, dom.intake_channels, "an intake channel"),
                ("operating_window", self.operating_window, dom.operating_windows, "an operating window")):
            if value not in allowed:
                raise FieldProblem(field, f"{value!r} is not {what} of domain {self.domain} "
                                          f"(expected one of {', '.join(allowed)})")
        return self

    def public_key(self) -> tuple:
        """The fields two worlds of one pair must share (everything public, T and hypotheses)."""
        return (self.domain, self.split, self.coarse, self.hypotheses, self.recipient_role,
                self.candidate_order, self.request, self.intake_channel, self.operating_window,
                self.case_context)


PAIR_SHARED_FIELDS = ("domain", "split", "coarse", "hypotheses", "recipient_role", "candidate_order",
                      "request", "intake_channel", "operating_window", "case_context")


class NativeResponse(BaseModel):
    """A coarse-decision response: shape and types. ``assess(candidates)`` then applies the rules
    that need the world and derives ``valid``, ``invalid_reason`` and ``choice_not_argmax``
    (never read from input). ``model`` may be omitted when the ingest names the model."""

    model_config = _mutable_config

    model: str | None = Field(default=None, min_length=1, max_length=MAX_ID_LENGTH)
    world_id: str = Field(min_length=1, max_length=MAX_ID_LENGTH)
    status: Literal[STATUSES]  # type: ignore[valid-type]
    choice: Label | None = None
    probabilities: dict[str, Number] | None = None
    confidence: Number | None = None
    valid: bool = True
    invalid_reason: str | None = None
    choice_not_argmax: bool = False

    def assess(self, candidates: tuple[str, ...] | frozenset[str]) -> "NativeResponse":
        """Apply the response rules that need the world (its candidate classes): sets ``valid``,
        ``invalid_reason`` and ``choice_not_argmax`` in place and returns self."""
        reason = native_invalid_reason(self.status, self.choice, self.probabilities, self.confidence, candidates)
        # derived fields written straight into the instance dict: pydantic's __setattr__ would
        # re-validate nothing here and costs a third of the ingest hot path
        self.__dict__.update(valid=reason is None, invalid_reason=reason,
                             choice_not_argmax=reason is None and choice_not_argmax(self.choice, self.probabilities))
        return self


def native_invalid_reason(status: str, choice: str | None, probabilities: Mapping[str, float] | None,
                          confidence: float | None, candidates: tuple[str, ...] | frozenset[str]) -> str | None:
    """Why a well-formed native response is invalid (TUPLE.md section 1), or None when valid.

    Hot path of ingest: the common valid case does a handful of set and float operations."""
    if status != "ok":
        return None
    if choice is None:
        return "choice is missing while status is ok"
    if choice not in candidates:
        return f"choice {choice!r} is not a candidate ({', '.join(sorted(candidates))})"
    if probabilities is not None:
        if not set(candidates).issuperset(probabilities):
            unknown = sorted(set(probabilities) - set(candidates))
            return f"probabilities has labels that are not candidates: {', '.join(unknown)}"
        values = probabilities.values()
        total = sum(values)
        if not math.isfinite(total):
            return "probabilities contain a non-finite value"
        if values and min(values) < 0:
            return "probabilities contain a negative value"
        if abs(total - 1.0) > PROBABILITY_TOLERANCE:
            return f"probabilities sum to {math.fsum(values):.6g}, outside 1 +- {PROBABILITY_TOLERANCE:g}"
    if confidence is not None and not (0.0 <= confidence <= 1.0):
        return f"confidence {confidence!r} is outside [0, 1]"
    return None


def invalid_field(reason: str | None) -> str | None:
    """The field an invalid native response's reason (``native_invalid_reason``) is about: the
    reason's first word when it names one, else None."""
    first = (reason or "").split(" ", 1)[0]
    return first if first in ("choice", "probabilities", "confidence") else None


def choice_not_argmax(choice: str | None, probabilities: Mapping[str, float] | None) -> bool:
    """True when probabilities are released and the choice is not their unique argmax."""
    if choice is None or not probabilities:
        return False
    values = list(probabilities.values())
    top = max(values)
    return probabilities.get(choice) != top or values.count(top) > 1


@lru_cache(maxsize=None)
def refusal_label_set(domain: str) -> frozenset[str]:
    """The 17 refusal labels of a domain (16 mechanisms and WITHHOLD)."""
    return frozenset(load_ontology().domain(domain).refusal_labels)


class RefusalResponse(BaseModel):
    """A refusal-probe response: shape, types and score values (negative, non-finite or non-number
    scores fail here). ``label_problem(domain)`` checks the labels against the world's domain."""

    model_config = _mutable_config

    model: str | None = Field(default=None, min_length=1, max_length=MAX_ID_LENGTH)
    world_id: str = Field(min_length=1, max_length=MAX_ID_LENGTH)
    status: Literal[STATUSES]  # type: ignore[valid-type]
    choice: Label | None = None
    scores: dict[str, Score] | None = None
    valid: bool = True                  # False only for a collected answer that could not be validated
    invalid_reason: str | None = None

    def label_problem(self, domain: str, labels: frozenset[str] | None = None) -> tuple[str, str] | None:
        """(field, reason) when the choice or a score key is not one of the domain's refusal labels
        (``labels``: from the dataset's ontology; default the TUPLE ontology's 17), or the choice is
        missing while status is ok; None when the labels are fine. (A line with such a problem is
        rejected, TUPLE.md section 1.)"""
        labels = refusal_label_set(domain) if labels is None else labels
        if self.status == "ok" and self.choice is None:
            return "choice", "missing while status is ok"
        if self.choice is not None and self.choice not in labels:
            return "choice", f"{self.choice!r} is not one of the {domain} domain's mechanisms or {WITHHOLD}"
        if self.scores and not labels.issuperset(self.scores):
            bad = sorted(set(self.scores) - labels)
            return "scores", (f"{', '.join(map(repr, bad))} {'is' if len(bad) == 1 else 'are'} not among the "
                              f"{domain} domain's mechanisms or {WITHHOLD}")
        return None


# ----------------------------------------------------------------------------------- QuasiLeak
Span = tuple[int, int]


def _spans(value: Any) -> list[Span]:
    """A list of spans as read (a field validator's: an item's problem names its position)."""
    if not isinstance(value, (list, tuple)):
        raise ValueError("must be a list of [start, end] pairs")
    out = []
    for i, sp in enumerate(value):
        if (not isinstance(sp, (list, tuple)) or len(sp) != 2
                or any(isinstance(x, bool) or not isinstance(x, int) for x in sp)):
            raise FieldProblem(f"[{i}]", f"must be [start, end] with integer offsets (got {sp!r:.40})")
        out.append((sp[0], sp[1]))
    return out


def check_span_bounds(spans: list[Span], length: int, what: str) -> None:
    """Raise FieldProblem (a ValueError) naming ``what[i]`` for a span that is empty, reversed or
    outside a text of ``length`` characters."""
    for i, (s, e) in enumerate(spans):
        if s >= e:
            raise FieldProblem(f"{what}[{i}]", f"[{s}, {e}] is empty or reversed")
        if s < 0 or e > length:
            raise FieldProblem(f"{what}[{i}]", f"[{s}, {e}] is outside the text (length {length})")


def first_overlap(spans: list[Span]) -> tuple[Span, Span] | None:
    """The first two spans (in start order) that overlap, or None when none do."""
    ordered = sorted(spans)
    for a, b in zip(ordered, ordered[1:]):
        if b[0] < a[1]:
            return a, b
    return None


class CueGroup(BaseModel):
    """A quasi-evidence group: the attribute it reveals and its cue spans (end exclusive)."""

    model_config = _config

    attribute: str = Field(min_length=1)      # one of the corpus's attributes (its policy keys)
    cues: tuple[Span, ...]

    @field_validator("cues", mode="before")
    @classmethod
    def _cue_shape(cls, v: Any) -> Any:
        spans = _spans(v)
        if not spans:
            raise ValueError("a group needs at least 1 cue")
        return spans

    @model_validator(mode="after")
    def _cues_do_not_overlap(self) -> "CueGroup":
        clash = first_overlap(list(self.cues))
        if clash:
            raise FieldProblem("cues", f"{list(clash[0])} and {list(clash[1])} overlap")
        return self


class QLDocument(BaseModel):
    """A QuasiLeak corpus document (QUASILEAK.md section 4)."""

    model_config = _config

    doc_id: str = Field(min_length=1, max_length=MAX_ID_LENGTH)
    split: Literal[SPLITS]  # type: ignore[valid-type]
    context_id: str = Field(min_length=1)
    recipient: str | None = None
    purpose: str | None = None
    text: str
    profile: dict[str, Any]
    policy: dict[str, Literal[POLICY_LABELS]]  # type: ignore[valid-type]
    groups: tuple[CueGroup, ...]
    distractors: tuple[Span, ...] = ()

    @field_validator("distractors", mode="before")
    @classmethod
    def _distractor_shape(cls, v: Any) -> Any:
        return () if v is None else _spans(v)

    @model_validator(mode="after")
    def _document_rules(self) -> "QLDocument":
        # the corpus's attribute set is its documents' policy keys (QUASILEAK.md, OWN_TASK.md; the
        # eight TAB-derived attributes are the default corpus's, not a rule); the corpus-wide
        # "same keys in every document" rule is checked across lines by the ingest
        if not self.policy:
            raise FieldProblem("policy", "must label at least one attribute")
        unknown = sorted(set(self.profile) - set(self.policy))
        if unknown:
            raise FieldProblem("profile", f"has attributes the policy does not label: {', '.join(unknown)}")
        for gi, g in enumerate(self.groups):
            if g.attribute not in self.policy:
                raise FieldProblem(f"groups[{gi}].attribute", f"{g.attribute!r} is not one of the policy's "
                                                              f"attributes ({', '.join(self.policy)})")
        n = len(self.text)
        for gi, g in enumerate(self.groups):
            if not 2 <= len(g.cues) <= 4:
                raise FieldProblem(f"groups[{gi}].cues", f"has {len(g.cues)} cues; gold groups have 2-4")
            check_span_bounds(list(g.cues), n, f"groups[{gi}].cues")
        # gold cues never overlap, within a group (CueGroup) or across groups: the later cue is named
        cues = sorted((c, gi, ci) for gi, g in enumerate(self.groups) for ci, c in enumerate(g.cues))
        for (a, ga, ca), (b, gb, cb) in zip(cues, cues[1:]):
            if b[0] < a[1]:
                raise FieldProblem(f"groups[{gb}].cues[{cb}]",
                                   f"{list(b)} overlaps the gold cue groups[{ga}].cues[{ca}] = {list(a)}")
        check_span_bounds(list(self.distractors), n, "distractors")
        return self


class QLPrediction(BaseModel):
    """A detector's flagged groups for one document. Context: ``documents`` maps doc_id -> text
    length; ``dataset``, the dataset whose stored corpus those are (absent for a corpus read from a
    file); ``attributes``, the corpus's attributes a group may name (absent: not checked here)."""

    model_config = _config

    doc_id: str = Field(min_length=1, max_length=MAX_ID_LENGTH)
    detector: str = Field(min_length=1, max_length=MAX_ID_LENGTH)
    groups: tuple[CueGroup, ...] = ()

    @model_validator(mode="after")
    def _spans_inside_document(self, info: ValidationInfo) -> "QLPrediction":
        docs = _context(info, "documents")
        if docs is None:
            return self
        length = docs.get(self.doc_id)
        if length is None:
            dataset = _context(info, "dataset")
            raise FieldProblem("doc_id", f"unknown doc_id {self.doc_id!r}" + (
                f": not a document of the corpus of dataset {dataset!r}" if dataset is not None and docs
                else f" (dataset {dataset!r} has no corpus: ingest the corpus first)" if dataset is not None
                else " (ingest the corpus first)"))
        for gi, g in enumerate(self.groups):
            check_span_bounds(list(g.cues), length, f"groups[{gi}].cues")
        attributes = _context(info, "attributes")
        if attributes:
            for gi, g in enumerate(self.groups):
                if g.attribute not in attributes:
                    raise FieldProblem(f"groups[{gi}].attribute", f"{g.attribute!r} is not one of the corpus's "
                                                                  f"attributes ({', '.join(sorted(attributes))})")
        return self


Confidence = Annotated[float, Strict(), Field(ge=0, le=1, allow_inf_nan=False)]


class VerifierGroup(BaseModel):
    """One candidate quasi-evidence group with a verifier's confidences attached (QUASILEAK.md
    section 2, the construction check): the verifier's confidence in the sender's true value
    from each cue alone and from the whole group, and the number of values the attribute has at
    its recovery granularity."""

    model_config = _config

    doc_id: str = Field(min_length=1)
    attribute: str = Field(min_length=1)
    n_values: int = Field(ge=2, strict=True)
    cue_confidences: tuple[Confidence, ...] = Field(min_length=1)
    group_confidence: Confidence


def json_position(message: str) -> str:
    """A JSON parser's message about one line's text, its position said within the line: the parser
    counts lines of the text it was given (always line 1 of a JSON Lines line), which read as the
    file's line 1 next to ``FILE:LINE:``. Other positions (a CSV cell's text over several lines)
    stay as they are."""
    return re.sub(r" at line 1 column (\d+)$", r" at column \1", message)


def describe_error(exc: ValidationError) -> tuple[str | None, str]:
    """(field, reason) for the first error of a pydantic ValidationError, in plain words."""
    err = exc.errors(include_url=False)[0]
    problem = (err.get("ctx") or {}).get("error")
    loc = field_path(err["loc"])
    if isinstance(problem, FieldProblem):              # a check that names its field below the error's place
        return _joined_path(loc, problem.field), problem.reason
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    if err["type"] == "missing":
        msg = "required field is missing"
    elif err["type"] == "json_invalid":
        return None, "line is not valid JSON: " + json_position(str(err.get("ctx", {}).get("error", msg)))
    elif err["type"] in ("model_type", "model_attributes_type", "dict_type") and not loc:
        return None, "line is not a JSON object"
    elif "input" in err and err["type"] not in ("missing",) and loc:
        shown = repr(err["input"])
        msg = f"{msg} (got {shown if len(shown) <= 60 else shown[:56] + ' ...'})"    # a cut value says so
    return loc or None, msg
