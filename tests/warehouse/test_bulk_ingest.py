"""Issue #17 goal 3: `ingest_file` validates native-response JSON Lines in bulk (DuckDB types the
lines; pydantic judges the rest). pydantic stays the definition: for any mix of lines, the bulk
ingest must store exactly the lines, values and verdicts the per-line pydantic path gives
(`validate_file`), with the same messages. The lines are built to probe every way DuckDB's
reader is laxer than pydantic's (conversions, repeated keys, trailing commas, nan/inf, escapes)
and every count the bulk path relies on (colons, nulls, labels)."""
from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from qlb.records import readers
from qlb.records.readers import BOM
from warehouse import bulk
from warehouse.db import writer
from warehouse.ingest import IngestRequest, ingest_file, validate_file
from tests.conftest import native, two_pairs, write_lines

CLASSES = ["ADDRESS", "DAMAGE", "DELAY", "DELIVERY_RECORD"]
ODD_VALUES = ['null', '1', '0', '-0.0', '0.5', '1e-7', '1E5', '2', '-1', 'true', 'false', '"x"', '""', '"0.5"', 'nan',
              'NaN', 'inf', '-inf', 'Infinity', '1e400', '{}', '[]', '[1,]', '{"a":1}', '"a,b:{null}"', '"\\u0041"',
              '"null"', '"tab\\there"', '12345678901234567890123']


def _dump(obj: dict, style: int) -> str:
    if style == 0:
        return json.dumps(obj)
    if style == 1:
        return json.dumps(obj, separators=(",", ":"))
    return json.dumps(obj, indent=None, separators=(" , ", " : "))


def _line(rng: random.Random, model_pool: list[str]) -> str:
    """One line: usually a valid native response, often with one or two changes."""
    obj = native(rng.choice(model_pool), f"w{rng.randint(1, 5)}")
    if rng.random() < 0.2:
        obj["probabilities"] = {c: round(rng.random(), 3) for c in rng.sample(CLASSES, rng.randint(0, 4))}
    if rng.random() < 0.15:
        obj["status"] = rng.choice(["unavailable", "partial", "OK"])
    if rng.random() < 0.1:
        obj["choice"] = rng.choice([None, "DAMAGE", "OTHER", "delay"])
    if rng.random() < 0.1:
        obj["probabilities"] = {"DELAY": 0.5, "ADDRESS": 0.5 + rng.choice([0.0009, 0.001, 0.0011, -0.0009, 1e-12])}
    for key in list(obj):
        if rng.random() < 0.06:
            del obj[key]
    text = _dump(obj, rng.randint(0, 2))
    edits = rng.randint(0, 2) if rng.random() < 0.6 else 0
    for _ in range(edits):
        kind = rng.randint(0, 12)
        if kind == 0:                                   # a field's value replaced verbatim
            key = rng.choice(["model", "world_id", "status", "choice", "probabilities", "confidence"])
            obj2 = dict(obj)
            obj2[key] = "@@"
            text = _dump(obj2, 1).replace('"@@"', rng.choice(ODD_VALUES))
        elif kind == 1:                                 # an extra field
            text = text[:-1] + f', "{rng.choice(["extra", "valid", "choice", "model", "invalid_reason"])}": ' \
                   f'{rng.choice(ODD_VALUES)}}}'
        elif kind == 2:                                 # a trailing comma
            text = text[:-1] + ",}" if rng.random() < 0.5 else text.replace("}", ", }", 1)
        elif kind == 3:                                 # a probability value replaced verbatim
            text = text.replace("0.95", rng.choice(ODD_VALUES), 1)
        elif kind == 4:                                 # a string with marks inside
            text = text.replace('"m', rng.choice(['"a,b', '"a:b', '"{m', '"null m', '"[m', '"true']), 1)
        elif kind == 5:
            text = rng.choice(["", "   ", "nope", "[1, 2]", '"text"', "{", "{}", "null"])
        elif kind == 6:                                 # the confidence replaced verbatim
            text = text.replace("0.93", rng.choice(ODD_VALUES), 1)
        elif kind == 7:
            text = text.replace("DELAY", "DEL\\u0041Y")
        elif kind == 8:
            text = " " + text + "\t"
        elif kind == 9:
            text = text.replace('"model"', '"model": "x", "model"', 1)
        elif kind == 10:                                # a repeated key, null once
            key = rng.choice(["model", "choice", "probabilities", "confidence"])
            text = text[:-1] + f', "{key}": null}}' if rng.random() < 0.5 else \
                text.replace("{", f'{{"{key}": null, ', 1)
        elif kind == 11:                                # a key before a space
            key = rng.choice(["model", "choice", "probabilities", "confidence"])
            text = text.replace(f'"{key}": ', f'"{key}" : ', 1)
        else:                                           # a probability label repeated or foreign
            text = text.replace('"DAMAGE"', rng.choice(['"DELAY"', '"OTHER"', '"model"', '"damage"']), 1)
    return text


