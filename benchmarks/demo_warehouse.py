"""The warehouse a benchmark runs on: ``--warehouse PATH`` from the command line (e.g. the one
`qlb demo` built, with every audit), or a fresh demo without the decoding audit."""
from __future__ import annotations

import argparse
from pathlib import Path

from qlb.demo import build_demo


def warehouse_or_demo(description: str, tmp: str) -> Path:
    """Parse ``--warehouse``; without it build the demo (no decoding audit) in ``tmp``."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--warehouse", type=Path, help="an existing demo warehouse (default: build one)")
    wh = ap.parse_args().warehouse
    if wh is None:
        wh = Path(tmp) / "qlb.duckdb"
        build_demo(wh, decode=False)
    return wh
