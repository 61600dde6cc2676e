"""``jobdoctor rules check``: validate rule directories and run their examples.

Beyond what loading checks, every rule's ``match`` examples must match with
the expected fields, its ``no_match`` examples must not, each language of a
rule should have an example, and patterns are probed for catastrophic
backtracking (statically for nested quantifiers, dynamically on stress texts).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path

from analyzer.rulebook import native
from analyzer.rulebook._regex import Pattern
from analyzer.rulebook.book import DEFAULT_TIMEOUT, builtin_rules_dir
from analyzer.rulebook.compile import MatchTimeout, find
from analyzer.rulebook.events import RuleMatch
from analyzer.rulebook.loader import load
from analyzer.rulebook.model import Location, Placeholder, Problem, Rule
from analyzer.rulebook.normalize import normalize_with_offsets
from analyzer.rulebook.prefilter import Prefilter, literals_of
from analyzer.rulebook.windows import uncovered

# A group containing a quantifier, itself quantified: (a+)+, (?:\w*\s?)*, ...
_NESTED_QUANTIFIER = re.compile(r"\((?:\?:)?((?:[^()\\]|\\.)*[+*}](?:[^()\\]|\\.)*)\)[+*{]")
# ... unless every branch of the group starts with a literal character, like
# (?:-[a-z]+)+: each repetition must then consume that separator, no ambiguity.
_LITERAL_START = re.compile(r"(?:[^\\\[\](){}.*+?|^$]|\\[^wWsSdDbBpPhHvVXR0-9])(?![+*?{])")
# Stress texts must finish well inside this; a sound template needs microseconds.
_STRESS_TIMEOUT = 0.5
_STRESS_SLOW = 0.05
# Examples get more time than live matching: a loaded CI machine must not fail them.
_EXAMPLE_TIMEOUT = max(DEFAULT_TIMEOUT, 1.0)


def check_rules(dirs: Sequence[Path], *, builtin: bool = True) -> list[Problem]:
    """Every problem in the rule directories ``dirs`` (the built-in one when empty).

    User directories are checked on top of the built-in rules (whose
    placeholders they may use); examples are run for the rules of ``dirs``.
    Returns errors and warnings sorted by file and line.
    """
    checked = [Path(d) for d in dirs] or [builtin_rules_dir()]
    builtin_dir = builtin_rules_dir().resolve()
    layers: list[list[Path]] = []
    if builtin and all(d.resolve() != builtin_dir for d in checked):
        layers.append([builtin_rules_dir()])
    layers.append(checked)
    loaded = load(layers)
    problems = list(loaded.problems)
    roots = [d.resolve() for d in checked]
    for rule in loaded.rules:
        if any(Path(rule.location.path).resolve().is_relative_to(r) for r in roots):
            problems.extend(run_examples(rule))
            problems.extend(backtracking_risks(rule))
            problems.extend(literal_gaps(rule))
            problems.extend(native_notes(rule))
    problems.extend(_bigquery_notes([r for r in loaded.rules if _inside(r, roots)]))
    for placeholder in loaded.placeholders.values():
        if any(Path(placeholder.location.path).resolve().is_relative_to(r) for r in roots):
            problems.extend(_placeholder_risks(placeholder))
    return sorted(set(problems), key=lambda p: (p.path, p.line, p.col, p.message))


def _inside(rule: Rule, roots: Sequence[Path]) -> bool:
    return any(Path(rule.location.path).resolve().is_relative_to(r) for r in roots)


def _bigquery_notes(rules: Sequence[Rule]) -> list[Problem]:
    """Templates BigQuery's RE2 cannot check (used from Python only there); nothing without
    the bigquery extra, which alone knows RE2."""
    try:
        from analyzer.rulebook.re2 import python_only_problems
    except ImportError:
        return []
    return python_only_problems(rules)


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= 70 else flat[:67] + "...")


def run_examples(rule: Rule) -> list[Problem]:
    """Problems found running ``rule``'s examples."""
    problems: list[Problem] = []
    prefilter = Prefilter([literals_of(rule)])
    matched_langs: set[str] = set()
    for example in rule.match_examples:
        try:
            matches = _find(rule, example.text)
        except MatchTimeout:
            problems.append(Problem.at(example.location, "example timed out; simplify the pattern"))
            continue
        if not matches:
            problems.append(
                Problem.at(
                    example.location,
                    f"match example does not match rule {rule.id}: {_short(example.text)}; "
                    "fix the template or the example",
                )
            )
            continue
        if not prefilter.candidates(example.text):
            problems.append(
                Problem.at(
                    example.location,
                    f"the prefilter rejects this example of rule {rule.id}; "
                    "list a word the text contains in 'literals:'",
                )
            )
        matched_langs.update(m.lang for m in matches)
        if example.lang is not None and matches[0].lang != example.lang:
            problems.append(
                Problem.at(
                    example.location,
                    f"example matched the '{matches[0].lang}' template, expected '{example.lang}'",
                )
            )
        if example.fields:
            got = [dict(m.fields) for m in matches]
            want = [dict(f) for f in example.fields]
            if got != want:
                problems.append(
                    Problem.at(
                        example.location,
                        f"example of rule {rule.id} gives fields {got}, expected {want}; "
                        "fix the placeholder pattern or the expected fields",
                    )
                )
    for no_match in rule.no_match_examples:
        try:
            matches = _find(rule, no_match.text)
        except MatchTimeout:
            problems.append(
                Problem.at(no_match.location, "example timed out; simplify the pattern")
            )
            continue
        if matches:
            problems.append(
                Problem.at(
                    no_match.location,
                    f"no_match example matches rule {rule.id}: {_short(no_match.text)}; "
                    "make the template stricter or move the example",
                )
            )
    if rule.match_examples:
        for lang in rule.languages:
            if lang not in matched_langs:
                problems.append(
                    Problem.at(
                        rule.location,
                        f"rule {rule.id} has no match example for its '{lang}' template; "
                        "add one (with the damage real text has)",
                        "warning",
                    )
                )
    return problems


