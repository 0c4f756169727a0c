"""Flink function syntax sqlglot's Hive dialect reads differently, rewritten before parsing.

* Functions whose Hive reading loses Flink's meaning are renamed so that sqlglot keeps them as plain
  calls: Hive turns DATE_FORMAT/TO_DATE/UNIX_TIMESTAMP/FROM_UNIXTIME's Java patterns into strftime
  patterns, defaults REGEXP_EXTRACT's group to 1 (Flink: 0) and reads TIMESTAMPDIFF(unit, a, b) with its
  arguments shifted.
* `JSON_VALUE(json, path RETURNING type)` becomes `TRY_CAST(JSON_VALUE(json, path) AS type)`: Flink's
  default NULL ON ERROR makes a value that does not convert NULL, which TRY_CAST does.
String literals and quoted identifiers are left alone.
"""

from __future__ import annotations

import re

PREFIX = "STROM_FN_"
RENAMED = ("DATE_FORMAT", "TO_DATE", "UNIX_TIMESTAMP", "FROM_UNIXTIME", "REGEXP_EXTRACT", "TIMESTAMPDIFF")
_CALL = re.compile(r"\b(" + "|".join(RENAMED) + r")\s*\(", re.IGNORECASE)
_QUOTED = re.compile(r"'(?:[^']|'')*'|`[^`]*`")


def _outside_quotes(text: str, rewrite) -> str:  # type: ignore[no-untyped-def]
    out, last = [], 0
    for m in _QUOTED.finditer(text):
        out.append(rewrite(text[last:m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(rewrite(text[last:]))
    return "".join(out)


def _closing_paren(text: str, open_at: int) -> int:
    """Index of the parenthesis closing the one at open_at (skipping quoted text), or -1."""
    depth, i = 0, open_at
    while i < len(text):
        c = text[i]
        if c in "'`":
            end = text.find(c, i + 1)
            while end != -1 and c == "'" and text[end + 1:end + 2] == "'":
                end = text.find(c, end + 2)
            if end == -1:
                return -1
            i = end + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


_RETURNING = re.compile(r"\s+RETURNING\s+(.+?)\s*$", re.IGNORECASE | re.DOTALL)


def _json_value_returning(text: str) -> str:
    start = 0
    while True:
        m = re.compile(r"\bJSON_VALUE\s*\(", re.IGNORECASE).search(text, start)
        if m is None:
            return text
        if _inside_quotes(text, m.start()):
            start = m.end()
            continue
        close = _closing_paren(text, m.end() - 1)
        if close < 0:
            return text
        inner = text[m.end():close]
        r = _RETURNING.search(inner)
        if r is None:
            start = m.end()
            continue
        call = f"JSON_VALUE({inner[:r.start()]})"
        text = f"{text[:m.start()]}TRY_CAST({call} AS {r.group(1)}){text[close + 1:]}"
        start = m.start() + len("TRY_CAST(")


def _inside_quotes(text: str, at: int) -> bool:
    return any(q.start() < at < q.end() for q in _QUOTED.finditer(text))


def rewrite(text: str) -> str:
    text = _outside_quotes(text, lambda part: _CALL.sub(lambda m: f"{PREFIX}{m.group(1).upper()}(", part))
    return _json_value_returning(text) if "RETURNING" in text.upper() else text
