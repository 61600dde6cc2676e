"""The platform's retry policy as data: ``rules/policy.yaml`` loaded into a :class:`RetryPolicy`.

Every number and interpretation the prediction relies on lives in the policy file, so that a
user can change them (``--policy FILE``) without touching code.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from analyzer.core.cache import remembered
from analyzer.core.errors import PolicyError
from analyzer.rulebook.book import builtin_rules_dir
from analyzer.rulebook.events import Category

_KEYS = (
    "max_worker_restarts",
    "max_attempts",
    "transient_exit_codes",
    "transient_max_attempts",
    "spot_max_attempts",
)


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
            hint = difflib.get_close_matches(str(key), _KEYS, n=1)
            suggestion = f"; did you mean {hint[0]!r}?" if hint else f"; known: {', '.join(_KEYS)}"
            raise fail(str(key), f"unknown setting {key!r}{suggestion}")
    for key in _KEYS:
        if key not in data:
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
            hint = difflib.get_close_matches(str(name), names, n=1)
            suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
            raise fail(f"max_attempts.{name}", f"unknown category {name!r}{suggestion}")
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
    )
