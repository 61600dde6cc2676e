"""Reports of an :class:`~analyzer.pipeline.analysis.Analysis`: terminal text, JSON and Markdown.

``render_text`` and ``render_markdown`` are imported on first use: the first brings in rich,
which the JSON and Markdown reports do not need (a sixth of the start-up of ``diagnose
--format json``), the second ``html`` and the controls' tables.
"""

from typing import TYPE_CHECKING, Any

from analyzer.report.json import render_json

if TYPE_CHECKING:
    from analyzer.report.markdown import render_markdown

__all__ = ["render_json", "render_markdown", "render_text"]


def __getattr__(name: str) -> Any:
    if name == "render_text":
        from analyzer.report.text import render_text

        return render_text
    if name == "render_markdown":  # and html's entities: not for the other reports either
        from analyzer.report.markdown import render_markdown

        return render_markdown
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
