"""Reading input files line by line without losing anything (CONTRACT.md section 1).

One set of line rules for every format, read as a stream (memory does not grow with the file):

* an optional UTF-8 byte-order mark, CRLF or LF endings; blank lines are skipped;
* a line (a CSV row, a Parquet row) that is not valid UTF-8 is a rejected record, on its own;
* a line larger than ``MAX_LINE_BYTES`` is a rejected record naming its line (and, for CSV and
  Parquet, the field that passed the limit); it is never held whole, and reading goes on;
* JSON (a JSON Lines line, a CSV or Parquet cell of a JSON column) goes through one parser,
  pydantic's: the same numbers (``NaN`` and ``Infinity`` are read as those floats and judged by
  validation, never turned into missing values) and the same nesting limit (a deeper value
  rejects its record; never a RecursionError).

CSV follows Python's csv module (excel dialect, not strict) but is read here, one physical line at
a time, so that no cell size ends the file. Nested fields (maps, lists) are JSON text in a CSV cell;
in Parquet they are Arrow maps, lists and structs, or JSON text. A record's raw text is its line
(JSON Lines), the header's line and its row's (CSV: the cells keep their names), or its row as
a JSON object (Parquet).
"""
from __future__ import annotations

import csv
import functools
import hashlib
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator

from pydantic_core import from_json

BOM = b"\xef\xbb\xbf"
FORMATS = ("jsonl", "csv", "parquet")
MAX_LINE_BYTES = 16 << 20     # a larger line (or row) is rejected: memory stays bounded per line
MAX_DEPTH = 200               # nesting a Parquet value may have (pydantic's JSON parser stops near here)
BULK_BLOCK = 6 << 20         # bytes of lines the bulk validator takes at once (four in hand: a 1 GB file peaks at about 480 MB)
RAW_SHOWN = 4096              # characters of an over-long line kept for the quarantine
_BLOCK = 1 << 20


@dataclass(frozen=True, slots=True)
class Record:
    """One input line (or CSV/Parquet row). Exactly one of ``text``/``obj``/``error`` drives
    validation: JSON Lines give ``text`` (validated by pydantic's JSON parser), tables give
    ``obj``; ``error`` means the line could not even be read (``field`` names the cell at fault,
    when one is)."""

    line_no: int
    raw: str
    text: str | None = None
    obj: dict[str, Any] | None = None
    error: str | None = None
    field: str | None = None


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
        _feed(h, fh)
    return h.hexdigest()


def _feed(digest: "hashlib._Hash", fh: IO[bytes]) -> None:
    """Feed ``digest`` the rest of ``fh``."""
    for block in iter(lambda: fh.read(_BLOCK), b""):
        digest.update(block)


def count_lines(path: str | Path) -> int:
    """Physical lines (or rows) in a file: the total of a progress bar. A file named .parquet that
    is not one is a ValueError naming it."""
    fmt = detect_format(path)
    if fmt == "parquet":
        return _parquet_file(path).metadata.num_rows
    with open(path, "rb") as fh:
        return sum(block.count(b"\n") for block in iter(lambda: fh.read(_BLOCK), b"")) + 1


def whole_file_problem(path: str | Path, fmt: str | None = None) -> str | None:
    """What makes every line of a file fail to read, when its first bytes show it: a UTF-16 or
    UTF-32 file (its byte-order mark), or (JSON Lines) one JSON array instead of an object a line.
    None otherwise. Its lines are still each rejected (CONTRACT.md: a line, not the file); this
    says why, once."""
    with open(path, "rb") as fh:
        start = fh.read(64)
    if start.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")):
        return "the file is UTF-16 or UTF-32 (its byte-order mark says so): save it as UTF-8"
    if (fmt or detect_format(path)) == "jsonl" and start.removeprefix(BOM).lstrip().startswith(b"["):
        return ("the file starts with '[': it looks like one JSON array, and a JSON Lines file holds one "
                "object a line (`jq -c '.[]' FILE > NEW.jsonl` converts it)")
    return None


def has_lines(path: str | Path, fmt: str | None = None) -> bool:
    """Whether the file holds a line to read: False for an empty file, one of blank lines only,
    or a CSV header without rows (a line that cannot be read counts: it is a rejected line)."""
    records = read_records(path, fmt=fmt)
    try:
        return next(records, None) is not None
    finally:
        records.close()


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


