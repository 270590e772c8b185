"""One visual language across pages: a colour per release view and per model, colour-blind safe
(Okabe-Ito for the five views, Paul Tol's muted scheme for models), and one symbol per view."""
from __future__ import annotations

from typing import Iterable

VIEW_COLOURS = {"no_output": "#999999", "choice": "#56B4E9", "choice_confidence": "#009E73",
                "full_probabilities": "#E69F00", "full_native": "#D55E00"}
VIEW_SYMBOLS = {"no_output": "circle-open", "choice": "square", "choice_confidence": "diamond",
                "full_probabilities": "triangle-up", "full_native": "circle"}
# Paul Tol's muted scheme, its purple (#AA4499) replaced by his vibrant orange: beside the wine
# (#882255) the purple read as the same magenta on small markers (a board reader could not tell the
# demo's eighth and ninth models apart on the fronts)
MODEL_PALETTE = ("#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677", "#882255",
                 "#EE7733", "#DDDDDD")
# diverging, colour-blind safe (Paul Tol's "sunset" ends): blue = lower, red = higher
DIVERGING = [[0.0, "#364B9A"], [0.5, "#F7F7F7"], [1.0, "#A50026"]]


def model_colours(models: Iterable[str]) -> dict[str, str]:
    """A stable colour per model: by position in the sorted list of the dataset's models."""
    return {m: MODEL_PALETTE[i % len(MODEL_PALETTE)] for i, m in enumerate(sorted(set(models)))}
