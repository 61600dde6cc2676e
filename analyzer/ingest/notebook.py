"""Jupyter notebooks (``.ipynb``, nbformat 4): the saved outputs of their cells, in order.

A notebook that ran the Vertex AI SDK keeps what the user saw (platform.md section 10): each
logged line in a ``stream`` output, the SDK's exception as an ``error`` output (``ename``,
``evalue`` and the ``traceback`` lines IPython coloured with ANSI codes), and the value of a
cell's last expression as an ``execute_result``. They are read cell by cell, output by output,
each output's text line by line (as :mod:`analyzer.ingest.plain` reads a text: times, colours,
the SDK's two-line messages), and every record's origin names its cell and its line there
(:class:`~analyzer.ingest.records.CellOrigin`).

The notebook is read with orjson and checked against the fields nbformat 4's schema documents
(``nbformat``, ``cells``, each cell's ``cell_type`` and a code cell's ``outputs``, each
output's ``output_type`` and the fields of its type), not with the ``nbformat`` package: it
brings jsonschema, fastjsonschema, traitlets and jupyter_core (tens of milliseconds of
start-up and four dependencies) for a schema this reader needs five fields of. A notebook is
one JSON document, read whole.

What counts as the input's lines here are the outputs' text lines (``InputStats.lines``): each
is used (it gave a record) or skipped with its reason; an output without text (a plot, an HTML
table without a ``text/plain`` form) counts as one line, skipped as :data:`NO_TEXT`. The
source of the cells is the user's code, no output: it is not read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, BinaryIO

import orjson

from analyzer.core.errors import InputError
from analyzer.ingest.lines import BOM
from analyzer.ingest.plain import line_records
from analyzer.ingest.records import CellOrigin, InputStats, LogRecord
from analyzer.ingest.sdklines import sdk_messages

NO_TEXT = "notebook output without text"
# nbformat 4 (its JSON schema, nbformat.v4.nbformat.v4.schema.json): the output types and
# the field holding each one's text.
_STREAM, _ERROR = "stream", "error"
_RESULTS = ("execute_result", "display_data")
_TEXT_PLAIN = "text/plain"
_FIX = "save it again from Jupyter, or pass the cell's output as text"
# A terminal shows what follows a line's last carriage return (a progress bar redrawn).
_REDRAWN = re.compile(r"^.*\r(?=.)", re.DOTALL)


def read_notebook(stream: BinaryIO, stats: InputStats) -> Iterator[LogRecord]:
    """Yield the records of a notebook's saved outputs (see the module docstring); an
    InputError naming the file (and the line, for JSON that is not valid) when it is no
    notebook of nbformat 4."""
    notebook = _loaded(stream.read(), stats.path)
    return sdk_messages(line_records(_output_lines(notebook, stats), stats), stats)


def _loaded(data: bytes, path: str) -> list[Any]:
    """The cells of the notebook ``data``, checked (see the module docstring)."""
    if data.startswith(BOM):
        data = data[len(BOM) :]
    try:
        notebook = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise InputError(
            f"{path}:{error.lineno}: not a valid notebook: its JSON is damaged at line"
            f" {error.lineno}, column {error.colno} ({error.msg}): {_FIX}"
        ) from None
    if not isinstance(notebook, dict):
        raise InputError(f"{path}: not a notebook: its JSON is no object: {_FIX}")
    version = notebook.get("nbformat")
    if version != 4:
        said = "no nbformat version" if version is None else f"nbformat {version!r}"
        raise InputError(
            f"{path}: not a notebook of nbformat 4 ({said}): convert it with"
            " `jupyter nbconvert --to notebook`, or pass the cell's output as text"
        )
    cells = notebook.get("cells")
    if not isinstance(cells, list):
        raise InputError(f"{path}: not a valid notebook: its 'cells' is not a list: {_FIX}")
    for number, cell in enumerate(cells, start=1):
        problem = _cell_problem(cell)
        if problem is not None:
            raise InputError(f"{path}: not a valid notebook: cell {number}: {problem}: {_FIX}")
    return cells


def _cell_problem(cell: Any) -> str | None:
    """What is wrong with ``cell`` by nbformat 4's schema, as far as it is read; None."""
    if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
        return "it has no 'cell_type'"
    if cell["cell_type"] != "code":
        return None
    outputs = cell.get("outputs")
    if not isinstance(outputs, list):
        return "its 'outputs' is not a list"
    for output in outputs:
        if not isinstance(output, dict) or not isinstance(output.get("output_type"), str):
            return "an output has no 'output_type'"
    return None


def _output_lines(cells: list[Any], stats: InputStats) -> Iterator[tuple[CellOrigin, str]]:
    """Each text line of the cells' outputs with its origin, counted in ``stats.lines``; an
    output without text counted and skipped."""
    path = stats.path
    for cell_number, cell in enumerate(cells, start=1):
        if cell["cell_type"] != "code":
            continue
        in_cell = 0
        for output in cell["outputs"]:
            lines = _text_lines(output)
            if not lines:
                stats.lines += 1
                stats.skip(NO_TEXT)
                continue
            for line in lines:
                stats.lines += 1
                in_cell += 1
                yield CellOrigin(path, stats.lines, 0, cell_number, in_cell), line


def _text_lines(output: dict[str, Any]) -> list[str]:
    """The text lines of one output: a stream's text, an error's traceback (else its ``ename:
    evalue``), a result's ``text/plain``; [] for an output without text."""
    kind = output["output_type"]
    if kind == _STREAM:
        text = _joined(output.get("text"))
    elif kind == _ERROR:
        # A list of strings, a frame (or a block of lines) each, without line ends.
        traceback = output.get("traceback")
        lines = (
            [part for part in traceback if isinstance(part, str)]
            if isinstance(traceback, list)
            else []
        )
        text = "\n".join(lines) if lines else _error_line(output)
    elif kind in _RESULTS:
        data = output.get("data")
        text = _joined(data.get(_TEXT_PLAIN)) if isinstance(data, dict) else ""
    else:
        text = ""
    if not text:
        return []
    return [_REDRAWN.sub("", line.rstrip("\r")) for line in text.rstrip("\n").split("\n")]


def _joined(value: Any) -> str:
    """A "multiline string" of nbformat: a string, or a list of strings to concatenate (the
    lines with their line ends)."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        return ""
    return "".join(part for part in value if isinstance(part, str))


def _error_line(output: dict[str, Any]) -> str:
    name, value = output.get("ename"), output.get("evalue")
    if not isinstance(name, str) or not name:
        return ""
    return f"{name}: {value}" if isinstance(value, str) and value else name
