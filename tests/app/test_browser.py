"""The whole app in a real headless Chromium (Playwright driving Debian's /usr/bin/chromium).

Starts `streamlit run app.py` on a free loopback port against a copy of the demo warehouse,
opens the Overview, then loads a small file on the Data page through the real upload widget.
Screenshots go to tests/artifacts/ (ignored by git)."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Callable

import pytest

from dashboard.routing import PAGES
from tests.conftest import ROOT, two_pairs

CHROMIUM = os.environ.get("QLB_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = ROOT / "tests" / "artifacts"
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.browser


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_server(wh: Path) -> tuple[subprocess.Popen, str]:
    """A real `streamlit run app.py` on a free loopback port, serving warehouse ``wh``."""
    port = _free_port()
    env = {**os.environ, "QLB_WAREHOUSE": str(wh)}
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                             "--server.address", "127.0.0.1", "--server.headless", "true"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                return proc, url
        except OSError:
            time.sleep(0.3)
    proc.kill()
    pytest.fail("streamlit did not start: " + proc.stdout.read().decode()[-2000:])


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def _skip_without_chromium() -> None:
    if os.environ.get("QLB_SKIP_BROWSER") == "1":
        pytest.skip("QLB_SKIP_BROWSER=1")
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} missing: install Debian's chromium (bash scripts/test.sh does)"


SERVED: dict[str, Path] = {}      # the warehouse each test server reads


@pytest.fixture(scope="module")
def server(decoded_warehouse, tmp_path_factory):
    _skip_without_chromium()
    wh = tmp_path_factory.mktemp("browser") / "qlb.duckdb"
    shutil.copy(decoded_warehouse, wh)
    _add_html_corpus(wh, tmp_path_factory.mktemp("html"))
    proc, url = _start_server(wh)
    SERVED[url] = wh
    yield url
    _stop(proc)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def visitor(browser):
    """One browser context for every page test, as one stakeholder going from page to page: each
    page opens in fresh tabs (a new Streamlit session each), with the dashboard's scripts and fonts
    in the context's cache after the first (a grid sizes its columns with the font it has when
    first drawn)."""
    context = browser.new_context()
    yield context
    context.close()


HOSTILE = '<script>window.__pwned = 1</script><b>bold?</b>'


def _add_html_corpus(wh: Path, folder: Path) -> None:
    """A dataset whose document text carries markup, scored by a simulated detector."""
    from qlb.runs.audit import run_audits
    from qlb.quasileak.detectors import SIMULATED_DETECTORS
    from qlb.runs.quasileak import run_detector
    from warehouse.db import writer
    from warehouse.ingest import IngestRequest, ingest_file

    text = f"Hello {HOSTILE} I keep a juice box by the bed and the fridge stays cold."
    cues = [[text.index(c), text.index(c) + len(c)] for c in ("a juice box by the bed", "the fridge stays cold")]
    policy = {a: "keep" for a in ("age", "gender", "nationality", "education", "occupation", "income",
                                  "relationship")} | {"health": "hide"}
    doc = {"doc_id": "h1", "split": "test", "context_id": "c1", "text": text, "profile": {"health": "x"},
           "policy": policy, "groups": [{"attribute": "health", "cues": cues}]}
    (folder / "c.jsonl").write_text(json.dumps(doc) + "\n")
    with writer(wh) as con:
        ingest_file(con, IngestRequest("corpus", folder / "c.jsonl", "html-check"))
        run_detector(con, "html-check", SIMULATED_DETECTORS[0], split="test")
        run_audits(con, "html-check")


def _no_exception(page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0


def test_upload_validate_then_ingest(server, browser, tmp_path):
    rows = two_pairs() + [dict(two_pairs()[0], world_id="w9", pair_id="p9", domain="space")]
    upload = tmp_path / "my_worlds.jsonl"
    upload.write_text("\n".join(json.dumps(r) for r in rows) + "\n<script>alert(1)</script>\n")
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    page.goto(f"{server}/data")
    page.get_by_text("Load a file").wait_for(timeout=30000)
    box = page.get_by_role("textbox", name="Into dataset")
    box.fill("browser-test")
    box.press("Enter")
    # the file uploader (the first of the page's two; the ontology's is below it). Pressing Enter
    # reruns the page: an upload handed over while that rerun replaces the widget can be lost, so
    # it is handed over again once if no report follows
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    for attempt in range(2):
        page.wait_for_timeout(500)
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(str(upload))
        try:
            page.get_by_text("Validation report").wait_for(timeout=20000)
            break
        except PlaywrightTimeout:
            if attempt:
                raise
    page.locator('[data-testid="stMetricLabel"]', has_text="Rejected").wait_for(timeout=30000)
    _no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "data_validation.png"), full_page=True)
    metrics = page.locator('[data-testid="stMetric"]')
    values = {metrics.nth(i).locator('[data-testid="stMetricLabel"]').inner_text().strip():
              metrics.nth(i).locator('[data-testid="stMetricValue"]').inner_text().strip()
              for i in range(metrics.count())}
    assert values["Lines"] == "6" and values["Accepted"] == "4" and values["Rejected"] == "2"
    assert page.locator("script", has_text="alert(1)").count() == 0     # data text never becomes markup
    page.get_by_role("button", name="Ingest 4 accepted lines into 'browser-test'").click()
    page.get_by_text("Stored 4 lines from my_worlds.jsonl").wait_for(timeout=30000)
    _no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "data_ingested.png"), full_page=True)
    page.close()


def test_escaped_document_viewer(server, browser):
    """A document whose text carries markup is shown as text in the QuasiLeak viewer."""
    page = browser.new_page(viewport={"width": 1400, "height": 3000})
    page.goto(f"{server}/quasileak?dataset=html-check")
    page.get_by_text("Document viewer").wait_for(timeout=30000)
    page.get_by_text(HOSTILE).first.wait_for(timeout=30000)      # shown as text
    _no_exception(page)
    assert page.evaluate("() => window.__pwned === undefined")
    assert page.locator("b", has_text="bold?").count() == 0
    page.screenshot(path=str(ARTIFACTS / "quasileak_escaped.png"), full_page=True)
    page.close()


def _nav_once(page, *titles: str) -> None:
    """The router's sidebar navigation (not Streamlit's pages/ folder) lists each of ``titles`` once."""
    nav = page.locator('[data-testid="stSidebarNav"]')
    for title in titles:
        assert nav.get_by_text(title).count() == 1, title


def _check_overview(page, wh: Path) -> None:
    page.get_by_text("12,960").first.wait_for(timeout=30000)
    assert page.get_by_text("1,440").count() >= 1
    _nav_once(page, "Overview", "Data")


def _check_refusal(page, wh: Path) -> None:
    page.locator(".js-plotly-plot").first.wait_for(timeout=30000)
    assert page.get_by_text("Withholding and recovery per model").count() >= 1
    assert page.get_by_text("N/A").count() >= 1              # sim-juniper never withholds
    page.locator(".js-plotly-plot").nth(1).wait_for(timeout=30000)   # the second draws later, at the page's end
    assert page.locator(".js-plotly-plot").count() == 2      # routes + one response's scores


def _check_recovery(page, wh: Path) -> None:
    page.get_by_text("Paired differences between views").wait_for(timeout=30000)
    page.locator(".js-plotly-plot").first.wait_for(timeout=30000)
    page.get_by_text("The full output.").first.wait_for(timeout=30000)          # the findings come first
    assert page.get_by_text("recovery with full native minus recovery with choice").count() >= 1   # display names
    assert page.get_by_text("full_native").count() == 0


def _check_fronts(page, wh: Path) -> None:
    page.locator(".js-plotly-plot").first.wait_for(timeout=30000)
    assert page.get_by_text("One-step clarification · authored costs").count() == 1    # the task came from the link
    assert page.get_by_text("sim-alder").count() >= 1


def _check_defenses(page, wh: Path) -> None:
    page.get_by_text("Every response–policy comparison agrees").first.wait_for(timeout=30000)   # grid cells are drawn
    page.get_by_text("costs the recipient nothing: all 5,184 response–policy plans agree").wait_for(timeout=30000)
    page.locator(".js-plotly-plot").first.wait_for(timeout=30000)
    page.get_by_text(f"{_inspected_world(wh)} ·").first.wait_for(timeout=30000)        # the inspector opened it


def _check_quasileak(page, wh: Path) -> None:
    page.locator(".js-plotly-plot").first.wait_for(timeout=30000)
    assert page.get_by_text("sim-det-strong").count() >= 1


def _inspected_world(wh: Path) -> str:
    """A test world of the WCPQ mapping other than the first one, for the Defenses page's inspector."""
    import duckdb
    con = duckdb.connect(str(wh), read_only=True)
    try:
        return con.execute("SELECT world_id FROM defense_releases WHERE defense = 'wcpq' AND split = 'test' "
                           "ORDER BY world_id LIMIT 1 OFFSET 5").fetchone()[0]
    finally:
        con.close()


