"""Log text is untrusted: its control characters made visible before a person's screen.

A log line may carry terminal escape sequences (an OSC 52 clipboard write, a window title, a
screen clear), a ``\\r`` that overwrites what was printed before it, or a bidi override that
shows a line's words in another order than they are. :func:`visible` writes each as the
escape JSON writes (``\\u001b``, ``\\r``), so the terminal, Markdown and stderr reports show
it instead of obeying it; :func:`marked_html` does the same in HTML and marks each one.
Tabs and line ends are kept: they are layout, and reports fold lines themselves. Both also cut
secrets out (:func:`~analyzer.report.redact.shown`): a job that printed its token, a report
pasted into an issue. The machine formats redact through the same module.
"""

from __future__ import annotations

import re

from analyzer.report.redact import shown

# C0 controls but tab and line feed, DEL, C1 controls (0x9b is a one-byte CSI), the bidi
# embeddings, overrides, isolates and marks, and the line and paragraph separators.
_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
_SHORT = {"\r": "\\r", "\b": "\\b", "\f": "\\f", "\x0b": "\\u000b"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _SHORT.get(char) or f"\\u{ord(char):04x}"


def visible(text: str) -> str:
    """``text`` with every control character written as its escape (``\\u001b``) and every
    secret cut out."""
    text = shown(text)
    if _CONTROL.search(text) is None:  # most text: no copy
        return text
    return _CONTROL.sub(_escape, text)


def marked_html(text: str) -> str:
    """``text`` escaped for HTML, each control character shown as a marked escape, every
    secret cut out."""
    from html import escape  # only the HTML report needs it (a JSON run loads no html)

    escaped = escape(shown(text), quote=True)
    if _CONTROL.search(escaped) is None:
        return escaped
    return _CONTROL.sub(
        lambda match: (
            f'<mark class="jd-control" title="control character U+{ord(match.group()):04X}">'
            f"{_escape(match)}</mark>"
        ),
        escaped,
    )


# What a spreadsheet reads as a formula at a cell's start (OWASP's CSV injection advice).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """``value`` as a CSV cell a spreadsheet shows as text: control characters visible,
    secrets cut out, and a leading ``'`` before a text it would take for a formula."""
    if not isinstance(value, str):
        return value
    text = visible(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def one_line(text: str) -> str:
    """A name from the input (a file name, a job id, a project) or a one-line message, as
    :func:`visible` shows it and with its line breaks and tabs escaped too (``\\n``): a name
    never starts a line of its own, so it cannot forge one (issue 31, point 6)."""
    shown_text = visible(text)
    if "\n" not in shown_text and "\t" not in shown_text:
        return shown_text
    return shown_text.replace("\n", "\\n").replace("\t", "\\t")
