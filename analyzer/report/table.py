"""The fleet table on a terminal: every column kept at any width, like ``kubectl get``.

Written to a file or a pipe, each job is one line with every cell whole (for ``grep`` and
``awk``). On a terminal too narrow for that, no column is dropped: the numeric headers take
their short names (``ATT``, ``RETR``, ``RSTRT``) and times drop their year and seconds if that
keeps rows on fewer lines (:func:`layout`), and the cells that hold words (the job's label, the
time, the cause) fold onto more lines at word boundaries (a space, else after ``_``, ``-``,
``/`` or ``.`` inside a long name), so a row may take two or three lines but reads whole:
``recovered from`` is never cut inside a word. ``--format wide`` adds columns
(:data:`WIDE_HEADER`) and never folds, as ``kubectl -o wide``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text

from analyzer.report.controls import visible
from analyzer.report.facts import clock, job_label, span
from analyzer.report.fleet import hours, job_summary
from analyzer.report.overview import TABLE_HEADER, TableRow, row_cells, table_rows
from analyzer.report.signatures import Recurring, failed_attempts, recurring
from analyzer.verdict.diagnosis import Diagnosis, JobState

GAP = "  "
NUMERIC = frozenset({"ATTEMPTS", "RETRIES", "RESTARTS", "ATT", "RETR", "RSTRT", "MACHINE-H"})
# The short names of the numeric columns, taken when the full ones fold more rows.
_SHORT = {"ATTEMPTS": "ATT", "RETRIES": "RETR", "RESTARTS": "RSTRT"}
# Columns whose cells fold, and the fewest cells each keeps: a date, a job id, a category.
_FOLDING = {"JOB": 19, "LAST SEEN (UTC)": 11, "CAUSE": 12, "SIGNATURE": 24}
# How the room left over goes to the folding columns, in turn (up to so many cells): the
# cause first as far as the longest category name, then the time on one line.
_ROOM_ORDER = (
    ("CAUSE", 25),
    ("SIGNATURE", 40),
    ("LAST SEEN (UTC)", 19),
    ("CAUSE", 1 << 16),
    ("SIGNATURE", 1 << 16),
    ("JOB", 1 << 16),
)
WIDE_HEADER = (
    *TABLE_HEADER,
    "FIRST SEEN (UTC)",
    "TIME LOST",
    "MACHINE-H",
    "REPLICA",
    "EXIT",
    "REGION",
    "SIGNATURE",
)
_STATE_STYLE = {
    JobState.SUCCEEDED: "bold green",
    JobState.FAILED: "bold red",
    JobState.CANCELLED: "bold yellow",
}
_STALLED_STYLE = "bold magenta"
_BREAK_AFTER = re.compile(r"(?<=[_\-/.])")


def fold(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` cells, broken at spaces; a word longer than a
    line is broken after a ``_``, ``-``, ``/`` or ``.`` inside it, and only a piece with
    none of them is cut where the line ends."""
    width = max(width, 1)
    lines: list[str] = []
    for word in text.split():
        for index, chunk in enumerate(_chunks(word, width)):
            glue = "" if index else " "
            if lines and cell_len(lines[-1] + glue + chunk) <= width:
                lines[-1] += glue + chunk
            else:
                lines.append(chunk)
    return lines or [""]


def _chunks(word: str, width: int) -> list[str]:
    if cell_len(word) <= width:
        return [word]
    chunks: list[str] = []
    part = ""
    for piece in _BREAK_AFTER.split(word):
        if part and cell_len(part + piece) > width:
            chunks.append(part)
            part = ""
        part += piece
        while cell_len(part) > width:
            chunks.append(part[:width])
            part = part[width:]
    if part:
        chunks.append(part)
    return chunks


@dataclass(frozen=True, slots=True)
class Grid:
    """A table laid out: its header and its rows, each a list of lines of padded cells."""

    header: list[list[str]]
    rows: list[list[list[str]]]
    names: list[str]
    gap: str = GAP


