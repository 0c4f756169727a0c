"""SQL scripts: split a script into statements and run them in order on a TableEnvironment.

One runner for every place a script runs: `strom sql -f/-i` and the interactive client, and the
JobManager running a SQL FlinkJob in application mode. Splitting knows what Flink's SQL client knows:
`;` ends a statement except inside '...' strings, `...` and "..." identifiers, `-- ...` line comments and
`/* ... */` block comments, and inside `EXECUTE STATEMENT SET BEGIN ... END`. Comments are blanked to
spaces (newlines kept, `/*+ hints */` kept) so that each statement's text keeps its layout, and an error
the parser reports at "line 2, column 7" of a statement is moved to where that is in the script.

Splitting (`split_script`) and locating are pure; `run_script` / `execute_statement` are the thin part
that calls `TableEnvironment.execute_sql`.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from strom.table.errors import SqlParserException, TableException
from strom.table.table_result import TableResult

if TYPE_CHECKING:
    from strom.table.environment import TableEnvironment

_STATEMENT_SET = re.compile(r"\s*EXECUTE\s+STATEMENT\s+SET\s+BEGIN\b", re.IGNORECASE)
_ENDS_WITH_END = re.compile(r"\bEND\s*$", re.IGNORECASE)
# the positions the parser and validator put in their messages ("at line 1, column 8", "From line 1, column 8
# to line 1, column 11"): relative to the statement's text
_POSITION = re.compile(r"\b([Ll]ine) (\d+), ([Cc]olumn) (\d+)")
_QUOTES = {"'": "string literal", "`": "quoted identifier", '"': "quoted identifier"}


@dataclass(frozen=True, slots=True)
class ScriptStatement:
    """One statement of a script: its text (comments blanked, no trailing ';') and where it starts in the
    script (1-based line and column of its first character)."""

    text: str
    line: int
    column: int
    index: int  # 0-based position among the script's statements
    terminated: bool = True  # ended by ';' (the last statement of a script may lack it)

    def script_position(self, line: int, column: int) -> tuple[int, int]:
        """A position inside this statement's text -> the same position in the script."""
        if line <= 1:
            return self.line, self.column + column - 1
        return self.line + line - 1, column


class SqlScriptError(TableException):
    """A statement of a script failed: `str()` is one line naming the script's line and column."""

    def __init__(self, reason: str, *, line: int, column: int, statement: ScriptStatement | None = None,
                 source: str | None = None) -> None:
        where = f"{source}: " if source else ""
        # a reason that already names a position (moved to the script's) reads alone; any other gets one
        text = reason if _POSITION.search(reason) else f"line {line}, column {column}: {reason}"
        super().__init__(where + text)
        self.reason = reason
        self.line = line
        self.column = column
        self.statement = statement
        self.source = source


class _Lines:
    """Offsets -> 1-based (line, column)."""

    def __init__(self, text: str) -> None:
        self._starts = [0] + [m.end() for m in re.finditer(r"\n", text)]

    def position(self, offset: int) -> tuple[int, int]:
        i = bisect.bisect_right(self._starts, offset) - 1
        return i + 1, offset - self._starts[i] + 1