# each page: (extra query for the link it is opened with, its key content, what else it must show,
# given the page and the warehouse the server reads)
PAGE_CHECKS: dict[str, tuple[str, str, Callable | None]] = {
    "": ("", "QuasiLeak documents", _check_overview),
    "overview": ("", "What the audit found", None),
    "data": ("", "Quarantine", lambda page, wh: _nav_once(page, "Overview")),        # a direct link goes through the router
    "collection": ("", "No collection runs in this dataset yet", None),
    "refusal": ("", "What withheld responses still reveal", _check_refusal),
    "recovery": ("", "Recovery per release view", _check_recovery),
    "fronts": ("&task=one-step+clarification", "On the front:", _check_fronts),          # the picker's label
    "sensitivity": ("", "Non-inferiority", None),
    "defenses": ("&model=sim-alder&world={world}", "WCPQ verification", _check_defenses),
    "quasileak": ("", "Leaderboard", _check_quasileak),
    "compare": ("", "Compare runs", None),
    "glossary": ("", "Plan agreement", None),
}
WIDTHS = (1440, 1024)
# Streamlit's frontend finds its server by asking the page's own path first (/refusal/_stcore/health),
# then the root: those two 404s on the dashboard's own host are its discovery, not a fault of a page
STREAMLIT_DISCOVERY = ("/_stcore/health", "/_stcore/host-config")
# every Plotly figure of the page drawn, and at its box's width (after a resize too)
DRAWN = """() => [...document.querySelectorAll('.js-plotly-plot')].every(
    plot => { const svg = plot.querySelector('.main-svg');
              return svg && Math.abs(svg.getBoundingClientRect().width - plot.getBoundingClientRect().width) < 2; })"""
