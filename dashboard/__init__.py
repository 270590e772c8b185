"""App-side helpers for the Streamlit pages: cached warehouse reads, shared widgets."""
