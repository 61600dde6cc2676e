"""The ``jobdoctor`` console script: the common command lines parsed without typer.

Importing typer and turning a command's signature into click's parameters cost about 90M
instructions on every run: a ninth of ``jobdoctor diagnose`` on a small file (823M -> 731M),
a seventh of what the parent does on a 200 MB export before it forks its worker (616M ->
532M; callgrind). So the command line of a file diagnosis, ``jobdoctor diagnose [OPTIONS]
PATHS...`` with the options below, is parsed here, strictly, and run by the same body as the
typer command (:func:`analyzer.cli.commands.diagnose`). Anything else goes to the typer app
(:mod:`analyzer.cli.app`), which parses, helps and fails as it always has: other commands,
``--help``, shell completion, the live and BigQuery options, a value that is not one of an
option's choices, a path option naming a file that cannot be read, an option glued to its
value (``-fjson``) or to another (``-qf``), ``--``, a value that begins with ``-``, and
anything unknown. ``tests/test_console.py`` runs a table of command lines both ways and
compares their output and exit codes.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable, Sequence
from contextlib import suppress
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import NoReturn

from analyzer.cli import commands
from analyzer.cli.commands import ColorMode, FailOn, GroupBy, Lang, ReportFormat

# A value's kind: a flag (no value), text, a path (typer's checks: it must be readable when it
# exists), several paths (the option repeated), or one of an enum's values.
FLAG = "flag"
TEXT = "text"
PATH = "path"
PATHS = "paths"
Kind = str | type[StrEnum]

# ``diagnose``'s options parsed here: name -> (parameter of commands.diagnose, kind). Those of
# live and BigQuery reads are left to typer: they start network clients, whose own start-up
# dwarfs typer's. tests/test_console.py checks this table against the typer command.
DIAGNOSE_OPTIONS: dict[str, tuple[str, Kind]] = {
    "--job": ("job", TEXT),
    "--format": ("output", ReportFormat),
    "-f": ("output", ReportFormat),
    "--quiet": ("quiet", FLAG),
    "-q": ("quiet", FLAG),
    "--fail-on": ("fail_on", FailOn),
    "--rules": ("rules", PATHS),
    "--policy": ("policy", PATH),
    "--since": ("since", TEXT),
    "--start": ("start", TEXT),
    "--end": ("end", TEXT),
    "--lang": ("lang", Lang),
    "--job-spec": ("job_spec", PATH),
    "--color": ("color", ColorMode),
    "--dask": ("dask", TEXT),
    "--group-by": ("group_by", GroupBy),
}


def quick_command(args: Sequence[str]) -> Callable[[], None] | None:
    """The command line ``args`` (without the program's name) as a call of its command's
    body, when this parser understands all of it as typer would; else None (typer's)."""
    if len(args) < 2 or args[0] != "diagnose" or os.name == "nt":
        return None  # Windows: click expands globs in the arguments itself
    if any(name.endswith("_COMPLETE") for name in os.environ):
        return None  # shell completion, typer's (_JOBDOCTOR_COMPLETE)
    given: dict[str, object] = {}
    paths: list[str] = []
    rest = iter(args[1:])
    for token in rest:
        if token == "-" or not token.startswith("-"):
            paths.append(token)  # click: a lone "-" (stdin) is an argument
            continue
        name, glued, value = token.partition("=")
        if not name.startswith("--") and glued:
            return None  # "-f=json": click reads "=json" as the value
        known = DIAGNOSE_OPTIONS.get(name)
        if known is None:
            return None
        parameter, kind = known
        if kind == FLAG:
            if glued:
                return None
            given[parameter] = True
            continue
        if not glued:
            value = next(rest, "")
        # An empty value, or one that reads like an option: click's rules, left to click.
        if not value or value.startswith("-"):
            return None
        converted = _converted(value, kind)
        if converted is None:
            return None
        if kind == PATHS:
            listed = given.setdefault(parameter, [])
            assert isinstance(listed, list)
            listed.append(converted)
        else:
            given[parameter] = converted  # given twice: the last one, as click takes it
    return partial(commands.diagnose, paths or None, **given)  # type: ignore[arg-type]


def _converted(value: str, kind: Kind) -> object | None:
    """``value`` as typer converts it for an option of ``kind``; None where typer would
    refuse it (and say why)."""
    if kind == TEXT:
        return value
    if kind in (PATH, PATHS):
        # typer's paths: readable when they exist (an error else); not checked otherwise.
        with suppress(OSError):
            os.stat(value)
            if not os.access(value, os.R_OK):
                return None
        return Path(value)
    assert isinstance(kind, type)
    try:
        return kind(value)  # the exact value: typer's choices are case-sensitive
    except ValueError:
        return None


def run(*, quick: bool = True) -> int | str | None:
    """Run the command line this process was started with (``sys.argv``) and give its exit
    code (a string: a message to print, exit 1). ``quick``: parsed here when this parser
    understands it (:func:`quick_command`); False: by the typer app, always."""
    # The typer app reads sys.argv itself: given the arguments, click would not expand
    # their globs on Windows.
    command = quick_command(sys.argv[1:]) if quick else None
    try:
        if command is None:
            from analyzer.cli.app import command_app

            command_app(sys.argv[1:])()
        else:
            _run_quick(command)
    except SystemExit as exc:
        return exc.code
    return 0


def _run_quick(command: Callable[[], None]) -> None:
    """``command`` as the typer app would run it: Ctrl-C before the body's own handling is
    exit 130, and an error that escapes the body (an I/O error not of a full disk) is shown
    by typer's hook, as when typer ran it."""
    try:
        command()
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except Exception as exc:
        _shown_by_typer(exc)
        raise


def _shown_by_typer(exc: Exception) -> None:
    """Have typer's exception hook show ``exc`` when it reaches the top, as typer's app does
    for what escapes a command (its traceback, without locals: they may hold log content)."""
    import typer.main

    from analyzer.cli.app import app

    config = getattr(typer.main, "DeveloperExceptionConfig", None)
    name = getattr(typer.main, "_typer_developer_exception_attr_name", None)
    if config is None or name is None:  # another typer: Python's own traceback
        return
    sys.excepthook = typer.main.except_hook
    setattr(
        exc,
        name,
        config(
            pretty_exceptions_enable=app.pretty_exceptions_enable,
            pretty_exceptions_show_locals=app.pretty_exceptions_show_locals,
            pretty_exceptions_short=app.pretty_exceptions_short,
        ),
    )


def main() -> None:
    """Entry point of the ``jobdoctor`` console script."""
    # A command runs once and leaves with os._exit (below). Start-up and the stages make
    # long-lived objects (modules, classes, the rule book, the scan's tallies) and hardly a
    # reference cycle, so the cyclic collector only walks them again and again: about 60
    # collections, 10 ms of a diagnose of a small file and 24 ms of the 200 MB fleet's parent
    # (gc.callbacks, load 3.5; 1.5% of the instructions: the walk misses the caches), freeing
    # nothing (the same peak RSS on the bench rows, 200 MB and 1 GB). What reads through a
    # network client (live logs, BigQuery, fetch, --follow, which may run for hours) collects
    # again: those libraries are not ours to vouch for.
    gc.disable()
    leave(run())


def leave(code: int | str | None) -> NoReturn:
    """Leave with exit ``code`` once what was written is flushed (a string is printed on
    stderr, exit 1), without tearing down every object one by one: 20-50 ms after a large
    input, with nothing left to do."""
    if isinstance(code, str):
        sys.stderr.write(code + "\n")
        code = 1
    try:
        sys.stdout.flush()
    except OSError as exc:
        # What was still buffered did not fit (stdout on a full disk): not a success.
        if exc.errno in commands.FULL:
            with suppress(OSError, ValueError):
                commands.say(commands.full_message(exc))
            code = commands.EXIT_USAGE
    except ValueError:  # closed
        pass
    # The reader may have gone away (| head), or the stream be closed.
    with suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(code or 0)
