"""Formats of records in external systems (`pyflink.datastream.formats`).

Re-exports under PyFlink's module paths:

    csv.py    CsvSchema / CsvReaderFormat for files (connectors/csv_format.py), CSV rows for Kafka
    json.py   JSON row (de)serialization schemas (connectors/kafka/formats.py)
    avro.py   Avro row (de)serialization schemas (connectors/kafka/avro.py); need fastavro (`kafka` extra)
"""
