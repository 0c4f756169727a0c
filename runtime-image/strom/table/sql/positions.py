"""Where in the SQL text a validation error points: Flink's validator reports "SQL validation failed.
From line 1, column 8 to line 1, column 11: Column 'nope' not found in any table". The planner finds
the unknown column or table by name; this module finds the name's first occurrence in the statement's
own text (sqlglot's tokens carry line and column) and words the message as Flink does."""

from __future__ import annotations

import re

from sqlglot.dialects.hive import Hive
from sqlglot.errors import TokenError
from sqlglot.tokens import TokenType

from strom.table.errors import ValidationException

_NAMES = (TokenType.VAR, TokenType.IDENTIFIER)


def locate(sql: str, name: str) -> tuple[int, int, int, int] | None:
    """(line, first column, line, last column) of the identifier `name` (its last dotted part), 1-based."""
    wanted = name.split(".")[-1]
    try:
        tokens = Hive().tokenize(sql)
    except TokenError:
        return None
    for exact in (True, False):
        for t in tokens:
            if t.token_type in _NAMES or t.text.upper() == wanted.upper():
                if (t.text == wanted) if exact else (t.text.upper() == wanted.upper()):
                    first = t.col - (t.end - t.start)
                    return t.line, first, t.line, t.col
    return None


_COLUMN = re.compile(r"unknown column '([^']+)'; available columns: (.*)$")
_OBJECT = re.compile(r"Object '([^']+)' (not found within '[^']+'.*)$")


def with_position(e: ValidationException, sql: str) -> ValidationException:
    """The error worded as Flink's validator words it, with the position, when it names an unknown column
    or table; otherwise `e` itself."""
    message = str(e)
    m = _COLUMN.match(message)
    if m is not None:
        where = locate(sql, m.group(1))
        if where is not None:
            return ValidationException(f"SQL validation failed. {_span(where)}: Column '{m.group(1)}' not found in "
                                       f"any table ({message})")
    m = _OBJECT.match(message)
    if m is not None:
        where = locate(sql, m.group(1))
        if where is not None:
            return ValidationException(f"SQL validation failed. {_span(where)}: Object '{m.group(1)}' {m.group(2)}")
    return e


def _span(where: tuple[int, int, int, int]) -> str:
    return f"From line {where[0]}, column {where[1]} to line {where[2]}, column {where[3]}"
