"""The exception behind a user-code failure: a Python traceback's final exception and frames.

Tracebacks arrive two ways: as one log entry per line from the worker (rules turn the header,
each frame and the exception line into events, and :func:`exception_from_events` puts them
back together), or whole inside one text (a ``logger.exception`` record, or the traceback tail
the service copies into its replica-exit error), parsed by :func:`parse_text`. That tail comes
as real lines, as escaped ``\n`` inside a quoted message (the SDK's ``message: "..."``, a JSON
body), or flattened onto one line by the console or a paste (platform.md sections 3 and 9).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from analyzer.ingest.records import Origin
from analyzer.rulebook.events import Event, EventKind

_HEADER = "Traceback (most recent call last)"
HEADER = _HEADER
# One frame, and the name of the exception that ends a traceback: the same on a line of their
# own and inside a traceback flattened onto one line.
_FRAME_TEXT = r'File "([^"]+)", line (\d+), in (\S+)'
_EXCEPTION_NAME = (
    r"([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Failure)"
    r"|[a-z_][a-z0-9_.]*\.exceptions\.[A-Z]\w*)"
)
_FRAME = re.compile(r"^\s*(?:\[rank\d+\]:\s*)?" + _FRAME_TEXT + r"\s*$")
_EXCEPTION = re.compile(r"^\s*(?:\[rank\d+\]:\s*)?" + _EXCEPTION_NAME + r"(?::\s?(.*?))?\s*$")
# Where installed libraries and the interpreter live: not the user's own code.
_LIBRARY = re.compile(r"/(?:site|dist)-packages/|/lib/python\d[\d.]*/|^<frozen |/bin/")
_PACKAGE = re.compile(r"/(?:site|dist)-packages/([^/]+)/")


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame of a traceback."""

    file: str
    line: int
    function: str

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "function": self.function}


@dataclass(frozen=True, slots=True)
class ExceptionInfo:
    """The exception that ended a process: type, message, and the deepest frame of user code.

    ``origin`` is the line that shows the exception (evidence); ``frames`` are its frames,
    outermost first: all of them, or of a traceback longer than :data:`HEAD_FRAMES` and
    :data:`TAIL_FRAMES` what :class:`KeptFrames` keeps, ``frames_not_kept`` the others.
    """

    type: str
    message: str
    frame: Frame | None
    frames: tuple[Frame, ...] = ()
    origin: Origin | None = None
    frames_not_kept: int = 0

    def to_dict(self) -> dict[str, Any]:
        """``cause.exception`` of the JSON contract."""
        return {
            "type": self.type,
            "message": self.message,
            "frame": self.frame.to_dict() if self.frame else None,
        }


def user_frame(frames: Sequence[Frame], top_cut: bool = False) -> Frame | None:
    """The deepest frame in the user's own code.

    Library frames live under site-packages, dist-packages or the interpreter's lib directory;
    but prebuilt containers pip-install the user's package into site-packages too, so the
    package of the entry point (the first frame outside the interpreter's own modules) counts
    as the user's. Falls back to the deepest frame when none looks like user code.

    ``top_cut``: the traceback's first frames are not in the text (the service's ``[...]``, a
    message cut at its top), so the first visible frame is no entry point: often a framework
    that called the user's code (pytorch_lightning's trainer), which called a library that
    raised (zarr). A package between the first visible frame's and the deepest frame's is
    then the user's (tests/real/gh-pathograph-dl-latest-vertex-failure-V).
    """
    if not frames:
        return None
    if top_cut:
        packages = [m.group(1) if (m := _PACKAGE.search(f.file)) else None for f in frames]
        ends = {packages[0], packages[-1]}
        between = [
            frame
            for frame, package in zip(frames, packages, strict=True)
            if package is not None and package not in ends
        ]
        if between:
            return between[-1]
    own: set[str] = set()
    for frame in frames:
        if re.search(r"/lib/python\d[\d.]*/[^/]+$|^<frozen ", frame.file):
            continue  # runpy and friends
        package = _PACKAGE.search(frame.file)
        if package:
            own.add(package.group(1))
        break
    for frame in reversed(frames):
        package = _PACKAGE.search(frame.file)
        if (package and package.group(1) in own) or not _LIBRARY.search(frame.file):
            return frame
    return frames[-1]


