"""Flink function syntax sqlglot's Hive dialect reads differently, rewritten before parsing.

* Functions whose Hive reading loses Flink's meaning are renamed so that sqlglot keeps them as plain
  calls: Hive turns DATE_FORMAT/TO_DATE/UNIX_TIMESTAMP/FROM_UNIXTIME's Java patterns into strftime
  patterns, defaults REGEXP_EXTRACT's group to 1 (Flink: 0) and reads TIMESTAMPDIFF(unit, a, b) with its
  arguments shifted.
* The SQL/JSON clauses sqlglot cannot read become plain arguments of a renamed call:
  `JSON_VALUE(j, p [RETURNING t] [{NULL | ERROR | DEFAULT x} ON EMPTY] [{..} ON ERROR])` becomes
  `STROM_FN_JSON_VALUE_EX(j, p, CAST(NULL AS t), 'NULL', NULL, 'DEFAULT', x)`; JSON_QUERY's wrapper and
  ON EMPTY/ON ERROR behaviours and JSON_EXISTS's ON ERROR likewise (planner/json_functions.py reads them).
String literals and quoted identifiers are left alone.

Every rewrite keeps, for each character of the new text, the offset of the user's character it came from
(inserted text points at the spot it replaced), so a parse error names the user's line and column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PREFIX = "STROM_FN_"
RENAMED = ("DATE_FORMAT", "TO_DATE", "UNIX_TIMESTAMP", "FROM_UNIXTIME", "REGEXP_EXTRACT", "TIMESTAMPDIFF")
_CALL = re.compile(r"\b(" + "|".join(RENAMED) + r")\s*\(", re.IGNORECASE)
_JSON_CALL = re.compile(r"\b(JSON_VALUE|JSON_QUERY|JSON_EXISTS)\s*\(", re.IGNORECASE)
_QUOTED = re.compile(r"'(?:[^']|'')*'|`[^`]*`")
_CLAUSE_START = re.compile(r"\s+(RETURNING|NULL|ERROR|DEFAULT|WITH|WITHOUT|EMPTY|TRUE|FALSE|UNKNOWN)\b",
                           re.IGNORECASE)


@dataclass
class Text:
    """SQL text and, per character (and one past the end), the user's offset it came from."""

    text: str
    origin: list[int]

    @staticmethod
    def of(text: str) -> Text:
        return Text(text, list(range(len(text) + 1)))

    def splice(self, start: int, end: int, parts: list[str | tuple[int, int]]) -> Text:
        """text[start:end] replaced by `parts`: inserted strings (pointing at `start`) or (a, b) slices of
        this text (keeping their origins)."""
        chars, origin = [self.text[:start]], self.origin[:start]
        anchor = self.origin[start]
        for p in parts:
            if isinstance(p, str):
                chars.append(p)
                origin += [anchor] * len(p)
            else:
                chars.append(self.text[p[0]:p[1]])
                origin += self.origin[p[0]:p[1]]
        chars.append(self.text[end:])
        origin += self.origin[end:]
        return Text("".join(chars), origin)


def _quoted_spans(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _QUOTED.finditer(text)]


def _inside(spans: list[tuple[int, int]], at: int) -> bool:
    return any(a <= at < b for a, b in spans)


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


def _top_level(text: str, start: int, end: int) -> list[bool]:
    """Per offset in [start, end): outside quotes and at parenthesis depth 0 (parentheses themselves: no)."""
    flags: list[bool] = []
    depth, quote, i = 0, "", start
    while i < end:
        c = text[i]
        if quote:
            if c == quote and quote == "'" and text[i + 1:i + 2] == "'":  # '' inside a string literal
                flags += [False, False]
                i += 2
                continue
            if c == quote:
                quote = ""
            flags.append(False)
        elif c in "'`":
            quote = c
            flags.append(False)
        else:
            depth += (c == "(") - (c == ")")
            flags.append(depth == 0 and c not in "()")
        i += 1
    return flags[: end - start]


def _rename(t: Text) -> Text:
    spans = _quoted_spans(t.text)
    for m in reversed(list(_CALL.finditer(t.text))):
        if not _inside(spans, m.start()):
            t = t.splice(m.start(1), m.start(1), [PREFIX])
    return t


# -- SQL/JSON clauses --------------------------------------------------------------------------------
_VALUE_BEHAVIOUR = re.compile(r"\s*(NULL|ERROR|DEFAULT\s+(.+?))\s+ON\s+(EMPTY|ERROR)\b", re.IGNORECASE | re.DOTALL)
_QUERY_BEHAVIOUR = re.compile(r"\s*(NULL|ERROR|EMPTY\s+ARRAY|EMPTY\s+OBJECT)\s+ON\s+(EMPTY|ERROR)\b", re.IGNORECASE)
_EXISTS_BEHAVIOUR = re.compile(r"\s*(TRUE|FALSE|UNKNOWN|ERROR)\s+ON\s+ERROR\b", re.IGNORECASE)
_WRAPPER = re.compile(r"\s*(WITHOUT|WITH(?:\s+(CONDITIONAL|UNCONDITIONAL))?)\s+(?:ARRAY\s+)?WRAPPER\b", re.IGNORECASE)
_RETURNING = re.compile(r"\s*RETURNING\s+([A-Za-z_]+(?:\s*\([^)]*\))?(?:\s*<[^>]*>)?)", re.IGNORECASE)


class ClauseError(ValueError):
    """A JSON function's clause that is not Flink's syntax; `at` is its offset in the text."""

    def __init__(self, message: str, at: int) -> None:
        super().__init__(message)
        self.at = at