def _natural(header: Sequence[str], cells: Sequence[Sequence[str]]) -> list[int]:
    return [max([cell_len(h)] + [cell_len(c[i]) for c in cells]) for i, h in enumerate(header)]


def _widths(
    header: Sequence[str], cells: Sequence[Sequence[str]], width: int, gap: str = GAP
) -> list[int] | None:
    """Column widths that fit ``width`` with the folding columns folded; None if none do."""
    natural = _natural(header, cells)
    sizes = list(natural)
    folding = [i for i, h in enumerate(header) if h in _FOLDING]
    for i in folding:
        sizes[i] = min(natural[i], _FOLDING[header[i]])
    fixed = sum(sizes) + len(gap) * (len(sizes) - 1)
    room = width - fixed
    if room < 0:
        return None
    for name, most in _ROOM_ORDER:
        if name in header:
            i = header.index(name)
            grow = max(0, min(room, natural[i] - sizes[i], most - sizes[i]))
            sizes[i] += grow
            room -= grow
    return sizes


def _pad(text: str, size: int, name: str) -> str:
    pad = " " * max(0, size - cell_len(text))
    return pad + text if name in NUMERIC else text + pad


def _lay(
    header: Sequence[str], cells: Sequence[Sequence[str]], sizes: Sequence[int], gap: str = GAP
) -> Grid:
    def folded(values: Sequence[str]) -> list[list[str]]:
        columns = [
            fold(v, sizes[i]) if header[i] in _FOLDING or cell_len(v) > sizes[i] else [v]
            for i, v in enumerate(values)
        ]
        depth = max(len(c) for c in columns)
        return [
            [
                _pad(c[line] if line < len(c) else "", sizes[i], header[i])
                for i, c in enumerate(columns)
            ]
            for line in range(depth)
        ]

    return Grid(folded(header), [folded(v) for v in cells], list(header), gap)


def layout(header: Sequence[str], cells: Sequence[Sequence[str]], width: int | None) -> Grid:
    """The table of ``cells`` under ``header``: one line a row when ``width`` is None (not a
    terminal) or when it fits, else folded to ``width`` (see the module docstring). Every
    column is kept; at a width too narrow for even the folded table, rows run past it.

    Folded, the table is laid out three ways and the one of the fewest lines is kept (the
    first of them on a tie): as it is; with the short numeric headers and one space between
    columns; and so with times shortened to ``MM-DD HH:MM`` as well.
    """
    natural = _natural(header, cells)
    if width is None or sum(natural) + len(GAP) * (len(natural) - 1) <= width:
        return _lay(header, cells, natural)
    short = [_SHORT.get(h, h) for h in header]
    candidates = (
        (list(header), cells, GAP),
        (short, cells, " "),
        (short, _short_times(header, cells), " "),
    )
    grids = []
    for names, values, gap in candidates:
        sizes = _widths(names, values, width, gap)
        if sizes is not None:
            grids.append(_lay(names, values, sizes, gap))
    if grids:
        return min(grids, key=lambda g: len(g.header) + sum(len(row) for row in g.rows))
    # Narrower than the folded table: the narrowest it can be, running past the width rather
    # than losing a column.
    values = _short_times(header, cells)
    least = zip(_natural(short, values), short, strict=True)
    return _lay(short, values, [min(n, _FOLDING.get(h, n)) for n, h in least], " ")


_CLOCK = re.compile(r"^\d{4}-(\d\d-\d\d \d\d:\d\d):\d\d$")


def _short_times(header: Sequence[str], cells: Sequence[Sequence[str]]) -> list[list[str]]:
    """``cells`` with the times of the last-seen column as ``MM-DD HH:MM``: a row on one
    line where the year and the seconds would fold it onto two."""
    column = header.index("LAST SEEN (UTC)")
    shortened = [list(row) for row in cells]
    for row in shortened:
        row[column] = _CLOCK.sub(r"\1", row[column])
    return shortened


