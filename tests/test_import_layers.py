"""What the import contracts (pyproject.toml's ``[tool.importlinter]``, run by ``lint-imports``
in .ci/run) cannot say: that no import circle runs (a layers contract allows one inside a
layer), and what a stage loads when imported (the later stages load no reading machinery, issue
19 point 6; the stage types load neither the API nor the reports)."""

from __future__ import annotations

import subprocess
import sys

import pytest

# What a stage must not load: the fast scan, the process pool and their native libraries.
READING_MACHINERY = (
    "msgspec",
    "hyperscan",
    "analyzer.classify._fastscan",
    "analyzer.core.processes",
)


def _loaded(module: str) -> set[str]:
    """The modules a fresh interpreter has loaded after importing ``module``."""
    code = f"import sys, {module}; print('\\n'.join(sorted(sys.modules)))"
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return set(found.stdout.split())


def _circles() -> list[list[str]]:
    """The import circles among analyzer's modules at run time (imports under TYPE_CHECKING
    left out; imports inside functions counted: they run too)."""
    import grimp

    graph = grimp.build_graph(
        "analyzer", include_external_packages=False, exclude_type_checking_imports=True
    )
    return [sorted(c) for c in _strongly_connected(graph) if len(c) > 1]


def _strongly_connected(graph: object) -> list[set[str]]:
    """Tarjan's strongly connected components of ``graph``'s modules, iteratively."""
    edges = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}  # type: ignore[attr-defined]
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                found.append(component)
    return found


def test_no_import_circle_runs() -> None:
    assert _circles() == []


def test_the_circle_finder_finds_circles() -> None:
    # The check above would pass vacuously if the finder found nothing ever.
    class Graph:
        modules = frozenset({"a", "b", "c", "d"})

        def find_modules_directly_imported_by(self, module: str) -> set[str]:
            return {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}[module]

    assert sorted(map(sorted, _strongly_connected(Graph()))) == [["a", "b", "c"], ["d"]]


@pytest.mark.parametrize(
    "module",
    [
        "analyzer.classify.joblog",
        "analyzer.timeline.attempts",
        "analyzer.verdict.predict",
        "analyzer.verdict.diagnosis",
        "analyzer.pipeline.analysis",
        "analyzer.verdict.explain",
        "analyzer.report.text",
        "analyzer.report.html",
    ],
)
def test_later_stages_load_no_reading_machinery(module: str) -> None:
    loaded = _loaded(module)
    assert not loaded & set(READING_MACHINERY), sorted(loaded & set(READING_MACHINERY))


@pytest.mark.parametrize(
    "module",
    ["analyzer.classify.joblog", "analyzer.pipeline.analysis", "analyzer.verdict.diagnosis"],
)
def test_stage_types_import_neither_the_api_nor_the_reports(module: str) -> None:
    loaded = _loaded(module)
    above = {"analyzer.api", "analyzer.classify.collector", "analyzer.cli.app"} | {
        name for name in loaded if name.startswith("analyzer.report")
    }
    assert not loaded & above, sorted(loaded & above)


def test_the_reading_stage_does_load_the_fast_scan() -> None:
    # The check above would pass vacuously if the names were wrong.
    assert {"analyzer.classify._fastscan", "msgspec"} <= _loaded("analyzer.classify.collector")
