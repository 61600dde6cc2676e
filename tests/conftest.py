"""Test-wide settings."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

from analyzer.cache import CACHE_ENV

# The tests (and the CLI runs they start) keep their cache apart from the user's.
os.environ[CACHE_ENV] = tempfile.mkdtemp(prefix="jobdoctor-test-cache-")


@pytest.fixture(scope="session")
def storage_emulator() -> Iterator[Any]:
    """The Cloud Storage emulator (``tests/storage_emulator.py``) for the whole session, with
    STORAGE_EMULATOR_HOST pointing at it."""
    pytest.importorskip("gcp_storage_emulator", reason="pip install -e '.[test]' installs it")
    from tests.storage_emulator import StorageEmulator

    with StorageEmulator() as emulator:
        yield emulator


@pytest.fixture(scope="session")
def sink_trees(storage_emulator: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The sink trees of ``tests/sink_trees.py``, on disk and uploaded to the emulator."""
    from tests.sink_trees import BUCKET, Tree, make_trees

    trees = {}
    for name, local in make_trees(tmp_path_factory.mktemp("trees")).items():
        storage_emulator.upload_tree(BUCKET, f"{name}/", local)
        trees[name] = Tree(name, local, f"gs://{BUCKET}/{name}/")
    return trees
