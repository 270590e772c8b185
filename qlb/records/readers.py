"""Reading input files line by line without losing anything (CONTRACT.md section 1).

JSON Lines: an optional UTF-8 byte-order mark, CRLF or LF endings, blank lines skipped, a line
that is not valid UTF-8 becomes a rejected record (never a crash). CSV and Parquet carry the
same columns; nested fields (maps, lists) are JSON text in a CSV cell.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

BOM = b"\xef\xbb\xbf"
FORMATS = ("jsonl", "csv", "parquet")


@dataclass(frozen=True, slots=True)
class Record:
    """One input line (or CSV/Parquet row). Exactly one of ``text``/``obj``/``error`` drives
    validation: JSON Lines give ``text`` (validated by pydantic's JSON parser), tables give
    ``obj``; ``error`` means the line could not even be read."""

    line_no: int
    raw: str
    text: str | None = None
    obj: dict[str, Any] | None = None
    error: str | None = None


def detect_format(path: str | Path) -> str:
    """jsonl, csv or parquet from the file name (``.json``/``.ndjson`` count as JSON Lines)."""
    name = str(path).lower()
    if name.endswith((".jsonl", ".ndjson", ".json", ".jsonl.txt")):
        return "jsonl"
    if name.endswith(".csv"):
        return "csv"
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    raise ValueError(f"{path}: cannot tell the format from the name; use .jsonl, .csv or .parquet")


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of the file's bytes, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def count_lines(path: str | Path) -> int:
    """Physical lines (or rows) in a file: the total of a progress bar."""
    fmt = detect_format(path)
    if fmt == "parquet":
        import pyarrow.parquet as pq
        return pq.ParquetFile(path).metadata.num_rows
    with open(path, "rb") as fh:
        return sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 20), b"")) + 1


def read_records(path: str | Path, json_columns: frozenset[str] = frozenset(),
                 fmt: str | None = None) -> Iterator[Record]:
    """Yield every non-blank line of ``path`` as a Record, in file order. ``json_columns`` are the
    CSV/Parquet columns holding JSON (numbers, maps, lists); ``fmt`` overrides the file name."""
    fmt = fmt or detect_format(path)
    if fmt == "jsonl":
        yield from _read_jsonl(path)
    elif fmt == "csv":
        yield from _read_csv(path, json_columns)
    else:
        yield from _read_parquet(path, json_columns)


WHOLE_FILE_LIMIT = 256 << 20  # read smaller files in one go (faster); stream larger ones


def _read_jsonl(path: str | Path) -> Iterator[Record]:
    with open(path, "rb") as fh:
        lines = fh.read().split(b"\n") if Path(path).stat().st_size < WHOLE_FILE_LIMIT else fh
        for line_no, line in enumerate(lines, start=1):
            if line_no == 1 and line.startswith(BOM):
                line = line[len(BOM):]
            line = line.rstrip(b"\r\n")
            if not line.strip():
                continue
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield Record(line_no, line.decode("utf-8", "backslashreplace"),
                             error=f"line is not valid UTF-8 (byte {exc.start})")
                continue
            yield Record(line_no, text, text=text)


def _cell(value: Any, is_json: bool) -> Any:
    """A CSV cell: empty -> missing; JSON-typed columns parse as JSON; others stay text."""
    if value is None or value == "":
        return None
    if not is_json:
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value  # left as text: validation names the field and what it expected


def _read_csv(path: str | Path, json_columns: frozenset[str]) -> Iterator[Record]:
    data = Path(path).read_bytes()
    if data.startswith(BOM):
        data = data[len(BOM):]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Find the physical line of the bad byte and reject that row only.
        bad_line = data[: exc.start].count(b"\n") + 1
        text = data.decode("utf-8", "replace")
        bad_lines = {bad_line}
    else:
        bad_lines = set()
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        return
    header = [h.strip() for h in header]
    while True:
        line_no = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield Record(line_no, "", error=f"CSV could not be parsed: {exc}")
            return
        if not any(c.strip() for c in row):
            continue
        raw = ",".join(row)
        if line_no in bad_lines:
            yield Record(line_no, raw, error="line is not valid UTF-8")
            continue
        if len(row) != len(header):
            yield Record(line_no, raw, error=f"row has {len(row)} cells, header has {len(header)}")
            continue
        obj = {h: _cell(v, h in json_columns) for h, v in zip(header, row)}
        yield Record(line_no, raw, obj=obj)


def _plain(value: Any) -> Any:
    """Arrow values to plain JSON-like Python (maps arrive as lists of pairs)."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, list) and value and all(isinstance(x, tuple) and len(x) == 2 for x in value):
        return {k: _plain(v) for k, v in value}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _read_parquet(path: str | Path, json_columns: frozenset[str]) -> Iterator[Record]:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    row_no = 0
    for batch in table.to_batches():
        for row in batch.to_pylist():
            row_no += 1
            obj = {}
            for k, v in row.items():
                v = _plain(v)
                if k in json_columns and isinstance(v, str):
                    v = _cell(v, True)
                obj[k] = v
            yield Record(row_no, json.dumps(obj, default=str, ensure_ascii=False), obj=obj)
