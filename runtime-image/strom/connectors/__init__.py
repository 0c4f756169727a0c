"""Sources and sinks. Each connector module is independent of the others (an import-linter contract).

The contracts every connector implements:

    base.py               sources (Flink's new Source API, simplified): `Source` -> one `SourceReader`
                          per subtask, bounded or not; the source operator drives it
    sink_base.py          sinks (Flink's Sink V2): `Sink` -> `SinkWriter` per subtask (+ committer for
                          exactly-once); runtime/operators/sink_writer.py drives it
    index_splits.py       index-based work as arithmetic progressions, redistributed on rescale

Sources and sinks:

    collection.py         `env.from_collection`: non-parallel, in order
    number_sequence.py    `NumberSequenceSource`: [start, end] split among subtasks (index_splits)
    datagen.py            `DataGeneratorSource`: records from a generator function of an index, rate-limited
    socket.py             `SocketTextSource`: `env.socket_text_stream` (lines from a TCP server)
    source_function.py    `SourceFunctionSource`: a legacy SourceFunction behind `env.add_source`
    file.py               the file connector's entry: `FileSource` and `FileSink`
    file_source.py        `FileSource`: files and directories, bounded or monitored
    file_enumeration.py   which files a file source reads and which subtask reads each
    s3_files.py           s3:// objects as the file source's files (boto3)
    csv_format.py         `CsvSchema` / `CsvReaderFormat`: CSV files read into Rows
    file_sink.py          `FileSink`: row-format part files, exactly-once with checkpoints
    file_sink_policies.py bucket assigners, rolling policies, part file names, leftover cleanup
    nexmark/              the Nexmark benchmark's event generator as a source (see nexmark/__init__)
    kafka/                `KafkaSource` / `KafkaSink` over confluent-kafka (see kafka/__init__)
    jdbc/                 `JdbcSink` for PostgreSQL over psycopg (see jdbc/__init__)

The user API re-exports these under PyFlink's module paths (strom.datastream.connectors,
strom.datastream.formats). Connectors import neither the runtime nor the Table API (the latter
is an import-linter contract).
"""
