"""Near misses (issue 32): texts holding a rule's literal words that no rule matches are left
out of a block's candidates by one search per template (analyzer/rulebook/native.py), and the
fast readers still give what the plain path gives, byte for byte."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.rulebook import RuleBook
from analyzer.rulebook.check import check_rules
from analyzer.rulebook.native import rewrite
from analyzer.rulebook.normalize import normalize
from analyzer.simulate import fleet
from tests.test_fastpath import _same

BOOK = RuleBook.load()
EXAMPLES = [example.text for rule in BOOK.rules for example in rule.match_examples]

# Near misses of the kind: a rule's literal word, no match (each checked below).
NEAR_MISSES = (
    "Error in sitecustomize; set PYTHONVERBOSE for traceback:",
    "step {n} | loss 0.{n} | Out of memory? No (OOM guard: {n} GiB free)",
    "Resources are plentiful in this region (us-central1); quota usage {n}%",
    "eval step {n}: error rate 0.0{n}, exceptions 0",
    "[retry] attempt {n}/5 failed: connection reset by peer; retrying in 2.0s",
    "WARNING: Retrying (Retry(total=4)) after connection broken by 'NewConnectionError"
    '("<HTTPSConnection object at 0x7f{n:x}>: Failed to establish a new connection")\'',
    "Downloading model.safetensors: {n}%|████▌     | 1.2G/2.7G [00:12<00:15, 98.5MB/s]",
    "INFO:root:Running evaluation on {n} examples",
    "checkpoint manager: keeping last 3 checkpoints, next at step {n}",
)
# A retry wrapper's harmless traceback, one line an entry: true matches thinning keeps few of.
TRACEBACK = (
    "Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.10/site-packages/retry/api.py", line 33, in __retry_internal',
    "    return f()",
    "ConnectionError: transient",
)


def _near(n: int) -> list[str]:
    return [text.format(n=n) for text in NEAR_MISSES]


def test_near_misses_hold_words_and_match_nothing() -> None:
    texts = _near(4711)
    assert BOOK._prefilter.select(texts) == list(range(len(texts)))
    assert not any(BOOK.match(text) for text in texts)
    assert BOOK.may_match_texts(texts) == []
    # The true matches among them are kept, in order.
    mixed = [*TRACEBACK, *texts]
    assert BOOK.may_match_texts(mixed) == [0, 1, 3]


def test_no_match_is_remembered() -> None:
    book = RuleBook.load()
    text = _near(1)[0]
    assert book.may_match_texts([text]) == []
    assert book._answers[text] == ()
    assert book.may_match_texts([text, "Job failed."]) == [1]


def test_digit_mask_keeps_rules_of_digit_words() -> None:
    # "403" is a literal word: a text of the same digit mask without it ("404 POST") must not
    # hide the rule from one with it.
    book = RuleBook.load()
    assert book.match("404 POST /upload") == ()
    assert [m.rule for m in book.match("403 POST /upload")] == ["storage.detail.permission-denied"]


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"Disk \w+ is full(?!\s*ok)", "look-around"),
        (r"Disk (?>\s+)full", "atomic group"),
        (r"Disk \s++full", "possessive repeat"),
        (r"Speicher \p{L}+ voll", "cannot parse"),
        (r"(?L)disk", "cannot parse"),
    ],
)
def test_rewrite_refuses_what_joining_changes(pattern: str, why: str) -> None:
    written = rewrite(pattern)
    assert written.source is None and written.reason is not None and why in written.reason


def test_rewrite_anchors_match_at_each_text() -> None:
    written = rewrite(r"\A\s*(?:Job\s*failed(?:\s*\.)?)\s*\Z")
    assert written.source is not None
    import regex

    pattern = regex.compile(written.source)
    assert [m.start() for m in pattern.finditer("x\nJob failed.\nJob failed\ny")] == [2, 14]
    # Shared group names (regex takes them, re does not) and look-arounds that see no line end.
    assert rewrite(r"a(?P<x>1)|b(?P<x>2)").source is not None
    assert rewrite(r"(?<![A-Za-z])NotFoundError").source is not None


_PAD = st.text(alphabet=" \t\n\r\x0b\x1caxz019_-'\":./[]()", max_size=40)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(EXAMPLES),
    st.lists(st.tuples(st.integers(0, 400), _PAD), max_size=3),
    st.lists(st.sampled_from([*EXAMPLES, *_near(7), " ", ""]), max_size=4),
    st.integers(0, 4),
)
def test_block_search_keeps_every_matching_text(
    example: str, pads: list[tuple[int, str]], neighbours: list[str], place: int
) -> None:
    """Whatever is inserted into a rule example and whatever texts stand around it, the rule
    book keeps every text a rule matches (matches may run from one joined text into the
    next; whitespace runs and ends are normalised)."""
    text = example
    for at, pad in pads:
        at = min(at, len(text))
        text = text[:at] + pad + text[at:]
    texts = list(neighbours)
    texts.insert(min(place, len(texts)), text)
    kept = set(BOOK.may_match_texts(texts))
    assert {i for i, t in enumerate(texts) if BOOK.match(t)} <= kept


def test_normalising_a_block_is_normalising_each_text() -> None:
    from analyzer.rulebook.native import _normal_forms

    rng = random.Random(3)
    # Whitespace of every kind, a printable and an unprintable character, inert ones.
    alphabet = " \t\n\x0b\x0c\r\x1c\x1d\x1e\x1fab\x7f█×"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(5000)]
    texts += ["a b", " a", "a ", "a  b", "█ 40%", ""]
    assert _normal_forms(texts) == [normalize(text) for text in texts]


def _near_miss_fleet(path: Path, share: float, *, true_matches: bool, seed: int) -> None:
    """The simulator's fleet with ``share`` of its container lines made near misses (or the
    retry traceback's lines, one an entry)."""
    rng = random.Random(seed)
    lines = []
    placed = 0
    for line in fleet(1_500_000, seed=seed):
        if b'/log_area":"user"' in line and b'"message":"' in line and rng.random() < share:
            entry = json.loads(line)
            if true_matches:
                text = TRACEBACK[placed % len(TRACEBACK)]
            else:
                text = rng.choice(_near(rng.randrange(1, 10_000)))
            entry["jsonPayload"]["message"] = text
            line = (json.dumps(entry, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
            placed += 1
        lines.append(line)
    path.write_bytes(b"".join(lines))


@pytest.mark.parametrize(
    ("share", "true_matches"), [(0.1, False), (0.3, False), (0.5, False), (0.3, True)]
)
def test_near_miss_fleet_reads_as_the_plain_path(
    tmp_path: Path, share: float, true_matches: bool
) -> None:
    path = tmp_path / "nearmiss.jsonl"
    _near_miss_fleet(path, share, true_matches=true_matches, seed=int(share * 10) + true_matches)
    _same([str(path)], RuleBook.load(), processes=2)


def test_user_rules_the_block_search_cannot_take(tmp_path: Path) -> None:
    """A user's rule with a look-ahead that may see a line end: decided in Python, the same
    answers, and ``rules check`` says so."""
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "mine.yaml").write_text(
        "- id: mine.quota\n"
        "  category: internal_error\n"
        "  pattern: 'quota usage (?P<pct>\\d+)%(?!\\s*ok)'\n"
        "  literals: [quota]\n"
        "  examples:\n"
        "    match:\n"
        "      - text: 'Resources are plentiful in this region (us-central1); quota usage 7%'\n"
        "        fields: {pct: '7'}\n"
    )
    book = RuleBook.load([rules])
    near = _near(7)
    assert book.may_match_texts(near) == [2]
    warnings = [p.message for p in check_rules([rules]) if p.severity == "warning"]
    assert any("mine.quota" in m and "decided in Python" in m for m in warnings)
    path = tmp_path / "nearmiss.jsonl"
    _near_miss_fleet(path, 0.3, true_matches=False, seed=5)
    _same([str(path)], book)


def test_an_alternation_is_searched_by_its_alternatives() -> None:
    written = rewrite(r"^Job failed\.$|(?i:quota) (?P<n>\d+) exceeded|\bOOM\b")
    assert written.source is not None and len(written.alternatives) == 3
    # A back-reference's group number would change apart, and a single pattern is itself.
    assert rewrite(r"(a)x\1|b").alternatives == ()
    assert rewrite(r"(a)?(?(1)x|y)|b").alternatives == ()
    assert rewrite(r"Job (?:failed|succeeded)").alternatives == ()


_TEMPLATES_APART = [
    (rule.id, template.regex.pattern)
    for rule in BOOK.rules
    for template in rule.templates
    if rewrite(template.regex.pattern).alternatives
]


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(_TEMPLATES_APART),
    st.lists(st.sampled_from([*EXAMPLES, *_near(7), " ", ""]), min_size=1, max_size=6),
    _PAD,
)
def test_alternatives_apart_match_where_the_template_does(
    template: tuple[str, str], texts: list[str], pad: str
) -> None:
    """A text matches a rewritten template exactly where it matches one of its alternatives;
    searched apart in a block, they keep every text the whole keeps."""
    import regex

    from analyzer.rulebook.native import _normal_forms, _touched

    written = rewrite(template[1])
    assert written.source is not None
    whole = regex.compile(written.source, regex.VERSION0)
    apart = [regex.compile(source, regex.VERSION0) for source in written.alternatives]
    texts = _normal_forms([pad + text for text in texts] + texts)
    for text in texts:
        assert bool(whole.search(text)) == any(part.search(text) for part in apart), text
    indexes = list(range(len(texts)))
    matched = {i for i in indexes if whole.search(texts[i])}
    assert matched <= set(_touched(whole, apart, texts, indexes, 1.0))
