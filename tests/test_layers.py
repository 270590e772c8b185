"""The layering (README, Architecture): pages / cli -> dashboard / runs -> warehouse -> records and
the pure engine rooms. Read from the code's own imports (function-level ones included), so a
move that breaks a layer fails here, not in review."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# qlb's rooms below the run layer: no database, no Streamlit (collect talks to models over HTTP)
PURE_ROOMS = ("records", "tuple", "quasileak", "stats", "present", "simulate", "collect", "examples", "export")
NEVER_IN_PURE = ("duckdb", "warehouse", "streamlit", "dashboard", "pages", "qlb.runs", "qlb.cli", "qlb.demo")
# which other qlb rooms a pure room may use (lower or sideways only)
PURE_MAY_USE = {
    "records": set(),
    "stats": set(),
    "tuple": {"records", "stats"},
    "quasileak": {"records", "stats", "simulate", "collect"},   # the lexicon detector's cue list; the chat detector's URL redaction
    "simulate": {"records"},
    "present": {"records", "tuple", "quasileak", "stats"},
    "collect": {"records"},                      # talking to models: HTTP and Python targets, no database
    "examples": {"records", "simulate", "collect"},
    "export": set(),                             # the report's HTML to PDF through a local Chromium
}


def imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth of the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def hits(names: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(n == p or n.startswith(p + ".") for p in prefixes))


def files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("room", PURE_ROOMS)
def test_pure_rooms_import_no_database_no_streamlit_no_run_layer(room):
    found = {str(p.relative_to(ROOT)): hits(imports(p), NEVER_IN_PURE) for p in files(f"qlb/{room}")}
    assert files(f"qlb/{room}"), f"qlb/{room} is empty"
    assert {f: h for f, h in found.items() if h} == {}


@pytest.mark.parametrize("room", PURE_ROOMS)
def test_pure_rooms_use_only_lower_rooms(room):
    allowed = PURE_MAY_USE[room] | {room}
    bad = {}
    for p in files(f"qlb/{room}"):
        rooms = {n.split(".")[1] for n in imports(p) if n.startswith("qlb.") and n.count(".") >= 1}
        rooms = {r for r in rooms if (ROOT / "qlb" / r).is_dir()}
        if rooms - allowed:
            bad[str(p.relative_to(ROOT))] = sorted(rooms - allowed)
    assert bad == {}


def test_warehouse_reads_only_input_records():
    """warehouse/ speaks SQL and validates input; it uses qlb's records room (and the version
    string), never the engine, the run layer or the app."""
    bad = {}
    for p in files("warehouse"):
        qlb_mods = {n for n in imports(p) if n == "qlb" or n.startswith("qlb.")}
        wrong = {n for n in qlb_mods if not (n.startswith("qlb.records") or n in ("qlb", "qlb.__version__"))}
        wrong |= set(hits(imports(p), ("streamlit", "dashboard", "pages")))
        if wrong:
            bad[str(p.relative_to(ROOT))] = sorted(wrong)
    assert bad == {}


def test_run_layer_and_dashboard_stay_below_pages_and_cli():
    bad = {}
    for folder, banned in (("qlb/runs", ("streamlit", "dashboard", "pages", "qlb.cli", "qlb.demo")),
                           ("dashboard", ("pages", "qlb.cli"))):
        for p in files(folder):
            h = hits(imports(p), banned)
            if h:
                bad[str(p.relative_to(ROOT))] = h
    assert bad == {}


def test_only_the_run_layer_opens_duckdb_in_the_engine():
    """Inside qlb/, only qlb/runs/ (and the top-level cli and demo, which hand connections to
    it) imports duckdb or the warehouse."""
    bad = [str(p.relative_to(ROOT)) for p in files("qlb")
           if hits(imports(p), ("duckdb", "warehouse"))
           and not (p.parent.name == "runs" or p.name in ("cli.py", "demo.py"))]
    assert bad == []


def test_the_checker_sees_a_planted_violation(tmp_path):
    """The import reader finds imports inside functions too (a lazy import is still a layer)."""
    f = tmp_path / "x.py"
    f.write_text("def f():\n    import duckdb\n    from warehouse.db import writer\n")
    assert hits(imports(f), NEVER_IN_PURE) == ["duckdb", "warehouse.db", "warehouse.db.writer"]
