"""What jobdoctor reads in each SDK capture, against the capture's scripted truth.

    python -m tests.sdk.verdicts            # the right/wrong table, per variant, and each misread

A capture is read right when ``diagnose PATH --format json`` exits 0 and, for every job of the
truth: a job of its id is reported (a training pipeline's may be reported under its backing
custom job's id), with the truth's state, ``observed_final`` and cause (category, exit code,
replica, region where the truth has one); a job refused at creation is reported as a quota
refusal that never ran; and no job is reported that the script did not make. What a capture
does not show is not expected: a job whose id it never prints is expected with a null id when
its error is printed, and not at all otherwise (``sdk2-py311-logging``, where google-api-core's
logging set-up swallows the SDK's lines after the first).

Replica names compare with the legacy space form and the log's task form as one
(``master 0`` is ``master-replica-0``): the same replica, written two ways by the platform.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

CAPTURES = Path(__file__).resolve().parent / "captures"
MISREADS = Path(__file__).resolve().parent / "misreads.yaml"


@dataclass(frozen=True)
class Misread:
    """One thing jobdoctor got wrong: ``kind`` groups like misreads across captures."""

    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind} ({self.detail})"


def captures() -> list[Path]:
    """Every capture file, in a stable order."""
    return sorted(p for p in CAPTURES.glob("*/*") if p.suffix in (".txt", ".ipynb"))


def load_truth(capture: Path) -> dict[str, Any]:
    truth: dict[str, Any] = yaml.safe_load((capture.parent / "truth.yaml").read_text())
    return truth


def diagnose(capture: Path) -> tuple[int, str, str]:
    """jobdoctor's JSON diagnosis of one capture, in this process."""
    from tests.clirun import run

    return run("diagnose", str(capture), "--format", "json")


def misreads(capture: Path) -> list[Misread]:
    """What jobdoctor reads wrong in ``capture`` (empty: all of it right)."""
    code, out, err = diagnose(capture)
    if code != 0:
        first = (err.strip().splitlines() or ["?"])[0].replace(str(capture), capture.name)
        what = "notebook" if capture.suffix == ".ipynb" else "input"
        return [Misread(f"{what} refused", f"exit {code}: {first[:160]}")]
    text = capture.read_text(encoding="utf-8")
    return compare(load_truth(capture), json.loads(out)["jobs"], text)


def compare(truth: dict[str, Any], jobs: list[dict[str, Any]], text: str) -> list[Misread]:
    """Misreads of the reported ``jobs`` against the ``truth`` file's, for a capture whose
    text is ``text``.

    What to expect of a job depends on what the capture shows of it, a fact of the SDK and
    its logging, not of jobdoctor: a job whose id the capture never prints (the SDK's lines
    swallowed by the logging set-up, ``sdk2-py311-logging``) is expected with a null id when
    its error is printed, and otherwise not at all: a job reported with no id and a state
    then claims what the capture does not show."""
    found: list[Misread] = []
    by_id = {job["job_id"]: job for job in jobs}
    known: set[str | None] = set()
    for expected in truth["jobs"]:
        ids = [i for i in (expected["job_id"], expected.get("backing_custom_job_id")) if i]
        known.update(ids)
        if expected["refused_at_creation"]:
            found += _refusal(expected, jobs)
            known.add(None)
            continue
        shown = [i for i in ids if i in text]
        if not shown and not _error_shown(expected, text):
            continue  # nothing of this job is in the capture
        if not shown and None in known:
            continue  # another id-less job took the report without an id
        if not shown:
            known.add(None)
        job = next((by_id[i] for i in shown if i in by_id), None) if shown else by_id.get(None)
        if job is None:
            found.append(Misread("job not found", f"{expected['kind']} {expected['job_id']}"))
            continue
        found += _job(expected, job)
    for job in jobs:
        if job["job_id"] not in known and not (job["job_id"] is None and _no_claim(job)):
            found.append(Misread("job the script did not make", f"{job['job_id']} {job['state']}"))
    return found


def _error_shown(expected: dict[str, Any], text: str) -> bool:
    """The capture prints the job's error message (its first words)."""
    message = expected.get("error_message")
    return bool(message) and message.split("\n")[0][:40] in text


def _no_claim(job: dict[str, Any]) -> bool:
    return job["state"] == "JOB_STATE_UNSPECIFIED" and job.get("cause") is None


