"""The root cause in depth: the exception behind an exit, the finer detail, the decoded exit
code, and the initiating failure behind a cascade (platform.md sections 3, 7 and 9).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import regex

from analyzer.classify.tracebacks import (
    ExceptionInfo,
    exception_from_events,
    parse_service_message,
    parse_text,
)
from analyzer.ingest.records import Origin, replica_task
from analyzer.rulebook.events import AFTER_DEATH, DETAIL_WINDOW, Category, Event, EventKind, Writer
from analyzer.timeline.attempts import Attempt, steps_down_up
from analyzer.timeline.exitcodes import ExitCode, decode
from analyzer.verdict.causes import MESSAGE_LIMIT, cause_from_event, with_origins
from analyzer.verdict.diagnosis import CascadeFailure, Cause
from analyzer.verdict.policy import RetryPolicy

# Waits past a timeout (rules/hangs.yaml): a collective, the rendezvous, a gRPC deadline or a
# coordination service barrier that a peer did not join in time.
_TIMEOUT_DETAILS = frozenset(
    {"collective-timeout", "rendezvous-timeout", "deadline-exceeded", "barrier-timeout"}
)
# Details that are usually the echo of another replica's failure, not a failure of their own
# (platform.md section 2: one replica's failure ends the others').
_CASCADE_DETAILS = _TIMEOUT_DETAILS | {"nccl-error"}


@dataclass(frozen=True, slots=True)
class Death:
    """When a replica's failing process started and died, and its non-zero exit line."""

    task: str
    run_start: datetime | None
    time: datetime | None
    origin: Origin | None


def find_death(attempt: Attempt, task: str, before: datetime | None) -> Death:
    worker = next((w for w in attempt.workers if w.task == task), None)
    if worker is None:
        return Death(task, attempt.start, before, None)
    exits = [
        e
        for e in worker.exits
        if e.exit_code not in (None, 0)
        and e.time is not None
        and (before is None or e.time <= before)
    ]
    last = exits[-1] if exits else None
    time = last.time if last is not None else before
    starts = [
        s.time for s in worker.starts if s.time is not None and (time is None or s.time <= time)
    ]
    return Death(task, starts[-1] if starts else attempt.start, time, last.origin if last else None)


def _window(attempt: Attempt, death: Death) -> list[Event]:
    """The dying process's own matched lines, up to a second after its death."""
    end = _shifted(death.time, AFTER_DEATH) if death.time is not None else None
    return [
        e
        for e in attempt.events
        if e.task == death.task
        and (death.run_start is None or e.timestamp is None or e.timestamp >= death.run_start)
        and (end is None or e.timestamp is None or e.timestamp <= end)
    ]


def _details(window: list[Event], death: Death, own: list[Event]) -> list[Event]:
    """Detail events that explain the death: inside its last traceback, or just before it."""
    headers = [e.timestamp for e in window if e.kind is EventKind.TRACEBACK and e.timestamp]
    since = max(headers) if headers else None
    if since is None and death.time is not None:
        since = death.time - DETAIL_WINDOW
    found = [
        e
        for e in window
        if e.kind is EventKind.DETAIL
        and (since is None or e.timestamp is None or e.timestamp >= since)
    ]
    return found + [e for e in own if e.kind is EventKind.DETAIL]


_REPLICA_SENTENCE = regex.compile(r"The replica (\S+(?: \d+)?) (?:exited|ran out)")


def _replica_part(text: str, replica: str | None) -> str:
    """The part of a service message about ``replica``: one message can name several
    replicas, each with its own traceback tail (platform.md section 3)."""
    starts = list(_REPLICA_SENTENCE.finditer(text))
    if replica is None or len(starts) < 2:
        return text
    for index, found in enumerate(starts):
        if found.group(1) == replica:
            end = starts[index + 1].start() if index + 1 < len(starts) else len(text)
            return text[found.start() : end]
    return text


