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