# ------------------------------------------------------------------------------ physical lines
def _physical_lines(fh: IO[bytes]) -> Iterator[tuple[int, bytes, Iterator[bytes] | None]]:
    """(line number, line, rest) for every line, its ending included. A line longer than
    ``MAX_LINE_BYTES`` comes cut after ``MAX_LINE_BYTES + 1`` bytes, with ``rest`` the iterator of
    its remaining blocks (the last one ends with the newline, unless the file ends first); the
    blocks the caller leaves unread are skipped."""
    limit = MAX_LINE_BYTES + 1
    readline = fh.readline
    line_no = 0
    while True:
        line = readline(limit)
        if not line:
            return
        line_no += 1
        if len(line) < limit or line.endswith(b"\n"):
            yield line_no, line, None
            continue
        rest = _rest_of_line(readline)
        yield line_no, line, rest
        for _ in rest:
            pass


def _rest_of_line(readline) -> Iterator[bytes]:
    while True:
        block = readline(_BLOCK)
        if not block:
            return
        yield block
        if block.endswith(b"\n"):
            return


def _ending(line: bytes) -> tuple[bytes, str]:
    """The line without its ending, and the ending ("\\r\\n", "\\n", or "" at the file's end)."""
    if line.endswith(b"\r\n"):
        return line[:-2], "\r\n"
    if line.endswith(b"\n"):
        return line[:-1], "\n"
    return line, ""


def _too_long(size: int) -> str:
    return f"line is {size:,} bytes; a line may hold at most {MAX_LINE_BYTES:,}"


def _shown(data: bytes, size: int) -> str:
    """The start of an over-long line, for the quarantine."""
    return data[:RAW_SHOWN].decode("utf-8", "backslashreplace") + f" ... ({size:,} bytes in all)"


def _not_utf8(exc: UnicodeDecodeError) -> str:
    return f"line is not valid UTF-8 (byte {exc.start})"


# ------------------------------------------------------------------------------- JSON Lines
def _read_jsonl(path: str | Path) -> Iterator[Record]:
    with open(path, "rb", buffering=_BLOCK) as fh:
        yield from _jsonl_records(fh)


def _jsonl_records(fh: IO[bytes], lines_before: int = 0) -> Iterator[Record]:
    """The Records of the lines from ``fh``'s position on, numbered after ``lines_before``."""
    for line_no, line, rest in _physical_lines(fh):
        line_no += lines_before
        if rest is not None:
            if line_no == 1 and line.startswith(BOM):
                line = line[len(BOM):]
            size, last = len(line), b""
            for last in rest:
                size += len(last)
            size -= len(last) - len(_ending(last)[0])
            yield Record(line_no, _shown(line, size), error=_too_long(size))
            continue
        rec = _line_record(line_no, line)
        if rec is not None:
            yield rec


def _line_record(line_no: int, line: bytes) -> Record | None:
    """The Record of one JSON Lines line (not over-long; its ending may be included), None when
    it is blank. The one definition of the line rules, for ``read_records`` and ``jsonl_blocks``."""
    if line_no == 1 and line.startswith(BOM):
        line = line[len(BOM):]
    line = line.rstrip(b"\r\n")
    if not line.strip():
        return None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Record(line_no, line.decode("utf-8", "backslashreplace"), error=_not_utf8(exc))
    return Record(line_no, text, text=text)


def _chunks(records: Iterator[Record], size: int = 20_000) -> Iterator[list[Record]]:
    chunk: list[Record] = []
    for rec in records:
        chunk.append(rec)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


SET_ASIDE = b"#"      # what a set-aside line of a LineBlock holds instead (never JSON, never blank)


