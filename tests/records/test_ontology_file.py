"""Ontology files (OWN_TASK.md): every rejection rule with its message, all problems at once,
versions (sha256), round trips, the packaged TUPLE ontology and pickling."""
from __future__ import annotations

import copy
import json
import pickle
from importlib import resources

import pytest

from qlb.records import ontology as onto_mod
from qlb.records.ontology import (Ontology, OntologyError, decode_ontology_bytes, load_ontology, ontology_sha256,
                                  parse_ontology, read_ontology_file, tuple_ontology_sha256)
from tests.records.ontologies import (LENDING_PATH, as_text, five_by_two, lending, make_domain, make_ontology,
                                      three_by_three)

SRC = "f.json"
D = "domains.support"


def problems_of(doc) -> list[str]:
    text = doc if isinstance(doc, str) else json.dumps(doc)
    with pytest.raises(OntologyError) as exc:
        parse_ontology(text, SRC)
    assert str(exc.value) == "\n".join(exc.value.problems)
    assert isinstance(exc.value, ValueError)
    return exc.value.problems


def _support(doc) -> dict:
    return doc["domains"]["support"]


def _set(path: str, value):
    """A mutation setting the dotted ``path`` (from the domain ``support``; ``/`` for top level)."""
    def mutate(doc):
        if path.startswith("/"):
            node, keys = doc, path[1:].split(".")
        else:
            node, keys = _support(doc), path.split(".")
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value
    return mutate


def _delete(path: str):
    def mutate(doc):
        node, keys = (doc, path[1:].split(".")) if path.startswith("/") else (_support(doc), path.split("."))
        for k in keys[:-1]:
            node = node[k]
        del node[keys[-1]]
    return mutate


def _add_class(name: str, mechanisms: list[str]):
    def mutate(doc):
        d = _support(doc)
        d["classes"][name] = mechanisms
        d["checks"][f"check_{name.lower()}"] = name
        for row in d["asymmetric_costs"].values():
            row[name] = 5.0
        d["asymmetric_costs"][name] = {c: (0.0 if c == name else 5.0) for c in d["classes"]}
    return mutate


def _rename_class(old: str, new: str):
    def mutate(doc):
        d = _support(doc)
        d["classes"][new] = d["classes"].pop(old)
        d["checks"] = {k: (new if v == old else v) for k, v in d["checks"].items()}
        d["asymmetric_costs"] = {(new if a == old else a): {(new if t == old else t): v for t, v in row.items()}
                                 for a, row in d["asymmetric_costs"].items()}
        d["descriptions"][new] = d["descriptions"].pop(old)
    return mutate


def _rename_mechanism(old: str, new: str):
    def mutate(doc):
        d = _support(doc)
        d["classes"] = {c: [new if m == old else m for m in ms] for c, ms in d["classes"].items()}
        d["descriptions"] = {(new if k == old else k): v for k, v in d["descriptions"].items()}
    return mutate


def _many_domains(n: int):
    def mutate(doc):
        base = _support(doc)
        doc["domains"] = {f"d{i}": copy.deepcopy(base) for i in range(n)}
    return mutate


