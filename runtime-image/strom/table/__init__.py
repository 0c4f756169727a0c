"""`strom.table`: PyFlink's Table API & SQL on Strom's streaming runtime.

What runs: from_elements, from_data_stream (with a Schema's computed columns, rowtime metadata and
watermark), CREATE TABLE with the datagen/print/blackhole connectors, computed columns, WATERMARK FOR and
PROCTIME(), views, projection, WHERE, scalar functions, GROUP BY with COUNT/SUM/MIN/MAX/AVG (and DISTINCT)
and HAVING as changelogs (+I/-U/+U/-D), window TVFs (TUMBLE/HOP/CUMULATE/SESSION) and group windows (GROUP
BY TUMBLE/HOP/SESSION, Table.window(Tumble/Slide/Session)) on the DataStream window operator, OVER
aggregations, Top-N (ROW_NUMBER/RANK/DENSE_RANK, over updating input too), window Top-N and deduplication,
deduplication and ORDER BY/LIMIT, regular joins (planner/join.py, streaming_join.py), interval joins (inner
and outer, planner/interval_join.py), window joins, temporal joins (FOR SYSTEM_TIME AS OF), Python UDFs
(udf.py: scalar, table functions in LATERAL TABLE / join_lateral via planner/correlate.py, aggregate
functions in GROUP BY and windows, table aggregate functions in flat_aggregate), all compiled onto
DataStream operators; Flink's built-in string/math/conditional/temporal/JSON functions
(planner/builtin_functions.py, temporal_functions.py, json_functions.py); session statements (SET/RESET,
USE, SHOW, ALTER TABLE, CREATE TABLE .. LIKE: sql_session.py), statement sets (statement_set.py) and
TableDescriptor (table_descriptor.py). Everything else raises "not supported yet: ...".
"""

from strom.common.row import Row, RowKind
from strom.table.changelog_mode import ChangelogMode
from strom.table.environment import EnvironmentSettings, StreamTableEnvironment, TableConfig, TableEnvironment
from strom.table.errors import NotSupportedYet, SqlParserException, TableException, ValidationException
from strom.table.schema import Schema, TableSchema
from strom.table.statement_set import StatementSet
from strom.table.table import GroupedTable, Table
from strom.table.table_descriptor import FormatDescriptor, TableDescriptor
from strom.table.table_result import ResultKind, TableResult
from strom.table.types import DataType, DataTypes
from strom.table.udf import AggregateFunction, FunctionContext, ScalarFunction, TableFunction

__all__ = [
    "AggregateFunction",
    "ChangelogMode",
    "FormatDescriptor",
    "StatementSet",
    "TableDescriptor",
    "FunctionContext",
    "ScalarFunction",
    "TableFunction",
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
