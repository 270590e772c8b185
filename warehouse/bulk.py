"""Bulk validation of native-response JSON Lines (issue #17, goal 3).

pydantic's rules stay the definition; this module only finds, in bulk, the lines that plainly
meet all of them. Every other line of a block (rejected, invalid, or merely unusual) goes through
the per-line pydantic path, so its verdict and message are exactly those of ``validate_file``.
Both kinds of row are then written together, in line order, so "the first of two equal keys is
kept" holds across them.

A line is plain after three vectorised steps over a whole block, none of which makes a Python
object per line:

* its text matches ``PLAIN_LINE`` (Arrow's RE2, on the block's lines as an Arrow string column
  whose buffers are the block's own bytes): a JSON object whose members are only
  NativeResponse's six fields, each a string with no escape, control character, colon or comma
  in it, a JSON number, null, or (probabilities) a flat object of such strings and numbers. On
  such a line DuckDB's JSON parser and pydantic's read the same values, save a repeated key
  (DuckDB keeps the first, pydantic the last); the line's colons, one per member and per
  probability label, are counted too, to rule those out;
* DuckDB parses the shaped lines with its JSON parser (``from_json``, straight from the Arrow
  column: no file is written; ``queries.sql``: ``bulk_native_responses``) and Arrow compute
  applies the rules each field has on its own (``_field_rules``);
* numpy applies the rules that need the world or the probabilities (``_world_rules``): the
  choice and the labels are the world's candidates, no label repeats, the probabilities are
  non-negative and sum to 1 with room to spare; it also derives ``choice_not_argmax``.

The stored rows are the same either way, except the text of ``probabilities``: the bulk path
stores the object as DuckDB's JSON parser writes it back (minified; an integer stays ``1``), the
pydantic path as pydantic writes floats (``1.0``); they parse to the same values.
"""
from __future__ import annotations

import functools
from typing import Mapping

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from qlb.records.readers import LineBlock, Record
from qlb.records.schemas import MAX_ID_LENGTH, PROBABILITY_TOLERANCE
from warehouse import queries

_WS = r"[ \t\r]*"                                   # JSON's whitespace (a line holds no newline)
_STRING = r'"[^"\\\x00-\x1f:,]*"'
_NUMBER = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?"
_LABEL = f"{_STRING}{_WS}:{_WS}{_NUMBER}"
_MEMBER = (f'(?:"(?:model|world_id|status|choice)"{_WS}:{_WS}(?:{_STRING}|null)'
           f'|"probabilities"{_WS}:{_WS}(?:null|\\{{{_WS}(?:{_LABEL}(?:{_WS},{_WS}{_LABEL})*)?{_WS}\\}})'
           f'|"confidence"{_WS}:{_WS}(?:null|{_NUMBER}))')
PLAIN_LINE = f"^\\{{{_WS}{_MEMBER}(?:{_WS},{_WS}{_MEMBER})*{_WS}\\}}{_WS}\\n?$"

_NULLABLE = ("model", "choice", "probabilities", "confidence")
_EMPTY = pa.table({"line_no": pa.array([], type=pa.int64())})


class Candidates:
    """A dataset's worlds (world_id: its candidate classes, as the per-line path reads them), for
    ``_world_rules``: each world's candidate set, and in it each label's place (1 to the set's
    size, a bit of a 64-bit mask; 0 for a label that is not a candidate). A set that holds a
    field's name takes no label, so that the colon count never mistakes a label for a field: its
    lines go through pydantic (as would a set too large for the mask; an ontology has at most 8)."""

    def __init__(self, worlds: Mapping[str, frozenset[str]]):
        sets = {s: i for i, s in enumerate(dict.fromkeys(worlds.values()))}
        labels = sorted(set().union(*sets))
        code = {label: i for i, label in enumerate(labels)}
        self.none = len(sets)                          # the row of ``place`` for a world not known
        self.world_ids = pa.array(list(worlds), type=pa.string())
        self.world_set = np.array([sets[s] for s in worlds.values()] + [self.none], dtype=np.int64)
        self.labels = pa.array(labels, type=pa.string())
        self.quoted = pa.array([f'"{label}"' for label in labels], type=pa.string())   # as in JSON text
        self.place = np.zeros((len(sets) + 1, len(labels) + 1), dtype=np.int64)   # last column: no label
        for s, i in sets.items():
            if not s & set(_NULLABLE) and len(s) < 63:
                self.place[i, [code[label] for label in s]] = np.arange(1, len(s) + 1)