# (id, mutation of three_by_three(), the expected problem line)
RULES = [
    # domains: 1 to 20, ids
    ("no_domains", _set("/domains", {}), f"{SRC}: domains: 0 domains, need at least 1"),
    ("too_many_domains", _many_domains(21), f"{SRC}: domains: 21 domains, at most 20"),
    ("domain_id", lambda doc: doc["domains"].update({"my domain": doc["domains"].pop("support")}),
     f"{SRC}: domains.my domain: domain id 'my domain' must match [A-Za-z0-9_]+"),
    ("domains_not_object", _set("/domains", ["support"]), f"{SRC}: domains: must be an object (got ['support'])"),
    ("domains_missing", _delete("/domains"), f"{SRC}: domains: required key is missing"),
    # non-empty strings
    ("title_empty", _set("title", ""), f"{SRC}: {D}.title: must be a non-empty string"),
    ("title_blank", _set("title", "   "), f"{SRC}: {D}.title: must be a non-empty string"),
    ("recipient_role_empty", _set("recipient_role", ""), f"{SRC}: {D}.recipient_role: must be a non-empty string"),
    ("may_receive_empty", _set("may_receive", ""), f"{SRC}: {D}.may_receive: must be a non-empty string"),
    ("must_not_receive_empty", _set("must_not_receive", ""),
     f"{SRC}: {D}.must_not_receive: must be a non-empty string"),
    ("title_not_string", _set("title", 3), f"{SRC}: {D}.title: must be a string (got 3)"),
    ("may_receive_missing", _delete("may_receive"), f"{SRC}: {D}.may_receive: required key is missing"),
    # non-empty lists of distinct strings
    ("channels_empty", _set("intake_channels", []), f"{SRC}: {D}.intake_channels: must be a non-empty list"),
    ("channels_repeated", _set("intake_channels", ["portal", "phone", "portal"]),
     f"{SRC}: {D}.intake_channels: items must be distinct: 'portal' listed more than once"),
    ("windows_empty_item", _set("operating_windows", ["day", ""]),
     f"{SRC}: {D}.operating_windows: items must be non-empty strings"),
    ("windows_not_list", _set("operating_windows", "day"), f"{SRC}: {D}.operating_windows: must be a list (got 'day')"),
    ("windows_not_strings", _set("operating_windows", ["day", 7]),
     f"{SRC}: {D}.operating_windows[1]: must be a string (got 7)"),
    # 2 to 8 classes, 2 to 12 mechanisms per class
    ("one_class", lambda doc: _support(doc).update(make_domain({"BILLING": ["a", "b"]})),
     f"{SRC}: {D}.classes: 1 class, need at least 2"),
    ("nine_classes", lambda doc: _support(doc).update(make_domain({f"C{i}": [f"m{i}a", f"m{i}b"] for i in range(9)})),
     f"{SRC}: {D}.classes: 9 classes, at most 8"),
    ("one_mechanism", _set("classes.BILLING", ["card_expired"]), f"{SRC}: {D}.classes.BILLING: 1 mechanism, need at least 2"),
    ("no_mechanism", _set("classes.BILLING", []), f"{SRC}: {D}.classes.BILLING: 0 mechanisms, need at least 2"),
    ("thirteen_mechanisms", _set("classes.BILLING", [f"m{i}" for i in range(13)]),
     f"{SRC}: {D}.classes.BILLING: 13 mechanisms, at most 12"),
    ("mechanisms_not_list", _set("classes.BILLING", "card_expired"),
     f"{SRC}: {D}.classes.BILLING: must be a list (got 'card_expired')"),
    # ids: the pattern, unique within the domain, WITHHOLD reserved
    ("class_id", _rename_class("BILLING", "BILL-ING"), f"{SRC}: {D}.classes.BILL-ING: class id 'BILL-ING' must match [A-Za-z0-9_]+"),
    ("mechanism_id", _rename_mechanism("refund_delay", "refund delay"),
     f"{SRC}: {D}.classes.BILLING[2]: mechanism id 'refund delay' must match [A-Za-z0-9_]+"),
    ("mechanism_id_empty", _rename_mechanism("refund_delay", ""),
     f"{SRC}: {D}.classes.BILLING[2]: mechanism id '' must match [A-Za-z0-9_]+"),
    ("check_id", lambda doc: _support(doc)["checks"].update({"check billing": _support(doc)["checks"].pop("check_billing")}),
     f"{SRC}: {D}.checks.check billing: check id 'check billing' must match [A-Za-z0-9_]+"),
    ("mechanism_in_two_classes", _set("classes.OUTAGE", ["card_expired", "dns_failure", "power_cut"]),
     f"{SRC}: {D}.classes.OUTAGE[0]: mechanism 'card_expired' is already in class 'BILLING' "
     "(a mechanism belongs to one class, once)"),
    ("mechanism_twice_in_class", _set("classes.BILLING", ["card_expired", "double_charge", "card_expired"]),
     f"{SRC}: {D}.classes.BILLING[2]: mechanism 'card_expired' is already in this class "
     "(a mechanism belongs to one class, once)"),
    ("class_and_mechanism", _rename_mechanism("refund_delay", "OUTAGE"),
     f"{SRC}: {D}.classes.BILLING: 'OUTAGE' is both a class and a mechanism (ids are unique within a domain)"),
    ("withhold_mechanism", _rename_mechanism("refund_delay", "WITHHOLD"),
     f"{SRC}: {D}.classes.BILLING[2]: mechanism id 'WITHHOLD' is reserved"),
    ("withhold_class", _rename_class("BILLING", "WITHHOLD"), f"{SRC}: {D}.classes.WITHHOLD: class id 'WITHHOLD' is reserved"),
    ("inspect_class", _rename_class("BILLING", "INSPECT"), f"{SRC}: {D}.classes.INSPECT: class id 'INSPECT' is reserved"),
    # descriptions: optional, classes and mechanisms only
    ("description_unknown", _set("descriptions.nothing", "text"),
     f"{SRC}: {D}.descriptions.nothing: not a class or mechanism of this domain"),
    ("description_empty", _set("descriptions.BILLING", " "), f"{SRC}: {D}.descriptions.BILLING: must be a non-empty string"),
    ("description_not_string", _set("descriptions.BILLING", 1), f"{SRC}: {D}.descriptions.BILLING: must be a string (got 1)"),
    # checks: exactly one per class
    ("check_missing", _delete("checks.check_billing"),
     f"{SRC}: {D}.checks: no check for class 'BILLING' (need exactly one per class)"),
    ("check_twice", _set("checks.check_bill", "BILLING"),
     f"{SRC}: {D}.checks: class 'BILLING' has 2 checks (check_billing, check_bill), need exactly one"),
    ("check_unknown_class", _set("checks.check_billing", "BILL"), f"{SRC}: {D}.checks.check_billing: 'BILL' is not a class of this domain"),
    ("checks_missing", _delete("checks"), f"{SRC}: {D}.checks: required key is missing"),
    # asymmetric_costs: rows = classes + INSPECT, columns = classes, finite, >= 0, diagonal 0
    ("cost_row_missing", _delete("asymmetric_costs.BILLING"),
     f"{SRC}: {D}.asymmetric_costs: missing row 'BILLING' (rows are every class plus INSPECT)"),
    ("cost_inspect_missing", _delete("asymmetric_costs.INSPECT"),
     f"{SRC}: {D}.asymmetric_costs: missing row 'INSPECT' (rows are every class plus INSPECT)"),
    ("cost_row_extra", _set("asymmetric_costs.REFUND", {"ACCOUNT": 1.0, "BILLING": 1.0, "OUTAGE": 1.0}),
     f"{SRC}: {D}.asymmetric_costs.REFUND: not a class of this domain or INSPECT"),
    ("cost_column_missing", _delete("asymmetric_costs.OUTAGE.BILLING"),
     f"{SRC}: {D}.asymmetric_costs.OUTAGE: missing column 'BILLING' (columns are every class)"),
    ("cost_column_extra", _set("asymmetric_costs.INSPECT.REFUND", 1.0),
     f"{SRC}: {D}.asymmetric_costs.INSPECT.REFUND: not a class of this domain"),
    ("cost_negative", _set("asymmetric_costs.OUTAGE.BILLING", -1.0),
     f"{SRC}: {D}.asymmetric_costs.OUTAGE.BILLING: must be non-negative (got -1.0)"),
    ("cost_infinite", _set("asymmetric_costs.OUTAGE.BILLING", float("inf")),
     f"{SRC}: {D}.asymmetric_costs.OUTAGE.BILLING: must be a finite number (got inf)"),
    ("cost_nan", _set("asymmetric_costs.INSPECT.BILLING", float("nan")),
     f"{SRC}: {D}.asymmetric_costs.INSPECT.BILLING: must be a finite number (got nan)"),
    ("cost_text", _set("asymmetric_costs.OUTAGE.BILLING", "5"),
     f"{SRC}: {D}.asymmetric_costs.OUTAGE.BILLING: must be a number (got '5')"),
    ("cost_bool", _set("asymmetric_costs.OUTAGE.BILLING", True),
     f"{SRC}: {D}.asymmetric_costs.OUTAGE.BILLING: must be a number (got True)"),
    ("cost_diagonal", _set("asymmetric_costs.OUTAGE.OUTAGE", 2),
     f"{SRC}: {D}.asymmetric_costs.OUTAGE.OUTAGE: the diagonal must be 0 (got 2)"),
    # authored_costs and cost_profiles (optional; as in ontology.json)
    ("authored_negative", _set("/authored_costs", {"wrong_route": -1, "review": 2, "check": 0.4,
                                                   "unavailable_fallback": "review"}),
     f"{SRC}: authored_costs.wrong_route: must be non-negative (got -1)"),
    ("authored_missing_key", _set("/authored_costs", {"wrong_route": 10, "review": 2, "unavailable_fallback": "review"}),
     f"{SRC}: authored_costs.check: required key is missing"),
    ("authored_fallback", _set("/authored_costs", {"wrong_route": 10, "review": 2, "check": 0.4,
                                                   "unavailable_fallback": "coin_flip"}),
     f"{SRC}: authored_costs.unavailable_fallback: must be 'review' (got 'coin_flip')"),
    ("profile_without_authored", _set("/cost_profiles", {"review_half": {"review_x": 0.5}}),
     f"{SRC}: cost_profiles: needs the profile 'authored' (the costs as authored; may be {{}})"),
    ("profile_unknown_multiplier", _set("/cost_profiles", {"authored": {}, "p": {"review_y": 0.5}}),
     f"{SRC}: cost_profiles.p.review_y: unknown key (did you mean 'review_x'?)"),
    ("profile_negative", _set("/cost_profiles", {"authored": {}, "p": {"check_x": -0.5}}),
     f"{SRC}: cost_profiles.p.check_x: must be non-negative (got -0.5)"),
    ("profile_id", _set("/cost_profiles", {"authored": {}, "my profile": {}}),
     f"{SRC}: cost_profiles.my profile: profile id 'my profile' must match [A-Za-z0-9_]+"),
    ("profile_column_without_x", _set("/cost_profiles", {"authored": {}, "p": {"asymmetric_column_class": "OUTAGE"}}),
     f"{SRC}: cost_profiles.p: asymmetric_column_class and asymmetric_column_x go together "
     "(the class whose column is scaled, and by how much)"),
    ("profile_two_columns", _set("/cost_profiles", {"authored": {}, "p": {
        "asymmetric_column_class": "OUTAGE", "asymmetric_column_x": 2.0, "asymmetric_class0_column_x": 2.0}}),
     f"{SRC}: cost_profiles.p: asymmetric_class0_column_x and asymmetric_column_class both name a column to scale; "
     "use one"),
    # the shape of the file itself
    ("unknown_top_key", _set("/domain", {}), f"{SRC}: domain: unknown key (did you mean 'domains'?)"),
    ("unknown_domain_key", _set("description", {}), f"{SRC}: {D}.description: unknown key (did you mean 'descriptions'?)"),
]


