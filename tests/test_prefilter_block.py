"""The block prefilter's work per block (issue 32): one search of a chatty block, its words
reused, the cheap normalisation of texts without whitespace runs; the same answers."""

from __future__ import annotations

import random

import pytest

from analyzer.rulebook import RuleBook
from analyzer.rulebook.prefilter import LONG_TEXT, Prefilter

pytest.importorskip("hyperscan")


@pytest.fixture(scope="module")
def book() -> RuleBook:
    return RuleBook.load()


def _chatty_block(prefilter: Prefilter, count: int, seed: int) -> list[str]:
    """``count`` short texts, most holding a rule word or two: hundreds of words a block."""
    rng = random.Random(seed)
    words = sorted(prefilter.literals)
    return [
        f"step {n}: {rng.choice(words).upper()} rate {rng.random():.3f} {rng.choice(words)} █"
        if rng.random() < 0.8
        else f"step {n}: loss {rng.random():.3f}"
        for n in range(count)
    ]


def test_a_chatty_block_is_searched_once(book: RuleBook, monkeypatch: pytest.MonkeyPatch) -> None:
    # Hundreds of words in short texts: one search, not one stopped and then another.
    prefilter = book._prefilter
    texts = _chatty_block(prefilter, 700, 1)
    expected = [i for i, text in enumerate(texts) if prefilter.candidates(text)]
    assert len(expected) > 400
    monkeypatch.setattr(Prefilter, "_select_long_apart", None)
    assert prefilter.select(texts) == expected


@pytest.mark.parametrize("extra", [0, 1, 2])
def test_long_texts_by_bytes_are_searched_apart(book: RuleBook, extra: int) -> None:
    # A text is long by its UTF-8 bytes: "█" is three of them.
    prefilter = book._prefilter
    texts = _chatty_block(prefilter, 300, extra)
    texts.insert(7, "Traceback error " + "█" * (LONG_TEXT // 3 - 5 + extra))
    texts.insert(9, "x" * (LONG_TEXT - 6 + extra) + " OOM.")
    texts.insert(20, "y" * (LONG_TEXT + extra))
    expected = [i for i, text in enumerate(texts) if prefilter.candidates(text)]
    assert {7, 9} <= set(expected)
    assert prefilter.select(texts) == expected


def test_texts_by_template_groups_the_pairs(book: RuleBook) -> None:
    check = book._prefilter._native_check()
    assert check is not None
    rng = random.Random(5)
    words = len(check.templates_of)
    pairs = [(rng.randrange(words), rng.randrange(50)) for _ in range(2000)]
    expected: dict[int, set[int]] = {}
    for word, text in pairs:
        for template in check.templates_of[word]:
            expected.setdefault(template, set()).add(text)
    found = check._texts_by_template(iter(pairs))
    assert found == {template: sorted(texts) for template, texts in expected.items()}
    assert check._texts_by_template([]) == {}
