"""The DuckDB form of jobdoctor's BigQuery SQL, produced from that text by sqlglot.

sqlglot transpiles the regex functions, ``UNNEST``, aggregates and named parameters
faithfully. What it passes through unchanged, and DuckDB answers differently, is fixed here
on the parsed tree, and each fix is covered by a test that runs the result:

* ``JSON_TYPE(x) = 'string'``: DuckDB's ``json_type`` names a string ``VARCHAR``. The
  queries themselves accept both names (the BigQuery emulator runs their text on DuckDB
  without this module); a comparison written with ``=`` is rewritten here;
* ``JSON_VALUE`` of a JSON value is emitted by sqlglot as ``->> '$'`` (DuckDB's own
  ``json_value`` would return quoted JSON): left as sqlglot writes it, tested.

A comparison of ``JSON_TYPE`` with any other type name is refused rather than guessed.
"""

from __future__ import annotations

from functools import lru_cache

from analyzer.core.errors import SourceError
from analyzer.rulebook.re2 import INSTALL_HINT

DIALECTS = ("bigquery", "duckdb")
_JSON_TYPES = {"string": "VARCHAR"}


@lru_cache(maxsize=64)  # a pure function of a long text: the same queries come back often
def to_duckdb(sql: str) -> str:
    """``sql`` (BigQuery) as DuckDB SQL. Raises SourceError when sqlglot is missing."""
    try:
        import sqlglot
        from sqlglot import expressions as exp
    except ImportError:
        raise SourceError(f"the DuckDB form of the queries needs sqlglot: {INSTALL_HINT}") from None

    tree = sqlglot.parse_one(sql, read="bigquery")

    def fix(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.EQ):
            sides = (node.this, node.expression)
            for typed, named in (sides, sides[::-1]):
                if _is_json_type(typed) and isinstance(named, exp.Literal) and named.is_string:
                    duck = _JSON_TYPES.get(named.name)
                    if duck is None:
                        raise ValueError(f"no DuckDB name known for JSON type {named.name!r}")
                    return exp.EQ(this=typed.copy(), expression=exp.Literal.string(duck))
        return node

    return str(tree.transform(fix).sql(dialect="duckdb", pretty=True))


def _is_json_type(node: object) -> bool:
    from sqlglot import expressions as exp

    if isinstance(node, exp.Anonymous):
        return str(node.name).upper() == "JSON_TYPE"
    return type(node).__name__ == "JSONType"
