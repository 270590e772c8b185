"""Small own ontologies for tests (OWN_TASK.md format), as fresh Python dicts on every call.

- ``three_by_three()``: one domain ``support``, 3 classes x 3 mechanisms, with descriptions.
- ``five_by_two()``: one domain ``claims``, 5 classes x 2 mechanisms, its own authored costs and
  cost profiles (one of them scales the column of a named class).
- ``lending()``: the repository's example ``examples/lending_ontology.json``.

``make_ontology`` builds a valid file from {domain: {class: [mechanisms]}}; ``as_text`` and
``write_ontology`` turn one into file text / a file.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, Sequence

ROOT = Path(__file__).resolve().parents[2]
LENDING_PATH = ROOT / "examples" / "lending_ontology.json"


def make_domain(classes: Mapping[str, Sequence[str]], title: str = "Test domain",
                descriptions: bool = True) -> dict:
    """A valid domain: the given classes, one check per class, a cost matrix (0 on the diagonal,
    5 off it, 1.5 to inspect) and, by default, a description of every class and mechanism."""
    names = sorted(classes)
    d = {
        "title": title,
        "recipient_role": "front_desk_agent",
        "may_receive": "coarse business result",
        "must_not_receive": "fine internal mechanism",
        "intake_channels": ["portal", "phone"],
        "operating_windows": ["business_hours", "after_hours"],
        "classes": {c: list(ms) for c, ms in classes.items()},
        "checks": {f"check_{c.lower()}": c for c in names},
        "asymmetric_costs": {a: {t: (0.0 if a == t else 5.0) for t in names} for a in names},
    }
    d["asymmetric_costs"]["INSPECT"] = {t: 1.5 for t in names}
    if descriptions:
        d["descriptions"] = {c: f"The case is {c.lower()}." for c in names}
        d["descriptions"].update({m: f"Because of {m.replace('_', ' ')}." for ms in classes.values() for m in ms})
    return d


def make_ontology(domains: Mapping[str, Mapping[str, Sequence[str]]], **extra) -> dict:
    """A valid ontology file with the given {domain: {class: [mechanisms]}} (plus top-level ``extra``)."""
    out = {"domains": {name: make_domain(classes, title=name.replace("_", " ").title())
                       for name, classes in domains.items()}}
    out.update(extra)
    return out


def three_by_three() -> dict:
    """One domain ``support``: 3 classes x 3 mechanisms; TUPLE authored costs and profiles."""
    return make_ontology({"support": {
        "BILLING": ["card_expired", "double_charge", "refund_delay"],
        "OUTAGE": ["dns_failure", "power_cut", "rate_limit"],
        "ACCOUNT": ["locked_out", "sso_mismatch", "stale_email"],
    }})


def five_by_two() -> dict:
    """One domain ``claims``: 5 classes x 2 mechanisms, with its own authored costs and profiles;
    profile ``fraud_double`` scales the FRAUD column, ``missing_double`` names a class the domain
    lacks (allowed: it scales no column there, and the ontology notes it)."""
    return make_ontology(
        {"claims": {
            "PAY": ["clear_policy_match", "small_claim"],
            "PARTIAL": ["deductible_dispute", "shared_liability"],
            "INVESTIGATE": ["late_report", "prior_claims"],
            "DENY": ["excluded_peril", "lapsed_cover"],
            "FRAUD": ["staged_loss", "inflated_invoice"],
        }},
        authored_costs={"wrong_route": 8.0, "review": 1.5, "check": 0.3, "unavailable_fallback": "review"},
        cost_profiles={
            "authored": {},
            "review_half": {"review_x": 0.5, "inspect_x": 0.5},
            "fraud_double": {"asymmetric_column_class": "FRAUD", "asymmetric_column_x": 2.0},
            "missing_double": {"asymmetric_column_class": "NOT_A_CLASS", "asymmetric_column_x": 2.0},
        },
    )


def lending() -> dict:
    """The example ``examples/lending_ontology.json``."""
    return json.loads(LENDING_PATH.read_text("utf-8"))


def as_text(doc: Mapping, indent: int | None = 2) -> str:
    """An ontology dict as file text."""
    return json.dumps(doc, indent=indent)


def write_ontology(path: Path, doc: Mapping) -> Path:
    """Write ``doc`` as an ontology file at ``path``; return the path."""
    path = Path(path)
    path.write_text(as_text(doc), encoding="utf-8")
    return path
