"""The Python detector: what its function is called with, how what it returns becomes cue spans (exact
quotes or [start, end] offsets), and what a function that raises or returns something else records."""
from __future__ import annotations

import inspect
import sys

import numpy as np
import pytest

from qlb.collect.transports import load_target
from qlb.quasileak.detectors import (
    MODEL_OUTPUT, TARGET_OUTPUT, Detection, PythonDetector, located_groups, parse_model_output, target_name,
)
from tests.quasileak import targets

TEXT = "Please note: a juice box by the bed, and the fridge stays cold. The fridge hums."
POLICY = {"religion": "keep", "health": "hide"}
PROFILE = {"religion": "none", "health": "type 1 diabetes"}
FRIDGE = TEXT.index("fridge")                   # the first of two
JUICE = (TEXT.index("juice box"), TEXT.index("juice box") + len("juice box"))


def _read(groups, offsets=True) -> Detection:
    return located_groups({"groups": groups}, TEXT, tuple(POLICY), TARGET_OUTPUT, offsets=offsets)


def test_the_function_gets_one_fresh_dict_of_profile_policy_and_message():
    """As the chat endpoint's user turn, and as qlb collect calls its target with one dict it may change."""
    detector = PythonDetector("tests.quasileak.targets:records")
    targets.SEEN.clear()
    policy = dict(POLICY)
    assert detector.detect(TEXT, PROFILE, policy) == Detection(())
    assert detector.detect("Second.", PROFILE, policy) == Detection(())
    assert targets.SEEN == [{"profile": PROFILE, "policy": POLICY, "message": TEXT},
                            {"profile": PROFILE, "policy": POLICY, "message": "Second."}]   # cleared, yet whole again
    assert policy == POLICY


def test_quotes_and_offsets_give_the_same_spans_and_may_be_mixed():
    quoted = _read([{"attribute": "health", "cues": ["juice box", "fridge", "fridge"]}])
    placed = _read([{"attribute": "health", "cues": [list(JUICE), [FRIDGE, FRIDGE + 6],
                                                     [TEXT.rindex("fridge"), TEXT.rindex("fridge") + 6]]}])
    mixed = _read([{"attribute": "health", "cues": [[FRIDGE, FRIDGE + 6], "fridge", "juice box"]}])
    spans = (JUICE, (FRIDGE, FRIDGE + 6), (TEXT.rindex("fridge"), TEXT.rindex("fridge") + 6))
    assert quoted == placed == mixed == Detection((("health", spans),))
    # a quote goes past an offset an earlier group holds; numpy integers are offsets too
    two = _read([{"attribute": "health", "cues": [(np.int64(FRIDGE), np.int64(FRIDGE + 6))]},
                 {"attribute": "religion", "cues": ["fridge"]}])
    assert two.groups == (("health", ((FRIDGE, FRIDGE + 6),)), ("religion", ((TEXT.rindex("fridge"),
                                                                              TEXT.rindex("fridge") + 6),)))


@pytest.mark.parametrize("cues, why", [
    ([[5, 3]], "cue [5, 3] of the 'health' group: is empty or reversed"),
    ([[70, 200]], f"cue [70, 200] of the 'health' group: is outside the message (length {len(TEXT)})"),
    ([[-1, 4]], f"cue [-1, 4] of the 'health' group: is outside the message (length {len(TEXT)})"),
    ([[15, 24], [20, 30]], "cues [15, 24] and [20, 30] of the 'health' group overlap"),
    ([[True, 4]], "the 'health' group's cues are not a non-empty list of quotes or [start, end] offsets"),
    ([[1, 2, 3]], "the 'health' group's cues are not a non-empty list of quotes or [start, end] offsets"),
    ([], "the 'health' group's cues are not a non-empty list of quotes or [start, end] offsets"),
    (["soda can"], "cue 'soda can' of the 'health' group: it is not in the message (a cue is an exact quote)"),
])
def test_a_cue_that_cannot_be_placed_fails_the_document(cues, why):
    assert _read([{"attribute": "health", "cues": cues}]) == Detection(failure=TARGET_OUTPUT + why)


def test_an_attribute_outside_the_policy_or_no_groups_list_fails_the_document():
    assert _read([{"attribute": "income", "cues": ["fridge"]}]).failure == (
        "target output: group attribute 'income': expected one of the document's attributes (religion, health)")
    detector = PythonDetector("tests.quasileak.targets:always_raises")
    detector.function = lambda doc: [{"attribute": "health", "cues": ["fridge"]}]     # a list, not the dict
    assert detector.detect(TEXT, PROFILE, POLICY).failure == (
        'target output: no "groups" list; it starts: "[{\\"attribute\\": \\"health\\", \\"cues\\": [\\"fridge\\"]}]"')


def test_the_chat_endpoint_still_takes_quotes_only():
    said = parse_model_output('{"groups": [{"attribute": "health", "cues": [[15, 24]]}]}', TEXT, tuple(POLICY))
    assert said.failure == MODEL_OUTPUT + "the 'health' group's cues are not a non-empty list of quotes"


def test_a_function_that_raises_records_the_file_line_and_function_of_its_own_code():
    detector = PythonDetector("tests.quasileak.targets:raises_when_health_is_hidden")
    line = inspect.getsourcelines(targets._load_weights)[1] + 1
    assert detector.detect(TEXT, PROFILE, POLICY) == Detection(failure=(
        "the target raised FileNotFoundError: no weights at /nowhere/health.bin, at "
        f"tests/quasileak/targets.py:{line}, in _load_weights"))
    assert detector.detect(TEXT, PROFILE, {"health": "keep"}) == Detection(())     # no cue of the lexicon's here


@pytest.fixture
def detector_file(tmp_path, monkeypatch):
    """A detector module written to a file outside the current folder; the loader's additions to the Python path
    and the loaded modules are undone afterwards."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    path = tmp_path / "qlb_test_file_detector.py"
    path.write_text("def detect(doc):\n    return {'groups': [{'attribute': 'health', 'cues': ['fridge']}]}\n")
    yield path
    sys.modules.pop(path.stem, None)


def test_a_file_target_is_loaded_and_named_by_its_module(detector_file):
    assert target_name("tests.quasileak.targets:lexicon_quotes") == "python:tests.quasileak.targets.lexicon_quotes"
    assert target_name("./detectors/my_detector.py:detect") == "python:my_detector.detect"
    detector = PythonDetector(f"{detector_file}:detect")
    assert detector.name == "python:qlb_test_file_detector.detect"
    assert detector.detect(TEXT, PROFILE, POLICY) == Detection((("health", ((FRIDGE, FRIDGE + 6),)),))
    assert PythonDetector(f"{detector_file}:detect", name="mine").name == "mine"


@pytest.mark.parametrize("target", ["tests.quasileak.targets:no_such_function", "no_such_module_qlb:detect",
                                    "tests/quasileak/nowhere.py:detect", "tests.quasileak.targets"])
def test_a_target_that_cannot_be_loaded_is_reported_in_qlb_collects_words(target):
    with pytest.raises(ValueError) as collect_said:
        load_target(target)
    with pytest.raises(ValueError) as detector_said:
        PythonDetector(target)
    assert str(detector_said.value) == str(collect_said.value) and str(collect_said.value).startswith(
        f"--target {target!r}: ")
