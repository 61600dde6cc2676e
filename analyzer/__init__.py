"""jobdoctor: diagnose Vertex AI custom training jobs from their Cloud Logging logs.

The notebook API::

    from analyzer import diagnose, diagnose_frame, read_logs
    jobs = diagnose_frame("exports/")     # one row per job (also a list: glob.glob(...))
    diagnose("exports/")[0]               # in Jupyter: verdict and per-worker timeline chart
    print(diagnose("exports/")[0])        # in a plain REPL: the one-line verdict
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Loaded on first use: pandas must not load with the package (`jobdoctor explain` starts fast).
_LAZY = {
    "Analysis": "analyzer.pipeline.analysis",
    "analyze": "analyzer.api",
    "diagnose": "analyzer.api",
    "Diagnosis": "analyzer.verdict.diagnosis",
    "read_logs": "analyzer.frames",
    "diagnose_frame": "analyzer.frames",
    "jobs_frame": "analyzer.frames",
    "DiagnosisList": "analyzer.pipeline.analysis",
}
__all__ = [
    "Analysis",
    "Diagnosis",
    "DiagnosisList",
    "analyze",
    "diagnose",
    "diagnose_frame",
    "jobs_frame",
    "read_logs",
]

if TYPE_CHECKING:
    from analyzer.api import analyze, diagnose
    from analyzer.frames import diagnose_frame, jobs_frame, read_logs
    from analyzer.pipeline.analysis import Analysis, DiagnosisList
    from analyzer.verdict.diagnosis import Diagnosis


def __dir__() -> list[str]:
    """The module's names with the lazy ones, so that completion and ``dir()`` show them."""
    return sorted(set(globals()) | set(_LAZY))


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'analyzer' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
