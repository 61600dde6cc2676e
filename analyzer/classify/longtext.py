"""Long texts of kept events on disk, read back when asked for: flat memory whatever their size.

A job's events are kept to the end of a run (its timeline, its diagnosis), and a 50 KB
traceback weighs as much as 500 other events: 2,000 of them in a 1 GB export are 100 MB. The
process that reads keeps each long text (over :data:`LONG_TEXT` characters) once in an unlinked
temporary file, and its event (:class:`StoredTextEvent`, an :class:`~analyzer.rulebook.events.Event`
in every other way) reads it back each time its ``text`` is asked for; the last few texts
read stay in memory, since the stages ask for one event's text several times in a row.
Equal texts are written once (every worker and attempt logs the same traceback again).

Each run has a store of its own (:func:`new_run`, from every new collector): a notebook that
diagnoses again and again does not keep every earlier run's texts. A store's events hold it,
so the texts of an earlier run's diagnoses still read, and its file is closed (and its disk
space freed) once the last of them is gone.
"""

from __future__ import annotations

import os
import tempfile
import threading
import weakref
from typing import Any

from analyzer.rulebook.events import Event

# Texts longer than this (characters) are kept on disk: a tenth of what hashing, writing and
# reading them back costs is what matching them costs anyway.
LONG_TEXT = 2048
# Texts read back that stay in memory.
_RECENT = 4

_TEXT_SLOT: Any = Event.__dict__["text"]  # the dataclass's own slot, under the property


class _Store:
    """An unlinked file of UTF-8 texts (lone surrogates passed through), of this process."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        # A bare descriptor of an unlinked file, as long as the process: no file object to
        # warn "unclosed" when the interpreter ends, and nothing left on disk however it ends.
        self.fd, path = tempfile.mkstemp(prefix=f"jobdoctor-texts-{self.pid}-")
        os.unlink(path)
        # Closed when the store is gone (the last event that holds it): its disk space then.
        self._closer = weakref.finalize(self, os.close, self.fd)
        self._closer.atexit = False
        self.size = 0
        # By length and hash, where an equal text may already be.
        self.known: dict[tuple[int, int], tuple[int, int]] = {}
        self.recent: dict[tuple[int, int], str] = {}
        # A notebook may diagnose in several threads at once.
        self.lock = threading.Lock()

    def keep(self, text: str) -> tuple[int, int]:
        with self.lock:
            return self._keep(text)

    def _keep(self, text: str) -> tuple[int, int]:
        key = (len(text), hash(text))
        where = self.known.get(key)
        if where is not None and self._read(where) == text:
            return where
        data = text.encode("utf-8", "surrogatepass")
        os.pwrite(self.fd, data, self.size)
        where = (self.size, len(data))
        self.size += len(data)
        self.known[key] = where
        return where

    def read(self, where: tuple[int, int]) -> str:
        with self.lock:
            return self._read(where)

    def _read(self, where: tuple[int, int]) -> str:
        text = self.recent.get(where)
        if text is None:
            start, length = where
            text = os.pread(self.fd, length, start).decode("utf-8", "surrogatepass")
            if len(self.recent) >= _RECENT:
                del self.recent[next(iter(self.recent))]
            self.recent[where] = text
        return text


# The store of this run (made on first use); empty before that and after new_run.
_stores: list[_Store] = []


def new_run() -> None:
    """Keep the next long texts in a new store: those of earlier runs stay with their events
    (and go with them), not with this process."""
    _stores.clear()


def _store() -> _Store | None:
    """This run's store (made on first use), or None when no file can be made."""
    if _stores and _stores[0].pid == os.getpid():
        return _stores[0]
    try:
        store = _Store()
    except OSError:
        return None
    _stores[:] = [store]  # a forked child's own: the parent's file offsets are not its own
    return store


class StoredTextEvent(Event):
    """An :class:`~analyzer.rulebook.events.Event` whose text waits on disk (see the module
    docstring); equal to the event of the same fields. Copies (``dataclasses.replace``,
    pickling) hold their text in memory again."""

    __slots__ = ("_home", "_where")
    _home: _Store  # the run's store its text is in

    @property
    def text(self) -> str:
        where = getattr(self, "_where", None)
        if where is None:
            return str(_TEXT_SLOT.__get__(self, Event))
        return self._home.read(where)

    @text.setter
    def text(self, value: str) -> None:
        _TEXT_SLOT.__set__(self, value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Event):
            return NotImplemented
        return _fields(self) == _fields(other)

    def __hash__(self) -> int:
        return hash(_fields(self))


def _fields(event: Event) -> tuple[object, ...]:
    return (
        event.timestamp,
        event.job_id,
        event.task,
        event.match,
        event.text,
        event.origin,
        event.vm,
        event.insert_id,
        event.trial,
    )


def stored(event: Event) -> Event:
    """``event`` with its text on disk when it is long and this process can keep it there
    (the process that reads: its events are kept to the end); else ``event``."""
    text = event.text
    if len(text) <= LONG_TEXT or type(event) is not Event:
        return event
    store = _store()
    if store is None:
        return event
    where = store.keep(text)
    kept = StoredTextEvent.__new__(StoredTextEvent)
    for name in ("timestamp", "job_id", "task", "match", "origin", "vm", "insert_id", "trial"):
        Event.__dict__[name].__set__(kept, getattr(event, name))
    _TEXT_SLOT.__set__(kept, "")
    object.__setattr__(kept, "_where", where)
    object.__setattr__(kept, "_home", store)
    return kept
