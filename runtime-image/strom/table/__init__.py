"""`strom.table`: PyFlink's Table API & SQL on Strom's streaming runtime (first slice).

What runs: from_elements, CREATE TABLE with the datagen/print/blackhole connectors, views, projection,
WHERE, scalar functions, GROUP BY with COUNT/SUM/MIN/MAX/AVG (and DISTINCT) and HAVING, as changelogs
(+I/-U/+U/-D) compiled onto DataStream operators. Everything else raises "not supported yet: ...".
"""

from strom.common.row import Row, RowKind
from strom.table.environment import EnvironmentSettings, StreamTableEnvironment, TableConfig, TableEnvironment
from strom.table.errors import NotSupportedYet, SqlParserException, TableException, ValidationException
from strom.table.schema import Schema, TableSchema
from strom.table.table import GroupedTable, Table
from strom.table.table_result import ResultKind, TableResult
from strom.table.types import DataType, DataTypes

__all__ = [
    "DataType",
    "DataTypes",
    "EnvironmentSettings",
    "GroupedTable",
    "NotSupportedYet",
    "ResultKind",
    "Row",
    "RowKind",
    "Schema",
    "SqlParserException",
    "StreamTableEnvironment",
    "Table",
    "TableConfig",
    "TableEnvironment",
    "TableException",
    "TableResult",
    "TableSchema",
    "ValidationException",
]
