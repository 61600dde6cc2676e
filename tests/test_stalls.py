"""A hung job is found (issue 30): the simulator's hangs and non-hangs diagnose as their
scenarios imply, in several formats; invariants (a job that ended is never stalled, a job
whose workers all write again is not); the verdict line, the prediction and the policy."""

from __future__ import annotations

import copy
import io
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.api import analyze_sources
from analyzer.classify.collector import collect
from analyzer.core.errors import PolicyError
from analyzer.ingest import MemorySource, open_sources
from analyzer.ingest.records import parse_timestamp
from analyzer.pipeline.analysis import Analysis
from analyzer.rulebook import RuleBook
from analyzer.simulate import encoding, expected, simulate, write
from analyzer.simulate.entries import rfc3339
from analyzer.timeline.attempts import build_timeline
from analyzer.timeline.rhythm import Rhythm
from analyzer.verdict.diagnosis import JobState, verdict_line
from analyzer.verdict.hangs import duration_words
from analyzer.verdict.jobspec import parse_job_spec
from analyzer.verdict.policy import builtin_policy_path, load_policy
from analyzer.verdict.predict import diagnose_timeline
from analyzer.verdict.stall import SilentWorker, Stall, StallKind

STALLED = ("rank-stuck-collective", "straggler", "silent-after-checkpoint")
NOT_STALLED = (
    "watchdog-kills",
    "long-evaluation",
    "chatty-export-ends",
    "final-save",
    "still-running",
    "nccl-cascade",
)


@pytest.fixture(scope="module")
def book() -> RuleBook:
    return RuleBook.load()


def _entries(scenario: str, seed: int) -> list[dict[str, Any]]:
    return list(simulate(scenario, seed))


def _analysis(entries: list[dict[str, Any]], fmt: str = "jsonl", **kw: Any) -> Analysis:
    out = io.StringIO()
    write(entries, fmt, out, seed=1)
    return analyze_sources([MemorySource(out.getvalue().encode(encoding(fmt)), f"x.{fmt}")], **kw)


def _stalls(analysis: Analysis) -> dict[str | None, tuple[str | None, tuple[str, ...]]]:
    return {
        d.job_id: (
            d.stalled.kind.value if d.stalled else None,
            tuple(sorted(w.replica for w in d.stalled.workers)) if d.stalled else (),
        )
        for d in analysis.diagnoses
    }


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("fmt", ["jsonl", "gcloud-json", "stream-logs"])
@pytest.mark.parametrize("scenario", STALLED + NOT_STALLED)
def test_scenarios_stall_as_they_imply(scenario: str, fmt: str, seed: int) -> None:
    want = expected(scenario, seed)
    if fmt == "stream-logs" and len(want) > 1:
        pytest.skip("a text export holds one job")
    analysis = _analysis(_entries(scenario, seed), fmt)
    # (A text export names no job: the verdicts are compared without their ids.)
    got = sorted((d.state.value, *_stalls(analysis)[d.job_id]) for d in analysis.diagnoses)
    assert got == sorted((e.state, e.stalled, tuple(sorted(e.silent))) for e in want)


def test_the_stalled_verdict_reads_as_issue_30_says() -> None:
    (diagnosis,) = _analysis(_entries("straggler", 1)).diagnoses
    stall = diagnosis.stalled
    assert stall is not None and stall.waiting == (
        "workerpool0-0",
        "workerpool1-0",
        "workerpool1-1",
    )
    silent = stall.workers[0].silent_for
    assert str(diagnosis) == (
        f"job {diagnosis.job_id}: RUNNING, stalled since {stall.since:%H:%M}"
        f" (workerpool1-2 silent {duration_words(silent)}; the others still write),"
        " 1 attempt, 0 retries"
    )
    data = diagnosis.to_dict()["stalled"]
    assert data["kind"] == "straggler"
    assert data["timeout_source"] == "default"
    # The platform's 7-day default from the job's start (platform.md section 2).
    assert data["cost_to_timeout"]["machine_hours"] == pytest.approx(
        4 * data["cost_to_timeout"]["hours_left"], abs=0.05
    )
    assert any("gcloud ai custom-jobs cancel" in line for line in diagnosis.advice)
    assert any("silent for" in note and "when the input ends" in note for note in diagnosis.notes)


def test_a_collective_timeout_names_its_collective_and_began_when_it_waited() -> None:
    (diagnosis,) = _analysis(_entries("rank-stuck-collective", 1)).diagnoses
    stall = diagnosis.stalled
    assert stall is not None and stall.collective == "ALLREDUCE"
    assert "the others wait in an all-reduce that timed out" in str(diagnosis)
    # The watchdog waited Timeout(ms)=1800000: the hang began 30 minutes before its line.
    watchdog = min(o.line for o in stall.evidence)
    assert stall.since <= stall.input_end - timedelta(minutes=29) and watchdog > 0