@dataclass(frozen=True, slots=True)
class LineBlock:
    """Consecutive whole lines of a JSON Lines file, none over-long, as bytes for a bulk reader:
    line ``i`` (numbered ``first + i``) is ``data[starts[i]:ends[i]]``, its ending included. Each
    line starts with ``{`` and is valid UTF-8, except the lines set aside (indices ``aside``): those
    that start otherwise (blank lines, a byte-order mark, anything but an object) or are not UTF-8.
    A set-aside line holds just ``SET_ASIDE`` in ``data`` and its Record, unless it is blank, is
    among ``others``. So a reader that splits ``data`` at newlines meets one line per line number,
    and the lines it may take whole are never blank, never the first line's byte-order mark."""

    first: int
    data: bytes
    ends: "np.ndarray"
    aside: "np.ndarray"
    others: list[Record] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ends)

    @property
    def starts(self) -> "np.ndarray":
        """The offset of each line's first byte."""
        return _line_starts(self.ends)

    def records_at(self, indices: Iterable[int]) -> list[Record]:
        """The Records of the lines at ``indices`` (none set aside; in that order), by the line
        rules of ``read_records``."""
        starts, ends, data, first = self.starts, self.ends, self.data, self.first
        return [rec for i in map(int, indices)
                if (rec := _line_record(first + i, data[starts[i]:ends[i]])) is not None]

    def records(self) -> list[Record]:
        """Every non-blank line's Record, in line order: what ``read_records`` gives for these lines."""
        aside = set(self.aside.tolist())
        kept = self.records_at(i for i in range(len(self)) if i not in aside)
        return sorted(kept + self.others, key=lambda r: r.line_no)


def _line_ends(data: bytes) -> "np.ndarray":
    """The offset just past each line of ``data`` (past its newline; the last line may have none)."""
    import numpy as np
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10) + 1
    return np.append(ends, len(data)) if data and not data.endswith(b"\n") else ends


def _line_starts(ends: "np.ndarray") -> "np.ndarray":
    """The offset of each line's first byte, from ``_line_ends``."""
    import numpy as np
    return np.concatenate((np.zeros(1, dtype=ends.dtype), ends[:-1])) if len(ends) else ends


def _longest_line(data: bytes, ends: "np.ndarray") -> int:
    """Bytes of the longest line of ``data``, its newline not counted."""
    import numpy as np
    if not len(ends):
        return 0
    sizes = ends - _line_starts(ends) - (np.frombuffer(data, dtype=np.uint8)[ends - 1] == 10)
    return int(sizes.max())


def _set_aside(data: bytes, ends: "np.ndarray") -> "np.ndarray":
    """Indices of the lines a LineBlock sets aside: not starting with ``{``, or not valid UTF-8."""
    import numpy as np
    body = np.frombuffer(data, dtype=np.uint8)
    odd = set(np.flatnonzero(body[_line_starts(ends)] != ord("{")).tolist())
    if not _utf8(data):                  # decode only the lines with a byte outside ASCII, one by one
        starts = _line_starts(ends)
        for i in np.unique(np.searchsorted(ends, np.flatnonzero(body >= 0x80), side="right")).tolist():
            try:
                data[starts[i]:ends[i]].decode("utf-8")
            except UnicodeDecodeError:
                odd.add(i)
    return np.array(sorted(odd), dtype=np.int64)


def _utf8(data: bytes) -> bool:
    """Whether ``data`` is valid UTF-8, by Arrow's vectorised check (ten times faster than
    decoding; it refuses what Python's decoder refuses: overlong forms, surrogates)."""
    import numpy as np
    import pyarrow as pa
    offsets = pa.py_buffer(np.array([0, len(data)], dtype=np.int64))
    text = pa.LargeStringArray.from_buffers(1, offsets, pa.py_buffer(data))
    try:
        text.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _line_block(data: bytes, ends: "np.ndarray", lines_before: int) -> LineBlock:
    """``data`` (whole lines, none over-long; ``ends`` from ``_line_ends``) as a LineBlock numbered
    after ``lines_before``: the lines set aside are read here, by the line rules, and replaced."""
    aside = _set_aside(data, ends)
    if not len(aside):
        return LineBlock(lines_before + 1, data, ends, aside)
    import numpy as np
    starts, stops = _line_starts(ends).tolist(), ends.tolist()
    others, pieces, pos = [], [], 0
    for i in aside.tolist():
        rec = _line_record(lines_before + 1 + i, data[starts[i]:stops[i]])
        if rec is not None:
            others.append(rec)
        pieces += [data[pos:starts[i]], SET_ASIDE + b"\n"]
        pos = stops[i]
    pieces.append(data[pos:])
    shrink = np.zeros(len(ends), dtype=ends.dtype)      # each set-aside line becomes two bytes
    shrink[aside] = ends[aside] - _line_starts(ends)[aside] - len(SET_ASIDE) - 1
    return LineBlock(lines_before + 1, b"".join(pieces), ends - np.cumsum(shrink), aside, others)


