"""Markdown and CSV injection (issue #20, items 2 and 3): every page, run under AppTest on a
warehouse whose dataset, models, world_ids, doc_ids, detectors, ingest file names and a collected
model carry hostile names, shows them as text. No element Streamlit renders as Markdown holds an
image, a link or an HTML tag made of them; charts show them as text; every CSV download keeps a
formula as text (a leading ') and numbers as numbers."""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dashboard.widgets import csv_bytes, md_text, reads_as_markup
from qlb.present.figures import plot_text
from tests.app.test_pages import APP, frames, plotly_traces
from tests.conftest import ROOT

IMAGE = "![x](http://evil.example/y)"
FORMULA = '=HYPERLINK("http://evil.example","c")'
TAG = "<img src=http://evil.example/z>"
PAYLOADS = (FORMULA, IMAGE, TAG)
DATASET = IMAGE
MODELS = PAYLOADS                                   # the three simulated models, renamed
COLLECTED = f"{TAG} collected"                      # a model whose answers come from `qlb collect`
UPLOAD_NAME = f"{IMAGE}{TAG}.jsonl"                 # the name every file is ingested under
# what a viewer's browser would fetch or follow if Markdown or HTML read the text
UNESCAPED = re.compile(r"!\[|\]\(http|<img", re.IGNORECASE)
LIVE_TAG = re.compile(r"<(img|a)[\s>/]", re.IGNORECASE)


def write_hostile_exports(folder: Path) -> dict[str, Path]:
    """The simulated TUPLE worlds of one domain (every fourth pair), the native and refusal answers
    of three simulated models and 150 QuasiLeak test documents, with every model name, world_id
    and doc_id carrying a payload; one native line is rejected (its model and world_id hostile)."""
    from qlb.simulate import DEFAULT_SEED, quasileak_sim, tuple_sim
    worlds = tuple_sim.simulate_worlds(DEFAULT_SEED)
    worlds = [w for w in worlds if w["domain"] == worlds[0]["domain"]]
    pairs = set(sorted({w["pair_id"] for w in worlds})[::4])
    worlds = [w for w in worlds if w["pair_id"] in pairs]
    for i, w in enumerate(worlds):
        w["world_id"] = f"{PAYLOADS[i % 3]} {w['world_id']}"
    native, refusal = [], []
    for model, name in zip(tuple_sim.SIM_MODELS[:3], MODELS):
        native += [r | {"model": name} for r in tuple_sim.simulate_native(worlds, model, DEFAULT_SEED)]
        refusal += [r | {"model": name} for r in tuple_sim.simulate_refusal(worlds, model, DEFAULT_SEED)]
    docs = [d for d in quasileak_sim.simulate_corpus(DEFAULT_SEED) if d["split"] == "test"][:150]
    for i, d in enumerate(docs):
        d["doc_id"] = f"{PAYLOADS[i % 3]} {d['doc_id']}"
    folder.mkdir(parents=True, exist_ok=True)
    paths = {k: folder / f"{k}.jsonl" for k in ("worlds", "responses", "refusal", "corpus")}
    tuple_sim.write_jsonl(paths["worlds"], worlds)
    tuple_sim.write_jsonl(paths["responses"], native,
                          [json.dumps({"model": IMAGE, "world_id": TAG, "status": "ok"}).encode()])
    tuple_sim.write_jsonl(paths["refusal"], refusal)
    tuple_sim.write_jsonl(paths["corpus"], docs)
    return paths


def ingest_hostile(con, folder: Path) -> None:
    """Ingest the hostile exports into the dataset ``DATASET`` (SIMULATED, a hostile description,
    every file under ``UPLOAD_NAME``) and run three simulated detectors renamed to the payloads."""
    from qlb.quasileak.detectors import SIMULATED_DETECTORS
    from qlb.runs.quasileak import run_detector
    from warehouse.ingest import DatasetInfo, IngestRequest, ingest_file
    info = DatasetInfo(simulated=True, description=" ".join(PAYLOADS))
    for kind, path in write_hostile_exports(folder).items():
        ingest_file(con, IngestRequest(kind, path, DATASET, display_name=UPLOAD_NAME, dataset=info))
    for detector, name in zip(SIMULATED_DETECTORS, PAYLOADS):
        run_detector(con, DATASET, dataclasses.replace(detector, name=name), split="test")