_RUNPY = re.compile(r"/lib/python\d[\d.]*/[^/]+$|^<frozen ")


def _package(file: str) -> str | None:
    found = _PACKAGE.search(file)
    return found.group(1) if found else None


# A traceback of a million frames (a runaway recursion pasted whole, issue 31.8) is kept in
# part: its first and last frames, the user's last few in between and the last frame of the
# few packages seen last (what user_frame chooses from), a count of the rest. A recursion
# Python prints itself is at most its limit, 1000 frames, its repeats folded ("[Previous
# line repeated 996 more times]"): nothing is dropped of it.
HEAD_FRAMES = 1000
TAIL_FRAMES = 200
USER_FRAMES = 50
# The last frame of this many packages (user_frame's top_cut choice: the deepest frame of a
# package other than the first frame's and the last one's, which is the latest frame of one
# of the three packages seen last).
_LAST_PACKAGES = 4

T = TypeVar("T")


class KeptFrames(Generic[T]):
    """The frames of one traceback, of any length, in bounded memory: each added with its
    file; the first :data:`HEAD_FRAMES` are the caller's at once (:meth:`add` says so), the
    others wait here until :meth:`rest`.

    Of those, kept: the last :data:`TAIL_FRAMES`, the last :data:`USER_FRAMES` of the user's
    code (as :func:`user_frame` tells it: the entry point's package, or no library's), the
    first frame outside the interpreter's own modules when the head had none, and the last
    frame of each of the packages seen last; so :func:`user_frame` of what is kept chooses
    the frame it would choose of them all."""

    __slots__ = ("_first", "_last_of", "_own", "_tail", "_user", "count")

    def __init__(self) -> None:
        self.count = 0
        self._own: set[str] | None = None  # the entry point's package (None: not seen yet)
        self._first: tuple[int, T] | None = None  # the entry point's frame, past the head
        self._tail: deque[tuple[int, T, str]] = deque()
        self._user: deque[tuple[int, T]] = deque(maxlen=USER_FRAMES)
        self._last_of: dict[str, tuple[int, T]] = {}

    def add(self, item: T, file: str) -> bool:
        """Take the next frame: True when it is one of the head's (the caller keeps it)."""
        at = self.count
        self.count += 1
        if self._own is None and not _RUNPY.search(file):
            package = _package(file)
            self._own = {package} if package else set()
            if at >= HEAD_FRAMES:
                self._first = (at, item)
        if at < HEAD_FRAMES:
            return True
        tail = self._tail
        tail.append((at, item, file))
        if len(tail) > TAIL_FRAMES:
            self._middle(*tail.popleft())
        return False

    def _middle(self, at: int, item: T, file: str) -> None:
        package = _package(file)
        if (package and package in (self._own or ())) or not _LIBRARY.search(file):
            self._user.append((at, item))
        if package:
            last_of = self._last_of
            last_of.pop(package, None)
            last_of[package] = (at, item)
            if len(last_of) > _LAST_PACKAGES:
                del last_of[next(iter(last_of))]

    def rest(self) -> tuple[list[T], int]:
        """The frames kept after the head, in order, and how many were not kept."""
        middle = dict(self._user)
        middle.update(self._last_of.values())
        tail = self._tail
        if self._first is not None and (not tail or self._first[0] < tail[0][0]):
            middle.setdefault(*self._first)
        kept = [middle[at] for at in sorted(middle)] + [item for _, item, _ in tail]
        return kept, self.count - min(self.count, HEAD_FRAMES) - len(kept)


def kept_frames(frames: Iterable[Frame]) -> tuple[list[Frame], int]:
    """``frames`` as :class:`KeptFrames` keeps them, and how many it did not keep."""
    keeper: KeptFrames[Frame] = KeptFrames()
    head = [frame for frame in frames if keeper.add(frame, frame.file)]
    rest, dropped = keeper.rest()
    return head + rest, dropped


