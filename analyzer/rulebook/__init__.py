"""The rule engine: rule files (YAML) into fast, damage-tolerant message matching.

Public API::

    builtin_rules_dir() -> Path
    RuleBook.load(extra_dirs=(), *, builtin=True) -> RuleBook   # raises RuleError
    RuleBook.match(text) -> tuple[RuleMatch, ...]
    RuleBook.may_match_texts(texts) -> list[int]   # which texts of a block some rule may match
    check_rules(dirs) -> list[Problem]

See ``docs/rules.md`` for how to write a rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from analyzer.rulebook.book import (
    DEFAULT_TIMEOUT,
    RULE_BUDGET_SECONDS,
    RuleBook,
    builtin_rules_dir,
)
from analyzer.rulebook.model import Problem, Rule
from analyzer.rulebook.normalize import normalize

if TYPE_CHECKING:
    from analyzer.rulebook.check import check_rules


def __getattr__(name: str) -> Any:
    # check_rules brings the YAML loader, which a run reading its rules from the cache
    # (analyzer.core.cache) does without.
    if name == "check_rules":
        from analyzer.rulebook.check import check_rules

        return check_rules
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_TIMEOUT",
    "RULE_BUDGET_SECONDS",
    "Problem",
    "Rule",
    "RuleBook",
    "builtin_rules_dir",
    "check_rules",
    "normalize",
]
