"""`'connector' = 'kafka'`: a Kafka topic as an append-only table (Flink's Kafka SQL connector), on the
DataStream KafkaSource / KafkaSink. upsert_kafka.py reuses the layout and the record (de)serializers.

    topic ('a;b' for several) | topic-pattern     the sink writes one topic
    properties.bootstrap.servers (required), properties.group.id, properties.*   passed to the clients
    format | value.format, key.format, key.fields ('a;b'), key.fields-prefix, value.fields-include ALL | EXCEPT_KEY
    scan.startup.mode earliest-offset | latest-offset | group-offsets | timestamp | specific-offsets
        (scan.startup.timestamp-millis, scan.startup.specific-offsets 'partition:0,offset:42;partition:1,offset:7')
    scan.bounded.mode unbounded | latest-offset | group-offsets | timestamp | specific-offsets (the source ends there)
    scan.topic-partition-discovery.interval, scan.watermark.idle-timeout (a subtask without rows for that long
        does not hold back the WATERMARK of the others: planner/translate.py applies it)
    sink.delivery-guarantee none | at-least-once (default) | exactly-once, sink.transactional-id-prefix,
    sink.parallelism

A record's key bytes decode into the `key.fields` columns, its value bytes into the value columns (all
columns, or the others with EXCEPT_KEY); a record whose value format skips it (`*.ignore-parse-errors`)
or whose value is null (a tombstone) is dropped, as Flink's append-only source does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from strom.common.config_options import parse_duration_ms
from strom.common.row import Row, RowKind, make_row
from strom.common.watermark_strategy import WatermarkStrategy
from strom.table.connectors import avro_format  # noqa: F401  (registers the avro format)
from strom.table.connectors.formats import format_factory, format_options
from strom.table.connectors.registry import ConnectorFactory, SinkMode, TableContext, register

STARTUP_MODES = ("earliest-offset", "latest-offset", "group-offsets", "timestamp", "specific-offsets")
BOUNDED_MODES = ("unbounded", "latest-offset", "group-offsets", "timestamp", "specific-offsets")
GUARANTEES = {"none": "NONE", "at-least-once": "AT_LEAST_ONCE", "exactly-once": "EXACTLY_ONCE"}


def split_list(value: str | None) -> list[str]:
    return [p.strip() for p in (value or "").split(";") if p.strip()]


@dataclass(frozen=True)
class Layout:
    """Which columns the key and the value bytes carry, and their formats (with prefix-free options)."""

    names: list[str]
    key_fields: list[str]
    value_fields: list[str]
    key_format: str | None
    value_format: str
    key_options: dict[str, str]
    value_options: dict[str, str]
    key_prefix: str = ""  # key.fields-prefix: table columns carry it, the key format's fields do not

    def columns(self, ctx: TableContext, fields: list[str]) -> list[tuple[str, Any]]:
        types = dict(ctx.columns)
        return [(n, types[n]) for n in fields]

    def key_columns(self, ctx: TableContext) -> list[tuple[str, Any]]:
        """The key format's fields: the key columns without `key.fields-prefix`."""
        return [(n[len(self.key_prefix):], t) for n, t in self.columns(ctx, self.key_fields)]


def layout(ctx: TableContext, key_fields: list[str], *, default_include: str = "ALL") -> Layout:
    options = ctx.options
    value_format = options.get("value.format") or options.get("format")
    if value_format is None:
        raise ctx.error("needs 'format' or 'value.format' (json, csv, avro, raw)")
    if "format" in options and "value.format" in options:
        raise ctx.error("give either 'format' or 'value.format', not both")
    value_prefix = "value." if "value.format" in options else ""
    key_format = options.get("key.format")
    if key_fields and key_format is None:
        raise ctx.error("'key.fields' needs 'key.format'")
    if key_format is not None and not key_fields:
        raise ctx.error("'key.format' needs 'key.fields' (the columns the record key carries)")
    for k in key_fields:
        if k not in ctx.column_names():
            raise ctx.error(f"key field {k!r} is not a physical column (columns: {', '.join(ctx.column_names())})")
    include = options.get("value.fields-include", default_include).upper()
    if include not in ("ALL", "EXCEPT_KEY"):
        raise ctx.error(f"'value.fields-include' must be ALL or EXCEPT_KEY, got {options['value.fields-include']!r}")
    prefix = options.get("key.fields-prefix", "")
    if prefix:
        if include != "EXCEPT_KEY":
            raise ctx.error("'key.fields-prefix' needs 'value.fields-include' = 'EXCEPT_KEY' (as in Flink)")
        unprefixed = [k for k in key_fields if not k.startswith(prefix) or k == prefix]
        if unprefixed:
            raise ctx.error(f"key field {unprefixed[0]!r} does not start with 'key.fields-prefix' {prefix!r}")
    value_fields = [n for n in ctx.column_names() if include == "ALL" or n not in key_fields]
    if not value_fields:
        raise ctx.error("the value carries no column ('value.fields-include' = 'EXCEPT_KEY' and every column is a "
                        "key field)")
    out = Layout(ctx.column_names(), list(key_fields), value_fields, key_format, value_format,
                 format_options(options, key_format, "key.") if key_format else {},
                 format_options(options, value_format, value_prefix), prefix)
    types = dict(ctx.columns)
    format_factory(ctx.name, value_format).validate(ctx.name, [(n, types[n]) for n in value_fields],
                                                    out.value_options)
    if key_format is not None:
        format_factory(ctx.name, key_format).validate(ctx.name, out.key_columns(ctx), out.key_options)
    return out


