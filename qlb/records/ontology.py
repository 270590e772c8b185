"""The decision task: domains, coarse classes, mechanisms, checks and authored costs.

The TUPLE ontology (``qlb/data/ontology.json``, a verbatim copy of ``shared/spec/ontology.json``
so the engine works without the spec folder beside it) is the default. An auditor's own task
comes in a file of the same format (``shared/spec/OWN_TASK.md``), validated here by
``parse_ontology``: every rule is checked, every problem is reported (one line each, as
``FILE: dotted.path: message (line N)``) and a file that breaks any rule is rejected whole
(``OntologyError``). The packaged TUPLE file goes through the same parser.

A file's version is the sha256 of its canonical JSON (``ontology_sha256``): sorted keys, no
whitespace, so reformatting a file does not change its version.
"""
from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
from dataclasses import dataclass, field, fields
from functools import lru_cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Annotated, Literal, Mapping, Optional

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

DOMAINS: tuple[str, ...] = ("delivery", "equipment", "it")
SPLITS: tuple[str, ...] = ("train", "validation", "test")
WITHHOLD = "WITHHOLD"
INSPECT = "INSPECT"
PACKAGED_SOURCE = "qlb/data/ontology.json"

# ------------------------------------------------------------------------- the file's rules
ID_PATTERN = "[A-Za-z0-9_]+"
_ID_RE = re.compile(r"[A-Za-z0-9_]+")
MIN_DOMAINS, MAX_DOMAINS = 1, 20
MIN_CLASSES, MAX_CLASSES = 2, 8
MIN_MECHANISMS, MAX_MECHANISMS = 2, 12
RESERVED_IDS: tuple[str, ...] = (WITHHOLD,)            # no class or mechanism may be called this
RESERVED_CLASS_IDS: tuple[str, ...] = (WITHHOLD, INSPECT)   # INSPECT is asymmetric_costs' inspection row
AUTHORED_COST_KEYS: tuple[str, ...] = ("wrong_route", "review", "check", "unavailable_fallback")
FALLBACKS: tuple[str, ...] = ("review",)
# The multipliers a cost profile may set (TUPLE.md section 5; 1.0 = authored when absent).
PROFILE_MULTIPLIERS: tuple[str, ...] = ("review_x", "inspect_x", "check_x", "wrong_route_x",
                                        "asymmetric_offdiag_x", "asymmetric_class0_column_x")
# A profile may instead scale the asymmetric column of a class it names: both keys together.
PROFILE_COLUMN_CLASS = "asymmetric_column_class"
PROFILE_COLUMN_X = "asymmetric_column_x"
REQUIRED_PROFILE = "authored"


class OntologyError(ValueError):
    """An ontology file that breaks the rules: ``problems`` holds one line per problem,
    ``FILE: dotted.path: message``. Nothing built from such a file is stored or used."""

    def __init__(self, problems: list[str] | tuple[str, ...] | str):
        self.problems: list[str] = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


# ------------------------------------------------------------------------------ dataclasses
def _freeze(value: Any) -> Any:
    """Read-only view of nested mappings (lists become tuples); other values unchanged."""
    if isinstance(value, (dict, MappingProxyType)):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _thaw(value: Any) -> Any:
    """Plain dicts for pickling (``MappingProxyType`` cannot be pickled)."""
    if isinstance(value, (dict, MappingProxyType)):
        return {k: _thaw(v) for k, v in value.items()}
    return value


class _Picklable:
    """Frozen dataclasses whose mappings are read-only proxies: pickled as their constructor
    arguments with the proxies as plain dicts (``__post_init__`` freezes them again)."""

    _MAPPINGS: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in self._MAPPINGS:
            object.__setattr__(self, name, _freeze(getattr(self, name)))

    def __reduce__(self):
        return (type(self), tuple(_thaw(getattr(self, f.name)) for f in fields(self)))  # type: ignore[arg-type]


