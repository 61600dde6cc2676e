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


def _matching_block(n: int) -> list[str]:
    # Texts a rule matches, each new (no remembered answer), among training chatter.
    return [
        text
        for step in range(n)
        for text in (f"RuntimeError: CUDA error at step {step}", f"loss {step}")
    ]


def test_a_dense_log_searches_a_sample_per_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    # Where most new texts match, the block search would repeat match()'s work: after a pause
    # (and at the start) a sample of a block is searched first, and the rest only where the
    # sample is not mostly matches. What is kept is the same either way.
    from analyzer.rulebook import book as book_module

    fresh = RuleBook.load()
    searched: list[int] = []
    confirm = Prefilter.confirm

    def counted(self: Prefilter, texts: list[str], hits: list[int], timeout: float) -> list[int]:
        searched.append(len(hits))
        return confirm(self, texts, hits, timeout)

    monkeypatch.setattr(Prefilter, "confirm", counted)
    sample, pause = book_module._CONFIRM_SAMPLE, book_module._CONFIRM_PAUSE
    for block in range(pause + 2):
        texts = _matching_block(100 * (block + 1))[-200:]
        kept = fresh.may_match_texts(texts)
        assert {i for i, text in enumerate(texts) if fresh.match(text)} <= set(kept)
    # The first block's sample, nothing during the pause, the sample after it.
    assert searched == [sample, sample]
    # A block of near misses after a pause: its sample shows it, the rest is searched too.
    searched.clear()
    fresh._skip_confirm[0] = 0
    near = [f"eval step {n}: error rate 0.0{n}, exceptions 0" for n in range(3 * sample)]
    assert fresh.may_match_texts(near) == []
    assert searched == [sample, 2 * sample]
    # Then a whole block is searched at once, as long as most of it does not match.
    searched.clear()
    near = [f"eval step {n}: error rate 0.0{n}, exceptions 1" for n in range(3 * sample)]
    assert fresh.may_match_texts(near) == []
    assert searched == [3 * sample]
