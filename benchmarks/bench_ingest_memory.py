"""Budget (issue 20, item 7): `qlb ingest` keeps peak memory under 500 MB whatever the file's size.

Writes the simulated worlds and a native-response JSON Lines file of about 100 MB (``--gb`` for
about 1 GB) in a temporary directory: copies of the demo's 12,965 response lines (its five
planted bad lines included) under renamed models, so every copy is new to the warehouse. Then
runs `qlb ingest responses` on it in a child process and prints the child's peak RSS
(``ru_maxrss`` from ``os.wait4``), its ratio to the file's size, and the lines per second.

    .venv/bin/python benchmarks/bench_ingest_memory.py          # about 100 MB
    .venv/bin/python benchmarks/bench_ingest_memory.py --gb     # about 1 GB
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from qlb.demo import DEFAULT_SEED, write_exports

BUDGET_MB = 500
PREFIX = b'{"model": "'


def write_responses(template: Path, out: Path, target_bytes: int) -> tuple[int, int]:
    """Copies of ``template`` with each line's model renamed ``<model>~<copy>`` until ``out``
    holds about ``target_bytes``; (lines, bytes) written."""
    lines = template.read_bytes().splitlines()
    split = []
    for line in lines:                     # (model, rest of the line after the model's name)
        if line.startswith(PREFIX):
            end = line.index(b'"', len(PREFIX))
            split.append((line[len(PREFIX):end], line[end:]))
        else:
            split.append((None, line))
    n = size = copy = 0
    with open(out, "wb") as fh:
        while size < target_bytes:
            tag = b"~%05d" % copy
            block = b"\n".join(PREFIX + model + tag + rest if model is not None else rest for model, rest in split)
            fh.write(block + b"\n")
            n += len(split)
            size += len(block) + 1
            copy += 1
    return n, size


def peak_rss_mb(args: list[str]) -> tuple[float, float, int, str]:
    """Run ``python -m qlb ARGS``; (peak RSS in MB, seconds, exit code, stderr's last line)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "qlb", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    err = proc.stderr.read().decode(errors="replace").strip().splitlines()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss / 1024, time.perf_counter() - t0, proc.returncode, err[-1] if err else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", action="store_true", help="a file of about 1 GB instead of 100 MB")
    args = parser.parse_args()
    target = (1000 if args.gb else 100) * 1_000_000
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        paths = write_exports(tmp / "exports", DEFAULT_SEED)
        big = tmp / "responses.jsonl"
        n_lines, n_bytes = write_responses(paths["responses"], big, target)
        wh = str(tmp / "bench.duckdb")
        base, _, code, _ = peak_rss_mb(["ingest", "worlds", str(paths["worlds"]), "--dataset", "bench",
                                        "--warehouse", wh])
        assert code == 0, "the worlds must ingest cleanly"
        rss, seconds, code, last = peak_rss_mb(["ingest", "responses", str(big), "--dataset", "bench",
                                                "--warehouse", wh])
    mb = n_bytes / 1e6
    print(f"file: {n_lines:,} native response lines, {mb:,.0f} MB (JSON Lines)")
    print(f"qlb ingest worlds (1 MB file): peak RSS {base:,.0f} MB (the process's own footprint)")
    print(f"qlb ingest responses: exit {code} ({last[:100]})")
    print(f"  peak RSS {rss:,.0f} MB = {rss / mb:.2f}x the file; {seconds:,.1f} s, "
          f"{n_lines / seconds:,.0f} lines/s (process start and sha256 included)")
    ok = rss < BUDGET_MB and code in (0, 3)
    print(f"budget peak RSS < {BUDGET_MB} MB for any file size: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
