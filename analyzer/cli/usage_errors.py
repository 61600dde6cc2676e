"""typer's usage errors as one line in jobdoctor's words, exit 2.

typer shows a usage error as the usage line, a hint and a box that rich draws across the
terminal (five lines or more); jobdoctor's own errors are one line on stderr, which scripts
grep: ``jobdoctor: --format: 'xml' is not one of text, json, jsonl, yaml, markdown, table``.
:class:`OneLineGroup` and :class:`OneLineCommand`, typer's group and command classes with
their parsing wrapped, turn every usage error (a bad value, a missing argument, an unknown
option or command) into such a line. ``--help``, and no arguments at all, still show the help.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from analyzer.cli.commands import say

try:  # typer 0.26 on parses with its own copy of click: its exceptions are that copy's
    from typer._click import core as click_core
    from typer._click import exceptions as click_errors
except ImportError:  # an older typer, on click itself
    from click import core as click_core  # type: ignore[no-redef]
    from click import exceptions as click_errors  # type: ignore[no-redef]


def usage_line(error: click_errors.UsageError, command: str) -> str:
    """``error``, raised while parsing ``command`` (its names after the program's, "" for
    the program's own options), as one line in jobdoctor's words: the option or the command
    it concerns, then what is wrong (``--format: 'xml' is not one of text, json, ...``)."""
    param = getattr(error, "param", None)
    if isinstance(error, click_errors.BadParameter) and param is not None:
        if isinstance(error, click_errors.MissingParameter):
            return f"{command or 'jobdoctor'}: missing {param.param_type_name} {_name(param)}"
        message = " ".join(error.message.split())
        choices = getattr(param.type, "choices", None)
        if choices is not None and " is not one of " in message:
            given = message.partition(" is not one of ")[0]
            listed = ", ".join(str(getattr(choice, "value", choice)) for choice in choices)
            message = f"{given} is not one of {listed}"
        return f"{_name(param)}: {_sentence(message)}"
    message = _sentence(" ".join(error.format_message().split()))
    return f"{command}: {message}" if command else message


def _name(param: click_core.Parameter) -> str:
    """How the user writes ``param``: its long option (``--format``), else its short one,
    else (an argument) its name in capitals, as the help shows it."""
    names: list[str] = list(param.opts) if param.param_type_name == "option" else []
    longs = [name for name in names if name.startswith("--")]
    return (longs or names or [(param.name or "argument").upper()])[0]


def _sentence(message: str) -> str:
    """click's sentence as the end of a jobdoctor line: no final period, lower case first
    (``No such option`` -> ``no such option``; an acronym stays)."""
    message = message.rstrip(".")
    if len(message) > 1 and message[0].isupper() and message[1].islower():
        message = message[0].lower() + message[1:]
    return message


def _command_of(ctx: click_core.Context | None, name: str | None = None) -> str:
    """The names of the command that ``ctx`` (and then ``name``) parses, after the
    program's: "diagnose", "rules check", "" for the program's own options."""
    names = [name] if name and ctx is not None else []
    while ctx is not None and ctx.parent is not None:
        names.insert(0, ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(names)


@contextmanager
def _one_line_usage_errors(command: str) -> Iterator[None]:
    """A usage error raised inside, while parsing ``command``, as one line on stderr and
    exit 2, as jobdoctor's own errors are, instead of the usage, a hint and rich's box."""
    try:
        yield
    except click_errors.UsageError as error:
        if type(error).__name__ == "NoArgsIsHelpError":
            raise  # no arguments: the help, as no_args_is_help asks
        say(usage_line(error, command))
        raise typer.Exit(error.exit_code) from None


class OneLineGroup(TyperGroup):
    """typer's group, its usage errors (an unknown option, no such command) one line."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click_core.Context | None = None,
        **extra: Any,
    ) -> click_core.Context:
        with _one_line_usage_errors(_command_of(parent, info_name)):
            return super().make_context(info_name, args, parent, **extra)

    def resolve_command(
        self, ctx: click_core.Context, args: list[str]
    ) -> tuple[str | None, click_core.Command | None, list[str]]:
        with _one_line_usage_errors(_command_of(ctx)):
            return super().resolve_command(ctx, args)


class OneLineCommand(TyperCommand):
    """typer's command, its usage errors (a bad value, a missing argument) one line, and its
    choices shown in ``--help`` so that a narrow terminal folds them between two values."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        spaced_choices(self.params)

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click_core.Context | None = None,
        **extra: Any,
    ) -> click_core.Context:
        with _one_line_usage_errors(_command_of(parent, info_name)):
            return super().make_context(info_name, args, parent, **extra)


def spaced_choices(params: list[click_core.Parameter]) -> None:
    """Give each option of a few choices (``--format``) a metavar with a space after each
    ``|``: rich folds ``--help``'s column at spaces, and never inside a value (``t`` then
    ``able``, issue 33 point 5)."""
    for param in params:
        choices = getattr(param.type, "choices", None)
        if param.param_type_name == "option" and choices and param.metavar is None:
            param.metavar = "<" + "| ".join(str(c) for c in choices) + ">"
