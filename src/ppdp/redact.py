"""Credentials never leave ppdp in clear.

A database URL may carry a password (``postgresql://user:secret@host/db``, or
``?password=secret``). ppdp needs it to connect, but everything it stores (``_ppdp.runs.spec``,
the error column, jobs) or prints (errors, ``show``, ``runs``, ``job history``, certificates)
goes through these functions first: the password becomes ``***``. docs/guides/postgres.md says how to pass
credentials without the URL (PGPASSWORD, ~/.pgpass, a service file), which keeps them out of
shell history and process lists too.
"""

from __future__ import annotations

import re
from typing import Any

MASK = "***"
# URL query options that carry a secret (libpq's connection parameters and common spellings).
SECRET_OPTIONS = frozenset({"password", "passwd", "pwd", "sslpassword", "token", "secret", "access_token"})
# scheme://user:password@ : the password part stops at the last '@' before the host.
_USERINFO = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@'\"]*):(?P<secret>[^\s'\"]*)@(?=[^\s@'\"]*(?:[\s'\"]|$))")
# ?password=... in a URL, or password=... in a libpq keyword string ("host=h password=...").
_OPTION = re.compile(r"(?P<head>(?:^|[?&;\s])(?:" + "|".join(sorted(SECRET_OPTIONS)) + r")=)(?P<secret>[^&\s'\"]*)", re.IGNORECASE)


def redact_url(url: str) -> str:
    """``url`` with its password (user-info or a secret query option) replaced by ``***``."""
    return redact_text(url)


def redact_text(text: str) -> str:
    """Every URL password inside free text (an error message, a log line) replaced by ``***``."""
    if "://" not in text and "=" not in text:  # nothing that could hold a credential
        return text
    text = _USERINFO.sub(lambda m: f"{m['head']}:{MASK}@", text)
    return _OPTION.sub(lambda m: f"{m['head']}{MASK}", text)


def redact_value(value: Any) -> Any:
    """A JSON-like value (the stored spec, a run's solution) with every string redacted."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v) for v in value]
    return value

