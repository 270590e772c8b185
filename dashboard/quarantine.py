"""Words for the Data page's quarantine, kept apart from the page so that they are tested without
Streamlit."""
from __future__ import annotations

from typing import Mapping

from qlb.present.names import KIND_NOUNS


def lines_by_kind(counts: Mapping[str, int]) -> str:
    """``1 world, 5 native responses``: rejected lines counted per kind of file, singular for one."""
    parts = []
    for kind, n in counts.items():
        one, many = KIND_NOUNS.get(kind, (kind, kind))
        parts.append(f"{n:,} {one if n == 1 else many}")
    return ", ".join(parts)
