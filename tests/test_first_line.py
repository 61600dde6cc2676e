"""The duplicate check's first line of a message is the one str.splitlines() gives."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from analyzer.classify.collector import _FIRST_LINE

_TEXT = st.text(
    alphabet=st.sampled_from(
        [
            "a",
            " ",
            "\t",
            "\n",
            "\r",
            "\x0b",
            "\x0c",
            "\x1c",
            "\x1d",
            "\x1e",
            "\x1f",
            "\x85",
            "\u2028",
            "\u2029",
            "\u0085",
            "é",
            "█",
        ]
    )
    | st.characters(),
    max_size=12,
)


@given(_TEXT)
def test_first_line_is_what_splitlines_gives(text: str) -> None:
    stripped = text.strip()
    expected = stripped.splitlines()[0] if stripped else ""
    found = _FIRST_LINE.match(stripped)
    assert found is not None and found.group() == expected
