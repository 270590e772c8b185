"""Pair-clustered percentile bootstrap (TUPLE.md section 4, D.7): resample pairs with
replacement (both worlds come along), 2,000 resamples, fixed seed; paired differences between
views reuse the same resamples. Intervals condition on the fitted decoders."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

N_BOOT = 2000
SEED = 20261011


@dataclass(frozen=True)
class Estimate:
    estimate: float
    ci_low: float
    ci_high: float


def pair_totals(values: np.ndarray, pair_index: np.ndarray, n_pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-pair sums of a per-world value and per-pair world counts."""
    sums = np.bincount(pair_index, weights=values, minlength=n_pairs)
    counts = np.bincount(pair_index, minlength=n_pairs).astype(float)
    return sums, counts


@dataclass
class PairResamples:
    """One set of pair resamples shared by every estimate on the same worlds (so paired
    differences use the same draws): the pairs, their row in ``W`` and, per domain, a 0/1 mask
    that restricts the resamples to that domain's pairs."""

    index: dict
    W: np.ndarray
    domain_masks: dict[str, np.ndarray]

    @classmethod
    def of(cls, worlds, n_boot: int = N_BOOT, seed: int = SEED) -> "PairResamples":
        """From a frame with ``pair_id`` and ``domain`` columns (one pair, one domain)."""
        pairs = sorted(worlds["pair_id"].unique())
        pair_domain = worlds.drop_duplicates("pair_id").set_index("pair_id")["domain"]
        masks = {d: np.array([pair_domain[p] == d for p in pairs], dtype=float)
                 for d in sorted(worlds["domain"].unique())}
        return cls({p: i for i, p in enumerate(pairs)}, resample_counts(len(pairs), n_boot, seed),
                   masks)

    def totals(self, pair_ids, values) -> tuple[np.ndarray, np.ndarray]:
        """Per-pair sums of a per-world value and per-pair world counts."""
        idx = np.asarray([self.index[p] for p in pair_ids], dtype=int)
        return pair_totals(np.asarray(values, float), idx, len(self.index))


def resample_counts(n_pairs: int, n_boot: int = N_BOOT, seed: int = SEED) -> np.ndarray:
    """(n_boot x n_pairs) how often each pair is drawn in each resample (the shared resamples)."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n_pairs, size=(n_boot, n_pairs))
    counts = np.zeros((n_boot, n_pairs))
    np.add.at(counts, (np.repeat(np.arange(n_boot), n_pairs), idx.ravel()), 1.0)
    return counts


def resample_indices(n_pairs: int, n_boot: int = N_BOOT, seed: int = SEED) -> np.ndarray:
    """The same resamples as ``resample_counts``, as drawn pair indices (for loop references)."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_pairs, size=(n_boot, n_pairs))


def resampled_means(sums: np.ndarray, sizes: np.ndarray, W: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Per resample (rows of ``W``, pair draw counts), the mean per world over the drawn pairs,
    from per-pair sums and world counts; ``mask`` (0/1 per pair) restricts it to some pairs."""
    if mask is not None:
        sums, sizes = sums * mask, sizes * mask
    return (W @ sums) / np.maximum(W @ sizes, 1)


def percentile_interval(boot: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """The percentile interval of resampled estimates."""
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(boot, [alpha, 1 - alpha])
    return float(lo), float(hi)


def pair_bootstrap(values: np.ndarray, pair_index: np.ndarray, n_boot: int = N_BOOT, seed: int = SEED,
                   confidence: float = 0.95, counts: np.ndarray | None = None) -> Estimate:
    """Mean of a per-world value (e.g. correctness) with a pair-clustered percentile interval."""
    n_pairs = int(pair_index.max()) + 1 if len(pair_index) else 0
    sums, sizes = pair_totals(np.asarray(values, float), pair_index, n_pairs)
    W = resample_counts(n_pairs, n_boot, seed) if counts is None else counts
    lo, hi = percentile_interval(resampled_means(sums, sizes, W), confidence)
    return Estimate(float(sums.sum() / sizes.sum()), lo, hi)


def paired_difference(values_a: np.ndarray, values_b: np.ndarray, pair_index: np.ndarray, n_boot: int = N_BOOT,
                      seed: int = SEED, confidence: float = 0.95) -> Estimate:
    """Mean of (a - b) over the same worlds with the same pair resamples."""
    return pair_bootstrap(np.asarray(values_a, float) - np.asarray(values_b, float), pair_index, n_boot, seed,
                          confidence)
