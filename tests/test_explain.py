"""`explain` recognises every error template of every language, with arbitrary values and each
kind of text damage real logs and copied documentation show."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.rulebook import RuleBook
from analyzer.rulebook.events import EventKind
from analyzer.verdict.explain import explain
from analyzer.verdict.policy import load_policy

BOOK = RuleBook.load()
POLICY = load_policy()
FULL_WIDTH = str.maketrans("0123456789:", "０１２３４５６７８９：")

# Values a placeholder may take, as (text in the message, expected field value).
VALUES: dict[str, st.SearchStrategy[tuple[str, str | int]]] = {
    "REPLICA_NAME": st.one_of(
        st.builds(lambda p, r: f"workerpool{p}-{r}", st.integers(0, 3), st.integers(0, 63)),
        st.builds(
            lambda k, n: f"{k} {n}", st.sampled_from(["master", "worker", "ps"]), st.integers(0, 9)
        ),
    ).map(lambda v: (v, v)),
    "EXIT_CODE": st.integers(1, 255).map(lambda n: (str(n), n)),
    "REASON": st.sampled_from(["Error", "OOMKilled", "SUBPROCESS_EXCEPTION"]).map(lambda v: (v, v)),
    "REGION_NAME": st.sampled_from(
        ["us-central1", "europe-west4", "asia-northeast1", "me-west1"]
    ).map(lambda v: (v, v)),
    "POOL_NAME": st.integers(0, 3).map(lambda p: (f"workerpool{p}", f"workerpool{p}")),
    "METRIC_NAME": st.sampled_from(
        [
            "aiplatform.googleapis.com/custom_model_training_nvidia_k80_gpus",
            "aiplatform.googleapis.com/custom_model_training_cpus",
        ]
    ).map(lambda v: (v, v)),
}
FIELD = {
    "REPLICA_NAME": "replica",
    "EXIT_CODE": "exit_code",
    "REASON": "reason",
    "REGION_NAME": "region",
    "POOL_NAME": "pool",
    "METRIC_NAME": "metric",
}
PLACEHOLDER = re.compile("|".join(sorted(VALUES, key=len, reverse=True)))

TEMPLATES = [
    (rule.id, template.lang, template.text)
    for rule in BOOK.rules
    if rule.kind is EventKind.ERROR
    for template in rule.templates
    if set(re.findall(r"\b[A-Z][A-Z_]{3,}\b", template.text)) <= set(VALUES)
    and not template.text.startswith("(?")
]


def damage(text: str, kind: str, values: list[str]) -> str:
    """One kind of damage seen in real text."""
    if kind == "full-width":
        # Digits and colons of the sentence (exit codes included) turn full-width.
        return text.translate(FULL_WIDTH) if not values else _outside(text, values, FULL_WIDTH)
    if kind == "bidi":
        for value in values:
            text = text.replace(value, f"\u2066{value}\u2069", 1)
        return "\u200f" + text
    if kind == "line-break":
        middle = len(text) // 2
        cut = text.find(" ", middle)
        return text if cut < 0 else text[:cut] + "\n" + text[cut + 1 :]
    if kind == "double-space":
        # Between words of the sentence; a value's own spaces ("master 0") are its text.
        return _split_apply(text, values, lambda part: part.replace(" ", "  "))
    if kind == "space-before-period":
        return re.sub(r"\.(\s|$)", r" .\1", text)
    if kind == "padding":
        return f"  \t{text} \n"
    return text


def _split_apply(text: str, keep: list[str], change: Callable[[str], str]) -> str:
    """Apply ``change`` to the text between the values in ``keep``."""
    if not keep:
        return change(text)
    parts = re.split("(" + "|".join(map(re.escape, keep)) + ")", text)
    return "".join(p if p in keep else change(p) for p in parts)


def _outside(text: str, values: list[str], table: dict[int, str]) -> str:
    """Apply ``table`` to the text between values whose own text must survive (regions)."""
    keep = [v for v in values if not v.isdigit()]
    return _split_apply(text, keep, lambda part: part.translate(table))


DAMAGE = [
    "none",
    "full-width",
    "bidi",
    "line-break",
    "double-space",
    "space-before-period",
    "padding",
]


def test_there_are_templates_in_three_languages() -> None:
    assert {lang for _, lang, _ in TEMPLATES} >= {"en", "ja", "he"}


@pytest.mark.parametrize(("rule", "lang", "template"), TEMPLATES)
@pytest.mark.parametrize("kind", DAMAGE)
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_every_template_is_explained_after_damage(
    rule: str, lang: str, template: str, kind: str, data: st.DataObject
) -> None:
    expected: dict[str, str | int] = {}
    shown: list[str] = []

    def fill(found: re.Match[str]) -> str:
        text, value = data.draw(VALUES[found.group(0)], label=found.group(0))
        expected[FIELD[found.group(0)]] = value
        shown.append(text)
        return text

    message = damage(PLACEHOLDER.sub(fill, template), kind, shown)
    result = explain(message, BOOK, POLICY)
    assert result.match is not None, message
    assert (result.match.rule, result.match.lang) == (rule, lang), message
    for name, value in expected.items():
        assert result.match.fields.get(name) == value, (message, result.match.fields)
    assert result.permanent is not None and result.next_step


@pytest.mark.parametrize(
    ("message", "other"),
    [
        (
            "google.api_core.exceptions.ResourceExhausted: 429 Quota exceeded for aiplatform"
            ".googleapis.com/generate_content_requests_per_minute_per_project_per_base_model"
            " with base model: gemini-pro.",
            True,
        ),
        (
            "ResourceExhausted: 429 Rate of traffic exceeds capacity. Ramp your traffic up more"
            " slowly. endpoint_id: 5484953337579175936, deployed_model_id: 5065727146094231552",
            True,
        ),
        ('InvalidArgument: 400 Accelerator "NVIDIA_TESLA_K80" is not supported', False),
    ],
)
def test_another_services_refusal_is_no_training_jobs(message: str, other: bool) -> None:
    book = RuleBook.load()
    found = explain(message, book, load_policy())
    assert found.match is not None and found.match.kind is EventKind.CREATION_REFUSED
    assert found.next_step is not None
    assert ("another Vertex AI service" in found.next_step) is other
