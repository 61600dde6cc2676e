"""A job's plan (what happens when) and its lazy rendering into LogEntry dicts.

A scenario first decides the few facts of a job: the service's lifecycle
lines with their times, and every worker process (:class:`Run`) with its VM,
start, end and how it ends. That plan is small. Rendering it is lazy: each
task's runs and the service script become time-ordered streams, merged by
timestamp, so that a job with hours of chatter never sits in memory.
"""

from __future__ import annotations

import heapq
import json
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from analyzer.simulate import noise
from analyzer.simulate.entries import (
    SECOND,
    JobIdentity,
    Machine,
    entry_ns,
    new_hostname,
    new_node_name,
    new_pool_suffix,
    new_resource_id,
    service_entry,
    worker_entry,
)


@dataclass(frozen=True, slots=True)
class Expected:
    """The verdict a scenario implies for one job (the ``jobs[]`` of the JSON contract).

    ``state`` is a ``JobState`` name; ``observed_final`` is False when the
    logs stop before the job ends and the state has to be predicted;
    ``attempts``/``retries`` are final (predicted) figures; ``category`` is
    the root cause of the first failed attempt (also for a job that later
    succeeded), None when no attempt failed; ``worker_restarts`` holds, per
    replica, the process starts after the first one in each attempt, summed
    over attempts (VM-maintenance moves included), replicas with none left out.
    """

    state: str
    observed_final: bool
    attempts: int
    retries: int
    category: str | None
    worker_restarts: Mapping[str, int]
    job_id: str | None
    # A hang (issue 30): the ``stalled.kind`` the job's diagnosis gives, and which workers
    # are silent; None: not stalled.
    stalled: str | None = None
    silent: tuple[str, ...] = ()


class Ending(StrEnum):
    """How one worker process ends, which decides its last lines."""

    SUCCEEDED = "succeeded"  # user code returns; runner reports exit 0
    EXCEPTION = "exception"  # Python traceback on stderr; runner reports the exit code
    SEGFAULT = "segfault"  # faulthandler dump; custom container, no runner line
    KILLED = "killed"  # killed from outside (OOM, VM maintenance, teardown): no last words
    OPEN = "open"  # still running when the logs stop


@dataclass(frozen=True, slots=True)
class Run:
    """One process lifetime of one worker, on one VM."""

    task: str
    machine: Machine
    start: int
    end: int
    ending: Ending
    exit_code: int = 0
    traceback: tuple[str, ...] = ()  # what the process prints on stderr as it dies
    runner: bool = True  # prebuilt container: the runner writes start and exit lines
    cluster: str = ""  # the runner's --cluster JSON
    # A process that writes nothing for a while (stuck in a collective, a quiet evaluation):
    # no chatter from ``quiet[0]`` to ``quiet[1]``; ``last_words`` of an OPEN run are written
    # at its end all the same (a watchdog's line after the silence).
    quiet: tuple[int, int] | None = None
    last_words: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ServiceLine:
    """One message of the training service."""

    ns: int
    text: str
    severity: str = "INFO"


@dataclass(frozen=True, slots=True)
class JobPlan:
    """Everything about one simulated job, before rendering."""

    job: JobIdentity
    service: Sequence[ServiceLine]
    runs: Sequence[Run]
    expected: Expected
    bucket: str
    package: str
    args: tuple[str, ...]
    chatter_per_minute: float
    cutoff: int | None = None  # the logs stop here (truncated export)
    seed: str = ""
    event_share: float = 0.0  # noise.TrainingChatter.event_share: event-dense chatter

    def entries(self) -> Iterator[dict[str, Any]]:
        """The job's LogEntry dicts in true time order, generated lazily."""
        streams: list[Iterator[tuple[int, dict[str, Any]]]] = [self._service_stream()]
        tasks: dict[str, list[Run]] = {}
        for run in self.runs:
            tasks.setdefault(run.task, []).append(run)
        for task, runs in sorted(tasks.items()):
            streams.append(self._task_stream(task, sorted(runs, key=lambda r: r.start)))
        for ns, entry in heapq.merge(*streams, key=lambda item: item[0]):
            if self.cutoff is not None and ns > self.cutoff:
                return
            yield entry

    def _service_stream(self) -> Iterator[tuple[int, dict[str, Any]]]:
        rng = random.Random(f"{self.seed}:service")
        for line in self.service:
            yield line.ns, service_entry(rng, self.job, line.ns, line.text, line.severity)

    def _task_stream(self, task: str, runs: list[Run]) -> Iterator[tuple[int, dict[str, Any]]]:
        rng = random.Random(f"{self.seed}:{task}")
        # One chatter state per task, so a restarted process resumes the step count.
        chatter = noise.TrainingChatter(rng=rng, bucket=self.bucket, event_share=self.event_share)
        for index, run in enumerate(runs):
            for ns, (message, severity) in _render_run(rng, run, chatter, self, index > 0):
                yield ns, worker_entry(rng, self.job, ns, task, run.machine, message, severity)


