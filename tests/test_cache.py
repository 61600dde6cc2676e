"""The start-up cache: a cached rule book and cached Hyperscan databases work like new ones,
and a changed rule file, a damaged or foreign cache, or no cache at all change nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from types import MappingProxyType

import pytest

from analyzer.classify._fastscan import blockdecode
from analyzer.core import cache
from analyzer.rulebook import RuleBook, loader
from analyzer.verdict import policy
from analyzer.verdict.policy import RetryPolicy

SAMPLE_TEXTS = [
    "The replica workerpool0-0 exited with a non-zero status of 137. "
    "Termination reason: OOMKilled.",
    "Resources are insufficient in region: us-central1",
    "Epoch 3/20:  14%|████                          | 221/1500 [01:21<07:50, 2.72it/s]",
    "ＯＯＭ while loading the model",
    "Traceback (most recent call last):",
    "plain training output",
]


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(directory))
    return directory


def _no_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object) -> None:
        raise AssertionError("the rules were loaded again instead of read from the cache")

    monkeypatch.setattr(loader, "load", refuse)


def _shape(book: RuleBook) -> list[tuple[object, ...]]:
    # Compiled patterns compare by identity: compare what they were compiled from.
    return [
        (rule.id, rule.category, [(t.lang, t.regex.pattern, t.literals) for t in rule.templates])
        for rule in book.rules
    ]


def _examples(book: RuleBook) -> list[str]:
    texts = list(SAMPLE_TEXTS)
    for rule in book.rules:
        texts += [example.text for example in rule.match_examples]
        texts += [example.text for example in rule.no_match_examples]
    return texts


def test_a_cached_book_matches_like_a_new_one(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh = RuleBook.load()
    assert len(list(cache_dir.glob("rulebook-*.pickle"))) == 1
    _no_loading(monkeypatch)
    cached = RuleBook.load()
    assert cached is not fresh and _shape(cached) == _shape(fresh)
    texts = _examples(fresh)
    assert [cached.match(text) for text in texts] == [fresh.match(text) for text in texts]
    # Its Hyperscan databases came with it, and select as the new book's do.
    assert cached.may_match_texts(texts) == fresh.may_match_texts(texts)


def test_a_changed_rule_file_is_loaded_again(cache_dir: Path, tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    rule = rules / "mine.yaml"
    rule.write_text(
        "- id: team.quota\n"
        "  category: quota\n"
        "  templates:\n"
        '    en: "Team quota reached."\n'
        "  examples:\n"
        "    match:\n"
        '      - "Team quota reached."\n',
        encoding="utf-8",
    )
    first = RuleBook.load([rules])
    assert first.rule("team.quota")
    rule.write_text(rule.read_text().replace("team.quota", "team.budget"), encoding="utf-8")
    second = RuleBook.load([rules])
    assert second.rule("team.budget") and len(list(cache_dir.glob("rulebook-*"))) == 2
    rule.unlink()
    rules.rmdir()
    with pytest.raises(Exception, match="not a directory"):
        RuleBook.load([rules])


def test_a_damaged_cache_is_built_again(cache_dir: Path) -> None:
    fresh = RuleBook.load()
    for path in cache_dir.glob("rulebook-*.pickle"):
        path.write_bytes(b"not a pickle")
    again = RuleBook.load()
    assert _shape(again) == _shape(fresh)
    assert all(p.read_bytes() != b"not a pickle" for p in cache_dir.glob("rulebook-*"))


def test_a_directory_others_may_write_is_not_read(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    RuleBook.load()
    cache_dir.chmod(0o777)
    assert cache.load("rulebook", "anything") is None
    monkeypatch.setattr(loader, "load", _count_loads(loader.load))
    RuleBook.load()
    assert _LOADS == [1]


_LOADS: list[int] = []


def _count_loads(real: object) -> object:
    _LOADS.clear()

    def counted(*args: object) -> object:
        _LOADS.append(1)
        return real(*args)  # type: ignore[operator]

    return counted


@pytest.mark.parametrize("setting", ["off", ""])
def test_the_cache_can_be_turned_off(setting: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.CACHE_ENV, setting)
    assert cache.cache_dir() is None
    cache.store("rulebook", "x", 1)
    assert cache.load("rulebook", "x") is None
    assert RuleBook.load().rules


def test_an_unwritable_cache_is_no_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache directory would go")
    monkeypatch.setenv(cache.CACHE_ENV, str(blocked / "cache"))
    cache.store("rulebook", "x", 1)
    assert cache.load("rulebook", "x") is None
    assert RuleBook.load().rules


def test_the_default_place_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(cache.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.cache_dir() == tmp_path / "jobdoctor"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache.cache_dir() == Path(os.path.expanduser("~")) / ".cache" / "jobdoctor"


@pytest.mark.skipif(not blockdecode.available(), reason="Hyperscan is not installed")
def test_cached_guard_databases_decide_as_new_ones(cache_dir: Path) -> None:
    blocks = [
        b'{"a":1}\n{"b":"\xc3\xa9"}\n',
        b'{"a":1}\n{"b":"\xc3"}\n',
        b'{"a":1} {"b":2}\n',
        b"{}\r\n[]\r\n",
    ]
    new = blockdecode._load_guard()
    assert new is not None and list(cache_dir.glob("guard-*"))
    cached = blockdecode._load_guard()
    assert cached is not None and cached._structure is not new._structure
    for block in blocks:
        assert cached.valid_utf8(block) == new.valid_utf8(block)
        assert cached.shape(block) == new.shape(block)


def test_old_files_go(cache_dir: Path) -> None:
    for number in range(12):
        cache.store("rulebook", f"n{number:02d}", number)
        os.utime(cache_dir / f"rulebook-n{number:02d}.pickle", (number, number))
    cache.store("guard", "g", 0)
    kept = sorted(path.name for path in cache_dir.glob("rulebook-*"))
    assert len(kept) == 8 and kept[0] == "rulebook-n04.pickle"
    assert [cache.load("rulebook", f"n{n:02d}") for n in (3, 11)] == [None, 11]
    assert cache.load("guard", "g") == 0


def test_a_file_that_cannot_be_read_is_part_of_the_key(tmp_path: Path) -> None:
    present = tmp_path / "a.yaml"
    present.write_text("x")
    missing = tmp_path / "gone.py"
    assert cache.key([present, missing]) == cache.key([present, missing])
    missing.write_text("y")
    assert cache.key([present, missing]) != cache.key([present, tmp_path / "gone-too.py"])


def test_remembered_builds_once_and_again_for_a_changed_file(
    cache_dir: Path, tmp_path: Path
) -> None:
    source = tmp_path / "data.txt"
    source.write_text("one")
    builds: list[str] = []

    def build() -> dict[str, str]:
        builds.append(source.read_text())
        return {"value": builds[-1]}

    assert cache.remembered("test", [source], build, dict) == {"value": "one"}
    assert cache.remembered("test", [source], build, dict) == {"value": "one"}
    assert builds == ["one"]
    source.write_text("two")
    assert cache.remembered("test", [source], build, dict) == {"value": "two"}
    assert builds == ["one", "two"]
    # A value of another type under the key (another version's) is built again.
    assert cache.remembered("test", [source], lambda: ["list"], list) == ["list"]


def test_remembered_keeps_nothing_when_building_fails(cache_dir: Path, tmp_path: Path) -> None:
    source = tmp_path / "data.txt"
    source.write_text("bad")

    def fail() -> dict[str, str]:
        raise ValueError("bad data")

    with pytest.raises(ValueError, match="bad data"):
        cache.remembered("test", [source], fail, dict)
    assert not list(cache_dir.glob("test-*"))


def test_the_builtin_policy_and_advice_are_read_without_yaml_the_second_time(
    cache_dir: Path,
) -> None:
    # What a diagnosis loads while the workers scan; PyYAML's import alone is ~11 ms.
    program = (
        "import sys; from analyzer import api; api._load_diagnosing();"
        "from analyzer.verdict.advice import _load, _advice_path;"
        "from analyzer.verdict.policy import load_policy;"
        "print('yaml' in sys.modules, len(_load(_advice_path())),"
        " load_policy().max_worker_restarts)"
    )
    env = {**os.environ, cache.CACHE_ENV: str(cache_dir)}
    runs = [
        subprocess.run(
            [sys.executable, "-c", program], env=env, capture_output=True, text=True, check=True
        ).stdout.split()
        for _ in range(2)
    ]
    assert runs[0][0] == "True" and runs[1][0] == "False"
    assert runs[0][1:] == runs[1][1:] and int(runs[0][1]) > 10
    assert sorted(path.name.split("-")[0] for path in cache_dir.glob("*.pickle")) == [
        "advice",
        "policy",
    ]


def test_a_cached_policy_is_the_policy(cache_dir: Path) -> None:
    read = policy._read_policy(None)
    kept = cache.remembered("policy", [policy.builtin_policy_path()], lambda: read, RetryPolicy)
    again = cache.remembered("policy", [policy.builtin_policy_path()], lambda: read, RetryPolicy)
    assert kept is read and again is not read
    assert again == read and isinstance(again.max_attempts, MappingProxyType)
    assert again.with_scheduling(spot=True).spot


# -- what is read: only this user's own files, whole, naming only what the cache is made of --


def test_a_cache_directory_that_is_a_link_is_not_read(
    cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The directory could be swapped for a link between a check of its path and the read.
    cache.store("test", "x", {"value": 1})
    assert cache.load("test", "x") == {"value": 1}
    link = tmp_path / "link"
    link.symlink_to(cache_dir, target_is_directory=True)
    monkeypatch.setenv(cache.CACHE_ENV, str(link))
    assert cache.load("test", "x") is None


def test_a_cache_file_that_is_a_link_is_not_read(cache_dir: Path, tmp_path: Path) -> None:
    cache.store("test", "x", {"value": 1})
    elsewhere = tmp_path / "elsewhere.pickle"
    os.replace(cache_dir / "test-x.pickle", elsewhere)
    (cache_dir / "test-x.pickle").symlink_to(elsewhere)
    assert cache.load("test", "x") is None


def test_a_file_others_may_write_is_not_read(cache_dir: Path) -> None:
    cache.store("test", "x", {"value": 1})
    (cache_dir / "test-x.pickle").chmod(0o666)
    assert cache.load("test", "x") is None


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a file away needs root"
)
def test_a_file_of_another_user_is_not_read(cache_dir: Path) -> None:
    cache.store("test", "x", {"value": 1})
    os.chown(cache_dir / "test-x.pickle", 65534, 65534)
    assert cache.load("test", "x") is None


def test_a_fifo_in_place_of_a_file_is_not_waited_on(cache_dir: Path) -> None:
    cache.store("test", "y", 1)
    os.mkfifo(cache_dir / "test-x.pickle", 0o600)
    found: list[object] = []
    reading = threading.Thread(target=lambda: found.append(cache.load("test", "x")), daemon=True)
    reading.start()
    reading.join(timeout=10)
    assert found == [None], "the read waited on the FIFO"


def test_a_damaged_file_that_still_unpickles_is_built_again(cache_dir: Path) -> None:
    # A flipped byte in a pickle's string still loads: the state of a job changed silently.
    cache.store("test", "x", {"state": "SUCCEEDED"})
    path = cache_dir / "test-x.pickle"
    damaged = path.read_bytes().replace(b"SUCCEEDED", b"RUNNING!!")
    assert damaged != path.read_bytes()
    path.write_bytes(damaged)
    assert cache.load("test", "x") is None
    assert cache.remembered("test", [], lambda: {"state": "SUCCEEDED"}, dict) == {
        "state": "SUCCEEDED"
    }


class _Planted:
    """A value whose unpickling would call a function of the planter's choosing."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.mkdir, (str(self.target),))


def test_a_file_naming_anything_else_is_not_run(cache_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "ran"
    cache.store("test", "x", _Planted(target))  # a whole file, with a matching checksum
    assert (cache_dir / "test-x.pickle").exists() and not target.exists()
    assert cache.load("test", "x") is None
    assert not target.exists()
