"""Thinning repeated events (analyzer.classify.eventstore) changes no diagnosis: whole analyses and
every diagnosis field but the timeline's own event lists are the unthinned ones, on
event-dense inputs, fast and plain, in one process and several, in time order or not; and
what is kept stays bounded as repeats grow. Rule answers shared by texts of one digit mask
are each text's own."""

from __future__ import annotations

import io
import random
from dataclasses import fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import analyzer.classify._fastscan.parallel as parallel
from analyzer.api import Analysis
from analyzer.classify import eventstore
from analyzer.classify.collector import Collector
from analyzer.ingest import open_sources
from analyzer.rulebook import RuleBook
from analyzer.rulebook.events import EventKind
from analyzer.simulate import SCENARIOS, dense_fleet, write
from analyzer.simulate.plan import merge_jobs
from analyzer.timeline.attempts import build_timeline
from analyzer.verdict.diagnosis import Diagnosis
from analyzer.verdict.policy import load_policy
from analyzer.verdict.predict import diagnose_timeline

_T0 = datetime(2024, 3, 11, 8, tzinfo=UTC)


@pytest.fixture(scope="module")
def book() -> RuleBook:
    return RuleBook.load()


def _read(
    paths: list[str], book: RuleBook, *, thin: bool, fast: bool = True, processes: int = 1
) -> tuple[dict[str, Any], tuple[Diagnosis, ...], Collector, int]:
    policy = load_policy()
    collector = Collector(book, fast=fast, processes=processes, thin=thin)
    collector.read_all(open_sources(paths))
    logs = collector.logs()
    diagnoses = tuple(diagnose_timeline(build_timeline(log), policy) for log in logs)
    kept = sum(len(log.events) for log in logs)
    return Analysis(tuple(collector.stats), diagnoses).to_dict(), diagnoses, collector, kept


def _fields(diagnosis: Diagnosis) -> dict[str, object]:
    """Every field of a diagnosis but the timeline, whose attempts hold the events."""
    return {f.name: getattr(diagnosis, f.name) for f in fields(diagnosis) if f.name != "timeline"}


def _same(paths: list[str], book: RuleBook, **how: Any) -> tuple[Collector, int, int]:
    """Thinned (as ``how`` says) equals unthinned plain; the kept and the full event counts."""
    want, want_diagnoses, _, full = _read(paths, book, thin=False, fast=False)
    got, got_diagnoses, collector, kept = _read(paths, book, thin=True, **how)
    assert got == want
    assert [_fields(d) for d in got_diagnoses] == [_fields(d) for d in want_diagnoses]
    # The timelines' shape too: attempts, bounds, workers.
    for mine, theirs in zip(got_diagnoses, want_diagnoses, strict=True):
        assert [(a.number, a.start, a.end, a.workers) for a in mine.timeline.attempts] == [
            (a.number, a.start, a.end, a.workers) for a in theirs.timeline.attempts
        ]
    return collector, kept, full


def _dense_file(tmp_path: Path, size: int, seed: int) -> str:
    path = tmp_path / f"dense-{seed}.jsonl"
    with path.open("wb") as stream:
        stream.writelines(dense_fleet(size, seed=seed))
    return str(path)


