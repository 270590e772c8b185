"""Budget (issue 13): collecting 1,440 worlds from a local stub typed endpoint, no pacing:
>= 500 answers/s stored with --concurrency 8 and >= 150 answers/s with --concurrency 1 (the
client's own overhead must not be what limits an audit).

The stub is a separate process (a minimal asyncio HTTP/1.1 server with keep-alive: the stdlib's
ThreadingHTTPServer is itself slower than the budget once eight connections share its GIL)
answering a valid native answer at once; the figure is answers stored (validated and committed) per second of
the whole collection, each collection on a fresh copy of the same warehouse, five per concurrency in one run (median).

    .venv/bin/python benchmarks/bench_collect.py
"""
from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path

REPEATS = 5


STUB = textwrap.dedent(r'''
import asyncio, json

async def handle(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:].strip())
            raw = await reader.readexactly(length) if length else b""
            if head.startswith(b"GET"):
                data = b"ok"
            else:
                body = json.loads(raw)
                crit = list(body["questions"][0]["criteria"])
                p = {c: (0.7 if i == 0 else 0.1) for i, c in enumerate(crit)}
                data = json.dumps({"choice": crit[0], "probabilities": p, "confidence": 0.7}).encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                         + str(len(data)).encode() + b"\r\n\r\n" + data)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionResetError):
        pass
    finally:
        writer.close()

async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()

asyncio.run(main())
''')


def main() -> None:
    # imported here, not at module level: worker processes re-import this script as their main module
    from qlb.runs.collect import CollectOptions, collect
    from qlb.simulate import DEFAULT_SEED
    from qlb.simulate.tuple_sim import simulate_worlds
    from warehouse.db import writer
    from warehouse.ingest import IngestRequest, ingest_file

    with tempfile.TemporaryDirectory() as tmp:
        worlds = Path(tmp) / "worlds.jsonl"
        worlds.write_text("".join(json.dumps(w) + "\n" for w in simulate_worlds(DEFAULT_SEED)))
        base = Path(tmp) / "base.duckdb"
        with writer(base) as con:
            ingest_file(con, IngestRequest("worlds", worlds, "bench"))
        stub = subprocess.Popen([sys.executable, "-c", STUB], stdout=subprocess.PIPE, text=True)
        try:
            url = f"http://127.0.0.1:{stub.stdout.readline().strip()}"
            urllib.request.urlopen(url, timeout=5).read()
            budgets = {8: 500.0, 1: 150.0}
            for concurrency, budget in budgets.items():
                rates = []
                for attempt in range(REPEATS):
                    wh = Path(tmp) / f"c{concurrency}-{attempt}.duckdb"
                    shutil.copy(base, wh)
                    with writer(wh) as con:
                        t0 = time.perf_counter()
                        res = collect(con, CollectOptions(probe="native", dataset_id="bench", model="stub",
                                                          transport="typed", base_url=url, concurrency=concurrency))
                        seconds = time.perf_counter() - t0
                    assert res.stored == res.valid == 1440, res
                    rates.append(res.stored / seconds)
                rate = statistics.median(rates)
                print(f"--concurrency {concurrency}: 1440 answers stored, median of {REPEATS} collections "
                      f"{rate:,.0f} answers/s (range {min(rates):,.0f}-{max(rates):,.0f}; budget >= {budget:,.0f}: "
                      f"{'met' if rate >= budget else 'MISSED'})")
        finally:
            stub.terminate()


if __name__ == "__main__":
    main()
