"""Advice for a diagnosed cause, from ``rules/advice.yaml`` (written by us, in three languages)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path

import yaml

from analyzer.diagnosis import Cause, JobState
from analyzer.errors import PolicyError
from analyzer.events import Category
from analyzer.policy import RetryPolicy, builtin_policy_path


def _advice_path() -> Path:
    return builtin_policy_path().with_name("advice.yaml")


@cache
def _load(path: Path) -> Mapping[str, Mapping[str, tuple[str, ...]]]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
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


def _key(cause: Cause | None, state: JobState, policy: RetryPolicy) -> str:
    if cause is None:
        return "none.failed" if state is JobState.FAILED else "none.running"
    if cause.category is Category.USER_CODE_EXCEPTION and policy.is_transient(cause.exit_code):
        return "user_code_exception.transient"
    return cause.category.value


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
        restarts=policy.max_worker_restarts,
        event=event or "",
    )


def advice_for(
    cause: Cause | None, state: JobState, policy: RetryPolicy, lang: str = "en"
) -> tuple[str, ...]:
    """What to do about ``cause`` (None: no failure), in ``lang`` when we have it, else English."""
    if cause is None and state is JobState.SUCCEEDED:
        return ()
    table = _load(_advice_path())
    entry = table.get(_key(cause, state, policy))
    if entry is None:
        return ()
    lines = entry.get(lang) or entry["en"]
    values: dict[str, object] = {
        "replica": cause.replica if cause and cause.replica else "the replica",
        "exit_code": cause.exit_code if cause and cause.exit_code is not None else "?",
        "region": cause.region if cause and cause.region else "the region",
        "metric": "see the message",
        "attempts": (
            policy.attempts_allowed(cause.category, cause.exit_code) if cause is not None else 1
        ),
    }
    return tuple(line.format(**values) for line in lines)