@pytest.mark.parametrize("mutate,expected", [r[1:] for r in RULES], ids=[r[0] for r in RULES])
def test_every_rule_rejects_with_its_message(mutate, expected):
    doc = three_by_three()
    parse_ontology(json.dumps(doc), SRC)          # the base file is valid
    mutate(doc)
    assert expected in problems_of(doc)


def test_the_rule_table_has_one_case_per_id():
    assert len({r[0] for r in RULES}) == len(RULES)


def test_several_problems_are_reported_at_once():
    doc = three_by_three()
    d = _support(doc)
    d["classes"]["BILLING"] = ["card_expired"]                   # one mechanism
    del d["descriptions"]["double_charge"], d["descriptions"]["refund_delay"]
    del d["checks"]["check_outage"]                             # a class without a check
    d["asymmetric_costs"]["ACCOUNT"]["ACCOUNT"] = 1.0            # diagonal
    d["title"] = ""                                              # empty string
    doc["domains"]["second"] = make_domain({"A": ["a1", "a2"], "B": ["b1", "WITHHOLD"]})
    problems = problems_of(doc)
    assert problems == [
        f"{SRC}: {D}.title: must be a non-empty string",
        f"{SRC}: {D}.classes.BILLING: 1 mechanism, need at least 2",
        f"{SRC}: {D}.checks: no check for class 'OUTAGE' (need exactly one per class)",
        f"{SRC}: {D}.asymmetric_costs.ACCOUNT.ACCOUNT: the diagonal must be 0 (got 1.0)",
        f"{SRC}: domains.second.classes.B[1]: mechanism id 'WITHHOLD' is reserved",
    ]


