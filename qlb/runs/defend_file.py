"""``qlb defend``: rewrite a native-response file under one output defense (CONTRACT.md section 2).

Every accepted line is written back with all its fields; only ``probabilities`` changes (and,
for WCPQ, ``confidence``, set to the codeword's maximum). Unavailable responses, responses
without probabilities and invalid ones (TUPLE.md section 1) pass through unchanged; top-two
writes the scores it does not release as absent keys, never 0. The public candidate order comes
from ``--worlds`` when given, else from the order of the keys in ``probabilities``.

Lines are read by the ingest's line rules (``qlb.records.readers``). A line that cannot be read,
is not a native response, repeats an earlier line's model and world, or holds NaN or Infinity
(the output is strict JSON, which has neither) is reported and left out (exit 3).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
from pydantic import ValidationError
from pydantic_core import from_json

from qlb.tuple.defenses import apply, to_dict, to_vector
from qlb.records.readers import read_records
from qlb.records.schemas import NativeResponse, World, describe_error
from qlb.tuple.wcpq import Policy, map_domain


@dataclass
class DefendReport:
    method: str
    lines: int = 0
    written: int = 0
    transformed: int = 0
    passed_through: int = 0
    fallbacks: int = 0
    rejects: list[tuple[int, str]] = field(default_factory=list)

    def to_json(self) -> dict:
        """The report as a JSON-ready dict: line counts, WCPQ fallbacks (None for other methods) and the number of
        rejects."""
        return {"method": self.method, "lines": self.lines, "written": self.written, "transformed": self.transformed,
                "passed_through": self.passed_through,
                "wcpq_fallbacks": self.fallbacks if self.method == "wcpq" else None,
                "rejected": len(self.rejects)}


def defend_file(in_path: str | Path, out_path: str | Path, method: str, seed: int,
                worlds: dict[str, World] | None = None,
                policies: dict[str, dict[str, list[Policy]]] | None = None,
                progress: Callable[[int, int], None] | None = None) -> DefendReport:
    """Rewrite ``in_path`` to ``out_path`` (JSON Lines) under ``method``; see the module docstring.
    ``policies`` ({model: {domain: frozen policies}}) and ``worlds`` are required for WCPQ;
    ``progress(done, total)`` is called per transformed response (per (model, domain) for WCPQ)."""
    report = DefendReport(method)
    rows: list[tuple[dict, NativeResponse, tuple[str, ...] | None]] = []
    seen: set[tuple[str | None, str]] = set()
    for rec in read_records(in_path, frozenset({"probabilities", "confidence"})):
        report.lines += 1
        if rec.error:
            report.rejects.append((rec.line_no, f"{rec.field}: {rec.error}" if rec.field else rec.error))
            continue
        try:
            raw = from_json(rec.text) if rec.text is not None else dict(rec.obj)   # the ingest's JSON parser
            if not isinstance(raw, dict):
                raise ValueError("not a JSON object")
            resp = NativeResponse.model_validate(raw)
        except ValidationError as exc:
            where, reason = describe_error(exc)          # the same wording as `qlb ingest`
            report.rejects.append((rec.line_no, f"{where or 'line'}: {reason}"))
            continue
        except ValueError as exc:
            report.rejects.append((rec.line_no, f"line: {exc}"))
            continue
        bad = _non_finite(raw)
        if bad is not None:
            where, value = bad
            report.rejects.append((rec.line_no, f"{where}: {value!r} is not finite; the output is strict JSON, "
                                                "which has no NaN or Infinity"))
            continue
        order: tuple[str, ...] | None = None
        if worlds is not None:
            world = worlds.get(resp.world_id)
            if world is None:
                report.rejects.append((rec.line_no, f"world_id: unknown world_id {resp.world_id!r} (not in the worlds file)"))
                continue
            order = tuple(world.candidate_order)
        elif resp.probabilities:
            order = tuple(resp.probabilities)
        if method == "wcpq" and resp.status == "ok" and resp.probabilities:
            model = resp.model or ""
            domain = worlds[resp.world_id].domain if worlds else ""
            if not (policies or {}).get(model, {}).get(domain):
                report.rejects.append((rec.line_no, f"model: no frozen full-native policies for {model!r} in "
                                                    f"domain {domain!r} in that run"))
                continue
        key = (resp.model, resp.world_id)
        if key in seen:
            report.rejects.append((rec.line_no, f"duplicate response for model {resp.model!r} and world "
                                                f"{resp.world_id!r} (the first is kept)"))
            continue
        seen.add(key)
        rows.append((raw, resp, order, rec.line_no))
    released = _release([r[:3] for r in rows], method, seed, worlds, policies or {}, report, progress)
    with open(out_path, "w", encoding="utf-8") as fh:
        for (raw, resp, _, line_no), out in zip(rows, released):
            try:
                text = json.dumps(out if out is not None else raw, allow_nan=False)
            except ValueError:               # a defense gave a non-finite value: never written as NaN
                report.rejects.append((line_no, f"probabilities: the {method} defense gave a value that is not "
                                                "finite; the line is left out"))
                if out is not None:
                    report.transformed -= 1
                continue
            fh.write(text + "\n")
            report.written += 1
    report.rejects.sort(key=lambda r: r[0])
    return report


def _non_finite(value: Any, where: str = "line") -> tuple[str, float] | None:
    """(field, value) of the first NaN or infinity in a parsed line, or None when there is none."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (where, value)
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        found = _non_finite(v, str(k) if where == "line" else f"{where}.{k}")
        if found is not None:
            return found
    return None


def _transformable(resp: NativeResponse, order: tuple[str, ...] | None) -> bool:
    if resp.status != "ok" or not resp.probabilities or order is None:
        return False
    resp.assess(frozenset(order))
    return resp.valid and to_vector(resp.probabilities, order) is not None


def _release(rows, method: str, seed: int, worlds, policies, report: DefendReport,
             progress: Callable[[int, int], None] | None = None) -> list[dict | None]:
    out: list[dict | None] = [None] * len(rows)
    todo = [i for i, (_, resp, order) in enumerate(rows) if _transformable(resp, order)]
    report.passed_through = len(rows) - len(todo)
    if method != "wcpq":
        for i in todo:
            raw, resp, order = rows[i]
            vec = to_vector(resp.probabilities, order)[None, :]
            new = apply(method, vec, [resp.world_id], seed)[0]
            out[i] = {**raw, "probabilities": to_dict(new, order)}
        report.transformed = len(todo)
        if progress:
            progress(len(todo), len(todo))
        return out
    groups: dict[tuple[str, str], list[int]] = {}
    for i in todo:
        resp = rows[i][1]
        groups.setdefault((resp.model or "", worlds[resp.world_id].domain), []).append(i)
    done = 0
    for (model, domain), idx in groups.items():
        frame = pd.DataFrame([{**worlds[rows[i][1].world_id].model_dump(), "status": "ok",
                               "choice": rows[i][1].choice, "probabilities": rows[i][1].probabilities,
                               "confidence": np.nan if rows[i][1].confidence is None else rows[i][1].confidence}
                              for i in idx])
        mapping = map_domain(frame, domain, policies[model][domain])
        for i, code, probs, conf in zip(idx, mapping.code_index, mapping.released, mapping.confidence):
            raw = rows[i][0]
            if code < 0:
                report.fallbacks += 1
                continue
            new = {**raw, "probabilities": probs}
            if raw.get("confidence") is not None:
                new["confidence"] = float(conf)
            out[i] = new
            report.transformed += 1
        done += len(idx)
        if progress:
            progress(done, len(todo))
    return out