def _render_run(
    rng: random.Random, run: Run, chatter: noise.TrainingChatter, plan: JobPlan, restarted: bool
) -> Iterator[tuple[int, noise.Line]]:
    """Timed lines of one process, all inside ``[run.start, run.end]``."""
    clock = run.start

    def tick(low: float, high: float) -> int:
        nonlocal clock
        clock += int(rng.uniform(low, high) * SECOND)
        return clock

    # What a process says before training; cut short when it is killed early.
    preamble: list[noise.Line] = []
    if run.runner:
        preamble += noise.runner_start(
            run.task, run.machine.node, run.cluster, plan.package, plan.args
        )
    else:
        # A custom container has no runner: its first words are the user's own.
        preamble.append((f"Starting trainer with args: {list(plan.args)}", None))
    if restarted or chatter.step:
        preamble.append(chatter.resume_line())
    for index, line in enumerate(preamble):
        # The runner's first lines come within the same second.
        ns = tick(0.001, 0.3) if index < 3 else tick(0.02, 1.8)
        if ns >= run.end:
            return
        yield ns, line

    # The last words (traceback, runner exit) come in a burst right at the end.
    epilogue = _epilogue(run, plan.args)
    last_words = run.end - sum(int(delay * SECOND) for delay, _ in epilogue)
    span = last_words - SECOND - clock
    count = max(2, int(span / (60 * SECOND) * plan.chatter_per_minute))
    step = span / count
    quiet = run.quiet or (last_words, last_words)
    for _ in range(count):
        ns = clock + int(rng.uniform(0.5, 1.5) * step)
        if ns >= last_words - SECOND:
            break
        clock = ns
        if not quiet[0] <= ns < quiet[1]:
            yield ns, chatter.next_line(ns)
    clock = max(clock, last_words)
    for delay, line in epilogue:
        clock += int(delay * SECOND)
        yield clock, line


def _epilogue(run: Run, args: tuple[str, ...]) -> list[tuple[float, noise.Line]]:
    """The last lines of a process, each with its delay after the previous one."""
    lines: list[tuple[float, noise.Line]] = []
    if run.ending is Ending.SUCCEEDED:
        lines.append((0.01, ("Training finished. Exporting model.", "INFO")))
        if run.runner:
            lines.append((2.5, noise.runner_exit(0)))
    elif run.ending is Ending.EXCEPTION:
        lines += [(0.001, (text, "ERROR")) for text in run.traceback]
        if run.runner:
            # The runner notices a few seconds later, then reports the exit.
            lines.append((2.8, noise.command_failed(args, run.exit_code)))
            lines.append((0.02, noise.runner_exit(run.exit_code)))
    elif run.ending is Ending.SEGFAULT:
        lines += [(0.001, (text, "ERROR")) for text in noise.segfault_dump()]
    elif run.ending is Ending.OPEN:
        lines += [(0.001, (text, "ERROR")) for text in run.last_words]
    return lines


