"""INSERT INTO a sink from a Spark DataFrame of the query's rows.

* filesystem: each Spark partition writes its rows with Strom's own format encoder (so the files read
  as the streaming sink's do) into `part-<uuid>-<partition>-0` under the row's partition directory
  (`dt=../hr=..`, default name for NULL), written hidden (`.part-..inprogress`) and renamed when
  complete; `success-file` commit policy: `_SUCCESS` in every written partition directory.
* print: the rows collected and printed as Flink's print connector prints them (`+I[a, 1]`).
* blackhole: the rows computed and dropped.
Any other connector, and INSERT OVERWRITE, is `Unsupported` (the INSERT runs on the streaming runtime).
"""

from __future__ import annotations

import os
import sys
import uuid
from typing import Any

from strom.batch.sql.spark_types import Unsupported
from strom.common.row import Row


def check_sink(options: dict[str, str], overwrite: bool, table: str) -> None:
    connector = options.get("connector")
    if overwrite:
        raise Unsupported(f"INSERT OVERWRITE {table}")
    if connector not in ("filesystem", "print", "blackhole"):
        raise Unsupported(f"sink connector {connector!r} of {table}")
    if connector == "filesystem" and options.get("format") not in ("csv", "json", "raw"):
        raise Unsupported(f"filesystem format {options.get('format')!r} of {table}")


def write(df: Any, *, table: str, columns: list[tuple[str, Any]], options: dict[str, str],
          partition_keys: tuple[str, ...]) -> None:
    connector = options.get("connector")
    if connector == "blackhole":
        df.write.format("noop").mode("overwrite").save()  # computed in the JVM, dropped there
        return
    if connector == "print":
        from strom.table.connectors.print_connector import changelog_string

        identifier = options.get("print-identifier")
        out = sys.stderr if options.get("standard-error", "false").lower() == "true" else sys.stdout
        for r in df.toLocalIterator():
            line = changelog_string(Row(*r))
            print(f"{identifier}> {line}" if identifier else line, file=out)
        return
    _write_files(df, table=table, columns=columns, options=options, partition_keys=partition_keys)


def _write_files(df: Any, *, table: str, columns: list[tuple[str, Any]], options: dict[str, str],
                 partition_keys: tuple[str, ...]) -> None:
    from strom.connectors.file_enumeration import local_path
    from strom.table.connectors import filesystem, formats

    fmt = options["format"]
    names = [n for n, _ in columns]
    file_columns = [(n, t) for n, t in columns if n not in partition_keys]
    file_positions = [i for i, n in enumerate(names) if n not in partition_keys]
    key_positions = [names.index(k) for k in partition_keys]
    base = local_path(options["path"])
    default_name = options.get("partition.default-name", filesystem.DEFAULT_PARTITION)
    job = uuid.uuid4()

    def write_partition(index: int, rows: Any) -> Any:
        encode = formats.format_factory(table, fmt).encoder(table, file_columns, formats.format_options(options, fmt))
        files: dict[str, Any] = {}
        try:
            for r in rows:
                bucket = filesystem.partition_path(list(partition_keys), [r[i] for i in key_positions],
                                                   default_name) if key_positions else ""
                f = files.get(bucket)
                if f is None:
                    directory = os.path.join(base, bucket) if bucket else base
                    os.makedirs(directory, exist_ok=True)
                    name = f"part-{job}-{index}-0"
                    f = files[bucket] = open(os.path.join(directory, f".{name}.inprogress"), "wb")  # noqa: SIM115
                f.write(encode(Row(*[r[i] for i in file_positions])) + b"\n")
        finally:
            for f in files.values():
                f.close()
        for f in files.values():
            directory, hidden = os.path.split(f.name)
            os.replace(f.name, os.path.join(directory, hidden[1:-len(".inprogress")]))
        yield from (os.path.dirname(f.name) for f in files.values())

    os.makedirs(base, exist_ok=True)
    directories = set(df.rdd.mapPartitionsWithIndex(write_partition).collect())
    kinds = {k.strip() for k in options.get("sink.partition-commit.policy.kind", "").split(",")}
    if "success-file" in kinds and partition_keys:
        for d in directories:
            with open(os.path.join(d, options.get("sink.partition-commit.success-file.name", "_SUCCESS")), "wb"):
                pass