def jsonl_blocks(path: str | Path, block_bytes: int | None = None, digest: "hashlib._Hash | None" = None,
                 deferred: bool = False) -> Iterator[LineBlock | list[Record] | Callable[[], LineBlock | list[Record]]]:
    """The lines of a JSON Lines file in file order, as ``LineBlock``s of about ``block_bytes``
    for the bulk validator, with the same line rules as ``read_records``: a block that holds an
    over-long line comes as that block's Records instead (the rejected lines with their reasons,
    the others as text), so no line is lost or numbered differently. ``digest`` (a hashlib object)
    is fed the file's bytes as they are read, so that a file is read once for both.

    ``deferred``: each block read in one piece comes as a function of no arguments that makes it
    (its LineBlock, or its Records), so that another thread can do that work; only the reading,
    the digest and the line count stay in the caller's."""
    limit = MAX_LINE_BYTES + 1
    block_bytes = block_bytes or BULK_BLOCK
    with open(path, "rb", buffering=_BLOCK) as fh:
        lines_before = 0
        while True:
            start = fh.tell()
            data = fh.read(block_bytes)
            if not data:
                return
            if not data.endswith(b"\n"):
                tail = fh.readline(limit)
                data += tail
                if len(tail) == limit and not tail.endswith(b"\n"):     # an over-long line: line by line from here
                    fh.seek(start)
                    if digest is not None:
                        _feed(digest, fh)
                        fh.seek(start)
                    yield from _chunks(_jsonl_records(fh, lines_before))
                    return
            if digest is not None:
                digest.update(data)
            make = functools.partial(_block_of, data, lines_before)
            if deferred:
                yield make
            else:
                block = make()
                yield from (_chunks(iter(block)) if isinstance(block, list) else (block,))
            lines_before += data.count(b"\n") + (not data.endswith(b"\n"))


def _block_of(data: bytes, lines_before: int) -> LineBlock | list[Record]:
    """Whole lines of a JSON Lines file as ``jsonl_blocks`` gives them: a LineBlock, or the Records
    of lines one of which is over-long."""
    ends = _line_ends(data)
    if _longest_line(data, ends) > MAX_LINE_BYTES:
        return list(_jsonl_records(io.BufferedReader(io.BytesIO(data)), lines_before))
    return _line_block(data, ends, lines_before)


# ---------------------------------------------------------------------------------------- CSV
_START, _UNQUOTED, _QUOTED, _QUOTE_IN_QUOTED = range(4)
_QUOTED_RUN = re.compile(r'[^"]*(?:""[^"]*)*')      # a quoted cell's text up to its closing quote
_CLOSED_CELL = r'(?:"[^"]*(?:""[^"]*)*"|[^,"]*)'
_CLOSED_LINE = re.compile(f"{_CLOSED_CELL}(?:,{_CLOSED_CELL})*")   # a whole row on one line, quotes closed
_CSV_MODULE_LIMIT = 100_000      # under the csv module's cell limit (131,072): it may read such a line


