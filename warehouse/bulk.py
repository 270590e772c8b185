"""Bulk validation of native-response JSON Lines (issue #17, goal 3).

pydantic's rules stay the definition; this module only finds, in bulk, the lines that plainly
meet all of them. DuckDB parses and types a whole block of lines at once (``queries.sql``:
``bulk_native_responses``) and returns, as table rows, every line that is a well-formed, valid
native response with nothing unusual about it. Every other line of the block (rejected, invalid,
or merely unusual) goes through the per-line pydantic path, so its verdict and message are
exactly those of ``validate_file``. Both kinds of row are then written together, in line order,
so "the first of two equal keys is kept" holds across them.

The stored rows are the same either way, except the text of ``probabilities``: the bulk path
stores the object as DuckDB's JSON reader writes it back (minified; an integer stays ``1``), the
pydantic path as pydantic writes floats (``1.0``); they parse to the same values. A block's lines
go to DuckDB through a file in a private temporary folder, removed at once.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from qlb.records.readers import MAX_LINE_BYTES, LineBlock, Record
from qlb.records.schemas import PROBABILITY_TOLERANCE
from warehouse import queries

_EMPTY = pa.table({"line_no": pa.array([], type=pa.int64())})


def plain_native_responses(con: duckdb.DuckDBPyConnection, block: LineBlock, dataset_id: str,
                           forced_model: str | None, ingest_id: int) -> tuple[pa.Table, list[Record]]:
    """The rows of ``block``'s plainly valid native responses (in line order), and the Records of
    its other lines (in line order) for the pydantic path."""
    if not block.lines:
        return _EMPTY, list(block.others)
    with tempfile.TemporaryDirectory(prefix="qlb-bulk-") as tmp:
        path = Path(tmp) / "block.jsonl"
        path.write_text("\n".join(block.lines) + "\n", encoding="utf-8")
        _block = pa.table({"idx": pa.array(np.arange(1, len(block.lines) + 1)),  # noqa: F841 (replacement scan)
                           "line_no": pa.array(block.line_nos, type=pa.int64()),
                           "line": pa.array(block.lines, type=pa.string())})
        rows = con.sql(queries.sql("bulk_native_responses"),
                       params=[dataset_id, forced_model, ingest_id, PROBABILITY_TOLERANCE, str(path), MAX_LINE_BYTES + 1]).to_arrow_table()
    taken = rows.column("line_no").to_numpy()
    if len(taken) == len(block.lines):
        return rows, list(block.others)
    left = np.flatnonzero(~np.isin(block.line_nos, taken, assume_unique=True))
    others = [Record(int(block.line_nos[i]), block.lines[i], text=block.lines[i]) for i in left]
    return rows, sorted(others + block.others, key=lambda r: r.line_no) if block.others else others


def in_line_order(*tables: pa.Table | None) -> pa.Table | None:
    """The tables' rows together, sorted by line number; None when there are none."""
    kept = [t for t in tables if t is not None and t.num_rows]
    if not kept:
        return None
    both = pa.concat_tables(kept) if len(kept) > 1 else kept[0]
    return both.take(pc.sort_indices(both, [("line_no", "ascending")])) if len(kept) > 1 else both