def _wide_cells(diagnosis: Diagnosis) -> tuple[str, ...]:
    summary = job_summary(diagnosis)
    signatures = recurring(failed_attempts(diagnosis, summary.job))
    return (
        clock(summary.first_seen),
        span(summary.time_lost),
        hours(summary.machine_hours),
        summary.replica or "-",
        "-" if summary.exit_code is None else str(summary.exit_code),
        summary.region or "-",
        signatures[0].signature.text if signatures else "-",
    )


def _cells(rows: Sequence[TableRow], diagnoses: Sequence[Diagnosis], wide: bool) -> list[list[str]]:
    cells = [[visible(c) for c in row_cells(row)] for row in rows]
    if wide:
        for values, diagnosis in zip(cells, diagnoses, strict=True):
            values.extend(visible(c) for c in _wide_cells(diagnosis))
    return cells


def _header_texts(grid: Grid) -> list[Text]:
    lines = []
    for header_line in grid.header:
        title = Text(grid.gap.join(header_line).rstrip())
        title.stylize("bold")
        lines.append(title)
    return lines


def _row_texts(grid: Grid, row: list[list[str]], state: JobState, stalled: bool) -> list[Text]:
    state_style = _STALLED_STYLE if stalled else _STATE_STYLE.get(state, "bold cyan")
    lines = []
    for physical in row:
        line = Text()
        for index, value in enumerate(physical):
            if index:
                line.append(grid.gap)
            style = state_style if grid.names[index] == "STATE" else ""
            line.append(value, style=style)
        line.rstrip()
        lines.append(line)
    return lines


def _grid(
    diagnoses: Sequence[Diagnosis], width: int | None, wide: bool
) -> tuple[Grid, list[TableRow]]:
    rows = table_rows(diagnoses)
    header = list(WIDE_HEADER if wide else TABLE_HEADER)
    grid = layout(header, _cells(rows, diagnoses, wide), None if wide else width)
    return grid, rows


def table_lines(
    diagnoses: Sequence[Diagnosis], width: int | None, *, wide: bool = False
) -> list[Text]:
    """The fleet table of ``diagnoses`` (in the order given) as lines: folded to ``width`` on a
    terminal (None: one line a row), with :data:`WIDE_HEADER`'s columns when ``wide``."""
    grid, rows = _grid(diagnoses, width, wide)
    lines = _header_texts(grid)
    for row, facts in zip(grid.rows, rows, strict=True):
        lines.extend(_row_texts(grid, row, facts.state, facts.stalled))
    return lines


def grouped_table_lines(
    diagnoses: Sequence[Diagnosis], width: int | None, *, wide: bool = False
) -> list[Text]:
    """The fleet table by failure signature (``--group-by signature``): one header, then the
    most costly signature first, a heading line each (its jobs, failed attempts and time
    lost) over its jobs' rows; the jobs without a failed attempt last, under ``no failure``.
    A job whose attempts failed in two ways is under both."""
    labels = {job_label(d): d for d in diagnoses}
    groups = recurring(a for d in diagnoses for a in failed_attempts(d, job_label(d)))
    placed = {job for group in groups for job in group.jobs}
    sections = [(_heading(g, width), [labels[j] for j in g.jobs]) for g in groups]
    rest = [d for label, d in labels.items() if label not in placed]
    if rest:
        sections.append(([Text("no failure", style="bold")], rest))
    # One layout for every section, so that the columns line up from one to the next.
    grid, rows = _grid([d for _, members in sections for d in members], width, wide)
    lines = _header_texts(grid)
    index = 0
    for heading, members in sections:
        lines += [Text(), *heading]
        for _ in members:
            facts = rows[index]
            lines.extend(_row_texts(grid, grid.rows[index], facts.state, facts.stalled))
            index += 1
    return lines


def _heading(group: Recurring, width: int | None) -> list[Text]:
    jobs = len(group.jobs)
    counts = (
        f"{jobs} job{'s' if jobs != 1 else ''}, {group.attempts} failed"
        f" attempt{'s' if group.attempts != 1 else ''}, {span(group.time_lost)} lost"
    )
    text = f"{visible(group.signature.text)} ({counts})"
    return [Text(line, style="bold") for line in ([text] if width is None else fold(text, width))]