def plain_native_responses(con: duckdb.DuckDBPyConnection, block: LineBlock, candidates: Candidates,
                           dataset_id: str, forced_model: str | None, ingest_id: int) -> tuple[pa.Table, list[Record]]:
    """The rows of ``block``'s plainly valid native responses, and the Records of its other lines
    for the pydantic path, both in line order."""
    if not len(block):
        return _EMPTY, list(block.others)
    _block = _lines_table(block)
    read = _field_rules(con.sql(queries.sql("bulk_native_responses")).to_arrow_table(), _block.column("line"),
                        block.first, dataset_id, forced_model, ingest_id)
    plain, not_argmax = _world_rules(read, candidates)
    rows = read.filter(plain).drop_columns(["n_labels"]).append_column("choice_not_argmax", pa.array(not_argmax[plain]))
    rows = _in_line_order(rows)
    left = np.ones(len(block), dtype=bool)
    left[rows.column("line_no").to_numpy() - block.first] = False
    left[block.aside] = False
    others = block.records_at(np.flatnonzero(left))
    return rows, sorted(others + block.others, key=lambda r: r.line_no) if block.others else others


def _lines_table(block: LineBlock) -> pa.Table:
    """The block's lines in order: line_no, line (with its ending), shaped (it matches
    ``PLAIN_LINE``) and colons. The line column shares the block's bytes (a line is valid UTF-8
    or set aside as ASCII, see LineBlock), nothing is copied."""
    ends = block.ends
    lines = pa.StringArray.from_buffers(len(block), pa.py_buffer(np.concatenate(([0], ends)).astype(np.int32)),
                                        pa.py_buffer(block.data))
    colons = np.flatnonzero(np.frombuffer(block.data, dtype=np.uint8) == ord(":"))
    return pa.table({"line_no": np.arange(block.first, block.first + len(block), dtype=np.int64), "line": lines,
                     "shaped": pc.match_substring_regex(lines, PLAIN_LINE),
                     "colons": np.diff(np.searchsorted(colons, ends), prepend=0)})


def _field_rules(parsed: pa.Table, lines: pa.ChunkedArray, first: int, dataset_id: str, forced_model: str | None,
                 ingest_id: int) -> pa.Table:
    """The rows of ``parsed`` (``bulk_native_responses`` of a block whose ``lines`` start at line
    ``first``) that meet the rules each field has on its own, as rows of ``responses`` with
    n_labels (no choice_not_argmax yet): status ok or
    unavailable; a model that is not empty, no longer than ``MAX_ID_LENGTH`` and the forced one
    when ``--model`` is given (or none, which takes the forced one); a world_id no longer than
    ``MAX_ID_LENGTH``; a confidence, if any, in [0, 1]. Anything else is pydantic's to judge.

    n_labels is the line's colons left for the probabilities' labels: one each for world_id and
    status (they are read), one for another field read, or when null one if its key with a colon
    is in the line (no plain string holds a colon, and a label named like a field is never plain,
    see ``Candidates``). A repeated key leaves a count that is not the labels' number."""
    model = parsed.column("model")
    if forced_model is None:
        model_ok = pc.and_kleene(pc.not_equal(model, ""), pc.less_equal(pc.utf8_length(model), MAX_ID_LENGTH))
    else:
        model_ok = pc.or_kleene(pc.is_null(model), pc.equal(model, forced_model))
        model_ok = pc.and_kleene(model_ok, pc.or_kleene(pc.is_null(model),
                                                        pc.less_equal(pc.utf8_length(model), MAX_ID_LENGTH)))
    confidence = parsed.column("confidence")
    keep = functools.reduce(pc.and_kleene, [
        pc.is_in(parsed.column("status"), pa.array(["ok", "unavailable"])),
        model_ok,
        pc.less_equal(pc.utf8_length(parsed.column("world_id")), MAX_ID_LENGTH),
        pc.or_kleene(pc.is_null(confidence),
                     pc.and_kleene(pc.greater_equal(confidence, 0.0), pc.less_equal(confidence, 1.0)))])
    line_no = parsed.column("line_no").to_numpy()
    n_labels = parsed.column("colons").to_numpy() - 2
    for field in ("model", "choice", "probabilities", "confidence"):
        missing = parsed.column(field).is_null().to_numpy(zero_copy_only=False)
        n_labels -= ~missing
        if missing.any():
            at = np.flatnonzero(missing)
            n_labels[at] -= pc.match_substring(lines.take(line_no[at] - first),
                                               f'"{field}":').to_numpy(zero_copy_only=False)
    keep = keep.fill_null(False).to_numpy(zero_copy_only=False)
    rows = parsed.filter(keep)
    n_labels = n_labels[keep]
    if forced_model is not None:
        model = pc.coalesce(rows.column("model"), pa.scalar(forced_model))
    else:
        model = rows.column("model")
    size = rows.num_rows
    return pa.table({"dataset_id": pa.repeat(pa.scalar(dataset_id, pa.string()), size), "model": model,
                     "world_id": rows.column("world_id"), "status": rows.column("status"),
                     "choice": rows.column("choice"), "probabilities": rows.column("probabilities"),
                     "confidence": rows.column("confidence"), "valid": pa.array(np.ones(size, dtype=bool)),
                     "invalid_reason": pa.nulls(size, type=pa.string()),
                     "ingest_id": pa.array(np.full(size, ingest_id, dtype=np.int32)),
                     "line_no": rows.column("line_no"), "n_labels": n_labels})


