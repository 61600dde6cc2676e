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
    """All findings of one job, at most one of each kind."""

    items: tuple[Finding, ...] = ()

    def get(self, kind: FindingKind) -> Finding | None:
        return next((f for f in self.items if f.kind is kind), None)

    def has(self, kind: FindingKind) -> bool:
        return self.get(kind) is not None

    def kinds(self) -> frozenset[FindingKind]:
        return frozenset(f.kind for f in self.items)


def collect(*found: Finding | None) -> Findings:
    """The findings among ``found`` (None: not found)."""
    return Findings(tuple(f for f in found if f is not None))