@dataclass(frozen=True)
class Domain(_Picklable):
    """One audit domain: its recipient contract, coarse classes and their mechanisms."""

    name: str
    title: str
    recipient_role: str
    intake_channels: tuple[str, ...]
    operating_windows: tuple[str, ...]
    classes: tuple[str, ...]                      # canonical (lexicographic) order
    mechanisms_by_class: Mapping[str, tuple[str, ...]]
    checks: Mapping[str, str]
    asymmetric_costs: Mapping[str, Mapping[str, float]]
    may_receive: str = ""
    must_not_receive: str = ""
    descriptions: Mapping[str, str] = field(default_factory=dict)

    _MAPPINGS = ("mechanisms_by_class", "checks", "asymmetric_costs", "descriptions")

    def describe(self, label: str) -> str:
        """The ontology's description of a class or mechanism, else its humanised identifier
        (``DELIVERY_RECORD`` -> "Delivery record")."""
        return self.descriptions.get(label) or humanise(label)

    @property
    def mechanisms(self) -> tuple[str, ...]:
        """Every mechanism in lexicographic identifier order (the refusal candidate order)."""
        return tuple(sorted(m for ms in self.mechanisms_by_class.values() for m in ms))

    @property
    def refusal_labels(self) -> tuple[str, ...]:
        """The refusal labels: the mechanisms, then WITHHOLD."""
        return self.mechanisms + (WITHHOLD,)

    def class_of(self, mechanism: str) -> str | None:
        """The coarse class whose mechanisms include ``mechanism``, or None when no class does."""
        for cls, ms in self.mechanisms_by_class.items():
            if mechanism in ms:
                return cls
        return None


_SHORT_WORDS = frozenset({"A", "AM", "AN", "AS", "AT", "BE", "BY", "DO", "GO", "HE", "IF", "IN", "IS", "ME", "MY",
                          "NO", "OF", "ON", "OR", "SO", "TO", "UP", "WE", "THE", "AND", "FOR", "NOT", "BUT",
                          "OUT", "OFF", "ALL", "ANY", "HER", "HIS", "OUR", "NEW", "OLD"})


def _acronym(word: str, shouting: bool) -> bool:
    """Whether an all-caps ``word`` is an acronym to keep: any such word inside an identifier that is not
    all capitals (``check_KYC_docs``); in an all-capitals identifier (``IT_OUTAGE``), a word of two
    letters or one without a vowel (``IT``, ``KYC``) unless it is a common short word (``OF``, ``NO``)."""
    if len(word) < 2 or not word.isupper() or not word.isalpha():
        return False
    if not shouting:
        return True
    return word not in _SHORT_WORDS and (len(word) == 2 or not set(word) & set("AEIOUY"))


def humanise(identifier: str) -> str:
    """A readable label for an identifier: ``missed_transfer`` -> "Missed transfer", ``IT_OUTAGE`` ->
    "IT outage", ``APPROVE`` -> "Approve" (acronyms keep their capitals, see ``_acronym``)."""
    words = identifier.replace("_", " ").split()
    if not words:
        return identifier
    shouting = identifier.upper() == identifier
    out = [w if _acronym(w, shouting) else w.lower() for w in words]
    out[0] = out[0][:1].upper() + out[0][1:]
    return " ".join(out)


@dataclass(frozen=True)
class Ontology(_Picklable):
    """The decision task: its domains, the authored costs and the cost profiles.

    ``sha256`` is the version of the file it was read from (``ontology_sha256``), ``source``
    the name it was read under, ``notes`` what the file does that is allowed but worth saying
    (a profile naming a class a domain lacks), ``body`` the file's canonical JSON."""

    domains: Mapping[str, Domain]
    authored_costs: Mapping[str, object]
    cost_profiles: Mapping[str, Mapping[str, object]]
    sha256: str = ""
    source: str = field(default="", compare=False)
    notes: tuple[str, ...] = field(default=(), compare=False)
    body: str = field(default="", compare=False, repr=False)

    _MAPPINGS = ("domains", "authored_costs", "cost_profiles")

    def domain(self, name: str) -> Domain:
        """The named domain (KeyError for an unknown name)."""
        return self.domains[name]

    def profile_column(self, profile: str, domain: str) -> str | None:
        """The class whose asymmetric-cost column ``profile`` scales in ``domain``: the class it
        names (``asymmetric_column_class``) when the domain has it, the canonical first class for
        ``asymmetric_class0_column_x``, else None (the profile scales no column there)."""
        p = self.cost_profiles[profile]
        classes = self.domain(domain).classes
        if PROFILE_COLUMN_CLASS in p:
            return p[PROFILE_COLUMN_CLASS] if p[PROFILE_COLUMN_CLASS] in classes else None  # type: ignore[return-value]
        if "asymmetric_class0_column_x" in p:
            return classes[0]
        return None

    def to_json(self) -> str:
        """The ontology as its file's canonical JSON (sorted keys, no whitespace): parsing it again
        gives the same ontology and the same sha256."""
        if self.body:
            return self.body
        doc: dict[str, Any] = {
            "domains": {name: _domain_doc(d) for name, d in self.domains.items()},
            "authored_costs": _thaw(self.authored_costs),
            "cost_profiles": _thaw(self.cost_profiles),
        }
        return canonical_json(doc)