def test_the_first_problem_line_of_the_spec():
    doc = make_ontology({"loans": {"APPROVE": ["steady_income"], "DECLINE": ["arrears", "fraud_flag"]}})
    assert f"{SRC}: domains.loans.classes.APPROVE: 1 mechanism, need at least 2" in problems_of(doc)


def test_invalid_json_names_line_and_column():
    assert problems_of('{\n  "domains": {,\n}') == [
        f"{SRC}: not valid JSON: Expecting property name enclosed in double quotes (line 2, column 15)"]
    assert problems_of("") == [f"{SRC}: not valid JSON: Expecting value (line 1, column 1)"]


def test_not_an_object_and_duplicate_keys():
    assert problems_of("[1, 2]") == [f"{SRC}: the file must hold one JSON object (got list)"]
    text = as_text(three_by_three()).replace('"BILLING": [', '"OUTAGE": ["x1", "x2"], "BILLING": [', 1)
    assert f"{SRC}: {D}.classes.OUTAGE: key given more than once in one object (line 22)" in problems_of(text)


def test_a_key_given_twice_names_the_lines_of_the_kept_value():
    from qlb.records.ontology import _value_lines
    text = '{\n "d": {\n  "x": {\n   "c": 1\n  }\n },\n "d": {\n  "x": {}\n }\n}'
    assert _value_lines(text) == {(): 1, ("d",): 7, ("d", "x"): 8}      # nothing left of the first "d"


