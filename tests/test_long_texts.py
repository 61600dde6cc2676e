"""Long texts (multi-kilobyte tracebacks) are matched near their rule words only: the same
matches as searching them whole (Hypothesis), with rule sentences near the edges of the text
and of its search windows, CRLF line ends and multi-byte characters."""

from __future__ import annotations

import dataclasses
import pickle
import random
import time
from pathlib import Path

import msgspec
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.classify import eventstore, longtext, tracebacks
from analyzer.ingest.records import Origin
from analyzer.rulebook import RuleBook
from analyzer.rulebook.compile import MatchTimeout, find
from analyzer.rulebook.events import Event, RuleMatch
from analyzer.rulebook.normalize import normalize_with_offsets
from analyzer.rulebook.windows import (
    WINDOWED_TEXT,
    finditer,
    occurrences,
    space_bound,
    window_plan,
)
from tests import reshape

BOOK = RuleBook.load()
EXAMPLES = [example.text for rule in BOOK.rules for example in rule.match_examples]
FILLERS = [
    '  File "/opt/trainer/trainer/model.py", line 101, in forward',
    "    return self.block(x) + self.residual(x)",
    "step 1200 loss=0.1234 — 学習中 ✓ █▌",
    "Ｔｒａｃｅｂａｃｋ ｍｏｄｅｌ",  # wide forms that fold into rule words
    "quota exceeded? no: creating the job later",  # rule words without their sentences
    "İstanbul status",  # lower() lengthens it: the text is searched whole
]


def everything(book: RuleBook, text: str) -> tuple[RuleMatch, ...]:
    """What every rule's every template finds searching the whole text, no prefilter."""
    normalized, offsets = normalize_with_offsets(text)
    found: list[tuple[int, int, RuleMatch]] = []
    for index, rule in enumerate(book.rules):
        try:
            matches = find(rule, normalized, offsets, text, 10.0)
        except MatchTimeout:  # pragma: no cover - the built-in rules are fast
            raise
        found.extend((start, index, match) for start, match in matches)
    found.sort(key=lambda item: item[:2])
    return tuple(match for _, _, match in found)


@st.composite
def long_texts(draw: st.DrawFn) -> str:
    """A long text of filler lines with rule sentences at drawn places (the edges too)."""
    size = draw(st.integers(WINDOWED_TEXT + 1, 3 * WINDOWED_TEXT))
    rng = random.Random(draw(st.integers(0, 1 << 20)))
    lines: list[str] = []
    while sum(map(len, lines)) < size:
        lines.append(rng.choice(FILLERS))
    for _ in range(draw(st.integers(1, 4))):
        where = draw(st.sampled_from(["start", "end", "middle", "edge"]))
        example = draw(st.sampled_from(EXAMPLES))
        at = {
            "start": 0,
            "end": len(lines),
            "middle": rng.randrange(len(lines)),
            "edge": min(len(lines), 1 + WINDOWED_TEXT // 50),
        }[where]
        lines.insert(at, example)
    line_end = draw(st.sampled_from(["\n", "\r\n", " ", "\n\n"]))
    text = line_end.join(lines)
    if draw(st.booleans()):  # glued to its neighbours, no space between
        example = draw(st.sampled_from(EXAMPLES))
        cut = draw(st.integers(0, len(text)))
        text = text[:cut] + example + text[cut:]
    return text


@settings(max_examples=150, deadline=None)
@given(long_texts())
def test_a_long_text_matches_as_searched_whole(text: str) -> None:
    assert len(text) > WINDOWED_TEXT
    BOOK.new_run()
    assert BOOK.match(text) == everything(BOOK, text)


@pytest.mark.parametrize("seed", range(3))
def test_a_long_traceback_with_a_service_error_inside(seed: int) -> None:
    rng = random.Random(seed)
    traceback = reshape.long_traceback(rng, 30_000)
    for example in EXAMPLES:
        cut = rng.randrange(len(traceback))
        text = traceback[:cut] + "\n" + example + "\n" + traceback[cut:]
        assert BOOK.match(text) == everything(BOOK, text)


# --- the window search itself, on patterns built from pieces ---------------------------------

PIECES = [
    r"\s*",
    r"\s+",
    " ",
    r"\w+",
    r"\w*?",
    r"[a-z]{0,3}",
    r"(?:x|y z)",
    r"(?:q ){2}",
    r"\b",
    r"\B",
    "^",
    "$",
    r"\Z",
    r"(?<=q)",
    r"(?<!z )",
    r"[^ ]+",
    r"\d",
    r"(?:[xy]|\s)",
    r"(?i:Y)",
    "(?P<g>z)",
    r"(?(g)x|y)",
    r"\S{1,4}",
]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(PIECES), max_size=4),
    st.lists(st.sampled_from(PIECES), max_size=4),
    st.text(alphabet="litxyzqLIT 0\n", min_size=WINDOWED_TEXT, max_size=3 * WINDOWED_TEXT),
)
def test_windows_find_what_a_whole_search_finds(
    before: list[str], after: list[str], raw: str
) -> None:
    pattern = "".join(before) + "lit" + "".join(after)
    try:
        compiled = regex.compile(pattern, regex.VERSION0)
    except regex.error:
        return
    bound = space_bound(pattern)
    if bound is None:
        return
    text = " ".join(raw.split())
    lowered = text.lower()
    starts = []
    at = lowered.find("lit")
    while at >= 0:
        starts.append(at)
        at = lowered.find("lit", at + 1)
    whole = [m.span() for m in compiled.finditer(text)]
    assert [m.span() for m in finditer(compiled, text, starts, bound, 1.0)] == whole
    # From the pattern's own words (a run of "lit" at least), as book.match searches.
    plan = window_plan(pattern, ("lit",))
    assert plan is not None
    assert plan.literals
    own = occurrences(lowered, plan.words)
    if own is not None:
        assert [m.span() for m in finditer(compiled, text, own, bound, 1.0)] == whole