def test_the_verdict_line_of_every_kind() -> None:
    end = datetime(2024, 3, 11, 14, 49, tzinfo=UTC)
    since = datetime(2024, 3, 11, 14, 2, tzinfo=UTC)
    silent = SilentWorker("workerpool1-3", since, end - since, timedelta(minutes=30))

    def line(kind: StallKind, waiting: tuple[str, ...], collective: str | None) -> str:
        stall = Stall(since, kind, (silent,), (), end, None, "default", None, waiting, collective)
        (diagnosis,) = _analysis(_entries("straggler", 1)).diagnoses
        from dataclasses import replace

        return verdict_line(replace(diagnosis, stalled=stall, job_id="J"))

    assert line(StallKind.STRAGGLER, ("a", "b"), "ALLREDUCE") == (
        "job J: RUNNING, stalled since 14:02 (workerpool1-3 silent 47 min; the others wait in"
        " an all-reduce), 1 attempt, 0 retries"
    )
    assert "(every worker silent for 47 min when the input ends)" in line(
        StallKind.ALL_SILENT, (), None
    )


ENDINGS = (
    ("Job completed successfully.",),
    ("Job failed.",),
    (
        "The replica workerpool0-0 exited with a non-zero status of 1. Termination reason: Error. ",
        "Job failed.",
    ),
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(STALLED), st.integers(1, 40), st.sampled_from(ENDINGS))
def test_a_job_that_ended_is_never_stalled(
    scenario: str, seed: int, ending: tuple[str, ...]
) -> None:
    entries = _entries(scenario, seed)
    hung = next(e for e in expected(scenario, seed) if e.stalled)
    last = max(_ns(e) for e in entries)
    service = next(e for e in entries if _job(e) == hung.job_id and _task(e) == "service")
    closing = []
    for index, text in enumerate(ending, start=1):
        line = copy.deepcopy(service)
        line["textPayload"] = text
        line["timestamp"] = rfc3339(last + index * 60 * 10**9)
        line["insertId"] = f"closing-{index}"
        closing.append(line)
    analysis = _analysis([*entries, *closing])
    (diagnosis,) = [d for d in analysis.diagnoses if d.job_id == hung.job_id]
    assert diagnosis.state is not JobState.RUNNING
    assert diagnosis.stalled is None


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(STALLED), st.integers(1, 40), st.integers(2, 30))
def test_later_lines_from_every_worker_end_the_stall(scenario: str, seed: int, gap: int) -> None:
    entries = _entries(scenario, seed)
    hung = next(e for e in expected(scenario, seed) if e.stalled)
    assert _stalls(_analysis(entries))[hung.job_id][0] == hung.stalled
    last = max(_ns(e) for e in entries)
    resumed = []
    for task in {_task(e) for e in entries if _job(e) == hung.job_id} - {"service"}:
        line = copy.deepcopy(
            next(e for e in reversed(entries) if _job(e) == hung.job_id and _task(e) == task)
        )
        line["jsonPayload"]["message"] = "step 90210: loss=0.1234"
        line["timestamp"] = rfc3339(last + gap * 60 * 10**9)
        line["insertId"] = f"resumed-{task}"
        resumed.append(line)
    assert _stalls(_analysis([*entries, *resumed]))[hung.job_id][0] is None


def test_a_single_export_that_stops_says_what_it_cannot_tell() -> None:
    (diagnosis,) = _analysis(_entries("chatty-export-ends", 3)).diagnoses
    assert diagnosis.stalled is None
    assert any("cannot show whether every worker went silent" in n for n in diagnosis.notes)


def test_now_of_a_live_read_shows_every_worker_silent() -> None:
    entries = _entries("chatty-export-ends", 3)
    last = max(_ns(e) for e in entries)
    now = datetime.fromtimestamp(last / 1e9, UTC) + timedelta(hours=2)
    (diagnosis,) = _analysis(entries, now=now).diagnoses
    assert diagnosis.stalled is not None and diagnosis.stalled.kind is StallKind.ALL_SILENT
    assert diagnosis.stalled.input_end == now
    assert not any("cannot show" in n for n in diagnosis.notes)


