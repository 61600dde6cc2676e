"""A job's plan (what happens when) and its lazy rendering into LogEntry dicts.

A scenario first decides the few facts of a job: the service's lifecycle
lines with their times, and every worker process (:class:`Run`) with its VM,
start, end and how it ends. That plan is small. Rendering it is lazy: each
task's runs and the service script become time-ordered streams, merged by
timestamp, so that a job with hours of chatter never sits in memory.
"""

from __future__ import annotations

import heapq
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
    exception: str = ""
    runner: bool = True  # prebuilt container: the runner writes start and exit lines
    sitecustomize: bool = False


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
    args: str
    chatter_per_minute: float
    cutoff: int | None = None  # the logs stop here (truncated export)
    seed: str = ""

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
        chatter = noise.TrainingChatter(rng=rng, bucket=self.bucket)
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
        preamble += noise.runner_start(run.task, run.machine.hostname, plan.job.job_id,
                                       plan.bucket, plan.args)
        preamble.append(noise.runner_command(plan.args))
    else:
        # A custom container has no runner: its first words are the user's own.
        preamble.append((f"Starting trainer with args: [{plan.args}]", None))
    if run.sitecustomize:
        preamble += noise.sitecustomize_traceback()
    if restarted or chatter.step:
        preamble.append(chatter.resume_line())
    for index, line in enumerate(preamble):
        ns = tick(0.05, 0.6) if index == 0 else tick(0.05, 2.5)
        if ns >= run.end:
            return
        yield ns, line

    # The last words (traceback, runner exit) come in a burst right at the end.
    epilogue = _epilogue(rng, run)
    last_words = run.end - len(epilogue) * 10_000_000
    span = last_words - SECOND - clock
    count = max(2, int(span / (60 * SECOND) * plan.chatter_per_minute))
    step = span / count
    for _ in range(count):
        ns = clock + int(rng.uniform(0.5, 1.5) * step)
        if ns >= last_words - SECOND:
            break
        clock = ns
        yield ns, chatter.next_line(ns)
    clock = max(clock, last_words)
    for line in epilogue:
        yield tick(0.0005, 0.009), line


def _epilogue(rng: random.Random, run: Run) -> list[noise.Line]:
    if run.ending is Ending.SUCCEEDED:
        lines: list[noise.Line] = [("Training finished. Exporting model.", "INFO")]
        return [*lines, noise.runner_exit(0)] if run.runner else lines
    if run.ending is Ending.EXCEPTION:
        lines = [(text, "ERROR") for text in noise.python_traceback(rng, run.exception)]
        return [*lines, noise.runner_exit(run.exit_code)] if run.runner else lines
    if run.ending is Ending.SEGFAULT:
        return [(text, "ERROR") for text in noise.segfault_dump()]
    return []


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
        t = self.say(t + self.seconds(4, 15), "Vertex AI is provisioning job running framework. "
                     "First time usage might take couple of minutes, and subsequent runs can be "
                     "much faster.")
        t = self.say(t + self.seconds(60, 200), "Vertex AI is setting up this job.")
        t = self.say(t + self.seconds(15, 60), "Waiting for training program to start.")
        t = self.say(t + self.seconds(5, 25), "Job is preparing.")
        self.machines = {
            task: Machine(new_resource_id(self.rng), new_hostname(self.rng, task))
            for task in self.tasks
        }
        return t + self.seconds(20, 70)

    def move(self, task: str) -> Machine:
        """The worker moves to another VM: new resource id, same hostname."""
        old = self.machines[task]
        self.machines[task] = Machine(new_resource_id(self.rng), old.hostname)
        return self.machines[task]

    def run(self, task: str, start: int, end: int, ending: Ending, **kw: Any) -> Run:
        """A worker process on the task's current VM."""
        run = Run(task, self.machines[task], start, end, ending, runner=self.runner, **kw)
        self.runs.append(run)
        return run

    def fail(self, t: int, text: str | None, *, teardown: bool = True) -> int:
        """An attempt's failure lines from ``t``; returns the time of ``Job failed.``."""
        if text is not None:
            t = self.say(t, text, "ERROR")
        if teardown:
            t = self.say(t + self.seconds(20, 90), "Finished tearing down training program.")
        return self.say(t + self.seconds(1, 8), "Job failed.")

    def succeed(self, t: int) -> int:
        """Success lines from ``t``; returns the time of ``Job completed successfully.``."""
        t = self.say(t, "Tearing down training program.")
        t = self.say(t + self.seconds(30, 120), "Finished tearing down training program.")
        return self.say(t + self.seconds(1, 6), "Job completed successfully.")

    def build(
        self, expected: Expected, *, bucket: str, args: str, chatter_per_minute: float,
        cutoff: int | None = None, seed: str = "",
    ) -> JobPlan:
        """The frozen plan."""
        return JobPlan(
            job=self.job,
            service=tuple(sorted(self.service, key=lambda line: line.ns)),
            runs=tuple(self.runs),
            expected=expected,
            bucket=bucket,
            args=args,
            chatter_per_minute=chatter_per_minute,
            cutoff=cutoff,
            seed=seed,
        )


def merge_jobs(plans: Sequence[JobPlan]) -> Iterator[dict[str, Any]]:
    """Several jobs' entries interleaved in true time order."""
    return heapq.merge(*(plan.entries() for plan in plans), key=entry_ns)
