"""Shared fixtures: small hand-made worlds and responses, and one simulated demo warehouse per
test session (built with the default seed, the same path the README's run command takes)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from warehouse.db import writer

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


@pytest.fixture(scope="session")
def demo_warehouse(tmp_path_factory) -> Path:
    """The simulated default (about 15 s) without the decoding audit, built once per session."""
    from qlb.demo import build_demo
    path = tmp_path_factory.mktemp("demo") / "qlb.duckdb"
    build_demo(path, decode=False)
    return path


@pytest.fixture(scope="session")
def decoded_warehouse(demo_warehouse, tmp_path_factory) -> Path:
    """The demo plus a small decoding audit (two models, the fast decoder families), the utility
    audit and fronts, and the defense audit of one model."""
    import shutil
    from qlb.runs.audit import run_audits
    path = tmp_path_factory.mktemp("decoded") / "qlb.duckdb"
    shutil.copy(demo_warehouse, path)
    with writer(path) as con:
        run_audits(con, "simulated-reference", models=["sim-alder", "sim-dogwood"], force=True,
                   families={"prior", "logistic", "template"}, jobs=2, defense_models=["sim-alder"])
    return path
