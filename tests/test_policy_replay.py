"""The retry policy replayed at its boundaries, on hand-built event sequences."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from analyzer.classify.joblog import JobLog, VmSpan
from analyzer.core.errors import PolicyError
from analyzer.ingest.records import Origin, replica_task
from analyzer.rulebook.events import Category, Event, EventKind, RuleMatch
from analyzer.timeline.attempts import build_timeline
from analyzer.verdict.diagnosis import Diagnosis, JobState
from analyzer.verdict.policy import RetryPolicy, load_policy
from analyzer.verdict.predict import diagnose_timeline

T0 = datetime(2026, 1, 1, tzinfo=UTC)
POLICY = load_policy()


class Script:
    """Builds a job's events one line at a time, a second apart."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.spans: dict[str, list[VmSpan]] = {}

    def add(
        self,
        kind: EventKind,
        task: str = "service",
        category: Category | None = None,
        vm: str | None = None,
        **fields: str | int,
    ) -> Script:
        when = T0 + timedelta(seconds=len(self.events))
        match = RuleMatch(f"test.{kind}", kind, category, "en", fields)
        line = len(self.events) + 1
        self.events.append(
            Event(when, "42", task, match, f"{kind} {fields}", Origin("t.jsonl", line), vm)
        )
        return self

    def attempt(self, *, running: bool = True) -> Script:
        self.add(EventKind.ATTEMPT_STARTED)
        if running:
            self.add(EventKind.JOB_RUNNING)
            self.add(EventKind.WORKER_STARTED, task="workerpool0-0", vm="vm-a")
        return self

    def fail(self, category: Category, **fields: str | int) -> Script:
        self.add(EventKind.ERROR, category=category, **fields)
        return self.add(EventKind.JOB_FAILED)

    def diagnose(self, policy: RetryPolicy = POLICY) -> Diagnosis:
        log = JobLog("42", tuple(self.events), {}, len(self.events), T0, None)
        return diagnose_timeline(build_timeline(log), policy)


def stockout_attempts(count: int) -> Script:
    script = Script()
    for _ in range(count):
        script.attempt(running=False).fail(Category.STOCKOUT, region="us-central1")
    return script


@pytest.mark.parametrize(
    ("seen", "state", "observed", "attempts"),
    [
        (1, JobState.FAILED, False, 4),  # predicted: retried up to 3 times
        (3, JobState.FAILED, False, 4),  # 3rd attempt: one retry left
        (4, JobState.FAILED, True, 4),  # 4th attempt: exhausted, observed
    ],
)
def test_stockout_is_retried_up_to_three_times(
    seen: int, state: JobState, observed: bool, attempts: int
) -> None:
    diagnosis = stockout_attempts(seen).diagnose()
    assert (diagnosis.state, diagnosis.observed_final, diagnosis.attempts) == (
        state,
        observed,
        attempts,
    )
    assert diagnosis.retries == attempts - 1
    assert diagnosis.cause is not None and diagnosis.cause.region == "us-central1"


@pytest.mark.parametrize(("seen", "observed"), [(2, False), (3, True)])
def test_internal_error_allows_three_attempts(seen: int, observed: bool) -> None:
    script = Script()
    for _ in range(seen):
        script.attempt().fail(Category.INTERNAL_ERROR)
    diagnosis = script.diagnose()
    assert diagnosis.state is JobState.FAILED
    assert diagnosis.observed_final is observed
    assert diagnosis.attempts == 3
    assert diagnosis.retries == 2


def test_retries_exhausted_line_is_final_whatever_the_count() -> None:
    script = Script().attempt().fail(Category.INTERNAL_ERROR)
    script.add(EventKind.RETRIES_EXHAUSTED)
    diagnosis = script.diagnose()
    assert (diagnosis.state, diagnosis.observed_final, diagnosis.attempts) == (
        JobState.FAILED,
        True,
        1,
    )


