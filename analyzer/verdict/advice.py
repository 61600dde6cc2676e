"""Advice for a diagnosed cause, from ``rules/advice.yaml`` (written by us, in three languages)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from analyzer.classify.tracebacks import ExceptionInfo
from analyzer.core.cache import remembered
from analyzer.core.errors import PolicyError
from analyzer.rulebook.events import Category
from analyzer.timeline.exitcodes import decode
from analyzer.verdict.diagnosis import Cause, JobState, RecordedError
from analyzer.verdict.jobspec import MACHINE_TYPES, JobSpec, larger_machine
from analyzer.verdict.policy import RetryPolicy, builtin_policy_path


def _advice_path() -> Path:
    return builtin_policy_path().with_name("advice.yaml")


@cache
def _load(path: Path) -> Mapping[str, Mapping[str, tuple[str, ...]]]:
    # Kept by analyzer.core.cache (keyed by the file and this module): no YAML on most runs.
    return remembered("advice", [path, Path(__file__)], lambda: _read(path), dict)


def _read(path: Path) -> dict[str, dict[str, tuple[str, ...]]]:
    import yaml

    from analyzer.core.yamlload import safe_load

    try:
        data = safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise PolicyError(f"{path}: cannot read the advice file ({exc})") from exc
    if not isinstance(data, dict):
        raise PolicyError(f"{path}:1: the advice file must map causes to languages")
    table: dict[str, dict[str, tuple[str, ...]]] = {}
    for key, langs in data.items():
        if not isinstance(langs, dict) or "en" not in langs:
            raise PolicyError(f"{path}: advice {key!r} needs an 'en' list of sentences")
        table[str(key)] = {str(lang): tuple(map(str, lines)) for lang, lines in langs.items()}
    return table


def load_advice() -> None:
    """Read the built-in advice file now (it is read once, when first needed)."""
    _load(_advice_path())


def _keys(
    cause: Cause | None, state: JobState, policy: RetryPolicy, table: Mapping[str, object]
) -> list[str]:
    """The advice entries for ``cause``: its finer detail's when we have one, else its
    category's (transient exit codes have their own)."""
    if cause is None:
        if state is JobState.UNSPECIFIED:
            return ["none.unknown"]
        return ["none.failed" if state is JobState.FAILED else "none.running"]
    if cause.detail == "user-rule":
        return ["user-rule"]
    if cause.detail in ("output-not-in-input", "replica-lines-no-error"):
        # What the exit code alone says, then how to get the output that says more.
        transient = policy.is_transient(cause.exit_code)
        return ["user_code_exception.transient"] * transient + [
            f"user_code_exception.{cause.detail}"
        ]
    if cause.detail and f"{cause.category.value}.{cause.detail}" in table:
        return [f"{cause.category.value}.{cause.detail}"]
    if cause.category is Category.USER_CODE_EXCEPTION and policy.is_transient(cause.exit_code):
        return ["user_code_exception.transient"]
    if (
        cause.category is Category.USER_CODE_EXCEPTION
        and cause.exception is not None
        and cause.replica is None
        and cause.exit_code is None
    ):
        # Read from the end of the service's message whose first line (replica, exit
        # status) is cut: say what the copied traceback shows, not "status unknown".
        return ["user_code_exception.exception-tail"]
    if cause.category is Category.USER_CODE_EXCEPTION and cause.exception is not None:
        # Without a frame there is no place to name: say what is known, never a "?".
        if cause.exception.frame is None:
            return ["user_code_exception.exception-only"]
        return ["user_code_exception.exception"]
    return [cause.category.value]


def _metric(message: str) -> str:
    found = re.search(r"exceed quota limits:\s*(\S+)", message)
    if found:
        return found.group(1).rstrip('.,"')
    legacy = re.search(r"The request for (\d+ \S+) accelerators", message)
    return f"{legacy.group(1)} accelerators" if legacy else "see the message"


