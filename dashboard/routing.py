"""The router (page config, shared sidebar, st.navigation) and the guarantee that every page
runs through it.

Streamlit still knows the legacy "pages/ folder" mode: a folder named ``pages`` beside the main
script switches it on until the first ``st.navigation`` call of the server process. On a
server's very first script run (and on every AppTest run) a request for a page can therefore
execute ``pages/<page>.py`` on its own: no sidebar, no dataset, the wrong navigation. Pages end
with ``page_entry(render)``: when the run did not come through the router, the router is run
right there, in the same script run (so widget events such as a button click are kept). Its
``st.navigation`` call is the documented way to leave the legacy mode (it switches the mode
off for the process), and it serves the page the URL names. No private Streamlit API is used;
the README's Architecture section says why the folder keeps its name.
"""
from __future__ import annotations

import threading
from typing import Callable

import duckdb
import streamlit as st

from dashboard import data_access
from warehouse.db import WarehouseBusy, WarehouseError

BUSY_RETRY_SECONDS = 3.0
_state = threading.local()
_warmed = threading.Event()
# what the recompute and what-if panels need; loaded in the background after the first page
WARM_IMPORTS = ("sklearn.linear_model", "sklearn.ensemble", "sklearn.model_selection", "sklearn.preprocessing",
                "joblib", "qlb.tuple.recovery", "qlb.tuple.recipient_estimators")


def _warm_up() -> None:
    """Import what the recompute panels need, in the background, once per server process."""
    import importlib
    for name in WARM_IMPORTS:
        try:
            importlib.import_module(name)
        except Exception:   # a warm-up must never break the app; the page import will report it
            pass

PAGES = [
    ("pages/overview.py", "Overview", ":material/dashboard:", "overview"),
    ("pages/data.py", "Data", ":material/upload_file:", "data"),
    ("pages/collection.py", "Collection", ":material/cloud_download:", "collection"),
    ("pages/refusal.py", "Refusal audit", ":material/block:", "refusal"),
    ("pages/recovery.py", "Release-view recovery", ":material/key:", "recovery"),
    ("pages/fronts.py", "Privacy-utility fronts", ":material/scatter_plot:", "fronts"),
    ("pages/sensitivity.py", "Cost-profile sensitivity", ":material/tune:", "sensitivity"),
    ("pages/defenses.py", "Defenses and WCPQ verification", ":material/verified_user:", "defenses"),
    ("pages/quasileak.py", "QuasiLeak detectors", ":material/find_in_page:", "quasileak"),
    ("pages/compare.py", "Compare runs", ":material/compare_arrows:", "compare"),
    ("pages/glossary.py", "Glossary", ":material/menu_book:", "glossary"),
]


def tab_icon():
    """The browser tab's icon, drawn here (a shield in the app's blue): Streamlit serves it from the
    dashboard itself, so opening a page sends no request off the machine (a ``:material/...:``
    page icon is fetched from a font CDN)."""
    from PIL import Image, ImageDraw

    image = Image.new("RGBA", (64, 64), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    draw.polygon([(32, 4), (58, 14), (56, 36), (32, 60), (8, 36), (6, 14)], fill=(0, 114, 178, 255))
    draw.line([(20, 32), (29, 41), (45, 23)], fill=(255, 255, 255, 255), width=6)
    return image


def run_router() -> None:
    """What app.py does: page config, the navigation over every page, the shared sidebar, then
    the selected page."""
    from dashboard.widgets import background_audit_banner, dataset_sidebar

    st.set_page_config(page_title="qlb - privacy-utility audits", page_icon=tab_icon(), layout="wide")
    pages = [st.Page(path, title=title, icon=icon, url_path=url if i else "home", default=(i == 0))
             for i, (path, title, icon, url) in enumerate(PAGES)]
    # the first page is served at "/"; "/overview" opens it too (a hidden second entry for the same script)
    path0, title0, icon0, url0 = PAGES[0]
    alias = st.Page(path0, title=title0, icon=icon0, url_path=url0, visibility="hidden")
    navigation = st.navigation([*pages, alias])
    path = data_access.warehouse_path()
    data_access.forget_if_written(path)    # another process wrote: no cached read outlives it
    with data_access.reading(path):        # one read-only handle for the whole page run, released after
        try:
            draw_sidebar = dataset_sidebar()
            background_audit_banner(path, st.session_state.get("dataset"))
            _state.routed = True
            try:
                navigation.run()
            finally:
                draw_sidebar()
        except (WarehouseBusy, duckdb.ConnectionException) as exc:
            _state.routed = False
            busy = exc
        except WarehouseError as exc:            # e.g. written by an older qlb: say what to do, no traceback
            _state.routed = False
            from dashboard.widgets import md_text
            st.error(f"The warehouse cannot be read: {md_text(exc)}", icon=":material/error:")
            busy = None
        else:
            busy = None
    if busy is not None:
        _wait_for_writer(busy)
    if not _warmed.is_set():      # once per server process, after the first page has rendered
        _warmed.set()
        threading.Thread(target=_warm_up, name="qlb-warm-imports", daemon=True).start()


def _wait_for_writer(exc: Exception) -> None:
    """A page that met a write in progress (``qlb ingest`` or ``qlb audit`` in another process,
    or an upload here): say so, wait, and run the page again; never a traceback."""
    import time

    from dashboard.widgets import md_text
    st.info(f"The warehouse is being updated by another process; this page reloads in "
            f"{BUSY_RETRY_SECONDS:.0f} s.  \n*{md_text(exc)}*", icon=":material/hourglass_top:")
    time.sleep(BUSY_RETRY_SECONDS)
    st.rerun()


def page_entry(render: Callable[[], None]) -> None:
    """Draw the page when the router is running it; otherwise run the router (legacy-mode
    script run: see the module docstring), which then serves this page through st.navigation."""
    if getattr(_state, "routed", False):
        _state.routed = False
        render()
        return
    run_router()