@pytest.mark.parametrize(
    ("pattern", "bound"),
    [
        ("Traceback \\(most recent call last\\)", 4),
        (r"a\s*b\s+c", 2),
        (r"(?:a b){3}", 3),
        (r"(?:a b)+", None),  # unbounded
        (r"a.+b", None),
        (r"a[^x]*b", None),
        (r"a\w+b", 0),
        (r"a*", None),  # may match empty: needs no literal
        (r"a(?=b c)", None),  # looks ahead past the window
        (r"(?<=x y)a", 0),
        (r"(a)\1", None),  # back-reference
        (r"a{e<=1}", None),  # the regex package's fuzzy matching
        (r"\p{L}a", None),  # regex-only syntax
        (r"[[a-z]--[b]]", None),  # a set the regex package may read otherwise
        (r"(?:\s)*a", 1),  # one whitespace class repeated: one space, normalised
        (r"(?:\s|x)*a", None),  # not only whitespace
    ],
)
def test_space_bound(pattern: str, bound: int | None) -> None:
    assert space_bound(pattern) == bound


def _long_event(text: str, line: int = 1) -> Event:
    return Event(None, "1", "workerpool0-0", BOOK.match(text)[0], text, Origin("f", line))


def test_a_kept_long_text_waits_on_disk() -> None:
    # The reading process keeps its events to the end: their long texts are not in memory.
    assert eventstore.prepare()  # this process reads, as a collector's does
    text = reshape.long_traceback(random.Random(0), 30_000)
    kept = [eventstore.compact(_long_event("".join(list(text)), line)) for line in (1, 2)]
    assert all(type(event) is longtext.StoredTextEvent for event in kept)
    assert all(longtext._TEXT_SLOT.__get__(event, Event) == "" for event in kept)
    assert kept[0].text == kept[1].text == text
    # Every worker and attempt logs the same traceback again: it is written once.
    assert kept[0]._where == kept[1]._where  # type: ignore[attr-defined]
    # In every other way an Event: equal, hashed, copied, pickled, packed as one.
    plain = _long_event(text)
    assert kept[0] == plain and plain == kept[0] and kept[0] != kept[1]
    assert pickle.loads(pickle.dumps(kept[0])) == plain
    assert dataclasses.replace(kept[0], task="service").text == text
    packed = msgspec.msgpack.encode([kept[0]])
    assert msgspec.msgpack.decode(packed, type=list[Event]) == [plain]
    assert repr(kept[0]) == repr(plain).replace("Event(", "StoredTextEvent(", 1)


def test_a_short_text_stays_in_memory() -> None:
    assert eventstore.prepare()
    short = eventstore.compact(_long_event("Traceback (most recent call last):\n  x"))
    assert type(short) is Event


# --- tracebacks read in two passes: what reading line by line gives ----------------------------


def lines_one_by_one(text: str) -> tracebacks.ExceptionInfo | None:
    """The traceback after the last header line, read a line at a time (the reference)."""
    lines = text.splitlines()
    start = max((i for i, line in enumerate(lines) if tracebacks._HEADER in line), default=None)
    if start is None:
        return None
    frames: list[tracebacks.Frame] = []
    for line in lines[start + 1 :]:
        frame = tracebacks._FRAME.match(line)
        if frame:
            frames.append(tracebacks.Frame(frame.group(1), int(frame.group(2)), frame.group(3)))
            continue
        found = tracebacks._EXCEPTION.match(line)
        if found and not line.startswith("    "):
            message = tracebacks._TAIL_END.sub("", found.group(2) or "").strip()
            return tracebacks.ExceptionInfo(
                found.group(1), message, tracebacks.user_frame(frames), tuple(frames)
            )
    return None


