"""A stand-in model for the Collection page tests (``qlb collect --transport python --target
tests.app.collect_target:answer``). It sees only the request body; the worlds of
``test_pages.collected_warehouse`` differ by their diagnostic note (the mechanism) and, between
the two pairs, by their request text."""
from __future__ import annotations

from typing import Any

HOSTILE = "<script>alert(1)</script>"


def _valid(body: dict[str, Any]) -> dict[str, Any]:
    order = list(body["questions"][0]["criteria"])
    probabilities = {c: (0.7 if i == 0 else 0.3 / (len(order) - 1)) for i, c in enumerate(order)}
    return {"answers": {"coarse_cause": {"choice": order[0], "probabilities": probabilities, "confidence": 0.7}}}


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """First pair: a valid answer for one world, probabilities summing to 2 for the other;
    second pair: a hostile choice (HTML) for one world, a valid answer for the other."""
    state = body["state"]
    second_pair = "#2" in state["public"]["request"]
    sorting = "sorting_backlog" in state["internal_report"]["diagnostic_note"]
    out = _valid(body)
    inner = out["answers"]["coarse_cause"]
    if not second_pair and sorting:
        inner["probabilities"] = {c: 2 * p for c, p in inner["probabilities"].items()}
    elif second_pair and not sorting:
        inner["choice"] = HOSTILE
    return out


def fixed(body: dict[str, Any]) -> dict[str, Any]:
    """A valid answer for every world (the ``--replace-invalid`` rerun)."""
    return _valid(body)