def _domain_doc(d: Domain) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "title": d.title, "recipient_role": d.recipient_role, "may_receive": d.may_receive,
        "must_not_receive": d.must_not_receive, "intake_channels": list(d.intake_channels),
        "operating_windows": list(d.operating_windows),
        "classes": {c: list(d.mechanisms_by_class[c]) for c in d.classes},
        "checks": dict(d.checks), "asymmetric_costs": _thaw(d.asymmetric_costs),
    }
    if d.descriptions:
        doc["descriptions"] = dict(d.descriptions)
    return doc


# ------------------------------------------------------------------------ canonical JSON
def canonical_json(doc: Any) -> str:
    """``json.dumps(doc, sort_keys=True, separators=(",", ":"))``: the text a version is taken of."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


class _DupDict(dict):
    """A JSON object that had a key twice (json.loads would silently keep the last)."""

    duplicates: list[str]


def _pairs(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    dups: list[str] = []
    for k, v in pairs:
        if k in out and k not in dups:
            dups.append(k)
        out[k] = v
    if dups:
        d = _DupDict(out)
        d.duplicates = dups
        return d
    return out


def _strip_duplicates(value: Any, loc: tuple, found: list[tuple[tuple, str]]) -> Any:
    """Plain dicts again, with every twice-given key recorded as (loc, message)."""
    if isinstance(value, dict):
        for k in getattr(value, "duplicates", ()):
            found.append((loc + (k,), "key given more than once in one object"))
        return {k: _strip_duplicates(v, loc + (k,), found) for k, v in value.items()}
    if isinstance(value, list):
        return [_strip_duplicates(v, loc + (i,), found) for i, v in enumerate(value)]
    return value


def _read_json(text: str, source: str) -> tuple[Any, list[tuple[tuple, str]]]:
    """The parsed document and its duplicate-key problems; OntologyError when not JSON."""
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        raw = json.loads(text, object_pairs_hook=_pairs)
    except json.JSONDecodeError as exc:
        raise OntologyError([f"{source}: not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"]) from None
    except RecursionError:
        raise OntologyError([f"{source}: not valid JSON: nested too deeply"]) from None
    found: list[tuple[tuple, str]] = []
    try:
        return _strip_duplicates(raw, (), found), found
    except RecursionError:      # json.loads may accept a depth the walk cannot take
        raise OntologyError([f"{source}: not valid JSON: nested too deeply"]) from None


def ontology_sha256(text: str) -> str:
    """The version of an ontology file: sha256 of its canonical JSON (whitespace and key order do
    not change it). OntologyError when the text is not JSON."""
    raw, _ = _read_json(text, "ontology")
    return hashlib.sha256(canonical_json(raw).encode("utf-8")).hexdigest()


def decode_ontology_bytes(data: bytes, source: str = "ontology") -> str:
    """The text of an ontology file's bytes (UTF-8, a byte-order mark allowed); OntologyError otherwise."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise OntologyError([f"{source}: not valid UTF-8 (byte {exc.start})"]) from None