class _CsvRow:
    """Python csv's excel dialect, not strict (a quote inside an unquoted cell, or text after a
    closing quote, is kept as text), fed one physical line at a time. Cells are kept until the row
    passes ``MAX_LINE_BYTES`` characters; past that only the structure is followed, to find where
    the row ends, and the cell that passed the limit is remembered."""

    def __init__(self) -> None:
        self.limit = MAX_LINE_BYTES
        self.cells: list[str] = []
        self.parts: list[str] = []
        self.state = _START
        self.size = 0
        self.overflow: int | None = None      # index of the cell that passed the limit

    def _add(self, text: str) -> None:
        if self.overflow is None:
            self.size += len(text)
            if self.size > self.limit:
                self.overflow_at()
            else:
                self.parts.append(text)

    def overflow_at(self) -> None:
        """Stop keeping text: the row is over the limit in its current cell."""
        if self.overflow is None:
            self.overflow = len(self.cells)
            self.parts = []

    def _end_cell(self) -> None:
        self.cells.append("".join(self.parts))
        self.parts = []

    def feed(self, s: str, line_end: str | None) -> bool:
        """Read ``s``, a physical line without its ending (or, with ``line_end`` None, a block of
        one). True when the row ends with it; ``line_end`` "" is the end of the file."""
        n = len(s)
        if (line_end is not None and self.state == _START and not self.cells and not self.parts
                and n <= min(self.limit, _CSV_MODULE_LIMIT) and "\r" not in s and "\x00" not in s
                and _CLOSED_LINE.fullmatch(s)):
            # the common row (one line, quotes closed): the csv module's C reader gives the same cells
            self.cells = next(csv.reader((s,))) if '"' in s else s.split(",")
            self.size = n
            return True
        pos, state = 0, self.state
        while pos < n:
            if state == _START:
                if s[pos] == '"':
                    state, pos = _QUOTED, pos + 1
                    continue
                state = _UNQUOTED
            if state == _UNQUOTED:
                j = s.find(",", pos)
                if j < 0:
                    self._add(s[pos:])
                    pos = n
                else:
                    self._add(s[pos:j])
                    self._end_cell()
                    state, pos = _START, j + 1
            elif state == _QUOTED:
                m = _QUOTED_RUN.match(s, pos)
                if m.end() > pos:
                    self._add(m.group().replace('""', '"'))
                pos = m.end()
                if pos < n:                      # a lone quote: the cell closes (or a doubled quote
                    state, pos = _QUOTE_IN_QUOTED, pos + 1    # goes on in the next block)
            else:
                c = s[pos]
                if c == '"':
                    self._add('"')
                    state, pos = _QUOTED, pos + 1
                elif c == ",":
                    self._end_cell()
                    state, pos = _START, pos + 1
                else:
                    state = _UNQUOTED            # text after a closing quote stays part of the cell
        self.state = state
        if line_end is None:
            return False
        if state == _QUOTED and line_end:
            self._add(line_end)                  # a line break inside a quoted cell
            return False
        self._end_cell()
        return True

    @property
    def open_quote(self) -> bool:
        """True when the file ended inside a quoted cell."""
        return self.state == _QUOTED


def _csv_rows(fh: IO[bytes]) -> Iterator[tuple[int, _CsvRow, str, tuple[int, UnicodeDecodeError] | None]]:
    """(first line, parsed row, raw text, first bad UTF-8 line) for every CSV row."""
    row, start, raw, bad = _CsvRow(), 0, [], None
    for line_no, line, rest in _physical_lines(fh):
        if line_no == 1 and line.startswith(BOM):
            line = line[len(BOM):]
        if not start:
            start = line_no
        content, ending = _ending(line) if rest is None else (line, None)
        try:
            text = shown = content.decode("utf-8")
        except UnicodeDecodeError as exc:
            if rest is None and bad is None:     # a cut line may end inside a character: not an error
                bad = (line_no, exc)
            text = content.decode("utf-8", "replace")    # only quotes and commas matter from here
            shown = content.decode("utf-8", "backslashreplace")
        if row.overflow is None:
            raw.append(shown + (ending or ""))
        done = row.feed(text, ending)
        if rest is not None:
            row.overflow_at()
            size = len(line)
            for block in rest:
                size += len(block)
                block_content, block_end = _ending(block) if block.endswith(b"\n") else (block, None)
                done = row.feed(block_content.decode("utf-8", "replace"), block_end)
            if not done and row.state != _QUOTED:       # the file ended inside this line
                done = row.feed("", "")
        if done:
            text_raw = "".join(raw)
            if row.overflow is not None:
                text_raw = text_raw[:RAW_SHOWN] + " ... (over the line limit)"
            yield start, row, text_raw.rstrip("\r\n"), bad
            row, start, raw, bad = _CsvRow(), 0, [], None
    if start:                                    # the file ended inside a quoted cell
        row.feed("", "")
        yield start, row, "".join(raw)[:RAW_SHOWN], bad


def _row_problem(row: _CsvRow, bad: tuple[int, UnicodeDecodeError] | None, start: int,
                 names: list[str] | None) -> tuple[str | None, str] | None:
    """(field, reason) when a row cannot be read, else None."""
    if row.overflow is not None:
        i = row.overflow
        field = names[i] if names is not None and i < len(names) else f"column {i + 1}"
        return field, f"cell is too large: the row passes {MAX_LINE_BYTES:,} characters, the limit of a line"
    if bad is not None:
        line_no, exc = bad
        where = "" if line_no == start else f"line {line_no} of the row: "
        return None, where + _not_utf8(exc)
    if row.open_quote:
        return None, "the row ends inside a quoted cell (its closing quote is missing)"
    return None


