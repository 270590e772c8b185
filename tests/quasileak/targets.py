"""Python detector targets for the `qlb quasileak run --detector python` tests: each is called once per
document with {"profile", "policy", "message"} and returns {"groups": [...]}."""
from __future__ import annotations

from qlb.quasileak.detectors import LexiconDetector

SEEN: list[dict] = []          # what ``records`` was called with, in order (the tests empty it)


def lexicon_offsets(doc: dict) -> dict:
    """The built-in lexicon detector's groups, every cue as [start, end] offsets."""
    found = LexiconDetector().detect(doc["message"], doc["profile"], doc["policy"]).groups
    return {"groups": [{"attribute": a, "cues": [[s, e] for s, e in cues]} for a, cues in found]}


def lexicon_quotes(doc: dict) -> dict:
    """The built-in lexicon detector's groups, every cue as the exact quote of its span."""
    text = doc["message"]
    return {"groups": [{"attribute": g["attribute"], "cues": [text[s:e] for s, e in g["cues"]]}
                       for g in lexicon_offsets(doc)["groups"]]}


def _load_weights(path: str) -> None:
    raise FileNotFoundError(f"no weights at {path}")        # the innermost frame of the detector's own code


def raises_when_health_is_hidden(doc: dict) -> dict:
    """Raises (in a helper of its own) on every document whose policy hides health; the lexicon's groups elsewhere."""
    if doc["policy"].get("health") == "hide":
        _load_weights("/nowhere/health.bin")
    return lexicon_offsets(doc)


def always_raises(doc: dict) -> dict:
    """A detector that fails on every document."""
    raise RuntimeError("model weights not loaded")


def records(doc: dict) -> dict:
    """Keeps what it was called with and changes it (the next document must get a fresh one); finds nothing."""
    SEEN.append({k: dict(v) if isinstance(v, dict) else v for k, v in doc.items()})
    doc["policy"].clear()
    return {"groups": []}