# The field of a frame event the reading stage kept after frames it did not keep
# (analyzer.classify.eventstore): how many.
NOT_KEPT = "frames_not_kept"


# The service's own mark where it cut a traceback's top out of its message.
_ELIDED = "[...]"


# Inside a quoted message (the SDK's `message: "..."`, a JSON body) line breaks and quotes
# are escaped.
_ESCAPED_BREAK = re.compile(r"(?:\\r)?\\n")
_ESCAPED_QUOTE = re.compile(r'\\(["\'])')
# A frame in a traceback flattened onto one line: `File "x", line 3, in fn` then its source.
_INLINE_FRAME = re.compile(_FRAME_TEXT)
# The exception that ends a flattened traceback: the last `Name(Error|...): message` after the
# last frame. Its message runs to the service's own sentence that follows the tail.
_INLINE_EXCEPTION = re.compile(r"(?<![\w.])" + _EXCEPTION_NAME + r"(?::[ \t]?([^\n]*))?")
# Where an exception message copied into a service error ends: the service's own next
# sentence (the console link, the next replica's exit), or the closing quote of the message.
_TAIL_END = re.compile(
    r"\s*(?:To find out more about why your job exited|The replica \S+(?: \d+)? exited"
    r"|\"\s*$|\"\s*[,}]).*$",
    re.DOTALL,
)


# A long text's traceback is asked for again and again (by rootcause and predict, for each
# worker and attempt that logged the same one): the last few answers are remembered, by text
# (few: each holds its frames, 100 KB for a deep recursion).
_REMEMBERED_TEXT = 2048
_REMEMBERED = 8
_answers: dict[str, ExceptionInfo | None] = {}


def parse_text(text: str, origin: Origin | None = None) -> ExceptionInfo | None:
    """The last complete traceback in ``text``, in whatever form the tail came: real lines,
    escaped ``\\n`` or flattened onto one line (None when it holds no complete one)."""
    if len(text) <= _REMEMBERED_TEXT:
        return _parse_text(text, origin)
    if text in _answers:
        found = _answers[text]
    else:
        found = _answers[text] = _parse_text(text, None)
        if len(_answers) > _REMEMBERED:
            del _answers[next(iter(_answers))]
    return found if found is None or origin is None else replace(found, origin=origin)


# The service's own sentence after the traceback tail it copies into a replica-exit message.
SERVICE_TAIL_END = "To find out more about why your job exited"


def parse_service_message(text: str, origin: Origin | None = None) -> ExceptionInfo | None:
    """The exception of the traceback tail the service copied into its replica-exit message.

    :func:`parse_text` when the tail keeps its header. A message whose top was cut (a paste
    without the first lines, platform.md section 9) may keep only the tail's end: frames or
    source lines, then the exception line, then the service's own "To find out more about
    why your job exited ..." sentence. The exception line must be the tail's last line
    before that sentence (None otherwise: nothing is guessed from a line elsewhere).
    """
    found = parse_text(text, origin)
    if found is not None or _HEADER in text:
        return found
    if "\\n" in text:
        text = _ESCAPED_QUOTE.sub(r"\1", _ESCAPED_BREAK.sub("\n", text))
    end = text.find(SERVICE_TAIL_END)
    if end < 0:
        return None
    lines = [line for line in text[:end].splitlines() if line.strip()]
    if len(lines) < 2:
        return None  # an exception line alone is no traceback's tail
    last = _EXCEPTION.match(lines[-1])
    if last is None:
        return None
    frames = [
        Frame(m.group(1), int(m.group(2)), m.group(3))
        for line in lines[:-1]
        if (m := _FRAME.match(line)) is not None
    ]
    message = _TAIL_END.sub("", last.group(2) or "").strip()
    return ExceptionInfo(
        last.group(1), message, user_frame(frames, top_cut=True), tuple(frames), origin
    )


def _parse_text(text: str, origin: Origin | None) -> ExceptionInfo | None:
    if _HEADER not in text:
        return None
    if "\\n" in text:
        text = _ESCAPED_QUOTE.sub(r"\1", _ESCAPED_BREAK.sub("\n", text))
    found = _parse_lines(text, origin)
    if found is not None:
        return found
    return _parse_flattened(text[text.rindex(_HEADER) :], origin)


