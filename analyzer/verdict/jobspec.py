"""A job's own record: ``gcloud ai custom-jobs describe`` output (YAML or JSON), a CustomJob.

It gives what the logs cannot: the machine type of each worker pool (for concrete OOM advice),
the ``scheduling`` settings that change the retry policy, and the recorded ``state`` and
``error.code`` to compare the prediction with.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from analyzer.core.errors import InputError
from analyzer.verdict.policy import RetryPolicy


@dataclass(frozen=True, slots=True)
class MachineType:
    """A Compute Engine machine type: vCPUs and memory in GB."""

    name: str
    vcpus: int
    memory_gb: float

    @property
    def series(self) -> str:
        """``n1-standard`` for ``n1-standard-4``."""
        return self.name.rsplit("-", 1)[0]

    @property
    def family(self) -> str:
        """``n1`` for ``n1-standard-4``."""
        return self.name.split("-", 1)[0]

    @property
    def small(self) -> bool:
        """The smallest types, where system agents can take up to 40% of memory."""
        return self.vcpus <= 4


def _series(prefix: str, gb_per_vcpu: float, sizes: tuple[int, ...]) -> list[MachineType]:
    return [MachineType(f"{prefix}-{n}", n, round(n * gb_per_vcpu, 2)) for n in sizes]


# Common families for custom training (Compute Engine documentation); not exhaustive.
MACHINE_TYPES: Mapping[str, MachineType] = {
    m.name: m
    for m in (
        *_series("n1-standard", 3.75, (4, 8, 16, 32, 64, 96)),
        *_series("n1-highmem", 6.5, (2, 4, 8, 16, 32, 64, 96)),
        *_series("n2-standard", 4, (4, 8, 16, 32, 48, 64, 80)),
        *_series("n2-highmem", 8, (2, 4, 8, 16, 32, 48, 64, 80)),
        *_series("e2-standard", 4, (4, 8, 16, 32)),
        *_series("e2-highmem", 8, (2, 4, 8, 16)),
        *_series("g2-standard", 4, (4, 8, 12, 16, 24, 32, 48, 96)),
        MachineType("a2-highgpu-1g", 12, 85),
        MachineType("a2-highgpu-2g", 24, 170),
        MachineType("a2-highgpu-4g", 48, 340),
        MachineType("a2-highgpu-8g", 96, 680),
        MachineType("a2-megagpu-16g", 96, 1360),
        MachineType("a2-ultragpu-1g", 12, 170),
        MachineType("a2-ultragpu-2g", 24, 340),
        MachineType("a2-ultragpu-4g", 48, 680),
        MachineType("a2-ultragpu-8g", 96, 1360),
        MachineType("a3-highgpu-1g", 26, 234),
        MachineType("a3-highgpu-2g", 52, 468),
        MachineType("a3-highgpu-4g", 104, 936),
        MachineType("a3-highgpu-8g", 208, 1872),
    )
}


def larger_machine(name: str) -> MachineType | None:
    """The next larger type of the same family: more memory in the same series, else the
    high-memory series' type with as many vCPUs."""
    current = MACHINE_TYPES.get(name)
    if current is None:
        return None
    bigger = [
        m
        for m in MACHINE_TYPES.values()
        if m.series == current.series and m.memory_gb > current.memory_gb
    ]
    if bigger:
        return min(bigger, key=lambda m: m.memory_gb)
    highmem = MACHINE_TYPES.get(f"{current.family}-highmem-{current.vcpus}")
    return highmem if highmem is not None and highmem.memory_gb > current.memory_gb else None


@dataclass(frozen=True, slots=True)
class PoolSpec:
    """One worker pool: ``workerpool<index>``, its machine type and replica count."""

    index: int
    machine_type: str | None
    replica_count: int
    accelerator_type: str | None = None
    accelerator_count: int = 0

    @property
    def name(self) -> str:
        return f"workerpool{self.index}"


@dataclass(frozen=True, slots=True)
class JobSpec:
    """What a job's record says. ``job_id`` is None for a spec that was never submitted."""

    job_id: str | None
    state: str | None
    error_code: int | None
    error_message: str | None
    pools: tuple[PoolSpec, ...]
    disable_retries: bool | None = None
    restart_job_on_worker_restart: bool | None = None
    strategy: str | None = None
    # scheduling.timeout: the platform stops the job after it (7 days when not set,
    # platform.md section 2).
    timeout: timedelta | None = None

    def pool(self, replica_or_pool: str | None) -> PoolSpec | None:
        """The pool of ``workerpool1-0`` or ``workerpool1`` (legacy names: the first pool)."""
        if not self.pools:
            return None
        if replica_or_pool and replica_or_pool.startswith("workerpool"):
            digits = replica_or_pool.removeprefix("workerpool").split("-", 1)[0]
            if digits.isdigit():
                return next((p for p in self.pools if p.index == int(digits)), None)
        return self.pools[0]

    def applies_to(self, job_id: str | None) -> bool:
        """Whether this spec describes the job ``job_id`` (a spec without id fits any)."""
        return self.job_id is None or job_id is None or self.job_id == job_id

    def policy(self, base: RetryPolicy) -> RetryPolicy:
        """``base`` with this job's scheduling settings applied."""
        return base.with_scheduling(
            disable_retries=self.disable_retries,
            spot=None if self.strategy is None else self.strategy == "SPOT",
            restart_job_on_worker_restart=self.restart_job_on_worker_restart,
        )


