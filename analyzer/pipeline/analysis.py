"""What the pipeline hands out: an :class:`Analysis` (the diagnoses of every job found, and
how each input was read) and a :class:`DiagnosisList` (diagnoses as a notebook shows them).

The pipeline's types: the API imports them, the reports only to type-check; the notebook
display loads the HTML report only when it is shown (for a single :class:`Diagnosis` too, whose
display this module sets: a verdict type imports no renderer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from analyzer.ingest.records import InputStats
from analyzer.verdict.diagnosis import Diagnosis, show_html_with

if TYPE_CHECKING:
    import pandas as pd

SCHEMA = "jobdoctor.diagnosis/1"


def _diagnosis_html(diagnosis: Diagnosis) -> str:
    from analyzer.report.html import diagnosis_repr_html

    return diagnosis_repr_html(diagnosis)


show_html_with(_diagnosis_html)


@dataclass(frozen=True, slots=True)
class Analysis:
    """The diagnoses of every job found in the inputs, and how each input was read."""

    inputs: tuple[InputStats, ...]
    diagnoses: tuple[Diagnosis, ...]
    notices: tuple[str, ...] = ()
    unread: tuple[str, ...] = ()
    """One line per input that could not be read, or only up to a cut (also the first of
    :attr:`notices`): a batch goes on past it, and the CLI exits 2 at the end."""
    disabled_rules: tuple[str, ...] = ()
    """Rules that used up their time budget (timeouts) and were not run on the rest of the
    inputs: their matches after that are missing (also said in :attr:`notices`)."""

    def to_dict(self) -> dict[str, object]:
        """The ``jobdoctor.diagnosis/1`` JSON document."""
        return {
            "schema": SCHEMA,
            "inputs": [s.to_dict() for s in self.inputs],
            "jobs": [d.to_dict() for d in self.diagnoses],
            "notices": list(self.notices),
        }


class DiagnosisList(list[Diagnosis]):
    """A list of diagnoses that Jupyter shows as a table of verdicts and job cards.

    ``to_frame()`` gives the job frame (one row per job, the columns of
    ``analyzer.frames.diagnose_frame``).
    """

    def __str__(self) -> str:
        """One verdict a line (``print(diagnose(...))`` in a plain REPL)."""
        return "\n".join(str(d) for d in self)

    def _repr_html_(self) -> str:
        from analyzer.report.html import diagnoses_repr_html

        return diagnoses_repr_html(self)

    def to_frame(self) -> pd.DataFrame:
        """One row per job, as ``diagnose_frame`` builds it."""
        from analyzer.report.frames import jobs_frame

        return jobs_frame(self)