def read_ontology_file(path: str | Path, source: str | None = None) -> Ontology:
    """Read and validate an ontology file (``source`` defaults to the path as given)."""
    path = Path(path)
    src = source or str(path)
    return parse_ontology(decode_ontology_bytes(path.read_bytes(), src), src)


# --------------------------------------------------------------------- pydantic: the format
def _custom(message: str) -> PydanticCustomError:
    # the message goes through the context, so braces in it are never read as a template
    return PydanticCustomError("ontology", "{message}", {"message": message})


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_TYPE_NAMES = {"string_type": "a string", "dict_type": "an object", "model_type": "an object",
               "model_attributes_type": "an object", "list_type": "a list", "float_type": "a number",
               "int_type": "a number", "bool_type": "true or false", "none_required": "null"}


def _model_keys(title: str) -> tuple[str, ...]:
    """The keys the spec model named ``title`` allows (its fields or their aliases): what a typo'd key of its object
    is compared with for a suggestion."""
    model = globals().get(title)
    fields_of = getattr(model, "model_fields", {})
    return tuple(sorted(info.alias or name for name, info in fields_of.items()))


def _plain(err: Mapping[str, Any], keys: tuple[str, ...] = ()) -> str:
    """One pydantic error as a plain message (``keys``: those the object allows, for an unknown key's suggestion)."""
    kind = err["type"]
    ctx = err.get("ctx") or {}
    if kind == "ontology":
        return err["msg"]
    if kind == "missing":
        return "required key is missing"
    if kind == "extra_forbidden":
        loc = err.get("loc") or ()
        near = difflib.get_close_matches(str(loc[-1]), keys, n=1, cutoff=0.8) if len(loc) == 1 else []
        return "unknown key" + (f" (did you mean {near[0]!r}?)" if near else "")
    if kind in _TYPE_NAMES:
        return f"must be {_TYPE_NAMES[kind]} (got {_short(err.get('input'))})"
    if kind == "finite_number":
        return f"must be a finite number (got {_short(err.get('input'))})"
    if kind == "greater_than_equal":
        return f"must be >= {ctx.get('ge')} (got {_short(err.get('input'))})"
    if kind == "literal_error":
        return f"must be {ctx.get('expected')} (got {_short(err.get('input'))})"
    return err["msg"]


def _problem(loc: tuple, message: str, data: Any) -> InitErrorDetails:
    return InitErrorDetails(type=_custom(message), loc=loc, input=data)


def _validate_with(handler, data: Any, extra: list[InitErrorDetails], title: str):
    """Run pydantic's own validation and add the rules checked on the raw data: every problem of
    both is raised together (pydantic alone would skip a model's cross-field rules once one of
    its fields fails)."""
    try:
        result = handler(data)
        errors: list[InitErrorDetails] = []
    except ValidationError as exc:
        result = None
        keys = _model_keys(title)
        errors = [_problem(e["loc"], _plain(e, keys), e.get("input")) for e in exc.errors(include_url=False)]
    errors += extra
    if errors:
        raise ValidationError.from_exception_data(title, errors)
    return result


def _non_empty(value: str) -> str:
    if not value.strip():
        raise _custom("must be a non-empty string")
    return value


def _distinct_list(value: list[str]) -> list[str]:
    if not value:
        raise _custom("must be a non-empty list")
    if any(not v.strip() for v in value):
        raise _custom("items must be non-empty strings")
    seen: set[str] = set()
    twice = [v for v in value if v in seen or seen.add(v)]  # type: ignore[func-returns-value]
    if twice:
        raise _custom(f"items must be distinct: {', '.join(repr(v) for v in dict.fromkeys(twice))} listed more than once")
    return value


NonEmpty = Annotated[str, AfterValidator(_non_empty)]
DistinctList = Annotated[list[str], AfterValidator(_distinct_list)]
_STRICT = ConfigDict(extra="forbid", strict=True)


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _id_problem(value: Any, what: str, reserved: tuple[str, ...]) -> str | None:
    if not isinstance(value, str):
        return None
    if not _ID_RE.fullmatch(value):
        return f"{what} id {value!r} must match {ID_PATTERN}"
    if value in reserved:
        return f"{what} id {value!r} is reserved"
    return None