def format_option_names(ctx: TableContext) -> set[str]:
    """The format options the table may carry: `<fmt>.*` for 'format', `value.<fmt>.*` and `key.<fmt>.*`."""
    names: set[str] = set()
    for option, prefix in (("format", ""), ("value.format", "value."), ("key.format", "key.")):
        name = ctx.options.get(option)
        if name is not None:
            try:
                names |= format_factory(ctx.name, name).prefixed_options(prefix)
            except Exception:  # noqa: BLE001, S110 - an unknown format is reported by validate, naming it
                pass
    return names


class RowRecordDeserializer:
    """A Kafka message -> a Row of the table (KafkaRecordDeserializationSchema's shape). `upsert`: a null
    value is a -D of its key (upsert-kafka), else the message is dropped."""

    def __init__(self, ctx: TableContext, lay: Layout, *, upsert: bool) -> None:
        self.names = tuple(lay.names)
        self.value_decoder = format_factory(ctx.name, lay.value_format).decoder(
            ctx.name, lay.columns(ctx, lay.value_fields), lay.value_options)
        self.value_pos = [lay.names.index(n) for n in lay.value_fields]
        self.key_decoder = None if lay.key_format is None else format_factory(ctx.name, lay.key_format).decoder(
            ctx.name, lay.key_columns(ctx), lay.key_options)
        self.key_pos = [lay.names.index(n) for n in lay.key_fields]
        self.upsert = upsert

    def deserialize(self, message: Any) -> Row | None:  # hot path: called per record
        values: list[Any] = [None] * len(self.names)
        raw_key = message.key()
        if self.key_decoder is not None and raw_key is not None:
            key_row = self.key_decoder(raw_key)
            if key_row is not None:
                for p, v in zip(self.key_pos, key_row, strict=True):
                    values[p] = v
        raw = message.value()
        if raw is None:
            return make_row(values, self.names, RowKind.DELETE) if self.upsert else None
        row = self.value_decoder(raw)
        if row is None:
            return None
        for p, v in zip(self.value_pos, row, strict=True):
            values[p] = v
        return make_row(values, self.names)

    def get_produced_type(self) -> Any:
        return None


class RowRecordSerializer:
    """A Row -> (topic, key bytes, value bytes, partition) (KafkaRecordSerializationSchema's shape);
    `upsert`: a -D (or -U) row is a tombstone, a null value under its key."""

    def __init__(self, ctx: TableContext, lay: Layout, topic: str, *, upsert: bool) -> None:
        self.topic = topic
        self.value_encoder = format_factory(ctx.name, lay.value_format).encoder(
            ctx.name, lay.columns(ctx, lay.value_fields), lay.value_options)
        self.value_pos = [lay.names.index(n) for n in lay.value_fields]
        self.value_names = tuple(lay.value_fields)
        self.key_encoder = None if lay.key_format is None else format_factory(ctx.name, lay.key_format).encoder(
            ctx.name, lay.key_columns(ctx), lay.key_options)
        self.key_pos = [lay.names.index(n) for n in lay.key_fields]
        self.key_names = tuple(n for n, _ in lay.key_columns(ctx))
        self.upsert = upsert

    def serialize(self, element: Any) -> tuple[str, bytes | None, bytes | None, int | None]:  # hot path
        key = None
        if self.key_encoder is not None:
            key = self.key_encoder(make_row([element[p] for p in self.key_pos], self.key_names))
        if self.upsert and element.get_row_kind() in (RowKind.DELETE, RowKind.UPDATE_BEFORE):
            return self.topic, key, None, None
        value = self.value_encoder(make_row([element[p] for p in self.value_pos], self.value_names))
        return self.topic, key, value, None


