"""Python targets for the collection tests."""
from tests.collect.stubs import native_answer, refusal_answer


def answer(body: dict) -> dict:
    """A valid answer for either probe."""
    key = body["questions"][0]["key"]
    return native_answer(body) if key == "coarse_cause" else refusal_answer(body)


def broken(body: dict) -> dict:
    """A target that fails."""
    raise RuntimeError("model weights not loaded")