def _find(rule: Rule, text: str) -> list[RuleMatch]:
    normalized, offsets = normalize_with_offsets(text)
    return [m for _, m in find(rule, normalized, offsets, text, _EXAMPLE_TIMEOUT)]


def _stress_texts(source: str) -> list[str]:
    seed = " ".join(source.split())
    # Each ends in a character no rule expects, so that a pattern must fail
    # after trying its repetitions: that is where backtracking explodes.
    end = "\x00"
    return [
        seed * 40 + end,
        "a" * 3000 + end,
        "a " * 1500 + end,
        "0" * 3000 + end,
        ("-" + "a" * 5) * 500 + end,
    ]


def literal_gaps(rule: Rule) -> list[Problem]:
    """Warnings for templates whose matches need not hold any of their literals: the
    prefilter never tries a text without them, so such a text is silently missed (a rule's
    examples pass when each happens to hold one). Proven on the pattern's syntax tree."""
    problems: list[Problem] = []
    for template in rule.templates:
        if not template.literals:
            continue
        # Compiled without flags (compile_pattern): a caseless pattern says so itself, (?i).
        gaps = uncovered(template.regex.pattern, template.literals)
        if not gaps:
            continue
        shown = ", ".join(_short(gap) for gap in gaps[:3])
        problems.append(
            Problem.at(
                template.location,
                f"literals {list(template.literals)} are not in every match: {shown} "
                "can match without any of them, and the prefilter would skip such a text; "
                "add a word every such match holds to 'literals:'",
                "warning",
            )
        )
    return problems