def _offsets(ctx: TableContext, mode: str, prefix: str, topics: list[str] | None) -> Any:
    """A startup (prefix 'scan.startup') or stopping ('scan.bounded') mode as a KafkaOffsetsInitializer."""
    from strom.connectors.kafka.offsets import KafkaOffsetResetStrategy, KafkaOffsetsInitializer, KafkaTopicPartition

    if mode == "earliest-offset":
        return KafkaOffsetsInitializer.earliest()
    if mode == "latest-offset":
        return KafkaOffsetsInitializer.latest()
    if mode == "group-offsets":
        if "properties.group.id" not in ctx.options:
            raise ctx.error(f"'{prefix}.mode' = 'group-offsets' needs 'properties.group.id'")
        reset = ctx.options.get("properties.auto.offset.reset", "none").upper()
        strategies = {"EARLIEST": KafkaOffsetResetStrategy.EARLIEST, "LATEST": KafkaOffsetResetStrategy.LATEST,
                      "NONE": KafkaOffsetResetStrategy.NONE}
        if reset not in strategies:
            raise ctx.error(f"'properties.auto.offset.reset' must be earliest, latest or none, got {reset.lower()!r}")
        return KafkaOffsetsInitializer.committed_offsets(strategies[reset])
    if mode == "timestamp":
        millis = ctx.int_option(f"{prefix}.timestamp-millis")
        if millis is None:
            raise ctx.error(f"'{prefix}.mode' = 'timestamp' needs '{prefix}.timestamp-millis'")
        return KafkaOffsetsInitializer.timestamp(millis)
    key = f"{prefix}.specific-offsets"
    text = ctx.options.get(key)
    if text is None:
        raise ctx.error(f"'{prefix}.mode' = 'specific-offsets' needs {key!r}")
    if not topics or len(topics) != 1:
        raise ctx.error(f"{key!r} needs exactly one 'topic'")
    offsets = {}
    for part in split_list(text):
        fields = dict(f.split(":", 1) for f in part.split(",") if ":" in f)
        try:
            offsets[KafkaTopicPartition(topics[0], int(fields["partition"]))] = int(fields["offset"])
        except (KeyError, ValueError):
            raise ctx.error(f"option {key!r}: expected 'partition:0,offset:42;partition:1,offset:300', got {text!r}") \
                from None
    return KafkaOffsetsInitializer.offsets(offsets)


def properties(ctx: TableContext) -> dict[str, str]:
    return {k[len("properties."):]: v for k, v in ctx.options.items() if k.startswith("properties.")}


