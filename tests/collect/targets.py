"""Python targets for the collection tests."""
from tests.collect.stubs import native_answer, refusal_answer


def answer(body: dict) -> dict:
    """A valid answer for either probe."""
    key = body["questions"][0]["key"]
    return native_answer(body) if key == "coarse_cause" else refusal_answer(body)


def broken(body: dict) -> dict:
    """A target that fails."""
    raise RuntimeError("model weights not loaded")


def declines_some(body: dict) -> dict:
    """Declines every world whose public fields mention an even-numbered case (about half), answers the rest."""
    if len(str(body["state"])) % 2 == 0:
        return {"status": "unavailable", "reason": "outside my remit"}
    return answer(body)


def exits(body: dict) -> dict:
    """A target that calls sys.exit (as a script's main might)."""
    raise SystemExit("bye")


def sums_to_one_and_a_half(body: dict) -> dict:
    """An invalid answer for every world: the first criterion with probabilities summing to 1.5."""
    crit = list(body["questions"][0]["criteria"])
    return native_answer(body, probabilities={c: 1.5 / len(crit) for c in crit})


def under_another_question(body: dict) -> dict:
    """A valid answer filed under a question key that is not the one asked (``coarse``, not ``coarse_cause``)."""
    return {"answers": {"coarse": answer(body)}}


def _load_weights(path: str) -> None:
    raise FileNotFoundError(f"no weights at {path}")      # the innermost frame of the model's own code


def raises_in_a_helper(body: dict) -> dict:
    """A target whose own helper raises."""
    _load_weights("/nowhere/weights.bin")
    return answer(body)


def raises_in_the_standard_library(body: dict) -> dict:
    """A target that hands bad text to json.loads: the error is raised inside the standard library."""
    import json
    return json.loads(body["state"]["public"]["request"])
