"""What training code prints: progress, checkpoints, warnings, progress bars, tracebacks.

Most lines of a real export are this chatter. Severity is what the logging
agent makes of the stream: stdout is ``INFO``, stderr is ``ERROR`` (so
warnings and progress bars are ERROR too), and some lines carry none.
A line is a ``(message, severity)`` pair, ``severity`` None for no severity.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

Line = tuple[str, str | None]

_WARNINGS = (
    "/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py:557: UserWarning: "
    "This DataLoader will create 8 worker processes in total. Our suggested max number of "
    "worker in current system is 4, which is smaller than what this DataLoader is going to "
    "create.",
    "  warnings.warn(_create_warning_msg(",
    "{when}: I tensorflow/core/platform/cpu_feature_guard.cc:182] This "
    "TensorFlow binary is optimized to use available CPU instructions in performance-critical "
    "operations.",
    "{when}: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] "
    "TF-TRT Warning: Could not find TensorRT",
    "WARNING:absl:Found untraced functions such as _jit_compiled_convolution_op while saving. "
    "These functions will not be directly callable after loading.",
    "huggingface/tokenizers: The current process just got forked, after parallelism has "
    "already been used. Disabling parallelism to avoid deadlocks...",
    "/opt/conda/lib/python3.10/site-packages/transformers/optimization.py:411: FutureWarning: "
    "This implementation of AdamW is deprecated and will be removed in a future version.",
)

_SITECUSTOMIZE = (
    "Error in sitecustomize; set PYTHONVERBOSE for traceback:",
    "ModuleNotFoundError: No module named 'pythonjsonlogger'",
)

# A harmless traceback a retrying client prints on every retry (event-dense logs).
_RETRIED = (
    "Traceback (most recent call last):",
    '  File "/opt/conda/lib/python3.10/site-packages/urllib3/connectionpool.py", line 703,'
    " in urlopen",
    "    httplib_response = self._make_request(",
    '  File "/opt/conda/lib/python3.10/http/client.py", line 1375, in getresponse',
    "    response.begin()",
    "ConnectionResetError: [Errno 104] Connection reset by peer",
)

_PIP_BUILD = (
    "Processing /trainer-0.1.tar.gz",
    "  Installing build dependencies: started",
    "  Installing build dependencies: finished with status 'done'",
    "  Getting requirements to build wheel: started",
    "  Getting requirements to build wheel: finished with status 'done'",
    "  Preparing metadata (pyproject.toml): started",
    "  Preparing metadata (pyproject.toml): finished with status 'done'",
)
_PIP_WHEEL = (
    "Building wheels for collected packages: trainer",
    "  Building wheel for trainer (pyproject.toml): started",
    "  Building wheel for trainer (pyproject.toml): finished with status 'done'",
    "Successfully built trainer",
    "Installing collected packages: trainer",
    "Successfully installed trainer-0.1",
)
_PIP_DEPS = (
    "Requirement already satisfied: pyyaml>=6.0 in /opt/python/3.10/lib/python3.10/"
    "site-packages (from trainer==0.1) (6.0.2)",
    "Requirement already satisfied: google-cloud-storage>=2.14 in /opt/python/3.10/lib/"
    "python3.10/site-packages (from trainer==0.1) (2.19.0)",
    "Collecting transformers>=4.38 (from trainer==0.1)",
    "  Downloading transformers-4.41.2-py3-none-any.whl.metadata (43 kB)",
)
_PIP_STDERR = (
    "WARNING: Running pip as the 'root' user can result in broken permissions and conflicting "
    "behaviour with the system package manager, possibly rendering your system unusable. It is "
    "recommended to use a virtual environment instead: https://pip.pypa.io/warnings/venv. Use "
    "the --root-user-action option if you know what you are doing and want to suppress this "
    "warning.",
    "[notice] A new release of pip is available: 25.1.1 -> 26.0.1",
    "[notice] To update, run: pip install --upgrade pip",
)


@dataclass(slots=True)
class TrainingChatter:
    """The running state of one training process, producing its log lines.

    Steps advance with time (``steps_per_second``), so lines far apart in time
    are far apart in steps; a restarted process resumes from its last checkpoint.
    """

    rng: random.Random
    bucket: str
    epochs: int = 20
    steps_per_epoch: int = 1500
    steps_per_second: float = 2.5
    step: int = 0
    checkpoint_every: int = 2000
    last_checkpoint: int = 0
    last_ns: int | None = None
    loss: float = field(default=2.4)
    # The share of lines that are events (a checkpoint, a harmless retried traceback, the
    # sitecustomize ModuleNotFoundError): 0 for a real job's few, more for event-dense logs.
    event_share: float = 0.0
    pending: list[Line] = field(default_factory=list)

    @property
    def epoch(self) -> int:
        return min(self.step // self.steps_per_epoch + 1, self.epochs)

    def next_line(self, ns: int) -> Line:
        """One line of chatter written at ``ns``, advancing the training state."""
        if self.last_ns is not None:
            elapsed = (ns - self.last_ns) / 1e9
            self.step += max(1, int(elapsed * self.steps_per_second * self.rng.uniform(0.9, 1.1)))
        self.last_ns = ns
        self.loss = max(0.05, self.loss * self.rng.uniform(0.985, 1.002))
        if self.pending:
            return self.pending.pop(0)
        if self.event_share and self.rng.random() < self.event_share:
            return self._event_line()
        if self.step - self.last_checkpoint >= self.checkpoint_every:
            self.last_checkpoint = self.step - self.step % 100
            return f"Saving checkpoint to {self.checkpoint_uri()}", "INFO"
        roll = self.rng.random()
        if roll < 0.42:
            return (
                f"step {self.step}: loss={self.loss:.4f} lr={self.rng.choice(('1e-4', '5e-5'))} "
                f"examples/sec={self.rng.uniform(180, 260):.1f}",
                "INFO",
            )
        if roll < 0.62:
            done = self.step % self.steps_per_epoch
            width = 30
            filled = width * done // self.steps_per_epoch
            rate = self.steps_per_second * self.rng.uniform(0.9, 1.1)
            spent, left = int(done / rate), int((self.steps_per_epoch - done) / rate)
            return (
                f"Epoch {self.epoch}/{self.epochs}: {100 * done // self.steps_per_epoch:3d}%|"
                f"{'█' * filled}{' ' * (width - filled)}| {done}/{self.steps_per_epoch} "
                f"[{spent // 60:02d}:{spent % 60:02d}<{left // 60:02d}:{left % 60:02d}, "
                f"{rate:.2f}it/s, loss={self.loss:.3f}]",
                # tqdm writes to stderr: the agent marks it ERROR.
                "ERROR",
            )
        if roll < 0.72:
            return (
                f"Epoch {self.epoch}/{self.epochs} - loss: {self.loss:.4f} - accuracy: "
                f"{min(0.99, 1.02 - self.loss / 3):.4f}",
                None,
            )
        if roll < 0.80:
            when = datetime.fromtimestamp(ns / 1e9, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
            return self.rng.choice(_WARNINGS).replace("{when}", when), "ERROR"
        if roll < 0.90:
            when = datetime.fromtimestamp(ns / 1e9, UTC).strftime("%m%d %H:%M:%S.%f")
            return (
                f"I{when} {self.rng.randint(100, 180)} trainer.py:{self.rng.randint(80, 240)}]"
                f" global_step={self.step} eval_loss={self.loss * 1.1:.4f}",
                "INFO",
            )
        return f"gpu0 util={self.rng.randint(55, 99)}% mem={self.rng.uniform(9, 15):.1f}GiB", None

    def _event_line(self) -> Line:
        """One line of an event-dense log; a traceback's later lines come next."""
        roll = self.rng.random()
        if roll < 0.4:
            return f"Saving checkpoint to gs://{self.bucket}/checkpoints/ckpt-{self.step}", "INFO"
        if roll < 0.7:
            lines: list[Line] = [(line, "ERROR") for line in _RETRIED]
            attempt = self.step % 7 + 1
            lines.append((f"WARNING:root:metrics upload retried (attempt {attempt})", None))
            self.pending.extend(lines[1:])
            return lines[0]
        self.pending.append((_SITECUSTOMIZE[1], "ERROR"))
        return _SITECUSTOMIZE[0], "ERROR"

    def checkpoint_uri(self) -> str:
        """Where the current checkpoint goes."""
        return f"gs://{self.bucket}/checkpoints/ckpt-{self.last_checkpoint}"

    def resume_line(self) -> Line:
        """What a restarted process says when it picks up the last checkpoint."""
        # Training goes back to the checkpoint: later lines count on from there.
        self.step = self.last_checkpoint
        self.last_ns = None
        if self.last_checkpoint:
            return f"Restoring from checkpoint {self.checkpoint_uri()}", "INFO"
        return "No checkpoint found, starting from scratch", "INFO"


