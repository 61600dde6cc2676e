"""The simulator's scenarios as written in each export format, made once per test run.

The text is a pure function of (scenario, format, seed), and test_fast_readers, test_fast_yaml,
test_every_shape and test_every_format read the same ones: made once per process
(``functools.cache``) and, under xdist, once per run. The first worker that needs a text
writes it to a folder every worker of the run shares (``share``, from conftest); the others
read it. The YAML writer is PyYAML's pure-Python dumper: about 5 s of CPU for the scenarios,
which each of the four modules paid in each worker.
"""

from __future__ import annotations

import functools
import io
import os
from pathlib import Path

from analyzer.simulate import simulate, write

_shared: Path | None = None


def share(folder: Path) -> None:
    """Keep the texts in ``folder`` too (a folder all workers of this run see)."""
    global _shared
    folder.mkdir(parents=True, exist_ok=True)
    _shared = folder


@functools.cache
def written(scenario: str, fmt: str, seed: int = 1) -> str:
    """``jobdoctor simulate SCENARIO --seed SEED -f FMT``'s text."""
    kept = _shared / f"{scenario}.{fmt}.{seed}" if _shared else None
    if kept and kept.exists():
        return kept.read_bytes().decode("utf-8", "surrogatepass")
    out = io.StringIO()
    write(simulate(scenario, seed=seed), fmt, out, seed=seed)
    text = out.getvalue()
    if kept:
        # Written whole under a name of this process, then renamed: a worker reading it
        # meanwhile finds the whole text or none.
        part = kept.with_name(f"{kept.name}.{os.getpid()}")
        part.write_bytes(text.encode("utf-8", "surrogatepass"))
        part.replace(kept)
    return text
