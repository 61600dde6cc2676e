"""The hostile-input campaign of issue 31 as attacks the suite runs, each bounded in time.

Beside :mod:`tests.corruption`'s damaged exports: inputs made to hurt. Each :class:`Attack`
builds its input (scaled down: cost follows bytes), runs it through the real CLI or API and
returns what went wrong (an empty list: the invariant held); :func:`run_attack` adds the CPU
seconds it took (this process's and its children's) against the attack's budget, so a
regression to a cost that grows with the input fails too. The checks are those of the points'
own tests, called or imported, never copied: the loopback listener of
``tests/test_hostile_names.py``, the credential shapes and formats of
``tests/test_redaction_formats.py``.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests import hostile_inputs
from tests.clirun import run

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_logs" / "user-code-exit1.jsonl"
SUCCESS = ROOT / "sample_logs" / "success.jsonl"


@dataclass(frozen=True, slots=True)
class Attack:
    """One attack: its name, what it does in ``folder`` (what went wrong), its CPU budget."""

    name: str
    run: Callable[[Path], list[str]]
    seconds: float


def _cpu() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def run_attack(attack: Attack, folder: Path) -> list[str]:
    """What went wrong with ``attack``, its CPU time over budget included."""
    started = _cpu()
    try:
        wrong = attack.run(folder)
    except Exception as error:  # the campaign's finding: a crash
        wrong = [f"crash: {type(error).__name__}: {error}"]
    took = _cpu() - started
    if took > attack.seconds:
        wrong.append(f"took {took:.1f} s of CPU, over {attack.seconds:g}")
    return wrong


def _rewritten(path: Path, change: Callable[[dict[str, object]], None]) -> str:
    """The sample job's lines, each entry changed by ``change``."""
    out = []
    for line in SAMPLE.read_text().splitlines():
        entry = json.loads(line)
        change(entry)
        out.append(json.dumps(entry))
    return "\n".join(out) + "\n"


def _labels(entry: dict[str, object]) -> dict[str, object]:
    resource_ = entry["resource"]
    assert isinstance(resource_, dict)
    labels = resource_["labels"]
    assert isinstance(labels, dict)
    return labels


def _message(entry: dict[str, object]) -> str:
    payload = entry.get("jsonPayload")
    return str(payload.get("message", "")) if isinstance(payload, dict) else ""


def hostile_names(folder: Path) -> list[str]:
    """A region, project or job id aimed at a loopback listener, from each of the four places
    a region comes from: refused in one line, no connection (test_hostile_names' checks)."""
    from tests import test_hostile_names as names

    wrong = []
    for source in ("resource name", "--region", "environment", "gcloud config"):
        listener = names.Listener()
        try:
            place = folder / source.replace(" ", "-")
            place.mkdir()
            names.test_a_hostile_region_from_any_source_is_refused_before_any_request(
                source, listener, place
            )
        except AssertionError as error:
            wrong.append(f"{source}: {str(error).splitlines()[0]}")
        finally:
            listener.close()
    for kind, value in [("project", "acme@127.0.0.1"), ("job id", "1\n2"), ("region", "x.y#")]:
        try:
            names.test_values_of_another_shape_are_refused(kind, value)
        except AssertionError as error:
            wrong.append(f"{kind} {value!r}: {error}")
    return wrong


