"""The standing campaign, briefly: a seeded corruption corpus (tests/corruption.py) and a
Hypothesis target over the same mutations. Every input is read or refused in one line, every
line is accounted for, no record is lost where the damage kept it, every report renders, and
nothing takes longer than a few seconds. Then issue 31's attacks (tests/attacks.py), each
bounded in time.

CI runs 100 inputs and 60 examples (seconds); ``JOBDOCTOR_CORPUS=20000`` or
``python -m tests.corruption 20000 SEED`` runs a long campaign (docs/development.md).
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.attacks import ATTACKS, Attack, run_attack
from tests.corruption import MUTATIONS, Case, check_input, corpus, mutate, seeds

COUNT = int(os.environ.get("JOBDOCTOR_CORPUS", "100"))
EXAMPLES = int(os.environ.get("JOBDOCTOR_FUZZ_EXAMPLES", "60"))
SEEDS = seeds()


def test_the_corpus_is_seeded_and_covers_every_mutation() -> None:
    first = [(case.name, case.data) for case in corpus(7, 60)]
    assert first == [(case.name, case.data) for case in corpus(7, 60)]
    assert first != [(case.name, case.data) for case in corpus(8, 60)]
    used = {name for case in corpus(0, 400) for name in case.name.split("-", 1)[1].split("+")}
    for name, _, _ in MUTATIONS:
        assert any(name in part for part in used), name


def test_every_damaged_input_is_read_or_refused_and_accounted(tmp_path: Path) -> None:
    failures = {}
    tried = 0
    for case in corpus(0, COUNT):
        tried += 1
        wrong = check_input(case, tmp_path)
        if wrong:
            failures[case.name] = wrong
    assert tried == COUNT and not failures, failures


def test_the_check_finds_a_lost_record(tmp_path: Path) -> None:
    # The check itself can fail: an input that silently drops a record is caught.
    original = next(data for name, data in SEEDS if name == "sink.jsonl")
    lines = original.splitlines(keepends=True)
    damaged = Case("dropped", b"".join(lines[1:]), keeps_records_of=original)
    assert check_input(damaged, tmp_path) == ["lost records: 4 of 5"]


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    sample=st.sampled_from(range(len(SEEDS))),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
    steps=st.integers(min_value=1, max_value=3),
)
def test_hypothesis_over_the_mutations(
    tmp_path_factory: pytest.TempPathFactory, sample: int, seed: int, steps: int
) -> None:
    name, original = SEEDS[sample]
    data, names, keeps = mutate(original, random.Random(seed), steps)
    case = Case(f"{name}-{'+'.join(names)}", data, original if keeps else None)
    assert check_input(case, tmp_path_factory.mktemp("fuzz")) == []


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda attack: attack.name)
def test_the_hostile_campaign(attack: Attack, tmp_path: Path) -> None:
    """Issue 31's attacks (tests/attacks.py), each through the real CLI or API within its
    CPU budget: the whole campaign takes about 30 s of CPU."""
    assert run_attack(attack, tmp_path) == []


def test_the_campaign_catches_a_slow_attack(tmp_path: Path) -> None:
    # The budget is enforced: an attack that burns its budget fails.
    def spin(folder: Path) -> list[str]:
        end = time.process_time() + 0.3
        while time.process_time() < end:
            pass
        return []

    assert run_attack(Attack("spin", spin, 0.1), tmp_path)[-1].startswith("took ")
