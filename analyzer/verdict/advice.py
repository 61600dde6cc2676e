"""Advice for a diagnosed cause, from ``rules/advice.yaml`` (written by us, in three languages)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from analyzer.classify.tracebacks import ExceptionInfo
from analyzer.core.cache import remembered
from analyzer.core.errors import PolicyError
from analyzer.rulebook.events import Category
from analyzer.timeline.exitcodes import decode
from analyzer.verdict import findings as findings_model
from analyzer.verdict.diagnosis import Cause, JobState, RecordedError
from analyzer.verdict.findings import Finding, FindingKind, Findings, Provenance, collect, finding
from analyzer.verdict.findings_rows import AdviceRows, read_rows
from analyzer.verdict.jobspec import MACHINE_TYPES, JobSpec, larger_machine
from analyzer.verdict.notes_rows import (
    NoteRows,
    note_rows_path,
    note_texts_path,
    read_note_rows,
    read_texts,
)
from analyzer.verdict.policy import RetryPolicy, builtin_policy_path


def _advice_path() -> Path:
    return builtin_policy_path().with_name("advice.yaml")


@dataclass(frozen=True, slots=True)
class _Advice:
    """The advice texts (by key, then language) and the rows that choose them."""

    texts: dict[str, dict[str, tuple[str, ...]]]
    rows: AdviceRows
    # The note rows (rules/advice/notes.yaml), kept with the advice: read and cached together.
    notes: NoteRows


@cache
def _data(path: Path) -> _Advice:
    # Kept by analyzer.core.cache (keyed by the files and the modules that read them): no YAML on
    # most runs.
    rows = _rows_path(path)
    notes = note_rows_path(path)
    return remembered(
        "advice",
        [
            path,
            rows,
            notes,
            note_texts_path(notes),
            Path(__file__),
            Path(read_rows.__code__.co_filename),
            Path(read_note_rows.__code__.co_filename),
            Path(findings_model.__file__),
        ],
        lambda: _both(path, rows, notes),
        _Advice,
    )


def _both(path: Path, rows: Path, notes: Path) -> _Advice:
    texts = _read(path)
    return _Advice(
        texts,
        read_rows(rows, frozenset(texts)),
        read_note_rows(notes, read_texts(note_texts_path(notes))),
    )


def builtin_note_rows() -> NoteRows:
    """The built-in note rows (read with the advice)."""
    return _data(_advice_path()).notes


def _load(path: Path) -> Mapping[str, Mapping[str, tuple[str, ...]]]:
    return _data(path).texts


def _rows() -> AdviceRows:
    return _data(_advice_path()).rows


def _rows_path(texts: Path) -> Path:
    """The advice rows beside the texts: ``advice/rows.yaml``."""
    return texts.parent / "advice" / "rows.yaml"


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
    """Read the built-in advice texts and rows, and the note rows, now (they are read once,
    when first needed; a bad row is a file:line error before any input is read)."""
    _data(_advice_path())


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
    found: Findings | None = None,
) -> tuple[str, ...]:
    """What to do about ``cause`` (None: no failure), in ``lang`` when we have it, else English.

    The advice is chosen by the rows of ``rules/advice/rows.yaml`` over the job's findings
    (:mod:`analyzer.verdict.findings`): ``found`` when the caller computed them (predict), else the
    findings these arguments show. With the job's ``spec``, out-of-memory advice names the
    pool's machine type, its memory and a larger type of the same family. ``refused``: the
    API's status when it refused to create the job. ``job_id``, and the project the cause's
    console link names, fill the ``jobdoctor fetch`` command the advice gives.
    ``other_service``: the input holds only another Vertex AI service's API error (no job);
    ``other_jobs``: only another kind of job's states. ``last_exit``: a worker (task, exit
    code) whose non-zero exit ends its lines with nothing of the service after it.
    ``recorded``: the job object's own error when no category fits it. ``seen``: the
    exception the input shows in a job without a failure message.
    """
    facts = AdviceFacts(
        cause, spec, refused, job_id, other_service, other_jobs, last_exit, recorded, seen
    )
    findings = found if found is not None else facts.findings(policy)
    rows = _rows()
    keys = rows.keys(findings, state.value.removeprefix("JOB_STATE_"))
    if not keys:
        return ()
    table = _load(_advice_path())
    keys += _naming_the_exception(keys, table, facts, findings)
    values = _values(facts, findings, policy)
    lines: list[str] = []
    for key in keys:
        entry = table[key]
        lines += [line.format(**values) for line in entry.get(lang) or entry["en"]]
    return tuple(_filled_in(lines, job_id, cause))


def _naming_the_exception(
    keys: list[str],
    table: Mapping[str, Mapping[str, tuple[str, ...]]],
    facts: AdviceFacts,
    findings: Findings,
) -> list[str]:
    """The sentence that names the exception the input shows, when none of the chosen texts
    does: whatever row spoke, the advice names the exception (platform.md section 9: when
    the traceback is there, the user's error is visible), so no advice sends the user to
    read an error jobdoctor has read."""
    shown = facts.cause.exception if facts.cause is not None else None
    if shown is None and findings.has(FindingKind.EXCEPTION_SEEN):
        shown = facts.seen
    if shown is None or any("{exception}" in " ".join(table[k]["en"]) for k in keys):
        return []
    return ["exception.named"]


@dataclass(frozen=True, slots=True)
class AdviceFacts:
    """What a job's advice is chosen from and filled with (the arguments of advice_for)."""

    cause: Cause | None = None
    spec: JobSpec | None = None
    refused: str | None = None
    job_id: str | None = None
    other_service: bool = False
    other_jobs: bool = False
    last_exit: tuple[str, int] | None = None
    recorded: RecordedError | None = None
    seen: ExceptionInfo | None = None

    def findings(self, policy: RetryPolicy, *extra: Finding | None) -> Findings:
        """The findings these facts are (each computed once), with ``extra`` ones."""
        return collect(
            cause_finding(self.cause, policy),
            _refused(self.refused),
            _flag(FindingKind.OTHER_SERVICE, self.other_service),
            _flag(FindingKind.OTHER_JOBS, self.other_jobs),
            _recorded(self.recorded),
            _seen(self.seen),
            _worker_exit(self.last_exit),
            _machine(self.cause, self.spec),
            *extra,
        )


def cause_finding(
    cause: Cause | None, policy: RetryPolicy, provenance: Provenance = Provenance.SERVICE
) -> Finding | None:
    """The root cause as a finding: its category, detail, whether its exit code is transient
    (platform.md section 2) and what of its exception is known (section 9)."""
    if cause is None:
        return None
    exception = cause.exception
    return finding(
        FindingKind.CAUSE,
        provenance,
        cause.evidence,
        category=cause.category.value,
        detail=cause.detail,
        transient=policy.is_transient(cause.exit_code),
        exception=exception is not None,
        frame=exception is not None and exception.frame is not None,
        replica=cause.replica is not None,
        exit_code=cause.exit_code is not None,
        cloud_path=_CLOUD_PATH.search(exception.message if exception else cause.message)
        is not None,
    )


# A Cloud Storage path as a program names it: gs://BUCKET/... or the /gcs/BUCKET mount.
_CLOUD_PATH = re.compile(r"\bgs://[a-z0-9][\w.-]*|(?<![\w/])/gcs/[a-z0-9][\w.-]*/")


def _refused(status: str | None) -> Finding | None:
    """platform.md section 9: the API refused to create the job (no job exists)."""
    return finding(FindingKind.REFUSED, Provenance.SDK, status=status) if status else None


def _flag(kind: FindingKind, shown: bool) -> Finding | None:
    return finding(kind, Provenance.SDK) if shown else None


def _recorded(error: RecordedError | None) -> Finding | None:
    """The job object's own error (platform.md section 6), when no category fits it."""
    if error is None:
        return None
    return finding(
        FindingKind.RECORDED_ERROR,
        Provenance.RECORD,
        [error.origin],
        rule=error.rule,
        pool=error.pool,
    )


def _seen(exception: ExceptionInfo | None) -> Finding | None:
    """An exception the input shows without a platform message saying it ended the job: the
    user's own output (platform.md section 9)."""
    if exception is None:
        return None
    return finding(
        FindingKind.EXCEPTION_SEEN,
        Provenance.USER,
        [exception.origin],
        type=exception.type,
        frame=exception.frame is not None,
    )


def _worker_exit(last_exit: tuple[str, int] | None) -> Finding | None:
    """A worker's non-zero exit that ends its lines (platform.md section 2: it is restarted)."""
    if last_exit is None:
        return None
    task, code = last_exit
    return finding(FindingKind.WORKER_EXIT, Provenance.RUNNER, task=task, exit_code=code)


def _machine(cause: Cause | None, spec: JobSpec | None) -> Finding | None:
    """The failing pool's machine type, when the job's record names it (section 2: on the
    smallest machine types system agents take up to 40% of memory)."""
    machine = _machine_values(cause, spec)
    if machine is None:
        return None
    return finding(
        FindingKind.MACHINE,
        Provenance.RECORD,
        small=bool(machine["small"]),
        pool=str(machine["pool"]),
    )


def _values(facts: AdviceFacts, findings: Findings, policy: RetryPolicy) -> dict[str, object]:
    """What the advice's placeholders are filled with."""
    cause = facts.cause
    values: dict[str, object] = {
        **_cause_values(cause, policy),
        **_exception_values(cause.exception if cause is not None else facts.seen),
        **(_exit_values(facts.last_exit) if cause is None and facts.last_exit else {}),
        "status": facts.refused or "",
        # (Without its last period: the sentence quoting it has its own.)
        "recorded": _short(facts.recorded.message, 200).rstrip(".") if facts.recorded else "",
        **({"pool": facts.recorded.pool} if facts.recorded and facts.recorded.pool else {}),
        **(_machine_values(cause, facts.spec) or {}),
        **_interrupted_values(findings.get(FindingKind.INTERRUPTED_WAIT)),
        **_stalled_values(findings.get(FindingKind.STALLED)),
    }
    return values


def _stalled_values(stalled: Finding | None) -> dict[str, object]:
    """A hung job's facts (analyzer.verdict.hangs), as ``stalled_FIELD``: the silent worker,
    since when, the collective, when the timeout stops it and the hours it bills till then."""
    if stalled is None:
        return {}
    values: dict[str, object] = {f"stalled_{name}": value for name, value in stalled.fields}
    for name in ("machine_hours", "accelerator_hours"):
        hours = values.get(f"stalled_{name}")
        values[f"stalled_{name}"] = (
            f"{hours:,}" if isinstance(hours, int) else "an unknown number of"
        )
    for name in ("replica", "reporter", "silent", "since", "collective", "timeout_at"):
        values[f"stalled_{name}"] = values.get(f"stalled_{name}") or "?"
    return values


def _cause_values(cause: Cause | None, policy: RetryPolicy) -> dict[str, object]:
    if cause is None:
        return {
            "replica": "the replica",
            "exit_code": "unknown",
            "exit_meaning": "meaning unknown",
            "region": "the region",
            "metric": "see the message",
            "attempts": 1,
            "detail": "",
            "rule": "",
            "message": "",
            "cascade": "the other replicas",
        }
    return {
        "replica": cause.replica or "the replica",
        "exit_code": cause.exit_code if cause.exit_code is not None else "unknown",
        "exit_meaning": cause.exit_meaning or "meaning unknown",
        "region": cause.region or "the region",
        "metric": _metric(cause.message),
        "attempts": policy.attempts_allowed(cause.category, cause.exit_code),
        "detail": cause.detail or "",
        "rule": cause.rule,
        "message": _short(cause.message, 100),
        "cascade": cause.cascade[0].replica if cause.cascade else "the other replicas",
    }


def _exception_values(exception: ExceptionInfo | None) -> dict[str, object]:
    frame = exception.frame if exception is not None else None
    return {
        "exception": exception.type if exception else "the exception",
        "exception_message": _short(exception.message)
        if exception and exception.message
        else "no message",
        "where": f"{frame.file}:{frame.line} ({frame.function})"
        if frame
        else "where its traceback points",
        "at": f" at {frame.file}:{frame.line} ({frame.function})" if frame else "",
    }


def _interrupted_values(wait: Finding | None) -> dict[str, object]:
    """The job an interrupted wait left running, and the gcloud command group for it."""
    if wait is None:
        return {}
    return {
        "job": wait.field("job") or "JOB_ID",
        "region": wait.field("region") or "REGION",
        "state": wait.field("state") or "in a state the input does not show",
        "command": wait.field("command") or "custom-jobs",
        "resource": wait.field("resource") or "RESOURCE_NAME",
        "exception": "KeyboardInterrupt",
    }


def _filled_in(lines: list[str], job_id: str | None, cause: Cause | None) -> list[str]:
    """The sentences with a capital at the start, and the ids the input shows in place of
    the fetch and describe commands' placeholders (only ids of the forms the platform
    gives, nothing else of the log's text)."""
    lines = [f"T{line[1:]}" if line.startswith("the replica") else line for line in lines]
    if job_id and _ID.fullmatch(job_id):
        lines = [
            line.replace("--job-id JOB_ID", f"--job-id {job_id}")
            .replace("custom-jobs describe JOB_ID", f"custom-jobs describe {job_id}")
            .replace("custom-jobs cancel JOB_ID", f"custom-jobs cancel {job_id}")
            for line in lines
        ]
    project = _PROJECT.search(cause.message) if cause is not None else None
    if project is not None:
        lines = [line.replace("--project PROJECT", f"--project {project[1]}") for line in lines]
    return lines


# A job id as Vertex AI (digits) or AI Platform (a user's name) gives it.
_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
# The project of a service error's console link (logs/viewer?project=P&resource=ml_job...).
_PROJECT = re.compile(r"[?&]project=([a-z0-9][a-z0-9-]{4,61}[a-z0-9])(?=&|$|\s)")
