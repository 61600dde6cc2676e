"""``gs://`` inputs: a Log Router sink tree (or one object) read where it lives.

``gs://BUCKET/PREFIX/`` lists the objects under the prefix and keeps those a local walk of
the same tree would keep (no hidden names, no folder placeholders), in the same order; with a
time window only the hourly sink files whose hour overlaps it
(``.../YYYY/MM/DD/HH:00:00_HH:59:59_S0.json`` and the late ``..._A0:<unixtime>.json``): the
path says the hour, so nothing outside the window is read, and the listing itself asks the
server for the window's days only (``matchGlob``). ``gs://BUCKET/NAME`` naming an object reads
that object.

Objects are streamed through the real ``google-cloud-storage`` client in ranged reads of
:data:`CHUNK_BYTES`, never whole. The client takes the user's Application Default
Credentials, or ``STORAGE_EMULATOR_HOST`` (anonymous) for an emulator or a test. Needs the
``gcs`` extra; nothing of it is imported before a ``gs://`` path is given. Every failure is
one :class:`~analyzer.core.errors.InputError` line saying what to do.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

from analyzer.core.errors import InputError
from analyzer.ingest.paths import (
    TimeWindow,
    _name_key,
    empty_window_message,
    in_window,
    sink_hour,
)
from analyzer.ingest.records import InputStats, LogRecord
from analyzer.ingest.sniff import SNIFF_LIMIT, Format
from analyzer.ingest.sources import Sniffed, _records, _sniff_stream
from analyzer.ingest.streams import GZIP_MAGIC

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    from google.cloud.storage import Client

SCHEME = "gs://"
EMULATOR_ENV = "STORAGE_EMULATOR_HOST"
# One ranged GET per chunk: large enough that a request's latency is small against its
# transfer, small enough that a worker holds little.
CHUNK_BYTES = 8 << 20
_INSTALL = "reading gs:// paths needs the gcs extra: pip install 'jobdoctor[gcs]'"


@dataclass(frozen=True, slots=True)
class GcsObject:
    """One object found by a listing: its bucket, name and size in bytes."""

    bucket: str
    name: str
    size: int

    @property
    def uri(self) -> str:
        """``gs://bucket/name``: the object's path in reports and evidence."""
        return f"{SCHEME}{self.bucket}/{self.name}"


def split_uri(uri: str) -> tuple[str, str]:
    """``(bucket, name or prefix)`` of ``gs://bucket/rest``; InputError when no bucket."""
    bucket, _, name = uri[len(SCHEME) :].partition("/")
    if not bucket:
        raise InputError(f"{uri}: no bucket, write gs://BUCKET/PREFIX/")
    return bucket, name


def _client() -> Client:
    """This process's client: one per process, since a forked worker must not share the
    parent's connections (and one per emulator address, which a client keeps)."""
    pid = (os.getpid(), os.environ.get(EMULATOR_ENV))
    client = _CLIENTS.get(pid)
    if client is None:
        try:
            from google.cloud import storage
        except ImportError:
            raise InputError(_INSTALL) from None
        try:
            # With STORAGE_EMULATOR_HOST set, the client goes there, anonymously. Reading
            # needs no project: without one named, credentials that carry none still work.
            project = os.environ.get("GOOGLE_CLOUD_PROJECT") or None
            client = _CLIENTS[pid] = storage.Client(project=project)
        except Exception as error:
            raise InputError(_explained(error, SCHEME)) from None
    return client


_CLIENTS: dict[tuple[int, str | None], Client] = {}


def _explained(error: BaseException, uri: str, reading: bool = False) -> str:
    """One line for a failure of the client on ``uri`` (``reading`` an object, else listing),
    saying what to do."""
    from google.api_core import exceptions as api
    from google.auth import exceptions as auth

    where = uri.rstrip("/") or SCHEME
    if isinstance(error, auth.DefaultCredentialsError):
        return (
            f"{where}: no Google Cloud credentials; run `gcloud auth application-default login`"
            " or set GOOGLE_APPLICATION_CREDENTIALS to a service account key"
        )
    if isinstance(error, auth.RefreshError):
        return (
            f"{where}: the credentials were refused ({_first_line(error)}); run"
            " `gcloud auth application-default login` again"
        )
    if isinstance(error, api.Forbidden | api.Unauthorized):
        return (
            f"{where}: permission denied; reading a sink tree needs the Storage Object Viewer"
            " role (roles/storage.objectViewer) on the bucket"
        )
    if isinstance(error, api.NotFound) and reading:
        return f"{where}: no such object (deleted since it was listed?), run again"
    if isinstance(error, api.NotFound):
        bucket = split_uri(uri)[0] if uri != SCHEME else ""
        return f"{where}: no such bucket gs://{bucket}, check the name"
    if isinstance(error, api.GoogleAPICallError):
        return f"{where}: Cloud Storage answered {error.code}: {_first_line(error)}"
    endpoint = os.environ.get(EMULATOR_ENV) or "storage.googleapis.com"
    return (
        f"{where}: cannot reach Cloud Storage at {endpoint} ({type(error).__name__}:"
        f" {_first_line(error)}), check the network or {EMULATOR_ENV}"
    )


