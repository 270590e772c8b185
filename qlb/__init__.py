"""qlb: the engine of the privacy-utility audit workbench (TUPLE audits, QuasiLeak detectors).

A plain library: no streamlit, no work at import time, no prints (the CLI decides what to show).
"""
__version__ = "0.1.0"
