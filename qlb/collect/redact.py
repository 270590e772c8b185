"""Credentials out of URLs before anything is stored, shown or printed.

A key can ride in an endpoint URL (``https://user:KEY@host/...`` or ``?key=KEY``), and httpx puts
the full URL into its error messages. ``redact`` masks both in any text."""
from __future__ import annotations

import re

MASK = "***"
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/\s@'\"]+@")
_SECRET_PARAM = re.compile(r"(?P<name>[?&;](?:[A-Za-z0-9_.-]*?)(?:key|token|secret|password|passwd|pwd|sig|signature|"
                           r"auth|credential)[A-Za-z0-9_.-]*=)[^&#\s'\"]*", re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with the user-info of every URL and the values of credential-like query
    parameters (``key``, ``api-key``, ``token``, ``secret``, ``password``, ``sig``, ``auth``...)
    replaced by ``***``."""
    text = _USERINFO.sub(lambda m: m.group("scheme") + MASK + "@", text)
    return _SECRET_PARAM.sub(lambda m: m.group("name") + MASK, text)