def _get(data: Mapping[str, Any], camel: str) -> Any:
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)
    return data.get(camel, data.get(snake))


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def parse_job_spec(data: Any) -> JobSpec:
    """A :class:`JobSpec` from describe output, a CustomJob, or a bare ``jobSpec`` mapping."""
    if not isinstance(data, dict):
        raise ValueError("a job spec is a JSON object")
    spec = _get(data, "jobSpec")
    if not isinstance(spec, dict):
        spec = data if "workerPoolSpecs" in data or "worker_pool_specs" in data else {}
    scheduling = _get(spec, "scheduling") or {}
    raw_error = data.get("error")
    error: dict[str, Any] = raw_error if isinstance(raw_error, dict) else {}
    code = error.get("code")
    strategy = _get(scheduling, "strategy")
    return JobSpec(
        job_id=_job_id(data.get("name")),
        state=data.get("state") if isinstance(data.get("state"), str) else None,
        error_code=code if isinstance(code, int) else None,
        error_message=error.get("message") if isinstance(error.get("message"), str) else None,
        pools=_pools(spec),
        disable_retries=_bool(_get(scheduling, "disableRetries")),
        restart_job_on_worker_restart=_bool(_get(scheduling, "restartJobOnWorkerRestart")),
        strategy=strategy if isinstance(strategy, str) else None,
        timeout=_duration(_get(scheduling, "timeout")),
    )


def _duration(value: Any) -> timedelta | None:
    """A protobuf Duration as the API's JSON writes it (``"604800s"``, ``"1.5s"``), or a
    mapping of ``seconds`` (and ``nanos``) as a Python client's dict gives it; None else."""
    if isinstance(value, str) and _DURATION.fullmatch(value):
        return timedelta(seconds=float(value[:-1]))
    if isinstance(value, dict) and isinstance(value.get("seconds"), int | str):
        seconds = str(value["seconds"])
        return timedelta(seconds=int(seconds)) if seconds.isdigit() else None
    return None


_DURATION = re.compile(r"\d{1,12}(?:\.\d{1,9})?s")


def _job_id(name: Any) -> str | None:
    """The job id at the end of a CustomJob's resource ``name``
    (``projects/P/locations/L/customJobs/ID``); None for any other."""
    if isinstance(name, str) and "/customJobs/" in name:
        return name.rsplit("/", 1)[-1] or None
    return None


def _pools(spec: dict[str, Any]) -> tuple[PoolSpec, ...]:
    """The worker pools of a ``jobSpec``, each with its index among ``workerPoolSpecs``."""
    pools = []
    for index, raw in enumerate(_get(spec, "workerPoolSpecs") or []):
        if not isinstance(raw, dict) or not raw:
            continue  # an empty pool keeps its index (workerpool numbering)
        machine = _get(raw, "machineSpec") or {}
        count = _get(raw, "replicaCount")
        accelerators = _get(machine, "acceleratorCount")
        pools.append(
            PoolSpec(
                index=index,
                machine_type=_get(machine, "machineType"),
                replica_count=int(count) if str(count or "").isdigit() else 1,
                accelerator_type=_get(machine, "acceleratorType"),
                accelerator_count=int(accelerators) if str(accelerators or "").isdigit() else 0,
            )
        )
    return tuple(pools)


def load_job_spec(path: Path) -> JobSpec:
    """Read ``path``: JSON, or the YAML ``gcloud ai custom-jobs describe`` prints by default;
    raises InputError naming the file when it is neither a job's JSON nor its YAML."""
    try:
        text = path.read_text(encoding="utf-8-sig")
        return parse_job_spec(_document(text))
    except OSError as exc:
        raise InputError(f"{path}: cannot read the job spec ({exc.strerror})") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(
            f"{path}: not a job spec ({exc}); give the output of "
            "'gcloud ai custom-jobs describe JOB' (YAML) or with --format=json"
        ) from exc


ENDPOINT = "Using endpoint ["


def _document(text: str) -> Any:
    """The value of a describe output: JSON when it starts like JSON, else YAML (its first
    document; gcloud may print a ``Using endpoint [...]`` line before it, on stderr or not)."""
    body = text.lstrip()
    if body[:1] in ("{", "["):
        return json.loads(body)
    import yaml

    from analyzer.ingest.gcloud_yaml import EntryLoader

    # gcloud's endpoint line blanked, not removed: a YAML error keeps its line number. (Not
    # every preamble line: "state: ..." is the job's own here.)
    lines = ["" if line.startswith(ENDPOINT) else line for line in text.splitlines()]
    try:
        # The loader that keeps timestamps as text (createTime: '2024-...Z' quoted or not).
        for document in yaml.load_all("\n".join(lines), Loader=EntryLoader):
            if document is not None:
                return document
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ValueError(f"invalid YAML{where}") from None
    raise ValueError("empty")