def _first_line(error: BaseException) -> str:
    message = getattr(error, "message", None) or str(error)
    return str(message).strip().splitlines()[0] if str(message).strip() else type(error).__name__


@contextlib.contextmanager
def _explaining(uri: str, reading: bool = False) -> Iterator[None]:
    """Client failures on ``uri`` as one InputError line (:func:`_explained`)."""
    try:
        yield
    except InputError:
        raise
    except Exception as error:
        raise InputError(_explained(error, uri, reading)) from None


def _hidden(relative: str) -> bool:
    """A name a local walk skips: a hidden file or one inside a hidden folder, or a folder
    placeholder (an empty object whose name ends in ``/``)."""
    return relative.endswith("/") or any(part.startswith(".") for part in relative.split("/"))


def _order(obj: GcsObject) -> tuple[tuple[str, ...], tuple[str, int, int, int, str]]:
    """The order a local walk of the same tree reads files in (``paths._path_key``)."""
    folder, _, name = obj.name.rpartition("/")
    return (tuple(folder.split("/")) if folder else ("",), _name_key(name))


# Names listed, at most, to say which hours a prefix holds when none is in the window.
_HINT_NAMES = 10_000


def _listed(client: Client, bucket: str, prefix: str, window: TimeWindow | None) -> list[GcsObject]:
    """The objects under ``prefix`` a walk keeps. With a window, the listing asks the server
    for the window's days only (``matchGlob``, one listing per month); the hours are then
    kept here by :func:`in_window`. When none is there, a first part of the plain listing
    says which hours the prefix does hold; a server refusing the glob gets the plain listing.
    """
    from google.api_core.exceptions import BadRequest

    def listing(**options: Any) -> list[GcsObject]:
        return [
            GcsObject(bucket, blob.name, int(blob.size or 0))
            for blob in client.list_blobs(bucket, prefix=prefix or None, **options)
            if not _hidden(blob.name[len(prefix) :])
        ]

    if window is None:
        return listing()
    try:
        found = [obj for glob in _day_globs(window) for obj in listing(match_glob=glob)]
    except BadRequest:
        return listing()
    return found or listing(max_results=_HINT_NAMES)


def _day_globs(window: TimeWindow) -> list[str]:
    """``matchGlob`` patterns for the sink files of the days ``window`` touches, one per month
    (a glob's ``{a,b}`` may not hold a ``/``): ``**/2024/03/{11,12}/*``."""
    from datetime import timedelta

    last = (window.end - timedelta(microseconds=1)).date()
    day = window.start.date()
    months: dict[tuple[int, int], list[str]] = {}
    while day <= last:
        months.setdefault((day.year, day.month), []).append(f"{day.day:02}")
        day += timedelta(days=1)
    globs = []
    for (year, month), days in months.items():
        choice = days[0] if len(days) == 1 else "{" + ",".join(days) + "}"
        globs.append(f"**/{year:04}/{month:02}/{choice}/*")
    return globs


def list_objects(uri: str, window: TimeWindow | None = None) -> list[GcsObject]:
    """The objects ``uri`` names, in a local walk's order: the object itself, or those under
    the prefix (see the module docstring). InputError when there are none, or none in
    ``window``."""
    bucket_name, name = split_uri(uri)
    client = _client()
    with _explaining(uri):
        bucket = client.bucket(bucket_name)
        named = bool(name) and not name.endswith("/")
        if named:
            blob = bucket.get_blob(name)  # None when absent (or when the bucket is)
            if blob is not None:
                return [GcsObject(bucket_name, name, int(blob.size or 0))]
            name += "/"
        found = _listed(client, bucket_name, name, window)
    if not found and named:
        raise InputError(f"{uri}: no such object, and no object under {uri}/; check the path")
    if not found:
        raise InputError(f"{uri}: no object under this prefix, check the path")
    if window is not None:
        kept = [obj for obj in found if in_window(obj.name, window)]
        if not kept:
            raise InputError(empty_window_message(uri, [obj.name for obj in found], window))
        found = kept
    return sorted(found, key=_order)


