"""YAML reading through libyaml when PyYAML has it: the pure-Python loader takes ~60 ms for
the advice file alone, a third of a small diagnosis."""

from __future__ import annotations

from typing import Any

import yaml

LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """``yaml.safe_load``, through libyaml when available."""
    return yaml.load(text, Loader=LOADER)


def compose(text: str) -> yaml.Node | None:
    """``yaml.compose`` (nodes with their line marks), through libyaml when available."""
    return yaml.compose(text, Loader=LOADER)
