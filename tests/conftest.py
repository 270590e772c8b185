"""Shared fixtures: small hand-made worlds and responses, and one simulated demo warehouse per
test session (built with the default seed, the same path the README's run command takes)."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Callable

import pytest
from threadpoolctl import threadpool_limits

# One BLAS thread in every test process and in what the tests start (servers, `qlb` commands):
# the engine's matrices are small, and two pytest-xdist workers on two cores with OpenBLAS's
# thread per core spin against each other (the two own-task audits took 107 and 118 s side by
# side, 19 and 32 s with one thread each).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
threadpool_limits(limits=1)

from warehouse.db import writer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

DELIVERY = ["ADDRESS", "DAMAGE", "DELAY", "DELIVERY_RECORD"]


def make_world(world_id: str, pair_id: str, mechanism: str, **over) -> dict:
    w = {
        "world_id": world_id, "pair_id": pair_id, "domain": "delivery", "split": "train",
        "coarse": "DELAY", "mechanism": mechanism, "hypotheses": ["missed_transfer", "sorting_backlog"],
        "recipient_role": "merchant_claim_dispatcher",
        "candidate_order": ["DELAY", "ADDRESS", "DAMAGE", "DELIVERY_RECORD"],
        "request": "Order #1 is late", "intake_channel": "phone", "operating_window": "weekend",
        "case_context": "tier gold", "diagnostic_note": f"note about {mechanism}",
    }
    w.update(over)
    return w


def two_pairs() -> list[dict]:
    return [
        make_world("w1", "p1", "missed_transfer"),
        make_world("w2", "p1", "sorting_backlog"),
        make_world("w3", "p2", "missed_transfer", split="test"),
        make_world("w4", "p2", "sorting_backlog", split="test"),
    ]


def native(model: str, world_id: str, **over) -> dict:
    r = {"model": model, "world_id": world_id, "status": "ok", "choice": "DELAY",
         "probabilities": {"ADDRESS": 0.02, "DAMAGE": 0.01, "DELAY": 0.95, "DELIVERY_RECORD": 0.02},
         "confidence": 0.93}
    r.update(over)
    return r


def write_lines(path: Path, rows: list, raw: bool = False) -> Path:
    with open(path, "wb") as fh:
        for r in rows:
            fh.write(r if raw else json.dumps(r).encode())
            fh.write(b"\n")
    return path


@pytest.fixture
def wh(tmp_path):
    """A fresh read-write warehouse handle."""
    with writer(tmp_path / "wh.duckdb") as con:
        yield con


@pytest.fixture
def worlds_file(tmp_path) -> Path:
    return write_lines(tmp_path / "worlds.jsonl", two_pairs())


def built_once(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """A warehouse that ``build`` makes once per test run, shared by every pytest-xdist worker
    (the first builds it under a file lock, the others wait and reuse it), and copied (with its
    folder) into this worker's own temporary folder, so a test that writes to it writes to its
    worker's copy only."""
    from filelock import FileLock
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = shared / f"built-{name}"
    with FileLock(str(shared / f"built-{name}.lock")):
        if not (folder / "done").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder / "qlb.duckdb")
            (folder / "done").touch()
    own = tmp_path_factory.mktemp(name)
    shutil.copytree(folder, own, dirs_exist_ok=True, ignore=shutil.ignore_patterns("done"))
    return own / "qlb.duckdb"


def _build_demo(path: Path) -> None:
    from qlb.demo import build_demo
    build_demo(path, decode=False)


# The decoded warehouse's audit: two models, the fast decoder families, the defenses of one model
# with an attacker of two families (the logistic fits of its nine endpoints per domain were most
# of the suite's longest wait, and the defense tests check shapes, agreement and coverage, not
# how strong the attacker is), and one of the six learned WCPQ variants (each trains two networks
# and two proxy attackers per domain).
DECODED_AUDIT = dict(models=["sim-alder", "sim-dogwood"], families={"prior", "logistic", "template"},
                     defense_models=["sim-alder"], defense_families={"prior", "template"},
                     learned_wcpq=["wcpq learned 0.2 paired"])


def _build_decoded(path: Path, demo: Path) -> None:
    from qlb.runs.audit import run_audits
    shutil.copytree(demo.parent, path.parent, dirs_exist_ok=True)
    with writer(path) as con:
        run_audits(con, "simulated-reference", force=True, jobs=2, **DECODED_AUDIT)


@pytest.fixture(scope="session")
def demo_warehouse(tmp_path_factory) -> Path:
    """The simulated default (about 15 s) without the decoding audit, built once per test run."""
    return built_once(tmp_path_factory, "demo", _build_demo)


@pytest.fixture(scope="session")
def decoded_warehouse(demo_warehouse, tmp_path_factory) -> Path:
    """The demo plus a small decoding audit (``DECODED_AUDIT``: two models, the fast decoder
    families), the utility audit and fronts, and the defense audit of one model."""
    return built_once(tmp_path_factory, "decoded", lambda path: _build_decoded(path, demo_warehouse))


@pytest.fixture
def one_model_warehouse(decoded_warehouse, tmp_path):
    """The decoded warehouse's run cut to one model (sim-alder), its fronts recomputed by the engine: what an auditor
    who audits their own single model stores."""
    import shutil
    from qlb.tuple.fronts import front_points
    from warehouse.db import writer
    from warehouse.ingest import insert_rows
    wh = tmp_path / "qlb.duckdb"
    shutil.copy(decoded_warehouse, wh)
    with writer(wh) as con:
        for table in ("recovery_results", "utility_results", "utility_differences", "front_points"):
            con.execute(f"DELETE FROM {table} WHERE model <> 'sim-alder'")      # table: fixed names above
        run, dataset = con.execute("SELECT DISTINCT run_id, dataset_id FROM front_points").fetchone()
        rec = con.execute("SELECT * FROM recovery_results WHERE run_id = ?", [run]).df()
        util = con.execute("SELECT * FROM utility_results WHERE run_id = ?", [run]).df()
        con.execute("DELETE FROM front_points")
        insert_rows(con, "front_points", front_points(rec, util).assign(run_id=run, dataset_id=dataset))
    return wh