@pytest.mark.parametrize(
    ("exit_code", "attempts"), [(1, 1), (2, 1), (6, 4), (11, 4), (134, 4), (139, 4), (137, 1)]
)
def test_user_code_exit_is_permanent_unless_transient(exit_code: int, attempts: int) -> None:
    script = (
        Script()
        .attempt()
        .fail(Category.USER_CODE_EXCEPTION, replica="workerpool0-0", exit_code=exit_code)
    )
    diagnosis = script.diagnose()
    assert diagnosis.state is JobState.FAILED
    assert diagnosis.attempts == attempts
    assert diagnosis.observed_final is (attempts == 1)


def test_transient_failure_then_success_keeps_the_retried_cause() -> None:
    script = (
        Script()
        .attempt()
        .fail(Category.USER_CODE_EXCEPTION, replica="workerpool0-0", exit_code=139)
    )
    script.attempt().add(EventKind.JOB_SUCCEEDED)
    diagnosis = script.diagnose()
    assert (diagnosis.state, diagnosis.observed_final) == (JobState.SUCCEEDED, True)
    assert (diagnosis.attempts, diagnosis.retries) == (2, 1)
    assert diagnosis.cause is not None and diagnosis.cause.exit_code == 139
    assert [a.outcome for a in diagnosis.attempt_log] == ["user_code_exception", "succeeded"]


@pytest.mark.parametrize("category", [Category.OOM, Category.QUOTA])
def test_common_errors_are_permanent(category: Category) -> None:
    diagnosis = Script().attempt().fail(category, pool="workerpool0").diagnose()
    assert (diagnosis.state, diagnosis.observed_final, diagnosis.attempts) == (
        JobState.FAILED,
        True,
        1,
    )


def crashing_worker(restarts: int, *, fails_again: bool) -> Script:
    """A worker that exits 1 and is restarted ``restarts`` times on the same VM."""
    script = Script().attempt()
    for _ in range(restarts):
        script.add(EventKind.WORKER_EXITED, task="workerpool0-0", vm="vm-a", exit_code=1)
        script.add(EventKind.WORKER_STARTED, task="workerpool0-0", vm="vm-a")
    if fails_again:
        script.add(EventKind.WORKER_EXITED, task="workerpool0-0", vm="vm-a", exit_code=1)
        script.add(EventKind.JOB_FAILED)
    return script


def test_fifth_restart_is_still_within_the_budget() -> None:
    diagnosis = crashing_worker(5, fails_again=False).diagnose()
    assert diagnosis.state is JobState.RUNNING
    assert diagnosis.worker_restarts == {"workerpool0-0": 5}
    assert diagnosis.cause is None


def test_failing_after_five_restarts_retries_the_job() -> None:
    diagnosis = crashing_worker(5, fails_again=True).diagnose()
    assert diagnosis.cause is not None
    assert diagnosis.cause.category is Category.WORKER_RESTARTS_EXHAUSTED
    assert diagnosis.cause.replica == "workerpool0-0"
    assert (diagnosis.state, diagnosis.observed_final, diagnosis.attempts) == (
        JobState.FAILED,
        False,
        4,
    )


def test_failing_after_four_restarts_is_not_exhaustion() -> None:
    diagnosis = crashing_worker(4, fails_again=True).diagnose()
    assert diagnosis.cause is not None
    assert diagnosis.cause.category is Category.USER_CODE_EXCEPTION


def test_maintenance_moves_count_as_restarts_but_not_toward_the_budget() -> None:
    script = Script().attempt()
    for vm in ("vm-b", "vm-c", "vm-d", "vm-e", "vm-f", "vm-g"):
        script.add(EventKind.WORKER_STARTED, task="workerpool0-0", vm=vm)
    script.add(EventKind.JOB_FAILED)
    diagnosis = script.diagnose()
    assert diagnosis.worker_restarts == {"workerpool0-0": 6}
    worker = diagnosis.timeline.attempts[0].workers[0]
    assert (worker.maintenance_restarts, worker.budget_restarts) == (6, 0)
    assert diagnosis.cause is None or diagnosis.cause.category is not (
        Category.WORKER_RESTARTS_EXHAUSTED
    )


