"""Exit codes decoded (platform.md section 7)."""

from __future__ import annotations

import pytest

from analyzer.timeline.exitcodes import decode


@pytest.mark.parametrize(
    ("code", "given", "signal", "word"),
    [
        (137, None, "SIGKILL", "unproven"),
        (9, "SIGKILL", "SIGKILL", "OOM"),
        (134, None, "SIGABRT", "abort"),
        (6, None, "SIGABRT", "abort"),
        (139, None, "SIGSEGV", "segmentation"),
        (11, None, "SIGSEGV", "segmentation"),
        (135, None, "SIGBUS", "/dev/shm"),
        (143, None, "SIGTERM", "maintenance"),
        (1, None, None, "exception"),
        (127, None, None, "not found"),
        # Python's return code of a process a signal killed (the legacy runner's -9).
        (-9, None, "SIGKILL", "unproven"),
        (-9, "SIGKILL", "SIGKILL", "unproven"),
        (-15, None, "SIGTERM", "maintenance"),
        (-6, None, "SIGABRT", "abort"),
        (-11, None, "SIGSEGV", "segmentation"),
        (-40, None, None, "killed by signal 40"),
    ],
)
def test_decode(code: int, given: str | None, signal: str | None, word: str) -> None:
    decoded = decode(code, given)
    assert decoded.signal == signal
    assert word in decoded.meaning