def _parse_flattened(text: str, origin: Origin | None) -> ExceptionInfo | None:
    """A traceback whose lines were joined with spaces: frames by their ``File "...", line N,
    in fn`` shape, the exception as the last ``SomeError: message`` after the last frame."""
    keeper: KeptFrames[Frame] = KeptFrames()
    frames: list[Frame] = []
    first = last = None
    for found in _INLINE_FRAME.finditer(text):
        first = first or found
        last = found
        each = Frame(found.group(1), int(found.group(2)), found.group(3))
        if keeper.add(each, each.file):
            frames.append(each)
    rest, not_kept = keeper.rest()
    frames += rest
    after = text[last.end() :] if last else text[len(_HEADER) :]
    endings = list(_INLINE_EXCEPTION.finditer(after))
    if not endings:
        return None
    ending = endings[-1]
    message = _TAIL_END.sub("", ending.group(2) or "").strip()
    located = list(_INLINE_SYNTAX_AT.finditer(after[: ending.start()]))
    location = (
        Frame(located[-1].group(1), int(located[-1].group(2)), "<module>") if located else None
    )
    top_cut = _ELIDED in text[: first.start()] if first else False
    frame = _raised_at(ending.group(1), frames, location, top_cut)
    return ExceptionInfo(ending.group(1), message, frame, tuple(frames), origin, not_kept)


# A SyntaxError reports where the parser stopped on a line of its own: `File "X", line N`,
# with no function (the module was being compiled), after the frames of the import.
_SYNTAX_AT = re.compile(r'^\s*File "([^"]+)", line (\d+)\s*$')
_INLINE_SYNTAX_AT = re.compile(r'File "([^"]+)", line (\d+)(?![\d,])')
_SYNTAX_ERRORS = frozenset({"SyntaxError", "IndentationError", "TabError"})


def _syntax_error(name: str) -> bool:
    return name.rsplit(".", 1)[-1] in _SYNTAX_ERRORS


def _raised_at(
    name: str, frames: Sequence[Frame], location: Frame | None, top_cut: bool
) -> Frame | None:
    """The frame to name for exception ``name``: the deepest frame of the user's code; for
    a SyntaxError, the file and line it reports, not the module that imported it (None when
    the input lacks that line)."""
    if _syntax_error(name):
        return location
    return user_frame(frames, top_cut=top_cut)


def _parse_lines(text: str, origin: Origin | None) -> ExceptionInfo | None:
    """The traceback after the last header line of ``text``: its frames up to the first line
    that shows an exception (not a frame, not a source line indented four spaces)."""
    at = text.rfind(_HEADER)
    if at < 0:
        return None
    frames: list[Frame] = []
    keeper: KeptFrames[Frame] = KeptFrames()
    location: Frame | None = None  # a SyntaxError's own `File "X", line N`
    cut = False  # the service's "[...]" before the first frame: the top is not here
    # The lines after the last line holding the header: a suffix cut where no line boundary
    # is has the same line boundaries after the cut (no pass over the lines before).
    lines = _lines(text, at)
    next(lines, None)
    for line in lines:
        frame = _FRAME.match(line)
        if frame:
            found_frame = Frame(frame.group(1), int(frame.group(2)), frame.group(3))
            if keeper.add(found_frame, found_frame.file):
                frames.append(found_frame)
            continue
        syntax = _SYNTAX_AT.match(line)
        if syntax:
            location = Frame(syntax.group(1), int(syntax.group(2)), "<module>")
            continue
        if line.startswith("    "):  # four spaces: a source line, not the end
            continue
        if not frames and line.strip() == _ELIDED:
            cut = True
            continue
        found = _EXCEPTION.match(line)
        if found:
            rest, not_kept = keeper.rest()
            frames += rest
            message = _TAIL_END.sub("", found.group(2) or "").strip()
            frame_at = _raised_at(found.group(1), frames, location, cut)
            ended = ExceptionInfo(
                found.group(1), message, frame_at, tuple(frames), origin, not_kept
            )
            return _in_user_code(ended, lines) if message == _IN_USER_CODE else ended
    return None


