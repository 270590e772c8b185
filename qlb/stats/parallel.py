"""Running one engine function over every (model, domain) of a dataset: the tasks the data
allows (the others named in ``skipped``), in parallel with joblib, with progress."""
from __future__ import annotations

from typing import Any, Callable, Iterable

import pandas as pd


def domain_tasks(frames: dict[str, pd.DataFrame], check: Callable[[pd.DataFrame], str | None], label: str,
                 skipped: dict[str, str] | None = None) -> list[tuple[str, str, pd.DataFrame]]:
    """(model, domain, that domain's worlds) for every model's frame; a domain ``check`` rejects
    (it returns why) is left out and named in ``skipped`` as ``"<label> <model>/<domain>"``."""
    tasks = []
    for m, f in frames.items():
        for d in sorted(f["domain"].unique()):
            sub = f[f["domain"] == d]
            why = check(sub)
            if why is None:
                tasks.append((m, d, sub))
            elif skipped is not None:
                skipped[f"{label} {m}/{d}"] = why
    return tasks


def run_tasks(fn: Callable[..., Any], calls: Iterable[tuple], total: int, jobs: int = 1,
              progress: Callable[[int, int], None] | None = None) -> list:
    """``fn(*args)`` for every argument tuple, ``jobs`` at a time (joblib's loky processes; one
    job runs in this process), in order, reporting ``progress(done, total)``."""
    from joblib import Parallel, delayed     # imported here: pages that never fit stay light
    runner = Parallel(n_jobs=jobs, return_as="generator", backend="loky" if jobs != 1 else "sequential")
    out = []
    for i, res in enumerate(runner(delayed(fn)(*args) for args in calls), start=1):
        out.append(res)
        if progress:
            progress(i, total)
    return out


def missing_splits(frame: pd.DataFrame) -> str | None:
    """Why a domain cannot be fitted, selected and scored: a split without worlds, or None."""
    missing = [s for s in ("train", "validation", "test") if not (frame["split"] == s).any()]
    return f"no {' or '.join(missing)} worlds" if missing else None
