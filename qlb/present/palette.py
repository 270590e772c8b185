"""One visual language across pages: a colour per release view and per model, colour-blind safe
(Okabe-Ito for the five views, Paul Tol's muted scheme for models), and one symbol per view."""
from __future__ import annotations

from typing import Iterable

VIEW_COLOURS = {"no_output": "#999999", "choice": "#56B4E9", "choice_confidence": "#009E73",
                "full_probabilities": "#E69F00", "full_native": "#D55E00"}
VIEW_SYMBOLS = {"no_output": "circle-open", "choice": "square", "choice_confidence": "diamond",
                "full_probabilities": "triangle-up", "full_native": "circle"}
MODEL_PALETTE = ("#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677", "#882255",
                 "#AA4499", "#DDDDDD")
# diverging, colour-blind safe (Paul Tol's "sunset" ends): blue = lower, red = higher
DIVERGING = [[0.0, "#364B9A"], [0.5, "#F7F7F7"], [1.0, "#A50026"]]


def model_colours(models: Iterable[str]) -> dict[str, str]:
    """A stable colour per model: by position in the sorted list of the dataset's models."""
    return {m: MODEL_PALETTE[i % len(MODEL_PALETTE)] for i, m in enumerate(sorted(set(models)))}
