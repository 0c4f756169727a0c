"""Flink-dialect SQL: parsing and translation onto the shared planner, and the in-memory catalog.

    parser.py        Flink SQL -> statements and plans (sqlglot parses; plans through strom.table.planner)
    flink_syntax.py  Flink syntax sqlglot does not read (WATERMARK FOR, window TVFs), cut out before parsing
    catalog.py       the in-memory catalog `default_catalog.default_database`: tables and temporary views
"""
