"""The platform's retry policy as data: ``rules/policy.yaml`` loaded into a :class:`RetryPolicy`.

Every number and interpretation the prediction relies on lives in the policy file, so that a
user can change them (``--policy FILE``) without touching code.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from analyzer.core.cache import remembered
from analyzer.core.errors import PolicyError
from analyzer.ingest.records import SERVICE_TASK
from analyzer.rulebook.book import builtin_rules_dir
from analyzer.rulebook.events import Category, Event, EventKind

_KEYS = (
    "max_worker_restarts",
    "max_attempts",
    "transient_exit_codes",
    "transient_max_attempts",
    "spot_max_attempts",
    "stall",
)
# Settings a policy file may leave out: the built-in file's are taken (a policy written before
# the setting existed keeps working).
_OPTIONAL = frozenset({"stall"})
_STALL_KEYS = (
    "gap_quantile",
    "gap_factor",
    "floor_minutes",
    "min_active_minutes",
    "default_timeout_hours",
    "hang_evidence",
)
_EVIDENCE_KEYS = frozenset({"detail", "text", "fields", "collective"})


@dataclass(frozen=True, slots=True)
class HangEvidence:
    """A detail rule whose lines show a hang (``stall.hang_evidence``): ``text`` a pattern the
    line must match too, ``fields`` one whose groups ``collective``, ``timeout_ms`` and
    ``timeout_s`` are read wherever they match, ``collective`` what it names when the line
    does not."""

    detail: str
    text: re.Pattern[str] | None = None
    fields: re.Pattern[str] | None = None
    collective: str | None = None


@dataclass(frozen=True, slots=True)
class StallPolicy:
    """When a worker's silence is a stall (issue 30; rules/policy.yaml says why each number)."""

    gap_quantile: float
    gap_factor: float
    floor_minutes: float
    min_active_minutes: int
    default_timeout_hours: float
    hang_evidence: tuple[HangEvidence, ...]

    def evidence_for(self, detail: str | None) -> tuple[HangEvidence, ...]:
        """The rows of ``detail`` (a detail rule's name)."""
        return tuple(row for row in self.hang_evidence if row.detail == detail)


def _unpickled_policy(values: dict[str, Any]) -> RetryPolicy:
    return RetryPolicy(**{**values, "max_attempts": MappingProxyType(values["max_attempts"])})