def _refusal(expected: dict[str, Any], jobs: list[dict[str, Any]]) -> list[Misread]:
    refusals = [
        j for j in jobs if (j.get("cause") or {}).get("category") == "quota" and j["attempts"] == 0
    ]
    if not refusals:
        shown = ", ".join(
            f"{j['job_id']} {j['state']} {(j.get('cause') or {}).get('category')}" for j in jobs
        )
        return [Misread("refusal at creation not read", shown or "no job")]
    return []


def _job(expected: dict[str, Any], job: dict[str, Any]) -> list[Misread]:
    found = []
    short = expected["state"].removeprefix("JOB_STATE_")
    if job["state"] != expected["state"]:
        found.append(
            Misread(
                f"{short} read as {job['state'].removeprefix('JOB_STATE_')}", expected["job_id"]
            )
        )
    if job["observed_final"] != expected["observed_final"]:
        word = "observed" if expected["observed_final"] else "not final"
        found.append(
            Misread(
                f"{short}: observed_final {job['observed_final']}, truth {word}", expected["job_id"]
            )
        )
    found += _cause(expected, job)
    return found


def _cause(expected: dict[str, Any], job: dict[str, Any]) -> list[Misread]:
    want, got = expected["cause"], job.get("cause")
    if want is None:
        return [] if got is None else [Misread("cause where none", f"{got.get('category')}")]
    if got is None:
        return [Misread(f"{want['category']} cause not read", expected["job_id"])]
    found = []
    if got.get("category") != want["category"]:
        found.append(
            Misread(f"{want['category']} read as {got.get('category')}", expected["job_id"])
        )
    if got.get("exit_code") != want["exit_code"]:
        found.append(Misread("exit code", f"{got.get('exit_code')}, truth {want['exit_code']}"))
    if _replica(got.get("replica")) != _replica(want["replica"]):
        found.append(Misread("replica", f"{got.get('replica')}, truth {want['replica']}"))
    if want.get("region") and got.get("region") != want["region"]:
        found.append(Misread("region", f"{got.get('region')}, truth {want['region']}"))
    return found


def _replica(name: str | None) -> str | None:
    if name is None:
        return None
    return re.sub(r"^(master|worker|ps) (\d+)$", r"\1-replica-\2", name.strip())


def variant_of(capture: Path) -> str:
    return capture.stem + capture.suffix


def table(results: dict[Path, list[Misread]]) -> str:
    """Right/wrong per variant, then each kind of misread with its count."""
    per: dict[str, Counter[str]] = {}
    for path, wrong in results.items():
        per.setdefault(variant_of(path), Counter())["wrong" if wrong else "right"] += 1
    lines = ["variant                     right  wrong"]
    total: Counter[str] = Counter()
    for variant, counts in sorted(per.items()):
        total.update(counts)
        lines.append(f"{variant:<27} {counts['right']:>5}  {counts['wrong']:>5}")
    lines.append(f"{'all':<27} {total['right']:>5}  {total['wrong']:>5}")
    kinds = Counter(m.kind for wrong in results.values() for m in wrong)
    lines.append("")
    lines += [f"{n:>4}  {kind}" for kind, n in kinds.most_common()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="jobdoctor on the SDK captures, against their truth"
    )
    parser.add_argument(
        "--write-misreads",
        action="store_true",
        help=f"write today's misreads to {MISREADS.name} (the test's strict xfails)",
    )
    args = parser.parse_args(argv)
    results = {path: misreads(path) for path in captures()}
    for path, wrong in results.items():
        if wrong:
            print(f"{path.parent.name}/{path.name}: " + "; ".join(map(str, wrong)))
    print()
    print(table(results))
    if args.write_misreads:
        known = {
            f"{path.parent.name}/{path.name}": "; ".join(map(str, wrong))
            for path, wrong in results.items()
            if wrong
        }
        MISREADS.write_text(
            "# Captures jobdoctor reads wrong (tests/test_sdk_captures.py: strict xfails),\n"
            "# written by python -m tests.sdk.verdicts --write-misreads.\n"
            "# Remove a line once its capture reads right.\n"
            + yaml.safe_dump(known, sort_keys=True, width=10**6, allow_unicode=True)
        )


if __name__ == "__main__":
    main()