@pytest.fixture(scope="module")
def hostile_warehouse(tmp_path_factory) -> Path:
    """The hostile dataset with two audit runs (refusal and QuasiLeak; then the decoding, utility
    and defense audits of two models with the prior decoder only, for speed) and one `qlb collect`
    run of ``COLLECTED`` over three worlds (python transport)."""
    from qlb.runs.audit import run_audits
    from qlb.runs.collect import CollectOptions, collect
    from warehouse.db import writer
    folder = tmp_path_factory.mktemp("hostile")
    path = folder / "qlb.duckdb"
    with writer(path) as con:
        ingest_hostile(con, folder / "exports")
        run_audits(con, DATASET, decode=False, utility=False, n_boot=100)
        run_audits(con, DATASET, models=[FORMULA, IMAGE], force=True, families={"prior"}, defense_families={"prior"},
                   views=("choice", "full_native"), n_boot=100, jobs=2, defense_models=[IMAGE],
                   learned_wcpq=["wcpq learned 0 no pair"])
        collect(con, CollectOptions(probe="native", dataset_id=DATASET, model=COLLECTED, transport="python",
                                    target="tests.app.collect_target:answer", limit=3))
    return path


@pytest.fixture
def downloads(monkeypatch) -> dict[str, bytes]:
    """Every CSV handed to a download button during the test (file name -> bytes), as the media
    file manager receives it."""
    from streamlit.runtime.media_file_manager import MediaFileManager
    seen: dict[str, bytes] = {}
    add = MediaFileManager.add

    def recording_add(self, data, mimetype, coordinates, file_name=None, is_for_static_download=False):
        if file_name and file_name.endswith(".csv"):
            seen[file_name] = data
        return add(self, data, mimetype, coordinates, file_name=file_name,
                   is_for_static_download=is_for_static_download)

    monkeypatch.setattr(MediaFileManager, "add", recording_add)
    return seen


def open_app(path: Path, monkeypatch) -> AppTest:
    monkeypatch.setenv("QLB_WAREHOUSE", str(path))
    monkeypatch.chdir(ROOT)
    return AppTest.from_file(APP, default_timeout=120)


@pytest.fixture
def hostile_app(hostile_warehouse, monkeypatch):
    yield open_app(hostile_warehouse, monkeypatch)
    from dashboard.data_access import release_readers
    release_readers()   # AppTest shares this process: close the cached read-only handle


def markdown_values(at: AppTest) -> list[str]:
    """Every text on the page (sidebar included) that Streamlit renders as Markdown: markdown,
    captions, titles, headers, alerts, toasts, expander, button and metric labels, and the cells
    and headers of static tables."""
    values = [e.value for kind in ("markdown", "caption", "title", "header", "subheader", "info", "warning",
                                   "error", "success", "toast") for e in getattr(at, kind)]
    values += [e.label for e in at.expander] + [b.label for b in at.button] + [m.label for m in at.metric]
    for t in at.table:
        values += [str(c) for c in t.value.columns] + [str(v) for v in t.value.to_numpy().ravel()]
    return values


def strings_in(value) -> list[str]:
    """Every string inside nested dicts, lists and arrays."""
    out: list[str] = []

    def walk(v) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, (list, tuple)) or hasattr(v, "tolist"):
            for x in (v.tolist() if hasattr(v, "tolist") else v):
                walk(x)

    walk(value)
    return out


def plot_strings(at: AppTest) -> list[str]:
    """Every string in the traces and layout of every chart on the page."""
    return [s for chart in at.get("plotly_chart")
            for s in strings_in([plotly_traces(chart), json.loads(chart.proto.spec).get("layout", {})])]


def csv_cells(data: bytes) -> list[str]:
    """Every cell of a CSV download, header included."""
    return [cell for row in csv.reader(io.StringIO(data.decode("utf-8"), newline="")) for cell in row]


def formula_cells(data: bytes) -> list[str]:
    """The cells of a CSV that a spreadsheet would run as a formula: starting with = + - @, a tab
    or a carriage return, and not a number."""
    bad = []
    for cell in csv_cells(data):
        if cell[:1] in ("=", "+", "-", "@", "\t", "\r"):
            try:
                float(cell.rstrip("%").replace(",", ""))
            except ValueError:
                bad.append(cell)
    return bad


