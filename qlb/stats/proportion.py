"""Intervals for a share of independent cases (the refusal audit's rates, a coverage): the Wilson
score interval, which stays inside [0, 1] and behaves at 0 and n successes, where the normal
approximation does not."""
from __future__ import annotations

import numpy as np

Z95 = 1.959963984540054    # the standard normal's 97.5% quantile


def wilson(successes, n, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson score interval of ``successes / n`` (arrays or scalars); NaN where n is 0."""
    k = np.asarray(successes, dtype=float)
    m = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / m
        centre = (p + z * z / (2 * m)) / (1 + z * z / m)
        half = z * np.sqrt(p * (1 - p) / m + z * z / (4 * m * m)) / (1 + z * z / m)
        lo, hi = centre - half, centre + half
    bad = m <= 0
    lo, hi = np.where(bad, np.nan, np.clip(lo, 0.0, 1.0)), np.where(bad, np.nan, np.clip(hi, 0.0, 1.0))
    return lo, hi