def runner_start(
    task: str, node: str, cluster: str, package: str, args: tuple[str, ...]
) -> Iterator[Line]:
    """The prebuilt-container runner's start lines, as real logs show them.

    ``cluster`` is the ``--cluster`` JSON; ``package`` the ``gs://`` package URI.
    """
    pool = "chief" if task.startswith("workerpool0-") else "worker"
    index = int(task.rsplit("-", 1)[1])
    # The runner prints the job spec as protobuf JSON: compact, "=" escaped as \u003d.
    job_args = ",".join('"' + a.replace("=", "\\u003d") + '"' for a in args)
    spec = (
        f'{{"python_module":"trainer.task","package_uris":["{package}"],"job_args":[{job_args}]}}'
    )
    tarball = package.rsplit("/", 1)[1]
    yield f"Updating master address to local address {node}", "INFO"
    yield "Running run_module.py", "INFO"
    yield (
        f"Running task with arguments: --cluster={cluster} "
        f'--task={{"type": "{pool}", "index": {index}}} --job={spec}',
        "INFO",
    )
    yield "Running module trainer.task.", "INFO"
    yield f"Downloading the package: {package}", "INFO"
    yield f"Running command: gsutil -q cp {package} {tarball}", "INFO"
    for _ in range(2):
        yield from ((line, "ERROR") for line in _SITECUSTOMIZE)
    yield f"Installing the package: {package}", "INFO"
    yield (
        f"Running command: pip3 install --user --upgrade --force-reinstall --no-deps {tarball}",
        "INFO",
    )
    yield from ((line, "INFO") for line in (*_PIP_BUILD, *_PIP_WHEEL))
    yield from ((line, "ERROR") for line in _PIP_STDERR)
    yield f"Running command: pip3 install --user {tarball}", "INFO"
    yield from ((line, "INFO") for line in (*_PIP_BUILD, *_PIP_DEPS, *_PIP_WHEEL))
    yield from ((line, "ERROR") for line in _PIP_STDERR)
    yield f"Running command: python3 -m trainer.task {' '.join(args)}", "INFO"