def _pasted_tail(attempt: Attempt, own: list[Event]) -> ExceptionInfo | None:
    """The traceback a text without a task column holds next to the service's message: in a
    paste the tail follows on the next lines (platform.md sections 3 and 9), or the worker's
    traceback came just before it. The nearest complete one after the message wins."""
    if not own or own[0].task is not None:
        return None
    here = own[0].origin
    lines, turned = _paste_lines(attempt, here)
    at = next((i for i, e in enumerate(lines) if e.origin == here), None)
    if at is None:
        return None
    if turned:
        # Turned, a message's own continuation lines (the tail it copied) come before it, as
        # does the worker's traceback: the nearest complete one before it is the one.
        return exception_from_events(lines[:at])
    found = _before_in_time(lines, here)
    if found is not None:
        return found
    after: list[Event] = []
    for event in lines[at + 1 :]:
        if event.kind is EventKind.ERROR:
            break  # the next service message: its tail is its own
        after.append(event)
    # The nearest after, not the last: a text written newest first (gcloud's value() or
    # table() output) holds older tracebacks further down, and reading on past the copied
    # tail paired a later header with an older, unrelated exception line.
    return exception_from_events(after, nearest_first=True) or exception_from_events(lines[:at])


def _paste_lines(attempt: Attempt, here: Origin) -> tuple[list[Event], bool]:
    """The lines without a task of the message's input, in time order: the input's line
    order, but bottom up for a text without times written newest first, which the timeline
    has turned (timeline.oldest_first); and whether it was turned."""
    lines = [e for e in attempt.events if e.task is None and e.origin.path == here.path]
    turned = (
        all(e.timestamp is None for e in lines) and lines[0].origin.line > lines[-1].origin.line
    )
    if not turned:
        lines.sort(key=lambda e: (e.origin.line, e.origin.entry))
    return lines, turned


def _before_in_time(lines: list[Event], here: Origin) -> ExceptionInfo | None:
    """Times written newest first (gcloud's value(timestamp, textPayload)): below the message
    are older entries, the worker's traceback upside down. In time order it is the nearest
    complete one before the message; else the tail the message copied, on its own
    continuation lines below (None: the caller reads those)."""
    timed = [e for e in lines if e.timestamp is not None]
    if here not in {e.origin for e in timed} or not _runs_backwards(timed):
        return None
    in_time = sorted(timed, key=lambda e: (e.timestamp, -e.origin.line))
    place = next(i for i, e in enumerate(in_time) if e.origin == here)
    return exception_from_events(in_time[:place])


def _runs_backwards(events: list[Event]) -> bool:
    """Whether the times of ``events``, in input order, mostly go backwards."""
    times = [e.timestamp for e in events if e.timestamp is not None]
    down, _ = steps_down_up(times)
    return down * 2 > len(times) - 1 >= 1


def _deepen_one(
    cause: Cause, attempt: Attempt, policy: RetryPolicy, stream: bool
) -> tuple[Cause, Death]:
    """``cause`` with its exception, finer detail and decoded exit code.

    ``stream``: the input holds the job's container stream (timeline.has_container_stream),
    so a failure without any container line means the container wrote nothing.
    """
    task = replica_task(cause.replica) if cause.replica else None
    own = [e for e in attempt.events if cause.evidence and e.origin == cause.evidence[0]]
    death = find_death(attempt, task, cause.time) if task else Death("", None, cause.time, None)
    window = _window(attempt, death) if task else []
    exception, message = _exception_of(cause, attempt, own, window)
    details = _details(window, death, own) if cause.category is not Category.OOM else []
    decoded = decode(cause.exit_code, cause.signal) if cause.exit_code is not None else None
    facts = _Failure(cause, attempt, own, task, exception, stream)
    shown = _shown_detail(details)
    detail = cause.detail or (shown.match.detail if shown else None)
    detail = _memory_detail(facts, detail, decoded)
    if detail is None:
        detail = _missing_output(facts) or _user_rule(facts)
    evidence = with_origins(
        cause.evidence,
        [exception.origin if exception else None, shown.origin if shown else None],
    )
    deeper = replace(
        cause,
        message=message,
        detail=detail,
        exception=exception,
        evidence=evidence,
        signal=decoded.signal if decoded else cause.signal,
        exit_meaning=_meaning(cause.category, decoded.signal, decoded.meaning, detail)
        if decoded
        else None,
        transient=policy.is_transient(cause.exit_code) if decoded else None,
    )
    return deeper, death


