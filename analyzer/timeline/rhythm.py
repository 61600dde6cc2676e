"""How a worker writes within one attempt: :class:`Rhythm`, from the minutes it had lines in.

A stall is a worker silent far past its own rhythm (issue 30); the rhythm is the gaps between
its minutes with a line, in this attempt only (a restarted job's earlier attempt says nothing
of this one's pace). Kept as a count per gap length: a week of minutes is a few distinct
gaps, not ten thousand numbers.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from analyzer.classify.joblog import VmSpan
from analyzer.classify.minutes import MinuteMap, minute_of


@dataclass(frozen=True, slots=True)
class Rhythm:
    """A worker's minutes with a line in one attempt: how many (``active``), from ``first``
    to ``last`` (minutes since the epoch), and the gaps between consecutive ones (``gaps``:
    (length in minutes, how many), shortest first; a worker writing every minute has only
    gaps of 1)."""

    active: int
    first: int
    last: int
    gaps: tuple[tuple[int, int], ...]

    def quantile(self, q: float) -> int:
        """The gap (minutes) that ``q`` of the gaps are at most (1 without gaps)."""
        total = sum(count for _, count in self.gaps)
        if total == 0:
            return 1
        # The nearest-rank quantile: the smallest gap with at least q of them at or below.
        rank = max(1, math.ceil(q * total))
        seen = 0
        for length, count in self.gaps:
            seen += count
            if seen >= rank:
                return length
        return self.gaps[-1][0]

    @property
    def span_minutes(self) -> int:
        """Minutes from the first line's to the last line's."""
        return self.last - self.first


def rhythm_of(
    spans: Sequence[VmSpan], start: datetime | None, end: datetime | None
) -> Rhythm | None:
    """The rhythm of a worker's ``spans`` between ``start`` and ``end`` (an attempt's window,
    None: open); None when a span has no minutes (an engine's summary) or none fall inside."""
    merged = MinuteMap()
    for span in spans:
        if span.minutes is None:
            return None
        merged.merge(span.minutes)
    minutes = merged.minutes(None if start is None else minute_of(start))
    if end is not None:
        stop = minute_of(end)
        minutes = [m for m in minutes if m <= stop]
    if not minutes:
        return None
    gaps = Counter(b - a for a, b in itertools.pairwise(minutes))
    return Rhythm(len(minutes), minutes[0], minutes[-1], tuple(sorted(gaps.items())))
