"""SQL connectors and formats (`'connector' = ...`, `'format' = ...` in CREATE TABLE ... WITH).

Registry:
  registry.py         ConnectorFactory (options, validation, source/sink/lookup builders), TableContext,
                      SinkMode, LookupFunction; register / factory_for / validate_table
  formats.py          FormatFactory registry: csv, json, raw (record bytes <-> Row)
Connectors (each module registers its factory on import; importing this package imports them all):
  datagen.py          generated rows (random / sequence fields, rows-per-second, number-of-rows)
  print_connector.py  the changelog printed as Flink prints it
  blackhole.py        swallows rows
  filesystem.py       files and directories (csv/json/raw), partitioned, exactly-once through FileSink
  nexmark.py          the Nexmark benchmark's events (one `datagen`-style table with person/auction/bid ROWs)
  jdbc.py, kafka.py, upsert_kafka.py, avro_format.py: the Kafka/JDBC connectors (issue 21)
"""

import importlib
import importlib.util

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

# Each module registers its factory when imported; a module not written yet is skipped. (KAFKA-SQL:
# add "jdbc", "kafka", "upsert_kafka", "avro_format" once what they import is committed.)
_MODULES = ("formats", "datagen", "print_connector", "blackhole", "filesystem", "nexmark", "avro_format", "jdbc",
            "kafka", "upsert_kafka")
for _name in _MODULES:
    if importlib.util.find_spec(f"{__name__}.{_name}") is not None:
        importlib.import_module(f"{__name__}.{_name}")
