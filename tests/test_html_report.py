"""`jobdoctor report`: the fleet summary, its Markdown/CSV/HTML, and the HTML in headless Chromium.

The Chromium tests run Debian's ``chromium`` (``.ci/run`` installs it) and are skipped, with
the reason, only when no Chromium binary is found.
"""

from __future__ import annotations

import csv
import io
import re
import shutil
import subprocess
from collections.abc import Iterator
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from analyzer.api import analyze, diagnose
from analyzer.cli.report_command import report_command
from analyzer.core.errors import InputError
from analyzer.pipeline.analysis import DiagnosisList
from analyzer.report.fleet import CSV_COLUMNS, JOB_COLUMNS, summarize, summarize_analysis
from analyzer.report.html import REPORT_TITLE, diagnosis_repr_html, job_anchors
from analyzer.simulate import simulate, write

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
# What a hostile (or just unlucky) log line may hold; it must show as text and run nothing.
PAYLOAD = "<script>document.title='pwned'</script>"
IMG_PAYLOAD = "<img src=x onerror=\"document.title='pwned'\">"


def _with_payload(entries: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The entries, with the payloads in the service's failure message."""
    for entry in entries:
        text = entry.get("textPayload")
        if isinstance(text, str) and (
            "exited with a non-zero status" in text or text.startswith("Internal error")
        ):
            first, _, rest = text.partition("\n")
            entry = {
                **entry,
                "textPayload": f"{first} {PAYLOAD}\nValueError: {IMG_PAYLOAD}\n{rest}",
            }
        yield entry


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four jobs: a success, a stockout, and two failures whose messages carry payloads."""
    root = tmp_path_factory.mktemp("fleet")
    for scenario, hostile in (
        ("success", False),
        ("stockout-exhausted", False),
        ("user-code-exit1", True),
        ("internal-error-exhausted", True),
    ):
        entries = simulate(scenario, seed=11)
        with open(root / f"{scenario}.jsonl", "w", encoding="utf-8") as out:
            write(_with_payload(entries) if hostile else entries, "jsonl", out)
    return root


@pytest.fixture(scope="module")
def job_ids(fleet_dir: Path) -> list[str]:
    ids = [d.job_id for d in diagnose(fleet_dir)]
    assert len(ids) == 4 and all(ids)
    return [i for i in ids if i]


@pytest.fixture(scope="module")
def report(fleet_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "report.html"
    report_command([str(fleet_dir)], "html", out)
    return out


def test_summary_counts_by_category_and_spent_retries(fleet_dir: Path) -> None:
    summary = summarize_analysis(analyze([fleet_dir]))
    assert len(summary.jobs) == 4
    assert summary.states == {"JOB_STATE_FAILED": 3, "JOB_STATE_SUCCEEDED": 1}
    shares = {c.category: (c.jobs, c.share) for c in summary.by_category}
    assert shares == {
        "internal_error": (1, 0.25),
        "stockout": (1, 0.25),
        "user_code_exception": (1, 0.25),
    }
    assert summary.retries == 3 + 2  # stockout: 4 attempts; internal error: 3
    assert summary.retries == sum(c.retries for c in summary.by_category)
    assert summary.lost_work == sum((j.lost_work or timedelta() for j in summary.jobs), timedelta())
    # Every failed attempt is a point in time: 4 stockouts, 3 internal errors, 1 user exit.
    assert sorted(p.category for p in summary.failures).count("stockout") == 4
    assert len(summary.failures) == 8
    # The job that succeeded first time lost nothing and is not among the worst.
    assert all(j.state != "JOB_STATE_SUCCEEDED" for j in summary.worst)
    # Failed jobs first (all of these failed), then by time lost.
    lost = [j.time_lost for j in summary.worst]
    assert lost == sorted(lost, reverse=True)


def test_csv_report_has_one_row_per_job(
    fleet_dir: Path, tmp_path: Path, job_ids: list[str]
) -> None:
    out = tmp_path / "report.csv"
    report_command([str(fleet_dir)], "csv", out)
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert sorted(r["job_id"] for r in rows) == sorted(job_ids)
    assert list(rows[0]) == list(CSV_COLUMNS)
    assert [c.removesuffix("_s") for c in CSV_COLUMNS] == list(JOB_COLUMNS)
    # Text is kept as it was: CSV is data, not markup.
    assert any(PAYLOAD in r["message"] for r in rows)
    # Durations say their unit: seconds.
    assert all(float(r["duration_s"]) > 0 for r in rows)
    assert all(r["path"].startswith(str(fleet_dir)) for r in rows)


def test_markdown_report_lists_causes_and_jobs(
    fleet_dir: Path, tmp_path: Path, job_ids: list[str]
) -> None:
    out = tmp_path / "report.md"
    report_command([str(fleet_dir)], "markdown", out)
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# jobdoctor fleet report")
    assert "| stockout | 1 | 25% | 3 |" in text
    assert all(job in text for job in job_ids)


def test_unknown_format_suggests_the_nearest(fleet_dir: Path) -> None:
    with pytest.raises(InputError, match="Did you mean 'html'"):
        report_command([str(fleet_dir)], "htm", None)


class _Tags(HTMLParser):
    """Every start tag of a document with its attributes, and its text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_html_is_self_contained_and_escapes_log_text(report: Path, job_ids: list[str]) -> None:
    html = report.read_text(encoding="utf-8")
    parsed = _Tags()
    parsed.feed(html)
    names = {tag for tag, _ in parsed.tags}
    assert not names & {"script", "img", "link", "iframe", "object", "embed", "base"}
    # The payloads are text of the page, whole.
    text = "".join(parsed.text)
    assert PAYLOAD in text and IMG_PAYLOAD in text
    assert "&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt;" in html
    # Nothing to fetch: links stay in the page, no attribute loads anything, and a policy
    # forbids it anyway.
    for _, attrs in parsed.tags:
        assert not {"src", "srcset", "action", "formaction"} & set(attrs)
        assert not any(name.startswith("on") for name in attrs)
        assert (attrs.get("href") or "#").startswith("#")
        assert "url(" not in (attrs.get("style") or "")
    assert "url(" not in html.split("</style>")[0]
    assert "default-src 'none'" in html
    for anchor in job_anchors(job_ids):
        assert f'id="{anchor}"' in html and f'href="#{anchor}"' in html


def test_notebook_displays_escape_too(fleet_dir: Path) -> None:
    diagnoses = DiagnosisList(diagnose(fleet_dir))
    for html in (diagnoses._repr_html_(), diagnosis_repr_html(diagnoses[0])):
        assert "<script" not in html.lower() and "<svg" in html
    assert "&lt;script&gt;" in diagnoses._repr_html_()


def test_job_anchors_are_unique_and_safe() -> None:
    assert job_anchors(["123", "123", None, 'a"b<c>']) == [
        "job-123",
        "job-123-2",
        "job-unknown",
        "job-a-b-c",
    ]


def test_summary_of_nothing() -> None:
    summary = summarize([])
    assert summary.jobs == () and summary.lost_work == timedelta() and summary.failed == 0


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


CHROMIUM = _chromium()
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium binary on PATH (Debian: apt-get install -y chromium; .ci/run does)",
)


