"""The stored QuasiLeak corpus carries each document's sender profile, and detectors are given it."""
from __future__ import annotations

import json

from qlb.demo import DEMO_DATASET
from qlb.quasileak.detectors import Detection
from qlb.runs.quasileak import load_corpus, run_detector
from qlb.simulate.quasileak_sim import simulate_corpus
from qlb.simulate.tuple_sim import write_jsonl
from warehouse.db import reader
from warehouse.ingest import IngestRequest, ingest_file


def test_load_corpus_returns_the_profile(demo_warehouse):
    with reader(demo_warehouse) as con:
        corpus = load_corpus(con, DEMO_DATASET)
        stored = dict(con.execute("SELECT doc_id, profile FROM ql_documents WHERE dataset_id = ?",
                                  [DEMO_DATASET]).fetchall())
    assert len(corpus) == len(stored) == 5000
    assert all(doc["profile"] == json.loads(stored[d]) for d, doc in corpus.items())
    doc = next(iter(corpus.values()))
    assert isinstance(doc["profile"], dict) and doc["profile"] and set(doc) >= {"text", "policy", "groups", "split"}


class _Recording:
    name, simulated = "recording", False

    def __init__(self):
        self.seen = []

    def detect(self, text, profile, policy, gold=()):
        self.seen.append((text, profile, policy))
        return Detection()


def test_run_detector_passes_the_profile(wh, tmp_path):
    docs = simulate_corpus(9)[:60]
    path = tmp_path / "corpus.jsonl"
    write_jsonl(path, docs)
    ingest_file(wh, IngestRequest("corpus", path, "ql"))
    det = _Recording()
    out = run_detector(wh, "ql", det, split=None)
    assert out == {"documents": 60, "failures": 0}
    expected = [(d["text"], d["profile"], d["policy"]) for d in sorted(docs, key=lambda d: d["doc_id"])]
    assert det.seen == expected and all(profile for _, profile, _ in det.seen)