def builtin_policy_path() -> Path:
    """The policy shipped with jobdoctor, beside the built-in rules."""
    return builtin_rules_dir() / "policy.yaml"


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Limits of the platform's restart and retry policy, plus job-spec overrides.

    ``max_attempts`` maps each category to the number of attempts the job gets when every attempt
    fails that way (1 means permanent). ``disable_retries``, ``spot`` and
    ``restart_job_on_worker_restart`` come from a job's ``scheduling`` settings.
    """

    max_worker_restarts: int
    max_attempts: Mapping[Category, int]
    transient_exit_codes: frozenset[int]
    transient_max_attempts: int
    spot_max_attempts: int
    stall: StallPolicy
    disable_retries: bool = False
    spot: bool = False
    restart_job_on_worker_restart: bool = False

    @property
    def worker_restart_budget(self) -> int:
        """Restarts in place a worker gets before the whole job is retried.

        ``restartJobOnWorkerRestart`` restarts the whole job at a worker's first failure.
        """
        return 0 if self.restart_job_on_worker_restart else self.max_worker_restarts

    def __reduce__(self) -> tuple[Any, tuple[dict[str, Any]]]:
        # A mappingproxy cannot be pickled (analyzer.core.cache keeps the built-in policy): the
        # copy is made again from plain values.
        values = {name: getattr(self, name) for name in self.__dataclass_fields__}
        values["max_attempts"] = dict(self.max_attempts)
        return (_unpickled_policy, (values,))

    def is_transient(self, exit_code: int | None) -> bool:
        """Whether a user-code exit with ``exit_code`` is retried like a transient failure.

        A negative code (Python's return code of a process killed by a signal, the legacy
        runner's ``-6``) is that raw signal, as prebuilt containers report it (``6``).
        """
        if exit_code is None:
            return False
        codes = self.transient_exit_codes
        return exit_code in codes or (exit_code < 0 and -exit_code in codes)

    def attempts_allowed(
        self, category: Category, exit_code: int | None = None, running: bool = True
    ) -> int:
        """How many attempts a job gets when every attempt fails with ``category``.

        ``running``: the failing attempt had reached JOB_STATE_RUNNING (``disableRetries``
        only stops retries of internal errors from then on).
        """
        if category is Category.USER_CODE_EXCEPTION and self.is_transient(exit_code):
            allowed = self.transient_max_attempts
        elif category is Category.STOCKOUT and self.spot:
            allowed = self.spot_max_attempts
        else:
            allowed = self.max_attempts.get(category, 1)
        # disableRetries stops retries of internal errors once the job runs.
        if self.disable_retries and category is Category.INTERNAL_ERROR and running:
            return 1
        return allowed

    def is_permanent(self, category: Category, exit_code: int | None = None) -> bool:
        """Whether the first failure of this kind ends the job."""
        return self.attempts_allowed(category, exit_code) <= 1

    def ends_job(self, attempt: Sequence[Event], number: int = 1) -> bool:
        """Whether the service's failure messages among the events of attempt ``number``
        are each of a kind the platform retries no more by then (a user-code exit that is
        not transient, an out of memory at once; a stockout at the 4th attempt: platform.md
        section 2): after its ``Job failed.`` the job has ended, and a provisioning that
        follows in a text is another job's."""
        failures = [
            (event.match.category, event.match.field("exit_code"))
            for event in attempt
            if event.kind is EventKind.ERROR and event.task in (None, SERVICE_TASK)
        ]
        return bool(failures) and all(
            category is not None
            and number >= self.attempts_allowed(category, code if isinstance(code, int) else None)
            for category, code in failures
        )

    def with_scheduling(
        self,
        *,
        disable_retries: bool | None = None,
        spot: bool | None = None,
        restart_job_on_worker_restart: bool | None = None,
    ) -> RetryPolicy:
        """A copy with a job spec's ``scheduling`` settings applied (None keeps the current)."""
        return replace(
            self,
            disable_retries=self.disable_retries if disable_retries is None else disable_retries,
            spot=self.spot if spot is None else spot,
            restart_job_on_worker_restart=(
                self.restart_job_on_worker_restart
                if restart_job_on_worker_restart is None
                else restart_job_on_worker_restart
            ),
        )


def _key_lines(path: Path, text: str) -> dict[str, int]:
    """1-based line of each top-level and nested key, for error messages."""
    import yaml

    from analyzer.core.yamlload import compose

    lines: dict[str, int] = {}
    try:
        node = compose(text)
    except yaml.YAMLError:
        return lines

    def walk(current: yaml.Node, prefix: str) -> None:
        if isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                name = f"{prefix}{key.value}"
                lines.setdefault(name, key.start_mark.line + 1)
                walk(value, name + ".")

    if node is not None:
        walk(node, "")
    return lines


def load_policy(path: Path | None = None) -> RetryPolicy:
    """Load and validate a policy file (the built-in one by default, read once).

    Raises PolicyError naming the file, the line and what to change.
    """
    return _builtin_policy() if path is None else _read_policy(path)


@cache
def _builtin_policy() -> RetryPolicy:
    # Kept by analyzer.core.cache (keyed by the file and this module): no YAML on most runs.
    path = builtin_policy_path()
    return remembered("policy", [path, Path(__file__)], lambda: _read_policy(None), RetryPolicy)


def _read_policy(path: Path | None) -> RetryPolicy:
    import yaml

    from analyzer.core.yamlload import first_alias, safe_load

    source = path or builtin_policy_path()
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        raise PolicyError(f"{source}: cannot read the policy file ({exc.strerror})") from exc
    alias = first_alias(text)
    if alias is not None:
        line, _, what = alias
        raise PolicyError(
            f"{source}:{line}: YAML {what}: anchors and aliases are not allowed in a policy file"
            " (a few of them can expand to gigabytes); write the value out"
        )
    try:
        data = safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark is not None else str(source)
        raise PolicyError(f"{where}: not valid YAML ({getattr(exc, 'problem', exc)})") from exc
    lines = _key_lines(source, text)

    def fail(key: str, message: str) -> PolicyError:
        return PolicyError(f"{source}:{lines.get(key, 1)}: {message}")

    if not isinstance(data, dict):
        raise fail("", "the policy must be a mapping of settings")
    for key in data:
        if key not in _KEYS:
            suggestion = _hint(key, _KEYS, f"; known: {', '.join(_KEYS)}")
            raise fail(str(key), f"unknown setting {key!r}{suggestion}")
    for key in _KEYS:
        if key not in data and key not in _OPTIONAL:
            raise fail("", f"missing setting {key!r}; copy it from {builtin_policy_path()}")

    def count(key: str, value: Any, minimum: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise fail(key, f"{key} must be a whole number >= {minimum}, not {value!r}")
        return value

    raw_attempts = data["max_attempts"]
    if not isinstance(raw_attempts, dict):
        raise fail("max_attempts", "max_attempts must map categories to attempt counts")
    attempts: dict[Category, int] = {}
    names = [c.value for c in Category]
    for name, value in raw_attempts.items():
        if name not in names:
            raise fail(f"max_attempts.{name}", f"unknown category {name!r}{_hint(name, names)}")
        attempts[Category(name)] = count(f"max_attempts.{name}", value, 1)
    codes = data["transient_exit_codes"]
    if not isinstance(codes, list):
        raise fail("transient_exit_codes", "transient_exit_codes must be a list of exit codes")
    return RetryPolicy(
        max_worker_restarts=count("max_worker_restarts", data["max_worker_restarts"], 0),
        max_attempts=MappingProxyType(attempts),
        transient_exit_codes=frozenset(count("transient_exit_codes", c, 0) for c in codes),
        transient_max_attempts=count("transient_max_attempts", data["transient_max_attempts"], 1),
        spot_max_attempts=count("spot_max_attempts", data["spot_max_attempts"], 1),
        stall=_stall_or_builtin(data, fail),
    )


def _hint(name: object, known: Sequence[str], otherwise: str = "") -> str:
    """``; did you mean 'x'?`` for the known setting closest to a misspelt ``name``."""
    close = difflib.get_close_matches(str(name), known, n=1)
    return f"; did you mean {close[0]!r}?" if close else otherwise


def _stall_or_builtin(data: dict[str, Any], fail: Callable[[str, str], PolicyError]) -> StallPolicy:
    """The file's ``stall`` section, or the built-in one's when the file has none."""
    return _stall_policy(data["stall"], fail) if "stall" in data else _builtin_policy().stall


def _stall_policy(raw: Any, fail: Callable[[str, str], PolicyError]) -> StallPolicy:
    """The ``stall`` section, each number checked against its range."""
    if not isinstance(raw, dict):
        raise fail("stall", "stall must be a mapping of settings")
    for key in raw:
        if key not in _STALL_KEYS:
            raise fail(f"stall.{key}", f"unknown setting stall.{key}{_hint(key, _STALL_KEYS)}")
    for key in _STALL_KEYS:
        if key not in raw:
            raise fail(
                "stall", f"missing setting stall.{key}; copy it from {builtin_policy_path()}"
            )

    def number(key: str, low: float, high: float | None = None) -> float:
        value = raw[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise fail(f"stall.{key}", f"stall.{key} must be a number, not {value!r}")
        if value < low or (high is not None and value > high):
            bounds = f"between {low:g} and {high:g}" if high is not None else f">= {low:g}"
            raise fail(f"stall.{key}", f"stall.{key} must be {bounds}, not {value!r}")
        return float(value)

    active = number("min_active_minutes", 2)
    if active != int(active):
        raise fail("stall.min_active_minutes", "stall.min_active_minutes must be a whole number")
    return StallPolicy(
        gap_quantile=number("gap_quantile", 0.5, 1),
        gap_factor=number("gap_factor", 1),
        floor_minutes=number("floor_minutes", 1),
        min_active_minutes=int(active),
        default_timeout_hours=number("default_timeout_hours", 1),
        hang_evidence=_hang_evidence(raw["hang_evidence"], fail),
    )


def _pattern(
    row: dict[str, Any], key: str, fail: Callable[[str, str], PolicyError]
) -> re.Pattern[str] | None:
    where = "stall.hang_evidence"
    value = row.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise fail(where, f"{where} row {row['detail']!r}: {key} must be a regular expression")
    try:
        return re.compile(value)
    except re.error as exc:
        raise fail(where, f"{where} row {row['detail']!r}: bad {key} pattern ({exc})") from exc


def _hang_evidence(raw: Any, fail: Callable[[str, str], PolicyError]) -> tuple[HangEvidence, ...]:
    where = "stall.hang_evidence"
    if not isinstance(raw, list):
        raise fail(where, f"{where} must be a list of {{detail: NAME}} rows")
    rows = []
    for row in raw:
        if not isinstance(row, dict) or not isinstance(row.get("detail"), str):
            raise fail(where, f"each row of {where} needs a detail (a detail rule's name)")
        unknown = set(row) - _EVIDENCE_KEYS
        if unknown:
            raise fail(
                where,
                f"unknown key {sorted(unknown)[0]!r} in {where}; known: "
                + ", ".join(sorted(_EVIDENCE_KEYS)),
            )
        text, fields = (_pattern(row, key, fail) for key in ("text", "fields"))
        collective = row.get("collective")
        rows.append(
            HangEvidence(
                row["detail"], text, fields, collective if isinstance(collective, str) else None
            )
        )
    return tuple(rows)
