"""Flink SQL -> statements and query parts: the facade the Table environment uses.

The work is split by job: sql_text (sqlglot, dialect, errors), sql_types (type names), translator
(expressions), query (SELECT parts), statements (DDL/DML and the rest).
"""

from __future__ import annotations

from strom.table.sql.query import JoinParts, Lateral, SelectParts, UnionParts, ValuesParts, select_parts
from strom.table.sql.sql_text import DIALECT
from strom.table.sql.sql_types import data_type, parse_type
from strom.table.sql.statements import (
    AlterTable,
    CreateFunction,
    CreateTable,
    CreateView,
    Describe,
    Drop,
    DropFunction,
    ExecuteStatementSet,
    Explain,
    Insert,
    LikeClause,
    Query,
    Reset,
    Set,
    Show,
    ShowCreateTable,
    Statement,
    StatementSetBegin,
    StatementSetEnd,
    Use,
    parse_query,
    parse_statement,
)
from strom.table.sql.translator import FUNCTIONS, Translator, parse_expression

__all__ = [
    "AlterTable", "ExecuteStatementSet", "LikeClause", "Reset", "Set", "ShowCreateTable", "StatementSetBegin",
    "StatementSetEnd", "Use",
    "DIALECT", "FUNCTIONS", "CreateFunction", "CreateTable", "CreateView", "Describe", "Drop", "DropFunction",
    "Explain", "Insert", "JoinParts", "Lateral", "Query", "SelectParts", "Show", "Statement", "Translator",
    "UnionParts", "ValuesParts", "data_type", "parse_expression", "parse_query", "parse_statement", "parse_type",
    "select_parts",
]