@pytest.mark.parametrize("processes", [1, 2])
def test_dense_fleet_thinned_is_unthinned(
    processes: int, book: RuleBook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Small ranges: many cuts, each range thinned alone and merged in order.
    monkeypatch.setattr(parallel, "MIN_RANGE_BYTES", 256 << 10)
    path = _dense_file(tmp_path, 4_000_000, seed=processes)
    # A job whose lines came far out of order may be read back (restored): still exact.
    collector, kept, full = _same([path], book, processes=processes)
    assert len(collector.restored) <= 2
    # And thinning did thin (each range's last stretch is kept whole: more with more cuts).
    assert kept < full / (2 if processes == 1 else 1.2), (kept, full, collector.restored)


def test_dense_plain_path_thinned_is_unthinned(book: RuleBook, tmp_path: Path) -> None:
    path = _dense_file(tmp_path, 2_000_000, seed=7)
    collector, kept, full = _same([path], book, fast=False)
    assert not collector.restored and kept < full / 3


def _dense_scenario(name: str, seed: int, share: float, fmt: str = "jsonl") -> str:
    scenario = SCENARIOS[name]
    plans = [
        replace(plan, event_share=share, chatter_per_minute=plan.chatter_per_minute * 20)
        for plan in scenario.plans(seed)
    ]
    out = io.StringIO()
    write(merge_jobs(plans), fmt, out, seed=seed)
    return out.getvalue()


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_scenario_event_dense(scenario: str, book: RuleBook, tmp_path: Path) -> None:
    # Every outcome (OOM beside an exit 137, CUDA OOM details, a missing module, cascades,
    # restarts, VM moves, truncated logs) with a third of its chatter events.
    seed = random.Random(scenario).randrange(1_000_000)
    path = tmp_path / f"{scenario}.jsonl"
    path.write_text(_dense_scenario(scenario, seed, 0.34), encoding="utf-8")
    _same([str(path)], book)


@settings(max_examples=12, deadline=None)
@given(
    scenario=st.sampled_from(sorted(SCENARIOS)),
    seed=st.integers(0, 10_000),
    share=st.sampled_from([0.05, 0.3, 0.8]),
    shuffle=st.sampled_from([0, 3, 40]),
)
# Found by a run before the thinner kept both copies of an entry delivered twice under two
# rules: duplicates came out 1, not 2.
@example(scenario="bare-137", seed=152, share=0.3, shuffle=40)
def test_thinning_is_exact_in_any_order(
    scenario: str, seed: int, share: float, shuffle: int, book: RuleBook, tmp_path_factory: Any
) -> None:
    # Lines moved up to ``shuffle`` places (a sink's disorder, and far more): thinning holds,
    # or the job's dropped events are read back; the analysis is the unthinned one.
    lines = _dense_scenario(scenario, seed, share).splitlines(keepends=True)
    rng = random.Random(seed)
    for index in range(len(lines) - 1, 0, -1):
        other = max(0, index - rng.randint(0, shuffle))
        lines[index], lines[other] = lines[other], lines[index]
    path = tmp_path_factory.mktemp("shuffled") / "job.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    _same([str(path)], book)


def test_reversed_input_keeps_its_order_of_reading(book: RuleBook, tmp_path: Path) -> None:
    # Newest first: no repeat is ever older than the latest by the margin, none is dropped.
    text = _dense_scenario("user-code-exit1", 3, 0.5)
    path = tmp_path / "reversed.jsonl"
    path.write_text("".join(reversed(text.splitlines(keepends=True))), encoding="utf-8")
    _same([str(path)], book)


@pytest.mark.parametrize("processes", [1, 2])
def test_a_late_anchor_is_read_back(
    processes: int, book: RuleBook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A service line written in the middle of the run, read in another range (two exports
    # concatenated): it falls among repeats already dropped, maybe by a worker. The checks
    # see it and read them back from the spill files.
    monkeypatch.setattr(parallel, "MIN_RANGE_BYTES", 64 << 10)
    lines = _dense_scenario("user-code-exit1", 3, 0.5).splitlines(keepends=True)
    running = next(orjson.loads(x) for x in lines if "Job is running." in x)
    middle = orjson.loads(lines[len(lines) // 2])
    late = orjson.dumps({**running, "timestamp": middle["timestamp"], "insertId": "late"})
    at = 2 * len(lines) // 3  # read after the repeats of its time
    path = tmp_path / "late.jsonl"
    path.write_text("".join([*lines[:at], late.decode() + "\n", *lines[at:]]), "utf-8")
    collector, kept, full = _same([str(path)], book, processes=processes)
    assert collector.restored and kept == full


def test_an_early_anchor_keeps_what_follows_it(book: RuleBook, tmp_path: Path) -> None:
    # The same service line read long before the lines of its time: the repeats read after
    # it are decided around it (kept up to a second after it, and the first one after it),
    # without reading anything back.
    lines = _dense_scenario("user-code-exit1", 3, 0.5).splitlines(keepends=True)
    running = next(orjson.loads(x) for x in lines if "Job is running." in x)
    middle = orjson.loads(lines[len(lines) // 2])
    early = orjson.dumps({**running, "timestamp": middle["timestamp"], "insertId": "early"})
    third = len(lines) // 3
    path = tmp_path / "early.jsonl"
    path.write_text("".join([*lines[:third], early.decode() + "\n", *lines[third:]]), "utf-8")
    collector, kept, full = _same([str(path)], book)
    assert not collector.restored and kept < full


def test_two_exports_of_one_job(book: RuleBook, tmp_path: Path) -> None:
    # The sink file and a stream-logs text of the same job: duplicates across exports are
    # found and counted as without thinning.
    for fmt in ("jsonl", "stream-logs"):
        (tmp_path / f"job.{fmt}").write_text(_dense_scenario("oom", 11, 0.3, fmt), encoding="utf-8")
    _same([str(tmp_path / "job.jsonl"), str(tmp_path / "job.stream-logs")], book)


def test_one_export_read_twice(book: RuleBook, tmp_path: Path) -> None:
    # The same sink file under two names: every entry is a copy of the other file's, the
    # dropped ones too (each input thins the same stretches alike); counted as without
    # thinning.
    text = _dense_scenario("user-code-exit1", 5, 0.5)
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_text(text, encoding="utf-8")
    _same([str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")], book)


def test_hourly_files_of_one_job(book: RuleBook, tmp_path: Path) -> None:
    # A sink tree cuts a job's log at each hour: each file thinned alone, merged per job.
    lines = _dense_scenario("worker-restarts-exhausted", 5, 0.3).splitlines(keepends=True)
    hours: dict[str, list[str]] = {}
    for line in lines:
        hours.setdefault(orjson.loads(line)["timestamp"][:13], []).append(line)
    assert len(hours) > 1
    paths = []
    for hour, chunk in sorted(hours.items()):
        path = tmp_path / f"{hour}.jsonl"
        path.write_text("".join(chunk), encoding="utf-8")
        paths.append(str(path))
    collector, _, _ = _same(paths, book)
    assert not collector.restored


# Multi-line texts a worker's logger writes again and again: a complete traceback (with
# another address and line numbers each time), one cut short (never thinned), and a paste of
# an exception line.
_MULTI_LINE = (
    "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f3a{hex}>\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line'
    " 14{n}, in __del__\n    self._shutdown_workers()\n"
    "AttributeError: '_MultiProcessingDataLoaderIter' object has no attribute '_workers'",
    "Traceback (most recent call last):\n"
    '  File "/root/.local/lib/python3.10/site-packages/trainer/task.py", line {n}, in train',
    "step {n}: loss=0.{n}\nModuleNotFoundError: No module named 'x'",
)


def _mutated(lines: list[str], seed: int, multi: float, copies: int, far: bool) -> list[str]:
    """``lines`` with some worker texts made multi-line, and ``copies`` entries delivered
    twice: the same line again, or its insertId and time on another line (another rule's),
    next to it or ``far`` from it."""
    rng = random.Random(seed)
    out = []
    for line in lines:
        entry = orjson.loads(line)
        payload = entry.get("jsonPayload")
        task = entry.get("resource", {}).get("labels", {}).get("task_name")
        if rng.random() < multi and isinstance(payload, dict) and task not in (None, "service"):
            text = rng.choice(_MULTI_LINE).format(
                hex=f"{rng.randrange(16**8):08x}", n=rng.randrange(10, 99)
            )
            entry["jsonPayload"] = {**payload, "message": text}
            line = orjson.dumps(entry).decode() + "\n"
        out.append(line)
    for _ in range(copies):
        at = rng.randrange(len(out))
        to = rng.randrange(len(out)) if far else min(at + 1, len(out) - 1)
        if rng.random() < 0.5:
            out.insert(to, out[at])
        else:
            source, other = orjson.loads(out[at]), orjson.loads(out[to])
            other["insertId"], other["timestamp"] = source["insertId"], source["timestamp"]
            out[to] = orjson.dumps(other).decode() + "\n"
    return out


@settings(max_examples=16, deadline=None)
@given(
    scenario=st.sampled_from(sorted(SCENARIOS)),
    seed=st.integers(0, 10_000),
    multi=st.sampled_from([0.0, 0.1, 0.5]),
    copies=st.integers(0, 6),
    far=st.booleans(),
    processes=st.sampled_from([1, 2]),
)
def test_thinning_is_exact_with_copies_and_multi_line_texts(
    scenario: str,
    seed: int,
    multi: float,
    copies: int,
    far: bool,
    processes: int,
    book: RuleBook,
    tmp_path_factory: Any,
) -> None:
    # Repeated multi-line tracebacks (thinned when complete), entries delivered twice under
    # any key, near or far (dedupe counts every copy: the checks read a job back when a
    # dropped copy escaped), read in one process or in small ranges (repeats crossing
    # range boundaries): the analysis is the unthinned one.
    lines = _mutated(
        _dense_scenario(scenario, seed, 0.3).splitlines(keepends=True), seed, multi, copies, far
    )
    path = tmp_path_factory.mktemp("mutated") / "job.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(parallel, "MIN_RANGE_BYTES", 32 << 10)
        _same([str(path)], book, processes=processes)


def test_a_copy_under_another_rule_is_counted(book: RuleBook, tmp_path: Path) -> None:
    # One insertId and time on a checkpoint line and on a traceback line (each a repeat of
    # its own kind): classify._dedupe counts the second as a duplicate, thinned or not.
    lines = _dense_scenario("user-code-exit1", 3, 0.5).splitlines(keepends=True)
    entries = [orjson.loads(line) for line in lines]
    checkpoints = [i for i, e in enumerate(entries) if "Saving checkpoint" in str(e)]
    at = checkpoints[len(checkpoints) // 2]
    copy = dict(entries[at + 1])
    copy["insertId"], copy["timestamp"] = entries[at]["insertId"], entries[at]["timestamp"]
    lines[at + 1] = orjson.dumps(copy).decode() + "\n"
    path = tmp_path / "copy.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    collector, kept, full = _same([str(path)], book)
    assert kept < full and collector.stats[0].duplicates >= 1


def test_complete_multi_line_tracebacks_are_thinned(book: RuleBook, tmp_path: Path) -> None:
    # The same complete traceback in one text at every step: its repeats are thinned (it
    # used to be an anchor, keeping everything around each one); one cut short is not.
    from analyzer.ingest.records import Origin
    from analyzer.rulebook.events import Event

    def event(text: str, line: int) -> Event:
        (match,) = [m for m in book.match(text) if m.kind is EventKind.TRACEBACK]
        return Event(None, "1", "workerpool0-0", match, text, Origin("x", line))

    complete = _MULTI_LINE[0].format(hex="1c2e4d30", n=79)
    cut = _MULTI_LINE[1].format(n=12)
    assert eventstore.thin_key(replace(event(complete, 1), timestamp=_T0)) is not None
    assert eventstore.thin_key(replace(event(cut, 1), timestamp=_T0)) is None


def _one_long_job(repeats: int) -> str:
    """One job whose worker writes ``repeats`` of each dense line between its start and exit."""
    scenario = SCENARIOS["user-code-exit1"]
    plan = scenario.plans(1)[0]
    out = io.StringIO()
    dense = replace(plan, event_share=0.9, chatter_per_minute=repeats / 30)
    write(merge_jobs([dense]), "jsonl", out, seed=1)
    return out.getvalue()


def test_kept_events_stay_bounded_as_repeats_grow(book: RuleBook, tmp_path: Path) -> None:
    # Not a timing test: the events kept as the same run holds 10x the repeats. Checkpoints
    # and traceback lines: a few per stretch between anchors, whatever their number. Details
    # are kept whole for the two minutes before each anchor (rootcause reads them there), so
    # they grow with the density in those minutes only.
    counts = []
    for repeats in (2_000, 20_000):
        path = tmp_path / f"long-{repeats}.jsonl"
        path.write_text(_one_long_job(repeats), encoding="utf-8")
        _, diagnoses, _, _ = _read([str(path)], book, thin=True)
        _, full_diagnoses, _, _ = _read([str(path)], book, thin=False)
        _same([str(path)], book)
        kept = [e for d in diagnoses for a in d.timeline.attempts for e in a.events]
        full = [e for d in full_diagnoses for a in d.timeline.attempts for e in a.events]
        counts.append(
            (
                sum(e.kind is not EventKind.DETAIL for e in kept),
                sum(e.kind is EventKind.DETAIL for e in kept),
                sum(e.kind is EventKind.DETAIL for e in full),
                len(full),
            )
        )
    (small, _, _, small_full), (large, details, all_details, large_full) = counts
    assert large_full > 8 * small_full
    assert large < 1.5 * small + 50
    assert details < all_details / 3


def test_a_thinner_keeps_first_last_and_anchors(book: RuleBook) -> None:
    # Direct: what one thinner keeps of a long run of repeats between two anchors.
    from datetime import UTC, datetime, timedelta

    from analyzer.ingest.records import Origin
    from analyzer.rulebook.events import Event

    start = datetime(2024, 3, 11, 8, tzinfo=UTC)

    def event(text: str, seconds: float, line: int) -> Event:
        (match,) = book.match(text)
        return Event(
            start + timedelta(seconds=seconds),
            "1",
            "workerpool0-0",
            match,
            text,
            Origin("x", line),
            "vm",
        )

    thinner = eventstore.Thinner()
    thinner.add(event("Task completed. Exit code (0). Exit reason (SUCCEEDED)", 0, 1))
    for step in range(1, 1001):
        thinner.add(event(f"Saving checkpoint to gs://b/ckpt-{step}", step, step + 1))
    thinner.add(
        event("Task completed. Exit code (1). Exit reason (SUBPROCESS_EXCEPTION)", 1001, 1002)
    )
    thinner.finish()
    lines = sorted(e.origin.line for e in thinner.kept)
    assert lines[:2] == [1, 2] and lines[-1] == 1002  # the anchors, the first repeat
    assert 1001 in lines and 1000 in lines  # the last ones before the anchor
    assert len(lines) < 40
    # One gap per length of the step number (the mask keeps lengths: see rulebook.book).
    assert sum(gap.count for gap in thinner.dropped.gaps) == 1002 - len(lines)
    restored = eventstore.restore(thinner.dropped.spills)
    assert sorted(lines + [e.origin.line for e in restored]) == list(range(1, 1003))


_SPILL_TEXTS = [
    "Saving checkpoint to gs://b/ckpt-12",
    "ModuleNotFoundError: No module named 'x'",
    "The replica workerpool0-1 exited with a non-zero status of 137. Termination reason: Error.",
    "Traceback (most recent call last):",
    "Task completed. Exit code (1). Exit reason (SUBPROCESS_EXCEPTION)",
]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(_SPILL_TEXTS),
            st.datetimes(timezones=st.just(UTC)) | st.none() | st.datetimes(),
            st.integers(1, 1 << 30),
            st.integers(0, 7),
            st.text(max_size=20) | st.none(),
        ),
        max_size=40,
    )
)
def test_a_spill_batch_reads_back_as_written(
    book: RuleBook, rows: list[tuple[str, datetime | None, int, int, str | None]]
) -> None:
    # Each distinct rule match is written once per batch and named by its place: what is
    # read back is every event as it was dropped, its own match, its time (aware, naive or
    # none) and its line renumbered after the base.
    from analyzer.ingest.records import Origin
    from analyzer.rulebook.events import Event

    items: list[eventstore.Light] = []
    for text, when, line, entry, insert_id in rows:
        for match in book.match(text):
            items.append(
                (when, "1", "workerpool0-0", match, text, "x", line, entry, "vm", insert_id, None)
            )
    ref = eventstore._spill_file().write(items)
    base = 1000
    moved = eventstore.SpillRef(ref.path, ref.offset, ref.length, base)
    assert eventstore.restore([moved]) == [
        Event(i[0], i[1], i[2], i[3], i[4], Origin(i[5], i[6] + base, i[7]), i[8], i[9], i[10])
        for i in items
    ]


@given(
    st.text(max_size=30),
    st.datetimes(timezones=st.just(UTC)) | st.datetimes(),
    st.integers(1, 10**6),
)
def test_entry_digests_are_equal_for_equal_entries(
    insert_id: str, when: datetime, microseconds: int
) -> None:
    from datetime import timedelta

    copy = datetime.fromisoformat(when.isoformat())  # an equal datetime, another object
    assert eventstore.entry_digest(insert_id, when) == eventstore.entry_digest(insert_id, copy)
    try:
        later = when + timedelta(microseconds=microseconds)
    except OverflowError:
        return
    # Another time of the same insertId: another digest, where a float holds microseconds
    # exactly (a few centuries around 1970; elsewhere two copies a few microseconds apart
    # would only make the checks read a job back).
    if microseconds > 1 and when.year >= 1900 and later.year <= 2200:
        assert eventstore.entry_digest(insert_id, when) != eventstore.entry_digest(insert_id, later)


def test_dropped_insert_ids_wait_on_disk_and_cross_the_fork(book: RuleBook) -> None:
    # The digests of what was dropped are in the spill file, not in the Thinned that travels
    # back from a worker (pickled), and the checks still tell a dropped copy of a kept entry.
    import pickle
    from datetime import timedelta

    from analyzer.ingest.records import Origin
    from analyzer.rulebook.events import Event

    start = datetime(2024, 3, 11, 8, tzinfo=UTC)

    def event(text: str, seconds: float, line: int, insert_id: str) -> Event:
        (match,) = book.match(text)
        when = start + timedelta(seconds=seconds)
        return Event(when, "1", "workerpool0-0", match, text, Origin("x", line), "vm", insert_id)

    thinner = eventstore.Thinner()
    thinner.add(event("Task completed. Exit code (0). Exit reason (SUCCEEDED)", 0, 1, "a"))
    for step in range(1, 301):
        thinner.add(event(f"Saving checkpoint to gs://b/ckpt-{step}", step, step + 1, f"i{step}"))
    thinner.add(
        event("Task completed. Exit code (1). Exit reason (SUBPROCESS_EXCEPTION)", 301, 302, "z")
    )
    thinner.finish()
    (batch,) = thinner.dropped.ids
    travelled = pickle.loads(pickle.dumps(thinner.dropped.rebased(0)))
    assert len(pickle.dumps(batch)) < 400  # a reference, not the arrays
    digests, places = travelled.ids[0].arrays()
    dropped = eventstore.restore(thinner.dropped.spills)
    assert batch.count == len(digests) == len(places) == len(dropped) > 200
    assert sorted(places) == sorted(e.origin.line << 20 for e in dropped)
    assert set(digests) == {
        eventstore.entry_digest(e.insert_id or "", e.timestamp or start) for e in dropped
    }
    assert eventstore.inexact(thinner.kept, travelled, []) is None
    # A kept event on another line with the insertId and time of a dropped one: a copy.
    copy = replace(dropped[0], origin=Origin("x", 9999))
    assert "dropped copy" in (eventstore.inexact([*thinner.kept, copy], travelled, []) or "")


_FRAGMENTS = st.sampled_from(
    [
        "exit code ",
        "137",
        "1",
        "0",
        "9",
        " ",
        "Saving checkpoint to gs://b/ckpt-",
        "step ",
        "The replica workerpool0-",
        " exited with a non-zero status of ",
        ". ",
        "Termination reason: Error.",
        "403 ",
        "Forbidden: ",
        "Task completed. Exit code (",
        "). Exit reason (SUBPROCESS_EXCEPTION)",
        "ModuleNotFoundError: No module named 'x",
        "'",
        "loss=0.",
        "Job ",
        " is queued.",
        "customJobs/",
        "HTTP 429",
        "ｅｘｉｔ",
        "１３７",
        "Traceback (most recent call last):",
        "\n",
        '  File "/x/task.py", line ',
        ", in train",
        "Exception ignored in: <function f at 0x7f3a",
        ">",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_FRAGMENTS, min_size=1, max_size=8).map("".join), min_size=1, max_size=12))
def test_shared_rule_answers_are_each_texts_own(texts: list[str]) -> None:
    # A fresh book per example: answers shared between texts of one mask within it.
    book = RuleBook.load()
    book.new_run()
    for text in texts:
        assert book.match(text) == book._match(text)[0], text


@pytest.mark.parametrize(
    ("pattern", "blind"),
    [
        (r"\d+", True),
        (r"[0-9]+", True),
        (r"[A-Za-z0-9_-]{2,5}", True),
        (r"(?P<EXIT_CODE_0>[0-9]+)", True),
        (r"exit code 137", False),
        (r"[1-9]", False),
        (r"(\d)\1", False),
        (r"(?P<a>\d)(?P=a)", False),
        (r"\x30", False),
    ],
)
def test_digit_blind_patterns(pattern: str, blind: bool) -> None:
    from analyzer.rulebook.book import digit_blind

    assert digit_blind(pattern) is blind
