"""Pictures of diagnoses as self-contained inline SVG: no script, no font, no network.

Two charts, each split into a pure data function (tested on its data) and a renderer:

- the per-worker timeline of one job: :func:`timeline_marks` places every attempt, every
  worker and every start, restart, exit and failure on a row and in time;
  :func:`timeline_svg` draws them, attempts and workers down, time across, coloured by
  category;
- failures over time for a fleet: :func:`failure_buckets` counts failures per time bucket
  and category; :func:`failures_svg` draws them as stacked bars.

Every text that reaches the SVG (task names, log messages) goes through ``html.escape``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from html import escape as _html_escape

from analyzer.ingest.records import replica_task
from analyzer.report.controls import visible
from analyzer.report.facts import job_label
from analyzer.rulebook.events import Category, Event, EventKind
from analyzer.timeline.attempts import (
    Attempt,
    WorkerExit,
    WorkerStart,
    WorkerTimeline,
)
from analyzer.verdict.diagnosis import Diagnosis
from analyzer.verdict.hangs import duration_words

# Okabe-Ito colours (distinguishable with the common colour-vision deficiencies), one per
# category and per non-failure outcome.
TONES: dict[str, str] = {
    Category.USER_CODE_EXCEPTION.value: "#D55E00",
    Category.OOM.value: "#CC79A7",
    Category.STOCKOUT.value: "#E69F00",
    Category.INTERNAL_ERROR.value: "#0072B2",
    Category.QUOTA.value: "#56B4E9",
    Category.WORKER_RESTARTS_EXHAUSTED.value: "#882255",
    Category.CANCELLED.value: "#7F7F7F",
    "failed": "#B22222",
    "succeeded": "#009E73",
    "running": "#4C7FB0",
    "pending": "#A0A0A0",
    "queued": "#A0A0A0",
    "maintenance": "#6A6A6A",
    "neutral": "#C9D1DA",
    "silent": "#EE3377",
}
# The legend's words for a tone, where its name alone says too little.
_TONE_LABELS = {"silent": "silent (stalled)"}
_FALLBACK_TONE = "#555555"


# The instants a datetime can hold: a log may carry years 1 and 9999, and a chart's padding
# or last tick past them would overflow.
_FIRST_INSTANT = datetime.min.replace(tzinfo=UTC)
_LAST_INSTANT = datetime.max.replace(tzinfo=UTC)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _moved(when: datetime, delta: timedelta) -> datetime:
    """``when + delta``, held at the first or last instant a datetime can hold."""
    try:
        return when + delta
    except OverflowError:
        return _LAST_INSTANT if delta > timedelta() else _FIRST_INSTANT


def escape(text: str) -> str:
    """``text`` escaped for SVG, its control characters and bidi overrides written as their
    escapes (an SVG ``<text>`` has no room for a mark)."""
    return _html_escape(visible(text))


def tone_colour(tone: str) -> str:
    """The colour of ``tone`` (a category value or an outcome such as ``succeeded``)."""
    return TONES.get(tone, _FALLBACK_TONE)


class MarkKind(StrEnum):
    """What a mark on the timeline shows."""

    ATTEMPT = "attempt"  # bar: one run of the whole job, coloured by how it ended
    WORKER = "worker"  # bar: when a worker was seen within an attempt
    START = "start"  # a worker's first start in an attempt
    RESTART = "restart"  # a worker started again in place (after an exit)
    VM_MOVE = "vm_move"  # a worker started again on another VM (maintenance)
    EXIT = "exit"  # a worker's process exited
    FAILURE = "failure"  # a failure message, coloured by its category
    SILENT = "silent"  # bar: a stalled worker's silence, from its last line to the input's end


@dataclass(frozen=True, slots=True)
class Mark:
    """One thing drawn on a job's timeline.

    ``row`` counts from 0 at the top; ``lane`` is the row's label (``attempt 2`` or a task
    name). Bars have an ``end``; point marks have ``end`` None. ``tone`` is a category
    value or an outcome (``succeeded``, ``running``, ``neutral``, ...), see :data:`TONES`.
    """

    kind: MarkKind
    row: int
    lane: str
    attempt: int
    start: datetime
    end: datetime | None
    tone: str
    label: str


def _short(text: str, limit: int = 140) -> str:
    line = " ".join(text.strip().splitlines()[0].split()) if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _clock(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def _error_task(event: Event) -> str | None:
    replica = event.match.field("replica")
    if isinstance(replica, str) and replica:
        return replica_task(replica)
    return None


def _exit_tone(code: int | None, task: str, attempt: Attempt, outcome: str) -> str:
    if code == 0:
        return "succeeded"
    # A non-zero exit takes the category of the failure message naming its worker, else the
    # attempt's, else user code: the platform's reading of a bare non-zero exit.
    for event in attempt.errors:
        if event.match.category is not None and _error_task(event) == task:
            return event.match.category.value
    if outcome in TONES and outcome not in ("succeeded", "running", "pending", "queued"):
        return outcome
    return Category.USER_CODE_EXCEPTION.value


def _worker_marks(worker: WorkerTimeline, attempt: Attempt, outcome: str, row: int) -> list[Mark]:
    lane, number = worker.task, attempt.number
    marks: list[Mark] = []
    if worker.first_seen is not None and worker.last_seen is not None:
        marks.append(
            Mark(
                MarkKind.WORKER,
                row,
                lane,
                number,
                worker.first_seen,
                worker.last_seen,
                "neutral",
                f"{lane}: seen {_clock(worker.first_seen)} to {_clock(worker.last_seen)}",
            )
        )
    last_exit_tone: str | None = None
    # Walk starts and exits in time order so that a restart takes the tone of the exit before it.
    steps: list[tuple[datetime, int, WorkerStart | WorkerExit]] = []
    steps += [(s.time, 1, s) for s in worker.starts if s.time is not None]
    steps += [(e.time, 0, e) for e in worker.exits if e.time is not None]
    # At the same instant an exit comes before the start it causes.
    steps.sort(key=lambda step: (step[0], step[1]))
    started = False
    for when, _, item in steps:
        if isinstance(item, WorkerExit):
            code = item.exit_code
            last_exit_tone = _exit_tone(code, lane, attempt, outcome)
            text = "exit" if code is None else f"exit {code}"
            marks.append(
                Mark(
                    MarkKind.EXIT,
                    row,
                    lane,
                    number,
                    when,
                    None,
                    last_exit_tone,
                    f"{lane}: {text} at {_clock(when)}",
                )
            )
            continue
        if not started:
            started = True
            marks.append(
                Mark(
                    MarkKind.START,
                    row,
                    lane,
                    number,
                    when,
                    None,
                    "neutral",
                    f"{lane}: started at {_clock(when)}",
                )
            )
        elif item.maintenance:
            marks.append(
                Mark(
                    MarkKind.VM_MOVE,
                    row,
                    lane,
                    number,
                    when,
                    None,
                    "maintenance",
                    f"{lane}: restarted on another VM at {_clock(when)}",
                )
            )
        else:
            tone = last_exit_tone or Category.USER_CODE_EXCEPTION.value
            marks.append(
                Mark(
                    MarkKind.RESTART,
                    row,
                    lane,
                    number,
                    when,
                    None,
                    tone,
                    f"{lane}: restarted at {_clock(when)}",
                )
            )
    return marks


def timeline_marks(diagnosis: Diagnosis) -> list[Mark]:
    """Everything the timeline chart of ``diagnosis`` draws, row by row.

    Per attempt: one ``attempt N`` row with a bar coloured by the attempt's outcome (a
    category, ``succeeded``, ``running``, ...) and the failure messages no worker row claims;
    then one row per worker with its bar, starts, restarts, VM moves, exits and the failure
    messages naming it. Things without a timestamp are left out (plain-text inputs), and a
    worker with nothing timed gets no row.
    """
    outcomes = {a.attempt: a.outcome for a in diagnosis.attempt_log}
    marks: list[Mark] = []
    # Each worker's row in the last attempt it is drawn in: where a stall's silence goes.
    last_rows: dict[str, tuple[int, int]] = {}
    row = 0
    for attempt in diagnosis.timeline.attempts:
        outcome = outcomes.get(attempt.number, "neutral")
        lane = f"attempt {attempt.number}"
        attempt_row = row
        attempt_marks: list[Mark] = []
        if attempt.start is not None and attempt.end is not None:
            attempt_marks.append(
                Mark(
                    MarkKind.ATTEMPT,
                    row,
                    lane,
                    attempt.number,
                    attempt.start,
                    attempt.end,
                    outcome,
                    f"attempt {attempt.number}: {outcome}, {_clock(attempt.start)} "
                    f"to {_clock(attempt.end)}",
                )
            )
        row += 1
        worker_rows: dict[str, int] = {}
        worker_marks: list[Mark] = []
        for worker in attempt.workers:
            found = _worker_marks(worker, attempt, outcome, row)
            if found:
                worker_rows[worker.task] = row
                last_rows[worker.task] = (row, attempt.number)
                worker_marks += found
                row += 1
        for event in attempt.events:
            # Only failure messages: detail lines (a harmless ModuleNotFoundError, say) are
            # evidence the card cites, not failures to draw.
            failure = event.kind is EventKind.ERROR
            if not failure or event.timestamp is None or event.match.category is None:
                continue
            task = _error_task(event) or event.task
            target = worker_rows.get(task or "", attempt_row)
            target_lane = lane if target == attempt_row else (task or lane)
            name = event.match.category.value
            worker_marks.append(
                Mark(
                    MarkKind.FAILURE,
                    target,
                    target_lane,
                    attempt.number,
                    event.timestamp,
                    None,
                    event.match.category.value,
                    f"{name} at {_clock(event.timestamp)}: {_short(event.text)}",
                )
            )
        if not attempt_marks and not worker_marks:
            row = attempt_row  # nothing timed in this attempt: no empty rows
            continue
        marks += attempt_marks + worker_marks
    marks += _silent_marks(diagnosis, last_rows)
    return sorted(
        marks, key=lambda m: (m.row, m.kind not in (MarkKind.ATTEMPT, MarkKind.WORKER), m.start)
    )


def _silent_marks(diagnosis: Diagnosis, rows: dict[str, tuple[int, int]]) -> list[Mark]:
    """A stalled job's silent workers, each a bar on its row from its last line to the
    input's end (the silence the verdict measured); none for a worker without a row."""
    stall = diagnosis.stalled
    if stall is None:
        return []
    marks = []
    for worker in stall.workers:
        task = replica_task(worker.replica)
        if task not in rows or stall.input_end <= worker.last_line:
            continue
        row, attempt = rows[task]
        marks.append(
            Mark(
                MarkKind.SILENT,
                row,
                task,
                attempt,
                worker.last_line,
                stall.input_end,
                "silent",
                f"{task}: silent from its last line at {_clock(worker.last_line)} to the"
                f" input's end at {_clock(stall.input_end)} ({duration_words(worker.silent_for)})",
            )
        )
    return marks