def _short(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _machine_values(cause: Cause | None, spec: JobSpec | None) -> dict[str, object] | None:
    """The failing pool's machine and a larger one of its family, when the spec names them."""
    if cause is None or spec is None:
        return None
    pool = spec.pool(cause.replica)
    if pool is None or pool.machine_type is None:
        return None
    machine = MACHINE_TYPES.get(pool.machine_type)
    larger = larger_machine(pool.machine_type)
    if machine is None or larger is None:
        return None
    return {
        "pool": pool.name,
        "machine": machine.name,
        "memory": f"{machine.memory_gb:g}",
        "larger": larger.name,
        "larger_memory": f"{larger.memory_gb:g}",
        "small": machine.small,
    }


def next_step(
    category: Category | None,
    exit_code: int | None,
    policy: RetryPolicy,
    lang: str = "en",
    event: str | None = None,
) -> str:
    """What the platform does after a failure of ``category`` (or a lifecycle ``event``)."""
    table = _load(_advice_path())
    if category is None:
        specific = f"next.event.{event}"
        key = specific if specific in table else "next.event"
    elif category is Category.CANCELLED:
        key = "next.cancelled"
    elif category is Category.WORKER_RESTARTS_EXHAUSTED:
        key = "next.restarts_exhausted"
    elif policy.is_permanent(category, exit_code):
        key = "next.permanent"
    else:
        key = "next.retried"
    entry = table[key]
    attempts = policy.attempts_allowed(category, exit_code) if category is not None else 1
    return " ".join(entry.get(lang) or entry["en"]).format(
        attempts=attempts,
        retries=attempts - 1,
        restarts=policy.worker_restart_budget,
        event=event or "",
    )


def _exit_values(last_exit: tuple[str, int]) -> dict[str, object]:
    task, code = last_exit
    return {"replica": task, "exit_code": code, "exit_meaning": decode(code).meaning}


def advice_for(
    cause: Cause | None,
    state: JobState,
    policy: RetryPolicy,
    lang: str = "en",
    spec: JobSpec | None = None,
    refused: str | None = None,
    job_id: str | None = None,
    other_service: bool = False,
    other_jobs: bool = False,
    last_exit: tuple[str, int] | None = None,
    recorded: RecordedError | None = None,
    seen: ExceptionInfo | None = None,
) -> tuple[str, ...]:
    """What to do about ``cause`` (None: no failure), in ``lang`` when we have it, else English.

    With the job's ``spec``, out-of-memory advice names the pool's machine type, its memory and
    a larger type of the same family. ``refused``: the API's status when it refused to create
    the job (no job exists: nothing of its logs to fetch). ``job_id``, and the project the
    cause's console link names, fill the ``jobdoctor fetch`` command the advice gives.
    ``other_service``: the input holds only another Vertex AI service's API error (no job);
    ``other_jobs``: only another kind of job's states (batch prediction: timeline.other_jobs).
    ``last_exit``: a worker (task, exit code) whose non-zero exit ends its lines with nothing
    of the service after it, in a job without a cause: what that exit shows and what it does
    not. ``recorded``: the job object's own error when no category fits it (a disk
    shortage): its rule's advice (``recorded.<rule id>``), quoting it. ``seen``: the
    exception the input shows in a job without a failure message (predict.seen_exception):
    the advice starts from it rather than from "nothing is known".
    """
    if cause is None and state is JobState.SUCCEEDED:
        return ()
    table = _load(_advice_path())
    if cause is None and refused:
        keys = [f"none.refused.{refused}" if f"none.refused.{refused}" in table else "none.refused"]
    elif cause is None and other_service:
        keys = ["none.other-service"]
    elif cause is None and other_jobs:
        keys = ["none.other-jobs"]
    elif cause is None and recorded is not None:
        specific = f"recorded.{recorded.rule}"
        keys = [specific if specific in table else "recorded"]
    elif cause is None and seen is not None:
        # The traceback in the paste is what the user came with: say what it shows and what
        # is missing, rather than only "the state is unknown" or "still in progress".
        keys = ["none.exception-seen"] + [
            k
            for k in _keys(cause, state, policy, table)
            if k not in ("none.unknown", "none.running")
        ]
    else:
        keys = _keys(cause, state, policy, table)
    if cause is None and last_exit is not None and state is not JobState.SUCCEEDED:
        # In place of "the job is still in progress": the exit says the job may not be.
        keys = [k for k in keys if k != "none.running"] + ["none.worker-exit"]
    machine = _machine_values(cause, spec)
    memory = cause is not None and (cause.category is Category.OOM or cause.detail == "oom-killed")
    if machine is not None and memory:
        keys.append("oom.machine")
        if machine["small"]:
            keys.append("oom.small-machine")
    exception = cause.exception if cause is not None else seen
    frame = exception.frame if exception is not None else None
    values: dict[str, object] = {
        "replica": cause.replica if cause and cause.replica else "the replica",
        "exit_code": cause.exit_code if cause and cause.exit_code is not None else "unknown",
        "exit_meaning": cause.exit_meaning if cause and cause.exit_meaning else "meaning unknown",
        **(_exit_values(last_exit) if cause is None and last_exit is not None else {}),
        "region": cause.region if cause and cause.region else "the region",
        "metric": _metric(cause.message) if cause else "see the message",
        "attempts": (
            policy.attempts_allowed(cause.category, cause.exit_code) if cause is not None else 1
        ),
        "exception": exception.type if exception else "the exception",
        "exception_message": _short(exception.message)
        if exception and exception.message
        else "no message",
        "where": f"{frame.file}:{frame.line} ({frame.function})"
        if frame
        else "where its traceback points",
        "at": f" at {frame.file}:{frame.line} ({frame.function})" if frame else "",
        "detail": cause.detail if cause and cause.detail else "",
        "rule": cause.rule if cause else "",
        "message": _short(cause.message, 100) if cause else "",
        "cascade": cause.cascade[0].replica if cause and cause.cascade else "the other replicas",
        "status": refused or "",
        # (Without its last period: the sentence quoting it has its own.)
        "recorded": _short(recorded.message, 200).rstrip(".") if recorded else "",
        **({"pool": recorded.pool} if recorded is not None and recorded.pool else {}),
        **(machine or {}),
    }
    lines: list[str] = []
    for key in keys:
        entry = table.get(key)
        if entry is not None:
            lines += [line.format(**values) for line in entry.get(lang) or entry["en"]]
    # A sentence that opens with the unnamed replica starts with a capital.
    lines = [f"T{line[1:]}" if line.startswith("the replica") else line for line in lines]
    # The fetch command as the user can run it: the ids the input shows, in place of the
    # placeholders (only ids of the forms the platform gives, nothing else of the log's text).
    if job_id and _ID.fullmatch(job_id):
        lines = [
            line.replace("--job-id JOB_ID", f"--job-id {job_id}").replace(
                "custom-jobs describe JOB_ID", f"custom-jobs describe {job_id}"
            )
            for line in lines
        ]
    project = _PROJECT.search(cause.message) if cause is not None else None
    if project is not None:
        lines = [line.replace("--project PROJECT", f"--project {project[1]}") for line in lines]
    return tuple(lines)


# A job id as Vertex AI (digits) or AI Platform (a user's name) gives it.
_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
# The project of a service error's console link (logs/viewer?project=P&resource=ml_job...).
_PROJECT = re.compile(r"[?&]project=([a-z0-9][a-z0-9-]{4,61}[a-z0-9])(?=&|$|\s)")
