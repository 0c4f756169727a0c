"""A plan's sources as Spark DataFrames of positional columns c0..c{n-1}.

* from_elements / VALUES / from_pandas rows: `createDataFrame` of the rows.
* filesystem csv (not partitioned): Spark's CSV reader reads every field as text (RFC-4180 quotes,
  Flink's delimiter, quote and comment options), then each column is parsed as Strom's csv format does:
  an empty field is '' for STRING and NULL for any other type, `null-literal` is NULL, a field that does
  not parse fails the query naming the column (or is NULL with `csv.ignore-parse-errors`).
* filesystem json/raw and partitioned tables: Spark reads the lines and Strom's own decoder turns each into
  a row (partition values from the directory names), so the values are those of the streaming source.
* datagen (bounded): row i is Strom's generator at index i (`spark.range` split over the executors), the
  same rows the streaming source produces.
Any other connector is `Unsupported` (the plan runs on the streaming runtime).
"""

from __future__ import annotations

from typing import Any

from strom.batch.sql.spark_types import Unsupported, sql_type, struct_type
from strom.table.planner.plan import SourceNode
from strom.table.types import DataType

_TEXT = ("STRING", "VARCHAR", "CHAR")


def source_frame(spark: Any, node: SourceNode) -> Any:
    types = [t for _, t in node.columns]
    schema = struct_type(types)
    if node.elements is not None:
        return spark.createDataFrame([tuple(r) for r in node.elements], schema)
    if node.changelog:
        raise Unsupported(f"{node.table_name} reads an updating changelog")
    connector = node.options.get("connector")
    if connector == "datagen":
        return _datagen(spark, node, schema)
    if connector == "filesystem":
        fmt = node.options.get("format")
        if fmt == "csv" and not node.partition_keys and not _bytes(types):
            return _native_csv(spark, node)
        if fmt in ("csv", "json", "raw"):
            return _decoded_lines(spark, node, schema)
        raise Unsupported(f"filesystem format {fmt!r} of {node.table_name}")
    raise Unsupported(f"connector {connector!r} of {node.table_name} has no Spark reader here")


def _bytes(types: list[DataType]) -> bool:
    return any(t.root in ("BYTES", "VARBINARY", "BINARY") for t in types)


def _short_name(node: SourceNode) -> str:
    return node.table_name.split(".")[-1]


def _datagen(spark: Any, node: SourceNode, schema: Any) -> Any:
    from strom.table.connectors.datagen import DatagenSpec

    spec = DatagenSpec(_short_name(node), list(node.columns), dict(node.options))
    if spec.count is None:
        raise Unsupported(f"{node.table_name} is an unbounded datagen table")

    def rows(indexes: Any) -> Any:
        for r in indexes:
            yield tuple(spec(r.id))

    return spark.createDataFrame(spark.range(spec.count).rdd.mapPartitions(rows), schema)


def _format_options(node: SourceNode) -> dict[str, str]:
    prefix = "csv."
    return {k[len(prefix):]: v for k, v in node.options.items() if k.startswith(prefix)}


def _native_csv(spark: Any, node: SourceNode) -> Any:
    from pyspark.sql import functions as F  # noqa: N812
    from pyspark.sql import types as st

    opts = _format_options(node)
    if "escape-character" in opts or "array-element-delimiter" in opts:
        raise Unsupported(f"csv options escape-character/array-element-delimiter of {node.table_name}")
    ignore = opts.get("ignore-parse-errors", "false").lower() == "true"
    n = len(node.columns)
    text_schema = st.StructType([st.StructField(f"c{i}", st.StringType(), True) for i in range(n)])
    delimiter = opts.get("field-delimiter", ",").encode().decode("unicode_escape")
    reader = (spark.read.schema(text_schema)
              .option("sep", delimiter)
              .option("header", "false")
              .option("nullValue", "\u0000\u0001strom-no-null")  # no text is NULL, as in Strom's csv
              .option("emptyValue", "")
              .option("escape", opts.get("quote-character", '"'))  # RFC-4180: a quote doubles itself
              .option("ignoreLeadingWhiteSpace", "false").option("ignoreTrailingWhiteSpace", "false")
              .option("mode", "DROPMALFORMED" if ignore else "FAILFAST"))
    if opts.get("disable-quote-character", "false").lower() == "true":
        reader = reader.option("quote", "\u0000")
    else:
        reader = reader.option("quote", opts.get("quote-character", '"'))
    if opts.get("allow-comments", "false").lower() == "true":
        reader = reader.option("comment", "#")
    df = reader.csv(node.options["path"])
    null_literal = opts.get("null-literal")
    table = _short_name(node)
    columns = []
    for i, (name, t) in enumerate(node.columns):
        columns.append(F.expr(_parse_sql(f"c{i}", name, t, null_literal, ignore, table)).alias(f"c{i}"))
    return df.select(*columns)


