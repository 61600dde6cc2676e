"""Rule directories into validated, compiled rules.

A directory holds YAML files of two shapes: a placeholder file (a mapping
with ``placeholders:``) and rule files (a list of rules, or a mapping with
``rules:``). ``policy.yaml`` (the policy profile) and ``advice.yaml`` (advice texts) are
skipped: they live next to the rules but are read by other modules.
Every problem is collected with its location instead of stopping at the
first one, so a user fixes a file in one pass.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TypeVar

from analyzer.core.yamlload import NotARegularFile, read_config
from analyzer.rulebook._regex import compile_pattern
from analyzer.rulebook._regex import error as RegexError
from analyzer.rulebook.compile import PLACEHOLDER_RE, PUNCTUATION, best_literal, template_source
from analyzer.rulebook.events import Category, EventKind, Writer
from analyzer.rulebook.model import (
    Capture,
    FieldType,
    Location,
    MatchExample,
    NoMatchExample,
    Placeholder,
    Problem,
    Rule,
    Template,
)
from analyzer.rulebook.normalize import normalize
from analyzer.rulebook.yamlnodes import Node, parse

# Other data that lives next to the rules (the policy profile, the advice texts).
RESERVED_FILES = frozenset({"policy.yaml", "policy.yml", "advice.yaml", "advice.yml"})
RULE_KEYS = (
    "id",
    "description",
    "category",
    "event",
    "detail",
    "templates",
    "pattern",
    "literals",
    "whole",
    "written_by",
    "examples",
)
PLACEHOLDER_KEYS = ("field", "type", "pattern", "description")
EXAMPLE_KEYS = ("match", "no_match")
MATCH_EXAMPLE_KEYS = ("text", "fields", "lang")
_ID_RE = re.compile(r"[a-z0-9][a-z0-9._-]*")
_LANG_RE = re.compile(r"[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})*")
_FIELD_RE = re.compile(r"[a-z][a-z0-9_]*")


Member = TypeVar("Member", bound=StrEnum)


def _member(
    node: Node | None, what: str, noun: str, enum: type[Member], problems: list[Problem]
) -> tuple[bool, Member | None]:
    """The member of ``enum`` that ``node`` names: None when there is no node or it is not a
    string (reported as ``what``); False first when the name is unknown, reported as an
    unknown ``noun`` with the closest names."""
    if node is None:
        return True, None
    name = _string(node, what, problems)
    if name is None:
        return True, None
    try:
        return True, enum(name)
    except ValueError:
        choices = [member.value for member in enum]
        problems.append(
            Problem.at(node.location, f"unknown {noun} '{name}'; {_did_you_mean(name, choices)}")
        )
        return False, None


def _did_you_mean(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else f"use one of: {', '.join(choices)}"


@dataclass(frozen=True, slots=True)
class RuleFile:
    """One parsed YAML file of a rule directory."""

    path: Path
    root: Node


@dataclass(frozen=True, slots=True)
class Loaded:
    """What loading produced: rules in order, notices, and every problem found."""

    placeholders: Mapping[str, Placeholder]
    rules: tuple[Rule, ...]
    notices: tuple[str, ...]
    problems: tuple[Problem, ...]


# What a rule folder may hold (docs/rules.md): the built-in rules are ~130 KB and ~150 rules, a
# user's additions a few; a folder of hundreds of thousands of rules would take minutes to parse
# and compile before any log is read, and is refused at once with one line instead.
MAX_RULE_BYTES = 8 << 20
MAX_RULES = 5000
TOO_MANY_BYTES = (
    f"the rule files of this folder hold more than {MAX_RULE_BYTES >> 20} MiB, more than"
    " jobdoctor reads: keep the rules you need (a rule is a few lines)"
)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # said when the file is read


def read_dir(directory: Path, problems: list[Problem]) -> list[RuleFile]:
    """Parse every ``*.yaml``/``*.yml`` file of ``directory`` except the policy profile."""
    if not directory.is_dir():
        problems.append(
            Problem(str(directory), 1, 1, "error", "not a directory; pass a folder of rule files")
        )
        return []
    files: list[RuleFile] = []
    paths = sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")])
    total = 0
    for path in paths:
        if path.name in RESERVED_FILES:
            continue
        total += _size(path)
        if total > MAX_RULE_BYTES:
            problems.append(Problem(str(path), 1, 1, "error", TOO_MANY_BYTES))
            break
        try:
            text = read_config(path)
        except NotARegularFile as exc:
            problems.append(Problem(str(path), 1, 1, "error", f"not read: {exc}"))
            continue
        except UnicodeDecodeError as exc:
            problems.append(Problem(str(path), 1, 1, "error", f"cannot read the file: {exc}"))
            continue
        except OSError as exc:
            problems.append(
                Problem(str(path), 1, 1, "error", f"cannot read the file: {exc.strerror or exc}")
            )
            continue
        root = parse(text, str(path), problems)
        if root is not None:
            files.append(RuleFile(path, root))
    return files


def _is_placeholder_file(root: Node) -> bool:
    return root.is_mapping and "placeholders" in root.mapping()


def _rule_nodes(root: Node, problems: list[Problem]) -> list[Node]:
    if root.is_list:
        return root.items()
    if root.is_mapping:
        mapping = root.mapping()
        rules = mapping.get("rules")
        unknown = [key for key in mapping if key != "rules"]
        for key in unknown:
            problems.append(
                Problem.at(
                    root.key_location(key),
                    f"unknown top-level key '{key}'; a rule file is a list of rules "
                    "(or 'rules:' with one), a placeholder file has 'placeholders:'",
                )
            )
        if rules is not None and rules.is_list:
            return rules.items()
        if rules is not None:
            problems.append(Problem.at(rules.location, "'rules' must be a list of rules"))
        return []
    problems.append(
        Problem.at(root.location, "a rule file must be a list of rules; start each with '- id:'")
    )
    return []


def _string(node: Node | None, what: str, problems: list[Problem]) -> str | None:
    if node is None:
        return None
    if isinstance(node.value, str) and node.value.strip():
        return node.value
    problems.append(Problem.at(node.location, f"{what} must be a non-empty string; quote it"))
    return None


def _check_keys(node: Node, allowed: Sequence[str], what: str, problems: list[Problem]) -> None:
    for key in node.mapping():
        if key not in allowed:
            problems.append(
                Problem.at(
                    node.key_location(key),
                    f"unknown key '{key}' in {what}; {_did_you_mean(key, allowed)}",
                )
            )


def load_placeholders(
    files: Sequence[RuleFile],
    into: dict[str, Placeholder],
    problems: list[Problem],
    notices: list[str],
) -> None:
    """Add the placeholders declared in ``files`` to ``into`` (later ones replace)."""
    for rule_file in files:
        if not _is_placeholder_file(rule_file.root):
            continue
        root = rule_file.root
        _check_keys(root, ("placeholders",), "a placeholder file", problems)
        declared = root.mapping()["placeholders"]
        if not declared.is_mapping:
            problems.append(
                Problem.at(declared.location, "'placeholders' must map NAME to its definition")
            )
            continue
        for name, node in declared.mapping().items():
            placeholder = _placeholder(name, node, declared.key_location(name), problems)
            if placeholder is None:
                continue
            previous = into.get(name)
            if previous is not None and (previous.pattern, previous.field, previous.type) != (
                placeholder.pattern,
                placeholder.field,
                placeholder.type,
            ):
                notices.append(
                    f"{placeholder.location}: placeholder {name} replaces the one "
                    f"declared at {previous.location}"
                )
            into[name] = placeholder


def _placeholder(
    name: str, node: Node, key_location: Location, problems: list[Problem]
) -> Placeholder | None:
    if not PLACEHOLDER_RE.fullmatch(name):
        problems.append(
            Problem.at(
                key_location,
                f"placeholder name '{name}' must be capital letters, digits and "
                "underscores (like REPLICA_NAME), the way templates write it",
            )
        )
        return None
    if not node.is_mapping:
        problems.append(
            Problem.at(node.location, f"placeholder {name} needs 'field:' and 'pattern:'")
        )
        return None
    _check_keys(node, PLACEHOLDER_KEYS, f"placeholder {name}", problems)
    values = node.mapping()
    field = _string(values.get("field"), f"{name}.field", problems)
    pattern = _string(values.get("pattern"), f"{name}.pattern", problems)
    known, given_type = _member(values.get("type"), f"{name}.type", "type", FieldType, problems)
    if not known:
        return None
    field_type = given_type or FieldType.TEXT
    for required in ("field", "pattern"):
        if required not in values:
            problems.append(Problem.at(node.location, f"placeholder {name} needs '{required}:'"))
    if field is None or pattern is None:
        return None
    if not _FIELD_RE.fullmatch(field):
        problems.append(
            Problem.at(values["field"].location, f"field '{field}' must be a lower_case name")
        )
        return None
    try:
        compiled = compile_pattern(pattern)
    except RegexError as exc:
        problems.append(
            Problem.at(
                values["pattern"].location,
                f"pattern of {name} does not compile: {exc}; fix the regular expression",
            )
        )
        return None
    if compiled.groups:
        problems.append(
            Problem.at(
                values["pattern"].location,
                f"pattern of {name} has capturing groups; write (?:...) instead",
            )
        )
        return None
    return Placeholder(name, field, pattern, field_type, key_location)


def _templates(
    node: Node,
    placeholders: Mapping[str, Placeholder],
    whole: bool,
    rule_id: str,
    problems: list[Problem],
) -> list[Template]:
    if not node.is_mapping:
        problems.append(
            Problem.at(node.location, "'templates' must map a language (en, he, ja) to sentences")
        )
        return []
    templates: list[Template] = []
    languages = node.mapping()
    for lang, value in languages.items():
        if not _LANG_RE.fullmatch(lang):
            problems.append(
                Problem.at(
                    node.key_location(lang),
                    f"'{lang}' is not a language code; use a code like en, he, ja",
                )
            )
            continue
        sentences = value.items() if value.is_list else [value]
        for sentence in sentences:
            text = _string(sentence, f"template '{lang}'", problems)
            if text is None:
                continue
            template = _template(lang, text, sentence.location, placeholders, whole, problems)
            if template is not None:
                templates.append(template)
    if languages and "en" not in languages:
        problems.append(
            Problem.at(
                node.location,
                f"rule {rule_id} has templates in {', '.join(languages)} but none in 'en'; "
                "add the English sentence the others translate",
            )
        )
    return templates


def _template(
    lang: str,
    text: str,
    location: Location,
    placeholders: Mapping[str, Placeholder],
    whole: bool,
    problems: list[Problem],
) -> Template | None:
    compiled = template_source(text, placeholders, whole=whole)
    if compiled.unknown:
        for name in compiled.unknown:
            problems.append(
                Problem.at(
                    location,
                    f"unknown placeholder {name}; declare it in placeholders.yaml or "
                    f"{_did_you_mean(name, sorted(placeholders))}",
                )
            )
        return None
    try:
        regex = compile_pattern(compiled.source)
    except RegexError as exc:
        problems.append(
            Problem.at(location, f"template does not compile: {exc}; check its placeholders")
        )
        return None
    literal = best_literal(compiled.words)
    if literal is None:
        problems.append(
            Problem.at(
                location,
                "template has no literal word, so it is tried on every line; add a word",
                "warning",
            )
        )
    return Template(lang, text, regex, compiled.captures, (literal,) if literal else (), location)


def _raw_pattern(
    node: Node,
    literals_node: Node | None,
    placeholders: Mapping[str, Placeholder],
    problems: list[Problem],
) -> Template | None:
    source = _string(node, "'pattern'", problems)
    if source is None:
        return None
    try:
        regex = compile_pattern(source)
    except RegexError as exc:
        problems.append(
            Problem.at(
                node.location, f"pattern does not compile: {exc}; fix the regular expression"
            )
        )
        return None
    types = {p.field: p.type for p in placeholders.values()}
    captures: list[Capture] = []
    for group in regex.groupindex:
        if not _FIELD_RE.fullmatch(group):
            problems.append(
                Problem.at(
                    node.location,
                    f"group name '{group}' must be a lower_case field name (like exit_code)",
                )
            )
            continue
        captures.append(Capture(group, group, types.get(group, FieldType.TEXT)))
    literals: list[str] = []
    if literals_node is None:
        problems.append(
            Problem.at(
                node.location,
                "a raw pattern without 'literals:' is tried on every line; list words "
                "every match contains",
                "warning",
            )
        )
    elif not literals_node.is_list:
        problems.append(Problem.at(literals_node.location, "'literals' must be a list of words"))
    else:
        for item in literals_node.items():
            word = _string(item, "a literal", problems)
            if word is None:
                continue
            word = normalize(word).lower()
            if any(c.isspace() or c in PUNCTUATION for c in word):
                problems.append(
                    Problem.at(
                        item.location,
                        f"literal '{word}' must be one word without spaces or punctuation "
                        "(text can break lines there)",
                    )
                )
                continue
            literals.append(word)
    return Template("en", source, regex, tuple(captures), tuple(literals), node.location)


def _kind(
    values: dict[str, Node], rule: Node, problems: list[Problem]
) -> tuple[EventKind, Category | None] | None:
    category_node, event_node = values.get("category"), values.get("event")
    known, category = _member(category_node, "'category'", "category", Category, problems)
    if not known:
        return None
    known, kind = _member(event_node, "'event'", "event", EventKind, problems)
    if not known:
        return None
    if category is None and kind is None:
        if category_node is None and event_node is None:
            problems.append(
                Problem.at(rule.location, "a rule needs 'category:' (an error) or 'event:'")
            )
        return None
    if kind is None or kind is EventKind.ERROR:
        if category is None:
            problems.append(Problem.at(rule.location, "event 'error' needs a 'category:' as well"))
            return None
        return EventKind.ERROR, category
    if category is not None and kind is not EventKind.DETAIL:
        problems.append(
            Problem.at(
                rule.key_location("category"),
                f"event '{kind.value}' takes no category; only errors and details have one",
            )
        )
        return None
    return kind, category


def _examples(
    node: Node | None, problems: list[Problem], rule: Node
) -> tuple[tuple[MatchExample, ...], tuple[NoMatchExample, ...]]:
    if node is None:
        problems.append(
            Problem.at(
                rule.location,
                "rule has no examples; add examples: {match: [...], no_match: [...]}",
                "warning",
            )
        )
        return (), ()
    if not node.is_mapping:
        problems.append(Problem.at(node.location, "'examples' needs 'match:' and 'no_match:'"))
        return (), ()
    _check_keys(node, EXAMPLE_KEYS, "examples", problems)
    values = node.mapping()
    matches: list[MatchExample] = []
    no_matches: list[NoMatchExample] = []
    match_node = values.get("match")
    if match_node is not None:
        for item in match_node.items() if match_node.is_list else [match_node]:
            example = _match_example(item, problems)
            if example is not None:
                matches.append(example)
    no_match_node = values.get("no_match")
    if no_match_node is not None:
        for item in no_match_node.items() if no_match_node.is_list else [no_match_node]:
            if isinstance(item.value, str):
                no_matches.append(NoMatchExample(item.value, item.location))
            else:
                problems.append(Problem.at(item.location, "a no_match example is a string"))
    return tuple(matches), tuple(no_matches)


def _match_example(item: Node, problems: list[Problem]) -> MatchExample | None:
    if isinstance(item.value, str):
        return MatchExample(item.value, (), None, item.location)
    if not item.is_mapping:
        problems.append(Problem.at(item.location, "a match example is a string or {text, fields}"))
        return None
    _check_keys(item, MATCH_EXAMPLE_KEYS, "a match example", problems)
    values = item.mapping()
    text_node = values.get("text")
    if text_node is None or not isinstance(text_node.value, str):
        problems.append(Problem.at(item.location, "a match example needs 'text:' (a string)"))
        return None
    fields_node = values.get("fields")
    expected: list[dict[str, str | int]] = []
    if fields_node is not None:
        for one in fields_node.items() if fields_node.is_list else [fields_node]:
            if not one.is_mapping:
                problems.append(
                    Problem.at(one.location, "'fields' maps field names to expected values")
                )
                return None
            fields: dict[str, str | int] = {}
            for key, value in one.mapping().items():
                if isinstance(value.value, bool) or not isinstance(value.value, str | int):
                    problems.append(
                        Problem.at(value.location, f"field '{key}' must be a string or integer")
                    )
                    return None
                fields[key] = value.value
            expected.append(fields)
    lang = values.get("lang")
    return MatchExample(
        text_node.value,
        tuple(expected),
        lang.value if lang is not None and isinstance(lang.value, str) else None,
        text_node.location,
    )


def build_rule(
    node: Node, placeholders: Mapping[str, Placeholder], problems: list[Problem]
) -> Rule | None:
    """Validate and compile one rule node; None (with problems) when it is invalid."""
    if not node.is_mapping:
        problems.append(Problem.at(node.location, "a rule is a mapping starting with 'id:'"))
        return None
    before = sum(1 for p in problems if p.severity == "error")
    _check_keys(node, RULE_KEYS, "a rule", problems)
    values = node.mapping()
    rule_id = _rule_id(node, values, problems)
    kind = _kind(values, node, problems)
    whole = _whole(values, problems)
    templates = _rule_templates(node, values, placeholders, whole, rule_id, problems)
    detail = _detail(values, kind, rule_id, problems)
    known_writer, writer = _member(
        values.get("written_by"), "'written_by'", "writer", Writer, problems
    )
    matches, no_matches = _examples(values.get("examples"), problems, node)
    errors = sum(1 for p in problems if p.severity == "error")
    if errors > before or rule_id is None or kind is None or not templates:
        return None
    return Rule(
        id=rule_id,
        kind=kind[0],
        category=kind[1],
        detail=detail,
        templates=tuple(templates),
        whole=whole,
        match_examples=matches,
        no_match_examples=no_matches,
        location=values["id"].location,
        writer=writer if known_writer and writer is not None else Writer.ANY,
    )


def _rule_id(node: Node, values: dict[str, Node], problems: list[Problem]) -> str | None:
    """The rule's id: required, lower case words joined by '.', '-' or '_'."""
    rule_id = _string(values.get("id"), "'id'", problems)
    if "id" not in values:
        problems.append(Problem.at(node.location, "a rule needs an 'id:'"))
    elif rule_id is not None and not _ID_RE.fullmatch(rule_id):
        problems.append(
            Problem.at(
                values["id"].location,
                f"id '{rule_id}' must be lower case words joined by '.', '-' or '_'",
            )
        )
    return rule_id


