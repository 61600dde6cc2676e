"""Secrets never printed: tokens, passwords and credentials cut out of any message.

A server's error body may echo the request's ``Authorization: Bearer ...`` header, a URL given
as ``--api-endpoint`` may carry ``user:password@``, and a library's exception text may hold an
``access_token``, and a job's own output anything (a service account key, a cloud token).
:func:`redact` replaces each secret with ``[redacted]``, keeping what names it, so a message
still says what went wrong. Log text is redacted once, where it enters an output: the text,
Markdown and HTML reports through :mod:`analyzer.report.controls`, the JSON, JSONL, YAML and
CSV documents and the frames through :func:`shown_tree`; ``--no-redact`` leaves log text raw.
The CLI's own messages and the ``JOBDOCTOR_DEBUG=1`` traceback are always redacted.
"""

from __future__ import annotations

import re
from typing import TypeVar, cast

T = TypeVar("T")

REDACTED = "[redacted]"

# The shapes of credentials that people leak into logs, after gitleaks' published rules
# (github.com/gitleaks/gitleaks, config/gitleaks.toml: private-key, gcp-api-key, aws-access-token,
# github-pat / -oauth / -app-token / -fine-grained-pat, gitlab-pat, slack-*-token, huggingface-
# access-token, jwt) and detect-secrets' keyword plugin; each replaced whole, keeping what names
# it so that a message still says what went wrong.
_SECRETS = (
    # A PEM private key, from its BEGIN line to its END line, also inside a JSON string whose
    # line ends are escaped ("\n"); a block cut before its END line, to the end of its base64.
    (
        re.compile(
            r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[\s\S]*?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
            r"|(?:\s|\\n|\\r|[A-Za-z0-9+/=:-])*)"
        ),
        REDACTED,
    ),
    # user:password@ (or a lone token@) in any URL.
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@?#]*@"), rf"\1{REDACTED}@"),
    # An Authorization header or field, whatever its scheme (Bearer, Basic, token, AWS4-HMAC-
    # SHA256 Credential=...): the rest of the value.
    (
        re.compile(r"""(?i)(\bauthorization\b["']?\s*[:=]\s*["']?)[^\r\n"'}]+"""),
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
    # access_token=..., "refresh_token": "...", client_secret, password, api_key, a service
    # account key's private_key_id, AWS's secret access key and session token.
    (
        re.compile(
            r"""(?i)\b((?:access|refresh|id)_token|client_secret|password|passwd|api_?key|"""
            r"""private_key(?:_id)?|(?:aws_)?secret_access_key|aws_session_token|secret|"""
            r"""token)(["']?\s*[:=]\s*["']?)[^\s"'&,;}]+"""
        ),
        rf"\1\2{REDACTED}",
    ),
    # Tokens recognisable wherever they stand: Google OAuth access and refresh tokens and API
    # keys, AWS access key ids, GitHub, GitLab, Slack and Hugging Face tokens, JWTs.
    (re.compile(r"\bya29\.[A-Za-z0-9._-]+"), REDACTED),
    (re.compile(r"\b1//[A-Za-z0-9._-]{20,}"), REDACTED),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), REDACTED),
    (re.compile(r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"), REDACTED),
    (re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b"), REDACTED),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,255}"), REDACTED),
    (re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), REDACTED),
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), REDACTED),
    (re.compile(r"\bxapp-\d-[A-Za-z0-9-]{10,}"), REDACTED),
    (re.compile(r"\bhf_[A-Za-z0-9]{30,}"), REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"), REDACTED),
)

# What every pattern above needs in a text (case aside): most text has none of these, and is
# given back after this one scan.
_TRIGGER = re.compile(
    r"(?i)-----BEGIN|://|authorization|bearer|basic|token|secret|passw|api_?key|private_key|"
    r"ya29\.|1//|AIza|A3T|AKIA|ASIA|ABIA|ACCA|gh[pousr]_|github_pat_|glpat-|xox|xapp-|hf_|eyJ"
)

# Whether log text is redacted on its way into an output (``--no-redact`` turns it off for a
# user who wants the raw text; jobdoctor's own messages about credentials are always redacted).
_REDACTING = [True]


def redact(text: str) -> str:
    """``text`` with every token, password and credential in it replaced by ``[redacted]``."""
    if _TRIGGER.search(text) is None:
        return text
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text


def set_redaction(on: bool) -> None:
    """Redact log text in every output (the default), or leave it raw (``--no-redact``)."""
    _REDACTING[0] = on


def shown(text: str) -> str:
    """Log text as an output shows it: redacted unless ``--no-redact`` was asked for."""
    return redact(text) if _REDACTING[0] else text


def shown_tree(value: T) -> T:
    """``value`` (a document of dicts, lists and scalars, as the JSON, YAML and CSV reports
    write it) with every string in it as :func:`shown` gives it: the one redaction of the
    machine formats."""
    if not _REDACTING[0]:
        return value
    return cast(T, _shown(value))


def _shown(value: object) -> object:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: _shown(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_shown(item) for item in value]
    return value
