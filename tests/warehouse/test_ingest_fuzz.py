"""Property (issue 20): whatever mix of valid and broken lines a file holds, in any of the three
formats and for any of the five kinds, `qlb ingest` stores every valid line once, stores no
broken line, reports each broken line, and exits 3 (anything rejected) or 0, never 1."""
from __future__ import annotations

import contextlib
import io
import json
import math
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from qlb.cli import main
from qlb.records import readers
from tests.conftest import make_world, native

LIMIT = 4096                           # the line limit while fuzzing (readers.MAX_LINE_BYTES)
DEEP = "[" * 1000 + "]" * 1000          # past the JSON nesting limit, under the line limit
TEXT = "The juice box by the bed, and the fridge stays cold."
CUES = [[4, 13], [34, 40]]
POLICY = {"health": "hide", "age": "keep"}
JSON_COLUMNS = {"worlds": {"hypotheses", "candidate_order"}, "responses": {"probabilities", "confidence"},
                "refusal": {"scores"}, "corpus": {"profile", "policy", "groups", "distractors"},
                "predictions": {"groups"}}
TABLES = {"worlds": ("worlds", "world_id"), "responses": ("responses", "model || '/' || world_id"),
          "refusal": ("refusal_responses", "model || '/' || world_id"), "corpus": ("ql_documents", "doc_id"),
          "predictions": ("ql_predictions", "detector || '/' || doc_id")}


@dataclass(frozen=True)
class Raw:
    """JSON text written verbatim (a JSON Lines value, a CSV or Parquet cell)."""

    value: bytes


@dataclass(frozen=True)
class BadText:
    """Text whose bytes are not UTF-8 (a JSON string in JSON Lines, a cell in CSV and Parquet)."""

    value: bytes


def valid_row(kind: str, i: int) -> tuple[dict, str]:
    """The i-th valid line of a kind, with the key the warehouse stores it under."""
    if kind == "worlds":
        pair, mech = divmod(i, 2)
        w = make_world(f"w{i + 1}", f"p{pair}", ("missed_transfer", "sorting_backlog")[mech])
        return w, w["world_id"]
    if kind == "responses":
        return native(f"m{i // 4}", f"w{i % 4 + 1}"), f"m{i // 4}/w{i % 4 + 1}"
    if kind == "refusal":
        row = {"model": f"m{i // 4}", "world_id": f"w{i % 4 + 1}", "status": "ok", "choice": "WITHHOLD",
               "scores": {"missed_transfer": 0.3, "WITHHOLD": 0.9}}
        return row, f"m{i // 4}/w{i % 4 + 1}"
    if kind == "corpus":
        row = {"doc_id": f"d{i}", "split": "test", "context_id": "c", "text": TEXT, "profile": {"health": "x"},
               "policy": POLICY, "groups": [{"attribute": "health", "cues": CUES}]}
        return row, f"d{i}"
    row = {"doc_id": f"d{i % 2}", "detector": f"det{i // 2}", "groups": [{"attribute": "health", "cues": CUES}]}
    return row, f"det{i // 2}/d{i % 2}"


ID_FIELD = {"worlds": "world_id", "responses": "world_id", "refusal": "world_id", "corpus": "doc_id",
            "predictions": "doc_id"}
NESTED_FIELD = {"worlds": "hypotheses", "responses": "probabilities", "refusal": "scores", "corpus": "groups",
                "predictions": "groups"}


def broken(kind: str, how: str, row: dict) -> dict:
    """``row`` broken so that the line must be rejected (or, for "nan" in responses, stored invalid)."""
    row = dict(row)
    if how == "bad_utf8":
        row[ID_FIELD[kind]] = BadText(b"x\xff" + row[ID_FIELD[kind]].encode())
    elif how == "deep":
        row[NESTED_FIELD[kind]] = Raw(DEEP.encode())
    elif how == "missing":
        row[ID_FIELD[kind]] = None
    elif how == "oversize":
        row["note"] = "n" * (LIMIT + 100)
    elif how == "nan":
        if kind == "responses":
            row["confidence"] = math.nan
        else:
            row["scores"] = {"WITHHOLD": math.nan}
    return row