def _header_problem(names: list[str]) -> str | None:
    if len(names) == 1:                    # a file of another separator (a spreadsheet's ';', say) reads as one column
        separator = next((c for c in (";", "\t", "|") if c in names[0]), None)
        if separator is not None:
            shown = names[0] if len(names[0]) <= 60 else names[0][:60] + "..."
            return (f"one column, {shown!r}: its names are separated by {separator!r}; a CSV file's cells are "
                    "separated by ','")
    seen: set[str] = set()
    for i, name in enumerate(names, start=1):
        if not name:
            return f"column {i} has no name"
        if name in seen:
            return f"column {name!r} appears twice"
        seen.add(name)
    return None


def _json_cell(text: str) -> Any:
    """A JSON column's cell, read by the JSON Lines parser (ValueError when it is not JSON, its
    position said within the cell)."""
    try:
        return from_json(text)
    except ValueError as exc:
        raise ValueError(re.sub(r" at line 1 column (\d+)$", r" at column \1 of the cell", str(exc))) from None


def _read_csv(path: str | Path, json_columns: frozenset[str]) -> Iterator[Record]:
    with open(path, "rb", buffering=_BLOCK) as fh:
        yield from _csv_records(fh, json_columns)


def _csv_records(fh: IO[bytes], json_columns: frozenset[str]) -> Iterator[Record]:
    """The Records of a CSV file's rows. A row's ``raw`` is the header's text, a newline, then the
    row's (both as received): a row quarantined alone would have no column names, and the key of
    its record is read from them (``csv_cells``)."""
    names: list[str] | None = None
    header_raw = ""
    header_error: str | None = None
    for start, row, raw, bad in _csv_rows(fh):
        blank = row.overflow is None and not any(c.strip() for c in row.cells)
        if blank and bad is None and not row.open_quote:
            continue
        if names is None and header_error is None:       # the first row names the columns
            problem = _row_problem(row, bad, start, None)
            if problem is None:
                names = [c.strip() for c in row.cells]
                reason = _header_problem(names)
                problem = None if reason is None else (None, reason)
            if problem is not None:
                header_error = f"the header (line {start}) cannot be used: {problem[1]}"
                yield Record(start, raw, error=f"header: {problem[1]}", field=problem[0])
            else:
                header_raw = raw + "\n"
            continue
        if header_error is not None:
            yield Record(start, raw, error=header_error)
            continue
        raw = header_raw + raw
        problem = _row_problem(row, bad, start, names)
        if problem is not None:
            yield Record(start, raw, error=problem[1], field=problem[0])
            continue
        if len(row.cells) != len(names):
            cells = f"{len(row.cells)} cell" + ("" if len(row.cells) == 1 else "s")
            yield Record(start, raw, error=f"row has {cells}, header has {len(names)}")
            continue
        yield _csv_record(start, raw, names, row.cells, json_columns)


def csv_cells(raw: str) -> dict[str, str | None] | None:
    """The cells, by column name, of a CSV row's ``Record.raw`` (the header's text, a newline, the
    row's) as the reader reads them (an empty cell is None; no cell parsed as JSON); None when
    the text is not a header and one readable row of as many cells (a row kept without its header,
    or one cut at the line limit)."""
    records = list(_csv_records(io.BytesIO(raw.encode("utf-8")), frozenset()))
    if len(records) != 1 or records[0].obj is None:
        return None
    return records[0].obj


def _csv_record(line_no: int, raw: str, names: list[str], cells: list[str], json_columns: frozenset[str]) -> Record:
    """A row's cells: empty is missing, JSON columns are parsed, the others stay text."""
    obj: dict[str, Any] = {}
    for name, value in zip(names, cells):
        if value == "":
            obj[name] = None
        elif name in json_columns:
            try:
                obj[name] = _json_cell(value)
            except ValueError as exc:
                return Record(line_no, raw, error=f"cell is not valid JSON: {exc}", field=name)
        else:
            obj[name] = value
    return Record(line_no, raw, obj=obj)


# ------------------------------------------------------------------------------------ Parquet
class _CellProblem(Exception):
    """A Parquet cell that cannot be read; the row is rejected naming the field."""


