"""Run the command line in a real pseudo-terminal of a given width, as a user's terminal."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


@dataclass(frozen=True, slots=True)
class TerminalRun:
    code: int
    raw: str  # what the terminal received, escapes included
    stderr: str

    @property
    def text(self) -> str:
        """What the terminal shows: escapes removed, line ends as ``\\n``."""
        return _ESCAPE.sub("", self.raw).replace("\r\n", "\n")


def run_in_terminal(
    args: Sequence[str],
    width: int = 80,
    env: dict[str, str] | None = None,
    cwd: Path = ROOT,
    *,
    stdin: Path | None = None,
    stderr_on_terminal: bool = False,
) -> TerminalRun:
    """``python -m analyzer.cli ARGS`` with stdout (and, if asked, stderr) on a pty ``width``
    columns wide; ``stdin`` a file to read from (else nothing)."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, width, 0, 0))
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    environ.update(env or {})
    command = [sys.executable, "-m", "analyzer.cli", *args]
    source = stdin.open("rb") if stdin is not None else subprocess.DEVNULL
    err_to = follower if stderr_on_terminal else subprocess.PIPE
    with subprocess.Popen(
        command, stdin=source, stdout=follower, stderr=err_to, env=environ, cwd=cwd
    ) as proc:
        os.close(follower)
        if stdin is not None:
            source.close()  # type: ignore[union-attr]
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the other side closed
                break
            if not chunk:
                break
            chunks.append(chunk)
        err = proc.stderr.read().decode() if proc.stderr is not None else ""
        proc.wait(timeout=60)
    os.close(leader)
    return TerminalRun(proc.returncode, b"".join(chunks).decode(), err)