CORRUPTIONS = {"worlds": ["bad_utf8", "deep", "missing", "oversize", "duplicate"],
               "responses": ["bad_utf8", "deep", "missing", "oversize", "duplicate", "nan"],
               "refusal": ["bad_utf8", "deep", "missing", "oversize", "duplicate", "nan"],
               "corpus": ["bad_utf8", "deep", "missing", "oversize", "duplicate"],
               "predictions": ["bad_utf8", "deep", "missing", "oversize", "duplicate"]}


# --------------------------------------------------------------------------------- writing files
def json_bytes(value) -> bytes:
    if isinstance(value, Raw):
        return value.value
    if isinstance(value, BadText):
        return b'"' + value.value + b'"'
    if isinstance(value, float) and math.isnan(value):
        return b"NaN"
    if isinstance(value, dict):
        return b"{" + b", ".join(json.dumps(k).encode() + b": " + json_bytes(v) for k, v in value.items()) + b"}"
    return json.dumps(value, allow_nan=True).encode()


def text_bytes(value, is_json: bool) -> bytes:
    """A CSV or Parquet text cell."""
    if value is None:
        return b""
    if isinstance(value, (Raw, BadText)):
        return value.value
    if is_json:
        return json_bytes(value)
    return str(value).encode()


def write_file(path: Path, kind: str, rows: list[dict]) -> None:
    fmt = path.suffix[1:]
    json_cols = JSON_COLUMNS[kind]
    if fmt == "jsonl":
        path.write_bytes(b"".join(b"{" + b", ".join(json.dumps(k).encode() + b": " + json_bytes(v)
                                                    for k, v in r.items() if v is not None) + b"}\n" for r in rows))
        return
    names = list(dict.fromkeys(k for r in rows for k in r))
    if fmt == "csv":
        def quoted(cell: bytes) -> bytes:
            return b'"' + cell.replace(b'"', b'""') + b'"'
        out = [b",".join(quoted(n.encode()) for n in names)]
        out += [b",".join(quoted(text_bytes(r.get(n), n in json_cols)) if r.get(n) is not None else b""
                          for n in names) for r in rows]
        path.write_bytes(b"\r\n".join(out) + b"\r\n")
        return
    columns = {}
    for n in names:
        cells = [r.get(n) for r in rows]
        if n == "confidence":
            columns[n] = pa.array(cells, type=pa.float64())
            continue
        data = [None if c is None else text_bytes(c, n in json_cols) for c in cells]
        if any(isinstance(c, BadText) for c in cells):
            columns[n] = pa.array(data, type=pa.binary())
        else:
            columns[n] = pa.array([None if d is None else d.decode() for d in data], type=pa.string())
    pq.write_table(pa.table(columns), path)


# --------------------------------------------------------------------------------- warehouses
_PREPARED: dict[str, Path] = {}


def prepared(kind: str, root: Path) -> Path | None:
    """A warehouse holding what ``kind`` needs first (worlds, or a corpus), built once."""
    need = {"responses": "worlds", "refusal": "worlds", "predictions": "corpus"}.get(kind)
    if need is None:
        return None
    if need not in _PREPARED:
        path = root / f"base_{need}.duckdb"
        src = root / f"base_{need}.jsonl"
        write_file(src, need, [valid_row(need, i)[0] for i in range(4 if need == "worlds" else 2)])
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            assert main(["ingest", need, str(src), "--dataset", "d", "--warehouse", str(path)]) == 0
        _PREPARED[need] = path
    return _PREPARED[need]


@pytest.fixture(scope="module")
def fuzz_root(tmp_path_factory) -> Path:
    """One directory for every example (and the prepared warehouses)."""
    _PREPARED.clear()
    return tmp_path_factory.mktemp("fuzz")


