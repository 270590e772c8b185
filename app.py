"""qlb dashboard: router only (page config, shared sidebar, navigation)."""
import streamlit as st

from dashboard.routing import mark_routed
from dashboard.widgets import dataset_sidebar

st.set_page_config(page_title="qlb - privacy-utility audits", page_icon=":material/shield:", layout="wide")

PAGES = [
    st.Page("pages/overview.py", title="Overview", icon=":material/dashboard:", default=True, url_path="overview"),
    st.Page("pages/data.py", title="Data", icon=":material/upload_file:", url_path="data"),
    st.Page("pages/refusal.py", title="Refusal audit", icon=":material/block:", url_path="refusal"),
    st.Page("pages/recovery.py", title="Release-view recovery", icon=":material/key:", url_path="recovery"),
    st.Page("pages/quasileak.py", title="QuasiLeak detectors", icon=":material/find_in_page:", url_path="quasileak"),
]

navigation = st.navigation(PAGES)
dataset_sidebar()
mark_routed()
navigation.run()
