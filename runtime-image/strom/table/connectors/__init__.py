"""SQL connectors and formats (`'connector' = ...`, `'format' = ...` in CREATE TABLE ... WITH).

Registry:
  registry.py         ConnectorFactory (options, validation, source/sink/lookup builders), TableContext,
                      SinkMode, LookupFunction; register / factory_for / validate_table
  formats.py          FormatFactory registry: csv, json, raw (record bytes <-> Row)
Connectors (each module registers its factory on import; importing this package imports them all):
  datagen.py          generated rows (random / sequence fields, rows-per-second, number-of-rows)
  print_connector.py  the changelog printed as Flink prints it
  blackhole.py        swallows rows
"""

from strom.table.connectors import blackhole, datagen, formats, print_connector  # noqa: F401  (registration)
from strom.table.connectors.blackhole import BlackHoleSink
from strom.table.connectors.datagen import DatagenSpec
from strom.table.connectors.registry import (
    ConnectorFactory,
    LookupFunction,
    SinkMode,
    TableContext,
    factory_for,
    identifiers,
    register,
    validate_table,
)

__all__ = ["BlackHoleSink", "ConnectorFactory", "DatagenSpec", "LookupFunction", "SinkMode", "TableContext",
           "factory_for", "identifiers", "register", "validate_table"]