def test_problems_in_a_file_of_several_lines_name_the_line():
    """Each problem names the line its value starts on; a missing key the line of the object that
    lacks it; a one-line file names no line."""
    doc = three_by_three()
    d = _support(doc)
    d["classes"]["BILLING"] = ["card_expired"]
    del d["title"]
    d["asymmetric_costs"]["ACCOUNT"]["ACCOUNT"] = 1.0
    text = as_text(doc)
    rows = text.splitlines()

    def line_of(fragment: str, after: int = 0) -> int:
        return next(i for i, row in enumerate(rows, 1) if i > after and fragment in row)

    support = line_of('"support": {')
    billing = line_of('"BILLING"')
    diagonal = line_of('"ACCOUNT"', line_of('"ACCOUNT"', line_of('"asymmetric_costs"')))   # row ACCOUNT, column ACCOUNT
    assert problems_of(text)[:3] == [          # then the descriptions of the mechanisms cut from BILLING
        f"{SRC}: {D}.title: required key is missing (line {support})",
        f"{SRC}: {D}.classes.BILLING: 1 mechanism, need at least 2 (line {billing})",
        f"{SRC}: {D}.asymmetric_costs.ACCOUNT.ACCOUNT: the diagonal must be 0 (got 1.0) (line {diagonal})",
    ]
    assert all("(line" not in p for p in problems_of(json.dumps(doc)))


