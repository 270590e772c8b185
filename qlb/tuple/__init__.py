"""The TUPLE audit's algorithms, pure: refusal, release views, decoders and secret recovery,
recipients, workflows and costs, utility, fronts, output defenses and WCPQ.

Arrays and frames in, results out; nothing here opens a database or imports Streamlit."""
