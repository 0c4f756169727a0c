"""Completion at the prompt: SQL keywords, the session's tables and views, and function names (built-in and
the session's own), matched case-insensitively on the word before the cursor. `candidates` is the pure
decision; `SqlCompleter` adapts it to prompt_toolkit and reads the names from the session each time, so a
table created a moment ago completes."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

KEYWORDS = sorted({
    "ADD", "ALL", "ALTER", "AND", "AS", "ASC", "BEGIN", "BETWEEN", "BIGINT", "BOOLEAN", "BY", "CASE", "CAST", "CATALOG",
    "CATALOGS", "CHAR", "COLUMNS", "CREATE", "CROSS", "CUMULATE", "CURRENT", "DATABASE", "DATABASES", "DATE", "DECIMAL",
    "DESC", "DESCRIBE", "DISTINCT", "DOUBLE", "DROP", "ELSE", "END", "EXECUTE", "EXISTS", "EXIT", "EXPLAIN", "FALSE",
    "FLOAT", "FOR", "FROM", "FULL", "FUNCTION", "FUNCTIONS", "GROUP", "HAVING", "HELP", "HOP", "IF", "IN", "INNER",
    "INSERT", "INT", "INTEGER", "INTERVAL", "INTO", "IS", "JOIN", "LANGUAGE", "LEFT", "LIKE", "LIMIT", "MAP", "NOT",
    "NULL", "ON", "OR", "ORDER", "OUTER", "OVER", "OVERWRITE", "PARTITION", "PARTITIONED", "PRIMARY", "KEY",
    "PROCTIME", "PYTHON", "QUIT", "RANGE", "RESET", "RIGHT", "ROW", "ROWS", "SELECT", "SESSION", "SET", "SHOW",
    "SMALLINT", "STATEMENT", "STRING", "SYSTEM", "TABLE", "TABLES", "TEMPORARY", "THEN", "TIMESTAMP",
    "TIMESTAMP_LTZ", "TINYINT", "TRUE", "TUMBLE", "UNION", "UNNEST", "USE", "VALUES", "VARCHAR", "VIEW", "VIEWS",
    "WATERMARK", "WHEN", "WHERE", "WINDOW", "WITH",
})

_WORD = re.compile(r"[\w.`]*$")


@dataclass(frozen=True, slots=True)
class Candidate:
    text: str
    kind: str  # keyword, table, function


def candidates(word: str, *, tables: Iterable[str], functions: Iterable[str],
               keywords: Iterable[str] = KEYWORDS) -> list[Candidate]:
    """What completes `word` (the text before the cursor back to a space): tables first, then functions, then
    keywords; an empty word completes nothing (a Tab at the start of a line is not a question)."""
    prefix = word.lstrip("`").lower()
    if not prefix:
        return []
    out: list[Candidate] = []
    seen: set[str] = set()
    for kind, names in (("table", sorted(tables)), ("function", sorted(functions)), ("keyword", keywords)):
        for name in names:
            if name.lower().startswith(prefix) and name.lower() != prefix and name.lower() not in seen:
                seen.add(name.lower())
                out.append(Candidate(name.upper() if kind == "function" else name, kind))
    return out


class SqlCompleter(Completer):
    def __init__(self, tables: Callable[[], Iterable[str]], functions: Callable[[], Iterable[str]]) -> None:
        self._tables = tables
        self._functions = functions

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        m = _WORD.search(document.text_before_cursor)
        word = m.group(0) if m else ""
        try:
            tables, functions = list(self._tables()), list(self._functions())
        except Exception:  # noqa: BLE001 - completion never breaks the prompt
            tables, functions = [], []
        for c in candidates(word, tables=tables, functions=functions):
            yield Completion(c.text, start_position=-len(word), display_meta=c.kind)
