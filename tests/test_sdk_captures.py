"""jobdoctor on what the real Vertex AI SDK prints: the captures of tests/sdk/captures.

Each capture is the output of the real SDK (2.x, the last 1.x, and 1.154, the last that prints a
state as its enum formats: an integer on Python 3.11, ``JobState.X`` on 3.10), in a terminal or
saved by a Jupyter notebook, driven by a scripted case against the loopback fake of the API
(tests/sdk/fake_vertex.py, tests/sdk/drive.py). Its truth (tests/sdk/captures/CASE/truth.yaml)
comes from the script. Regenerate them all with ``python -m tests.sdk.capture`` (the module's
docstring says how the 1.x virtualenvs are made); ``python -m tests.sdk.verdicts`` prints the
table below and each misread.

A capture jobdoctor reads wrong today is a strict xfail, its reason the misreads
(tests/sdk/misreads.yaml): fixing one makes its test XPASS and fail, and its line is then
removed from that file.

Before issue 27's work (main at 270c3a6), right / wrong per variant:

    variant                     right  wrong
    sdk1.154-py310.txt             20      8
    sdk1.154-py311-logging.txt     15     13
    sdk1.154-py311.ipynb            0     28
    sdk1.154-py311.txt             14     14
    sdk1.165-py311.txt             14     14
    sdk2-py311-logging.txt         25      3
    sdk2-py311.ipynb                0     28
    sdk2-py311.txt                 14     14
    all                           102    122

      56  notebook refused
      46  job not found
      12  SUCCEEDED read as UNSPECIFIED
      12  SUCCEEDED: observed_final False, truth observed
      10  job the script did not make
       9  SUCCEEDED read as FAILED
       9  cause where none
       5  CANCELLED read as FAILED
       5  cancelled cause not read
       4  QUEUED read as UNSPECIFIED
       4  RUNNING read as UNSPECIFIED

(the second block: each kind of misread and how many times it occurs over all captures).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

from tests.sdk import verdicts

MISREADS = Path(__file__).parent / "sdk" / "misreads.yaml"
KNOWN: dict[str, str] = yaml.safe_load(MISREADS.read_text()) if MISREADS.exists() else {}


def _name(capture: Path) -> str:
    return f"{capture.parent.name}/{capture.name}"


def _params() -> list[object]:
    params = []
    for capture in verdicts.captures():
        reason = KNOWN.get(_name(capture))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(capture, id=_name(capture), marks=marks))
    return params


@pytest.mark.parametrize("capture", _params())
def test_capture_read_right(capture: Path) -> None:
    wrong = verdicts.misreads(capture)
    assert not wrong, "; ".join(map(str, wrong))


def test_every_known_misread_is_a_capture() -> None:
    names = {_name(c) for c in verdicts.captures()}
    assert set(KNOWN) <= names, sorted(set(KNOWN) - names)


def test_truth_is_the_script() -> None:
    """Each truth file is what its case's script says, and every case has every variant."""
    from tests.sdk.drive import CASES, truth

    variants = yaml.safe_load((verdicts.CAPTURES / "variants.yaml").read_text())
    expected_files = {name + suffix for name, v in variants.items() for suffix in v["files"]}
    assert {c.name for c in CASES} == {p.name for p in verdicts.CAPTURES.iterdir() if p.is_dir()}
    for case in CASES:
        folder = verdicts.CAPTURES / case.name
        assert yaml.safe_load((folder / "truth.yaml").read_text()) == truth(case), case.name
        files = {p.name for p in folder.iterdir() if p.name != "truth.yaml"}
        assert files == expected_files, case.name


@pytest.mark.skipif(
    importlib.util.find_spec("google.cloud.aiplatform") is None, reason="the SDK is not installed"
)
def test_generator_remakes_a_capture(tmp_path: Path) -> None:
    """The real SDK against the fake, now: the terminal capture of a succeeded job comes out
    byte for byte as checked in (its ids come from the script, its text holds no time)."""
    from tests.sdk.capture import VARIANTS, capture
    from tests.sdk.drive import CASES

    case = next(c for c in CASES if c.name == "custom-succeeded")
    variant = next(v for v in VARIANTS if v.name == "sdk2-py311" and not v.notebook)
    target = tmp_path / "out.txt"
    capture(case, variant, Path("/nonexistent"), target)
    checked_in = verdicts.CAPTURES / case.name / "sdk2-py311.txt"
    assert target.read_text() == checked_in.read_text()