def _domain_rules(d: dict) -> list[tuple[tuple, str]]:
    """The rules across a domain's fields (ids, counts, checks, cost matrix, descriptions), read
    defensively from the raw data: a part of the wrong type is left to pydantic's message."""
    out: list[tuple[tuple, str]] = []
    classes = d.get("classes")
    class_ids: list[str] = []
    mechanism_ids: list[str] = []
    if isinstance(classes, dict):
        n = len(classes)
        if n < MIN_CLASSES:
            out.append((("classes",), f"{_plural(n, 'class', 'classes')}, need at least {MIN_CLASSES}"))
        elif n > MAX_CLASSES:
            out.append((("classes",), f"{_plural(n, 'class', 'classes')}, at most {MAX_CLASSES}"))
        owner: dict[str, str] = {}
        for cls, mechs in classes.items():
            bad = _id_problem(cls, "class", RESERVED_CLASS_IDS)
            if bad:
                out.append((("classes", cls), bad))
            class_ids.append(cls)
            if not isinstance(mechs, list):
                continue
            m = len(mechs)
            if m < MIN_MECHANISMS:
                out.append((("classes", cls), f"{_plural(m, 'mechanism')}, need at least {MIN_MECHANISMS}"))
            elif m > MAX_MECHANISMS:
                out.append((("classes", cls), f"{_plural(m, 'mechanism')}, at most {MAX_MECHANISMS}"))
            for i, mech in enumerate(mechs):
                if not isinstance(mech, str):
                    continue
                bad = _id_problem(mech, "mechanism", RESERVED_IDS)
                if bad:
                    out.append((("classes", cls, i), bad))
                if mech in owner:
                    where = "this class" if owner[mech] == cls else f"class {owner[mech]!r}"
                    out.append((("classes", cls, i), f"mechanism {mech!r} is already in {where} "
                                                      "(a mechanism belongs to one class, once)"))
                else:
                    owner[mech] = cls
                    mechanism_ids.append(mech)
        for mech in mechanism_ids:
            if mech in classes:
                out.append((("classes", owner[mech]), f"{mech!r} is both a class and a mechanism "
                                                      "(ids are unique within a domain)"))
    known_classes = set(class_ids) if isinstance(classes, dict) else None

    checks = d.get("checks")
    if isinstance(checks, dict):
        per_class: dict[str, list[str]] = {}
        for check, cls in checks.items():
            bad = _id_problem(check, "check", ())
            if bad:
                out.append((("checks", check), bad))
            if isinstance(cls, str) and known_classes is not None:
                if cls not in known_classes:
                    out.append((("checks", check), f"{cls!r} is not a class of this domain"))
                else:
                    per_class.setdefault(cls, []).append(check)
        if known_classes is not None:
            for cls in class_ids:
                got = per_class.get(cls, [])
                if not got:
                    out.append((("checks",), f"no check for class {cls!r} (need exactly one per class)"))
                elif len(got) > 1:
                    out.append((("checks",), f"class {cls!r} has {len(got)} checks ({', '.join(got)}), "
                                             "need exactly one"))

    costs = d.get("asymmetric_costs")
    if isinstance(costs, dict):
        for row, cols in costs.items():
            if not isinstance(cols, dict):
                continue
            for col, v in cols.items():
                if not _is_number(v):
                    continue
                if not math.isfinite(v):
                    out.append((("asymmetric_costs", row, col), f"must be a finite number (got {v!r})"))
                elif v < 0:
                    out.append((("asymmetric_costs", row, col), f"must be non-negative (got {v!r})"))
                elif row == col and v != 0:
                    out.append((("asymmetric_costs", row, col), f"the diagonal must be 0 (got {v!r})"))
        if known_classes is not None:
            rows = class_ids + [INSPECT]
            missing = [r for r in rows if r not in costs]
            if missing:
                out.append((("asymmetric_costs",), f"missing row {', '.join(map(repr, missing))} "
                                                   "(rows are every class plus INSPECT)"))
            for row in costs:
                if row not in rows:
                    out.append((("asymmetric_costs", row), "not a class of this domain or INSPECT"))
            for row in rows:
                cols = costs.get(row)
                if not isinstance(cols, dict):
                    continue
                gone = [c for c in class_ids if c not in cols]
                if gone:
                    out.append((("asymmetric_costs", row), f"missing column {', '.join(map(repr, gone))} "
                                                           "(columns are every class)"))
                for col in cols:
                    if col not in known_classes:
                        out.append((("asymmetric_costs", row, col), "not a class of this domain"))

    descriptions = d.get("descriptions")
    if isinstance(descriptions, dict):
        for label, text in descriptions.items():
            if known_classes is not None and label not in known_classes and label not in mechanism_ids:
                out.append((("descriptions", label), "not a class or mechanism of this domain"))
            if isinstance(text, str) and not text.strip():
                out.append((("descriptions", label), "must be a non-empty string"))
    return out


