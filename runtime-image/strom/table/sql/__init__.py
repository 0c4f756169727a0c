"""Flink-dialect SQL: parsing and translation (parser.py) onto the shared planner, and the in-memory
catalog `default_catalog.default_database` (catalog.py)."""
