"""Credentials in URLs are masked before anything is stored or shown."""
from __future__ import annotations

from qlb.collect.redact import redact
from qlb.runs.collect import CollectOptions


def test_userinfo_and_key_parameters_are_masked_and_the_rest_kept():
    text = ("Client error '401 Unauthorized' for url "
            "'https://user:sk-SECRET@api.example/v1/chat/completions?key=sk-Q&api-key=AB&model=x&x_token=T'")
    out = redact(text)
    assert "SECRET" not in out and "sk-Q" not in out and "=AB" not in out and "=T'" not in out
    assert out == ("Client error '401 Unauthorized' for url "
                   "'https://***@api.example/v1/chat/completions?key=***&api-key=***&model=x&x_token=***'")
    assert redact("http://127.0.0.1:8080/v1?page=2") == "http://127.0.0.1:8080/v1?page=2"


def test_the_stored_endpoint_carries_no_key():
    opts = CollectOptions(dataset_id="d", model="m", probe="native", transport="openai",
                          base_url="https://u:sk-SECRET@api.example/v1?key=sk-SECRET2", endpoint_model="e")
    assert opts.endpoint == "https://***@api.example/v1/chat/completions?key=***"


def test_only_the_value_of_a_key_parameter_is_masked_and_the_rest_of_the_url_kept():
    opts = CollectOptions(dataset_id="d", model="m", probe="native", transport="openai",
                          base_url="http://127.0.0.1:8799/v1?api_key=SuperSecretPw99&api-version=2", endpoint_model="e")
    assert opts.endpoint == "http://127.0.0.1:8799/v1/chat/completions?api_key=***&api-version=2"


def test_a_password_holding_an_at_sign_is_masked_whole():
    assert redact("http://alice:p@ss@127.0.0.1:8799/v1") == "http://***@127.0.0.1:8799/v1"
    assert redact("see http://h/v1 or write to me@example.org") == "see http://h/v1 or write to me@example.org"


def test_an_echoed_key_is_masked_whole_or_in_part_and_other_words_kept():
    from qlb.collect.redact import without_key
    key = "sk-live-0123456789abcdefWXYZ"
    body = f"bad key {key}, shown as sk-live-****WXYZ or ****WXYZ; see https://example.org/keys for 2024 help"
    assert without_key(body, key) == "bad key ***, shown as *** or ***; see https://example.org/keys for 2024 help"
    assert without_key(body, None) == body
    assert without_key("short k3y here", "k3y") == "short *** here"       # a short key: the key itself only


def test_an_echoed_key_is_found_behind_punctuation_and_in_pieces():
    from qlb.collect.redact import without_key
    key = "sk-abc123DEF456ghi789JKLwxyz"
    assert without_key("Invalid key: api_key=sk-abc123DEF4...", key) == "Invalid key: ***"
    assert without_key("Key ending in ...wxyz.", key) == "Key ending in ***"
    assert without_key("Authorization=Bearer/sk-abc123DEF456ghi7", key) == "***"
    assert without_key("see the information here", key) == "see the information here"   # a word is not a key


def test_a_typed_url_too_broken_to_parse_shows_no_credential():
    from qlb.collect.redact import redact_typed_url, redact_words
    from qlb.collect.transports import base_url_problem
    for url in ("user:s3cretPw@host:8000/v1", "http://u:p#s3cretPw@host/v1", "http://u:p/s3cretPw@host/v1"):
        problem = base_url_problem(url, "http://HOST:PORT/v1")
        assert problem is not None and "s3cretPw" not in problem, problem
        assert "s3cretPw" not in redact_typed_url(url)
    assert redact_words(["--base-url", "http://u:p#s3cretPw@host/v1", "--model", "m@x"]) == (
        ["--base-url", "http://***@host/v1", "--model", "m@x"], True)


def test_an_error_page_with_an_empty_title_gives_its_heading():
    from qlb.collect.transports import error_message
    assert error_message("<html><title></title><h1>502 Bad Gateway</h1></html>") == "502 Bad Gateway"
    assert error_message("<html><title> </title></html>") is None
