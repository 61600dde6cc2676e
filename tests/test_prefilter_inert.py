"""The prefilter's caseless UTF-8 search gives the answer of asking text by text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.rulebook import RuleBook
from analyzer.rulebook.normalize import INVISIBLE, fold
from analyzer.rulebook.prefilter import INERT_RANGES, Prefilter

pytest.importorskip("hyperscan")


def test_every_inert_character_leaves_the_probe_alone() -> None:
    # What the caseless search rests on: each character is its own fold and its own lower
    # case (so a text of ASCII and these differs from its probe only in ASCII case).
    for first, last in INERT_RANGES:
        assert 0x80 <= first <= last
        for codepoint in range(first, last + 1):
            char = chr(codepoint)
            assert not 0xD800 <= codepoint <= 0xDFFF
            assert fold(char) == char, hex(codepoint)
            assert char.lower() == char, hex(codepoint)
            assert char not in INVISIBLE, hex(codepoint)


@pytest.fixture(scope="module")
def prefilter() -> Prefilter:
    return RuleBook.load()._prefilter


def _pieces(prefilter: Prefilter) -> st.SearchStrategy[str]:
    words = sorted(prefilter.literals)
    return st.one_of(
        # Rule words in any case, whole or cut short.
        st.sampled_from(words).flatmap(
            lambda word: st.sampled_from([word, word.upper(), word.title(), word[:-1]])
        ),
        # Inert characters: progress bars, kana, Hebrew, emoji, signs.
        st.sampled_from(
            ["█", "▏", "━", "│", "°", "×", "—", "“", "→", "✓", "か", "ア", "日", "ש", "한", "🚀"]
        ),
        # Characters that fold or lower into something else, or are invisible.
        st.sampled_from(
            ["É", "İ", "\u212a", "Σ", "ｆ", "ＯＯＭ", "…", "\u200b", "\u0301", "ß", "ﬁ"]
        ),
        st.sampled_from([" ", "\n", ":", "-", "\t"]),
        st.text(max_size=3),
    )


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_select_equals_asking_text_by_text(prefilter: Prefilter, data: st.DataObject) -> None:
    texts = data.draw(st.lists(st.lists(_pieces(prefilter), max_size=6).map("".join), max_size=12))
    expected = [index for index, text in enumerate(texts) if prefilter.candidates(text)]
    assert prefilter.select(texts) == expected


def test_texts_hyperscan_cannot_take_go_the_plain_way(prefilter: Prefilter) -> None:
    # A lone surrogate cannot be encoded as UTF-8: the block is searched the plain way.
    texts = ["Job failed.", "\ud800 OOM", "plain", "ＯＯＭ", "FAILED █"]
    expected = [index for index, text in enumerate(texts) if prefilter.candidates(text)]
    assert expected == [0, 1, 3, 4]
    assert prefilter.select(texts) == expected


def test_a_wide_text_outside_the_inert_set_is_decided_exactly(prefilter: Prefilter) -> None:
    # "Éxit" holds an É (lower case é): not inert, so it is probed as the plain path does.
    texts = ["Éxception █", "ÉRROR", "ｅｒｒｏｒ", "e\u200brror", "progress █████ 40%"]
    expected = [index for index, text in enumerate(texts) if prefilter.candidates(text)]
    assert prefilter.select(texts) == expected
    assert 2 in expected and 4 not in expected
