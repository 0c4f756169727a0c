"""Flink SQL syntax that sqlglot does not read, cut out of a statement before it is parsed.

`WATERMARK FOR ts AS <expr>` in CREATE TABLE's column list and the window TVFs in FROM,
`TABLE(TUMBLE|HOP|CUMULATE|SESSION(TABLE t, DESCRIPTOR(ts), INTERVAL ...))`, are found here by scanning the text
(quotes and parentheses respected); what is cut is replaced by blanks (a TVF by a placeholder table name)
so that sqlglot's line and column numbers in later errors still point into the user's text.
"""

from __future__ import annotations

import datetime
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass

from strom.table.errors import NotSupportedYet, SqlParserException, ValidationException
from strom.table.expressions import Expression

ParseExpression = Callable[[str], Expression]


def _blank(text: str) -> str:
    return re.sub(r"[^\n]", " ", text)


def _line_col(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    return f"line {line}, column {pos - (text.rfind(chr(10), 0, pos) + 1) + 1}"


def _closing(text: str, open_pos: int) -> int:
    """Index of the parenthesis closing the one at `open_pos` (quotes skipped)."""
    depth, i, quote = 0, open_pos, None
    while i < len(text):
        c = text[i]
        if quote:
            if c == quote:
                quote = None
        elif c in "'`\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise SqlParserException(f"SQL parse error at {_line_col(text, open_pos)}: unbalanced parenthesis")


def _split_top(text: str) -> list[tuple[int, str]]:
    """Top-level comma-separated parts with their offsets."""
    parts, depth, start, quote = [], 0, 0, None
    for i, c in enumerate(text):
        if quote:
            if c == quote:
                quote = None
        elif c in "'`\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append((start, text[start:i]))
            start = i + 1
    parts.append((start, text[start:]))
    return parts


def extract_watermark(text: str, parse_expression: ParseExpression) -> tuple[str, tuple[str, Expression] | None]:
    """`WATERMARK FOR ts AS <expr>` inside CREATE TABLE's column list: removed (with its comma) and
    returned translated."""
    m = re.search(r",\s*WATERMARK\s+FOR\s+(`[^`]+`|\w+)\s+AS\s+", text, re.IGNORECASE)
    if m is None:
        if re.search(r"\bWATERMARK\s+FOR\b", text, re.IGNORECASE):
            raise SqlParserException("WATERMARK FOR must follow a column in CREATE TABLE's column list: "
                                     "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND")
        return text, None
    end = m.end()
    depth = 0
    while end < len(text):
        c = text[end]
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                break
            depth -= 1
        elif c == "," and depth == 0:
            break
        end += 1
    expr_text = text[m.end():end].strip()
    if not expr_text:
        raise SqlParserException(f"SQL parse error at {_line_col(text, m.end())}: WATERMARK FOR needs an expression")
    column = m.group(1).strip("`")
    expr = parse_expression(expr_text)
    return text[: m.start()] + _blank(text[m.start():end]) + text[end:], (column, expr)


@dataclass
class WindowTVF:
    """`TABLE(TUMBLE|HOP|CUMULATE(TABLE t, DESCRIPTOR(ts), ...))` and
    `TABLE(SESSION(TABLE t [PARTITION BY k, ..], DESCRIPTOR(ts), gap))`; sizes in milliseconds."""

    kind: str  # TUMBLE, HOP, CUMULATE, SESSION
    table: str
    time_column: str
    size: int  # SESSION: the gap
    slide: int | None = None  # HOP's slide, CUMULATE's step
    alias: str | None = None
    partition: list[str] | None = None  # SESSION's PARTITION BY columns


# Window TVFs found in statements, by the placeholder table name that stands for them in the parsed tree
# (sqlglot does not read `TABLE(...)` in FROM); names are unique per process, so entries never clash
WINDOW_TVFS: dict[str, WindowTVF] = {}
_TVF_IDS = itertools.count()
_TVF_ARGS = {"TUMBLE": "TUMBLE(TABLE t, DESCRIPTOR(ts), size)", "HOP": "HOP(TABLE t, DESCRIPTOR(ts), slide, size)",
             "CUMULATE": "CUMULATE(TABLE t, DESCRIPTOR(ts), step, max size)",
             "SESSION": "SESSION(TABLE t [PARTITION BY k], DESCRIPTOR(ts), gap)"}


# sqlglot reads SESSION as a keyword; the legacy group window `SESSION(ts, gap)` is renamed to a function name
# of the same length (columns in later errors stay right) that the translator maps back to SESSION
SESSION_FUNCTION = "SESSWIN"


def _rename_session_calls(text: str) -> str:
    out, last = [], 0
    for m in re.finditer(r"\bSESSION(?=\s*\()", text, re.IGNORECASE):
        if _in_quotes(text, m.start()):
            continue
        out += [text[last : m.start()], SESSION_FUNCTION]
        last = m.end()
    return "".join(out) + text[last:]


def _in_quotes(text: str, pos: int) -> bool:
    quote = None
    for c in text[:pos]:
        if quote:
            if c == quote:
                quote = None
        elif c in "'`\"":
            quote = c
    return quote is not None


def extract_window_tvfs(text: str, parse_expression: ParseExpression) -> str:
    start = 0
    while True:
        m = re.compile(r"\bTABLE\s*\(\s*(\w+)\s*\(", re.IGNORECASE).search(text, start)
        if m is None:
            return _rename_session_calls(text)
        kind = m.group(1).upper()
        where = _line_col(text, m.start(1))
        if re.search(r"\bLATERAL\s*$", text[: m.start()], re.IGNORECASE):
            start = m.end()  # LATERAL TABLE(f(..)): a Python table function, which sqlglot reads itself
            continue
        if kind not in _TVF_ARGS:
            raise NotSupportedYet(f"table function {kind} in FROM (at {where})")
        outer_open = text.index("(", m.start())
        outer_close = _closing(text, outer_open)
        inner_open = m.end() - 1
        inner_close = _closing(text, inner_open)
        args = [a.strip() for _, a in _split_top(text[inner_open + 1 : inner_close])]
        descriptor = next((i for i, a in enumerate(args) if re.match(r"DESCRIPTOR\s*\(", a, re.IGNORECASE)), 1)
        if descriptor > 1:  # SESSION(TABLE t PARTITION BY a, b, ...): the partition list has top-level commas
            args = [", ".join(args[:descriptor]), *args[descriptor:]]
        usage = f"{kind} takes {_TVF_ARGS[kind]} (at {where})"
        if any("=>" in a for a in args):
            raise NotSupportedYet(f"named arguments in window TVF {kind} (at {where})")
        expected = 3 if kind in ("TUMBLE", "SESSION") else 4
        if len(args) == expected + 1:
            raise NotSupportedYet(f"window TVF {kind} with an offset (at {where})")
        if len(args) != expected:
            raise SqlParserException(f"window TVF: {usage}")
        t = re.fullmatch(r"TABLE\s+(`[^`]+`|[\w.]+)(\s+PARTITION\s+BY\s+(.+))?", args[0], re.IGNORECASE | re.DOTALL)
        d = re.fullmatch(r"DESCRIPTOR\s*\(\s*(`[^`]+`|\w+)\s*\)", args[1], re.IGNORECASE)
        if t is None or d is None or (t.group(2) and kind != "SESSION"):
            raise SqlParserException(f"window TVF: {usage}")
        partition = None
        if t.group(3):
            listed = t.group(3).strip()
            if listed.startswith("(") and listed.endswith(")"):  # PARTITION BY (a, b) as well as PARTITION BY a, b
                listed = listed[1:-1]
            partition = [p.strip().strip("`") for p in listed.split(",")]
            if not all(re.fullmatch(r"\w+", p) for p in partition):
                raise SqlParserException(f"window TVF: PARTITION BY takes column names; {usage}")
        sizes = [_interval_millis(parse_expression(a), a, usage) for a in args[2:]]
        name = f"__strom_window_tvf_{next(_TVF_IDS)}"
        if kind in ("TUMBLE", "SESSION"):
            tvf = WindowTVF(kind, t.group(1).strip("`"), d.group(1).strip("`"), sizes[0], partition=partition)
        else:
            tvf = WindowTVF(kind, t.group(1).strip("`"), d.group(1).strip("`"), sizes[1], sizes[0])
            if kind == "CUMULATE" and tvf.size % sizes[0]:
                raise ValidationException(f"CUMULATE: the max size {tvf.size} ms must be a multiple of the step "
                                          f"{sizes[0]} ms (at {where})")
        WINDOW_TVFS[name] = tvf
        span = text[m.start() : outer_close + 1]
        text = text[: m.start()] + name + _blank(span)[len(name):] + text[outer_close + 1 :]


def _interval_millis(e: Expression, text: str, usage: str) -> int:
    if e.op != "lit" or not isinstance(e.value, datetime.timedelta):
        raise SqlParserException(f"window TVF: expected an INTERVAL, got {text!r}; {usage}")
    return interval_millis(e.value)


def interval_millis(value: datetime.timedelta) -> int:
    return value // datetime.timedelta(milliseconds=1)
