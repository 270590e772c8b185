"""`qlb audit --json`'s summary keeps CONTRACT.md section 2's keys when an audit was skipped."""
from qlb.runs.audit import AuditRun


def test_the_contract_keys_stay_empty_when_their_audits_are_skipped_and_skipped_says_why():
    run = AuditRun("run-x", "d", False, skipped={"defenses": "not requested (--no-defenses)",
                                                 "decoding": "not requested (--no-decoding)"})
    out = run.to_json()
    assert out["recovery"] == {} and out["utility"] == {} and out["defenses"] == {}
    assert out["test_used_for_selection"] is False and out["skipped"]["defenses"] == "not requested (--no-defenses)"
    assert list(out)[:2] == ["run_id", "dataset"]