class _ObjectReader(io.RawIOBase):
    """An object's bytes from ``start`` on, fetched a ranged GET of ``chunk`` bytes at a time;
    failures as InputError. With ``ahead``, the next chunk is fetched by a thread while this
    one is read (the network and the scan overlap; two chunks are held at most). Not seekable:
    readers carry a cut line over instead of seeking back (which would fetch a chunk again)."""

    def __init__(self, uri: str, start: int, chunk: int, ahead: bool) -> None:
        super().__init__()
        bucket, name = split_uri(uri)
        self._uri = uri
        self._chunk = chunk
        self._position = start
        self._held = memoryview(b"")
        self._ended = False
        self._next: Future[bytes] | None = None
        self._fetcher: ThreadPoolExecutor | None = None
        if ahead:
            # Loaded here: concurrent.futures (and logging, threading) is a start-up cost
            # of every run that reads no Cloud Storage object.
            from concurrent.futures import ThreadPoolExecutor

            self._fetcher = ThreadPoolExecutor(1, "jobdoctor-gcs")
        with _explaining(uri):
            self._blob: Any = _client().bucket(bucket).blob(name)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if not self._held and not self._ended:
            self._held = memoryview(self._take())
        count = min(len(buffer), len(self._held))
        buffer[:count] = self._held[:count]
        self._held = self._held[count:]
        return count

    def close(self) -> None:
        if self._fetcher is not None:
            self._fetcher.shutdown(wait=True, cancel_futures=True)
        super().close()

    def _take(self) -> bytes:
        """The next chunk, and the one after it asked for."""
        ahead = self._next
        data = ahead.result() if ahead is not None else self._fetch(self._position)
        self._position += len(data)
        self._ended = len(data) < self._chunk
        self._next = None
        if self._fetcher is not None and not self._ended:
            self._next = self._fetcher.submit(self._fetch, self._position)
        return data

    def _fetch(self, start: int) -> bytes:
        from google.api_core.exceptions import RequestRangeNotSatisfiable

        with _explaining(self._uri, reading=True):
            try:
                # No checksum: the server has one for the whole object only.
                return bytes(
                    self._blob.download_as_bytes(
                        start=start, end=start + self._chunk - 1, checksum=None
                    )
                )
            except RequestRangeNotSatisfiable:
                return b""  # at the end already (the size was a multiple of a chunk)


def open_object(uri: str, start: int = 0, chunk: int | None = None) -> BinaryIO:
    """The object at ``uri`` from byte ``start`` on, as a binary stream read in ranged GETs
    of ``chunk`` bytes (:data:`CHUNK_BYTES`): never whole. Reads of whole chunks fetch the
    next one ahead; smaller ones (a cut's line end, a sniffed head) do not."""
    size = chunk or CHUNK_BYTES
    reader = _ObjectReader(uri, start, size, ahead=size >= CHUNK_BYTES)
    # Line readers get readline from the buffer; the fast scan reads blocks through it.
    return io.BufferedReader(reader, buffer_size=min(size, 1 << 20))


def head_of(uri: str, limit: int = SNIFF_LIMIT) -> bytes:
    """The first ``limit`` bytes of the object at ``uri``."""
    bucket, name = split_uri(uri)
    with _explaining(uri, reading=True):
        blob = _client().bucket(bucket).blob(name)
        return bytes(blob.download_as_bytes(start=0, end=limit - 1, checksum=None))


class GcsSource:
    """One Cloud Storage object, read as a stream like a file on disk.

    An hourly sink file is Cloud Logging JSONL by what writes it (a Log Router sink): its
    format is known from its name, saving a request per object. Any other object (and an
    empty one) is sniffed from its first bytes, as a file is.
    """

    def __init__(self, obj: GcsObject) -> None:
        self.object = obj
        self._stats = InputStats(path=obj.uri)
        self._compressed: bool | None = None
        self.encoding: str | None = None  # UTF-16's codec (sinks write UTF-8)
        if sink_hour(obj.name) is not None and obj.size > 0:
            found = Sniffed(Format.CLOUD_LOGGING_JSONL, False, None, True)
        else:
            # As a file is sniffed (decompressed when gzip), reading no more than it needs.
            with open_object(obj.uri, chunk=SNIFF_LIMIT) as head:
                found = _sniff_stream(head, obj.uri)
            self._compressed = found.compressed
            self.encoding = found.encoding
        found.describe(self._stats)

    @property
    def compressed(self) -> bool:
        """Whether the object holds gzip data (which cannot be entered in the middle): its
        first two bytes, fetched when first asked."""
        if self._compressed is None:
            self._compressed = self.size >= 2 and head_of(self.object.uri, 2) == GZIP_MAGIC
        return self._compressed

    @property
    def stats(self) -> InputStats:
        """How the object was read; complete once :meth:`records` is exhausted."""
        return self._stats

    @property
    def size(self) -> int:
        """The object's size in bytes, from the listing."""
        return self.object.size

    def open_binary(self) -> BinaryIO:
        """The object's bytes (still compressed if it is), streamed."""
        return open_object(self.object.uri)

    def records(self, on_bytes: Callable[[int], None] | None = None) -> Iterator[LogRecord]:
        """The object's records, in object order; ``on_bytes`` is told the object's bytes as
        its reader takes them."""
        return _records(self.open_binary(), self._stats, on_bytes)


def open_gcs(
    uris: Sequence[str], window: TimeWindow | None = None, problems: list[str] | None = None
) -> list[GcsSource]:
    """One source per object the ``gs://`` paths ``uris`` name (see :func:`list_objects`),
    each object once. With a ``problems`` list, a path or object that cannot be read is
    named there in one line and the others are opened (as ``open_sources`` does)."""
    seen: set[str] = set()
    sources: list[GcsSource] = []
    for uri in uris:
        try:
            objects = list_objects(uri, window)
        except InputError as error:
            if problems is None:
                raise
            problems.append(str(error))
            continue
        for obj in objects:
            if obj.uri in seen:
                continue
            seen.add(obj.uri)
            try:
                sources.append(GcsSource(obj))
            except InputError as error:
                if problems is None:
                    raise
                problems.append(str(error))
    return sources
