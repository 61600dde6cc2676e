"""The package's face (issue 28, point 5): ``import analyzer`` registers ``df.jobdoctor``
without loading pandas (whichever of the two is imported first); ``dir(analyzer)`` is the
documented API and nothing else; ``diagnose(...)`` gives the jobs in the order ``jobdoctor
diagnose`` prints them, failures first."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import analyzer
from analyzer import analyze, diagnose
from tests.clirun import run

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"
OOM = SAMPLES / "cuda-oom.jsonl.gz"

# A frame of a real export's records, built without analyzer.frames (which would register the
# accessor itself): the records as the readers give them.
_FRAME = f"""
from dataclasses import asdict
from analyzer.ingest import read_records
rows = [
    {{**asdict(r), "path": r.origin.path, "line": r.origin.line}}
    for r in read_records([{str(OOM)!r}])
]
for row in rows:
    del row["origin"]
"""


def _python(code: str) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter; it prints one JSON object, returned."""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert isinstance(result, dict)
    return result


def test_import_analyzer_loads_no_pandas_and_registers_the_accessor_when_pandas_loads() -> None:
    result = _python(
        "import json, sys\n"
        "import analyzer\n"
        "before = sorted(m for m in ('pandas', 'analyzer.accessor', 'analyzer.frames')"
        " if m in sys.modules)\n" + _FRAME + "import pandas as pd\n"
        "registered = hasattr(pd.DataFrame, 'jobdoctor')\n"
        "frames_loaded = 'analyzer.frames' in sys.modules\n"
        "jobs = pd.DataFrame(rows).jobdoctor.diagnose()\n"
        "print(json.dumps({'before': before, 'registered': registered,"
        " 'frames_loaded': frames_loaded,"
        " 'jobs': [[j, str(s), str(c)] for j, s, c in"
        " zip(jobs.job_id, jobs.state, jobs.category)]}))\n"
    )
    assert result["before"] == []
    assert result["registered"] is True and result["frames_loaded"] is False
    # The accessor's verdict is the file's.
    (job,) = diagnose(OOM)
    assert result["jobs"] == [[job.job_id, job.state.value, job.cause.category.value]]  # type: ignore[union-attr]


def test_the_accessor_is_registered_when_pandas_came_first() -> None:
    result = _python(
        "import json, sys\n"
        "import pandas as pd\n"
        "import analyzer\n"
        "print(json.dumps({'registered': hasattr(pd.DataFrame, 'jobdoctor')}))\n"
    )
    assert result == {"registered": True}


def test_pandas_still_imports_as_itself() -> None:
    """The hook leaves pandas' module as it was: its loader, its submodules, its resources."""
    result = _python(
        "import json\n"
        "import analyzer, pandas, pandas.io.formats.style_render\n"
        "print(json.dumps({'loader': type(pandas.__loader__).__name__,"
        " 'version': pandas.__version__ != ''}))\n"
    )
    assert result == {"loader": "SourceFileLoader", "version": True}


def test_dir_lists_exactly_the_documented_api() -> None:
    importlib.import_module("analyzer.cli")  # a submodule loaded: still not listed

    names = dir(analyzer)
    assert names == sorted([*analyzer.__all__, "__version__"])
    for name in names:
        value = getattr(analyzer, name)
        assert not isinstance(value, ModuleType), name
        # Each is documented: in the package's docstring, and has its own.
        assert name in (analyzer.__doc__ or ""), name
        assert name == "__version__" or (value.__doc__ or "").strip(), name
    # Neither typing's names nor the package's own imports.
    for hidden in ("TYPE_CHECKING", "Any", "annotations", "importlib", "sys", "cli"):
        assert hidden not in names


def _printed_order(*args: str) -> list[tuple[str | None, str]]:
    """(job id, state) of each verdict line of ``jobdoctor diagnose -q ARGS``, in order."""
    code, out, _ = run("diagnose", "-q", *args)
    assert code == 0
    found = [re.match(r"job (\d+|\(no id\) \S+)\s+(\w+)", line) for line in out.splitlines()]
    assert all(found), out
    return [
        (None if m[1].startswith("(") else m[1], f"JOB_STATE_{m[2]}")
        for m in found
        if m is not None
    ]


@pytest.mark.parametrize(
    "inputs",
    [[SAMPLES], [SAMPLES / "success.jsonl", SAMPLES / "stockout-exhausted.jsonl", OOM]],
    ids=["sample_logs", "three-files"],
)
def test_diagnose_gives_the_jobs_in_the_order_the_cli_prints_them(inputs: list[Path]) -> None:
    jobs = diagnose(*inputs)
    assert [(d.job_id, d.state.value) for d in jobs] == _printed_order(*map(str, inputs))
    # Failures first: not the order the inputs (and the JSON report) hold them in.
    states = [d.state.value for d in jobs]
    assert states == sorted(states, key=lambda s: s != "JOB_STATE_FAILED")
    assert [d.job_id for d in analyze(inputs).diagnoses] != [d.job_id for d in jobs]