def test_bytes_must_be_utf8():
    assert decode_ontology_bytes(b"\xef\xbb\xbf{}", SRC) == "{}"
    with pytest.raises(OntologyError) as exc:
        decode_ontology_bytes(b'{"a": "\xff"}', SRC)
    assert exc.value.problems == [f"{SRC}: not valid UTF-8 (byte 7)"]


def test_sha256_is_stable_under_whitespace_and_key_order():
    doc = three_by_three()
    compact, pretty = json.dumps(doc, separators=(",", ":")), json.dumps(doc, indent=4)
    reordered = json.dumps(dict(reversed(list(doc.items()))), indent=1)
    shas = {ontology_sha256(t) for t in (compact, pretty, reordered)}
    assert len(shas) == 1
    assert parse_ontology(pretty).sha256 == parse_ontology(compact).sha256 == shas.pop()
    changed = three_by_three()
    _support(changed)["title"] = "Another title"
    assert parse_ontology(json.dumps(changed)).sha256 != parse_ontology(compact).sha256


@pytest.mark.parametrize("make", [three_by_three, five_by_two, lending], ids=["3x3", "5x2", "lending"])
def test_round_trip_through_to_json(make):
    first = parse_ontology(as_text(make()), "a.json")
    again = parse_ontology(first.to_json(), "b.json")
    assert again == first and again.sha256 == first.sha256
    assert json.loads(first.to_json()) == make()
    assert first.to_json() == json.dumps(make(), sort_keys=True, separators=(",", ":"))


def test_to_json_of_a_hand_built_ontology_round_trips():
    built = parse_ontology(as_text(three_by_three()))
    bare = Ontology(domains=dict(built.domains), authored_costs=dict(built.authored_costs),
                    cost_profiles={k: dict(v) for k, v in built.cost_profiles.items()})
    again = parse_ontology(bare.to_json())
    assert again.domains == built.domains and again.cost_profiles == built.cost_profiles
    assert again.sha256 == ontology_sha256(bare.to_json())


def test_the_fixtures_parse_with_their_shapes():
    small = parse_ontology(as_text(three_by_three()))
    assert list(small.domains) == ["support"]
    dom = small.domain("support")
    assert dom.classes == ("ACCOUNT", "BILLING", "OUTAGE") and len(dom.mechanisms) == 9
    assert dom.refusal_labels[-1] == "WITHHOLD" and list(dom.refusal_labels[:-1]) == sorted(dom.mechanisms)
    assert dom.describe("card_expired") == "Because of card expired."
    assert small.authored_costs == load_ontology().authored_costs           # TUPLE defaults
    assert small.cost_profiles == load_ontology().cost_profiles
    wide = parse_ontology(as_text(five_by_two()))
    assert len(wide.domain("claims").classes) == 5 and len(wide.domain("claims").mechanisms) == 10
    assert wide.authored_costs["wrong_route"] == 8.0


def test_a_profile_naming_a_missing_class_is_a_note_not_an_error():
    wide = parse_ontology(as_text(five_by_two()), SRC)
    assert wide.notes == (f"{SRC}: cost_profiles.missing_double: class 'NOT_A_CLASS' is not a class of domain "
                          "'claims'; there the profile scales no asymmetric column",)
    assert wide.profile_column("missing_double", "claims") is None
    assert wide.profile_column("fraud_double", "claims") == "FRAUD"
    assert wide.profile_column("review_half", "claims") is None
    tuple_ = load_ontology()
    assert tuple_.notes == ()
    assert tuple_.profile_column("asymmetric_class0_double", "equipment") == "LINK"


