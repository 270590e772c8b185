"""QuasiLeak, pure: group-aware, policy-conditioned detector scoring and the built-in detectors."""
