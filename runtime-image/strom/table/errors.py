"""The Table API's exceptions, with PyFlink's names (pyflink.util.exceptions)."""

from __future__ import annotations


class TableException(Exception):
    """A table program cannot be planned or executed."""


class ValidationException(TableException):
    """A query or expression refers to something that does not exist or does not fit (unknown column/table,
    a type mismatch); the message names it."""


class SqlParserException(ValidationException):
    """The SQL text does not parse; the message names the line and column."""


class NotSupportedYet(TableException):
    """A feature Flink has that this slice of Strom's Table API does not run yet."""

    def __init__(self, feature: str) -> None:
        super().__init__(f"not supported yet: {feature}")