def _shown_detail(details: list[Event]) -> Event | None:
    """The detail that names the failure: the first, except that an NCCL error yields to a
    timeout beside it. A watchdog timeout writes its own line, then "Some NCCL operations
    have failed or timed out" and a DistBackendError that only echo it (rules/hangs.yaml)."""
    if not details:
        return None
    first = details[0]
    if first.match.detail == "nccl-error":
        return next((e for e in details if e.match.detail in _TIMEOUT_DETAILS), first)
    return first


@dataclass(frozen=True, slots=True)
class _Failure:
    """What a cause's finer detail is judged from (_deepen_one)."""

    cause: Cause
    attempt: Attempt
    own: list[Event]  # the cause's own line(s)
    task: str | None  # the failing replica's task
    exception: ExceptionInfo | None
    stream: bool  # the input holds the container stream (timeline.has_container_stream)


def _exception_of(
    cause: Cause, attempt: Attempt, own: list[Event], window: list[Event]
) -> tuple[ExceptionInfo | None, str]:
    """The exception behind ``cause``, and its message (platform.md sections 3 and 9): the
    worker's own traceback lines first; else the tail the service copied into its message
    (real lines, escaped or flattened), even when the message's top (and the tail's header)
    was cut, while anyone else's line counts with a whole traceback only; else the lines
    next to it in a paste."""
    exception: ExceptionInfo | None = exception_from_events(window)
    if exception is None:
        exception = next(
            (
                found
                for e in own
                if (
                    found := (parse_service_message if _by_service(e) else parse_text)(
                        _replica_part(e.text, cause.replica), e.origin
                    )
                )
            ),
            None,
        )
    if exception is None:
        return _pasted_tail(attempt, own), cause.message
    if cause.replica is None and own and exception.origin == own[0].origin:
        # The service's message with its first line (the replica, its exit status) cut: its
        # own first line here is a source line of the copied traceback. What the message
        # shows is its end, from the exception line on.
        return exception, _from_exception_line(own[0].text, exception) or cause.message
    return exception, cause.message


def _memory_detail(facts: _Failure, detail: str | None, decoded: ExitCode | None) -> str | None:
    """platform.md section 7: the platform's memory message is host memory; the container
    runtime's own termination reason OOMKilled (the kernel killed the container for its
    memory limit) is memory too, while the replica's exit stays the platform's user-code
    exit (its retry policy); a SIGKILL without a traceback is likely, not proven, memory."""
    if facts.cause.category is Category.OOM:
        return detail or "host-oom"
    if detail is not None:
        return detail
    if any(e.match.field("reason") == OOM_KILLED for e in facts.own):
        return "oom-killed"
    if decoded is not None and decoded.signal == "SIGKILL" and not facts.exception:
        return "killed-no-traceback"
    return None


def _missing_output(facts: _Failure) -> str | None:
    """platform.md section 9: "no container output reached Cloud Logging" only when the
    input holds the container's stream and it is empty; a paste of the service's lines only
    lacks it, which is another thing to say. Both speak of the service's message alone: a
    line a user's error rule matched (anyone's) is output the input does hold. So is a line
    of the replica's own (its runner's exit, its progress): the container did write, and
    what is missing is the error behind the exit."""
    attempt = facts.attempt
    if (
        facts.exception is not None
        or facts.cause.category is not Category.USER_CODE_EXCEPTION
        or any(w.starts for w in attempt.workers)
        or not any(_by_service(e) for e in facts.own)
        or not all(_by_service(e) for e in attempt.errors)
    ):
        return None
    if any(e.task == facts.task and not _by_service(e) for e in attempt.events):
        return "replica-lines-no-error"
    return "no-container-output" if facts.stream else "output-not-in-input"


def _user_rule(facts: _Failure) -> str | None:
    """Every built-in error rule is the service's (rules/errors.yaml): a cause from a rule
    written by anyone, with no service message of the attempt's failures beside it, is a
    user's rule that names no replica exit; the advice of a replica's exit (read its
    traceback, "exited with status unknown") would speak of what is not there."""
    cause = facts.cause
    if (
        facts.exception is None
        and cause.category is Category.USER_CODE_EXCEPTION
        and cause.exit_code is None
        and facts.own
        and not any(_by_service(e) for e in (*facts.own, *facts.attempt.errors))
    ):
        return "user-rule"
    return None


