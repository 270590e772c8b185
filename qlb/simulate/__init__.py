"""Simulated reference datasets (deterministic from a seed, always marked simulated).

No real model responses ship with the papers, so the embedded default is generated here with
the papers' shapes and sizes: ``tuple_sim`` for TUPLE worlds and nine simulated models,
``quasileak_sim`` for a QuasiLeak corpus built from a weak-cue lexicon.
"""
SIMULATED_LABEL = "SIMULATED"
DEFAULT_SEED = 20261011          # the embedded default's seed (dataset simulated-reference)