@dataclass(slots=True)
class JobBuilder:
    """Writes a plan step by step: service lines, worker runs, VMs.

    Internal to the simulator; scenarios use it and hand back a frozen :class:`JobPlan`.
    """

    rng: random.Random
    job: JobIdentity
    tasks: Sequence[str]
    runner: bool = True
    service: list[ServiceLine] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    machines: dict[str, Machine] = field(default_factory=dict)

    def seconds(self, low: float, high: float) -> int:
        """A random duration in nanoseconds."""
        return int(self.rng.uniform(low, high) * SECOND)

    def say(self, ns: int, text: str, severity: str = "INFO") -> int:
        """A service line at ``ns``; returns ``ns``."""
        self.service.append(ServiceLine(ns, text, severity))
        return ns

    def provision(self, t: int) -> int:
        """An attempt's start lines from ``t``; returns when workers start (new VMs)."""
        self.say(t, "Waiting for job to be provisioned.")
        t = self.say(
            t + self.seconds(0.05, 8),
            "Vertex AI is provisioning job running framework. "
            "First time usage might take couple of minutes, and subsequent runs can be "
            "much faster.",
        )
        t = self.say(t + self.seconds(0.05, 90), "Vertex AI is setting up this job.")
        t = self.say(t + self.seconds(0.05, 30), "Waiting for training program to start.")
        t = self.say(t + self.seconds(0.3, 2), "Job is preparing.")
        suffixes = {task.rsplit("-", 1)[0]: new_pool_suffix(self.rng) for task in self.tasks}
        self.machines = {
            task: Machine(
                new_resource_id(self.rng),
                new_hostname(suffixes[task.rsplit("-", 1)[0]], task),
                new_node_name(self.rng),
            )
            for task in self.tasks
        }
        # Nodes come up for minutes; "Job is running." may precede or follow the workers' lines.
        return t + self.seconds(150, 270)

    def move(self, task: str) -> Machine:
        """The worker moves to another VM: new resource id, same hostname."""
        old = self.machines[task]
        self.machines[task] = Machine(
            new_resource_id(self.rng), old.hostname, new_node_name(self.rng)
        )
        return self.machines[task]

    def run(self, task: str, start: int, end: int, ending: Ending, **kw: Any) -> Run:
        """A worker process on the task's current VM."""
        hosts = {t: f"{m.hostname}:2222" for t, m in self.machines.items()}
        chief = [h for t, h in hosts.items() if t.startswith("workerpool0-")]
        workers = [h for t, h in hosts.items() if not t.startswith("workerpool0-")]
        cluster = {"chief": chief, **({"worker": workers} if workers else {})}
        run = Run(
            task,
            self.machines[task],
            start,
            end,
            ending,
            runner=self.runner,
            cluster=json.dumps(cluster),
            **kw,
        )
        self.runs.append(run)
        return run

    def fail(self, t: int, text: str | None, *, teardown: bool = True) -> int:
        """An attempt's failure lines from ``t``; returns the time of ``Job failed.``."""
        if text is not None:
            t = self.say(t, text, "ERROR")
        if teardown:
            t = self.say(t + self.seconds(60, 120), "Finished tearing down training program.")
        return self.say(t + self.seconds(0.01, 1), "Job failed.")

    def succeed(self, t: int) -> int:
        """Success lines from ``t``; returns the time of ``Job completed successfully.``."""
        t = self.say(t, "Tearing down training program.")
        t = self.say(t + self.seconds(30, 120), "Finished tearing down training program.")
        return self.say(t + self.seconds(1, 6), "Job completed successfully.")

    def build(
        self,
        expected: Expected,
        *,
        bucket: str,
        args: tuple[str, ...],
        chatter_per_minute: float,
        cutoff: int | None = None,
        seed: str = "",
    ) -> JobPlan:
        """The frozen plan."""
        return JobPlan(
            job=self.job,
            service=tuple(sorted(self.service, key=lambda line: line.ns)),
            runs=tuple(self.runs),
            expected=expected,
            bucket=bucket,
            package=f"gs://{bucket}/staging/trainer-0.1.tar.gz",
            args=args,
            chatter_per_minute=chatter_per_minute,
            cutoff=cutoff,
            seed=seed,
        )


def merge_jobs(plans: Sequence[JobPlan]) -> Iterator[dict[str, Any]]:
    """Several jobs' entries interleaved in true time order."""
    return heapq.merge(*(plan.entries() for plan in plans), key=entry_ns)
