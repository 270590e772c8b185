"""Small, real models to try qlb's collection and audits on (not simulated responses).

``qlb.examples.triage_model`` is a scikit-learn decision model trained on the demo's worlds and
exposed as a ``qlb collect --transport python`` target.
"""