# TensorFlow's errors raised in a traced function (Keras' fit, tf.function, autograph) put the
# user's own frames and the original exception in the message, indented, after "in user code:"
# (tests/real/gh-jchavezar-vertex-ai-samples-pypackage-xai-S: MultilineMessageKeyError: in user
# code: / File ".../trainer/train.py", line 69, in None  * / KeyError: 'channelGrouping'). The
# frames outside are TensorFlow's and a generated file's: the failure is the inner one.
_IN_USER_CODE = "in user code:"
_MARKED_FRAME = re.compile(r"^\s+" + _FRAME_TEXT + r"(?:\s+\*)?\s*$")


def function_name(written: str) -> str:
    """A frame's function as a report names it: TensorFlow writes "None" in the user's frames
    for a function it has no name for (a converted lambda)."""
    return "<unnamed>" if written == "None" else written


def _in_user_code(outer: ExceptionInfo, rest: Iterator[str]) -> ExceptionInfo:
    """``outer`` (an "in user code:" exception) as the exception and the user's frames its
    indented message names; ``outer`` when the message holds no exception line."""
    frames: list[Frame] = []
    inner: re.Match[str] | None = None
    for line in rest:
        if line.strip() and not line.startswith(" "):
            break  # the message's block ends where a line is no longer indented
        marked = _MARKED_FRAME.match(line)
        if marked:
            frames.append(
                Frame(marked.group(1), int(marked.group(2)), function_name(marked.group(3)))
            )
        elif line.startswith("    ") and not line.startswith("     "):
            inner = _EXCEPTION.match(line) or inner
    if inner is None:
        return outer
    message = _TAIL_END.sub("", inner.group(2) or "").strip()
    frame = user_frame(frames) or outer.frame
    return replace(outer, type=inner.group(1), message=message, frame=frame)


# Where str.splitlines() breaks a line.
_LINE_END = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def _lines(text: str, start: int) -> Iterator[str]:
    """``text[start:].splitlines()`` one line at a time: a traceback of a million frames in
    one text is read without a list of its lines."""
    at = start
    for end in _LINE_END.finditer(text, start):
        yield text[at : end.start()]
        at = end.end()
    if at < len(text):
        yield text[at:]


def _field(event: Event, name: str) -> str:
    value = event.match.field(name)
    return str(value) if value is not None else ""


def last_exception_line(events: Sequence[Event]) -> ExceptionInfo | None:
    """The last exception line among ``events``, without frames: what a paste of a
    traceback's end shows when it kept no header and no frame. Not a traceback's end in a
    job's log (the harmless sitecustomize ModuleNotFoundError is one such line)."""
    line = next((e for e in reversed(events) if e.kind is EventKind.EXCEPTION), None)
    if line is None:
        return None
    return ExceptionInfo(_field(line, "exception"), _field(line, "message"), None, (), line.origin)


def exception_from_events(
    events: Iterable[Event], *, nearest_first: bool = False
) -> ExceptionInfo | None:
    """The last complete traceback among one process's events, in time order (with
    ``nearest_first``, the first: the one nearest the start of ``events``).

    An exception line counts only when a traceback header came before it: the harmless
    ``Error in sitecustomize`` ModuleNotFoundError of successful jobs has none. A traceback
    whose lines share one timestamp in an input written newest first (a Logs Explorer copy)
    comes in reverse: it is read backwards when it cannot be read forwards.
    """
    ordered = list(events)
    # The SDK's own RuntimeError ("Job failed with:", its job_error) is the tool's report that
    # the job ended, raised around it in the caller's process: not the exception behind it.
    reports = frozenset(e.origin for e in ordered if e.kind is EventKind.JOB_ERROR)
    return _exception_in_order(ordered, reports, stop=nearest_first) or _exception_in_order(
        ordered[::-1], reports
    )


def _exception_in_order(
    events: Iterable[Event], reports: frozenset[Origin] = frozenset(), *, stop: bool = False
) -> ExceptionInfo | None:
    """The last complete traceback read in the order of ``events``, none that ends at one of
    ``reports``; the first with ``stop``."""
    reader = _TracebackReader(reports)
    for event in events:
        if reader.read(event) and stop:
            return reader.found
    return reader.found