def command_failed(args: tuple[str, ...], code: int) -> Line:
    """The runner's report of the user's process failing (stderr)."""
    argv = ", ".join(f"'{a}'" for a in ("python3", "-m", "trainer.task", *args))
    return f"Command '[{argv}]' returned non-zero exit status {code}.", "ERROR"


def runner_exit(code: int) -> Line:
    """The runner's line when the user's process ends."""
    reason = "SUCCEEDED" if code == 0 else "SUBPROCESS_EXCEPTION"
    return f"Task completed. Exit code ({code}). Exit reason ({reason})", "INFO"


def python_traceback(exception: str, depth: int = 4) -> tuple[str, ...]:
    """A user-code traceback ending with ``exception`` (one string per line)."""
    lines = ["Traceback (most recent call last):"]
    lines += [
        '  File "/opt/python/3.10/lib/python3.10/runpy.py", line 196, in _run_module_as_main',
        "    return _run_code(code, main_globals, None,",
        '  File "/opt/python/3.10/lib/python3.10/runpy.py", line 86, in _run_code',
        "    exec(code, run_globals)",
        '  File "/root/.local/lib/python3.10/site-packages/trainer/task.py", line 212, in <module>',
        "    main()",
    ]
    frames = (
        ("task.py", 188, "main", "    train(model, train_ds, args)"),
        ("task.py", 141, "train", "    for batch in loader:"),
        ("data.py", 77, "__iter__", "    yield self._decode(record)"),
        ("data.py", 52, "_decode", "    label = features['label']"),
        ("model.py", 96, "forward", "    return self.head(x)"),
    )
    for name, line, func, code in frames[:depth]:
        path = f"/root/.local/lib/python3.10/site-packages/trainer/{name}"
        lines.append(f'  File "{path}", line {line}, in {func}')
        lines.append(code)
    lines.append(exception)
    return tuple(lines)


def segfault_dump() -> list[str]:
    """What a Python process killed by SIGSEGV prints (faulthandler)."""
    return [
        "Fatal Python error: Segmentation fault",
        "",
        "Thread 0x00007f3c2d7fe700 (most recent call first):",
        '  File "/opt/conda/lib/python3.10/threading.py", line 324 in wait',
        '  File "/opt/conda/lib/python3.10/site-packages/torch/utils/data/_utils/pin_memory.py", '
        "line 52 in _pin_memory_loop",
        "",
        "Current thread 0x00007f3d9c1b3740 (most recent call first):",
        '  File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/conv.py", '
        "line 456 in _conv_forward",
        '  File "/app/train.py", line 131 in train_step',
    ]