def _scan(text: str) -> tuple[str, list[tuple[int, int, bool]], tuple[str, int] | None]:
    """(text with comments blanked, [(start, end, terminated)] of the statements' spans, the construct
    left open at the end: (what, offset) of an unclosed quote or block comment, else None)."""
    out = list(text)
    spans: list[tuple[int, int, bool]] = []
    start = 0
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in _QUOTES:
            j = i + 1
            while True:
                j = text.find(c, j)
                if j < 0:
                    return "".join(out), spans, (_QUOTES[c], i)
                if c == "'" and text.startswith("''", j):  # '' is a quote inside a string
                    j += 2
                    continue
                break
            i = j + 1
            continue
        if text.startswith("--", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out[i:j] = " " * (j - i)
            i = j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                return "".join(out), spans, ("comment", i)
            if not text.startswith("/*+", i):  # a hint (/*+ OPTIONS(..) */) is part of the statement
                out[i:j + 2] = [ch if ch == "\n" else " " for ch in text[i:j + 2]]
            i = j + 2
            continue
        if c == ";":
            body = "".join(out[start:i])
            # EXECUTE STATEMENT SET BEGIN INSERT ..; INSERT ..; END: one statement, its ';'s inside
            if not (_STATEMENT_SET.match(body) and not _ENDS_WITH_END.search(body)):
                spans.append((start, i, True))
                start = i + 1
        i += 1
    if start < n:
        spans.append((start, n, False))
    return "".join(out), spans, None


def split_script(text: str, *, source: str | None = None) -> list[ScriptStatement]:
    """The statements of a script, in order, with where each starts. An unclosed quote or comment is a
    SqlScriptError naming where it opens (and `source`, e.g. the file name)."""
    blanked, spans, open_at = _scan(text)
    lines = _Lines(text)
    if open_at is not None:
        what, offset = open_at
        line, column = lines.position(offset)
        closing = "*/" if what == "comment" else text[offset]
        raise SqlScriptError(f"unterminated {what} (add the closing {closing})", line=line, column=column,
                             source=source)
    statements: list[ScriptStatement] = []
    for start, end, terminated in spans:
        body = blanked[start:end]
        stripped = body.strip()
        if not stripped:
            continue  # blank, comments only, or ';;'
        first = start + (len(body) - len(body.lstrip()))
        line, column = lines.position(first)
        statements.append(ScriptStatement(stripped, line, column, len(statements), terminated))
    return statements


def is_complete(text: str) -> bool:
    """Whether interactive input is whole statements: it ends with ';' outside quotes, comments and
    `EXECUTE STATEMENT SET BEGIN .. END` (the client then runs it; otherwise it reads another line)."""
    blanked, spans, open_at = _scan(text)
    if open_at is not None:
        return False
    return not any(not terminated and blanked[s:e].strip() for s, e, terminated in spans)


def locate_error(statement: ScriptStatement, error: BaseException, *, source: str | None = None) -> SqlScriptError:
    """`error` raised by `statement` as a SqlScriptError whose positions are the script's: a position the
    message names moves by the statement's start; a message without one points at the statement."""
    reason = " ".join(str(error).split()) or type(error).__name__
    found: list[tuple[int, int]] = []

    def moved(m: re.Match[str]) -> str:
        line, column = statement.script_position(int(m.group(2)), int(m.group(4)))
        found.append((line, column))
        return f"{m.group(1)} {line}, {m.group(3)} {column}"

    reason = _POSITION.sub(moved, reason)
    line, column = found[0] if found else (statement.line, statement.column)
    return SqlScriptError(reason, line=line, column=column, statement=statement, source=source)


def execute_statement(t_env: TableEnvironment, statement: ScriptStatement, *,
                      source: str | None = None) -> TableResult:
    """One statement on `t_env`; any failure is a SqlScriptError pointing into the script."""
    try:
        return t_env.execute_sql(statement.text)
    except Exception as e:  # noqa: BLE001 - every failure of a statement is reported with its position
        raise locate_error(statement, e, source=source) from e


StatementCallback = Callable[[ScriptStatement, TableResult], None]


def run_script(t_env: TableEnvironment, script: str | Iterable[ScriptStatement], *,
               on_result: StatementCallback | None = None, source: str | None = None) -> list[TableResult]:
    """Run a script's statements in order on `t_env`, calling `on_result(statement, result)` after each
    (a query's rows are read there: print, collect, or leave them). Stops at the first failure, raised as
    a SqlScriptError naming the script's line and column (and `source`, e.g. the file name). Returns the
    results, one per statement."""
    statements = split_script(script, source=source) if isinstance(script, str) else list(script)
    results = []
    for statement in statements:
        result = execute_statement(t_env, statement, source=source)
        if on_result is not None:
            try:
                on_result(statement, result)
            except SqlScriptError:
                raise
            except Exception as e:  # noqa: BLE001 - a query's job failing while its rows are read
                raise locate_error(statement, e, source=source) from e
        results.append(result)
    return results


def parse_script(script: str, *, source: str | None = None) -> list[ScriptStatement]:
    """Split and parse every statement without running any (admission checks: a SQL FlinkJob's script is
    refused before pods start). Catches syntax errors and unsupported statements; names that only exist
    once earlier statements ran (tables, columns) are checked by running the script."""
    from strom.table.sql.statements import parse_statement

    statements = split_script(script, source=source)
    if not statements:
        raise SqlScriptError("the script has no SQL statement", line=1, column=1, source=source)
    for statement in statements:
        try:
            parse_statement(statement.text)
        except (TableException, SqlParserException) as e:
            raise locate_error(statement, e, source=source) from e
    return statements
