"""The rule book: load rule directories once, then classify message texts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache as cache_forever
from itertools import compress
from pathlib import Path

import regex

from analyzer import __version__
from analyzer.core import cache
from analyzer.core.errors import RuleError
from analyzer.rulebook.compile import MatchTimeout, find
from analyzer.rulebook.events import RuleMatch
from analyzer.rulebook.model import Rule
from analyzer.rulebook.normalize import normalize_with_offsets
from analyzer.rulebook.prefilter import Prefilter, literals_of
from analyzer.rulebook.windows import WINDOWED_TEXT

# Long enough for any sane template on a multi-kilobyte error text, short
# enough that a pathological user pattern costs a log file seconds, not hours.
DEFAULT_TIMEOUT = 0.05
# What one rule may spend running out of time in one run: a rule that timed out this often
# (a second of timeouts at the default) is disabled for the rest of the run. Without it, a
# catastrophic pattern that times out on each of 1,500 lines costs 75 s.
RULE_BUDGET_SECONDS = 1.0
# Logs repeat themselves (pip's output on every attempt, the same lifecycle messages for every
# job, the same frames in every traceback), so match() remembers its answers: up to this many
# texts of at most this many characters (4 MB of text at worst, 16 MB if all of it is wide),
# then it starts afresh.
_CACHE_ENTRIES = 4096
_CACHE_TEXT_CHARS = 1024
# Texts that differ only in numbers (``checkpoint-2444``, ``step 81``) share what is known of
# their answer, by their digits masked: the candidate rules, and which of them cannot match
# any such text (:func:`digit_blind`).
_ASCII_DIGITS = frozenset("0123456789")
# may_match_texts: where at least _CONFIRM_LEAST new texts of a block went through the block
# search and more than three quarters matched, the search is skipped for _CONFIRM_PAUSE blocks
# (it only narrows what match() decides; on event-dense logs it would cost as much again).
# After a pause (and at the start) it searches the first _CONFIRM_SAMPLE new texts of a block
# first, and the others only where the sample is not mostly matches: a dense log pays the
# search of a sample per pause, not of a whole block.
_CONFIRM_LEAST = 8
_CONFIRM_SAMPLE = 32
_CONFIRM_PAUSE = 8
_MASK = bytes.maketrans(b"0123456789", b"0000000000")
# Parts of a pattern that treat every digit alike: a group's name, a repeat count, a class
# holding all ten digits (0-9).
_NAMED_GROUP = regex.compile(r"\(\?P<\w+>")
_REPEAT = regex.compile(r"\{\d+(?:,\d*)?\}")
_CLASS = regex.compile(r"\[(?:\\.|[^\]\\])*\]")


def digit_blind(pattern: str) -> bool:
    """Whether ``pattern`` matches a text exactly where it matches the same text with other
    ASCII digits in place of its ASCII digits (same positions, same length): it names no digit
    (in a literal, an escape, a range other than 0-9, a back-reference), only ``\\d``, classes
    with all of 0-9, repeat counts and group names. Conservative: False when unsure."""
    stripped = _NAMED_GROUP.sub("(", pattern)
    stripped = _REPEAT.sub("", stripped)
    stripped = _CLASS.sub(lambda found: found.group().replace("0-9", ""), stripped)
    return "(?P=" not in stripped and not any(ch in _ASCII_DIGITS for ch in stripped)


def _has_digit(word: str) -> bool:
    return any(ch in _ASCII_DIGITS for ch in word)


def _digit_words_by_rule(literals: Sequence[Sequence[str | None]]) -> dict[int, tuple[str, ...]]:
    """The literal words holding a digit, by the index of their rule (rules with one only)."""
    found = {
        index: tuple(word for word in words if word and _has_digit(word))
        for index, words in enumerate(literals)
    }
    return {index: words for index, words in found.items() if words}


@cache_forever  # asked for every job's advice: the answer never changes while running
def builtin_rules_dir() -> Path:
    """The shipped rule directory.

    ``analyzer/_rules`` in an installed wheel (the build copies ``rules/``
    there), else ``rules/`` at the root of a source checkout.
    """
    package = Path(__file__).resolve().parent.parent
    installed = package / "_rules"
    if installed.is_dir():
        return installed
    return package.parent / "rules"


@cache_forever
def _code_files() -> tuple[Path, ...]:
    """The sources of the classes a cached rule book is made of."""
    package = Path(__file__).resolve().parent
    return (
        *sorted(package.glob("*.py")),
        package.parent / "events.py",
        package.parent / "errors.py",
    )


def _dir_part(directory: Path | None) -> str | list[Path]:
    """What of a rule directory a cache key covers: whether it is one, and its files."""
    if directory is None:
        return "end of layer"
    if not directory.is_dir():
        return f"not a directory: {directory}"
    return sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")])


@dataclass(frozen=True, slots=True)
class RuleBook:
    """Compiled rules and the prefilter in front of them.

    ``timeouts`` counts, per rule id, the texts on which a rule's regex ran out
    of time and was skipped (a warning for the caller to report). A rule whose timeouts
    reach its budget (:data:`RULE_BUDGET_SECONDS`) is not run again until
    :meth:`new_run`: it is in :attr:`disabled`.
    """

    rules: tuple[Rule, ...]
    notices: tuple[str, ...] = ()
    timeout: float = DEFAULT_TIMEOUT
    timeouts: Counter[str] = field(default_factory=Counter, compare=False)
    _prefilter: Prefilter = field(init=False, repr=False, compare=False)
    _answers: dict[str, tuple[RuleMatch, ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    # By masked text: the rules to run on a text of that mask, those to run on one holding
    # their digit words, the matches it shares (start, rule index, match) of the rules that
    # need not run again (:meth:`_match_masked`), and those matches alone (the answer when
    # no rule runs again).
    _masked: dict[
        bytes,
        tuple[
            tuple[int, ...],
            tuple[int, ...],
            tuple[tuple[int, int, RuleMatch], ...],
            tuple[RuleMatch, ...],
        ],
    ] = field(default_factory=dict, init=False, repr=False, compare=False)
    _blind: tuple[bool, ...] = field(init=False, repr=False, compare=False)
    # Blind rules that capture no field: on texts of one mask, the same matches at the same
    # places (nothing in them comes from the digits).
    _shared: tuple[bool, ...] = field(init=False, repr=False, compare=False)
    # The rules with a digit in a literal word, with those words masked (b"000" for "403"):
    # which texts of a mask hold such a word depends on the digits (they are never blind).
    # By rule index, those words (_digit_words_of).
    _digit_words: tuple[tuple[int, tuple[bytes, ...]], ...] = field(
        init=False, repr=False, compare=False
    )
    # Blocks left for may_match_texts to pass without the block search (see _CONFIRM_PAUSE),
    # and 1 while the next search is of a sample first.
    _skip_confirm: list[int] = field(
        default_factory=lambda: [0, 1], init=False, repr=False, compare=False
    )
    _digit_words_of: dict[int, tuple[str, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        literals = [literals_of(rule) for rule in self.rules]
        prefilter = Prefilter(
            literals,
            [
                (index, template.regex.pattern, template.literals)
                for index, rule in enumerate(self.rules)
                for template in rule.templates
            ],
        )
        object.__setattr__(self, "_prefilter", prefilter)
        # A rule whose literals or patterns name a digit may tell two texts of one mask apart.
        blind = tuple(
            not any(ch in _ASCII_DIGITS for word in words if word for ch in word)
            and all(digit_blind(t.regex.pattern) for t in rule.templates)
            for rule, words in zip(self.rules, literals, strict=True)
        )
        object.__setattr__(self, "_blind", blind)
        shared = tuple(
            is_blind and not any(t.captures for t in rule.templates)
            for rule, is_blind in zip(self.rules, blind, strict=True)
        )
        object.__setattr__(self, "_shared", shared)
        words_of = _digit_words_by_rule(literals)
        object.__setattr__(self, "_digit_words_of", words_of)
        object.__setattr__(
            self,
            "_digit_words",
            tuple(
                (index, tuple(word.encode().translate(_MASK) for word in words))
                for index, words in words_of.items()
            ),
        )

    @classmethod
    def load(cls, extra_dirs: Sequence[Path] = (), *, builtin: bool = True) -> RuleBook:
        """Load the built-in rules (unless ``builtin`` is False) and ``extra_dirs``.

        A rule in ``extra_dirs`` with a built-in rule's id replaces it; each
        replacement is recorded in :attr:`notices`. Raises :class:`RuleError`
        whose ``problems`` lists every error as ``file:line:col: message``.
        """
        layers: list[list[Path]] = []
        if builtin:
            layers.append([builtin_rules_dir()])
        layers.append([Path(d) for d in extra_dirs])
        # The same rule files, code and regex version: the book built last time
        # (analyzer.core.cache).
        name = cache.key(
            __version__,
            regex.__version__,
            _code_files(),
            *(_dir_part(directory) for layer in layers for directory in (*layer, None)),
        )
        found = cache.load("rulebook", name)
        if isinstance(found, cls):
            return found
        from analyzer.rulebook.loader import load  # and YAML: only to build the book

        loaded = load(layers)
        errors = tuple(str(p) for p in loaded.problems if p.severity == "error")
        if errors:
            noun = "problem" if len(errors) == 1 else "problems"
            raise RuleError(f"invalid rules: {len(errors)} {noun}; first: {errors[0]}", errors)
        book = cls(rules=loaded.rules, notices=loaded.notices)
        if cache.cache_dir() is not None:
            book._prefilter.warm()  # kept with the book: compiled once, not every run
            cache.store("rulebook", name, book)
        return book

    @property
    def timeout_limit(self) -> int:
        """How many timeouts use up a rule's budget for a run."""
        return max(1, round(RULE_BUDGET_SECONDS / self.timeout))

    @property
    def disabled(self) -> tuple[str, ...]:
        """The ids of the rules that used up their time budget in this run, sorted."""
        limit = self.timeout_limit
        return tuple(sorted(rule for rule, count in self.timeouts.items() if count >= limit))

    def new_run(self) -> None:
        """Start another run: no timeout counted, no rule disabled, no answer remembered (an
        answer found while a rule was disabled lacks that rule's matches)."""
        self.timeouts.clear()
        self._answers.clear()
        self._masked.clear()

    def rule(self, rule_id: str) -> Rule:
        """The rule with id ``rule_id`` (KeyError when there is none)."""
        for rule in self.rules:
            if rule.id == rule_id:
                return rule
        raise KeyError(rule_id)

    def match(self, text: str) -> tuple[RuleMatch, ...]:
        """Every rule match in ``text``, in text order; () for most lines, fast."""
        answers = self._answers
        known = answers.get(text)
        if known is not None:
            return known
        found, complete = self._match_masked(text)
        # An answer cut short by a timeout is not remembered: each time counts as one.
        if complete and len(text) <= _CACHE_TEXT_CHARS:
            if len(answers) >= _CACHE_ENTRIES:
                answers.clear()
            answers[text] = found
        return found

    def _match_masked(self, text: str) -> tuple[tuple[RuleMatch, ...], bool]:
        """:meth:`_match`, sharing what a text of the same mask showed: its candidates; that
        a rule blind to digits (:func:`digit_blind`) that did not match it matches no text of
        that mask either; and the matches of the blind rules that capture no field, which
        are the same, at the same places, on every text of that mask (the text is normalised
        character by character and an ASCII digit stays itself; the prefilter's literal
        words of such a rule hold no digit, so a text of the mask holds them where the other
        does). Only the other candidates run again (their fields may differ)."""
        if len(text) > _CACHE_TEXT_CHARS:
            return self._match(text)
        # As UTF-8 bytes: translated 15 times faster than a str; no ASCII digit byte is part
        # of a longer sequence.
        raw = text.encode("utf-8", "surrogatepass")
        mask = raw.translate(_MASK)
        if mask == raw:  # no digit: nothing to share
            return self._match(text)
        known = self._masked.get(mask)
        if known is not None:
            rerun, digits, kept, answer = known
            if digits:
                rerun = self._with_digit_words(text, rerun, digits)
            if not rerun:
                return answer, True
            placed, complete = self._placed(text, rerun)
            if kept:
                placed.extend(kept)
                placed.sort(key=lambda item: item[:2])
            return tuple(match for _, _, match in placed), complete
        placed, complete = self._placed(text)
        if complete:
            candidates = self._prefilter.candidates(text)
            matched = {match.rule for _, _, match in placed}
            blind, shared, rules = self._blind, self._shared, self.rules
            masked = self._masked
            if len(masked) >= _CACHE_ENTRIES:
                masked.clear()
            kept = tuple(item for item in placed if shared[item[1]])
            rerun = tuple(
                index
                for index in candidates
                if not blind[index] or (rules[index].id in matched and not shared[index])
            )
            masked[mask] = (
                rerun,
                # A literal word with a digit may be in another text of the mask and not in
                # this one ("403" of "404 POST"): its rule runs again on the texts holding it.
                tuple(sorted(self._digit_rules(text, mask) - set(candidates))),
                kept,
                tuple(match for _, _, match in kept),
            )
        return tuple(match for _, _, match in placed), complete

    def _with_digit_words(
        self, text: str, rerun: tuple[int, ...], digits: tuple[int, ...]
    ) -> tuple[int, ...]:
        """``rerun`` and those of ``digits`` (rules that were no candidate of the first text
        of ``text``'s mask, and have literal words with digits) whose digit words ``text``
        holds: its other words are where they were in that text, so only these decide."""
        if not text.isascii():  # its probe folds characters: no shortcut
            return tuple(sorted({*rerun, *digits}))
        lowered = text.lower()
        words = self._digit_words_of
        more = [index for index in digits if any(word in lowered for word in words[index])]
        return tuple(sorted({*rerun, *more})) if more else rerun

    def _digit_rules(self, text: str, mask: bytes) -> set[int]:
        """The rules with a literal word holding a digit that a text of ``mask`` may hold:
        where the masked word is in the masked text (of an ASCII text, whose probe is its
        lower case; any such rule for another text, whose probe folds characters)."""
        if not text.isascii():
            return {index for index, _ in self._digit_words}
        lowered = mask.lower()
        return {index for index, words in self._digit_words if any(w in lowered for w in words)}

    def _match(
        self, text: str, candidates: tuple[int, ...] | None = None
    ) -> tuple[tuple[RuleMatch, ...], bool]:
        """:meth:`match`, and whether no rule ran out of time; ``candidates``: the rules to
        try (default: the prefilter's)."""
        placed, complete = self._placed(text, candidates)
        return tuple(match for _, _, match in placed), complete

    def _placed(
        self, text: str, candidates: tuple[int, ...] | None = None
    ) -> tuple[list[tuple[int, int, RuleMatch]], bool]:
        """:meth:`_match`'s matches as (start, rule index, match), in that order."""
        probe = self._prefilter.probe(text)
        # The literal words the text holds decide which templates may match, too.
        chosen, present = self._prefilter.literals_in(probe)
        if candidates is None:
            candidates = chosen
        if not candidates:
            return [], True
        normalized, offsets = normalize_with_offsets(text)
        # A long text is searched near the literal words only (windows.finditer), which needs
        # its lower case at the same positions (str.lower() lengthens only "İ").
        lowered = normalized.lower() if len(normalized) > WINDOWED_TEXT else None
        if lowered is not None and len(lowered) != len(normalized):
            lowered = None
        found: list[tuple[int, int, RuleMatch]] = []
        complete = True
        timeouts, limit = self.timeouts, self.timeout_limit
        for index in candidates:
            rule = self.rules[index]
            if timeouts and timeouts.get(rule.id, 0) >= limit:
                continue  # out of budget: disabled for the rest of the run
            try:
                matches = find(rule, normalized, offsets, text, self.timeout, present, lowered)
            except MatchTimeout:
                self.timeouts[rule.id] += 1
                complete = False
                continue
            found.extend((start, index, match) for start, match in matches)
        found.sort(key=lambda item: item[:2])
        return found, complete

    def may_match_texts(self, texts: Sequence[str]) -> list[int]:
        """Indexes of the message ``texts`` some rule may match, in order: for every other
        text :meth:`match` returns ``()``. One pass over a whole block of texts for the rules'
        literal words; then the texts holding some whose answer is remembered are decided by
        it, and the others by one search per template of those holding its words
        (:meth:`Prefilter.confirm`): a text with the words of a rule and no match of it
        never reaches Python (issue 32), and is remembered as matching nothing (a harmless
        traceback repeated 10,000 times is one decision)."""
        prefilter = self._prefilter
        hits = prefilter.select(texts)
        if not hits:
            return hits
        matching, unknown = self._known_answers(texts, hits)
        if not unknown:
            return matching
        skip = self._skip_confirm
        if skip[0] > 0:
            skip[0] -= 1
            return sorted(matching + unknown)
        confirmed = self._confirm(texts, unknown)
        return sorted(matching + confirmed) if matching else confirmed

    def _confirm(self, texts: Sequence[str], unknown: list[int]) -> list[int]:
        """Those of ``unknown`` (indexes of ``texts``, in order) the block search keeps; the
        others are remembered as matching nothing. Where most of those searched match (a log
        dense with events: the search would only repeat match()'s work), the search pauses
        for some blocks, and the texts after the sample are kept unsearched."""
        skip = self._skip_confirm
        sample = unknown
        if skip[1] and len(unknown) > 2 * _CONFIRM_SAMPLE:
            sample = unknown[:_CONFIRM_SAMPLE]
        confirmed = self._confirm_some(texts, sample)
        if len(sample) >= _CONFIRM_LEAST and len(confirmed) * 4 > len(sample) * 3:
            skip[:] = [_CONFIRM_PAUSE, 1]
            return confirmed + unknown[len(sample) :]
        skip[1] = 0
        if len(sample) < len(unknown):
            confirmed += self._confirm_some(texts, unknown[len(sample) :])
        return confirmed

    def _confirm_some(self, texts: Sequence[str], unknown: list[int]) -> list[int]:
        confirmed = self._prefilter.confirm(texts, unknown, self.timeout)
        if len(confirmed) < len(unknown):
            self._remember_no_match(texts, unknown, confirmed)
        return confirmed

    def _known_answers(self, texts: Sequence[str], hits: list[int]) -> tuple[list[int], list[int]]:
        """Of ``hits``: those whose remembered answer (by text, or by digit mask where no
        rule runs again: :meth:`_match_masked`) is a match, or that are long (Python decides
        them), and those with no such answer."""
        known = list(map(self._answers.get, [texts[index] for index in hits]))
        if None not in known:  # the common case: every text seen before, decided in C
            return list(compress(hits, known)), []
        matching: list[int] = []
        unknown: list[int] = []
        masked = self._masked
        answers = self._answers
        for index, answer in zip(hits, known, strict=True):
            if answer is None and masked:
                answer = self._masked_answer(texts[index])
                if answer is not None:
                    # What match() would remember of it: asked next, it is found at once.
                    if len(answers) >= _CACHE_ENTRIES:
                        answers.clear()
                    answers[texts[index]] = answer
            if answer is None and len(texts[index]) > _CACHE_TEXT_CHARS:
                # A long text (a traceback of many frames) is mostly a match, and searched
                # near its words by match(): searched again here, it would cost twice.
                matching.append(index)
            elif answer is None:
                unknown.append(index)
            elif answer:
                matching.append(index)
        return matching, unknown

    def _masked_answer(self, text: str) -> tuple[RuleMatch, ...] | None:
        """What :meth:`_match_masked` answers for ``text`` without running a rule, or None."""
        if len(text) > _CACHE_TEXT_CHARS:
            return None
        raw = text.encode("utf-8", "surrogatepass")
        mask = raw.translate(_MASK)
        known = self._masked.get(mask) if mask != raw else None
        if known is None:
            return None
        rerun, digits, _, answer = known
        if digits:
            rerun = self._with_digit_words(text, rerun, digits)
        return None if rerun else answer

    def _remember_no_match(
        self, texts: Sequence[str], unknown: list[int], confirmed: list[int]
    ) -> None:
        """Remember ``()`` for the texts of ``unknown`` that ``confirmed`` left out: no
        template matches them, whatever the timeouts (the answer depends on the text only)."""
        answers = self._answers
        chosen = set(confirmed)
        for index in unknown:
            text = texts[index]
            if index not in chosen and len(text) <= _CACHE_TEXT_CHARS:
                if len(answers) >= _CACHE_ENTRIES:
                    answers.clear()
                answers[text] = ()
