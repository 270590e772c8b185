"""The frozen TUPLE ontology: domains, coarse classes, mechanisms, checks and authored costs.

The file ``qlb/data/ontology.json`` is a verbatim copy of ``shared/spec/ontology.json`` so the
engine works without the spec folder beside it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
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

    @property
    def mechanisms(self) -> tuple[str, ...]:
        """The 16 mechanisms in lexicographic identifier order (the refusal candidate order)."""
        return tuple(sorted(m for ms in self.mechanisms_by_class.values() for m in ms))

    @property
    def refusal_labels(self) -> tuple[str, ...]:
        """The 17 refusal labels: the 16 mechanisms, then WITHHOLD."""
        return self.mechanisms + (WITHHOLD,)

    def class_of(self, mechanism: str) -> str | None:
        for cls, ms in self.mechanisms_by_class.items():
            if mechanism in ms:
                return cls
        return None


@dataclass(frozen=True)
class Ontology:
    domains: Mapping[str, Domain]
    authored_costs: Mapping[str, object]
    cost_profiles: Mapping[str, Mapping[str, float]]

    def domain(self, name: str) -> Domain:
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
        )
    return Ontology(
        domains=MappingProxyType(domains),
        authored_costs=MappingProxyType(dict(raw["authored_costs"])),
        cost_profiles=MappingProxyType({k: MappingProxyType(dict(v)) for k, v in raw["cost_profiles"].items()}),
    )
