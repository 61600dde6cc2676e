"""Regenerate every SDK capture: the real Vertex AI SDK driven against the loopback fake.

One command, from the repository root, in the project's virtualenv (which holds the current
SDK, 2.x, from the ``test`` extra)::

    python -m tests.sdk.capture                 # every case, every variant
    python -m tests.sdk.capture --case cancelled --variant sdk2-py311

The other variants run the SDK from virtualenvs of their own (``--venvs DIR``, default
``/tmp``), made once with::

    python3.11 -m venv /tmp/aip1-165
    /tmp/aip1-165/bin/pip install 'google-cloud-aiplatform==1.165.1' ipykernel
    python3.11 -m venv /tmp/aip1-154
    /tmp/aip1-154/bin/pip install 'google-cloud-aiplatform==1.154.0' ipykernel
    python3.10 -m venv /tmp/aip1-154-py310
    /tmp/aip1-154-py310/bin/pip install 'google-cloud-aiplatform==1.154.0' ipykernel
    python3.11 -m venv /tmp/aip1-154-apicore223
    /tmp/aip1-154-apicore223/bin/pip install 'google-cloud-aiplatform==1.154.0' \
        'google-api-core[grpc]<2.24'

Under ``logging.basicConfig(level=INFO)`` the SDK prints its lines through the root logger
(``INFO:google.cloud.aiplatform.jobs:...``, on stderr) only until its first API client is made:
google-api-core 2.24 and later then stop the ``google`` logger's propagation (its
``client_logging.setup_logging``), so with current libraries the user sees ``Creating
CustomJob`` and then only the error (``sdk2-py311-logging``). ``sdk1.154-py311-logging`` runs
with google-api-core 2.23, before that change: every line keeps the prefix.

1.165.1 is the last 1.x; it prints states by name, as 2.x does. 1.154.0 is the last release that
formats the state enum itself (``"%s" % state``; 1.155.0 changed it to ``state.name``): on Python
3.11 that prints the integer (``3``), on 3.10 ``JobState.JOB_STATE_RUNNING``.

Writes ``tests/sdk/captures/<case>/<variant>.txt`` (a terminal: stdout and stderr interleaved as
they came, ``PYTHONUNBUFFERED``), ``<variant>.ipynb`` (the same code run cell by cell in a real
Jupyter kernel by nbclient, saved with its outputs), ``truth.yaml`` (from the script, see
:func:`tests.sdk.drive.truth`) and ``captures/variants.yaml`` (each variant's SDK and Python).
A Ctrl-C is a real SIGINT, sent to the script's process or to the kernel once the fake has
served the job's state the case's number of times.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.sdk.drive import CASES, Case, prelude, truth
from tests.sdk.fake_vertex import FakeVertex

HERE = Path(__file__).resolve().parent
CAPTURES = HERE / "captures"
WORKDIR = Path(tempfile.gettempdir()) / "jobdoctor-sdk-captures"
TIMEOUT = 180.0


@dataclass(frozen=True)
class Variant:
    """How one capture is made: which SDK (the virtualenv's python), in a terminal or a
    notebook, with ``logging.basicConfig(level=INFO)`` or the SDK's own handler."""

    name: str
    venv: str | None  # None: this interpreter's (the project's virtualenv)
    notebook: bool = False
    logging_config: bool = False

    def python(self, venvs: Path) -> str:
        return sys.executable if self.venv is None else str(venvs / self.venv / "bin" / "python")

    @property
    def suffix(self) -> str:
        return ".ipynb" if self.notebook else ".txt"


VARIANTS = (
    Variant("sdk2-py311", None),
    Variant("sdk2-py311-logging", None, logging_config=True),
    Variant("sdk2-py311", None, notebook=True),
    Variant("sdk1.165-py311", "aip1-165"),
    Variant("sdk1.154-py311", "aip1-154"),
    Variant("sdk1.154-py311", "aip1-154", notebook=True),
    Variant("sdk1.154-py310", "aip1-154-py310"),
    Variant("sdk1.154-py311-logging", "aip1-154-apicore223", logging_config=True),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", help="only these cases (repeatable)")
    parser.add_argument("--variant", action="append", help="only these variants (repeatable)")
    parser.add_argument(
        "--venvs", type=Path, default=Path("/tmp"), help="where the 1.x virtualenvs are"
    )
    parser.add_argument("--terminal-only", action="store_true", help="no notebooks")
    parser.add_argument(
        "--variants-only", action="store_true", help="only rewrite captures/variants.yaml"
    )
    args = parser.parse_args(argv)
    cases = [c for c in CASES if not args.case or c.name in args.case]
    variants = [
        v
        for v in VARIANTS
        if (not args.variant or v.name in args.variant) and not (args.terminal_only and v.notebook)
    ]
    if unknown := set(args.case or ()) - {c.name for c in CASES}:
        parser.error(f"unknown case(s): {', '.join(sorted(unknown))}")
    for variant in variants:
        missing = variant.python(args.venvs)
        if not Path(missing).exists():
            parser.error(f"{variant.name}: no {missing}; make it as this module's docstring says")
    _write_variants(variants, args.venvs)
    if args.variants_only:
        return 0
    for case in cases:
        folder = CAPTURES / case.name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "truth.yaml").write_text(
            yaml.safe_dump(truth(case), sort_keys=False, allow_unicode=True)
        )
        for variant in variants:
            started = time.monotonic()
            capture(case, variant, args.venvs, folder / (variant.name + variant.suffix))
            print(
                f"{case.name}/{variant.name}{variant.suffix}: {time.monotonic() - started:.1f} s",
                flush=True,
            )
    return 0


def capture(case: Case, variant: Variant, venvs: Path, target: Path) -> None:
    """Run ``case`` as ``variant`` against a fresh fake; write what it showed to ``target``."""
    run_dir = WORKDIR / case.name
    run_dir.mkdir(parents=True, exist_ok=True)
    with FakeVertex([job.script for job in case.jobs]) as fake, _storage(case) as storage_env:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FORCE_COLOR")}
        env.update(fake.environ(), PYTHONUNBUFFERED="1")
        env.update(storage_env)
        cells = tuple(
            map(_formatted, (prelude(logging_config=variant.logging_config), *case.cells))
        )
        if variant.notebook:
            _notebook(case, cells, variant.python(venvs), env, run_dir, fake, target)
        else:
            _terminal(case, cells, variant.python(venvs), env, run_dir, fake, target)
        if fake.unserved:
            raise RuntimeError(
                f"{case.name}/{variant.name}: the SDK called unserved {fake.unserved}"
            )
        _check_served(case, fake)


def _formatted(code: str) -> str:
    """The cell as the project's formatter writes it: the notebooks are files under tests/,
    which ``ruff format tests`` and ``ruff check tests`` go through."""
    ruff = Path(sys.executable).parent / "ruff"
    done = subprocess.run(
        [str(ruff), "format", "--stdin-filename", "cell.py", "-"],
        input=code,
        capture_output=True,
        text=True,
        check=True,
        cwd=HERE.parents[1],
    )
    return done.stdout


def _check_served(case: Case, fake: FakeVertex) -> None:
    """The fake served each job's scripted states to its end (the truth's states)."""
    for job in case.jobs:
        served, scripted = fake.last_served(job.script.name), job.script.final_state
        if job.script.refuse is not None:
            continue
        if served != scripted:
            raise RuntimeError(
                f"{case.name}: {job.script.name} last served {served}, scripted {scripted}"
            )


def _terminal(
    case: Case,
    cells: tuple[str, ...],
    python: str,
    env: dict[str, str],
    run_dir: Path,
    fake: FakeVertex,
    target: Path,
) -> None:
    script = run_dir / "train.py"
    script.write_text("\n".join(cells))
    process = subprocess.Popen(
        [python, script.name],
        cwd=run_dir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    with _interrupter(case, fake, lambda: process.send_signal(signal.SIGINT)):
        out, _ = process.communicate(timeout=TIMEOUT)
    target.write_bytes(out)


def _notebook(
    case: Case,
    cells: tuple[str, ...],
    python: str,
    env: dict[str, str],
    run_dir: Path,
    fake: FakeVertex,
    target: Path,
) -> None:
    import nbformat
    from nbclient import NotebookClient

    kernel = _kernelspec(python)
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(cell.rstrip("\n")) for cell in cells]
    client = NotebookClient(
        notebook,
        kernel_name=kernel,
        timeout=int(TIMEOUT),
        allow_errors=True,
        resources={"metadata": {"path": str(run_dir)}},
    )

    def interrupt() -> None:
        # What the notebook's stop button does for an ipykernel (interrupt_mode "signal").
        os.kill(client.km.provisioner.process.pid, signal.SIGINT)

    with _interrupter(case, fake, interrupt):
        client.execute(env=env)
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    nbformat.write(notebook, str(target))


def _kernelspec(python: str) -> str:
    """A kernel running ``python``'s ipykernel, named after its virtualenv."""
    root = WORKDIR / "jupyter"
    name = "sdkcap-" + Path(python).parent.parent.name.replace(".", "-")
    spec = root / "kernels" / name
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": name,
                "language": "python",
                "interrupt_mode": "signal",
            }
        )
    )
    os.environ["JUPYTER_PATH"] = str(root)
    return name


