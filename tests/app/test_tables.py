"""Rates in tables read as percent to one decimal, like every figure the findings say (Streamlit's own
"percent" format shows two), while the CSV keeps them as shares."""
from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _script() -> None:
    import pandas as pd
    import streamlit as st
    from dashboard.widgets import PERCENT, csv_bytes, data_table, shown_frame
    frame = pd.DataFrame({"model": ["a", "b"], "accuracy": [0.5625, 0.634], "proxy share": [0.25, 0.5],
                          "log_loss": [0.6931, 0.5]})
    data_table(frame, percent=("proxy share",))
    data_table(frame.rename(columns={"proxy share": "coverage"}), percent=("coverage",))   # a rate named again
    st.text(PERCENT)
    st.text(csv_bytes(shown_frame(frame)[0]).decode())


def test_rate_columns_show_percent_to_one_decimal_and_the_csv_keeps_shares():
    at = AppTest.from_function(_script).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = at.dataframe[0].value
    assert list(shown["secret recovery"]) == [56.25, 63.4]           # scaled for the "%.1f%%" format: 56.2%, 63.4%
    assert list(shown["proxy share"]) == [25.0, 50.0]               # a column the page names as a rate
    assert list(shown["log loss"]) == [0.6931, 0.5]                  # not a rate: as it is
    assert list(at.dataframe[1].value["coverage"]) == [25.0, 50.0]   # scaled once, not 2,500%
    assert at.text[0].value == "%.1f%%"
    assert "0.5625" in at.text[1].value and "56.25" not in at.text[1].value
