"""A job id pandas turned into a float: refused in one line, never shown with lost digits.

Vertex AI's job ids are 19 digits. pandas reads a column of them with an empty cell as float64
(and ``to_json`` writes floats with ten significant digits), so a frame of logs saved to CSV,
JSON or Parquet after such a read holds ``8.486479822100749e+18``: the last digits are gone,
and two jobs created the same second may share the number. Before, jobdoctor named the job
``8.486479822100749e+18`` (or ``8486479822100748800`` through the accessor): a confident wrong
id. Now the input is refused with the file, the line, the column and what to do; an id a float
holds exactly (at most 2**53) is read as its digits.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from analyzer.api import analyze_sources
from analyzer.core.errors import InputError
from analyzer.ingest import MemorySource
from analyzer.ingest.records import LostDigits, id_text
from analyzer.simulate import simulate

JOB = "8486479822100748891"


def _entries() -> list[dict[str, Any]]:
    entries = [e for e in simulate("user-code-exit1", seed=1) if "protoPayload" not in e]
    for entry in entries:
        entry["resource"]["labels"]["job_id"] = JOB
    return entries


def _floated(small: bool = False) -> pd.DataFrame:
    """The entries as pandas reads them back after one row lost its job id: float ids."""
    frame = pd.json_normalize(_entries())
    column = "resource.labels.job_id"
    ids = frame[column].astype("int64")
    frame[column] = (ids - ids + 12345 if small else ids).astype("float64")
    frame.loc[0, column] = np.nan
    return frame


def _parquet(frame: pd.DataFrame) -> bytes:
    out = io.BytesIO()
    frame.to_parquet(out)
    return out.getvalue()


WRITERS = {
    "csv": lambda f: f.to_csv(index=False).encode(),
    "json-lines": lambda f: f.to_json(orient="records", lines=True).encode(),
    "json-records": lambda f: f.to_json(orient="records").encode(),
    "json-split": lambda f: f.to_json(orient="split").encode(),
    "parquet": _parquet,
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_float_job_id_is_refused_with_its_place(writer: str) -> None:
    data = WRITERS[writer](_floated())
    with pytest.raises(InputError) as raised:
        analyze_sources([MemorySource(data, f"logs.{writer}")])
    message = str(raised.value)
    assert message.startswith(f"logs.{writer}: line ")
    assert "resource.labels.job_id" in message and "digits are lost" in message
    assert "\n" not in message and "e+18" in message


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_float_id_a_float_holds_exactly_is_read_as_its_digits(writer: str) -> None:
    data = WRITERS[writer](_floated(small=True))
    analysis = analyze_sources([MemorySource(data, f"logs.{writer}")])
    assert {d.job_id for d in analysis.diagnoses} >= {"12345"}
    assert not any(d.job_id and "." in d.job_id for d in analysis.diagnoses)


def test_the_accessor_refuses_a_float_job_id_and_reads_int_ids() -> None:
    rows = [
        {"timestamp": e["timestamp"], "task": e["resource"]["labels"].get("task_name")}
        | {"severity": e.get("severity")}
        | {"text": (e.get("jsonPayload") or {}).get("message", e.get("textPayload"))}
        for e in _entries()
    ]
    frame = pd.DataFrame(rows)
    frame["job_id"] = float(JOB)
    with pytest.raises(InputError, match=r"^<dataframe>: row 1: the id .* in job_id "):
        frame.jobdoctor.diagnose()
    frame["job_id"] = int(JOB)  # int64: exact
    assert frame.jobdoctor.diagnose()["job_id"].tolist() == [JOB]


def test_the_ids_as_text_read_right() -> None:
    # What the error tells the user to do.
    text = pd.json_normalize(_entries()).astype({"resource.labels.job_id": str})
    analysis = analyze_sources([MemorySource(text.to_csv(index=False).encode(), "ok.csv")])
    assert [d.job_id for d in analysis.diagnoses] == [JOB]


@given(st.integers(min_value=1 - 2**53, max_value=2**53 - 1))
def test_an_exact_float_gives_its_integer(number: int) -> None:
    assert id_text(float(number), "c") == str(number)
    assert id_text(repr(float(number)), "c") == str(number)
    assert id_text(number, "c") == str(number)


@given(st.integers(min_value=2**53, max_value=10**19))
def test_a_float_past_two_to_the_53_is_lost(number: int) -> None:
    with pytest.raises(LostDigits):
        id_text(float(number), "c")
    with pytest.raises(LostDigits):
        id_text(f"{float(number):.9e}", "c")


@pytest.mark.parametrize("text", [JOB, "object_detection_05_29", "job-1.2", "", "1e", "abc.1"])
def test_ids_written_as_text_stay_as_written(text: str) -> None:
    assert id_text(text, "c") == text
