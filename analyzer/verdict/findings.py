"""A job's findings: the facts the advice and the notes are chosen from.

A finding is one fact about a job (its cause, the API's refusal, the exception the input
shows, a worker's last exit, an interrupted wait, ...), with its fields, its provenance and
the lines that show it. Findings are computed once per job from the timeline and the
verdict; the advice rows (``rules/advice/rows.yaml``, :mod:`analyzer.verdict.findings_rows`) are
conditions over them, so a new case is a row, not a branch.

Provenance is ranked (issue 27, point 5; platform.md section 9): the job's record (a
describe, the live record) > the service's lifecycle and error lines > the SDK's state lines
and ``Job failed with:`` > the runner's lines > the user's own output. A job's state is read
only from the first three kinds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum, StrEnum

from analyzer.ingest.records import Origin

FieldValue = str | int | bool | None


class Provenance(IntEnum):
    """Who wrote the lines a fact rests on; lower is stronger (platform.md section 9)."""

    RECORD = 1  # the job object: gcloud ... describe, the live record
    SERVICE = 2  # the training service's lifecycle and error messages
    SDK = 3  # the SDK's state lines, "Job failed with:", the API's refusal as a tool prints it
    RUNNER = 4  # the prebuilt container's runner (process starts and exits)
    USER = 5  # the user's own program output

    @property
    def source(self) -> str:
        """The name the JSON's ``state_source`` gives this provenance."""
        return self.name.lower()

    @property
    def tells_state(self) -> bool:
        """Whether a job's state may be read from lines of this provenance: the user's code
        and the runner print no state of the platform's (issue 27, point 5)."""
        return self <= Provenance.SDK


class FindingKind(StrEnum):
    """What a finding is about. Each kind has a fixed set of fields (:data:`FIELDS`)."""

    CAUSE = "cause"  # the root cause (predict.deepen)
    REFUSED = "refused"  # the API refused to create the job (section 9)
    OTHER_SERVICE = "other-service"  # only another Vertex AI service's API error (section 9)
    OTHER_JOBS = "other-jobs"  # only another kind of job's states (batch prediction)
    RECORDED_ERROR = "recorded-error"  # the job object's own error, no category fits it
    EXCEPTION_SEEN = "exception-seen"  # an exception the input shows, no failure message says
    WORKER_EXIT = "worker-exit"  # a worker's non-zero exit ends what the input shows of it
    MACHINE = "machine"  # the job spec names the failing pool's machine type
    INTERRUPTED_WAIT = "interrupted-wait"  # Ctrl-C stopped the SDK's wait (section 10)
    SDK_STATE_ONLY = "sdk-state-only"  # the SDK's state line is the only evidence of the state
    # Facts the notes are chosen from (rules/advice/notes.yaml; analyzer.verdict.findings_notes).
    OTHER_SERVICE_LINES = "other-service-lines"  # another service's API error, set aside
    OTHER_JOBS_LINES = "other-jobs-lines"  # a batch prediction job's lines, set aside
    NEWEST_FIRST = "newest-first"  # an input without times read bottom up (one per input)
    PASTED_JOBS = "pasted-jobs"  # one of several jobs pasted without their ids
    RESUMED = "resumed"  # an attempt only its workers' lines show (no service line)
    BEGINS_LATE = "begins-late"  # the service's lines are there, the job's first start is not
    NAMED_JOBS = "named-jobs"  # an SDK's output naming several jobs on lines without an id
    ERROR_CODE = "error-code"  # the job record's error code
    ECHOES = "echoes"  # platform messages inside the containers' own output
    WAIT_INTERRUPTED = "wait-interrupted"  # the input ends in an interrupted SDK wait
    UNEXPLAINED_EXCEPTION = "unexplained-exception"  # an exception no platform message explains
    OPEN_TRACEBACK = "open-traceback"  # a traceback without its exception line (one per process)
    UNEXPLAINED_EXIT = "unexplained-exit"  # a worker's exit ends the input, no service line after
    CUT_MESSAGE = "cut-message"  # the service's copied traceback stops before its exception
    COPIED_EXCEPTION = "copied-exception"  # the exception read from the service's copied tail
    CAUSE_DETAIL = "cause-detail"  # what the cause's finer detail says of the evidence
    FATE = "fate"  # how the job's state was reached (read, predicted, unknown) and why
    OLDEST_MISSING = "oldest-missing"  # an input written newest first lost its oldest entries
    ATTEMPT_WORK = "attempt-work"  # what an attempt's work shows (no checkpoint, a start race)
    RECORD_DISAGREES = "record-disagrees"  # the job's record (--job-spec) says another state
    STALLED = "stalled"  # a RUNNING job hangs: workers silent past their rhythm, a timeout
    STALL_UNTOLD = "stall-untold"  # what the input cannot tell of a hang (analyzer.verdict.hangs)
    FRAMES_NOT_KEPT = "frames-not-kept"  # a traceback too long to keep whole (issue 31.8)


