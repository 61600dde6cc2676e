"""The cost guard: byte sizes as users write them, on-demand prices, the ``--max-bytes`` check.

BigQuery on demand bills the bytes of the columns read: $6.25 per TiB after the first free
TiB of each month, at least 10 MB per table a query references. A dry run tells the bytes
for free; jobdoctor prints them with their price before running, refuses to run over
``--max-bytes``, and passes the same bound as ``maximum_bytes_billed`` so BigQuery itself
stops a query that would read more.
"""

from __future__ import annotations

import re

from analyzer.core.errors import InputError, SourceError

PRICE_PER_TIB = 6.25
TIB = 1 << 40
DEFAULT_MAX_BYTES = "100GB"
_UNITS = {
    "": 1,
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "PB": 10**15,
    "KIB": 1 << 10,
    "MIB": 1 << 20,
    "GIB": 1 << 30,
    "TIB": 1 << 40,
    "PIB": 1 << 50,
}
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([A-Za-z]*)")


def parse_bytes(text: str) -> int:
    """``100GB``, ``1.5TiB``, ``500MB``, ``12345`` as a number of bytes (GB = 10**9 bytes,
    GiB = 2**30). Raises InputError for anything else."""
    found = _SIZE.fullmatch(text.strip())
    unit = found.group(2).upper() if found else ""
    if found is None or unit not in _UNITS:
        raise InputError(
            f"invalid --max-bytes {text!r}: give a size such as 100GB, 1TB, 500MiB or 12345"
        )
    size = int(float(found.group(1)) * _UNITS[unit])
    if size <= 0:
        raise InputError(f"invalid --max-bytes {text!r}: the size must be more than zero")
    return size


def format_bytes(size: int) -> str:
    """``size`` in decimal units, as the BigQuery console shows it (``1.23 GB``)."""
    value = float(size)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{size} B" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def on_demand_price(size: int) -> float:
    """The on-demand price in US dollars of scanning ``size`` bytes (free tier not counted)."""
    return size / TIB * PRICE_PER_TIB


def describe_estimate(size: int, queries: int) -> str:
    """The line printed after the dry run."""
    noun = "query" if queries == 1 else "queries"
    return (
        f"dry run: the {queries} {noun} will scan {format_bytes(size)}"
        f" (about ${on_demand_price(size):.4f} on demand at ${PRICE_PER_TIB}/TiB,"
        " before the free TiB of the month; at least 10 MB per table)"
    )


def check_estimate(size: int, max_bytes: int) -> None:
    """Raise SourceError when the estimate ``size`` is over ``max_bytes``."""
    if size > max_bytes:
        raise SourceError(
            f"the queries would scan {format_bytes(size)}, over --max-bytes"
            f" {format_bytes(max_bytes)} (about ${on_demand_price(size):.2f}): narrow --since"
            " or --job-id, or raise --max-bytes"
        )