def _parse_sql(c: str, name: str, t: DataType, null_literal: str | None, ignore: bool, table: str) -> str:
    """Spark SQL parsing the text column `c` as Strom's csv decoder parses a field of type `t`."""
    null = f"{c} = '{_lit(null_literal)}' OR " if null_literal is not None else ""
    if t.root in _TEXT:  # Spark reads an empty unquoted field as NULL; Strom's csv reads it as ''
        text = f"coalesce({c}, '')"
        return f"CASE WHEN {text} = '{_lit(null_literal)}' THEN NULL ELSE {text} END" if null else text
    target = sql_type(t)
    if t.root == "BOOLEAN":
        parsed = f"CASE lower(trim({c})) WHEN 'true' THEN TRUE WHEN 'false' THEN FALSE END"
    elif t.is_timestamp:
        parsed = f"try_cast(regexp_replace(replace(trim({c}), 'T', ' '), 'Z$', '') AS {target})"
    elif t.is_integral:  # Spark's cast would read '1.5' as 1; Strom's int() refuses it
        parsed = f"CASE WHEN trim({c}) RLIKE '^[+-]?[0-9]+$' THEN try_cast(trim({c}) AS {target}) END"
    else:
        parsed = f"try_cast(trim({c}) AS {target})"
    bad = "NULL" if ignore else (f"raise_error('table \\'{_lit(table)}\\': csv field \\'{_lit(name)}\\' is not a "
                                 f"{t.base()}: \\'' || {c} || '\\' (set \\'csv.ignore-parse-errors\\' to read it "
                                 "as null)')")  # Strom's csv format's words
    return (f"CASE WHEN {null}{c} = '' OR {c} IS NULL THEN NULL WHEN {parsed} IS NULL THEN {bad} "  # '' read as NULL
            f"ELSE {parsed} END")


def _local(uri: str) -> str:
    """Spark's file URI ('file:/x' or 'file:///x') as a local path."""
    from urllib.parse import unquote

    if uri.startswith("file:"):
        uri = "/" + unquote(uri[len("file:"):]).lstrip("/")
    return uri


def _lit(s: str) -> str:
    return s.replace("\\", "\\\\").replace("'", "\\'")


def _decoded_lines(spark: Any, node: SourceNode, schema: Any) -> Any:
    """Lines read by Spark, decoded by Strom's format (and partition directories) in the executors."""
    import os

    from pyspark.sql import functions as F  # noqa: N812

    from strom.connectors.file_enumeration import local_path
    from strom.table.connectors import filesystem, formats

    table = _short_name(node)
    columns = list(node.columns)
    keys = node.partition_keys
    file_columns = [(n, t) for n, t in columns if n not in keys]
    fmt = node.options["format"]
    factory = formats.format_factory(table, fmt)
    options = formats.format_options(node.options, fmt)
    base = local_path(node.options["path"])
    base = base if os.path.isdir(base) else os.path.dirname(base)
    default_name = node.options.get("partition.default-name", filesystem.DEFAULT_PARTITION)
    names = [n for n, _ in columns]
    types = dict(columns)

    def decode(rows: Any) -> Any:
        decoder = factory.decoder(table, file_columns, options)
        for r in rows:
            line = r.value
            if not line:
                continue
            row = decoder(line.encode("utf-8"))
            if row is None:
                continue
            if not keys:
                yield tuple(row)
                continue
            found = filesystem.partition_values_of(_local(r.file), base)
            part = {k: None if found.get(k) in (None, default_name) else formats.parse_text(found[k], types[k])
                    for k in keys}
            yield tuple(part[n] if n in part else row[n] for n in names)

    lines = (spark.read.option("recursiveFileLookup", "true").text(node.options["path"])
             .select("value", F.col("_metadata.file_path").alias("file")))
    return spark.createDataFrame(lines.rdd.mapPartitions(decode), schema)