def _zero(value):
    """-0.0 as 0.0 (DuckDB stores a DOUBLE -0.0 as 0.0, whichever path wrote it), and a probability
    as a float (the bulk path stores an integer as it was written: ``1``, not ``1.0``)."""
    if isinstance(value, dict):
        return {k: float(v) + 0.0 if isinstance(v, int) and not isinstance(v, bool) else _zero(v)
                for k, v in value.items()}
    return value + 0.0 if isinstance(value, float) else value


def _verdicts(tmp_path, lines: list[bytes], model: str | None):
    worlds = write_lines(tmp_path / "worlds.jsonl", two_pairs())
    path = tmp_path / "responses.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    db = tmp_path / "bulk.duckdb"
    db.unlink(missing_ok=True)
    with writer(db) as con:
        ingest_file(con, IngestRequest("worlds", worlds, "d"))
        reference = validate_file(con, IngestRequest("responses", path, "d", model=model))
        result = ingest_file(con, IngestRequest("responses", path, "d", model=model))
        stored = con.execute("SELECT line_no, model, world_id, status, choice, probabilities, confidence, valid, "
                             "invalid_reason, choice_not_argmax FROM responses ORDER BY line_no").fetchall()
        quarantined = con.execute("SELECT line_no, field, reason FROM rejects ORDER BY line_no").fetchall()
    expected = [(n, r.model, r.world_id, r.status, r.choice, _zero(r.probabilities), _zero(r.confidence), r.valid,
                 r.invalid_reason, r.choice_not_argmax) for n, r in reference.accepted]
    got = [row[:5] + (_zero(None if row[5] is None else json.loads(row[5])), _zero(row[6])) + row[7:] for row in stored]
    raw = path.read_bytes().split(b"\n")
    by_line = {r[0]: repr(r) for r in got}, {r[0]: repr(r) for r in expected}
    differ = [(n, by_line[0].get(n), by_line[1].get(n), raw[n - 1]) for n in sorted(set(by_line[0]) | set(by_line[1]))
              if by_line[0].get(n) != by_line[1].get(n)]                      # repr: NaN equals NaN
    assert not differ, "\n".join(map(str, differ[:5]))
    assert quarantined == [(r.line_no, r.field, r.reason) for r in reference.rejects]
    assert (len(result.report.accepted), len(result.report.rejects), result.report.n_invalid) == \
           (len(reference.accepted), len(reference.rejects), reference.n_invalid)
    return result


@pytest.mark.parametrize("model", [None, "m0"])
@pytest.mark.parametrize("seed", range(6))
def test_bulk_ingest_agrees_with_pydantic_line_by_line(tmp_path, seed, model, monkeypatch):
    taken = []
    plain = bulk.plain_native_responses

    def spy(*args):
        rows, others = plain(*args)
        taken.append(rows.num_rows)
        return rows, others

    monkeypatch.setattr(bulk, "plain_native_responses", spy)
    rng = random.Random(seed)
    pool = [f"m{i}" for i in range(80)] if model is None else ["m0"]
    lines = [_line(rng, pool).encode() for _ in range(400)]
    lines[0] = BOM + lines[0]
    lines.insert(7, b'{"model": "m0", "world_id": "w1", "status": "ok", "choice": "\xff"}')   # not UTF-8
    result = _verdicts(tmp_path, lines, model)
    assert result.report.rejects                                             # the mix always has rejects ...
    assert len(result.report.accepted) > (100 if model is None else 3)       # ... and accepted lines
    assert sum(taken) > 0.7 * (len(result.report.accepted) - result.report.n_invalid)   # most taken in bulk


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(0, 10**9), min_size=1, max_size=12))
def test_bulk_ingest_agrees_on_any_few_lines(tmp_path, seeds):
    lines = [_line(random.Random(s), [f"m{i}" for i in range(5)]).encode() for s in seeds]
    _verdicts(tmp_path, lines, None)


