"""A cache of what every run builds the same way from files that seldom change.

Loading the rule book (YAML, templates compiled by ``regex``) and compiling the Hyperscan
databases take about 35 ms of every run, a tenth of diagnosing a 200 MB export on two cores;
reading the built-in policy and advice files needs PyYAML, another 15 ms. All are kept as
pickles under ``$XDG_CACHE_HOME/jobdoctor`` (``~/.cache/jobdoctor``), named after a hash of
everything they were built from; a changed rule file, another version of jobdoctor, Python or
``regex`` makes another name, and the old file is just not read again.

``JOBDOCTOR_CACHE_DIR`` names another directory; ``off`` (or empty) turns the cache off. A
cache that cannot be read or written (a read-only home, a damaged file) is not an error: the
work is done again.

A pickle can name any function to call, so what is read is guarded three ways:

- only this user's own files: the directory is opened without following a link
  (``O_NOFOLLOW``), its owner and mode are checked on the opened descriptor, and each file is
  opened inside it (``dir_fd``, ``O_NOFOLLOW``) and checked the same way, so a directory
  swapped for a link, or a file of another user's put inside, is never read;
- each file carries a checksum of its content, and one that does not match (a damaged or
  cut file that would still unpickle) is built again;
- unpickling may only call the constructors and functions the cached values are made of
  (:data:`_ALLOWED`, and jobdoctor's own enums and dataclasses, whose construction only
  stores values): a file that names anything else is not loaded. Storing something other
  than pickle (JSON, then compiling every pattern again) would give up what the cache is for:
  the compiled patterns and Hyperscan databases.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import stat
import sys
from collections.abc import Callable, Iterable
from dataclasses import is_dataclass
from enum import Enum
from pathlib import Path
from typing import Any, TypeVar

try:  # built into CPython: hashlib would load OpenSSL first (3 ms of every run)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - another Python
    from hashlib import blake2b

CACHE_ENV = "JOBDOCTOR_CACHE_DIR"
# Bumped when what is cached changes shape in a way the sources hashed below would not show.
_FORMAT = b"jobdoctor-cache-2"
# What every cache file begins with, then the checksum of the rest (the pickle).
_MAGIC = b"jobdoctor-cache-2\n"
_DIGEST_SIZE = 32
# The largest file read: the rule book is ~100 KB; a larger file is not one of ours.
_MAX_BYTES = 16 << 20
# Files kept per kind: the newest, so that a few rule setups in turn all stay cached and the
# files of old versions go.
_KEEP = 8
_SUFFIX = ".pickle"

# The globals a cache file may name besides jobdoctor's enums and dataclasses: what the cached
# values (rule book, prefilter, policy, advice, guard) are built of.
_ALLOWED = frozenset(
    {
        ("analyzer.verdict.policy", "_unpickled_policy"),
        ("analyzer.rulebook.prefilter", "Prefilter"),
        ("builtins", "frozenset"),
        ("builtins", "set"),
        ("collections", "Counter"),
        ("collections", "OrderedDict"),
        ("re", "_compile"),
        ("regex._regex", "compile"),
    }
)

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO put in its place is not waited on
# Where a file cannot be opened inside a directory's descriptor without following a link
# (Windows), nothing is read from the cache or written to it: the work is done every run.
_GUARDED = os.open in os.supports_dir_fd and _NOFOLLOW != 0

T = TypeVar("T")


class _Unpickler(pickle.Unpickler):
    """Unpickles only what :data:`_ALLOWED` names."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        # Only from a module already imported: naming one imports nothing new.
        if module.startswith("analyzer.") and module in sys.modules:
            found = super().find_class(module, name)
            if isinstance(found, type) and (issubclass(found, Enum) or is_dataclass(found)):
                return found
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in the cache")


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
                content = _key_bytes(path)
            except OSError:  # gone, or unreadable: whoever reads it reports that
                content = b"\xff unreadable"
            digest.update(len(name).to_bytes(8, "little") + name)
            digest.update(len(content).to_bytes(8, "little") + content)
    return digest.hexdigest()


