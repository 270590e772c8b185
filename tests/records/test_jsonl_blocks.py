"""The bulk reader (`jsonl_blocks`, issue #17 goal 3) reads JSON Lines with the same line rules as
`read_records`: the same lines, numbers, texts and rejections (BOM, CRLF, blank lines, lines that
are not UTF-8, over-long lines), whatever the block size."""
from __future__ import annotations

import hashlib
import random

import pytest

from qlb.records import readers
from qlb.records.readers import BOM, LineBlock, jsonl_blocks, read_records

PIECES = [b'{"a":1}', b'', b'   ', b'\t', b'{"b":"\xc3\xa9"}', b'\xff\xfe bad', b'x\r', b'y\r\r', b'\xc2\xa0',
          b'{"c":2}\r', b'\r', b'\xff\r', b'\xe9\xe9 \r\r', b'ok \xed\xa0\x80 surrogate', b'\xc3']


def _flat(path, block_bytes, deferred=False):
    out = []
    for block in jsonl_blocks(path, block_bytes, deferred=deferred):
        block = block() if deferred and callable(block) else block
        records = block.records() if isinstance(block, LineBlock) else block
        out += [(r.line_no, r.raw, r.text, r.error) for r in records]
    return out


@pytest.mark.parametrize("seed", range(4))
def test_blocks_read_what_read_records_reads(tmp_path, monkeypatch, seed):
    monkeypatch.setattr(readers, "MAX_LINE_BYTES", 64)
    rng = random.Random(seed)
    for trial in range(150):
        lines = [rng.choice(PIECES) if rng.random() < 0.9 else b"z" * rng.randint(58, 70)
                 for _ in range(rng.randint(0, 40))]
        data = b"\n".join(lines) + rng.choice([b"", b"\n", b"\r\n"])
        if rng.random() < 0.3:
            data = BOM + data
        path = tmp_path / "f.jsonl"
        path.write_bytes(data)
        expected = [(r.line_no, r.raw, r.text, r.error) for r in read_records(path)]
        for block_bytes in (1, 7, 50, 1000):
            assert _flat(path, block_bytes) == expected, (trial, block_bytes, data)
            assert _flat(path, block_bytes, deferred=True) == expected, (trial, block_bytes, data)


def test_a_bad_line_does_not_send_its_block_line_by_line(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_bytes(b'{"a":1}\n\xff\n{"a":2}\n')
    (block,) = list(jsonl_blocks(path))
    assert block.data == b'{"a":1}\n#\n{"a":2}\n' and list(block.aside) == [1]      # one line per number
    assert [(r.line_no, r.error) for r in block.others] == [(2, "line is not valid UTF-8 (byte 0)")]


def test_lines_a_bulk_reader_cannot_take_are_set_aside_one_for_one(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_bytes(BOM + b'{"a":1}\n\n  \n\x0b\n[1]\n {"b":2}\r\n{"c":"\xc3\xa9"}\n{"d":"\xff"}\n{"e":5}')
    (block,) = list(jsonl_blocks(path))
    assert block.data == b'#\n#\n#\n#\n#\n#\n{"c":"\xc3\xa9"}\n#\n{"e":5}'
    assert list(block.aside) == [0, 1, 2, 3, 4, 5, 7] and block.first == 1 and len(block) == 9
    assert [(r.line_no, r.text, r.error) for r in block.others] == [
        (1, '{"a":1}', None), (5, "[1]", None), (6, ' {"b":2}', None), (8, None, "line is not valid UTF-8 (byte 6)")]
    assert [r.line_no for r in block.records()] == [1, 5, 6, 7, 8, 9]


def test_a_file_is_hashed_while_its_blocks_are_read(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "MAX_LINE_BYTES", 64)
    path = tmp_path / "f.jsonl"
    path.write_bytes(b'{"a":1}\n' * 40 + b"z" * 100 + b'\n{"a":2}\n' * 5)        # an over-long line, then more
    for block_bytes in (16, 10_000):
        for deferred in (False, True):
            digest = hashlib.sha256()
            list(jsonl_blocks(path, block_bytes, digest=digest, deferred=deferred))
            assert digest.hexdigest() == readers.file_sha256(path)
