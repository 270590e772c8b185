"""HTML for the QuasiLeak document viewer. Every piece of document text, attribute name and
label is escaped with html.escape before it becomes HTML."""
from __future__ import annotations

from html import escape
from typing import Mapping, Sequence

# Okabe-Ito-based colour per attribute (colour-blind safe), light backgrounds for gold cues.
ATTRIBUTE_COLOURS = {
    "age": "#E69F00", "gender": "#56B4E9", "nationality": "#009E73", "education": "#F0E442",
    "occupation": "#0072B2", "income": "#D55E00", "relationship": "#CC79A7", "health": "#999999",
}
POLICY_COLOURS = {"hide": "#D55E00", "keep": "#009E73", "neutral": "#999999"}


# colours for a corpus's own attributes (its policy keys), assigned in sorted order
EXTRA_COLOURS = ("#8C564B", "#17BECF", "#BCBD22", "#7F7F7F", "#9467BD", "#2CA02C", "#1F77B4", "#FF7F0E")


def _colour(attr: str, attributes: Sequence[str] = ()) -> str:
    if attr in ATTRIBUTE_COLOURS:
        return ATTRIBUTE_COLOURS[attr]
    own = sorted(a for a in attributes if a not in ATTRIBUTE_COLOURS)
    return EXTRA_COLOURS[own.index(attr) % len(EXTRA_COLOURS)] if attr in own else "#444444"


def policy_chips(policy: Mapping[str, str]) -> str:
    """The policy as one coloured chip per attribute (hide, keep, neutral), as escaped HTML."""
    chips = []
    for attr, label in policy.items():
        c = POLICY_COLOURS.get(label, "#444444")
        chips.append(f'<span style="display:inline-block;margin:2px 4px;padding:1px 8px;border-radius:10px;'
                     f'border:1px solid {c};color:{c};font-size:0.85em">{escape(str(attr))}: {escape(str(label))}</span>')
    return "".join(chips)


def document_html(text: str, gold: Sequence[tuple[str, Sequence[tuple[int, int]]]],
                  predicted: Sequence[tuple[str, Sequence[tuple[int, int]]]], policy: Mapping[str, str]) -> str:
    """The message with gold cues shaded by attribute (hide targets bold) and predicted cues
    underlined in their group's attribute colour; hover titles name group and attribute."""
    bounds = {0, len(text)}
    for _, cues in list(gold) + list(predicted):
        for s, e in cues:
            bounds.update((max(0, s), min(len(text), e)))
    points = sorted(bounds)
    parts = []
    for a, b in zip(points, points[1:]):
        segment = escape(text[a:b])
        g = [(gi, attr) for gi, (attr, cues) in enumerate(gold) if any(s <= a and b <= e for s, e in cues)]
        p = [(pi, attr) for pi, (attr, cues) in enumerate(predicted) if any(s <= a and b <= e for s, e in cues)]
        if not g and not p:
            parts.append(segment)
            continue
        style, titles = [], []
        if g:
            gi, attr = g[0]
            style.append(f"background:{_colour(attr, list(policy))}40")
            if policy.get(attr) == "hide":
                style.append("font-weight:600")
            titles.append(f"gold group {gi + 1}: {attr} ({policy.get(attr, '?')})")
        if p:
            pi, attr = p[0]
            style.append(f"border-bottom:3px solid {_colour(attr, list(policy))}")
            titles += [f"predicted group {i + 1}: {a}" for i, a in p]
        parts.append(f'<span style="{";".join(style)}" title="{escape("; ".join(titles))}">{segment}</span>')
    return ('<div style="white-space:pre-wrap;line-height:1.7;font-size:0.95em;padding:0.75em;'
            'border:1px solid #ddd;border-radius:6px">' + "".join(parts) + "</div>")


def legend_html(attributes: Sequence[str]) -> str:
    """The document viewer's legend, how gold and predicted cues are drawn and a swatch per attribute, as escaped
    HTML."""
    items = [f'<span style="margin-right:12px;white-space:nowrap;display:inline-block"><span style="background:{_colour(a, attributes)}40;padding:0 6px">'
             f'{escape(a)}</span></span>' for a in attributes]
    return ('<div style="font-size:0.85em">Gold cues shaded by attribute (hide targets in bold); predicted '
            'cues underlined in their group\'s colour. ' + "".join(items) + "</div>")
