"""The README is tested: every command and every option is in it, and its example outputs are
what the command prints today in an 80-column terminal.

After an intended change of the output, regenerate the examples with
``JOBDOCTOR_UPDATE_README=1 python -m pytest tests/test_docs.py``.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main

from analyzer.cli.app import app
from tests.terminal import run_in_terminal

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# A fenced block that starts with a command line: "$ jobdoctor ..." then its output.
_EXAMPLE = re.compile(r"^```\n\$ (jobdoctor [^\n|>]*)\n(.*?)^```\n", re.M | re.S)
_UPDATE = "JOBDOCTOR_UPDATE_README"


def commands() -> list[tuple[str, Any]]:
    """Every command as it is typed (``rules check``), with its (typer's click) command."""
    root = typer.main.get_command(app)
    found: list[tuple[str, Any]] = [("", root)]

    def walk(group: Any, prefix: str) -> None:
        for name, command in getattr(group, "commands", {}).items():
            path = f"{prefix}{name}"
            found.append((path, command))
            walk(command, path + " ")

    walk(root, "")
    return found


def options() -> list[tuple[str, str]]:
    """Every (command, option) pair, the option by its long name."""
    pairs = []
    for path, command in commands():
        for param in command.params:
            if getattr(param, "param_type_name", "") != "option":
                continue
            names = [n for n in (*param.opts, *param.secondary_opts) if n.startswith("--")]
            pairs += [(path, name) for name in names if name != "--help"]
    return pairs


@pytest.mark.parametrize("command", [c for c, _ in commands() if c])
def test_every_command_is_in_the_readme(command: str) -> None:
    assert f"jobdoctor {command}" in README.read_text(), command


@pytest.mark.parametrize(("command", "option"), options())
def test_every_option_is_in_the_readme(command: str, option: str) -> None:
    # Anywhere in the README: most options are shared by several commands.
    text = README.read_text()
    assert re.search(rf"{re.escape(option)}(?![\w-])", text), f"{command} {option}"


def test_the_option_list_is_not_empty() -> None:
    names = {option for _, option in options()}
    assert {"--format", "--quiet", "--color", "--version", "--job-record"} <= names


@pytest.mark.skipif(sys.platform == "win32", reason="no pseudo-terminals here")
def test_readme_examples_are_real_output() -> None:
    text = README.read_text()
    examples = list(_EXAMPLE.finditer(text))
    assert len(examples) >= 3
    updated = text
    for example in examples:
        command, shown = example[1], example[2]
        args = command.split()[1:]
        done = run_in_terminal(args, 80, env={"NO_COLOR": "1"})
        assert done.code == 0, (command, done.stderr)
        output = "\n".join(line.rstrip() for line in done.text.rstrip("\n").split("\n")) + "\n"
        if os.environ.get(_UPDATE):
            updated = updated.replace(example[0], f"```\n$ {command}\n{output}```\n", 1)
            continue
        assert shown == output, f"README example `{command}` is stale: run with {_UPDATE}=1"
    if updated != text:
        README.write_text(updated)