# The fields each kind carries; rows may test only these (checked when rows are loaded).
FIELDS: Mapping[FindingKind, frozenset[str]] = {
    FindingKind.CAUSE: frozenset(
        {
            "category",
            "detail",
            "transient",
            "exception",
            "frame",
            "replica",
            "exit_code",
            "cloud_path",
        }
    ),
    FindingKind.REFUSED: frozenset({"status"}),
    FindingKind.OTHER_SERVICE: frozenset(),
    FindingKind.OTHER_JOBS: frozenset(),
    FindingKind.RECORDED_ERROR: frozenset({"rule", "pool"}),
    FindingKind.EXCEPTION_SEEN: frozenset({"type", "frame"}),
    FindingKind.WORKER_EXIT: frozenset({"task", "exit_code"}),
    FindingKind.MACHINE: frozenset({"small", "pool"}),
    FindingKind.INTERRUPTED_WAIT: frozenset({"resource", "job", "region", "state", "command"}),
    FindingKind.SDK_STATE_ONLY: frozenset({"state"}),
    FindingKind.OTHER_SERVICE_LINES: frozenset(),
    FindingKind.OTHER_JOBS_LINES: frozenset({"count"}),
    FindingKind.NEWEST_FIRST: frozenset({"path"}),
    FindingKind.PASTED_JOBS: frozenset({"index", "count"}),
    FindingKind.RESUMED: frozenset({"attempt", "previous", "at"}),
    FindingKind.BEGINS_LATE: frozenset({"first"}),
    FindingKind.NAMED_JOBS: frozenset({"count", "names", "job"}),
    FindingKind.ERROR_CODE: frozenset({"code", "name"}),
    FindingKind.ECHOES: frozenset({"count"}),
    FindingKind.WAIT_INTERRUPTED: frozenset({"at", "state"}),
    FindingKind.UNEXPLAINED_EXCEPTION: frozenset({"type", "message"}),
    FindingKind.OPEN_TRACEBACK: frozenset({"task", "at", "ends"}),
    FindingKind.UNEXPLAINED_EXIT: frozenset({"task", "exit_code", "signal", "time"}),
    FindingKind.CUT_MESSAGE: frozenset({"replica"}),
    FindingKind.COPIED_EXCEPTION: frozenset({"type", "origin", "replica", "top_cut"}),
    FindingKind.CAUSE_DETAIL: frozenset({"detail", "exit_code", "signal", "replica"}),
    FindingKind.OLDEST_MISSING: frozenset({"path", "cut_line", "cap", "oldest"}),
    FindingKind.ATTEMPT_WORK: frozenset({"what", "attempt", "training", "gap", "skew"}),
    FindingKind.RECORD_DISAGREES: frozenset({"state", "error_code", "concluded"}),
    FindingKind.STALLED: frozenset(
        {
            "how",
            "replica",
            "silent",
            "collective",
            "since",
            "timeout_at",
            "machine_hours",
            "accelerator_hours",
            "priced",
            "reporter",
        }
    ),
    FindingKind.STALL_UNTOLD: frozenset({"why", "collective"}),
    FindingKind.FRAMES_NOT_KEPT: frozenset({"type", "frames", "count"}),
    FindingKind.FATE: frozenset(
        {"why", "refusal", "message", "origin", "allowed", "observed", "category"}
    ),
}


@dataclass(frozen=True, slots=True)
class Finding:
    """One fact about a job: its kind, fields, provenance and the lines that show it."""

    kind: FindingKind
    provenance: Provenance
    fields: tuple[tuple[str, FieldValue], ...] = ()
    evidence: tuple[Origin, ...] = ()

    def field(self, name: str) -> FieldValue:
        """The value of the field ``name`` (None when not set)."""
        return next((value for key, value in self.fields if key == name), None)


def finding(
    kind: FindingKind,
    provenance: Provenance,
    evidence: Iterable[Origin | None] = (),
    **fields: FieldValue,
) -> Finding:
    """A :class:`Finding` of ``kind``; ``fields`` must be the kind's own (:data:`FIELDS`)."""
    unknown = set(fields) - FIELDS[kind]
    if unknown:
        raise ValueError(f"finding {kind.value} has no field {sorted(unknown)[0]!r}")
    return Finding(
        kind,
        provenance,
        tuple(sorted(fields.items())),
        tuple(o for o in evidence if o is not None),
    )


@dataclass(frozen=True, slots=True)
class Findings:
    """All findings of one job: at most one of each kind the advice reads; the notes' kinds
    may hold one per input or process (:meth:`every`)."""

    items: tuple[Finding, ...] = ()

    def get(self, kind: FindingKind) -> Finding | None:
        return next((f for f in self.items if f.kind is kind), None)

    def every(self, kind: FindingKind) -> list[Finding]:
        """All findings of ``kind``, in the order found."""
        return [f for f in self.items if f.kind is kind]

    def has(self, kind: FindingKind) -> bool:
        return self.get(kind) is not None

    def kinds(self) -> frozenset[FindingKind]:
        return frozenset(f.kind for f in self.items)


def collect(*found: Finding | None) -> Findings:
    """The findings among ``found`` (None: not found)."""
    return Findings(tuple(f for f in found if f is not None))
