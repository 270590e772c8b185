"""The frozen TUPLE ontology: domains, coarse classes, mechanisms, checks and authored costs.

The file ``qlb/data/ontology.json`` is a verbatim copy of ``shared/spec/ontology.json`` so the
engine works without the spec folder beside it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Mapping

DOMAINS: tuple[str, ...] = ("delivery", "equipment", "it")
SPLITS: tuple[str, ...] = ("train", "validation", "test")
WITHHOLD = "WITHHOLD"


@dataclass(frozen=True)
class Domain:
    """One audit domain: its recipient contract, coarse classes and 16 mechanisms."""

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
    descriptions: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def describe(self, label: str) -> str:
        """The ontology's description of a class or mechanism, else its humanised identifier
        (``DELIVERY_RECORD`` -> "Delivery record")."""
        return self.descriptions.get(label) or humanise(label)

    @property
    def mechanisms(self) -> tuple[str, ...]:
        """The 16 mechanisms in lexicographic identifier order (the refusal candidate order)."""
        return tuple(sorted(m for ms in self.mechanisms_by_class.values() for m in ms))

    @property
    def refusal_labels(self) -> tuple[str, ...]:
        """The 17 refusal labels: the 16 mechanisms, then WITHHOLD."""
        return self.mechanisms + (WITHHOLD,)

    def class_of(self, mechanism: str) -> str | None:
        """The coarse class whose mechanisms include ``mechanism``, or None when no class does."""
        for cls, ms in self.mechanisms_by_class.items():
            if mechanism in ms:
                return cls
        return None


def humanise(identifier: str) -> str:
    """A readable label for an identifier: ``missed_transfer`` -> "Missed transfer"."""
    words = identifier.replace("_", " ").strip()
    return words[:1].upper() + words[1:].lower() if words else identifier


@dataclass(frozen=True)
class Ontology:
    """The decision task: its domains, the authored costs and the cost profiles."""

    domains: Mapping[str, Domain]
    authored_costs: Mapping[str, object]
    cost_profiles: Mapping[str, Mapping[str, float]]

    def domain(self, name: str) -> Domain:
        """The named domain (KeyError for an unknown name)."""
        return self.domains[name]


@lru_cache(maxsize=1)
def load_ontology() -> Ontology:
    """Read the packaged ontology once per process."""
    raw = json.loads(resources.files("qlb.data").joinpath("ontology.json").read_text("utf-8"))
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
            mechanisms_by_class=MappingProxyType({c: tuple(sorted(d["classes"][c])) for c in classes}),
            checks=MappingProxyType(dict(d["checks"])),
            asymmetric_costs=MappingProxyType({a: MappingProxyType(dict(v)) for a, v in d["asymmetric_costs"].items()}),
            may_receive=d.get("may_receive", ""),
            must_not_receive=d.get("must_not_receive", ""),
            descriptions=MappingProxyType(dict(d.get("descriptions", {}))),
        )
    return Ontology(
        domains=MappingProxyType(domains),
        authored_costs=MappingProxyType(dict(raw["authored_costs"])),
        cost_profiles=MappingProxyType({k: MappingProxyType(dict(v)) for k, v in raw["cost_profiles"].items()}),
    )