@st.composite
def cases(draw):
    kind = draw(st.sampled_from(sorted(CORRUPTIONS)))
    fmt = draw(st.sampled_from(["jsonl", "csv", "parquet"]))
    n_valid = draw(st.integers(1, 6 if kind != "corpus" else 4))
    bad = draw(st.lists(st.sampled_from(CORRUPTIONS[kind]), max_size=4))
    places = [draw(st.integers(0, n_valid)) for _ in bad]
    return kind, fmt, n_valid, bad, places


@settings(max_examples=30, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_every_valid_line_stored_once_and_no_broken_line(fuzz_root, case):
    kind, fmt, n_valid, bad, places = case
    lines: list[tuple[dict, str | None, str]] = [(*valid_row(kind, i), "valid") for i in range(n_valid)]
    for j, (how, place) in enumerate(zip(bad, places)):
        if how == "duplicate":
            row, key = valid_row(kind, place % n_valid)
            first = next(i for i, line in enumerate(lines) if line[1] == key and line[2] == "valid")
            at = max(place, first + 1)                    # after the line it repeats
        else:
            row, key = valid_row(kind, 100 + j)           # its own key: it must not be stored
            row, at = broken(kind, how, row), place
        if kind == "predictions" and how != "duplicate":
            row = {**row, "detector": f"bad{j}"}
        outcome = "invalid" if how == "nan" and kind == "responses" else "rejected"
        lines.insert(min(at, len(lines)), (row, key, outcome))
    work = Path(tempfile.mkdtemp(dir=fuzz_root))
    base = prepared(kind, fuzz_root)
    wh = work / "wh.duckdb"
    if base is not None:
        shutil.copy(base, wh)
    path = work / f"in.{fmt}"
    write_file(path, kind, [r for r, _, _ in lines])
    out, err = io.StringIO(), io.StringIO()
    with mock.patch.object(readers, "MAX_LINE_BYTES", LIMIT), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        code = main(["ingest", kind, str(path), "--dataset", "d", "--warehouse", str(wh)])
    first_line = 2 if fmt == "csv" else 1
    numbered = [(first_line + i, key, outcome) for i, (_, key, outcome) in enumerate(lines)]
    rejected = {n for n, _, outcome in numbered if outcome == "rejected"}
    assert "Traceback" not in err.getvalue()
    assert code == (3 if rejected else 0), err.getvalue()
    located = [m for m in err.getvalue().splitlines() if m.startswith(path.name + ":")]
    reported = {int(m.split(":")[1]) for m in located if ": invalid: " not in m}
    assert reported == rejected
    said_invalid = {int(m.split(":")[1]) for m in located if ": invalid: " in m}    # a few lines: all said
    assert said_invalid == {n for n, _, outcome in numbered if outcome == "invalid"}
    table, key_sql = TABLES[kind]
    con = duckdb.connect(str(wh), read_only=True)
    try:
        ingest_id = con.execute("SELECT max(ingest_id) FROM ingests").fetchall()[0][0]
        stored = con.execute(f"SELECT {key_sql}, line_no FROM {table} WHERE ingest_id = ?", [ingest_id]).fetchall()
        quarantined = {r[0] for r in con.execute("SELECT line_no FROM rejects WHERE ingest_id = ?",
                                                 [ingest_id]).fetchall()}
        invalid = ({r[0] for r in con.execute("SELECT line_no FROM responses WHERE ingest_id = ? AND NOT valid",
                                              [ingest_id]).fetchall()} if kind == "responses" else set())
    finally:
        con.close()
    expected = sorted((key, n) for n, key, outcome in numbered if outcome != "rejected")
    assert sorted(stored) == expected                   # every valid line once, at its own line number
    assert quarantined == rejected
    assert invalid == {n for n, _, outcome in numbered if outcome == "invalid"}
    shutil.rmtree(work, ignore_errors=True)