def _chromium_run(profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


@needs_chromium
def test_chromium_renders_the_jobs_and_runs_no_log_text(
    report: Path, job_ids: list[str], tmp_path: Path
) -> None:
    dom = _chromium_run(tmp_path / "profile", "--dump-dom", report.as_uri()).stdout
    # Had any payload run, it would have changed the title.
    title = re.search(r"<title>(.*?)</title>", dom, re.DOTALL)
    assert title is not None and title.group(1) == REPORT_TITLE
    assert "pwned" not in (title.group(1))
    # The payload is in the document as text, not as an element.
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in dom
    assert "&lt;img src=x onerror=" in dom
    assert "<img" not in dom.lower()
    assert dom.lower().count("<script") == 0
    for job, anchor in zip(job_ids, job_anchors(job_ids), strict=True):
        assert f'id="{anchor}"' in dom and job in dom
    assert dom.count("<svg") == len(job_ids) + 1  # a timeline per job and the fleet chart


@needs_chromium
def test_chromium_screenshot_on_a_laptop_screen(report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    _chromium_run(
        tmp_path / "profile", f"--screenshot={shot}", "--window-size=1366,900", report.as_uri()
    )
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    # Width and height from the PNG header: the page was laid out at laptop size.
    assert int.from_bytes(data[16:20], "big") == 1366
    assert int.from_bytes(data[20:24], "big") == 900
    assert len(data) > 20_000  # a page with text and charts, not a blank one
