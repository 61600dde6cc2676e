"""Run the command line in a real pseudo-terminal of a given width, as a user's terminal."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    feed: Sequence[tuple[bytes, float]] = (),
    stderr_on_terminal: bool = False,
    stdout_file: Path | None = None,
    module: str = "analyzer.cli",
) -> TerminalRun:
    """``python -m analyzer.cli ARGS`` with stdout (and, if asked, stderr) on a pty ``width``
    columns wide; ``stdin`` a file to read from, or ``feed``: chunks written to a pipe, each
    followed by a pause in seconds (a slow writer); else nothing. ``stdout_file``: stdout goes
    there instead (a redirection), stderr staying on the terminal. ``module``: another entry
    point to the command line (one the test has set up)."""
    import fcntl
    import pty
    import struct
    import termios
    import threading

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, width, 0, 0))
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    environ.update(env or {})
    command = [sys.executable, "-m", module, *args]
    source: Any = stdin.open("rb") if stdin is not None else subprocess.DEVNULL
    if feed:
        source = subprocess.PIPE
    err_to = follower if stderr_on_terminal or stdout_file is not None else subprocess.PIPE
    out_to: Any = stdout_file.open("wb") if stdout_file is not None else follower
    with subprocess.Popen(
        command, stdin=source, stdout=out_to, stderr=err_to, env=environ, cwd=cwd
    ) as proc:
        if stdout_file is not None:
            out_to.close()
        os.close(follower)
        if stdin is not None:
            source.close()
        writer = None
        if feed:
            assert proc.stdin is not None
            pipe = proc.stdin

            def write() -> None:
                for chunk, pause in feed:
                    pipe.write(chunk)
                    pipe.flush()
                    time.sleep(pause)
                pipe.close()

            writer = threading.Thread(target=write, daemon=True)
            writer.start()
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
        if writer is not None:
            writer.join(timeout=60)
        proc.wait(timeout=60)
    os.close(leader)
    return TerminalRun(proc.returncode, b"".join(chunks).decode(), err)