# Tick steps for the time axis, in seconds: the first that gives at most _MAX_TICKS ticks.
_TICK_STEPS = (
    1,
    2,
    5,
    10,
    15,
    30,
    60,
    120,
    300,
    600,
    900,
    1800,
    3600,
    7200,
    10800,
    21600,
    43200,
    86400,
    172800,
    604800,
)
_MAX_TICKS = 8


def _tick_step(span: timedelta, max_ticks: int = _MAX_TICKS) -> int:
    seconds = span.total_seconds()
    for step in _TICK_STEPS:
        if seconds / step <= max_ticks:
            return step
    return _TICK_STEPS[-1] * (int(seconds / _TICK_STEPS[-1] / max_ticks) + 1)


def time_ticks(start: datetime, end: datetime, max_ticks: int = _MAX_TICKS) -> list[datetime]:
    """Round instants between ``start`` and ``end`` (both included) to label an axis."""
    step = _tick_step(end - start, max_ticks)
    first = int((start - _EPOCH).total_seconds() // step + 1) * step
    last = (end - _EPOCH).total_seconds()
    ticks = []
    at = first
    while at <= last:
        ticks.append(_moved(_EPOCH, timedelta(seconds=at)))
        at += step
    return ticks


def _tick_label(when: datetime, start: datetime, end: datetime) -> str:
    if end - start < timedelta(minutes=2):
        return when.strftime("%H:%M:%S")
    if start.date() == end.date():
        return when.strftime("%H:%M")
    return when.strftime("%m-%d %H:%M")


@dataclass(frozen=True, slots=True)
class _Scale:
    start: datetime
    end: datetime
    left: float
    width: float

    def x(self, when: datetime) -> float:
        total = (self.end - self.start).total_seconds() or 1.0
        return self.left + self.width * (when - self.start).total_seconds() / total


def _f(value: float) -> str:
    return f"{value:.1f}"


def _title(label: str) -> str:
    return f"<title>{escape(label)}</title>"


_ROW = 24
_LABEL_WIDTH = 190
_WIDTH = 960
_LANE_CHARS = 26


# Width of one character of a 12 px axis label (digits, ':' and '-' of system-ui fonts are at
# most this wide), and the least space kept between two labels.
_CHAR_PX = 7.2
_LABEL_GAP = 10.0


def label_extent(x: float, text: str, anchor: str) -> tuple[float, float]:
    """The horizontal span an axis label drawn at ``x`` with ``anchor`` takes."""
    width = _CHAR_PX * len(text)
    if anchor == "end":
        return x - width, x
    if anchor == "start":
        return x, x + width
    return x - width / 2, x + width / 2


def place_labels(
    points: Sequence[tuple[float, str]], low: float, high: float
) -> list[tuple[float, str, str]]:
    """Axis labels ``(x, text)`` as ``(x, text, anchor)``, none overlapping another or
    leaving ``[low, high]``: a label that would run into the one before it is left out (its
    grid line stays), so dense ticks never print over each other."""
    placed: list[tuple[float, str, str]] = []
    last_end = float("-inf")
    for x, text in points:
        anchor = "middle"
        begin, end = label_extent(x, text, anchor)
        if end > high:
            anchor = "end"
        elif begin < low:
            anchor = "start"
        begin, end = label_extent(x, text, anchor)
        if begin < last_end + _LABEL_GAP or begin < low or end > high:
            continue
        placed.append((x, text, anchor))
        last_end = end
    return placed


def _shape(mark: Mark, x: float, y: float) -> str:
    colour = tone_colour(mark.tone)
    title = _title(mark.label)
    if mark.kind is MarkKind.START:
        return (
            f'<circle cx="{_f(x)}" cy="{_f(y)}" r="4.5" fill="#fff" stroke="#333" '
            f'stroke-width="1.5">{title}</circle>'
        )
    if mark.kind in (MarkKind.RESTART, MarkKind.VM_MOVE):
        fill = colour if mark.kind is MarkKind.RESTART else "#fff"
        points = f"{_f(x)},{_f(y - 6)} {_f(x + 5.5)},{_f(y + 4.5)} {_f(x - 5.5)},{_f(y + 4.5)}"
        return (
            f'<polygon points="{points}" fill="{fill}" stroke="{colour}" '
            f'stroke-width="1.5">{title}</polygon>'
        )
    if mark.kind is MarkKind.EXIT:
        return (
            f'<rect x="{_f(x - 1.5)}" y="{_f(y - 8)}" width="3" height="16" '
            f'fill="{colour}">{title}</rect>'
        )
    points = f"{_f(x)},{_f(y - 7)} {_f(x + 7)},{_f(y)} {_f(x)},{_f(y + 7)} {_f(x - 7)},{_f(y)}"
    return (
        f'<polygon points="{points}" fill="{colour}" stroke="#222" stroke-width="1">'
        f"{title}</polygon>"
    )


def _bar(mark: Mark, scale: _Scale, y: float) -> str:
    assert mark.end is not None
    x0 = scale.x(mark.start)
    width = max(scale.x(mark.end) - x0, 2.0)
    colour = tone_colour(mark.tone)
    if mark.kind is MarkKind.SILENT:
        # Outlined with a dashed line over the whole row's height: told apart from a
        # worker's bar without its colour.
        return (
            f'<rect class="jd-silent" x="{_f(x0)}" y="{_f(y - 9)}" width="{_f(width)}" '
            f'height="18" fill="{colour}" fill-opacity="0.3" stroke="{colour}" '
            f'stroke-width="1.5" stroke-dasharray="4,2">{_title(mark.label)}</rect>'
        )
    if mark.kind is MarkKind.ATTEMPT:
        return (
            f'<rect x="{_f(x0)}" y="{_f(y - 8)}" width="{_f(width)}" height="16" rx="3" '
            f'fill="{colour}" fill-opacity="0.22" stroke="{colour}" stroke-width="1.5">'
            f"{_title(mark.label)}</rect>"
        )
    return (
        f'<rect x="{_f(x0)}" y="{_f(y - 4)}" width="{_f(width)}" height="8" rx="2" '
        f'fill="{colour}">{_title(mark.label)}</rect>'
    )


# Shapes in the legend are grey: their colour on the chart is the category's.
_LEGEND_SHAPES = (
    (MarkKind.START, "start", "neutral"),
    (MarkKind.RESTART, "restart", "legend"),
    (MarkKind.VM_MOVE, "moved to another VM", "maintenance"),
    (MarkKind.EXIT, "exit", "legend"),
    (MarkKind.FAILURE, "failure message", "legend"),
)


def _legend(marks: Sequence[Mark], top: float) -> tuple[str, float]:
    """Shapes in use, then colours in use; returns the SVG and the height it takes."""
    kinds = {m.kind for m in marks}
    parts: list[str] = []
    x = float(_LABEL_WIDTH)
    for kind, text, tone in _LEGEND_SHAPES:
        if kind in kinds:
            sample = Mark(kind, 0, "", 0, datetime.min, None, tone, text)
            parts.append(_shape(sample, x + 6, top + 8))
            parts.append(f'<text x="{x + 16:.1f}" y="{top + 12:.1f}">{escape(text)}</text>')
            x += 26 + 7.2 * len(text)
    tones = sorted({m.tone for m in marks if m.tone != "neutral"})
    x = float(_LABEL_WIDTH)
    for tone in tones:
        label = _TONE_LABELS.get(tone, tone.replace("_", " "))
        parts.append(
            f'<rect x="{x:.1f}" y="{top + 28:.1f}" width="12" height="12" rx="2" '
            f'fill="{tone_colour(tone)}"/>'
            f'<text x="{x + 16:.1f}" y="{top + 38:.1f}">{escape(label)}</text>'
        )
        x += 30 + 7.2 * len(label)
    return "".join(parts), (48.0 if tones else 24.0)


def timeline_svg(diagnosis: Diagnosis) -> str:
    """The per-worker timeline of ``diagnosis`` as one ``<svg>`` element.

    Rows are attempts and, under each, its workers; time runs left to right. Hovering a
    mark shows what it is (an SVG ``<title>``). A job without timestamps gets a short note
    instead of a chart.
    """
    marks = timeline_marks(diagnosis)
    if not marks:
        return '<p class="jd-note">No timestamped events to draw.</p>'
    start = min(m.start for m in marks)
    end = max(m.end or m.start for m in marks)
    if end - start < timedelta(seconds=1):
        end = _moved(start, timedelta(seconds=1))
        start = _moved(end, -timedelta(seconds=1))  # at the last instant, there is no later
    # A little air at both ends so that marks on the edges are whole.
    pad = (end - start) * 0.02
    scale = _Scale(_moved(start, -pad), _moved(end, pad), _LABEL_WIDTH, _WIDTH - _LABEL_WIDTH - 12)
    lanes: dict[int, tuple[str, bool]] = {}
    for mark in marks:
        lanes.setdefault(mark.row, (mark.lane, mark.lane.startswith("attempt ")))
    rows = max(lanes) + 1
    top = 24
    plot_height = rows * _ROW
    parts: list[str] = []
    for row, (lane, is_attempt) in sorted(lanes.items()):
        band = top + row * _ROW
        if is_attempt:
            parts.append(
                f'<rect x="0" y="{band}" width="{_WIDTH}" height="{_ROW}" fill="#f1f4f7"/>'
            )
        text = lane if len(lane) <= _LANE_CHARS else lane[: _LANE_CHARS - 1] + "…"
        weight = ' font-weight="600"' if is_attempt else ""
        indent = 6 if is_attempt else 18
        parts.append(
            f'<text x="{indent}" y="{band + _ROW / 2 + 4:.1f}"{weight}>{escape(text)}'
            f"{_title(lane)}</text>"
        )
    ticks = [
        (scale.x(tick), _tick_label(tick, scale.start, scale.end))
        for tick in time_ticks(scale.start, scale.end)
    ]
    for x, _ in ticks:
        parts.append(
            f'<line x1="{_f(x)}" y1="{top}" x2="{_f(x)}" y2="{top + plot_height}" '
            'stroke="#d8dde3" stroke-dasharray="2,3"/>'
        )
    for x, text, anchor in place_labels(ticks, _LABEL_WIDTH - 8, _WIDTH):
        parts.append(
            f'<text class="jd-tick" x="{_f(x)}" y="{top - 8}" text-anchor="{anchor}" '
            f'fill="#555">{escape(text)}</text>'
        )
    for mark in marks:
        y = top + mark.row * _ROW + _ROW / 2
        if mark.end is not None:
            parts.append(_bar(mark, scale, y))
        else:
            parts.append(_shape(mark, scale.x(mark.start), y))
    legend, legend_height = _legend(marks, top + plot_height + 10)
    parts.append(legend)
    height = top + plot_height + 10 + legend_height
    job = job_label(diagnosis)
    return (
        f'<svg class="jd-chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_WIDTH} '
        f'{height}" width="100%" style="max-width:{_WIDTH}px" role="img" '
        f'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif" font-size="12" '
        f'aria-label="{escape(f"Timeline of job {job}, times in UTC")}">'
        + "".join(parts)
        + "</svg>"
    )


@dataclass(frozen=True, slots=True)
class Bucket:
    """Failures of one time bucket, by category."""

    start: datetime
    end: datetime
    counts: Counter[str]


# Bucket widths, in seconds, for failure counts over time.
_BUCKET_STEPS = (
    60,
    300,
    900,
    1800,
    3600,
    3 * 3600,
    6 * 3600,
    12 * 3600,
    86400,
    7 * 86400,
    28 * 86400,
)


def failure_buckets(
    failures: Iterable[tuple[datetime, str]], max_buckets: int = 36
) -> list[Bucket]:
    """Count ``(time, category)`` failures per time bucket, oldest first, gaps included.

    The bucket width is the smallest round width (a minute up to four weeks) that keeps the
    number of buckets at most ``max_buckets``; buckets start on multiples of that width (UTC).
    """
    points = sorted(failures)
    if not points:
        return []
    first, last = points[0][0], points[-1][0]
    seconds = (last - first).total_seconds()
    width = next((w for w in _BUCKET_STEPS if seconds / w < max_buckets), None)
    if width is None:
        width = _BUCKET_STEPS[-1] * (int(seconds / _BUCKET_STEPS[-1] / max_buckets) + 1)
    base = int((first - _EPOCH).total_seconds() // width) * width
    count = int(((last - _EPOCH).total_seconds() - base) // width) + 1
    buckets = [
        Bucket(
            _moved(_EPOCH, timedelta(seconds=base + i * width)),
            _moved(_EPOCH, timedelta(seconds=base + (i + 1) * width)),
            Counter(),
        )
        for i in range(count)
    ]
    for when, category in points:
        index = int(((when - _EPOCH).total_seconds() - base) // width)
        buckets[index].counts[category] += 1
    return buckets


def failures_svg(failures: Iterable[tuple[datetime, str]]) -> str:
    """Failures over time as stacked bars, one colour per category, as one ``<svg>``."""
    buckets = failure_buckets(failures)
    if not buckets:
        return '<p class="jd-note">No failure with a timestamp to draw.</p>'
    categories = sorted({c for b in buckets for c in b.counts})
    highest = max(sum(b.counts.values()) for b in buckets)
    left, top, plot_w, plot_h = 48, 14, _WIDTH - 60, 200
    slot = plot_w / len(buckets)
    parts: list[str] = []
    step = max(1, _nice_step(highest))
    for value in range(0, highest + 1, step):
        y = top + plot_h - plot_h * value / highest
        parts.append(
            f'<line x1="{left}" y1="{_f(y)}" x2="{left + plot_w}" y2="{_f(y)}" stroke="#e3e7ec"/>'
        )
        parts.append(
            f'<text x="{left - 6}" y="{_f(y + 4)}" text-anchor="end" fill="#555">{value}</text>'
        )
    for index, bucket in enumerate(buckets):
        x = left + index * slot + slot * 0.12
        y = float(top + plot_h)
        for category in categories:
            n = bucket.counts.get(category, 0)
            if not n:
                continue
            h = plot_h * n / highest
            y -= h
            label = (
                f"{n} {category.replace('_', ' ')} from {_clock(bucket.start)} "
                f"to {_clock(bucket.end)} UTC"
            )
            parts.append(
                f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(slot * 0.76)}" '
                f'height="{_f(h)}" fill="{tone_colour(category)}">{_title(label)}'
                "</rect>"
            )
    first, last = buckets[0].start, buckets[-1].end
    ticks = [
        (
            left + plot_w * (tick - first).total_seconds() / (last - first).total_seconds(),
            _tick_label(tick, first, last),
        )
        for tick in time_ticks(first, last, 7)
    ]
    for x, _ in ticks:
        parts.append(
            f'<line x1="{_f(x)}" y1="{top + plot_h}" x2="{_f(x)}" '
            f'y2="{top + plot_h + 5}" stroke="#777"/>'
        )
    for x, text, anchor in place_labels(ticks, 0, _WIDTH):
        parts.append(
            f'<text class="jd-tick" x="{_f(x)}" y="{top + plot_h + 18}" text-anchor="{anchor}" '
            f'fill="#555">{escape(text)}</text>'
        )
    parts.append(
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" '
        f'y2="{top + plot_h}" stroke="#777"/>'
    )
    x = float(left)
    legend_y = top + plot_h + 34
    for category in categories:
        label = category.replace("_", " ")
        parts.append(
            f'<rect x="{x:.1f}" y="{legend_y}" width="12" height="12" rx="2" '
            f'fill="{tone_colour(category)}"/><text x="{x + 16:.1f}" '
            f'y="{legend_y + 10}">{escape(label)}</text>'
        )
        x += 30 + 7.2 * len(label)
    height = legend_y + 20
    return (
        f'<svg class="jd-chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_WIDTH} '
        f'{height}" width="100%" style="max-width:{_WIDTH}px" role="img" '
        f'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif" font-size="12" '
        'aria-label="Failed attempts over time by category, times in UTC">'
        + "".join(parts)
        + "</svg>"
    )


def _nice_step(highest: int) -> int:
    """A round gridline step giving at most five lines up to ``highest``."""
    for step in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000):
        if highest / step <= 5:
            return step
    return highest // 5 or 1