class DomainSpec(BaseModel):
    """One domain of an ontology file (OWN_TASK.md, Format)."""

    model_config = _STRICT

    title: NonEmpty
    recipient_role: NonEmpty
    may_receive: NonEmpty
    must_not_receive: NonEmpty
    intake_channels: DistinctList
    operating_windows: DistinctList
    classes: dict[str, list[str]]
    descriptions: Optional[dict[str, str]] = None
    checks: dict[str, str]
    asymmetric_costs: dict[str, dict[str, float]]

    @model_validator(mode="wrap")
    @classmethod
    def _cross_field_rules(cls, data: Any, handler):
        extra = [_problem(loc, msg, data) for loc, msg in _domain_rules(data)] if isinstance(data, dict) else []
        return _validate_with(handler, data, extra, "DomainSpec")


def _multiplier_problem(v: Any) -> str | None:
    if _is_number(v) and not math.isfinite(v):
        return f"must be a finite number (got {v!r})"
    if _is_number(v) and v < 0:
        return f"must be non-negative (got {v!r})"
    return None


class AuthoredCostsSpec(BaseModel):
    """``authored_costs``: the base costs every profile multiplies."""

    model_config = _STRICT

    wrong_route: float
    review: float
    check: float
    unavailable_fallback: Literal[FALLBACKS]  # type: ignore[valid-type]

    @model_validator(mode="wrap")
    @classmethod
    def _finite_non_negative(cls, data: Any, handler):
        extra = []
        if isinstance(data, dict):
            for key in ("wrong_route", "review", "check"):
                bad = _multiplier_problem(data.get(key))
                if bad:
                    extra.append(_problem((key,), bad, data))
        return _validate_with(handler, data, extra, "AuthoredCostsSpec")


class CostProfileSpec(BaseModel):
    """One cost profile: multipliers on the authored costs (absent = 1)."""

    model_config = _STRICT

    review_x: Optional[float] = None
    inspect_x: Optional[float] = None
    check_x: Optional[float] = None
    wrong_route_x: Optional[float] = None
    asymmetric_offdiag_x: Optional[float] = None
    asymmetric_class0_column_x: Optional[float] = None
    asymmetric_column_class: Optional[str] = None
    asymmetric_column_x: Optional[float] = None

    @model_validator(mode="wrap")
    @classmethod
    def _rules(cls, data: Any, handler):
        extra = []
        if isinstance(data, dict):
            for key in PROFILE_MULTIPLIERS + (PROFILE_COLUMN_X,):
                bad = ("must be a number (got None): leave the key out for 1" if key in data and data[key] is None
                       else _multiplier_problem(data.get(key)))
                if bad:
                    extra.append(_problem((key,), bad, data))
            bad = _id_problem(data.get(PROFILE_COLUMN_CLASS), "class", ())
            if bad:
                extra.append(_problem((PROFILE_COLUMN_CLASS,), bad, data))
            if (PROFILE_COLUMN_CLASS in data) != (PROFILE_COLUMN_X in data):
                extra.append(_problem((), f"{PROFILE_COLUMN_CLASS} and {PROFILE_COLUMN_X} go together "
                                          "(the class whose column is scaled, and by how much)", data))
            if PROFILE_COLUMN_CLASS in data and "asymmetric_class0_column_x" in data:
                extra.append(_problem((), f"asymmetric_class0_column_x and {PROFILE_COLUMN_CLASS} both name a "
                                          "column to scale; use one", data))
        return _validate_with(handler, data, extra, "CostProfileSpec")


