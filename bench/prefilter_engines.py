"""Compare literal-search engines for the prefilter on the message texts of a bench export.

    python bench/prefilter_engines.py [FILE]

Each engine answers the prefilter's question for a batch: which texts contain any rule
literal. The texts are joined with newlines and lower-cased once, as the fast path does.
"""

from __future__ import annotations

import bisect
import sys
import time
from collections.abc import Callable
from itertools import accumulate

import orjson

from analyzer.rulebook import RuleBook


def _texts(path: str) -> list[str]:
    texts = []
    with open(path, "rb") as stream:
        for raw in stream:
            entry = orjson.loads(raw)
            payload = entry.get("jsonPayload")
            text = payload.get("message") if isinstance(payload, dict) else None
            texts.append(text if isinstance(text, str) else entry.get("textPayload") or "")
    return texts


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else "bench/out/fleet-200MB-seed0.jsonl"
    literals = RuleBook.load()._prefilter.literals
    texts = _texts(path)
    started = time.perf_counter()
    joined = "\n".join(texts).lower()
    print(f"join+lower {time.perf_counter() - started:.3f}s over {len(joined) / 1e6:.0f} M chars")
    starts = list(accumulate((len(t) + 1 for t in texts), initial=0))
    engines: dict[str, Callable[[], set[int]]] = {}

    import re

    alternation = re.compile("|".join(re.escape(w) for w in sorted(literals, key=len)[::-1]))
    engines["re alternation"] = lambda: {
        bisect.bisect_right(starts, m.start()) - 1 for m in alternation.finditer(joined)
    }

    def by_find() -> set[int]:
        hits = set()
        for word in literals:
            at = joined.find(word)
            while at != -1:
                hits.add(bisect.bisect_right(starts, at) - 1)
                at = joined.find(word, at + 1)
        return hits

    engines["str.find per literal"] = by_find
    try:
        import ahocorasick

        automaton = ahocorasick.Automaton()
        for word in literals:
            automaton.add_word(word, word)
        automaton.make_automaton()
        engines["pyahocorasick"] = lambda: {
            bisect.bisect_right(starts, end) - 1 for end, _ in automaton.iter(joined)
        }
    except ImportError:
        print("pyahocorasick not installed")
    data = joined.encode()
    bstarts = list(accumulate((len(t.encode()) + 1 for t in texts), initial=0))
    try:
        import hyperscan

        db = hyperscan.Database()
        db.compile(
            expressions=[re.escape(w).encode() for w in literals],
            ids=list(range(len(literals))),
            flags=[hyperscan.HS_FLAG_UTF8] * len(literals),
        )

        def by_hyperscan() -> set[int]:
            hits: set[int] = set()

            def on_match(_id: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
                hits.add(bisect.bisect_right(bstarts, to - 1) - 1)

            db.scan(data, match_event_handler=on_match)
            return hits

        engines["hyperscan (utf-8 bytes)"] = by_hyperscan
    except ImportError:
        print("hyperscan not installed")
    try:
        import re2

        pattern = re2.compile("|".join(re2.escape(w) for w in literals))
        engines["google-re2"] = lambda: {
            bisect.bisect_right(bstarts, m.start()) - 1 for m in pattern.finditer(data)
        }
    except ImportError:
        print("google-re2 not installed")
    reference = None
    for name, engine in engines.items():
        started = time.perf_counter()
        hits = engine()
        elapsed = time.perf_counter() - started
        same = "" if reference is None or hits == reference else "  DIFFERENT"
        reference = reference if reference is not None else hits
        print(f"{name:26} {elapsed:7.3f}s  {len(hits)} texts{same}")


if __name__ == "__main__":
    main()