LAYOUT = """() => {
  const doc = document.scrollingElement;
  const main = document.querySelector('[data-testid="stMain"]') || doc;
  const grids = [...document.querySelectorAll('[data-testid="stDataFrame"]')].map(frame => {
      const scroller = frame.querySelector('.dvn-scroller');
      const heads = [...frame.querySelectorAll('th')].map(th => th.textContent.trim()).slice(0, 6);
      return scroller ? {scroll: scroller.scrollWidth, client: scroller.clientWidth, columns: heads} : null;
  }).filter(Boolean);
  return {doc: [doc.scrollWidth, doc.clientWidth], main: [main.scrollWidth, main.clientWidth], grids};
}"""


def _watch(page, server: str) -> tuple[list[str], list[str]]:
    """(requests to any host but the dashboard's, console errors that are not Streamlit's own server
    discovery) of ``page``, filled as it loads."""
    foreign: list[str] = []
    errors: list[str] = []
    discovery: list[str] = []

    def on_request(request) -> None:
        if not request.url.startswith((server, "data:", "blob:", "about:")):
            foreign.append(request.url)

    def on_response(response) -> None:
        if response.status >= 400 and response.url.startswith(server) and response.url.endswith(STREAMLIT_DISCOVERY):
            discovery.append(response.url)

    def on_console(message) -> None:
        if message.type != "error":
            return
        if "404" in message.text and message.location.get("url", "").endswith(STREAMLIT_DISCOVERY):
            return
        errors.append(f"{message.text} ({message.location.get('url', '')})")

    page.on("request", on_request)
    page.on("response", on_response)
    page.on("console", on_console)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return foreign, errors


def _settled(page) -> None:
    """Wait until the page's fonts are loaded and its script run has finished: no "running"
    status for three looks in a row, 150 ms apart (grids that size their columns later are
    waited for by ``_layout_holds``)."""
    page.evaluate("() => document.fonts.ready.then(() => true)")
    quiet = 0
    for _ in range(270):
        quiet = quiet + 1 if page.locator('[data-testid="stStatusWidget"]').count() == 0 else 0
        if quiet == 3:
            break
        page.wait_for_timeout(150)


