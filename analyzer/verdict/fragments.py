"""What ``jobdoctor explain`` makes of a message no rule knows whole.

People paste fragments: a piece or a paraphrase of the service's message (``exit code 137``),
the shell's word for a signal (``Killed``, ``Segmentation fault (core dumped)``), Kubernetes'
termination reason (``OOMKilled``). The rules of ``rules/fragments/`` know them, for explain
only (a bare "exit code 1" in a job's own output is no verdict on the job, so ``diagnose``
never reads them). When even those know nothing, :func:`nearest_rules` names the rules whose
words the message shares, and :data:`PASTE_INSTEAD` says what to paste.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache

from analyzer.rulebook import RuleBook
from analyzer.rulebook.book import builtin_rules_dir

FRAGMENTS_DIR = "fragments"
# The exit code a signal's message stands for: 128 + the signal's number (platform.md section
# 7), by the fragment rule's detail: SIGKILL 9 (the shell's "Killed", the kernel's OOM killer
# behind Kubernetes' OOMKilled), SIGSEGV 11, SIGBUS 7.
SIGNAL_EXITS = {"killed-no-traceback": 137, "oom-killed": 137, "segfault": 139, "bus-error": 135}
PASTE_INSTEAD = (
    "Paste the whole failure message as the console or the log shows it (the service's"
    " `The replica ... exited with a non-zero status of N ...`, or the job's error.message from"
    " `gcloud ai custom-jobs describe JOB_ID --region REGION`), or diagnose the job's whole log:"
    " `jobdoctor diagnose FILE`."
)
# Words that say nothing of which message it is.
_COMMON = frozenset(
    {
        "the", "a", "an", "of", "and", "or", "in", "on", "at", "to", "for", "with", "by", "is",
        "was", "be", "not", "no", "it", "its", "this", "that", "from", "as", "error", "failed",
        "failure", "message",
    }
)  # fmt: skip
_WORD = re.compile(r"[a-z][a-z0-9_]{2,}")
_PLACEHOLDER = re.compile(r"\b[A-Z][A-Z_]{3,}\b")
_ESCAPE = re.compile(r"\\.")
_GROUP_NAME = re.compile(r"\(\?P<\w+>")
_MOST_NEAREST = 3


@cache
def fragment_book() -> RuleBook:
    """The rules of ``rules/fragments/`` alone (validated like any rules; the directory
    declares its own placeholders): the rule book's own rules, the user's among them, are
    not read again behind them."""
    return RuleBook.load([builtin_rules_dir() / FRAGMENTS_DIR], builtin=False)


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower())) - _COMMON


def nearest_rules(message: str, books: Sequence[RuleBook]) -> tuple[str, ...]:
    """The ids of the rules of ``books`` whose templates or literals share most words with
    ``message``, best first: at most three, none when no word is shared."""
    said = _words(message)
    if not said:
        return ()
    scores: dict[str, int] = {}
    for rule in (rule for book in books for rule in book.rules):
        words: set[str] = set()
        for template in rule.templates:
            # A raw pattern's words too, its escapes (\b, \d, \.) and group names read away.
            text = _GROUP_NAME.sub(" ", _ESCAPE.sub(" ", template.text))
            words |= _words(_PLACEHOLDER.sub(" ", text))
            words |= {word for word in template.literals if word not in _COMMON}
        shared = len(said & words)
        if shared:
            scores[rule.id] = max(scores.get(rule.id, 0), shared)
    ranked = sorted(scores, key=lambda rule: (-scores[rule], rule))
    return tuple(ranked[:_MOST_NEAREST])