@dataclass(slots=True)
class _TracebackReader:
    """One process's traceback lines put back together, line by line."""

    reports: frozenset[Origin]
    found: ExceptionInfo | None = None
    frames: list[Frame] | None = None  # None: not inside a traceback
    header: Event | None = None
    cut: bool = False  # the traceback's top is not in the input (no header, or a gap)
    # The frames past the first (KeptFrames), and those the reading stage did not keep.
    keeper: KeptFrames[Frame] = field(default_factory=KeptFrames)
    not_kept: int = 0

    def read(self, event: Event) -> bool:
        """Take ``event``; True when it completed a traceback."""
        multi_line = "\n" in event.text.strip()
        if event.kind is EventKind.TRACEBACK:
            return self._header(event, multi_line)
        if multi_line:
            return False
        if event.kind is EventKind.FRAME:
            self._frame(event)
        elif event.kind is EventKind.EXCEPTION:
            return self._exception(event)
        return False

    def _header(self, event: Event, multi_line: bool) -> bool:
        parsed = parse_text(event.text, event.origin) if multi_line else None
        if parsed is None:
            self.frames, self.header, self.cut = [], event, False
            self.keeper, self.not_kept = KeptFrames(), 0
            return False
        self.found, self.frames = parsed, None
        return True

    def _frame(self, event: Event) -> None:
        # A cut export may lack the header: frames then an exception still make a traceback
        # (the harmless sitecustomize ModuleNotFoundError has no frame).
        if not self.frames:
            self.cut = self._top_cut(event)
        if self.frames is None:
            self.frames, self.keeper, self.not_kept = [], KeptFrames(), 0
        line = _field(event, "line")
        frame = Frame(
            _field(event, "file"),
            int(line) if line.isdigit() else 0,
            function_name(_field(event, "function")),
        )
        if self.keeper.add(frame, frame.file):
            self.frames.append(frame)
        not_kept = event.match.field(NOT_KEPT)
        if isinstance(not_kept, int):
            self.not_kept += not_kept

    def _top_cut(self, first: Event) -> bool:
        """Whether the first frame comes without the traceback's top: no header at all, or,
        in a paste without times (one line a record), a line between the header and the
        first frame (the service's "[...]"). (In an export, other processes' entries and
        multi-line entries put gaps between one traceback's lines.)"""
        header = self.header
        return self.frames is None or (
            header is not None
            and header.timestamp is None
            and first.timestamp is None
            and header.origin.path == first.origin.path
            and first.origin.line - header.origin.line > 1
        )

    def _exception(self, event: Event) -> bool:
        frames = self.frames
        self.frames = None
        if frames is None or event.origin in self.reports:
            return False
        rest, not_kept = self.keeper.rest()
        frames += rest
        name = _field(event, "exception")
        # (A SyntaxError's own location line is no frame event: without it, no frame.)
        location = frames[-1] if frames and not frames[-1].function else None
        self.found = ExceptionInfo(
            name,
            _field(event, "message"),
            _raised_at(name, frames, location, self.cut),
            tuple(frames),
            event.origin,
            not_kept + self.not_kept,
        )
        return True


def open_traceback(events: Iterable[Event]) -> tuple[Event, Event] | None:
    """The last traceback among one process's events, in time order, that no exception line
    ends: its header and its last line in the input (a frame, or the header itself); None
    when every traceback there ends. What a paste or an export cut inside a traceback shows:
    the frames, and not the exception that would name the failure."""
    header: Event | None = None
    last: Event | None = None
    for event in events:
        multi_line = "\n" in event.text.strip()
        if event.kind is EventKind.TRACEBACK:
            if parse_text(event.text) is not None:
                header = None  # a whole traceback in one text (lines, or flattened)
            else:
                header = last = event
        elif multi_line:
            continue
        elif event.kind is EventKind.FRAME and header is not None:
            last = event
        elif event.kind is EventKind.EXCEPTION:
            header = None
    return (header, last) if header is not None and last is not None else None
