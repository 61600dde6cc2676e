"""Where in a long text a template's matches can lie: near its words.

A 50 KB traceback holds a rule's word once or twice, yet a regex search tries every one of its
50,000 positions (an alternation without a common prefix, such as ``api.creation-refused``'s,
costs 1.8 ms there). Every match of a pattern holds one of the words its syntax tree shows
(runs of literal characters every match passes through: :func:`window_plan`), and most
templates can only span a few words: such a match lies within that many spaces of an
occurrence of its word. Searching only those stretches finds exactly the matches a search of
the whole text finds (:func:`finditer`).

The bound is counted in spaces of the *normalised* text, where every whitespace run is one
``" "`` between two other characters (:func:`~analyzer.rulebook.normalize.normalize`): a
pattern piece such as ``\\s*`` then consumes at most one space, and a placeholder of word
characters none; :func:`space_bound` reads it off the pattern's syntax tree, or says the
pattern has none (a ``.+?`` placeholder, a look-ahead, a back-reference, syntax only the
``regex`` package knows). Those patterns, and words found too densely
(:data:`CHARS_PER_WINDOW`), are searched whole, as before.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator, Sequence
from functools import cache
from typing import Any, NamedTuple

from analyzer.rulebook._regex import Match, Pattern

try:  # the standard library's own regex parser: private, so read defensively
    from re import _constants as _sre  # type: ignore[attr-defined]
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - a Python without it: every text searched whole
    _sre = _sre_parse = None

# Texts of at most this many normalised characters are searched whole: windows would not pay.
WINDOWED_TEXT = 2048
# A search from a position costs about what a whole-text search costs over a few hundred
# characters (2 us; the slowest templates take 36 ns a character, the fastest 2): a text
# holding a template's words more densely than one in this many characters is searched whole.
CHARS_PER_WINDOW = 256
_UNBOUNDED = -1
_SPACE = 32


class Plan(NamedTuple):
    """How a long text may be searched for a template near its words (:func:`window_plan`).

    ``bound``: :func:`space_bound`. ``words``: words one of which every match holds (lower
    case, as the text's lower case shows them), read off the pattern itself. ``literals``:
    whether the template's literal words are such words too: the rule's ``literals:`` are
    what its writer declares (``distributed.detail.nccl-error`` lists ``nccl`` beside a
    sentence without it), so they count only when the pattern shows them. Those the
    prefilter found in the text are then the only places to search from (one word, mostly,
    where the pattern's own words are many: ``api.creation-refused``'s seven sentences).
    """

    bound: int
    words: tuple[str, ...]
    literals: bool


def window_plan(pattern: str, literals: tuple[str, ...]) -> Plan | None:
    """The :class:`Plan` of a template of ``pattern`` and ``literals``; None when its
    matches have no bound or no word every one of them holds."""
    return _window_plan(pattern, literals)


@cache
def _window_plan(pattern: str, literals: tuple[str, ...]) -> Plan | None:
    bound = _space_bound(pattern)
    tree = _tree(pattern)  # parsed once, by _space_bound
    if bound is None or tree is None:
        return None
    caseless = bool(tree.state.flags & _sre.SRE_FLAG_IGNORECASE)
    words = _anchors(tree, caseless)
    if words is None:
        return None
    return Plan(bound, words, bool(literals) and _holds_word(tree, literals, caseless))


def _anchors(items: Any, ignorecase: bool) -> tuple[str, ...] | None:
    """Words one of which every match of the parsed ``items`` holds in its lower case (runs
    of literal characters, or those of a part every match passes through), the longest
    found; None when there are none."""
    c = _sre
    options: list[tuple[str, ...]] = []
    run: list[str] = []

    def end_run() -> None:
        if run:
            options.append(("".join(run),))
            run.clear()

    for op, arg in items:
        if op is c.LITERAL:
            char = chr(arg)
            # Caseless, a non-ASCII letter may match one whose lower case differs (σ, ς), and
            # "I" the dotless "ı"; the other ASCII letters' partners (ſ, the Kelvin sign) are
            # folded away by normalisation, and "İ" makes the text searched whole. "Σ" has
            # two lower cases, by what follows it.
            if char != "Σ" and (not ignorecase or (char.isascii() and char not in "iI")):
                run.append(char.lower())
                continue
        end_run()
        part: tuple[str, ...] | None = None
        if op is c.SUBPATTERN:
            _group, add, remove, body = arg
            caseless = (ignorecase or bool(add & c.SRE_FLAG_IGNORECASE)) and not (
                remove & c.SRE_FLAG_IGNORECASE
            )
            part = _anchors(body, caseless)
        elif op is c.BRANCH:
            branches = [_anchors(branch, ignorecase) for branch in arg[1]]
            if all(branches):
                part = tuple(dict.fromkeys(w for words in branches if words for w in words))
        elif op is c.ATOMIC_GROUP:
            part = _anchors(arg, ignorecase)
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT) and arg[0] >= 1:
            part = _anchors(arg[2], ignorecase)
        if part:
            options.append(part)
    end_run()
    # The fewest places to search from: the longest shortest word, then the fewest words.
    return max(options, key=lambda words: (min(map(len, words)), -len(words)), default=None)


def _holds_word(items: Any, words: tuple[str, ...], ignorecase: bool, exact_i: bool = True) -> bool:
    """Whether every match of the parsed ``items`` holds one of ``words`` in its lower case:
    as a run of literal characters, or inside a part every match passes through.
    ``exact_i=False`` takes a caseless ``i`` for itself (not the dotted ``İ`` it also
    matches): what a rule's writer means by a word, for :func:`uncovered`'s warnings."""
    run: list[str] = []

    def in_run() -> bool:
        joined = "".join(run)
        run.clear()
        return any(word in joined for word in words)

    for op, arg in items:
        char = _run_char(op, arg, ignorecase, exact_i)
        if char is not None:
            run.append(char)
            continue
        if in_run() or _part_holds_word(op, arg, words, ignorecase, exact_i):
            return True
    return in_run()


def _run_char(op: Any, arg: Any, ignorecase: bool, exact_i: bool) -> str | None:
    """The character, in lower case, that the parsed item always matches as itself (a
    literal, or a set of one letter's cases such as ``[Pp]``); None for any other item."""
    c = _sre
    if op is c.LITERAL:
        char = chr(arg)
        return char.lower() if _plain_char(char, ignorecase, exact_i) else None
    if op is c.IN and arg and all(member is c.LITERAL for member, _ in arg):
        # A set of one letter's cases ([Pp]): that letter, in lower case.
        chars = {chr(value) for _, value in arg}
        lowered = {char.lower() for char in chars}
        if len(lowered) == 1 and all(char.isascii() for char in chars):
            char = lowered.pop()
            if _plain_char(char, ignorecase, exact_i) and (not exact_i or char != "i"):
                return char
    return None


def _plain_char(char: str, caseless: bool, exact_i: bool) -> bool:
    """Whether ``char`` matches only itself and its ASCII case partner."""
    # Caseless, a non-ASCII letter may match one whose lower case differs (σ, ς), and
    # "I" matches the dotless "ı"; the other ASCII letters' partners (ſ, the Kelvin
    # sign) are folded away by normalisation, and "İ" makes the text searched whole.
    return not caseless or (char.isascii() and (not exact_i or char not in "iI"))


def _part_holds_word(
    op: Any, arg: Any, words: tuple[str, ...], ignorecase: bool, exact_i: bool
) -> bool:
    """Whether every match of the parsed item (a group, an alternation, a repeat of at
    least one) holds one of ``words`` (see :func:`_holds_word`)."""
    c = _sre
    if op is c.SUBPATTERN:
        _group, add, remove, body = arg
        caseless = (ignorecase or bool(add & c.SRE_FLAG_IGNORECASE)) and not (
            remove & c.SRE_FLAG_IGNORECASE
        )
        return _holds_word(body, words, caseless, exact_i)
    if op is c.BRANCH:
        return all(_holds_word(branch, words, ignorecase, exact_i) for branch in arg[1])
    if op is c.ATOMIC_GROUP:
        return _holds_word(arg, words, ignorecase, exact_i)
    return (
        op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT)
        and arg[0] >= 1
        and _holds_word(arg[2], words, ignorecase, exact_i)
    )


def uncovered(pattern: str, literals: Sequence[str], ignorecase: bool = False) -> list[str] | None:
    """The top-level alternatives of ``pattern`` whose matches need not hold any of
    ``literals`` (the prefilter's words: a text lacking them all is never tried), as written;
    ``[pattern]`` when the pattern has no top-level alternation and is not covered; ``[]``
    when every match provably holds one; None when the pattern cannot be read here
    (regex-only syntax). A proof by the syntax tree, as :func:`window_plan`'s: an
    alternative reported may still hold a literal by chance, never by construction."""
    tree = _tree(pattern)
    if tree is None:  # regex-only syntax: nothing proven either way
        return None
    words = tuple(word.lower() for word in literals)
    caseless = ignorecase or bool(tree.state.flags & _sre.SRE_FLAG_IGNORECASE)
    if _holds_word(tree, words, caseless, exact_i=False):
        return []
    sources = _top_level_branches(pattern)
    items = list(tree)
    if len(items) == 1 and items[0][0] is _sre.BRANCH and len(items[0][1][1]) == len(sources):
        return [
            source
            for source, branch in zip(sources, items[0][1][1], strict=True)
            if not _holds_word(branch, words, caseless, exact_i=False)
        ]
    return [pattern]


def _top_level_branches(pattern: str) -> list[str]:
    """``pattern`` split at its ``|`` outside groups and sets (escapes skipped)."""
    parts: list[str] = []
    depth = start = at = 0
    in_set = False
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            at += 2
            continue
        if in_set:
            in_set = char != "]"
        elif char == "[":
            in_set = True
            # A "]" right after "[" or "[^" is a member, not the end.
            if pattern[at + 1 : at + 2] == "^":
                at += 1
            if pattern[at + 1 : at + 2] == "]":
                at += 1
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            parts.append(pattern[start:at])
            start = at + 1
        at += 1
    parts.append(pattern[start:])
    return parts


def space_bound(pattern: str) -> int | None:
    """How many spaces a match of ``pattern`` holds at most in a normalised text, or None
    when that is unbounded or unknown. None too for a pattern that may match the empty string
    (it needs no literal word) or that looks ahead (past the stretch searched)."""
    return _space_bound(pattern)


@cache
def _tree(pattern: str) -> Any | None:
    r"""The standard library's syntax tree of ``pattern`` (read, never changed, by this
    module's functions), or None where it reads the pattern otherwise than the regex package
    or not at all: syntax only the regex package knows (\p{..}, (?V1), fuzzy matching...)."""
    if _sre_parse is None:
        return None
    try:
        with warnings.catch_warnings():
            # A FutureWarning marks a set the regex package may read otherwise ("[[", "--").
            warnings.simplefilter("error")
            return _sre_parse.parse(pattern)
    except Exception:
        return None


@cache
def _space_bound(pattern: str) -> int | None:
    tree = _tree(pattern)
    if tree is None:  # no window
        return None
    if tree.getwidth()[0] < 1:
        return None
    bound = _spaces(tree)
    return None if bound == _UNBOUNDED else bound


def _spaces(items: Any) -> int:
    """The most spaces the sequence of parsed ``items`` can consume, or _UNBOUNDED."""
    total = 0
    for op, arg in items:
        found = _node(op, arg)
        if found == _UNBOUNDED:
            return _UNBOUNDED
        total += found
    return total


def _node(op: Any, arg: Any) -> int:
    """The most spaces one parsed item can consume, or _UNBOUNDED."""
    c = _sre
    if op is c.LITERAL:
        return _literal_spaces(arg)
    if op is c.NOT_LITERAL:
        return 0 if arg == _SPACE else 1
    if op is c.ANY:
        return 1
    if op is c.IN:
        return 1 if _class_has_space(arg) else 0
    if op is c.AT:
        return 0
    if op is c.BRANCH:
        bounds = [_spaces(branch) for branch in arg[1]]
        return _UNBOUNDED if _UNBOUNDED in bounds else max(bounds, default=0)
    if op is c.SUBPATTERN:
        return _spaces(arg[-1])
    if op is c.ATOMIC_GROUP:
        return _spaces(arg)
    if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
        return _repeat_spaces(arg)
    if op is c.ASSERT or op is c.ASSERT_NOT:
        return _assert_spaces(arg)
    if op is c.GROUPREF_EXISTS:
        _group, yes, no = arg
        bounds = [_spaces(yes), _spaces(no) if no is not None else 0]
        return _UNBOUNDED if _UNBOUNDED in bounds else max(bounds)
    return _UNBOUNDED  # back-references and anything else


def _literal_spaces(arg: Any) -> int:
    """The spaces a literal character consumes."""
    if arg == ord("{"):
        # A brace the standard parser read as a character may be the regex package's
        # fuzzy-matching constraint ({e<=1}), which changes what a match holds.
        return _UNBOUNDED
    return 1 if arg == _SPACE else 0


def _repeat_spaces(arg: Any) -> int:
    """The most spaces a repeat consumes."""
    c = _sre
    _least, most, body = arg
    inner = _spaces(body)
    if inner in (0, _UNBOUNDED):
        return inner
    if most is c.MAXREPEAT or most == c.MAXREPEAT:
        # A run of whitespace-only characters is one space in a normalised text, where no
        # two whitespace characters are neighbours; anything else repeated is unbounded.
        return 1 if _only_whitespace(body) else _UNBOUNDED
    return int(most) * inner


def _assert_spaces(arg: Any) -> int:
    """The spaces a look-around consumes: none for a bounded look-behind; a look-ahead may
    read past the stretch searched."""
    direction, body = arg
    if direction < 0:
        # A look-behind reads what precedes, which a search from a position sees whole.
        return 0 if _spaces(body) != _UNBOUNDED else _UNBOUNDED
    return _UNBOUNDED  # a look-ahead may read past the stretch searched


def _class_has_space(items: Any) -> bool:
    """Whether the character class of parsed ``items`` holds ``" "``."""
    c = _sre
    negate = False
    found = False
    for op, arg in items:
        if op is c.NEGATE:
            negate = True
        elif op is c.LITERAL:
            found = found or arg == _SPACE
        elif op is c.RANGE:
            found = found or arg[0] <= _SPACE <= arg[1]
        elif op is c.CATEGORY:
            found = found or arg in (c.CATEGORY_SPACE, c.CATEGORY_NOT_WORD, c.CATEGORY_NOT_DIGIT)
        else:  # a form not known here: assume the worst
            return True
    return found != negate


def _only_whitespace(items: Any) -> bool:
    """Whether ``items`` is one character class (or character) that matches whitespace only."""
    if len(items) != 1:
        return False
    c = _sre
    op, arg = items[0]
    if op is c.LITERAL:
        return chr(arg).isspace()
    if op is c.IN:
        return all(
            (kind is c.LITERAL and chr(value).isspace())
            or (kind is c.CATEGORY and value is c.CATEGORY_SPACE)
            for kind, value in arg
        )
    return False


def _left(text: str, at: int, spaces: int) -> int:
    """The first position from which ``text[position:at]`` holds at most ``spaces - 1``
    spaces."""
    for _ in range(spaces):
        at = text.rfind(" ", 0, at)
        if at < 0:
            return 0
    return at + 1


def _right(text: str, at: int, spaces: int) -> int:
    """The position of the ``spaces``-th space at or after ``at``, or ``len(text)``."""
    at -= 1
    for _ in range(spaces):
        at = text.find(" ", at + 1)
        if at < 0:
            return len(text)
    return at


def occurrences(lowered: str, words: Sequence[str]) -> list[int] | None:
    """Every start of any of ``words`` in ``lowered`` (overlapping ones too), in order; None
    when they are too many for windows to pay (:data:`CHARS_PER_WINDOW`)."""
    most = len(lowered) // CHARS_PER_WINDOW
    found: list[int] = []
    for word in words:
        at = lowered.find(word)
        while at >= 0:
            if len(found) == most:
                return None
            found.append(at)
            at = lowered.find(word, at + 1)
    found.sort()
    return found


def finditer(
    regex: Pattern, normalized: str, starts: Sequence[int], bound: int, timeout: float
) -> Iterator[Match]:
    """The matches ``regex.finditer(normalized)`` gives, for a pattern each of whose matches
    holds one of the words starting at ``starts`` (sorted) and at most ``bound`` spaces
    (:func:`space_bound`), searching only where they can start.

    Why they are the same: a match holding the word at ``p`` starts in ``[_left(p), p]``
    (at most ``bound`` spaces before ``p``): nowhere else can one start. A search from a
    position reads the whole text before it (``\\b``, ``^``, look-behinds see what the
    full search sees), and one starting at most at ``B`` can only consume up to the
    ``bound + 1``-th space after ``B``, so cutting the text one character past that space
    changes no step of it: each attempt succeeds or fails as in the whole text, in the same
    order, and the leftmost match from a position is the same. Between stretches no match
    starts; after a match the next search starts at its end, as ``finditer`` does (a match
    is never empty: :func:`space_bound` refuses patterns that could be).
    """
    size = len(normalized)
    stretches: list[list[int]] = []
    for start in starts:
        first = _left(normalized, start, bound + 1)
        if stretches and first <= stretches[-1][1] + 1:
            stretches[-1][1] = start
        else:
            stretches.append([first, start])
    position = 0
    # One time limit for all the searches, as for one search of the whole text: a runaway
    # pattern must not spend it once per stretch.
    deadline = time.monotonic() + timeout
    for first, last in stretches:
        if last < position:
            continue
        end = min(size, _right(normalized, last, bound + 1) + 1)
        position = max(position, first)
        while position <= last:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("regex timed out")
            found = regex.search(normalized, position, end, timeout=left)
            if found is None or found.start() > last:
                break
            yield found
            position = found.end()