def _whole(values: dict[str, Node], problems: list[Problem]) -> bool:
    """Whether the rule's templates match the whole text ('whole:', false by default)."""
    whole_node = values.get("whole")
    if whole_node is None:
        return False
    if isinstance(whole_node.value, bool):
        return whole_node.value
    problems.append(Problem.at(whole_node.location, "'whole' is true or false"))
    return False


def _rule_templates(
    node: Node,
    values: dict[str, Node],
    placeholders: Mapping[str, Placeholder],
    whole: bool,
    rule_id: str | None,
    problems: list[Problem],
) -> list[Template]:
    """The rule's templates, then its raw pattern (with its literals); a rule needs one or
    the other."""
    templates: list[Template] = []
    if "templates" in values:
        templates += _templates(values["templates"], placeholders, whole, rule_id or "?", problems)
    if "pattern" in values:
        raw = _raw_pattern(values["pattern"], values.get("literals"), placeholders, problems)
        if raw is not None:
            templates.append(raw)
    elif "literals" in values:
        problems.append(
            Problem.at(
                node.key_location("literals"),
                "'literals' is for raw patterns; templates find their own",
            )
        )
    if "templates" not in values and "pattern" not in values:
        problems.append(Problem.at(node.location, "a rule needs 'templates:' or 'pattern:'"))
    return templates