def test_the_example_lending_ontology_parses():
    lend = read_ontology_file(LENDING_PATH)
    assert 2 <= len(lend.domains) <= 3
    for d in lend.domains.values():
        assert 3 <= len(d.classes) <= 6
        assert all(2 <= len(ms) <= 4 for ms in d.mechanisms_by_class.values())
        assert set(d.descriptions) == set(d.classes) | set(d.mechanisms)
    assert lend.source == str(LENDING_PATH)


def _old_loader() -> dict:
    """The values the loader before issue 14 built from the packaged file (what the engine reads)."""
    raw = json.loads(resources.files("qlb.data").joinpath("ontology.json").read_text("utf-8"))
    domains = {}
    for name, d in raw["domains"].items():
        classes = tuple(sorted(d["classes"]))
        domains[name] = dict(
            name=name, title=d["title"], recipient_role=d["recipient_role"],
            intake_channels=tuple(d["intake_channels"]), operating_windows=tuple(d["operating_windows"]),
            classes=classes, mechanisms_by_class={c: tuple(sorted(d["classes"][c])) for c in classes},
            checks=dict(d["checks"]), asymmetric_costs={a: dict(v) for a, v in d["asymmetric_costs"].items()},
            may_receive=d.get("may_receive", ""), must_not_receive=d.get("must_not_receive", ""),
            descriptions=dict(d.get("descriptions", {})))
    return {"domains": domains, "authored_costs": dict(raw["authored_costs"]),
            "cost_profiles": {k: dict(v) for k, v in raw["cost_profiles"].items()}}


def test_the_packaged_tuple_ontology_passes_and_equals_the_old_loader():
    onto = load_ontology()
    assert onto is load_ontology()                       # cached
    old = _old_loader()
    assert list(onto.domains) == list(old["domains"]) == ["delivery", "equipment", "it"]
    for name, fields in old["domains"].items():
        dom = onto.domain(name)
        for key, value in fields.items():
            got = getattr(dom, key)
            assert got == value, (name, key)
            if key in ("mechanisms_by_class", "asymmetric_costs"):
                assert list(got) == list(value), (name, key)    # same order
    assert dict(onto.authored_costs) == old["authored_costs"]
    assert {k: dict(v) for k, v in onto.cost_profiles.items()} == old["cost_profiles"]
    assert list(onto.cost_profiles) == list(old["cost_profiles"])
    assert onto.domain("delivery").mechanisms[:2] == ("crush_in_transit", "forklift_puncture")
    assert len(onto.domain("it").refusal_labels) == 17


def test_the_tuple_version_is_the_packaged_files():
    text = resources.files("qlb.data").joinpath("ontology.json").read_text("utf-8")
    assert tuple_ontology_sha256() == ontology_sha256(text) == load_ontology().sha256
    assert onto_mod.TUPLE_ONTOLOGY_SHA256 == tuple_ontology_sha256()
    assert len(tuple_ontology_sha256()) == 64


def test_mappings_stay_read_only():
    dom = load_ontology().domain("delivery")
    with pytest.raises(TypeError):
        dom.checks["check_x"] = "DELAY"          # type: ignore[index]
    with pytest.raises(TypeError):
        dom.asymmetric_costs["DELAY"]["DELAY"] = 1.0   # type: ignore[index]


@pytest.mark.parametrize("make", [load_ontology, lambda: parse_ontology(as_text(five_by_two()), "x.json")],
                         ids=["tuple", "5x2"])
def test_ontologies_and_domains_pickle(make):
    onto = make()
    back = pickle.loads(pickle.dumps(onto))
    assert back == onto
    assert back.sha256 == onto.sha256 and back.source == onto.source and back.notes == onto.notes
    assert back.to_json() == onto.to_json()
    for name, dom in onto.domains.items():
        assert pickle.loads(pickle.dumps(dom)) == dom
        assert back.domain(name).mechanisms == dom.mechanisms
    assert copy.deepcopy(onto) == onto


