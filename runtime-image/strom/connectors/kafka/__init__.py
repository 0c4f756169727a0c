"""The Kafka connector: `KafkaSource` (partitions as splits), `KafkaSink` (transactions for exactly-once),
row formats, and librdkafka's mock cluster for local experiments (`python -m strom.connectors.kafka.mock_cluster`)."""