def _whole_page_screenshot(page, path: Path) -> None:
    """A screenshot of the whole page: Streamlit scrolls inside its main section, so the window is made as
    tall as that section's content for the shot (at most 12,000 px), then put back."""
    size = page.viewport_size
    tall = page.evaluate("() => (document.querySelector('[data-testid=\"stMain\"]') "
                         "|| document.scrollingElement).scrollHeight")
    if tall > size["height"]:
        page.set_viewport_size({"width": size["width"], "height": min(int(tall), 12000)})
        page.wait_for_timeout(400)
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(size)


def _layout_holds(page, width: int, name: str) -> None:
    """No horizontal scrollbar on the page and no table wider than its box (text cut off on the
    right) at ``width``; a full-page screenshot."""
    for attempt in range(4):      # grids size their columns after the page's last layout: measure once settled
        layout = page.evaluate(LAYOUT)
        clipped = [g for g in layout["grids"] if g["scroll"] > g["client"] + 2]
        overflow = layout["doc"][0] > layout["doc"][1] or layout["main"][0] > layout["main"][1]
        if not (clipped or overflow):
            break
        page.wait_for_timeout(1000)
    _whole_page_screenshot(page, ARTIFACTS / f"page_{name}_{width}.png")
    assert not overflow, (width, layout)
    assert not clipped, f"tables wider than their box at {width} px: {clipped}"


@pytest.mark.parametrize("url", list(PAGE_CHECKS))
def test_every_page_renders_in_browser(server, visitor, url):
    """Each page's first render in a fresh tab at 1,440 px, then the same tab narrowed to 1,024 px
    (Streamlit lays a page out with CSS and Plotly redraws its charts on a resize, so the narrow
    layout is the one a 1,024 px visitor gets, without a second run of the page's script): no
    exception, its key content and its own checks on screen, nothing fetched from another host,
    no console error, no horizontal scrollbar and no table wider than its box at either width; a
    screenshot at each."""
    ARTIFACTS.mkdir(exist_ok=True)
    query, key, check = PAGE_CHECKS[url]
    if "{world}" in query:
        query = query.format(world=_inspected_world(SERVED[server]))
    page = visitor.new_page()
    page.set_viewport_size({"width": WIDTHS[0], "height": 1100})
    foreign, errors = _watch(page, server)
    t0 = time.perf_counter()
    page.goto(f"{server}/{url}?dataset=simulated-reference{query}")
    page.get_by_text(key).first.wait_for(timeout=30000)
    elapsed = time.perf_counter() - t0
    if check is not None:
        check(page, SERVED[server])
    _settled(page)
    _no_exception(page)
    assert page.get_by_text("SIMULATED").count() >= 1
    assert page.get_by_text("Page not found").count() == 0
    for width in WIDTHS:
        if width != WIDTHS[0]:
            page.set_viewport_size({"width": width, "height": 1100})
            page.wait_for_function(f"() => document.scrollingElement.clientWidth <= {width}")
            _settled(page)
            page.wait_for_function(DRAWN, timeout=30000)
            page.wait_for_timeout(300)          # Plotly's redraw on a resize is debounced
        _layout_holds(page, width, url or "home")
    page.close()
    assert not foreign, f"requests that left the machine: {foreign}"
    assert not errors, f"console errors: {errors}"
    print(f"first render of /{url} at {WIDTHS[0]} px: {elapsed:.2f} s")


def test_sensitivity_page_keeps_the_task_in_the_url(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    page.goto(f"{server}/sensitivity?dataset=simulated-reference")
    page.get_by_text("Non-inferiority").first.wait_for(timeout=30000)
    page.locator(".js-plotly-plot").first.wait_for(timeout=30000)
    page.locator('[data-testid="stButtonGroup"]').get_by_text("asymmetric-cost routing", exact=True).first.click()
    page.wait_for_url("**task=asymmetric**", timeout=15000)
    page.get_by_text("asymmetric-cost routing: every model").first.wait_for(timeout=30000)
    _no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "sensitivity_asymmetric.png"), full_page=True)
    page.close()


