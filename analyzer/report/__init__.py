"""Reports of an :class:`~analyzer.api.Analysis`: terminal text, JSON and Markdown."""

from analyzer.report.json import render_json
from analyzer.report.markdown import render_markdown
from analyzer.report.text import render_text

__all__ = ["render_json", "render_markdown", "render_text"]