def _json_clauses(t: Text) -> Text:
    start = 0
    while True:
        m = _JSON_CALL.search(t.text, start)
        if m is None:
            return t
        spans = _quoted_spans(t.text)
        open_at = m.end() - 1
        close = _closing_paren(t.text, open_at)
        if _inside(spans, m.start()) or close < 0:
            start = m.end()
            continue
        top = _top_level(t.text, open_at + 1, close)
        comma = next((open_at + 1 + k for k, ok in enumerate(top) if ok and t.text[open_at + 1 + k] == ","), -1)
        if comma < 0:
            start = m.end()
            continue
        clause_at = next((c.start() for c in _CLAUSE_START.finditer(t.text, comma + 1, close)
                          if top[c.start() - open_at - 1]), -1)
        if clause_at < 0:
            start = m.end()
            continue
        path = t.text[comma + 1:clause_at].strip()
        literal = _QUOTED.match(path)
        if literal is not None and path[literal.end():].strip():  # '$.a' FOO ON EMPTY: FOO is no clause
            extra = path[literal.end():].strip()
            raise ClauseError(f"{m.group(1).upper()}: cannot read {extra.split()[0]!r} after the path (expected "
                              "Flink's RETURNING, wrapper, ON EMPTY and ON ERROR clauses)",
                              t.origin[t.text.index(extra, comma + 1)])
        try:
            parts = _clause_arguments(m.group(1).upper(), t.text, clause_at, close)
        except ClauseError as e:
            raise ClauseError(str(e), t.origin[e.at]) from None
        call = [f"{PREFIX}{m.group(1).upper()}_EX(", (open_at + 1, clause_at), *parts, ")"]
        t = t.splice(m.start(), close + 1, call)
        start = m.start() + len(PREFIX)


def _clause_arguments(function: str, text: str, at: int, end: int) -> list[str | tuple[int, int]]:
    """The clauses in text[at:end] as the extra arguments of the _EX call (slices keep the user's text)."""
    rest = at
    returning: tuple[int, int] | None = None
    wrapper = "WITHOUT"
    behaviours: dict[str, tuple[str, tuple[int, int] | None]] = {}
    if function != "JSON_EXISTS" and (r := _RETURNING.match(text, rest, end)) is not None:
        returning = r.span(1)
        if function == "JSON_QUERY" and not re.fullmatch(r"(?i)STRING|VARCHAR(\s*\(\s*\d+\s*\))?", r.group(1)):
            raise ClauseError(f"JSON_QUERY: RETURNING {r.group(1)} is not supported yet (RETURNING STRING)", r.start(1))
        rest = r.end()
    if function == "JSON_QUERY" and (w := _WRAPPER.match(text, rest, end)) is not None:
        wrapper = (w.group(2) or "UNCONDITIONAL").upper() if w.group(1).upper() != "WITHOUT" else "WITHOUT"
        rest = w.end()
    pattern = {"JSON_VALUE": _VALUE_BEHAVIOUR, "JSON_QUERY": _QUERY_BEHAVIOUR, "JSON_EXISTS": _EXISTS_BEHAVIOUR}[
        function]
    while (b := pattern.match(text, rest, end)) is not None:
        when = "ERROR" if function == "JSON_EXISTS" else b.group(b.lastindex or 1).upper()
        if when in behaviours or (when == "EMPTY" and "ERROR" in behaviours):
            raise ClauseError(f"{function}: the ON {when} clause is given twice or after ON ERROR", b.start())
        mode = re.sub(r"\s+", " ", b.group(1).upper())
        default = None
        if function == "JSON_VALUE" and mode.startswith("DEFAULT"):
            mode, default = "DEFAULT", b.span(2)
        behaviours[when] = (mode, default)
        rest = b.end()
    if text[rest:end].strip():
        raise ClauseError(f"{function}: cannot read {text[rest:end].strip()!r} (expected Flink's RETURNING, wrapper, "
                          "ON EMPTY and ON ERROR clauses)", rest + len(text[rest:end]) - len(text[rest:end].lstrip()))
    if function == "JSON_EXISTS":
        return [f", '{behaviours.get('ERROR', ('FALSE', None))[0]}'"]
    parts: list[str | tuple[int, int]] = []
    if function == "JSON_VALUE":
        parts += [", CAST(NULL AS ", returning, ")"] if returning is not None else [", NULL"]
    else:
        parts += [f", '{wrapper}'"]
    for when in ("EMPTY", "ERROR"):
        mode, default = behaviours.get(when, ("NULL", None))
        parts.append(f", '{mode}'")
        if function == "JSON_VALUE":
            parts += [", ", default] if default is not None else [", NULL"]
    return parts


def rewrite_text(text: str) -> Text:
    """The rewritten text with each character's origin in `text`."""
    t = _rename(Text.of(text))
    if _JSON_CALL.search(t.text) is not None:
        t = _json_clauses(t)
    return t


def rewrite(text: str) -> str:
    return rewrite_text(text).text


def user_position(original: str, rewritten: Text, line: int, col: int) -> tuple[int, int]:
    """(line, column), 1-based, in the user's text of the rewritten text's (line, column)."""
    lines = rewritten.text.split("\n")
    offset = sum(len(s) + 1 for s in lines[: max(0, line - 1)]) + max(0, col - 1)
    at = rewritten.origin[min(offset, len(rewritten.origin) - 1)]
    return position_of(original, at)


def position_of(text: str, at: int) -> tuple[int, int]:
    before = text[:at]
    return before.count("\n") + 1, at - (before.rfind("\n") + 1) + 1