def check_page(at: AppTest, downloads: dict[str, bytes]) -> str:
    """The page ran, none of its Markdown, static tables or charts can fetch or link anything, and
    none of its CSV downloads holds a live formula. Returns the page's Markdown text (joined)."""
    assert not at.exception, [e.value for e in at.exception]
    shown = markdown_values(at)
    assert [v for v in shown if UNESCAPED.search(v)] == []
    assert [s for s in plot_strings(at) if LIVE_TAG.search(s)] == []
    assert {name: formula_cells(data) for name, data in downloads.items() if formula_cells(data)} == {}
    return "\n".join(shown)


def grid_text(at: AppTest) -> str:
    """Every cell and header of the interactive grids (st.dataframe), where text is never Markdown."""
    return "\n".join(str(v) for df in (d.value for d in at.dataframe)
                     for v in [*df.columns, *df.to_numpy().ravel()])


# (page, the Markdown element that must show a hostile name (escaped), whether a CSV of the page
# holds the formula model): proof the hostile text reaches the page, so the checks can fail
PAGES = [
    ("pages/overview.py", "Dataset: ", True),
    ("pages/data.py", "uses the default **TUPLE** ontology", True),
    ("pages/refusal.py", "The 17 scores of ", True),
    ("pages/recovery.py", "probability of the second hypothesis per test world for ", True),
    ("pages/fronts.py", "**On the front:** ", True),
    ("pages/sensitivity.py", "What the frozen selective routing policy did on each test world", True),
    ("pages/defenses.py", " · status ", False),
    ("pages/quasileak.py", "**Targets under ", True),
    ("pages/compare.py", None, True),
]


@pytest.mark.parametrize("page, anchor, formula_in_csv", PAGES, ids=[p.split("/")[1][:-3] for p, *_ in PAGES])
def test_hostile_names_are_text_on_every_page(hostile_app, downloads, page, anchor, formula_in_csv):
    at = hostile_app.run()
    downloads.clear()                                         # only the page's own downloads
    at.switch_page(page).run()
    check_page(at, downloads)
    if anchor is not None:
        element = next(v for v in markdown_values(at) if anchor in v)
        assert any(md_text(p) in element for p in PAYLOADS), element
    assert any(p in grid_text(at) for p in PAYLOADS)          # shown unchanged where text is data
    assert downloads
    if formula_in_csv:                                        # the formula reached a CSV, as text
        assert any("'" + FORMULA in csv_cells(data) for data in downloads.values())


def test_overview_sections_and_chart_keep_names_as_text(hostile_app, downloads):
    at = hostile_app.run()
    check_page(at, downloads)
    assert md_text(TAG) in "\n".join(markdown_values(at))               # the description, a caption
    at.toggle(key="overview_chart").set_value(True).run()
    check_page(at, downloads)
    assert plot_text(TAG) in plot_strings(at)                           # a model on the chart's axis, shown as text
    at.segmented_control(key="overview_section").set_value("Ingests and quarantine").run()
    check_page(at, downloads)
    assert UPLOAD_NAME in grid_text(at)                                 # the file name, in a grid
    assert UPLOAD_NAME in csv_cells(downloads["recent_ingests.csv"])


def test_collection_page_keeps_collected_model_as_text(hostile_app, downloads):
    at = hostile_app.run()
    at.switch_page("pages/collection.py").run()
    shown = check_page(at, downloads)
    # the finding sentence and the SIMULATED banner are HTML blocks: the name is HTML-escaped there
    assert "&lt;img src=http://evil.example/z&gt; collected" in shown
    assert COLLECTED in grid_text(at) or COLLECTED in "\n".join(at.selectbox(key="collection").options)


def test_quasileak_document_viewer_under_each_hostile_detector(hostile_app, downloads):
    at = hostile_app.run()
    at.switch_page("pages/quasileak.py").run()
    check_page(at, downloads)
    assert plot_text(TAG) in plot_strings(at)                           # a detector on the F1 chart
    for detector in PAYLOADS:
        at.selectbox(key="ql_view_detector").select(detector).run()
        shown = check_page(at, downloads)
        assert md_text(detector) in shown


