"""The errors jobdoctor raises.

Hierarchy::

    JobDoctorError            anything jobdoctor reports to a user as one line
    ├── InputError            an input path or its content cannot be read (CLI exit 2)
    ├── RuleError             a rule file is invalid (CLI exit 3)
    ├── PolicyError           the policy profile is invalid (CLI exit 3)
    └── SourceError           a live source (Cloud Logging) failed (CLI exit 2)

Messages say what is wrong and what to do about it; only the CLI prints them.
"""

from __future__ import annotations


class JobDoctorError(Exception):
    """Base of every error jobdoctor reports as a single line."""


class InputError(JobDoctorError):
    """An input cannot be opened or read; ``problems`` holds one line per input when several
    of a batch could not be (the message is the first)."""

    def __init__(self, message: str, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems or (message,)


class RuleError(JobDoctorError):
    """A rule file is invalid; ``problems`` holds every ``file:line:col: message``."""

    def __init__(self, message: str, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems or (message,)


class PolicyError(JobDoctorError):
    """The policy profile (``rules/policy.yaml`` or ``--policy``) is invalid."""


class SourceError(JobDoctorError):
    """A live log source (Cloud Logging) failed."""
