"""Make sure every page runs through the router (app.py).

Streamlit still knows the legacy "pages/ folder" mode: on a server's very first script run,
before app.py has ever called st.navigation, a request for /data executes pages/data.py on its
own (no sidebar, no dataset, wrong navigation). Pages call ``page_entry(render)``: when the
run did not come through app.py, it switches Streamlit to st.navigation mode and reruns, so
the same URL is served by the router.
"""
from __future__ import annotations

import threading
from typing import Callable

import streamlit as st

_state = threading.local()


def mark_routed() -> None:
    """Called by app.py just before it runs the selected page."""
    _state.routed = True


def page_entry(render: Callable[[], None]) -> None:
    if getattr(_state, "routed", False):
        try:
            render()
        finally:
            _state.routed = False
        return
    try:
        from streamlit.runtime.pages_manager import PagesManager
        PagesManager.uses_pages_directory = False
    except ImportError:  # a future Streamlit without the legacy mode: nothing to undo
        pass
    st.rerun()
