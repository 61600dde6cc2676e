"""YAML into plain values that remember where they were written.

PyYAML's composer keeps a mark (line, column) on every node; constructing
Python objects throws them away. :func:`parse` builds :class:`Node` trees
instead, so that every validation message can point at the exact key or
value, and rejects duplicate keys (PyYAML silently keeps the last one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import yaml

from analyzer.core.yamlload import compose, first_alias
from analyzer.rulebook.model import Location, Problem

Scalar = str | int | float | bool | None


@dataclass(frozen=True, slots=True)
class Node:
    """A YAML value with its location; mappings also keep each key's location."""

    value: Scalar | list[Node] | dict[str, Node]
    location: Location
    key_locations: Mapping[str, Location] = field(default_factory=dict)

    @property
    def is_mapping(self) -> bool:
        return isinstance(self.value, dict)

    @property
    def is_list(self) -> bool:
        return isinstance(self.value, list)

    def mapping(self) -> dict[str, Node]:
        """The value as a mapping (call after checking :attr:`is_mapping`)."""
        assert isinstance(self.value, dict)
        return self.value

    def items(self) -> list[Node]:
        """The value as a list (call after checking :attr:`is_list`)."""
        assert isinstance(self.value, list)
        return self.value

    def key_location(self, key: str) -> Location:
        """Where ``key`` of this mapping was written."""
        return self.key_locations.get(key, self.location)


def _location(path: str, mark: yaml.Mark | None) -> Location:
    if mark is None:
        return Location(path, 1, 1)
    return Location(path, mark.line + 1, mark.column + 1)


class _Builder:
    def __init__(self, path: str, problems: list[Problem]) -> None:
        self.path = path
        self.problems = problems
        self.constructor = yaml.constructor.SafeConstructor()

    def build(self, node: yaml.Node) -> Node:
        location = _location(self.path, node.start_mark)
        if isinstance(node, yaml.ScalarNode):
            value = self.constructor.construct_object(node)
            if not isinstance(value, str | int | float | bool | None):
                value = str(node.value)  # dates and the like: keep the text
            return Node(value, location)
        if isinstance(node, yaml.SequenceNode):
            return Node([self.build(item) for item in node.value], location)
        assert isinstance(node, yaml.MappingNode)
        values: dict[str, Node] = {}
        keys: dict[str, Location] = {}
        for key_node, value_node in node.value:
            key_location = _location(self.path, key_node.start_mark)
            if not isinstance(key_node, yaml.ScalarNode):
                self.problems.append(
                    Problem.at(key_location, "a key must be a plain word, not a list or mapping")
                )
                continue
            key = str(key_node.value)
            if key in keys:
                first = keys[key]
                self.problems.append(
                    Problem.at(
                        key_location,
                        f"duplicate key '{key}' (first at line {first.line}); keep one of them",
                    )
                )
                continue
            keys[key] = key_location
            values[key] = self.build(value_node)
        return Node(values, location, keys)


def parse(text: str, path: str, problems: list[Problem]) -> Node | None:
    """Parse one YAML document; syntax errors, anchors and aliases are appended to
    ``problems``."""
    alias = first_alias(text)
    if alias is not None:
        line, column, what = alias
        problems.append(
            Problem(
                path,
                line,
                column,
                "error",
                f"YAML {what}: anchors and aliases are not allowed in rule files (a few of them"
                " can expand to gigabytes); write the value out",
            )
        )
        return None
    try:
        # libyaml's loader keeps line and column marks too, and is several times faster.
        root = compose(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = exc.problem or exc.context or "invalid YAML"
        problems.append(
            Problem.at(_location(path, mark), f"YAML syntax error: {what}; fix the YAML syntax")
        )
        return None
    except yaml.YAMLError as exc:
        problems.append(Problem(path, 1, 1, "error", f"YAML error: {exc}; fix the YAML syntax"))
        return None
    if root is None:
        return None
    return _Builder(path, problems).build(root)
