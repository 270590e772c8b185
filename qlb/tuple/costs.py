"""Downstream cost profiles (TUPLE.md section 5, ontology.json ``authored_costs``/``cost_profiles``).

A profile is a set of multipliers on the authored costs; ``domain_costs`` turns a profile into
the numbers one domain's three workflows use. Choices the spec leaves open, fixed here:

- ``asymmetric_offdiag_x`` scales the wrong-route entries of the asymmetric matrix (route rows,
  true class != routed class); the general-inspection row is scaled by ``inspect_x`` only.
- ``asymmetric_class0_column_x`` scales the whole column of the domain's canonical first class,
  general inspection included; zero entries stay zero.
- The unavailable fallback (trusted review) costs the authored review cost, 2, in every profile.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from qlb.records.ontology import (
    PROFILE_COLUMN_CLASS, PROFILE_COLUMN_X, PROFILE_MULTIPLIERS, Ontology, load_ontology,
)

PROFILES: tuple[str, ...] = ("authored", "review_half", "review_double", "check_quarter", "error_double",
                             "asymmetric_class0_double")
MULTIPLIERS: tuple[str, ...] = ("review_x", "inspect_x", "check_x", "wrong_route_x", "asymmetric_offdiag_x",
                                "asymmetric_class0_column_x")
INSPECT = "INSPECT"


@dataclass(frozen=True)
class CostProfile:
    """Multipliers on the authored costs (1.0 = authored)."""

    name: str
    review_x: float = 1.0
    inspect_x: float = 1.0
    check_x: float = 1.0
    wrong_route_x: float = 1.0
    asymmetric_offdiag_x: float = 1.0
    asymmetric_class0_column_x: float = 1.0
    column_class: str | None = None        # an own task's profile may scale the column of a class it names ...
    column_x: float = 1.0                  # ... by this factor (no column where the domain lacks the class)

    @classmethod
    def named(cls, name: str, ontology: Ontology | None = None) -> "CostProfile":
        """The ontology's cost profile ``name`` (ValueError for an unknown name)."""
        profiles = (ontology or load_ontology()).cost_profiles
        if name not in profiles:
            raise ValueError(f"unknown cost profile {name!r}; expected one of {', '.join(profiles)}")
        spec = profiles[name]
        column = spec.get(PROFILE_COLUMN_CLASS)
        return cls(name, **{k: float(spec[k]) for k in PROFILE_MULTIPLIERS if k in spec},
                   column_class=str(column) if column is not None else None,
                   column_x=float(spec.get(PROFILE_COLUMN_X, 1.0)))


@dataclass(frozen=True)
class DomainCosts:
    """What one domain's workflows pay under one profile. ``asymmetric`` is (5 actions x 4 true
    classes): the four routes in canonical class order, then general inspection."""

    domain: str
    classes: tuple[str, ...]
    wrong_route: float
    review: float
    check: float
    fallback: float
    asymmetric: np.ndarray = field(repr=False)

    @property
    def actions(self) -> tuple[str, ...]:
        """The asymmetric workflow's actions: the routes in canonical class order, then INSPECT."""
        return self.classes + (INSPECT,)


def authored(ontology: Ontology | None = None) -> Mapping[str, object]:
    """The ontology's authored costs: wrong route, review, check and the unavailable fallback."""
    return (ontology or load_ontology()).authored_costs


def domain_costs(domain: str, profile: CostProfile | str = "authored", *, wrong_route: float | None = None,
                 review: float | None = None, check: float | None = None,
                 columns: Mapping[str, Mapping[str, Sequence[float]]] | None = None,
                 ontology: Ontology | None = None) -> DomainCosts:
    """The costs of ``domain`` under ``profile``. ``wrong_route``/``review``/``check`` override the
    authored base values and ``columns`` ({domain: {true class: 5 costs, routes in canonical
    order then inspection}}) the authored asymmetric columns (the what-if panel), before the
    profile's multipliers apply. ``ontology``: the dataset's decision task (default TUPLE)."""
    p = CostProfile.named(profile, ontology) if isinstance(profile, str) else profile
    base = authored(ontology)
    d = (ontology or load_ontology()).domain(domain)
    w = (float(base["wrong_route"]) if wrong_route is None else float(wrong_route)) * p.wrong_route_x
    r = (float(base["review"]) if review is None else float(review)) * p.review_x
    k = (float(base["check"]) if check is None else float(check)) * p.check_x
    m = np.array([[float(d.asymmetric_costs[a][t]) for t in d.classes] for a in d.classes + (INSPECT,)])
    for cls, values in ((columns or {}).get(domain) or {}).items():
        if cls not in d.classes:
            raise ValueError(f"{domain} has no class {cls!r}")
        values = np.asarray(values, float)
        if values.shape != (len(d.classes) + 1,) or not np.isfinite(values).all() or (values < 0).any():
            raise ValueError(f"asymmetric column {domain}/{cls}: need {len(d.classes) + 1} finite costs >= 0")
        m[:, d.classes.index(cls)] = values
    routes = np.arange(len(d.classes))
    off = np.ones_like(m, dtype=bool)
    off[routes, routes] = False
    off[-1, :] = False
    m[off] *= p.asymmetric_offdiag_x
    m[-1, :] *= p.inspect_x
    m[:, 0] *= p.asymmetric_class0_column_x
    if p.column_class in d.classes:
        m[:, d.classes.index(p.column_class)] *= p.column_x
    return DomainCosts(domain, d.classes, w, r, k, float(base["review"]), m)


def profile_names(ontology: Ontology | None = None) -> tuple[str, ...]:
    """The cost profiles of a decision task, in its file's order (TUPLE: the six of PROFILES)."""
    return tuple((ontology or load_ontology()).cost_profiles)


def profile_order(names) -> list[str]:
    """Profile names for display: the TUPLE six in their fixed order, then any others sorted."""
    present = set(names)
    return [p for p in PROFILES if p in present] + sorted(present - set(PROFILES))