def test_report_in_browser(server, browser, tmp_path):
    """The HTML report, opened from a file as a board member would, at 1,440 then 1,024 px:
    every figure drawn at its box's width, nothing fetched, no console error, no horizontal scrollbar."""
    from qlb.runs.report import build_report
    from warehouse.db import reader
    path = tmp_path / "report.html"
    with reader(SERVED[server]) as con:
        path.write_text(build_report(con, None, "simulated-reference"), encoding="utf-8")
    page = browser.new_page(viewport={"width": WIDTHS[0], "height": 1100})
    foreign, errors = _watch(page, path.as_uri())
    page.goto(path.as_uri())
    page.evaluate("() => document.fonts.ready.then(() => true)")
    page.wait_for_function(DRAWN, timeout=30000)
    assert page.locator(".js-plotly-plot").count() >= 4       # DRAWN holds on a page without figures too
    for width in WIDTHS:
        if width != WIDTHS[0]:
            page.set_viewport_size({"width": width, "height": 1100})
            page.wait_for_function(f"() => document.scrollingElement.clientWidth <= {width}")
            page.wait_for_function(DRAWN, timeout=30000)
            page.wait_for_timeout(300)          # Plotly's redraw on a resize is debounced
        layout = page.evaluate("() => [document.scrollingElement.scrollWidth, document.scrollingElement.clientWidth]")
        page.screenshot(path=str(ARTIFACTS / f"report_{width}.png"), full_page=True)
        assert layout[0] <= layout[1], (width, layout)
    # printed (as `qlb report --out FILE.pdf` does, at an A4 page's printable width): no chart toolbar, no
    # table wider than the page
    from qlb.export.pdf import PRINT_WIDTH_PX
    page.emulate_media(media="print")
    page.set_viewport_size({"width": PRINT_WIDTH_PX, "height": 1100})
    page.wait_for_function(f"() => document.scrollingElement.clientWidth <= {PRINT_WIDTH_PX}")
    page.wait_for_function(DRAWN, timeout=30000)
    page.wait_for_timeout(300)                  # Plotly's redraw on a resize is debounced
    assert page.evaluate("() => [...document.querySelectorAll('.modebar-container')].every("
                         "bar => getComputedStyle(bar).display === 'none')")
    layout = page.evaluate("() => [document.scrollingElement.scrollWidth, document.scrollingElement.clientWidth]")
    assert layout[0] <= layout[1], ("print", layout)
    assert not foreign and not errors, (foreign, errors)
    page.close()


def test_a_page_url_as_the_first_request_of_a_fresh_server(demo_warehouse, browser, tmp_path):
    """Streamlit's legacy pages-folder mode is on until the first st.navigation call: the very
    first request of a new server, for a page URL, must still get the router (sidebar with every
    page once, the dataset picker) and that page."""
    _skip_without_chromium()
    wh = tmp_path / "qlb.duckdb"
    shutil.copy(demo_warehouse, wh)
    proc, url = _start_server(wh)
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1800})
        page.goto(f"{url}/refusal?dataset=simulated-reference")
        page.get_by_role("heading", name="Refusal audit").first.wait_for(timeout=30000)
        page.get_by_text("SIMULATED").first.wait_for(timeout=30000)   # the banner follows the heading
        _settled(page)
        _no_exception(page)
        nav = page.locator('[data-testid="stSidebarNav"] a')
        labels = [nav.nth(i).inner_text().strip().split("\n")[-1] for i in range(nav.count())]   # after the icon
        titles = [t for _, t, _, _ in PAGES]
        assert [lab for lab in labels if lab in titles] == titles          # every page, once, in order
        assert page.get_by_text("SIMULATED").count() >= 1                   # the shared sidebar ran
        page.close()
    finally:
        _stop(proc)


def test_the_sidebar_downloads_the_report_as_pdf(server, browser, tmp_path):
    """The sidebar's "Download report as PDF" (shown where a Chromium can print) hands over an A4 PDF of the report."""
    from qlb.export.pdf import page_count
    from tests.export.test_pdf import A4, page_boxes
    page = browser.new_page(viewport={"width": 1400, "height": 1100}, accept_downloads=True)
    page.goto(f"{server}/overview?dataset=simulated-reference")
    button = page.get_by_role("button", name="Download report as PDF")
    button.wait_for(timeout=30000)
    with page.expect_download(timeout=90000) as info:
        button.click()
    download = info.value
    assert download.suggested_filename == "qlb-report-simulated-reference.pdf"
    data = Path(download.path()).read_bytes()
    assert data.startswith(b"%PDF-") and page_boxes(data) == {A4} and page_count(data) >= 5
    page.close()
