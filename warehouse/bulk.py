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
pydantic path as pydantic writes floats (``1.0``); they parse to the same values.

No Python object is made per line for the lines DuckDB takes: a block's bytes go to DuckDB's JSON
reader as one file (in a private temporary folder, removed at once) and, for the checks on each
line's text, as an Arrow string column whose buffers are the block's own bytes.
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
    if not len(block):
        return _EMPTY, list(block.others)
    with tempfile.TemporaryDirectory(prefix="qlb-bulk-") as tmp:
        path = Path(tmp) / "block.jsonl"
        path.write_bytes(block.data)
        _block = _lines_table(block)  # noqa: F841 (replacement scan)
        rows = con.sql(queries.sql("bulk_native_responses"),
                       params=[dataset_id, forced_model, ingest_id, PROBABILITY_TOLERANCE, str(path), MAX_LINE_BYTES + 1,
                               block.first - 1]).to_arrow_table()
    left = np.ones(len(block), dtype=bool)
    left[rows.column("line_no").to_numpy() - block.first] = False
    left[block.aside] = False
    others = block.records_at(np.flatnonzero(left))
    return rows, sorted(others + block.others, key=lambda r: r.line_no) if block.others else others


def _lines_table(block: LineBlock) -> pa.Table:
    """The block's lines as (idx from 1, line with its ending): the Arrow column shares the block's
    bytes (a line is valid UTF-8 or set aside as ASCII, see LineBlock), nothing is copied."""
    offsets = np.concatenate((np.zeros(1, dtype=np.int64), block.ends)).astype(np.int32)
    lines = pa.StringArray.from_buffers(len(block), pa.py_buffer(offsets), pa.py_buffer(block.data))
    return pa.table({"idx": pa.array(np.arange(1, len(block) + 1, dtype=np.int64)), "line": lines})


def in_line_order(*tables: pa.Table | None) -> pa.Table | None:
    """The tables' rows together, sorted by line number; None when there are none."""
    kept = [t for t in tables if t is not None and t.num_rows]
    if not kept:
        return None
    both = pa.concat_tables(kept) if len(kept) > 1 else kept[0]
    return both.take(pc.sort_indices(both, [("line_no", "ascending")])) if len(kept) > 1 else both