def _in_line_order(rows: pa.Table) -> pa.Table:
    """The rows sorted by line number (DuckDB gives them in no particular order)."""
    if (np.diff(rows.column("line_no").to_numpy()) > 0).all():
        return rows
    return rows.take(pc.sort_indices(rows, [("line_no", "ascending")]))


def _items(objects: pa.StringArray) -> tuple[pa.Array, pa.Array, np.ndarray]:
    """The labels (quoted, as in the text), the values (as text) and each object's number of
    members of JSON objects as DuckDB writes them back: minified, '{"label":value,...}', never
    '{}', no label holding ':' or ','. The texts between an object's outer braces, colons and commas
    are label, value, label, ...: they are cut out of the objects' bytes at once (numpy), and the
    labels and values are Arrow strings over the bytes left when the cuts are dropped."""
    if objects.type != pa.string():         # the offsets are read as int32 below
        objects = objects.cast(pa.string())
    first, n = objects.offset, len(objects)
    ends = np.frombuffer(objects.buffers()[1], dtype=np.int32)[first:first + n + 1]
    body = np.frombuffer(objects.buffers()[2], dtype=np.uint8)[ends[0]:ends[-1]]
    opening, closing = ends[:-1] - ends[0], ends[1:] - ends[0] - 1      # each object's braces (a label may hold one)
    cut_at = (body == ord(":")) | (body == ord(","))
    cut_at[opening] = cut_at[closing] = True
    cut = np.flatnonzero(cut_at)
    closes = np.zeros(len(body), dtype=bool)
    closes[closing] = True
    item = ~closes[cut[:-1]]                           # a cut other than a closing brace opens an item
    start, stop = cut[:-1][item] + 1, cut[1:][item]
    offsets = np.concatenate(([0], np.cumsum(stop - start))).astype(np.int32)
    texts = pa.StringArray.from_buffers(len(start), pa.py_buffer(offsets), pa.py_buffer(body[~cut_at]))
    size = np.diff(np.searchsorted(start, ends - ends[0])) // 2
    return texts.take(np.arange(0, len(texts), 2)), texts.take(np.arange(1, len(texts), 2)), size


def _world_rules(read: pa.Table, candidates: Candidates) -> tuple[np.ndarray, np.ndarray]:
    """Which rows of ``bulk_native_responses`` meet native_invalid_reason's rules (with room to
    spare) and are about a known world, and each row's choice_not_argmax (choice_not_argmax's rule).
    Codes for labels: their index in ``candidates.labels``; the last column of ``place`` (0) for
    a label that is none of them, -1 for a choice that is none (so that it matches no label)."""
    world = pc.index_in(read.column("world_id"), value_set=candidates.world_ids)
    sets = candidates.world_set[world.fill_null(len(candidates.world_set) - 1).to_numpy()]
    choice = pc.index_in(read.column("choice"), value_set=candidates.labels).fill_null(-1).to_numpy()
    probabilities = read.column("probabilities").combine_chunks()
    has = probabilities.is_valid().to_numpy(zero_copy_only=False)
    n_labels = read.column("n_labels").to_numpy()
    # '{}' holds no label; n_labels > 0 with it only by a repeated key
    empty = pc.equal(probabilities, "{}").fill_null(False).to_numpy(zero_copy_only=False)
    plain = (sets != candidates.none) & np.where(has, (n_labels > 0) & ~empty, n_labels == 0)
    plain &= (pc.not_equal(read.column("status"), "ok").to_numpy(zero_copy_only=False)
              | (candidates.place[sets, choice] > 0))
    not_argmax = np.zeros(read.num_rows, dtype=bool)
    rows = np.flatnonzero(plain & has)
    if not len(rows):
        return plain, not_argmax
    labels, values, size = _items(probabilities.take(rows))
    label = pc.index_in(labels, value_set=candidates.quoted).fill_null(len(candidates.labels)).to_numpy()
    value = pc.cast(values, pa.float64()).to_numpy()
    starts = np.cumsum(size) - size
    place = candidates.place[np.repeat(sets[rows], size), label]
    bit = np.left_shift(1, np.maximum(place - 1, 0))
    top = np.maximum.reduceat(value, starts)
    with np.errstate(invalid="ignore"):                # inf - inf: nan, which fails the sum's check
        total = np.add.reduceat(value, starts)
    plain[rows] = ((size == n_labels[rows]) & (np.minimum.reduceat(place, starts) > 0)
                   & (np.bitwise_or.reduceat(bit, starts) == np.add.reduceat(bit, starts))      # none repeated
                   & (np.minimum.reduceat(value, starts) >= 0)
                   & (np.abs(total - 1) <= PROBABILITY_TOLERANCE - 1e-9))
    at_choice = np.fmax.reduceat(np.where(label == np.repeat(choice[rows], size), value, np.nan), starts)
    not_argmax[rows] = (at_choice != top) | (np.add.reduceat(value == np.repeat(top, size), starts) > 1)
    return plain, not_argmax & read.column("choice").is_valid().to_numpy(zero_copy_only=False)


