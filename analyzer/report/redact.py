"""Secrets never printed: tokens, passwords and credentials cut out of any message.

A server's error body may echo the request's ``Authorization: Bearer ...`` header, a URL given
as ``--api-endpoint`` may carry ``user:password@``, and a library's exception text may hold an
``access_token``. :func:`redact` replaces each secret with ``[redacted]``, keeping what names
it, so a message still says what went wrong. The CLI passes every line it prints through it,
the ``JOBDOCTOR_DEBUG=1`` traceback included.
"""

from __future__ import annotations

import re

REDACTED = "[redacted]"

_SECRETS = (
    # user:password@ (or a lone token@) in any URL.
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@?#]*@"), rf"\1{REDACTED}@"),
    # An Authorization header or field, whatever its scheme (Bearer, Basic, ...).
    (
        re.compile(r"""(?i)(\bauthorization\b["']?\s*[:=]\s*["']?)(?:[a-z]+\s+)?[^\s"',;}]+"""),
        rf"\1{REDACTED}",
    ),
    # A bearer or basic credential: a word of token characters with a digit or a symbol in
    # it, so that "basic information" stays as it is.
    (
        re.compile(
            r"\b([Bb]earer|Basic)\s+(?=[A-Za-z0-9._~+/=-]*[0-9._~+/=-])[A-Za-z0-9._~+/=-]{8,}"
        ),
        rf"\1 {REDACTED}",
    ),
    # access_token=..., "refresh_token": "...", client_secret, password, api_key.
    (
        re.compile(
            r"""(?i)\b((?:access|refresh|id)_token|client_secret|password|passwd|api_?key|"""
            r"""private_key|token)(["']?\s*[:=]\s*["']?)[^\s"'&,;}]+"""
        ),
        rf"\1\2{REDACTED}",
    ),
    # Google OAuth access tokens and refresh tokens, wherever they stand.
    (re.compile(r"\bya29\.[A-Za-z0-9._-]+"), REDACTED),
    (re.compile(r"\b1//[A-Za-z0-9._-]{20,}"), REDACTED),
)


def redact(text: str) -> str:
    """``text`` with every token, password and credential in it replaced by ``[redacted]``."""
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text
