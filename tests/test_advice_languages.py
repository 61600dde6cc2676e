"""The advice's Japanese and Hebrew sentences say what the English says (rules/advice.yaml):
as many sentences, and no fact filled in that the English does not name."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ADVICE: dict[str, Any] = yaml.safe_load(
    (Path(__file__).resolve().parent.parent / "rules" / "advice.yaml").read_text(encoding="utf-8")
)
_SLOT = re.compile(r"\{(\w+)\}")
# Placeholders an English sentence fills that its translations leave out on purpose: an
# English "at file:line (fn)" phrase set inside Japanese or Hebrew grammar would read badly.
_LEFT_OUT = {"user_code_exception.exception-tail": {"at"}}


def _cases() -> list[tuple[str, str]]:
    return [(key, lang) for key, langs in ADVICE.items() for lang in langs if lang != "en"]


@pytest.mark.parametrize(("key", "lang"), _cases(), ids=lambda v: str(v))
def test_a_translation_says_what_the_english_says(key: str, lang: str) -> None:
    english, other = ADVICE[key]["en"], ADVICE[key][lang]
    assert len(other) == len(english), (key, lang)
    for en_line, line in zip(english, other, strict=True):
        slots = set(_SLOT.findall(line))
        expected = set(_SLOT.findall(en_line)) - _LEFT_OUT.get(key, set())
        assert slots == expected, (key, lang, en_line, line)