class KafkaFactory(ConnectorFactory):
    identifier = "kafka"
    bounded_hint = " (set 'scan.bounded.mode')"
    upsert = False

    def required_options(self, ctx: TableContext) -> set[str]:
        return {"properties.bootstrap.servers"}

    def optional_options(self, ctx: TableContext) -> set[str]:
        return {"topic", "topic-pattern", "format", "value.format", "key.format", "key.fields", "key.fields-prefix",
                "value.fields-include", "scan.startup.mode", "scan.startup.timestamp-millis",
                "scan.startup.specific-offsets", "scan.bounded.mode", "scan.bounded.timestamp-millis",
                "scan.bounded.specific-offsets", "scan.topic-partition-discovery.interval",
                "scan.watermark.idle-timeout", "sink.delivery-guarantee",
                "sink.transactional-id-prefix", "sink.parallelism", "sink.partitioner",
                *(k for k in ctx.options if k.startswith("properties.")), *format_option_names(ctx)}

    def key_fields(self, ctx: TableContext) -> list[str]:
        return split_list(ctx.options.get("key.fields"))

    def layout(self, ctx: TableContext) -> Layout:
        return layout(ctx, self.key_fields(ctx))

    def validate(self, ctx: TableContext) -> None:
        self.layout(ctx)
        topics = split_list(ctx.options.get("topic"))
        if topics and "topic-pattern" in ctx.options:
            raise ctx.error("give either 'topic' or 'topic-pattern', not both")
        if not topics and "topic-pattern" not in ctx.options:
            raise ctx.error("needs 'topic' (or 'topic-pattern' for a source)")
        for option, modes in (("scan.startup.mode", STARTUP_MODES), ("scan.bounded.mode", BOUNDED_MODES)):
            mode = ctx.options.get(option)
            if mode is not None and mode not in modes:
                raise ctx.error(f"{option!r} must be one of {', '.join(modes)}, got {mode!r}")
        self._starting(ctx)
        self._stopping(ctx)
        guarantee = ctx.options.get("sink.delivery-guarantee", "at-least-once")
        if guarantee not in GUARANTEES:
            raise ctx.error(f"'sink.delivery-guarantee' must be none, at-least-once or exactly-once, got {guarantee!r}")
        if guarantee == "exactly-once" and not ctx.options.get("sink.transactional-id-prefix"):
            raise ctx.error("'sink.delivery-guarantee' = 'exactly-once' needs 'sink.transactional-id-prefix'")
        if ctx.options.get("sink.partitioner", "default") != "default":
            from strom.table.errors import NotSupportedYet

            raise NotSupportedYet(f"'sink.partitioner' = {ctx.options['sink.partitioner']!r} (table {ctx.name!r}); "
                                  "records go to partitions by key hash (or round robin without a key)")
        for key in ("scan.topic-partition-discovery.interval", "scan.watermark.idle-timeout"):
            value = ctx.options.get(key)
            if value is not None:
                try:
                    parse_duration_ms(value)
                except ValueError:
                    raise ctx.error(f"{key!r} must be a duration such as '5 s', got {value!r}") from None

    def _starting(self, ctx: TableContext) -> Any:
        mode = ctx.options.get("scan.startup.mode", "group-offsets" if self.upsert is False and
                               "properties.group.id" in ctx.options else "earliest-offset")
        return _offsets(ctx, mode, "scan.startup", split_list(ctx.options.get("topic")))

    def _stopping(self, ctx: TableContext) -> Any:
        mode = ctx.options.get("scan.bounded.mode", "unbounded")
        if mode == "unbounded":
            return None
        return _offsets(ctx, mode, "scan.bounded", split_list(ctx.options.get("topic")))

    def is_bounded(self, ctx: TableContext) -> bool:
        return ctx.options.get("scan.bounded.mode", "unbounded") != "unbounded"

    def kafka_source(self, ctx: TableContext) -> Any:
        from strom.connectors.kafka.source import KafkaSource

        props = properties(ctx)
        builder = KafkaSource.builder().set_bootstrap_servers(props.pop("bootstrap.servers"))
        topics = split_list(ctx.options.get("topic"))
        builder = builder.set_topics(*topics) if topics else builder.set_topic_pattern(ctx.options["topic-pattern"])
        group = props.pop("group.id", None)
        if group is not None:
            builder = builder.set_group_id(group)
        interval = ctx.options.get("scan.topic-partition-discovery.interval")
        if interval is not None:
            props["partition.discovery.interval.ms"] = str(parse_duration_ms(interval))
        builder = builder.set_properties(props).set_starting_offsets(self._starting(ctx))
        stopping = self._stopping(ctx)
        if stopping is not None:
            builder = builder.set_bounded(stopping)
        deserializer = RowRecordDeserializer(ctx, self.layout(ctx), upsert=self.upsert)
        return builder.set_deserializer(deserializer).build()

    def build_source(self, ctx: TableContext, env: Any, uid: str, *, batch: bool) -> Any:
        return env.from_source(self.kafka_source(ctx), WatermarkStrategy.no_watermarks(),
                               f"TableSourceScan[{ctx.display_name}]").uid(uid)

    def sink_mode(self, ctx: TableContext) -> SinkMode:
        return SinkMode.INSERT_ONLY

    def kafka_sink(self, ctx: TableContext) -> Any:
        from strom.connectors.kafka.sink import DeliveryGuarantee, KafkaSink

        topics = split_list(ctx.options.get("topic"))
        if len(topics) != 1:
            raise ctx.error(f"a Kafka sink writes one 'topic', got {ctx.options.get('topic-pattern') or topics!r}")
        props = properties(ctx)
        guarantee = GUARANTEES[ctx.options.get("sink.delivery-guarantee", "at-least-once")]
        builder = KafkaSink.builder().set_bootstrap_servers(props.pop("bootstrap.servers"))
        for k, v in props.items():
            builder = builder.set_property(k, v)
        builder = builder.set_delivery_guarantee(DeliveryGuarantee[guarantee])
        prefix = ctx.options.get("sink.transactional-id-prefix")
        if prefix:
            builder = builder.set_transactional_id_prefix(prefix)
        serializer = RowRecordSerializer(ctx, self.layout(ctx), topics[0], upsert=self.upsert)
        return builder.set_record_serializer(serializer).build()  # type: ignore[arg-type]

    def build_sink(self, ctx: TableContext, ds: Any, uid: str) -> Any:
        out = ds.sink_to(self.kafka_sink(ctx)).name(f"Sink[{ctx.display_name}]").uid(uid)
        parallelism = ctx.int_option("sink.parallelism")
        if parallelism is not None:
            out.set_parallelism(parallelism)
        return out


register(KafkaFactory())
