"""Issue 31.8: a traceback of any length costs bounded memory, and its exception is named.

A runaway recursion pasted whole (a million frames, 94 MB) peaked at 1.08 GB: every frame was
an event kept to the end. The reading stage now keeps a traceback's first frames, its last,
the user's and the last of the packages seen last (:class:`KeptFrames`), counts the others
and says so in a note. Checked here on the three ways such a traceback comes, scaled down
(cost follows bytes): pasted text, a sink export with an entry per line, one entry holding it
whole; the memory of the first two by a subprocess's peak, which the old path passed at
60,000 frames (the sink's: 168 MB).
"""

from __future__ import annotations

import json
import random
import tracemalloc
from pathlib import Path

import pytest

from analyzer.classify.tracebacks import (
    HEAD_FRAMES,
    TAIL_FRAMES,
    Frame,
    KeptFrames,
    kept_frames,
    parse_text,
    user_frame,
)
from tests import hostile_inputs
from tests.clirun import peak_rss

# Peak RSS of the process that diagnoses, whatever the traceback's length (issue 31.8).
PEAK_BYTES = 64 << 20
# Most frames that can be kept of one traceback: head, tail, the user's, the packages' last,
# the entry point's.
MOST_KEPT = HEAD_FRAMES + TAIL_FRAMES + 50 + 4 + 1


# Runs ``jobdoctor diagnose PATH --format json`` and prints its output and its peak RSS (the
# largest of it and its workers: the children of this wrapper only).
def _diagnosed(path: Path) -> dict[str, object]:
    """``jobdoctor diagnose`` of ``path`` in a fresh process: its peak RSS (with any
    workers'), the cause's exception type, the notes."""
    peak, out = peak_rss(["diagnose", str(path), "--format", "json"], timeout=300)
    (job,) = json.loads(out)["jobs"]
    cause = job["cause"]
    exception = cause["exception"]["type"] if cause and cause["exception"] else None
    return {"peak": peak, "exception": exception, "notes": job["notes"]}


def _not_kept_note(notes: object, frames: int) -> str:
    assert isinstance(notes, list)
    said = [note for note in notes if "are not kept" in note]
    assert len(said) == 1, notes
    assert f"traceback has {frames:,} frames" in said[0]
    assert f"{frames - HEAD_FRAMES - TAIL_FRAMES - 1:,} of them" in said[0]
    return str(said[0])


@pytest.mark.parametrize(
    ("shape", "frames"),
    [("pasted", 60_000), ("sink_lines", 60_000)],
)
def test_memory_bounded_and_exception_named(tmp_path: Path, shape: str, frames: int) -> None:
    path = tmp_path / ("tb.txt" if shape == "pasted" else "tb.jsonl")
    path.write_bytes(getattr(hostile_inputs, shape)(frames))
    found = _diagnosed(path)
    assert isinstance(found["peak"], int)
    assert found["peak"] < PEAK_BYTES, f"{found['peak'] / 2**20:.0f} MB"
    note = _not_kept_note(found["notes"], frames)
    assert "RecursionError" in note
    if shape == "pasted":
        assert any("shows RecursionError: maximum recursion depth" in n for n in found["notes"])  # type: ignore[attr-defined]
    else:
        assert found["exception"] == "RecursionError"


def test_one_entry_holding_it_whole(tmp_path: Path) -> None:
    """A ``logger.exception`` record of 40,000 frames (3.7 MB, under the 4 MiB entry bound):
    named from its text, read without a list of its lines or frames."""
    frames = 40_000
    path = tmp_path / "whole.jsonl"
    path.write_bytes(hostile_inputs.sink_whole(frames))
    found = _diagnosed(path)
    assert found["exception"] == "RecursionError"
    _not_kept_note(found["notes"], frames)
    text = "\n".join(hostile_inputs.frame_lines(frames)) + "\n"
    tracemalloc.start()
    try:
        info = parse_text(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert info is not None and info.type == "RecursionError"
    assert len(info.frames) <= MOST_KEPT
    assert len(info.frames) + info.frames_not_kept == frames
    assert info.frame == Frame("/app/trainer/task.py", 61, "main")
    assert peak < 2 << 20, f"{peak / 2**20:.1f} MB"  # the old parse: 12 MB of lines and frames


def test_flattened_and_escaped_forms_keep_the_same_frames() -> None:
    lines = list(hostile_inputs.frame_lines(5_000))
    whole = parse_text("\n".join(lines))
    flat = parse_text(" ".join(lines))
    escaped = parse_text('message: "' + "\\n".join(lines) + '"')
    assert whole is not None and flat is not None and escaped is not None
    assert whole.frames == flat.frames == escaped.frames
    assert whole.frames_not_kept == flat.frames_not_kept == escaped.frames_not_kept > 0


_FILES = [
    "/app/trainer/task.py",
    "/app/trainer/model.py",
    "/usr/lib/python3.10/runpy.py",
    "<frozen runpy>",
    "/usr/local/lib/python3.10/site-packages/trainer/train.py",
    "/usr/local/lib/python3.10/site-packages/torch/nn/module.py",
    "/usr/local/lib/python3.10/site-packages/zarr/core.py",
    "/usr/local/lib/python3.10/site-packages/lightning/trainer.py",
    "/usr/local/lib/python3.10/dist-packages/numpy/core.py",
    "/usr/lib/python3.10/threading.py",
]


@pytest.mark.parametrize("seed", range(40))
def test_kept_frames_name_the_frame_all_of_them_name(seed: int) -> None:
    """user_frame of what is kept is user_frame of every frame, cut at the top or not; the
    kept frames keep their order; keeping them again keeps them all."""
    rng = random.Random(seed)
    length = rng.choice([10, HEAD_FRAMES, HEAD_FRAMES + TAIL_FRAMES + 3, 3_000, 9_000])
    weights = [rng.random() ** 3 for _ in _FILES]
    frames = [
        Frame(rng.choices(_FILES, weights)[0], rng.randrange(1, 900), f"f{i % 7}")
        for i in range(length)
    ]
    kept, dropped = kept_frames(frames)
    assert len(kept) + dropped == length and len(kept) <= MOST_KEPT
    place = {id(frame): at for at, frame in enumerate(frames)}
    assert [place[id(f)] for f in kept] == sorted(place[id(f)] for f in kept)
    for top_cut in (False, True):
        assert user_frame(kept, top_cut) is user_frame(frames, top_cut)
    again, more = kept_frames(kept)
    assert again == kept and more == 0


def test_head_is_the_callers_at_once() -> None:
    keeper: KeptFrames[int] = KeptFrames()
    taken = [keeper.add(i, "/app/x.py") for i in range(HEAD_FRAMES + 5)]
    assert taken == [True] * HEAD_FRAMES + [False] * 5
    assert keeper.rest() == (list(range(HEAD_FRAMES, HEAD_FRAMES + 5)), 0)
