"""The careful-Python baseline for ``gcloud logging read`` without ``--format`` (YAML).

The same afternoon's script as ``careful.py``, for the YAML gcloud prints: the documents read
by ``yaml.load_all`` through libyaml (``CSafeLoader``, the quickest PyYAML has; streamed, a
document at a time), then per entry the same text lookup and combined regex, the first match
per job kept. gcloud prints YAML 1.2 and PyYAML reads 1.1 (a text "yes" or "1:20", written
plain, would come back a bool or a number), so the loader resolves plain scalars by 1.2's core
schema, as the recipes for PyYAML do: the same number of regex checks per scalar as PyYAML's
own resolvers, one constructor more. Prints one JSON object: ``{"lines": N, "jobs": {job_id:
family}}`` (``lines``: entries).

    python bench/baselines/careful_gcloud_yaml.py FILE
"""

from __future__ import annotations

import re
import sys

import orjson
import yaml
from careful import family  # type: ignore[import-not-found]


class Loader(yaml.CSafeLoader):
    """libyaml's safe loader with YAML 1.2's core schema; no timestamps."""


Loader.yaml_implicit_resolvers = {}
for tag, pattern, first in (
    ("bool", r"(?:true|True|TRUE|false|False|FALSE)\Z", "tTfF"),
    ("int", r"(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)\Z", "-+0123456789"),
    (
        "float",
        r"(?:[-+]?(?:[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+"
        r"|\.[0-9]+(?:[eE][-+][0-9]+)?|\.(?:inf|Inf|INF))|\.(?:nan|NaN|NAN))\Z",
        "-+0123456789.",
    ),
    ("null", r"(?:~|null|Null|NULL|)\Z", ["~", "n", "N", ""]),
):
    Loader.add_implicit_resolver(f"tag:yaml.org,2002:{tag}", re.compile(pattern), list(first))


def _int(loader: yaml.CSafeLoader, node: yaml.ScalarNode) -> int:
    value = loader.construct_scalar(node)
    return int(value[2:], 8) if value[:2] == "0o" else int(value, 0 if value[:2] == "0x" else 10)


Loader.add_constructor("tag:yaml.org,2002:int", _int)


def scan(path: str) -> dict[str, object]:
    """The first error family seen per job in the gcloud YAML at ``path``."""
    first: dict[str, str] = {}
    entries = 0
    with open(path, "rb") as stream:
        for entry in yaml.load_all(stream, Loader=Loader):
            if not isinstance(entry, dict):
                continue
            entries += 1
            payload = entry.get("jsonPayload")
            text = payload.get("message") if isinstance(payload, dict) else None
            if not isinstance(text, str):
                text = entry.get("textPayload")
            if not isinstance(text, str):
                continue
            found = family(text)
            if found is None:
                continue
            job = ((entry.get("resource") or {}).get("labels") or {}).get("job_id")
            if job is not None and job not in first:
                first[job] = found
    return {"lines": entries, "jobs": first}


if __name__ == "__main__":
    sys.stdout.write(orjson.dumps(scan(sys.argv[1])).decode() + "\n")