def test_data_page_upload_with_a_hostile_file_name(hostile_warehouse, tmp_path, monkeypatch, downloads):
    """Validating and ingesting a file named with the payloads into a dataset named with them: the
    names show as text in the validation report, the button label, the success message and the
    pages of the new dataset the sidebar switches to."""
    path = tmp_path / "qlb.duckdb"
    shutil.copy(hostile_warehouse, path)           # this test writes: keep the shared one as it is
    from tests.conftest import two_pairs, write_lines
    rows = two_pairs()
    for r in rows:
        r["world_id"] = f"{TAG}{r['world_id']}"
    data = write_lines(tmp_path / "w.jsonl", rows).read_bytes()
    at = open_app(path, monkeypatch)
    try:
        at.run()
        at.switch_page("pages/data.py").run()
        at.text_input[0].set_value(TAG).run()                              # "Into dataset"
        at.file_uploader(key="upload").set_value((UPLOAD_NAME, data, "application/json"))
        at.run()
        shown = check_page(at, downloads)
        assert f"into '{md_text(TAG)}'" in shown                        # the ingest button's label
        assert any(TAG in str(v) for df in frames(at) for v in df.to_numpy().ravel())
        at.button(key="ingest_button").click().run()
        shown = check_page(at, downloads)
        assert f"Stored 4 lines from {md_text(UPLOAD_NAME)} into '{md_text(TAG)}'" in shown
        at.switch_page("pages/overview.py").run()
        assert f"Dataset: {md_text(TAG)}" in check_page(at, downloads)
        at.switch_page("pages/data.py").run()
        check_page(at, downloads)
    finally:
        from dashboard.data_access import release_readers
        release_readers()


def test_csv_download_prefixes_formula_cells_and_keeps_numbers():
    df = pd.DataFrame({FORMULA: [FORMULA, "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\tx", "\rx", "-0.25", "ok"],
                       "value": [-1.5, 2.0, -3.0, 0.0, 1.0, -2.5, 0.5, -0.0001],
                       "count": [-1, 2, 3, 4, 5, 6, 7, 8]})
    rows = list(csv.reader(io.StringIO(csv_bytes(df).decode("utf-8"), newline="")))
    assert rows[0] == ["'" + FORMULA, "value", "count"]
    assert [r[0] for r in rows[1:]] == ["'" + FORMULA, "'+1+cmd|' /C calc'!A0", "'-2+3", "'@SUM(A1)", "'\tx",
                                        "'\rx", "-0.25", "ok"]
    assert [float(r[1]) for r in rows[1:]] == df["value"].tolist()      # negative numbers stay numbers
    assert [int(r[2]) for r in rows[1:]] == df["count"].tolist()
    assert formula_cells(csv_bytes(df)) == []


def test_md_text_leaves_nothing_for_markdown_to_read():
    for payload in (*PAYLOADS, "<http://evil.example/a>", "[c](http://evil.example/b)", "$\\href{x}{y}$",
                    ":red[x] :material/home:", "a\n\n# heading", "**b** _i_ `c` ~~s~~ | > \\"):
        escaped = md_text(payload)
        assert not UNESCAPED.search(escaped) and "<" not in escaped and "\n" not in escaped
        assert not re.search(r"(?<!\\)[\[\]()*_`~$:#|!]", escaped)      # every such character escaped
    assert md_text("a  b\nc") == "a b c"


def test_static_tables_only_for_plain_text():
    assert not any(reads_as_markup(v) for v in ("50.0% [15.0, 85.0]", "+0.0123 [+0.0010, +0.0200]", "full_native",
                                                "WCPQ: plan", "sim-alder", "2026-01-01 12:00:00", "✓ yes"))
    assert all(reads_as_markup(v) for v in (*PAYLOADS, "<http://x>", "[a](b)", "www.x.org", "_a_", "- a",
                                            ":red[x]", "a\nb", "$x$"))


def test_upload_folder_is_private_and_removed_when_the_server_stops(tmp_path):
    """Uploaded answers are copied into the warehouse at ingest; their temporary copies live in a
    folder only this user can read, and the folder goes when the process exits (it had stayed in
    /tmp after every server)."""
    code = ("from dashboard.data_access import upload_folder; f = upload_folder(); "
            "(f / 'answers.jsonl').write_text('{}'); import stat; "
            "print(f, oct(stat.S_IMODE(f.stat().st_mode)))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={**os.environ, "TMPDIR": str(tmp_path)})
    folder, mode = out.stdout.split()
    assert Path(folder).parent == tmp_path and mode == "0o700"
    assert not Path(folder).exists()