def test_vm_change_without_runner_lines_is_a_maintenance_restart() -> None:
    script = Script().attempt(running=False).add(EventKind.JOB_RUNNING)
    script.add(EventKind.JOB_SUCCEEDED)
    spans = {
        "workerpool0-0": (
            VmSpan("vm-a", T0, T0 + timedelta(seconds=1), 10),
            VmSpan(
                "vm-b", T0 + timedelta(seconds=1, milliseconds=500), T0 + timedelta(seconds=3), 10
            ),
        )
    }
    log = JobLog("42", tuple(script.events), spans, 20, T0, None)
    diagnosis = diagnose_timeline(build_timeline(log), POLICY)
    assert diagnosis.worker_restarts == {"workerpool0-0": 1}
    assert diagnosis.state is JobState.SUCCEEDED and diagnosis.cause is None


def test_attempts_split_on_failure_even_without_provisioning_lines() -> None:
    script = Script().attempt().fail(Category.STOCKOUT, region="europe-west4")
    script.add(EventKind.WORKER_STARTED, task="workerpool0-0")
    script.add(EventKind.JOB_SUCCEEDED)
    diagnosis = script.diagnose()
    assert diagnosis.attempts == 2 and diagnosis.state is JobState.SUCCEEDED


def test_no_failure_in_the_last_attempt_is_predicted_running() -> None:
    diagnosis = Script().attempt().diagnose()
    assert (diagnosis.state, diagnosis.observed_final) == (JobState.RUNNING, False)
    assert diagnosis.cause is None


def test_only_provisioning_is_pending() -> None:
    diagnosis = Script().attempt(running=False).diagnose()
    assert diagnosis.state is JobState.PENDING


def test_spot_allows_seven_attempts_and_disable_retries_stops_internal_retries() -> None:
    spot = POLICY.with_scheduling(spot=True)
    assert stockout_attempts(1).diagnose(spot).attempts == 7
    no_retries = POLICY.with_scheduling(disable_retries=True)
    diagnosis = Script().attempt().fail(Category.INTERNAL_ERROR).diagnose(no_retries)
    assert (diagnosis.attempts, diagnosis.observed_final) == (1, True)


@pytest.mark.parametrize(
    ("replica", "task"),
    [
        ("master 0", "master-replica-0"),
        ("worker 2", "worker-replica-2"),
        ("workerpool1-3", "workerpool1-3"),
    ],
)
def test_replica_names_map_to_tasks(replica: str, task: str) -> None:
    assert replica_task(replica) == task


def test_bad_policy_files_name_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "policy.yaml"
    text = (
        Path("rules/policy.yaml").read_text().replace("max_worker_restarts:", "max_worker_restart:")
    )
    bad.write_text(text)
    with pytest.raises(PolicyError, match=r"policy.yaml:\d+: unknown setting .*did you mean"):
        load_policy(bad)
    bad.write_text(
        text.replace("max_worker_restart:", "max_worker_restarts:").replace(
            "stockout: 4", "stockout: -1"
        )
    )
    with pytest.raises(PolicyError, match=r"policy.yaml:\d+: max_attempts.stockout must be"):
        load_policy(bad)


def test_restart_job_on_worker_restart_retries_the_job_at_the_first_worker_failure() -> None:
    policy = POLICY.with_scheduling(restart_job_on_worker_restart=True)
    script = crashing_worker(0, fails_again=True)
    diagnosis = script.diagnose(policy)
    assert diagnosis.cause is not None
    assert diagnosis.cause.category is Category.WORKER_RESTARTS_EXHAUSTED
    assert diagnosis.attempts == 4 and not diagnosis.observed_final
    assert crashing_worker(0, fails_again=True).diagnose().cause is not None
    default = crashing_worker(0, fails_again=True).diagnose()
    assert default.cause is not None
    assert default.cause.category is Category.USER_CODE_EXCEPTION
