"""Sink trees for the gs:// and Dask tests: each on disk and, uploaded, in the emulator.

- ``fixture``: ``tests/fixtures/ingest/sink_tree`` (regular and late shards, a hidden file);
- ``scenarios``: every simulator scenario, one job each, as a sink writes them;
- ``fleet``: the simulator's benchmark fleet (many jobs of mixed fates), a few MB.
"""

from __future__ import annotations

import itertools
import shutil
from dataclasses import dataclass
from pathlib import Path

from analyzer.simulate import SCENARIOS, simulate
from analyzer.simulate.fleet import fleet
from analyzer.simulate.tree import write_sink_tree
from analyzer.simulate.writers import sink_lines

FIXTURE_TREE = Path(__file__).parent / "fixtures" / "ingest" / "sink_tree"
BUCKET = "sink-bucket"
FLEET_BYTES = 16_000_000


@dataclass(frozen=True, slots=True)
class Tree:
    """One sink tree: its folder on disk and the same files under a gs:// prefix."""

    name: str
    local: Path
    uri: str

    def as_local(self, text: str) -> str:
        """``text`` (a report of the gs:// tree) with its object paths as the local files'."""
        return text.replace(self.uri, f"{self.local}/")


def make_trees(root: Path) -> dict[str, Path]:
    """The trees of the module docstring, written under ``root``."""
    fixture = root / "fixture"
    shutil.copytree(FIXTURE_TREE, fixture)
    scenarios = root / "scenarios"
    lines = itertools.chain.from_iterable(
        sink_lines(simulate(name, seed), seed=seed) for seed, name in enumerate(SCENARIOS)
    )
    write_sink_tree(lines, scenarios)
    fleet_root = root / "fleet"
    write_sink_tree(fleet(FLEET_BYTES, seed=3), fleet_root, seed=3)
    return {"fixture": fixture, "scenarios": scenarios, "fleet": fleet_root}
