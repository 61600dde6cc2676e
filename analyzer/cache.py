"""A cache of what every run builds the same way from files that seldom change.

Loading the rule book (YAML, templates compiled by ``regex``) and compiling the Hyperscan
databases take about 35 ms of every run, a tenth of diagnosing a 200 MB export on two cores;
reading the built-in policy and advice files needs PyYAML, another 15 ms. All are kept as
pickles under ``$XDG_CACHE_HOME/jobdoctor`` (``~/.cache/jobdoctor``), named after a hash of
everything they were built from; a changed rule file, another version of jobdoctor, Python or
``regex`` makes another name, and the old file is just not read again.

``JOBDOCTOR_CACHE_DIR`` names another directory; ``off`` (or empty) turns the cache off. A
cache that cannot be read or written (a read-only home, a damaged file) is not an error: the
work is done again. Only this user's cache directory is read (created ``0700``): a pickle is
code, and nothing from anywhere else is unpickled.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

try:  # built into CPython: hashlib would load OpenSSL first (3 ms of every run)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - another Python
    from hashlib import blake2b

CACHE_ENV = "JOBDOCTOR_CACHE_DIR"
# Bumped when what is cached changes shape in a way the sources hashed below would not show.
_FORMAT = b"jobdoctor-cache-1"
# Files kept per kind: the newest, so that a few rule setups in turn all stay cached and the
# files of old versions go.
_KEEP = 8

T = TypeVar("T")


def cache_dir() -> Path | None:
    """The cache directory, or None when the cache is off."""
    chosen = os.environ.get(CACHE_ENV)
    if chosen is not None:
        return None if chosen in ("", "off") else Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jobdoctor"


def key(*parts: bytes | str | Iterable[Path]) -> str:
    """A cache key of ``parts``: strings, bytes, or files (their paths and contents)."""
    digest = blake2b(_FORMAT, digest_size=32)
    digest.update(sys.version.encode())
    for part in parts:
        if isinstance(part, bytes | str):
            value = part.encode() if isinstance(part, str) else part
            digest.update(len(value).to_bytes(8, "little") + value)
            continue
        for path in part:
            name = str(path).encode()
            try:
                content = path.read_bytes()
            except OSError:  # gone, or unreadable: whoever reads it reports that
                content = b"\xff unreadable"
            digest.update(len(name).to_bytes(8, "little") + name)
            digest.update(len(content).to_bytes(8, "little") + content)
    return digest.hexdigest()


def load(kind: str, name: str) -> object | None:
    """What :func:`store` kept under ``kind`` and ``name``, or None."""
    directory = cache_dir()
    if directory is None:
        return None
    try:
        # Only a directory of this user's that nobody else may write to (where there are
        # POSIX owners and modes).
        status = directory.stat()
        getuid = getattr(os, "getuid", None)
        if getuid is not None and (status.st_uid != getuid() or status.st_mode & 0o022):
            return None
        data = (directory / f"{kind}-{name}.pickle").read_bytes()
    except OSError:
        return None
    try:
        value: object = pickle.loads(data)
    except Exception:  # damaged, or written by code that has changed since: build it again
        return None
    return value


def store(kind: str, name: str, value: object) -> None:
    """Keep ``value`` under ``kind`` and ``name``; quietly nothing when that cannot be done."""
    directory = cache_dir()
    if directory is None:
        return
    try:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # something in it cannot be pickled: not worth failing a run over
        return
    import tempfile

    temporary = None
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{kind}-", suffix=".tmp")
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        # Atomic: a run reading at the same time sees the old file or the whole new one.
        os.replace(temporary, directory / f"{kind}-{name}.pickle")
        temporary = None
        _prune(directory, kind)
    except OSError:
        pass
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def remembered(kind: str, files: Iterable[Path], build: Callable[[], T], expected: type[T]) -> T:
    """What ``build()`` returns, kept under ``kind`` and a key of ``files`` (paths and
    contents: the data read and the code that reads it) and jobdoctor's version: the kept
    value when it is an ``expected``, else built now (and kept). What ``build`` raises is
    raised, and nothing is kept."""
    from analyzer import __version__

    name = key(__version__, files)
    found = load(kind, name)
    if isinstance(found, expected):
        return found
    value = build()
    store(kind, name, value)
    return value


def _prune(directory: Path, kind: str) -> None:
    """Remove all but the newest :data:`_KEEP` files of ``kind``."""
    files = sorted(
        directory.glob(f"{kind}-*.pickle"), key=lambda path: path.stat().st_mtime, reverse=True
    )
    for path in files[_KEEP:]:
        with contextlib.suppress(OSError):
            path.unlink()


def dump_hyperscan(database: Any) -> bytes:
    """A Hyperscan ``database`` as bytes, to cache."""
    import hyperscan

    return bytes(hyperscan.dumpb(database))


def load_hyperscan(data: bytes) -> Any:
    """The Hyperscan database :func:`dump_hyperscan` made ``data`` of, ready to scan.

    Raises ``hyperscan.error`` when ``data`` is not a database this Hyperscan can run.
    """
    import hyperscan

    database = hyperscan.loadb(data, hyperscan.HS_MODE_BLOCK)
    database.scratch = hyperscan.Scratch(database)
    return database