def test_the_lines_duckdb_reads_more_laxly_are_judged_by_pydantic(tmp_path):
    good = json.dumps(native("m0", "w1"))
    lines = [
        good[:-1] + ",}",                                                       # trailing comma
        good.replace('"confidence": 0.93', '"confidence": true'),              # a boolean as a number
        good.replace('"confidence": 0.93', '"confidence": "0.93"'),            # text as a number
        good.replace('"model": "m0"', '"model": 7'),                           # a number as text
        good.replace('"model": "m0"', '"model": "x", "model": "m0"'),          # a repeated key
        good.replace('0.95', 'nan'), good.replace('0.93', 'inf'),              # lax literals
        good.replace('"confidence": 0.93', '"confidence": 0.93, "extra": nan'),
        good.replace('"confidence": 0.93', '"confidence": 0.93, "extra": [1,]'),
        good.replace('"confidence": 0.93', '"confidence": 0.93, "valid": "no"'),
        good.replace("DELAY", "DEL\\u0041Y"),
        good.replace('"w1"', '"w2"'),                                          # the one clean line
    ]
    result = _verdicts(tmp_path, [x.encode() for x in lines], None)
    assert len(result.report.accepted) == 2     # the escaped class name is valid too (pydantic decodes it)


def test_repeated_keys_nulls_and_labels_are_counted_right(tmp_path, monkeypatch):
    taken = []
    plain = bulk.plain_native_responses

    def spy(*args):
        rows, others = plain(*args)
        taken.extend(rows.column("line_no").to_pylist())
        return rows, others

    monkeypatch.setattr(bulk, "plain_native_responses", spy)
    good = json.dumps(native("M", "w1"))
    lines = [
        good.replace('"confidence": 0.93', '"confidence": 0.93, "model": null'),       # DuckDB reads the first,
        good.replace('"model": "M"', '"model": null, "model": "M"'),                  # pydantic the last
        good.replace('"choice": "DELAY"', '"choice": "DELAY", "choice": null'),
        good.replace('"choice": "DELAY"', '"choice": null, "choice": "DELAY"'),
        good.replace('"confidence": 0.93', '"confidence": null, "confidence": 0.93'),
        good.replace('"confidence": 0.93', '"confidence": 0.93, "probabilities": null'),
        good.replace('"status": "ok"', '"status": "ok", "status": "unavailable"'),
        good.replace('"ADDRESS": 0.02', '"ADDRESS": 0.01, "ADDRESS": 0.03'),         # a repeated label
        good.replace('"ADDRESS": 0.02', '"OTHER": 0.02'),                             # a foreign label
        good.replace('"ADDRESS": 0.02', '"model": 0.02'),
        good.replace('"probabilities": {', '"probabilities": {}, "probabilities": {'),
        good.replace('"ADDRESS": 0.02, "DAMAGE": 0.01', '"ADDRESS": 1e400, "DAMAGE": -1e400'),
        good.replace('"confidence": 0.93', '"confidence": null'),                      # taken: nulls are fine
        good.replace('"confidence": 0.93', '"confidence" : null'),                     # (this one by pydantic)
        '{"model": "M", "world_id": "w1", "status": "unavailable", "choice": null, "probabilities": null, '
        '"confidence": null}',
        '{"model": "M", "world_id": "w1", "status": "ok", "choice": "DELAY", "probabilities": {"DELAY": 1}}',
        '{"model": "M", "world_id": "w1", "status": "ok", "choice": "DELAY", "probabilities": {}}',
        '{"model": "M", "world_id": "w1", "status": "ok", "choice": "DELAY", '
        '"probabilities": {"ADDRESS": 0.5, "DELAY": 0.5}}',                          # a tie: not the argmax
        '{"model": "M", "world_id": "w1", "status": "ok", "choice": "DAMAGE", "probabilities": {"DELAY": 1.0}}',
        '{"model": "M",\r"world_id": "w1",\t"status":"ok","choice":"DELAY"  }  ',
    ]
    lines = [line.replace('"M"', f'"m{i}"') for i, line in enumerate(lines)]       # no key repeats across lines
    result = _verdicts(tmp_path, [x.encode() for x in lines], None)
    assert sorted(taken) == [13, 15, 16, 18, 19, 20] and result.report.n_invalid == 6


