"""Which minutes a worker wrote in: :class:`MinuteMap`, the rhythm a stall is judged against.

A worker's first and last time and its count say nothing of how regularly it writes; the
gaps between its lines do (issue 30: silent far past its own rhythm). Keeping every line's
time would grow with the log, so each span keeps the minutes that had a line, as bits: a
month of minutes is 5.4 KB, whatever the lines per minute. The record is the same whatever
order the lines come in and however the input is cut into blocks (two maps merge by OR), so
the fast scan and the plain reader give equal maps. A reader updates it only when a line's
minute differs from the span's latest one, so a run of lines in one minute costs one compare
each.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

# The minutes kept before a worker's latest one: 2**16 minutes (45.5 days, 8 KB a worker).
# A stall is judged on the current attempt, and the platform stops a job at its
# scheduling.timeout (7 days by default, platform.md section 2): older minutes say nothing
# more of the rhythm, and a stray line from years before cannot make the map large.
WINDOW = 1 << 16
_MASK = (1 << WINDOW) - 1
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Minute keys ("2024-03-11T08:00") read so far, each parsed once (a log's minutes are few);
# the fast scan looks them up itself.
KEY_MINUTES: dict[str, int | None] = {}
_MAX_KEYS = 1 << 17


def minute_of(when: datetime) -> int:
    """The minute since the epoch that the aware ``when`` falls in."""
    return int((when - _EPOCH).total_seconds() // 60)


def minute_of_key(key: str) -> int | None:
    """The minute of a canonical UTC time key (``2024-03-11T08:00:59.000000000Z``, only its
    first 16 characters read), None when they are no time."""
    prefix = key[:16]
    if prefix in KEY_MINUTES:
        return KEY_MINUTES[prefix]
    try:
        minute: int | None = minute_of(datetime.fromisoformat(prefix).replace(tzinfo=UTC))
    except ValueError:
        minute = None
    if len(KEY_MINUTES) < _MAX_KEYS:
        KEY_MINUTES[prefix] = minute
    return minute


def minute_start(minute: int) -> datetime:
    """The aware UTC time at which ``minute`` (since the epoch) begins."""
    return datetime.fromtimestamp(minute * 60, UTC)


@dataclass(slots=True)
class MinuteMap:
    """The minutes with a line, up to :data:`WINDOW` before the latest one (``top``).

    Bit ``k`` of ``bits`` is the minute ``top - k``; ``top`` is -1 while the map is empty.
    """

    top: int = -1
    bits: int = 0

    def add(self, minute: int) -> None:
        """Note a line in ``minute``."""
        top = self.top
        if minute > top:
            # Shifted by a window or more, every bit falls out: not shifted at all (a line
            # dated in year 1 beside one in 9999 would make an int of 5 billion bits).
            if top < 0 or minute - top >= WINDOW:
                self.bits = 1
            else:
                self.bits = ((self.bits << (minute - top)) | 1) & _MASK
            self.top = minute
        elif top - minute < WINDOW:
            self.bits |= 1 << (top - minute)

    def merge(self, other: MinuteMap) -> None:
        """Add the minutes of ``other`` (the result is the map of both inputs' lines)."""
        if other.top < 0:
            return
        if self.top < 0 or other.top - self.top >= WINDOW:
            self.top, self.bits = other.top, other.bits
        elif other.top > self.top:
            self.bits = ((self.bits << (other.top - self.top)) | other.bits) & _MASK
            self.top = other.top
        elif self.top - other.top < WINDOW:
            self.bits |= (other.bits << (self.top - other.top)) & _MASK

    def copy(self) -> MinuteMap:
        return MinuteMap(self.top, self.bits)

    def minutes(self, since: int | None = None) -> list[int]:
        """The minutes with a line, earliest first (only from ``since`` on, when given)."""
        bits = self.bits
        if since is not None:
            if since > self.top:
                return []
            bits &= (1 << (self.top - since + 1)) - 1
        # The bits as text, read once (stepping through an 8 KB int bit by bit copies it).
        digits = format(bits, "b")
        start = self.top - len(digits) + 1  # the minute of the first digit
        return [start + at for at, digit in enumerate(digits) if digit == "1"]
