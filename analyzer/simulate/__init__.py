"""Simulated Vertex AI custom-job logs, shaped like real Cloud Logging exports.

For tests, demos and benchmarks: each scenario is one outcome of the retry
policy in ``platform.md`` (success, user-code failure, OOM, stockout, ...)
and knows the verdict it implies.

>>> from analyzer.simulate import SCENARIOS, simulate, expected, write
>>> import io
>>> out = io.StringIO()
>>> write(simulate("oom", seed=1), "stream-logs", out)
>>> expected("oom", seed=1)[0].state
'JOB_STATE_FAILED'

Regenerate ``sample_logs/`` with ``python -m analyzer.simulate.regenerate``; write a sink tree
(hourly files per job, as a sink to Cloud Storage does) with ``analyzer.simulate.tree``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any

from analyzer.core.errors import InputError
from analyzer.simulate.fleet import dense_fleet, fleet
from analyzer.simulate.plan import Expected, merge_jobs
from analyzer.simulate.scenarios import SCENARIOS, Scenario
from analyzer.simulate.writers import FORMATS, encoding, write

__all__ = [
    "FORMATS",
    "SCENARIOS",
    "Expected",
    "Scenario",
    "dense_fleet",
    "encoding",
    "expected",
    "fleet",
    "simulate",
    "write",
]


def _scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        close = difflib.get_close_matches(name, SCENARIOS, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise InputError(
            f"unknown scenario {name!r}.{hint} Choose one of: {', '.join(SCENARIOS)}."
        ) from None


def simulate(scenario: str, seed: int = 0) -> Iterator[dict[str, Any]]:
    """The LogEntry dicts of ``scenario`` in true time order, generated lazily.

    Deterministic for a seed; several jobs are interleaved for ``project-wide``.
    Raises :class:`~analyzer.core.errors.InputError` for an unknown scenario name.
    """
    return merge_jobs(_scenario(scenario).plans(seed))


def expected(scenario: str, seed: int = 0) -> list[Expected]:
    """The verdict ``scenario`` implies for each of its jobs, in job start order."""
    return [plan.expected for plan in _scenario(scenario).plans(seed)]