def test_a_candidate_named_like_a_field_takes_no_label():
    candidates = bulk.Candidates({"w1": frozenset({"A", "B"}), "w2": frozenset({"model", "A"}),
                                  "w3": frozenset({"A", "B"})})
    assert candidates.place.shape == (3, 4) and not candidates.place[1].any() and not candidates.place[2].any()
    assert sorted(candidates.place[0]) == [0, 0, 1, 2] and list(candidates.world_set) == [0, 1, 0, 2]


def _quarantine_and_rows(db, worlds, path, bulk_validation: bool):
    with writer(db) as con:
        ingest_file(con, IngestRequest("worlds", worlds, "d"))
        result = ingest_file(con, IngestRequest("responses", path, "d"), bulk_validation=bulk_validation)
        quarantine = con.execute("SELECT line_no, field, reason, raw_text FROM rejects ORDER BY line_no").fetchall()
        rows = con.execute("SELECT line_no, model, world_id, valid, invalid_reason FROM responses "
                           "ORDER BY line_no").fetchall()
        sha = con.execute("SELECT sha256 FROM ingests WHERE kind = 'responses'").fetchone()[0]
    return result, quarantine, rows, sha


def test_planted_bad_lines_get_the_same_messages_in_bulk_as_line_by_line(tmp_path):
    worlds = write_lines(tmp_path / "worlds.jsonl", two_pairs())
    good = [json.dumps(native(f"m{i}", f"w{1 + i % 4}")) for i in range(40)]
    planted = {3: "", 5: "   ", 8: "not json", 11: good[0], 14: good[2].replace('"ok"', '"OK"'),
               17: '{"model": "m1", "world_id": "w9", "status": "ok"}', 20: good[4][:-1] + ', "x": 1}'}
    lines = [planted.get(i, line).encode() for i, line in enumerate(good)]
    lines[23] = b'{"model": "m23", "world_id": "w4", "status": "ok", "choice": "\xff"}'
    path = tmp_path / "responses.jsonl"
    path.write_bytes(BOM + b"\r\n".join(lines))
    bulk_run = _quarantine_and_rows(tmp_path / "bulk.duckdb", worlds, path, True)
    per_line = _quarantine_and_rows(tmp_path / "per_line.duckdb", worlds, path, False)
    assert bulk_run[1:] == per_line[1:]
    assert bulk_run[0].report.messages() == per_line[0].report.messages()
    assert len(bulk_run[1]) == 6 and bulk_run[3] == readers.file_sha256(path)    # hashed while read


def test_a_file_hashed_while_read_is_known_again(tmp_path):
    worlds = write_lines(tmp_path / "worlds.jsonl", two_pairs())
    path = write_lines(tmp_path / "responses.jsonl", [native("m0", "w1"), native("m0", "w2")])
    with writer(tmp_path / "w.duckdb") as con:
        ingest_file(con, IngestRequest("worlds", worlds, "d"))
        first = ingest_file(con, IngestRequest("responses", path, "d"))
        again = ingest_file(con, IngestRequest("responses", path, "d"))
    assert first.report.sha256 == readers.file_sha256(path) and not first.duplicate
    assert again.duplicate and again.ingest_id == first.ingest_id


def test_the_key_ledger_keeps_each_keys_first_row_as_a_set_would():
    """KeyLedger against a plain Python set: per block of rows in line order, a row is new when it
    is its key's first in the block and no earlier block or stored row had the key."""
    import numpy as np
    import pyarrow as pa
    rng = random.Random(7)
    worlds = [f"w{i}" for i in range(30)]
    ledger = bulk.KeyLedger(pa.array(worlds))
    ledger.mark(pa.array(["m0", "m1", "m1"]), pa.array(["w3", "w4", "gone"]))   # stored keys ('gone': no world now)
    seen = {("m0", "w3"), ("m1", "w4")}
    for _ in range(20):
        keys = [(f"m{rng.randint(0, 12)}", rng.choice(worlds)) for _ in range(rng.randint(2, 40))]
        lines = rng.sample(range(1000), len(keys))               # two tables, lines interleaved
        half = len(keys) // 2
        tables = [pa.table({"model": [m for m, _ in part], "world_id": [w for _, w in part], "line_no": nos})
                  for part, nos in ((keys[:half], lines[:half]), (keys[half:], lines[half:]))]
        new = np.concatenate(ledger.claim(*tables))
        expected = {}
        for line, key in sorted(zip(lines, keys)):
            expected[line] = key not in seen
            seen.add(key)
        assert new.tolist() == [expected[line] for line in lines]
    assert len(ledger.slots) == 13 and np.count_nonzero(ledger.seen) == len(seen)


