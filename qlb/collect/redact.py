"""Credentials out of URLs before anything is stored, shown or printed.

A key can ride in an endpoint URL (``https://user:KEY@host/...`` or ``?key=KEY``), and httpx puts
the full URL into its error messages. ``redact`` masks both in any text. A provider's error body
may echo the key it was sent, whole or in part ("Incorrect API key provided: sk-ab***wxyz");
``without_key`` masks such echoes before a body is archived."""
from __future__ import annotations

import re

MASK = "***"
# user-info runs to the last "@" before the path: a password typed with an "@" in it is masked whole
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s'\"]+@")
# a value runs to the next "&", "#", space or quote: "/" is legal inside a query value (a signature may hold one),
# so a URL is masked as qlb builds it, its query after the path (``qlb.collect.transports.endpoint_url``)
_SECRET_PARAM = re.compile(r"(?P<name>[?&;](?:[A-Za-z0-9_.-]*?)(?:key|token|secret|password|passwd|pwd|sig|signature|"
                           r"auth|credential)[A-Za-z0-9_.-]*=)[^&#\s'\"]*", re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with the user-info of every URL and the values of credential-like query
    parameters (``key``, ``api-key``, ``token``, ``secret``, ``password``, ``sig``, ``auth``...)
    replaced by ``***``."""
    text = _USERINFO.sub(lambda m: m.group("scheme") + MASK + "@", text)
    return _SECRET_PARAM.sub(lambda m: m.group("name") + MASK, text)


_TYPED_AUTHORITY = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)?(?P<secret>.*)@", re.DOTALL)


def redact_typed_url(url: str) -> str:
    """A URL as a user typed it (``--base-url``), for messages: ``redact``, and everything before its
    last ``@`` masked whether or not a scheme is there and whatever the password holds (``/``, ``#``,
    ``?``: ``user:secret@host/v1``, ``http://u:p#ss@host/v1``), so that a URL too broken to parse
    still shows no credential."""
    return redact(_TYPED_AUTHORITY.sub(lambda m: (m.group("scheme") or "") + MASK + "@", url))


def redact_words(words: list[str]) -> tuple[list[str], bool]:
    """``words`` (a command line) each redacted (the value of ``--base-url`` as ``redact_typed_url``),
    and whether any credential was masked."""
    shown = [redact_typed_url(w) if i and words[i - 1] == "--base-url" else redact(w) for i, w in enumerate(words)]
    return shown, shown != list(words)


_WORD = re.compile(r"[A-Za-z0-9_\-*.~+/=]{6,}")


def without_key(text: str, key: str | None) -> str:
    """``text`` with every word that holds the key or any 8 characters of it in a row, or ends with its last 4
    (a provider's partial echo, ``sk-proj-****WXYZ``, of a key of 16 or more characters), replaced by ``***``; a word's
    edge punctuation (``api_key=``, ``/``, a full stop) does not hide it. A key shorter than 8 characters is masked
    where it appears whole."""
    if not key or len(key) < 8:
        return text.replace(key, MASK) if key else text
    pieces = {key[i:i + 8] for i in range(len(key) - 7)}
    tail = key[-4:] if len(key) >= 16 else None

    def mask(m: re.Match) -> str:
        word = m.group()
        core = word.strip(".=/+~*-_")
        if any(p in word for p in pieces) or (tail is not None and core.endswith(tail)
                                              and ("*" in word or word.startswith(".."))):
            return MASK
        return word

    return _WORD.sub(mask, text.replace(key, MASK))