def _from_exception_line(text: str, exception: ExceptionInfo) -> str | None:
    """``text`` from the line that starts with ``exception``'s type on, in one line, marked
    as cut at its start (``… SyntaxError: invalid syntax To find out more ...``)."""
    lines = text.replace("\\n", "\n").splitlines()
    start = next(
        (i for i, line in enumerate(lines) if line.strip().startswith(exception.type)), None
    )
    if start is None:
        return None
    flat = "… " + " ".join(" ".join(lines[start:]).split())
    return flat if len(flat) <= MESSAGE_LIMIT else flat[: MESSAGE_LIMIT - 1] + "…"


def _by_service(event: Event) -> bool:
    return event.match.writer is Writer.SERVICE


def _shifted(when: datetime, by: timedelta) -> datetime:
    """``when`` moved by ``by``, held at the calendar's ends (a log may say year 9999)."""
    try:
        return when + by
    except OverflowError:
        return when


# The termination reason the container runtime gives a container the kernel killed for its
# memory limit, which the service copies into "Termination reason: REASON".
OOM_KILLED = "OOMKilled"


def _meaning(category: Category, signal: str | None, meaning: str, detail: str | None) -> str:
    """The exit code's meaning in this cause: a SIGKILL beside the platform's out-of-memory
    message is the OOM killer's, no longer "likely but unproven" (platform.md section 7); an
    exit with ``Termination reason: StartError`` is no status of the program (section 9)."""
    if detail == "start-error":
        return "the container never started: not a status the program set"
    if detail == "oom-killed":
        return (
            f"killed for exceeding its memory: the container's termination reason is {OOM_KILLED}"
        )
    if category is Category.OOM and signal == "SIGKILL":
        return (
            "killed (SIGKILL) by the out-of-memory killer: the platform's memory message"
            " confirms it"
        )
    return meaning


def _first_other_failure(attempt: Attempt, death: Death) -> Event | None:
    """The earliest non-zero exit of another replica before ``death``: the initiating one."""
    if death.time is None:
        return None
    first: tuple[datetime, Origin] | None = None
    for worker in attempt.workers:
        if worker.task == death.task:
            continue
        for gone in worker.exits:
            if gone.exit_code in (None, 0) or gone.time is None:
                continue
            if gone.time < _shifted(death.time, -timedelta(seconds=1)) and (
                first is None or gone.time < first[0]
            ):
                first = (gone.time, gone.origin)
    if first is None:
        return None
    return next((e for e in attempt.events if e.origin == first[1]), None)


def deepen(cause: Cause, attempt: Attempt, policy: RetryPolicy, stream: bool) -> Cause:
    """The root cause in depth; an NCCL error or a timeout (collective, rendezvous, gRPC
    deadline, barrier) that followed another replica's earlier failure becomes that
    replica's failure, with the timeout as cascade."""
    deeper, death = _deepen_one(cause, attempt, policy, stream)
    if deeper.detail not in _CASCADE_DETAILS:
        return deeper
    initiating = _first_other_failure(attempt, death)
    if initiating is None:
        return deeper
    root = cause_from_event(attempt, initiating, Category.USER_CODE_EXCEPTION)
    if initiating.kind is EventKind.WORKER_EXITED:
        root = replace(root, replica=initiating.task)
    root, _ = _deepen_one(root, attempt, policy, stream)
    what = f"exit {root.exit_code}" if root.exit_code is not None else "a failure"
    if root.exception is not None:
        what += f", {root.exception.type}: {root.exception.message}"
    message = (
        f"{root.replica} failed first ({what}); {deeper.replica} then failed with "
        f"{deeper.detail} (a cascade)"
    )
    return replace(
        root,
        message=message if len(message) <= MESSAGE_LIMIT else message[: MESSAGE_LIMIT - 1] + "…",
        evidence=with_origins(root.evidence, list(deeper.evidence)),
        cascade=(CascadeFailure(deeper.replica, deeper.detail, deeper.exit_code, deeper.message),),
    )
