"""Text taken from a web page's source (analyzer/ingest/webtext.py): ``<br />`` tags as line
ends, entities as characters, decided from the head and converted as it is read."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from analyzer.api import analyze
from analyzer.ingest import webtext
from analyzer.ingest.webtext import WebText, breaks_lines

REAL = Path(__file__).resolve().parent / "real"


@pytest.mark.parametrize(
    ("page", "text"),
    [
        (b"a<br />b", b"a\nb"),
        (b"a<br/>b<br>c<BR >d", b"a\nb\nc\nd"),
        # A page's source that keeps a line end after each tag: one line end, not two.
        (b"a<br />\nb<br />\r\nc", b"a\nb\nc"),
        (
            b'File "&lt;string&gt;", line 1 &amp; &quot;x&quot; &#39;y&#x27;',
            b'File "<string>", line 1 & "x" \'y\'',
        ),
        # A raw "&" of a URL is no entity, though HTML reads "&reg" without its semicolon.
        (b"?project=1&resource=ml_job&region=x", b"?project=1&resource=ml_job&region=x"),
        (b"caf\xc3\xa9 &#8217; \xff", "caf\u00e9 \u2019 ".encode() + b"\xff"),
    ],
)
def test_tags_and_entities(page: bytes, text: bytes) -> None:
    assert io.BufferedReader(WebText(io.BytesIO(page))).read() == text


@pytest.mark.parametrize(
    ("head", "page"),
    [
        (b"INFO 2019-05-14 09:20:53 +0700 service a<br />INFO ... b<br />", True),
        (b"line one<br />\nline two<br />\nline three\n", True),
        # One tag in a log line is the line's own.
        (b"ERROR x: <br> is not allowed\nINFO y\nINFO z\n", False),
        # Sink JSONL and arrays are exports, whatever their messages hold.
        (b'{"textPayload":"a<br />b<br />c"}\n', False),
        (b'[{"textPayload":"a<br />b<br />c"}]', False),
        (b"INFO a\nINFO b\nINFO c\n", False),
    ],
)
def test_the_head_decides(head: bytes, page: bool) -> None:
    assert breaks_lines(head) is page


@given(
    st.lists(
        st.sampled_from(
            [
                b"<br />",
                b"<br>",
                b"\n",
                b"&lt;",
                b"&amp;",
                b"&#x27;",
                b"&",
                b"<",
                b"x",
                b"\xc3\xa9",
                b";",
            ]
        ),
        max_size=80,
    ),
    st.integers(min_value=1, max_value=40),
)
def test_any_cut_of_the_reads_converts_alike(parts: list[bytes], chunk: int) -> None:
    page = b"".join(parts)
    whole = io.BufferedReader(WebText(io.BytesIO(page))).read()
    saved = webtext._CHUNK
    webtext._CHUNK = chunk
    try:
        cut = io.BufferedReader(WebText(io.BytesIO(page))).read()
    finally:
        webtext._CHUNK = saved
    assert cut == whole


def test_a_blog_posts_stream_logs_are_read_as_lines() -> None:
    """tests/real/gh-sinaungoding-tf-od-cloud-S: a WordPress <pre> block, one physical line;
    read as it is, it was one record and "no failure", with "Job failed." in it."""
    path = REAL / "gh-sinaungoding-tf-od-cloud-S.txt"
    analysis = analyze([path])
    (stats,) = analysis.inputs
    assert stats.format == "stream-logs" and stats.web_text
    assert stats.lines == stats.used + stats.skipped and stats.records >= 3
    (job,) = analysis.diagnoses
    assert job.job_id == "object_detection_05_14_2019_09_14_13"
    assert job.state.value == "JOB_STATE_FAILED"
    assert any("web page" in notice for notice in analysis.notices)