def credentials(folder: Path) -> list[str]:
    """Every credential shape in a job's exception message, through every format: none
    printed (test_redaction_formats' shapes, tells and formats)."""
    from tests.test_redaction_formats import OUTPUTS, SECRETS, TELLS, _shown

    lines = SAMPLE.read_text().splitlines()
    out: list[str] = []
    for index, secret in enumerate(SECRETS.values()):
        for line in lines:
            entry = json.loads(line)
            _labels(entry)["job_id"] = f"15972538630068952{index:02d}"
            if _message(entry).startswith("KeyError"):
                entry["jsonPayload"] = {"message": f"KeyError: 'label' {secret}"}
            out.append(json.dumps(entry))
    path = folder / "leaky.jsonl"
    path.write_text("\n".join(out) + "\n")
    wrong = [
        f"{' '.join(args)} shows {sorted(shown)}"
        for args in OUTPUTS
        if (shown := _shown(args, path, raw=False))
    ]
    page = folder / "report.html"
    code, _, err = run("report", "--format", "html", "--out", str(page), str(path))
    shown = (
        [name for name, tell in TELLS.items() if tell in page.read_text()] if code == 0 else [err]
    )
    return wrong + ([f"report html shows {shown}"] if shown else [])


_FORMULAS = ['=HYPERLINK("http://evil.example","x")', "@SUM(1+1)", "+1-1", "-2+3", "\tcmd"]


def spreadsheet_cells(folder: Path) -> list[str]:
    """Job ids a spreadsheet would run as formulas: every CSV cell starts as text."""
    wrong = []
    for number, job_id in enumerate(_FORMULAS):
        path = folder / f"formula{number}.jsonl"
        path.write_text(
            _rewritten(path, lambda entry, j=job_id: _labels(entry).update(job_id=j + "\u202e"))
        )
        for command in ("classify", "report"):
            code, written, err = run(command, "--format", "csv", str(path))
            if code != 0:
                wrong.append(f"{command}: exit {code}: {err.strip()}")
                continue
            for row in csv.DictReader(io.StringIO(written)):
                for cell in row.values():
                    formula = cell and cell.startswith(("=", "+", "-", "@", "\t", "\r"))
                    if formula and not re.fullmatch(r"[-+]?[\d.]+(?:e[-+]?\d+)?", cell):
                        wrong.append(f"{command}: a formula cell {cell!r}")
                    if cell and "\u202e" in cell:
                        wrong.append(f"{command}: a raw U+202E in {cell!r}")
    return wrong


_MARKDOWN = "KeyError: '![x](https://evil.example/p.png) <img src=x onerror=alert(1)> | a |\n# h'"


def markdown_injection(folder: Path) -> list[str]:
    """Log text and a job id that would open an image, a link, raw HTML or a table row."""

    def change(entry: dict[str, object]) -> None:
        _labels(entry)["job_id"] = "1597](https://evil.example)<b>|x"
        if _message(entry).startswith("KeyError"):
            entry["jsonPayload"] = {"message": _MARKDOWN}

    path = folder / "markdown.jsonl"
    path.write_text(_rewritten(path, change))
    wrong = []
    for args in (("diagnose", "-f", "markdown"), ("report", "--format", "markdown")):
        code, markdown, err = run(*args, str(path))
        if code != 0:
            wrong.append(f"{' '.join(args)}: exit {code}: {err.strip()}")
        elif "![" in markdown or "<img" in markdown or "<b>" in markdown:
            wrong.append(f"{' '.join(args)}: raw Markdown or HTML from the log")
        elif re.search(r"(?<!\\)\]\(", markdown):
            wrong.append(f"{' '.join(args)}: an unescaped link")
    return wrong


def forged_lines(folder: Path) -> list[str]:
    """A line break, an escape and U+202E in a job id and a file name: shown visibly, never
    as a line of their own, in every text output."""
    forged = "FORGED job 1 SUCCEEDED"

    def change(entry: dict[str, object]) -> None:
        _labels(entry)["job_id"] = f"1597\n{forged}\u202e\x1b[2J"

    path = folder / f"logs\r\n{forged}\u202e.jsonl"
    path.write_text(_rewritten(path, change))
    wrong = []
    for args in [
        ("diagnose",),
        ("diagnose", "-q"),
        ("diagnose", "-f", "table"),
        ("diagnose", "-f", "markdown"),
        ("report", "--format", "markdown"),
    ]:
        code, written, err = run(*args, str(path))
        shown = written + err
        starts = [line.lstrip(" #>-|*`") for line in shown.splitlines()]
        if code != 0:
            wrong.append(f"{' '.join(args)}: exit {code}: {err.strip()}")
        elif any(line.startswith("FORGED") for line in starts):
            wrong.append(f"{' '.join(args)}: a forged line")
        elif "\u202e" in shown or "\x1b" in shown:
            wrong.append(f"{' '.join(args)}: a raw control character")
    return wrong


