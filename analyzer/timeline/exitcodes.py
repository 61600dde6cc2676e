"""Exit codes decoded: the signal behind ``128+n``, legacy ``9(SIGKILL)`` and Python's ``-9``,
and what each means.

platform.md section 7: ``128+n`` is death by signal ``n``; prebuilt containers report the raw
signal number (6, 11) where custom containers report 134, 139; legacy logs print ``9(SIGKILL)``.
Whether the platform retries an exit is the policy's business (``RetryPolicy.is_transient``).
"""

from __future__ import annotations

from dataclasses import dataclass

# Signals the platform's documents and real logs mention, with what they mean for a training job.
_SIGNAL_MEANINGS = {
    "SIGABRT": "aborted (SIGABRT): a native library called abort(), often a failed CUDA or "
    "NCCL check",
    "SIGBUS": "bus error (SIGBUS): usually /dev/shm (shared memory) exhausted by data-loader "
    "workers",
    "SIGKILL": "killed (SIGKILL): the kernel's OOM killer or any hard kill; OOM likely but "
    "unproven without a memory message",
    "SIGSEGV": "segmentation fault (SIGSEGV): a crash in native code",
    "SIGTERM": "terminated (SIGTERM): VM maintenance, preemption, cancellation or teardown",
    "SIGINT": "interrupted (SIGINT)",
    "SIGILL": "illegal instruction (SIGILL): a binary built for another CPU",
    "SIGFPE": "arithmetic fault (SIGFPE) in native code",
}
_PLAIN_MEANINGS = {
    0: "success",
    1: "an uncaught Python exception (or a generic error)",
    2: "a usage error: wrong command-line arguments",
    126: "the command is not executable",
    127: "command not found: a missing program or wrong entry point",
}
# Raw signal numbers that prebuilt containers and legacy logs report as the exit code.
_RAW_SIGNALS = frozenset({6, 9, 11})


@dataclass(frozen=True, slots=True)
class ExitCode:
    """One exit code and what it says: ``signal`` is ``SIGKILL`` etc. when a signal ended it."""

    code: int
    signal: str | None
    meaning: str


# Linux signal numbers (containers run Linux whatever the host that reads the logs).
_LINUX_SIGNALS = {
    1: "SIGHUP",
    2: "SIGINT",
    3: "SIGQUIT",
    4: "SIGILL",
    6: "SIGABRT",
    7: "SIGBUS",
    8: "SIGFPE",
    9: "SIGKILL",
    11: "SIGSEGV",
    13: "SIGPIPE",
    14: "SIGALRM",
    15: "SIGTERM",
}


def _signal_name(number: int) -> str | None:
    return _LINUX_SIGNALS.get(number)


def decode(code: int, signal: str | None = None) -> ExitCode:
    """Decode ``code``; ``signal`` is a name already given by the log (``9(SIGKILL)``).

    A negative code is Python's return code of a process a signal killed (``-9``: SIGKILL),
    as the legacy runner's ``returned non-zero exit status -9`` prints it.
    """
    name = signal
    if name is None and code < 0:
        name = _signal_name(-code)
        if name is None:
            return ExitCode(code, None, f"killed by signal {-code}")
    elif name is None and code > 128:
        name = _signal_name(code - 128)
    elif name is None and code in _RAW_SIGNALS:
        name = _signal_name(code)
    if name is not None:
        meaning = _SIGNAL_MEANINGS.get(name, f"killed by signal {name}")
        return ExitCode(code, name, meaning)
    return ExitCode(code, None, _PLAIN_MEANINGS.get(code, f"exit status {code} set by the program"))
