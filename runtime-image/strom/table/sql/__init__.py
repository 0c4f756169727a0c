"""Flink-dialect SQL: parsing and translation onto the shared planner, and the in-memory catalog.

    parser.py        the facade: Flink SQL -> statements and query parts (re-exports the modules below)
    sql_text.py      sqlglot: the dialect, one statement's tree with line/column errors, table names
    sql_types.py     SQL type names -> DataTypes
    translator.py    sqlglot expressions -> Strom Expressions (functions, aggregates, OVER, intervals)
    query.py         one SELECT / UNION / VALUES -> SelectParts the planner builds plans from
    statements.py    DDL/DML and utility statements -> statement objects
    flink_syntax.py  Flink syntax sqlglot does not read (WATERMARK FOR, window TVFs), cut out before parsing
    catalog.py       the in-memory catalog `default_catalog.default_database`: tables and temporary views
"""