@contextmanager
def _interrupter(case: Case, fake: FakeVertex, interrupt: Callable[[], None]) -> Iterator[None]:
    """Ctrl-C once the case's job has been read ``interrupt_after`` times (none if no Ctrl-C).
    The signal comes half a poll after that read, while the SDK sleeps, as a user's does."""
    if case.interrupt_after is None:
        yield
        return
    name = case.jobs[0].script.name
    count = case.interrupt_after
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            if fake.reads(name) >= count:
                time.sleep(0.05)
                interrupt()
                return
            time.sleep(0.01)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join()


@contextmanager
def _storage(case: Case) -> Iterator[dict[str, str]]:
    """A Cloud Storage emulator with the staging bucket, for the cases that upload a script."""
    if not case.needs_storage:
        yield {}
        return
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    from tests.storage_emulator import ENV, StorageEmulator

    with StorageEmulator() as emulator:
        client = storage.Client(
            project="my-project",
            credentials=AnonymousCredentials(),
            client_options={"api_endpoint": emulator.url},
        )
        client.create_bucket("my-bucket")
        yield {ENV: emulator.url}


def _write_variants(variants: list[Variant], venvs: Path) -> None:
    """captures/variants.yaml: each variant's SDK and Python versions, asked of its interpreter."""
    path = CAPTURES / "variants.yaml"
    known: dict[str, Any] = yaml.safe_load(path.read_text()) if path.exists() else {}
    probe = (
        "import sys; from google.cloud import aiplatform; from google.api_core import version; "
        "print(aiplatform.__version__, sys.version.split()[0], version.__version__)"
    )
    for variant in variants:
        sdk, python, api_core = subprocess.run(
            [variant.python(venvs), "-c", probe], capture_output=True, text=True, check=True
        ).stdout.split()
        known[variant.name] = {
            "sdk": sdk,
            "python": python,
            "google_api_core": api_core,
            "logging_basicConfig": variant.logging_config,
            "files": sorted({*known.get(variant.name, {}).get("files", []), variant.suffix}),
        }
    CAPTURES.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(dict(sorted(known.items())), sort_keys=False))


if __name__ == "__main__":
    sys.exit(main())
