"""Reports of an :class:`~analyzer.analysis.Analysis`: terminal text, JSON and Markdown.

``render_text`` is imported on first use: it brings in rich, which the JSON and Markdown
reports do not need (a sixth of the start-up of ``diagnose --format json``).
"""

from typing import Any

from analyzer.report.json import render_json
from analyzer.report.markdown import render_markdown

__all__ = ["render_json", "render_markdown", "render_text"]


def __getattr__(name: str) -> Any:
    if name == "render_text":
        from analyzer.report.text import render_text

        return render_text
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
