"""jobdoctor: diagnose Vertex AI custom training jobs from their Cloud Logging logs.

The notebook API::

    from analyzer import diagnose, diagnose_frame, read_logs
    jobs = diagnose_frame("exports/")     # one row per job (also a list: glob.glob(...))
    diagnose("exports/")[0]               # the worst job first, as the CLI prints them: in
                                          # Jupyter its verdict and per-worker timeline chart
    print(diagnose("exports/"))           # in a plain REPL: one verdict a line
    df.jobdoctor.diagnose()               # any frame of log records (after import analyzer)

What it offers, and all that ``dir(analyzer)`` lists: :func:`diagnose` (a
:class:`DiagnosisList`, failures first), :func:`analyze` (an :class:`Analysis`: the jobs in
the JSON report's order and how each input was read), :func:`diagnose_frame`,
:func:`jobs_frame` and :func:`read_logs` (pandas frames), :class:`Diagnosis` and
``__version__``. ``import analyzer`` registers the ``df.jobdoctor`` accessor
(:mod:`analyzer.accessor`); pandas is not loaded for it (``jobdoctor explain`` starts without
it): the accessor is registered when pandas is first imported, or at once if it already was.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Loaded on first use: pandas must not load with the package (`jobdoctor explain` starts fast).
_LAZY = {
    "Analysis": "analyzer.pipeline.analysis",
    "analyze": "analyzer.api",
    "diagnose": "analyzer.api",
    "Diagnosis": "analyzer.verdict.diagnosis",
    "read_logs": "analyzer.frames",
    "diagnose_frame": "analyzer.frames",
    "jobs_frame": "analyzer.frames",
    "DiagnosisList": "analyzer.pipeline.analysis",
}
__all__ = [
    "Analysis",
    "Diagnosis",
    "DiagnosisList",
    "analyze",
    "diagnose",
    "diagnose_frame",
    "jobs_frame",
    "read_logs",
]

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec

    from analyzer.api import analyze, diagnose
    from analyzer.frames import diagnose_frame, jobs_frame, read_logs
    from analyzer.pipeline.analysis import Analysis, DiagnosisList
    from analyzer.verdict.diagnosis import Diagnosis


def __dir__() -> list[str]:
    """The public API alone (``__all__`` and ``__version__``): not the submodules a command
    happened to load, nor the names this module imports for itself."""
    return sorted([*__all__, "__version__"])


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'analyzer' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


class _AccessorOnPandas:
    """A finder on ``sys.meta_path`` that registers ``df.jobdoctor`` as soon as pandas has
    been imported: it finds pandas' spec as Python would (it stands aside first), and has its
    loader import the accessor once pandas' own module has run. (Not an
    ``importlib.abc.MetaPathFinder``: importing that module costs 15 ms of start-up.)"""

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != "pandas":
            return None
        with_pandas = sys.meta_path
        if self in with_pandas:
            with_pandas.remove(self)  # once, and not asked again by the look-up below
        spec = importlib.util.find_spec("pandas")
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run_pandas = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run_pandas(module)
            _register_accessor()

        # On this loader object alone (a new one per look-up): pandas' __loader__ stays the
        # loader it would have been, for its resources.
        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _register_accessor() -> None:
    """Register ``df.jobdoctor`` (importing :mod:`analyzer.accessor` does). What goes wrong
    is a warning: pandas, imported by the user, must not fail because of jobdoctor."""
    try:
        importlib.import_module("analyzer.accessor")
    except Exception as exc:  # a bug of ours, or a pandas too old for the accessor
        import warnings

        warnings.warn(f"df.jobdoctor is not available: {exc}", RuntimeWarning, stacklevel=2)


if "pandas" in sys.modules:
    _register_accessor()
else:
    sys.meta_path.insert(0, _AccessorOnPandas())