class _Unreadable:
    """A cell Arrow could not turn into Python (text that is not UTF-8)."""

    def __init__(self, reason: str):
        self.reason = reason


class _RowSize:
    """Characters of text met so far in one row (the line limit applies to a Parquet row too)."""

    def __init__(self) -> None:
        self.chars = 0

    def add(self, n: int) -> None:
        self.chars += n
        if self.chars > MAX_LINE_BYTES:
            raise _CellProblem(f"cell is too large: the row passes {MAX_LINE_BYTES:,} characters, "
                               "the limit of a line")


def _plain(value: Any, size: _RowSize, depth: int = 0) -> Any:
    """Arrow values to plain JSON-like Python (maps arrive as lists of pairs; NaN stays NaN)."""
    if depth > MAX_DEPTH:
        raise _CellProblem(f"value is nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        size.add(len(value))
        return value
    if isinstance(value, bytes):
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _CellProblem(f"text is not valid UTF-8 (byte {exc.start})") from None
        size.add(len(text))
        return text
    if isinstance(value, _Unreadable):
        raise _CellProblem(value.reason)
    if isinstance(value, dict):
        return {k: _plain(v, size, depth + 1) for k, v in value.items()}
    if isinstance(value, list) and value and all(isinstance(x, tuple) and len(x) == 2 for x in value):
        return {_plain(k, size, depth + 1): _plain(v, size, depth + 1) for k, v in value}
    if isinstance(value, list):
        return [_plain(v, size, depth + 1) for v in value]
    return value


def _column_values(column) -> list[Any]:
    """A batch column as Python values; a value Arrow cannot convert becomes _Unreadable. A map
    column's empty maps stay maps (Arrow gives them as empty lists)."""
    from pyarrow import types as pa_types

    try:
        values = column.to_pylist()
    except UnicodeDecodeError:
        values = []
        for i in range(len(column)):
            try:
                values.append(column[i].as_py())
            except UnicodeDecodeError as exc:
                values.append(_Unreadable(f"text is not valid UTF-8 (byte {exc.start})"))
    if pa_types.is_map(column.type):
        values = [{} if v == [] else v for v in values]
    return values


def _preview(value: Any) -> Any:
    """A cell as the quarantine shows it when its row cannot be read."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, _Unreadable):
        return f"<{value.reason}>"
    if isinstance(value, bytes):
        value = value.decode("utf-8", "backslashreplace")
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= RAW_SHOWN else text[:RAW_SHOWN] + " ..."


def _parquet_raw(obj: dict[str, Any]) -> str:
    try:
        return json.dumps(obj, default=str, ensure_ascii=False)[:MAX_LINE_BYTES]
    except (ValueError, RecursionError):
        return repr(obj)[:RAW_SHOWN]


def _parquet_file(path: str | Path):
    """The file as a pyarrow ParquetFile; a ValueError naming the file when it is not one."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(f"{path}: not a readable Parquet file ({exc})") from None


def _read_parquet(path: str | Path, json_columns: frozenset[str]) -> Iterator[Record]:
    import pyarrow as pa

    parquet = _parquet_file(path)
    row_no = 0
    batches = parquet.iter_batches(batch_size=1024)
    while True:
        try:
            batch = next(batches, None)
        except (pa.ArrowException, OSError) as exc:
            raise ValueError(f"{path}: the Parquet file cannot be read after row {row_no} ({exc})") from None
        if batch is None:
            return
        names = batch.schema.names
        columns = [_column_values(c) for c in batch.columns]
        for values in zip(*columns):
            row_no += 1
            yield _parquet_record(row_no, names, values, json_columns)


def _parquet_record(row_no: int, names: list[str], values: tuple, json_columns: frozenset[str]) -> Record:
    obj: dict[str, Any] = {}
    size = _RowSize()
    for name, value in zip(names, values):
        try:
            v = _plain(value, size)
            if name in json_columns and isinstance(v, str):
                try:
                    v = _json_cell(v) if v != "" else None
                except ValueError as exc:
                    raise _CellProblem(f"cell is not valid JSON: {exc}") from None
        except _CellProblem as exc:
            shown = {k: _preview(v) for k, v in zip(names, values)}
            return Record(row_no, _parquet_raw(shown), error=str(exc), field=name)
        obj[name] = v
    return Record(row_no, _parquet_raw(obj), obj=obj)