def _key_bytes(path: Path) -> bytes:
    """What of ``path`` a key covers: a regular file's bytes (up to the largest file a cache
    holds); a FIFO or a device in a rules folder is not waited on or read without end."""
    handle = os.open(path, os.O_RDONLY | _NONBLOCK | _CLOEXEC)
    with os.fdopen(handle, "rb") as stream:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            return b"\xff not a regular file"
        return stream.read(_MAX_BYTES + 1)


def _mine(status: os.stat_result) -> bool:
    """Whether ``status`` is of this user's and nobody else may write to it (where there are
    POSIX owners and modes)."""
    getuid = getattr(os, "getuid", None)
    return getuid is None or (status.st_uid == getuid() and not status.st_mode & 0o022)


def _open_directory(directory: Path) -> int:
    """A descriptor of ``directory`` when it is this user's own (not a link); OSError else."""
    handle = os.open(directory, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
    status = os.fstat(handle)
    if not stat.S_ISDIR(status.st_mode) or not _mine(status):
        os.close(handle)
        raise PermissionError(f"{directory}: not this user's own cache directory")
    return handle


def _read_file(directory: int, name: str) -> bytes:
    """The bytes of ``name`` in ``directory`` when it is this user's own regular file."""
    handle = os.open(name, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK, dir_fd=directory)
    with os.fdopen(handle, "rb") as stream:
        status = os.fstat(stream.fileno())
        if not stat.S_ISREG(status.st_mode) or not _mine(status):
            raise PermissionError(f"{name}: not this user's own cache file")
        if status.st_size > _MAX_BYTES:
            raise PermissionError(f"{name}: too large for a cache file")
        return stream.read(_MAX_BYTES + 1)


def _sealed(data: bytes) -> bytes:
    return _MAGIC + blake2b(data, digest_size=_DIGEST_SIZE).digest() + data


def _unsealed(content: bytes) -> bytes | None:
    """The pickle inside ``content``, or None when the checksum does not match."""
    if not content.startswith(_MAGIC):
        return None
    start = len(_MAGIC) + _DIGEST_SIZE
    digest, data = content[len(_MAGIC) : start], content[start:]
    if blake2b(data, digest_size=_DIGEST_SIZE).digest() != digest:
        return None
    return data


def load(kind: str, name: str) -> object | None:
    """What :func:`store` kept under ``kind`` and ``name``, or None."""
    directory = cache_dir()
    if directory is None or not _GUARDED:
        return None
    try:
        handle = _open_directory(directory)
    except OSError:
        return None
    try:
        content = _read_file(handle, f"{kind}-{name}{_SUFFIX}")
    except OSError:
        return None
    finally:
        os.close(handle)
    data = _unsealed(content)
    if data is None:  # damaged: build it again (and the new file replaces this one)
        return None
    try:
        value: object = _Unpickler(io.BytesIO(data)).load()
    except Exception:  # names what is not allowed, or written by code that has changed
        return None
    return value


def store(kind: str, name: str, value: object) -> None:
    """Keep ``value`` under ``kind`` and ``name``; quietly nothing when that cannot be done."""
    directory = cache_dir()
    if directory is None or not _GUARDED:
        return
    try:
        data = _sealed(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:  # something in it cannot be pickled: not worth failing a run over
        return
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle = _open_directory(directory)
    except OSError:
        return
    temporary = f".{kind}-{os.getpid()}-{os.urandom(6).hex()}.tmp"
    written = False
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
        with os.fdopen(os.open(temporary, flags, 0o600, dir_fd=handle), "wb") as out:
            written = True
            out.write(data)
        # Atomic: a run reading at the same time sees the old file or the whole new one.
        os.replace(temporary, f"{kind}-{name}{_SUFFIX}", src_dir_fd=handle, dst_dir_fd=handle)
        written = False
        _prune(handle, kind)
    except OSError:
        pass
    finally:
        if written:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=handle)
        os.close(handle)


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


def _prune(directory: int, kind: str) -> None:
    """Remove all but the newest :data:`_KEEP` files of ``kind`` in ``directory``."""
    dated: list[tuple[float, str]] = []
    for entry in os.scandir(directory):
        if entry.name.startswith(f"{kind}-") and entry.name.endswith(_SUFFIX):
            with contextlib.suppress(OSError):
                dated.append((entry.stat(follow_symlinks=False).st_mtime, entry.name))
    for _, name in sorted(dated, reverse=True)[_KEEP:]:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=directory)


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