@pytest.mark.parametrize("block_bytes", [300, 2000, None])
def test_repeated_keys_across_blocks_and_files_are_judged_as_line_by_line(tmp_path, monkeypatch, block_bytes):
    """The bulk path finds a repeated (model, world) key with its KeyLedger: within a block,
    across blocks (a key first seen on a line pydantic judged, then on a plain line, and back),
    and against an earlier file's rows; the verdicts equal the per-line path's."""
    if block_bytes:
        monkeypatch.setattr(readers, "BULK_BLOCK", block_bytes)
    worlds = write_lines(tmp_path / "worlds.jsonl", two_pairs())
    rng = random.Random(block_bytes or 1)
    first = write_lines(tmp_path / "first.jsonl", [native(f"m{i}", f"w{1 + i % 4}") for i in range(6)])
    rows = []
    for _ in range(120):
        row = native(f"m{rng.randint(0, 9)}", f"w{rng.randint(1, 4)}", choice=rng.choice(["DELAY", "ADDRESS"]))
        line = json.dumps(row, indent=1 if rng.random() < 0.2 else None).replace("\n", " ")
        if rng.random() < 0.3:                        # an escape: pydantic judges the line
            line = line.replace('"model": "m', '"model": "\\u006d')
        rows.append(line.encode())
    second = write_lines(tmp_path / "second.jsonl", rows, raw=True)
    runs = []
    for bulk_validation in (True, False):
        with writer(tmp_path / f"{bulk_validation}.duckdb") as con:
            ingest_file(con, IngestRequest("worlds", worlds, "d"))
            ingest_file(con, IngestRequest("responses", first, "d"), bulk_validation=bulk_validation)
            result = ingest_file(con, IngestRequest("responses", second, "d"), bulk_validation=bulk_validation)
            runs.append((result.report.messages(),
                         con.execute("SELECT ingest_id, line_no, model, world_id, choice FROM responses "
                                     "ORDER BY ingest_id, line_no").fetchall()))
    assert runs[0] == runs[1]
    assert 20 < len(runs[0][0]) < 110 and all("duplicate response" in m for m in runs[0][0])


def test_the_members_of_minified_objects_are_cut_as_json_reads_them():
    """bulk._items against json.loads: labels (quoted), values and each object's size, on objects
    as DuckDB writes them back (minified), labels with braces and spaces, one member or many, an
    array that starts inside its buffers (a slice)."""
    import numpy as np
    import pyarrow as pa
    rng = random.Random(3)
    names = ["A", "{b}", "c d", "}", "E_F", "x{"]
    objects = []
    for _ in range(200):
        members = {rng.choice(names) + str(i): rng.choice([0, 1, 0.25, 1e-7, 2.5e10, -0.0, 0.3333333333333333])
                   for i in range(rng.randint(1, 6))}
        objects.append(json.dumps(members, separators=(",", ":")))
    expected = [json.loads(o) for o in objects]
    for kind in (pa.string(), pa.large_string()):       # 64-bit offsets if a cursor ever gives them
        labels, values, size = bulk._items(pa.array(["{}"] + objects, type=kind).slice(1))
        assert size.tolist() == [len(e) for e in expected]
        assert labels.to_pylist() == [json.dumps(k) for e in expected for k in e]
        assert np.array(values.to_pylist(), dtype=float).tolist() == [float(v) for e in expected for v in e.values()]


def test_an_identifier_over_the_length_limit_is_rejected_alike_in_bulk(tmp_path):
    """A model or world_id of MAX_ID_LENGTH characters is stored, one more is rejected with its
    line, in bulk as line by line (DuckDB keys rows by them, and indexes keys whole)."""
    from qlb.records.schemas import MAX_ID_LENGTH
    ok, long = "m" * MAX_ID_LENGTH, "m" * (MAX_ID_LENGTH + 1)
    lines = [json.dumps(native(model, "w1")).encode() for model in (ok, long)]
    lines.append(json.dumps(native("m2", "w" * (MAX_ID_LENGTH + 1))).encode())
    result = _verdicts(tmp_path, lines, None)
    assert len(result.report.accepted) == 1
    assert [(r.line_no, r.field) for r in result.report.rejects] == [(2, "model"), (3, "world_id")]
    assert "at most 256 characters" in result.report.rejects[0].reason