def native_notes(rule: Rule) -> list[Problem]:
    """Warnings for templates a block's texts are not searched with at once (issue 32): each
    text holding their literal words reaches Python on its own (the verdicts are the same,
    only slower); an error where that search misses a match example (a jobdoctor bug)."""
    problems: list[Problem] = []
    for template in rule.templates:
        if not template.literals:
            problems.append(
                Problem.at(
                    template.location,
                    f"rule {rule.id} ({template.lang}) has no literal word: every text is a "
                    "candidate, so every line of a log reaches Python, for every rule; "
                    "give it 'literals:'",
                    "warning",
                )
            )
            continue
        reason = native.rewrite(template.regex.pattern).reason
        if reason is not None:
            problems.append(
                Problem.at(
                    template.location,
                    f"rule {rule.id} ({template.lang}) is decided in Python for each text "
                    f"holding its literal words, not by the block search: {reason}; verdicts "
                    "are unchanged, but chatty logs are read slower",
                    "warning",
                )
            )
    problems.extend(_native_misses(rule))
    return problems


def _native_misses(rule: Rule) -> list[Problem]:
    """An error for each match example the rule matches that the block search leaves out (it
    must keep every text a rule matches), searched among neighbours it could run into."""
    if any(not template.literals for template in rule.templates):
        return []
    prefilter = Prefilter(
        [literals_of(rule)],
        [(0, template.regex.pattern, template.literals) for template in rule.templates],
    )
    problems: list[Problem] = []
    for example in rule.match_examples:
        try:
            if not _find(rule, example.text):
                continue  # an example the rule does not match: run_examples says so
        except MatchTimeout:
            continue
        texts = ["x", example.text, " \n", example.text + "\n", "y"]
        kept = prefilter.confirm(texts, prefilter.select(texts), _EXAMPLE_TIMEOUT)
        if 1 not in kept or 3 not in kept:
            problems.append(
                Problem.at(
                    example.location,
                    f"the block search of rule {rule.id} misses this match example (a "
                    "jobdoctor bug: please report it with the rule)",
                )
            )
    return problems


def backtracking_risks(rule: Rule) -> list[Problem]:
    """Warnings for templates or patterns that are slow on stress texts."""
    problems: list[Problem] = []
    for template in rule.templates:
        # Compiled templates wrap placeholder patterns, checked on their own below.
        if not template.captures and nested_quantifier(template.regex.pattern):
            problems.append(
                Problem.at(
                    template.location,
                    "nested quantifier like (x+)+ can backtrack catastrophically; "
                    "make the inner and outer repetitions unambiguous",
                    "warning",
                )
            )
        problems.extend(_probe(template.regex, template.text, template.location))
    return problems


def _probe(regex: Pattern, seed: str, location: Location) -> list[Problem]:
    """Run ``regex`` over stress texts built from ``seed``; warn when it is slow."""
    for text in _stress_texts(seed):
        started = time.perf_counter()
        try:
            for _ in regex.finditer(text, timeout=_STRESS_TIMEOUT):
                pass
        except TimeoutError:
            return [
                Problem.at(
                    location,
                    f"pattern ran over {_STRESS_TIMEOUT} s on a {len(text)}-character stress "
                    "text: catastrophic backtracking, measured; make repetitions unambiguous",
                    "error",
                )
            ]
        if time.perf_counter() - started > _STRESS_SLOW:
            return [
                Problem.at(
                    location,
                    f"pattern is slow (over {_STRESS_SLOW} s) on a {len(text)}-character "
                    "stress text; make repetitions unambiguous",
                    "warning",
                )
            ]
    return []


def nested_quantifier(source: str) -> bool:
    """Whether ``source`` repeats a group that itself repeats ambiguously."""
    for found in _NESTED_QUANTIFIER.finditer(source):
        branches = found.group(1).split("|")
        if not all(_LITERAL_START.match(branch) for branch in branches):
            return True
    return False


def _placeholder_risks(placeholder: Placeholder) -> list[Problem]:
    problems: list[Problem] = []
    if nested_quantifier(placeholder.pattern):
        problems.append(
            Problem.at(
                placeholder.location,
                f"pattern of {placeholder.name} nests quantifiers like (x+)+, which can "
                "backtrack catastrophically; make the repetitions unambiguous",
                "warning",
            )
        )
    return problems