class OntologySpec(BaseModel):
    """An ontology file (OWN_TASK.md): the domains, and optionally the authored costs and the cost
    profiles (the TUPLE values when omitted)."""

    model_config = _STRICT

    about: Optional[str] = None
    domains: dict[str, DomainSpec]
    authored_costs: Optional[AuthoredCostsSpec] = None
    cost_profiles: Optional[dict[str, CostProfileSpec]] = None

    @model_validator(mode="wrap")
    @classmethod
    def _top_rules(cls, data: Any, handler):
        extra: list[InitErrorDetails] = []
        if isinstance(data, dict):
            domains = data.get("domains")
            if isinstance(domains, dict):
                n = len(domains)
                if n < MIN_DOMAINS:
                    extra.append(_problem(("domains",), f"{_plural(n, 'domain')}, need at least {MIN_DOMAINS}", data))
                elif n > MAX_DOMAINS:
                    extra.append(_problem(("domains",), f"{_plural(n, 'domain')}, at most {MAX_DOMAINS}", data))
                for name in domains:
                    bad = _id_problem(name, "domain", ())
                    if bad:
                        extra.append(_problem(("domains", name), bad, data))
            profiles = data.get("cost_profiles")
            if isinstance(profiles, dict):
                for name in profiles:
                    bad = _id_problem(name, "profile", ())
                    if bad:
                        extra.append(_problem(("cost_profiles", name), bad, data))
                if REQUIRED_PROFILE not in profiles:
                    extra.append(_problem(("cost_profiles",), f"needs the profile {REQUIRED_PROFILE!r} "
                                                              "(the costs as authored; may be {})", data))
        return _validate_with(handler, data, extra, "OntologySpec")


# ---------------------------------------------------------------------------- parse and build
def _format_loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')


def _value_lines(text: str) -> dict[tuple, int]:
    """Where each value of a valid JSON text starts: its path (object keys and list indexes, as in
    pydantic's ``loc``) -> 1-based line number. A key given twice maps to its last occurrence."""
    lines: dict[tuple, int] = {(): 1}
    stack: list[list] = []                # [kind, path, key or index, expecting a key]
    line, seen = 1, 0
    for m in _TOKEN.finditer(text):
        line += text.count("\n", seen, m.start())
        seen = m.start()
        tok = m.group()
        top = stack[-1] if stack else None
        if top is not None and top[0] == "{" and top[3] and tok.startswith('"'):
            top[2], top[3] = json.loads(tok), False
            here = top[1] + (top[2],)
            if here in lines:               # a key given again: the kept value is this one, not the first's children
                for stale in [p for p in lines if p[:len(here)] == here]:
                    del lines[stale]
            lines[here] = line
            continue
        if tok in ("}", "]"):
            stack.pop()
        elif tok == ",":
            if top[0] == "{":
                top[3] = True
            else:
                top[2] += 1
        elif tok != ":":
            path = () if top is None else top[1] + (top[2],)
            if top is not None and top[0] == "[":
                lines[path] = line
            if tok in ("{", "["):
                stack.append([tok, path, 0 if tok == "[" else None, tok == "{"])
    return lines


def _line(source: str, loc: tuple, message: str, lines: Mapping[tuple, int] | None = None) -> str:
    """``SOURCE: dotted.path: message``, with ``(line N)`` after it where the path (or, for a
    missing key, the object that lacks it) starts in the file."""
    where = _format_loc(loc)
    text = f"{source}: {where}: {message}" if where else f"{source}: {message}"
    if lines:
        for end in range(len(loc), -1, -1):
            if tuple(loc[:end]) in lines:
                return f"{text} (line {lines[tuple(loc[:end])]})" if end else text
    return text


@lru_cache(maxsize=1)
def _packaged_text() -> str:
    return resources.files("qlb.data").joinpath("ontology.json").read_text("utf-8")