class KeyLedger:
    """The (model, world) keys of one dataset's stored native responses, as one flag per model and
    world, so that the bulk path finds a block's repeated keys with numpy instead of an anti-join
    with every row stored so far (whose cost grew with the file). Filled from the warehouse once
    (``mark``, a batch of the dataset's stored keys at a time), then by ``claim``. A world is one
    of ``world_ids`` (every accepted response's world is); memory: a byte per model and world.

    A flag tells apart the keys stored before this ingest (``STORED``: a line restating one is
    compared with the stored row) from the keys this ingest claimed (``CLAIMED``: a repeat within
    the file, the first is kept), see ``stored_before``."""

    CLAIMED, STORED = 1, 2

    def __init__(self, world_ids: pa.Array):
        self.world_ids = world_ids
        self.slots: dict[str, int] = {}
        self.seen = np.zeros((0, len(world_ids)), dtype=np.uint8)

    def mark(self, models: pa.Array | pa.ChunkedArray, worlds: pa.Array | pa.ChunkedArray) -> None:
        """Flag these stored keys (a world not among ``world_ids`` is skipped: no new response can
        be about it)."""
        code = self._codes(models, worlds, strict=False)
        self.seen.reshape(-1)[code[code >= 0]] = self.STORED

    def stored_before(self, table: pa.Table) -> np.ndarray:
        """Which rows of ``table`` (model, world_id) have a key stored before this ingest (``mark``)."""
        code = self._codes(table.column("model"), table.column("world_id"))
        return self.seen.reshape(-1)[code] == self.STORED

    def _codes(self, models, worlds, strict: bool = True) -> np.ndarray:
        """Each key's flag index (model slot x worlds + world index; -1: a world not known)."""
        world = pc.index_in(worlds, value_set=self.world_ids)
        if strict and world.null_count:
            raise ValueError("a response's world is not among the dataset's worlds")
        encoded = pc.dictionary_encode(models.combine_chunks() if isinstance(models, pa.ChunkedArray) else models)
        slot = np.array([self._slot(m) for m in encoded.dictionary.to_pylist()], dtype=np.int64)
        known = world.fill_null(-1).to_numpy()
        return np.where(known >= 0, slot[encoded.indices.to_numpy()] * len(self.world_ids) + known, -1)

    def claim(self, *tables: pa.Table) -> list[np.ndarray]:
        """Which rows of each table (model, world_id, line_no) are new: the first row of its key
        in line order across the tables, and a key not claimed before. Their keys are claimed (the
        caller stores those rows)."""
        keys = pa.concat_tables([t.select(["model", "world_id", "line_no"]) for t in tables])
        code = self._codes(keys.column("model"), keys.column("world_id"))
        line = keys.column("line_no").to_numpy()
        order = np.argsort(line, kind="stable") if len(tables) > 1 or (np.diff(line) < 0).any() else slice(None)
        first = np.zeros(len(code), dtype=bool)
        first[np.arange(len(code))[order][np.unique(code[order], return_index=True)[1]]] = True
        seen = self.seen.reshape(-1)
        new = first & (seen[code] == 0)
        seen[code[new]] = self.CLAIMED
        return np.split(new, np.cumsum([t.num_rows for t in tables])[:-1])

    def _slot(self, model: str) -> int:
        if model not in self.slots:
            self.slots[model] = len(self.slots)
            if len(self.slots) > len(self.seen):         # room for twice as many models
                grown = np.zeros((2 * len(self.slots), len(self.world_ids)), dtype=np.uint8)
                grown[:len(self.seen)] = self.seen
                self.seen = grown
        return self.slots[model]
