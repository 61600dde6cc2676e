"""What jobdoctor's own code buys over a library (issue 28, point 4), measured.

Each part times jobdoctor's way against the library's on the same input, interleaved
(``--runs`` rounds of each contender in turn), and prints CPU medians (user + system: the
figure that a busy shared host disturbs least) and wall medians:

- ``json``: the two JSON libraries in the hot path. Per sink line, ``orjson.loads`` (the
  line-by-line reader, ``analyzer.ingest.entries.load_json``) against
  ``msgspec.json.decode``; the whole report, ``orjson.dumps(OPT_INDENT_2)``
  (``analyzer.report.json``) against ``msgspec.json.format(msgspec.json.encode(...))``, and
  whether the bytes are the same; a gcloud JSON array, ``orjson.loads`` against
  ``msgspec.json.decode``.
- ``yaml``: ``jobdoctor diagnose -f json`` of ``gcloud logging read``'s YAML with the
  hand-written reader (``analyzer.classify._fastscan.gcloudyaml``) and with it turned off (the plain
  reader: PyYAML's ``CSafeLoader`` a document at a time, ``analyzer.ingest.gcloud_yaml``),
  and ``yaml.load_all(CSafeLoader)`` of the file alone (no record made, no rule run).
- ``pool``: a fresh interpreter that runs 2 processes over 64 tasks (a line count of a range
  of the file each), with ``analyzer.core.processes.run_forked``, ``multiprocessing.Pool`` (fork)
  and ``concurrent.futures.ProcessPoolExecutor`` (fork); start-up included, as a run pays it.

    python bench/library_choices.py json --sink FLEET.jsonl --gcloud-json FLEET.json
    python bench/library_choices.py yaml --yaml FLEET.yaml
    python bench/library_choices.py pool --sink FLEET.jsonl

The inputs are the bench's (``python bench/shapes.py --fleet-bytes 200000000 --shape
gcloud-json --shape gcloud-yaml --out-dir DIR``).

Figures at 270c3a6 + the faces branch, on the 2-core host shared by 7 sessions (load 15-20:
the wall times are the load's, the CPU medians hold):

- json (5 runs): per sink line (70,376 lines, 50 MB) ``orjson.loads`` 569 ms, ``msgspec``
  586 ms (+3%); an 18 MB indented report, the same bytes, orjson 12.9 ms, msgspec 26.5 ms; a
  49 MB gcloud JSON array, orjson 592 ms, msgspec 557 ms (-6%). msgspec stays either way (its
  typed block decoding, its msgpack between processes); orjson's share costs little to give up.
- yaml (3 runs, 22 MB, 32,443 entries): jobdoctor with its own reader 1.68 s, with PyYAML's
  CSafeLoader for every document 4.81 s (the same report), ``yaml.load_all`` alone 3.02 s.
- pool (15 runs): ``run_forked`` 87 ms, ``multiprocessing.Pool`` 123 ms,
  ``ProcessPoolExecutor`` 117 ms (the same counts).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _report(name: str, cpu: list[float], wall: list[float]) -> None:
    print(
        f"  {name:<34} cpu {statistics.median(cpu) * 1000:8.1f} ms"
        f" (best {min(cpu) * 1000:8.1f})  wall {statistics.median(wall) * 1000:8.1f} ms",
        flush=True,
    )


def _interleaved_here(cases: dict[str, Callable[[], object]], runs: int) -> None:
    """Time each case in this process, interleaved: CPU (process time) and wall."""
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    wall: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, case in cases.items():
            started, clock = time.process_time(), time.perf_counter()
            case()
            cpu[name].append(time.process_time() - started)
            wall[name].append(time.perf_counter() - clock)
    for name in cases:
        _report(name, cpu[name], wall[name])


def _interleaved_processes(cases: dict[str, list[str]], runs: int) -> None:
    """Time each command line, interleaved: its CPU (children's rusage) and wall."""
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    wall: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, command in cases.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            clock = time.perf_counter()
            subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
            wall[name].append(time.perf_counter() - clock)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[name].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    for name in cases:
        _report(name, cpu[name], wall[name])


def json_part(sink: Path, gcloud_json: Path | None, megabytes: int, runs: int) -> None:
    import msgspec
    import orjson

    with sink.open("rb") as stream:
        lines = stream.read(megabytes << 20).splitlines()[:-1]
    print(f"json: {len(lines)} sink lines ({megabytes} MB), one call a line", flush=True)
    decode = msgspec.json.decode
    loads = orjson.loads
    _interleaved_here(
        {
            "orjson.loads": lambda: [loads(line) for line in lines],
            "msgspec.json.decode": lambda: [decode(line) for line in lines],
        },
        runs,
    )
    entries = [loads(line) for line in lines[:20000]]
    document = {"schema": "jobdoctor.diagnosis/1", "jobs": entries}
    by_orjson = orjson.dumps(document, option=orjson.OPT_INDENT_2)
    by_msgspec = msgspec.json.format(msgspec.json.encode(document), indent=2)
    same = "the same bytes" if by_orjson == by_msgspec else "DIFFERENT bytes"
    print(f"json: a {len(by_orjson) >> 20} MB report, indented: {same}", flush=True)
    _interleaved_here(
        {
            "orjson.dumps(OPT_INDENT_2)": lambda: orjson.dumps(
                document, option=orjson.OPT_INDENT_2
            ),
            "msgspec encode + format(indent=2)": lambda: msgspec.json.format(
                msgspec.json.encode(document), indent=2
            ),
        },
        runs,
    )
    if gcloud_json is not None:
        data = gcloud_json.read_bytes()[: megabytes << 20]
        data = data[: data.rfind(b"\n  },") + 4] + b"\n]\n"  # whole entries, a valid array
        print(f"json: a gcloud JSON array of {len(data) >> 20} MB, one call", flush=True)
        _interleaved_here(
            {"orjson.loads": lambda: loads(data), "msgspec.json.decode": lambda: decode(data)},
            runs,
        )


# The fast scanner of gcloud YAML off: its format is no longer one the light scanners take,
# so every document goes through the plain reader (PyYAML, a document at a time).
_PLAIN_YAML = (
    "import sys\n"
    "import analyzer.classify._fastscan.readers as readers\n"
    "readers.FORMATS = readers.FORMATS - {readers.GCLOUD_YAML}\n"
    "from analyzer.cli.console import main\n"
    "sys.argv[:] = ['jobdoctor', *sys.argv[1:]]\n"
    "main()\n"
)
_FAST_YAML = (
    "import sys\n"
    "from analyzer.cli.console import main\n"
    "sys.argv[:] = ['jobdoctor', *sys.argv[1:]]\n"
    "main()\n"
)
_PYYAML_ALONE = (
    "import sys, yaml\n"
    "with open(sys.argv[1], 'rb') as stream:\n"
    "    for _ in yaml.load_all(stream, Loader=yaml.CSafeLoader):\n"
    "        pass\n"
)


def yaml_part(path: Path, runs: int) -> None:
    size = path.stat().st_size
    print(f"yaml: {path.name}, {size >> 20} MB", flush=True)
    python = sys.executable
    fast = [python, "-c", _FAST_YAML, "diagnose", "-f", "json", str(path)]
    plain = [python, "-c", _PLAIN_YAML, "diagnose", "-f", "json", str(path)]
    reports = [
        subprocess.run(command, cwd=ROOT, capture_output=True, check=False).stdout
        for command in (fast, plain)
    ]
    print(f"  the same report both ways: {reports[0] == reports[1]}", flush=True)
    _interleaved_processes(
        {
            "jobdoctor, its own YAML reader": fast,
            "jobdoctor, PyYAML CSafeLoader": plain,
            "yaml.load_all(CSafeLoader) alone": [python, "-c", _PYYAML_ALONE, str(path)],
        },
        runs,
    )


_POOL = """
import sys
path, how = sys.argv[1], sys.argv[2]
size = 64 << 20
tasks = [(n * size // 64, (n + 1) * size // 64) for n in range(64)]

def work(task):
    with open(path, "rb") as stream:
        stream.seek(task[0])
        return stream.read(task[1] - task[0]).count(b"\\n")

if how == "run_forked":
    from analyzer.core.processes import run_forked
    total = sum(count for _, count in run_forked(tasks, work, 2, start="fork"))
elif how == "multiprocessing.Pool":
    import multiprocessing
    with multiprocessing.get_context("fork").Pool(2) as pool:
        total = sum(pool.imap_unordered(work, tasks))
else:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(2, mp_context=context) as pool:
        total = sum(pool.map(work, tasks))
print(total)
"""


def pool_part(sink: Path, runs: int) -> None:
    print("pool: 2 processes, 64 tasks (the lines of 1 MB each), start-up included", flush=True)
    python = sys.executable
    ways = ["run_forked", "multiprocessing.Pool", "ProcessPoolExecutor"]
    counts = {
        way: subprocess.run(
            [python, "-c", _POOL, str(sink), way], cwd=ROOT, capture_output=True, check=True
        ).stdout
        for way in ways
    }
    print(f"  the same counts: {len(set(counts.values())) == 1}", flush=True)
    _interleaved_processes({way: [python, "-c", _POOL, str(sink), way] for way in ways}, runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", choices=["json", "yaml", "pool"])
    parser.add_argument("--sink", type=Path, help="a sink JSONL file (json, pool)")
    parser.add_argument("--gcloud-json", type=Path, help="a gcloud JSON array (json)")
    parser.add_argument("--yaml", type=Path, help="gcloud's YAML (yaml)")
    parser.add_argument("--megabytes", type=int, default=50, help="json: how much to read")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if args.part == "json":
        json_part(args.sink, args.gcloud_json, args.megabytes, args.runs)
    elif args.part == "yaml":
        yaml_part(args.yaml, args.runs)
    else:
        pool_part(args.sink, args.runs)


if __name__ == "__main__":
    main()
