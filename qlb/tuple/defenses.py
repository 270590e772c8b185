"""Output defenses (TUPLE.md section 7; paper Section 6, H.1-H.4): every defense starts from the
same native response and changes only the probability field; choice and confidence are kept
(WCPQ alone replaces the confidence by its codeword's maximum).

Vectors here are numpy rows in the world's *public candidate order* unless a function says
otherwise; ``to_dict``/``from_dict`` convert to and from the response's class -> score map.
"""
from __future__ import annotations

import hashlib
import math
from typing import Iterator, Mapping, Sequence

import numpy as np

METHODS: tuple[str, ...] = ("quantize", "top2", "temperature", "noise", "wcpq")
NOISE_SEEDS: tuple[int, ...] = (20261011, 20261012, 20261013)
NOISE_SIGMA = 0.05
TAU = 2.0


def quantize(p: np.ndarray) -> np.ndarray:
    """0.1 quantization by largest remainder: n_i = floor(10 p_i), the 10 - sum n_i leftover
    units go to the largest remainders, ties to the earlier candidate; returns n / 10."""
    p = np.atleast_2d(np.asarray(p, float))
    tenths = 10.0 * p
    n = np.floor(tenths + 1e-9)                       # 10 * 0.3 = 3.0000000000000004, 10 * 0.7 = 6.999999999999999
    rem = tenths - n
    left = (10 - n.sum(axis=1)).astype(int)
    k = p.shape[1]
    order = np.lexsort((np.tile(np.arange(k), (len(p), 1)), -np.round(rem, 12)), axis=1)   # by remainder desc, then position
    out = n.copy()
    for i in range(len(p)):
        out[i, order[i, :max(left[i], 0)]] += 1
    return out / 10.0


def top2(p: np.ndarray) -> np.ndarray:
    """The two highest scores with their original values (ties: earlier candidate); the others
    become NaN = missing, never 0, and nothing is renormalized."""
    p = np.atleast_2d(np.asarray(p, float))
    k = p.shape[1]
    order = np.lexsort((np.tile(np.arange(k), (len(p), 1)), -p), axis=1)
    out = np.full_like(p, np.nan)
    rows = np.arange(len(p))[:, None]
    out[rows, order[:, :2]] = p[rows, order[:, :2]]
    return out


def temperature(p: np.ndarray, tau: float = TAU) -> np.ndarray:
    """p~_i = p_i^(1/tau) / sum_k p_k^(1/tau) (tau = 2: square roots)."""
    p = np.atleast_2d(np.asarray(p, float))
    r = np.power(p, 1.0 / tau)
    return r / r.sum(axis=1, keepdims=True)


def temperature_inverse(pt: np.ndarray, tau: float = TAU) -> np.ndarray:
    """The public inverse: p_i = p~_i^tau / sum_k p~_k^tau."""
    pt = np.atleast_2d(np.asarray(pt, float))
    r = np.power(pt, tau)
    return r / r.sum(axis=1, keepdims=True)


def _world_rng(seed: int, world_id: str) -> np.random.Generator:
    """A generator for one world and seed: the draw never depends on file order or subsets."""
    digest = int.from_bytes(hashlib.sha256(world_id.encode("utf-8")).digest()[:8], "big")
    return np.random.default_rng([int(seed), digest])


def noise(p: np.ndarray, world_ids: Sequence[str], seed: int, sigma: float = NOISE_SIGMA) -> np.ndarray:
    """Gaussian noise: u_i = max(0, p_i + eps_i), eps_i ~ N(0, sigma^2) per world and candidate
    (in candidate order), released u / sum u, uniform when every u_i is 0."""
    p = np.atleast_2d(np.asarray(p, float))
    eps = np.vstack([_world_rng(seed, w).normal(0.0, sigma, p.shape[1]) for w in world_ids]) if len(p) else p
    u = np.maximum(0.0, p + eps)
    s = u.sum(axis=1, keepdims=True)
    return np.where(s > 0, u / np.where(s > 0, s, 1.0), 1.0 / p.shape[1])


def static_grid(k: int = 4, steps: int = 10) -> np.ndarray:
    """All probability vectors n / steps on the simplex grid over k classes, ordered
    lexicographically by (n_1, ..., n_k): C(steps + k - 1, k - 1) vectors (286 for k = 4,
    steps = 10, as in the paper; OWN_TASK.md writes C(K + 9, 9), which gives 715 for K = 4 and
    contradicts its own definition: the definition is what is implemented)."""
    return np.array(list(_compositions(k, steps)), dtype=float).reshape(-1, k) / steps


def _compositions(k: int, total: int) -> Iterator[tuple[int, ...]]:
    """Every k-tuple of non-negative integers summing to ``total``, in lexicographic order:
    C(total + k - 1, k - 1) of them (generated directly: 19,448 for k = 8 and total 10, instead
    of filtering 11^8 candidates)."""
    if k == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _compositions(k - 1, total - first):
            yield (first, *rest)


def to_vector(probs: Mapping[str, float] | None, order: Sequence[str]) -> np.ndarray | None:
    """The released scores in ``order`` as a vector, or None when the release is not a map or misses a class."""
    if not isinstance(probs, Mapping) or any(probs.get(c) is None for c in order):
        return None
    return np.array([float(probs[c]) for c in order])


def to_dict(vector: np.ndarray, order: Sequence[str]) -> dict[str, float]:
    """Released scores as a class -> score map; missing (NaN) entries are absent keys, never 0."""
    return {c: float(v) for c, v in zip(order, vector) if not math.isnan(v)}


def apply(method: str, vectors: np.ndarray, world_ids: Sequence[str] = (), seed: int = NOISE_SEEDS[0]) -> np.ndarray:
    """The probability-field baselines on candidate-order vectors (WCPQ needs policies: see wcpq)."""
    if method == "quantize":
        return quantize(vectors)
    if method == "top2":
        return top2(vectors)
    if method == "temperature":
        return temperature(vectors)
    if method == "noise":
        return noise(vectors, world_ids, seed)
    raise ValueError(f"unknown defense {method!r}; expected one of {', '.join(METHODS)}")
