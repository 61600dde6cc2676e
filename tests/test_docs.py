"""The README and the pages of docs/ are tested: every command is in the README and every
option in the README or docs/; their example outputs are what the command prints today in an
80-column terminal, and their Python examples what Python prints; every `jobdoctor` command
line in them uses options the command has; every link between them leads somewhere.

After an intended change of the output, regenerate the examples with
``JOBDOCTOR_UPDATE_README=1 python -m pytest tests/test_docs.py``.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main

from analyzer.cli.app import app
from analyzer.simulate import FORMATS
from tests.terminal import run_in_terminal

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
DOCS = [README, *PAGES]
# A fenced block that starts with a command line: "$ jobdoctor ..." then its output.
_EXAMPLE = re.compile(r"^```\n\$ (jobdoctor [^\n|>]*)\n(.*?)^```\n", re.M | re.S)
# A Python block written as a session: ">>> " lines, each followed by what it prints.
_SESSION = re.compile(r"^```python\n(>>> .*?)^```\n", re.M | re.S)
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.M | re.S)
_OPTION = re.compile(r"(?<![\w-])--[a-z][\w-]*")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_UPDATE = "JOBDOCTOR_UPDATE_README"
# The README's first screen: what a newcomer reads before scrolling.
FIRST_SCREEN = 60
SET_UP = (
    "python3 -m venv .venv && .venv/bin/pip install -q . "
    "&& .venv/bin/jobdoctor diagnose sample_logs/",
    "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/python -m pytest",
)
FIRST_COMMANDS = ("diagnose", "explain", "classify", "rules check", "report")


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


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("command", [c for c, _ in commands() if c])
def test_every_command_is_in_the_readme(command: str) -> None:
    assert f"jobdoctor {command}" in README.read_text(), command


@pytest.mark.parametrize(("command", "option"), options())
def test_every_option_is_documented(command: str, option: str) -> None:
    # Anywhere in the README or docs/: most options are shared by several commands.
    text = "\n".join(path.read_text() for path in DOCS)
    assert re.search(rf"{re.escape(option)}(?![\w-])", text), f"{command} {option}"


def test_the_option_list_is_not_empty() -> None:
    names = {option for _, option in options()}
    assert {"--format", "--quiet", "--color", "--version", "--job-record"} <= names


def test_the_readme_first_screen_has_what_a_newcomer_needs() -> None:
    lines = README.read_text().splitlines()
    screen = "\n".join(lines[:FIRST_SCREEN])
    # The set-up commands exactly: .ci/run runs the second one.
    assert all(command in lines[:FIRST_SCREEN] for command in SET_UP), SET_UP
    assert _EXAMPLE.search(screen + "\n"), "no example output on the first screen"
    listed = [line for line in lines[:FIRST_SCREEN] if line.startswith("jobdoctor ")]
    for command in FIRST_COMMANDS:
        assert [line for line in listed if line.startswith(f"jobdoctor {command} ")], command


def test_every_page_is_linked_from_the_readme() -> None:
    linked = {Path(target).name for target in _LINK.findall(README.read_text())}
    assert {page.name for page in PAGES} <= linked


def _anchors(text: str) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces to -."""
    headings = re.findall(r"^#+ (.+)$", _FENCE.sub("", text), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("doc", DOCS, ids=_name)
def test_links_between_the_pages_lead_somewhere(doc: Path) -> None:
    for target in _LINK.findall(doc.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        file, _, anchor = target.partition("#")
        path = (doc.parent / file).resolve() if file else doc
        assert path.exists(), f"{_name(doc)}: {target}"
        if anchor:
            assert anchor in _anchors(path.read_text()), f"{_name(doc)}: {target}"


def test_every_simulated_shape_is_in_the_table_of_inputs() -> None:
    # The table says how to try each shape: `jobdoctor simulate SCENARIO --format F`.
    table = (ROOT / "docs" / "inputs.md").read_text()
    assert [f for f in FORMATS if f"`--format {f}`" not in table] == []


def _command_lines(text: str) -> list[str]:
    """The ``jobdoctor ...`` command lines of the page's blocks (but output), each with the
    lines that continue it (indented, as in a synopsis); comments dropped."""
    found: list[str] = []
    for block in _FENCE.finditer(text):
        for line in block[2].splitlines():
            line = line.lstrip("$ ")
            if line.startswith("jobdoctor "):
                found.append(re.split(r"\s#\s", line)[0])
            elif found and line.startswith(" ") and line.strip().startswith("["):
                found[-1] += " " + line.strip()
    return found


@pytest.mark.parametrize("doc", DOCS, ids=_name)
def test_command_lines_use_options_the_command_has(doc: Path) -> None:
    known = {path: set() for path, _ in commands()}
    for path, option in options():
        known[path].add(option)
    lines = _command_lines(doc.read_text())
    for line in lines:
        words = line.split()[1:]
        # The longest command path the line starts with ("rules check" before "rules").
        path = max((p for p in known if words[: len(p.split())] == p.split()), key=len, default="")
        for option in _OPTION.findall(line):
            assert option in known[path] | {"--help"}, f"{_name(doc)}: {line}"
    if doc == README:
        assert len(lines) >= len(FIRST_COMMANDS)


@pytest.mark.skipif(sys.platform == "win32", reason="no pseudo-terminals here")
@pytest.mark.parametrize("doc", [d for d in DOCS if _EXAMPLE.search(d.read_text())], ids=_name)
def test_example_outputs_are_real(doc: Path) -> None:
    text = doc.read_text()
    updated = text
    for example in _EXAMPLE.finditer(text):
        command, shown = example[1], example[2]
        args = command.split()[1:]
        done = run_in_terminal(args, 80, env={"NO_COLOR": "1"})
        assert done.code == 0, (command, done.stderr)
        output = "\n".join(line.rstrip() for line in done.text.rstrip("\n").split("\n")) + "\n"
        if os.environ.get(_UPDATE):
            updated = updated.replace(example[0], f"```\n$ {command}\n{output}```\n", 1)
            continue
        assert shown == output, f"{_name(doc)}: `{command}` is stale: run with {_UPDATE}=1"
    if updated != text:
        doc.write_text(updated)


def _run_session(source: str, namespace: dict[str, Any]) -> str:
    """``source`` run as a Python session in ``namespace``, with what it prints (a REPL's echo
    of expressions included) after each statement: the block as it should read."""
    block = []
    for example in doctest.DocTestParser().get_examples(source):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(example.source, "<docs>", "single"), namespace)
        code = example.source.rstrip("\n").split("\n")
        block += [f">>> {code[0]}", *(f"... {line}" for line in code[1:])]
        block += [line.rstrip() for line in out.getvalue().rstrip("\n").split("\n") if line]
    return "\n".join(block) + "\n"


@pytest.mark.parametrize("doc", [d for d in DOCS if _SESSION.search(d.read_text())], ids=_name)
def test_python_examples_are_real(doc: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pd = pytest.importorskip("pandas")
    monkeypatch.chdir(ROOT)  # the examples name sample_logs/ from the repository's root
    text = doc.read_text()
    updated = text
    namespace: dict[str, Any] = {}  # one per page, as a notebook's
    with pd.option_context("display.width", 100, "display.max_columns", 20):
        for session in _SESSION.finditer(text):
            output = _run_session(session[1], namespace)
            if os.environ.get(_UPDATE):
                updated = updated.replace(session[0], f"```python\n{output}```\n", 1)
                continue
            assert session[1] == output, f"{_name(doc)}: an example is stale: run with {_UPDATE}=1"
    if updated != text:
        doc.write_text(updated)


def test_the_count_of_real_excerpts_is_today_s() -> None:
    said = re.search(
        r"`tests/real/` holds (\d+) cited excerpts", (ROOT / "docs" / "verdicts.md").read_text()
    )
    assert said, "docs/verdicts.md no longer says how many real excerpts there are"
    count = len(list((ROOT / "tests" / "real").glob("*.yaml")))  # one truth file per excerpt
    assert int(said[1]) == count, f"docs/verdicts.md: say {count} excerpts"
