"""The JSON report: the ``jobdoctor.diagnosis/1`` contract of design.md."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from analyzer.api import Analysis


def render_json(analysis: Analysis) -> str:
    """The analysis as an indented JSON document (keys in contract order)."""
    return json.dumps(analysis.to_dict(), indent=2, ensure_ascii=False) + "\n"
