"""The Kafka connector: `KafkaSource` (partitions as splits), `KafkaSink` (transactions for exactly-once),
row formats, and librdkafka's mock cluster for local experiments (`python -m strom.connectors.kafka.mock_cluster`).

    client.py        the confluent-kafka calls the connector needs (imported only when a task runs), one-line errors
    offsets.py       `KafkaOffsetsInitializer`: where a split starts and stops, and its resolution
    splits.py        which subtask owns a partition (Flink's assignment) and a split's progress
    source.py        `KafkaSource` / its builder and reader: partitions read as splits of connectors/base.py
    sink.py          `KafkaSink` with DeliveryGuarantee NONE, AT_LEAST_ONCE, EXACTLY_ONCE (transactions)
    formats.py       JSON and CSV row (de)serialization schemas for message values
    avro.py          Avro row (de)serialization schemas (fastavro)
    metrics.py       source and writer metrics under Flink's names
    mock_cluster.py  a local Kafka (librdkafka's mock cluster) in its own process, for experiments and tests
"""
