"""The ``jobdoctor`` console script: the typer app (:mod:`analyzer.cli`) run once, then left
without tearing the interpreter down.

Every command line is parsed by typer. A hand-written parser of ``diagnose``'s common command
lines used to sit here, beside typer, to skip typer's import and its building of click's
parameters; measured at 270c3a6 (interleaved, 30 runs each, CPU user+sys medians
on a loaded 2-core host, a bare ``import analyzer.cli.commands`` 49 ms, ``import typer,
analyzer.cli`` 85 ms):

- ``jobdoctor explain "Internal error occurred for the current attempt."``: 183.0 ms with it,
  182.5 ms without (it never parsed ``explain``: no difference);
- ``jobdoctor diagnose -f json`` of a small sink file (``sample_logs/cuda-oom``): 237 ms with
  it, 263 ms without: 25 ms, a tenth of a small diagnosis, nothing on a large one.

``explain``'s start-up does not need it and 25 ms on a diagnosis does not pay for a second
parser that must track typer's rules (213 lines, and a 160-line test mirroring them), so it
went. What stays keeps start-up short for every command: typer builds only the command run
(:func:`analyzer.cli.command_app`), the cyclic collector is off, and the process leaves with
``os._exit``.
"""

from __future__ import annotations

import gc
import os
import sys
from contextlib import suppress
from typing import NoReturn

from analyzer.cli import commands


def run() -> int | str | None:
    """Run the command line this process was started with (``sys.argv``) and give its exit
    code (a string: a message to print, exit 1)."""
    from analyzer.cli.app import command_app

    # The typer app reads sys.argv itself: given the arguments, click would not expand
    # their globs on Windows.
    try:
        command_app(sys.argv[1:])()
    except SystemExit as exc:
        return exc.code
    return 0


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