@pytest.mark.parametrize("depth", [500, 700, 5000])
def test_a_deeply_nested_file_is_one_problem_not_a_crash(depth):
    """A 1 KB upload nested 500 deep passed json.loads but crashed the duplicate-key walk (a
    traceback on the Data page)."""
    assert problems_of('{"domains":' + "[" * depth + "]" * depth + "}") == [f"{SRC}: not valid JSON: nested too deeply"]


@pytest.mark.parametrize("identifier, label", [
    ("missed_transfer", "Missed transfer"), ("APPROVE", "Approve"), ("IT_OUTAGE", "IT outage"),
    ("ID_MISMATCH", "ID mismatch"), ("OUT_OF_STOCK", "Out of stock"), ("NO_SHOW", "No show"),
    ("SMS_DELIVERY", "SMS delivery"), ("check_KYC_docs", "Check KYC docs"), ("DNS_failure", "DNS failure"),
    ("MY_ACCOUNT", "My account"), ("US_CITIZEN", "US citizen"),
])
def test_an_undescribed_label_reads_as_words_and_keeps_its_acronyms(identifier, label):
    """Where an own ontology describes no label, the pages show its identifier as words: acronyms keep their
    capitals (an all-capitals class ``IT_OUTAGE`` read "It outage")."""
    from qlb.records.ontology import humanise
    assert humanise(identifier) == label


def test_a_typoed_key_is_unknown_with_the_key_it_was_meant_to_be():
    doc = three_by_three()
    domain = doc["domains"]["support"]
    domain["recipient_rol"] = domain.pop("recipient_role")
    doc["cost_profile"] = {}
    doc["domains"]["support"]["zzz"] = 1
    with pytest.raises(OntologyError) as exc:
        parse_ontology(as_text(doc), "own.json")
    text = str(exc.value)
    assert "own.json: domains.support.recipient_rol: unknown key (did you mean 'recipient_role'?)" in text
    assert "own.json: cost_profile: unknown key (did you mean 'cost_profiles'?)" in text
    assert "domains.support.zzz: unknown key (line" in text            # nothing close: no suggestion


def test_the_suggestion_comes_from_the_keys_allowed_where_the_typo_is():
    """A typo is compared with its own object's keys: `review` in a profile is `review_x`, in the authored costs
    `review_x` is `review` (it had suggested the rejected key itself)."""
    doc = three_by_three()
    doc["cost_profiles"] = {"authored": {}, "cheap": {"review": 0.5}}
    doc["authored_costs"] = {"wrong_route": 10, "review": 2, "check": 0.4, "unavailable_fallback": "review",
                             "review_x": 1}
    doc["domains"]["support"]["check"] = {}
    with pytest.raises(OntologyError) as exc:
        parse_ontology(as_text(doc), "own.json")
    text = str(exc.value)
    assert "cost_profiles.cheap.review: unknown key (did you mean 'review_x'?)" in text
    assert "authored_costs.review_x: unknown key (did you mean 'review'?)" in text
    assert "domains.support.check: unknown key (did you mean 'checks'?)" in text


def test_a_null_multiplier_is_a_problem_and_a_reused_tuple_profile_name_a_note():
    doc = three_by_three()
    doc["cost_profiles"] = {"authored": {}, "mine": {"inspect_x": None}}
    with pytest.raises(OntologyError, match=r"cost_profiles\.mine\.inspect_x: must be a number \(got None\)"):
        parse_ontology(as_text(doc), "own.json")
    doc["cost_profiles"] = {"authored": {}, "review_half": {"check_x": 3}, "check_quarter": {"check_x": 0.25}}
    notes = parse_ontology(as_text(doc), "own.json").notes
    assert notes == ("own.json: cost_profiles.review_half: TUPLE has a profile of this name with other multipliers; "
                     "the pages say what this one changes, but a name of your own avoids reading it as TUPLE's",)