def _detail(
    values: dict[str, Node],
    kind: tuple[EventKind, Category | None] | None,
    rule_id: str | None,
    problems: list[Problem],
) -> str | None:
    node = values.get("detail")
    detail = _string(node, "'detail'", problems) if node is not None else None
    if kind is None:
        return detail
    if kind[0] is EventKind.DETAIL:
        # A detail rule names its finer cause; the id's last part by default.
        return detail or (rule_id.rsplit(".", 1)[-1] if rule_id else None)
    if node is not None:
        problems.append(
            Problem.at(node.location, "'detail' is only for rules with 'event: detail'")
        )
    return None


def load(
    layers: Sequence[Sequence[Path]],
) -> Loaded:
    """Load rule directories in layers (built-in first, then the user's).

    Within a layer an id may be defined once; a later layer's rule replaces an
    earlier layer's rule of the same id (kept in its place, with a notice).
    """
    problems: list[Problem] = []
    notices: list[str] = []
    files_by_layer = [[f for d in layer for f in read_dir(d, problems)] for layer in layers]
    placeholders: dict[str, Placeholder] = {}
    for files in files_by_layer:
        load_placeholders(files, placeholders, problems, notices)

    rules: dict[str, Rule] = {}
    for files in files_by_layer:
        if _too_many_rules(files, problems):
            continue
        seen: dict[str, Location] = {}
        for rule_file in files:
            if _is_placeholder_file(rule_file.root):
                continue
            for node in _rule_nodes(rule_file.root, problems):
                rule = build_rule(node, placeholders, problems)
                if rule is None:
                    continue
                if rule.id in seen:
                    problems.append(
                        Problem.at(
                            rule.location,
                            f"duplicate rule id '{rule.id}' (first at {seen[rule.id]}); "
                            "rename one of them",
                        )
                    )
                    continue
                seen[rule.id] = rule.location
                replaced = rules.get(rule.id)
                if replaced is not None:
                    notices.append(
                        f"{rule.location}: rule '{rule.id}' replaces the built-in rule "
                        f"at {replaced.location}"
                    )
                rules[rule.id] = rule
    return Loaded(placeholders, tuple(rules.values()), tuple(notices), tuple(problems))


def _too_many_rules(files: Sequence[RuleFile], problems: list[Problem]) -> bool:
    """Whether a layer's files hold more than :data:`MAX_RULES` rules (said as a problem at
    the file that passes the limit): compiling them all would take minutes."""
    count = 0
    for rule_file in files:
        if _is_placeholder_file(rule_file.root):
            continue
        count += len(_rule_nodes(rule_file.root, []))
        if count > MAX_RULES:
            problems.append(
                Problem(
                    str(rule_file.path),
                    1,
                    1,
                    "error",
                    f"more than {MAX_RULES} rules in one folder, more than jobdoctor loads:"
                    " keep the rules you need",
                )
            )
            return True
    return False
