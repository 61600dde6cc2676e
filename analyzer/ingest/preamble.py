"""What gcloud prints around the logs it streams, and users paste with them (platform.md §9).

``gcloud ai custom-jobs create`` (and the legacy ``gcloud ai-platform jobs submit``) prints
``CustomJob [...] is submitted successfully.`` or ``Job [NAME] submitted successfully.``, then
``Your job is still active. You may view the status of your job with the command``, the
``$ gcloud ... describe`` and ``$ gcloud ... stream-logs`` commands, ``jobId:`` and ``state:``;
``stream-logs`` starts with ``Using endpoint [...]``. None of it is a message of the job, but it may
name the job (``Job [NAME]``, ``customJobs/ID``, ``jobId:``): the sniffer looks past it, and
the text readers keep each line as a record of its own (:func:`preamble_record`, without time
or task) for the rules that read job ids; gcloud's YAML reader skips it with
:data:`GCLOUD_PREAMBLE`.
"""

from __future__ import annotations

import re

from analyzer.ingest.records import InputStats, LogRecord, Origin

GCLOUD_PREAMBLE = "gcloud preamble or trailer"

_PREAMBLE = re.compile(
    r"^\s*(?:"
    r"(?:Custom)?Job \[[^\]]+\] (?:is )?submitted successfully\."
    r"|Your job is still active\."
    r"|You may view the status of your job with the command"
    r"|or continue streaming the logs with the command"
    r"|jobId: \S+$"
    r"|state: [A-Z_]+$"
    r"|Using endpoint \["
    # The command line itself, after a shell prompt or none.
    r"|(?:\S*[$#>%] )?gcloud (?:ai|ai-platform|beta|alpha|logging)\b"
    r"|\$ \S"
    r")"
)
_PREAMBLE_BYTES = re.compile(_PREAMBLE.pattern.encode())


def is_preamble(text: str) -> bool:
    """Whether ``text`` (one line, its line end removed) is gcloud's own, not the job's."""
    return _PREAMBLE.match(text) is not None


def is_preamble_bytes(line: bytes) -> bool:
    """:func:`is_preamble` of a raw line."""
    return _PREAMBLE_BYTES.match(line) is not None


def preamble_record(text: str, number: int, stats: InputStats) -> LogRecord:
    """The record of gcloud's line ``text`` (line ``number``): no time, no task, counted."""
    stats.records += 1
    stats.used += 1
    return LogRecord(
        timestamp=None,
        job_id=None,
        task=None,
        severity="DEFAULT",
        text=text.strip(),
        origin=Origin(stats.path, number),
    )
