"""Budget (issue 14): an audit of a dataset with a 5-class ontology and 1,440 worlds x 9 models
costs no more per world than the TUPLE demo's.

Both datasets are simulated in this run with the same seed and the same nine model behaviours:
the TUPLE reference design (3 domains x 4 classes x 60 pairs = 1,440 worlds) and
``benchmarks/five_class_ontology.json`` (3 domains x 5 classes x 48 pairs = 1,440 worlds). Each is
ingested into a fresh warehouse and audited exactly as ``qlb demo`` audits (every audit, the
full decoder library, defenses on the demo's models, ``--jobs 2``); only the audit is timed.

    .venv/bin/python benchmarks/bench_own_task.py
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from qlb.demo import DEMO_DEFENSE_MODELS
from qlb.records.ontology import Ontology, parse_ontology
from qlb.runs.audit import run_audits
from qlb.simulate import DEFAULT_SEED
from qlb.simulate.tuple_sim import SIM_MODELS, simulate_native, simulate_refusal, simulate_worlds, write_jsonl
from warehouse.db import writer
from warehouse.ingest import IngestRequest, ingest_file
from warehouse.ontologies import store_ontology

ONTOLOGY = Path(__file__).with_name("five_class_ontology.json")
PAIRS_FOR_1440 = 48          # 3 domains x 5 classes x 48 pairs x 2 worlds


def audit_seconds(tmp: Path, name: str, ontology: Ontology | None, text: str | None) -> tuple[int, float]:
    """Simulate, ingest and audit one dataset; returns (worlds, seconds of the audit)."""
    seed = DEFAULT_SEED
    worlds = simulate_worlds(seed, ontology, pairs_per_class=PAIRS_FOR_1440 if ontology is not None else None)
    files = {"worlds": tmp / f"{name}-worlds.jsonl", "responses": tmp / f"{name}-native.jsonl",
             "refusal": tmp / f"{name}-refusal.jsonl"}
    write_jsonl(files["worlds"], worlds)
    write_jsonl(files["responses"], [r for m in SIM_MODELS for r in simulate_native(worlds, m, seed, ontology)])
    write_jsonl(files["refusal"], [r for m in SIM_MODELS for r in simulate_refusal(worlds, m, seed, ontology)])
    with writer(tmp / f"{name}.duckdb") as con:
        if text is not None:
            store_ontology(con, name, text, ONTOLOGY.name)
        for kind, path in files.items():
            ingest_file(con, IngestRequest(kind, path, name))
        t0 = time.perf_counter()
        run_audits(con, name, jobs=2, defense_models=DEMO_DEFENSE_MODELS)
        return len(worlds), time.perf_counter() - t0


def main() -> int:
    text = ONTOLOGY.read_text()
    own = parse_ontology(text, ONTOLOGY.name)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, onto, txt in (("tuple", None, None), ("five-class", own, text)):
            n, seconds = audit_seconds(Path(tmp), name, onto, txt)
            rows.append((name, n, seconds))
            print(f"{name:>10}: {n:,} worlds x {len(SIM_MODELS)} models, audit {seconds:6.1f} s = "
                  f"{1000 * seconds / n:5.1f} ms per world", flush=True)
    (_, n_ref, s_ref), (_, n_own, s_own) = rows
    ratio = (s_own / n_own) / (s_ref / n_ref)
    print(f"per-world cost, five-class / TUPLE demo: {ratio:.2f} (budget <= 1.00: {'met' if ratio <= 1 else 'MISSED'})")
    return 0 if ratio <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
