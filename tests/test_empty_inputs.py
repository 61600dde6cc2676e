"""Inputs that hold no entry: one rule for all of them (design.md's exit codes: 0 when the
analysis ran, whatever the inputs held; 2 only for bad usage or an input that cannot be read).

An empty file, blank lines, an empty gcloud array and the Logging API's answer when nothing
matched (``{}``, ``{"entries": []}``) are each read: no job, exit 0, every line counted, and the
run says the input holds no log entry. What is not log entries at all (an API error body)
stays refused in one line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clirun import run

EMPTY = {
    "empty file": "",
    "blank lines": "  \n\n \n",
    "empty array": "[]\n",
    "empty array over lines": "[\n]\n",
    "empty response": "{}\n",
    "response with no entries": '{"entries": []}\n',
    "pretty response with no entries": '{\n  "entries": []\n}\n',
    "empty pages in an array": '[{}, {"entries": []}]\n',
    "empty page with a token": '{"nextPageToken": "EAA4"}\n',
}


@pytest.mark.parametrize("name", sorted(EMPTY))
def test_an_input_without_entries_is_read_and_holds_no_job(name: str, tmp_path: Path) -> None:
    text = EMPTY[name]
    path = tmp_path / "logs.json"
    path.write_text(text)
    code, out, err = run("diagnose", str(path))
    assert code == 0, err
    assert out.startswith("No job found in the inputs.")
    assert f"{path}: holds no log entry" in " ".join(out.split())
    code, out, err = run("diagnose", str(path), "--format", "json")
    assert code == 0, err
    found = json.loads(out)
    assert found["jobs"] == []
    (read,) = found["inputs"]
    assert read["records"] == 0
    assert read["lines"] == read["used"] + read["skipped"] == text.count("\n")
    assert read.get("more_pages", False) is ("nextPageToken" in text)


def test_an_error_body_is_still_refused(tmp_path: Path) -> None:
    path = tmp_path / "denied.json"
    path.write_text(json.dumps({"error": {"code": 403, "status": "PERMISSION_DENIED"}}))
    code, _, err = run("diagnose", str(path))
    assert code == 2 and "PERMISSION_DENIED" in err
