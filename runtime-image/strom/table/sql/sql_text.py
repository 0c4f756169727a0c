"""Reading SQL text with sqlglot: the dialect, one statement's parse tree with Flink-style line/column
errors, and table names.

Why sqlglot: a well-kept, pure-Python SQL parser with dialects; Flink SQL's surface (backquoted
identifiers, `WITH ('k' = 'v')` table options, `||`, CAST/TRY_CAST) is what sqlglot's Hive dialect
reads, so we parse with `read="hive"` and map its tree onto Strom's plan.
"""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp

from strom.table.errors import NotSupportedYet, SqlParserException
from strom.table.sql import function_syntax

DIALECT = "hive"


def strip_statement(sql: str) -> str:
    text = sql.strip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    return text


def parse_one(text: str) -> exp.Expression:
    original = text
    try:
        rewritten = function_syntax.rewrite_text(text)
    except function_syntax.ClauseError as e:
        line, col = function_syntax.position_of(original, e.at)
        raise SqlParserException(f"SQL parse error at line {line}, column {col}: {e}") from None
    text = rewritten.text
    try:
        trees = sqlglot.parse(text, read=DIALECT)
    except sqlglot.errors.ParseError as e:
        err = e.errors[0] if e.errors else {}
        where = f"line {err.get('line', '?')}, column {err.get('col', '?')}"
        if isinstance(err.get("line"), int) and isinstance(err.get("col"), int):
            # the position in the user's text, not in the rewritten one (renamed functions are longer)
            line, col = function_syntax.user_position(original, rewritten, err["line"], err["col"])
            where = f"line {line}, column {col}"
        raise SqlParserException(
            f"SQL parse error at {where}: "
            f"{err.get('description', str(e)).splitlines()[0]} (near {err.get('highlight', '')!r})"
        ) from None
    except sqlglot.errors.TokenError as e:
        raise SqlParserException(f"SQL parse error: {str(e).splitlines()[0]}") from None
    trees = [t for t in trees if t is not None]
    if len(trees) != 1:
        raise NotSupportedYet("several statements in one execute_sql call (run them one by one)")
    return trees[0]


def table_name(node: Any) -> str:
    if isinstance(node, exp.Table):
        return ".".join(p.name for p in node.parts)
    raise NotSupportedYet(f"table reference {node.sql(DIALECT)}")