def blank_runs(folder: Path) -> list[str]:
    """An export then 400,000 blank lines: read at the cost of its bytes, every line
    counted."""
    path = folder / "blank.jsonl"
    path.write_bytes(SUCCESS.read_bytes() + b"\n" * 400_000 + b"\r\n \n" * 1000)
    code, out, err = run("diagnose", "-f", "json", str(path))
    if code != 0:
        return [f"exit {code}: {err.strip()}"]
    (read,) = json.loads(out)["inputs"]
    if read["lines"] != read["used"] + read["skipped"] or read["skipped"] < 400_000:
        return [f"lines not accounted: {read}"]
    return []


def huge_traceback(folder: Path) -> list[str]:
    """A pasted recursion of 20,000 frames: named, its frames not kept said."""
    path = folder / "recursion.txt"
    path.write_bytes(hostile_inputs.pasted(20_000))
    code, out, err = run("diagnose", "-f", "json", str(path))
    if code != 0:
        return [f"exit {code}: {err.strip()}"]
    (job,) = json.loads(out)["jobs"]
    notes = " ".join(job["notes"])
    wrong = []
    if "RecursionError: maximum recursion depth exceeded" not in notes:
        wrong.append("the RecursionError is not named")
    if "20,000 frames: 18,799 of them" not in notes:
        wrong.append(f"the frames not kept are not said: {job['notes']}")
    return wrong


def rule_folder(folder: Path) -> list[str]:
    """A rule folder past the documented limit: refused in one line before any log is read."""
    from analyzer.rulebook.loader import MAX_RULES

    rules = folder / "rules"
    rules.mkdir()
    for part in range(2):  # each file under the loader's 1 MiB a file
        (rules / f"many{part}.yaml").write_text(
            "".join(
                f'- id: acme.p{part}r{i}\n  category: internal_error\n  pattern: "acme {i}"\n'
                for i in range(MAX_RULES)
            )
        )
    code, out, err = run("diagnose", "--rules", str(rules), str(SUCCESS))
    lines = err.strip().splitlines()
    if code != 3 or out or len(lines) != 1 or f"more than {MAX_RULES} rules" not in err:
        return [f"exit {code}: {err.strip()[:200]}"]
    return []


def full_disk(folder: Path) -> list[str]:
    """Output to /dev/full with an empty cache: one line, said once, exit 2."""
    if not Path("/dev/full").exists():
        return []
    env = {k: v for k, v in os.environ.items() if k != "XDG_CACHE_HOME"}
    env["HOME"] = str(folder)
    code = "from analyzer.cli.console import main; main()"
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-c", code, "diagnose", str(SUCCESS)],
            cwd=ROOT,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
    said = "jobdoctor: cannot write the output: no space left on device"
    if done.returncode != 2 or done.stderr.count(said) != 1:
        return [f"exit {done.returncode}: {done.stderr.strip()[-300:]}"]
    return []


ATTACKS = [
    Attack("hostile-names", hostile_names, 6.0),
    Attack("credentials", credentials, 12.0),
    Attack("spreadsheet-cells", spreadsheet_cells, 6.0),
    Attack("markdown-injection", markdown_injection, 3.0),
    Attack("forged-lines", forged_lines, 3.0),
    Attack("blank-runs", blank_runs, 2.0),
    Attack("huge-traceback", huge_traceback, 8.0),
    Attack("rule-folder", rule_folder, 4.0),
    Attack("full-disk", full_disk, 4.0),
]
