"""Budget (issue #17, goal 3): validated ingest of native-response JSON Lines >= 300,000 lines/s.

Writes the simulated worlds and a native-response file of copies of the demo's 12,965 response
lines (its five planted bad lines included) under renamed models (``--lines``, default about
500,000), then, in one run and each in a fresh warehouse:

* ``ingest_file`` as `qlb ingest` runs it (bulk validation: DuckDB types the lines, pydantic
  judges the rest; validation + one transaction), ``--rounds`` times: the budget is judged on the
  median round (the best is shown too);
* the same with every line through pydantic (``bulk_validation=False``), the previous way, once;
* DuckDB's own ``read_json`` of the same file into a table (no validation at all): the ceiling.

Prints lines/s for each and the ratios. The refusal file (17 scores a line, still per line) is
shown for information.

``--phases`` adds one more bulk ingest with each phase timed (summed over the threads that ran
it) and the process's CPU time against the wall time.

    .venv/bin/python benchmarks/bench_ingest.py [--lines N] [--rounds R] [--phases]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from qlb.demo import DEFAULT_SEED, write_exports
from warehouse import bulk
from warehouse import ingest as ingest_mod
from warehouse.db import writer
from warehouse.ingest import IngestRequest, ingest_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ingest_memory import write_responses  # noqa: E402

BUDGET = 300_000


def timed_ingest(tmp: Path, name: str, worlds: Path, kind: str, path: Path, bulk: bool = True) -> tuple[float, int]:
    """Seconds of one ingest of ``path`` into a fresh warehouse holding the worlds, and its lines."""
    with writer(tmp / f"{name}.duckdb") as con:
        ingest_file(con, IngestRequest("worlds", worlds, "bench"))
        t0 = time.perf_counter()
        result = ingest_file(con, IngestRequest(kind, path, "bench"), bulk_validation=bulk)
        seconds = time.perf_counter() - t0
    (tmp / f"{name}.duckdb").unlink()
    return seconds, result.report.n_lines


PHASES = ((bulk, "plain_native_responses", "check a block (checking threads, all of it)"),
          (bulk, "_lines_table", "  the RE2 line match"),
          (bulk, "_world_rules", "  the world and probability rules"),
          (ingest_mod, "insert_rows", "store the checked rows (main thread)"),
          (ingest_mod, "_validate_stream", "pydantic on the other lines (main thread)"))


def phase_times(tmp: Path, worlds: Path, path: Path) -> None:
    """One more bulk ingest with each phase of ``PHASES`` timed (seconds summed over the threads
    that ran it), and the process's CPU time against the wall time: where the time goes."""
    spent: dict[str, float] = {}

    def timed(fn, label):
        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[label] = spent.get(label, 0.0) + time.perf_counter() - t0
        return wrapper

    originals = [(mod, name, getattr(mod, name)) for mod, name, _ in PHASES]
    for (mod, name, fn), (_, _, label) in zip(originals, PHASES):
        setattr(mod, name, timed(fn, label))
    try:
        cpu0 = time.process_time()
        seconds, n = timed_ingest(tmp, "phases", worlds, "responses", path)
        cpu = time.process_time() - cpu0
    finally:
        for mod, name, fn in originals:
            setattr(mod, name, fn)
    print(f"phases of one bulk ingest ({n / seconds:,.0f} lines/s; {cpu:.2f} s of CPU in {seconds:.2f} s of wall "
          f"time, worlds ingest included in the CPU):")
    for _, _, label in PHASES:
        print(f"  {label:45s} {spent.get(label, 0.0):6.2f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=500_000, help="about this many response lines")
    parser.add_argument("--rounds", type=int, default=3, help="bulk ingests timed (the median is judged)")
    parser.add_argument("--phases", action="store_true", help="also time each phase of one more bulk ingest")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        paths = write_exports(tmp / "exports", DEFAULT_SEED)
        big = tmp / "responses.jsonl"
        per_line_bytes = paths["responses"].stat().st_size / 12_965
        n_lines, n_bytes = write_responses(paths["responses"], big, int(args.lines * per_line_bytes))
        print(f"file: {n_lines:,} native response lines, {n_bytes / 1e6:,.0f} MB")

        bulk = []
        for r in range(args.rounds):
            seconds, n = timed_ingest(tmp, f"bulk{r}", paths["worlds"], "responses", big)
            bulk.append(n / seconds)
        per_line_s, n = timed_ingest(tmp, "per_line", paths["worlds"], "responses", big, bulk=False)
        per_line = n / per_line_s

        import duckdb
        con = duckdb.connect()
        t0 = time.perf_counter()
        con.execute("CREATE TABLE r AS SELECT * FROM read_json(?, format = 'newline_delimited', "
                    "ignore_errors = true)", [str(big)])
        raw = n_lines / (time.perf_counter() - t0)
        refusal_s, refusal_n = timed_ingest(tmp, "refusal", paths["worlds"], "refusal", paths["refusal"])
        if args.phases:
            phase_times(tmp, paths["worlds"], big)

    best, median = max(bulk), statistics.median(bulk)
    print(f"validated ingest, bulk (qlb ingest): best {best:,.0f} lines/s of {args.rounds}, median {median:,.0f} "
          f"({', '.join(f'{x:,.0f}' for x in bulk)})")
    print(f"validated ingest, every line through pydantic: {per_line:,.0f} lines/s "
          f"(bulk is {best / per_line:.1f}x faster)")
    print(f"DuckDB read_json into a table, no validation: {raw:,.0f} lines/s (bulk reaches {best / raw:.0%} of it)")
    print(f"refusal file ({refusal_n:,} lines, 17 scores each, per line): {refusal_n / refusal_s:,.0f} lines/s")
    ok = median >= BUDGET
    print(f"budget >= {BUDGET:,} validated native response lines/s (the median round): {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
