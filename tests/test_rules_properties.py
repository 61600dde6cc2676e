"""Invariants of normalisation, matching and the prefilter (Hypothesis)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.classify.collector import collect
from analyzer.ingest import open_sources
from analyzer.rulebook import RuleBook, normalize
from analyzer.rulebook.model import MatchExample, Rule
from analyzer.rulebook.normalize import INVISIBLE, normalize_with_offsets

BOOK = RuleBook.load()
EXAMPLES = [(rule, example) for rule in BOOK.rules for example in rule.match_examples]
# Text the way damaged logs have it: bidi marks, full-width forms, odd spaces.
NASTY = st.text(
    alphabet=st.one_of(
        st.characters(),
        st.sampled_from(sorted(INVISIBLE) + list("１２：．\u3000\n\t \u00a8ﾞ\u0301")),
    ),
    max_size=200,
)


@given(NASTY)
def test_normalize_is_idempotent(text: str) -> None:
    once = normalize(text)
    assert normalize(once) == once


@given(NASTY)
def test_offsets_point_into_the_original(text: str) -> None:
    normalized, offsets = normalize_with_offsets(text)
    assert normalized == normalize(text)
    assert len(offsets) == len(normalized) + 1
    assert list(offsets) == sorted(offsets)
    assert all(0 <= o <= len(text) for o in offsets)


TEMPLATE_WORDS = sorted({w for r in BOOK.rules for t in r.templates for w in t.text.split()})


@settings(max_examples=300)
@given(st.one_of(NASTY, st.lists(st.sampled_from(TEMPLATE_WORDS) | NASTY).map(" ".join)))
def test_match_never_raises(text: str) -> None:
    matches = BOOK.match(text)
    if matches:
        assert BOOK.may_match_texts([text]) == [0]


@settings(max_examples=200)
@given(
    st.sampled_from(EXAMPLES),
    st.booleans(),
    st.text(max_size=30),
    st.sampled_from(["textPayload", "message"]),
)
def test_prefilter_never_rejects_a_matching_line(
    case: tuple[Rule, MatchExample], ascii_only: bool, noise: str, key: str
) -> None:
    """The fast scan (sink JSONL, the prefilter over a block of decoded texts) finds every
    rule example, whatever else the line holds and however it is escaped."""
    rule, example = case
    text = example.text
    payload = {"textPayload": text} if key == "textPayload" else {"jsonPayload": {key: text}}
    entry = {
        "insertId": "x",
        **payload,
        "labels": {"noise": noise},
        "resource": {"type": "ml_job", "labels": {"job_id": "1", "task_name": "workerpool0-0"}},
        "severity": "ERROR",
        "timestamp": "2024-01-01T00:00:00.000000000Z",
    }
    chatter = {**entry, "textPayload": "step 1", "insertId": "y"}
    chatter.pop("jsonPayload", None)
    lines = [json.dumps(e, ensure_ascii=ascii_only) for e in (chatter, entry, chatter)]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "sink.jsonl")
        path.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass") + b"\n")
        sources = open_sources([str(path)])
        logs, _ = collect(sources, BOOK)
    assert any(e.match.rule == rule.id for log in logs for e in log.events)


SPACE_DAMAGE = st.sampled_from([" ", "  ", "\n", " \u200e", "\u200f ", " \r\n "])


@settings(max_examples=300)
@given(st.sampled_from(EXAMPLES), st.data())
def test_whitespace_and_bidi_damage_keeps_the_match(
    case: tuple[Rule, MatchExample], data: st.DataObject
) -> None:
    rule, example = case
    words = example.text.split(" ")
    damaged = words[0]
    for word in words[1:]:
        damaged += data.draw(SPACE_DAMAGE) + word
    want = [m for m in BOOK.match(example.text) if m.rule == rule.id]
    got = [m for m in BOOK.match(damaged) if m.rule == rule.id]
    assert len(got) == len(want)
    for before, after in zip(want, got, strict=True):
        assert {k: normalize(str(v)) for k, v in after.fields.items()} == {
            k: normalize(str(v)) for k, v in before.fields.items()
        }


@given(st.text(alphabet=st.sampled_from(list("ab .:\t\n\r\x0b\x0c\x1c\x1f0")), max_size=60))
def test_ascii_fast_path_offsets_equal_the_general_ones(text: str) -> None:
    from analyzer.rulebook.normalize import _ascii_with_offsets

    normalized, offsets = _ascii_with_offsets(text)
    # The general algorithm, run on the same text with the ASCII shortcut out of the way.
    out: list[str] = []
    expected: list[int] = []
    pending = -1
    for index, char in enumerate(text):
        if char.isspace():
            pending = index if pending < 0 else pending
            continue
        if pending >= 0 and out:
            out.append(" ")
            expected.append(pending)
        pending = -1
        out.append(char)
        expected.append(index)
    expected.append(len(text))
    assert (normalized, list(offsets)) == ("".join(out), expected)
