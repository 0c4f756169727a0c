"""The connector registry: `'connector' = name` in CREATE TABLE ... WITH (...) -> its ConnectorFactory
(Flink's DynamicTableFactory).

A factory declares its options with Flink's names (required and optional; they may depend on the
table's columns, e.g. datagen's `fields.<col>.kind`, and on its format, whose options the format
registry adds), validates them when the table is created, and builds what the planner asks for:

* a scan source (`build_source`): a DataStream of Rows named after the table's physical columns, and
  whether it is bounded (batch mode reads bounded sources only);
* a sink (`build_sink`) with the changelog kinds it consumes (`sink_mode`): INSERT_ONLY (+I only: an
  updating query is refused as Flink refuses it), UPSERT (+I/+U/-D by the table's primary key) or ALL
  (the whole changelog, as print);
* a lookup function (`lookup_function`) for lookup joins (`FOR SYSTEM_TIME AS OF` a table of a lookup
  connector): rows of the table whose key columns equal a probe key.

Register a factory with `register(factory)`; `factory_for(table, options)` finds it by identifier.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from strom.common.row import Row
from strom.table.errors import NotSupportedYet, ValidationException
from strom.table.types import DataType


@dataclass(frozen=True)
class TableContext:
    """What a factory knows about the table it serves (Flink's DynamicTableFactory.Context)."""

    name: str
    columns: list[tuple[str, DataType]]  # physical columns, in declared order
    options: dict[str, str]
    primary_key: tuple[str, ...] = ()  # PRIMARY KEY (..) NOT ENFORCED
    partition_keys: tuple[str, ...] = ()  # PARTITIONED BY (..)
    qualified_name: str = ""  # default_catalog.default_database.<name>, for operator names
    overwrite: bool = False  # INSERT OVERWRITE (BATCH): the sink replaces what it writes (SupportsOverwrite)

    @property
    def display_name(self) -> str:
        return self.qualified_name or self.name

    def column_names(self) -> list[str]:
        return [n for n, _ in self.columns]

    def option(self, key: str, default: str | None = None) -> str | None:
        return self.options.get(key, default)

    def int_option(self, key: str, default: int | None = None) -> int | None:
        if key not in self.options:
            return default
        try:
            return int(self.options[key])
        except ValueError:
            raise ValidationException(
                f"table {self.name!r}: option {key!r} must be an integer, got {self.options[key]!r}") from None

    def bool_option(self, key: str, default: bool) -> bool:
        value = self.options.get(key)
        if value is None:
            return default
        if value.lower() not in ("true", "false"):
            raise ValidationException(f"table {self.name!r}: option {key!r} must be 'true' or 'false', got {value!r}")
        return value.lower() == "true"

    def error(self, message: str) -> ValidationException:
        return ValidationException(f"table {self.name!r}: {message}")


class SinkMode(enum.Enum):
    """The changelog kinds a sink consumes (Flink's ChangelogMode of a DynamicTableSink)."""

    INSERT_ONLY = "insert-only"  # +I only
    UPSERT = "upsert"  # +I, +U, -D by the primary key (-U is dropped before the sink)
    ALL = "all"  # +I, -U, +U, -D


class LookupFunction(Protocol):
    """A lookup join's view of a table: the rows whose `key_columns` equal `key` (Flink's
    LookupFunction). Called per probe row on the joining subtask; `open`/`close` once per subtask."""

    def open(self) -> None: ...

    def lookup(self, key: tuple[Any, ...]) -> list[Row]: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class ConfigOption:
    key: str
    required: bool = False
    default: str | None = None


class ConnectorFactory:
    """One connector: its options and what it builds. Subclasses set `identifier` and override what
    they support; an unsupported role raises a one-line error naming the table and connector."""

    identifier: ClassVar[str] = ""
    #: the option naming the table's format ('format' for filesystem; None: the connector has none)
    format_option: ClassVar[str | None] = None
    #: what makes an unbounded table of this connector bounded, for batch mode's error
    bounded_hint: ClassVar[str] = ""

    # -- options -----------------------------------------------------------------------------------
    def required_options(self, ctx: TableContext) -> set[str]:
        return set()

    def optional_options(self, ctx: TableContext) -> set[str]:
        return set()

    def validate(self, ctx: TableContext) -> None:
        """Checks beyond option names (types, ranges, combinations); raises ValidationException."""

    # -- roles -------------------------------------------------------------------------------------
    def is_source(self) -> bool:
        return type(self).build_source is not ConnectorFactory.build_source

    def is_sink(self) -> bool:
        return type(self).build_sink is not ConnectorFactory.build_sink

    def is_bounded(self, ctx: TableContext) -> bool:
        return False

    def build_source(self, ctx: TableContext, env: Any, uid: str, *, batch: bool) -> Any:
        """A DataStream of Rows (fields named after ctx's physical columns, RowKind INSERT unless the
        connector reads a changelog); `uid` is the plan-derived uid for the source operator."""
        raise ValidationException(
            f"table {ctx.name!r} (connector {self.identifier!r}) is a sink and cannot be read")

    def source_is_updating(self, ctx: TableContext) -> bool:
        """True when the source emits -U/+U/-D (upsert-kafka after its normalization), so the plan
        treats the scan as an updating changelog."""
        return False

    def sink_mode(self, ctx: TableContext) -> SinkMode:
        return SinkMode.INSERT_ONLY

    def build_sink(self, ctx: TableContext, ds: Any, uid: str) -> Any:
        """Consumes `ds` (Rows with RowKinds the sink_mode allows; for UPSERT, -U already dropped)."""
        raise ValidationException(
            f"table {ctx.name!r} (connector {self.identifier!r}) is a source and cannot be written")

    def lookup_function(self, ctx: TableContext, key_columns: list[str]) -> LookupFunction:
        raise ValidationException(
            f"table {ctx.name!r} (connector {self.identifier!r}) does not support lookup joins")


_FACTORIES: dict[str, ConnectorFactory] = {}


def register(factory: ConnectorFactory) -> ConnectorFactory:
    _FACTORIES[factory.identifier] = factory
    return factory


def identifiers() -> list[str]:
    return sorted(_FACTORIES)


def factory_for(table: str, options: dict[str, str]) -> ConnectorFactory:
    connector = options.get("connector")
    if connector is None:
        raise ValidationException(f"table {table!r}: WITH needs 'connector' (one of: {', '.join(identifiers())})")
    factory = _FACTORIES.get(connector)
    if factory is None:
        raise NotSupportedYet(f"connector {connector!r} (table {table!r}); available: {', '.join(identifiers())}")
    return factory


def allowed_options(factory: ConnectorFactory, ctx: TableContext) -> tuple[set[str], set[str]]:
    """(required, all allowed) option keys of the table, its format's options included."""
    from strom.table.connectors import formats

    required = {"connector"} | factory.required_options(ctx)
    allowed = required | factory.optional_options(ctx)
    if factory.format_option is not None and factory.format_option in ctx.options:
        allowed |= formats.format_factory(ctx.name, ctx.options[factory.format_option]).prefixed_options()
    return required, allowed


def check_option_names(ctx: TableContext, required: Iterable[str], allowed: set[str], connector: str) -> None:
    missing = sorted(k for k in required if k not in ctx.options)
    if missing:
        raise ValidationException(
            f"table {ctx.name!r}: connector {connector!r} needs option {missing[0]!r} "
            f"(required: {', '.join(sorted(required))})")
    unknown = sorted(set(ctx.options) - allowed)
    if unknown:
        raise ValidationException(
            f"table {ctx.name!r}: unsupported option {unknown[0]!r} for connector {connector!r}; "
            f"allowed: {', '.join(sorted(allowed))}")


def validate_table(ctx: TableContext) -> ConnectorFactory:
    """All of CREATE TABLE's checks on the connector: known connector, option names, then the
    factory's (and its format's) own checks. Returns the factory."""
    factory = factory_for(ctx.name, ctx.options)
    required, allowed = allowed_options(factory, ctx)
    check_option_names(ctx, required, allowed, factory.identifier)
    for key in ctx.primary_key + ctx.partition_keys:
        if key not in ctx.column_names():
            raise ctx.error(f"key column {key!r} is not a physical column (columns: {', '.join(ctx.column_names())})")
    factory.validate(ctx)
    return factory