@lru_cache(maxsize=1)
def _tuple_costs() -> tuple[dict, dict]:
    raw = json.loads(_packaged_text())
    return raw["authored_costs"], raw["cost_profiles"]


def _notes(source: str, domains: Mapping[str, Domain], profiles: Mapping[str, Mapping[str, Any]]) -> tuple[str, ...]:
    out = []
    for name, p in profiles.items():
        cls = p.get(PROFILE_COLUMN_CLASS)
        if cls is None:
            continue
        lacking = [d for d, dom in domains.items() if cls not in dom.classes]
        if lacking:
            out.append(f"{source}: cost_profiles.{name}: class {cls!r} is not a class of domain "
                       f"{', '.join(map(repr, lacking))}; there the profile scales no asymmetric column")
    tuple_profiles = _tuple_costs()[1]
    for name, p in profiles.items():
        if name in tuple_profiles and dict(p) != dict(tuple_profiles[name]) and source != PACKAGED_SOURCE:
            out.append(f"{source}: cost_profiles.{name}: TUPLE has a profile of this name with other multipliers; "
                       f"the pages say what this one changes, but a name of your own avoids reading it as TUPLE's")
    return tuple(out)


def parse_ontology(text: str, source: str = "ontology") -> Ontology:
    """Validate an ontology file's text against every rule of OWN_TASK.md and build it.

    OntologyError lists every problem, one line each (``SOURCE: dotted.path: message``)."""
    raw, duplicates = _read_json(text, source)
    problems = list(duplicates)
    if not isinstance(raw, dict):
        raise OntologyError([_line(source, loc, msg) for loc, msg in problems]
                            + [f"{source}: the file must hold one JSON object (got {type(raw).__name__})"])
    try:
        OntologySpec.model_validate(raw)
    except ValidationError as exc:
        problems += [(tuple(e["loc"]), _plain(e)) for e in exc.errors(include_url=False)]
    if problems:
        text = text.removeprefix("\ufeff")
        lines = _value_lines(text) if "\n" in text.strip() else None     # a one-line file: no line to name
        raise OntologyError(list(dict.fromkeys(_line(source, loc, msg, lines) for loc, msg in problems)))
    body = canonical_json(raw)
    domains = {}
    for name, d in raw["domains"].items():
        classes = tuple(sorted(d["classes"]))
        domains[name] = Domain(
            name=name,
            title=d["title"],
            recipient_role=d["recipient_role"],
            intake_channels=tuple(d["intake_channels"]),
            operating_windows=tuple(d["operating_windows"]),
            classes=classes,
            mechanisms_by_class={c: tuple(sorted(d["classes"][c])) for c in classes},
            checks=dict(d["checks"]),
            asymmetric_costs={a: {c: float(v) for c, v in row.items()} for a, row in d["asymmetric_costs"].items()},
            may_receive=d["may_receive"],
            must_not_receive=d["must_not_receive"],
            descriptions=dict(d.get("descriptions") or {}),
        )
    default_costs, default_profiles = _tuple_costs()
    authored = raw.get("authored_costs") if raw.get("authored_costs") is not None else default_costs
    profiles = raw.get("cost_profiles") if raw.get("cost_profiles") is not None else default_profiles
    return Ontology(
        domains=domains,
        authored_costs=dict(authored),
        cost_profiles={k: dict(v) for k, v in profiles.items()},
        sha256=hashlib.sha256(body.encode("utf-8")).hexdigest(),
        source=source,
        notes=_notes(source, domains, profiles),
        body=body,
    )


@lru_cache(maxsize=1)
def load_ontology() -> Ontology:
    """The packaged TUPLE ontology (the default decision task), read once per process."""
    return parse_ontology(_packaged_text(), PACKAGED_SOURCE)


@lru_cache(maxsize=1)
def tuple_ontology_sha256() -> str:
    """The version (sha256 of the canonical JSON) of the packaged TUPLE ontology."""
    return ontology_sha256(_packaged_text())


def __getattr__(name: str) -> Any:
    # TUPLE_ONTOLOGY_SHA256 is computed on first use, not at import
    if name == "TUPLE_ONTOLOGY_SHA256":
        return tuple_ontology_sha256()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
