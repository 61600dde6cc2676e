"""DuckDB as a peer: what a user could run instead, ``read_ndjson`` + regexp + GROUP BY job.

The same four error families as ``careful.py`` (DuckDB's regexes are RE2), counted per job
and family, over the columns named up front (no schema sniffing). ``--format`` says how the
file is read: ``jsonl`` (``read_ndjson``), ``gcloud-json`` (``read_json``, an array) or
``stream-logs`` (``read_csv``, tab-separated, no job: the file is one job). Prints
``{"rows": N, "jobs": {job_id: [family, ...]}}``.

    python bench/baselines/duckdb_peer.py [--format jsonl|gcloud-json|stream-logs] FILE
"""

from __future__ import annotations

import argparse
import sys

import duckdb
import orjson

PATTERN = (
    "(ran out[ -]of[ -]memory|exited with a non-zero status of"
    "|Resources are insufficient in region|Internal error occurred)"
)
_COLUMNS = (
    "columns={'resource': 'STRUCT(type VARCHAR, labels STRUCT(job_id VARCHAR))',"
    " 'jsonPayload': 'STRUCT(message VARCHAR)', 'textPayload': 'VARCHAR'}"
)
SOURCES = {
    "jsonl": (
        "SELECT resource.labels.job_id AS job, coalesce(jsonPayload.message, textPayload) AS text"
        f" FROM read_ndjson($path, {_COLUMNS})"
    ),
    "gcloud-json": (
        "SELECT resource.labels.job_id AS job, coalesce(jsonPayload.message, textPayload) AS text"
        f" FROM read_json($path, format='array', {_COLUMNS})"
    ),
    "stream-logs": (
        "SELECT '-' AS job, message AS text FROM read_csv($path, delim='\t', header=false,"
        " quote='', escape='', null_padding=true, ignore_errors=true, columns={'severity':"
        " 'VARCHAR', 'time': 'VARCHAR', 'task': 'VARCHAR', 'message': 'VARCHAR'})"
    ),
}


def scan(path: str, fmt: str = "jsonl") -> dict[str, object]:
    """Error families per job in the file at ``path``, by one DuckDB query."""
    query = (
        f"WITH t AS ({SOURCES[fmt]}) SELECT job, regexp_extract(text, $pattern) AS family,"
        " count(*) FROM t WHERE regexp_matches(text, $pattern) GROUP BY job, family"
        " ORDER BY job, family"
    )
    rows = duckdb.connect().execute(query, {"path": path, "pattern": PATTERN}).fetchall()
    jobs: dict[str, list[str]] = {}
    for job, family, _ in rows:
        if job is not None:
            jobs.setdefault(job, []).append(family)
    return {"rows": len(rows), "jobs": jobs}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", default="jsonl", choices=sorted(SOURCES))
    parser.add_argument("path")
    args = parser.parse_args()
    sys.stdout.write(orjson.dumps(scan(args.path, args.format)).decode() + "\n")