def test_the_job_spec_gives_the_timeout_and_accelerator_hours(book: RuleBook) -> None:
    entries = _entries("straggler", 1)
    spec = parse_job_spec(
        {
            "jobSpec": {
                "workerPoolSpecs": [
                    {
                        "machineSpec": {
                            "machineType": "a2-highgpu-1g",
                            "acceleratorType": "NVIDIA_TESLA_A100",
                            "acceleratorCount": 1,
                        },
                        "replicaCount": 1,
                    },
                    {
                        "machineSpec": {
                            "machineType": "a2-highgpu-1g",
                            "acceleratorType": "NVIDIA_TESLA_A100",
                            "acceleratorCount": 1,
                        },
                        "replicaCount": 3,
                    },
                ],
                "scheduling": {"timeout": "86400s"},
            }
        }
    )
    assert spec.timeout == timedelta(days=1)
    (diagnosis,) = _analysis(entries, job_spec=spec).diagnoses
    stall = diagnosis.stalled
    assert stall is not None and stall.timeout_source == "job_spec"
    cost = stall.cost_to_timeout
    assert cost is not None and cost.accelerator == "NVIDIA_TESLA_A100"
    assert cost.accelerator_hours == pytest.approx(4 * cost.hours_left)
    assert cost.hours_left < 24
    assert any("accelerator-hours" in line for line in diagnosis.advice)


def test_without_a_rhythm_the_input_says_so(book: RuleBook, tmp_path: Path) -> None:
    # A query engine's summary gives first, last and count, not the minutes in between.
    from dataclasses import replace

    path = tmp_path / "x.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in _entries("straggler", 1)))
    logs, _ = collect(open_sources([str(path)]), book)
    (log,) = logs
    bare = replace(
        log,
        vm_spans={t: tuple(replace(s, minutes=None) for s in v) for t, v in log.vm_spans.items()},
    )
    diagnosis = diagnose_timeline(build_timeline(bare), load_policy(), end=None)
    assert diagnosis.stalled is None
    assert any("cannot be told" in n for n in diagnosis.notes)


def test_the_threshold_is_a_quantile_of_the_gaps_with_a_floor() -> None:
    from analyzer.timeline.attempts import WorkerTimeline
    from analyzer.verdict.hangs import threshold

    stall = load_policy().stall

    def worker(gaps: tuple[tuple[int, int], ...], span: int) -> WorkerTimeline:
        active = 1 + sum(n for _, n in gaps)
        return WorkerTimeline("w", (), (), None, None, None, Rhythm(active, 0, span, gaps))

    # Every minute: the floor (30 min, above NCCL's and torch.distributed's timeouts).
    assert threshold(worker(((1, 200),), 200), stall) == timedelta(minutes=30)
    # Every 20 minutes: three times its gap.
    assert threshold(worker(((20, 20),), 400), stall) == timedelta(minutes=60)
    # One odd long pause among many short gaps does not set the pace.
    assert threshold(worker(((1, 300), (45, 1)), 345), stall) == timedelta(minutes=30)
    # Too few minutes, or over less time than the threshold: no rhythm to judge.
    assert threshold(worker(((1, 5),), 5), stall) is None
    assert threshold(worker(((1, 20),), 20), stall) is None


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ("stall: 3", "stall must be a mapping"),
        ("stall: {gap_quantile: 2}", "unknown setting stall.gap_quantile"),
    ],
)
def test_a_bad_stall_section_is_one_line(tmp_path: Path, section: str, message: str) -> None:
    text = builtin_policy_path().read_text(encoding="utf-8")
    head = text[: text.index("\nstall:")]
    path = tmp_path / "policy.yaml"
    path.write_text(f"{head}\n{section}\n", encoding="utf-8")
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    assert str(caught.value).startswith(f"{path}:") and "\n" not in str(caught.value)


def test_a_number_out_of_range_names_its_line(tmp_path: Path) -> None:
    text = (
        builtin_policy_path()
        .read_text(encoding="utf-8")
        .replace("gap_quantile: 0.99", "gap_quantile: 7")
    )
    path = tmp_path / "policy.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PolicyError, match=r"policy\.yaml:\d+: stall\.gap_quantile must be between"):
        load_policy(path)


def test_a_policy_without_a_stall_section_takes_the_builtin_one(tmp_path: Path) -> None:
    text = builtin_policy_path().read_text(encoding="utf-8")
    path = tmp_path / "policy.yaml"
    path.write_text(text[: text.index("\n# A job that hangs")], encoding="utf-8")
    assert load_policy(path).stall == load_policy().stall


def _ns(entry: dict[str, Any]) -> int:
    when = parse_timestamp(entry["timestamp"])
    assert when is not None
    return int(when.timestamp() * 1e9)


def _job(entry: dict[str, Any]) -> str:
    return str(entry["resource"]["labels"]["job_id"])


def _task(entry: dict[str, Any]) -> str:
    return str(entry["resource"]["labels"]["task_name"])