TRACEBACK_LINES = [
    "Traceback (most recent call last):",
    "ERROR:root:boom Traceback (most recent call last): ValueError: x",
    'File "/opt/trainer/trainer/model.py", line 12, in forward',
    '  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main  ',
    '[rank3]:   File "/opt/conda/lib/python3.10/site-packages/torch/nn/x.py", line 7, in f',
    '  File "a b", line 1, in <module>',
    '  File "x", line 2, in two words',
    "    return self.block(x)",
    "    raise ValueError('inside a source line')",
    "ValueError: bad value",
    "[rank0]: RuntimeError: CUDA error: an illegal memory access",
    "torch.cuda.OutOfMemoryError:",
    "KeyboardInterrupt",
    "requests.exceptions.ConnectionError: refused",
    "During handling of the above exception, another exception occurred:",
    "  Error: indented",
    "\tSystemExit: 2 \t",
    "",
    "RecursionError: maximum recursion depth exceeded To find out more about why your job exited",
]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(TRACEBACK_LINES), max_size=40),
    st.lists(st.sampled_from(["\n", "\r\n", "\r", "\x0b", "\x1c", "\u2028", "\x85"]), min_size=1),
    st.sampled_from(["", "é", "日本", "\x1f", " "]),
)
def test_a_traceback_reads_as_line_by_line(lines: list[str], ends: list[str], extra: str) -> None:
    text = "".join(line + extra + ends[i % len(ends)] for i, line in enumerate(lines))
    assert tracebacks._parse_lines(text, None) == lines_one_by_one(text)


def test_a_long_traceback_reads_as_line_by_line() -> None:
    text = reshape.long_traceback(random.Random(1), 50_000).replace("\n", "\r\n")
    found = tracebacks.parse_text(text)
    assert found is not None
    assert found == lines_one_by_one(text)
    assert found.type == "RecursionError"


def test_a_remembered_traceback_keeps_each_origin() -> None:
    from analyzer.ingest.records import Origin

    text = reshape.long_traceback(random.Random(2), 10_000)
    first = tracebacks.parse_text(text, Origin("a", 1))
    again = tracebacks.parse_text("".join(list(text)), Origin("b", 2))
    assert first is not None and again is not None
    assert (first.origin, again.origin) == (Origin("a", 1), Origin("b", 2))
    assert (first.type, first.frames) == (again.type, again.frames)
    assert tracebacks.parse_text(text) == lines_one_by_one(text)


@pytest.mark.parametrize(
    ("rule", "words", "literals"),
    [
        # Its raw pattern's literal ("watchdog") is a word of the pattern's sentence: it
        # counts, beside the pattern's own words.
        (
            "distributed.detail.collective-timeout",
            "watchdog caught collective operation timeout",
            True,
        ),
        # Caseless: no run through an "i" (which also matches the dotless "ı").
        ("progress.checkpoint", "checkpo", False),
        ("api.creation-refused", "429 quota exceeded", True),
        ("python.traceback", "traceback (most recent call last)", True),
    ],
)
def test_window_plans_take_the_patterns_own_words(rule: str, words: str, literals: bool) -> None:
    template = BOOK.rule(rule).templates[-1]  # a raw pattern comes after the templates
    plan = window_plan(template.regex.pattern, template.literals)
    assert plan is not None
    assert words in plan.words
    assert plan.literals is literals


def test_a_runaway_pattern_times_out_once_in_a_long_text(tmp_path: Path) -> None:
    # The windows of a long text share one time limit: a catastrophic pattern costs a long
    # text one timeout, as a search of the whole text does, not one per window.
    (tmp_path / "slow.yaml").write_text(
        "- id: acme.slow\n"
        "  category: internal_error\n"
        "  pattern: 'zzz(a|aa)+$'\n"
        "  literals: [zzz]\n"
        "  examples:\n"
        "    match:\n"
        '      - "zzzaaaa"\n'
    )
    book = RuleBook.load([tmp_path], builtin=False)
    book.new_run()
    plan = window_plan(book.rules[0].templates[0].regex.pattern, ("zzz",))
    assert plan is not None and plan.words == ("zzz",)
    runaway = "zzz" + "a" * 40 + "!"
    text = " ".join(["filler words"] * 150 + [runaway] * 5 + ["more filler"] * 150)
    assert len(text) > WINDOWED_TEXT
    # CPU time, which other work on the machine does not stretch: the limit is wall-clock, so
    # the searches of all windows together use at most about one limit's worth of CPU.
    started = time.process_time()
    assert book.match(text) == ()
    assert book.timeouts["acme.slow"] == 1
    assert time.process_time() - started < 10 * book.timeout
